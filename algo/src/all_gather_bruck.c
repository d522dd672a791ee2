/*
 * All-gather, Bruck: any p, ceil(lg p) rounds. Rank r keeps the blocks of
 * ranks r, r+1, ... (mod p) in that order in scratch; in round k (d = 2^k)
 * it sends its first min(d, p - d) blocks to r - d and appends as many from
 * r + d. Two final copies rotate scratch into recv.
 * Cost = ceil(lg p) alpha + (p-1)/p N beta; scratch of p count elements.
 */
#include <string.h>

#include "algo_internal.h"

TC_ALGO_DEFINE(ALL_GATHER, bruck, all_gather_bruck, tc_algo_applies_uniform, 30);

tc_status_t tc_algo_all_gather_bruck(const tc_algo_args_t *args, tc_sched_t *sched)
{
    const int p = args->nranks, r = args->rank;
    const uint64_t n = args->count;
    tc_algo_layout_t lay;
    uint32_t last = TC_STEP_NO_DEP, snd = TC_STEP_NO_DEP, c0;
    int d, have = 1, cnt, head;

    TC_ALGO_TRY(tc_algo_layout(args, &lay));
    TC_ALGO_TRY(tc_algo_applies_uniform(args));
    if (n == 0) {
        return TC_OK;
    }
    sched->scratch_count = (uint64_t)p * n;
    TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, lay.in_buf, lay.in_off, TC_BUF_SCRATCH, 0, n,
                             TC_STEP_NO_DEP, TC_STEP_NO_DEP, &last));
    for (d = 1; d < p; d <<= 1) {
        cnt = d < p - d ? d : p - d;
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, tc_algo_mod(r - d, p), TC_BUF_SCRATCH, 0,
                                 TC_BUF_RECV, 0, (uint64_t)cnt * n, last, TC_STEP_NO_DEP, &snd));
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_RECV, (r + d) % p, TC_BUF_RECV, 0, TC_BUF_SCRATCH,
                                 (uint64_t)have * n, (uint64_t)cnt * n, last, TC_STEP_NO_DEP,
                                 &last));
        have += cnt;
    }
    /* scratch block j is rank (r + j) mod p's: blocks r..p-1 then 0..r-1 */
    head = p - r;
    TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SCRATCH, 0, TC_BUF_RECV,
                             (uint64_t)r * n, (uint64_t)head * n, last, snd, &c0));
    if (r > 0) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SCRATCH, (uint64_t)head * n,
                                 TC_BUF_RECV, 0, (uint64_t)r * n, last, snd, NULL));
    }
    return TC_OK;
}

void tc_algo_all_gather_bruck_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    const int lg = tc_algo_ceil_log2(args->nranks), p = args->nranks;
    double shared = 0;
    int d;

    memset(cost, 0, sizeof(*cost));
    if (args->count == 0) {
        return;
    }
    cost->rounds = lg;
    cost->elems = (double)(p - 1) * (double)args->count;
    /* step d moves min(d, p - d) blocks, between ranks d apart */
    for (d = 1; d < p; d <<= 1) {
        shared += (d < p - d ? d : p - d) * tc_algo_node_share(args, d, 0);
    }
    cost->link_share = p > 1 ? shared / (p - 1) : 1;
    cost->max_send_msgs = (uint64_t)lg;
    cost->max_send_elems = (uint64_t)(args->nranks - 1) * args->count;
}
