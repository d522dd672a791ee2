/**
 * @file loglimit.h
 * @brief Rate limiting of log lines that peers can provoke (refused connections, failing
 *        accept()): at most one line per interval per reason, with the count of the lines
 *        left out since the last one.
 *
 * A listener that logs every refusal lets anyone who can reach it fill the log; the backends
 * keep one tc_tp_loglimit_t per reason and log only when tc_tp_loglimit_take() says so.
 */
#ifndef TCOMMS_TRANSPORT_LOGLIMIT_H
#define TCOMMS_TRANSPORT_LOGLIMIT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @brief The state of one reason; zero-initialised means "nothing logged yet". */
typedef struct tc_tp_loglimit {
    uint64_t next_ns;    /**< monotonic time before which lines are left out */
    uint64_t suppressed; /**< lines left out since the last one logged */
} tc_tp_loglimit_t;

/**
 * @brief Whether a line of this reason may be logged now (1), or is left out and counted (0).
 * @param l the reason's state
 * @param interval_ms the shortest time between two lines of the reason
 * @param suppressed_p set, when 1 is returned, to the lines left out since the last one
 */
int tc_tp_loglimit_take(tc_tp_loglimit_t *l, uint64_t interval_ms, uint64_t *suppressed_p);

/**
 * @brief A transport warning limited by @p l: logged (with " (and N more like it since the
 *        last such line)" when lines were left out) when tc_tp_loglimit_take() allows it.
 * @param l the reason's state
 * @param interval_ms the shortest time between two lines of the reason
 * @param fmt printf format of the line, then its arguments
 */
void tc_tp_loglimit_warn(tc_tp_loglimit_t *l, uint64_t interval_ms, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_TRANSPORT_LOGLIMIT_H */
