/* Status names and the thread-local error detail. */
#include "tcomms/base/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define TC_ERROR_DETAIL_MAX 2048

/* Thread-local, statically sized: setting an error never allocates (it may run
 * on an out-of-memory path). */
static __thread char tc_error_detail[TC_ERROR_DETAIL_MAX];

const char *tc_status_string(tc_status_t status)
{
    switch (status) {
    case TC_OK:
        return "TC_OK";
    case TC_INPROGRESS:
        return "TC_INPROGRESS";
    case TC_ERR_INVALID_ARG:
        return "TC_ERR_INVALID_ARG";
    case TC_ERR_INVALID_STATE:
        return "TC_ERR_INVALID_STATE";
    case TC_ERR_CONFIG:
        return "TC_ERR_CONFIG";
    case TC_ERR_NO_MEMORY:
        return "TC_ERR_NO_MEMORY";
    case TC_ERR_NO_RESOURCE:
        return "TC_ERR_NO_RESOURCE";
    case TC_ERR_SYSTEM:
        return "TC_ERR_SYSTEM";
    case TC_ERR_BOOTSTRAP:
        return "TC_ERR_BOOTSTRAP";
    case TC_ERR_PEER_FAILED:
        return "TC_ERR_PEER_FAILED";
    case TC_ERR_PROTOCOL:
        return "TC_ERR_PROTOCOL";
    case TC_ERR_TRUNCATED:
        return "TC_ERR_TRUNCATED";
    case TC_ERR_MISMATCH:
        return "TC_ERR_MISMATCH";
    case TC_ERR_TIMEOUT:
        return "TC_ERR_TIMEOUT";
    case TC_ERR_ABORTED:
        return "TC_ERR_ABORTED";
    case TC_ERR_REVOKED:
        return "TC_ERR_REVOKED";
    case TC_ERR_UNSUPPORTED:
        return "TC_ERR_UNSUPPORTED";
    case TC_ERR_NOT_FOUND:
        return "TC_ERR_NOT_FOUND";
    case TC_ERR_INTERNAL:
        return "TC_ERR_INTERNAL";
    }
    return "TC_ERR_UNKNOWN";
}

const char *tc_last_error(void)
{
    return tc_error_detail;
}

/* The name in parentheses: status.h may define tc_error_set as a macro (for the analyzer). */
tc_status_t(tc_error_set)(tc_status_t status, const char *fmt, ...)
{
    char buf[TC_ERROR_DETAIL_MAX];
    va_list ap;

    /* Format aside first: the arguments may point into the current detail, as
     * in tc_error_set(st, "while closing: %s", tc_last_error()). */
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    memcpy(tc_error_detail, buf, sizeof(buf));
    return status;
}

void tc_error_prefix(const char *fmt, ...)
{
    char buf[TC_ERROR_DETAIL_MAX];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n < sizeof(buf))
        snprintf(buf + n, sizeof(buf) - (size_t)n, "%s", tc_error_detail);
    memcpy(tc_error_detail, buf, sizeof(buf));
}

void tc_error_clear(void)
{
    tc_error_detail[0] = '\0';
}
