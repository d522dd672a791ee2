/* Internal, the world module: what every communicator of one job shares in
 * this process. The world owns the bootstrap handle, the transport contexts
 * and the endpoints (an array indexed by world rank, connected on first use,
 * each over the registered backend that fits the peer best).
 *
 * The modules above keep their per-world state here too, each in its own
 * section below, touched only by the module named: progress (progress.c),
 * fault tolerance (failure.c, heartbeat.c, fault_inject.c), communicators
 * (comm.c). The world itself reads none of it. */
#ifndef TC_RUNTIME_WORLD_H
#define TC_RUNTIME_WORLD_H

#include <poll.h>
#include <pthread.h>

#include "tcomms/base/hmap.h"
#include "tcomms/base/idset.h"
#include "tcomms/runtime/bootstrap.h"
#include "tcomms/runtime/comm.h"
#include "tcomms/transport/transport.h"

/* Tags: [comm id: 20 bits][kind: 2 bits][sequence: 42 bits]. Collectives
 * use the communicator's operation sequence, under the collective's number
 * (tc_rt_coll_tag); point-to-point messages a per-peer, per-direction
 * sequence; TC_CHECK exchanges their own kind. */
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

/* A collective's tag: the operation's sequence with the collective (tc_coll_t) in the top 4 of
 * the sequence's bits. Ranks that call different collectives at the same point (a mismatch,
 * without TC_CHECK) then never take each other's messages: they wait, time out and leave
 * their flight recorders to say who called what, where a broadcast could take an all-reduce's
 * message of its size and return TC_OK with it. */
#define TC_RT_TAG_COLL_SHIFT (TC_RT_TAG_SEQ_BITS - 4)
_Static_assert(TC_COLL_COUNT <= 16, "a collective's number takes 4 bits of its tags");
static inline uint64_t tc_rt_coll_tag(uint64_t comm_id, unsigned coll, uint64_t seq)
{
    return tc_rt_tag(comm_id, TC_RT_TAG_COLL,
                     ((uint64_t)coll << TC_RT_TAG_COLL_SHIFT) |
                         (seq & ((UINT64_C(1) << TC_RT_TAG_COLL_SHIFT) - 1)));
}

typedef struct tc_rt_world tc_rt_world_t;
typedef struct tc_rt_failed tc_rt_failed_t;

/* At most this many backends serve one world (self, shm, tcp, ib, ...). */
#define TC_RT_BACKENDS_MAX 8
#define TC_RT_HOST_MAX 64 /* a host name as ranks publish it, its NUL included */
_Static_assert(sizeof(((tc_boot_t *)0)->host) == TC_RT_HOST_MAX, "a host name fits the record");

/* One backend the world opened: its context and how many peers it reaches. */
typedef struct tc_rt_backend {
    const tc_tp_ops_t *ops;
    tc_tp_ctx_t *ctx;
    tc_tp_reach_t reach; /* the peers it serves, as registered */
    int neps;            /* endpoints connected over it */
    int required;        /* TC_<NAME>=1: a peer it refuses takes no other backend */
} tc_rt_backend_t;

/* The modules above the world tell it what to do on each progress pass and
 * when a failure is learnt; set once, when the world is assembled (comm.c). */
typedef struct tc_rt_world_hooks {
    /* events of the bootstrap, the flight recorder's signal, heartbeats */
    void (*poll)(tc_rt_world_t *world);
    /* advance the running operations once: the steps that changed state */
    int (*advance)(tc_rt_world_t *world);
    /* nothing moved for a while: end what is past its deadline at @p now */
    void (*expire)(tc_rt_world_t *world, uint64_t now);
    /* the transports failed: end every running operation with @p st */
    void (*fail_all)(tc_rt_world_t *world, tc_status_t st);
    /* world rank @p f failed: break what holds it (the one callback of fault tolerance) */
    void (*failed)(tc_rt_world_t *world, const tc_rt_failed_t *f);
    /* the communicator @p comm_id was revoked by world rank @p by */
    void (*revoked)(tc_rt_world_t *world, int by, uint32_t comm_id);
    /* the heartbeats' duty, whatever else runs (the progress thread calls it) */
    void (*tick)(tc_rt_world_t *world);
    /* a new endpoint to world rank @p peer (heartbeats start) */
    void (*connected)(tc_rt_world_t *world, int peer, tc_tp_ep_t *ep);
    /* an endpoint is about to close (ep_drops counted already): return once no thread that
     * runs without the world's lock may still read its segment */
    void (*closing)(tc_rt_world_t *world);
} tc_rt_world_hooks_t;

/* Failure points of TC_FAULT_INJECT for this process (fault_inject.c). */
typedef struct tc_rt_fault {
    uint32_t shrink_round; /* die in this round of a shrink (0: never) */
    int shrink_sends;      /* after sending to this many peers */
    uint32_t shrink_agreement; /* in this agreement of the shrink (0: the first) */
    uint64_t step_op;      /* die as step step_idx of collective step_op starts (0: never) */
    uint32_t step_idx;
    int create; /* die inside the world's creation, before the fence */
    int steps;  /* some rank of the job dies at a step: every rank runs schedules */
    int vote;   /* at the small-message path's first vote: die (0 ms) or progress vote_ms */
    uint32_t vote_ms;
    uint64_t close_op; /* atomic: close the endpoint to the next rank at this small operation */
    int mute;          /* send no heartbeats (goodbyes still go) */
} tc_rt_fault_t;

struct tc_rt_world {
    /* ---- the world (world.c, world_ep.c) ---- */
    int refs; /* communicators using it */
    tc_boot_t *boot;
    tc_rt_backend_t backends[TC_RT_BACKENDS_MAX]; /* in the registry's order */
    int nbackends;
    /* the backends' wait descriptors (tc_tp_wait_fd), for naps that end when a
     * socket has something (progress.c); fixed once the backends are open */
    struct pollfd wait_fds[TC_RT_BACKENDS_MAX];
    int nwait_fds;
    int ranks_per_node; /* agreed by the world communicator (comm_nodes.c); 0: flat only */
    int nfallbacks;     /* peers a better backend refused, reached over another (one warning) */
    double oversub; /* one-node job: ranks per online core when above 1, else 0 (comm_nodes.c) */
    tc_tp_ep_t **eps;   /* by world rank, NULL until first used */
    tc_rt_backend_t **ep_backend; /* the backend of each endpoint */
    uint8_t *locality;            /* by world rank: 0 unknown, 1 another node, 2 this node */
    /* by world rank: its endpoints closed so far (atomic). A new endpoint may get the address of
     * the one closed: users that keep an endpoint check this count, not the pointer */
    uint32_t *ep_gen;
    uint64_t ep_drops;            /* atomic: endpoints closed by tc_rt_world_ep_drop (seq_cst) */
    unsigned tp_passes; /* progress passes since the backends without endpoints were polled */
    /* the same on every rank of one job and different in the next (a MAC of the job secret, in
     * hex: 16 digits), so that tc-fr can tell dumps of two runs apart; "" without a secret */
    char run_id[24];
    /* the backends' idle trim (tc_rt_world_trim_idle), under the lock */
    int trimmed;         /* the backends were trimmed since the last start */
    uint64_t links;      /* works started so far (tc_rt_work_link counts them) */
    uint64_t trim_links; /* links when trim_ns was taken */
    uint64_t trim_ns;    /* since when none started (0: not looked yet) */
    uint64_t node_id;    /* this node's id (topo), published as TC_RT_NODE_KEY */
    tc_rt_world_hooks_t hooks;

    /* ---- progress (progress.c) ---- */
    uint64_t spin_ns;     /* how long a blocking call polls before sleeping */
    unsigned idle_passes; /* progress passes in a row that moved nothing */
    uint64_t now_ns;      /* the clock as read by the last idle pass that read it */
    unsigned poll_passes; /* passes since the bootstrap's events were last polled */
    int nasync;           /* running asynchronous operations (the thread's to drive) */
    /* Threads (docs/runtime.md, "Threads"): every entry point takes mu, always. A
     * holder that loops (a blocking wait, the progress thread) hands it over when
     * another thread waits for it: want counts the threads waiting for mu, and
     * handoffs the times one got it after waiting; contended is set once any did. */
    int threaded; /* the progress thread runs (started by the first asynchronous operation) */
    int stop;     /* atomic */
    /* atomic: threads inside a blocking wait that progress the world themselves
     * (tc_rt_progress_driving); the progress thread leaves the lock alone meanwhile */
    int drivers;
    unsigned want;     /* atomic */
    int contended;     /* atomic */
    uint64_t handoffs; /* atomic */
    /* atomic: threads out of the lock in the middle of a call, watching an shm
     * pair's lane (tc_rt_world_step_out); an endpoint is closed only while none
     * is out, since its segment holds the lanes */
    unsigned outside;
    uint64_t fd_wakes; /* atomic: naps ended early by a readable wait descriptor */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;

    /* ---- fault tolerance (failure.c, heartbeat.c, fault_inject.c) ---- */
    tc_rt_failed_t *failed; /* ranks known to have failed, in the order learnt */
    int nfailed, failed_cap;
    int accuser1;        /* 1 + the world rank whose verdict last named this rank failed; 0 */
    uint64_t hb_ns;      /* heartbeat period (0: off) */
    int hb_misses;       /* periods of silence before a peer is failed */
    int nhb;             /* watch neighbours, in hb */
    uint64_t hb_next;    /* next heartbeat duty */
    unsigned hb_passes;  /* progress passes, to look at the clock every 64 */
    struct tc_rt_hb *hb; /* the watch neighbours (tcomms/runtime/watch.h) */
    tc_rt_fault_t fault;

    /* ---- communicators and work (comm.c, work.c) ---- */
    tc_idset_t comm_ids;    /* communicator ids free here (comm_ids.c) */
    tc_idset_t comm_spoilt; /* ids whose messages may still arrive: never reused */
    uint64_t leftovers_until; /* until then, ticks free late messages of spoilt ids (ns) */
    uint32_t comm_id_high;    /* above every id splits and dups reserved here (comm_ids.c) */
    uint32_t comm_id_top;     /* the lowest id a shrink reserved here; MAX + 1 before any */
    uint64_t comm_rng;      /* jitter of the id agreement's later rounds */
    struct tc_rt_early_revoke *early_revokes; /* revokes before their communicator was here */
    int nearly_revokes, early_revokes_cap;
    tc_rt_work_t *active;  /* running works of every communicator */
    tc_rt_comm_t *comms;   /* every live communicator (to fail or revoke them) */
};

/* world.c */
/* The variables a device's context, the first log line or the first operation read (every
 * TC_IB_* whatever the hardware, TC_LOG and TC_LOG_FILE, the cost model's, the
 * TC_ALGO_<COLLECTIVE> names): TC_ERR_CONFIG naming the first malformed one. */
TC_MUST_USE tc_status_t tc_rt_world_config_check(void);
/* Join the job through @p boot and open the transports; not yet fenced. */
TC_MUST_USE tc_status_t tc_rt_world_create(tc_boot_kind_t boot, const tc_boot_kv_params_t *kv,
                                           const tc_hints_t *hints, uint64_t deadline,
                                           tc_rt_world_t **world_p);
/* Publish the last keys and wait for every rank to have published its own. */
TC_MUST_USE tc_status_t tc_rt_world_fence(tc_rt_world_t *world, uint64_t deadline);
/* Free the world (its last reference is gone; the progress thread stopped). */
void tc_rt_world_free(tc_rt_world_t *world);
TC_MUST_USE tc_status_t tc_rt_world_same_node(tc_rt_world_t *world, int peer, uint64_t deadline_ns,
                                              int *same_p);
/* World rank @p rank's pid and host, as it published them at start-up; TC_ERR_PROTOCOL when
 * the record is malformed. */
TC_MUST_USE tc_status_t tc_rt_world_proc(tc_rt_world_t *world, int rank, uint64_t deadline_ns,
                                         int *pid_p, char host[TC_RT_HOST_MAX]);

/* world_ep.c */
/* The endpoint to world rank @p peer (itself included), connected on first use. */
TC_MUST_USE tc_status_t tc_rt_world_ep(tc_rt_world_t *world, int peer, uint64_t deadline_ns,
                                       tc_tp_ep_t **ep_p);
/* The endpoint to @p peer if it is connected, else NULL. */
static inline tc_tp_ep_t *tc_rt_world_ep_get(const tc_rt_world_t *world, int peer)
{
    return peer >= 0 && peer < world->boot->size ? world->eps[peer] : NULL;
}
/* How many endpoints to @p peer were closed so far: a kept endpoint is still the world's while
 * this count is the one seen when it was got. */
static inline uint32_t tc_rt_world_ep_gen(const tc_rt_world_t *world, int peer)
{
    return __atomic_load_n(&world->ep_gen[peer], __ATOMIC_ACQUIRE);
}
/* Close the endpoint to @p peer (it cannot take a request back). */
void tc_rt_world_ep_drop(tc_rt_world_t *world, int peer);
/* A receive whose sender withdrew its message waits this long for the failure that likely made
 * the sender's operation fail before it fails itself (tc_rt_work_withdrawn_wait). */
#define TC_RT_WITHDRAWN_WAIT_MS 200

/* Why the transport ended a request to or from world rank @p wpeer (rank @p peer of the
 * communicator; @p recv: a receive of @p bytes) with the error @p st, in @p buf: the
 * endpoint's failure when it has one; a receive aborted although no one here cancelled it
 * is a message its sender withdrew (transport.h). Returns @p buf. */
const char *tc_rt_world_req_why(const tc_rt_world_t *world, int wpeer, int peer, int recv,
                                size_t bytes, tc_status_t st, char *buf, size_t cap);
/* Peers connected over the backend called @p name. */
int tc_rt_world_peers_over(const tc_rt_world_t *world, const char *name);
/* Open the backends and publish their addresses; close them (and every endpoint). */
/* Every key of a communicator's @p hints is read by something: algo by the communicator, the
 * others by a backend (tc_tp_ops_t.hint_keys); else TC_ERR_INVALID_ARG naming the key and the
 * known ones. A backend's key applies where the backends are opened (@p shared NULL:
 * tc_comm_create); a communicator made from another shares them, so there only the value of
 * @p shared (its parent's hints) is accepted (one set of options passed to both). */
TC_MUST_USE tc_status_t tc_rt_world_hints_check(const tc_hints_t *hints, const tc_hints_t *shared);
TC_MUST_USE tc_status_t tc_rt_world_open_backends(tc_rt_world_t *world, const tc_hints_t *hints);
void tc_rt_world_close_backends(tc_rt_world_t *world);
/* Progress the transports that have endpoints (and, now and then, the ones
 * that only listen); completions, or a negative status. */
int tc_rt_world_progress_tp(tc_rt_world_t *world);
/* Called now and then (the progress thread's tick) at @p now: once no work has
 * started for TC_RT_WORLD_TRIM_NS and none runs, every backend gives back what it
 * keeps for reuse (tc_tp_trim), once until the next work starts. */
#define TC_RT_WORLD_TRIM_NS 1000000000ull
void tc_rt_world_trim_idle(tc_rt_world_t *world, uint64_t now);
/* Sleep until a transport may have progress, at most @p max_ms; @p idle_ns is
 * how long the caller has gone without progress. */
void tc_rt_world_wait(tc_rt_world_t *world, int max_ms, uint64_t idle_ns);

#endif
