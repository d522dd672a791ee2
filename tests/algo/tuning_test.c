/* The tuning file (parse, load, format, every refusal), the precedence of
 * default < file < variable in tc_algo_model_info(), selection under a file,
 * and the least-squares fit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcomms/algo/schedule.h"
#include "tcomms/algo/tuning.h"
#include "tcomms/base/status.h"
#include "tests/algo/tmpdir.h"

static const char good[] = "# measured by hand\n"
                           "\n"
                           "tcomms_tuning = 1\n"
                           "host = node0\n"
                           "date = 2026-12-02T07:30:00Z\n"
                           "tool = tc-tune 0.4.0\n"
                           "ranks = 4\n"
                           "nodes = 2\n"
                           "ranks_per_node = 2\n"
                           "  alpha_intra_us\t= 0.75  \r\n"
                           "alpha_inter_us = 12\n"
                           "beta_intra_us = 1.25e-4\n"
                           "beta_inter_us = 0.008\n"
                           "gamma_us = 2.5e-4"; /* no final newline */

static void test_parse_good(void **state)
{
    tc_algo_tuning_t t;
    (void)state;
    assert_int_equal(tc_algo_tuning_parse(good, strlen(good), "g.tune", &t), TC_OK);
    assert_int_equal(t.version, 1);
    assert_string_equal(t.host, "node0");
    assert_string_equal(t.date, "2026-12-02T07:30:00Z");
    assert_string_equal(t.tool, "tc-tune 0.4.0");
    assert_int_equal(t.ranks, 4);
    assert_int_equal(t.nodes, 2);
    assert_int_equal(t.ranks_per_node, 2);
    /* a version 1 file (before overhead_us) still reads: o absent */
    const double want[TC_ALGO_PARAM_COUNT] = {0.75, 12, 1.25e-4, 0.008, 2.5e-4, 0};
    for (int k = 0; k < TC_ALGO_PARAM_COUNT; k++) {
        assert_int_equal(t.has[k], k != TC_ALGO_PARAM_OVERHEAD);
        assert_true(t.value[k] == want[k]);
    }
    /* version 2 adds overhead_us */
    static const char v2[] = "tcomms_tuning = 2\nalpha_inter_us = 9\noverhead_us = 1.5\n";
    assert_int_equal(tc_algo_tuning_parse(v2, strlen(v2), "v2.tune", &t), TC_OK);
    assert_int_equal(t.version, 2);
    assert_int_equal(t.has[TC_ALGO_PARAM_OVERHEAD], 1);
    assert_true(t.value[TC_ALGO_PARAM_OVERHEAD] == 1.5);
    assert_true(t.value[TC_ALGO_PARAM_ALPHA_INTER] == 9);
    assert_int_equal(t.has[TC_ALGO_PARAM_GAMMA], 0);
    /* only the header: every parameter absent */
    assert_int_equal(tc_algo_tuning_parse("tcomms_tuning=1", 15, "h", &t), TC_OK);
    for (int k = 0; k < TC_ALGO_PARAM_COUNT; k++)
        assert_int_equal(t.has[k], 0);
}

static void test_round_trip(void **state)
{
    tc_algo_tuning_t a, b;
    char buf[2048];
    size_t len = 0;
    (void)state;
    memset(&a, 0, sizeof(a));
    a.version = 1;
    snprintf(a.host, sizeof(a.host), "%s", "node 7");
    snprintf(a.date, sizeof(a.date), "%s", "2026-12-02T08:00:00Z");
    a.ranks = 8;
    a.nodes = 1;
    a.ranks_per_node = 8;
    a.value[TC_ALGO_PARAM_ALPHA_INTRA] = 1.0 / 3.0;
    a.has[TC_ALGO_PARAM_ALPHA_INTRA] = 1;
    a.value[TC_ALGO_PARAM_BETA_INTRA] = 1.2345678901234567e-5;
    a.has[TC_ALGO_PARAM_BETA_INTRA] = 1;
    a.value[TC_ALGO_PARAM_GAMMA] = 0;
    a.has[TC_ALGO_PARAM_GAMMA] = 1;
    a.value[TC_ALGO_PARAM_OVERHEAD] = 0.1;
    a.has[TC_ALGO_PARAM_OVERHEAD] = 1;
    assert_int_equal(tc_algo_tuning_format(&a, buf, sizeof(buf), &len), TC_OK);
    assert_non_null(strstr(buf, "tcomms_tuning = 2\n"));
    assert_int_equal(len, strlen(buf));
    assert_int_equal(tc_algo_tuning_parse(buf, len, "rt", &b), TC_OK);
    assert_int_equal(b.version, 2); /* the oldest that holds it: no rules */
    assert_string_equal(b.host, a.host);
    assert_string_equal(b.date, a.date);
    assert_string_equal(b.tool, "");
    assert_int_equal(b.ranks, 8);
    assert_int_equal(b.nodes, 1);
    assert_int_equal(b.ranks_per_node, 8);
    for (int k = 0; k < TC_ALGO_PARAM_COUNT; k++) {
        assert_int_equal(b.has[k], a.has[k]);
        if (a.has[k])
            assert_memory_equal(&b.value[k], &a.value[k], sizeof(double)); /* bit for bit */
    }
    /* too small a buffer, values parse would refuse */
    assert_int_equal(tc_algo_tuning_format(&a, buf, 40, NULL), TC_ERR_NO_RESOURCE);
    a.value[TC_ALGO_PARAM_GAMMA] = -1;
    assert_int_equal(tc_algo_tuning_format(&a, buf, sizeof(buf), NULL), TC_ERR_INVALID_ARG);
    a.value[TC_ALGO_PARAM_GAMMA] = 0;
    a.host[2] = '\n';
    assert_int_equal(tc_algo_tuning_format(&a, buf, sizeof(buf), NULL), TC_ERR_INVALID_ARG);
}

/* Every refusal: the status and the words of the detail (file:line and key). */
static void test_parse_bad(void **state)
{
    static const struct {
        const char *text;
        const char *detail;
    } bad[] = {
        {"", "b.tune: no \"tcomms_tuning = 3\" line"},
        {"# only a comment\n\n", "b.tune: no \"tcomms_tuning = 3\" line"},
        {"alpha_intra_us = 1\ntcomms_tuning = 1\n", "b.tune:1: key \"alpha_intra_us\" before"},
        {"tcomms_tuning = 4\n", "b.tune:1: tcomms_tuning = 4: version not supported"},
        {"tcomms_tuning = 0\n", "b.tune:1: tcomms_tuning"},
        {"tcomms_tuning = 1\noverhead_us = 1\n",
         "b.tune:2: key \"overhead_us\" needs \"tcomms_tuning = 2\""},
        {"tcomms_tuning = 2\noverhead_us = -1\n", "b.tune:2: overhead_us=\"-1\": out of range"},
        {"tcomms_tuning = one\n", "b.tune:1: tcomms_tuning=\"one\""},
        {"tcomms_tuning = 1\ntcomms_tuning = 1\n",
         "b.tune:2: key \"tcomms_tuning\" given a second"},
        {"tcomms_tuning = 1\nalpha_intra_us 3\n", "b.tune:2: \"alpha_intra_us 3\" is not"},
        {"tcomms_tuning = 1\n= 3\n", "b.tune:2: no key before"},
        {"tcomms_tuning = 1\nAlpha = 3\n", "b.tune:2: key \"Alpha\": only a-z"},
        {"tcomms_tuning = 1\ngamma_us =\n", "b.tune:2: gamma_us: no value"},
        {"tcomms_tuning = 1\nalpha_intra = 3\n", "b.tune:2: unknown key \"alpha_intra\""},
        {"tcomms_tuning = 1\n\n\nbeta_inter_us = fast\n",
         "b.tune:4: beta_inter_us=\"fast\": not a"},
        {"tcomms_tuning = 1\nbeta_inter_us = -1e-5\n",
         "b.tune:2: beta_inter_us=\"-1e-5\": out of range"},
        {"tcomms_tuning = 1\ngamma_us = 2e9\n", "b.tune:2: gamma_us=\"2e9\": out of range"},
        {"tcomms_tuning = 1\ngamma_us = nan\n", "b.tune:2: gamma_us=\"nan\": not a finite"},
        {"tcomms_tuning = 1\ngamma_us = inf\n", "b.tune:2: gamma_us=\"inf\": not a finite"},
        {"tcomms_tuning = 1\ngamma_us = 1 2\n", "b.tune:2: gamma_us=\"1 2\""},
        {"tcomms_tuning = 1\ngamma_us = 1\ngamma_us = 1\n",
         "b.tune:3: key \"gamma_us\" given a second"},
        {"tcomms_tuning = 1\nranks = 0\n", "b.tune:2: ranks=\"0\": out of range"},
        {"tcomms_tuning = 1\nnodes = 1.5\n", "b.tune:2: nodes=\"1.5\""},
        {"tcomms_tuning = 1\nhost = a\x01"
         "b\n",
         "b.tune:2: host: control character 0x01"},
    };
    tc_algo_tuning_t t;
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        tc_status_t st = tc_algo_tuning_parse(bad[i].text, strlen(bad[i].text), "b.tune", &t);
        if (st != TC_ERR_CONFIG || strstr(tc_last_error(), bad[i].detail) == NULL)
            fail_msg("case %zu (%s): status %d, detail \"%s\", wanted \"%s\"", i, bad[i].text,
                     (int)st, tc_last_error(), bad[i].detail);
    }
    /* a NUL byte, a line too long, a text value too long */
    static const char nul[] = "tcomms_tuning = 1\nhost = a\0b\n";
    assert_int_equal(tc_algo_tuning_parse(nul, sizeof(nul) - 1, "b.tune", &t), TC_ERR_CONFIG);
    assert_non_null(strstr(tc_last_error(), "b.tune:2: a NUL byte"));
    char longline[1200];
    int n = snprintf(longline, sizeof(longline), "tcomms_tuning = 1\nhost = ");
    memset(longline + n, 'x', sizeof(longline) - (size_t)n - 1);
    longline[sizeof(longline) - 1] = '\0';
    assert_int_equal(tc_algo_tuning_parse(longline, strlen(longline), "b.tune", &t), TC_ERR_CONFIG);
    assert_non_null(strstr(tc_last_error(), "b.tune:2: a line of"));
    longline[n + 200] = '\0';
    assert_int_equal(tc_algo_tuning_parse(longline, strlen(longline), "b.tune", &t), TC_ERR_CONFIG);
    assert_non_null(strstr(tc_last_error(), "b.tune:2: host: a value of 200 bytes"));
    assert_int_equal(tc_algo_tuning_parse("x", 1, "b", NULL), TC_ERR_INVALID_ARG);
    /* even with no bytes: it once read as a file without its header line
     * (found by an independent checker) */
    assert_int_equal(tc_algo_tuning_parse(NULL, 0, "b", &t), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "tc_algo_tuning_parse: NULL text"));
}

static int setup_dir(void **state)
{
    (void)state;
    return tmpdir_make("tc_tuning_test");
}

static int teardown_dir(void **state)
{
    (void)state;
    return tmpdir_remove();
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

static void clear_env(void)
{
    for (int k = 0; k < TC_ALGO_PARAM_COUNT; k++)
        unsetenv(tc_algo_param_env((tc_algo_param_t)k));
    unsetenv("TC_TUNING_FILE");
    unsetenv("TC_ALGO_ALL_REDUCE");
}

static void test_load_errors(void **state)
{
    char path[128];
    tc_algo_tuning_t t;
    (void)state;
    snprintf(path, sizeof(path), "%s/missing.tune", tmpdir);
    assert_int_equal(tc_algo_tuning_load(path, &t), TC_ERR_CONFIG);
    assert_non_null(strstr(tc_last_error(), path));
    assert_non_null(strstr(tc_last_error(), "No such file"));
    assert_int_equal(tc_algo_tuning_load(tmpdir, &t), TC_ERR_CONFIG);
    assert_non_null(strstr(tc_last_error(), "not a regular file"));
    /* a FIFO without a writer: refused at once (opening it waited forever) */
    snprintf(path, sizeof(path), "%s/fifo.tune", tmpdir);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(tc_algo_tuning_load(path, &t), TC_ERR_CONFIG);
    assert_non_null(strstr(tc_last_error(), "not a regular file"));
    unlink(path);
    snprintf(path, sizeof(path), "%s/big.tune", tmpdir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int i = 0; i < 70 * 1024 / 16; i++)
        fputs("# padding line.\n", f);
    fclose(f);
    assert_int_equal(tc_algo_tuning_load(path, &t), TC_ERR_CONFIG);
    assert_non_null(strstr(tc_last_error(), "larger than 64 KiB"));
    snprintf(path, sizeof(path), "%s/good.tune", tmpdir);
    write_file(path, good);
    assert_int_equal(tc_algo_tuning_load(path, &t), TC_OK);
    assert_true(t.value[TC_ALGO_PARAM_ALPHA_INTER] == 12);
}

/* default < file < variable, and the source of each. */
static void test_precedence(void **state)
{
    char path[128];
    tc_algo_model_info_t in;
    tc_algo_model_t m;
    (void)state;
    clear_env();
    assert_int_equal(tc_algo_model_info(&in), TC_OK);
    assert_string_equal(in.file, "");
    for (int k = 0; k < TC_ALGO_PARAM_COUNT; k++)
        assert_int_equal(in.source[k], TC_ALGO_SRC_DEFAULT);
    assert_true(in.model.alpha_us[0] == tc_algo_param_default(TC_ALGO_PARAM_ALPHA_INTRA));
    assert_true(in.model.gamma_us == tc_algo_param_default(TC_ALGO_PARAM_GAMMA));

    snprintf(path, sizeof(path), "%s/p.tune", tmpdir);
    write_file(path, "tcomms_tuning = 1\nalpha_intra_us = 7\ngamma_us = 0.125\n");
    setenv("TC_TUNING_FILE", path, 1);
    setenv("TC_ALGO_GAMMA_US", "0.5", 1);
    assert_int_equal(tc_algo_model_info(&in), TC_OK);
    assert_string_equal(in.file, path);
    assert_true(in.model.alpha_us[0] == 7);
    assert_int_equal(in.source[TC_ALGO_PARAM_ALPHA_INTRA], TC_ALGO_SRC_FILE);
    assert_true(in.model.gamma_us == 0.5);
    assert_int_equal(in.source[TC_ALGO_PARAM_GAMMA], TC_ALGO_SRC_ENV);
    assert_true(in.model.alpha_us[1] == tc_algo_param_default(TC_ALGO_PARAM_ALPHA_INTER));
    assert_int_equal(in.source[TC_ALGO_PARAM_ALPHA_INTER], TC_ALGO_SRC_DEFAULT);
    assert_true(in.model.beta_us[0] == tc_algo_param_default(TC_ALGO_PARAM_BETA_INTRA));
    assert_true(in.model.beta_us[1] == tc_algo_param_default(TC_ALGO_PARAM_BETA_INTER));
    assert_true(in.tuning.value[TC_ALGO_PARAM_GAMMA] == 0.125); /* the file's, shown apart */

    /* a malformed variable still fails, with the file present */
    setenv("TC_ALGO_GAMMA_US", "x", 1);
    assert_int_equal(tc_algo_model_get(&m), TC_ERR_CONFIG);
    assert_non_null(strstr(tc_last_error(), "TC_ALGO_GAMMA_US"));
    unsetenv("TC_ALGO_GAMMA_US");

    /* the file rewritten (another size): read again */
    write_file(path, "tcomms_tuning = 1\nalpha_intra_us = 70.5\n");
    assert_int_equal(tc_algo_model_get(&m), TC_OK);
    assert_true(m.alpha_us[0] == 70.5);
    assert_true(m.gamma_us == tc_algo_param_default(TC_ALGO_PARAM_GAMMA));

    /* a bad file: the model and the selection fail, naming file, line and key */
    write_file(path, "tcomms_tuning = 1\n\nbeta_intra_us = 1e12\n");
    assert_int_equal(tc_algo_model_get(&m), TC_ERR_CONFIG);
    assert_non_null(strstr(tc_last_error(), "TC_TUNING_FILE"));
    char where[160];
    snprintf(where, sizeof(where), "%s:3: beta_intra_us", path);
    assert_non_null(strstr(tc_last_error(), where));
    tc_algo_args_t a = {
        .coll = TC_COLL_ALL_REDUCE, .nranks = 4, .rank = 0, .root = -1, .count = 1024};
    const char *name = NULL;
    assert_int_equal(tc_algo_select(&a, 4, NULL, &name), TC_ERR_CONFIG);
    assert_null(name);
    /* a missing file */
    snprintf(path, sizeof(path), "%s/none.tune", tmpdir);
    setenv("TC_TUNING_FILE", path, 1);
    assert_int_equal(tc_algo_model_get(&m), TC_ERR_CONFIG);
    assert_non_null(strstr(tc_last_error(), path));
    clear_env();
}

/* A file that makes messages dear and bytes free picks the algorithm with the
 * fewest rounds; without it the default model picks another. */
static void test_selection_uses_file(void **state)
{
    char path[128];
    const char *def = NULL, *tuned = NULL;
    tc_algo_args_t a = {
        .coll = TC_COLL_ALL_REDUCE, .nranks = 8, .rank = 0, .root = -1, .count = 1u << 22};
    (void)state;
    clear_env();
    assert_int_equal(tc_algo_select(&a, 4, NULL, &def), TC_OK);
    snprintf(path, sizeof(path), "%s/sel.tune", tmpdir);
    write_file(path, "tcomms_tuning = 1\nalpha_intra_us = 1e6\nbeta_intra_us = 0\n"
                     "gamma_us = 0\n");
    setenv("TC_TUNING_FILE", path, 1);
    assert_int_equal(tc_algo_select(&a, 4, NULL, &tuned), TC_OK);
    assert_string_not_equal(def, tuned);
    /* the fewest rounds among the modelled algorithms that apply */
    size_t n;
    const tc_algo_desc_t *t = tc_algo_table(&n);
    double best = -1, got = -1;
    for (size_t i = 0; i < n; i++) {
        tc_algo_cost_t c;
        if (t[i].coll != a.coll || t[i].cost == NULL || (t[i].applies && t[i].applies(&a)))
            continue;
        memset(&c, 0, sizeof(c));
        t[i].cost(&a, &c);
        if (best < 0 || c.rounds < best)
            best = c.rounds;
        if (strcmp(t[i].name, tuned) == 0)
            got = c.rounds;
    }
    assert_true(got == best);
    clear_env();
}

static void test_fit(void **state)
{
    double x[12], t[12], a, b;
    size_t n = 0;
    (void)state;
    for (double s = 8; s <= 4 * 1024 * 1024; s *= 4)
        x[n++] = s;
    /* exact line: recovered to rounding */
    for (size_t i = 0; i < n; i++)
        t[i] = 2.5 + 1e-4 * x[i];
    assert_int_equal(tc_algo_fit_line(x, t, n, &a, &b), TC_OK);
    assert_true(a > 2.5 * (1 - 1e-9) && a < 2.5 * (1 + 1e-9));
    assert_true(b > 1e-4 * (1 - 1e-9) && b < 1e-4 * (1 + 1e-9));
    /* +-3% noise, alternating: within 5% (alpha) and 8% (beta: from the largest sizes) */
    for (size_t i = 0; i < n; i++)
        t[i] = (2.5 + 1e-4 * x[i]) * (i % 2 ? 1.03 : 0.97);
    assert_int_equal(tc_algo_fit_line(x, t, n, &a, &b), TC_OK);
    assert_true(a > 2.5 * 0.95 && a < 2.5 * 1.05);
    assert_true(b > 1e-4 * 0.92 && b < 1e-4 * 1.08);
    /* a link shaped by a token bucket (tbf, 1 Gbit/s, 1.25 MB burst; measured by
     * tc-tune between two emulated nodes): messages up to 32 KiB pass at line
     * rate, large ones at 1 Gbit/s (0.008 us/B). beta is the large messages'
     * rate, alpha the small ones' latency (about 10 us). */
    static const double tx[12] = {8,     32,     128,    512,     2048,    8192,
                                  32768, 131072, 524288, 2097152, 8388608, 16777216};
    static const double tt[12] = {11.014, 10.776,  9.942,    10.796,   9.592,     10.430,
                                  31.264, 543.420, 2215.651, 9062.590, 60798.232, 130769.837};
    assert_int_equal(tc_algo_fit_line(tx, tt, 12, &a, &b), TC_OK);
    assert_true(b > 0.0072 && b < 0.0088);
    assert_true(a > 9 && a < 12);
    /* a negative intercept is clamped at 0; the slope stays */
    double x2[3] = {1000, 2000, 3000}, t2[3] = {9, 19, 29};
    assert_int_equal(tc_algo_fit_line(x2, t2, 3, &a, &b), TC_OK);
    assert_true(a == 0);
    assert_true(b > 0.0099 && b < 0.0101);
    /* a falling slope is clamped: a constant, the times' weighted mean */
    double t3[3] = {30, 20, 10};
    assert_int_equal(tc_algo_fit_line(x2, t3, 3, &a, &b), TC_OK);
    assert_true(b == 0);
    assert_true(a > 10 && a < 30);
    /* refusals */
    double same[3] = {64, 64, 64};
    assert_int_equal(tc_algo_fit_line(same, t2, 3, &a, &b), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_algo_fit_line(x2, t2, 1, &a, &b), TC_ERR_INVALID_ARG);
    t3[1] = 0;
    assert_int_equal(tc_algo_fit_line(x2, t3, 3, &a, &b), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "point 1"));
    assert_int_equal(tc_algo_fit_line(NULL, t2, 3, &a, &b), TC_ERR_INVALID_ARG);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(tc_algo_param_key(TC_ALGO_PARAM_BETA_INTER), "beta_inter_us");
    assert_string_equal(tc_algo_param_env(TC_ALGO_PARAM_GAMMA), "TC_ALGO_GAMMA_US");
    assert_null(tc_algo_param_key(TC_ALGO_PARAM_COUNT));
    assert_string_equal(tc_algo_param_src_name(TC_ALGO_SRC_FILE), "file");
    assert_string_equal(tc_algo_param_src_name(TC_ALGO_SRC_ENV), "env");
    assert_string_equal(tc_algo_param_src_name(TC_ALGO_SRC_DEFAULT), "default");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_good), cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_parse_bad),  cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_precedence), cmocka_unit_test(test_selection_uses_file),
        cmocka_unit_test(test_fit),        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
