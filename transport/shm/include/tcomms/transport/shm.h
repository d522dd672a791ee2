/**
 * @file shm.h
 * @brief The shared-memory backend: processes of one node (docs/transport_shm.md).
 *
 * Every pair of processes shares one segment: /dev/shm/tcomms-<pid>-<nonce>-<nonce>,
 * created with mode 0600 by the side that calls tc_tp_ep_connect() first,
 * opened by the other side on its connect (mapped then or in a later
 * tc_tp_progress()), and unlinked by the opener as soon as it has mapped it.
 * The creator decides for the pair: when /dev/shm has no room even for the
 * smallest segment, the file's size says so, and both connects return
 * TC_ERR_UNSUPPORTED naming the bytes wanted and free (use another transport
 * for that peer).
 * The segment holds two single-producer/single-consumer rings of fixed cells
 * (one per direction). A message of at most the cell size travels in one cell
 * (eager); a larger one is read by the receiver straight from the sender's
 * memory with process_vm_readv() (single copy) when the kernel allows it
 * (checked per pair when connecting), and otherwise is pipelined through the
 * cells. The layout is in shm_layout.h.
 *
 * Both sides must call tc_tp_ep_connect() with the other's address; the
 * address (TC_TP_SHM_ADDR_LEN bytes) carries the pid, a random nonce and the
 * pid namespace. Processes in different pid namespaces are refused
 * (TC_ERR_UNSUPPORTED: use tcp). Before either side reads a ring, both prove
 * they hold the context's secret by a challenge-response through the segment
 * header (tcomms/transport/auth.h, purpose "shm"; shm_layout.h): fresh nonces
 * from both sides, HMAC-SHA-256 over both ids, both nonces, the segment's name,
 * geometry and pids. A side whose proof does not check out is refused
 * (TC_ERR_PEER_FAILED, "did not prove it holds this job's secret"; the other
 * side: "refused our proof"). With no secret the same exchange runs with a
 * public key. See docs/security.md for what this does and does not protect.
 *
 * Options (hint key / environment variable, hint wins):
 * - shm_cell_size / TC_SHM_CELL_SIZE: payload bytes of a cell = eager limit
 *   (default 8192, 64..1 MiB, a multiple of 64).
 * - shm_cells / TC_SHM_CELLS: cells per direction (default 32, 2..2^24).
 * - shm_local_ranks (hint only; the runtime sets it): ranks of this node that
 *   share /dev/shm (default 1).
 * The two geometry options are the largest a segment gets: its creator takes
 * the largest of them and three smaller steps (8 x 8192, 4 x 4096, 4 x 1024)
 * that fits its pair's share of the free space of /dev/shm, and warns once per
 * context when it is smaller (docs/transport_shm.md, "Size").
 * - shm_cma / TC_SHM_CMA: use process_vm_readv/writev (default on).
 * - shm_liveness_ms / TC_SHM_LIVENESS_MS: how often a peer's pid is checked
 *   (default 100 ms, 1..60000).
 * - shm_full_pairs / TC_SHM_FULL_PAIRS: for tests, pairs of ids "A-B,C-D"
 *   whose segment is taken not to fit (as a full /dev/shm).
 * A segment's header and rings are reserved when it is made, its lanes when the
 * runtime first asks for them (tc_tp_shm_ep_lane: TC_ERR_NO_RESOURCE when
 * /dev/shm is full then).
 *
 * Behaviour the generic interface leaves open:
 * - A send of at most the cell size completes when it is copied into the ring;
 *   a larger one, with single copy, when the receiver has read it (so it
 *   needs the receiver's progress); pipelined, when its last cell is in the ring.
 * - A truncated receive (TC_ERR_TRUNCATED) holds the first cap bytes and
 *   reports req->bytes = cap; the send completes with TC_OK.
 * - One-sided with process_vm_readv/writev: put and get complete when posted
 *   (a system call) and need nothing from the target. Without them, put and
 *   get travel through the rings and need the target to call
 *   tc_tp_progress(). A signal always travels through the ring and is applied
 *   (atomically) by the target in its tc_tp_progress(); it completes at the
 *   initiator when the target acknowledges it. Puts posted before a signal on
 *   one endpoint are visible before it: either they were written when posted,
 *   or they precede it in the ring.
 * - A peer whose process exited is noticed within shm_liveness_ms and fails
 *   the endpoint with TC_ERR_PEER_FAILED ("shm: peer 3 (pid 4242) exited");
 *   a peer that closed its endpoint likewise ("closed its endpoint"). Cells
 *   it wrote before are still delivered first. A peer that is stopped
 *   (SIGSTOP) or never calls progress is alive to this check: its requests
 *   stay pending until the caller's timeout (the runtime's heartbeats and
 *   operation timeout, docs/fault_tolerance.md).
 * - A single-copy send completes only when its receiver has read it, that is
 *   while the receiver keeps calling tc_tp_progress() (with its receive
 *   posted); an eager or pipelined send completes once its cells are written.
 * - Bytes in the segment that break the layout (a length beyond a cell, a
 *   ring index beyond its capacity, an unknown cell type, an offset outside a
 *   registration) fail the endpoint with TC_ERR_PROTOCOL; nothing is read or
 *   written out of bounds.
 * - cancel() completes a queued request with TC_ERR_ABORTED at once, and the
 *   caller has its buffer back. A send half pushed through the cells goes on
 *   from a private copy; a receive being filled drops the rest of its message.
 *   A single-copy send already announced is withdrawn: its receive, posted or
 *   not yet, ends with TC_ERR_ABORTED, never TC_OK, and a consumer
 *   (recv_sink) never sees bytes the owner wrote after the cancel; the
 *   aborted receive's buffer holds unspecified bytes (a piece of up to 1 MiB
 *   copied while the owner wrote may hold its new bytes). The owner may free
 *   the buffer once cancel() returns: a read that then fails is the
 *   withdrawal, not a protocol error. (At most 128 single-copy sends are announced at a time
 *   per endpoint, each withdrawable; later ones go through the cells.) A
 *   one-sided request already in the ring gives TC_ERR_INVALID_STATE.
 * - wait() polls the rings, sleeping up to 1 ms between looks, and returns
 *   TC_OK on activity or on timeout (a negative timeout is taken as 0).
 * - Connecting an id to itself is refused (use the self backend).
 *
 * A context is not thread-safe: one thread at a time may call into it.
 */
#ifndef TCOMMS_TRANSPORT_SHM_H
#define TCOMMS_TRANSPORT_SHM_H

#include <stddef.h>

#include "tcomms/base/status.h"
#include "tcomms/transport/transport.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief The ops table of the shared-memory backend (name "shm"). */
extern const tc_tp_ops_t tc_tp_shm_ops;

/** @brief Bytes of a packed shm address. */
#define TC_TP_SHM_ADDR_LEN 48

/** @brief Bytes of a packed shm remote key. */
#define TC_TP_SHM_RKEY_LEN 40

/** @brief Largest message the shm backend sends or accepts (bytes). */
#define TC_TP_SHM_MAX_MSG (1ULL << 40)

/**
 * @brief For tests and debugging tools: the mapping of the segment of @p ep.
 * @return TC_ERR_INVALID_STATE while the endpoint has no segment yet.
 */
tc_status_t tc_tp_shm_ep_segment(const tc_tp_ep_t *ep, void **base_p, size_t *len_p);

/** @brief Whether this endpoint moves large messages with process_vm_readv (1) or not (0). */
int tc_tp_shm_ep_single_copy(const tc_tp_ep_t *ep);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_TRANSPORT_SHM_H */
