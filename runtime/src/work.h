/* Internal, the work module: issuing operations (collectives and
 * point-to-point batches), starting them, and ending them by one path;
 * waits, tests, persistent restarts; TC_CHECK's exchange and a CUDA
 * communicator's staging run as phases of a work. It calls plans and the
 * executor, progress, observability, and fault tolerance to name a failure. */
#ifndef TC_RUNTIME_WORK_H
#define TC_RUNTIME_WORK_H

#include "plan.h"
#include "world.h"

/* What an operation is, for error messages (formatted only when needed). */
typedef struct tc_rt_op {
    tc_coll_t coll; /* TC_COLL_COUNT: point-to-point (or what name says) */
    uint64_t seq;
    const char *comm_name;
    const char *name; /* static: an operation that is no collective ("win_put"), or NULL */
} tc_rt_op_t;

/* "all_reduce #12 on comm 'world'" */
const char *tc_rt_op_what(const tc_rt_op_t *op, char *buf, size_t cap);

enum { TC_RT_WORK_IDLE = 0, TC_RT_WORK_RUNNING, TC_RT_WORK_DONE };

/* A work that runs no schedule (a window's operation, win_ops.c) says how it
 * advances and ends; schedule works have none. */
typedef struct tc_rt_work_ops {
    /* one pass: the changes, or a negative status (the error set) */
    int (*pass)(tc_rt_work_t *work);
    /* everything it posted completed */
    int (*done)(const tc_rt_work_t *work);
    /* it ends with @p st (every end, before the state is published): no
     * request may point into the caller's buffers after it */
    void (*end)(tc_rt_work_t *work, tc_status_t st);
    /* "(what it moves, between which ranks)", for the texts of its end */
    void (*describe)(const tc_rt_work_t *work, char *buf, size_t cap);
    /* the ranks it still waits for, as a list ("3", "0,2,5") */
    void (*awaited)(const tc_rt_work_t *work, char *buf, size_t cap);
    const char *algo; /* its "algorithm" in the flight recorder and the statistics */
} tc_rt_work_ops_t;

/* The transport requests of a window's operation (win_ops.c), or of a batch of
 * fire-and-forget ones of one kind to one peer (a pool record's, win_pool.c). */
typedef struct tc_rt_work_rma {
    struct tc_rt_win *win;
    int peer;    /* rank in the window's communicator */
    int kind;    /* TC_RT_WIN_*: of each operation in it */
    int nops;    /* operations in it */
    int nreq;    /* requests posted in req */
    int ndone;   /* req[0..ndone) completed well (answers come in order: a cursor) */
    int counted; /* operations counted in the window's pending ones */
    /* fire-and-forget: the burst's clock, which its flight-recorder times come
     * from (its deadline is set by the first expiry pass after it started) */
    uint64_t coarse_ns;
    tc_tp_req_t *req;   /* one, or batch for a pool record */
    /* a pool record's TC_RT_WIN_BATCH requests (win_pool.c); NULL: not one of the window's
     * pool of records */
    tc_tp_req_t *batch;
    tc_tp_req_t one[2]; /* data, then signal */
} tc_rt_work_rma_t;

/* One send or receive run without a schedule: a receive from any source (p2p_any.c), which
 * waits for a message from some rank then takes it, or a blocking send or receive of a given
 * rank (p2p_one.c). */
typedef struct tc_rt_work_one {
    tc_rt_work_t *next; /* the communicator's receives from any source not yet matched, in order */
    void *buf;
    size_t cap; /* bytes */
    int peer;   /* the other rank; from any source: -1 until a message is matched */
    int send;
    int posted; /* req was posted: an end before it completes takes it back */
    int look;   /* from any source: the rank looked at first by the next pass (fairness) */
    tc_tp_req_t req;
} tc_rt_work_one_t;

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
    tc_rt_coll_t call;            /* the call (arrays point into varr) */
    uint64_t *varr;               /* owned copies of the call's arrays */
    tc_rt_sched_entry_t *entry;   /* the cached schedule in use, or NULL */
    tc_sched_t own;               /* a schedule owned by this work */
    const tc_sched_t *sched;      /* what runs now: main_sched, or check_sched first */
    const tc_sched_t *main_sched; /* the operation's schedule: entry's or own */
    int checking;                 /* TC_CHECK: the exchange runs first (check.c) */
    tc_sched_t check_sched;       /* its schedule, and its buffer: mine, then everyone's */
    void *check_buf;
    int stage_send;        /* all_to_all in place: run out of place from a copy */
    void *d_send, *d_recv; /* CUDA communicator: the caller's device buffers (cuda.c) */
    void *h_buf;           /* their host copies (grow-only) */
    size_t h_cap, h_recv_bytes;
    int staged;          /* the call's buffers point at h_buf */
    uint64_t *step_tags; /* per-step tags (point-to-point), or NULL */
    uint32_t step_tags_cap;
    uint64_t tag; /* the tag of every step when step_tags is NULL */
    int64_t timeout_ms;
    uint64_t deadline;
    int failed_peer;   /* world rank whose failure ended this work, or -1 */
    int tolerant;      /* a failed peer ends only its own steps (shrink) */
    size_t *recv_bytes; /* or NULL; per step, bytes its receive got (0: none); set, a receive
                           also takes a shorter message (shrink) */
    uint64_t fr_id;    /* its flight-recorder entry, or 0 */
    uint64_t start_ns; /* when it started (stats, hooks) */
    tc_rt_op_t op;
    tc_rt_exec_t ex;
    const tc_rt_work_ops_t *ops; /* NULL: the schedule runs (executor) */
    tc_rt_work_rma_t rma;        /* with ops: a window's operation */
    tc_rt_work_one_t one;        /* with ops: one send or receive (p2p_any.c, p2p_one.c) */
    /* with ops: a collective on the small-message path's lanes (small_work.c); kept with a
     * spare */
    struct tc_rt_lane_work *lane;
};

/* The state is read without the lock by waiters and testers: what a work
 * produced (result, error, the caller's buffers) is published before it. */
static inline int tc_rt_work_get_state(const tc_rt_work_t *w)
{
    return __atomic_load_n(&w->state, __ATOMIC_ACQUIRE);
}

static inline void tc_rt_work_set_state(tc_rt_work_t *w, int state)
{
    __atomic_store_n(&w->state, state, __ATOMIC_RELEASE);
}

/* work.c: a heap work of @p comm (on its list; one of its spares when it has one), or NULL;
 * its release (lock held; the work is not running), which keeps it as a spare of its
 * communicator while there are few; and the end of a spare (the communicator's end). */
tc_rt_work_t *tc_rt_work_alloc(tc_rt_comm_t *comm);
void tc_rt_work_release(tc_rt_work_t *work);
void tc_rt_work_free_spare(tc_rt_work_t *work);

/* The tag of the next message to (@p is_send) or from rank @p peer of @p comm, which it
 * consumes when @p take (issue order matches messages between two ranks). */
TC_MUST_USE tc_status_t tc_rt_p2p_tag(tc_rt_comm_t *comm, int peer, int is_send, int take,
                                      uint64_t *tag_p);

/* p2p_any.c: receives from any source */
/* TC_ERR_UNSUPPORTED for a receive from any source inside a batch of several operations, and
 * TC_ERR_INVALID_STATE for a receive from a given rank while one from any source is not
 * matched yet (which message each should take would depend on timing). Lock held. */
TC_MUST_USE tc_status_t tc_rt_any_check(tc_rt_comm_t *comm, const tc_rt_p2p_t *ops, int n);
/* Issue the receive from any source @p op (flags, work_p as tc_rt_p2p_issue); lock held. */
TC_MUST_USE tc_status_t tc_rt_any_issue(tc_rt_comm_t *comm, const tc_rt_p2p_t *op,
                                        int64_t timeout_ms, int flags, tc_rt_work_t **work_p);

/* p2p_one.c: run the single send or receive @p op of a given rank without a schedule, on the
 * communicator's own work (blocking without @p work_p: comm->p2p_one) or on a heap work
 * (flags and @p work_p as tc_rt_p2p_issue); lock held. */
TC_MUST_USE tc_status_t tc_rt_one_run(tc_rt_comm_t *comm, const tc_rt_p2p_t *op, int64_t timeout_ms,
                                      int flags, tc_rt_work_t **work_p);
/* At the end of a work of either kind: nothing may touch the caller's buffer after it, so a
 * request still pending is taken back, or its endpoint closed, which ends it. */
void tc_rt_one_take_back(tc_rt_work_t *work);

/* work_progress.c */
/* Wait (lock held) for @p work, at most until @p wait_deadline (0: its own). */
TC_MUST_USE tc_status_t tc_rt_work_wait_locked(tc_rt_work_t *work, uint64_t wait_deadline);
/* End a running work with @p st (its error set): the communicator breaks. */
void tc_rt_work_fail(tc_rt_work_t *work, tc_status_t st);
/* Run a prepared internal work (comm, call, sched, tag, op, timeout set) to
 * completion; lock held. */
TC_MUST_USE tc_status_t tc_rt_work_run_internal(tc_rt_work_t *work);
/* Cancel every running work of @p comm with @p st (destroy, abort). */
void tc_rt_comm_cancel_works(tc_rt_comm_t *comm, tc_status_t st, const char *why);

/* Advance every running work once: the changes. */
int tc_rt_works_advance(tc_rt_world_t *world);
/* Nothing moved for a while: end the works past their deadline at @p now, and empty the lanes
 * whose writers may wait for a slot (tc_rt_small_unblock). */
void tc_rt_works_expire(tc_rt_world_t *world, uint64_t now);
/* Give back the large buffers of works that have run nothing for a second, at @p now (the
 * progress thread, every quarter heartbeat period). */
void tc_rt_works_idle(tc_rt_world_t *world, uint64_t now);
/* End every running work with @p st (the transports failed). */
void tc_rt_works_fail_all(tc_rt_world_t *world, tc_status_t st);
/* Put @p work on the world's running list / take it off. A work that is not tolerant, of a
 * communicator already broken, ends at once with the communicator's status (false). */
bool tc_rt_work_link(tc_rt_work_t *work);
/* Start a work that runs no schedule (its ops, op and call set; not linked yet): @p async, its
 * deadline from @p timeout_ms (0: the communicator's), the records' start, running. */
void tc_rt_work_begin(tc_rt_work_t *work, int async, int64_t timeout_ms);
/* Linked, its first pass (at issue) gave @p c: it fails, ends, or a blocking one is waited for
 * (bounded by its deadline; the result is the work's). */
void tc_rt_work_after_first(tc_rt_work_t *work, int c);
void tc_rt_work_unlink(tc_rt_work_t *work);
/* The one way a running work ends: @p st with its error (w->error) already
 * written; observability told, the schedule released, the state published. */
void tc_rt_work_end(tc_rt_work_t *work, tc_status_t st);
/* AVG: the schedules sum; divide this rank's defined output (every step done). */
TC_MUST_USE tc_status_t tc_rt_work_finish_avg(tc_rt_work_t *work);
/* A work issued on the small-message path (sequence number, tag, deadline, records: started)
 * whose set-up turned the path off: its plan and executor, to run on the general path like any
 * work. Lock held. */
TC_MUST_USE tc_status_t tc_rt_work_go_general(tc_rt_work_t *work);
/* Let go of the work's plan (a persistent work keeps its own). */
void tc_rt_sched_release(tc_rt_work_t *work);

/* check.c: TC_CHECK. The exchange of the call's description runs as the
 * first phase of the work: prepare sets it running (w->sched, tag, buffers),
 * finish compares once it completed. */
TC_MUST_USE tc_status_t tc_rt_check_prepare(tc_rt_work_t *work);
TC_MUST_USE tc_status_t tc_rt_check_finish(tc_rt_work_t *work);
void tc_rt_check_free(tc_rt_work_t *work);

/* cuda.c: communicators bound to a CUDA device stage their buffers in host memory */
TC_MUST_USE tc_status_t tc_rt_cuda_bind(tc_rt_comm_t *comm, int device);
/* Copy the device input to host memory and point the call at it (work start). */
TC_MUST_USE tc_status_t tc_rt_cuda_stage_in(tc_rt_work_t *work);
/* Copy the host result back to the device (work completion). */
TC_MUST_USE tc_status_t tc_rt_cuda_stage_out(tc_rt_work_t *work);

#endif
