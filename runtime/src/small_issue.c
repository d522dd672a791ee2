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
#define SMALL_CHECK_NS 200000ull /* a wait without the world's lock looks at the world so often */
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

/* The slot waited for, its lane taken, or NULL: the peer's next message (rx) or our next free
 * slot. A look while spinning (!@p all) reads only the two slots a stream's next message takes;
 * each pass of the slow loop looks at every slot (a message among other communicators' ones). A
 * lane another thread has finds nothing this time. */
static inline void *small_look(tc_rt_small_op_t *op, int q, int rx, int all)
{
    tc_tp_shm_lane_t *lane = op->s->peer[q].lane;
    if (!tc_shm_lane_trylock(lane))
        return NULL;
    /* the caller only reads a received slot: const is dropped for one return type */
    void *slot = !rx ? (void *)tc_shm_lane_tx_slot(lane, op->tx_len)
                     : (void *)(uintptr_t)(all ? tc_shm_lane_find(lane, op->tag)
                                               : tc_shm_lane_find_next(lane, op->tag));
    if (!slot)
        tc_shm_lane_unlock(lane);
    return slot;
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

tc_status_t tc_rt_small_peer_failed(tc_rt_comm_t *comm, int q, tc_status_t st, const char *why)
{
    tc_rt_world_t *world = comm->world;
    const tc_rt_failed_t *f = tc_rt_world_note_failure(world, tc_rt_world_rank(comm, q), why, 1);
    if (f)
        world->hooks.failed(world, f);
    if (comm->broken != TC_OK)
        return tc_error_set(comm->broken, "%s", comm->broken_why);
    return tc_error_set(st, "rank %d: %s", q, why); /* no memory for the record: still end */
}

tc_status_t tc_rt_small_lanes_open(tc_rt_comm_t *comm, tc_rt_small_t *s)
{
    if (__atomic_load_n(&comm->world->ep_drops, __ATOMIC_SEQ_CST) == s->ep_drops)
        return TC_OK;
    int q = tc_rt_small_lane_closed(comm, s);
    if (q < 0)
        return TC_OK;
    return tc_error_set(TC_ERR_INVALID_STATE,
                        "the endpoint to rank %d (world rank %d) was closed after an operation "
                        "abandoned a request on it, and its lanes with it",
                        q, tc_rt_world_rank(comm, q));
}

/* The slow part of a wait for rank @p q: progress, the lanes' endpoints (progress may close
 * one, and an operation run without the world's lock was not looking), the peer's endpoint,
 * the communicator. */
static tc_status_t small_check(tc_rt_small_op_t *op, int q)
{
    tc_rt_comm_t *comm = op->comm;
    (void)tc_rt_world_progress(comm->world);
    tc_status_t st = tc_rt_small_lanes_open(comm, op->s);
    if (st != TC_OK)
        return st;
    tc_tp_ep_t *ep = op->s->peer[q].ep;
    if (ep->failed != TC_OK && comm->broken == TC_OK)
        return tc_rt_small_peer_failed(comm, q, ep->failed, ep->error);
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
                        "(world rank %d) %s" TC_RT_TIMEOUT_HINT,
                        (long long)ms, q, tc_rt_world_rank(op->comm, q), what);
}

/* The slow part of a wait of an operation run without the world's lock (op->free) takes it.
 * The communicator's flag is cleared first: a thread closing an endpoint holds the lock and
 * waits for the flag. */
static void small_lock_world(tc_rt_small_op_t *op)
{
    __atomic_store_n(&op->comm->outside, 0, __ATOMIC_SEQ_CST);
    tc_rt_world_lock(op->comm->world);
}

/* ... and gives it back after small_check (@p st its outcome): the flag is set again under the
 * lock, the lanes known open (no endpoint can close in between). */
static tc_status_t small_unlock_world(tc_rt_small_op_t *op, tc_status_t st)
{
    if (st == TC_OK)
        __atomic_store_n(&op->comm->outside, 1, __ATOMIC_SEQ_CST);
    tc_rt_world_unlock(op->comm->world);
    return st;
}

/* The wait after its first spins found nothing. */
static tc_status_t small_wait_long(tc_rt_small_op_t *op, int q, int rx, void **slot_p)
{
    tc_rt_world_t *world = op->comm->world;
    int locked = !op->free;
    uint64_t start = tc_time_ns(), now = start;
    small_deadline(op, start);
    uint64_t yielded = start;
    /* Out of the world's lock while another thread wants it: the lane's counters are the
     * lane's (tc_shm_lane_trylock), but out of it only the segment is watched, and what
     * changed is looked at under the lock. The value watched is read before the last look,
     * so nothing that arrives after that look goes unseen. */
    tc_tp_shm_lane_t *lane = op->s->peer[q].lane;
    int out = 0;
    uint64_t seen = 0;
    while (now - start < world->spin_ns) {
        if (locked && !out && __atomic_load_n(&world->want, __ATOMIC_RELAXED) > 0) {
            seen = tc_shm_lane_watch(lane, rx);
            if ((*slot_p = small_look(op, q, rx, 1)))
                return TC_OK;
            tc_rt_world_step_out(world);
            out = 1;
        }
        for (int i = 0; i < SMALL_CLOCK_EVERY; i++) {
            small_relax();
            if (locked && !out && __atomic_load_n(&world->want, __ATOMIC_RELAXED) > 0)
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
    uint64_t checked = 0;
    for (;;) {
        if ((*slot_p = small_look(op, q, rx, 1)))
            return TC_OK;
        now = tc_time_ns();
        tc_status_t st = TC_OK;
        /* the world (progress, failures, the peer's endpoint) at every pass with its lock, at
         * most every SMALL_CHECK_NS without: taking it would serialise the waiting threads */
        if (locked || now - checked >= SMALL_CHECK_NS) {
            if (!locked)
                small_lock_world(op);
            st = small_check(op, q);
            if (st == TC_OK && rx)
                tc_rt_small_drop_stale(op, q); /* slots no operation will read */
            if (st == TC_OK)
                tc_rt_small_unblock(op->comm->world); /* slots the peers may wait for */
            if (st == TC_OK && (*slot_p = small_look(op, q, rx, 1)))
                return locked ? TC_OK : small_unlock_world(op, TC_OK);
            if (!locked && (st = small_unlock_world(op, st)) != TC_OK) {
                op->awaited = q;
                return st;
            }
            checked = now;
        }
        if (st == TC_OK && now >= op->deadline)
            st = small_timeout(op, q, rx ? "to send its part" : "to read an earlier message");
        if (st != TC_OK) {
            op->awaited = q;
            return st;
        }
        uint64_t nap = now - start < SMALL_YIELD_NS ? 0 : SMALL_NAP_NS;
        if (locked) {
            tc_rt_world_handoff(world); /* another thread's operation may be what q waits for */
            tc_rt_world_nap(world, nap);
        } else {
            tc_rt_world_nap_out(world, nap);
        }
        /* a peer that just got the core answers within a few looks: no need to go round again */
        for (int i = 0; i < SMALL_CLOCK_EVERY; i++) {
            small_relax();
            if ((*slot_p = small_look(op, q, rx, 0)))
                return TC_OK;
        }
    }
}

static tc_status_t small_wait(tc_rt_small_op_t *op, int q, int what, void **slot_p)
{
    int rx = what == TC_RT_SMALL_RX;
    tc_rt_world_t *world = op->comm->world;
    /* with the world's lock: give it up at once to a thread that waits for it */
    int locked = !op->free;
    int spins = world->spin_ns ? SMALL_SPINS : SMALL_SPINS_SHARED;
    for (int i = 0; i < spins; i++) {
        small_relax();
        if ((*slot_p = small_look(op, q, rx, 0)))
            return TC_OK;
        if (locked && __atomic_load_n(&world->want, __ATOMIC_RELAXED) > 0)
            break; /* another thread waits for the lock: step out below at once */
    }
    if ((*slot_p = small_look(op, q, rx, 1)))
        return TC_OK;
    return small_wait_long(op, q, rx, slot_p);
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
        uint64_t now = small_coarse_ns();
        tc_rt_obs_lock(comm);
        tc_rt_obs_settle(comm); /* the previous operation's end */
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
        e->start_ns = tc_rt_fr_time(comm, now);
        e->end_ns = 0;
        e->awaited[0] = '\0';
        tc_rt_obs_unlock(comm);
    }
    if (!op->free && comm->nhooks) { /* none when run without the world's lock */
        op->start_ns = tc_time_ns();
        small_hooks(op, 0, TC_INPROGRESS);
    }
}

/* This path's statistics entry for the operation's collective (found once). Records held. */
static tc_rt_stat_t *small_stat(tc_rt_small_op_t *op)
{
    tc_rt_comm_t *comm = op->comm;
    int *known = &op->s->stat[op->call->coll];
    if (*known == 0)
        *known = tc_rt_stats_index(comm, (int)op->call->coll, SMALL_ALGO) + 1;
    return *known > 0 ? &comm->stats[*known - 1] : NULL;
}

/* The lanes of @p comm are out of step after @p st (its error set): like the general path
 * after a failed operation, the communicator is broken. */
static void small_break(tc_rt_comm_t *comm, tc_status_t st)
{
    if (comm->broken != TC_OK)
        return;
    __atomic_store_n(&comm->broken, st, __ATOMIC_RELEASE);
    snprintf(comm->broken_why, sizeof(comm->broken_why), "%s", tc_last_error());
    tc_rt_comm_cancel_works(comm, st, comm->broken_why);
}

/* The operation's statistics and flight-recorder entry, as it ended with @p st: left to the
 * next start to write (comm->unsettled) when it ended well without reading the clock and its
 * start took the records' lock (its recorder is on), else written now. */
static void small_records(tc_rt_small_op_t *op, tc_status_t st)
{
    tc_rt_comm_t *comm = op->comm;
    int known = op->s->stat[op->call->coll];
    if (st == TC_OK && !op->deadline && op->fr && known > 0) {
        comm->unsettled.fr = op->fr;
        comm->unsettled.fr_id = op->fr_id;
        comm->unsettled.stat = known - 1;
        comm->unsettled.bytes = op->call->coll == TC_COLL_BARRIER ? 0 : op->bytes;
        __atomic_store_n(&comm->settle_due, 1, __ATOMIC_RELEASE);
        return;
    }
    uint64_t now = op->deadline && comm->fr ? small_coarse_ns() : 0;
    tc_rt_obs_lock(comm);
    tc_rt_obs_settle(comm);
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
        e->end_ns = op->deadline ? tc_rt_fr_time(comm, now) : e->start_ns;
        e->status = st;
        e->state = st == TC_OK            ? TC_RT_FR_DONE
                   : st == TC_ERR_TIMEOUT ? TC_RT_FR_TIMED_OUT
                                          : TC_RT_FR_FAILED;
        if (op->awaited >= 0)
            snprintf(e->awaited, sizeof(e->awaited), "%d", op->awaited);
    }
    tc_rt_obs_unlock(comm);
}

/* The end of an operation: its records, and on an error (the world's lock held) the
 * communicator broken, the error logged, the recorder dumped. */
static tc_status_t small_end(tc_rt_small_op_t *op, tc_status_t st)
{
    tc_rt_comm_t *comm = op->comm;
    small_records(op, st);
    tc_rt_small_withdraw(op, st);
    if (st != TC_OK) {
        char what[128];
        tc_error_prefix("%s (%s, rank %d of %d): ", small_what(op, what, sizeof(what)), SMALL_ALGO,
                        comm->rank, comm->size);
        tc_log_error(TC_SUBSYS_RUNTIME, "%s", tc_last_error());
        small_break(comm, st);
    }
    if (!op->free && comm->nhooks)
        small_hooks(op, 1, st);
    if (st != TC_OK)
        tc_rt_fr_dump_auto(comm, st == TC_ERR_TIMEOUT ? "timeout" : "error", st);
    return st;
}

/* A blocking call without a work object on the lanes, with the world's lock (@p free 0) or
 * without it (tc_rt_small_fast: comm->outside set, cleared here; the lock taken to report an
 * error). */
static tc_status_t small_blocking(tc_rt_comm_t *comm, tc_rt_small_t *s, const tc_rt_coll_t *call,
                                  size_t bytes, int free)
{
    unsigned char keep[TC_SHM_LANE_PAYLOAD];
    tc_rt_small_op_t op = {.comm = comm,
                           .s = s,
                           .call = call,
                           .bytes = bytes,
                           .awaited = -1,
                           .wait = small_wait,
                           .free = free,
                           .keep = keep};
    /* stored atomically: a flight-recorder dump on another thread reads it */
    op.seq = comm->seq + 1;
    __atomic_store_n(&comm->seq, op.seq, __ATOMIC_RELAXED);
    op.tag = tc_rt_coll_tag(comm->comm_id, call->coll, op.seq);
    small_begin(&op);
    tc_status_t st = tc_rt_small_run_blocking(&op);
    if (!free)
        return small_end(&op, st);
    __atomic_store_n(&comm->outside, 0, __ATOMIC_RELEASE);
    if (st == TC_OK)
        return small_end(&op, st);
    tc_rt_world_lock(comm->world);
    st = small_end(&op, st);
    tc_rt_world_unlock(comm->world);
    return st;
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
    int async = (flags & TC_RT_ASYNC) != 0;
    if (s->state == TC_RT_SMALL_UNKNOWN) { /* every rank is at this operation: it sets up */
        int64_t ms = call->timeout_ms > 0 ? call->timeout_ms : comm->timeout_ms;
        tc_rt_small_setup_begin(comm, s, comm->seq + 1, tc_deadline_after_ms((uint64_t)ms), async);
    }
    if (s->state == TC_RT_SMALL_SETUP) {
        /* an asynchronous call returns at once: its work goes on with the set-up */
        st = async ? tc_rt_small_setup_step(comm, s) : tc_rt_small_setup_wait(comm, s);
        if (st != TC_OK) {
            *taken_p = 1;
            tc_error_prefix("%s on comm '%s': ", tc_coll_name(call->coll), comm->name);
            small_break(comm, st);
            return st;
        }
        if (s->state == TC_RT_SMALL_OFF)
            return TC_OK;
    }
    *taken_p = 1;
    tc_rt_fault_close(comm->world, comm->seq + 1);
    if ((st = tc_rt_small_lanes_open(comm, s)) != TC_OK) {
        tc_error_prefix("%s on comm '%s': ", tc_coll_name(call->coll), comm->name);
        small_break(comm, st);
        return st;
    }
    if (work_p) /* asynchronous, or the caller wants a work object */
        return tc_rt_small_work(comm, s, call, bytes, flags, work_p);
    if (__atomic_load_n(&s->turn, __ATOMIC_ACQUIRE) != s->tickets) {
        /* works still posting: after them, as a work (small.h) */
        tc_rt_work_t *w = NULL;
        st = tc_rt_small_work(comm, s, call, bytes, flags, &w);
        if (w)
            tc_rt_work_release(w);
        return st;
    }
    return small_blocking(comm, s, call, bytes, 0);
}

tc_status_t tc_rt_small_fast(tc_rt_comm_t *comm, const tc_rt_coll_t *call, int *taken_p)
{
    *taken_p = 0;
    tc_rt_small_t *s = comm->small;
    size_t bytes;
    if (!s || __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != TC_RT_SMALL_ON ||
        __atomic_load_n(&s->turn, __ATOMIC_ACQUIRE) != s->tickets ||
        __atomic_load_n(&comm->nhooks, __ATOMIC_ACQUIRE) != 0 ||
        __atomic_load_n(&comm->broken, __ATOMIC_ACQUIRE) != TC_OK ||
        !(bytes = tc_rt_small_bytes(s, call)))
        return TC_OK;
    tc_rt_world_t *world = comm->world;
    if (__atomic_load_n(&world->fault.close_op, __ATOMIC_RELAXED)) { /* TC_FAULT_INJECT */
        tc_rt_world_lock(world);
        tc_rt_fault_close(world, comm->seq + 1);
        tc_rt_world_unlock(world);
    }
    /* the flag, then the count (both seq_cst, as tc_rt_world_ep_drop's count, then its look at
     * the flags): either the closer waits for this call, or this call sees the count changed */
    __atomic_store_n(&comm->outside, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&world->ep_drops, __ATOMIC_SEQ_CST) != s->ep_drops) {
        __atomic_store_n(&comm->outside, 0, __ATOMIC_RELEASE);
        return TC_OK; /* an endpoint closed: the path under the lock looks at the lanes */
    }
    *taken_p = 1;
    return small_blocking(comm, s, call, bytes, 1);
}
