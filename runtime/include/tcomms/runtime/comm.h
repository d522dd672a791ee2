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
#include "tcomms/runtime/bootstrap_kv.h"
#include "tcomms/runtime/bootstrap.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tc_rt_comm tc_rt_comm_t;

/** @brief A running, finished or persistent operation. */
typedef struct tc_rt_work tc_rt_work_t;

/** @brief Parameters of tc_rt_comm_create() and of split communicators. */
typedef struct tc_rt_comm_params {
    tc_boot_kind_t boot;     /**< bootstrap (create only) */
    const char *name;        /**< name for logs, or NULL */
    const tc_hints_t *hints; /**< communicator hints, or NULL */
    int64_t timeout_ms; /**< default timeout; <= 0: TC_TIMEOUT_S or 600 s (split: the parent's) */
    int use_cuda;       /**< create: bind to CUDA device @c cuda_device (split: inherited) */
    int cuda_device;
    /** create: the caller's store (@c boot is then ignored), or NULL */
    const tc_boot_kv_params_t *kv;
} tc_rt_comm_params_t;

/** @brief One collective call (or, with coll = TC_COLL_COUNT, a point-to-point batch). */
typedef struct tc_rt_coll {
    tc_coll_t coll;
    const void *sendbuf;
    void *recvbuf;
    size_t count;
    tc_dtype_t dtype;
    tc_redop_t op;
    int root;                /**< -1 when not rooted */
    const tc_hints_t *hints; /**< per-operation hints (algo=...), or NULL */
    int64_t timeout_ms;      /**< <= 0: the communicator's */
    /** all_gather_v / reduce_scatter_v: [size] block lengths and offsets
     *  (displs NULL: packed); NULL for the regular collectives. */
    const size_t *counts;
    const size_t *displs;
    /** all_to_all_v (coll = TC_COLL_ALL_TO_ALL with these set): [size] each. */
    const size_t *sendcounts, *sdispls, *recvcounts, *rdispls;
} tc_rt_coll_t;

/** @brief A receive's peer: a message from any rank of the communicator. */
#define TC_RT_ANY_SOURCE (-1)

/** @brief One send or receive of a point-to-point batch. */
typedef struct tc_rt_p2p {
    int is_send;
    void *buf;
    size_t count;
    tc_dtype_t dtype;
    int peer; /**< a rank, or TC_RT_ANY_SOURCE for a receive issued alone */
} tc_rt_p2p_t;

/** @brief How an operation is issued. */
enum {
    TC_RT_ASYNC = 1,      /**< return at once; the progress thread drives it */
    TC_RT_PERSISTENT = 2, /**< prepare only; tc_rt_work_start() runs it, many times */
    TC_RT_ENTERED = 4,    /**< send/recv: the caller holds the communicator (tc_rt_comm_enter) */
};

/** @brief Every TC_* variable tcomms reads after a communicator is made (by a transport, the
 *         log, the cost model, the small-message path, shrink, the flight recorder), checked
 *         now: TC_ERR_CONFIG naming the first malformed one. tc_rt_comm_create() calls it
 *         before joining the job; tc-info shows its verdict. */
tc_status_t tc_rt_config_check(void);

/** @brief Join the job and build the world communicator. Collective, bounded. */
tc_status_t tc_rt_comm_create(const tc_rt_comm_params_t *params, tc_rt_comm_t **comm_p);

/**
 * @brief Split: ranks with the same @p color (>= 0) form a communicator ordered
 *        by (@p key, rank). Collective over @p parent (an all-gather of 24 bytes
 *        per rank). @p color < 0: *child_p = NULL.
 */
tc_status_t tc_rt_comm_split(tc_rt_comm_t *parent, int color, int key,
                             const tc_rt_comm_params_t *params, tc_rt_comm_t **child_p);

/**
 * @brief Duplicate: the same ranks in the same order under a new id. Collective
 *        over @p parent; exchanges one 24-byte all-reduce (that of
 *        tc_rt_comm_split_list), not a split's all-gather over every rank.
 */
tc_status_t tc_rt_comm_dup(tc_rt_comm_t *parent, const tc_rt_comm_params_t *params,
                           tc_rt_comm_t **child_p);

/**
 * @brief Split by an explicit list: @p ranks (ranks of @p parent, @p n of them,
 *        the same list on every rank) in that order. Collective over @p parent;
 *        exchanges one 24-byte all-reduce (the lowest id free on every rank, and
 *        @p list_hash's largest and smallest: a rank whose list differs gets
 *        TC_ERR_MISMATCH). Ranks not in the list get *child_p = NULL.
 */
tc_status_t tc_rt_comm_split_list(tc_rt_comm_t *parent, const int *ranks, int n, uint64_t list_hash,
                                  const tc_rt_comm_params_t *params, tc_rt_comm_t **child_p);

/** @brief Cancel every pending operation with TC_ERR_ABORTED and make the
 *         communicator unusable; local, never waits on a peer. */
void tc_rt_comm_abort(tc_rt_comm_t *comm);

/** @brief Revoke: pending and later operations end with TC_ERR_REVOKED, here
 *         at once and on the other ranks when the bootstrap's notice arrives.
 * @return TC_ERR_UNSUPPORTED when the bootstrap cannot tell the others (revoked here only). */
tc_status_t tc_rt_comm_revoke(tc_rt_comm_t *comm);

/** @brief What one kind of operation cost on a communicator. */
typedef struct tc_rt_stat {
    int coll;         /**< tc_coll_t; TC_COLL_COUNT: send/recv */
    const char *algo; /**< the algorithm (static string) */
    uint64_t ops;     /**< operations completed or failed */
    uint64_t failed;  /**< of which failed */
    uint64_t bytes;   /**< payload bytes of this rank (count x element size) */
    uint64_t time_ns; /**< time from start to completion, summed */
} tc_rt_stat_t;

/** @brief Up to @p cap entries (one per collective and algorithm used); returns how many exist. */
int tc_rt_comm_stats(tc_rt_comm_t *comm, tc_rt_stat_t *stats, int cap);

/** @brief One operation, as a hook sees it. */
typedef struct tc_rt_op_info {
    int coll; /**< tc_coll_t; TC_COLL_COUNT: send/recv */
    uint64_t seq;
    size_t count;
    tc_dtype_t dtype;
    int root;
    const char *algo;   /**< NULL before the schedule is known */
    tc_status_t status; /**< after: the result */
    uint64_t time_ns;   /**< after: start to completion */
} tc_rt_op_info_t;

/** @brief Called before each operation is issued (@p after 0) and when it ends (1). */
typedef void (*tc_rt_hook_fn)(const tc_rt_op_info_t *info, int after, void *arg);

/** @brief At most TC_RT_HOOKS hooks per communicator. */
#define TC_RT_HOOKS 4
tc_status_t tc_rt_comm_add_hook(tc_rt_comm_t *comm, tc_rt_hook_fn fn, void *arg);

/** @brief Write the flight recorder to TC_FR_DIR (see tc_comm_dump_fr). */
tc_status_t tc_rt_comm_dump_fr(tc_rt_comm_t *comm);

/** @brief The ranks of @p comm known to have failed: writes up to @p cap, returns how many. */
int tc_rt_comm_failed_ranks(tc_rt_comm_t *comm, int *ranks, int cap);

/**
 * @brief The survivors agree on the failed ranks and form a new communicator.
 *
 * Collective over the surviving ranks of @p comm (which may be broken). The
 * agreement tolerates more failures during it: every survivor returns the
 * same set (a rank dying after the decision may remain in it; the next
 * operation fails naming it). See docs/fault_tolerance.md.
 * @return TC_ERR_TIMEOUT when the survivors do not agree within the timeout;
 *         TC_ERR_PEER_FAILED when the others count this rank as failed.
 */
tc_status_t tc_rt_comm_shrink(tc_rt_comm_t *comm, const tc_rt_comm_params_t *params,
                              tc_rt_comm_t **child_p);

/** @brief Free a communicator (local; never waits on peers). Running works are
 *         cancelled with TC_ERR_ABORTED; their objects stay valid until freed. */
void tc_rt_comm_destroy(tc_rt_comm_t *comm);

int tc_rt_comm_rank(const tc_rt_comm_t *comm);
/** @brief The CUDA device the communicator is bound to, or -1 (the CPU). */
int tc_rt_comm_device(const tc_rt_comm_t *comm);
int tc_rt_comm_size(const tc_rt_comm_t *comm);
const char *tc_rt_comm_name(const tc_rt_comm_t *comm);

/** @brief Facts about a communicator. */
typedef struct tc_rt_comm_info {
    int local_size;
    char launcher[32];
    char host[64];
    int peers_shm, peers_tcp, peers_self;
} tc_rt_comm_info_t;

void tc_rt_comm_info(tc_rt_comm_t *comm, tc_rt_comm_info_t *info);

/**
 * @brief Whether rank @p peer runs on this node (its published topology node
 *        id equals ours). Looked up once per peer and cached, so peers never
 *        used cost nothing.
 */
tc_status_t tc_rt_comm_same_node(tc_rt_comm_t *comm, int peer, uint64_t deadline_ns, int *same_p);

/**
 * @brief Run one collective to completion (blocking, bounded by its timeout).
 * @return TC_ERR_TIMEOUT naming the ranks not yet heard from,
 *         TC_ERR_PEER_FAILED naming the failed rank, or the algorithm's error.
 */
tc_status_t tc_rt_coll_run(tc_rt_comm_t *comm, const tc_rt_coll_t *call);

/**
 * @brief Issue a collective with @p flags (TC_RT_ASYNC, TC_RT_PERSISTENT).
 *        Without flags the call blocks and *work_p receives the finished work.
 */
tc_status_t tc_rt_coll_issue(tc_rt_comm_t *comm, const tc_rt_coll_t *call, int flags,
                             tc_rt_work_t **work_p);

/**
 * @brief Take @p comm for a call that starts operations: they come from one thread at a time
 *        (ranks match them in issue order). Marks the communicator with the calling thread's
 *        mark, or refuses with TC_ERR_INVALID_STATE (naming @p what) without touching it when
 *        another thread is inside such a call. tc_rt_comm_leave() gives it back.
 */
TC_MUST_USE tc_status_t tc_rt_comm_enter(tc_rt_comm_t *comm, const char *what);

/** @brief Give back what tc_rt_comm_enter() took. */
void tc_rt_comm_leave(tc_rt_comm_t *comm);

/**
 * @brief Issue @p n sends and receives together. Messages between two ranks
 *        match in issue order. @p work_p NULL: blocking, no work object. With
 *        TC_RT_ENTERED in @p flags the caller has entered @p comm and leaves it.
 */
tc_status_t tc_rt_p2p_issue(tc_rt_comm_t *comm, const tc_rt_p2p_t *ops, int n, int64_t timeout_ms,
                            int flags, tc_rt_work_t **work_p);

/** @brief Start a persistent work that is not running. */
tc_status_t tc_rt_work_start(tc_rt_work_t *work);

/** @brief Wait at most @p timeout_ms (< 0: the operation's own timeout). */
tc_status_t tc_rt_work_wait(tc_rt_work_t *work, int64_t timeout_ms);

/** @brief Progress once; *done_p = 1 when finished (the result is returned). */
tc_status_t tc_rt_work_test(tc_rt_work_t *work, int *done_p);

/** @brief Whether it runs (TC_RT_WORK_RUNNING...) and its result. */
void tc_rt_work_state(const tc_rt_work_t *work, int *running_p, int *started_p,
                      tc_status_t *result_p);

const char *tc_rt_work_error(const tc_rt_work_t *work);

/**
 * @brief The rank the message of a completed receive from any source came from.
 * @return TC_ERR_INVALID_ARG for another kind of work, TC_ERR_INVALID_STATE while it runs or
 *         when it ended without a message (its error).
 */
tc_status_t tc_rt_work_source(const tc_rt_work_t *work, int *src_p);

/** @brief Free a work (a running one is waited for, bounded by its timeout). */
tc_status_t tc_rt_work_free(tc_rt_work_t *work);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_RUNTIME_COMM_H */
