/* The small-message path's state and its lanes (small.h, docs/runtime.md): when the path
 * applies, the lanes connected and reserved, the set-up's votes tallied; and the lanes'
 * housekeeping: messages no operation will read dropped, messages of operations not issued yet
 * moved out of the slots, a failed operation's messages withdrawn. */
#include <ctype.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "small.h"
#include "tcomms/base/config.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"
#include "tcomms/transport/shm.h"

/* Bytes of messages moved out of one lane's slots at most: beyond, its writer waits for a slot
 * again (the memory a peer costs stays bounded). */
#define SMALL_SPILL_MAX ((size_t)1 << 20)
#define SMALL_SPILL_MAX_COUNT 256u /* messages, as every look walks them */
/* A lane full of the same messages this long may hold messages of operations not issued here,
 * whose writer cannot go on while this rank waits; a lane that is only slow to drain changes
 * sooner, and its messages are left where they are. */
#define SMALL_SPILL_AFTER_NS 1000000ull

/* Conditions of the communicator that do not change: checked once. */
static int small_static_ok(tc_rt_comm_t *comm, tc_rt_small_t *s)
{
    /* TC_CHECK: the description exchange is a schedule of the general path,
     * so checked communicators skip this path rather than the check */
    /* TC_FAULT_INJECT's step points name schedule steps: they need every rank on schedules */
    return s->max > 0 && comm->size > 1 && comm->size <= TC_RT_SMALL_RANKS && comm->device < 0 &&
           !comm->check && !tc_hints_get(&comm->hints, "algo") && !comm->world->fault.steps;
}

tc_status_t tc_rt_small_config(int64_t *max_p)
{
    return tc_config_int("TC_SMALL_MAX", TC_SHM_LANE_PAYLOAD, 0, TC_SHM_LANE_PAYLOAD, max_p);
}

tc_status_t tc_rt_small_make(tc_rt_comm_t *comm, tc_rt_small_t **s_p)
{
    tc_rt_small_t *s = calloc(1, sizeof(*s));
    if (!s)
        return tc_error_set(TC_ERR_NO_MEMORY, "comm '%s': small-message path", comm->name);
    int64_t max;
    tc_status_t st = tc_rt_small_config(&max);
    if (st != TC_OK) {
        free(s);
        return st;
    }
    s->max = (size_t)max;
    s->state =
        small_static_ok(comm, s) ? TC_RT_SMALL_UNKNOWN : TC_RT_SMALL_OFF; /* not shared yet */
    /* TC_ALGO_<COLL> names the algorithm of every call of that collective: honour it */
    for (int c = 0; c < TC_COLL_COUNT; c++) {
        char var[64];
        snprintf(var, sizeof(var), "TC_ALGO_%s", tc_coll_name((tc_coll_t)c));
        for (char *v = var; *v; v++)
            *v = (char)toupper((unsigned char)*v);
        const char *want = tc_config_string(var, NULL);
        s->forced[c] = want && *want;
    }
    comm->small = s;
    *s_p = s;
    return TC_OK;
}

void tc_rt_small_free(tc_rt_comm_t *comm)
{
    if (!comm->small)
        return;
    tc_rt_small_setup_free(comm->small);
    free(comm->small->peer);
    free(comm->small);
    comm->small = NULL;
}

/* The endpoint the set-up got for rank @p q at an earlier step is still the world's: another
 * communicator's operation may have closed it since (and freed it) between the steps. */
static tc_status_t small_ep_kept(tc_rt_comm_t *comm, const tc_rt_small_t *s, int q)
{
    int wq = tc_rt_world_rank(comm, q);
    if (tc_rt_world_ep_gen(comm->world, wq) == s->peer[q].ep_gen)
        return TC_OK;
    return tc_error_set(TC_ERR_INVALID_STATE,
                        "the endpoint to rank %d (world rank %d) was closed during the "
                        "small-message path's set-up, after an operation abandoned a request "
                        "on it",
                        q, wq);
}

tc_status_t tc_rt_small_connect(tc_rt_comm_t *comm, tc_rt_small_t *s, uint64_t deadline,
                                int *missing_p, tc_rt_small_vote_t *vote)
{
    tc_rt_world_t *world = comm->world;
    int n = comm->size;
    *missing_p = -1;
    *vote = (tc_rt_small_vote_t){.free = UINT64_MAX, .ok = 1};
    if (!s->peer && !(s->peer = calloc((size_t)n, sizeof(*s->peer))))
        return tc_error_set(TC_ERR_NO_MEMORY, "comm '%s': lanes of %d ranks", comm->name, n);
    /* Every peer first, whatever its backend: a peer that waits for its shm connection to this
     * rank gets it while this rank votes, even when this rank votes no. */
    for (int q = 0; q < n; q++) {
        if (q == comm->rank || s->peer[q].ep)
            continue;
        int wq = tc_rt_world_rank(comm, q);
        s->peer[q].ep_gen = tc_rt_world_ep_gen(world, wq);
        tc_status_t st = tc_rt_world_ep(world, wq, deadline, &s->peer[q].ep);
        if (st != TC_OK) {
            *missing_p = q;
            return st;
        }
    }
    for (int q = 0; q < n; q++) { /* got at an earlier step, maybe: closed since? */
        tc_status_t st = q == comm->rank ? TC_OK : small_ep_kept(comm, s, q);
        if (st != TC_OK) {
            *missing_p = q;
            return st;
        }
    }
    for (int q = 0; q < n; q++) {
        if (q != comm->rank && s->peer[q].ep->ops != &tc_tp_shm_ops) {
            tc_log_info(TC_SUBSYS_RUNTIME,
                        "comm '%s': rank %d is not reached over shm: this rank votes against the "
                        "small-message path",
                        comm->name, q);
            *vote = (tc_rt_small_vote_t){0};
            return TC_OK;
        }
    }
    for (int q = 0; q < n; q++) {
        uint64_t cost, avail;
        if (q == comm->rank)
            continue;
        tc_status_t st = tc_tp_shm_ep_lane_cost(s->peer[q].ep, &cost, &avail);
        if (st == TC_ERR_INVALID_STATE) {
            *missing_p = q;
            continue;
        }
        if (st != TC_OK) {
            *missing_p = q;
            tc_error_prefix("comm '%s': lanes to rank %d: ", comm->name, q);
            return st;
        }
        vote->need += cost;
        vote->free = avail < vote->free ? avail : vote->free;
    }
    return TC_OK;
}

tc_status_t tc_rt_small_lanes(tc_rt_comm_t *comm, tc_rt_small_t *s)
{
    for (int q = 0; q < comm->size; q++) {
        if (q == comm->rank || s->peer[q].lane)
            continue;
        tc_status_t st = small_ep_kept(comm, s, q);
        if (st == TC_OK)
            st = tc_tp_shm_ep_lane(s->peer[q].ep, &s->peer[q].lane);
        if (st != TC_OK) {
            tc_error_prefix("comm '%s': lanes to rank %d: ", comm->name, q);
            return st;
        }
    }
    return TC_OK;
}

tc_status_t tc_rt_small_tally(const tc_rt_small_vote_t *votes, int n, int *go_p, uint64_t *need_p,
                              uint64_t *free_p)
{
    int all = 1;
    uint64_t need = 0, avail = UINT64_MAX;
    for (int q = 0; q < n; q++) {
        if (votes[q].ok > 1)
            return tc_error_set(TC_ERR_PROTOCOL,
                                "small-message path vote: rank %d sent %u (a vote is 0 or 1)", q,
                                votes[q].ok);
        all &= votes[q].ok;
        need = need > UINT64_MAX - votes[q].need ? UINT64_MAX : need + votes[q].need;
        avail = votes[q].free < avail ? votes[q].free : avail;
    }
    need /= 2; /* both ranks of a pair count its lanes */
    *go_p = all && need <= avail;
    *need_p = need;
    *free_p = avail;
    return TC_OK;
}

/* Whether a lane message tagged @p tag, not this operation's, can never be read: it belongs
 * to another communicator that is broken here, or that this process destroyed broken. An
 * operation that failed leaves such messages behind (a peer posted before the failure ended
 * it); the lanes are shared with the communicators that follow, a shrink's for one. */
static int small_stale(const tc_rt_comm_t *comm, uint64_t tag)
{
    const tc_rt_world_t *world = comm->world;
    uint64_t id = tag >> TC_RT_TAG_ID_SHIFT;
    if (id == comm->comm_id)
        return 0; /* a communicator runs no operation after a failed one */
    for (const tc_rt_comm_t *c = world->comms; c; c = c->wnext)
        if (c->comm_id == id) /* broken by another thread's operation, maybe now */
            return __atomic_load_n(&c->broken, __ATOMIC_ACQUIRE) != TC_OK;
    /* an id retired clean may serve a communicator a peer made already; a spoilt one never */
    return tc_rt_ids_spoilt(world, (uint32_t)id);
}

/* Release the messages of @p lane that no operation will read (never @p comm's own); the lane
 * taken. */
static void small_drop(const tc_rt_comm_t *comm, tc_tp_shm_lane_t *lane)
{
    for (unsigned i = 0; i < TC_SHM_LANE_SLOTS; i++) {
        const tc_shm_lane_slot_t *slot = tc_shm_lane_pending(lane, i);
        if (slot && small_stale(comm, slot->tag))
            tc_shm_lane_release(lane, slot);
    }
    for (const tc_shm_lane_slot_t *m = tc_shm_lane_spilled_next(lane, NULL), *next; m; m = next) {
        next = tc_shm_lane_spilled_next(lane, m);
        if (small_stale(comm, m->tag))
            tc_shm_lane_release(lane, m);
    }
}

int tc_rt_small_lane_closed(tc_rt_comm_t *comm, tc_rt_small_t *s)
{
    tc_rt_world_t *world = comm->world;
    uint64_t drops = __atomic_load_n(&world->ep_drops, __ATOMIC_SEQ_CST);
    for (int q = 0; q < comm->size; q++) {
        int wq = tc_rt_world_rank(comm, q);
        if (q != comm->rank && (tc_rt_world_ep_gen(world, wq) != s->peer[q].ep_gen ||
                                tc_rt_world_ep_get(world, wq) != s->peer[q].ep))
            return q;
    }
    s->ep_drops = drops;
    return -1;
}

void tc_rt_small_drop_stale(tc_rt_small_op_t *op, int q)
{
    tc_tp_shm_lane_t *lane = op->s->peer[q].lane;
    if (!tc_shm_lane_trylock(lane))
        return; /* another thread looks at it now: the next wait's turn */
    small_drop(op->comm, lane);
    tc_shm_lane_unlock(lane);
}

/* Whether rank @p q's lane has held the same messages in all its big slots (so its writer may
 * wait for one) since a look SMALL_SPILL_AFTER_NS ago; *now_p is read when first needed. */
static int small_stuck(tc_rt_small_t *s, int q, const tc_tp_shm_lane_t *lane, uint64_t *now_p)
{
    if (!tc_shm_lane_rx_full(lane)) {
        if (s->peer[q].full_ns) /* written only then: lock-free calls read this line */
            s->peer[q].full_ns = 0;
        return 0;
    }
    uint64_t sum = tc_shm_lane_big_gens(lane); /* the other kinds' traffic goes on meanwhile */
    if (!*now_p)
        *now_p = tc_time_ns();
    if (!s->peer[q].full_ns || sum != s->peer[q].full_sum) {
        s->peer[q].full_sum = sum;
        s->peer[q].full_ns = *now_p;
        return 0;
    }
    return *now_p - s->peer[q].full_ns >= SMALL_SPILL_AFTER_NS;
}

/* The lanes of @p comm's peers that are stuck: what no operation will read dropped, the rest
 * moved out of the slots up to SMALL_SPILL_MAX bytes and SMALL_SPILL_MAX_COUNT messages per lane.
 */
static void small_unblock(tc_rt_comm_t *comm, uint64_t *now_p)
{
    tc_rt_small_t *s = comm->small;
    for (int q = 0; q < comm->size; q++) {
        tc_tp_shm_lane_t *lane = s->peer[q].lane;
        if (q == comm->rank || !lane || !tc_shm_lane_trylock(lane))
            continue; /* a lane another thread has: a later look */
        tc_status_t st = TC_OK;
        if (small_stuck(s, q, lane, now_p)) {
            small_drop(comm, lane);
            st = tc_shm_lane_spill(lane, SMALL_SPILL_MAX, SMALL_SPILL_MAX_COUNT, NULL);
            s->peer[q].full_ns = 0;
        }
        int first = st != TC_OK && lane->spill_refusals == 1; /* said once per lane */
        tc_shm_lane_unlock(lane);
        if (first) {
            char why[96] = "no memory is left to move them out";
            if (st != TC_ERR_NO_MEMORY)
                snprintf(why, sizeof(why),
                         "those moved out reach the bound (%zu KiB or %u messages)",
                         SMALL_SPILL_MAX >> 10, SMALL_SPILL_MAX_COUNT);
            tc_log_warn(TC_SUBSYS_RUNTIME,
                        "world rank %d's small messages fill the lanes from it and %s: it waits "
                        "for a slot until this rank's operations read them (an operation that "
                        "needs a message it posts behind them may end at its timeout)",
                        tc_rt_world_rank(comm, q), why);
        }
    }
}

void tc_rt_small_unblock(tc_rt_world_t *world)
{
    uint64_t drops = __atomic_load_n(&world->ep_drops, __ATOMIC_SEQ_CST), now = 0;
    for (tc_rt_comm_t *c = world->comms; c; c = c->wnext) {
        tc_rt_small_t *s = c->small;
        /* lanes whose endpoint closed since they were known open may be unmapped: their
         * communicator's next operation says so; the others are looked at */
        if (s && __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == TC_RT_SMALL_ON &&
            (s->ep_drops == drops || tc_rt_small_lane_closed(c, s) < 0))
            small_unblock(c, &now);
    }
}

void tc_rt_small_withdraw(tc_rt_small_op_t *op, tc_status_t st)
{
    if ((st != TC_ERR_TIMEOUT && st != TC_ERR_ABORTED && st != TC_ERR_MISMATCH) ||
        (op->posted == 0 && op->ahead_posted == 0) ||
        __atomic_load_n(&op->comm->world->ep_drops, __ATOMIC_SEQ_CST) != op->s->ep_drops)
        return;
    /* the ranks posted to: before op->posted, and some of the window after it */
    for (int q = 0; q <= op->posted + TC_RT_SMALL_AHEAD && q < op->comm->size; q++) {
        tc_tp_shm_lane_t *lane = op->s->peer[q].lane;
        if (q == op->comm->rank || !lane)
            continue;
        while (!tc_shm_lane_trylock(lane))
            sched_yield(); /* its holder only looks, copies or moves messages out */
        tc_shm_lane_withdraw(lane, op->tag);
        tc_shm_lane_unlock(lane);
    }
}
