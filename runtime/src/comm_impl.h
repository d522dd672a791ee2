/* Internal: the world (what communicators of one job share), communicators,
 * work objects and the executor. */
#ifndef TC_RUNTIME_COMM_IMPL_H
#define TC_RUNTIME_COMM_IMPL_H

#include <pthread.h>

#include "tcomms/base/hmap.h"
#include "tcomms/runtime/comm.h"
#include "tcomms/transport/transport.h"

/* Tags: [comm id: 20 bits][kind: 2 bits][sequence: 42 bits]. Collectives
 * use the communicator's operation sequence; point-to-point messages a
 * per-peer, per-direction sequence; TC_CHECK exchanges their own kind. */
#define TC_RT_TAG_SEQ_BITS 42
#define TC_RT_TAG_KIND_SHIFT 42
#define TC_RT_TAG_ID_SHIFT 44
#define TC_RT_COMM_ID_MAX ((1u << 20) - 2)
#define TC_RT_HB_COMM_ID ((1u << 20) - 1) /* heartbeats (heartbeat.c), never a communicator */
enum { TC_RT_TAG_COLL = 0, TC_RT_TAG_P2P = 1, TC_RT_TAG_CHECK = 2, TC_RT_TAG_SHRINK = 3 };

static inline uint64_t tc_rt_tag(uint64_t comm_id, unsigned kind, uint64_t seq)
{
    return (comm_id << TC_RT_TAG_ID_SHIFT) | ((uint64_t)kind << TC_RT_TAG_KIND_SHIFT) |
           (seq & ((UINT64_C(1) << TC_RT_TAG_SEQ_BITS) - 1));
}

/* Per-step execution state of one work (grow-only, reused when restarted). */
typedef struct tc_rt_exec {
    uint32_t cap;      /* steps the arrays below hold */
    uint8_t *state;    /* STEP_* per step */
    tc_tp_req_t *reqs; /* one request per step (used by communication steps) */
    uint64_t *tmp_off; /* byte offset into tmp of each RECV_REDUCE step */
    void *tmp;         /* landing area for RECV_REDUCE steps */
    size_t tmp_cap;
    void *scratch; /* the schedule's scratch buffer */
    size_t scratch_cap;
    void *stand; /* stand-ins for buffers the caller did not give; staged input */
    size_t stand_cap;
    char *bufs[3]; /* SEND, RECV, SCRATCH of the running schedule */
    size_t esize;
    uint32_t first; /* lowest step not done */
    uint32_t ndone;
} tc_rt_exec_t;

/* Schedules are pure functions of these keys, so a communicator keeps the
 * last few it built: repeated operations (training loops) build nothing. An
 * entry in use by a running work (users > 0) is never evicted. */
#define TC_RT_SCHED_CACHE 8

typedef struct tc_rt_sched_entry {
    uint64_t last_use; /* 0: empty */
    int users;         /* works running on this schedule */
    tc_coll_t coll;
    uint64_t count;
    size_t elem_size; /* the model's choice depends on bytes, not elements */
    int root;
    int in_place;
    char algo[32]; /* the hint asked for, "" to let the cost model choose */
    tc_sched_t sched;
} tc_rt_sched_entry_t;

/* What an operation is, for error messages (formatted only when needed). */
typedef struct tc_rt_op {
    tc_coll_t coll; /* TC_COLL_COUNT: point-to-point */
    uint64_t seq;
    const char *comm_name;
} tc_rt_op_t;

/* "all_reduce #12 on comm 'world'" */
const char *tc_rt_op_what(const tc_rt_op_t *op, char *buf, size_t cap);

typedef struct tc_rt_world tc_rt_world_t;

/* One operation in the flight recorder. */
enum { TC_RT_FR_RUNNING = 0, TC_RT_FR_DONE, TC_RT_FR_TIMED_OUT, TC_RT_FR_FAILED };
typedef struct tc_rt_fr_entry {
    uint64_t id;  /* 1 + position in the communicator's history (0: empty) */
    uint64_t seq; /* the operation's sequence number */
    int coll;     /* tc_coll_t; TC_COLL_COUNT: send/recv */
    int dtype, op, root;
    uint64_t count;
    const char *algo; /* static */
    int state;        /* TC_RT_FR_* */
    tc_status_t status;
    uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC; dumps convert to the real time */
    char awaited[64];          /* ranks still awaited when it ended or was dumped */
} tc_rt_fr_entry_t;

/* A rank of the job known to have failed. */
typedef struct tc_rt_failed {
    int rank; /* world rank */
    int pid;  /* -1 when it could not be learnt */
    char host[64];
    char why[192];    /* how it was learnt */
    uint64_t when_ns; /* when this process learnt it */
} tc_rt_failed_t;

enum { TC_RT_WORK_IDLE = 0, TC_RT_WORK_RUNNING, TC_RT_WORK_DONE };

struct tc_rt_work {
    tc_rt_comm_t *comm;          /* NULL once the communicator is destroyed */
    tc_rt_work_t *next, *prev;   /* the world's list of running works */
    tc_rt_work_t *cnext, *cprev; /* the communicator's list of heap works */
    int heap;                    /* allocated (freed by tc_rt_work_free) */
    int async;                   /* progressed by the progress thread */
    int persistent;              /* restartable; owns its schedule */
    int state;                   /* TC_RT_WORK_* */
    tc_status_t result;
    char error[512];
    tc_rt_coll_t call;          /* the call (arrays point into varr) */
    uint64_t *varr;             /* owned copies of the call's arrays */
    tc_rt_sched_entry_t *entry; /* the cached schedule in use, or NULL */
    tc_sched_t own;             /* a schedule owned by this work */
    const tc_sched_t *sched;    /* what runs now: main_sched, or check_sched first */
    const tc_sched_t *main_sched; /* the operation's schedule: entry's or own */
    int checking;               /* TC_CHECK: the exchange runs first (check.c) */
    tc_sched_t check_sched;     /* its schedule, and its buffer: mine, then everyone's */
    void *check_buf;
    int stage_send;             /* all_to_all in place: run out of place from a copy */
    void *d_send, *d_recv;      /* CUDA communicator: the caller's device buffers (cuda.c) */
    void *h_buf;                /* their host copies (grow-only) */
    size_t h_cap, h_recv_bytes;
    int staged;                 /* the call's buffers point at h_buf */
    uint64_t *step_tags;        /* per-step tags (point-to-point), or NULL */
    uint32_t step_tags_cap;
    uint64_t tag;               /* the tag of every step when step_tags is NULL */
    int64_t timeout_ms;
    uint64_t deadline;
    int failed_peer; /* world rank whose failure ended this work, or -1 */
    int tolerant;    /* a failed peer ends only its own steps (shrink) */
    uint64_t fr_id;  /* its flight-recorder entry, or 0 */
    uint64_t start_ns; /* when it started (stats, hooks) */
    tc_rt_op_t op;
    tc_rt_exec_t ex;
};

/* Failure points of TC_FAULT_INJECT for this process (fault_inject.c). */
typedef struct tc_rt_fault {
    uint32_t shrink_round; /* die in this round of a shrink (0: never) */
    int shrink_sends;      /* after sending to this many peers */
    uint64_t step_op;      /* die as step step_idx of collective step_op starts (0: never) */
    uint32_t step_idx;
    int create; /* die inside the world's creation, before the fence */
} tc_rt_fault_t;

struct tc_rt_world {
    int refs; /* communicators using it */
    tc_boot_t *boot;
    uint64_t spin_ns;  /* how long a blocking call polls before sleeping */
    tc_tp_ctx_t *tp;   /* tcp: every peer */
    tc_tp_ctx_t *shm;  /* shared memory: peers on this node (NULL with TC_SHM=0) */
    tc_tp_ctx_t *ib;        /* verbs: peers on other nodes, when this node has a device */
    tc_tp_ctx_t *self; /* this process to itself, created on first use */
    tc_tp_ep_t *self_ep;
    int shm_eps, tcp_eps;   /* endpoints connected so far */
    int ib_eps;
    unsigned tcp_idle_passes; /* progress passes since tcp was last looked at */
    unsigned idle_passes;     /* progress passes in a row that moved nothing */
    uint64_t now_ns;          /* the clock as read by the last idle pass that read it */
    tc_hmap_t eps;          /* world rank -> tc_tp_ep_t*, only the peers actually used */
    uint64_t node_id;       /* this node's id (topo), published as TC_RT_NODE_KEY */
    tc_hmap_t locality;     /* world rank -> local/remote, learnt on first use */
    uint32_t next_comm_id;  /* lowest communicator id this process has not used */
    tc_rt_work_t *active;   /* running works of every communicator */
    tc_rt_comm_t *comms;    /* every live communicator (to fail or revoke them) */
    tc_rt_failed_t *failed; /* ranks known to have failed, in the order learnt */
    int nfailed, failed_cap;
    uint64_t hb_ns;         /* heartbeat period (0: off) */
    int hb_misses;          /* periods of silence before a peer is failed */
    uint64_t hb_next;       /* next heartbeat duty */
    unsigned hb_passes;     /* progress passes, to look at the clock every 64 */
    tc_hmap_t hb;           /* world rank -> heartbeat state, peers connected only */
    int nasync; /* of which asynchronous */
    tc_rt_fault_t fault;
    /* Threads: once the progress thread exists (first asynchronous
     * operation), every entry point takes mu; before that there is one
     * caller at a time and no lock is taken. */
    int threaded;
    int stop;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

struct tc_rt_comm {
    tc_rt_world_t *world;
    tc_rt_comm_t *wnext, *wprev; /* the world's list of communicators */
    int device;         /* CUDA device the buffers live on, or -1 (the CPU) */
    int rank;
    int size;
    int *ranks;         /* world rank of each rank, or NULL (the world's own order) */
    int ranks_per_node; /* for hierarchical algorithms; 0 when unknown */
    char name[64];
    int64_t timeout_ms;
    uint32_t comm_id;   /* high bits of every tag: separates communicators */
    uint64_t seq;       /* collectives issued on this communicator */
    uint32_t shrinks;   /* shrinks of this communicator begun (their tags) */
    uint64_t p2p_ops;   /* point-to-point batches issued (for messages only) */
    tc_hmap_t p2p_seq;  /* peer -> {sends, receives} issued, for p2p tags */
    tc_status_t broken; /* TC_OK, or why the communicator can no longer be used */
    char broken_why[512];
    int check; /* TC_CHECK: compare each collective's arguments first */
    tc_hints_t hints;
    tc_rt_stat_t stats[32]; /* per collective and algorithm (stats.c) */
    int nstats;
    struct {
        tc_rt_hook_fn fn;
        void *arg;
    } hooks[TC_RT_HOOKS];
    int nhooks;
    tc_rt_fr_entry_t *fr; /* flight recorder: the last fr_cap operations (NULL: off) */
    uint32_t fr_cap;
    uint64_t fr_next;
    tc_rt_work_t *p2p_work;    /* blocking send/recv without a work object, reused */
    tc_rt_work_t inline_work; /* blocking operations without a work object */
    tc_rt_work_t *works;      /* live heap works */
    uint64_t sched_uses;
    tc_rt_sched_entry_t sched_cache[TC_RT_SCHED_CACHE];
};

/* world.c */
TC_MUST_USE tc_status_t tc_rt_world_create(tc_boot_kind_t boot, const tc_boot_kv_params_t *kv,
                                           const tc_hints_t *hints,
                                           uint64_t deadline, tc_rt_world_t **world_p);
void tc_rt_world_release(tc_rt_world_t *world);
void tc_rt_world_lock(tc_rt_world_t *world);
void tc_rt_world_unlock(tc_rt_world_t *world);
/* Start the progress thread (first asynchronous operation); lock held after. */
TC_MUST_USE tc_status_t tc_rt_world_go_threaded(tc_rt_world_t *world);
/* The endpoint to world rank @p peer (itself included), connected on first use. */
TC_MUST_USE tc_status_t tc_rt_world_ep(tc_rt_world_t *world, int peer, uint64_t deadline_ns,
                                       tc_tp_ep_t **ep_p);
TC_MUST_USE tc_status_t tc_rt_world_same_node(tc_rt_world_t *world, int peer, uint64_t deadline_ns,
                                              int *same_p);
/* Progress every transport context; completions, or a negative status. */
int tc_rt_world_progress_tp(tc_rt_world_t *world);
/* Sleep until a transport may have progress, at most @p max_ms; @p idle_ns is
 * how long the caller has gone without progress. */
void tc_rt_world_wait(tc_rt_world_t *world, int max_ms, uint64_t idle_ns);

/* work.c */
/* Advance every running work once and the transports; returns the changes. */
int tc_rt_world_progress(tc_rt_world_t *world);
/* Wait (lock held) for @p work, at most until @p wait_deadline (0: its own). */
TC_MUST_USE tc_status_t tc_rt_work_wait_locked(tc_rt_work_t *work, uint64_t wait_deadline);
void tc_rt_work_fail(tc_rt_work_t *work, tc_status_t st);
/* Run a prepared internal work (comm, call, sched, tag, op, timeout set) to
 * completion; lock held. */
TC_MUST_USE tc_status_t tc_rt_work_run_internal(tc_rt_work_t *work);
/* Cancel every running work of @p comm with @p st (destroy, abort). */
void tc_rt_comm_cancel_works(tc_rt_comm_t *comm, tc_status_t st, const char *why);

/* executor.c */
/* Prepare @p work's state for its schedule (allocation happens here). */
TC_MUST_USE tc_status_t tc_rt_exec_begin(tc_rt_work_t *work);
/* The same with explicit buffers and element size (internal exchanges). */
TC_MUST_USE tc_status_t tc_rt_exec_begin_raw(tc_rt_work_t *work, const void *send, void *recv,
                                             size_t esize);
/* One pass: finish what completed, start what is ready. Returns the steps
 * that changed state, or a negative status (the error is set). */
int tc_rt_exec_pass(tc_rt_work_t *work);
/* All steps done. */
int tc_rt_exec_done(const tc_rt_work_t *work);
/* The ranks that posted receives still wait on, for a timeout message. */
void tc_rt_exec_awaited(const tc_rt_work_t *work, char *buf, size_t cap);
/* Cancel what is posted, so no request points into the caller's buffers. */
void tc_rt_exec_abandon(tc_rt_work_t *work);
void tc_rt_exec_free(tc_rt_exec_t *ex);

/* comm.c */
/* The world rank of rank @p peer of @p comm. */
static inline int tc_rt_world_rank(const tc_rt_comm_t *comm, int peer)
{
    return comm->ranks ? comm->ranks[peer] : peer;
}
/* Register a new communicator with its world (lock held); breaks it at once
 * if a member is known to have failed. */
void tc_rt_comm_adopt(tc_rt_comm_t *comm);
/* A new communicator of world ranks @p wranks (this process is @p rank among
 * them) with id @p id, inheriting from @p parent what @p params leaves out. */
TC_MUST_USE tc_status_t tc_rt_comm_make(tc_rt_comm_t *parent, const tc_rt_comm_params_t *params,
                                        const char *default_name, const int *wranks, int n,
                                        int rank, int64_t id, tc_rt_comm_t **child_p);
/* Find or build the schedule of @p work's call. */
TC_MUST_USE tc_status_t tc_rt_comm_sched(tc_rt_comm_t *comm, tc_rt_work_t *work, const char *hint);
void tc_rt_sched_release(tc_rt_work_t *work);

/* failure.c: failed ranks, learnt from the transports, the launcher or peers */
/* Dequeue the bootstrap's events (failures, revocations) and apply them. */
void tc_rt_world_poll_events(tc_rt_world_t *world);
/* Record that world rank @p rank failed (once); @p notify tells the other ranks. */
const tc_rt_failed_t *tc_rt_world_note_failure(tc_rt_world_t *world, int rank, const char *why,
                                               int notify);
/* Break every communicator holding @p f's rank and cancel its running works. */
void tc_rt_world_fail_comms(tc_rt_world_t *world, const tc_rt_failed_t *f);
const tc_rt_failed_t *tc_rt_world_failed(const tc_rt_world_t *world, int rank);
/* "rank 3 (world rank 5, host h, pid 42)" */
void tc_rt_failed_describe(const tc_rt_comm_t *comm, const tc_rt_failed_t *f, char *buf,
                           size_t cap);
/* The rank of world rank @p wrank in @p comm, or -1. */
int tc_rt_comm_rank_of(const tc_rt_comm_t *comm, int wrank);
void tc_rt_world_add_comm(tc_rt_world_t *world, tc_rt_comm_t *comm);
void tc_rt_world_remove_comm(tc_rt_world_t *world, tc_rt_comm_t *comm);
/* Local revoke: leave every pending operation with TC_ERR_REVOKED. */
void tc_rt_comm_revoke_local(tc_rt_comm_t *comm, const char *why);

/* fault_inject.c: TC_FAULT_INJECT */
TC_MUST_USE tc_status_t tc_rt_fault_init(tc_rt_world_t *world);
/* In round @p round of a shrink: -1, or how many peers to send to before dying. */
int tc_rt_fault_shrink_sends(const tc_rt_world_t *world, uint32_t round);
/* Die if step @p step of collective @p op is this process's failure point. */
void tc_rt_fault_step(tc_rt_world_t *world, uint64_t op, uint32_t step);
/* End this process as a crash would (SIGKILL), saying where. */
void tc_rt_fault_die(tc_rt_world_t *world, const char *where);

/* heartbeat.c */
TC_MUST_USE tc_status_t tc_rt_hb_init(tc_rt_world_t *world);
void tc_rt_hb_free(tc_rt_world_t *world);
/* A new endpoint: start exchanging heartbeats with its peer. */
void tc_rt_hb_peer(tc_rt_world_t *world, int peer, tc_tp_ep_t *ep);
/* Send due heartbeats, repost receives, fail peers silent too long. */
void tc_rt_hb_tick(tc_rt_world_t *world, uint64_t now);

/* cuda.c: communicators bound to a CUDA device stage their buffers in host memory */
TC_MUST_USE tc_status_t tc_rt_cuda_bind(tc_rt_comm_t *comm, int device);
/* Copy the device input to host memory and point the call at it (work start). */
TC_MUST_USE tc_status_t tc_rt_cuda_stage_in(tc_rt_work_t *work);
/* Copy the host result back to the device (work completion). */
TC_MUST_USE tc_status_t tc_rt_cuda_stage_out(tc_rt_work_t *work);

/* stats.c: statistics and hooks */
void tc_rt_stats_hook_before(tc_rt_work_t *work);
void tc_rt_stats_end(tc_rt_work_t *work, tc_status_t st);

/* fr.c: the flight recorder */
TC_MUST_USE tc_status_t tc_rt_fr_init(tc_rt_comm_t *comm);
void tc_rt_fr_free(tc_rt_comm_t *comm);
void tc_rt_fr_begin(tc_rt_work_t *work, uint64_t now_ns);
void tc_rt_fr_end(tc_rt_work_t *work, tc_status_t st);
TC_MUST_USE tc_status_t tc_rt_fr_dump(tc_rt_comm_t *comm, const char *reason);
/* Dump if TC_FR_DIR is set, keeping the caller's error (@p keep) as it was. */
void tc_rt_fr_dump_auto(tc_rt_comm_t *comm, const char *reason, tc_status_t keep);
/* Dump every communicator if SIGUSR1 arrived. */
void tc_rt_fr_poll_signal(tc_rt_world_t *world);

/* check.c: TC_CHECK. The exchange of the call's description runs as the
 * first phase of the work: prepare sets it running (w->sched, tag, buffers),
 * finish compares once it completed. */
TC_MUST_USE tc_status_t tc_rt_check_prepare(tc_rt_work_t *work);
TC_MUST_USE tc_status_t tc_rt_check_finish(tc_rt_work_t *work);
void tc_rt_check_free(tc_rt_work_t *work);

#endif
