/*
 * All-gather, recursive doubling (p a power of two): lg p rounds; in round
 * k rank r exchanges with r ^ 2^k all the blocks it holds (those of its
 * aligned group of 2^k ranks), which are contiguous in recv.
 * Cost = lg p alpha + (p-1)/p N beta.
 * Each round's send waits for the previous receive; the receive writes
 * blocks nothing touched before.
 */
#include <string.h>

#include "algo_internal.h"

TC_ALGO_DEFINE(ALL_GATHER, recursive_doubling, all_gather_recursive_doubling, tc_algo_applies_pow2,
               20);

tc_status_t tc_algo_all_gather_recursive_doubling(const tc_algo_args_t *args, tc_sched_t *sched)
{
    const int p = args->nranks, r = args->rank;
    const uint64_t n = args->count;
    tc_algo_layout_t lay;
    uint32_t last = TC_STEP_NO_DEP;
    int m, mine, theirs;

    TC_ALGO_TRY(tc_algo_layout(args, &lay));
    TC_ALGO_TRY(tc_algo_applies_pow2(args));
    if (n == 0) {
        return TC_OK;
    }
    if (!args->in_place) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV,
                                 (uint64_t)r * n, n, TC_STEP_NO_DEP, TC_STEP_NO_DEP, &last));
    }
    for (m = 1; m < p; m <<= 1) {
        mine = r & ~(m - 1);
        theirs = (r ^ m) & ~(m - 1);
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, r ^ m, TC_BUF_RECV, (uint64_t)mine * n,
                                 TC_BUF_RECV, 0, (uint64_t)m * n, last, TC_STEP_NO_DEP, NULL));
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_RECV, r ^ m, TC_BUF_RECV, 0, TC_BUF_RECV,
                                 (uint64_t)theirs * n, (uint64_t)m * n, last, TC_STEP_NO_DEP,
                                 &last));
    }
    return TC_OK;
}

void tc_algo_all_gather_recursive_doubling_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    int lg, d;
    double shared = 0;
    const int p2 = tc_algo_pow2_floor(args->nranks, &lg);

    memset(cost, 0, sizeof(*cost));
    if (args->count == 0) {
        return;
    }
    cost->rounds = lg;
    cost->elems = (double)(args->nranks - 1) * (double)args->count;
    /* step d (partner r XOR d) moves d blocks; the folded ranks' extra
     * messages are ignored here */
    for (d = 1; d < p2; d <<= 1) {
        shared += d * tc_algo_node_share(args, d, 1);
    }
    cost->link_share = p2 > 1 ? shared / (p2 - 1) : 1;
    cost->max_send_msgs = (uint64_t)lg;
    cost->max_send_elems = (uint64_t)(args->nranks - 1) * args->count;
}
