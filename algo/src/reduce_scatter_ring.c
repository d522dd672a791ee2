/*
 * Reduce-scatter, ring: p-1 steps; at step s rank r sends its partial sum of
 * block (r - s - 1) to r+1 and reduces the partial sum of block (r - s - 2)
 * from r-1 into its own; after p-1 steps it holds block r reduced.
 * Cost = (p-1) alpha + (p-1)/p N beta + (p-1)/p N gamma. Bandwidth-optimal.
 * Supports per-rank counts. In place the work happens in recv (which holds
 * the input); out of place the input is first copied to scratch (N
 * elements) and the result copied out at the end.
 */
#include <string.h>

#include "algo_internal.h"

tc_status_t tc_algo_reduce_scatter_ring(const tc_algo_args_t *args, tc_sched_t *sched)
{
    const int p = args->nranks, r = args->rank;
    const int next = (r + 1) % p, prev = (r + p - 1) % p;
    tc_algo_layout_t lay;
    uint32_t last = TC_STEP_NO_DEP, copy = TC_STEP_NO_DEP, snd = TC_STEP_NO_DEP;
    int s, b, work = TC_BUF_RECV;

    TC_ALGO_TRY(tc_algo_layout(args, &lay));
    if (lay.in_count == 0) {
        return TC_OK;
    }
    if (!args->in_place) {
        work = TC_BUF_SCRATCH;
        sched->scratch_count = lay.in_count;
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_SCRATCH, 0,
                                 lay.in_count, TC_STEP_NO_DEP, TC_STEP_NO_DEP, &copy));
    }
    last = copy;
    for (s = 0; s < p - 1; s++) {
        b = tc_algo_mod(r - s - 1, p);
        if (tc_algo_block_len(args, b) > 0) {
            TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, next, work, tc_algo_block_off(args, b),
                                     work, 0, tc_algo_block_len(args, b), last, TC_STEP_NO_DEP,
                                     &snd));
        }
        b = tc_algo_mod(r - s - 2, p);
        if (tc_algo_block_len(args, b) > 0) {
            TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_RECV_REDUCE, prev, work, 0, work,
                                     tc_algo_block_off(args, b), tc_algo_block_len(args, b), copy,
                                     TC_STEP_NO_DEP, &last));
        }
    }
    if (!args->in_place && lay.out_count > 0) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SCRATCH,
                                 tc_algo_block_off(args, r), TC_BUF_RECV, 0, lay.out_count, last,
                                 TC_STEP_NO_DEP, NULL));
    }
    (void)snd;
    return TC_OK;
}

void tc_algo_reduce_scatter_ring_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    const int p = args->nranks;
    uint64_t total = 0, min_len = UINT64_MAX, max_len = 0, len, msgs = 0, m;
    int q, r;

    memset(cost, 0, sizeof(*cost));
    for (q = 0; q < p; q++) {
        len = tc_algo_block_len(args, q);
        total += len;
        min_len = len < min_len ? len : min_len;
        max_len = len > max_len ? len : max_len;
    }
    if (p == 1 || total == 0) {
        return;
    }
    /* Rank r sends every block but its own; empty blocks are not sent. */
    if (args->counts == NULL) {
        msgs = (uint64_t)(p - 1);
    } else {
        for (r = 0; r < p; r++) {
            for (m = 0, q = 0; q < p; q++) {
                m += q != r && tc_algo_block_len(args, q) > 0;
            }
            msgs = m > msgs ? m : msgs;
        }
    }
    cost->rounds = p - 1;
    cost->elems = (double)(p - 1) * (double)max_len;
    cost->red_elems = cost->elems;
    cost->max_send_msgs = msgs;
    cost->max_send_elems = total - min_len;
}
