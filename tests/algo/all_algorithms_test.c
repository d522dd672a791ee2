/* Every registered (collective, algorithm) is proven by the verifier at every
 * rank count 1..33 and a spread of larger ones, in and out of place, with
 * uneven sizes and v-variants; broken variants of real schedules are caught. */
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

static int is_rooted(tc_coll_t c)
{
    return c == TC_COLL_REDUCE || c == TC_COLL_BROADCAST || c == TC_COLL_GATHER ||
           c == TC_COLL_SCATTER;
}

static int applies(const tc_algo_desc_t *d, const tc_algo_args_t *a)
{
    return d->applies == NULL || d->applies(a) == TC_OK;
}

static void verify_one_rep(const tc_algo_desc_t *d, tc_algo_args_t *a,
                           tc_algo_verify_report_t *repp)
{
    tc_algo_verify_report_t rep;
    tc_status_t st;

    if (!applies(d, a) || (a->coll == TC_COLL_ALL_TO_ALL && a->in_place)) {
        return;
    }
    st = tc_algo_verify_ex(a, d->name, NULL, NULL, &rep);
    if (st != TC_OK) {
        fail_msg("%s %s p=%d root=%d count=%llu in_place=%d v=%d: %s: %s", tc_coll_name(a->coll),
                 d->name, a->nranks, a->root, (unsigned long long)a->count, a->in_place,
                 a->counts != NULL, tc_status_string(st), tc_last_error());
    }
    assert_true(rep.executed);
    assert_int_equal(rep.ranks_checked, a->nranks);
    /* the formula is exact for the busiest rank */
    assert_int_equal(rep.max_send_msgs, rep.formula.max_send_msgs);
    assert_int_equal(rep.max_send_elems, rep.formula.max_send_elems);
    if (repp != NULL) {
        *repp = rep;
    }
}

static void verify_one(const tc_algo_desc_t *d, tc_algo_args_t *a)
{
    verify_one_rep(d, a, NULL);
}

static void test_every_algorithm_every_small_rank_count(void **state)
{
    size_t nd, d;
    const tc_algo_desc_t *t = tc_algo_table(&nd);
    int p, c, ip, nrun = 0;

    (void)state;
    for (d = 0; d < nd; d++) {
        for (p = 1; p <= 33; p++) {
            const uint64_t counts[] = {0, 1, 3, (uint64_t)p + 1, 37};
            for (c = 0; c < 5; c++) {
                for (ip = 0; ip < 2; ip++) {
                    tc_algo_args_t a = {.coll = t[d].coll,
                                        .nranks = p,
                                        .root = -1,
                                        .count = counts[c],
                                        .in_place = ip};
                    if (is_rooted(t[d].coll)) {
                        a.root = (p * 2 + c) / 3 % p; /* roots other than 0 too */
                    }
                    verify_one(&t[d], &a);
                    nrun++;
                }
            }
        }
    }
    assert_true(nrun >= 20 * 33 * 10);
}

static void test_v_variants(void **state)
{
    size_t nd, d;
    const tc_algo_desc_t *t = tc_algo_table(&nd);
    uint64_t counts[40], displs[40];
    int p, q, ip, nv = 0, packed;

    (void)state;
    for (d = 0; d < nd; d++) {
        if (t[d].coll != TC_COLL_ALL_GATHER && t[d].coll != TC_COLL_REDUCE_SCATTER) {
            continue;
        }
        for (p = 1; p <= 33; p += 4) {
            for (packed = 0; packed < 2; packed++) {
                uint64_t off = 3;
                for (q = 0; q < p; q++) {
                    counts[q] = (uint64_t)((q * 7 + 3) % 5); /* some empty */
                    /* reversed order with gaps when not packed */
                    displs[p - 1 - q] = 0;
                }
                for (q = p - 1; q >= 0; q--) {
                    displs[q] = off;
                    off += counts[q] + 2;
                }
                for (ip = 0; ip < 2; ip++) {
                    tc_algo_args_t a = {.coll = t[d].coll,
                                        .nranks = p,
                                        .root = -1,
                                        .count = 0,
                                        .in_place = ip,
                                        .counts = counts,
                                        .displs = packed ? NULL : displs};
                    if (applies(&t[d], &a)) {
                        verify_one(&t[d], &a);
                        nv++;
                    }
                }
            }
        }
    }
    assert_true(nv >= 4 * 9 * 2 * 2);
}

static void test_larger_rank_counts(void **state)
{
    const int ps[] = {48, 64, 100, 128, 255, 256};
    size_t nd, d, i;
    const tc_algo_desc_t *t = tc_algo_table(&nd);

    (void)state;
    for (i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
        for (d = 0; d < nd; d++) {
            tc_algo_args_t a = {
                .coll = t[d].coll, .nranks = ps[i], .root = -1, .count = (uint64_t)ps[i] * 3 + 1};
            if (is_rooted(t[d].coll)) {
                a.root = ps[i] / 3;
            }
            verify_one(&t[d], &a);
        }
    }
}

/* Pipelined trees with explicit chunk sizes (the generic loops use auto,
 * one chunk for these small counts), both roots and in place. */
static void test_pipelined_trees(void **state)
{
    static const char *const names[] = {"binary_tree", "double_binary_tree"};
    static const tc_coll_t colls[] = {TC_COLL_BROADCAST, TC_COLL_REDUCE, TC_COLL_ALL_REDUCE};
    const uint64_t chunks[] = {1, 3, 16};
    const uint64_t counts[] = {1, 2, 7, 37};
    size_t i, k, c, ch;
    int p, ip, nrun = 0;

    (void)state;
    for (i = 0; i < 3; i++) {
        for (k = 0; k < 2; k++) {
            const tc_algo_desc_t *d = NULL;
            size_t nd, x;
            const tc_algo_desc_t *t = tc_algo_table(&nd);
            for (x = 0; x < nd; x++) {
                if (t[x].coll == colls[i] && strcmp(t[x].name, names[k]) == 0) {
                    d = &t[x];
                }
            }
            assert_non_null(d);
            for (p = 1; p <= 33; p++) {
                for (c = 0; c < 4; c++) {
                    for (ch = 0; ch < 3; ch++) {
                        for (ip = 0; ip < 2; ip++) {
                            tc_algo_args_t a = {.coll = colls[i],
                                                .nranks = p,
                                                .root = colls[i] == TC_COLL_ALL_REDUCE ? -1 : p / 2,
                                                .count = counts[c],
                                                .in_place = ip,
                                                .chunk_count = chunks[ch]};
                            verify_one(d, &a);
                            nrun++;
                        }
                    }
                }
            }
        }
    }
    assert_int_equal(nrun, 3 * 2 * 33 * 4 * 3 * 2);
}

static const tc_algo_desc_t *find_algo(tc_coll_t coll, const char *name)
{
    size_t nd, x;
    const tc_algo_desc_t *t = tc_algo_table(&nd);

    for (x = 0; x < nd; x++) {
        if (t[x].coll == coll && strcmp(t[x].name, name) == 0) {
            return &t[x];
        }
    }
    return NULL;
}

/* The rings split every step into pieces of chunk_count elements: proven at
 * every p, uneven and tiny counts, several chunk sizes, in and out of place,
 * with the same bytes on the wire as unchunked and one message per piece. */
static void test_chunked_rings(void **state)
{
    static const tc_coll_t colls[] = {TC_COLL_ALL_REDUCE, TC_COLL_ALL_GATHER,
                                      TC_COLL_REDUCE_SCATTER};
    const uint64_t chunks[] = {1, 3, 7};
    size_t i, c, ch;
    int p, ip, nrun = 0;

    (void)state;
    for (i = 0; i < 3; i++) {
        const tc_algo_desc_t *d = find_algo(colls[i], "ring");
        assert_non_null(d);
        for (p = 1; p <= 33; p++) {
            /* all_reduce: the whole vector; the others: one block per rank */
            const uint64_t counts[] = {0, 1, 3, (uint64_t)p + 1, 37, 100};
            const uint64_t bcounts[] = {0, 1, 2, 3, 5, 11};
            for (c = 0; c < 6; c++) {
                for (ip = 0; ip < 2; ip++) {
                    tc_algo_args_t a = {.coll = colls[i],
                                        .nranks = p,
                                        .root = -1,
                                        .count =
                                            colls[i] == TC_COLL_ALL_REDUCE ? counts[c] : bcounts[c],
                                        .in_place = ip};
                    tc_algo_verify_report_t whole, rep;
                    uint64_t block, pieces;
                    verify_one_rep(d, &a, &whole);
                    for (ch = 0; ch < 3; ch++) {
                        a.chunk_count = chunks[ch];
                        verify_one_rep(d, &a, &rep);
                        /* same bytes; messages: the pieces of the blocks */
                        assert_int_equal(rep.max_send_elems, whole.max_send_elems);
                        assert_int_equal(rep.max_recv_elems, whole.max_recv_elems);
                        block = colls[i] == TC_COLL_ALL_REDUCE
                                    ? counts[c] / (uint64_t)p + (counts[c] % (uint64_t)p != 0)
                                    : bcounts[c];
                        pieces = (block + chunks[ch] - 1) / chunks[ch];
                        if (p > 1 && block > 0) {
                            assert_true(rep.max_send_msgs >= whole.max_send_msgs);
                            assert_true(rep.max_send_msgs <=
                                        whole.max_send_msgs * (pieces > 1 ? pieces : 1));
                        }
                        nrun++;
                    }
                }
            }
        }
    }
    assert_int_equal(nrun, 3 * 33 * 6 * 2 * 3);
}

/* Chunked rings with per-rank counts (some empty), packed and with gaps. */
static void test_chunked_rings_v(void **state)
{
    static const tc_coll_t colls[] = {TC_COLL_ALL_GATHER, TC_COLL_REDUCE_SCATTER};
    uint64_t counts[40], displs[40], off;
    const uint64_t chunks[] = {1, 2, 3};
    size_t i, ch;
    int p, q, ip, packed, nrun = 0;

    (void)state;
    for (i = 0; i < 2; i++) {
        const tc_algo_desc_t *d = find_algo(colls[i], "ring");
        assert_non_null(d);
        for (p = 1; p <= 33; p++) {
            for (q = 0, off = 1; q < p; q++) {
                counts[q] = (uint64_t)((q * 5 + 2) % 7); /* 0..6 */
                displs[q] = off;
                off += counts[q] + 1;
            }
            for (packed = 0; packed < 2; packed++) {
                for (ip = 0; ip < 2; ip++) {
                    for (ch = 0; ch < 3; ch++) {
                        tc_algo_args_t a = {.coll = colls[i],
                                            .nranks = p,
                                            .root = -1,
                                            .in_place = ip,
                                            .counts = counts,
                                            .displs = packed ? NULL : displs,
                                            .chunk_count = chunks[ch]};
                        verify_one(d, &a);
                        nrun++;
                    }
                }
            }
        }
    }
    assert_int_equal(nrun, 2 * 33 * 2 * 2 * 3);
}

/* Pipelining: every send of a chunked ring waits only for the step that
 * produced exactly its piece (a receive, or the reduction, of the same
 * elements), never for a whole step, so piece j+1 of step s can still be in
 * flight while piece j moves on to step s+1. */
static void test_ring_pieces_flow_independently(void **state)
{
    static const tc_coll_t colls[] = {TC_COLL_ALL_REDUCE, TC_COLL_ALL_GATHER,
                                      TC_COLL_REDUCE_SCATTER};
    size_t i;
    int r, nsend = 0;
    uint32_t k;

    (void)state;
    for (i = 0; i < 3; i++) {
        tc_algo_args_t a = {.coll = colls[i],
                            .nranks = 5,
                            .root = -1,
                            .count = colls[i] == TC_COLL_ALL_REDUCE ? 5 * 12 : 12,
                            .in_place = 1,
                            .chunk_count = 4};
        for (r = 0; r < 5; r++) {
            tc_sched_t s;
            int first = 1;
            a.rank = r;
            assert_int_equal(tc_algo_build(&a, "ring", &s), TC_OK);
            for (k = 0; k < s.nsteps; k++) {
                const tc_step_t *x = &s.steps[k], *dep;
                if (x->kind != TC_STEP_SEND) {
                    continue;
                }
                assert_int_equal(x->count, 4); /* 12-element blocks in 3 pieces */
                assert_int_equal(x->dep[1], TC_STEP_NO_DEP);
                if (first && x->dep[0] == TC_STEP_NO_DEP) {
                    continue; /* the first step's pieces are there from the start */
                }
                first = 0;
                assert_true(x->dep[0] < k);
                dep = &s.steps[x->dep[0]];
                assert_true(dep->kind == TC_STEP_RECV || dep->kind == TC_STEP_RECV_REDUCE);
                assert_int_equal(dep->dst_off, x->off);
                assert_int_equal(dep->count, x->count);
                nsend++;
            }
            tc_sched_free(&s);
        }
    }
    /* ranks x (sends that forward: all_reduce 7 steps, the others 3) x 3 pieces */
    assert_int_equal(nsend, 5 * (7 + 3 + 3) * 3);
}

/* The double binary tree's two trees are complementary: a rank is interior
 * (has children) in at most one, and a leaf in both only once, with an odd
 * number of ranks. Children are counted as the receive-reduces of each
 * tree's first chunk (tree A carries [0, 37), tree B [37, 74)). Out of place
 * the input is never copied first: the first child's receive-reduce takes it
 * as its operand and a leaf sends it as it is. */
static void test_double_tree_shape(void **state)
{
    tc_algo_args_t a = {.coll = TC_COLL_ALL_REDUCE, .root = -1, .count = 74, .chunk_count = 3};
    int p, r;
    uint32_t i;

    (void)state;
    for (p = 1; p <= 40; p++) {
        int both_leaf = 0;
        a.nranks = p;
        for (r = 0; r < p; r++) {
            tc_sched_t s;
            int kids[2] = {0, 0};
            a.rank = r;
            assert_int_equal(tc_algo_build(&a, "double_binary_tree", &s), TC_OK);
            int copies = 0, first_src = 0;
            for (i = 0; i < s.nsteps; i++) {
                const tc_step_t *st = &s.steps[i];
                if (st->kind == TC_STEP_RECV_REDUCE || st->kind == TC_STEP_RECV_REDUCE_SRC) {
                    kids[0] += st->dst_off < 3;
                    kids[1] += st->dst_off >= 37 && st->dst_off < 40;
                }
                first_src += st->kind == TC_STEP_RECV_REDUCE_SRC && st->buf == TC_BUF_SEND &&
                             st->off == st->dst_off;
                copies += st->kind == TC_STEP_COPY;
            }
            assert_int_equal(copies, p == 1 ? 26 : 0); /* one rank: each chunk copied */
            /* one per chunk of a tree where this rank has children: 13 chunks of 3 in each */
            assert_int_equal(first_src, 13 * ((kids[0] > 0) + (kids[1] > 0)));
            assert_true(kids[0] <= 2 && kids[1] <= 2);
            assert_false(kids[0] > 0 && kids[1] > 0);
            both_leaf += kids[0] == 0 && kids[1] == 0;
            tc_sched_free(&s);
        }
        assert_int_equal(both_leaf, p % 2);
    }
}

/* Every hierarchical algorithm (all_reduce, broadcast, reduce, all_gather,
 * reduce_scatter) for node sizes that divide p and that leave a smaller last
 * node, one rank per node, and one node; rooted ones at several roots (the
 * root leads its node, anywhere in it). */
static void test_hierarchical(void **state)
{
    const int rpn[] = {1, 2, 3, 4, 5, 8, 64};
    const uint64_t counts[] = {0, 1, 3, 37};
    size_t i, c, nd, x;
    const tc_algo_desc_t *t = tc_algo_table(&nd);
    int p, ip, root, nalgo = 0, nrun = 0;

    (void)state;
    for (x = 0; x < nd; x++) {
        if (strcmp(t[x].name, "hierarchical") != 0) {
            continue;
        }
        nalgo++;
        for (p = 1; p <= 33; p++) {
            for (i = 0; i < sizeof(rpn) / sizeof(rpn[0]); i++) {
                for (c = 0; c < 4; c++) {
                    for (ip = 0; ip < 2; ip++) {
                        const int roots[] = {0, p - 1, (2 * p) / 3, rpn[i] % p};
                        for (root = 0; root < (is_rooted(t[x].coll) ? 4 : 1); root++) {
                            tc_algo_args_t a = {.coll = t[x].coll,
                                                .nranks = p,
                                                .root = is_rooted(t[x].coll) ? roots[root] : -1,
                                                .count = counts[c],
                                                .in_place = ip,
                                                .ranks_per_node = rpn[i]};
                            verify_one(&t[x], &a);
                            nrun++;
                        }
                    }
                }
            }
        }
    }
    assert_int_equal(nalgo, 5);
    assert_int_equal(nrun, 33 * 7 * 4 * 2 * (3 + 2 * 4));
}

/* Hierarchical all_gather_v and reduce_scatter_v: per-rank counts (some
 * empty), packed and with gaps in reversed order, over node layouts. */
static void test_hierarchical_v(void **state)
{
    static const tc_coll_t colls[] = {TC_COLL_ALL_GATHER, TC_COLL_REDUCE_SCATTER};
    const int rpn[] = {1, 2, 3, 5, 8};
    uint64_t counts[40], displs[40], off;
    size_t i, k;
    int p, q, ip, packed, nrun = 0;

    (void)state;
    for (k = 0; k < 2; k++) {
        const tc_algo_desc_t *d = find_algo(colls[k], "hierarchical");
        assert_non_null(d);
        for (p = 1; p <= 33; p++) {
            for (q = 0; q < p; q++) {
                counts[q] = (uint64_t)((q * 7 + 3) % 5); /* some empty */
            }
            for (q = p - 1, off = 2; q >= 0; q--) {
                displs[q] = off;
                off += counts[q] + 1;
            }
            for (i = 0; i < sizeof(rpn) / sizeof(rpn[0]); i++) {
                for (packed = 0; packed < 2; packed++) {
                    for (ip = 0; ip < 2; ip++) {
                        tc_algo_args_t a = {.coll = colls[k],
                                            .nranks = p,
                                            .root = -1,
                                            .in_place = ip,
                                            .counts = counts,
                                            .displs = packed ? NULL : displs,
                                            .ranks_per_node = rpn[i]};
                        verify_one(d, &a);
                        nrun++;
                    }
                }
            }
        }
    }
    assert_int_equal(nrun, 2 * 33 * 5 * 2 * 2);
}

/* Only leaders cross nodes: a non-leader's peers are all in its node. */
static void test_hierarchical_stays_in_node(void **state)
{
    static const tc_coll_t colls[] = {TC_COLL_ALL_REDUCE, TC_COLL_BROADCAST, TC_COLL_REDUCE,
                                      TC_COLL_ALL_GATHER, TC_COLL_REDUCE_SCATTER};
    const int p = 14, L = 4;
    size_t k;
    int r, crossing;
    uint32_t i;

    (void)state;
    for (k = 0; k < 5; k++) {
        tc_algo_args_t a = {.coll = colls[k],
                            .nranks = p,
                            .root = is_rooted(colls[k]) ? 6 : -1,
                            .count = 9,
                            .ranks_per_node = L};
        crossing = 0;
        for (r = 0; r < p; r++) {
            tc_sched_t s;
            const int leader = is_rooted(colls[k]) && r / L == 6 / L ? 6 : r / L * L;
            a.rank = r;
            assert_int_equal(tc_algo_build(&a, "hierarchical", &s), TC_OK);
            for (i = 0; i < s.nsteps; i++) {
                const tc_step_t *x = &s.steps[i];
                if (x->kind == TC_STEP_COPY || x->kind == TC_STEP_REDUCE || x->peer / L == r / L) {
                    continue;
                }
                assert_int_equal(r, leader); /* only a leader talks to another node */
                assert_int_equal(x->peer % L == 0 || x->peer == a.root, 1);
                crossing++;
            }
            tc_sched_free(&s);
        }
        assert_true(crossing > 0);
    }
}

/* ---- broken variants of real schedules ------------------------------------ */

enum { MUT_DROP, MUT_OFFSET, MUT_PEER };
static const char *mut_algo;
static int mut_kind, mut_rank, mut_which, mut_done;

/* The registered schedule, with rank mut_rank's mut_which-th eligible step broken. */
static tc_status_t gen_mutated(const tc_algo_args_t *a, tc_sched_t *s)
{
    tc_sched_t good;
    tc_status_t st = tc_algo_build(a, mut_algo, &good);
    uint32_t i, drop = UINT32_MAX;
    int seen = 0;

    if (st != TC_OK) {
        return st;
    }
    s->scratch_count = good.scratch_count;
    for (i = 0; i < good.nsteps && a->rank == mut_rank; i++) {
        tc_step_t *x = &good.steps[i];
        int comm =
            x->kind == TC_STEP_SEND || x->kind == TC_STEP_RECV || x->kind == TC_STEP_RECV_REDUCE;
        if (x->count == 0 || (mut_kind != MUT_DROP && !comm)) {
            continue;
        }
        if (seen++ != mut_which) {
            continue;
        }
        mut_done = 1;
        if (mut_kind == MUT_DROP) {
            drop = i;
        } else if (mut_kind == MUT_OFFSET && x->kind == TC_STEP_SEND) {
            x->off = x->off > 0 ? x->off - 1 : x->off + 1;
        } else if (mut_kind == MUT_OFFSET) {
            x->dst_off = x->dst_off > 0 ? x->dst_off - 1 : x->dst_off + 1;
        } else {
            x->peer = (x->peer + 1) % a->nranks == a->rank ? (x->peer + 2) % a->nranks
                                                           : (x->peer + 1) % a->nranks;
        }
        break;
    }
    for (i = 0; i < good.nsteps && st == TC_OK; i++) {
        tc_step_t x = good.steps[i];
        int k;
        if (i == drop) {
            continue;
        }
        for (k = 0; k < 2 && drop != UINT32_MAX; k++) {
            if (x.dep[k] == drop) {
                x.dep[k] = good.steps[drop].dep[0];
            }
            if (x.dep[k] != TC_STEP_NO_DEP && x.dep[k] > drop) {
                x.dep[k]--;
            }
        }
        st = tc_sched_add(s, &x, NULL);
    }
    tc_sched_free(&good);
    return st;
}

static int nmutated;

static void expect_caught(tc_coll_t coll, const char *algo, int p, uint64_t count, int kind,
                          int which)
{
    tc_algo_args_t a = {
        .coll = coll, .nranks = p, .root = is_rooted(coll) ? 0 : -1, .count = count};
    tc_status_t st;

    mut_algo = algo;
    mut_kind = kind;
    mut_rank = 1;
    mut_which = which;
    assert_int_equal(tc_algo_verify(&a, algo), TC_OK); /* unbroken: proven */
    mut_done = 0;
    st = tc_algo_verify_with(&a, gen_mutated);
    if (!mut_done) {
        return; /* rank 1 has no such step (e.g. one send only) */
    }
    nmutated++;
    if (st != TC_ERR_INTERNAL) {
        fail_msg("%s %s mutation %d/%d not caught: %s", tc_coll_name(coll), algo, kind, which,
                 tc_status_string(st));
    }
    if (strstr(tc_last_error(), "verify ") == NULL) {
        fail_msg("no verifier detail: %s", tc_last_error());
    }
}

static void test_broken_schedules_are_caught(void **state)
{
    static const struct {
        tc_coll_t coll;
        const char *algo;
    } cases[] = {
        {TC_COLL_ALL_REDUCE, "ring"},
        {TC_COLL_ALL_REDUCE, "recursive_doubling"},
        {TC_COLL_ALL_REDUCE, "rabenseifner"},
        {TC_COLL_REDUCE, "binomial_tree"},
        {TC_COLL_BROADCAST, "binomial_tree"},
        {TC_COLL_ALL_GATHER, "ring"},
        {TC_COLL_ALL_GATHER, "bruck"},
        {TC_COLL_REDUCE_SCATTER, "ring"},
        {TC_COLL_REDUCE_SCATTER, "pairwise"},
        {TC_COLL_ALL_TO_ALL, "pairwise"},
        {TC_COLL_GATHER, "binomial_tree"},
        {TC_COLL_SCATTER, "binomial_tree"},
        {TC_COLL_BARRIER, "bruck"},
        {TC_COLL_ALL_REDUCE, "binary_tree"},
        {TC_COLL_ALL_REDUCE, "double_binary_tree"},
        {TC_COLL_BROADCAST, "double_binary_tree"},
        {TC_COLL_REDUCE, "double_binary_tree"},
    };
    size_t i;
    int w;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        for (w = 0; w < 2; w++) {
            expect_caught(cases[i].coll, cases[i].algo, 6, 13, MUT_DROP, w);
            expect_caught(cases[i].coll, cases[i].algo, 6, 13, MUT_PEER, w);
            if (cases[i].coll != TC_COLL_BARRIER) {
                expect_caught(cases[i].coll, cases[i].algo, 6, 13, MUT_OFFSET, w);
            }
        }
    }
    assert_true(nmutated >= 13 * 4);
}

static void test_detects_wrong_offset_precisely(void **state)
{
    tc_algo_args_t a = {.coll = TC_COLL_ALL_GATHER, .nranks = 4, .root = -1, .count = 5};

    (void)state;
    mut_algo = "linear";
    mut_kind = MUT_OFFSET;
    mut_rank = 1;
    mut_which = 1;
    assert_int_equal(tc_algo_verify_with(&a, gen_mutated), TC_ERR_INTERNAL);
    /* rank 1's first receive (from rank 0, block 0) lands one element late,
     * over the first element of its own block */
    assert_non_null(strstr(tc_last_error(), "race: rank 1 steps 0 (copy 5 elements send[0] -> "
                                            "recv[5]) and 2 (recv 5 elements from rank 0 into "
                                            "recv[1]) touch recv[5, 6)"));
    mut_which = 0; /* its first send reads one element past its 5-element input */
    assert_int_equal(tc_algo_verify_with(&a, gen_mutated), TC_ERR_INTERNAL);
    assert_non_null(strstr(tc_last_error(), "out of bounds: rank 1 step 1 (send 5 elements of "
                                            "send[1] to rank 2) reaches send[1, 6)"));
}

static void test_sampled_verification(void **state)
{
    tc_algo_verify_opts_t o = {.mode = TC_ALGO_VERIFY_SAMPLE, .nsample = 4, .seed = 7};
    tc_algo_verify_report_t rep;
    tc_algo_args_t a = {.coll = TC_COLL_ALL_REDUCE, .nranks = 4096, .root = -1, .count = 4096};

    (void)state;
    assert_int_equal(tc_algo_verify_ex(&a, "ring", NULL, &o, &rep), TC_OK);
    assert_false(rep.executed);
    assert_true(rep.ranks_checked >= 3 && rep.ranks_checked <= 6);
    assert_int_equal(rep.max_steps, 4 * 4095); /* out of place: no copy first */
    assert_int_equal(rep.max_send_elems, rep.formula.max_send_elems);
    /* a swapped peer on a sampled rank is caught without executing */
    mut_algo = "ring";
    mut_kind = MUT_PEER;
    mut_rank = 0;
    mut_which = 3;
    assert_int_equal(tc_algo_verify_ex(&a, "ring", gen_mutated, &o, &rep), TC_ERR_INTERNAL);
    assert_non_null(strstr(tc_last_error(), "unmatched"));
}

static void test_select(void **state)
{
    tc_algo_args_t a = {.coll = TC_COLL_ALL_REDUCE, .nranks = 64, .root = -1, .count = 1};
    const char *name = NULL;

    (void)state;
    unsetenv("TC_ALGO_ALL_REDUCE");
    assert_int_equal(tc_algo_select(&a, 4, NULL, &name), TC_OK);
    assert_string_equal(name, "recursive_doubling"); /* small: latency wins */
    a.count = 1u << 26;
    assert_int_equal(tc_algo_select(&a, 4, NULL, &name), TC_OK);
    assert_string_equal(name, "rabenseifner"); /* large: bandwidth, then fewer rounds */
    a.nranks = 48;
    assert_int_equal(tc_algo_select(&a, 4, NULL, &name), TC_OK);
    assert_string_equal(name, "ring"); /* rabenseifner's folding costs 2 n beta more */
    assert_int_equal(tc_algo_select(&a, 4, "rabenseifner", &name), TC_OK);
    assert_string_equal(name, "rabenseifner");
    assert_int_equal(tc_algo_select(&a, 4, "butterfly", &name), TC_ERR_NOT_FOUND);
    a.coll = TC_COLL_BROADCAST;
    a.root = 0;
    assert_int_equal(tc_algo_select(&a, 4, NULL, &name), TC_OK);
    assert_string_equal(name, "double_binary_tree"); /* large broadcast: n beta, pipelined */
    a.count = 1;
    assert_int_equal(tc_algo_select(&a, 4, NULL, &name), TC_OK);
    assert_string_equal(name, "binomial_tree");
    a.coll = TC_COLL_ALL_REDUCE;
    a.root = -1;
    a.count = 1u << 26;
    assert_non_null(strstr(tc_last_error(), "valid names: ring, recursive_doubling, rabenseifner"));
    setenv("TC_ALGO_ALL_REDUCE", "recursive_doubling", 1);
    assert_int_equal(tc_algo_select(&a, 4, NULL, &name), TC_OK);
    assert_string_equal(name, "recursive_doubling");
    setenv("TC_ALGO_ALL_REDUCE", "nope", 1);
    assert_int_equal(tc_algo_select(&a, 4, NULL, &name), TC_ERR_NOT_FOUND);
    assert_non_null(strstr(tc_last_error(), "TC_ALGO_ALL_REDUCE"));
    unsetenv("TC_ALGO_ALL_REDUCE");
    a.coll = TC_COLL_ALL_GATHER;
    a.nranks = 6;
    assert_int_equal(tc_algo_select(&a, 4, "recursive_doubling", &name), TC_ERR_UNSUPPORTED);
    assert_non_null(strstr(tc_last_error(), "power-of-two"));
    assert_non_null(strstr(tc_last_error(), "valid here: ring, bruck, linear"));
    setenv("TC_ALGO_BETA_INTER_US", "fast", 1);
    assert_int_equal(tc_algo_select(&a, 4, NULL, &name), TC_ERR_CONFIG);
    unsetenv("TC_ALGO_BETA_INTER_US");
    assert_int_equal(tc_algo_select(NULL, 4, NULL, &name), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_algo_select(&a, 4, NULL, NULL), TC_ERR_INVALID_ARG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_algorithm_every_small_rank_count),
        cmocka_unit_test(test_v_variants),
        cmocka_unit_test(test_larger_rank_counts),
        cmocka_unit_test(test_pipelined_trees),
        cmocka_unit_test(test_chunked_rings),
        cmocka_unit_test(test_chunked_rings_v),
        cmocka_unit_test(test_ring_pieces_flow_independently),
        cmocka_unit_test(test_double_tree_shape),
        cmocka_unit_test(test_hierarchical),
        cmocka_unit_test(test_hierarchical_v),
        cmocka_unit_test(test_hierarchical_stays_in_node),
        cmocka_unit_test(test_broken_schedules_are_caught),
        cmocka_unit_test(test_detects_wrong_offset_precisely),
        cmocka_unit_test(test_sampled_verification),
        cmocka_unit_test(test_select),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
