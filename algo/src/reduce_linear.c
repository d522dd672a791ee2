/*
 * Reduce, linear: every rank sends its vector to the root, which reduces
 * them into its output one after the other.
 * Cost = (p-1) alpha + (p-1) n beta + (p-1) n gamma at the root.
 * Non-roots: one SEND. Root: COPY send -> recv (out of place), then p-1
 * RECV_REDUCE into recv, each after the previous (they write the same
 * elements).
 */
#include <string.h>

#include "algo_internal.h"

TC_ALGO_DEFINE(REDUCE, linear, reduce_linear, NULL, 20);

tc_status_t tc_algo_reduce_linear(const tc_algo_args_t *args, tc_sched_t *sched)
{
    const int p = args->nranks, r = args->rank, root = args->root;
    const uint64_t n = args->count;
    tc_algo_layout_t lay;
    uint32_t last = TC_STEP_NO_DEP;
    int k;

    TC_ALGO_TRY(tc_algo_layout(args, &lay));
    if (n == 0) {
        return TC_OK;
    }
    if (r != root) {
        return tc_algo_step(sched, TC_STEP_SEND, root, lay.in_buf, 0, TC_BUF_RECV, 0, n,
                            TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL);
    }
    if (!args->in_place) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV, 0, n,
                                 TC_STEP_NO_DEP, TC_STEP_NO_DEP, &last));
    }
    for (k = 1; k < p; k++) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_RECV_REDUCE, (root + k) % p, TC_BUF_RECV, 0,
                                 TC_BUF_RECV, 0, n, last, TC_STEP_NO_DEP, &last));
    }
    return TC_OK;
}

void tc_algo_reduce_linear_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    memset(cost, 0, sizeof(*cost));
    if (args->count == 0 || args->nranks == 1) {
        return;
    }
    cost->rounds = args->nranks - 1;
    cost->overlap = args->nranks - 2; /* the root's receives are posted at once */
    cost->elems = (double)(args->nranks - 1) * (double)args->count;
    cost->red_elems = cost->elems;
    cost->max_send_msgs = 1;
    cost->max_send_elems = args->count;
}
