/*
 * All-gather, ring: p-1 steps; at step s rank r sends block (r - s) to r+1
 * and receives block (r - s - 1) from r-1, straight into recv.
 * Cost = (p-1) alpha + (p-1)/p N beta (N: all blocks). Bandwidth-optimal.
 * Supports per-rank counts (all_gather_v). Out of place, step 0 copies the
 * input into its block. The send of step s waits for the receive of step
 * s-1 (it forwards that block), step 0's for the copy.
 */
#include <string.h>

#include "algo_internal.h"

tc_status_t tc_algo_all_gather_ring(const tc_algo_args_t *args, tc_sched_t *sched)
{
    const int p = args->nranks, r = args->rank;
    const int next = (r + 1) % p, prev = (r + p - 1) % p;
    tc_algo_layout_t lay;
    uint32_t last = TC_STEP_NO_DEP;
    int s, b;

    TC_ALGO_TRY(tc_algo_layout(args, &lay));
    if (!args->in_place && lay.in_count > 0) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV,
                                 tc_algo_block_off(args, r), lay.in_count, TC_STEP_NO_DEP,
                                 TC_STEP_NO_DEP, &last));
    }
    for (s = 0; s < p - 1; s++) {
        b = tc_algo_mod(r - s, p);
        if (tc_algo_block_len(args, b) > 0) {
            TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, next, TC_BUF_RECV,
                                     tc_algo_block_off(args, b), TC_BUF_RECV, 0,
                                     tc_algo_block_len(args, b), last, TC_STEP_NO_DEP, NULL));
        }
        b = tc_algo_mod(r - s - 1, p);
        if (tc_algo_block_len(args, b) > 0) {
            TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_RECV, prev, TC_BUF_RECV, 0, TC_BUF_RECV,
                                     tc_algo_block_off(args, b), tc_algo_block_len(args, b),
                                     TC_STEP_NO_DEP, TC_STEP_NO_DEP, &last));
        }
    }
    return TC_OK;
}

void tc_algo_all_gather_ring_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    const int p = args->nranks;
    uint64_t total = 0, min_len = UINT64_MAX, max_len = 0, len, msgs = 0;
    int q, r;

    memset(cost, 0, sizeof(*cost));
    for (q = 0; q < p; q++) {
        len = tc_algo_block_len(args, q);
        total += len;
        min_len = len < min_len ? len : min_len;
        max_len = len > max_len ? len : max_len;
    }
    /* Rank r sends every block but block r+1; empty blocks are not sent. */
    for (r = 0; r < p && p > 1; r++) {
        uint64_t m = 0;
        for (q = 0; q < p && (args->counts != NULL || r == 0); q++) {
            m += q != (r + 1) % p && tc_algo_block_len(args, q) > 0;
        }
        if (args->counts == NULL) {
            m = args->count > 0 ? (uint64_t)(p - 1) : 0;
            msgs = m;
            break;
        }
        msgs = m > msgs ? m : msgs;
    }
    if (p == 1) {
        return;
    }
    cost->rounds = p - 1;
    cost->elems = (double)(p - 1) * (double)max_len;
    cost->max_send_msgs = msgs;
    cost->max_send_elems = total - min_len;
}
