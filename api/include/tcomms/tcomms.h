/**
 * @file tcomms.h
 * @brief The public C API of tcomms.
 *
 * A communicator is created eagerly over every process of a job (bootstrapped
 * through PMIx when a PMIx server is present — tcrun, mpirun, srun --mpi=pmix —
 * or as a world of one), bound to the CPU. Collectives are called by every rank
 * of the communicator in the same order with matching arguments.
 *
 * Every call returns a ::tc_status_t; on error, tc_last_error() says what
 * happened and where. Every wait is bounded by a timeout (default 600 s,
 * `TC_TIMEOUT_S`, per communicator and per operation).
 *
 * @code
 * tc_comm_t *comm;
 * if (tc_comm_create(NULL, &comm) != TC_OK) { fprintf(stderr, "%s\n", tc_last_error()); ... }
 * tc_all_reduce(comm, in, out, n, TC_FLOAT32, TC_SUM, NULL, NULL);
 * tc_comm_destroy(comm);
 * @endcode
 */
#ifndef TCOMMS_TCOMMS_H
#define TCOMMS_TCOMMS_H

#include <stddef.h>
#include <stdint.h>

#include "tcomms/base/dtype.h"
#include "tcomms/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief Version of this header: major * 10000 + minor * 100 + patch. */
#define TC_VERSION 100

/** @brief A communicator: a group of ranks that run collectives together. */
typedef struct tc_comm tc_comm_t;

/** @brief A handle on an asynchronous operation (not yet available: pass NULL). */
typedef struct tc_work tc_work_t;

/** @brief How a communicator finds the other processes of the job. */
typedef enum tc_bootstrap {
    TC_BOOTSTRAP_AUTO = 0, /**< PMIx when a server is present, else a world of one */
    TC_BOOTSTRAP_PMIX,     /**< PMIx; an error (not a hang) when no server is present */
    TC_BOOTSTRAP_SELF,     /**< a world of one process */
} tc_bootstrap_t;

/** @brief Options of tc_comm_create(). Initialise with ::TC_COMM_OPTS_INIT. */
typedef struct tc_comm_opts {
    uint32_t size;            /**< sizeof(tc_comm_opts_t), for forward compatibility */
    tc_bootstrap_t bootstrap; /**< how to find the other ranks */
    const char *name;         /**< a name for logs and errors, or NULL ("world") */
    const char *hints;        /**< "key=value,..." hints, or NULL */
    int64_t timeout_ms;       /**< default timeout of every operation; <= 0: TC_TIMEOUT_S or 600 s */
} tc_comm_opts_t;

/** @brief Default communicator options. */
#define TC_COMM_OPTS_INIT {sizeof(tc_comm_opts_t), TC_BOOTSTRAP_AUTO, NULL, NULL, 0}

/** @brief Per-operation options. Initialise with ::TC_OP_OPTS_INIT. */
typedef struct tc_op_opts {
    uint32_t size;       /**< sizeof(tc_op_opts_t) */
    int64_t timeout_ms;  /**< timeout of this operation; <= 0: the communicator's */
    const char *hints;   /**< "key=value,..." e.g. "algo=ring", or NULL */
} tc_op_opts_t;

/** @brief Default operation options. */
#define TC_OP_OPTS_INIT {sizeof(tc_op_opts_t), 0, NULL}

/**
 * @brief Create the world communicator over every process of the job.
 *
 * Collective over all processes of the job. Bounded by the timeout.
 * @param opts options, or NULL for the defaults.
 * @param comm_p receives the communicator on success.
 * @return TC_OK; TC_ERR_BOOTSTRAP when the job cannot be joined (e.g. no PMIx
 *         server with TC_BOOTSTRAP_PMIX); TC_ERR_CONFIG for a malformed TC_*
 *         variable or hint; TC_ERR_INVALID_ARG for bad options.
 */
tc_status_t tc_comm_create(const tc_comm_opts_t *opts, tc_comm_t **comm_p);

/**
 * @brief Destroy a communicator and free its resources. Local, never waits on peers.
 * @param comm a communicator, or NULL (nothing happens).
 * @return TC_OK.
 */
tc_status_t tc_comm_destroy(tc_comm_t *comm);

/**
 * @brief This process's rank in @p comm.
 * @param comm the communicator.
 * @param rank_p receives the rank, in [0, size).
 * @return TC_OK or TC_ERR_INVALID_ARG.
 */
tc_status_t tc_comm_rank(const tc_comm_t *comm, int *rank_p);

/**
 * @brief The number of ranks in @p comm.
 * @param comm the communicator.
 * @param size_p receives the size.
 * @return TC_OK or TC_ERR_INVALID_ARG.
 */
tc_status_t tc_comm_size(const tc_comm_t *comm, int *size_p);

/**
 * @brief Reduce @p count elements across all ranks; every rank gets the result.
 *
 * In place when @p sendbuf == @p recvbuf. Otherwise the buffers must not overlap.
 * The algorithm is chosen by the library, or by the hint `algo=<name>`
 * (`ring`, `recursive_doubling`, `rabenseifner`; by default the cost model chooses) in @p opts or `TC_ALGO_ALL_REDUCE`.
 * @param comm the communicator.
 * @param sendbuf input of this rank: @p count elements of @p dtype.
 * @param recvbuf output: @p count elements of @p dtype.
 * @param count number of elements (0 is allowed and moves nothing).
 * @param dtype element type.
 * @param op reduction operation (bitwise ops on integer types only).
 * @param opts per-operation options, or NULL.
 * @param work_p must be NULL: asynchronous operations are not available yet.
 * @return TC_OK; TC_ERR_INVALID_ARG for a bad argument; TC_ERR_UNSUPPORTED for
 *         an op that does not apply to the type; TC_ERR_TIMEOUT naming the
 *         ranks not yet heard from; TC_ERR_PEER_FAILED naming the failed rank.
 */
tc_status_t tc_all_reduce(tc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                          tc_dtype_t dtype, tc_redop_t op, const tc_op_opts_t *opts,
                          tc_work_t **work_p);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_TCOMMS_H */
