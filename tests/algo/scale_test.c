/* The verifier at scale: 131072 ranks, fully for tree algorithms and sampled
 * for the linear-depth ones (size = large: tens of seconds). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "tcomms/algo/schedule.h"
#include "tcomms/base/status.h"

#define P 131072

static void run(tc_coll_t coll, const char *algo, int p, uint64_t count, tc_algo_verify_mode_t m)
{
    tc_algo_args_t a = {.coll = coll, .nranks = p, .root = -1, .count = count};
    tc_algo_verify_opts_t o = {.mode = m, .nsample = 6, .seed = 3, .elem_size = 4};
    tc_algo_verify_report_t rep;

    if (coll == TC_COLL_BROADCAST || coll == TC_COLL_REDUCE) {
        a.root = p / 3;
    }
    if (tc_algo_verify_ex(&a, algo, NULL, &o, &rep) != TC_OK) {
        fail_msg("%s %s p=%d: %s", tc_coll_name(coll), algo, p, tc_last_error());
    }
    assert_int_equal(rep.max_send_msgs, rep.formula.max_send_msgs);
    assert_int_equal(rep.max_send_elems, rep.formula.max_send_elems);
    assert_int_equal(rep.executed, m == TC_ALGO_VERIFY_FULL);
}

static void run_chunked(tc_coll_t coll, const char *algo, int p, uint64_t count, uint64_t chunk,
                        int rpn, tc_algo_verify_mode_t m)
{
    tc_algo_args_t a = {.coll = coll,
                        .nranks = p,
                        .root = -1,
                        .count = count,
                        .chunk_count = chunk,
                        .ranks_per_node = rpn};
    tc_algo_verify_opts_t o = {.mode = m, .nsample = 6, .seed = 3, .elem_size = 4};
    tc_algo_verify_report_t rep;

    if (coll == TC_COLL_BROADCAST || coll == TC_COLL_REDUCE) {
        a.root = p / 3;
    }
    if (tc_algo_verify_ex(&a, algo, NULL, &o, &rep) != TC_OK) {
        fail_msg("%s %s p=%d: %s", tc_coll_name(coll), algo, p, tc_last_error());
    }
    if (m == TC_ALGO_VERIFY_FULL) {
        assert_int_equal(rep.max_send_msgs, rep.formula.max_send_msgs);
        assert_int_equal(rep.max_send_elems, rep.formula.max_send_elems);
    } else { /* the sample need not hold the busiest rank */
        assert_true(rep.max_send_msgs <= rep.formula.max_send_msgs);
        assert_true(rep.max_send_elems <= rep.formula.max_send_elems);
        assert_true(rep.max_send_elems > 0);
    }
    assert_int_equal(rep.executed, m == TC_ALGO_VERIFY_FULL);
}

static void test_trees_full(void **state)
{
    (void)state;
    run(TC_COLL_BROADCAST, "binomial_tree", P, 1000, TC_ALGO_VERIFY_FULL);
    run(TC_COLL_REDUCE, "binomial_tree", P, 1000, TC_ALGO_VERIFY_FULL);
    run(TC_COLL_ALL_GATHER, "bruck", P / 4, 3, TC_ALGO_VERIFY_FULL);
    run(TC_COLL_ALL_REDUCE, "recursive_doubling", P / 8, 1000, TC_ALGO_VERIFY_FULL);
}

/* Pipelined binary and double binary trees, fully at 131072 ranks (a few
 * chunks each: the steps grow with chunks x ranks; about 5-15 s each). */
static void test_pipelined_trees_full(void **state)
{
    static const char *const algos[] = {"binary_tree", "double_binary_tree"};
    static const tc_coll_t colls[] = {TC_COLL_BROADCAST, TC_COLL_REDUCE, TC_COLL_ALL_REDUCE};
    int i, k;

    (void)state;
    for (i = 0; i < 3; i++) {
        for (k = 0; k < 2; k++) {
            run_chunked(colls[i], algos[k], P, 1000, 500, 0, TC_ALGO_VERIFY_FULL);
        }
    }
}

/* Hierarchical all-reduce: 16384 nodes of 8 ranks, full; the ring across
 * node leaders is linear depth, so 131072 nodes' worth is sampled. */
static void test_hierarchical_scale(void **state)
{
    (void)state;
    run_chunked(TC_COLL_ALL_REDUCE, "hierarchical", P, 1000, 0, 8, TC_ALGO_VERIFY_SAMPLE);
    run_chunked(TC_COLL_ALL_REDUCE, "hierarchical", P / 16, 1000, 0, 8, TC_ALGO_VERIFY_FULL);
}

static void test_linear_depth_sampled(void **state)
{
    (void)state;
    run(TC_COLL_ALL_REDUCE, "ring", P, (uint64_t)P * 4, TC_ALGO_VERIFY_SAMPLE);
    run(TC_COLL_ALL_REDUCE, "rabenseifner", P, (uint64_t)P * 4, TC_ALGO_VERIFY_SAMPLE);
    run(TC_COLL_ALL_GATHER, "ring", P, 2, TC_ALGO_VERIFY_SAMPLE);
    run(TC_COLL_ALL_TO_ALL, "pairwise", P / 4, 2, TC_ALGO_VERIFY_SAMPLE);
}

/* Every registered algorithm, sampled at 131072 ranks with the flow trace:
 * whatever it traces within the default budget is proven, the rest is cut. */
static void test_every_algorithm_sampled_flow(void **state)
{
    size_t nd, d;
    const tc_algo_desc_t *t = tc_algo_table(&nd);
    uint64_t proven = 0;

    (void)state;
    for (d = 0; d < nd; d++) {
        tc_algo_args_t a = {.coll = t[d].coll,
                            .nranks = P,
                            .root = -1,
                            .count = t[d].coll == TC_COLL_ALL_TO_ALL ? 2 : 1000,
                            .ranks_per_node = 8};
        tc_algo_verify_opts_t o = {
            .mode = TC_ALGO_VERIFY_SAMPLE, .nsample = 2, .seed = 9, .flow_elems = 4};
        tc_algo_verify_report_t rep;

        if (a.coll == TC_COLL_REDUCE || a.coll == TC_COLL_BROADCAST || a.coll == TC_COLL_GATHER ||
            a.coll == TC_COLL_SCATTER) {
            a.root = P / 3;
        }
        if (t[d].applies != NULL && t[d].applies(&a) != TC_OK) {
            continue;
        }
        if (tc_algo_verify_ex(&a, t[d].name, NULL, &o, &rep) != TC_OK) {
            fail_msg("%s %s p=%d: %s", tc_coll_name(a.coll), t[d].name, P, tc_last_error());
        }
        proven += rep.flow_elems_proven;
        assert_true(rep.flow_steps_built <= (1ull << 24) + 4ull * P + 8); /* the budget holds */
    }
    assert_true(proven > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trees_full),
        cmocka_unit_test(test_linear_depth_sampled),
        cmocka_unit_test(test_pipelined_trees_full),
        cmocka_unit_test(test_hierarchical_scale),
        cmocka_unit_test(test_every_algorithm_sampled_flow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
