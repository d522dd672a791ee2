/* Rate limiting of log lines that peers can provoke (loglimit.h). */
#include "tcomms/transport/loglimit.h"

#include <stdarg.h>
#include <stdio.h>

#include "tcomms/base/log.h"
#include "tcomms/base/time.h"

int tc_tp_loglimit_take(tc_tp_loglimit_t *l, uint64_t interval_ms, uint64_t *suppressed_p)
{
    uint64_t now = tc_time_ns();
    if (l->next_ns != 0 && now < l->next_ns) {
        l->suppressed++;
        return 0;
    }
    *suppressed_p = l->suppressed;
    l->suppressed = 0;
    l->next_ns = tc_deadline_add_ms(now, interval_ms);
    return 1;
}

void tc_tp_loglimit_warn(tc_tp_loglimit_t *l, uint64_t interval_ms, const char *fmt, ...)
{
    uint64_t suppressed;
    char line[256];
    va_list ap;
    if (!tc_log_enabled(TC_LOG_LEVEL_WARN, TC_SUBSYS_TRANSPORT) ||
        !tc_tp_loglimit_take(l, interval_ms, &suppressed))
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (suppressed > 0)
        tc_log_warn(TC_SUBSYS_TRANSPORT, "%s (and %llu more like it since the last such line)",
                    line, (unsigned long long)suppressed);
    else
        tc_log_warn(TC_SUBSYS_TRANSPORT, "%s", line);
}
