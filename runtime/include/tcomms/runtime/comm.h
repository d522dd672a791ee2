/**
 * @file comm.h
 * @brief The runtime communicator: bootstrap, endpoints, and collective execution.
 *
 * The public API (api/) checks arguments and maps onto these calls.
 */
#ifndef TCOMMS_RUNTIME_COMM_H
#define TCOMMS_RUNTIME_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "tcomms/algo/schedule.h"
#include "tcomms/base/config.h"
#include "tcomms/base/dtype.h"
#include "tcomms/base/status.h"
#include "tcomms/runtime/bootstrap.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tc_rt_comm tc_rt_comm_t;

/** @brief Parameters of tc_rt_comm_create(). */
typedef struct tc_rt_comm_params {
    tc_boot_kind_t boot;      /**< bootstrap */
    const char *name;         /**< name for logs, or NULL */
    const tc_hints_t *hints;  /**< communicator hints, or NULL */
    int64_t timeout_ms;       /**< default timeout; <= 0: TC_TIMEOUT_S or 600 s */
} tc_rt_comm_params_t;

/** @brief One collective call. */
typedef struct tc_rt_coll {
    tc_coll_t coll;
    const void *sendbuf;
    void *recvbuf;
    size_t count;
    tc_dtype_t dtype;
    tc_redop_t op;
    int root;                 /**< -1 when not rooted */
    const tc_hints_t *hints;  /**< per-operation hints (algo=...), or NULL */
    int64_t timeout_ms;       /**< <= 0: the communicator's */
} tc_rt_coll_t;

/** @brief Join the job and build the world communicator. Collective, bounded. */
tc_status_t tc_rt_comm_create(const tc_rt_comm_params_t *params, tc_rt_comm_t **comm_p);

/** @brief Free a communicator (local; never waits on peers). */
void tc_rt_comm_destroy(tc_rt_comm_t *comm);

int tc_rt_comm_rank(const tc_rt_comm_t *comm);
int tc_rt_comm_size(const tc_rt_comm_t *comm);
const char *tc_rt_comm_name(const tc_rt_comm_t *comm);

/**
 * @brief Whether rank @p peer runs on this node (its published topology node
 *        id equals ours). Looked up once per peer and cached, so peers never
 *        used cost nothing.
 */
tc_status_t tc_rt_comm_same_node(tc_rt_comm_t *comm, int peer, uint64_t deadline_ns,
                                 int *same_p);

/**
 * @brief Run one collective to completion (blocking, bounded by its timeout).
 * @return TC_ERR_TIMEOUT naming the ranks not yet heard from,
 *         TC_ERR_PEER_FAILED naming the failed rank, or the algorithm's error.
 */
tc_status_t tc_rt_coll_run(tc_rt_comm_t *comm, const tc_rt_coll_t *call);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_RUNTIME_COMM_H */
