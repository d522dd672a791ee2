/**
 * @file status.h
 * @brief Status codes and the thread-local error detail of tcomms.
 *
 * Every call returns a ::tc_status_t. When it is an error, tc_last_error()
 * returns one line that says exactly what happened and where, for example
 * "rank 3 (host node2, pid 4242) closed its connection during all_reduce #57".
 */
#ifndef TCOMMS_BASE_STATUS_H
#define TCOMMS_BASE_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Result of every tcomms call.
 *
 * Zero is success, positive values are non-error states, negative values are
 * errors grouped by tens: argument, resource, system, peer, timeout,
 * cancellation, unsupported, internal.
 */
typedef enum tc_status {
    TC_OK = 0,                  /**< success */
    TC_INPROGRESS = 1,          /**< the operation has not completed yet */

    TC_ERR_INVALID_ARG = -1,    /**< a bad argument: NULL, count, type, op, root, ... */
    TC_ERR_INVALID_STATE = -2,  /**< the object is in a state that forbids the call */
    TC_ERR_CONFIG = -3,         /**< a malformed TC_* variable or hint */

    TC_ERR_NO_MEMORY = -10,     /**< memory allocation failed */
    TC_ERR_NO_RESOURCE = -11,   /**< out of some other resource (fds, /dev/shm, slots) */

    TC_ERR_SYSTEM = -20,        /**< a system call failed; the detail has errno text */
    TC_ERR_BOOTSTRAP = -21,     /**< bootstrap (PMIx, store, launcher) failed */

    TC_ERR_PEER_FAILED = -30,   /**< a peer died or closed its connection */
    TC_ERR_PROTOCOL = -31,      /**< malformed or hostile bytes from a peer */
    TC_ERR_TRUNCATED = -32,     /**< a message larger than the posted buffer */
    TC_ERR_MISMATCH = -33,      /**< ranks called different operations */

    TC_ERR_TIMEOUT = -40,       /**< a bounded wait ran out */

    TC_ERR_ABORTED = -50,       /**< the communicator was aborted */
    TC_ERR_REVOKED = -51,       /**< the communicator was revoked */

    TC_ERR_UNSUPPORTED = -60,   /**< not supported here (type, op, transport, device) */
    TC_ERR_NOT_FOUND = -61,     /**< a name, key or device that does not exist */

    TC_ERR_INTERNAL = -70,      /**< a bug in tcomms */
} tc_status_t;

/**
 * @brief Put before the declaration of a function whose ::tc_status_t must not
 *        be ignored: GCC and clang then warn about a call that drops it.
 *
 * The library's internal functions use it (its build makes the warning an
 * error). A caller that ignores such a status on purpose tests it and says why
 * (GCC still warns when the call is only cast to void).
 */
#if defined(__GNUC__) || defined(__clang__)
#define TC_MUST_USE __attribute__((warn_unused_result))
#else
#define TC_MUST_USE
#endif

/**
 * @brief The name of a status code, e.g. "TC_ERR_TIMEOUT".
 * @param status any value; unknown values give "TC_ERR_UNKNOWN".
 * @return a static string, never NULL.
 */
const char *tc_status_string(tc_status_t status);

/**
 * @brief The detail of the last error set on this thread.
 * @return a thread-local string, "" when none; valid until the next tcomms
 *         call on this thread.
 */
const char *tc_last_error(void);

/**
 * @brief Record the detail of an error on this thread and return the status.
 *
 * Use as `return tc_error_set(TC_ERR_INVALID_ARG, "count %zu too large", n);`.
 * The text is truncated to an internal bound (at least 1024 bytes).
 * @param status the status to return.
 * @param fmt printf-style format of the detail.
 * @return @p status.
 */
tc_status_t tc_error_set(tc_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* For clang's static analyzer only (tools/ci/static_analysis.sh): tc_error_set
 * returns @p status, which the analyzer cannot see across files; without this
 * it follows `return tc_error_set(TC_ERR_..., ...)` as if it returned TC_OK
 * and reports the caller's use of outputs that were never set. */
#ifdef __clang_analyzer__
#define tc_error_set(status, ...)                                                                  \
    __extension__({                                                                                \
        tc_status_t tc_error_set_st_ = (status);                                                   \
        (void)(tc_error_set)(tc_error_set_st_, __VA_ARGS__);                                       \
        tc_error_set_st_;                                                                          \
    })
#endif

/**
 * @brief Prepend context to the current detail ("all_reduce #7: " + detail).
 * @param fmt printf-style format of the context.
 */
void tc_error_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/** @brief Clear the detail of this thread. */
void tc_error_clear(void);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_BASE_STATUS_H */
