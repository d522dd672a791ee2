/* Typed configuration: value parsing, TC_* environment variables and hints. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/base/config.h"

#define SENTINEL_I 0x5a5a5a5a
#define SENTINEL_U 0xa5a5a5a5a5a5a5a5ull

/* ---- tc_parse_int ---- */

static void test_parse_int_valid(void **state)
{
    static const struct {
        const char *text;
        int64_t value;
    } ok[] = {
        {"0", 0},
        {"7", 7},
        {"+7", 7},
        {"-5", -5},
        {"000123", 123},
        {"9223372036854775807", INT64_MAX},
        {"-9223372036854775808", INT64_MIN},
    };
    int64_t v;

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        v = SENTINEL_I;
        assert_int_equal(tc_parse_int("X", ok[i].text, INT64_MIN, INT64_MAX, &v), TC_OK);
        assert_true(v == ok[i].value);
    }
    /* bounds are inclusive */
    assert_int_equal(tc_parse_int("X", "1", 1, 86400, &v), TC_OK);
    assert_true(v == 1);
    assert_int_equal(tc_parse_int("X", "86400", 1, 86400, &v), TC_OK);
    assert_true(v == 86400);
}

static void test_parse_int_malformed(void **state)
{
    static const char *const bad[] = {"",  "abc",  "12abc", " 12", "12 ", "1.5", "-",
                                      "+", "0x10", "1e3",   "--1", "+-1", "١٢"};
    char want[256];
    int64_t v;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        v = SENTINEL_I;
        assert_int_equal(tc_parse_int("TC_TIMEOUT_S", bad[i], 1, 86400, &v), TC_ERR_CONFIG);
        assert_true(v == SENTINEL_I);
        snprintf(want, sizeof(want),
                 "TC_TIMEOUT_S=\"%s\": not an integer (accepted: integers in [1, 86400])", bad[i]);
        assert_string_equal(tc_last_error(), want);
    }
    assert_int_equal(tc_parse_int("TC_X", NULL, 0, 1, &v), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_parse_int("TC_X", "1", 0, 1, NULL), TC_ERR_INVALID_ARG);
}

static void test_parse_int_range_overflow(void **state)
{
    static const char *const big[] = {"9223372036854775808", "-9223372036854775809",
                                      "99999999999999999999999999"};
    int64_t v = SENTINEL_I;

    assert_int_equal(tc_parse_int("TC_TIMEOUT_S", "0", 1, 86400, &v), TC_ERR_CONFIG);
    assert_string_equal(tc_last_error(),
                        "TC_TIMEOUT_S=\"0\": out of range (accepted: integers in [1, 86400])");
    assert_int_equal(tc_parse_int("TC_TIMEOUT_S", "86401", 1, 86400, &v), TC_ERR_CONFIG);
    assert_int_equal(tc_parse_int("TC_TIMEOUT_S", "-1", 1, 86400, &v), TC_ERR_CONFIG);
    assert_true(v == SENTINEL_I);
    for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
        assert_int_equal(tc_parse_int("TC_BIG", big[i], INT64_MIN, INT64_MAX, &v), TC_ERR_CONFIG);
        assert_true(v == SENTINEL_I);
        assert_non_null(strstr(tc_last_error(), "out of range"));
        assert_non_null(strstr(tc_last_error(), big[i]));
    }
}

/* A long value is echoed by its first TC_ECHO_MAX bytes and "...", so what the detail says
 * after it stays in it (a 10 KB value filled the 2 KB detail, the accepted values cut off). */
static void check_echoed_short(tc_status_t st, const char *head, const char *tail)
{
    assert_int_equal(st, TC_ERR_CONFIG);
    const char *e = tc_last_error();
    assert_true(strlen(e) < 400);
    assert_non_null(strstr(e, head));
    assert_non_null(strstr(e, "...\""));
    assert_non_null(strstr(e, tail));
}

static void test_long_values_echoed_short(void **state)
{
    (void)state;
    static char big[10000], head[TC_ECHO_MAX + 16];
    static const char *const choices[] = {"ring", "tree", NULL};
    memset(big, '7', sizeof(big) - 1);
    snprintf(head, sizeof(head), "TC_X=\"%.*s...\"", TC_ECHO_MAX, big);
    int64_t v;
    uint64_t u;
    bool b;
    double d;
    int e;
    check_echoed_short(tc_parse_int("TC_X", big, 0, 10, &v), head,
                       "(accepted: integers in [0, 10])");
    check_echoed_short(tc_parse_size("TC_X", big, &u), head, "too large (accepted: ");
    check_echoed_short(tc_parse_bool("TC_X", big, &b), head, "not a boolean (accepted: ");
    check_echoed_short(tc_parse_double("TC_X", big, 0, 1, &d), head,
                       "(accepted: numbers in [0, 1])");
    check_echoed_short(tc_parse_enum("TC_X", big, choices, &e), head, "(accepted: ring, tree)");
    tc_hints_t h;
    tc_hints_init(&h);
    check_echoed_short(tc_hints_parse(&h, big), "hints \"777", "\" is not key=value");
    tc_hints_free(&h);
    /* a short value is echoed whole, without "..." */
    assert_int_equal(tc_parse_int("TC_X", "77", 0, 10, &v), TC_ERR_CONFIG);
    assert_string_equal(tc_last_error(),
                        "TC_X=\"77\": out of range (accepted: integers in [0, 10])");
}

/* ---- tc_parse_size ---- */

static void test_parse_size_valid(void **state)
{
    static const struct {
        const char *text;
        uint64_t value;
    } ok[] = {
        {"0", 0},
        {"123", 123},
        {"5B", 5},
        {"4K", 4096},
        {"4k", 4096},
        {"4KB", 4096},
        {"4KiB", 4096},
        {"4kib", 4096},
        {"2M", 2ull << 20},
        {"2MiB", 2ull << 20},
        {"3G", 3ull << 30},
        {"1T", 1ull << 40},
        {"16777215T", 16777215ull << 40},
        {"18446744073709551615", UINT64_MAX},
        {"17179869183G", 17179869183ull << 30},
    };
    uint64_t v;

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        v = SENTINEL_U;
        assert_int_equal(tc_parse_size("X", ok[i].text, &v), TC_OK);
        assert_true(v == ok[i].value);
    }
}

static void test_parse_size_malformed(void **state)
{
    static const char *const bad[] = {"",    "K",    "12Q", "-1",  "+1",   " 1", "1 ",  "1 K",
                                      "1KK", "1.5M", "1Ki", "1iB", "0x10", "1P", "1KBB"};
    static const char *const big[] = {"18446744073709551616", "16777216T", "17179869184G",
                                      "99999999999999999999999"};
    char want[256];
    uint64_t v;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        v = SENTINEL_U;
        assert_int_equal(tc_parse_size("hint 'chunk'", bad[i], &v), TC_ERR_CONFIG);
        assert_true(v == SENTINEL_U);
        snprintf(want, sizeof(want),
                 "hint 'chunk'=\"%s\": not a size (accepted: digits with optional K, M, G, T "
                 "suffix)",
                 bad[i]);
        assert_string_equal(tc_last_error(), want);
    }
    for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
        v = SENTINEL_U;
        assert_int_equal(tc_parse_size("TC_BUF", big[i], &v), TC_ERR_CONFIG);
        assert_true(v == SENTINEL_U);
        assert_non_null(strstr(tc_last_error(), "too large"));
        assert_non_null(strstr(tc_last_error(), big[i]));
    }
    assert_int_equal(tc_parse_size("X", NULL, &v), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_parse_size("X", "1", NULL), TC_ERR_INVALID_ARG);
}

/* ---- bool, double, enum ---- */

static void test_parse_bool(void **state)
{
    static const char *const yes[] = {"1", "true", "TRUE", "True", "yes", "YES", "on", "On"};
    static const char *const no[] = {"0", "false", "FALSE", "no", "No", "off", "OFF"};
    static const char *const bad[] = {"", "2", "yess", "tru", "enable", " 1", "0 "};
    bool v;

    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        v = false;
        assert_int_equal(tc_parse_bool("X", yes[i], &v), TC_OK);
        assert_true(v);
    }
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
        v = true;
        assert_int_equal(tc_parse_bool("X", no[i], &v), TC_OK);
        assert_false(v);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char want[200];
        v = true;
        assert_int_equal(tc_parse_bool("TC_FLAG", bad[i], &v), TC_ERR_CONFIG);
        assert_true(v);
        snprintf(want, sizeof(want),
                 "TC_FLAG=\"%s\": not a boolean (accepted: 1, 0, true, false, yes, no, on, off)",
                 bad[i]);
        assert_string_equal(tc_last_error(), want);
    }
    assert_int_equal(tc_parse_bool("X", NULL, &v), TC_ERR_INVALID_ARG);
}

static void test_parse_double(void **state)
{
    static const char *const bad[] = {"",   "abc",   "1.5x", "nan",   "inf", "-inf",
                                      " 1", "1e999", "0x10", "0x1p4", "1 "};
    double v;

    assert_int_equal(tc_parse_double("X", "1.5", 0, 10, &v), TC_OK);
    assert_true(v == 1.5);
    assert_int_equal(tc_parse_double("X", "-2", -5, 5, &v), TC_OK);
    assert_true(v == -2.0);
    assert_int_equal(tc_parse_double("X", "1e3", 0, 1e6, &v), TC_OK);
    assert_true(v == 1000.0);
    assert_int_equal(tc_parse_double("X", "0", 0, 1, &v), TC_OK);
    assert_true(v == 0.0);
    assert_int_equal(tc_parse_double("X", "1", 0, 1, &v), TC_OK);
    assert_true(v == 1.0);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        v = 42.0;
        assert_int_equal(tc_parse_double("TC_RATIO", bad[i], -1e9, 1e9, &v), TC_ERR_CONFIG);
        assert_true(v == 42.0);
        assert_non_null(strstr(tc_last_error(), "TC_RATIO=\""));
        assert_non_null(strstr(tc_last_error(), "accepted: numbers in [-1e+09, 1e+09]"));
    }
    assert_int_equal(tc_parse_double("TC_RATIO", "1.5", 0, 1, &v), TC_ERR_CONFIG);
    assert_string_equal(tc_last_error(),
                        "TC_RATIO=\"1.5\": out of range (accepted: numbers in [0, 1])");
    assert_true(v == 42.0);
    assert_int_equal(tc_parse_double("X", NULL, 0, 1, &v), TC_ERR_INVALID_ARG);
}

static const char *const algos[] = {"ring", "tree", NULL};

static void test_parse_enum(void **state)
{
    static const char *const none[] = {NULL};
    int v;

    assert_int_equal(tc_parse_enum("TC_ALGO", "ring", algos, &v), TC_OK);
    assert_int_equal(v, 0);
    assert_int_equal(tc_parse_enum("TC_ALGO", "TREE", algos, &v), TC_OK);
    assert_int_equal(v, 1);
    v = 7;
    assert_int_equal(tc_parse_enum("TC_ALGO", "foo", algos, &v), TC_ERR_CONFIG);
    assert_int_equal(v, 7);
    assert_string_equal(tc_last_error(), "TC_ALGO=\"foo\": unknown value (accepted: ring, tree)");
    assert_int_equal(tc_parse_enum("TC_ALGO", "", algos, &v), TC_ERR_CONFIG);
    assert_int_equal(tc_parse_enum("TC_ALGO", "ring ", algos, &v), TC_ERR_CONFIG);
    assert_int_equal(tc_parse_enum("TC_ALGO", "x", none, &v), TC_ERR_CONFIG);
    assert_string_equal(tc_last_error(), "TC_ALGO=\"x\": unknown value (accepted: )");
    assert_int_equal(v, 7);
    assert_int_equal(tc_parse_enum("TC_ALGO", NULL, algos, &v), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_parse_enum("TC_ALGO", "ring", NULL, &v), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_parse_enum("TC_ALGO", "ring", algos, NULL), TC_ERR_INVALID_ARG);
}

/* ---- environment ---- */

static void test_config_env(void **state)
{
    int64_t i;
    uint64_t s;
    bool b;
    double d;
    int e;

    unsetenv("TC_TEST_INT");
    assert_int_equal(tc_config_int("TC_TEST_INT", 42, 1, 100, &i), TC_OK);
    assert_true(i == 42);
    setenv("TC_TEST_INT", "17", 1);
    assert_int_equal(tc_config_int("TC_TEST_INT", 42, 1, 100, &i), TC_OK);
    assert_true(i == 17);
    i = SENTINEL_I;
    setenv("TC_TEST_INT", "", 1);
    assert_int_equal(tc_config_int("TC_TEST_INT", 42, 1, 100, &i), TC_ERR_CONFIG);
    assert_string_equal(tc_last_error(),
                        "TC_TEST_INT=\"\": not an integer (accepted: integers in [1, 100])");
    setenv("TC_TEST_INT", "abc", 1);
    assert_int_equal(tc_config_int("TC_TEST_INT", 42, 1, 100, &i), TC_ERR_CONFIG);
    setenv("TC_TEST_INT", "101", 1);
    assert_int_equal(tc_config_int("TC_TEST_INT", 42, 1, 100, &i), TC_ERR_CONFIG);
    setenv("TC_TEST_INT", "99999999999999999999", 1);
    assert_int_equal(tc_config_int("TC_TEST_INT", 42, INT64_MIN, INT64_MAX, &i), TC_ERR_CONFIG);
    assert_true(i == SENTINEL_I);
    unsetenv("TC_TEST_INT");

    unsetenv("TC_TEST_SIZE");
    assert_int_equal(tc_config_size("TC_TEST_SIZE", 1 << 20, &s), TC_OK);
    assert_true(s == 1 << 20);
    setenv("TC_TEST_SIZE", "64K", 1);
    assert_int_equal(tc_config_size("TC_TEST_SIZE", 1 << 20, &s), TC_OK);
    assert_true(s == 65536);
    s = SENTINEL_U;
    setenv("TC_TEST_SIZE", "64X", 1);
    assert_int_equal(tc_config_size("TC_TEST_SIZE", 1 << 20, &s), TC_ERR_CONFIG);
    assert_non_null(strstr(tc_last_error(), "TC_TEST_SIZE=\"64X\": not a size"));
    setenv("TC_TEST_SIZE", "", 1);
    assert_int_equal(tc_config_size("TC_TEST_SIZE", 1 << 20, &s), TC_ERR_CONFIG);
    setenv("TC_TEST_SIZE", "20000000T", 1);
    assert_int_equal(tc_config_size("TC_TEST_SIZE", 1 << 20, &s), TC_ERR_CONFIG);
    assert_non_null(strstr(tc_last_error(), "too large"));
    assert_true(s == SENTINEL_U);
    unsetenv("TC_TEST_SIZE");

    unsetenv("TC_TEST_BOOL");
    b = false;
    assert_int_equal(tc_config_bool("TC_TEST_BOOL", true, &b), TC_OK);
    assert_true(b);
    setenv("TC_TEST_BOOL", "off", 1);
    assert_int_equal(tc_config_bool("TC_TEST_BOOL", true, &b), TC_OK);
    assert_false(b);
    setenv("TC_TEST_BOOL", "maybe", 1);
    assert_int_equal(tc_config_bool("TC_TEST_BOOL", true, &b), TC_ERR_CONFIG);
    assert_non_null(strstr(tc_last_error(), "TC_TEST_BOOL=\"maybe\": not a boolean"));
    assert_false(b);
    unsetenv("TC_TEST_BOOL");

    unsetenv("TC_TEST_DBL");
    assert_int_equal(tc_config_double("TC_TEST_DBL", 0.5, 0, 1, &d), TC_OK);
    assert_true(d == 0.5);
    setenv("TC_TEST_DBL", "0.25", 1);
    assert_int_equal(tc_config_double("TC_TEST_DBL", 0.5, 0, 1, &d), TC_OK);
    assert_true(d == 0.25);
    setenv("TC_TEST_DBL", "2", 1);
    assert_int_equal(tc_config_double("TC_TEST_DBL", 0.5, 0, 1, &d), TC_ERR_CONFIG);
    assert_true(d == 0.25);
    unsetenv("TC_TEST_DBL");

    unsetenv("TC_ALGO");
    assert_int_equal(tc_config_enum("TC_ALGO", algos, 1, &e), TC_OK);
    assert_int_equal(e, 1);
    setenv("TC_ALGO", "Ring", 1);
    assert_int_equal(tc_config_enum("TC_ALGO", algos, 1, &e), TC_OK);
    assert_int_equal(e, 0);
    setenv("TC_ALGO", "foo", 1);
    assert_int_equal(tc_config_enum("TC_ALGO", algos, 1, &e), TC_ERR_CONFIG);
    assert_string_equal(tc_last_error(), "TC_ALGO=\"foo\": unknown value (accepted: ring, tree)");
    assert_int_equal(e, 0);
    unsetenv("TC_ALGO");

    unsetenv("TC_TEST_STR");
    assert_string_equal(tc_config_string("TC_TEST_STR", "dflt"), "dflt");
    assert_null(tc_config_string("TC_TEST_STR", NULL));
    setenv("TC_TEST_STR", "", 1);
    assert_string_equal(tc_config_string("TC_TEST_STR", "dflt"), "");
    setenv("TC_TEST_STR", "v", 1);
    assert_string_equal(tc_config_string("TC_TEST_STR", "dflt"), "v");
    unsetenv("TC_TEST_STR");

    assert_int_equal(tc_config_int(NULL, 1, 0, 2, &i), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_config_int("TC_TEST_INT", 1, 0, 2, NULL), TC_ERR_INVALID_ARG);
}

/* ---- hints ---- */

static void assert_hints_equal(const tc_hints_t *h, const char *const *kv, int n)
{
    assert_int_equal(h->count, n);
    for (int i = 0; i < n; i++) {
        const char *v = tc_hints_get(h, kv[2 * i]);
        assert_non_null(v);
        assert_string_equal(v, kv[2 * i + 1]);
    }
}

static void test_hints_set_get(void **state)
{
    tc_hints_t h;

    tc_hints_init(&h);
    assert_int_equal(h.count, 0);
    assert_null(tc_hints_get(&h, "a"));
    assert_int_equal(tc_hints_set(&h, "algo", "ring"), TC_OK);
    assert_int_equal(tc_hints_set(&h, "chunk.size-x_1", "64K"), TC_OK);
    assert_string_equal(tc_hints_get(&h, "algo"), "ring");
    assert_int_equal(tc_hints_set(&h, "algo", "tree"), TC_OK);
    assert_int_equal(h.count, 2);
    assert_string_equal(tc_hints_get(&h, "algo"), "tree");
    assert_string_equal(tc_hints_get(&h, "chunk.size-x_1"), "64K");
    assert_null(tc_hints_get(&h, "ALGO"));
    assert_int_equal(tc_hints_set(&h, "empty", ""), TC_OK);
    assert_string_equal(tc_hints_get(&h, "empty"), "");

    assert_int_equal(tc_hints_set(&h, "", "x"), TC_ERR_CONFIG);
    assert_int_equal(tc_hints_set(&h, "a b", "x"), TC_ERR_CONFIG);
    assert_non_null(strstr(tc_last_error(), "\"a b\""));
    assert_int_equal(tc_hints_set(&h, "k=v", "x"), TC_ERR_CONFIG);
    assert_int_equal(tc_hints_set(&h, NULL, "x"), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_hints_set(&h, "k", NULL), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_hints_set(NULL, "k", "v"), TC_ERR_INVALID_ARG);
    assert_int_equal(h.count, 3);
    assert_null(tc_hints_get(NULL, "algo"));
    assert_null(tc_hints_get(&h, NULL));
    tc_hints_free(&h);
    assert_int_equal(h.count, 0);
    assert_null(tc_hints_get(&h, "algo"));
    tc_hints_free(&h); /* twice is fine */
}

static void test_hints_full(void **state)
{
    tc_hints_t h;
    char key[16];

    tc_hints_init(&h);
    for (int i = 0; i < TC_HINTS_MAX; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        assert_int_equal(tc_hints_set(&h, key, "v"), TC_OK);
    }
    assert_int_equal(tc_hints_set(&h, "one_more", "v"), TC_ERR_NO_RESOURCE);
    assert_non_null(strstr(tc_last_error(), "one_more"));
    assert_int_equal(h.count, TC_HINTS_MAX);
    /* Replacing still works on a full set. */
    assert_int_equal(tc_hints_set(&h, "k5", "new"), TC_OK);
    assert_string_equal(tc_hints_get(&h, "k5"), "new");
    /* A parse that would overflow leaves the set unchanged. */
    assert_int_not_equal(tc_hints_parse(&h, "k1=changed,extra=1"), TC_OK);
    assert_string_equal(tc_hints_get(&h, "k1"), "v");
    assert_null(tc_hints_get(&h, "extra"));
    tc_hints_free(&h);
}

static void test_hints_parse(void **state)
{
    static const char *const want1[] = {"a", "1", "b", "2", "c.d-e_f", "x y"};
    static const char *const want2[] = {"a", "9", "b", "2", "c.d-e_f", "x y", "z", ""};
    static const char *const bad[] = {"novalue", "a=1,novalue", "=5",          "a b=1",
                                      "a=1,=2",  "k!=1",        "a=1, b c = 2"};
    tc_hints_t h;

    tc_hints_init(&h);
    assert_int_equal(tc_hints_parse(&h, "a=1, b = 2 ,  c.d-e_f=x y  "), TC_OK);
    assert_hints_equal(&h, want1, 3);
    assert_int_equal(tc_hints_parse(&h, ""), TC_OK);
    assert_int_equal(tc_hints_parse(&h, " , ,"), TC_OK);
    assert_hints_equal(&h, want1, 3);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(tc_hints_parse(&h, bad[i]), TC_ERR_CONFIG);
        assert_non_null(strstr(tc_last_error(), bad[i]));
        assert_hints_equal(&h, want1, 3);
    }
    assert_int_equal(tc_hints_parse(&h, "a=1,novalue"), TC_ERR_CONFIG);
    assert_string_equal(tc_last_error(),
                        "hints \"a=1,novalue\": item \"novalue\" is not key=value");
    /* a key twice in one text is refused (which was meant?); keys of the set are replaced */
    assert_int_equal(tc_hints_parse(&h, "a=5,z=,a=9"), TC_ERR_CONFIG);
    assert_string_equal(tc_last_error(), "hints \"a=5,z=,a=9\": key \"a\" is given twice");
    assert_hints_equal(&h, want1, 3);
    assert_int_equal(tc_hints_parse(&h, "a = 1, a=2"), TC_ERR_CONFIG);
    assert_int_equal(tc_hints_parse(&h, "z=,a=9"), TC_OK);
    assert_hints_equal(&h, want2, 4);
    assert_int_equal(tc_hints_parse(NULL, "a=1"), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_hints_parse(&h, NULL), TC_ERR_INVALID_ARG);
    tc_hints_free(&h);
}

static void test_hints_copy(void **state)
{
    static const char *const want[] = {"x", "1", "y", "two"};
    tc_hints_t a, b;

    tc_hints_init(&a);
    assert_int_equal(tc_hints_parse(&a, "x=1,y=two"), TC_OK);
    assert_int_equal(tc_hints_copy(&b, &a), TC_OK);
    assert_hints_equal(&b, want, 2);
    /* deep copy: changing one leaves the other */
    assert_int_equal(tc_hints_set(&a, "x", "changed"), TC_OK);
    assert_hints_equal(&b, want, 2);
    assert_true(tc_hints_get(&a, "y") != tc_hints_get(&b, "y"));
    tc_hints_free(&a);
    assert_hints_equal(&b, want, 2);
    tc_hints_free(&b);
    assert_int_equal(tc_hints_copy(NULL, &a), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_hints_copy(&b, NULL), TC_ERR_INVALID_ARG);
}

static void test_hints_typed(void **state)
{
    tc_hints_t h;
    int64_t i;
    uint64_t s;
    bool b;

    tc_hints_init(&h);
    assert_int_equal(tc_hints_parse(&h, "n=12,chunk=12Q,size=1M,flag=yes,bad=maybe,neg=-3"), TC_OK);
    assert_int_equal(tc_hints_int(&h, "missing", 5, 0, 10, &i), TC_OK);
    assert_true(i == 5);
    assert_int_equal(tc_hints_int(&h, "n", 5, 0, 100, &i), TC_OK);
    assert_true(i == 12);
    i = SENTINEL_I;
    assert_int_equal(tc_hints_int(&h, "n", 5, 0, 10, &i), TC_ERR_CONFIG);
    assert_string_equal(tc_last_error(),
                        "hint 'n'=\"12\": out of range (accepted: integers in [0, 10])");
    assert_int_equal(tc_hints_int(&h, "chunk", 5, 0, 10, &i), TC_ERR_CONFIG);
    assert_string_equal(tc_last_error(),
                        "hint 'chunk'=\"12Q\": not an integer (accepted: integers in [0, 10])");
    assert_true(i == SENTINEL_I);
    assert_int_equal(tc_hints_int(&h, "neg", 0, -10, 10, &i), TC_OK);
    assert_true(i == -3);

    assert_int_equal(tc_hints_size(&h, "missing", 77, &s), TC_OK);
    assert_true(s == 77);
    assert_int_equal(tc_hints_size(&h, "size", 77, &s), TC_OK);
    assert_true(s == 1ull << 20);
    s = SENTINEL_U;
    assert_int_equal(tc_hints_size(&h, "chunk", 77, &s), TC_ERR_CONFIG);
    assert_string_equal(tc_last_error(),
                        "hint 'chunk'=\"12Q\": not a size (accepted: digits with optional K, M, "
                        "G, T suffix)");
    assert_true(s == SENTINEL_U);

    b = false;
    assert_int_equal(tc_hints_bool(&h, "missing", true, &b), TC_OK);
    assert_true(b);
    b = false;
    assert_int_equal(tc_hints_bool(&h, "flag", false, &b), TC_OK);
    assert_true(b);
    b = false;
    assert_int_equal(tc_hints_bool(&h, "bad", true, &b), TC_ERR_CONFIG);
    assert_non_null(strstr(tc_last_error(), "hint 'bad'=\"maybe\": not a boolean"));
    assert_false(b);
    assert_int_equal(tc_hints_bool(&h, "flag", true, NULL), TC_ERR_INVALID_ARG);
    tc_hints_free(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_int_valid),
        cmocka_unit_test(test_parse_int_malformed),
        cmocka_unit_test(test_parse_int_range_overflow),
        cmocka_unit_test(test_parse_size_valid),
        cmocka_unit_test(test_parse_size_malformed),
        cmocka_unit_test(test_parse_bool),
        cmocka_unit_test(test_parse_double),
        cmocka_unit_test(test_parse_enum),
        cmocka_unit_test(test_config_env),
        cmocka_unit_test(test_hints_set_get),
        cmocka_unit_test(test_hints_full),
        cmocka_unit_test(test_hints_parse),
        cmocka_unit_test(test_hints_copy),
        cmocka_unit_test(test_hints_typed),
        cmocka_unit_test(test_long_values_echoed_short),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
