/* Rate limiting of log lines that peers can provoke (loglimit.h). */
#include "tcomms/transport/loglimit.h"

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
