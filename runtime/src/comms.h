/* Internal, the communicators module: create, split, duplicate, destroy,
 * revoke, shrink; the schedule cache; the assembly of the world (which
 * modules' hooks it runs) and what a failure does to communicators. It calls
 * work, plans, progress, the world, fault tolerance, observability and the
 * bootstrap; nothing below calls it. */
#ifndef TC_RUNTIME_COMMS_H
#define TC_RUNTIME_COMMS_H

#include <sched.h>

#include "obs.h"
#include "plan.h"
#include "work.h"
#include "world.h"

struct tc_rt_comm {
    tc_rt_world_t *world;
    tc_rt_comm_t *wnext, *wprev; /* the world's list of communicators */
    int *ranks;         /* world rank of each rank, or NULL (the world's own order) */
    int device;         /* CUDA device the buffers live on, or -1 (the CPU) */
    int rank;
    int size;
    int ranks_per_node; /* for hierarchical algorithms; 0 when unknown */
    int win_pool;       /* TC_WIN_POOL: fire-and-forget records per window (win_pool.c) */
    uint32_t comm_id;   /* high bits of every tag: separates communicators */
    uint32_t shrinks;   /* shrinks of this communicator begun (their tags: shrink.c) */
    int check;          /* TC_CHECK: compare each collective's arguments first */
    tc_status_t broken; /* TC_OK, or why the communicator can no longer be used */
    int spoilt;         /* an operation ended in an error: its id is not reused (comm_ids.c) */
    /* splits and dups begun on it, the same count on every rank: a child's default name is
     * "<name>.<count>", so children of one parent differ and agree across ranks */
    unsigned children;
    int nstats, stats_cap;
    int stats_lost; /* a statistics entry could not be added: said once */
    int nhooks;     /* written with release (tc_rt_comm_add_hook): read without the world's lock */
    /* atomic: the records' lock (flight recorder and statistics: tc_rt_obs_lock), taken after
     * the world's when both are; the small path's blocking calls take only this one */
    int obs;
    /* atomic: 1 while a blocking call runs on the lanes without the world's lock (small.h); an
     * endpoint is closed only while no communicator's is set (tc_rt_world_ep_drop) */
    int outside;
    /* atomic: 1 while `unsettled` holds a blocking small-path operation that ended well but
     * whose records are not written yet (tc_rt_obs_settle) */
    int settle_due;
    uint32_t fr_cap;
    uint32_t fr_pos; /* fr_next % fr_cap, kept without a division (tc_rt_fr_claim) */
    int nspare;
    char name[64];
    char broken_why[512];
    int64_t timeout_ms;
    uint64_t seq;      /* collectives issued on this communicator */
    uint64_t p2p_ops;  /* point-to-point batches issued (for messages only) */
    tc_hmap_t p2p_seq; /* peer -> {sends, receives} issued, for p2p tags */
    /* receives from any source not yet matched, oldest first (p2p_any.c) */
    tc_rt_work_t *any_head, *any_tail;
    tc_hints_t hints;
    tc_rt_stat_t *stats; /* per collective and algorithm (stats.c) */
    struct {
        tc_rt_hook_fn fn;
        void *arg;
    } hooks[TC_RT_HOOKS];
    tc_rt_fr_entry_t *fr; /* flight recorder: the last fr_cap operations (NULL: off) */
    uint64_t fr_next;
    uint64_t fr_last_ns; /* the latest time its recorder holds (tc_rt_fr_time) */
    /* That operation: its recorder entry and id, its statistics entry (index, or -1) and bytes.
     * Written by the thread inside a call on this communicator before settle_due is set, and
     * settled under the records' lock by the next such operation's start (which takes that
     * lock anyway), a statistics read or a dump: so it takes the records' lock once, not twice
     * (small_issue.c). */
    struct {
        tc_rt_fr_entry_t *fr;
        uint64_t fr_id;
        uint64_t bytes;
        int stat;
    } unsettled;
    void *user; /* atomic: the mark of the thread inside a call that starts operations */
    tc_rt_work_t *p2p_work;   /* blocking send/recv batches without a work object, reused */
    tc_rt_work_t *p2p_one;    /* a blocking single send or recv without one (p2p_one.c) */
    tc_rt_work_t inline_work; /* blocking operations without a work object */
    tc_rt_work_t *works;      /* live heap works */
    tc_rt_work_t *spare;      /* released heap works kept for reuse (work.c), by cnext; nspare */
    uint64_t sched_uses;
    tc_rt_sched_entry_t sched_cache[TC_RT_SCHED_CACHE];
    struct tc_rt_small *small; /* the small-message path (small.h), made on first use */
    struct tc_rt_win *wins;    /* its windows (win.c) */
    uint64_t nwins;            /* windows created on it */
};

/* The entry of @p comm's next operation (its flight recorder on; obs.h), and its id in *id_p.
 * No division: the small-message path claims one per operation. */
static inline tc_rt_fr_entry_t *tc_rt_fr_claim(tc_rt_comm_t *comm, uint64_t *id_p)
{
    tc_rt_fr_entry_t *e = &comm->fr[comm->fr_pos];
    if (++comm->fr_pos == comm->fr_cap)
        comm->fr_pos = 0;
    *id_p = ++comm->fr_next;
    return e;
}

/* @p now_ns as the recorder of @p comm notes it: never before a time it already holds. The
 * small-message path reads the coarse clock, which lags the precise one of the general path by
 * up to a tick (4 ms here): an operation's entry would show it starting before the one it
 * followed had ended. */
static inline uint64_t tc_rt_fr_time(tc_rt_comm_t *comm, uint64_t now_ns)
{
    if (now_ns < comm->fr_last_ns)
        return comm->fr_last_ns;
    return comm->fr_last_ns = now_ns;
}

/* Take and give back @p comm's records (flight recorder, statistics): held for a few stores
 * (a dump copies entry by entry), so a thread that finds it taken spins, yielding now and then
 * in case the holder was descheduled. */
static inline void tc_rt_obs_lock(tc_rt_comm_t *comm)
{
    for (unsigned n = 1; __atomic_exchange_n(&comm->obs, 1, __ATOMIC_ACQUIRE); n++) {
        while (__atomic_load_n(&comm->obs, __ATOMIC_RELAXED))
            if (n++ % 64 == 0)
                sched_yield();
    }
}

static inline void tc_rt_obs_unlock(tc_rt_comm_t *comm)
{
    __atomic_store_n(&comm->obs, 0, __ATOMIC_RELEASE);
}

/* Write the records of the operation comm->unsettled holds, if one is due: its statistics
 * and its recorder entry, ended well (when the entry was not reused meanwhile), its end taken
 * as its start (it never read the clock). Records held; every settler holds them, and the
 * writer sets settle_due again only after its next start took them, so a load and a store
 * suffice. */
static inline void tc_rt_obs_settle(tc_rt_comm_t *comm)
{
    if (!__atomic_load_n(&comm->settle_due, __ATOMIC_ACQUIRE))
        return;
    __atomic_store_n(&comm->settle_due, 0, __ATOMIC_RELAXED);
    if (comm->unsettled.stat >= 0) {
        tc_rt_stat_t *stat = &comm->stats[comm->unsettled.stat];
        stat->ops++;
        stat->bytes += comm->unsettled.bytes;
    }
    tc_rt_fr_entry_t *e = comm->unsettled.fr;
    if (e && e->id == comm->unsettled.fr_id) {
        e->end_ns = e->start_ns;
        e->status = TC_OK;
        e->state = TC_RT_FR_DONE;
    }
}

/* comm_nodes.c: sets comm->ranks_per_node (and the world's) to the node geometry every rank of
 * the new world communicator agrees on: one flat all-reduce when the job spans nodes. */
TC_MUST_USE tc_status_t tc_rt_comm_agree_nodes(tc_rt_comm_t *comm);

/* The communicator's hint algo=<name> for @p coll: the name when @p coll has an algorithm of
 * that name, else NULL (the default selection). */
const char *tc_rt_comm_algo(const tc_rt_comm_t *comm, tc_coll_t coll);

/* The end of a collective's timeout on a communicator without TC_CHECK: the usual causes that
 * only TC_CHECK's exchange tells apart from a slow rank (PyTorch's desync report, in effect). */
#define TC_RT_TIMEOUT_HINT                                                                         \
    "; a live rank in another operation, or calling this one with another root, count or type, "   \
    "is awaited alike (TC_CHECK=1 names such a call)"

/* The world rank of rank @p peer of @p comm. */
static inline int tc_rt_world_rank(const tc_rt_comm_t *comm, int peer)
{
    return comm->ranks ? comm->ranks[peer] : peer;
}

/* comm.c */
/* The hints @p params gives a communicator made from @p parent (none: it inherits the parent's),
 * checked before any exchange, so that every rank refuses bad ones together: a name algo does
 * not know, a key nothing reads, a transport's key other than the parent's value
 * (tc_rt_world_hints_check). */
TC_MUST_USE tc_status_t tc_rt_comm_child_hints(const tc_rt_comm_t *parent,
                                               const tc_rt_comm_params_t *params);
/* Register a new communicator with its world (lock held); breaks it at once
 * if a member is known to have failed. */
void tc_rt_comm_adopt(tc_rt_comm_t *comm);
/* A new communicator of world ranks @p wranks (this process is @p rank among
 * them) with id @p id (reserved here: given back on failure), inheriting from
 * @p parent what @p params leaves out. */
TC_MUST_USE tc_status_t tc_rt_comm_make(tc_rt_comm_t *parent, const tc_rt_comm_params_t *params,
                                        const char *default_name, const int *wranks, int n,
                                        int rank, int64_t id, tc_rt_comm_t **child_p);

/* shrink.c: TC_SHRINK_DENSE_MAX into *dense_max_p, or TC_ERR_CONFIG (tc_rt_config_check). */
TC_MUST_USE tc_status_t tc_rt_shrink_config(int64_t *dense_max_p);

/* comm_ids.c: communicator ids (lock not held unless said) */
TC_MUST_USE tc_status_t tc_rt_ids_init(tc_rt_world_t *world);
void tc_rt_ids_free(tc_rt_world_t *world);
/* This rank's lowest free id, reserved for a creation; or a value above TC_RT_COMM_ID_MAX. */
int64_t tc_rt_ids_propose(tc_rt_world_t *world);
/* Give back an id reserved and not used (anything else is ignored). */
void tc_rt_ids_release(tc_rt_world_t *world, int64_t id);
/* After the proposals' exchange over @p parent (collective over it): the id every member of
 * the new communicator holds, in @p *id_p (-1 off members). @p member: this rank is one;
 * @p held: its proposal; @p cand: the largest proposal among its communicator's members;
 * @p uniform: every member of every new communicator proposed the same (no exchange). */
TC_MUST_USE tc_status_t tc_rt_ids_settle(tc_rt_comm_t *parent, int member, int64_t held,
                                         int64_t cand, int uniform, int64_t *id_p);
/* Lock held: a shrink's id, named by its depth below the top (what its agreements keep
 * the largest of): this rank's first proposal, reserved; after an agreement on @p depth, the id
 * held instead of @p held (@p depth when free here, else one below this rank's shrink ids);
 * the held id given back; the id of a depth every member holds (TC_ERR_NO_RESOURCE when none);
 * a destroyed communicator's id given back or spoilt,
 * whether lane messages of @p id are stale, a revoke for an id no communicator has. */
uint32_t tc_rt_ids_shrink_hold(tc_rt_world_t *world);
uint32_t tc_rt_ids_shrink_move(tc_rt_world_t *world, uint32_t held, uint32_t depth);
void tc_rt_ids_shrink_drop(tc_rt_world_t *world, uint32_t held);
TC_MUST_USE tc_status_t tc_rt_ids_shrink_id(uint32_t held, uint32_t *id_p);
void tc_rt_ids_retire(tc_rt_comm_t *comm);
int tc_rt_ids_spoilt(const tc_rt_world_t *world, uint32_t id);
/* A look (lock held): for a while after an id was spoilt, free what arrived for spoilt ids
 * since (a message on its way when its communicator was destroyed); then clear the while. */
void tc_rt_ids_tick(tc_rt_world_t *world, uint64_t now);
/* A revoke by world rank @p by of id @p id, which no communicator here has: the id of one
 * destroyed here is spoilt; one reserved or never used may be a communicator still to be made
 * here (a slower member's), so the revoke is kept for it. */
void tc_rt_ids_revoked(tc_rt_world_t *world, uint32_t id, int by);
/* A new communicator (lock held): the world rank of a member whose revoke of its id came
 * before it (the record dropped), or -1. */
int tc_rt_ids_revoked_early(tc_rt_comm_t *comm);

/* comm_world.c: the world as communicators see it */
/* Create, hook up and fence the world of a first communicator. */
/* With @p kv the caller's store is the bootstrap and @p boot is ignored. */
TC_MUST_USE tc_status_t tc_rt_comm_world_create(tc_boot_kind_t boot, const tc_boot_kv_params_t *kv,
                                                const tc_hints_t *hints, uint64_t deadline,
                                                tc_rt_world_t **world_p);
/* Drop one reference (lock held, released); the last frees. */
void tc_rt_world_release(tc_rt_world_t *world);
/* The rank of world rank @p wrank in @p comm, or -1. */
int tc_rt_comm_rank_of(const tc_rt_comm_t *comm, int wrank);
void tc_rt_world_add_comm(tc_rt_world_t *world, tc_rt_comm_t *comm);
void tc_rt_world_remove_comm(tc_rt_world_t *world, tc_rt_comm_t *comm);
/* Break every communicator holding @p f's rank and cancel its running works. */
void tc_rt_world_fail_comms(tc_rt_world_t *world, const tc_rt_failed_t *f);
/* "rank 3 (world rank 5, host h, pid 42)": @p f named in @p comm */
void tc_rt_comm_failed_describe(const tc_rt_comm_t *comm, const tc_rt_failed_t *f, char *buf,
                                size_t cap);
/* Local revoke: leave every pending operation with TC_ERR_REVOKED. */
void tc_rt_comm_revoke_local(tc_rt_comm_t *comm, const char *why);

#endif
