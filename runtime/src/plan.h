/* Internal, the plans and executor module: a schedule of the algorithm layer
 * compiled for a communicator (a plan) and kept in its cache, and a plan's
 * execution for one work over the world's endpoints with the kernels. It
 * calls the world, the kernels and fault tolerance (fault injection, a
 * tolerant work's failed peer). */
#ifndef TC_RUNTIME_PLAN_H
#define TC_RUNTIME_PLAN_H

#include "world.h"

/* A step as the executor runs it: a schedule's step, checked when compiled,
 * with what each run would otherwise recompute. */
typedef struct tc_rt_pstep {
    uint8_t kind, buf, dst_buf; /* as in tc_step_t */
    int32_t peer;               /* rank in the communicator (messages) */
    int32_t wpeer;              /* its world rank: the index of its endpoint; -1: local step */
    int64_t key;                /* (peer, direction) of the in-order rule; -1: local step */
    uint64_t src_off, dst_off;  /* bytes into the buffers */
    uint64_t count;             /* elements (reductions) */
    uint64_t bytes;
    uint32_t dep[2]; /* indices of earlier steps, or TC_STEP_NO_DEP */
} tc_rt_pstep_t;

/* A schedule compiled for one communicator and element size. */
typedef struct tc_rt_plan {
    const tc_sched_t *sched; /* what it was compiled from (names, for messages) */
    tc_rt_pstep_t *steps;
    uint32_t nsteps, cap;
    size_t esize;
    size_t scratch_bytes;          /* the scratch a run needs */
    size_t send_bytes, recv_bytes; /* extents of the caller's buffers it touches */
} tc_rt_plan_t;

/* Consumer of a receive-reduce posted to a transport sink: the message's
 * pieces are reduced into the destination as they land. */
typedef struct tc_rt_exec_sink {
    tc_tp_sink_t sink;
    struct tc_rt_work *work;
    uint32_t step;
} tc_rt_exec_sink_t;

/* A landing area: a receive-reduce's whole message, reduced when it is in. */
typedef struct tc_rt_exec_area {
    void *p;
    size_t cap;
    int used; /* the step in this slot landed here */
} tc_rt_exec_area_t;

/* Per-step execution state of one work (the step arrays grow and are reused
 * when restarted; memory for data is bounded by what is in flight). */
typedef struct tc_rt_exec {
    uint32_t cap;             /* steps the arrays below hold */
    uint8_t *state;           /* STEP_* per step */
    uint32_t nslots;          /* slots of the pools below: min(cap, 256) */
    tc_tp_req_t *reqs;        /* requests of posted steps: a pool of at most 256 (executor.c) */
    tc_rt_exec_sink_t *sinks; /* per slot: the consumer of a receive-reduce into a sink */
    tc_rt_exec_area_t *areas; /* per slot: where a receive-reduce whose transport has no
                               * sink lands (kept for the slot's next one; executor.c,
                               * exec_trim, says until when) */
    void *scratch;            /* the schedule's scratch buffer */
    size_t scratch_cap;
    void *stand; /* stand-ins for buffers the caller did not give; staged input */
    size_t stand_cap;
    size_t landing_need, stand_need; /* bytes of them this run used (exec_trim) */
    uint32_t runs;                   /* plans begun on it */
    uint32_t idle_runs;              /* runs when idle_ns was taken (tc_rt_exec_idle) */
    uint64_t idle_ns;                /* since when it has begun none (0: not looked at) */
    char *bufs[3];                   /* SEND, RECV, SCRATCH of the running schedule */
    size_t esize;
    uint32_t first; /* lowest step not done */
    uint32_t ndone;
    uint64_t withdrawn_ns;    /* when a receive found its message withdrawn (0: none; executor.c) */
    const tc_rt_plan_t *plan; /* what runs: a cache entry's plan, or own */
    tc_rt_plan_t own;         /* the plan of a schedule that is not cached */
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
    tc_rt_plan_t plan; /* sched compiled for the communicator, once, as it entered */
    int stat;          /* its statistics slot (stats.c), -1 until the first end */
} tc_rt_sched_entry_t;

/* plan_cache.c: the communicator's plans */
/* Find or build the plan of @p work's call (the work holds it until released). */
TC_MUST_USE tc_status_t tc_rt_plan_get(tc_rt_comm_t *comm, tc_rt_work_t *work, const char *hint);
/* Free the cached plans of @p comm. */
void tc_rt_plan_cache_free(tc_rt_comm_t *comm);

/* plan_compile.c */
/* Check every step of @p sched over @p nranks ranks: kind, buffers, bounds,
 * peer, dependencies (earlier steps only). TC_ERR_INTERNAL naming the first
 * bad step. */
TC_MUST_USE tc_status_t tc_rt_plan_validate(const tc_sched_t *sched, int nranks);
/* Validate @p sched and compile it into @p plan (its arrays grow, never
 * shrink) for elements of @p esize bytes; @p wranks maps the communicator's
 * ranks to world ranks (NULL: the same). */
TC_MUST_USE tc_status_t tc_rt_plan_compile(tc_rt_plan_t *plan, const tc_sched_t *sched,
                                           const int *wranks, size_t esize);
void tc_rt_plan_free(tc_rt_plan_t *plan);

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
/* A receive of @p work from world rank @p wpeer ended with TC_ERR_ABORTED, its sender having
 * withdrawn the message: 1 while it should wait for a failure to explain it
 * (TC_RT_WITHDRAWN_WAIT_MS from the first call of this run), 0 to fail now. */
int tc_rt_work_withdrawn_wait(tc_rt_work_t *work, int wpeer);
/* Cancel what is posted, so no request points into the caller's buffers. */
void tc_rt_exec_abandon(tc_rt_work_t *work);
void tc_rt_exec_free(tc_rt_exec_t *ex);
/* For a work kept as a spare: keep the step arrays, and the landing areas, scratch and
 * stand-ins while small (4 KiB); free the rest and its own plan. */
void tc_rt_exec_keep(tc_rt_exec_t *ex);
/* A look at a work that is not running, at @p now (the progress thread's tick, comm_world.c):
 * once it has begun no plan for TC_RT_EXEC_IDLE_NS, its landing areas, scratch and stand-ins
 * above 256 KiB are given back. Returns the bytes freed. */
size_t tc_rt_exec_idle(tc_rt_exec_t *ex, uint64_t now);
/* The ranks that posted receives still wait on, for a timeout message. */
void tc_rt_exec_awaited(const tc_rt_work_t *work, char *buf, size_t cap);

#endif
