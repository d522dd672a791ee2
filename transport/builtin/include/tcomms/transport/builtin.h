/**
 * @file builtin.h
 * @brief Register the transport backends linked into this build.
 */
#ifndef TCOMMS_TRANSPORT_BUILTIN_H
#define TCOMMS_TRANSPORT_BUILTIN_H

#include "tcomms/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Register self, shm, tcp (and ib where built) with tc_tp_register_reach(),
 *        each with the peers it serves (self: this process, shm: this node,
 *        ib: other nodes, tcp: any).
 *
 * Safe to call more than once and from several threads (registering the same
 * table again is a no-op). Afterwards tc_tp_lookup("shm") etc. find them.
 * @return TC_OK, or the first registration error (its detail names the backend).
 */
tc_status_t tc_tp_register_builtin(void);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_TRANSPORT_BUILTIN_H */
