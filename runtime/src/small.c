/* The small-message path (small.h, docs/runtime.md): when it applies, how it
 * is set up, and the collectives on the lanes.
 *
 * Every collective is one round: each rank first posts what it sends (one
 * lane message per destination, at most TC_SMALL_MAX bytes), then takes what
 * it receives, rank by rank. Posting everything before receiving anything
 * makes in-place calls safe (the input is in the lanes before the output is
 * written) and cannot deadlock: a post waits only for a slot its reader
 * frees by reading an older message. Reductions fold the contributions in
 * rank order, ((x0 op x1) op x2) ..., so every rank gets the same bits.
 * Cost: 1 step; a rank sends and receives at most (p - 1) messages of n/p
 * (all-to-all, reduce-scatter, all-gather) or n bytes (the others). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

tc_status_t tc_rt_small_make(tc_rt_comm_t *comm, tc_rt_small_t **s_p)
{
    tc_rt_small_t *s = calloc(1, sizeof(*s));
    if (!s)
        return tc_error_set(TC_ERR_NO_MEMORY, "comm '%s': small-message path", comm->name);
    int64_t max;
    tc_status_t st =
        tc_config_int("TC_SMALL_MAX", TC_SHM_LANE_PAYLOAD, 0, TC_SHM_LANE_PAYLOAD, &max);
    if (st != TC_OK) {
        free(s);
        return st;
    }
    s->max = (size_t)max;
    s->state = small_static_ok(comm, s) ? TC_RT_SMALL_UNKNOWN : TC_RT_SMALL_OFF;
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
    free(comm->small->peer);
    free(comm->small);
    comm->small = NULL;
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
        tc_status_t st = tc_rt_world_ep(world, tc_rt_world_rank(comm, q), deadline, &s->peer[q].ep);
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
        tc_status_t st = tc_tp_shm_ep_lane(s->peer[q].ep, &s->peer[q].lane);
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

/* Post @p len bytes of @p src to rank @p q; the slot's payload is returned in *data_p. */
static tc_status_t post(tc_rt_small_op_t *op, int q, const void *src, size_t len,
                        const void **data_p)
{
    tc_status_t st = TC_OK;
    tc_shm_lane_slot_t *slot = tc_rt_small_tx(op, q, len, &st);
    if (st != TC_OK)
        return st;
    if (len)
        memcpy(slot->data, src, len);
    tc_shm_lane_post(op->s->peer[q].lane, slot, op->tag, len);
    if (data_p)
        *data_p = slot->data;
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
        if (c->comm_id == id)
            return c->broken != TC_OK;
    /* an id retired clean may serve a communicator a peer made already; a spoilt one never */
    return tc_rt_ids_spoilt(world, (uint32_t)id);
}

/* Release the messages of rank @p q that no operation will read (small_stale): they would
 * hold slots the peer needs. */
static void drop_stale(tc_rt_small_op_t *op, int q)
{
    tc_tp_shm_lane_t *lane = op->s->peer[q].lane;
    for (unsigned i = 0; i < TC_SHM_LANE_SLOTS; i++) {
        const tc_shm_lane_slot_t *slot = tc_shm_lane_pending(lane, i);
        if (slot && slot->tag != op->tag && small_stale(op, slot->tag))
            tc_shm_lane_release(lane, slot);
    }
}

/* The message of this operation from rank @p q (released by the caller). Messages of
 * other communicators (other threads' operations) may sit in other slots meanwhile. */
static tc_status_t take(tc_rt_small_op_t *op, int q, const tc_shm_lane_slot_t **slot_p)
{
    tc_status_t st = TC_OK;
    const tc_shm_lane_slot_t *slot = tc_shm_lane_find(op->s->peer[q].lane, op->tag);
    if (!slot) { /* not there yet: the time to free slots no operation will read */
        drop_stale(op, q);
        if (!(slot = tc_rt_small_rx(op, q, &st)))
            return st;
    }
    size_t len = op->call->coll == TC_COLL_BARRIER ? 0 : op->bytes;
    if (slot->len != len) {
        op->awaited = q;
        return tc_error_set(TC_ERR_MISMATCH,
                            "rank %d contributed %llu bytes, this rank expects %zu (the ranks "
                            "disagree on count or type)",
                            q, (unsigned long long)slot->len, len);
    }
    *slot_p = slot;
    return TC_OK;
}

/* Post the same @p len bytes of @p src to every peer (or to @p only when >= 0). */
static tc_status_t post_all(tc_rt_small_op_t *op, const void *src, size_t len)
{
    for (int q = 0; q < op->comm->size; q++) {
        tc_status_t st;
        if (q != op->comm->rank && (st = post(op, q, src, len, NULL)) != TC_OK)
            return st;
    }
    return TC_OK;
}

/* Post block q of @p src (blocks of op->bytes) to every peer q. */
static tc_status_t post_blocks(tc_rt_small_op_t *op, const unsigned char *src)
{
    for (int q = 0; q < op->comm->size; q++) {
        tc_status_t st;
        if (q != op->comm->rank &&
            (st = post(op, q, src + (size_t)q * op->bytes, op->bytes, NULL)) != TC_OK)
            return st;
    }
    return TC_OK;
}

/* Take every peer's message into block q of @p dst (NULL: just take, barrier). */
static tc_status_t take_blocks(tc_rt_small_op_t *op, unsigned char *dst)
{
    for (int q = 0; q < op->comm->size; q++) {
        const tc_shm_lane_slot_t *slot;
        if (q == op->comm->rank)
            continue;
        tc_status_t st = take(op, q, &slot);
        if (st != TC_OK)
            return st;
        if (dst)
            memcpy(dst + (size_t)q * op->bytes, slot->data, op->bytes);
        tc_shm_lane_release(op->s->peer[q].lane, slot);
    }
    return TC_OK;
}

/* Take every peer's contribution (@p mine is this rank's) and fold them into @p dst in rank
 * order: dst = x0 op x1, then dst = dst op x2, ... (AVG: sum, then divide). */
static tc_status_t take_fold(tc_rt_small_op_t *op, const void *mine, void *dst)
{
    const tc_rt_coll_t *c = op->call;
    int n = op->comm->size, me = op->comm->rank;
    unsigned char keep[TC_SHM_LANE_PAYLOAD];
    if (!mine || !dst)
        return tc_error_set(TC_ERR_INTERNAL, "small-message path: a fold without its buffers");
    if (mine == dst && me >= 1) { /* in place: the input would be overwritten first */
        memcpy(keep, mine, op->bytes);
        mine = keep;
    }
    /* Fold in rank order (every rank gets the same bits), releasing each message once
     * folded: holding one while waiting for the next could wait on another thread's
     * operation that waits for this lane. */
    tc_redop_t rop = c->op == TC_AVG ? TC_SUM : c->op;
    tc_status_t st = TC_OK;
    for (int q = 0; q < n && st == TC_OK; q++) {
        const tc_shm_lane_slot_t *slot = NULL;
        if (q != me && (st = take(op, q, &slot)) != TC_OK)
            break;
        const unsigned char *data = slot ? slot->data : (const unsigned char *)mine;
        if (q == 0) {
            if (data != dst)
                memcpy(dst, data, op->bytes);
        } else {
            st = tc_kern_reduce(c->dtype, rop, dst, dst, data, c->count);
        }
        if (slot)
            tc_shm_lane_release(op->s->peer[q].lane, slot);
    }
    if (st == TC_OK && c->op == TC_AVG)
        st = tc_kern_scale_div(c->dtype, dst, c->count, n);
    return st;
}

tc_status_t tc_rt_small_run(tc_rt_small_op_t *op)
{
    const tc_rt_coll_t *c = op->call;
    int me = op->comm->rank, root = c->root;
    size_t b = op->bytes;
    int in_place = c->sendbuf == c->recvbuf;
    unsigned char *out = c->recvbuf;
    const unsigned char *in = c->sendbuf;
    const void *posted = NULL;
    const tc_shm_lane_slot_t *got;
    tc_status_t st;
    switch (c->coll) {
    case TC_COLL_BARRIER:
        return (st = post_all(op, NULL, 0)) != TC_OK ? st : take_blocks(op, NULL);
    case TC_COLL_ALL_REDUCE:
        for (int q = 0; q < op->comm->size; q++)
            if (q != me && (st = post(op, q, in, b, &posted)) != TC_OK)
                return st;
        /* in place, the copy in the lanes stays intact while the output is written */
        return take_fold(op, in_place ? posted : in, out);
    case TC_COLL_REDUCE:
        if (me != root)
            return post(op, root, in, b, NULL);
        return take_fold(op, in, out);
    case TC_COLL_BROADCAST:
        if (me == root)
            return post_all(op, in, b);
        if ((st = take(op, root, &got)) != TC_OK)
            return st;
        memcpy(out, got->data, b);
        tc_shm_lane_release(op->s->peer[root].lane, got);
        return TC_OK;
    case TC_COLL_ALL_GATHER:
        in = in_place ? out + (size_t)me * b : in;
        if ((st = post_all(op, in, b)) != TC_OK)
            return st;
        tc_kern_copy(out + (size_t)me * b, in, b);
        return take_blocks(op, out);
    case TC_COLL_REDUCE_SCATTER:
        if ((st = post_blocks(op, in)) != TC_OK)
            return st;
        return take_fold(op, in + (size_t)me * b, in_place ? out + (size_t)me * b : out);
    case TC_COLL_ALL_TO_ALL:
        if ((st = post_blocks(op, in)) != TC_OK)
            return st;
        tc_kern_copy(out + (size_t)me * b, in + (size_t)me * b, b);
        return take_blocks(op, out);
    case TC_COLL_GATHER:
        if (me != root)
            return post(op, root, in, b, NULL);
        if (!in_place)
            memcpy(out + (size_t)me * b, in, b);
        for (int q = 0; q < op->comm->size; q++) {
            if (q == me)
                continue;
            if ((st = take(op, q, &got)) != TC_OK)
                return st;
            memcpy(out + (size_t)q * b, got->data, b);
            tc_shm_lane_release(op->s->peer[q].lane, got);
        }
        return TC_OK;
    case TC_COLL_SCATTER:
        if (me == root) {
            if ((st = post_blocks(op, in)) != TC_OK)
                return st;
            if (!in_place)
                memcpy(out, in + (size_t)me * b, b);
            return TC_OK;
        }
        if ((st = take(op, root, &got)) != TC_OK)
            return st;
        memcpy(out, got->data, b);
        tc_shm_lane_release(op->s->peer[root].lane, got);
        return TC_OK;
    default:
        return tc_error_set(TC_ERR_INTERNAL, "small-message path: collective %d", (int)c->coll);
    }
}
