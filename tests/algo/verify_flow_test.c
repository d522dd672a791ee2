/* Sampled verification's flow trace: it proves sampled output elements of
 * every registered algorithm, and it catches broken steps placed on, or
 * feeding, a sampled rank that the other sampled checks cannot see. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/algo/schedule.h"
#include "tcomms/base/status.h"

static int is_rooted(tc_coll_t c)
{
    return c == TC_COLL_REDUCE || c == TC_COLL_BROADCAST || c == TC_COLL_GATHER ||
           c == TC_COLL_SCATTER;
}

/* ---- every registered algorithm passes ------------------------------------- */

static void sample_one(const tc_algo_desc_t *d, int p, uint64_t count, int in_place)
{
    tc_algo_args_t a = {.coll = d->coll,
                        .nranks = p,
                        .root = is_rooted(d->coll) ? p / 3 : -1,
                        .count = count,
                        .in_place = in_place,
                        .ranks_per_node = 4};
    tc_algo_verify_opts_t o = {
        .mode = TC_ALGO_VERIFY_SAMPLE, .nsample = 3, .seed = 11, .flow_elems = 6};
    tc_algo_verify_report_t rep;
    tc_status_t st;

    if ((d->applies != NULL && d->applies(&a) != TC_OK) ||
        (a.coll == TC_COLL_ALL_TO_ALL && in_place)) {
        return;
    }
    st = tc_algo_verify_ex(&a, d->name, NULL, &o, &rep);
    if (st != TC_OK) {
        fail_msg("%s %s p=%d count=%llu in_place=%d: %s", tc_coll_name(d->coll), d->name, p,
                 (unsigned long long)count, in_place, tc_last_error());
    }
    assert_int_equal(rep.flow_elems_cut, 0);
    if (d->coll != TC_COLL_BARRIER && count > 0) {
        assert_true(rep.flow_elems_proven > 0); /* at least the sampled ranks' outputs */
        assert_true(rep.flow_ranks_built > 0);
    } else {
        assert_int_equal(rep.flow_elems_proven, 0);
    }
}

static void test_every_algorithm_sampled_flow(void **state)
{
    size_t nd, d;
    const tc_algo_desc_t *t = tc_algo_table(&nd);
    const int ps[] = {1, 2, 3, 7, 16, 33, 100, 257};
    size_t i;
    int ip;

    (void)state;
    for (d = 0; d < nd; d++) {
        for (i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
            for (ip = 0; ip < 2; ip++) {
                sample_one(&t[d], ps[i], 0, ip);
                sample_one(&t[d], ps[i], 3 * (uint64_t)ps[i] + 5, ip);
            }
        }
    }
}

/* ---- broken steps -------------------------------------------------------------- */

enum { MUT_DROP, MUT_OFFSET, MUT_PEER };
static const char *mut_algo;
static int mut_kind, mut_rank, mut_which, mut_done;
static uint64_t mut_elem; /* the mutated step is one moving this element of its buffer */

/* The registered schedule; on rank mut_rank, the mut_which-th message step
 * whose range holds element mut_elem is dropped, shifted by one, or sent to /
 * received from the next rank instead. */
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
        uint64_t o = x->kind == TC_STEP_SEND ? x->off : x->dst_off;
        if (x->kind == TC_STEP_COPY || x->kind == TC_STEP_REDUCE || mut_elem < o ||
            mut_elem - o >= x->count || seen++ != mut_which) {
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

/* Sampled ranks with this seed and one random rank: 0, p-1, the root, 41
 * (p = 64), and their direct peers; rank 20 and its neighbours are not. */
#define P 64
#define SEED 5

static tc_status_t run_sampled(tc_algo_args_t *a, int flow, tc_algo_verify_report_t *rep)
{
    tc_algo_verify_opts_t o = {
        .mode = TC_ALGO_VERIFY_SAMPLE, .nsample = 1, .seed = SEED, .flow_elems = flow ? 8 : -1};
    return tc_algo_verify_ex(a, mut_algo, gen_mutated, &o, rep);
}

/* The mutation on rank `rank` is caught by the flow trace; when `unseen`, the
 * sampled checks without the trace do not catch it (it is off the sample). */
static int expect_flow_catches(tc_coll_t coll, const char *algo, int rank, uint64_t elem,
                               int kind, int which, int unseen)
{
    tc_algo_args_t a = {.coll = coll,
                        .nranks = P,
                        .root = is_rooted(coll) ? 0 : -1,
                        .count = 3 * P + 5}; /* uneven chunks */
    tc_algo_verify_report_t rep;
    tc_status_t st;

    mut_algo = algo;
    mut_kind = kind;
    mut_rank = -1; /* unbroken: proven */
    mut_elem = elem;
    mut_which = which;
    st = run_sampled(&a, 1, &rep);
    if (st != TC_OK) {
        fail_msg("%s %s unbroken: %s", tc_coll_name(coll), algo, tc_last_error());
    }
    assert_true(rep.flow_elems_proven > 0);
    assert_int_equal(rep.flow_elems_cut, 0);
    mut_rank = rank;
    mut_done = 0;
    if (unseen) {
        st = run_sampled(&a, 0, &rep);
        if (st != TC_OK) {
            fail_msg("%s %s mutation %d/%d on rank %d: seen without the flow trace, so the test "
                     "proves nothing: %s",
                     tc_coll_name(coll), algo, kind, which, rank, tc_last_error());
        }
    }
    mut_done = 0;
    st = run_sampled(&a, 1, &rep);
    if (!mut_done) {
        return 0; /* the rank has fewer such steps */
    }
    if (st != TC_ERR_INTERNAL) {
        fail_msg("%s %s mutation %d/%d on rank %d not caught: %s", tc_coll_name(coll), algo, kind,
                 which, rank, tc_status_string(st));
    }
    if (unseen && strstr(tc_last_error(), "flow: ") == NULL) {
        fail_msg("not caught by the flow trace: %s", tc_last_error());
    }
    return 1;
}

/* Rank 20 moves element 0 of the ring all-reduce (chunk 0) twice in each
 * phase; rank 0's recv[0] and every other sampled element 0 depend on it. */
static void test_ring_all_reduce_feeding_rank(void **state)
{
    int w, k, n = 0;

    (void)state;
    for (k = MUT_DROP; k <= MUT_PEER; k++) {
        for (w = 0; w < 4; w++) {
            n += expect_flow_catches(TC_COLL_ALL_REDUCE, "ring", 20, 0, k, w, 1);
        }
    }
    assert_int_equal(n, 12);
}

/* On a sampled rank (0): its own steps that move element 0. */
static void test_ring_all_reduce_sampled_rank(void **state)
{
    int w, k, n = 0;

    (void)state;
    for (k = MUT_DROP; k <= MUT_PEER; k++) {
        for (w = 0; w < 4; w++) {
            n += expect_flow_catches(TC_COLL_ALL_REDUCE, "ring", 0, 0, k, w, 0);
        }
    }
    assert_int_equal(n, 9); /* its 2 RS + 1 AG steps moving element 0 */
}

/* All-gather ring: block 0 travels 0 -> 1 -> ... -> p-1; rank 20 forwards it
 * (its receive and its send), the sampled rank p-1's recv[0] depends on it. */
static void test_ring_all_gather_feeding_rank(void **state)
{
    int w, k, n = 0;

    (void)state;
    for (k = MUT_DROP; k <= MUT_PEER; k++) {
        for (w = 0; w < 2; w++) {
            n += expect_flow_catches(TC_COLL_ALL_GATHER, "ring", 20, 0, k, w, 1);
        }
    }
    assert_int_equal(n, 6);
}

/* A log-depth one: recursive doubling all-reduce, rank 20's messages. */
static void test_recursive_doubling_feeding_rank(void **state)
{
    int w, k, n = 0;

    (void)state;
    for (k = MUT_DROP; k <= MUT_PEER; k++) {
        for (w = 0; w < 3; w++) {
            n += expect_flow_catches(TC_COLL_ALL_REDUCE, "recursive_doubling", 20, 0, k, w, 1);
        }
    }
    assert_int_equal(n, 9);
}

/* The budget: elements whose trace needs more are cut, not failed. */
static void test_budget_cuts(void **state)
{
    tc_algo_args_t a = {.coll = TC_COLL_ALL_REDUCE, .nranks = 2048, .root = -1, .count = 4096};
    tc_algo_verify_opts_t o = {.mode = TC_ALGO_VERIFY_SAMPLE,
                               .nsample = 1,
                               .seed = 1,
                               .flow_elems = 2,
                               .flow_budget = 200000};
    tc_algo_verify_report_t rep;

    (void)state;
    assert_int_equal(tc_algo_verify_ex(&a, "ring", NULL, &o, &rep), TC_OK);
    assert_true(rep.flow_elems_cut > 0);
    assert_true(rep.flow_steps_built >= 200000);
    assert_true(rep.flow_steps_built < 200000 + 4 * 2048);
    a.nranks = 512; /* default: the whole cone (512 x 2045 steps) fits */
    a.count = 1000;
    o.flow_budget = 0;
    assert_int_equal(tc_algo_verify_ex(&a, "ring", NULL, &o, &rep), TC_OK);
    assert_int_equal(rep.flow_elems_cut, 0);
    assert_true(rep.flow_elems_proven > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_algorithm_sampled_flow),
        cmocka_unit_test(test_ring_all_reduce_feeding_rank),
        cmocka_unit_test(test_ring_all_reduce_sampled_rank),
        cmocka_unit_test(test_ring_all_gather_feeding_rank),
        cmocka_unit_test(test_recursive_doubling_feeding_rank),
        cmocka_unit_test(test_budget_cuts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
