/* The cost model's two terms beyond alpha-beta-gamma, on cases computed by
 * hand: the per-message overhead o (a burst's messages cost o, not alpha)
 * and link sharing (across nodes, the beta term times the ranks of a node
 * that use its link at once), the shares the formulas derive, and the
 * selections they change; and a node that runs more ranks than it has cores
 * (a scheduling hop per round, the cores shared). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/algo/schedule.h"
#include "tcomms/algo/tuning.h"

static void clear_env(void)
{
    for (int k = 0; k < TC_ALGO_PARAM_COUNT; k++)
        unsetenv(tc_algo_param_env((tc_algo_param_t)k));
    unsetenv("TC_TUNING_FILE");
    unsetenv("TC_ALGO_REDUCE");
    unsetenv("TC_ALGO_GATHER");
    unsetenv("TC_ALGO_ALL_GATHER");
}

static void assert_near(double got, double want)
{
    if (!(got > want - 1e-12 * (1 + want) && got < want + 1e-12 * (1 + want)))
        fail_msg("got %.17g, want %.17g", got, want);
}

/* (rounds - overlap) alpha + overlap min(o, alpha) + elems size beta share
 * + red_elems size gamma, in microseconds. */
static void test_model_time(void **state)
{
    const tc_algo_model_t m = {
        .alpha_us = {1, 10}, .beta_us = {0.01, 0.1}, .gamma_us = 0.001, .o_us = 2};
    tc_algo_cost_t c;
    tc_algo_args_t a = {.coll = TC_COLL_ALL_GATHER, .nranks = 6, .root = -1, .count = 1};
    (void)state;
    memset(&c, 0, sizeof(c));
    c.rounds = 5;
    c.overlap = 3;
    c.elems = 100;
    c.red_elems = 50;
    c.link_share = 2;
    a.ranks_per_node = 2; /* 3 nodes: across */
    /* 2 x 10 + 3 x 2 + 100 x 4 x 0.1 x 2 + 50 x 4 x 0.001 = 106.2 */
    assert_near(tc_algo_model_time(&m, &a, &c, 4) * 1e6, 106.2);
    /* one node: o = min(2, alpha 1) = 1, no sharing:
     * 2 x 1 + 3 x 1 + 100 x 4 x 0.01 + 0.2 = 9.2 */
    a.ranks_per_node = 0;
    assert_near(tc_algo_model_time(&m, &a, &c, 4) * 1e6, 9.2);
    /* link_share 0 (a formula that leaves it) counts as 1; no overlap: the
     * old model: 5 x 10 + 100 x 4 x 0.1 + 0.2 = 90.2 */
    a.ranks_per_node = 2;
    c.link_share = 0;
    c.overlap = 0;
    assert_near(tc_algo_model_time(&m, &a, &c, 4) * 1e6, 90.2);
    /* o = 0: a burst of 4 after one latency: 10 + 0 */
    memset(&c, 0, sizeof(c));
    c.rounds = 5;
    c.overlap = 4;
    tc_algo_model_t m0 = m;
    m0.o_us = 0;
    assert_near(tc_algo_model_time(&m0, &a, &c, 4) * 1e6, 10);

    /* one node of 6 ranks on 3 cores (oversub 2): alpha 1 + the scheduling hop, o = min(2,
     * alpha) = 2, beta and gamma shared by 2: 2 x 21 + 3 x 2 + (100 x 4 x 0.01 + 0.2) x 2 */
    c.rounds = 5;
    c.overlap = 3;
    c.elems = 100;
    c.red_elems = 50;
    a.ranks_per_node = 0;
    a.oversub = 2;
    assert_near(tc_algo_model_time(&m, &a, &c, 4) * 1e6,
                2 * (1 + TC_ALGO_SCHED_HOP_US) + 3 * 2 + 4.2 * 2);
    /* across nodes, and at 1 rank per core or fewer, the factor is not applied */
    a.oversub = 1;
    assert_near(tc_algo_model_time(&m, &a, &c, 4) * 1e6, 9.2);
    a.ranks_per_node = 2;
    a.oversub = 2;
    c.link_share = 2;
    assert_near(tc_algo_model_time(&m, &a, &c, 4) * 1e6, 106.2);
}

static void test_node_share(void **state)
{
    tc_algo_args_t a = {.coll = TC_COLL_ALL_GATHER, .nranks = 6, .root = -1, .count = 1};
    (void)state;
    a.ranks_per_node = 2; /* nodes {0,1} {2,3} {4,5} */
    /* r + d: node 0's ranks 0, 1 talk to d, 1 + d */
    assert_near(tc_algo_node_share(&a, 1, 0), 1); /* 0->1 same, 1->2 across */
    assert_near(tc_algo_node_share(&a, 2, 0), 2); /* 0->2, 1->3 */
    assert_near(tc_algo_node_share(&a, 4, 0), 2); /* 0->4, 1->5 */
    assert_near(tc_algo_node_share(&a, 5, 0), 1); /* 0->5 across, 1->0 same */
    /* r XOR d */
    assert_near(tc_algo_node_share(&a, 1, 1), 1); /* 0<->1: none across, at least 1 */
    assert_near(tc_algo_node_share(&a, 2, 1), 2);
    assert_near(tc_algo_node_share(&a, 4, 1), 2);
    a.ranks_per_node = 3;                         /* nodes {0,1,2} {3,4,5} */
    assert_near(tc_algo_node_share(&a, 1, 0), 1); /* only 2->3 */
    assert_near(tc_algo_node_share(&a, 2, 0), 2); /* 1->3, 2->4 */
    assert_near(tc_algo_node_share(&a, 4, 1), 2); /* 0->4, 1->5; 2->6 is no rank */
    assert_near(tc_algo_node_share(&a, 1, 1), 1); /* 2->3 */
    /* every rank to every other: k (n - k) / (n - 1) blocks per rank's n - 1 */
    assert_near(tc_algo_node_share_all(&a), 3.0 * 3 / 5);
    a.ranks_per_node = 2;
    assert_near(tc_algo_node_share_all(&a), 2.0 * 4 / 5);
    a.ranks_per_node = 1; /* one rank per node: 1 x 5 / 5 */
    assert_near(tc_algo_node_share_all(&a), 1);
    assert_near(tc_algo_node_share(&a, 3, 0), 1);
    /* one node: no link to share */
    a.ranks_per_node = 0;
    assert_near(tc_algo_node_share(&a, 2, 0), 1);
    assert_near(tc_algo_node_share_all(&a), 1);
    a.ranks_per_node = 6;
    assert_near(tc_algo_node_share_all(&a), 1);
}

/* The cost of @p algo of @p coll for @p a. */
static tc_algo_cost_t cost_of(const tc_algo_args_t *a, const char *algo)
{
    const tc_algo_desc_t *t, *d = NULL;
    tc_algo_cost_t c;
    size_t n;
    t = tc_algo_table(&n);
    for (size_t i = 0; i < n; i++)
        if (t[i].coll == a->coll && strcmp(t[i].name, algo) == 0)
            d = &t[i];
    assert_non_null(d);
    assert_non_null(d->cost);
    memset(&c, 0, sizeof(c));
    d->cost(a, &c);
    return c;
}

/* The formulas' overlap and link_share, derived by hand for 6 and 8 ranks. */
static void test_formulas(void **state)
{
    tc_algo_args_t a = {
        .coll = TC_COLL_ALL_GATHER, .nranks = 6, .root = -1, .count = 4, .ranks_per_node = 2};
    tc_algo_cost_t c;
    (void)state;
    /* bruck: steps d = 1, 2, 4 move 1, 2, 2 blocks with shares 1, 2, 2 */
    c = cost_of(&a, "bruck");
    assert_near(c.link_share, (1 * 1 + 2 * 2 + 2 * 2) / 5.0);
    assert_near(c.overlap, 0);
    /* linear: 5 messages at once, 2 x 4 of 5 blocks leave a node */
    c = cost_of(&a, "linear");
    assert_near(c.overlap, 4);
    assert_near(c.link_share, 1.6);
    /* ring: neighbours only, one link per node boundary */
    c = cost_of(&a, "ring");
    assert_near(c.link_share, 0);
    /* recursive doubling all-reduce, 6 = 4 + 2 folded: steps XOR 1 (share
     * 1) and XOR 2 (share 2), fold and unfold 1 each: 5 / 4 rounds */
    a.coll = TC_COLL_ALL_REDUCE;
    c = cost_of(&a, "recursive_doubling");
    assert_near(c.rounds, 4);
    assert_near(c.link_share, 5.0 / 4);
    /* rabenseifner on 8 ranks, 8 elements (one per block): halving and
     * doubling move 4, 2, 1 blocks with XOR 1, 2, 4 (shares 1, 2, 2) each
     * way: (2 x 4 x 1 + 2 x 2 x 2 + 2 x 1 x 2) / 14 */
    a.nranks = 8;
    a.count = 8;
    c = cost_of(&a, "rabenseifner");
    assert_near(c.elems, 14);
    assert_near(c.link_share, 20.0 / 14);
    /* rooted linear: the root's n - 1 messages, n - 2 after the first overlap */
    a.nranks = 6;
    a.root = 0;
    a.coll = TC_COLL_GATHER;
    assert_near(cost_of(&a, "linear").overlap, 4);
    a.coll = TC_COLL_SCATTER;
    assert_near(cost_of(&a, "linear").overlap, 4);
    a.coll = TC_COLL_REDUCE;
    assert_near(cost_of(&a, "linear").overlap, 4);
    a.coll = TC_COLL_BROADCAST;
    assert_near(cost_of(&a, "linear").overlap, 4);
    assert_near(cost_of(&a, "binomial_tree").overlap, 0);
    /* binomial gather and scatter: a non-leaf copies its own block; at 2 ranks there is none */
    a.count = 1000;
    assert_near(cost_of(&a, "binomial_tree").red_elems, 0);
    a.coll = TC_COLL_SCATTER;
    assert_near(cost_of(&a, "binomial_tree").red_elems, 1000);
    a.coll = TC_COLL_GATHER;
    assert_near(cost_of(&a, "binomial_tree").red_elems, 1000);
    a.nranks = 2;
    assert_near(cost_of(&a, "binomial_tree").red_elems, 0);
    a.nranks = 6;
    a.coll = TC_COLL_BROADCAST;
    a.count = 2;
    a.nranks = 1; /* no message: nothing overlaps (not -1) */
    assert_near(cost_of(&a, "linear").overlap, 0);
    a.nranks = 6;
    /* barrier linear: 5 in, 5 out, each a burst */
    a.coll = TC_COLL_BARRIER;
    a.root = -1;
    a.count = 0;
    assert_near(cost_of(&a, "linear").overlap, 8);
}

/* Selections the terms change, on the parameters tc-tune fitted on 3 nodes
 * of 2 ranks at 1 and 5 Gbit/s (bench/results/2026-12-02-tune-validate.txt). */
static void test_selection(void **state)
{
    tc_algo_args_t a = {
        .coll = TC_COLL_REDUCE, .nranks = 6, .root = 0, .count = 2, .ranks_per_node = 2};
    const char *name = NULL;
    (void)state;
    clear_env();
    setenv("TC_ALGO_ALPHA_INTRA_US", "1.35", 1);
    setenv("TC_ALGO_ALPHA_INTER_US", "7.33", 1);
    setenv("TC_ALGO_BETA_INTRA_US", "0.000194", 1);
    setenv("TC_ALGO_BETA_INTER_US", "0.00774", 1);
    setenv("TC_ALGO_GAMMA_US", "4.75e-5", 1);
    /* o = alpha (no overlap): the old model, where the linear root's 5
     * rounds lose to a tree's 3 */
    setenv("TC_ALGO_OVERHEAD_US", "7.33", 1);
    assert_int_equal(tc_algo_select(&a, 4, NULL, &name), TC_OK);
    assert_string_not_equal(name, "linear");
    /* o = 1: linear is 7.33 + 4 x 1 + 40 x 0.00774 + 40 x 4.75e-5 = 11.64 us
     * against at least 2 latencies (14.66 us) for anything else */
    setenv("TC_ALGO_OVERHEAD_US", "1", 1);
    assert_int_equal(tc_algo_select(&a, 4, NULL, &name), TC_OK);
    assert_string_equal(name, "linear");
    a.coll = TC_COLL_GATHER;
    assert_int_equal(tc_algo_select(&a, 4, NULL, &name), TC_OK);
    assert_string_equal(name, "linear");
    /* a reduce of 4 MiB: the bytes decide again; the linear root takes
     * 5 x 4 MiB, a tree's root 3 x 4 MiB (gather ties: every algorithm's
     * root takes 5 blocks) */
    a.coll = TC_COLL_REDUCE;
    a.count = 1u << 20;
    assert_int_equal(tc_algo_select(&a, 4, NULL, &name), TC_OK);
    assert_string_not_equal(name, "linear");

    /* 5 Gbit/s, all-gather of 64 MiB: bruck moved 1.8 x its bytes over a
     * node's link, which the model did not know; with the share the
     * hierarchical algorithm (one rank per node on the link) wins */
    setenv("TC_ALGO_ALPHA_INTRA_US", "1.03", 1);
    setenv("TC_ALGO_ALPHA_INTER_US", "9.69", 1);
    setenv("TC_ALGO_BETA_INTRA_US", "0.00022", 1);
    setenv("TC_ALGO_BETA_INTER_US", "0.00108", 1);
    setenv("TC_ALGO_GAMMA_US", "2.84e-5", 1);
    a.coll = TC_COLL_ALL_GATHER;
    a.root = -1;
    a.count = 67108848 / 6 / 4;
    assert_int_equal(tc_algo_select(&a, 4, NULL, &name), TC_OK);
    assert_string_not_equal(name, "bruck");
    clear_env();

    /* the defaults, 4 ranks on one node: scatter and gather of a small block go by the tree
     * (2 latencies against 1 + 2 overheads), of 4 MiB blocks linear (the tree's non-leaf
     * copies its block, the roots move the same bytes) */
    a = (tc_algo_args_t){.coll = TC_COLL_SCATTER, .nranks = 4, .root = 1, .count = 64};
    assert_int_equal(tc_algo_select(&a, 4, NULL, &name), TC_OK);
    assert_string_equal(name, "binomial_tree");
    a.coll = TC_COLL_GATHER;
    assert_int_equal(tc_algo_select(&a, 4, NULL, &name), TC_OK);
    assert_string_equal(name, "binomial_tree");
    a.count = 1u << 20;
    assert_int_equal(tc_algo_select(&a, 4, NULL, &name), TC_OK);
    assert_string_equal(name, "linear");
    a.coll = TC_COLL_SCATTER;
    assert_int_equal(tc_algo_select(&a, 4, NULL, &name), TC_OK);
    assert_string_equal(name, "linear");

    /* 4 ranks on 2 cores (oversub 2): where every round waits for a receiver to be scheduled,
     * a broadcast of 256 KiB goes from the root to each rank at once (a burst, one round)
     * instead of by the pipelined double binary tree, an all-gather of 256 KiB linear instead of
     * by recursive doubling (bench/results/2026-12-06-oversub.txt: 2x faster there) */
    a = (tc_algo_args_t){.coll = TC_COLL_BROADCAST, .nranks = 4, .root = 0, .count = 65536};
    assert_int_equal(tc_algo_select(&a, 4, NULL, &name), TC_OK);
    assert_string_equal(name, "double_binary_tree");
    a.oversub = 2;
    assert_int_equal(tc_algo_select(&a, 4, NULL, &name), TC_OK);
    assert_string_not_equal(name, "double_binary_tree");
    a = (tc_algo_args_t){.coll = TC_COLL_ALL_GATHER, .nranks = 4, .root = -1, .count = 16384};
    assert_int_equal(tc_algo_select(&a, 4, NULL, &name), TC_OK);
    assert_string_equal(name, "recursive_doubling");
    a.oversub = 2;
    assert_int_equal(tc_algo_select(&a, 4, NULL, &name), TC_OK);
    assert_string_equal(name, "linear");
    /* not a ranks-per-core count: refused */
    a.oversub = -1;
    assert_int_equal(tc_algo_select(&a, 4, NULL, &name), TC_ERR_INVALID_ARG);
}

/* NULL pointers: a status or a documented value, not a crash (found by an
 * independent checker). */
static void test_null_pointers(void **state)
{
    const tc_algo_args_t a = {.coll = TC_COLL_ALL_REDUCE, .nranks = 4, .root = -1, .count = 16};
    const tc_algo_cost_t c = {.rounds = 1};
    tc_algo_model_t m;

    (void)state;
    clear_env();
    assert_int_equal(tc_algo_model_get(NULL), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "tc_algo_model_get: model is NULL"));
    assert_int_equal(tc_algo_model_get(&m), TC_OK);
    assert_true(tc_algo_model_time(&m, &a, NULL, 4) == HUGE_VAL);
    assert_true(tc_algo_model_time(NULL, &a, &c, 4) == HUGE_VAL);
    assert_true(tc_algo_model_time(&m, NULL, &c, 4) == HUGE_VAL);
    assert_true(tc_algo_model_time(&m, &a, &c, 4) < HUGE_VAL);
    assert_true(tc_algo_node_share(NULL, 1, 0) == 1.0);
    assert_true(tc_algo_node_share_all(NULL) == 1.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_time), cmocka_unit_test(test_null_pointers),
        cmocka_unit_test(test_node_share), cmocka_unit_test(test_formulas),
        cmocka_unit_test(test_selection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
