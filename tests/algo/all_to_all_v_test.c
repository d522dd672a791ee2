/* all_to_all_v (per-pair counts, a2a_counts) in the algorithm layer: the
 * pairwise and linear generators against an independent reference executor
 * and the verifier; broken schedules are caught; bad arguments are precise. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/algo/schedule.h"
#include "tcomms/base/status.h"

enum { PAT_RANDOM, PAT_ZERO, PAT_ONE_HOT, PAT_GAPS, PAT_DIAG, PAT_COUNT };

static const char *const algos[] = {"pairwise", "linear"};

typedef struct mat {
    int p;
    uint64_t *cnt, *sd, *rd; /* [p * p]; sd, rd NULL: packed */
} mat_t;

static uint64_t rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

/* Offsets of p blocks of lens[] in a random order with random gaps. */
static void scatter_blocks(uint64_t *s, int p, const uint64_t *lens, size_t stride, uint64_t *off)
{
    int *perm = malloc((size_t)p * sizeof(int)), i;
    uint64_t o = rnd(s) % 3;

    assert_non_null(perm);
    for (i = 0; i < p; i++) {
        perm[i] = i;
    }
    for (i = p - 1; i > 0; i--) {
        int j = (int)(rnd(s) % (uint64_t)(i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (i = 0; i < p; i++) {
        off[perm[i]] = o;
        o += lens[(size_t)perm[i] * stride] + rnd(s) % 3;
    }
    free(perm);
}

static void mat_make(mat_t *m, int p, int pat, uint64_t seed)
{
    size_t n = (size_t)p * (size_t)p;
    int r;

    m->p = p;
    m->cnt = calloc(n, sizeof(uint64_t));
    m->sd = m->rd = NULL;
    assert_non_null(m->cnt);
    for (size_t i = 0; i < n; i++) {
        switch (pat) {
        case PAT_RANDOM:
        case PAT_GAPS:
            m->cnt[i] = rnd(&seed) % 4 == 0 ? 0 : 1 + rnd(&seed) % 5;
            break;
        case PAT_DIAG:
            m->cnt[i] = i % (size_t)(p + 1) == 0 ? 3 : 0;
            break;
        default:
            break;
        }
    }
    if (pat == PAT_ONE_HOT) {
        m->cnt[rnd(&seed) % n] = 7;
    }
    if (pat == PAT_GAPS) {
        m->sd = malloc(n * sizeof(uint64_t));
        m->rd = malloc(n * sizeof(uint64_t));
        assert_non_null(m->sd);
        assert_non_null(m->rd);
        for (r = 0; r < p; r++) {
            scatter_blocks(&seed, p, m->cnt + (size_t)r * p, 1, m->sd + (size_t)r * p);
            scatter_blocks(&seed, p, m->cnt + r, (size_t)p, m->rd + (size_t)r * p);
        }
    }
}

static void mat_free(mat_t *m)
{
    free(m->cnt);
    free(m->sd);
    free(m->rd);
}

static tc_algo_args_t mat_args(const mat_t *m)
{
    tc_algo_args_t a = {.coll = TC_COLL_ALL_TO_ALL,
                        .nranks = m->p,
                        .root = -1,
                        .a2a_counts = m->cnt,
                        .a2a_sdispls = m->sd,
                        .a2a_rdispls = m->rd};
    return a;
}

/* Offset of rank r's block to q (send) / from q (recv), computed directly. */
static uint64_t ref_soff(const mat_t *m, int r, int q)
{
    uint64_t o = 0;
    if (m->sd != NULL) {
        return m->sd[(size_t)r * m->p + q];
    }
    for (int j = 0; j < q; j++) {
        o += m->cnt[(size_t)r * m->p + j];
    }
    return o;
}

static uint64_t ref_roff(const mat_t *m, int r, int q)
{
    uint64_t o = 0;
    if (m->rd != NULL) {
        return m->rd[(size_t)r * m->p + q];
    }
    for (int j = 0; j < q; j++) {
        o += m->cnt[(size_t)j * m->p + r];
    }
    return o;
}

#define VAL(q, i) (((uint64_t)(q) << 32) | (uint64_t)(i))
#define GAP UINT64_MAX

/* Builds every rank's schedule, runs it on real data (sends only read the
 * send buffer, so a receive may take its message from the sender's buffer at
 * any time) and compares every recv element with the definition. */
static void check_reference(const mat_t *m, const char *algo)
{
    const int p = m->p;
    tc_sched_t *s = calloc((size_t)p, sizeof(*s));
    uint64_t **sbuf = calloc((size_t)p, sizeof(*sbuf)), **rbuf = calloc((size_t)p, sizeof(*rbuf));
    uint64_t *ssize = calloc((size_t)p, sizeof(uint64_t)), *rsize = calloc((size_t)p, 8);
    uint32_t *taken = calloc((size_t)p * (size_t)p, sizeof(uint32_t));
    int r, q;

    assert_true(s && sbuf && rbuf && ssize && rsize && taken);
    for (r = 0; r < p; r++) {
        tc_algo_args_t a = mat_args(m);
        tc_algo_layout_t lay;
        a.rank = r;
        for (q = 0; q < p; q++) { /* the spans, directly */
            uint64_t e = ref_soff(m, r, q) + m->cnt[(size_t)r * p + q];
            ssize[r] = e > ssize[r] ? e : ssize[r];
            e = ref_roff(m, r, q) + m->cnt[(size_t)q * p + r];
            rsize[r] = e > rsize[r] ? e : rsize[r];
        }
        assert_int_equal(tc_algo_layout(&a, &lay), TC_OK);
        assert_int_equal(lay.buf_count[0], ssize[r]);
        assert_int_equal(lay.buf_count[1], rsize[r]);
        assert_int_equal(lay.in_count, ssize[r]);
        assert_int_equal(lay.out_count, rsize[r]);
        if (tc_algo_build(&a, algo, &s[r]) != TC_OK) {
            fail_msg("build %s p=%d rank %d: %s", algo, p, r, tc_last_error());
        }
        assert_int_equal(s[r].buf_count[TC_BUF_SEND], ssize[r]);
        sbuf[r] = malloc((ssize[r] + 1) * 8);
        rbuf[r] = malloc((rsize[r] + 1) * 8);
        assert_true(sbuf[r] && rbuf[r]);
        for (uint64_t i = 0; i < ssize[r]; i++) {
            sbuf[r][i] = VAL(r, i);
        }
        for (uint64_t i = 0; i < rsize[r]; i++) {
            rbuf[r][i] = GAP;
        }
    }
    for (r = 0; r < p; r++) {
        for (uint32_t i = 0; i < s[r].nsteps; i++) {
            const tc_step_t *st = &s[r].steps[i];
            assert_true(st->count > 0); /* no empty messages */
            if (st->kind == TC_STEP_COPY) {
                assert_int_equal(st->buf, TC_BUF_SEND);
                assert_int_equal(st->dst_buf, TC_BUF_RECV);
                memcpy(rbuf[r] + st->dst_off, sbuf[r] + st->off, st->count * 8);
            } else if (st->kind == TC_STEP_RECV) {
                const tc_sched_t *o = &s[st->peer];
                uint32_t k = taken[(size_t)st->peer * p + r]++, seen = 0, j;
                assert_int_equal(st->dst_buf, TC_BUF_RECV);
                for (j = 0; j < o->nsteps; j++) {
                    if (o->steps[j].kind == TC_STEP_SEND && o->steps[j].peer == r && seen++ == k) {
                        break;
                    }
                }
                assert_true(j < o->nsteps);
                assert_int_equal(o->steps[j].buf, TC_BUF_SEND);
                assert_int_equal(o->steps[j].count, st->count);
                assert_true(st->dst_off + st->count <= rsize[r]);
                memcpy(rbuf[r] + st->dst_off, sbuf[st->peer] + o->steps[j].off, st->count * 8);
            } else {
                assert_int_equal(st->kind, TC_STEP_SEND);
                assert_true(st->off + st->count <= ssize[r]);
            }
        }
    }
    for (r = 0; r < p; r++) {
        uint64_t *want = malloc((rsize[r] + 1) * 8);
        assert_non_null(want);
        for (uint64_t i = 0; i < rsize[r]; i++) {
            want[i] = GAP;
        }
        for (q = 0; q < p; q++) {
            uint64_t c = m->cnt[(size_t)q * p + r], ro = ref_roff(m, r, q), so = ref_soff(m, q, r);
            for (uint64_t i = 0; i < c; i++) {
                want[ro + i] = VAL(q, so + i);
            }
        }
        for (uint64_t i = 0; i < rsize[r]; i++) {
            if (rbuf[r][i] != want[i]) {
                fail_msg("%s p=%d: rank %d recv[%llu] = %llx, want %llx", algo, p, r,
                         (unsigned long long)i, (unsigned long long)rbuf[r][i],
                         (unsigned long long)want[i]);
            }
        }
        free(want);
    }
    for (r = 0; r < p; r++) {
        tc_sched_free(&s[r]);
        free(sbuf[r]);
        free(rbuf[r]);
    }
    free(taken);
    free(rsize);
    free(ssize);
    free(rbuf);
    free(sbuf);
    free(s);
}

/* The busiest rank's non-empty messages and elements, from the matrix. */
static void ref_cost(const mat_t *m, uint64_t *msgs, uint64_t *elems)
{
    *msgs = *elems = 0;
    for (int r = 0; r < m->p; r++) {
        uint64_t nm = 0, ne = 0;
        for (int q = 0; q < m->p; q++) {
            if (q != r && m->cnt[(size_t)r * m->p + q] > 0) {
                nm++;
                ne += m->cnt[(size_t)r * m->p + q];
            }
        }
        *msgs = nm > *msgs ? nm : *msgs;
        *elems = ne > *elems ? ne : *elems;
    }
}

static void verify_ok(const mat_t *m, const char *algo, tc_algo_verify_mode_t mode)
{
    tc_algo_args_t a = mat_args(m);
    tc_algo_verify_opts_t o = {.mode = mode, .flow_elems = 16};
    tc_algo_verify_report_t rep;
    uint64_t msgs, elems;
    tc_status_t st = tc_algo_verify_ex(&a, algo, NULL, &o, &rep);

    if (st != TC_OK) {
        fail_msg("verify %s p=%d mode %d: %s: %s", algo, m->p, (int)mode, tc_status_string(st),
                 tc_last_error());
    }
    ref_cost(m, &msgs, &elems);
    assert_int_equal(rep.formula.max_send_msgs, msgs);
    assert_int_equal(rep.formula.max_send_elems, elems);
    if (mode == TC_ALGO_VERIFY_FULL) {
        assert_true(rep.executed);
        assert_int_equal(rep.ranks_checked, m->p);
        assert_int_equal(rep.max_send_msgs, msgs);
        assert_int_equal(rep.max_send_elems, elems);
    } else {
        assert_int_equal(rep.flow_elems_cut, 0);
    }
}

static void test_every_rank_count(void **state)
{
    (void)state;
    for (int p = 1; p <= 33; p++) {
        for (int pat = 0; pat < PAT_COUNT; pat++) {
            mat_t m;
            mat_make(&m, p, pat, 1000u * (uint64_t)p + (uint64_t)pat);
            for (size_t k = 0; k < 2; k++) {
                check_reference(&m, algos[k]);
                verify_ok(&m, algos[k], TC_ALGO_VERIFY_FULL);
                verify_ok(&m, algos[k], TC_ALGO_VERIFY_SAMPLE);
            }
            mat_free(&m);
        }
    }
}

/* Sparse: each rank sends to 3 random ranks (gapped layout at the end). */
static void test_large_sparse(void **state)
{
    static const int ps[] = {257, 1024};
    (void)state;
    for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
        const int p = ps[i];
        uint64_t seed = 77 + (uint64_t)p;
        mat_t m = {p, calloc((size_t)p * p, 8), NULL, NULL};
        assert_non_null(m.cnt);
        for (int r = 0; r < p; r++) {
            for (int k = 0; k < 3; k++) {
                m.cnt[(size_t)r * p + rnd(&seed) % (uint64_t)p] = 1 + rnd(&seed) % 9;
            }
        }
        for (size_t k = 0; k < 2; k++) {
            verify_ok(&m, algos[k], TC_ALGO_VERIFY_FULL);
            verify_ok(&m, algos[k], TC_ALGO_VERIFY_SAMPLE);
        }
        mat_free(&m);
    }
}

/* ---- broken schedules ------------------------------------------------------- */

enum { BRK_DROP_RECV, BRK_DROP_PAIR, BRK_SEND_OFF, BRK_SWAP_PEER };
static int g_break;

/* Rank 0's registered pairwise schedule, with one fault. */
static tc_status_t gen_broken(const tc_algo_args_t *a, tc_sched_t *s)
{
    tc_sched_t t;
    tc_status_t st = tc_algo_build(a, "pairwise", &t);
    int32_t swap[2] = {-1, -1};
    uint32_t i, nsend = 0;

    if (st != TC_OK) {
        return st;
    }
    for (i = 0; i < t.nsteps && st == TC_OK; i++) {
        tc_step_t x = t.steps[i];
        if (x.kind == TC_STEP_SEND && a->rank == 0 && g_break == BRK_SWAP_PEER && nsend < 2) {
            swap[nsend++] = x.peer; /* the first two sends trade peers */
            x.peer = nsend == 1 ? -1 : swap[0];
        }
        if (a->rank == 1 && x.kind == TC_STEP_RECV && x.peer == 0 &&
            (g_break == BRK_DROP_RECV || g_break == BRK_DROP_PAIR)) {
            continue;
        }
        if (a->rank == 0 && x.kind == TC_STEP_SEND && x.peer == 1 && g_break == BRK_DROP_PAIR) {
            continue;
        }
        if (a->rank == 0 && x.kind == TC_STEP_SEND && x.peer == 1 && g_break == BRK_SEND_OFF) {
            x.off += 1;
        }
        st = tc_sched_add(s, &x, NULL);
    }
    if (st == TC_OK && swap[1] >= 0) { /* the first send goes to the second's peer */
        for (i = 0; i < s->nsteps; i++) {
            if (s->steps[i].kind == TC_STEP_SEND && s->steps[i].peer == -1) {
                s->steps[i].peer = swap[1];
            }
        }
    }
    tc_sched_free(&t);
    return st;
}

static void expect_broken(const mat_t *m, int brk, tc_algo_verify_mode_t mode, const char *part)
{
    tc_algo_args_t a = mat_args(m);
    tc_algo_verify_opts_t o = {.mode = mode, .nsample = 16, .flow_elems = 256};
    tc_status_t st;

    g_break = brk;
    st = tc_algo_verify_ex(&a, "broken", gen_broken, &o, NULL);
    if (st != TC_ERR_INTERNAL || strstr(tc_last_error(), part) == NULL) {
        fail_msg("break %d mode %d: expected TC_ERR_INTERNAL with \"%s\", got %s: %s", brk,
                 (int)mode, part, tc_status_string(st), tc_last_error());
    }
}

static void test_broken_schedules_caught(void **state)
{
    /* 4 ranks, 3 elements per pair, a gap of 2 after each send block (so a
     * shifted send stays in bounds). */
    mat_t m = {4, malloc(16 * 8), malloc(16 * 8), NULL};
    (void)state;
    assert_non_null(m.cnt);
    assert_non_null(m.sd);
    for (int i = 0; i < 16; i++) {
        m.cnt[i] = 3;
        m.sd[i] = (uint64_t)(i % 4) * 5;
    }
    g_break = -1;
    {
        tc_algo_args_t a = mat_args(&m);
        assert_int_equal(tc_algo_verify_with(&a, gen_broken), TC_OK); /* the unbroken one */
    }
    for (int mode = 0; mode < 2; mode++) {
        expect_broken(&m, BRK_DROP_RECV, mode, "unmatched send");
        expect_broken(&m, BRK_SWAP_PEER, mode, "instead of rank 0's element");
    }
    expect_broken(&m, BRK_DROP_PAIR, TC_ALGO_VERIFY_FULL,
                  "rank 1 recv[0] holds uninitialised data (never written), not rank 0's element "
                  "5");
    expect_broken(&m, BRK_DROP_PAIR, TC_ALGO_VERIFY_SAMPLE, "uninitialised");
    expect_broken(&m, BRK_SEND_OFF, TC_ALGO_VERIFY_FULL,
                  "rank 1 recv[0] holds rank 0's element 6 instead of rank 0's element 5");
    expect_broken(&m, BRK_SEND_OFF, TC_ALGO_VERIFY_SAMPLE, "instead of rank 0's element");
    mat_free(&m);
}

/* ---- bad arguments ---------------------------------------------------------- */

static void expect_err(tc_status_t got, tc_status_t want, const char *part)
{
    if (got != want || strstr(tc_last_error(), part) == NULL) {
        fail_msg("expected %s with \"%s\", got %s: %s", tc_status_string(want), part,
                 tc_status_string(got), tc_last_error());
    }
}

static void test_bad_arguments(void **state)
{
    uint64_t cnt[4] = {1, 2, 3, 4}, sd[4] = {0, 1, 0, 3}, rd[4] = {0, 1, 0, 1};
    uint64_t uni[2] = {1, 1};
    mat_t m = {2, cnt, NULL, NULL};
    tc_algo_args_t a = mat_args(&m);
    tc_algo_layout_t lay;
    tc_sched_t s;

    (void)state;
    /* the layout of a valid one: rank 1 sends 3 + 4, receives 2 + 4 */
    a.rank = 1;
    assert_int_equal(tc_algo_layout(&a, &lay), TC_OK);
    assert_int_equal(lay.buf_count[0], 7);
    assert_int_equal(lay.buf_count[1], 6);
    assert_int_equal(lay.in_buf, TC_BUF_SEND);
    assert_int_equal(lay.in_off, 0);
    assert_int_equal(lay.out_off, 0);
    a.rank = 0;

    a.coll = TC_COLL_ALL_GATHER;
    expect_err(tc_algo_verify(&a, NULL), TC_ERR_INVALID_ARG,
               "a2a_counts set for all_gather (only all_to_all has per-pair counts)");
    a = mat_args(&m);
    a.counts = uni;
    expect_err(tc_algo_layout(&a, &lay), TC_ERR_INVALID_ARG, "both counts and a2a_counts");
    a = mat_args(&m);
    a.count = 5;
    expect_err(tc_algo_build(&a, "pairwise", &s), TC_ERR_INVALID_ARG,
               "count must be 0 with a2a_counts");
    a = mat_args(&m);
    a.a2a_counts = NULL;
    a.a2a_rdispls = rd;
    expect_err(tc_algo_verify(&a, "linear"), TC_ERR_INVALID_ARG, "a2a_rdispls without a2a_counts");
    a = mat_args(&m);
    a.in_place = 1;
    expect_err(tc_algo_verify(&a, "pairwise"), TC_ERR_UNSUPPORTED,
               "all_to_all_v in place is not supported");

    /* overflows: a displacement, and packed offsets */
    sd[1] = UINT64_MAX - 1;
    a = mat_args(&m);
    a.a2a_sdispls = sd;
    expect_err(tc_algo_layout(&a, &lay), TC_ERR_INVALID_ARG,
               "rank 0's send block to rank 1 (2 elements at 18446744073709551614) overflows");
    expect_err(tc_algo_verify(&a, "pairwise"), TC_ERR_INVALID_ARG, "rank 0's send block to rank 1");
    cnt[0] = UINT64_MAX; /* row 0 packed: UINT64_MAX + 2 */
    a = mat_args(&m);
    expect_err(tc_algo_build(&a, "linear", &s), TC_ERR_INVALID_ARG,
               "rank 0's send block to rank 1 (2 elements at 18446744073709551615) overflows");
    cnt[0] = 1;
    cnt[1] = UINT64_MAX; /* column 1 packed: UINT64_MAX + 4; row 1 is fine */
    a.rank = 1;
    expect_err(tc_algo_layout(&a, &lay), TC_ERR_INVALID_ARG,
               "rank 1's receive block from rank 1 (4 elements at 18446744073709551615) "
               "overflows");
    cnt[1] = 2;

    /* rank 1's blocks from 0 ([0, 2)) and from 1 ([1, 5)) overlap */
    a = mat_args(&m);
    a.a2a_rdispls = rd;
    expect_err(tc_algo_verify(&a, "pairwise"), TC_ERR_INVALID_ARG,
               "rank 1's receive blocks from rank 0 [0, 2) and from rank 1 (at 1) overlap");
}

/* Selection works on the matrix (the cost formula reads it). */
static void test_select(void **state)
{
    uint64_t cnt[9] = {0, 5, 0, 0, 0, 0, 7, 0, 1};
    mat_t m = {3, cnt, NULL, NULL};
    tc_algo_args_t a = mat_args(&m);
    const char *name = NULL;

    (void)state;
    assert_int_equal(tc_algo_select(&a, 4, NULL, &name), TC_OK);
    assert_string_equal(name, "pairwise");
    assert_int_equal(tc_algo_select(&a, 4, "linear", &name), TC_OK);
    assert_string_equal(name, "linear");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_rank_count),
        cmocka_unit_test(test_large_sparse),
        cmocka_unit_test(test_broken_schedules_caught),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_select),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
