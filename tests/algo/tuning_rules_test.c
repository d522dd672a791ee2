/* The tuning file's measured rules (version 3): parse, format and every
 * refusal; the size a call has (tc_algo_args_bytes) against its definition;
 * which rule covers a call (shape, boundaries); and selection under a file
 * with rules (the rule's algorithm, the model where no rule applies,
 * TC_ALGO_RULES=0). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcomms/algo/schedule.h"
#include "tcomms/algo/tuning.h"
#include "tcomms/base/status.h"
#include "tests/algo/tmpdir.h"

/* 8 ranks on 2 nodes of 4 */
static const char ruled[] = "tcomms_tuning = 3\n"
                            "ranks = 8\n"
                            "nodes = 2\n"
                            "ranks_per_node = 4\n"
                            "alpha_inter_us = 7\n"
                            "rule_all_reduce = 0:recursive_doubling 23170:rabenseifner \t"
                            "4194304:ring\n"
                            "rule_all_gather = 64:bruck 1048576:ring\n"
                            "rule_barrier = 0:linear\n";

static void parse_ruled(tc_algo_tuning_t *t)
{
    assert_int_equal(tc_algo_tuning_parse(ruled, strlen(ruled), "r.tune", t), TC_OK);
}

static void test_parse(void **state)
{
    tc_algo_tuning_t t;
    (void)state;
    parse_ruled(&t);
    assert_int_equal(t.version, 3);
    assert_int_equal(t.nrules, 6);
    static const struct {
        tc_coll_t coll;
        uint64_t from;
        const char *algo;
    } want[] = {
        {TC_COLL_ALL_REDUCE, 0, "recursive_doubling"}, {TC_COLL_ALL_REDUCE, 23170, "rabenseifner"},
        {TC_COLL_ALL_REDUCE, 4194304, "ring"},         {TC_COLL_ALL_GATHER, 64, "bruck"},
        {TC_COLL_ALL_GATHER, 1048576, "ring"},         {TC_COLL_BARRIER, 0, "linear"}};
    for (int i = 0; i < 6; i++) {
        assert_int_equal(t.rule[i].coll, want[i].coll);
        assert_true(t.rule[i].from_bytes == want[i].from);
        assert_string_equal(t.rule[i].algo, want[i].algo);
    }
    assert_true(t.value[TC_ALGO_PARAM_ALPHA_INTER] == 7);
}

/* format writes what parse reads back to the same rules, as version 3; a
 * file without rules stays version 2 (older readers take it). */
static void test_round_trip(void **state)
{
    tc_algo_tuning_t a, b;
    char buf[4096];
    size_t len = 0;
    (void)state;
    parse_ruled(&a);
    assert_int_equal(tc_algo_tuning_format(&a, buf, sizeof(buf), &len), TC_OK);
    assert_non_null(strstr(buf, "tcomms_tuning = 3\n"));
    assert_non_null(
        strstr(buf, "rule_all_reduce = 0:recursive_doubling 23170:rabenseifner 4194304:ring\n"));
    assert_int_equal(tc_algo_tuning_parse(buf, len, "rt", &b), TC_OK);
    assert_int_equal(b.nrules, a.nrules);
    assert_memory_equal(b.rule, a.rule, sizeof(a.rule[0]) * (size_t)a.nrules);
    /* too small a buffer for the rules: refused, not cut */
    char *nl = strstr(buf, "rule_all_gather");
    assert_non_null(nl);
    assert_int_equal(tc_algo_tuning_format(&a, buf, (size_t)(nl - buf) + 10, NULL),
                     TC_ERR_NO_RESOURCE);
    /* what parse would refuse */
    b = a;
    snprintf(b.rule[1].algo, sizeof(b.rule[1].algo), "%s", "no_such_algo");
    assert_int_equal(tc_algo_tuning_format(&b, buf, sizeof(buf), NULL), TC_ERR_INVALID_ARG);
    b = a;
    b.rule[2].from_bytes = 10;
    assert_int_equal(tc_algo_tuning_format(&b, buf, sizeof(buf), NULL), TC_ERR_INVALID_ARG);
    b = a;
    b.ranks_per_node = 0;
    assert_int_equal(tc_algo_tuning_format(&b, buf, sizeof(buf), NULL), TC_ERR_INVALID_ARG);
    b = a;
    b.nrules = 0;
    assert_int_equal(tc_algo_tuning_format(&b, buf, sizeof(buf), &len), TC_OK);
    assert_non_null(strstr(buf, "tcomms_tuning = 2\n"));
    assert_null(strstr(buf, "rule_"));
}

static void test_parse_bad(void **state)
{
#define SHAPE "tcomms_tuning = 3\nranks = 8\nnodes = 2\nranks_per_node = 4\n"
    static const struct {
        const char *text;
        const char *detail;
    } bad[] = {
        {"tcomms_tuning = 2\nrule_all_reduce = 0:ring\n",
         "b.tune:2: rule_all_reduce: rules need \"tcomms_tuning = 3\""},
        {SHAPE "rule_allreduce = 0:ring\n",
         "b.tune:5: rule_allreduce: no collective \"allreduce\""},
        {SHAPE "rule_all_reduce = ring\n", "b.tune:5: rule_all_reduce: \"ring\" is not BYTES:"},
        {SHAPE "rule_all_reduce = 0:\n", "b.tune:5: rule_all_reduce: \"0:\" is not BYTES:"},
        {SHAPE "rule_all_reduce = :ring\n", "b.tune:5: rule_all_reduce: \":ring\" is not BYTES:"},
        {SHAPE "rule_all_reduce = 1k:ring\n", "rule_all_reduce: \"1k\": the bytes are not"},
        {SHAPE "rule_all_reduce = -1:ring\n", "rule_all_reduce: \"-1\": the bytes are not"},
        {SHAPE "rule_all_reduce = 99999999999999999999:ring\n", "bytes: out of range"},
        {SHAPE "rule_all_reduce = 0:bruck\n", "b.tune:5: rule_all_reduce: "},
        {SHAPE "rule_all_reduce = 0:ring 0:rabenseifner\n",
         "rule_all_reduce: 0 bytes after 0: sizes must ascend"},
        {SHAPE "rule_all_reduce = 8:ring 4:rabenseifner\n", "4 bytes after 8: sizes must ascend"},
        {SHAPE "rule_all_reduce = 0:ring\nrule_all_reduce = 8:ring\n",
         "b.tune:6: rule_all_reduce: key given a second time"},
        {SHAPE "rule_barrier = 0:linear\nrule_all_reduce = 8:ring\n",
         "b.tune:6: rule_all_reduce: after rule_barrier"},
        {SHAPE "rule_all_reduce = 0:a_name_longer_than_thirty_one_bytes\n",
         "an algorithm name of 35 bytes"},
        {"tcomms_tuning = 3\nranks = 8\nrule_all_reduce = 0:ring\n",
         "b.tune: rules without ranks, nodes and ranks_per_node"},
    };
#undef SHAPE
    tc_algo_tuning_t t;
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        tc_status_t st = tc_algo_tuning_parse(bad[i].text, strlen(bad[i].text), "b.tune", &t);
        if (st != TC_ERR_CONFIG || strstr(tc_last_error(), bad[i].detail) == NULL)
            fail_msg("case %zu (%s): status %d, detail \"%s\", wanted \"%s\"", i, bad[i].text,
                     (int)st, tc_last_error(), bad[i].detail);
    }
    /* more rules than the file may hold */
    char text[8192];
    int n = snprintf(text, sizeof(text),
                     "tcomms_tuning = 3\nranks = 2\nnodes = 1\n"
                     "ranks_per_node = 2\n");
    for (int c = 0; c < 3; c++) {
        n += snprintf(text + n, sizeof(text) - (size_t)n, "rule_%s =", tc_coll_name((tc_coll_t)c));
        size_t na, i = 0;
        const tc_algo_desc_t *d = tc_algo_table(&na);
        while (d[i].coll != (tc_coll_t)c)
            i++;
        for (int k = 0; k < 45; k++)
            n += snprintf(text + n, sizeof(text) - (size_t)n, " %d:%s", k, d[i].name);
        n += snprintf(text + n, sizeof(text) - (size_t)n, "\n");
    }
    assert_int_equal(tc_algo_tuning_parse(text, (size_t)n, "b.tune", &t), TC_ERR_CONFIG);
    assert_non_null(strstr(tc_last_error(), "more than 128 rules"));
}

/* The size of a call, by each collective's definition (independent of the
 * implementation's switch: the buffer a rank passes, in bytes). */
static void test_args_bytes(void **state)
{
    const int p = 6;
    const uint64_t count = 1000;
    (void)state;
    for (int c = 0; c < TC_COLL_COUNT; c++) {
        tc_algo_args_t a = {
            .coll = (tc_coll_t)c, .nranks = p, .rank = 1, .root = 0, .count = count};
        uint64_t want;
        switch ((tc_coll_t)c) {
        case TC_COLL_ALL_REDUCE: /* the vector */
        case TC_COLL_REDUCE:
        case TC_COLL_BROADCAST:
            want = count * 4;
            break;
        case TC_COLL_BARRIER:
            want = 0;
            break;
        default: /* the gathered / scattered buffer, all that is sent */
            want = count * 4 * p;
            break;
        }
        assert_true(tc_algo_args_bytes(&a, 4) == want);
    }
    const uint64_t counts[6] = {1, 2, 3, 4, 5, 100};
    tc_algo_args_t v = {.coll = TC_COLL_ALL_GATHER, .nranks = p, .root = -1, .counts = counts};
    assert_true(tc_algo_args_bytes(&v, 8) == 115 * 8);
}

static void test_rule_find(void **state)
{
    tc_algo_tuning_t t;
    tc_algo_args_t a = {
        .coll = TC_COLL_ALL_REDUCE, .nranks = 8, .root = -1, .count = 0, .ranks_per_node = 4};
    (void)state;
    parse_ruled(&t);
    static const struct {
        uint64_t bytes;
        const char *algo;
    } at[] = {{4, "recursive_doubling"}, {23168, "recursive_doubling"},
              {23172, "rabenseifner"},   {4194300, "rabenseifner"},
              {4194304, "ring"},         {1ull << 30, "ring"}};
    for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
        a.count = at[i].bytes / 4;
        const tc_algo_rule_t *r = tc_algo_rule_find(&t, &a, 4);
        assert_non_null(r);
        assert_string_equal(r->algo, at[i].algo);
    }
    /* below the first rule of a collective, no rule of it, another shape */
    tc_algo_args_t g = {
        .coll = TC_COLL_ALL_GATHER, .nranks = 8, .root = -1, .count = 1, .ranks_per_node = 4};
    assert_null(tc_algo_rule_find(&t, &g, 4)); /* 32 bytes < 64 */
    g.count = 2;
    assert_string_equal(tc_algo_rule_find(&t, &g, 4)->algo, "bruck");
    g.coll = TC_COLL_REDUCE;
    assert_null(tc_algo_rule_find(&t, &g, 4));
    a.count = 16;
    a.nranks = 7;
    assert_null(tc_algo_rule_find(&t, &a, 4));
    a.nranks = 8;
    a.ranks_per_node = 2; /* 4 nodes */
    assert_null(tc_algo_rule_find(&t, &a, 4));
    a.ranks_per_node = 0; /* one node */
    assert_null(tc_algo_rule_find(&t, &a, 4));
    a.ranks_per_node = 4;
    assert_non_null(tc_algo_rule_find(&t, &a, 4));
    t.nrules = 0;
    assert_null(tc_algo_rule_find(&t, &a, 4));
    assert_null(tc_algo_rule_find(NULL, &a, 4));
}

static int setup_dir(void **state)
{
    (void)state;
    return tmpdir_make("tc_rules_test");
}

static int teardown_dir(void **state)
{
    (void)state;
    return tmpdir_remove();
}

static const char *select_algo(const tc_algo_args_t *a)
{
    const char *name = NULL;
    assert_int_equal(tc_algo_select(a, 4, NULL, &name), TC_OK);
    assert_non_null(name);
    return name;
}

/* The rule's algorithm where the model picks another; the model where no rule
 * covers the call or its algorithm does not apply; TC_ALGO_RULES=0. */
static void test_selection(void **state)
{
    char path[128];
    FILE *f;
    (void)state;
    unsetenv("TC_ALGO_RULES");
    unsetenv("TC_ALGO_ALL_REDUCE");
    snprintf(path, sizeof(path), "%s/r.tune", tmpdir);
    /* rules that name, at each size, an algorithm the model does not pick */
    tc_algo_args_t a = {.coll = TC_COLL_ALL_REDUCE, .nranks = 8, .root = -1, .ranks_per_node = 4};
    const uint64_t sizes[] = {8, 65536, 64u << 20};
    const char *model[3], *other[3];
    static const char *const ar[] = {"ring", "rabenseifner", "recursive_doubling", "hierarchical"};
    unsetenv("TC_TUNING_FILE");
    for (int i = 0; i < 3; i++) {
        a.count = sizes[i] / 4;
        model[i] = select_algo(&a);
        other[i] = strcmp(model[i], ar[i]) != 0 ? ar[i] : ar[3];
    }
    assert_non_null(f = fopen(path, "w"));
    fprintf(f,
            "tcomms_tuning = 3\nranks = 8\nnodes = 2\nranks_per_node = 4\n"
            "rule_all_reduce = 0:%s 1024:%s 1048576:%s\n"
            "rule_all_gather = 0:recursive_doubling\n",
            other[0], other[1], other[2]);
    assert_int_equal(fclose(f), 0);
    setenv("TC_TUNING_FILE", path, 1);
    for (int i = 0; i < 3; i++) {
        a.count = sizes[i] / 4;
        assert_string_equal(select_algo(&a), other[i]);
    }
    /* TC_ALGO_RULES=0: the model alone; a malformed value: an error */
    setenv("TC_ALGO_RULES", "0", 1);
    for (int i = 0; i < 3; i++) {
        a.count = sizes[i] / 4;
        assert_string_equal(select_algo(&a), model[i]);
    }
    setenv("TC_ALGO_RULES", "maybe", 1);
    const char *name = NULL;
    assert_int_equal(tc_algo_select(&a, 4, NULL, &name), TC_ERR_CONFIG);
    assert_non_null(strstr(tc_last_error(), "TC_ALGO_RULES"));
    unsetenv("TC_ALGO_RULES");
    /* another shape: the model */
    a.ranks_per_node = 2;
    a.count = sizes[0] / 4;
    unsetenv("TC_TUNING_FILE");
    const char *model4 = select_algo(&a);
    setenv("TC_TUNING_FILE", path, 1);
    assert_string_equal(select_algo(&a), model4);
    /* the rule's algorithm does not apply (recursive doubling has no
     * v-variant): the model's choice among those that do */
    const uint64_t counts[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    tc_algo_args_t v = {
        .coll = TC_COLL_ALL_GATHER, .nranks = 8, .root = -1, .counts = counts, .ranks_per_node = 4};
    assert_string_not_equal(select_algo(&v), "recursive_doubling");
    v.counts = NULL;
    v.count = 4;
    assert_string_equal(select_algo(&v), "recursive_doubling");
    /* a hint and TC_ALGO_<COLL> still come first */
    a.ranks_per_node = 4;
    assert_int_equal(tc_algo_select(&a, 4, model[0], &name), TC_OK);
    assert_string_equal(name, model[0]);
    setenv("TC_ALGO_ALL_REDUCE", model[0], 1);
    assert_string_equal(select_algo(&a), model[0]);
    unsetenv("TC_ALGO_ALL_REDUCE");
    unsetenv("TC_TUNING_FILE");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),     cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_parse_bad), cmocka_unit_test(test_args_bytes),
        cmocka_unit_test(test_rule_find), cmocka_unit_test(test_selection),
    };
    return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
