/*
 * Barrier. bruck (dissemination): ceil(lg p) rounds; in round k rank r
 * sends an empty message to r + 2^k and receives one from r - 2^k; after
 * round k it knows that ranks r - 2^(k+1) + 1 .. r have entered.
 * Cost = ceil(lg p) alpha. linear: everyone tells rank 0, which then
 * releases everyone: 2 (p-1) alpha at rank 0.
 * Messages carry 0 elements; the verifier checks happens-before.
 */
#include <string.h>

#include "algo_internal.h"

TC_ALGO_DEFINE(BARRIER, bruck, barrier_bruck, NULL, 10);
TC_ALGO_DEFINE(BARRIER, linear, barrier_linear, NULL, 20);

tc_status_t tc_algo_barrier_bruck(const tc_algo_args_t *args, tc_sched_t *sched)
{
    const int p = args->nranks, r = args->rank;
    uint32_t last = TC_STEP_NO_DEP, snd;
    int d;

    TC_ALGO_TRY(tc_algo_args_check(args, "barrier bruck"));
    for (d = 1; d < p; d <<= 1) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, (r + d) % p, TC_BUF_RECV, 0, TC_BUF_RECV, 0,
                                 0, last, TC_STEP_NO_DEP, &snd));
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_RECV, tc_algo_mod(r - d, p), TC_BUF_RECV, 0,
                                 TC_BUF_RECV, 0, 0, last, TC_STEP_NO_DEP, &last));
    }
    return TC_OK;
}

tc_status_t tc_algo_barrier_linear(const tc_algo_args_t *args, tc_sched_t *sched)
{
    const int p = args->nranks, r = args->rank;
    uint32_t last = TC_STEP_NO_DEP;
    int q;

    TC_ALGO_TRY(tc_algo_args_check(args, "barrier linear"));
    if (r != 0) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, 0, TC_BUF_RECV, 0, TC_BUF_RECV, 0, 0,
                                 TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL));
        return tc_algo_step(sched, TC_STEP_RECV, 0, TC_BUF_RECV, 0, TC_BUF_RECV, 0, 0,
                            TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL);
    }
    for (q = 1; q < p; q++) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_RECV, q, TC_BUF_RECV, 0, TC_BUF_RECV, 0, 0, last,
                                 TC_STEP_NO_DEP, &last));
    }
    for (q = 1; q < p; q++) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, q, TC_BUF_RECV, 0, TC_BUF_RECV, 0, 0, last,
                                 TC_STEP_NO_DEP, NULL));
    }
    return TC_OK;
}

void tc_algo_barrier_bruck_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    memset(cost, 0, sizeof(*cost));
    cost->rounds = tc_algo_ceil_log2(args->nranks);
    cost->max_send_msgs = (uint64_t)tc_algo_ceil_log2(args->nranks);
}

void tc_algo_barrier_linear_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    memset(cost, 0, sizeof(*cost));
    cost->rounds = 2.0 * (args->nranks - 1);
    /* the root's receives, then its sends, are each posted at once */
    cost->overlap = args->nranks > 2 ? 2.0 * (args->nranks - 2) : 0;
    cost->max_send_msgs = (uint64_t)(args->nranks - 1);
}
