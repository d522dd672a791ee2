/**
 * @file win.h
 * @brief One-sided communication: windows over a communicator (see
 *        @ref tc_windows). Included by tcomms/tcomms.h; may be included alone.
 */
#ifndef TCOMMS_WIN_H
#define TCOMMS_WIN_H

#include <stddef.h>
#include <stdint.h>

#include "tcomms/tcomms.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief A window: memory every rank of a communicator exposed to one-sided operations. */
typedef struct tc_win tc_win_t;

/**
 * @page tc_windows One-sided communication: windows
 *
 * A window is memory that every rank of a communicator exposes to the others
 * (tc_win_create() for the caller's buffer, tc_win_allocate() for memory the
 * library allocates), plus ::TC_WIN_SIGNAL_SLOTS signal slots per rank:
 * 64-bit counters in library memory, all zero at creation, that other ranks
 * update with tc_win_signal() or tc_win_put_signal() and the owner waits on
 * with tc_win_wait_signal(). Peers are ranks of the window's communicator
 * (of a split communicator too); offsets are bytes into the peer's window.
 *
 * Completion and ordering:
 * - A put or put_signal that completed (the blocking call returned TC_OK, or
 *   its work completed) has its data in the target's window: a load by the
 *   target, or a get by any rank, issued after the target learnt of the
 *   completion (a signal, a message, a barrier) sees it. The source buffer
 *   may be reused once the put completed.
 * - A get that completed has the data in the local buffer.
 * - tc_win_flush(win, peer) returns once every operation this rank issued on
 *   the window to @p peer (::TC_WIN_ALL_PEERS: to every rank) before the
 *   flush completed, with the guarantees above.
 * - Between one origin and one target on one window, a signal (the one of a
 *   put_signal, or a tc_win_signal()) is applied only after the data of every
 *   put the origin issued on that window to that target before it is in the
 *   target's window: a target that sees the signal value sees the data. Puts
 *   without a signal to one target are not ordered among themselves
 *   (overlapping puts in flight together give an undefined result); gets are
 *   not ordered against puts in flight.
 * - Signals are atomic: concurrent ADDs from any number of ranks all count.
 * - Nothing is ordered between different targets, between different windows
 *   (to signal on one window after puts on another, flush the other first:
 *   tc_win_flush(other, peer)), or against operations of the communicator
 *   (collectives, send/recv) unless one completed first.
 *
 * Fire-and-forget: opts->async with work_p NULL issues an operation that no
 * work object tracks; tc_win_flush() (to its peer, or ::TC_WIN_ALL_PEERS)
 * completes it and returns its error, if it failed; tc_win_destroy() completes
 * it too. On the direct path (below) it completes before the call returns.
 *
 * The direct path: operations to this rank itself, and to a same-node rank
 * whose window tc_win_allocate() made (both sides) when the shared-memory
 * transport is on (not with TC_SHM=0), are made by the calling thread
 * without the library's lock or a work object: puts and gets are copies
 * through the peer's mapped shared-memory segment (see
 * tc_win_shared_query()), signals are atomics on the peer's slots (which
 * live in that segment), a put_signal copies then signals with release
 * order. They complete before the call returns, and the rules above hold the
 * same; they are not in the flight recorder and not bounded by a timeout
 * (nothing waits).
 *
 * Progress: the target calls nothing. While a window exists the library's
 *   progress thread serves the transports that move data in software (TCP;
 *   signals and, without cross-memory attach, data over shared memory).
 *
 * Checks and failures: every call checks its arguments at the origin: a peer
 * out of range, an offset or length beyond the peer's window size (learnt at
 * creation) or a slot out of range is TC_ERR_INVALID_ARG naming them, and
 * nothing is written. A zero-byte put or get is allowed and completes at
 * once. Every wait is bounded by the operation's timeout (opts->timeout_ms,
 * else the communicator's). A target that died ends the operation with
 * TC_ERR_PEER_FAILED naming it; as for every operation, a failure or a timeout
 * leaves the communicator (and its windows) unusable, except the timeout of
 * tc_win_wait_signal() (it waited on this rank's own slot, with nothing in
 * flight: wait again, or give up); tc_comm_abort() and
 * tc_comm_revoke() end pending window operations (TC_ERR_ABORTED,
 * TC_ERR_REVOKED). After tc_comm_destroy() a window's calls return
 * TC_ERR_INVALID_STATE; only tc_win_destroy() is left to call.
 *
 * Threads: window calls (except create and destroy, which are collective on
 * the communicator) may come from any thread; off the direct path they
 * serialise on the library's lock, on it they run concurrently. Blocking
 * operations off the direct path without a work object on one window from two
 * threads at once: the second gets TC_ERR_INVALID_STATE.
 *
 * Window operations off the direct path appear in the flight recorder as "win_put", "win_get",
 * "win_put_signal" and "win_signal" with their byte count and target (root).
 */

/** @brief Signal slots of every window on every rank (slot 0 to 63). */
#define TC_WIN_SIGNAL_SLOTS 64

/** @brief tc_win_flush(): every rank. */
#define TC_WIN_ALL_PEERS (-1)

/** @brief How a signal updates the target's slot. */
typedef enum tc_win_signal_op {
    TC_WIN_SIGNAL_ADD = 0, /**< slot += value (atomic; concurrent adds all count) */
    TC_WIN_SIGNAL_SET = 1, /**< slot = value (atomic) */
} tc_win_signal_op_t;

/** @brief The comparison tc_win_wait_signal() waits for: slot CMP value. */
typedef enum tc_win_cmp {
    TC_WIN_CMP_EQ = 0, /**< slot == value */
    TC_WIN_CMP_NE,     /**< slot != value */
    TC_WIN_CMP_GE,     /**< slot >= value */
    TC_WIN_CMP_GT,     /**< slot > value */
    TC_WIN_CMP_LE,     /**< slot <= value */
    TC_WIN_CMP_LT,     /**< slot < value */
} tc_win_cmp_t;

/**
 * @brief Expose @p bytes at @p buf to every rank of @p comm (collective).
 *
 * Registers the buffer and this rank's signal slots with the transports that
 * reach the communicator's ranks and exchanges the keys and sizes over @p comm
 * (so it runs as a collective on it, in the same order on every rank). Sizes
 * may differ between ranks. The buffer must stay valid until tc_win_destroy().
 * See @ref tc_windows.
 * @param comm the communicator.
 * @param buf this rank's memory (NULL only with @p bytes 0).
 * @param bytes its size (0: this rank exposes nothing but its signal slots).
 * @param opts timeout (opts->async must be 0), or NULL.
 * @param win_p receives the window.
 * @return TC_OK; TC_ERR_INVALID_ARG for NULL arguments or async options; the
 *         error of the exchange, or TC_ERR_INVALID_STATE when another rank
 *         could not set up its side (its own error says why).
 */
tc_status_t tc_win_create(tc_comm_t *comm, void *buf, size_t bytes, const tc_op_opts_t *opts,
                          tc_win_t **win_p);

/**
 * @brief tc_win_create() over @p bytes the library allocates (zeroed), in a
 *        shared-memory segment when it can, so that same-node ranks can reach
 *        it by load and store through tc_win_shared_query().
 * @param comm the communicator.
 * @param bytes this rank's size (0 allowed: *base_p is then NULL).
 * @param opts timeout (opts->async must be 0), or NULL.
 * @param base_p receives this rank's memory (freed by tc_win_destroy()).
 * @param win_p receives the window.
 * @return as tc_win_create().
 */
tc_status_t tc_win_allocate(tc_comm_t *comm, size_t bytes, const tc_op_opts_t *opts, void **base_p,
                            tc_win_t **win_p);

/**
 * @brief A pointer through which rank @p peer's window can be read and
 *        written directly (torchcomms' map_remote_tensor).
 *
 * This rank's own window always; another rank's when both windows were made
 * by tc_win_allocate(), the peer runs on this node and its segment could be
 * mapped. Loads and stores through it are ordinary memory accesses: order
 * them with signals, tc_barrier() or your own atomics.
 * @param win the window.
 * @param peer a rank of the window's communicator.
 * @param ptr_p receives the pointer.
 * @return TC_OK; TC_ERR_UNSUPPORTED saying why the peer cannot be reached so
 *         (created window, another node, no segment); TC_ERR_INVALID_ARG.
 */
tc_status_t tc_win_shared_query(tc_win_t *win, int peer, void **ptr_p);

/**
 * @brief Free a window (collective over its communicator).
 *
 * Completes this rank's operations on it (tc_win_flush()), waits until every
 * rank did (a barrier), then releases the registrations (and the memory of
 * tc_win_allocate()). On a broken communicator, or after tc_comm_destroy(),
 * the barrier is skipped and pending operations are ended; the window is
 * freed whatever the status, and the handle is stale after.
 * @param win the window.
 * @return TC_OK, or the flush's or barrier's error.
 */
tc_status_t tc_win_destroy(tc_win_t *win);

/**
 * @brief The size in bytes of rank @p peer's window (-1: this rank's).
 * @param win the window.
 * @param peer a rank of the window's communicator, or -1.
 * @param bytes_p receives the size.
 * @return TC_OK, or TC_ERR_INVALID_ARG.
 */
tc_status_t tc_win_size(tc_win_t *win, int peer, size_t *bytes_p);

/**
 * @brief Write @p bytes from @p src into rank @p peer's window at @p offset.
 * @param win the window.
 * @param src the data (may be NULL when @p bytes is 0).
 * @param bytes length (0: completes at once).
 * @param peer a rank of the window's communicator (this rank too).
 * @param offset bytes into the peer's window; offset + bytes must not exceed its size.
 * @param opts per-operation options (timeout, async), or NULL.
 * @param work_p receives a work object, or NULL (with opts->async: fire-and-forget, completed
 *        by tc_win_flush(); see @ref tc_windows).
 * @return TC_OK, or an error status with the detail in tc_last_error() (see @ref tc_windows).
 */
tc_status_t tc_win_put(tc_win_t *win, const void *src, size_t bytes, int peer, uint64_t offset,
                       const tc_op_opts_t *opts, tc_work_t **work_p);

/**
 * @brief Read @p bytes from rank @p peer's window at @p offset into @p dst.
 * @param win the window.
 * @param dst where the data lands.
 * @param bytes length (0: completes at once).
 * @param peer a rank of the window's communicator (this rank too).
 * @param offset bytes into the peer's window; offset + bytes must not exceed its size.
 * @param opts per-operation options (timeout, async), or NULL.
 * @param work_p receives a work object, or NULL (with opts->async: fire-and-forget, completed
 *        by tc_win_flush(); see @ref tc_windows).
 * @return TC_OK, or an error status with the detail in tc_last_error() (see @ref tc_windows).
 */
tc_status_t tc_win_get(tc_win_t *win, void *dst, size_t bytes, int peer, uint64_t offset,
                       const tc_op_opts_t *opts, tc_work_t **work_p);

/**
 * @brief tc_win_put(), then update the peer's slot @p slot: the peer sees the
 *        new slot value only once the data is in its window.
 * @param win the window.
 * @param src the data (may be NULL when @p bytes is 0).
 * @param bytes length (0: only the signal).
 * @param peer a rank of the window's communicator.
 * @param offset bytes into the peer's window.
 * @param slot the peer's signal slot, 0 to ::TC_WIN_SIGNAL_SLOTS - 1.
 * @param value the operand.
 * @param op ::TC_WIN_SIGNAL_ADD or ::TC_WIN_SIGNAL_SET.
 * @param opts per-operation options (timeout, async), or NULL.
 * @param work_p receives a work object, or NULL (with opts->async: fire-and-forget, completed
 *        by tc_win_flush(); see @ref tc_windows).
 * @return TC_OK, or an error status with the detail in tc_last_error() (see @ref tc_windows).
 */
tc_status_t tc_win_put_signal(tc_win_t *win, const void *src, size_t bytes, int peer,
                              uint64_t offset, int slot, uint64_t value, tc_win_signal_op_t op,
                              const tc_op_opts_t *opts, tc_work_t **work_p);

/**
 * @brief Update rank @p peer's signal slot @p slot (after every earlier put of
 *        this rank to that peer is in its window).
 * @param win the window.
 * @param peer a rank of the window's communicator (this rank too).
 * @param slot the peer's signal slot, 0 to ::TC_WIN_SIGNAL_SLOTS - 1.
 * @param value the operand.
 * @param op ::TC_WIN_SIGNAL_ADD or ::TC_WIN_SIGNAL_SET.
 * @param opts per-operation options (timeout, async), or NULL.
 * @param work_p receives a work object, or NULL (with opts->async: fire-and-forget, completed
 *        by tc_win_flush(); see @ref tc_windows).
 * @return TC_OK, or an error status with the detail in tc_last_error() (see @ref tc_windows).
 */
tc_status_t tc_win_signal(tc_win_t *win, int peer, int slot, uint64_t value, tc_win_signal_op_t op,
                          const tc_op_opts_t *opts, tc_work_t **work_p);

/**
 * @brief Wait until this rank's slot @p slot satisfies `slot CMP value`.
 *
 * Progresses the library while it waits. Slots are never reset by the
 * library: count upwards, or reset a slot by signalling this rank itself.
 * @param win the window.
 * @param slot this rank's slot, 0 to ::TC_WIN_SIGNAL_SLOTS - 1.
 * @param cmp the comparison.
 * @param value the operand.
 * @param timeout_ms bound of the wait; <= 0: the communicator's timeout.
 * @param seen_p receives the slot's value that satisfied it (on a timeout or
 *        error: the last value seen).
 * @return TC_OK; TC_ERR_TIMEOUT naming the slot, its value and what was
 *         awaited (the communicator stays usable); the communicator's error
 *         once it is broken (a failed peer, abort, revoke).
 */
tc_status_t tc_win_wait_signal(tc_win_t *win, int slot, tc_win_cmp_t cmp, uint64_t value,
                               int64_t timeout_ms, uint64_t *seen_p);

/**
 * @brief This rank's slot @p slot, read now (atomic load; no progress).
 * @param win the window.
 * @param slot this rank's slot.
 * @param value_p receives its value.
 * @return TC_OK; TC_ERR_INVALID_ARG; TC_ERR_INVALID_STATE once the window's
 *         communicator is destroyed.
 */
tc_status_t tc_win_read_signal(tc_win_t *win, int slot, uint64_t *value_p);

/**
 * @brief Wait until every operation this rank issued on @p win to @p peer
 *        (::TC_WIN_ALL_PEERS: to every rank) completed.
 * @param win the window.
 * @param peer a rank of the window's communicator, or ::TC_WIN_ALL_PEERS.
 * @param timeout_ms bound of the wait; <= 0: the communicator's timeout.
 * @return TC_OK; TC_ERR_TIMEOUT; the communicator's error when an operation
 *         failed (the communicator is then unusable).
 */
tc_status_t tc_win_flush(tc_win_t *win, int peer, int64_t timeout_ms);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_WIN_H */
