/*
 * All-reduce, ring: a ring reduce-scatter followed by a ring all-gather.
 *
 * Cost = 2(p-1) alpha + 2 n (p-1)/p beta + n (p-1)/p gamma
 * (p ranks, n bytes; alpha latency per message, beta time per byte on the
 * wire, gamma time per byte reduced). Bandwidth-optimal for large n.
 *
 * The vector is split into p chunks as even as possible (the first n % p
 * chunks have one element more; with count < p some chunks are empty and
 * their messages carry no data). Rank r sends to r+1 and receives from r-1.
 *   Out of place: step 0 is COPY send -> recv; everything else works in recv.
 *   Reduce-scatter, step s = 0..p-2: send chunk (r-s) and RECV_REDUCE chunk
 *     (r-s-1) directly into recv (no scratch: the executor reduces the
 *     arriving bytes into place). The send of step s+1 depends on the
 *     reduction of step s, which produced the chunk it sends.
 *     After it, rank r holds chunk (r+1) fully reduced.
 *   All-gather, step s = 0..p-2: send chunk (r+1-s) (after the receive that
 *     produced it), RECV chunk (r-s), which depends on the reduce-scatter send
 *     of that same chunk (the receive overwrites what that send reads).
 * count == 0 gives an empty schedule.
 */
#include <string.h>

#include "algo_internal.h"

#define TC_RING_TRY(expr)                                                                          \
    do {                                                                                           \
        tc_status_t tc_ring_status_ = (expr);                                                      \
        if (tc_ring_status_ != TC_OK)                                                              \
            return tc_ring_status_;                                                                \
    } while (0)

tc_status_t tc_algo_all_reduce_ring(const tc_algo_args_t *args, tc_sched_t *sched)
{
    const int p = args->nranks, r = args->rank;
    const int next = (r + 1) % p, prev = (r + p - 1) % p;
    const uint64_t n = args->count;
    uint32_t copy = TC_STEP_NO_DEP, last = TC_STEP_NO_DEP, idx;
    uint32_t rs_send0 = TC_STEP_NO_DEP;
    int s, c;

    TC_RING_TRY(tc_algo_args_check(args, "all_reduce ring"));
    sched->scratch_count = 0;
    if (n == 0) {
        return TC_OK;
    }
    if (!args->in_place) {
        TC_RING_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV, 0, n,
                                 TC_STEP_NO_DEP, TC_STEP_NO_DEP, &copy));
    }
    if (p == 1) {
        return TC_OK;
    }

    /* Reduce-scatter. The index of its step-s send is recorded by position:
     * send_s is step rs_send0 + 2 s (sends and receives alternate). */
    last = copy; /* what the first send waits for */
    for (s = 0; s < p - 1; s++) {
        c = tc_algo_mod(r - s, p);
        TC_RING_TRY(tc_algo_step(sched, TC_STEP_SEND, next, TC_BUF_RECV, tc_algo_chunk_off(n, p, c),
                                 TC_BUF_RECV, 0, tc_algo_chunk_len(n, p, c), last, TC_STEP_NO_DEP,
                                 &idx));
        if (s == 0) {
            rs_send0 = idx;
        }
        c = tc_algo_mod(r - s - 1, p);
        TC_RING_TRY(tc_algo_step(sched, TC_STEP_RECV_REDUCE, prev, TC_BUF_RECV, 0, TC_BUF_RECV,
                                 tc_algo_chunk_off(n, p, c), tc_algo_chunk_len(n, p, c), copy,
                                 TC_STEP_NO_DEP, &last));
    }

    /* All-gather. */
    for (s = 0; s < p - 1; s++) {
        c = tc_algo_mod(r + 1 - s, p);
        TC_RING_TRY(tc_algo_step(sched, TC_STEP_SEND, next, TC_BUF_RECV, tc_algo_chunk_off(n, p, c),
                                 TC_BUF_RECV, 0, tc_algo_chunk_len(n, p, c), last, TC_STEP_NO_DEP,
                                 NULL));
        c = tc_algo_mod(r - s, p);
        TC_RING_TRY(tc_algo_step(sched, TC_STEP_RECV, prev, TC_BUF_RECV, 0, TC_BUF_RECV,
                                 tc_algo_chunk_off(n, p, c), tc_algo_chunk_len(n, p, c),
                                 rs_send0 + 2u * (uint32_t)s, TC_STEP_NO_DEP, &last));
    }
    return TC_OK;
}

void tc_algo_all_reduce_ring_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    const int p = args->nranks;
    const uint64_t n = args->count, base = n / (uint64_t)p, extra = n % (uint64_t)p;
    const double big = (double)(base + (extra > 0));

    memset(cost, 0, sizeof(*cost));
    if (p == 1 || n == 0) {
        return;
    }
    cost->rounds = 2.0 * (p - 1);
    cost->elems = 2.0 * (p - 1) * big;
    cost->red_elems = (p - 1) * big;
    cost->max_send_msgs = 2u * (uint64_t)(p - 1);
    /* A rank sends every chunk twice but chunks r+1 and r+2: the busiest
     * rank is the one whose two skipped chunks are the shortest. */
    cost->max_send_elems = 2 * n - (2 * base + ((uint64_t)p - extra >= 2 ? 0 : 1));
}
