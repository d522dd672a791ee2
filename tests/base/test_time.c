/* Monotonic time, deadlines and sleeping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "tcomms/base/time.h"

static uint64_t ref_monotonic_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void test_time_monotonic(void **state)
{
    uint64_t before = ref_monotonic_ns();
    uint64_t t = tc_time_ns();
    uint64_t after = ref_monotonic_ns();
    uint64_t prev = t;
    double s;

    assert_true(before <= t && t <= after);
    for (int i = 0; i < 100000; i++) {
        uint64_t now = tc_time_ns();
        assert_true(now >= prev);
        prev = now;
    }
    before = tc_time_ns();
    s = tc_time_s();
    after = tc_time_ns();
    assert_true(s >= (double)before * 1e-9 - 1e-6 && s <= (double)after * 1e-9 + 1e-6);
}

static void test_sleep(void **state)
{
    uint64_t t0 = ref_monotonic_ns();
    uint64_t dt;

    tc_sleep_ns(20 * 1000000ull);
    dt = ref_monotonic_ns() - t0;
    assert_true(dt >= 20 * 1000000ull);
    assert_true(dt < 2000 * 1000000ull);
    t0 = ref_monotonic_ns();
    tc_sleep_ns(0);
    assert_true(ref_monotonic_ns() - t0 < 1000 * 1000000ull);
}

static void test_deadline_never(void **state)
{
    uint64_t d = tc_deadline_after_ms(UINT64_MAX);

    assert_true(d == UINT64_MAX);
    assert_false(tc_deadline_passed(d));
    assert_int_equal(tc_deadline_left_ms(d), INT32_MAX);
    /* A timeout so large that now + timeout overflows also means never. */
    assert_true(tc_deadline_after_ms(UINT64_MAX - 1) == UINT64_MAX);
    assert_true(tc_deadline_after_ms(UINT64_MAX / 1000) == UINT64_MAX);
    /* From a given time: exact below the limit, saturating at and beyond it. */
    assert_true(tc_deadline_add_ms(5, 7) == 5 + 7 * 1000000ull);
    assert_true(tc_deadline_add_ms(1ull << 62, (uint64_t)INT64_MAX) == UINT64_MAX);
    assert_true(tc_deadline_add_ms(1ull << 40, 1ull << 62) == UINT64_MAX);
    uint64_t lim = (UINT64_MAX - 1000) / 1000000ull;
    assert_true(tc_deadline_add_ms(1000, lim) == 1000 + lim * 1000000ull);
    assert_true(tc_deadline_add_ms(1000, lim + 1) == UINT64_MAX);
}

static void test_deadline_finite(void **state)
{
    uint64_t before = ref_monotonic_ns();
    uint64_t d = tc_deadline_after_ms(200);
    uint64_t after = ref_monotonic_ns();
    int left;

    assert_true(d >= before + 200 * 1000000ull && d <= after + 200 * 1000000ull);
    assert_false(tc_deadline_passed(d));
    left = tc_deadline_left_ms(d);
    assert_true(left > 0 && left <= 200);
    /* Bounded wait until it passes. */
    while (!tc_deadline_passed(d)) {
        assert_true(ref_monotonic_ns() < after + 5000 * 1000000ull);
        tc_sleep_ns(1000000);
    }
    assert_true(ref_monotonic_ns() >= d);
    assert_int_equal(tc_deadline_left_ms(d), 0);

    d = tc_deadline_after_ms(0);
    tc_sleep_ns(1000);
    assert_true(tc_deadline_passed(d));
    assert_int_equal(tc_deadline_left_ms(d), 0);
    assert_true(tc_deadline_passed(0));
    assert_int_equal(tc_deadline_left_ms(0), 0);

    /* Far but finite: capped for poll(). */
    d = tc_deadline_after_ms(10ull * 1000 * 1000 * 1000);
    assert_true(d != UINT64_MAX);
    assert_int_equal(tc_deadline_left_ms(d), INT32_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_time_monotonic),
        cmocka_unit_test(test_sleep),
        cmocka_unit_test(test_deadline_never),
        cmocka_unit_test(test_deadline_finite),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
