/*
 * All-reduce, Rabenseifner: a recursive-halving reduce-scatter, then a
 * recursive-doubling all-gather, over p' = the largest power of two <= p.
 * Cost (p a power of two) = 2 lg p alpha + 2 n (p-1)/p beta + n (p-1)/p gamma.
 * Otherwise the rem = p - p' extra ranks fold in first, as in
 * recursive_doubling (+2 alpha, +2 n beta, +n gamma).
 * The vector is split into p' chunks (tc_algo_chunk_*). In halving round
 * with mask m (1 up to p'/2), a rank keeps the lower half of the chunks it
 * owns when its bit m is clear, sends the other half to its partner v ^ m
 * and receive-reduces the partner's copy of the kept half straight into
 * recv. The doubling rounds then exchange owned ranges in reverse order. Every step depends on the
 * previous send and receive, which orders every access to recv.
 * Out of place nothing is copied first: the first step that reads a rank's
 * input reads the send buffer (the fold's send and receive-reduce, or the
 * first halving round), and that receive-reduce is RECV_REDUCE_SRC, recv =
 * send op message; every later step works in recv.
 */
#include <string.h>

#include "algo_internal.h"

TC_ALGO_DEFINE(ALL_REDUCE, rabenseifner, all_reduce_rabenseifner, NULL, 30);

static uint64_t tc_rab_off(uint64_t n, int p2, int c)
{
    return tc_algo_chunk_off(n, p2, c);
}

static uint64_t tc_rab_len(uint64_t n, int p2, int lo, int cnt)
{
    return tc_algo_chunk_off(n, p2, lo + cnt) - tc_algo_chunk_off(n, p2, lo);
}

tc_status_t tc_algo_all_reduce_rabenseifner(const tc_algo_args_t *args, tc_sched_t *sched)
{
    const int p = args->nranks, r = args->rank;
    const uint64_t n = args->count;
    int p2, rem, v, m, lo, peer, np, keep, give, sz;
    uint32_t last = TC_STEP_NO_DEP, snd = TC_STEP_NO_DEP, x;
    /* where this rank's data is until its first receive-reduce writes recv */
    tc_buf_t in = args->in_place ? TC_BUF_RECV : TC_BUF_SEND;

    TC_ALGO_TRY(tc_algo_args_check(args, "all_reduce rabenseifner"));
    if (n == 0) {
        return TC_OK;
    }
    if (p == 1) {
        return args->in_place ? TC_OK
                              : tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV,
                                             0, n, TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL);
    }
    p2 = tc_algo_pow2_floor(p, NULL);
    rem = p - p2;
    if (r < 2 * rem) {
        if (r % 2 == 0) {
            TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, r + 1, in, 0, TC_BUF_RECV, 0, n,
                                     TC_STEP_NO_DEP, TC_STEP_NO_DEP, &x));
            return tc_algo_step(sched, TC_STEP_RECV, r + 1, TC_BUF_RECV, 0, TC_BUF_RECV, 0, n, x,
                                TC_STEP_NO_DEP, NULL);
        }
        TC_ALGO_TRY(
            tc_algo_step(sched, in == TC_BUF_RECV ? TC_STEP_RECV_REDUCE : TC_STEP_RECV_REDUCE_SRC,
                         r - 1, in, 0, TC_BUF_RECV, 0, n, TC_STEP_NO_DEP, TC_STEP_NO_DEP, &last));
        in = TC_BUF_RECV;
        v = r / 2;
    } else {
        v = r - rem;
    }
    /* Halving, partners at distance 1, 2, 4, ... (so the ranks reduced into
     * a chunk are always an aligned block): own chunks [lo, lo + 2 sz)
     * before the round, half after. */
    lo = 0;
    for (m = 1, sz = p2 / 2; m < p2; m *= 2, sz /= 2) {
        np = v ^ m;
        peer = np < rem ? 2 * np + 1 : np + rem;
        keep = (v & m) ? lo + sz : lo;
        give = (v & m) ? lo : lo + sz;
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, peer, in, tc_rab_off(n, p2, give),
                                 TC_BUF_RECV, 0, tc_rab_len(n, p2, give, sz), last, snd, &x));
        TC_ALGO_TRY(
            tc_algo_step(sched, in == TC_BUF_RECV ? TC_STEP_RECV_REDUCE : TC_STEP_RECV_REDUCE_SRC,
                         peer, in, in == TC_BUF_RECV ? 0 : tc_rab_off(n, p2, keep), TC_BUF_RECV,
                         tc_rab_off(n, p2, keep), tc_rab_len(n, p2, keep, sz), last, snd, &last));
        in = TC_BUF_RECV;
        snd = x;
        lo = keep;
    }
    /* Doubling, in the reverse order: own [lo, lo + sz), gain the partner's
     * neighbouring range of the same size. */
    for (m = p2 / 2, sz = 1; m >= 1; m /= 2, sz *= 2) {
        np = v ^ m;
        peer = np < rem ? 2 * np + 1 : np + rem;
        keep = (v & m) ? lo - sz : lo + sz; /* the range received */
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, peer, TC_BUF_RECV, tc_rab_off(n, p2, lo),
                                 TC_BUF_RECV, 0, tc_rab_len(n, p2, lo, sz), last, snd, &x));
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_RECV, peer, TC_BUF_RECV, 0, TC_BUF_RECV,
                                 tc_rab_off(n, p2, keep), tc_rab_len(n, p2, keep, sz), last, snd,
                                 &last));
        snd = x;
        lo = (v & m) ? lo - sz : lo;
    }
    if (r < 2 * rem) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, r - 1, TC_BUF_RECV, 0, TC_BUF_RECV, 0, n,
                                 last, snd, NULL));
    }
    return TC_OK;
}

void tc_algo_all_reduce_rabenseifner_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    const int p = args->nranks;
    const uint64_t n = args->count;
    int lg, p2 = tc_algo_pow2_floor(p, &lg), rem = p - p2, v, m, lo, sz;
    uint64_t best = 0, sent;
    double shared = 0;
    /* NOLINTNEXTLINE(bugprone-integer-division): ceil(n / p2), in integers on purpose */
    const double big = (double)(n / (uint64_t)p2 + (n % (uint64_t)p2 != 0));

    memset(cost, 0, sizeof(*cost));
    if (p == 1 || n == 0) {
        return;
    }
    cost->rounds = 2.0 * lg + (rem > 0 ? 2 : 0);
    cost->elems = 2.0 * (p2 - 1) * big + (rem > 0 ? 2.0 * (double)n : 0);
    cost->red_elems = (p2 - 1) * big + (rem > 0 ? (double)n : 0);
    /* halving and doubling move p2 / (2 m) blocks with the partner XOR m
     * (about: the partners are the folded ranks'); the fold counts one link */
    for (m = 1; m < p2; m *= 2) {
        int blocks = p2 / (2 * m); /* whole blocks: p2 and m are powers of two */
        shared += 2.0 * blocks * big * tc_algo_node_share(args, m, 1);
    }
    cost->link_share = (shared + (rem > 0 ? 2.0 * (double)n : 0)) / cost->elems;
    cost->max_send_msgs = 2u * (uint64_t)lg + (rem > 0);
    /* Elements sent by new rank v: halving gives away a half per round, then
     * doubling sends its owned range; the fold adds n for the odd ranks. */
    for (v = 0; v < p2; v++) {
        sent = 0;
        lo = 0;
        for (m = 1, sz = p2 / 2; m < p2; m *= 2, sz /= 2) {
            sent += tc_rab_len(n, p2, (v & m) ? lo : lo + sz, sz);
            lo = (v & m) ? lo + sz : lo;
        }
        for (m = p2 / 2, sz = 1; m >= 1; m /= 2, sz *= 2) {
            sent += tc_rab_len(n, p2, lo, sz);
            lo = (v & m) ? lo - sz : lo;
        }
        if (v < rem) {
            sent += n;
        }
        best = sent > best ? sent : best;
    }
    cost->max_send_elems = best;
}
