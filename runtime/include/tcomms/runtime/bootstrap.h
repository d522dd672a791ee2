/**
 * @file bootstrap.h
 * @brief How the ranks of a job find each other: a small key/value exchange.
 *
 * Each rank puts its keys, one fence publishes them, and a peer's key is
 * fetched only when needed (so start-up does not grow with the world size).
 * Backends: PMIx (tcrun, mpirun, srun --mpi=pmix), the torchrun environment
 * (a TCP store served by rank 0) and a world of one.
 * Every call that can wait takes a deadline.
 */
#ifndef TCOMMS_RUNTIME_BOOTSTRAP_H
#define TCOMMS_RUNTIME_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

#include "tcomms/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief Which bootstrap to use. */
typedef enum tc_boot_kind {
    TC_BOOT_AUTO = 0, /**< PMIx when a server is announced in the environment, else the
                           torchrun environment when MASTER_ADDR is set, else self */
    TC_BOOT_PMIX,     /**< PMIx, an error when there is no server */
    TC_BOOT_SELF,     /**< a world of one */
    TC_BOOT_ENV,      /**< torchrun's environment (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE,
                           LOCAL_RANK, LOCAL_WORLD_SIZE); rank 0 serves a TCP key/value store */
} tc_boot_kind_t;

/** @brief The names of the kinds, by value, NULL-terminated: what TC_BOOTSTRAP accepts. */
extern const char *const tc_boot_kind_names[];

/**
 * @brief The kind TC_BOOTSTRAP asks for (TC_BOOT_AUTO when it is unset).
 * @return TC_ERR_CONFIG naming the value and the accepted names.
 */
tc_status_t tc_boot_kind_from_env(tc_boot_kind_t *kind_p);

/** @brief Whether TC_BOOT_AUTO would join a job: a PMIx server or MASTER_ADDR is announced. */
int tc_boot_job_announced(void);

typedef struct tc_boot tc_boot_t;

/** @brief What a launcher or a peer tells every rank of the job. */
typedef enum tc_boot_event_kind {
    TC_BOOT_EV_PROC_FAILED =
        1,             /**< world rank @c rank died (launcher) or was seen failing (peer) */
    TC_BOOT_EV_REVOKE, /**< world rank @c rank revoked its communicator @c comm_id */
} tc_boot_event_kind_t;

/** @brief One event. */
typedef struct tc_boot_event {
    int kind;          /**< tc_boot_event_kind_t */
    int rank;          /**< the world rank it is about (failed, or revoker) */
    uint32_t comm_id;  /**< REVOKE: the revoker's communicator id */
    int from_launcher; /**< PROC_FAILED: reported by the launcher (else by a peer) */
    int reporter;      /**< PROC_FAILED: the reporting peer's world rank + 1; 0 when unknown */
    int silent;        /**< PROC_FAILED by a peer: found silent (heartbeats), not seen dead */
} tc_boot_event_t;

/** @brief The operations of one bootstrap backend. */
typedef struct tc_boot_ops {
    const char *name;
    tc_status_t (*put)(tc_boot_t *boot, const char *key, const void *val, size_t len);
    tc_status_t (*fence)(tc_boot_t *boot, uint64_t deadline_ns);
    tc_status_t (*get)(tc_boot_t *boot, int peer, const char *key, void *buf, size_t cap,
                       size_t *len_p, uint64_t deadline_ns);
    void (*destroy)(tc_boot_t *boot);
    /** optional: dequeue one event (1) or none (0); must be cheap (called while progressing) */
    int (*poll_event)(tc_boot_t *boot, tc_boot_event_t *ev);
    /** optional: tell every rank of the job */
    tc_status_t (*notify)(tc_boot_t *boot, const tc_boot_event_t *ev);
} tc_boot_ops_t;

/** @brief Most bytes of a job secret (TC_JOB_SECRET, or what PMIx rank 0 drew). */
#define TC_BOOT_SECRET_MAX 256

/** @brief Common head of every bootstrap. */
struct tc_boot {
    const tc_boot_ops_t *ops;
    int rank;             /**< this process's rank in the job */
    int size;             /**< ranks in the job */
    int local_size;       /**< ranks of the job on this node (1 when unknown) */
    int local_rank;       /**< this rank's index among them, in rank order (-1 when unknown) */
    char launcher[32];    /**< "tcrun", "mpirun", "srun", "pmix" or "self" */
    char host[64];        /**< this host's name */
    /** The job secret that authenticates connections between the job's ranks and to its
     *  store (docs/security.md): TC_JOB_SECRET when set; under PMIx without it, 32 random
     *  bytes drawn by rank 0 and shared through PMIx; none (secret_len 0) under the torchrun
     *  environment without TC_JOB_SECRET, and for a world of one. Never logged. */
    unsigned char secret[TC_BOOT_SECRET_MAX];
    size_t secret_len; /**< bytes of @c secret; 0: none (connections are not authenticated) */
};

/**
 * @brief Join the job.
 * @return TC_ERR_BOOTSTRAP with the reason (e.g. no PMIx server announced, or
 *         PMIx_Init's error text) when the job cannot be joined.
 */
tc_status_t tc_boot_create(tc_boot_kind_t kind, uint64_t deadline_ns, tc_boot_t **boot_p);

/** @brief Publish a key of this rank (visible to others after the next fence). */
tc_status_t tc_boot_put(tc_boot_t *boot, const char *key, const void *val, size_t len);

/** @brief Commit what was put and wait until every rank has (bounded). */
tc_status_t tc_boot_fence(tc_boot_t *boot, uint64_t deadline_ns);

/**
 * @brief Fetch @p key of rank @p peer into @p buf.
 * @return TC_ERR_NOT_FOUND when the peer never put it, TC_ERR_TRUNCATED when
 *         longer than @p cap.
 */
tc_status_t tc_boot_get(tc_boot_t *boot, int peer, const char *key, void *buf, size_t cap,
                        size_t *len_p, uint64_t deadline_ns);

/** @brief Dequeue one event of the launcher or of peers: 1, or 0 when none
 *         (or when the bootstrap has no event channel). */
int tc_boot_poll_event(tc_boot_t *boot, tc_boot_event_t *ev);

/** @brief Tell every rank of the job; TC_ERR_UNSUPPORTED without an event channel. */
tc_status_t tc_boot_notify(tc_boot_t *boot, const tc_boot_event_t *ev);

/** @brief Leave the job (local). */
void tc_boot_destroy(tc_boot_t *boot);

/**
 * Aborting a creation in progress. tc_rt_world_create() marks its thread as
 * creating (begin/end); every bootstrap wait made on that thread polls
 * tc_boot_creation_aborted() at least every TC_BOOT_ABORT_POLL_MS and gives up
 * with TC_ERR_ABORTED once tc_boot_abort_creations() has been called since
 * the creation began. Waits on other threads (lazy key lookups by the progress
 * thread) are not affected.
 */
#define TC_BOOT_ABORT_POLL_MS 10

/** Makes every creation in progress in this process fail with TC_ERR_ABORTED.
 *  Async-signal-safe: one atomic increment. */
void tc_boot_abort_creations(void);
/** This thread starts creating (a nested begin is not supported). */
void tc_boot_creation_begin(void);
/** This thread is done creating. */
void tc_boot_creation_end(void);
/** Nonzero while this thread is creating (between begin and end). */
int tc_boot_creation_is_active(void);
/** Nonzero when this thread's creation has been aborted (no detail set). */
int tc_boot_creation_is_aborted(void);
/** TC_ERR_ABORTED, with a message naming @p what was being waited for, when this
 *  thread's creation has been aborted; else TC_OK. */
tc_status_t tc_boot_creation_aborted(const char *what);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_RUNTIME_BOOTSTRAP_H */
