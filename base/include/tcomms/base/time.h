/**
 * @file time.h
 * @brief Monotonic time and deadlines: every wait in tcomms is bounded by one.
 */
#ifndef TCOMMS_BASE_TIME_H
#define TCOMMS_BASE_TIME_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @brief Nanoseconds on the monotonic clock. */
uint64_t tc_time_ns(void);

/** @brief Seconds on the monotonic clock, as a double. */
double tc_time_s(void);

/**
 * @brief The monotonic time @p timeout_ms from now.
 * @param timeout_ms milliseconds; UINT64_MAX means "never" (UINT64_MAX back).
 */
uint64_t tc_deadline_after_ms(uint64_t timeout_ms);

/**
 * @brief @p now_ns + @p timeout_ms, saturating: a sum past the clock's range
 *        is UINT64_MAX ("never"), not a wrapped time in the past.
 */
uint64_t tc_deadline_add_ms(uint64_t now_ns, uint64_t timeout_ms);

/** @brief Whether the monotonic clock has passed @p deadline_ns. */
bool tc_deadline_passed(uint64_t deadline_ns);

/** @brief Milliseconds left until @p deadline_ns (0 if passed), capped at INT32_MAX for poll(). */
int tc_deadline_left_ms(uint64_t deadline_ns);

/** @brief Sleep for @p ns nanoseconds (restarted after signals). */
void tc_sleep_ns(uint64_t ns);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_BASE_TIME_H */
