/*
 * Reduce-scatter, ring: p-1 steps; at step s rank r sends its partial sum of
 * block (r - s - 1) to r+1 and reduces the partial sum of block (r - s - 2)
 * from r-1 into its own; after p-1 steps it holds block r reduced.
 * Cost = (p-1) C alpha + (p-1)/p N beta + (p-1)/(p C) N gamma (N: all
 * blocks; C pieces per block, 1 unless chunk_count is set; with C > 1 the
 * reduction of a piece overlaps the transfer of the next). Bandwidth-optimal.
 * Supports per-rank counts; empty blocks are not sent. In place the work
 * happens in recv (which holds the input); out of place the input is first
 * copied to scratch (N elements) and the result copied out at the end, piece
 * by piece. A block travels in pieces of args->chunk_count elements (0: one
 * piece), emitted send 0, receive 0, send 1, ...: piece j of the send of
 * step s waits only for piece j of the reduction of step s-1.
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
    tc_algo_layout_t lay;
    uint32_t copy = TC_STEP_NO_DEP, start = 0, dep;
    uint64_t ns = 0, nr = 0, pns = 0, pnr = 0, slen, rlen, j;
    int s, sb, rb;

    TC_ALGO_TRY(tc_algo_layout(args, &lay));
    if (lay.in_count == 0) {
        return TC_OK;
    }
    if (!args->in_place) {
        sched->scratch_count = lay.in_count;
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_SCRATCH, 0,
                                 lay.in_count, TC_STEP_NO_DEP, TC_STEP_NO_DEP, &copy));
    }
    for (s = 0; s < p - 1; s++) {
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
                dep = s == 0 ? copy : tc_algo_ring_pos(pstart, j, pns, pnr, 1);
                TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, next, work,
                                         tc_algo_block_off(args, sb) + (ch ? j * ch : 0), work, 0,
                                         tc_algo_piece_len(slen, ch, j), dep, TC_STEP_NO_DEP,
                                         NULL));
            }
            if (j < nr) {
                TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_RECV_REDUCE, prev, work, 0, work,
                                         tc_algo_block_off(args, rb) + (ch ? j * ch : 0),
                                         tc_algo_piece_len(rlen, ch, j), copy, TC_STEP_NO_DEP,
                                         NULL));
            }
        }
    }
    if (!args->in_place && lay.out_count > 0) {
        /* block r was reduced last (step p-2), piece by piece */
        const uint64_t np = p == 1 ? 1 : nr;
        for (j = 0; j < np; j++) {
            const uint64_t o = p == 1 ? 0 : (ch ? j * ch : 0);
            dep = p == 1 ? copy : tc_algo_ring_pos(start, j, ns, nr, 1);
            TC_ALGO_TRY(tc_algo_step(
                sched, TC_STEP_COPY, -1, TC_BUF_SCRATCH, tc_algo_block_off(args, r) + o,
                TC_BUF_RECV, o, p == 1 ? lay.out_count : tc_algo_piece_len(lay.out_count, ch, j),
                dep, TC_STEP_NO_DEP, NULL));
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
