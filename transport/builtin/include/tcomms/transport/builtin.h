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
 *
 * A table registered under a built-in's name before this call (with
 * tc_tp_register_reach(), e.g. "ib" over another verbs provider, or over an
 * emulated HCA in a test) takes that built-in's place: the built-in is not
 * registered, and the runtime opens the caller's table with the reach the
 * caller declared (TC_IB, TC_SHM, ... apply to it as to the built-in).
 * @return TC_OK, or the first registration error (its detail names the backend).
 */
tc_status_t tc_tp_register_builtin(void);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_TRANSPORT_BUILTIN_H */
