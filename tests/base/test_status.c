/* Status names and the thread-local error detail. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "tcomms/base/status.h"

static void test_status_strings(void **state)
{
    static const struct {
        tc_status_t status;
        const char *name;
    } expect[] = {
        {TC_OK, "TC_OK"},
        {TC_INPROGRESS, "TC_INPROGRESS"},
        {TC_ERR_INVALID_ARG, "TC_ERR_INVALID_ARG"},
        {TC_ERR_INVALID_STATE, "TC_ERR_INVALID_STATE"},
        {TC_ERR_CONFIG, "TC_ERR_CONFIG"},
        {TC_ERR_NO_MEMORY, "TC_ERR_NO_MEMORY"},
        {TC_ERR_NO_RESOURCE, "TC_ERR_NO_RESOURCE"},
        {TC_ERR_SYSTEM, "TC_ERR_SYSTEM"},
        {TC_ERR_BOOTSTRAP, "TC_ERR_BOOTSTRAP"},
        {TC_ERR_PEER_FAILED, "TC_ERR_PEER_FAILED"},
        {TC_ERR_PROTOCOL, "TC_ERR_PROTOCOL"},
        {TC_ERR_TRUNCATED, "TC_ERR_TRUNCATED"},
        {TC_ERR_MISMATCH, "TC_ERR_MISMATCH"},
        {TC_ERR_TIMEOUT, "TC_ERR_TIMEOUT"},
        {TC_ERR_ABORTED, "TC_ERR_ABORTED"},
        {TC_ERR_REVOKED, "TC_ERR_REVOKED"},
        {TC_ERR_UNSUPPORTED, "TC_ERR_UNSUPPORTED"},
        {TC_ERR_NOT_FOUND, "TC_ERR_NOT_FOUND"},
        {TC_ERR_INTERNAL, "TC_ERR_INTERNAL"},
    };
    size_t known = 0;

    for (size_t i = 0; i < sizeof(expect) / sizeof(expect[0]); i++)
        assert_string_equal(tc_status_string(expect[i].status), expect[i].name);
    /* Every other value in a wide range is unknown; the known ones are exactly the table. */
    for (int v = -200; v <= 200; v++) {
        const char *s = tc_status_string((tc_status_t)v);
        assert_non_null(s);
        if (strcmp(s, "TC_ERR_UNKNOWN") != 0)
            known++;
    }
    assert_int_equal(known, sizeof(expect) / sizeof(expect[0]));
    assert_string_equal(tc_status_string((tc_status_t)2), "TC_ERR_UNKNOWN");
    assert_string_equal(tc_status_string((tc_status_t)-4), "TC_ERR_UNKNOWN");
    assert_string_equal(tc_status_string((tc_status_t)INT32_MIN), "TC_ERR_UNKNOWN");
}

static void test_error_set_and_clear(void **state)
{
    tc_error_clear();
    assert_string_equal(tc_last_error(), "");
    assert_int_equal(tc_error_set(TC_ERR_TIMEOUT, "wait for rank %d took %.1f s", 3, 2.5),
                     TC_ERR_TIMEOUT);
    assert_string_equal(tc_last_error(), "wait for rank 3 took 2.5 s");
    assert_int_equal(tc_error_set(TC_ERR_SYSTEM, "second"), TC_ERR_SYSTEM);
    assert_string_equal(tc_last_error(), "second");
    tc_error_clear();
    assert_string_equal(tc_last_error(), "");
    /* the arguments may be the current detail itself */
    tc_error_set(TC_ERR_SYSTEM, "inner %d", 1);
    tc_error_set(TC_ERR_PEER_FAILED, "outer: %s (%s)", tc_last_error(), tc_last_error());
    assert_string_equal(tc_last_error(), "outer: inner 1 (inner 1)");
    tc_error_prefix("%s / ", tc_last_error());
    assert_string_equal(tc_last_error(), "outer: inner 1 (inner 1) / outer: inner 1 (inner 1)");
}

static void test_error_prefix(void **state)
{
    tc_error_set(TC_ERR_PEER_FAILED, "rank %d closed its connection", 3);
    tc_error_prefix("all_reduce #%d: ", 57);
    assert_string_equal(tc_last_error(), "all_reduce #57: rank 3 closed its connection");
    tc_error_prefix("comm %s: ", "world");
    assert_string_equal(tc_last_error(),
                        "comm world: all_reduce #57: rank 3 closed its connection");
    tc_error_clear();
    tc_error_prefix("only: ");
    assert_string_equal(tc_last_error(), "only: ");
}

static void test_error_truncation(void **state)
{
    char big[5000];
    const char *d;
    size_t len;

    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    tc_error_set(TC_ERR_INTERNAL, "%s", big);
    d = tc_last_error();
    len = strlen(d);
    assert_true(len >= 1023);
    assert_true(len < sizeof(big) - 1);
    for (size_t i = 0; i < len; i++)
        assert_int_equal(d[i], 'x');
    /* A prefix on a full detail keeps the prefix and stays bounded. */
    tc_error_prefix("ctx: ");
    d = tc_last_error();
    assert_memory_equal(d, "ctx: xxx", 8);
    assert_true(strlen(d) == len);
}

#define THREAD_ITERS 20000

struct thread_arg {
    int id;
    int failures;
    char first[64];
};

static void *thread_main(void *p)
{
    struct thread_arg *a = p;
    char want[64];

    /* A new thread starts with no detail. */
    snprintf(a->first, sizeof(a->first), "%s", tc_last_error());
    for (int i = 0; i < THREAD_ITERS; i++) {
        snprintf(want, sizeof(want), "thread %d iteration %d", a->id, i);
        tc_error_set(TC_ERR_INTERNAL, "thread %d iteration %d", a->id, i);
        if (i % 3 == 0)
            tc_error_prefix("p%d: ", a->id);
        if (i % 3 == 0) {
            char pw[80];
            snprintf(pw, sizeof(pw), "p%d: %s", a->id, want);
            if (strcmp(tc_last_error(), pw) != 0)
                a->failures++;
        } else if (strcmp(tc_last_error(), want) != 0) {
            a->failures++;
        }
    }
    return NULL;
}

static void test_error_thread_local(void **state)
{
    pthread_t t[2];
    struct thread_arg args[2] = {{.id = 1}, {.id = 2}};
    struct timespec deadline;

    tc_error_set(TC_ERR_CONFIG, "main thread detail");
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, thread_main, &args[i]), 0);
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 60;
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_timedjoin_np(t[i], NULL, &deadline), 0);
    for (int i = 0; i < 2; i++) {
        assert_string_equal(args[i].first, "");
        assert_int_equal(args[i].failures, 0);
    }
    assert_string_equal(tc_last_error(), "main thread detail");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_strings),     cmocka_unit_test(test_error_set_and_clear),
        cmocka_unit_test(test_error_prefix),       cmocka_unit_test(test_error_truncation),
        cmocka_unit_test(test_error_thread_local),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
