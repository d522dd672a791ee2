/* The table of the backends built into this library, registered on request (no constructors). */
#include <stddef.h>

#include "tcomms/base/status.h"
#include "tcomms/transport/builtin.h"
#include "tcomms/transport/ib.h"
#include "tcomms/transport/self.h"
#include "tcomms/transport/shm.h"
#include "tcomms/transport/tcp.h"
#include "tcomms/transport/transport.h"

static const tc_tp_ops_t *const tc_tp_builtin_table[] = {
    &tc_tp_self_ops,
    &tc_tp_shm_ops,
    &tc_tp_tcp_ops,
    &tc_tp_ib_ops, /* without a device it reports available = 0 and refuses contexts */
};

tc_status_t tc_tp_register_builtin(void)
{
    for (size_t i = 0; i < sizeof(tc_tp_builtin_table) / sizeof(tc_tp_builtin_table[0]); i++) {
        tc_status_t status = tc_tp_register(tc_tp_builtin_table[i]);
        if (status != TC_OK)
            return status;
    }
    return TC_OK;
}
