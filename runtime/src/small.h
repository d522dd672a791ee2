/* The small-message path (docs/runtime.md): blocking collectives of at most
 * TC_SMALL_MAX bytes per message among ranks that all reach each other over
 * shm run through the lanes of the pair segments (tcomms/transport/
 * shm_lane.h) instead of a schedule: no work object, no schedule lookup, no
 * tag matching, no system call and no clock read while data arrives. Two
 * halves: small.c and small_lanes.c, of the plans + executor module (the
 * collectives on the lanes; the path's state, the lanes and their
 * housekeeping; they call the world, the kernels and shm), and small_issue.c,
 * small_setup.c and small_work.c, of the work module (the entry from
 * tc_rt_coll_issue, the waiting policy with progress and failure checks,
 * statistics, flight recorder and hooks; the set-up; the works). Private to
 * those files. */
#ifndef TC_RUNTIME_SMALL_H
#define TC_RUNTIME_SMALL_H

#include "comms.h"
#include "tcomms/transport/shm_lane.h"

/* Largest communicator served: every rank keeps a lane to every other. */
#define TC_RT_SMALL_RANKS 64

/* UNKNOWN until the first call the path would take begins the set-up (SETUP), which ends ON or
 * OFF for good. */
enum { TC_RT_SMALL_UNKNOWN = 0, TC_RT_SMALL_SETUP, TC_RT_SMALL_ON, TC_RT_SMALL_OFF };

/* One rank's vote on the path (small_setup.c), as it travels: every field is checked by the
 * tally. Phase 1: ok = every peer over shm, need = bytes its lanes not yet reserved take, free =
 * bytes free in /dev/shm as it saw them; phase 2: ok = its lanes are reserved. */
typedef struct tc_rt_small_vote {
    uint64_t free;
    uint64_t need;
    uint8_t ok;
    uint8_t pad[7];
} tc_rt_small_vote_t;
_Static_assert(sizeof(tc_rt_small_vote_t) == 24, "a vote travels as 24 bytes");

/* Per communicator (comm->small), made on its first collective. */
typedef struct tc_rt_small {
    int state; /* TC_RT_SMALL_*; stored with release: the lock-free entry reads it */
    /* the world's ep_drops when this communicator's lanes were last seen to be all open (a
     * check under the world's lock; UINT64_MAX after the set-up: not yet looked): the lock-free
     * entry runs only while equal */
    uint64_t ep_drops;
    size_t max; /* largest message taken (TC_SMALL_MAX bytes) */
    struct {
        tc_tp_shm_lane_t *lane;        /* the lanes to this rank (NULL: this process) */
        tc_tp_ep_t *ep;                /* their endpoint */
        uint32_t ep_gen;               /* tc_rt_world_ep_gen when it was got */
        uint64_t full_sum, full_ns; /* its big slots full: since when, and its tc_shm_lane_watch */
    } * peer;                       /* [size] */
    int stat[TC_COLL_COUNT];           /* this path's entry of comm->stats + 1, or 0 */
    /* Operations that are works post in issue order: each takes a ticket at its issue
     * (tickets, the calling thread's) and posts only once `turn` (atomic: advanced by whichever
     * thread progresses the one posting) reaches it; a blocking call without a work runs only
     * while none is posting (turn == tickets), else as a work. Out of order, later operations
     * filled a peer's slots while an earlier one waited for one, and every rank waited for
     * another's earlier message (small_work.c). */
    uint64_t tickets, turn;
    int forced[TC_COLL_COUNT];         /* TC_ALGO_<COLL> set: that collective never comes here */
    /* the set-up (small_setup.c) */
    int phase;
    uint64_t vote_seq; /* the operation that began it: every rank votes there */
    uint64_t deadline, pause_until;
    int64_t grace_ms;        /* added to the votes' timeouts (begun asynchronously) */
    tc_rt_small_vote_t mine; /* this rank's record in the vote running */
    tc_rt_small_vote_t votes[TC_RT_SMALL_RANKS];
    tc_rt_work_t *vote; /* that vote, or NULL */
} tc_rt_small_t;

typedef struct tc_rt_small_op tc_rt_small_op_t;

/* What a wait is for. */
enum {
    TC_RT_SMALL_TX = 0, /* a free slot towards rank q */
    TC_RT_SMALL_RX      /* this operation's message from rank q */
};

/* Wait as @p what says (TC_RT_SMALL_*): TC_OK with the slot in *slot_p and its lane taken
 * (tc_shm_lane_trylock: threads of other communicators share the lane), TC_INPROGRESS when the
 * operation goes on at a later call (an asynchronous one: small_work.c), or why it cannot go on.
 * Called without the lane. The issuing module's policy (small_issue.c). */
typedef tc_status_t (*tc_rt_small_wait_fn)(tc_rt_small_op_t *op, int q, int what, void **slot_p);

/* How far past a rank whose lane is not ready an asynchronous operation goes on */
#define TC_RT_SMALL_AHEAD 63

/* One operation on the path. */
struct tc_rt_small_op {
    tc_rt_comm_t *comm;
    tc_rt_small_t *s;
    const tc_rt_coll_t *call;
    size_t bytes;      /* bytes of each lane message */
    size_t tx_len;     /* bytes of the message a slot is waited for (TC_RT_SMALL_TX) */
    uint64_t seq, tag; /* the communicator's sequence number, and it with the comm id */
    uint64_t fr_id;    /* its flight-recorder entry's id, or 0 */
    struct tc_rt_fr_entry *fr; /* that entry, or NULL */
    uint64_t deadline; /* 0 until a wait first reads the clock */
    int awaited;       /* the rank waited for when it ended in error, or -1 */
    uint64_t start_ns; /* when it began: only with hooks, which are given its time */
    tc_rt_small_wait_fn wait;
    int free; /* a blocking call run without the world's lock (tc_rt_small_fast) */
    /* where tc_rt_small_run goes on: the first rank not posted to, not taken from; and of the
     * TC_RT_SMALL_AHEAD ranks after each, which are (bit i: rank posted + 1 + i). A fold takes
     * in rank order: ahead_taken marks instead the ranks whose messages it took ahead into
     * stash (bit and block q % 64; allocated when first needed, freed at the work's end). */
    int posted, taken;
    uint64_t ahead_posted, ahead_taken;
    unsigned char *stash;
    int ready;                 /* the own part is done (before the first take) */
    const unsigned char *mine; /* a fold's own contribution */
    unsigned char *dst;        /* where a fold's result goes */
    unsigned char *keep;       /* TC_SHM_LANE_PAYLOAD bytes: mine, in place, kept aside */
};

/* How far the operation got: ranks posted to and taken from (a pass's progress). */
static inline int tc_rt_small_progress(const tc_rt_small_op_t *op)
{
    return op->posted + op->taken + __builtin_popcountll(op->ahead_posted) +
           __builtin_popcountll(op->ahead_taken);
}

/* small.c and small_lanes.c (plans + executor): the collectives on the lanes, the lanes */
/* Frees what an asynchronous operation took ahead of its fold's order (at its work's end). */
void tc_rt_small_op_free(tc_rt_small_op_t *op);
/* An operation that ended with @p st, a timeout, an abort or a mismatch, withdraws its messages
 * no peer consumed yet: a peer that comes to them later fails too (TC_ERR_ABORTED naming this
 * rank) instead of completing with them. Not after a peer's failure or a revoke, which the
 * others learn as such, nor when an endpoint was dropped since the lanes were last known open
 * (its lane may be unmapped). */
void tc_rt_small_withdraw(tc_rt_small_op_t *op, tc_status_t st);
/* TC_SMALL_MAX (bytes of a lane message the path takes) into *max_p, or TC_ERR_CONFIG:
 * checked when a communicator is made (tc_rt_config_check), read at its first collective. */
TC_MUST_USE tc_status_t tc_rt_small_config(int64_t *max_p);
/* Makes the path's state of @p comm (TC_SMALL_MAX, TC_ALGO_<COLL>): tc_rt_small_get's first use. */
TC_MUST_USE tc_status_t tc_rt_small_make(tc_rt_comm_t *comm, tc_rt_small_t **s_p);
void tc_rt_small_free(tc_rt_comm_t *comm);

/* The path's state of @p comm, made on first use. Inline, as tc_rt_small_bytes: every blocking
 * collective asks both. */
static inline tc_status_t tc_rt_small_get(tc_rt_comm_t *comm, tc_rt_small_t **s_p)
{
    if (comm->small) {
        *s_p = comm->small;
        return TC_OK;
    }
    return tc_rt_small_make(comm, s_p);
}

/* The bytes of each lane message of @p call (count elements of its dtype; 1 for a barrier, whose
 * messages are empty), or 0 when the path does not take it. */
static inline size_t tc_rt_small_bytes(const tc_rt_small_t *s, const tc_rt_coll_t *call)
{
    if (call->counts || call->sendcounts || s->forced[call->coll] ||
        (call->hints && tc_hints_get(call->hints, "algo")))
        return 0;
    size_t b;
    switch (call->coll) {
    case TC_COLL_BARRIER:
        return 1;
    case TC_COLL_ALL_REDUCE:
    case TC_COLL_REDUCE:
    case TC_COLL_BROADCAST:
    case TC_COLL_ALL_GATHER:
    case TC_COLL_REDUCE_SCATTER:
    case TC_COLL_ALL_TO_ALL:
    case TC_COLL_GATHER:
    case TC_COLL_SCATTER:
        b = call->count * tc_dtype_size(call->dtype);
        return b > 0 && b <= s->max ? b : 0;
    default:
        return 0;
    }
}
/* Connect every peer, whatever its backend, and fill this rank's first vote: ok = 0 when a peer
 * is over another backend; else *missing_p = a rank whose shm connection is not up yet, or -1
 * when all are (need and free then counted). Reserves nothing. Bounded by @p deadline. On an
 * error, *missing_p is the rank it concerns. */
TC_MUST_USE tc_status_t tc_rt_small_connect(tc_rt_comm_t *comm, tc_rt_small_t *s, uint64_t deadline,
                                            int *missing_p, tc_rt_small_vote_t *vote);
/* Take (reserve) the lanes of every peer; TC_ERR_NO_RESOURCE when /dev/shm is full. */
TC_MUST_USE tc_status_t tc_rt_small_lanes(tc_rt_comm_t *comm, tc_rt_small_t *s);
/* The outcome of every rank's vote (bytes from the other ranks): *go_p = 1 when every rank said
 * ok and the lanes not yet reserved (half the needs' sum: both ranks of a pair count its lanes)
 * fit the least free space a rank saw; TC_ERR_PROTOCOL for an ok that is neither 0 nor 1. */
TC_MUST_USE tc_status_t tc_rt_small_tally(const tc_rt_small_vote_t *votes, int n, int *go_p,
                                          uint64_t *need_p, uint64_t *free_p);
/* Run the operation's collective on the lanes (op->wait waits when a lane is not ready): TC_OK
 * once done, TC_INPROGRESS when op->wait said so or @p may_post is 0 (not its turn to post:
 * it only takes what it may meanwhile; call again: it goes on where it stopped), or the
 * error. */
TC_MUST_USE tc_status_t tc_rt_small_run(tc_rt_small_op_t *op, int may_post);
/* The same for a blocking operation, whose waits end only with the slot or the message: it
 * posts to every rank in order, then takes in order (what tc_rt_small_run's window and early
 * takes come to then, in fewer instructions). */
TC_MUST_USE tc_status_t tc_rt_small_run_blocking(tc_rt_small_op_t *op);
/* Release the messages of rank @p q that no operation will read: they belong to another
 * communicator that is broken here, or that this process destroyed broken (an operation that
 * failed leaves such messages behind), and would hold slots the peer needs. For a wait that
 * found nothing for a while; the world's lock held (it reads the communicators), not the lane
 * (skipped while another thread has it). */
void tc_rt_small_drop_stale(tc_rt_small_op_t *op, int q);
/* For a wait that found nothing for a while (small_lanes.c): of every communicator of the world
 * on the path, the lanes whose big slots have held the same messages for a millisecond are
 * emptied: what no operation will read dropped, the rest moved out of the slots
 * (tc_shm_lane_spill, up to 1 MiB and 256 messages per lane). They may hold messages of operations
 * this rank has not issued yet while their writer waits for a slot to post what this rank waits for
 * (from 2 ranks: rank 0's asynchronous operations on one communicator, then a blocking one on
 * another, which rank 1 calls first). Not the lanes another thread has now. The world's lock held.
 */
void tc_rt_small_unblock(tc_rt_world_t *world);

/* small_issue.c (work): the entry from tc_rt_coll_issue, waiting, bookkeeping */
/* Run @p call on the path when it applies (any call but a persistent one; @p flags and
 * @p work_p as tc_rt_coll_issue): *taken_p = 1 and the operation's result (a work in *work_p
 * when asked); else *taken_p = 0 and nothing happened. Lock held. */
TC_MUST_USE tc_status_t tc_rt_small_try(tc_rt_comm_t *comm, const tc_rt_coll_t *call, int flags,
                                        tc_rt_work_t **work_p, int *taken_p);

/* Whether every lane of @p comm is still in an open endpoint (an endpoint closes when a request
 * on it could not be taken back, tc_rt_world_ep_drop, and unmaps its lanes): TC_OK, or
 * TC_ERR_INVALID_STATE naming the closed one. One load while none closed since the last look;
 * the world's lock held. */
TC_MUST_USE tc_status_t tc_rt_small_lanes_open(tc_rt_comm_t *comm, tc_rt_small_t *s);
/* The same look without an error (small_lanes.c): the first rank whose endpoint closed, or -1
 * (s->ep_drops then brought up to date). The world's lock held. */
int tc_rt_small_lane_closed(tc_rt_comm_t *comm, tc_rt_small_t *s);

/* A blocking call without a work object, before the world's lock is taken: once the path is on,
 * and no hook is set, runs @p call on the lanes without that lock (*taken_p = 1 and its result),
 * taking only the lanes and the communicator's records in turn; the lock is taken only when a
 * wait goes on for long (progress, failures, the deadline) and to report an error. Else
 * *taken_p = 0: tc_rt_small_try under the lock decides. */
TC_MUST_USE tc_status_t tc_rt_small_fast(tc_rt_comm_t *comm, const tc_rt_coll_t *call,
                                         int *taken_p);

/* Rank @p q of @p comm failed (@p why, not tc_last_error()'s buffer): reported as the general
 * path would, with its record and the world's failed hook, which breaks this communicator and
 * the others with q. */
TC_MUST_USE tc_status_t tc_rt_small_peer_failed(tc_rt_comm_t *comm, int q, tc_status_t st,
                                                const char *why);

/* small_setup.c (work): connecting the peers, the two votes, the lanes */
/* Begin the set-up of @p comm's path at operation @p seq (the first call the path would take,
 * the same on every rank), bounded by @p deadline (@p async: by the work of that call): s->state
 * is SETUP until it ends. */
void tc_rt_small_setup_begin(tc_rt_comm_t *comm, tc_rt_small_t *s, uint64_t seq, uint64_t deadline,
                             int async);
/* Advance the set-up as far as it goes without waiting: TC_OK (s->state says whether it ended),
 * or why it failed (s->state is OFF then, and the caller breaks the communicator: the ranks are
 * out of step). Lock held. */
TC_MUST_USE tc_status_t tc_rt_small_setup_step(tc_rt_comm_t *comm, tc_rt_small_t *s);
/* Advance it, progressing the world, until it ends (bounded by its deadline). Lock held. */
TC_MUST_USE tc_status_t tc_rt_small_setup_wait(tc_rt_comm_t *comm, tc_rt_small_t *s);
/* Let go of a vote left by a set-up that did not end (the communicator's end). */
void tc_rt_small_setup_free(tc_rt_small_t *s);

/* small_work.c (work): @p call (@p bytes per lane message) on the path as a work of its own,
 * put in *work_p: asynchronous (TC_RT_ASYNC in @p flags), or blocking for a caller that wants a
 * work object. Lock held. */
TC_MUST_USE tc_status_t tc_rt_small_work(tc_rt_comm_t *comm, tc_rt_small_t *s,
                                         const tc_rt_coll_t *call, size_t bytes, int flags,
                                         tc_rt_work_t **work_p);
/* The end of a spare work's lane state (tc_rt_work_free_spare). */
void tc_rt_small_work_free(tc_rt_work_t *work);

/* This operation's message from rank @p q once it is there, its lane taken (release the
 * message, then tc_shm_lane_unlock); on an error NULL and *st_p set. */
static inline const tc_shm_lane_slot_t *tc_rt_small_rx(tc_rt_small_op_t *op, int q,
                                                       tc_status_t *st_p)
{
    tc_tp_shm_lane_t *lane = op->s->peer[q].lane;
    if (tc_shm_lane_trylock(lane)) {
        const tc_shm_lane_slot_t *slot = tc_shm_lane_find(lane, op->tag);
        if (slot)
            return slot;
        tc_shm_lane_unlock(lane);
    }
    void *waited = NULL;
    *st_p = op->wait(op, q, TC_RT_SMALL_RX, &waited);
    if (*st_p == TC_OK && !waited)
        *st_p = tc_error_set(TC_ERR_INTERNAL, "small-message path: a wait ended without a slot");
    return *st_p == TC_OK ? (const tc_shm_lane_slot_t *)waited : NULL;
}

/* The next free slot towards rank @p q for @p len bytes, its lane taken (post, then
 * tc_shm_lane_unlock); on an error NULL and *st_p set. */
static inline tc_shm_lane_slot_t *tc_rt_small_tx(tc_rt_small_op_t *op, int q, size_t len,
                                                 tc_status_t *st_p)
{
    tc_tp_shm_lane_t *lane = op->s->peer[q].lane;
    if (tc_shm_lane_trylock(lane)) {
        tc_shm_lane_slot_t *slot = tc_shm_lane_tx_slot(lane, len);
        if (slot)
            return slot;
        tc_shm_lane_unlock(lane);
    }
    void *waited = NULL;
    op->tx_len = len;
    *st_p = op->wait(op, q, TC_RT_SMALL_TX, &waited);
    if (*st_p == TC_OK && !waited)
        *st_p = tc_error_set(TC_ERR_INTERNAL, "small-message path: a wait ended without a slot");
    return *st_p == TC_OK ? (tc_shm_lane_slot_t *)waited : NULL;
}

#endif
