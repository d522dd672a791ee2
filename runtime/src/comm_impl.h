/* Internal: the runtime communicator and its executor. */
#ifndef TC_RUNTIME_COMM_IMPL_H
#define TC_RUNTIME_COMM_IMPL_H

#include "tcomms/base/hmap.h"
#include "tcomms/runtime/comm.h"
#include "tcomms/transport/transport.h"

/* Per-step state the executor keeps, reused across operations (grow-only). */
typedef struct tc_rt_exec_state {
    uint32_t cap;          /* steps the arrays below hold */
    uint8_t *state;        /* TC_RT_STEP_* per step */
    tc_tp_req_t *reqs;     /* one request per step (used by communication steps) */
    uint64_t *tmp_off;     /* byte offset into tmp of each RECV_REDUCE step */
    void *tmp;             /* landing area for RECV_REDUCE steps */
    size_t tmp_cap;
    void *scratch;         /* the schedule's scratch buffer */
    size_t scratch_cap;
} tc_rt_exec_state_t;

/* Schedules are pure functions of these keys, so a communicator keeps the
 * last few it built: repeated operations (training loops) build nothing. */
#define TC_RT_SCHED_CACHE 8

typedef struct tc_rt_sched_entry {
    uint64_t last_use;     /* 0: empty */
    tc_coll_t coll;
    uint64_t count;
    size_t elem_size;      /* the model's choice depends on bytes, not elements */
    int root;
    int in_place;
    char algo[32];         /* the hint asked for, "" to let the cost model choose */
    tc_sched_t sched;
} tc_rt_sched_entry_t;

/* What an operation is, for error messages (formatted only when needed). */
typedef struct tc_rt_op {
    tc_coll_t coll;
    uint64_t seq;
    const char *comm_name;
} tc_rt_op_t;

/* "all_reduce #12 on comm 'world'" */
const char *tc_rt_op_what(const tc_rt_op_t *op, char *buf, size_t cap);

struct tc_rt_comm {
    tc_boot_t *boot;
    int rank;
    int size;
    char name[64];
    int64_t timeout_ms;
    uint64_t spin_ns;      /* how long a blocking call polls before sleeping in the transport */
    uint64_t comm_id;      /* high bits of every tag: separates communicators */
    uint64_t seq;          /* operations issued on this communicator */
    tc_status_t broken;    /* TC_OK, or why the communicator can no longer be used */
    char broken_why[512];
    tc_tp_ctx_t *tp;       /* tcp: every peer */
    tc_tp_ctx_t *shm;      /* shared memory: peers on this node (NULL with TC_SHM=0) */
    int shm_eps;           /* endpoints over shm so far */
    tc_hmap_t eps;         /* rank -> tc_tp_ep_t*, only the peers actually used */
    uint64_t node_id;      /* this node's id (topo), published as TC_RT_NODE_KEY */
    tc_hmap_t locality;    /* rank -> TC_RT_LOCAL/TC_RT_REMOTE, learnt on first use */
    int local_peers_seen;  /* peers found on this node so far */
    tc_hints_t hints;
    tc_rt_exec_state_t exec;
    uint64_t sched_uses;
    tc_rt_sched_entry_t sched_cache[TC_RT_SCHED_CACHE];
};

/* Progress every transport context; completions, or a negative status. */
int tc_rt_comm_progress(tc_rt_comm_t *comm);

/* Sleep until a transport may have progress to make, at most @p max_ms;
 * @p idle_ns is how long the caller has gone without progress. */
void tc_rt_comm_wait(tc_rt_comm_t *comm, int max_ms, uint64_t idle_ns);

/* The endpoint to @p peer, connected on first use. */
tc_status_t tc_rt_comm_ep(tc_rt_comm_t *comm, int peer, uint64_t deadline_ns, tc_tp_ep_t **ep_p);

/* Run a schedule; @p op names the operation in errors. */
tc_status_t tc_rt_exec_run(tc_rt_comm_t *comm, const tc_sched_t *sched, const tc_rt_coll_t *call,
                           uint64_t tag, uint64_t deadline_ns, const tc_rt_op_t *op);

void tc_rt_exec_free(tc_rt_exec_state_t *exec);

#endif
