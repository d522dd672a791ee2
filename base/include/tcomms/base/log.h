/**
 * @file log.h
 * @brief Logging with levels and per-subsystem filters, configured by TC_LOG.
 *
 * `TC_LOG` is a comma-separated list: a bare level sets every subsystem,
 * `subsystem=level` sets one, e.g. `TC_LOG=warn,transport=debug`.
 * Levels: none, error, warn, info, debug, trace. Subsystems: base, topo,
 * transport, algo, kernels, runtime, api, tools. `TC_LOG_FILE` sends the log to
 * a file instead of stderr; `%r` in it becomes the rank and `%p` the pid.
 * Every line carries the time, host, pid, rank and subsystem. The default is
 * `warn`. Logging never writes to stdout.
 */
#ifndef TCOMMS_BASE_LOG_H
#define TCOMMS_BASE_LOG_H

#include <stdbool.h>

#include "tcomms/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief Log levels, most severe first. */
typedef enum tc_log_level {
    TC_LOG_LEVEL_NONE = 0,
    TC_LOG_LEVEL_ERROR,
    TC_LOG_LEVEL_WARN,
    TC_LOG_LEVEL_INFO,
    TC_LOG_LEVEL_DEBUG,
    TC_LOG_LEVEL_TRACE,
} tc_log_level_t;

/** @brief Subsystems that can be filtered separately. */
typedef enum tc_log_subsys {
    TC_SUBSYS_BASE = 0,
    TC_SUBSYS_TOPO,
    TC_SUBSYS_TRANSPORT,
    TC_SUBSYS_ALGO,
    TC_SUBSYS_KERNELS,
    TC_SUBSYS_RUNTIME,
    TC_SUBSYS_API,
    TC_SUBSYS_TOOLS,
    TC_SUBSYS_COUNT,
} tc_log_subsys_t;

/**
 * @brief Configure from TC_LOG and TC_LOG_FILE (idempotent; also done lazily).
 * @return TC_ERR_CONFIG naming the variable and accepted values when malformed
 *         (logging then stays at its default), TC_ERR_SYSTEM if the file cannot
 *         be opened.
 */
tc_status_t tc_log_init(void);

/**
 * @brief Check TC_LOG and TC_LOG_FILE as they are now, without applying them
 *        (tc_log_init() reads them once, at the first log): what a library
 *        entry point calls to refuse a malformed value.
 * @return TC_OK, or TC_ERR_CONFIG naming the variable and the accepted values.
 */
tc_status_t tc_log_check_env(void);

/**
 * @brief Apply a TC_LOG-style specification.
 * @param spec e.g. "info" or "warn,transport=debug".
 * @return TC_OK, or TC_ERR_CONFIG (nothing changed).
 */
tc_status_t tc_log_configure(const char *spec);

/** @brief The rank printed on every line (-1, the default, prints "-"). */
void tc_log_set_rank(int rank);

/** @brief Whether a message at @p level for @p subsys would be written. */
bool tc_log_enabled(tc_log_level_t level, tc_log_subsys_t subsys);

/** @brief Write one line (use the tc_log_* macros instead). */
void tc_log_write(tc_log_level_t level, tc_log_subsys_t subsys, const char *file, int line,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#define tc_log(level, subsys, ...)                                                         \
    do {                                                                                   \
        if (tc_log_enabled((level), (subsys)))                                             \
            tc_log_write((level), (subsys), __FILE__, __LINE__, __VA_ARGS__);              \
    } while (0)

#define tc_log_error(subsys, ...) tc_log(TC_LOG_LEVEL_ERROR, subsys, __VA_ARGS__)
#define tc_log_warn(subsys, ...) tc_log(TC_LOG_LEVEL_WARN, subsys, __VA_ARGS__)
#define tc_log_info(subsys, ...) tc_log(TC_LOG_LEVEL_INFO, subsys, __VA_ARGS__)
#define tc_log_debug(subsys, ...) tc_log(TC_LOG_LEVEL_DEBUG, subsys, __VA_ARGS__)
#define tc_log_trace(subsys, ...) tc_log(TC_LOG_LEVEL_TRACE, subsys, __VA_ARGS__)

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_BASE_LOG_H */
