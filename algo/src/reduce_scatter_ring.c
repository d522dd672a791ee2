/*
 * Reduce-scatter, ring: p-1 steps; at step s rank r sends its partial sum of
 * block (r - s - 1) to r+1 and reduces the partial sum of block (r - s - 2)
 * from r-1 into its own; after p-1 steps it holds block r reduced.
 * Cost = (p-1) C alpha + (p-1)/p N beta + (p-1)/(p C) N gamma (N: all
 * blocks; C pieces per block, 1 unless chunk_count is set; with C > 1 the
 * reduction of a piece overlaps the transfer of the next). Bandwidth-optimal.
 * Supports per-rank counts; empty blocks are not sent. In place the work
 * happens in recv (which holds the input). Out of place nothing is copied:
 * step 0 sends from the send buffer, every receive is RECV_REDUCE_SRC
 * (partial = send[block] op message), the partial sums of steps 0..p-3 land
 * in scratch at their block's offset (N elements, untouched with 2 ranks)
 * and the last one, block r, lands in recv. A block travels in pieces of args->chunk_count elements
 * (0: one piece), emitted send 0, receive 0, send 1, ...: piece j of the send of step s waits only
 * for piece j of the reduction of step s-1.
 */
#include <string.h>

#include "algo_internal.h"

TC_ALGO_DEFINE(REDUCE_SCATTER, ring, reduce_scatter_ring, NULL, 10);

tc_status_t tc_algo_reduce_scatter_ring(const tc_algo_args_t *args, tc_sched_t *sched)
{
    const int p = args->nranks, r = args->rank;
    const int next = (r + 1) % p, prev = (r + p - 1) % p;
    const uint64_t ch = args->chunk_count;
    const tc_buf_t work = args->in_place ? TC_BUF_RECV : TC_BUF_SCRATCH;
    const tc_step_kind_t rr = args->in_place ? TC_STEP_RECV_REDUCE : TC_STEP_RECV_REDUCE_SRC;
    tc_algo_layout_t lay;
    uint32_t start = 0, dep;
    uint64_t ns = 0, nr = 0, pns = 0, pnr = 0, slen, rlen, j;
    int s, sb, rb;

    TC_ALGO_TRY(tc_algo_layout(args, &lay));
    if (lay.in_count == 0) {
        return TC_OK;
    }
    if (p == 1) {
        return args->in_place || lay.out_count == 0
                   ? TC_OK
                   : tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SEND, tc_algo_block_off(args, 0),
                                  TC_BUF_RECV, 0, lay.out_count, TC_STEP_NO_DEP, TC_STEP_NO_DEP,
                                  NULL);
    }
    if (!args->in_place && p > 2) {
        sched->scratch_count = lay.in_count;
    }
    for (s = 0; s < p - 1; s++) {
        /* out of place: where this step's partial sums land (the last: recv) */
        const int last = s == p - 2 && !args->in_place;
        const uint32_t pstart = start;
        sb = tc_algo_mod(r - s - 1, p);
        rb = tc_algo_mod(r - s - 2, p);
        slen = tc_algo_block_len(args, sb);
        rlen = tc_algo_block_len(args, rb);
        pns = ns;
        pnr = nr;
        ns = tc_algo_pieces(slen, ch);
        nr = tc_algo_pieces(rlen, ch);
        start = sched->nsteps;
        for (j = 0; j < ns || j < nr; j++) {
            if (j < ns) {
                /* the partial sum of this block reduced in the step before */
                dep = s == 0 ? TC_STEP_NO_DEP : tc_algo_ring_pos(pstart, j, pns, pnr, 1);
                TC_ALGO_TRY(tc_algo_step(
                    sched, TC_STEP_SEND, next, s == 0 && !args->in_place ? TC_BUF_SEND : work,
                    tc_algo_block_off(args, sb) + (ch ? j * ch : 0), work, 0,
                    tc_algo_piece_len(slen, ch, j), dep, TC_STEP_NO_DEP, NULL));
            }
            if (j < nr) {
                const uint64_t o = tc_algo_block_off(args, rb) + (ch ? j * ch : 0);
                TC_ALGO_TRY(tc_algo_step(
                    sched, rr, prev, args->in_place ? work : TC_BUF_SEND, args->in_place ? 0 : o,
                    last ? TC_BUF_RECV : work, last ? o - tc_algo_block_off(args, rb) : o,
                    tc_algo_piece_len(rlen, ch, j), TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL));
            }
        }
    }
    return TC_OK;
}

void tc_algo_reduce_scatter_ring_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
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
    if (p == 1 || total == 0) {
        return;
    }
    /* Rank r sends every block but its own: the busiest owns the smallest. */
    cost->rounds = (double)(p - 1) * (double)tc_algo_pieces(max_len, ch);
    cost->elems = (double)(p - 1) * (double)max_len;
    cost->red_elems = (double)(p - 1) * (double)tc_algo_piece_len(max_len, ch, 0);
    cost->max_send_msgs = msgs - min_msgs;
    cost->max_send_elems = total - min_len;
}
