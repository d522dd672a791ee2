/* The table of the backends built into this library, registered on request (no constructors). */
#include <stddef.h>
#include <string.h>

#include "tcomms/base/status.h"
#include "tcomms/transport/builtin.h"
#include "tcomms/transport/ib.h"
#include "tcomms/transport/self.h"
#include "tcomms/transport/shm.h"
#include "tcomms/transport/tcp.h"
#include "tcomms/transport/transport.h"

/* At least the registry's capacity (transport/src/registry.c): every registered table is seen. */
#define TC_TP_BUILTIN_SCAN 32

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

/* Whether another table than @p ops is registered under @p ops' name (it then takes the
 * built-in's place). */
static int tc_tp_builtin_replaced(const tc_tp_ops_t *ops)
{
    const tc_tp_ops_t *known[TC_TP_BUILTIN_SCAN];
    int n = tc_tp_registered(known, NULL, TC_TP_BUILTIN_SCAN);
    for (int i = 0; i < n && i < TC_TP_BUILTIN_SCAN; i++)
        if (known[i] != ops && strcmp(known[i]->name, ops->name) == 0)
            return 1;
    return 0;
}

tc_status_t tc_tp_register_builtin(void)
{
    for (size_t i = 0; i < sizeof(tc_tp_builtin_table) / sizeof(tc_tp_builtin_table[0]); i++) {
        if (tc_tp_builtin_replaced(tc_tp_builtin_table[i].ops))
            continue;
        tc_status_t status =
            tc_tp_register_reach(tc_tp_builtin_table[i].ops, tc_tp_builtin_table[i].reach);
        if (status != TC_OK)
            return status;
    }
    return TC_OK;
}
