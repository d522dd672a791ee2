/**
 * @file self.h
 * @brief The self backend: a process talking to itself, by memcpy.
 *
 * One context has at most one endpoint, connected with the context's own
 * address (tc_tp_addr_pack() of the same context); an address of another
 * context or process is refused (TC_ERR_INVALID_ARG).
 *
 * Behaviour the generic interface leaves open:
 * - Matching and copying happen when the second of a send and its receive is
 *   posted: both complete right there (req->status leaves TC_INPROGRESS
 *   before the post returns) and are counted by the next tc_tp_progress().
 *   A send without a posted receive waits (nothing is copied before the
 *   match), so a send never completes unless its receive is posted.
 * - A truncated receive (TC_ERR_TRUNCATED) holds the first cap bytes and
 *   reports req->bytes = cap; its send completes with TC_OK.
 * - put, get and signal complete when posted (memcpy, atomic add/set); the
 *   remote key must be one registered with this same context.
 * - cancel() completes a waiting send or receive with TC_ERR_ABORTED;
 *   ep_close() completes every waiting request with TC_ERR_ABORTED.
 * - wait() returns at once (there is never anything to wait for).
 *
 * A context is not thread-safe: one thread at a time may call into it.
 */
#ifndef TCOMMS_TRANSPORT_SELF_H
#define TCOMMS_TRANSPORT_SELF_H

#include "tcomms/transport/transport.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief The ops table of the self backend (name "self"). */
extern const tc_tp_ops_t tc_tp_self_ops;

/** @brief Bytes of a packed self address. */
#define TC_TP_SELF_ADDR_LEN 24

/** @brief Longest message a send may post (as TC_TP_SHM_MAX_MSG and TC_TP_TCP_MAX_MSG);
 *         a longer one is refused with TC_ERR_INVALID_ARG. */
#define TC_TP_SELF_MAX_MSG (1ULL << 40)

/** @brief Bytes of a packed self remote key. */
#define TC_TP_SELF_RKEY_LEN 32

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_TRANSPORT_SELF_H */
