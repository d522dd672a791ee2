/**
 * @file tcp.h
 * @brief The TCP backend: non-blocking sockets and epoll, one socket per pair.
 *
 * The listening socket is bound when the context is created, on the IPv4
 * interface named by TC_SOCKET_IFNAME, or else on the first non-loopback IPv4
 * interface that is up (127.0.0.1 when there is none). For every pair of
 * processes the one with the smaller id connects and the other accepts; the
 * connecting side authenticates with a digest of the context's secret.
 *
 * Behaviour the generic interface leaves open:
 * - A truncated receive (TC_ERR_TRUNCATED) reports req->bytes = its capacity.
 * - Messages that arrived whole before an endpoint failed can still be
 *   received from it; any other post on a failed endpoint fails at once with
 *   ep->failed (and sets req->status to it).
 * - A failed connect, a refused handshake or a closed/reset socket fail the
 *   endpoint with TC_ERR_PEER_FAILED; bytes that break the wire format with
 *   TC_ERR_PROTOCOL. ep->error names the peer id and address.
 * - cancel() completes a queued request with TC_ERR_ABORTED; a send partly
 *   written or a receive being filled gives TC_ERR_INVALID_STATE.
 * - wait() returns TC_OK both on activity and on timeout (a negative timeout
 *   is taken as 0); only a failing epoll_wait() is an error.
 * - Connecting an id to itself is refused (use the self backend).
 *
 * One-sided operations travel on the same connection as messages: the target
 * applies a put, get or signal in its own progress, after checking the key
 * (slot and generation, so a key used after dereg misses) and the range, and
 * answers in order. A put or signal completes when that answer arrives, so the
 * data is visible at the target by then; a signal follows every earlier put
 * because the stream is ordered. A bad key, range or alignment from the peer
 * fails the endpoint with TC_ERR_PROTOCOL. A one-sided request already on the
 * wire cannot be cancelled (TC_ERR_INVALID_STATE).
 *
 * A context is not thread-safe: one thread at a time may call into it.
 */
#ifndef TCOMMS_TRANSPORT_TCP_H
#define TCOMMS_TRANSPORT_TCP_H

#include "tcomms/transport/transport.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief The ops table of the TCP backend (name "tcp"). */
extern const tc_tp_ops_t tc_tp_tcp_ops;

/** @brief Largest message the TCP backend sends or accepts (bytes). */
#define TC_TP_TCP_MAX_MSG (1ULL << 40)

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_TRANSPORT_TCP_H */
