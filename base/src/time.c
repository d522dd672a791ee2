/* Monotonic time and deadlines. */
#include "tcomms/base/time.h"

#include <errno.h>
#include <stdint.h>
#include <time.h>

uint64_t tc_time_ns(void)
{
    struct timespec ts;

    /* CLOCK_MONOTONIC cannot fail with a valid pointer on Linux. */
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double tc_time_s(void)
{
    return (double)tc_time_ns() * 1e-9;
}

uint64_t tc_deadline_add_ms(uint64_t now_ns, uint64_t timeout_ms)
{
    if (timeout_ms > (UINT64_MAX - now_ns) / 1000000ull)
        return UINT64_MAX;
    return now_ns + timeout_ms * 1000000ull;
}

uint64_t tc_deadline_after_ms(uint64_t timeout_ms)
{
    if (timeout_ms == UINT64_MAX)
        return UINT64_MAX;
    return tc_deadline_add_ms(tc_time_ns(), timeout_ms);
}

bool tc_deadline_passed(uint64_t deadline_ns)
{
    if (deadline_ns == UINT64_MAX)
        return false;
    return tc_time_ns() >= deadline_ns;
}

int tc_deadline_left_ms(uint64_t deadline_ns)
{
    uint64_t now = tc_time_ns();
    uint64_t left_ms;

    if (now >= deadline_ns)
        return 0;
    /* Round up so a poll() with the result does not wake just before the deadline. */
    left_ms = (deadline_ns - now + 999999ull) / 1000000ull;
    if (left_ms > INT32_MAX)
        return INT32_MAX;
    return (int)left_ms;
}

void tc_sleep_ns(uint64_t ns)
{
    struct timespec req, rem;

    req.tv_sec = (time_t)(ns / 1000000000ull);
    req.tv_nsec = (long)(ns % 1000000000ull);
    while (nanosleep(&req, &rem) != 0 && errno == EINTR)
        req = rem;
}
