/*
 * All-to-all, pairwise and linear (direct): rank r sends block q of its
 * input to rank q and receives block r of every rank into block q of recv.
 * pairwise: at step k = 1..p-1 send to r+k and receive from r-k (one
 * partner per step, no hot spot); linear: in rank order.
 * Cost = (p-1) alpha + (p-1) n beta (n = count, the block).
 * The messages touch disjoint blocks: no dependencies.
 */
#include <string.h>

#include "algo_internal.h"

TC_ALGO_DEFINE(ALL_TO_ALL, pairwise, all_to_all_pairwise, NULL, 10);
TC_ALGO_DEFINE(ALL_TO_ALL, linear, all_to_all_linear, NULL, 20);

static tc_status_t tc_algo_a2a_direct(const tc_algo_args_t *args, tc_sched_t *sched, int pairwise)
{
    const int p = args->nranks, r = args->rank;
    const uint64_t n = args->count;
    int k, q;

    TC_ALGO_TRY(tc_algo_args_check(args, "all_to_all"));
    if (args->in_place) {
        return tc_error_set(TC_ERR_UNSUPPORTED, "all_to_all in place is not supported");
    }
    if (n == 0) {
        return TC_OK;
    }
    TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SEND, (uint64_t)r * n, TC_BUF_RECV,
                             (uint64_t)r * n, n, TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL));
    for (k = 1; k < p; k++) {
        q = pairwise ? (r + k) % p : (k <= r ? k - 1 : k);
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, q, TC_BUF_SEND, (uint64_t)q * n, TC_BUF_RECV,
                                 0, n, TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL));
        q = pairwise ? tc_algo_mod(r - k, p) : q;
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_RECV, q, TC_BUF_RECV, 0, TC_BUF_RECV,
                                 (uint64_t)q * n, n, TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL));
    }
    return TC_OK;
}

tc_status_t tc_algo_all_to_all_pairwise(const tc_algo_args_t *args, tc_sched_t *sched)
{
    return tc_algo_a2a_direct(args, sched, 1);
}

tc_status_t tc_algo_all_to_all_linear(const tc_algo_args_t *args, tc_sched_t *sched)
{
    return tc_algo_a2a_direct(args, sched, 0);
}

void tc_algo_all_to_all_pairwise_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    memset(cost, 0, sizeof(*cost));
    if (args->count == 0 || args->nranks == 1) {
        return;
    }
    cost->rounds = args->nranks - 1;
    cost->elems = (double)(args->nranks - 1) * (double)args->count;
    cost->max_send_msgs = (uint64_t)(args->nranks - 1);
    cost->max_send_elems = cost->max_send_msgs * args->count;
}

void tc_algo_all_to_all_linear_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    tc_algo_all_to_all_pairwise_cost(args, cost);
}
