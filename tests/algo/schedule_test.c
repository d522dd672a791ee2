/* The schedule builder, the registry and the shapes of the generated schedules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/algo/schedule.h"
#include "tcomms/base/status.h"

static tc_algo_args_t ar_args(int nranks, int rank, uint64_t count, int in_place)
{
    tc_algo_args_t a = {.coll = TC_COLL_ALL_REDUCE,
                        .nranks = nranks,
                        .rank = rank,
                        .root = -1,
                        .count = count,
                        .in_place = in_place};
    return a;
}

static tc_step_t step_send(int peer, uint64_t off, uint64_t count, uint32_t dep0)
{
    tc_step_t st = {.kind = TC_STEP_SEND,
                    .buf = TC_BUF_RECV,
                    .peer = peer,
                    .off = off,
                    .count = count,
                    .dep = {dep0, TC_STEP_NO_DEP}};
    return st;
}

static void test_init_copies_args(void **state)
{
    tc_algo_args_t a = {
        .coll = TC_COLL_BROADCAST, .nranks = 7, .rank = 3, .root = 2, .count = 99, .in_place = 1};
    tc_sched_t s;

    (void)state;
    memset(&s, 0xab, sizeof(s));
    tc_sched_init(&s, &a, "x");
    assert_int_equal(s.coll, TC_COLL_BROADCAST);
    assert_int_equal(s.nranks, 7);
    assert_int_equal(s.rank, 3);
    assert_int_equal(s.root, 2);
    assert_int_equal(s.count, 99);
    assert_int_equal(s.in_place, 1);
    assert_int_equal(s.nsteps, 0);
    assert_int_equal(s.cap, 0);
    assert_null(s.steps);
    assert_int_equal(s.scratch_count, 0);
    assert_string_equal(s.algo, "x");
    tc_sched_free(&s);
}

static void test_add_grows_and_keeps_steps(void **state)
{
    tc_algo_args_t a = ar_args(4, 0, 10, 0);
    tc_sched_t s;
    uint32_t i, idx, prev_cap = 0;

    (void)state;
    tc_sched_init(&s, &a, "t");
    for (i = 0; i < 1000; i++) {
        tc_step_t st = step_send(1 + (int)(i % 3), i, i * 7 + 1, i == 0 ? TC_STEP_NO_DEP : i - 1);
        assert_int_equal(tc_sched_add(&s, &st, &idx), TC_OK);
        assert_int_equal(idx, i);
        assert_int_equal(s.nsteps, i + 1);
        assert_true(s.cap >= s.nsteps);
        if (s.cap != prev_cap) {
            /* geometric: each growth at least doubles */
            assert_true(prev_cap == 0 || s.cap >= 2 * prev_cap);
            prev_cap = s.cap;
        }
    }
    assert_true(s.cap < 2048 + 1);
    for (i = 0; i < 1000; i++) {
        assert_int_equal(s.steps[i].kind, TC_STEP_SEND);
        assert_int_equal(s.steps[i].peer, 1 + (int)(i % 3));
        assert_int_equal(s.steps[i].off, i);
        assert_int_equal(s.steps[i].count, i * 7 + 1);
        assert_int_equal(s.steps[i].dep[0], i == 0 ? TC_STEP_NO_DEP : i - 1);
        assert_int_equal(s.steps[i].dep[1], TC_STEP_NO_DEP);
    }
    tc_sched_free(&s);
    assert_null(s.steps);
    assert_int_equal(s.nsteps, 0);
    tc_sched_free(&s); /* twice is harmless */
}

static void test_add_rejects_bad_steps(void **state)
{
    tc_algo_args_t a = ar_args(4, 0, 10, 0);
    tc_sched_t s;
    tc_step_t st = step_send(1, 0, 1, TC_STEP_NO_DEP);
    uint32_t idx = 12345;

    (void)state;
    tc_sched_init(&s, &a, "t");
    /* a dependency on itself (step 0 does not exist yet) */
    st.dep[0] = 0;
    assert_int_equal(tc_sched_add(&s, &st, &idx), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "depends on step 0, which does not exist"));
    assert_int_equal(idx, 12345);
    assert_int_equal(s.nsteps, 0);

    st.dep[0] = TC_STEP_NO_DEP;
    assert_int_equal(tc_sched_add(&s, &st, NULL), TC_OK);
    st.dep[1] = 0; /* earlier: fine */
    assert_int_equal(tc_sched_add(&s, &st, &idx), TC_OK);
    assert_int_equal(idx, 1);
    st.dep[1] = 5; /* later: rejected, in the second slot too */
    assert_int_equal(tc_sched_add(&s, &st, &idx), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "step 2 depends on step 5"));
    assert_int_equal(s.nsteps, 2);

    st.dep[1] = TC_STEP_NO_DEP;
    st.kind = 9;
    assert_int_equal(tc_sched_add(&s, &st, &idx), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "unknown kind 9"));
    st.kind = TC_STEP_COPY;
    st.dst_buf = 3;
    assert_int_equal(tc_sched_add(&s, &st, &idx), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "unknown buffer 3"));
    assert_int_equal(tc_sched_add(NULL, &st, &idx), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "sched is NULL"));
    assert_int_equal(tc_sched_add(&s, NULL, &idx), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "step is NULL"));
    assert_int_equal(s.nsteps, 2);
    tc_sched_free(&s);
}

static void test_coll_names(void **state)
{
    (void)state;
    assert_string_equal(tc_coll_name(TC_COLL_ALL_REDUCE), "all_reduce");
    assert_string_equal(tc_coll_name(TC_COLL_REDUCE), "reduce");
    assert_string_equal(tc_coll_name(TC_COLL_BROADCAST), "broadcast");
    assert_string_equal(tc_coll_name(TC_COLL_ALL_GATHER), "all_gather");
    assert_string_equal(tc_coll_name(TC_COLL_REDUCE_SCATTER), "reduce_scatter");
    assert_string_equal(tc_coll_name(TC_COLL_ALL_TO_ALL), "all_to_all");
    assert_string_equal(tc_coll_name(TC_COLL_GATHER), "gather");
    assert_string_equal(tc_coll_name(TC_COLL_SCATTER), "scatter");
    assert_string_equal(tc_coll_name(TC_COLL_BARRIER), "barrier");
    assert_string_equal(tc_coll_name(TC_COLL_COUNT), "invalid");
    assert_string_equal(tc_coll_name((tc_coll_t)-1), "invalid");
}

static void test_registry_table(void **state)
{
    size_t n = 0, i;
    const tc_algo_desc_t *t = tc_algo_table(&n);
    int ring = 0, rd = 0;

    (void)state;
    assert_non_null(t);
    assert_true(n >= 2);
    for (i = 0; i < n; i++) {
        assert_non_null(t[i].gen);
        if (t[i].coll == TC_COLL_ALL_REDUCE && strcmp(t[i].name, "ring") == 0) {
            ring++;
        }
        if (t[i].coll == TC_COLL_ALL_REDUCE && strcmp(t[i].name, "recursive_doubling") == 0) {
            rd++;
        }
    }
    assert_int_equal(ring, 1);
    assert_int_equal(rd, 1);
}

static void test_build_errors(void **state)
{
    tc_algo_args_t a = ar_args(4, 1, 10, 0);
    tc_sched_t s, before;

    (void)state;
    memset(&s, 0x5a, sizeof(s));
    before = s;
    assert_int_equal(tc_algo_build(&a, "rign", &s), TC_ERR_NOT_FOUND);
    assert_non_null(strstr(tc_last_error(), "no all_reduce algorithm named 'rign'"));
    assert_non_null(strstr(tc_last_error(), "valid names: ring, recursive_doubling"));
    assert_memory_equal(&s, &before, sizeof(s)); /* untouched on failure */

    a.coll = TC_COLL_ALL_GATHER;
    assert_int_equal(tc_algo_build(&a, "recursive_doubling", &s), TC_OK);
    assert_int_equal(s.buf_count[TC_BUF_SEND], 10);
    assert_int_equal(s.buf_count[TC_BUF_RECV], 40);
    tc_sched_free(&s);
    s = before;
    a.nranks = 6;
    assert_int_equal(tc_algo_build(&a, "recursive_doubling", &s), TC_ERR_UNSUPPORTED);
    assert_non_null(strstr(tc_last_error(), "needs a power-of-two number of ranks"));
    a.nranks = 4;
    a.coll = TC_COLL_BROADCAST;
    a.root = 4;
    assert_int_equal(tc_algo_build(&a, NULL, &s), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "broadcast root 4 outside [0, 4)"));
    /* root and in_place outside what the header allows were accepted (found
     * by an independent checker) */
    a = ar_args(4, 1, 10, 0);
    a.root = 2;
    assert_int_equal(tc_algo_build(&a, NULL, &s), TC_ERR_INVALID_ARG);
    assert_non_null(
        strstr(tc_last_error(), "root 2 for all_reduce, which is not rooted (must be -1)"));
    assert_int_equal(tc_algo_verify(&a, NULL), TC_ERR_INVALID_ARG);
    a = ar_args(4, 1, 10, 5);
    assert_int_equal(tc_algo_build(&a, NULL, &s), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "tc_algo_build: in_place 5 (must be 0 or 1)"));
    a.in_place = -1;
    assert_int_equal(tc_algo_verify(&a, NULL), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "tc_algo_verify: in_place -1 (must be 0 or 1)"));
    a = ar_args(4, 1, 10, 0);

    a = ar_args(0, 0, 10, 0);
    assert_int_equal(tc_algo_build(&a, NULL, &s), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "nranks 0"));
    a = ar_args(4, 4, 10, 0);
    assert_int_equal(tc_algo_build(&a, NULL, &s), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "rank 4 outside [0, 4)"));
    a = ar_args(4, -1, 10, 0);
    assert_int_equal(tc_algo_build(&a, NULL, &s), TC_ERR_INVALID_ARG);
    a = ar_args(4, 0, 10, 0);
    a.coll = TC_COLL_COUNT;
    assert_int_equal(tc_algo_build(&a, NULL, &s), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "unknown collective"));
    assert_int_equal(tc_algo_build(NULL, NULL, &s), TC_ERR_INVALID_ARG);
    a = ar_args(4, 0, 10, 0);
    assert_int_equal(tc_algo_build(&a, NULL, NULL), TC_ERR_INVALID_ARG);
    assert_memory_equal(&s, &before, sizeof(s));
}

/* NULL pointers and blocks out of range (found by an independent checker:
 * these crashed). */
static void test_layout_null(void **state)
{
    tc_algo_args_t a = ar_args(4, 1, 10, 0);
    tc_algo_layout_t l;

    (void)state;
    assert_int_equal(tc_algo_layout(NULL, &l), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "tc_algo_layout: args is NULL"));
    assert_int_equal(tc_algo_layout(&a, NULL), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "tc_algo_layout: layout is NULL"));
    assert_int_equal(tc_algo_block_off(NULL, 0), 0);
    assert_int_equal(tc_algo_block_len(NULL, 0), 0);
    assert_int_equal(tc_algo_block_off(&a, 4), 0);
    assert_int_equal(tc_algo_block_len(&a, -1), 0);
    assert_int_equal(tc_algo_block_off(&a, 3), 30);
    assert_int_equal(tc_algo_block_len(&a, 3), 10);
}

/* A chunk longer than the message is one chunk, whatever its size: chunk
 * counts near UINT64_MAX once wrapped a ceiling division to 0 pieces (found
 * by an independent checker). */
static void test_any_chunk_count(void **state)
{
    const uint64_t chunks[] = {16, 1000, UINT64_C(1) << 63, UINT64_MAX - 1, UINT64_MAX};
    size_t n = 0, i, k;
    const tc_algo_desc_t *t = tc_algo_table(&n);
    tc_status_t st;

    (void)state;
    for (i = 0; i < n; i++) {
        for (k = 0; k < sizeof(chunks) / sizeof(chunks[0]); k++) {
            tc_algo_args_t a = {.coll = t[i].coll, .nranks = 5, .root = -1, .count = 16};
            if (a.coll == TC_COLL_REDUCE || a.coll == TC_COLL_BROADCAST ||
                a.coll == TC_COLL_GATHER || a.coll == TC_COLL_SCATTER) {
                a.root = 2;
            }
            a.chunk_count = chunks[k];
            st = tc_algo_verify(&a, t[i].name);
            if (st != TC_OK && st != TC_ERR_UNSUPPORTED) {
                fail_msg("%s %s chunk_count %llu: %s", tc_coll_name(a.coll), t[i].name,
                         (unsigned long long)chunks[k], tc_last_error());
            }
        }
    }
}

/* What select may choose builds: every algorithm whose applicability check
 * passes builds on every rank, and one that fails it is refused by build
 * (an in-place all_to_all once selected "pairwise", then failed to build;
 * found by an independent checker). */
static void test_applies_matches_build(void **state)
{
    static const uint64_t counts[5] = {3, 0, 2, 1, 4};
    size_t n = 0, i;
    const tc_algo_desc_t *t = tc_algo_table(&n);
    const char *name;
    tc_status_t ap, st;
    tc_sched_t s;
    int p, r, ip, v, rpn, c;
    tc_algo_args_t a2a = {.coll = TC_COLL_ALL_TO_ALL, .nranks = 4, .root = -1, .count = 4};

    (void)state;
    a2a.in_place = 1;
    assert_int_equal(tc_algo_select(&a2a, 4, NULL, &name), TC_ERR_UNSUPPORTED);
    assert_non_null(strstr(tc_last_error(), "all_to_all in place is not supported"));
    for (c = 0; c < TC_COLL_COUNT; c++) {
        for (p = 1; p <= 5; p++) {
            for (ip = 0; ip < 2; ip++) {
                for (v = 0; v < 2; v++) {
                    for (rpn = 0; rpn <= 2; rpn += 2) {
                        tc_algo_args_t a = {.coll = (tc_coll_t)c, .nranks = p, .root = -1};
                        a.count = v ? 0 : 5;
                        a.counts = v ? counts : NULL;
                        a.in_place = ip;
                        a.ranks_per_node = rpn;
                        if (c == TC_COLL_REDUCE || c == TC_COLL_BROADCAST || c == TC_COLL_GATHER ||
                            c == TC_COLL_SCATTER) {
                            a.root = p - 1;
                        }
                        for (i = 0; i < n; i++) {
                            if (t[i].coll != a.coll) {
                                continue;
                            }
                            ap = tc_algo_select(&a, 4, t[i].name, &name);
                            for (r = 0; r < p; r++) {
                                a.rank = r;
                                st = tc_algo_build(&a, t[i].name, &s);
                                if ((st == TC_OK) != (ap == TC_OK)) {
                                    fail_msg("%s %s p=%d rank %d in_place=%d v=%d rpn=%d: "
                                             "select %s, build %s: %s",
                                             tc_coll_name(a.coll), t[i].name, p, r, ip, v, rpn,
                                             tc_status_string(ap), tc_status_string(st),
                                             tc_last_error());
                                }
                                if (st == TC_OK) {
                                    tc_sched_free(&s);
                                }
                            }
                            a.rank = 0;
                        }
                        /* the model's choice builds too, or select says why not */
                        if (tc_algo_select(&a, 4, NULL, &name) == TC_OK) {
                            assert_int_equal(tc_algo_build(&a, name, &s), TC_OK);
                            tc_sched_free(&s);
                        } else {
                            assert_int_equal(tc_algo_select(&a, 4, NULL, &name),
                                             TC_ERR_UNSUPPORTED);
                        }
                    }
                }
            }
        }
    }
}

static void expect_step(const tc_step_t *st, int kind, int peer, int buf, uint64_t off, int dst_buf,
                        uint64_t dst_off, uint64_t count)
{
    assert_int_equal(st->kind, kind);
    if (kind == TC_STEP_SEND || kind == TC_STEP_RECV || kind == TC_STEP_RECV_REDUCE ||
        kind == TC_STEP_RECV_REDUCE_SRC) {
        assert_int_equal(st->peer, peer);
    }
    if (kind == TC_STEP_SEND || kind == TC_STEP_COPY || kind == TC_STEP_REDUCE ||
        kind == TC_STEP_RECV_REDUCE_SRC) {
        assert_int_equal(st->buf, buf);
        assert_int_equal(st->off, off);
    }
    if (kind != TC_STEP_SEND) {
        assert_int_equal(st->dst_buf, dst_buf);
        assert_int_equal(st->dst_off, dst_off);
    }
    assert_int_equal(st->count, count);
}

/* Ring, 4 ranks, 10 elements: chunks (off, len) = (0,3) (3,3) (6,2) (8,2). */
static void test_ring_shape(void **state)
{
    tc_algo_args_t a = ar_args(4, 1, 10, 0);
    tc_sched_t s;
    const tc_step_t *t;

    (void)state;
    assert_int_equal(tc_algo_build(&a, NULL, &s), TC_OK);
    assert_string_equal(s.algo, "ring"); /* the default */
    assert_int_equal(s.nsteps, 2 * 3 * 2);
    assert_int_equal(s.scratch_count, 0);
    t = s.steps;
    /* reduce-scatter: send chunk 1 (from the input: no copy first), 0, 3;
     * receive-reduce chunk 0, 3, 2 with the input's chunk as local operand */
    expect_step(&t[0], TC_STEP_SEND, 2, TC_BUF_SEND, 3, 0, 0, 3);
    assert_int_equal(t[0].dep[0], TC_STEP_NO_DEP);
    expect_step(&t[1], TC_STEP_RECV_REDUCE_SRC, 0, TC_BUF_SEND, 0, TC_BUF_RECV, 0, 3);
    expect_step(&t[2], TC_STEP_SEND, 2, TC_BUF_RECV, 0, 0, 0, 3);
    assert_int_equal(t[2].dep[0], 1); /* waits for the reduction it sends */
    expect_step(&t[3], TC_STEP_RECV_REDUCE_SRC, 0, TC_BUF_SEND, 8, TC_BUF_RECV, 8, 2);
    expect_step(&t[4], TC_STEP_SEND, 2, TC_BUF_RECV, 8, 0, 0, 2);
    assert_int_equal(t[4].dep[0], 3);
    expect_step(&t[5], TC_STEP_RECV_REDUCE_SRC, 0, TC_BUF_SEND, 6, TC_BUF_RECV, 6, 2);
    /* all-gather: send chunk 2, 1, 0; receive chunk 1 (never written before), 0, 3 */
    expect_step(&t[6], TC_STEP_SEND, 2, TC_BUF_RECV, 6, 0, 0, 2);
    assert_int_equal(t[6].dep[0], 5);
    expect_step(&t[7], TC_STEP_RECV, 0, 0, 0, TC_BUF_RECV, 3, 3);
    expect_step(&t[8], TC_STEP_SEND, 2, TC_BUF_RECV, 3, 0, 0, 3);
    assert_int_equal(t[8].dep[0], 7);
    expect_step(&t[9], TC_STEP_RECV, 0, 0, 0, TC_BUF_RECV, 0, 3);
    expect_step(&t[10], TC_STEP_SEND, 2, TC_BUF_RECV, 0, 0, 0, 3);
    expect_step(&t[11], TC_STEP_RECV, 0, 0, 0, TC_BUF_RECV, 8, 2);
    tc_sched_free(&s);

    /* in place: the same shape, reducing in recv; one rank: a copy */
    a = ar_args(4, 1, 10, 1);
    assert_int_equal(tc_algo_build(&a, "ring", &s), TC_OK);
    assert_int_equal(s.nsteps, 12);
    expect_step(&s.steps[0], TC_STEP_SEND, 2, TC_BUF_RECV, 3, 0, 0, 3);
    expect_step(&s.steps[1], TC_STEP_RECV_REDUCE, 0, 0, 0, TC_BUF_RECV, 0, 3);
    tc_sched_free(&s);
    a = ar_args(1, 0, 10, 0);
    assert_int_equal(tc_algo_build(&a, "ring", &s), TC_OK);
    assert_int_equal(s.nsteps, 1);
    tc_sched_free(&s);
    a = ar_args(5, 2, 0, 0);
    assert_int_equal(tc_algo_build(&a, "ring", &s), TC_OK);
    assert_int_equal(s.nsteps, 0);
    tc_sched_free(&s);
}

/* Recursive doubling, 6 ranks: p' = 4, rem = 2; ranks 0 and 2 fold into 1 and 3. */
static void test_recursive_doubling_shape(void **state)
{
    tc_algo_args_t a = ar_args(6, 0, 5, 0);
    tc_sched_t s;

    (void)state;
    assert_int_equal(tc_algo_build(&a, "recursive_doubling", &s), TC_OK);
    assert_string_equal(s.algo, "recursive_doubling");
    assert_int_equal(s.nsteps, 3);
    expect_step(&s.steps[0], TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV, 0, 5);
    expect_step(&s.steps[1], TC_STEP_SEND, 1, TC_BUF_RECV, 0, 0, 0, 5);
    expect_step(&s.steps[2], TC_STEP_RECV, 1, 0, 0, TC_BUF_RECV, 0, 5);
    tc_sched_free(&s);

    /* rank 3 is new rank 1: partners new 0 (rank 1) and new 3 (rank 5) */
    a = ar_args(6, 3, 5, 0);
    assert_int_equal(tc_algo_build(&a, "recursive_doubling", &s), TC_OK);
    assert_int_equal(s.scratch_count, 5);
    assert_int_equal(s.nsteps, 1 + 2 + 3 * 2 + 1);
    expect_step(&s.steps[1], TC_STEP_RECV, 2, 0, 0, TC_BUF_SCRATCH, 0, 5);
    expect_step(&s.steps[2], TC_STEP_REDUCE, -1, TC_BUF_SCRATCH, 0, TC_BUF_RECV, 0, 5);
    expect_step(&s.steps[3], TC_STEP_SEND, 1, TC_BUF_RECV, 0, 0, 0, 5);
    expect_step(&s.steps[6], TC_STEP_SEND, 5, TC_BUF_RECV, 0, 0, 0, 5);
    expect_step(&s.steps[9], TC_STEP_SEND, 2, TC_BUF_RECV, 0, 0, 0, 5);
    tc_sched_free(&s);

    /* rank 5 is new rank 3: partners new 2 (rank 4) and new 1 (rank 3) */
    a = ar_args(6, 5, 5, 1);
    assert_int_equal(tc_algo_build(&a, "recursive_doubling", &s), TC_OK);
    assert_int_equal(s.nsteps, 6);
    expect_step(&s.steps[0], TC_STEP_SEND, 4, TC_BUF_RECV, 0, 0, 0, 5);
    expect_step(&s.steps[3], TC_STEP_SEND, 3, TC_BUF_RECV, 0, 0, 0, 5);
    tc_sched_free(&s);
}

/* Binomial gather and scatter, 4 ranks, root 1, 3 elements a rank: relative ranks 1 and 3
 * (ranks 2 and 0) are leaves: they send their input or receive their block in place, with no
 * scratch and no copy; relative rank 2 (rank 3) holds its subtree of two in scratch. */
static void test_binomial_leaves_shape(void **state)
{
    tc_algo_args_t a = {.nranks = 4, .root = 1, .count = 3};
    tc_sched_t s;

    (void)state;
    a.coll = TC_COLL_SCATTER;
    a.rank = 2;
    assert_int_equal(tc_algo_build(&a, "binomial_tree", &s), TC_OK);
    assert_int_equal(s.scratch_count, 0);
    assert_int_equal(s.nsteps, 1);
    expect_step(&s.steps[0], TC_STEP_RECV, 1, 0, 0, TC_BUF_RECV, 0, 3);
    tc_sched_free(&s);
    a.rank = 0; /* relative 3: its parent is relative 2, rank 3 */
    assert_int_equal(tc_algo_build(&a, "binomial_tree", &s), TC_OK);
    assert_int_equal(s.scratch_count, 0);
    assert_int_equal(s.nsteps, 1);
    expect_step(&s.steps[0], TC_STEP_RECV, 3, 0, 0, TC_BUF_RECV, 0, 3);
    tc_sched_free(&s);
    /* relative 2: receives its subtree (ranks 3 and 0: it wraps, two messages), forwards
     * relative 3's block, keeps its own */
    a.rank = 3;
    assert_int_equal(tc_algo_build(&a, "binomial_tree", &s), TC_OK);
    assert_int_equal(s.scratch_count, 6);
    assert_int_equal(s.nsteps, 4);
    expect_step(&s.steps[0], TC_STEP_RECV, 1, 0, 0, TC_BUF_SCRATCH, 0, 3);
    expect_step(&s.steps[1], TC_STEP_RECV, 1, 0, 0, TC_BUF_SCRATCH, 3, 3);
    expect_step(&s.steps[2], TC_STEP_SEND, 0, TC_BUF_SCRATCH, 3, 0, 0, 3);
    expect_step(&s.steps[3], TC_STEP_COPY, -1, TC_BUF_SCRATCH, 0, TC_BUF_RECV, 0, 3);
    tc_sched_free(&s);

    a.coll = TC_COLL_GATHER;
    a.rank = 2;
    assert_int_equal(tc_algo_build(&a, "binomial_tree", &s), TC_OK);
    assert_int_equal(s.scratch_count, 0);
    assert_int_equal(s.nsteps, 1);
    expect_step(&s.steps[0], TC_STEP_SEND, 1, TC_BUF_SEND, 0, 0, 0, 3);
    tc_sched_free(&s);
    a.in_place = 1; /* a leaf's input in place is its block of recv */
    a.rank = 0;
    assert_int_equal(tc_algo_build(&a, "binomial_tree", &s), TC_OK);
    assert_int_equal(s.scratch_count, 0);
    assert_int_equal(s.nsteps, 1);
    assert_int_equal(s.steps[0].kind, TC_STEP_SEND);
    assert_int_equal(s.steps[0].peer, 3);
    assert_int_equal(s.steps[0].count, 3);
    tc_sched_free(&s);
    a.in_place = 0;
    a.rank = 3;
    assert_int_equal(tc_algo_build(&a, "binomial_tree", &s), TC_OK);
    assert_int_equal(s.scratch_count, 6);
    assert_int_equal(s.nsteps, 4);
    expect_step(&s.steps[0], TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_SCRATCH, 0, 3);
    expect_step(&s.steps[1], TC_STEP_RECV, 0, 0, 0, TC_BUF_SCRATCH, 3, 3);
    expect_step(&s.steps[2], TC_STEP_SEND, 1, TC_BUF_SCRATCH, 0, 0, 0, 3);
    expect_step(&s.steps[3], TC_STEP_SEND, 1, TC_BUF_SCRATCH, 3, 0, 0, 3);
    tc_sched_free(&s);
}

/* Binomial reduce, 4 ranks, root 0, 5 elements: no rank copies its input first; the first
 * child's receive-reduce reads the input as its local operand (out of place), a leaf sends its
 * input as it is. */
static void test_reduce_binomial_shape(void **state)
{
    tc_algo_args_t a = {.coll = TC_COLL_REDUCE, .nranks = 4, .root = 0, .count = 5};
    tc_sched_t s;

    (void)state;
    assert_int_equal(tc_algo_build(&a, "binomial_tree", &s), TC_OK);
    assert_int_equal(s.nsteps, 2);
    expect_step(&s.steps[0], TC_STEP_RECV_REDUCE_SRC, 1, TC_BUF_SEND, 0, TC_BUF_RECV, 0, 5);
    expect_step(&s.steps[1], TC_STEP_RECV_REDUCE, 2, 0, 0, TC_BUF_RECV, 0, 5);
    assert_int_equal(s.steps[1].dep[0], 0);
    tc_sched_free(&s);
    a.rank = 2;
    assert_int_equal(tc_algo_build(&a, "binomial_tree", &s), TC_OK);
    assert_int_equal(s.nsteps, 2);
    expect_step(&s.steps[0], TC_STEP_RECV_REDUCE_SRC, 3, TC_BUF_SEND, 0, TC_BUF_RECV, 0, 5);
    expect_step(&s.steps[1], TC_STEP_SEND, 0, TC_BUF_RECV, 0, 0, 0, 5);
    assert_int_equal(s.steps[1].dep[0], 0);
    tc_sched_free(&s);
    a.rank = 3;
    assert_int_equal(tc_algo_build(&a, "binomial_tree", &s), TC_OK);
    assert_int_equal(s.nsteps, 1);
    expect_step(&s.steps[0], TC_STEP_SEND, 2, TC_BUF_SEND, 0, 0, 0, 5);
    tc_sched_free(&s);
    a.in_place = 1; /* the input is recv: reduce into it */
    a.rank = 0;
    assert_int_equal(tc_algo_build(&a, "binomial_tree", &s), TC_OK);
    assert_int_equal(s.nsteps, 2);
    expect_step(&s.steps[0], TC_STEP_RECV_REDUCE, 1, 0, 0, TC_BUF_RECV, 0, 5);
    tc_sched_free(&s);
    a.rank = 1;
    assert_int_equal(tc_algo_build(&a, "binomial_tree", &s), TC_OK);
    assert_int_equal(s.nsteps, 1);
    expect_step(&s.steps[0], TC_STEP_SEND, 0, TC_BUF_RECV, 0, 0, 0, 5);
    tc_sched_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_copies_args),
        cmocka_unit_test(test_add_grows_and_keeps_steps),
        cmocka_unit_test(test_add_rejects_bad_steps),
        cmocka_unit_test(test_coll_names),
        cmocka_unit_test(test_registry_table),
        cmocka_unit_test(test_build_errors),
        cmocka_unit_test(test_any_chunk_count),
        cmocka_unit_test(test_layout_null),
        cmocka_unit_test(test_applies_matches_build),
        cmocka_unit_test(test_ring_shape),
        cmocka_unit_test(test_recursive_doubling_shape),
        cmocka_unit_test(test_binomial_leaves_shape),
        cmocka_unit_test(test_reduce_binomial_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
