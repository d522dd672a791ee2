/**
 * @file p2p.h
 * @brief Point-to-point: sends and receives (from a given rank or from any
 *        source) and batches of them. Included by tcomms/tcomms.h; may be
 *        included alone.
 */
#ifndef TCOMMS_P2P_H
#define TCOMMS_P2P_H

#include <stddef.h>

#include "tcomms/tcomms.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Send @p count elements to rank @p peer of @p comm.
 *
 * Messages between two ranks are received in the order they were sent. The
 * receiver's length in bytes (count times the type's size) must equal the
 * sender's: otherwise the receive ends with TC_ERR_MISMATCH naming the sender,
 * nothing written past its buffer (the send itself completes). Types are not
 * compared: 8 TC_INT32 arrive as 4 TC_INT64.
 * Inside tc_batch_begin() / tc_batch_end() the send is only recorded.
 * @param comm the communicator.
 * @param buf the data: input at the root (or the sender), output elsewhere.
 * @param count number of elements (per rank where the collective says so).
 * @param dtype element type.
 * @param peer the other rank.
 * @param opts per-operation options (timeout, hints, async), or NULL.
 * @param work_p receives a work object (required with opts->async), or NULL.
 * @return TC_OK, or an error status with the detail in tc_last_error() (see @ref tc_ops).
 */
tc_status_t tc_send(tc_comm_t *comm, const void *buf, size_t count, tc_dtype_t dtype, int peer,
                    const tc_op_opts_t *opts, tc_work_t **work_p);

/** @brief tc_recv()'s peer for a message from any rank of the communicator. */
#define TC_ANY_SOURCE (-1)

/**
 * @brief Receive @p count elements from rank @p peer (see tc_send()), or from
 *        whichever rank's message comes first with @p peer TC_ANY_SOURCE.
 *
 * A receive from any source takes the next message of one rank (messages
 * between two ranks still match in issue order, and receives from any source
 * among themselves); tc_work_source() tells which rank, so pass @p work_p to
 * learn it. It is issued alone, not inside a batch (TC_ERR_UNSUPPORTED);
 * while one has no message yet, a receive from a given rank on the same
 * communicator is refused with TC_ERR_INVALID_STATE (which message each would
 * take would depend on when they arrive). It looks at every rank of the
 * communicator on each progress pass and connects to all of them first.
 * @param comm the communicator.
 * @param buf the data: input at the root (or the sender), output elsewhere.
 * @param count number of elements (per rank where the collective says so).
 * @param dtype element type.
 * @param peer the other rank, or TC_ANY_SOURCE.
 * @param opts per-operation options (timeout, hints, async), or NULL.
 * @param work_p receives a work object (required with opts->async), or NULL.
 * @return TC_OK; TC_ERR_MISMATCH when the sender's count differs, larger or
 *         smaller (the detail names the bytes expected and the peer; nothing
 *         is written past @p count elements; the communicator is then
 *         unusable, see @ref tc_ops), or another error status with the detail
 *         in tc_last_error() (see @ref tc_ops).
 */
tc_status_t tc_recv(tc_comm_t *comm, void *buf, size_t count, tc_dtype_t dtype, int peer,
                    const tc_op_opts_t *opts, tc_work_t **work_p);

/**
 * @brief Start recording a batch: tc_send() and tc_recv() calls on @p comm
 *        until tc_batch_end() are issued together, concurrently.
 *
 * Inside a batch, send and recv take NULL opts and work_p; any other
 * operation on @p comm is TC_ERR_INVALID_STATE.
 * @param comm the communicator.
 * @return TC_OK, or an error status with the detail in tc_last_error() (see @ref tc_ops).
 */
tc_status_t tc_batch_begin(tc_comm_t *comm);

/**
 * @brief Issue every send and receive recorded since tc_batch_begin().
 *
 * Only the thread that began the batch ends it. Refused (TC_ERR_INVALID_STATE) while another
 * thread is inside a call on @p comm, or for its options (TC_ERR_INVALID_ARG), the batch stays
 * open: call again, or tc_batch_cancel().
 * @param comm the communicator.
 * @param opts per-operation options (timeout, hints, async), or NULL.
 * @param work_p receives a work object (required with opts->async), or NULL.
 * @return TC_OK, or an error status with the detail in tc_last_error() (see @ref tc_ops).
 */
tc_status_t tc_batch_end(tc_comm_t *comm, const tc_op_opts_t *opts, tc_work_t **work_p);

/**
 * @brief Drop the batch this thread is recording on @p comm without issuing it: nothing
 *        recorded is sent or received (e.g. after tc_batch_end() was refused and the
 *        caller gives up).
 * @param comm the communicator.
 * @return TC_OK; TC_ERR_INVALID_STATE when no batch is open, or another thread's is.
 */
tc_status_t tc_batch_cancel(tc_comm_t *comm);

/**
 * @brief The rank whose message a completed receive from any source took
 *        (tc_recv() with TC_ANY_SOURCE).
 * @param work the work object.
 * @param src_p receives the rank.
 * @return TC_OK; TC_ERR_INVALID_ARG for a work of another operation;
 *         TC_ERR_INVALID_STATE while it runs or when it failed (its error).
 */
tc_status_t tc_work_source(const tc_work_t *work, int *src_p);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_P2P_H */
