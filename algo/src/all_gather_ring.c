/*
 * All-gather, ring: p-1 steps; at step s rank r sends block (r - s) to r+1
 * and receives block (r - s - 1) from r-1, straight into recv.
 * Cost = (p-1) C alpha + (p-1)/p N beta (N: all blocks; C pieces per block,
 * 1 unless chunk_count is set). Bandwidth-optimal.
 * Supports per-rank counts (all_gather_v); empty blocks are not sent. Out of
 * place, the input is copied into its block while step 0 sends it from the
 * input itself (the copy overlaps the transfer). A block travels in pieces
 * of args->chunk_count elements (0: one piece), emitted send 0, receive 0,
 * send 1, ...: piece j of the send of step s waits for piece j of the
 * receive of step s-1 (it forwards that block), so the pieces of
 * consecutive steps flow independently (pipelining).
 */
#include <string.h>

#include "algo_internal.h"

TC_ALGO_DEFINE(ALL_GATHER, ring, all_gather_ring, NULL, 10);

tc_status_t tc_algo_all_gather_ring(const tc_algo_args_t *args, tc_sched_t *sched)
{
    const int p = args->nranks, r = args->rank;
    const int next = (r + 1) % p, prev = (r + p - 1) % p;
    const uint64_t ch = args->chunk_count;
    tc_algo_layout_t lay;
    uint32_t start = 0, dep;
    uint64_t ns, nr, pns = 0, pnr = 0, slen, rlen, j;
    int s, sb, rb;

    TC_ALGO_TRY(tc_algo_layout(args, &lay));
    if (!args->in_place && lay.in_count > 0) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV,
                                 tc_algo_block_off(args, r), lay.in_count, TC_STEP_NO_DEP,
                                 TC_STEP_NO_DEP, NULL));
    }
    for (s = 0; s < p - 1; s++) {
        const uint32_t pstart = start;
        sb = tc_algo_mod(r - s, p);
        rb = tc_algo_mod(r - s - 1, p);
        slen = tc_algo_block_len(args, sb);
        rlen = tc_algo_block_len(args, rb);
        ns = tc_algo_pieces(slen, ch);
        nr = tc_algo_pieces(rlen, ch);
        start = sched->nsteps;
        for (j = 0; j < ns || j < nr; j++) {
            if (j < ns && s == 0) { /* the input, while it is copied into its block */
                TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, next, lay.in_buf,
                                         lay.in_off + (ch ? j * ch : 0), TC_BUF_RECV, 0,
                                         tc_algo_piece_len(slen, ch, j), TC_STEP_NO_DEP,
                                         TC_STEP_NO_DEP, NULL));
            } else if (j < ns) {
                dep = tc_algo_ring_pos(pstart, j, pns, pnr, 1);
                TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, next, TC_BUF_RECV,
                                         tc_algo_block_off(args, sb) + (ch ? j * ch : 0),
                                         TC_BUF_RECV, 0, tc_algo_piece_len(slen, ch, j), dep,
                                         TC_STEP_NO_DEP, NULL));
            }
            if (j < nr) {
                TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_RECV, prev, TC_BUF_RECV, 0, TC_BUF_RECV,
                                         tc_algo_block_off(args, rb) + (ch ? j * ch : 0),
                                         tc_algo_piece_len(rlen, ch, j), TC_STEP_NO_DEP,
                                         TC_STEP_NO_DEP, NULL));
            }
        }
        pns = ns;
        pnr = nr;
    }
    return TC_OK;
}

void tc_algo_all_gather_ring_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    const int p = args->nranks;
    const uint64_t ch = args->chunk_count;
    uint64_t total = 0, min_len = UINT64_MAX, max_len = 0, len, msgs = 0, min_msgs = UINT64_MAX, m;
    int q;

    memset(cost, 0, sizeof(*cost));
    for (q = 0; q < p && (args->counts != NULL || q == 0); q++) {
        len = tc_algo_block_len(args, q);
        m = tc_algo_pieces(len, ch);
        total += len;
        msgs += m;
        min_len = len < min_len ? len : min_len;
        max_len = len > max_len ? len : max_len;
        min_msgs = m < min_msgs ? m : min_msgs;
    }
    if (args->counts == NULL) { /* p equal blocks */
        total *= (uint64_t)p;
        msgs *= (uint64_t)p;
    }
    if (p == 1) {
        return;
    }
    /* Rank r sends every block but block r+1: the busiest skips the smallest. */
    cost->rounds = (double)(p - 1) * (double)tc_algo_pieces(max_len, ch);
    cost->elems = (double)(p - 1) * (double)max_len;
    cost->max_send_msgs = msgs - min_msgs;
    cost->max_send_elems = total - min_len;
}
