/* The small-message path's half in the work module (small.h): the entry
 * from tc_rt_coll_issue, the connection of the lanes, waiting, and the
 * promises of the general path it keeps: timeouts, failure detection,
 * revoke and abort, the flight recorder, statistics and hooks.
 *
 * The waiting policy: look at the lane SMALL_SPINS times (SMALL_SPINS_SHARED when
 * ranks outnumber cores) without reading the clock; then keep looking,
 * reading the clock every SMALL_CLOCK_EVERY looks, for the world's spin time
 * (TC_SPIN_US: 50 us, or 0 when ranks outnumber cores), yielding every SMALL_SPIN_YIELD_NS in case
 * the peer shares this core because the node is loaded, and out of the world's lock while another
 * thread waits for it (checked at every look at the lane, so it steps out at once); then, after
 * each further look, progress the world (failures, revocations, heartbeats, other operations),
 * check the peer's endpoint and the deadline, and yield the core for SMALL_YIELD_NS, napping
 * after that.
 * So an operation whose peers are on time makes no system call and reads no
 * clock, and an oversubscribed node is not starved. The timeout counts from
 * the first clock read, a few microseconds after the wait began. */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ft.h"
#include "obs.h"
#include "progress.h"
#include "small.h"
#include "work.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"

#define SMALL_SPINS 64 /* about 2 us of pause instructions */
/* When the world does not spin (ranks outnumber cores, or TC_SPIN_US=0) the peer waited for may
 * share this core: it cannot answer before this rank yields, so spinning long only delays it (4
 * ranks on 2 cores, 8 B all-reduce: 3.3 us with 64 spins, 2.1 with 8;
 * bench/results/2026-12-03-bind.txt). */
#define SMALL_SPINS_SHARED 8
#define SMALL_CLOCK_EVERY 64
#define SMALL_SPIN_YIELD_NS 4000ull /* ranks sharing a core: each wait costs about this */
#define SMALL_YIELD_NS 5000000ull
#define SMALL_NAP_NS 50000L
#define SMALL_ALGO "shm_lanes" /* the name stats, hooks and the flight recorder show */

static inline void small_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    __asm__ __volatile__("" ::: "memory");
#endif
}

/* The slot waited for, or NULL: the peer's next message (rx) or our next free slot. A look
 * while spinning (!@p all) reads only the two slots a stream's next message takes; each pass of
 * the slow loop looks at every slot (a message among other communicators' ones). */
static inline void *small_look(tc_rt_small_op_t *op, int q, int rx, int all)
{
    tc_tp_shm_lane_t *lane = op->s->peer[q].lane;
    if (!rx)
        return tc_shm_lane_tx_slot(lane, op->tx_len);
    /* the caller only reads a received slot: const is dropped for one return type */
    return (void *)(uintptr_t)(all ? tc_shm_lane_find(lane, op->tag)
                                   : tc_shm_lane_find_next(lane, op->tag));
}

/* A coarse time for the flight recorder: no system call, a few ms resolution. */
static uint64_t small_coarse_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char *small_what(const tc_rt_small_op_t *op, char *buf, size_t cap)
{
    tc_rt_op_t o = {op->call->coll, op->seq, op->comm->name, NULL};
    return tc_rt_op_what(&o, buf, cap);
}

/* Rank @p q of @p comm failed (@p why, not tc_last_error()'s buffer): reported as the general
 * path would, with its record and the world's failed hook, which breaks this communicator and
 * the others with q. */
static tc_status_t small_peer_failed(tc_rt_comm_t *comm, int q, tc_status_t st, const char *why)
{
    tc_rt_world_t *world = comm->world;
    const tc_rt_failed_t *f = tc_rt_world_note_failure(world, tc_rt_world_rank(comm, q), why, 1);
    if (f)
        world->hooks.failed(world, f);
    if (comm->broken != TC_OK)
        return tc_error_set(comm->broken, "%s", comm->broken_why);
    return tc_error_set(st, "rank %d: %s", q, why); /* no memory for the record: still end */
}

/* The slow part of a wait for rank @p q: progress, its endpoint, the communicator. */
static tc_status_t small_check(tc_rt_small_op_t *op, int q)
{
    tc_rt_comm_t *comm = op->comm;
    (void)tc_rt_world_progress(comm->world);
    tc_tp_ep_t *ep = op->s->peer[q].ep;
    if (ep->failed != TC_OK && comm->broken == TC_OK)
        return small_peer_failed(comm, q, ep->failed, ep->error);
    if (comm->broken != TC_OK)
        return tc_error_set(comm->broken, "%s", comm->broken_why);
    return TC_OK;
}

static uint64_t small_deadline(tc_rt_small_op_t *op, uint64_t now)
{
    if (!op->deadline) {
        int64_t ms = op->call->timeout_ms > 0 ? op->call->timeout_ms : op->comm->timeout_ms;
        op->deadline = tc_deadline_add_ms(now, (uint64_t)ms);
    }
    return op->deadline;
}

static tc_status_t small_timeout(tc_rt_small_op_t *op, int q, const char *what)
{
    int64_t ms = op->call->timeout_ms > 0 ? op->call->timeout_ms : op->comm->timeout_ms;
    op->awaited = q;
    return tc_error_set(TC_ERR_TIMEOUT,
                        "timed out after %lld ms on the small-message path, waiting for rank %d "
                        "(world rank %d) %s",
                        (long long)ms, q, tc_rt_world_rank(op->comm, q), what);
}

static tc_status_t small_wait(tc_rt_small_op_t *op, int q, int what, void **slot_p)
{
    int rx = what == TC_RT_SMALL_RX;
    tc_rt_world_t *world = op->comm->world;
    int spins = world->spin_ns ? SMALL_SPINS : SMALL_SPINS_SHARED;
    for (int i = 0; i < spins; i++) {
        small_relax();
        if ((*slot_p = small_look(op, q, rx, 0)))
            return TC_OK;
        if (__atomic_load_n(&world->want, __ATOMIC_RELAXED) > 0)
            break; /* another thread waits for the lock: step out below at once */
    }
    if ((*slot_p = small_look(op, q, rx, 1)))
        return TC_OK;
    uint64_t start = tc_time_ns(), now = start;
    small_deadline(op, start);
    uint64_t yielded = start;
    /* Out of the world's lock while another thread wants it: the lane is
     * shared by every communicator of the pair and its counters are the
     * lock's, so out of it only the segment is watched, and what changed is
     * looked at under the lock. The value watched is read before the last
     * look, so nothing that arrives after that look goes unseen. */
    tc_tp_shm_lane_t *lane = op->s->peer[q].lane;
    int out = 0;
    uint64_t seen = 0;
    while (now - start < world->spin_ns) {
        if (!out && __atomic_load_n(&world->want, __ATOMIC_RELAXED) > 0) {
            seen = tc_shm_lane_watch(lane, rx);
            if ((*slot_p = small_look(op, q, rx, 1)))
                return TC_OK;
            tc_rt_world_step_out(world);
            out = 1;
        }
        for (int i = 0; i < SMALL_CLOCK_EVERY; i++) {
            small_relax();
            if (!out && __atomic_load_n(&world->want, __ATOMIC_RELAXED) > 0)
                break; /* step out at the top of the loop */
            if (out) {
                if (tc_shm_lane_watch(lane, rx) == seen)
                    continue;
                tc_rt_world_step_in(world);
                out = 0;
            }
            if ((*slot_p = small_look(op, q, rx, 0)))
                return TC_OK;
        }
        if (!out && (*slot_p = small_look(op, q, rx, 1)))
            return TC_OK;
        now = tc_time_ns();
        if (now - yielded >= SMALL_SPIN_YIELD_NS) {
            sched_yield(); /* a peer that shares this core (a loaded node) gets to run */
            yielded = now;
        }
    }
    if (out)
        tc_rt_world_step_in(world);
    for (;;) {
        if ((*slot_p = small_look(op, q, rx, 1)))
            return TC_OK;
        tc_status_t st = small_check(op, q);
        if (st == TC_OK && (*slot_p = small_look(op, q, rx, 1)))
            return TC_OK;
        now = tc_time_ns();
        if (st == TC_OK && now >= op->deadline)
            st = small_timeout(op, q, rx ? "to send its part" : "to read an earlier message");
        if (st != TC_OK) {
            op->awaited = q;
            return st;
        }
        tc_rt_world_handoff(world); /* another thread's operation may be what q waits for */
        tc_rt_world_nap(world, now - start < SMALL_YIELD_NS ? 0 : SMALL_NAP_NS);
        /* a peer that just got the core answers within a few looks: no need to go round again */
        for (int i = 0; i < SMALL_CLOCK_EVERY; i++) {
            small_relax();
            if ((*slot_p = small_look(op, q, rx, 0)))
                return TC_OK;
        }
    }
}

static void small_hooks(tc_rt_small_op_t *op, int after, tc_status_t st)
{
    tc_rt_comm_t *comm = op->comm;
    const tc_rt_coll_t *c = op->call;
    tc_rt_op_info_t info = {.coll = c->coll,
                            .seq = op->seq,
                            .count = c->count,
                            .dtype = c->dtype,
                            .root = c->root,
                            .algo = SMALL_ALGO,
                            .status = after ? st : TC_INPROGRESS,
                            .time_ns = after ? tc_time_ns() - op->start_ns : 0};
    for (int i = 0; i < comm->nhooks; i++)
        comm->hooks[i].fn(&info, after, comm->hooks[i].arg);
}

static void small_begin(tc_rt_small_op_t *op)
{
    tc_rt_comm_t *comm = op->comm;
    const tc_rt_coll_t *c = op->call;
    if (comm->fr) {
        tc_rt_fr_entry_t *e = op->fr = tc_rt_fr_claim(comm, &op->fr_id);
        e->id = op->fr_id;
        e->seq = op->seq;
        e->coll = c->coll;
        e->dtype = c->dtype;
        e->op = c->op;
        e->root = c->root;
        e->count = c->count;
        e->algo = SMALL_ALGO;
        e->state = TC_RT_FR_RUNNING;
        e->status = TC_INPROGRESS;
        e->start_ns = tc_rt_fr_time(comm, small_coarse_ns());
        e->end_ns = 0;
        e->awaited[0] = '\0';
    }
    if (comm->nhooks) {
        op->start_ns = tc_time_ns();
        small_hooks(op, 0, TC_INPROGRESS);
    }
}

/* This path's statistics entry for the operation's collective (found once). */
static tc_rt_stat_t *small_stat(tc_rt_small_op_t *op)
{
    tc_rt_comm_t *comm = op->comm;
    int *known = &op->s->stat[op->call->coll];
    if (*known == 0)
        *known = tc_rt_stats_index(comm, (int)op->call->coll, SMALL_ALGO) + 1;
    return *known > 0 ? &comm->stats[*known - 1] : NULL;
}

static tc_status_t small_end(tc_rt_small_op_t *op, tc_status_t st)
{
    tc_rt_comm_t *comm = op->comm;
    tc_rt_stat_t *stat = small_stat(op);
    if (stat) {
        stat->ops++;
        stat->failed += st != TC_OK;
        stat->bytes += op->call->coll == TC_COLL_BARRIER ? 0 : op->bytes; /* count x dtype */
    }
    tc_rt_fr_entry_t *e = op->fr;
    if (e && e->id == op->fr_id) {
        /* An operation whose waits never read the clock (no deadline) waited at most a few
         * spins per peer, far less than the coarse clock's tick: its end is taken as its start
         * (a thread preempted meanwhile shows less than it took), one clock read fewer. */
        e->end_ns = op->deadline ? tc_rt_fr_time(comm, small_coarse_ns()) : e->start_ns;
        e->status = st;
        e->state = st == TC_OK            ? TC_RT_FR_DONE
                   : st == TC_ERR_TIMEOUT ? TC_RT_FR_TIMED_OUT
                                          : TC_RT_FR_FAILED;
        if (op->awaited >= 0)
            snprintf(e->awaited, sizeof(e->awaited), "%d", op->awaited);
    }
    if (st != TC_OK) {
        char what[128];
        tc_error_prefix("%s (%s, rank %d of %d): ", small_what(op, what, sizeof(what)), SMALL_ALGO,
                        comm->rank, comm->size);
        tc_log_error(TC_SUBSYS_RUNTIME, "%s", tc_last_error());
        /* the lanes of this communicator are out of step now: like the
         * general path after a failed operation, the communicator is broken */
        if (comm->broken == TC_OK) {
            __atomic_store_n(&comm->broken, st, __ATOMIC_RELEASE);
            snprintf(comm->broken_why, sizeof(comm->broken_why), "%s", tc_last_error());
            tc_rt_comm_cancel_works(comm, st, comm->broken_why);
        }
    }
    if (comm->nhooks)
        small_hooks(op, 1, st);
    if (st != TC_OK)
        tc_rt_fr_dump_auto(comm, st == TC_ERR_TIMEOUT ? "timeout" : "error", st);
    return st;
}

/* Every rank votes whether it can use the path, twice: whether all its peers are over shm and
 * the lanes the communicator still needs fit /dev/shm (phase 1), then, if so, whether it
 * reserved its lanes (phase 2); the path is on only if all can. A vote is an all-gather of
 * every rank's record on the general path, an internal exchange with the tag kind of TC_CHECK
 * (which communicators on this path never use) and the sequence number of the operation about
 * to run, which it does not consume (phase 2: with the sequence field's top bit set): every
 * rank votes at the same operation, its first one that the path would take. */
static tc_status_t small_vote(tc_rt_comm_t *comm, int phase, const tc_rt_small_vote_t *mine,
                              uint64_t deadline, int *go_p)
{
    tc_rt_small_vote_t votes[TC_RT_SMALL_RANKS];
    tc_rt_work_t w = {0};
    w.comm = comm;
    w.call = (tc_rt_coll_t){.coll = TC_COLL_ALL_GATHER,
                            .sendbuf = mine,
                            .recvbuf = votes,
                            .count = sizeof(*mine),
                            .dtype = TC_UINT8,
                            .op = TC_SUM,
                            .root = -1};
    w.op = (tc_rt_op_t){TC_COLL_COUNT, comm->seq + 1, comm->name, "small-message path vote"};
    uint64_t seq = (comm->seq + 1) | (phase == 2 ? UINT64_C(1) << (TC_RT_TAG_SEQ_BITS - 1) : 0);
    w.tag = tc_rt_tag(comm->comm_id, TC_RT_TAG_CHECK, seq);
    int64_t left = (int64_t)tc_deadline_left_ms(deadline);
    w.timeout_ms = left > 0 ? left : 1;
    tc_algo_args_t args = {.coll = TC_COLL_ALL_GATHER,
                           .nranks = comm->size,
                           .rank = comm->rank,
                           .root = -1,
                           .count = sizeof(*mine)};
    tc_status_t st = tc_algo_build(&args, "bruck", &w.own);
    if (st == TC_OK) {
        w.sched = &w.own;
        st = tc_rt_work_run_internal(&w);
    }
    tc_sched_free(&w.own);
    tc_rt_exec_free(&w.ex);
    uint64_t need = 0, avail = 0;
    if (st == TC_OK)
        st = tc_rt_small_tally(votes, comm->size, go_p, &need, &avail);
    if (st != TC_OK) {
        tc_error_prefix("comm '%s': voting on the small-message path: ", comm->name);
        return st;
    }
    if (phase == 1 && !*go_p && need > avail)
        tc_log_info(TC_SUBSYS_RUNTIME,
                    "comm '%s': its lanes need %.1f MiB more of /dev/shm, %.1f MiB are free: no "
                    "small-message path",
                    comm->name, (double)need / 1048576.0, (double)avail / 1048576.0);
    return TC_OK;
}

/* Connect every peer, wait (bounded) until the shm connections are up, vote, reserve the lanes
 * and vote again: the path is on for every rank of the communicator or for none. A peer found
 * failed meanwhile is reported by small_peer_failed(). */
static tc_status_t small_setup(tc_rt_comm_t *comm, tc_rt_small_t *s, uint64_t deadline)
{
    tc_rt_world_t *world = comm->world;
    tc_rt_small_vote_t mine;
    for (;;) {
        int missing;
        tc_status_t st = tc_rt_small_connect(comm, s, deadline, &missing, &mine);
        if (st == TC_ERR_PEER_FAILED && missing >= 0) {
            char why[256];
            snprintf(why, sizeof(why), "%s", tc_last_error());
            st = small_peer_failed(comm, missing, st, why);
            tc_log_error(TC_SUBSYS_RUNTIME, "comm '%s': %s", comm->name, tc_last_error());
        }
        if (st != TC_OK)
            return st;
        if (!mine.ok || missing < 0)
            break;
        if (comm->broken != TC_OK) /* revoked, aborted or a failure learnt meanwhile */
            return tc_error_set(comm->broken, "%s", comm->broken_why);
        if (tc_time_ns() >= deadline)
            return tc_error_set(TC_ERR_TIMEOUT,
                                "comm '%s': the shm connection to rank %d did not come up in time",
                                comm->name, missing);
        if (tc_rt_world_progress(world) == 0)
            tc_rt_world_wait(world, 1, 0);
    }
    int64_t pause_ms = tc_rt_fault_vote(world); /* TC_FAULT_INJECT's vote point */
    if (pause_ms > 0) {
        uint64_t until = tc_deadline_after_ms((uint64_t)pause_ms);
        while (tc_time_ns() < until)
            if (tc_rt_world_progress(world) == 0)
                tc_rt_world_wait(world, 1, 0);
    }
    int go = 0;
    tc_status_t st = small_vote(comm, 1, &mine, deadline, &go);
    if (st == TC_OK && go) {
        /* /dev/shm may have filled meanwhile (other communicators, other jobs) */
        tc_rt_small_vote_t reserved = {.free = UINT64_MAX, .ok = 1};
        if (tc_rt_small_lanes(comm, s) != TC_OK) {
            tc_log_info(TC_SUBSYS_RUNTIME, "%s: this rank votes against the small-message path",
                        tc_last_error());
            reserved.ok = 0;
        }
        st = small_vote(comm, 2, &reserved, deadline, &go);
    }
    if (st != TC_OK)
        return st;
    s->state = go ? TC_RT_SMALL_ON : TC_RT_SMALL_OFF;
    tc_log_info(TC_SUBSYS_RUNTIME, "comm '%s': the small-message path is %s", comm->name,
                go ? "on" : "off");
    return TC_OK;
}

tc_status_t tc_rt_small_try(tc_rt_comm_t *comm, const tc_rt_coll_t *call, int flags,
                            tc_rt_work_t **work_p, int *taken_p)
{
    *taken_p = 0;
    tc_rt_small_t *s;
    tc_status_t st;
    if (flags & TC_RT_PERSISTENT)
        return TC_OK;
    if ((st = tc_rt_small_get(comm, &s)) != TC_OK) {
        *taken_p = 1; /* no memory, or TC_SMALL_MAX is not a number of bytes */
        return st;
    }
    size_t bytes;
    if (s->state == TC_RT_SMALL_OFF || !(bytes = tc_rt_small_bytes(s, call)))
        return TC_OK;
    if (s->state == TC_RT_SMALL_UNKNOWN) {
        int64_t ms = call->timeout_ms > 0 ? call->timeout_ms : comm->timeout_ms;
        st = small_setup(comm, s, tc_deadline_after_ms((uint64_t)ms));
        if (st != TC_OK) {
            *taken_p = 1;
            tc_error_prefix("%s on comm '%s': ", tc_coll_name(call->coll), comm->name);
            return st;
        }
        if (s->state != TC_RT_SMALL_ON)
            return TC_OK;
    }
    *taken_p = 1;
    if (work_p) /* asynchronous, or the caller wants a work object */
        return tc_rt_small_work(comm, s, call, bytes, flags, work_p);
    unsigned char keep[TC_SHM_LANE_PAYLOAD];
    tc_rt_small_op_t op = {.comm = comm,
                           .s = s,
                           .call = call,
                           .bytes = bytes,
                           .awaited = -1,
                           .wait = small_wait,
                           .keep = keep};
    op.seq = ++comm->seq;
    op.tag = tc_rt_tag(comm->comm_id, TC_RT_TAG_COLL, op.seq);
    small_begin(&op);
    return small_end(&op, tc_rt_small_run(&op));
}
