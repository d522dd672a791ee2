/**
 * @file tcomms.h
 * @brief The public C API of tcomms.
 *
 * A communicator is created eagerly over every process of a job (bootstrapped
 * through PMIx when a PMIx server is present — tcrun, mpirun, srun --mpi=pmix —,
 * from the torchrun environment, or as a world of one), bound to the CPU. Collectives are called by every rank
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

/** @brief Major version: raised by a change that breaks the ABI (the shared
 *         library's soname is libtcomms.so.MAJOR). */
#define TC_VERSION_MAJOR 0
/** @brief Minor version: raised by compatible additions. */
#define TC_VERSION_MINOR 15
/** @brief Patch version: fixes only. */
#define TC_VERSION_PATCH 0
/** @brief Version of this header: major * 10000 + minor * 100 + patch. */
#define TC_VERSION (TC_VERSION_MAJOR * 10000 + TC_VERSION_MINOR * 100 + TC_VERSION_PATCH)

/**
 * @brief The version of the library linked, as ::TC_VERSION encodes it; a
 *        program built against one header may compare it with the library it
 *        runs with (same major: compatible).
 * @return major * 10000 + minor * 100 + patch.
 */
int tc_version(void);

/** @brief A communicator: a group of ranks that run collectives together. */
typedef struct tc_comm tc_comm_t;

/** @brief A handle on an operation: asynchronous, persistent, or a batch. */
typedef struct tc_work tc_work_t;

/** @brief How a communicator finds the other processes of the job. */
typedef enum tc_bootstrap {
    TC_BOOTSTRAP_AUTO = 0, /**< PMIx when a server is present, else the torchrun
                                environment when MASTER_ADDR/RANK/WORLD_SIZE are set,
                                else a world of one */
    TC_BOOTSTRAP_PMIX,     /**< PMIx; an error (not a hang) when no server is present */
    TC_BOOTSTRAP_SELF,     /**< a world of one process */
    TC_BOOTSTRAP_ENV,      /**< torchrun's environment: MASTER_ADDR, MASTER_PORT, RANK,
                                WORLD_SIZE, LOCAL_RANK; rank 0 serves a TCP key/value store */
} tc_bootstrap_t;

/** @brief The device a communicator is bound to: the CPU (-1) or CUDA device N. */
#define TC_DEVICE_CPU (-1)

/** @brief Options of tc_comm_create(). Initialise with ::TC_COMM_OPTS_INIT. */
typedef struct tc_comm_opts {
    uint32_t size;            /**< sizeof(tc_comm_opts_t), for forward compatibility */
    tc_bootstrap_t bootstrap; /**< how to find the other ranks */
    const char *name; /**< a name for logs and errors (1 to 63 characters), or NULL ("world") */
    const char *hints;        /**< "key=value,..." hints, or NULL (tc_comm_create) */
    int64_t timeout_ms;       /**< default timeout of every operation; <= 0: TC_TIMEOUT_S or 600 s */
    int device;               /**< ::TC_DEVICE_CPU, or CUDA device N: buffers of collectives
                                   are then device memory, staged through host memory (split
                                   communicators inherit it; send/recv is refused) */
} tc_comm_opts_t;

/** @brief Default communicator options. */
#define TC_COMM_OPTS_INIT {sizeof(tc_comm_opts_t), TC_BOOTSTRAP_AUTO, NULL, NULL, 0, TC_DEVICE_CPU}

/** @brief Per-operation options. Initialise with ::TC_OP_OPTS_INIT. */
typedef struct tc_op_opts {
    uint32_t size;       /**< sizeof(tc_op_opts_t) */
    int64_t timeout_ms;  /**< timeout of this operation; <= 0: the communicator's */
    const char *hints;   /**< "algo=NAME" for a collective, or NULL; another key, or any
                              hint on a send, receive, batch or window operation, is
                              TC_ERR_INVALID_ARG */
    int async;           /**< non-zero: return at once with a work object in *work_p; the
                              operation progresses in the background */
} tc_op_opts_t;

/** @brief Default operation options. */
#define TC_OP_OPTS_INIT {sizeof(tc_op_opts_t), 0, NULL, 0}

/**
 * @page tc_threads Threads
 *
 * - Any number of threads may use different communicators at the same time,
 *   blocking or asynchronous. Communicators are created collectively (create,
 *   split, dup, shrink) over their parent; threads may create them from
 *   different parents at the same time, shrinks included (each new
 *   communicator gets an id that no other live one of its members has).
 * - The calls that start operations on one communicator (collectives,
 *   send/recv, tc_batch_end(), tc_work_start(), split, dup) come from one
 *   thread at a time: ranks match operations in issue order. A call made
 *   while another thread is inside one on the same communicator returns
 *   TC_ERR_INVALID_STATE and leaves the communicator as it was. A batch
 *   belongs to the thread that began it: until its tc_batch_end() (or
 *   tc_batch_cancel()), another thread's collectives, sends, receives,
 *   batches, splits, dups and window creations on the communicator return
 *   TC_ERR_INVALID_STATE (tc_work_start() of a persistent operation is not
 *   checked against batches); a
 *   tc_batch_end() refused because another thread is inside a call leaves the
 *   batch open, to be ended again or cancelled.
 * - Work objects may be waited for, tested and freed from any thread;
 *   tc_comm_abort(), tc_comm_revoke(), tc_comm_stats() and tc_comm_dump_fr()
 *   from any thread at any time. tc_comm_destroy() must not overlap another
 *   call on the communicator or a wait on one of its works.
 * - Windows (@ref tc_windows): tc_win_create(), tc_win_allocate() and
 *   tc_win_destroy() run collectives on their communicator: no other thread
 *   may start operations on it meanwhile (each of their collectives is
 *   checked as any call, but the sequence of them is not); the one-sided calls (put, get, signals,
 * waits, flush) may come from any thread, even while another is inside a call on the communicator.
 * tc_win_destroy() must not overlap another call on the window.
 * - Threads on different communicators never wait for one another's operations to end:
 *   blocking collectives of up to TC_SMALL_MAX bytes among ranks of one node share no lock with
 *   other communicators but a short turn on each pair's lanes (never held while waiting); every
 *   other operation shares one lock per process for one progress pass at a time
 *   (docs/runtime.md, "Threads").
 * - From a signal handler: tc_comm_create_abort() only.
 * - A progress thread, started by the first asynchronous or persistent
 *   operation or the first window, drives asynchronous work (and the
 *   windows' software transports) without the caller's help.
 */

/**
 * @page tc_ops Conventions of every operation
 *
 * - Every operation takes `opts` (NULL for the defaults) and `work_p`.
 *   With `opts->async` set the call returns at once and `*work_p` receives a
 *   work object (required); the operation progresses without the caller (a
 *   progress thread) and its buffers must stay untouched until it completes.
 *   Without `async`, the call blocks; if `work_p` is not NULL it receives a
 *   completed work object all the same. Free work objects with tc_work_free().
 * - Operations on one communicator match across ranks in issue order; async ones may run
 *   concurrently. Ranks may differ in how they call a collective (blocking, blocking with a
 *   work object, async); a persistent one (tc_*_init) matches only persistent ones, as in MPI.
 * - Every wait is bounded by the operation's timeout; a timeout or a peer's
 *   failure leaves the communicator unusable (later calls fail at once with
 *   the first error).
 * - Counts are in elements; `count == 0` moves nothing and may return without
 *   waiting for the others: every rank must pass 0 (TC_CHECK=1 finds one that
 *   does not). A handle that is not live is TC_ERR_INVALID_STATE everywhere.
 * - Hints are "key=value,..."; a key twice in one string is TC_ERR_CONFIG.
 * - In place: see each collective.
 * - `opts->hints` "algo=NAME" picks a collective's algorithm (docs/algorithms): a name the
 *   collective does not have is TC_ERR_NOT_FOUND listing those it has; one that does not
 *   apply here (the rank count, the v-form) TC_ERR_UNSUPPORTED saying why.
 */

/** @brief Undefined colour for tc_comm_split(): this rank joins no new communicator. */
#define TC_SPLIT_NONE (-1)

/** @brief What tc_comm_info() reports. */
typedef struct tc_comm_info {
    int rank;               /**< this rank */
    int size;               /**< ranks in the communicator */
    int local_size;         /**< ranks of the job on this node */
    int device;             /**< ::TC_DEVICE_CPU or the CUDA device */
    char name[64];          /**< the communicator's name */
    char launcher[32];      /**< "tcrun", "mpirun", "srun", "pmix", "env", "self" or "store" */
    char host[64];          /**< this host */
    int peers_shm;          /**< peers connected over shared memory so far */
    int peers_tcp;          /**< peers connected over TCP so far */
    int peers_self;         /**< 1 when this rank sends to itself through the self path */
} tc_comm_info_t;

/**
 * @brief Create the world communicator over every process of the job.
 *
 * Collective over all processes of the job (see tc_comm_create_from_store()
 * to create one through a key-value store of the caller's). Bounded by the timeout, and
 * abortable from another thread or a signal handler with
 * tc_comm_create_abort().
 * @param opts options, or NULL for the defaults. Its hint algo=NAME applies to the collectives
 *        that have an algorithm of that name, not to their v-forms (a name none has:
 *        TC_ERR_INVALID_ARG); the others choose as usual. Its other hints configure the
 *        transports (docs/transport_shm.md, docs/transport_tcp.md, docs/transport_ib.md:
 *        shm_cells, tcp_nsocks, ...), which the communicators made from this one share: there
 *        a transport's hint with another value is TC_ERR_INVALID_ARG (refused before any
 *        exchange), as is a key nothing reads, anywhere.
 * @param comm_p receives the communicator on success.
 * @return TC_OK; TC_ERR_TIMEOUT when some rank did not join in time (the
 *         detail names the ranks missing, when the launcher can tell);
 *         TC_ERR_PEER_FAILED naming a rank that died during the creation;
 *         TC_ERR_ABORTED after tc_comm_create_abort();
 *         TC_ERR_BOOTSTRAP when the job cannot be joined (e.g. no PMIx
 *         server with TC_BOOTSTRAP_PMIX); TC_ERR_CONFIG for a malformed TC_*
 *         variable or hint; TC_ERR_INVALID_ARG for bad options or a device
 *         that does not exist; TC_ERR_UNSUPPORTED for a CUDA device where
 *         there is none (or tcomms was built without CUDA).
 */
tc_status_t tc_comm_create(const tc_comm_opts_t *opts, tc_comm_t **comm_p);

/**
 * @brief Make every tc_comm_create() in progress in this process return
 *        TC_ERR_ABORTED promptly (within about 10 ms), wherever its bootstrap
 *        is waiting: the launcher's fence or the torchrun store. Through a
 *        caller's store (tc_comm_create_from_store()), at the end of the
 *        callback under way.
 *
 * Creations that start after the call are not affected. Safe from any thread
 * and from a signal handler: it only increments an atomic counter. To abort
 * operations on a communicator that exists, use tc_comm_abort().
 */
void tc_comm_create_abort(void);

/** @brief What a key-value store callback returns (see ::tc_store_t). */
typedef enum tc_store_result {
    TC_STORE_OK = 0,      /**< done */
    TC_STORE_ABSENT = 1,  /**< get: the key does not exist (yet) */
    TC_STORE_TIMEOUT = 2, /**< wait: the key did not appear within the timeout */
    TC_STORE_FAILED = 3,  /**< the store failed (the call using it then fails with
                               TC_ERR_BOOTSTRAP; a look for notices logs a warning) */
} tc_store_result_t;

/**
 * @brief A key-value store of the caller through which a communicator is
 *        created (tc_comm_create_from_store()), e.g. torch's c10d Store.
 *
 * Every rank passes a store reaching the same keys. Keys are NUL-terminated
 * strings; values are bytes. Each callback returns a ::tc_store_result_t and
 * must not block longer than its own timeout: tcomms bounds every wait itself
 * and sees tc_comm_create_abort() and the creation's deadline between calls. Callbacks may be
 * called from tcomms' progress thread (a peer's address is fetched when first needed), concurrently
 * with the creating thread, until the communicator and all the communicators split from it are
 * destroyed; @c ctx must stay valid as long. Initialise with ::TC_STORE_INIT.
 */
typedef struct tc_store {
    uint32_t size; /**< sizeof(tc_store_t), for forward compatibility */
    /** Set @p key to the @p len bytes at @p val (replacing any value). */
    int (*set)(void *ctx, const char *key, const void *val, size_t len);
    /** Copy @p key's value into @p buf (at most @p cap bytes) and its whole
     *  length into @p len_p; TC_STORE_ABSENT at once when the key does not exist. */
    int (*get)(void *ctx, const char *key, void *buf, size_t cap, size_t *len_p);
    /** Wait until @p key exists, at most @p timeout_ms: TC_STORE_OK or TC_STORE_TIMEOUT. */
    int (*wait)(void *ctx, const char *key, int64_t timeout_ms);
    /** Add @p delta to the integer counter @p key (absent: 0) atomically and
     *  return the new value in @p value_p. */
    int (*add)(void *ctx, const char *key, int64_t delta, int64_t *value_p);
    void *ctx; /**< passed to every callback */
} tc_store_t;

/** @brief An empty store table (fill in the four callbacks and the context). */
#define TC_STORE_INIT {sizeof(tc_store_t), NULL, NULL, NULL, NULL, NULL}

/** @brief Longest key prefix accepted by tc_comm_create_from_store(). */
#define TC_STORE_PREFIX_MAX 128

/**
 * @brief Create a communicator of @p size ranks whose start-up goes through
 *        the caller's key-value @p store only: no environment variable is read
 *        to find the job, no server or port is opened for the bootstrap.
 *
 * Collective over the @p size ranks, each passing its own @p rank and the same
 * @p prefix; every key tcomms writes starts with "<prefix>/", so several
 * communicators (e.g. one per process group) share one store with different
 * prefixes, each its own world (split and dup work within it). A prefix must
 * not be reused while keys of an earlier creation with it remain in the store.
 * Bounded by the timeout of @p opts and abortable with tc_comm_create_abort().
 * Notices go through the store too: a rank seen failing by one rank, and
 * tc_comm_revoke(), reach every rank, which looks for them at most every
 * 50 ms (an add, and a get when there is news; a notice counted but never
 * written, its sender failing between the two, is skipped after 1 s). A callback failing there is
 * logged as a warning naming it and the key, once until a look works again:
 * notices do not arrive meanwhile (operations still end on the failures the
 * transports see, and on their timeouts). `opts->bootstrap` is ignored.
 * @param store the callbacks and their context (see ::tc_store_t).
 * @param rank this process's rank, in [0, @p size).
 * @param size the number of ranks (>= 1).
 * @param prefix the key prefix of this communicator (1 to ::TC_STORE_PREFIX_MAX
 *        characters).
 * @param opts name, hints, timeout and device, or NULL for the defaults; without a name the
 *        communicator is named @p prefix (when it has at most 63 characters).
 * @param comm_p receives the communicator on success.
 * @return TC_OK; TC_ERR_INVALID_ARG for a NULL or incomplete @p store, a bad rank, size or
 *         prefix; TC_ERR_TIMEOUT naming the ranks missing (and sizes or ranks given wrongly);
 *         TC_ERR_BOOTSTRAP naming the key when a callback failed, and at once on a rank whose
 *         @p size differs from rank 0's or a second process given a @p rank (naming them);
 *         TC_ERR_ABORTED after tc_comm_create_abort(); otherwise as tc_comm_create().
 */
tc_status_t tc_comm_create_from_store(const tc_store_t *store, int rank, int size,
                                      const char *prefix, const tc_comm_opts_t *opts,
                                      tc_comm_t **comm_p);

/**
 * @brief Destroy a communicator and free its resources. Local, never waits on peers.
 *
 * Pending asynchronous operations are cancelled (their work objects report
 * TC_ERR_ABORTED and must still be freed). Communicators split or duplicated
 * from this one stay valid.
 * @param comm a communicator, or NULL (nothing happens).
 * @return TC_OK, or TC_ERR_INVALID_STATE for a handle that is not a live communicator.
 */
tc_status_t tc_comm_destroy(tc_comm_t *comm);

/**
 * @brief This process's rank in @p comm.
 * @param comm the communicator.
 * @param rank_p receives the rank, in [0, size).
 * @return TC_OK or TC_ERR_INVALID_ARG (a stale handle: see @ref tc_ops).
 */
tc_status_t tc_comm_rank(const tc_comm_t *comm, int *rank_p);

/**
 * @brief The number of ranks in @p comm.
 * @param comm the communicator.
 * @param size_p receives the size.
 * @return TC_OK or TC_ERR_INVALID_ARG (a stale handle: see @ref tc_ops).
 */
tc_status_t tc_comm_size(const tc_comm_t *comm, int *size_p);

/**
 * @brief The communicator's name.
 * @param comm the communicator.
 * @param name_p receives the name, valid while @p comm lives.
 * @return TC_OK or TC_ERR_INVALID_ARG (a stale handle: see @ref tc_ops).
 */
tc_status_t tc_comm_name(const tc_comm_t *comm, const char **name_p);

/**
 * @brief Rank, size, device, launcher and transports of @p comm.
 * @param comm the communicator.
 * @param info receives the facts.
 * @return TC_OK or TC_ERR_INVALID_ARG (a stale handle: see @ref tc_ops).
 */
tc_status_t tc_comm_info(const tc_comm_t *comm, tc_comm_info_t *info);

/**
 * @brief Split @p comm: ranks with the same @p color form a new communicator,
 *        ordered by @p key, then by their rank in @p comm.
 *
 * Collective over @p comm. A rank passing ::TC_SPLIT_NONE gets NULL.
 * Without a name in @p opts the new communicator is called "<parent's name>.<k>.<color>", where
 * k counts the splits, split_ranks and dups of the parent (1 for the first): the same name on
 * every rank, a different one for each child (tc_comm_split_ranks() and tc_comm_dup(): with
 * no color, "<parent's name>.<k>").
 * @param opts name, hints and timeout of the new communicator (bootstrap and
 *        device are inherited), or NULL.
 * @param comm the communicator.
 * @param color ranks with the same colour (>= 0) form one communicator; ::TC_SPLIT_NONE: none.
 * @param key orders the ranks of the new communicator (ties: by rank in @p comm).
 * @param newcomm_p receives the new communicator (NULL when this rank joins none).
 * @return TC_OK, or an error status with the detail in tc_last_error() (see @ref tc_ops).
 */
tc_status_t tc_comm_split(tc_comm_t *comm, int color, int key, const tc_comm_opts_t *opts,
                          tc_comm_t **newcomm_p);

/**
 * @brief A new communicator of the ranks in @p ranks (ranks of @p comm, in the
 *        order that becomes their new rank). Collective over @p comm: every
 *        rank passes the same list; ranks not in it get NULL.
 * @return TC_ERR_INVALID_ARG for an out-of-range or repeated rank, or an empty
 *         list; TC_ERR_MISMATCH when ranks passed different lists.
 * @param comm the communicator.
 * @param ranks ranks of @p comm.
 * @param nranks entries in @p ranks.
 * @param opts name, hints and timeout of the new communicator (as tc_comm_split()), or NULL.
 * @param newcomm_p receives the new communicator (NULL when this rank joins none).
 */
tc_status_t tc_comm_split_ranks(tc_comm_t *comm, const int *ranks, int nranks,
                                const tc_comm_opts_t *opts, tc_comm_t **newcomm_p);

/**
 * @brief A new communicator of the same ranks, independent of @p comm. Collective.
 * @param comm the communicator.
 * @param opts name, hints and timeout of the new communicator (as tc_comm_split()), or NULL.
 * @param newcomm_p receives the new communicator.
 * @return TC_OK, or an error status with the detail in tc_last_error() (see @ref tc_ops).
 */
tc_status_t tc_comm_dup(tc_comm_t *comm, const tc_comm_opts_t *opts, tc_comm_t **newcomm_p);

/**
 * @brief Abort: every pending operation of @p comm (a tc_comm_shrink() of it on
 *        another thread included) ends with TC_ERR_ABORTED and later ones fail
 *        at once. Local; returns promptly and never waits on a peer. The
 *        communicator must still be destroyed.
 *
 * Buffers of the aborted operations are the caller's again once this returns.
 * A message a peer has been told of but not yet taken whole is either sent on
 * from a private copy (the peer gets it whole) or withdrawn: over shared
 * memory a large message is read from this rank's buffer, so the peer's
 * receive ends with TC_ERR_ABORTED ("rank R withdrew the message ...") and
 * never with bytes written here after the abort.
 * @param comm the communicator.
 * @return TC_OK, or an error status with the detail in tc_last_error() (see @ref tc_ops).
 */
tc_status_t tc_comm_abort(tc_comm_t *comm);

/**
 * @brief Revoke: every rank of @p comm leaves its pending operations with
 *        TC_ERR_REVOKED (here at once, elsewhere when the notice arrives:
 *        through the launcher's PMIx server, or under the torchrun
 *        environment through rank 0's store), and later operations fail.
 *        Use tc_comm_shrink() to go on.
 * @return TC_OK; when the other ranks cannot be told, revoked here only and
 *         TC_ERR_UNSUPPORTED (a bootstrap without notices) or TC_ERR_BOOTSTRAP
 *         (the notice could not be sent, e.g. rank 0's store is gone).
 * @param comm the communicator.
 */
tc_status_t tc_comm_revoke(tc_comm_t *comm);

/**
 * @brief The survivors of @p comm agree on the failed ranks and form a new
 *        communicator of the others (in their old order).
 *
 * Collective over the surviving ranks; works on a communicator broken by a
 * failure or revoked. Ranks failing during the agreement do not break it:
 * every survivor returns the same set (a rank that dies after the decision
 * may remain; the next operation fails naming it and a new shrink removes
 * it). Bounded by the communicator's timeout; TC_ERR_PEER_FAILED when the
 * others count this rank as failed.
 * @param comm the communicator.
 * @param opts name, hints and timeout of the new communicator (default name: "<name>.shrunk"),
 *        or NULL.
 * @param newcomm_p receives the new communicator (NULL when this rank joins none).
 * @return TC_OK, or an error status with the detail in tc_last_error() (see @ref tc_ops).
 */
tc_status_t tc_comm_shrink(tc_comm_t *comm, const tc_comm_opts_t *opts, tc_comm_t **newcomm_p);

/**
 * @brief The ranks of @p comm known here to have failed.
 * @param ranks receives up to @p cap ranks (may be NULL when @p cap is 0).
 * @param n_p receives how many are known (may exceed @p cap).
 * @param comm the communicator.
 * @param cap entries @p ranks can hold.
 * @return TC_OK, or an error status with the detail in tc_last_error() (see @ref tc_ops).
 */
tc_status_t tc_comm_failed_ranks(tc_comm_t *comm, int *ranks, int cap, int *n_p);

/** @brief What one collective and algorithm cost on a communicator (tc_comm_stats()). */
typedef struct tc_comm_stat {
    const char *coll;   /**< "all_reduce", ..., or "send_recv" (a v-form counts under its
                             collective: all_to_all_v as all_to_all) */
    const char *algo;   /**< the algorithm that ran */
    uint64_t ops;       /**< operations ended */
    uint64_t failed;    /**< of which failed */
    uint64_t bytes;     /**< this rank's payload bytes (count x element size; an
                             all_to_all_v: what this rank sends; send_recv: the bytes of the
                             sends and receives of a message or batch) */
    double time_s;      /**< start to end, summed */
} tc_comm_stat_t;

/**
 * @brief Operations, bytes and time per collective and algorithm used on @p comm.
 * @param comm the communicator.
 * @param stats receives up to @p cap entries (may be NULL when @p cap is 0).
 * @param cap entries @p stats can hold.
 * @param n_p receives how many entries exist (may exceed @p cap).
 * @return TC_OK or TC_ERR_INVALID_ARG (a stale handle: see @ref tc_ops).
 */
tc_status_t tc_comm_stats(tc_comm_t *comm, tc_comm_stat_t *stats, int cap, int *n_p);

/** @brief One operation, as a hook sees it. */
typedef struct tc_op_info {
    const char *coll;   /**< "all_reduce", ..., or "send_recv" */
    uint64_t seq;       /**< its sequence number on the communicator */
    size_t count;       /**< elements (bytes for send_recv) */
    tc_dtype_t dtype;   /**< element type */
    int root;           /**< root, or -1 */
    const char *algo;   /**< the algorithm */
    tc_status_t status; /**< after: the result; before: TC_INPROGRESS */
    double time_s;      /**< after: start to end */
} tc_op_info_t;

/**
 * @brief A hook: called when an operation starts (@p after 0) and when it ends
 *        (1), on the thread that starts or completes it (possibly the progress
 *        thread). It must be quick and must not call tcomms on @p comm.
 */
typedef void (*tc_hook_fn)(tc_comm_t *comm, const tc_op_info_t *info, int after, void *arg);

/**
 * @brief Add a hook to @p comm (at most 4).
 * @param comm the communicator.
 * @param fn the hook.
 * @param arg passed to @p fn.
 * @return TC_OK; TC_ERR_INVALID_ARG for a NULL @p fn; TC_ERR_NO_RESOURCE past 4 hooks.
 */
tc_status_t tc_comm_add_hook(tc_comm_t *comm, tc_hook_fn fn, void *arg);

/**
 * @brief Write the flight recorder of @p comm (its last TC_FR_SIZE operations,
 *        default 64) as JSON to `TC_FR_DIR/tc_fr.<comm name>.<rank>.json`.
 *
 * It is also written on a timeout or an error, and on SIGUSR1 (when the
 * application does not handle that signal). `tc-fr DIR` reads the dumps of
 * every rank and names the culprit.
 * @return TC_ERR_CONFIG when TC_FR_DIR is not set; TC_ERR_INVALID_STATE when
 *         the recorder is off (TC_FR_SIZE=0); TC_ERR_SYSTEM when writing fails.
 * @param comm the communicator.
 */
tc_status_t tc_comm_dump_fr(tc_comm_t *comm);

/**
 * @brief Reduce @p count elements across all ranks; every rank gets the result.
 *
 * In place when @p sendbuf == @p recvbuf. Otherwise the buffers must not overlap.
 * The algorithm is chosen by the cost model, or by the hint `algo=<name>`
 * (`ring`, `recursive_doubling`, `rabenseifner`, `binary_tree`,
 * `double_binary_tree`, `hierarchical`) in @p opts or `TC_ALGO_ALL_REDUCE`.
 * Every operation of this header follows the conventions of @ref tc_ops.
 * @return TC_OK; TC_ERR_INVALID_ARG for a bad argument; TC_ERR_UNSUPPORTED for
 *         an op that does not apply to the type; TC_ERR_TIMEOUT naming the
 *         ranks not yet heard from; TC_ERR_PEER_FAILED naming the failed rank.
 * @param comm the communicator.
 * @param sendbuf this rank's input (see the collective for its size and in-place rule).
 * @param recvbuf this rank's output (see the collective for its size).
 * @param count number of elements (per rank where the collective says so).
 * @param dtype element type.
 * @param op reduction operation (bitwise ops on integer types only).
 * @param opts per-operation options (timeout, hints, async), or NULL.
 * @param work_p receives a work object (required with opts->async), or NULL.
 */
tc_status_t tc_all_reduce(tc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                          tc_dtype_t dtype, tc_redop_t op, const tc_op_opts_t *opts,
                          tc_work_t **work_p);

/** @brief Reduce @p count elements to @p root's @p recvbuf (other ranks' recvbuf
 *         is not written and may be NULL). In place when sendbuf == recvbuf.
 * @param comm the communicator.
 * @param sendbuf this rank's input (see the collective for its size and in-place rule).
 * @param recvbuf this rank's output (see the collective for its size).
 * @param count number of elements (per rank where the collective says so).
 * @param dtype element type.
 * @param op reduction operation (bitwise ops on integer types only).
 * @param root the root rank.
 * @param opts per-operation options (timeout, hints, async), or NULL.
 * @param work_p receives a work object (required with opts->async), or NULL.
 * @return TC_OK, or an error status with the detail in tc_last_error() (see @ref tc_ops).
 */
tc_status_t tc_reduce(tc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                      tc_dtype_t dtype, tc_redop_t op, int root, const tc_op_opts_t *opts,
                      tc_work_t **work_p);

/**
 * @brief Copy @p count elements of @p root's @p buf into every rank's @p buf.
 * @param comm the communicator.
 * @param buf the data: input at the root (or the sender), output elsewhere.
 * @param count number of elements (per rank where the collective says so).
 * @param dtype element type.
 * @param root the root rank.
 * @param opts per-operation options (timeout, hints, async), or NULL.
 * @param work_p receives a work object (required with opts->async), or NULL.
 * @return TC_OK, or an error status with the detail in tc_last_error() (see @ref tc_ops).
 */
tc_status_t tc_broadcast(tc_comm_t *comm, void *buf, size_t count, tc_dtype_t dtype, int root,
                         const tc_op_opts_t *opts, tc_work_t **work_p);

/** @brief Every rank's @p count elements, concatenated in rank order into every
 *         rank's @p recvbuf (size * count). In place when sendbuf == recvbuf +
 *         rank * count elements.
 * @param comm the communicator.
 * @param sendbuf this rank's input (see the collective for its size and in-place rule).
 * @param recvbuf this rank's output (see the collective for its size).
 * @param count number of elements (per rank where the collective says so).
 * @param dtype element type.
 * @param opts per-operation options (timeout, hints, async), or NULL.
 * @param work_p receives a work object (required with opts->async), or NULL.
 * @return TC_OK, or an error status with the detail in tc_last_error() (see @ref tc_ops).
 */
tc_status_t tc_all_gather(tc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                          tc_dtype_t dtype, const tc_op_opts_t *opts, tc_work_t **work_p);

/** @brief all_gather with @p recvcounts[q] elements from rank q placed at
 *         @p displs[q] (NULL: packed). @p sendcount must equal recvcounts[rank].
 *         In place when sendbuf == recvbuf + displs[rank] elements.
 * @param comm the communicator.
 * @param sendbuf this rank's input (see the collective for its size and in-place rule).
 * @param sendcount elements this rank contributes.
 * @param recvbuf this rank's output (see the collective for its size).
 * @param recvcounts [size] elements from (or to) each rank.
 * @param displs [size] element offset of each rank's block, or NULL (packed).
 * @param dtype element type.
 * @param opts per-operation options (timeout, hints, async), or NULL.
 * @param work_p receives a work object (required with opts->async), or NULL.
 * @return TC_OK, or an error status with the detail in tc_last_error() (see @ref tc_ops).
 */
tc_status_t tc_all_gather_v(tc_comm_t *comm, const void *sendbuf, size_t sendcount,
                            void *recvbuf, const size_t *recvcounts, const size_t *displs,
                            tc_dtype_t dtype, const tc_op_opts_t *opts, tc_work_t **work_p);

/** @brief Reduce size * @p recvcount elements; rank r gets block r (recvcount
 *         elements). In place when sendbuf == recvbuf (the result is left at
 *         block rank of the buffer), or when recvbuf is that block
 *         (sendbuf + rank * recvcount elements, NCCL's form).
 * @param comm the communicator.
 * @param sendbuf this rank's input (see the collective for its size and in-place rule).
 * @param recvbuf this rank's output (see the collective for its size).
 * @param recvcount elements each rank receives.
 * @param dtype element type.
 * @param op reduction operation (bitwise ops on integer types only).
 * @param opts per-operation options (timeout, hints, async), or NULL.
 * @param work_p receives a work object (required with opts->async), or NULL.
 * @return TC_OK, or an error status with the detail in tc_last_error() (see @ref tc_ops).
 */
tc_status_t tc_reduce_scatter(tc_comm_t *comm, const void *sendbuf, void *recvbuf,
                              size_t recvcount, tc_dtype_t dtype, tc_redop_t op,
                              const tc_op_opts_t *opts, tc_work_t **work_p);

/** @brief reduce_scatter with block q of @p recvcounts[q] elements at @p displs[q]
 *         of the input (NULL: packed); rank r receives recvcounts[r] elements. In place
 *         when sendbuf == recvbuf (the result is left at block rank), or when recvbuf is
 *         that block.
 * @param comm the communicator.
 * @param sendbuf this rank's input (see the collective for its size and in-place rule).
 * @param recvbuf this rank's output (see the collective for its size).
 * @param recvcounts [size] elements from (or to) each rank.
 * @param displs [size] element offset of each rank's block, or NULL (packed).
 * @param dtype element type.
 * @param op reduction operation (bitwise ops on integer types only).
 * @param opts per-operation options (timeout, hints, async), or NULL.
 * @param work_p receives a work object (required with opts->async), or NULL.
 * @return TC_OK, or an error status with the detail in tc_last_error() (see @ref tc_ops).
 */
tc_status_t tc_reduce_scatter_v(tc_comm_t *comm, const void *sendbuf, void *recvbuf,
                                const size_t *recvcounts, const size_t *displs, tc_dtype_t dtype,
                                tc_redop_t op, const tc_op_opts_t *opts, tc_work_t **work_p);

/** @brief Block q (@p count elements) of my sendbuf goes to rank q, landing at
 *         block (my rank) of its recvbuf. In place when sendbuf == recvbuf.
 * @param comm the communicator.
 * @param sendbuf this rank's input (see the collective for its size and in-place rule).
 * @param recvbuf this rank's output (see the collective for its size).
 * @param count number of elements (per rank where the collective says so).
 * @param dtype element type.
 * @param opts per-operation options (timeout, hints, async), or NULL.
 * @param work_p receives a work object (required with opts->async), or NULL.
 * @return TC_OK, or an error status with the detail in tc_last_error() (see @ref tc_ops).
 */
tc_status_t tc_all_to_all(tc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                          tc_dtype_t dtype, const tc_op_opts_t *opts, tc_work_t **work_p);

/** @brief all_to_all with per-peer counts and displacements (elements). Rank q's
 *         sendcounts[me] must equal my recvcounts[q]. Not in place.
 * @param comm the communicator.
 * @param sendbuf this rank's input (see the collective for its size and in-place rule).
 * @param sendcounts [size] elements this rank sends to each rank.
 * @param sdispls [size] element offset of each block in @p sendbuf, or NULL (packed).
 * @param recvbuf this rank's output (see the collective for its size).
 * @param recvcounts [size] elements from (or to) each rank.
 * @param rdispls [size] element offset of each block in @p recvbuf, or NULL (packed).
 * @param dtype element type.
 * @param opts per-operation options (timeout, hints, async), or NULL.
 * @param work_p receives a work object (required with opts->async), or NULL.
 * @return TC_OK, or an error status with the detail in tc_last_error() (see @ref tc_ops).
 */
tc_status_t tc_all_to_all_v(tc_comm_t *comm, const void *sendbuf, const size_t *sendcounts,
                            const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
                            const size_t *rdispls, tc_dtype_t dtype, const tc_op_opts_t *opts,
                            tc_work_t **work_p);

/** @brief Every rank's @p count elements, concatenated in rank order into
 *         @p root's recvbuf (size * count; others may pass NULL). In place at
 *         the root when sendbuf == recvbuf + root * count elements.
 * @param comm the communicator.
 * @param sendbuf this rank's input (see the collective for its size and in-place rule).
 * @param recvbuf this rank's output (see the collective for its size).
 * @param count number of elements (per rank where the collective says so).
 * @param dtype element type.
 * @param root the root rank.
 * @param opts per-operation options (timeout, hints, async), or NULL.
 * @param work_p receives a work object (required with opts->async), or NULL.
 * @return TC_OK, or an error status with the detail in tc_last_error() (see @ref tc_ops).
 */
tc_status_t tc_gather(tc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                      tc_dtype_t dtype, int root, const tc_op_opts_t *opts, tc_work_t **work_p);

/** @brief Block r (@p count elements) of @p root's sendbuf (size * count; others
 *         may pass NULL) into rank r's recvbuf. In place at the root when
 *         recvbuf == sendbuf + root * count elements.
 * @param comm the communicator.
 * @param sendbuf this rank's input (see the collective for its size and in-place rule).
 * @param recvbuf this rank's output (see the collective for its size).
 * @param count number of elements (per rank where the collective says so).
 * @param dtype element type.
 * @param root the root rank.
 * @param opts per-operation options (timeout, hints, async), or NULL.
 * @param work_p receives a work object (required with opts->async), or NULL.
 * @return TC_OK, or an error status with the detail in tc_last_error() (see @ref tc_ops).
 */
tc_status_t tc_scatter(tc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                       tc_dtype_t dtype, int root, const tc_op_opts_t *opts, tc_work_t **work_p);

/**
 * @brief Return when every rank has entered the barrier.
 * @param comm the communicator.
 * @param opts per-operation options (timeout, hints, async), or NULL.
 * @param work_p receives a work object (required with opts->async), or NULL.
 * @return TC_OK, or an error status with the detail in tc_last_error() (see @ref tc_ops).
 */
tc_status_t tc_barrier(tc_comm_t *comm, const tc_op_opts_t *opts, tc_work_t **work_p);

/**
 * @brief Prepare an all-gather that is started many times with tc_work_start()
 *        (same buffers, same counts), like torchcomms' persistent all_gather.
 *
 * Collective in the sense that every rank must prepare it; nothing moves until
 * started. The schedule is built once.
 * @param comm the communicator.
 * @param sendbuf this rank's input (see the collective for its size and in-place rule).
 * @param recvbuf this rank's output (see the collective for its size).
 * @param count number of elements (per rank where the collective says so).
 * @param dtype element type.
 * @param opts per-operation options (timeout, hints, async), or NULL.
 * @param work_p receives a work object (required with opts->async), or NULL.
 * @return TC_OK, or an error status with the detail in tc_last_error() (see @ref tc_ops).
 */
tc_status_t tc_all_gather_init(tc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                               tc_dtype_t dtype, const tc_op_opts_t *opts, tc_work_t **work_p);

/**
 * @brief Start a persistent work (from tc_all_gather_init()) that is not running.
 * @param work the work object.
 * @return TC_OK, or an error status with the detail in tc_last_error() (see @ref tc_ops).
 */
tc_status_t tc_work_start(tc_work_t *work);

/** @brief The states of a work object. */
typedef enum tc_work_state {
    TC_WORK_NOT_STARTED = 0, /**< persistent, not started (or completed and restartable) */
    TC_WORK_IN_PROGRESS,     /**< running */
    TC_WORK_COMPLETED,       /**< finished successfully */
    TC_WORK_TIMED_OUT,       /**< its timeout ran out */
    TC_WORK_FAILED,          /**< failed: see tc_work_status()'s result and tc_work_error() */
} tc_work_state_t;

/**
 * @brief Wait until @p work completes, at most @p timeout_ms (< 0: until the
 *        operation's own timeout).
 * @return the operation's result; TC_ERR_TIMEOUT when @p timeout_ms ran out
 *         first (the operation goes on: wait again, or test).
 * @param work the work object.
 * @param timeout_ms longest wait in milliseconds (< 0: the operation's own timeout).
 */
tc_status_t tc_work_wait(tc_work_t *work, int64_t timeout_ms);

/** @brief Progress @p work without blocking; *done_p = 1 when it has finished
 *         (then the return value is its result).
 * @param work the work object.
 * @param done_p receives 1 when finished, else 0.
 * @return TC_INPROGRESS while it runs; once finished its result: TC_OK, or an
 *         error status with the detail in tc_last_error() (see @ref tc_ops).
 */
tc_status_t tc_work_test(tc_work_t *work, int *done_p);

/**
 * @brief The state and result of @p work without progressing it.
 * @param work the work object.
 * @param state_p receives the state.
 * @param result_p receives the result (TC_INPROGRESS while running), or NULL.
 * @return TC_OK, or an error status with the detail in tc_last_error() (see @ref tc_ops).
 */
tc_status_t tc_work_status(const tc_work_t *work, tc_work_state_t *state_p,
                           tc_status_t *result_p);

/**
 * @brief The error text of a failed work ("" otherwise); valid until freed.
 * @param work the work object.
 * @return the text; "" while running or after success.
 */
const char *tc_work_error(const tc_work_t *work);

/**
 * @brief Free a work object. A work still in progress is first waited for (up
 *        to its timeout) so that no transfer into freed buffers can follow.
 * @param work the work object, or NULL (nothing to do, TC_OK, as free(NULL)).
 * @return TC_OK, or an error status with the detail in tc_last_error() (see @ref tc_ops).
 */
tc_status_t tc_work_free(tc_work_t *work);


#ifdef __cplusplus
}
#endif

/* Point-to-point and the one-sided windows, declared apart; every program including this
 * header gets them. */
#include "tcomms/p2p.h"
#include "tcomms/win.h"

#endif /* TCOMMS_TCOMMS_H */
