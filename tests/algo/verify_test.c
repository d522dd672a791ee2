/* The verifier: it proves the registered algorithms and rejects broken schedules
 * with the precise reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/algo/schedule.h"
#include "tcomms/base/status.h"

#define NO TC_STEP_NO_DEP

static tc_algo_args_t ar_args(int nranks, uint64_t count, int in_place)
{
    tc_algo_args_t a = {.coll = TC_COLL_ALL_REDUCE,
                        .nranks = nranks,
                        .root = -1,
                        .count = count,
                        .in_place = in_place};
    return a;
}

static tc_status_t add(tc_sched_t *s, int kind, int peer, int buf, uint64_t off, int dst_buf,
                       uint64_t dst_off, uint64_t count, uint32_t d0, uint32_t d1)
{
    tc_step_t st = {.kind = (uint8_t)kind,
                    .buf = (uint8_t)buf,
                    .dst_buf = (uint8_t)dst_buf,
                    .peer = peer,
                    .off = off,
                    .dst_off = dst_off,
                    .count = count,
                    .dep = {d0, d1}};
    return tc_sched_add(s, &st, NULL);
}

#define TRY(x)                                                                                     \
    do {                                                                                           \
        tc_status_t st_ = (x);                                                                     \
        if (st_ != TC_OK)                                                                          \
            return st_;                                                                            \
    } while (0)

static void expect_fail(const tc_algo_args_t *a, tc_algo_gen_fn gen, const char *const *parts)
{
    tc_status_t status = tc_algo_verify_with(a, gen);

    if (status != TC_ERR_INTERNAL) {
        fail_msg("expected TC_ERR_INTERNAL, got %s: %s", tc_status_string(status), tc_last_error());
    }
    for (; *parts != NULL; parts++) {
        if (strstr(tc_last_error(), *parts) == NULL) {
            fail_msg("detail lacks \"%s\": %s", *parts, tc_last_error());
        }
    }
}

/* ---- every registered all-reduce algorithm is proven ---------------------- */

static void test_registered_all_reduce_algorithms_verify(void **state)
{
    size_t ndesc, d;
    const tc_algo_desc_t *t = tc_algo_table(&ndesc);
    int p, c, ip, nalgo = 0, nrun = 0;

    (void)state;
    for (d = 0; d < ndesc; d++) {
        if (t[d].coll != TC_COLL_ALL_REDUCE) {
            continue;
        }
        nalgo++;
        for (p = 1; p <= 33; p++) {
            const uint64_t counts[] = {0,  1,   2, 3, (uint64_t)p - 1, (uint64_t)p, (uint64_t)p + 1,
                                       97, 1000};
            for (c = 0; c < (int)(sizeof(counts) / sizeof(counts[0])); c++) {
                for (ip = 0; ip < 2; ip++) {
                    tc_algo_args_t a = ar_args(p, counts[c], ip);
                    tc_status_t status = tc_algo_verify(&a, t[d].name);
                    if (status != TC_OK) {
                        fail_msg("%s p=%d count=%llu in_place=%d: %s: %s", t[d].name, p,
                                 (unsigned long long)counts[c], ip, tc_status_string(status),
                                 tc_last_error());
                    }
                    nrun++;
                }
            }
        }
    }
    assert_int_equal(nalgo, 6); /* + two trees, hierarchical (one node here) */
    assert_int_equal(nrun, 6 * 33 * 9 * 2);
}

static void test_verify_larger_rank_counts(void **state)
{
    const int ps[] = {48, 63, 64, 65, 100};
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
        tc_algo_args_t a = ar_args(ps[i], 300, 0);
        if (tc_algo_verify(&a, "ring") != TC_OK ||
            tc_algo_verify(&a, "recursive_doubling") != TC_OK) {
            fail_msg("p=%d: %s", ps[i], tc_last_error());
        }
    }
}

static void test_verify_argument_errors(void **state)
{
    tc_algo_args_t a = ar_args(4, 10, 0);

    (void)state;
    assert_int_equal(tc_algo_verify(&a, "butterfly"), TC_ERR_NOT_FOUND);
    assert_non_null(strstr(tc_last_error(), "valid names: ring, recursive_doubling"));
    assert_int_equal(tc_algo_verify_with(&a, NULL), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_algo_verify(NULL, "ring"), TC_ERR_INVALID_ARG);
    a.nranks = 0;
    assert_int_equal(tc_algo_verify(&a, "ring"), TC_ERR_INVALID_ARG);
    a = ar_args(4, 10, 0);
    a.coll = TC_COLL_ALL_TO_ALL;
    a.in_place = 1;
    assert_int_equal(tc_algo_verify(&a, NULL), TC_ERR_UNSUPPORTED);
}

/* ---- broken generators ------------------------------------------------------ */

/* One ring step only: each rank ends with its own and its left neighbour's data. */
static tc_status_t gen_half_reduce(const tc_algo_args_t *a, tc_sched_t *s)
{
    int next = (a->rank + 1) % a->nranks, prev = (a->rank + a->nranks - 1) % a->nranks;

    s->scratch_count = a->count;
    TRY(add(s, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV, 0, a->count, NO, NO));
    TRY(add(s, TC_STEP_SEND, next, TC_BUF_RECV, 0, 0, 0, a->count, 0, NO));
    TRY(add(s, TC_STEP_RECV, prev, 0, 0, TC_BUF_SCRATCH, 0, a->count, NO, NO));
    return add(s, TC_STEP_REDUCE, -1, TC_BUF_SCRATCH, 0, TC_BUF_RECV, 0, a->count, 1, 2);
}

static void test_detects_missing_contribution(void **state)
{
    tc_algo_args_t a = ar_args(4, 5, 0);
    const char *parts[] = {"wrong result: rank 0 recv[0] is missing the contribution of rank 1 "
                           "(holds 2 of 4 ranks)",
                           "(custom) (4 ranks, count 5)", NULL};

    (void)state;
    expect_fail(&a, gen_half_reduce, parts);
}

/* The ring plus one extra message from rank 0 to rank 1. */
static tc_status_t gen_extra_send(const tc_algo_args_t *a, tc_sched_t *s)
{
    tc_sched_t ring;
    uint32_t i;
    tc_status_t status = tc_algo_build(a, "ring", &ring);

    if (status != TC_OK) {
        return status;
    }
    for (i = 0; i < ring.nsteps && status == TC_OK; i++) {
        status = tc_sched_add(s, &ring.steps[i], NULL);
    }
    tc_sched_free(&ring);
    if (status == TC_OK && a->rank == 0) {
        status = add(s, TC_STEP_SEND, 1, TC_BUF_RECV, 0, 0, 0, 1, NO, NO);
    }
    return status;
}

static void test_detects_unmatched_send(void **state)
{
    tc_algo_args_t a = ar_args(4, 10, 0);
    const char *parts[] = {"unmatched send: rank 0 step 12 (send 1 elements of recv[0] to rank "
                           "1) is message 7 from rank 0 to rank 1, but rank 1 posts only 6 "
                           "receives from rank 0",
                           NULL};

    (void)state;
    expect_fail(&a, gen_extra_send, parts);
}

/* Rank 1 receives from rank 0 a message rank 0 never sends. */
static tc_status_t gen_extra_recv(const tc_algo_args_t *a, tc_sched_t *s)
{
    TRY(add(s, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV, 0, a->count, NO, NO));
    if (a->rank == 1) {
        TRY(add(s, TC_STEP_RECV_REDUCE, 0, 0, 0, TC_BUF_RECV, 0, a->count, 0, NO));
    }
    return TC_OK;
}

static void test_detects_unmatched_receive(void **state)
{
    tc_algo_args_t a = ar_args(2, 3, 0);
    const char *parts[] = {"unmatched receive: rank 1 step 1",
                           "rank 0 sends only 0 messages to "
                           "rank 1",
                           NULL};

    (void)state;
    expect_fail(&a, gen_extra_recv, parts);
}

/* Each rank first waits for its left neighbour, which waits for its own: a cycle. */
static tc_status_t gen_deadlock(const tc_algo_args_t *a, tc_sched_t *s)
{
    int next = (a->rank + 1) % a->nranks, prev = (a->rank + a->nranks - 1) % a->nranks;

    s->scratch_count = a->count;
    TRY(add(s, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV, 0, a->count, NO, NO));
    TRY(add(s, TC_STEP_RECV, prev, 0, 0, TC_BUF_SCRATCH, 0, a->count, NO, NO));
    TRY(add(s, TC_STEP_SEND, next, TC_BUF_RECV, 0, 0, 0, a->count, 0, 1));
    return add(s, TC_STEP_REDUCE, -1, TC_BUF_SCRATCH, 0, TC_BUF_RECV, 0, a->count, 1, 2);
}

static void test_detects_deadlock(void **state)
{
    tc_algo_args_t a = ar_args(3, 5, 0);
    const char *parts[] = {"deadlock: 9 of 12 steps cannot run; rank 0 step 1 (recv 5 elements "
                           "from rank 2 into scratch[0]) waits for its match, rank 2 step 2 "
                           "(send 5 elements of recv[0] to rank 0)",
                           "which waits for its step 1", ": a cycle", NULL};

    (void)state;
    expect_fail(&a, gen_deadlock, parts);
}

/* The send and the receive-reduce both use recv with no order between them. */
static tc_status_t gen_race(const tc_algo_args_t *a, tc_sched_t *s)
{
    int peer = 1 - a->rank;

    TRY(add(s, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV, 0, a->count, NO, NO));
    TRY(add(s, TC_STEP_SEND, peer, TC_BUF_RECV, 0, 0, 0, a->count, 0, NO));
    return add(s, TC_STEP_RECV_REDUCE, peer, 0, 0, TC_BUF_RECV, 0, a->count, 0, NO);
}

static void test_detects_race(void **state)
{
    tc_algo_args_t a = ar_args(2, 4, 0);
    const char *parts[] = {"race: rank 0 steps 1 (send 4 elements of recv[0] to rank 1) and 2 "
                           "(recv-reduce 4 elements from rank 1 into recv[0]) touch recv[0, 4)",
                           NULL};

    (void)state;
    expect_fail(&a, gen_race, parts);
}

/* ---- receive-reduce with its own source (RECV_REDUCE_SRC) ------------------ */

/* Direct all-reduce: every rank sends its input to every other; the first
 * receive reduces with the input as local operand (recv = send op message, no
 * copy first), each later one reduces into recv after the one before. */
static tc_status_t gen_direct_src(const tc_algo_args_t *a, tc_sched_t *s)
{
    const int p = a->nranks, r = a->rank;
    uint32_t last = NO, idx;
    int k;

    for (k = 1; k < p; k++) {
        TRY(add(s, TC_STEP_SEND, (r + k) % p, TC_BUF_SEND, 0, 0, 0, a->count, NO, NO));
    }
    for (k = 1; k < p; k++) {
        tc_step_t st = {.kind = k == 1 ? TC_STEP_RECV_REDUCE_SRC : TC_STEP_RECV_REDUCE,
                        .buf = TC_BUF_SEND,
                        .dst_buf = TC_BUF_RECV,
                        .peer = (r + p - k) % p,
                        .count = a->count,
                        .dep = {last, NO}};
        TRY(tc_sched_add(s, &st, &idx));
        last = idx;
    }
    return TC_OK;
}

static void test_recv_reduce_src_verifies(void **state)
{
    int p;

    (void)state;
    for (p = 2; p <= 17; p++) {
        tc_algo_args_t a = ar_args(p, 7, 0);
        if (tc_algo_verify_with(&a, gen_direct_src) != TC_OK) {
            fail_msg("%d ranks: %s", p, tc_last_error());
        }
    }
}

/* The local operand is the input shifted by one: the result mixes elements. */
static tc_status_t gen_src_wrong_offset(const tc_algo_args_t *a, tc_sched_t *s)
{
    int peer = 1 - a->rank;

    TRY(add(s, TC_STEP_SEND, peer, TC_BUF_SEND, 0, 0, 0, a->count - 1, NO, NO));
    TRY(add(s, TC_STEP_SEND, peer, TC_BUF_SEND, a->count - 1, 0, 0, 1, NO, NO));
    TRY(add(s, TC_STEP_RECV_REDUCE_SRC, peer, TC_BUF_SEND, 1, TC_BUF_RECV, 0, a->count - 1, NO,
            NO));
    return add(s, TC_STEP_RECV_REDUCE_SRC, peer, TC_BUF_SEND, a->count - 1, TC_BUF_RECV,
               a->count - 1, 1, NO, NO);
}

static void test_detects_recv_reduce_src_wrong_operand(void **state)
{
    tc_algo_args_t a = ar_args(2, 4, 0);
    const char *parts[] = {"wrong result", NULL};

    (void)state;
    expect_fail(&a, gen_src_wrong_offset, parts);
}

/* Source and destination in recv, one element apart. */
static tc_status_t gen_src_overlap(const tc_algo_args_t *a, tc_sched_t *s)
{
    int peer = 1 - a->rank;

    TRY(add(s, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV, 0, a->count, NO, NO));
    TRY(add(s, TC_STEP_SEND, peer, TC_BUF_SEND, 0, 0, 0, a->count, NO, NO));
    return add(s, TC_STEP_RECV_REDUCE_SRC, peer, TC_BUF_RECV, 0, TC_BUF_RECV, 1, a->count - 1, 0,
               NO);
}

static void test_detects_recv_reduce_src_overlap(void **state)
{
    tc_algo_args_t a = ar_args(2, 4, 0);
    const char *parts[] = {"rank 0 step 2 (recv-reduce 3 elements from rank 1 with recv[0] into "
                           "recv[1]) has overlapping source and destination",
                           NULL};

    (void)state;
    expect_fail(&a, gen_src_overlap, parts);
}

/* In place, the receive-reduce reads and writes recv while the send reads it. */
static tc_status_t gen_src_race(const tc_algo_args_t *a, tc_sched_t *s)
{
    int peer = 1 - a->rank;

    TRY(add(s, TC_STEP_SEND, peer, TC_BUF_RECV, 0, 0, 0, a->count, NO, NO));
    return add(s, TC_STEP_RECV_REDUCE_SRC, peer, TC_BUF_RECV, 0, TC_BUF_RECV, 0, a->count, NO, NO);
}

static void test_detects_recv_reduce_src_race(void **state)
{
    tc_algo_args_t a = ar_args(2, 4, 1);
    const char *parts[] = {"race: rank 0 steps 0", "and 1", NULL};

    (void)state;
    expect_fail(&a, gen_src_race, parts);
}

static tc_status_t gen_out_of_bounds(const tc_algo_args_t *a, tc_sched_t *s)
{
    int peer = 1 - a->rank;

    TRY(add(s, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV, 0, a->count, NO, NO));
    return add(s, TC_STEP_SEND, peer, TC_BUF_RECV, 1, 0, 0, a->count, 0, NO);
}

static void test_detects_out_of_bounds(void **state)
{
    tc_algo_args_t a = ar_args(2, 8, 0);
    const char *parts[] = {"out of bounds: rank 0 step 1 (send 8 elements of recv[1] to rank 1) "
                           "reaches recv[1, 9) but the buffer has 8 elements",
                           NULL};

    (void)state;
    expect_fail(&a, gen_out_of_bounds, parts);
}

static tc_status_t gen_scratch_overflow(const tc_algo_args_t *a, tc_sched_t *s)
{
    s->scratch_count = a->count - 1; /* one too few */
    TRY(add(s, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_SCRATCH, 0, a->count, NO, NO));
    return TC_OK;
}

static void test_detects_scratch_overflow(void **state)
{
    tc_algo_args_t a = ar_args(2, 8, 0);
    const char *parts[] = {"out of bounds: rank 0 step 0",
                           "reaches scratch[0, 8) but the buffer "
                           "has 7 elements",
                           NULL};

    (void)state;
    expect_fail(&a, gen_scratch_overflow, parts);
}

static tc_status_t gen_size_mismatch(const tc_algo_args_t *a, tc_sched_t *s)
{
    TRY(add(s, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV, 0, a->count, NO, NO));
    if (a->rank == 0) {
        return add(s, TC_STEP_SEND, 1, TC_BUF_RECV, 0, 0, 0, a->count, 0, NO);
    }
    return add(s, TC_STEP_RECV_REDUCE, 0, 0, 0, TC_BUF_RECV, 0, a->count - 1, 0, NO);
}

static void test_detects_size_mismatch(void **state)
{
    tc_algo_args_t a = ar_args(2, 6, 0);
    const char *parts[] = {"size mismatch: message 1 between ranks 0 and 1: rank 0 step 1 (send "
                           "6 elements",
                           "rank 1 step 1 (recv-reduce 5 elements", NULL};

    (void)state;
    expect_fail(&a, gen_size_mismatch, parts);
}

static tc_status_t gen_writes_input(const tc_algo_args_t *a, tc_sched_t *s)
{
    TRY(add(s, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV, 0, a->count, NO, NO));
    return add(s, TC_STEP_COPY, -1, TC_BUF_RECV, 0, TC_BUF_SEND, 0, a->count, 0, NO);
}

static void test_detects_write_to_send_buffer(void **state)
{
    tc_algo_args_t a = ar_args(1, 6, 0);
    const char *parts[] = {"rank 0 step 1 (copy 6 elements recv[0] -> send[0]) writes the send "
                           "buffer",
                           NULL};

    (void)state;
    expect_fail(&a, gen_writes_input, parts);
}

/* Exchange, then reduce the partner's data twice. */
static tc_status_t gen_double_count(const tc_algo_args_t *a, tc_sched_t *s)
{
    int peer = 1 - a->rank;

    s->scratch_count = a->count;
    TRY(add(s, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV, 0, a->count, NO, NO));
    TRY(add(s, TC_STEP_SEND, peer, TC_BUF_RECV, 0, 0, 0, a->count, 0, NO));
    TRY(add(s, TC_STEP_RECV, peer, 0, 0, TC_BUF_SCRATCH, 0, a->count, NO, NO));
    TRY(add(s, TC_STEP_REDUCE, -1, TC_BUF_SCRATCH, 0, TC_BUF_RECV, 0, a->count, 1, 2));
    return add(s, TC_STEP_REDUCE, -1, TC_BUF_SCRATCH, 0, TC_BUF_RECV, 0, a->count, 3, NO);
}

static void test_detects_double_contribution(void **state)
{
    tc_algo_args_t a = ar_args(2, 3, 0);
    const char *parts[] = {"rank 0 recv[0] holds the contribution of rank 1 more than once", NULL};

    (void)state;
    expect_fail(&a, gen_double_count, parts);
}

/* Exchange, then reduce the partner's element k+1 into element k. */
static tc_status_t gen_shifted(const tc_algo_args_t *a, tc_sched_t *s)
{
    int peer = 1 - a->rank;

    s->scratch_count = a->count;
    TRY(add(s, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV, 0, a->count, NO, NO));
    TRY(add(s, TC_STEP_SEND, peer, TC_BUF_RECV, 0, 0, 0, a->count, 0, NO));
    TRY(add(s, TC_STEP_RECV, peer, 0, 0, TC_BUF_SCRATCH, 0, a->count, NO, NO));
    return add(s, TC_STEP_REDUCE, -1, TC_BUF_SCRATCH, 1, TC_BUF_RECV, 0, a->count - 1, 1, 2);
}

static void test_detects_mixed_elements(void **state)
{
    tc_algo_args_t a = ar_args(2, 3, 0);
    const char *parts[] = {"rank 0 recv[0] mixes contributions of different element indices", NULL};

    (void)state;
    expect_fail(&a, gen_shifted, parts);
}

/* Out of place, but the output is a copy of the wrong input element. */
static tc_status_t gen_copy_shifted(const tc_algo_args_t *a, tc_sched_t *s)
{
    TRY(add(s, TC_STEP_COPY, -1, TC_BUF_SEND, 1, TC_BUF_RECV, 0, a->count - 1, NO, NO));
    return add(s, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV, a->count - 1, 1, NO, NO);
}

static void test_detects_wrong_element(void **state)
{
    tc_algo_args_t a = ar_args(1, 3, 0);
    const char *parts[] = {"rank 0 recv[0] holds contributions to element 1 instead of element 0",
                           NULL};

    (void)state;
    expect_fail(&a, gen_copy_shifted, parts);
}

static tc_status_t gen_nothing(const tc_algo_args_t *a, tc_sched_t *s)
{
    (void)a;
    (void)s;
    return TC_OK;
}

static void test_detects_unwritten_output(void **state)
{
    tc_algo_args_t a = ar_args(3, 2, 0);
    const char *parts[] = {"rank 0 recv[0] holds uninitialised data", NULL};

    (void)state;
    expect_fail(&a, gen_nothing, parts);
    a.in_place = 1; /* in place the input is already there: one rank is then right */
    a.nranks = 1;
    assert_int_equal(tc_algo_verify_with(&a, gen_nothing), TC_OK);
}

static tc_status_t gen_fails(const tc_algo_args_t *a, tc_sched_t *s)
{
    (void)s;
    if (a->rank == 1) {
        return tc_error_set(TC_ERR_NO_MEMORY, "fake failure");
    }
    return TC_OK;
}

static void test_generator_failure_is_returned(void **state)
{
    tc_algo_args_t a = ar_args(3, 2, 0);

    (void)state;
    assert_int_equal(tc_algo_verify_with(&a, gen_fails), TC_ERR_NO_MEMORY);
    assert_non_null(strstr(tc_last_error(), "generator failed for rank 1 of 3: fake failure"));
}

/* Overlapping blocks of a v-variant are the caller's error, refused before
 * any generator runs; they were built, then verify blamed the algorithm
 * ("race: ...", found by an independent checker). Blocks that touch, and
 * an empty block anywhere, are fine. */
static void test_v_overlap_is_invalid_arg(void **state)
{
    const tc_coll_t colls[2] = {TC_COLL_ALL_GATHER, TC_COLL_REDUCE_SCATTER};
    const uint64_t counts[4] = {1, 2, 1, 1}, over[4] = {0, 0, 5, 6}, touch[4] = {0, 1, 3, 4};
    const uint64_t empty_counts[4] = {1, 0, 1, 1}, empty[4] = {0, 0, 1, 2};
    tc_sched_t s;
    char want[128];
    int c, ip;

    (void)state;
    for (c = 0; c < 2; c++) {
        for (ip = 0; ip < 2; ip++) {
            tc_algo_args_t a = {.coll = colls[c], .nranks = 4, .root = -1, .in_place = ip};
            a.counts = counts;
            a.displs = over;
            snprintf(want, sizeof(want),
                     "%s_v: the blocks of rank 0 [0, 1) and of rank 1 (at 0) overlap",
                     tc_coll_name(a.coll));
            assert_int_equal(tc_algo_verify(&a, "ring"), TC_ERR_INVALID_ARG);
            assert_non_null(strstr(tc_last_error(), want));
            assert_int_equal(tc_algo_build(&a, "ring", &s), TC_ERR_INVALID_ARG);
            assert_non_null(strstr(tc_last_error(), want));
            a.displs = touch;
            assert_int_equal(tc_algo_verify(&a, "ring"), TC_OK);
            a.counts = empty_counts;
            a.displs = empty;
            assert_int_equal(tc_algo_verify(&a, "ring"), TC_OK);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registered_all_reduce_algorithms_verify),
        cmocka_unit_test(test_verify_larger_rank_counts),
        cmocka_unit_test(test_verify_argument_errors),
        cmocka_unit_test(test_detects_missing_contribution),
        cmocka_unit_test(test_detects_unmatched_send),
        cmocka_unit_test(test_detects_unmatched_receive),
        cmocka_unit_test(test_detects_deadlock),
        cmocka_unit_test(test_detects_race),
        cmocka_unit_test(test_recv_reduce_src_verifies),
        cmocka_unit_test(test_detects_recv_reduce_src_wrong_operand),
        cmocka_unit_test(test_detects_recv_reduce_src_overlap),
        cmocka_unit_test(test_detects_recv_reduce_src_race),
        cmocka_unit_test(test_detects_out_of_bounds),
        cmocka_unit_test(test_detects_scratch_overflow),
        cmocka_unit_test(test_detects_size_mismatch),
        cmocka_unit_test(test_detects_write_to_send_buffer),
        cmocka_unit_test(test_detects_double_contribution),
        cmocka_unit_test(test_detects_mixed_elements),
        cmocka_unit_test(test_detects_wrong_element),
        cmocka_unit_test(test_detects_unwritten_output),
        cmocka_unit_test(test_generator_failure_is_returned),
        cmocka_unit_test(test_v_overlap_is_invalid_arg),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
