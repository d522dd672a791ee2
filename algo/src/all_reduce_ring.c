/*
 * All-reduce, ring: a ring reduce-scatter followed by a ring all-gather.
 *
 * Cost = 2(p-1) C alpha + 2 n (p-1)/p beta + n (p-1)/(p C) gamma
 * (p ranks, n bytes, C pieces per block (1 unless chunk_count is set);
 * alpha latency per message, beta time per byte on the wire, gamma time per
 * byte reduced). Bandwidth-optimal for large n; with C > 1 the reduction of
 * one piece overlaps the transfer of the next, so one piece's reduction per
 * step stays on the critical path.
 *
 * The vector is split into p blocks as even as possible (the first n % p
 * blocks have one element more; with count < p some blocks are empty and
 * their messages carry no data). Rank r sends to r+1 and receives from r-1.
 * Each block travels in pieces of args->chunk_count elements (0: one piece);
 * pieces of a step are emitted send 0, receive 0, send 1, ... and each
 * depends only on the same piece of the step before, so piece j+1 of step s
 * is sent while piece j of step s+1 is already in flight.
 *   Reduce-scatter, step s = 0..p-2: send block (r-s) and receive-reduce
 *     block (r-s-1) directly into recv (no scratch: the executor reduces the
 *     arriving bytes into place). Out of place nothing is copied first: step
 *     0 sends from the send buffer and every receive is RECV_REDUCE_SRC,
 *     recv[block] = send[block] op message, so each block of recv is written
 *     once; in place they are RECV_REDUCE. Piece j's send of step s+1 depends
 *     on piece j's reduction of step s, which produced it. After it, rank r
 *     holds block (r+1) fully reduced; block r is never written here (the
 *     all-gather's first receive fills it).
 *   All-gather, step s = 0..p-2: send block (r+1-s) (piece j after the
 *     receive that produced it), RECV block (r-s), piece j depending on the
 *     reduce-scatter send of that same piece (the receive overwrites what that
 *     send reads).
 * count == 0 gives an empty schedule; one rank out of place copies.
 */
#include <string.h>

#include "algo_internal.h"

TC_ALGO_DEFINE(ALL_REDUCE, ring, all_reduce_ring, NULL, 10);

/* Messages block c of n over p takes: its pieces, and one empty message for
 * an empty block (the ring's step structure stays the same for any n). */
static uint64_t tc_ring_msgs(uint64_t n, int p, int c, uint64_t chunk)
{
    const uint64_t k = tc_algo_pieces(tc_algo_chunk_len(n, p, c), chunk);
    return k > 0 ? k : 1;
}

/* One step's messages: ns pieces of block sc sent, nr of block rc received
 * (kind), interleaved; send j waits for sdep(j), receive j for rdep(j). */
typedef struct tc_ring_step {
    int sc, rc;
    uint64_t ns, nr;
    uint32_t start;
} tc_ring_step_t;

static void tc_ring_step_init(tc_ring_step_t *st, uint64_t n, int p, int sc, int rc, uint64_t chunk,
                              uint32_t start)
{
    st->sc = sc;
    st->rc = rc;
    st->ns = tc_ring_msgs(n, p, sc, chunk);
    st->nr = tc_ring_msgs(n, p, rc, chunk);
    st->start = start;
}

tc_status_t tc_algo_all_reduce_ring(const tc_algo_args_t *args, tc_sched_t *sched)
{
    const int p = args->nranks, r = args->rank;
    const int next = (r + 1) % p, prev = (r + p - 1) % p;
    const uint64_t n = args->count, ch = args->chunk_count;
    const tc_buf_t in = args->in_place ? TC_BUF_RECV : TC_BUF_SEND;
    const tc_step_kind_t rr = args->in_place ? TC_STEP_RECV_REDUCE : TC_STEP_RECV_REDUCE_SRC;
    uint32_t rs_start;
    tc_ring_step_t cur, before, rs;
    uint64_t j, o, len;
    int s;

    TC_ALGO_TRY(tc_algo_args_check(args, "all_reduce ring"));
    sched->scratch_count = 0;
    if (n == 0) {
        return TC_OK;
    }
    if (p == 1) {
        return args->in_place ? TC_OK
                              : tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV,
                                             0, n, TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL);
    }

    /* Reduce-scatter. */
    rs_start = sched->nsteps;
    memset(&before, 0, sizeof(before));
    for (s = 0; s < p - 1; s++) {
        tc_ring_step_init(&cur, n, p, tc_algo_mod(r - s, p), tc_algo_mod(r - s - 1, p), ch,
                          sched->nsteps);
        for (j = 0; j < cur.ns || j < cur.nr; j++) {
            if (j < cur.ns) {
                /* the block received (and reduced) in the step before */
                const uint32_t dep =
                    s == 0 ? TC_STEP_NO_DEP
                           : tc_algo_ring_pos(before.start, j, before.ns, before.nr, 1);
                o = tc_algo_chunk_off(n, p, cur.sc) + (ch ? j * ch : 0);
                len = tc_algo_piece_len(tc_algo_chunk_len(n, p, cur.sc), ch, j);
                TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, next, s == 0 ? in : TC_BUF_RECV, o,
                                         TC_BUF_RECV, 0, len, dep, TC_STEP_NO_DEP, NULL));
            }
            if (j < cur.nr) {
                o = tc_algo_chunk_off(n, p, cur.rc) + (ch ? j * ch : 0);
                len = tc_algo_piece_len(tc_algo_chunk_len(n, p, cur.rc), ch, j);
                TC_ALGO_TRY(tc_algo_step(sched, rr, prev, in, args->in_place ? 0 : o, TC_BUF_RECV,
                                         o, len, TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL));
            }
        }
        before = cur;
    }

    /* All-gather; rs walks the reduce-scatter steps again for the sends each
     * receive must follow. */
    tc_ring_step_init(&rs, n, p, r, tc_algo_mod(r - 1, p), ch, rs_start);
    for (s = 0; s < p - 1; s++) {
        tc_ring_step_init(&cur, n, p, tc_algo_mod(r + 1 - s, p), tc_algo_mod(r - s, p), ch,
                          sched->nsteps);
        for (j = 0; j < cur.ns || j < cur.nr; j++) {
            if (j < cur.ns) {
                /* the last reduction of the reduce-scatter, then the receives */
                const uint32_t dep = tc_algo_ring_pos(before.start, j, before.ns, before.nr, 1);
                o = tc_algo_chunk_off(n, p, cur.sc) + (ch ? j * ch : 0);
                len = tc_algo_piece_len(tc_algo_chunk_len(n, p, cur.sc), ch, j);
                TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, next, TC_BUF_RECV, o, TC_BUF_RECV, 0,
                                         len, dep, TC_STEP_NO_DEP, NULL));
            }
            if (j < cur.nr) {
                const uint32_t dep = tc_algo_ring_pos(rs.start, j, rs.ns, rs.nr, 0);
                o = tc_algo_chunk_off(n, p, cur.rc) + (ch ? j * ch : 0);
                len = tc_algo_piece_len(tc_algo_chunk_len(n, p, cur.rc), ch, j);
                TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_RECV, prev, TC_BUF_RECV, 0, TC_BUF_RECV, o,
                                         len, dep, TC_STEP_NO_DEP, NULL));
            }
        }
        before = cur;
        tc_ring_step_init(&rs, n, p, tc_algo_mod(r - s - 1, p), tc_algo_mod(r - s - 2, p), ch,
                          rs.start + (uint32_t)(rs.ns + rs.nr));
    }
    return TC_OK;
}

void tc_algo_all_reduce_ring_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    const int p = args->nranks;
    const uint64_t n = args->count, ch = args->chunk_count;
    const uint64_t base = n / (uint64_t)p, extra = n % (uint64_t)p;
    const uint64_t big = base + (extra > 0);
    const uint64_t m_big = tc_ring_msgs(n, p, 0, ch);       /* block 0 is a biggest */
    const uint64_t m_small = tc_ring_msgs(n, p, p - 1, ch); /* block p-1 is a smallest */
    uint64_t total, min_pair;

    memset(cost, 0, sizeof(*cost));
    if (p == 1 || n == 0) {
        return;
    }
    cost->rounds = 2.0 * (p - 1) * (double)m_big;
    cost->elems = 2.0 * (p - 1) * (double)big;
    cost->red_elems = (p - 1) * (double)tc_algo_piece_len(big, ch, 0);
    /* A rank sends every block twice but blocks r+1 and r+2: the busiest
     * rank is the one whose two skipped blocks are the shortest. */
    cost->max_send_elems = 2 * n - (2 * base + ((uint64_t)p - extra >= 2 ? 0 : 1));
    /* messages likewise: blocks 0..extra-1 take m_big, the others m_small */
    total = extra * m_big + ((uint64_t)p - extra) * m_small;
    min_pair = m_small + ((uint64_t)p - extra >= 2 ? m_small : m_big);
    cost->max_send_msgs = 2 * total - min_pair;
}
