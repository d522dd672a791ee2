/* The table of the backends built into this library, registered on request (no constructors). */
#include <stddef.h>

#include "tcomms/base/status.h"
#include "tcomms/transport/builtin.h"
#include "tcomms/transport/ib.h"
#include "tcomms/transport/self.h"
#include "tcomms/transport/shm.h"
#include "tcomms/transport/tcp.h"
#include "tcomms/transport/transport.h"

/* Each backend with the peers it serves (tc_tp_reach_t): the runtime picks,
 * per peer, the most specific one that applies. */
static const struct {
    const tc_tp_ops_t *ops;
    tc_tp_reach_t reach;
} tc_tp_builtin_table[] = {
    {&tc_tp_self_ops, TC_TP_REACH_SELF},
    {&tc_tp_shm_ops, TC_TP_REACH_NODE},
    {&tc_tp_tcp_ops, TC_TP_REACH_ANY},
    /* without a device it reports available = 0 and refuses contexts */
    {&tc_tp_ib_ops, TC_TP_REACH_REMOTE},
};

tc_status_t tc_tp_register_builtin(void)
{
    for (size_t i = 0; i < sizeof(tc_tp_builtin_table) / sizeof(tc_tp_builtin_table[0]); i++) {
        tc_status_t status =
            tc_tp_register_reach(tc_tp_builtin_table[i].ops, tc_tp_builtin_table[i].reach);
        if (status != TC_OK)
            return status;
    }
    return TC_OK;
}
