/* Internal, the plans and executor module: a schedule of the algorithm layer
 * kept in the communicator's cache, and its execution for one work over the
 * world's endpoints with the kernels. It calls the world, the kernels and
 * fault injection. */
#ifndef TC_RUNTIME_PLAN_H
#define TC_RUNTIME_PLAN_H

#include "world.h"

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

/* plan_cache.c: the communicator's plans */
/* Find or build the plan of @p work's call (the work holds it until released). */
TC_MUST_USE tc_status_t tc_rt_plan_get(tc_rt_comm_t *comm, tc_rt_work_t *work, const char *hint);
/* Free the cached plans of @p comm. */
void tc_rt_plan_cache_free(tc_rt_comm_t *comm);

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
/* Cancel what is posted, so no request points into the caller's buffers. */
void tc_rt_exec_abandon(tc_rt_work_t *work);
void tc_rt_exec_free(tc_rt_exec_t *ex);
/* The ranks that posted receives still wait on, for a timeout message. */
void tc_rt_exec_awaited(const tc_rt_work_t *work, char *buf, size_t cap);

#endif
