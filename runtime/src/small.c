/* The small-message path (small.h, docs/runtime.md): when it applies, how it
 * is set up, and the collectives on the lanes.
 *
 * Every collective is one round: each rank posts what it sends (one lane
 * message per destination, at most TC_SMALL_MAX bytes) and takes what it
 * receives. A blocking call posts everything first, then takes rank by rank;
 * a work (asynchronous) also takes while a post waits for a slot or for its
 * turn (takes_early), so that works of several communicators never wait for
 * each other's slots. What is still to post is never where a take writes.
 * Reductions fold the contributions in rank order, ((x0 op x1) op x2) ...,
 * so every rank gets the same bits.
 * Cost: 1 step; a rank sends and receives at most (p - 1) messages of n/p
 * (all-to-all, reduce-scatter, all-gather) or n bytes (the others). */
#include <ctype.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/base/copy.h"
#include "small.h"
#include "tcomms/base/config.h"
#include "tcomms/base/log.h"
#include "tcomms/kernels/reduce.h"
#include "tcomms/transport/shm.h"

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
static int small_stale(const tc_rt_small_op_t *op, uint64_t tag)
{
    const tc_rt_world_t *world = op->comm->world;
    uint64_t id = tag >> TC_RT_TAG_ID_SHIFT;
    if (id == op->comm->comm_id)
        return 0; /* a communicator runs no operation after a failed one */
    for (const tc_rt_comm_t *c = world->comms; c; c = c->wnext)
        if (c->comm_id == id) /* broken by another thread's operation, maybe now */
            return __atomic_load_n(&c->broken, __ATOMIC_ACQUIRE) != TC_OK;
    /* an id retired clean may serve a communicator a peer made already; a spoilt one never */
    return tc_rt_ids_spoilt(world, (uint32_t)id);
}

void tc_rt_small_drop_stale(tc_rt_small_op_t *op, int q)
{
    tc_tp_shm_lane_t *lane = op->s->peer[q].lane;
    if (!tc_shm_lane_trylock(lane))
        return; /* another thread looks at it now: the next wait's turn */
    for (unsigned i = 0; i < TC_SHM_LANE_SLOTS; i++) {
        const tc_shm_lane_slot_t *slot = tc_shm_lane_pending(lane, i);
        if (slot && slot->tag != op->tag && small_stale(op, slot->tag))
            tc_shm_lane_release(lane, slot);
    }
    for (const tc_shm_lane_slot_t *m = tc_shm_lane_spilled_next(lane, NULL), *next; m; m = next) {
        next = tc_shm_lane_spilled_next(lane, m);
        if (m->tag != op->tag && small_stale(op, m->tag))
            tc_shm_lane_release(lane, m);
    }
    tc_shm_lane_unlock(lane);
}

void tc_rt_small_spill(tc_rt_small_op_t *op)
{
    for (int q = 0; q < op->comm->size; q++) {
        tc_tp_shm_lane_t *lane = op->s->peer[q].lane;
        if (q == op->comm->rank || !lane || !tc_shm_lane_trylock(lane))
            continue; /* a lane another thread has: its waits move what it holds */
        if (tc_shm_lane_rx_full(lane) && tc_shm_lane_spill(lane) < 0) /* at each pass: debug */
            tc_log_debug(TC_SUBSYS_RUNTIME,
                         "small-message path: no memory to move rank %d's messages out of the "
                         "lanes; it may wait for a slot until this rank's operations end",
                         q);
        tc_shm_lane_unlock(lane);
    }
}

/* Rank @p q withdrew its message of this operation: its own call of it failed. */
static tc_status_t small_withdrawn(int q)
{
    return tc_error_set(TC_ERR_ABORTED,
                        "rank %d withdrew its part: its call of this operation ended in error (a "
                        "timeout, an abort or a revoke there)",
                        q);
}

/* The message of this operation from rank @p q, its lane taken (released and unlocked by the
 * caller). Messages of other communicators (other threads' operations) may sit in other slots
 * meanwhile. */
static tc_status_t take(tc_rt_small_op_t *op, int q, const tc_shm_lane_slot_t **slot_p)
{
    tc_status_t st = TC_OK;
    const tc_shm_lane_slot_t *slot = tc_rt_small_rx(op, q, &st);
    if (!slot)
        return st;
    size_t len = op->call->coll == TC_COLL_BARRIER ? 0 : op->bytes;
    uint64_t got = tc_shm_lane_len(slot);
    if (got != len) {
        if (got == TC_SHM_LANE_WITHDRAWN)
            tc_shm_lane_release(op->s->peer[q].lane, slot);
        tc_shm_lane_unlock(op->s->peer[q].lane);
        op->awaited = q;
        if (got == TC_SHM_LANE_WITHDRAWN)
            return small_withdrawn(q);
        return tc_error_set(TC_ERR_MISMATCH,
                            "rank %d contributed %llu bytes, this rank expects %zu (the ranks "
                            "disagree on count or type)",
                            q, (unsigned long long)got, len);
    }
    *slot_p = slot;
    return TC_OK;
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
            sched_yield(); /* its holder only looks for a slot or copies */
        tc_shm_lane_withdraw(lane, op->tag);
        tc_shm_lane_unlock(lane);
    }
}

/* What this rank sends rank @p q, op->bytes of it (none for a barrier), or NULL: nothing. */
static const unsigned char *part_to(const tc_rt_small_op_t *op, int q)
{
    const tc_rt_coll_t *c = op->call;
    int me = op->comm->rank;
    const unsigned char *in = c->sendbuf;
    size_t b = op->bytes;
    switch (c->coll) {
    case TC_COLL_BARRIER:
        return (const unsigned char *)"";
    case TC_COLL_ALL_REDUCE: /* once folding began, in place: the copy own_part kept */
        return op->ready ? op->mine : in;
    case TC_COLL_REDUCE:
    case TC_COLL_GATHER:
        return q == c->root ? in : NULL;
    case TC_COLL_BROADCAST:
        return me == c->root ? in : NULL;
    case TC_COLL_ALL_GATHER: /* in place: this rank's block of the output */
        return c->sendbuf == c->recvbuf ? (const unsigned char *)c->recvbuf + (size_t)me * b : in;
    case TC_COLL_REDUCE_SCATTER:
    case TC_COLL_ALL_TO_ALL:
        return in + (size_t)q * b;
    case TC_COLL_SCATTER:
        return me == c->root ? in + (size_t)q * b : NULL;
    default:
        return NULL;
    }
}

/* Whether this rank folds every rank's contribution (its own included) into op->dst. */
static int folds(const tc_rt_small_op_t *op)
{
    tc_coll_t c = op->call->coll;
    return c == TC_COLL_ALL_REDUCE || c == TC_COLL_REDUCE_SCATTER ||
           (c == TC_COLL_REDUCE && op->comm->rank == op->call->root);
}

/* Whether the operation may take its peers' messages while some of its own wait for a slot or
 * for its turn to post (small_work.c): the messages it still has to post must not lie where it
 * writes what it takes. Else, with operations of several communicators in flight, each rank's
 * slots towards the other could all hold messages its peer reads only after posting its own,
 * and every rank waited for a slot until the timeout. Only an all-to-all in place posts blocks
 * it overwrites. */
static int takes_early(const tc_rt_small_op_t *op)
{
    return op->call->coll != TC_COLL_ALL_TO_ALL || op->call->sendbuf != op->call->recvbuf;
}

/* Whether this rank takes a message from rank @p q (not folding). */
static int takes_from(const tc_rt_small_op_t *op, int q)
{
    const tc_rt_coll_t *c = op->call;
    int me = op->comm->rank;
    if (q == me)
        return 0;
    switch (c->coll) {
    case TC_COLL_REDUCE:
    case TC_COLL_GATHER:
        return me == c->root;
    case TC_COLL_BROADCAST:
    case TC_COLL_SCATTER:
        return q == c->root;
    default:
        return 1;
    }
}

/* Before taking (after posting, or while posts wait for a slot: takes_early): this rank's own
 * block of the output, and a fold's own contribution (op->mine), kept aside (op->keep) when
 * the output would overwrite it first, or overwrite what is still to post. A message this rank
 * posted is no such copy: once its reader consumed it, the slot may carry the next message
 * (another operation's) before the fold gets to this rank. */
static tc_status_t own_part(tc_rt_small_op_t *op)
{
    const tc_rt_coll_t *c = op->call;
    int me = op->comm->rank;
    size_t b = op->bytes;
    int in_place = c->sendbuf == c->recvbuf;
    const unsigned char *in = c->sendbuf;
    unsigned char *out = c->recvbuf;
    switch (c->coll) {
    case TC_COLL_ALL_REDUCE:
    case TC_COLL_REDUCE:
        op->mine = in;
        op->dst = out;
        break;
    case TC_COLL_REDUCE_SCATTER:
        op->mine = in + (size_t)me * b;
        op->dst = in_place ? out + (size_t)me * b : out;
        break;
    case TC_COLL_ALL_GATHER:
        tc_kern_copy(out + (size_t)me * b, part_to(op, me), b);
        break;
    case TC_COLL_ALL_TO_ALL:
        tc_kern_copy(out + (size_t)me * b, in + (size_t)me * b, b);
        break;
    case TC_COLL_GATHER:
        if (me == c->root && !in_place && in && out)
            tc_copy(out + (size_t)me * b, in, b);
        break;
    case TC_COLL_SCATTER: /* in place (sendbuf == recvbuf): this rank's block is there */
        if (me == c->root && in && out && !in_place)
            tc_copy(out, in + (size_t)me * b, b);
        break;
    default:
        break;
    }
    if (!folds(op))
        return TC_OK;
    if (!op->mine || !op->dst)
        return tc_error_set(TC_ERR_INTERNAL, "small-message path: a fold without its buffers");
    if (op->mine == op->dst && (me >= 1 || op->posted < op->comm->size)) {
        tc_copy(op->keep, op->mine, b);
        op->mine = op->keep;
    }
    return TC_OK;
}

/* Rank @p q's part (@p data) into the output: folded in rank order, dst = x0 op x1, then
 * dst = dst op x2, ..., or copied into its block. */
static tc_status_t use_part(tc_rt_small_op_t *op, int q, const unsigned char *data)
{
    const tc_rt_coll_t *c = op->call;
    size_t b = op->bytes;
    unsigned char *out = c->recvbuf;
    if (folds(op)) {
        if (q > 0)
            return tc_kern_reduce(c->dtype, c->op == TC_AVG ? TC_SUM : c->op, op->dst, op->dst,
                                  data, c->count);
        if (data != op->dst)
            tc_copy(op->dst, data, b);
        return TC_OK;
    }
    switch (c->coll) {
    case TC_COLL_ALL_GATHER:
    case TC_COLL_ALL_TO_ALL:
    case TC_COLL_GATHER:
        tc_copy(out + (size_t)q * b, data, b);
        break;
    case TC_COLL_BROADCAST:
    case TC_COLL_SCATTER:
        tc_copy(out, data, b);
        break;
    default:
        break;
    }
    return TC_OK;
}

/* Rank @p q is done (posted to, or taken from): *next is the first rank not done, bit i of
 * *ahead says whether rank *next + 1 + i is (an asynchronous operation goes on past a rank
 * whose lane is not ready, up to TC_RT_SMALL_AHEAD ranks). */
static void done_with(int *next, uint64_t *ahead, int q)
{
    if (q != *next) {
        *ahead |= 1ull << (q - *next - 1);
        return;
    }
    int more;
    do { /* past q, and past the ranks after it done already */
        (*next)++;
        more = (int)(*ahead & 1);
        *ahead >>= 1;
    } while (more);
}

/* Whether rank @p q is to be looked at: not before *next, not done, within the window. */
static int to_look_at(int next, uint64_t ahead, int q)
{
    return q == next ||
           (q > next && q <= next + TC_RT_SMALL_AHEAD && !(ahead >> (q - next - 1) & 1));
}

/* Rank @p q's message of this operation: taken, used and released. */
static tc_status_t take_use(tc_rt_small_op_t *op, int q)
{
    const tc_shm_lane_slot_t *slot = NULL;
    tc_status_t st = take(op, q, &slot);
    if (st != TC_OK)
        return st;
    st = use_part(op, q, slot->data);
    if (st == TC_OK && tc_shm_lane_len(slot) == TC_SHM_LANE_WITHDRAWN) {
        op->awaited = q; /* withdrawn while this rank used it */
        st = small_withdrawn(q);
    }
    tc_shm_lane_release(op->s->peer[q].lane, slot);
    tc_shm_lane_unlock(op->s->peer[q].lane);
    return st;
}

/* A fold waits for rank op->taken's message: the messages of the ranks after it that came
 * already are copied aside and their slots freed (their writers may wait for a slot to post what
 * this rank waits for). Only an asynchronous operation gets here (a blocking one waits in take).
 * TC_INPROGRESS, or the error. */
static tc_status_t fold_ahead(tc_rt_small_op_t *op)
{
    int n = op->comm->size, me = op->comm->rank, m = n < 64 ? n : 64;
    for (int q = op->taken + 1; q < n && q <= op->taken + TC_RT_SMALL_AHEAD; q++) {
        if (q == me || (op->ahead_taken >> (q % 64) & 1))
            continue;
        const tc_shm_lane_slot_t *slot = NULL;
        tc_status_t st = take(op, q, &slot);
        if (st == TC_INPROGRESS)
            continue;
        if (st != TC_OK)
            return st;
        if (!op->stash && !(op->stash = malloc((size_t)m * op->bytes))) {
            tc_shm_lane_unlock(op->s->peer[q].lane); /* no memory: it waits there instead */
            return TC_INPROGRESS;
        }
        tc_copy(op->stash + (size_t)(q % m) * op->bytes, slot->data, op->bytes);
        st = tc_shm_lane_len(slot) == TC_SHM_LANE_WITHDRAWN ? small_withdrawn(q) : TC_OK;
        tc_shm_lane_release(op->s->peer[q].lane, slot);
        tc_shm_lane_unlock(op->s->peer[q].lane);
        if (st != TC_OK) {
            op->awaited = q;
            return st;
        }
        op->ahead_taken |= 1ull << (q % 64);
    }
    return TC_INPROGRESS;
}

void tc_rt_small_op_free(tc_rt_small_op_t *op)
{
    free(op->stash);
    op->stash = NULL;
}

/* A fold's step for rank @p q: its own part, what it took ahead, or its message. */
static tc_status_t fold_take(tc_rt_small_op_t *op, int q)
{
    int n = op->comm->size, m = n < 64 ? n : 64;
    if (q == op->comm->rank)
        return use_part(op, q, op->mine);
    if (!(op->ahead_taken >> (q % 64) & 1))
        return take_use(op, q);
    op->ahead_taken &= ~(1ull << (q % 64));
    return use_part(op, q, op->stash + (size_t)(q % m) * op->bytes);
}

tc_status_t tc_rt_small_run(tc_rt_small_op_t *op, int may_post)
{
    int n = op->comm->size, me = op->comm->rank;
    tc_status_t st = TC_OK;
    size_t len = op->call->coll == TC_COLL_BARRIER ? 0 : op->bytes;
    int early = takes_early(op);
    if (!may_post && !early)
        return TC_INPROGRESS;
    /* a lane not ready (an asynchronous operation: TC_INPROGRESS) is passed for the next ones;
     * its peer may wait for those first */
    for (int q = op->posted; may_post && q < n && q <= op->posted + TC_RT_SMALL_AHEAD; q++) {
        if (!to_look_at(op->posted, op->ahead_posted, q))
            continue;
        const unsigned char *src = q == me ? NULL : part_to(op, q);
        if (src) {
            tc_shm_lane_slot_t *slot = tc_rt_small_tx(op, q, len, &st);
            if (!slot && (st != TC_INPROGRESS || !early))
                return st;
            if (!slot)
                continue; /* it takes what it can meanwhile: its peers' slots free up */
            if (len)
                tc_copy(slot->data, src, len);
            tc_shm_lane_post(op->s->peer[q].lane, slot, op->tag, len);
            tc_shm_lane_unlock(op->s->peer[q].lane);
        }
        done_with(&op->posted, &op->ahead_posted, q);
    }
    if (!op->ready) {
        if ((st = own_part(op)) != TC_OK)
            return st;
        op->ready = 1;
    }
    /* Each message is released (and its lane let go) once used: holding one while waiting for
     * the next could wait on another thread's operation that waits for this lane. A fold takes
     * in rank order (every rank's result the same bits); the others take what has come. */
    if (folds(op)) {
        for (; op->taken < n; op->taken++)
            if ((st = fold_take(op, op->taken)) != TC_OK)
                return st == TC_INPROGRESS ? fold_ahead(op) : st;
    } else {
        int waiting = 0;
        for (int q = op->taken; q < n && q <= op->taken + TC_RT_SMALL_AHEAD; q++) {
            if (!to_look_at(op->taken, op->ahead_taken, q))
                continue;
            if (takes_from(op, q) && (st = take_use(op, q)) != TC_OK) {
                if (st != TC_INPROGRESS)
                    return st;
                waiting = 1;
                continue;
            }
            done_with(&op->taken, &op->ahead_taken, q);
        }
        if (waiting || op->taken < n)
            return TC_INPROGRESS;
    }
    if (op->posted < n)
        return TC_INPROGRESS; /* its own messages still wait for slots */
    if (folds(op) && op->call->op == TC_AVG)
        return tc_kern_scale_div(op->call->dtype, op->dst, op->call->count, n);
    return TC_OK;
}
