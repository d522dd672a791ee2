/*
 * Broadcast, binomial tree: in relative ranks v = (r - root) mod p, rank v
 * receives from v - lowbit(v) and then sends to v + m for every power of two
 * m below lowbit(v) (the root: below p), largest first.
 * Cost = ceil(lg p) (alpha + n beta). Latency-optimal; for large n the
 * pipelined trees or scatter + all-gather do better.
 */
#include <string.h>

#include "algo_internal.h"

TC_ALGO_DEFINE(BROADCAST, binomial_tree, broadcast_binomial_tree, NULL, 10);

tc_status_t tc_algo_broadcast_binomial_tree(const tc_algo_args_t *args, tc_sched_t *sched)
{
    const int p = args->nranks, r = args->rank, root = args->root;
    const int v = tc_algo_mod(r - root, p);
    const uint64_t n = args->count;
    tc_algo_layout_t lay;
    uint32_t got = TC_STEP_NO_DEP;
    int m, top, src = TC_BUF_RECV;

    TC_ALGO_TRY(tc_algo_layout(args, &lay));
    if (n == 0) {
        return TC_OK;
    }
    if (v == 0) {
        top = 1;
        while (top < p) {
            top <<= 1;
        }
        if (!args->in_place) {
            TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV, 0, n,
                                     TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL));
            src = TC_BUF_SEND; /* the children read the input; the copy runs alongside */
        }
    } else {
        top = v & -v;
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_RECV, (root + v - top) % p, TC_BUF_RECV, 0,
                                 TC_BUF_RECV, 0, n, TC_STEP_NO_DEP, TC_STEP_NO_DEP, &got));
    }
    for (m = top >> 1; m >= 1; m >>= 1) {
        if (v + m < p) {
            TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, (root + v + m) % p, src, 0, TC_BUF_RECV,
                                     0, n, got, TC_STEP_NO_DEP, NULL));
        }
    }
    return TC_OK;
}

void tc_algo_broadcast_binomial_tree_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    const int lg = tc_algo_ceil_log2(args->nranks);

    memset(cost, 0, sizeof(*cost));
    if (args->count == 0) {
        return;
    }
    cost->rounds = lg;
    cost->elems = (double)lg * (double)args->count;
    cost->max_send_msgs = (uint64_t)lg; /* the root */
    cost->max_send_elems = cost->max_send_msgs * args->count;
}
