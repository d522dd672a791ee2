/**
 * @file tcp.h
 * @brief The TCP backend: non-blocking sockets and epoll, one or several sockets per pair.
 *
 * The listening socket is bound when the context is created, on the IPv4
 * interface named by TC_SOCKET_IFNAME, or else on the first non-loopback IPv4
 * interface that is up (127.0.0.1 when there is none). For every pair of
 * processes the one with the smaller id connects and the other accepts. Every
 * socket opens with a challenge-response keyed by the context's secret (auth.h:
 * fresh nonces from both sides, HMAC-SHA-256 over the purpose, both ids, both
 * nonces and the socket's flags and token), so each side proves it holds the
 * secret without sending it, and a recorded handshake replayed elsewhere fails.
 * Without a secret the same exchange runs with a key anyone can compute: it is
 * not authenticated. Payloads are neither encrypted nor MACed. The listener
 * keeps at most 64 sockets in their handshake, each for at most
 * TC_SOCKET_HANDSHAKE_TIMEOUT_MS (default 5000), backs off when accept() runs
 * out of descriptors, and rate-limits its lines about refused connections.
 *
 * Sockets per pair: TC_SOCKET_NSOCKS (hint tcp_nsocks, which wins), 1 to 16,
 * default 1; anything else fails ctx_create with TC_ERR_CONFIG naming the
 * variable. The connecting side's count holds for the pair: its primary hello
 * carries the count and a random session token, and once the primary is
 * acknowledged it opens the other (data) sockets, each authenticated the same
 * way and bound to the primary by the token and its index. A
 * data socket with another token, an index out of range or taken, or no
 * primary from that id is refused with a reason and logged; the endpoint it
 * claims to belong to is not affected.
 *
 * With several sockets, a message of at least TC_SOCKET_STRIPE_MIN bytes (hint
 * tcp_stripe_min, default 256 KiB, at least 4 KiB) is striped: its header
 * (tag, length, message id) goes in order on the primary, where matching
 * happens, and its bytes follow as chunks of at most 512 KiB, each carrying
 * (message id, offset, length), that whichever socket is free takes, the
 * primary included when no smaller message waits. Chunks land straight in the
 * posted receive buffer (no copy; an unexpected message is buffered as
 * usual), are checked against the message (a chunk outside it, beyond its
 * length, of an unknown id or before its header fails the endpoint with
 * TC_ERR_PROTOCOL) and never write past the receive's capacity. Smaller
 * messages and one-sided operations stay on the primary. Receives complete
 * in any order across messages; matching keeps the posting order.
 *
 * Several interfaces (rails): TC_SOCKET_IFNAME may list up to 4 interface
 * names, comma-separated (each must exist, be up and have an IPv4 address; an
 * empty, repeated or fifth entry fails ctx_create with TC_ERR_CONFIG naming
 * the entry). The listener then binds the wildcard address and the packed
 * address carries every rail's IPv4 address (8 bytes + 4 per further rail). A
 * pair uses the smaller rail count of its two sides, at least one socket per
 * rail; rail i pairs with the peer's rail i, the primary is on rail 0. Striped
 * messages are acknowledged by the receiver, and a data socket that is lost
 * (an error, a reset, an end, or data unacknowledged for
 * TC_SOCKET_RAIL_TIMEOUT_MS, default 2000) is dropped with one warning
 * naming the interface while its chunks are sent again on the other sockets:
 * the endpoint does not fail. Losing the primary still fails it.
 *
 * Behaviour the generic interface leaves open:
 * - A truncated receive (TC_ERR_TRUNCATED) reports req->bytes = its capacity.
 * - Messages that arrived whole before an endpoint failed can still be
 *   received from it; any other post on a failed endpoint fails at once with
 *   ep->failed (and sets req->status to it).
 * - A failed connect, a refused handshake or a closed/reset socket, primary
 *   or data socket alike (with one rail; see above for several), fail the
 *   endpoint with TC_ERR_PEER_FAILED; bytes
 *   that break the wire format with TC_ERR_PROTOCOL. ep->error names the peer
 *   id and address (and the data socket). Before failing, what the other
 *   sockets already hold is read, so messages sent whole before a peer closed
 *   can still be received. A data socket closed cleanly while no striped
 *   message is in flight is only closed: the primary reports the peer's end.
 * - cancel() completes a queued request with TC_ERR_ABORTED. A send partly
 *   written (striped sends once their header is written) also completes with
 *   TC_ERR_ABORTED at once, and its rest goes out from a private copy, since
 *   the peer expects it. A receive being filled completes with
 *   TC_ERR_ABORTED, and the rest of its message is dropped: nothing more is
 *   written to its buffer. A finished request gives TC_ERR_INVALID_STATE.
 * - A receive into a sink (tc_tp_recv_sink) gets a message of the primary
 *   socket as it is read, from a 64 KiB staging area, in pieces of whole
 *   units; a striped or unexpected message lands whole first (a buffer of its
 *   size) and goes to the sink in 64 KiB pieces once complete.
 * - Nothing here times out a peer that does not take part: an endpoint on the
 *   accepting side (the larger id) whose peer never connects or whose every
 *   hello is refused (another secret: the connecting side fails with the
 *   refusal, the accepting one cannot tell it from a stranger's), and a
 *   connecting endpoint whose listener accepted but never answers the hello,
 *   keep their requests TC_INPROGRESS and ep->error "". A peer stopped
 *   (SIGSTOP) or computing without calling progress looks the same, so a
 *   connect-side deadline would fail slow but live peers, and a hello is no
 *   evidence to fail an endpoint on (anyone can send one). The caller bounds
 *   the wait and then cancels or closes (the runtime: its operation timeout
 *   TC_TIMEOUT_S, 600 s, and its heartbeats, TC_HEARTBEAT_MS x
 *   TC_HEARTBEAT_MISSES, about 2 s; docs/fault_tolerance.md). Only the
 *   listener bounds its side: an accepted socket whose handshake has not ended
 *   within TC_SOCKET_HANDSHAKE_TIMEOUT_MS is closed, and a tcomms peer
 *   connecting through it then fails with TC_ERR_PEER_FAILED.
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
