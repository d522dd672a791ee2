/*
 * All-reduce, recursive doubling: log2(p) rounds of whole-vector exchanges
 * with the partner at distance 1, 2, 4, ...
 *
 * Cost (p a power of two) = lg p alpha + n lg p beta + n lg p gamma.
 * Otherwise, with p' the largest power of two below p:
 * Cost = (lg p' + 2) alpha + n (lg p' + 2) beta + n (lg p' + 1) gamma.
 * Latency-optimal: for small n.
 *
 * Non-powers of two fold in the rem = p - p' extra ranks first: among ranks
 * 0..2 rem-1, each even rank sends its vector to the odd rank above it, which
 * reduces it, and takes no further part until that odd rank sends it the
 * result at the end. The p' remaining ranks (odd ranks < 2 rem, and every
 * rank >= 2 rem) run the doubling under new numbers: r / 2 and r - rem.
 * Each round sends the whole recv buffer, receives the partner's into
 * scratch (count elements), then REDUCEs scratch into recv. The reduce waits
 * for the send (it overwrites what the send reads); the next round's receive
 * waits for the reduce (it overwrites the scratch the reduce reads).
 * count == 0 gives an empty schedule.
 */
#include <string.h>

#include "algo_internal.h"

TC_ALGO_DEFINE(ALL_REDUCE, recursive_doubling, all_reduce_recursive_doubling, NULL, 20);

#define TC_RD_TRY(expr)                                                                            \
    do {                                                                                           \
        tc_status_t tc_rd_status_ = (expr);                                                        \
        if (tc_rd_status_ != TC_OK)                                                                \
            return tc_rd_status_;                                                                  \
    } while (0)

tc_status_t tc_algo_all_reduce_recursive_doubling(const tc_algo_args_t *args, tc_sched_t *sched)
{
    const int p = args->nranks, r = args->rank;
    const uint64_t n = args->count;
    int p2 = 1, rem, newrank, mask, np, peer;
    uint32_t last = TC_STEP_NO_DEP, snd, rcv, copy = TC_STEP_NO_DEP;

    TC_RD_TRY(tc_algo_args_check(args, "all_reduce recursive_doubling"));
    sched->scratch_count = 0;
    if (n == 0) {
        return TC_OK;
    }
    if (!args->in_place) {
        TC_RD_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV, 0, n,
                               TC_STEP_NO_DEP, TC_STEP_NO_DEP, &copy));
    }
    if (p == 1) {
        return TC_OK;
    }
    sched->scratch_count = n;
    while (p2 * 2 <= p) {
        p2 *= 2;
    }
    rem = p - p2;
    last = copy;

    if (r < 2 * rem) {
        if (r % 2 == 0) {
            /* Folded out: hand the vector over, get the result back. */
            TC_RD_TRY(tc_algo_step(sched, TC_STEP_SEND, r + 1, TC_BUF_RECV, 0, TC_BUF_RECV, 0, n,
                                   copy, TC_STEP_NO_DEP, &snd));
            return tc_algo_step(sched, TC_STEP_RECV, r + 1, TC_BUF_RECV, 0, TC_BUF_RECV, 0, n, snd,
                                TC_STEP_NO_DEP, NULL);
        }
        TC_RD_TRY(tc_algo_step(sched, TC_STEP_RECV, r - 1, TC_BUF_RECV, 0, TC_BUF_SCRATCH, 0, n,
                               TC_STEP_NO_DEP, TC_STEP_NO_DEP, &rcv));
        TC_RD_TRY(tc_algo_step(sched, TC_STEP_REDUCE, -1, TC_BUF_SCRATCH, 0, TC_BUF_RECV, 0, n,
                               copy, rcv, &last));
        newrank = r / 2;
    } else {
        newrank = r - rem;
    }

    for (mask = 1; mask < p2; mask <<= 1) {
        np = newrank ^ mask;
        peer = np < rem ? 2 * np + 1 : np + rem;
        TC_RD_TRY(tc_algo_step(sched, TC_STEP_SEND, peer, TC_BUF_RECV, 0, TC_BUF_RECV, 0, n, last,
                               TC_STEP_NO_DEP, &snd));
        TC_RD_TRY(tc_algo_step(sched, TC_STEP_RECV, peer, TC_BUF_RECV, 0, TC_BUF_SCRATCH, 0, n,
                               last, TC_STEP_NO_DEP, &rcv));
        TC_RD_TRY(tc_algo_step(sched, TC_STEP_REDUCE, -1, TC_BUF_SCRATCH, 0, TC_BUF_RECV, 0, n, snd,
                               rcv, &last));
    }

    if (r < 2 * rem) {
        /* r is odd here: return the result to the folded-out rank below. */
        TC_RD_TRY(tc_algo_step(sched, TC_STEP_SEND, r - 1, TC_BUF_RECV, 0, TC_BUF_RECV, 0, n, last,
                               TC_STEP_NO_DEP, NULL));
    }
    return TC_OK;
}

void tc_algo_all_reduce_recursive_doubling_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    int lg, p2 = tc_algo_pow2_floor(args->nranks, &lg), rem = args->nranks - p2;
    const double n = (double)args->count;
    double shared = 0;
    int d;

    memset(cost, 0, sizeof(*cost));
    if (args->nranks == 1 || args->count == 0) {
        return;
    }
    cost->rounds = lg + (rem > 0 ? 2 : 0);
    cost->elems = cost->rounds * n;
    /* every step moves n elements; step d pairs r and r XOR d; the fold
     * and unfold (rem > 0) count one link each */
    for (d = 1; d < p2; d <<= 1) {
        shared += tc_algo_node_share(args, d, 1);
    }
    cost->link_share = (shared + (rem > 0 ? 2 : 0)) / cost->rounds;
    cost->red_elems = (lg + (rem > 0 ? 1 : 0)) * n;
    cost->max_send_msgs = (uint64_t)lg + (rem > 0 ? 1 : 0);
    cost->max_send_elems = cost->max_send_msgs * args->count;
}
