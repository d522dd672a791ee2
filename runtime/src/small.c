/* The small-message path's collectives on the lanes (small.h, docs/runtime.md; the path's
 * state, its lanes and their housekeeping are small_lanes.c's).
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
#include <stdlib.h>
#include <string.h>

#include "small.h"
#include "tcomms/base/copy.h"
#include "tcomms/kernels/reduce.h"

/* Rank @p q withdrew its message of this operation: its own call of it failed. */
static tc_status_t small_withdrawn(int q)
{
    return tc_error_set(
        TC_ERR_ABORTED,
        "rank %d withdrew its part: its call of this operation ended in error (a "
        "timeout, a count that differs from another rank's, an abort or a revoke there)",
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

/* Post rank @p q's part @p src (@p len bytes): a free slot waited for (TC_INPROGRESS from an
 * asynchronous operation's wait). */
static tc_status_t post(tc_rt_small_op_t *op, int q, const unsigned char *src, size_t len)
{
    tc_status_t st = TC_OK;
    tc_shm_lane_slot_t *slot = tc_rt_small_tx(op, q, len, &st);
    if (!slot)
        return st;
    if (len)
        tc_copy(slot->data, src, len);
    tc_shm_lane_post(op->s->peer[q].lane, slot, op->tag, len);
    tc_shm_lane_unlock(op->s->peer[q].lane);
    return TC_OK;
}

/* The end of a round: an average divides the sum. */
static tc_status_t finish(tc_rt_small_op_t *op)
{
    if (folds(op) && op->call->op == TC_AVG)
        return tc_kern_scale_div(op->call->dtype, op->dst, op->call->count, op->comm->size);
    return TC_OK;
}

tc_status_t tc_rt_small_run_blocking(tc_rt_small_op_t *op)
{
    int n = op->comm->size, me = op->comm->rank;
    size_t len = op->call->coll == TC_COLL_BARRIER ? 0 : op->bytes;
    tc_status_t st;
    for (; op->posted < n; op->posted++) {
        int q = op->posted;
        const unsigned char *src = q == me ? NULL : part_to(op, q);
        if (src && (st = post(op, q, src, len)) != TC_OK)
            return st;
    }
    if ((st = own_part(op)) != TC_OK)
        return st;
    op->ready = 1;
    int fold = folds(op);
    for (; op->taken < n; op->taken++) {
        int q = op->taken;
        st = fold ? fold_take(op, q) : takes_from(op, q) ? take_use(op, q) : TC_OK;
        if (st != TC_OK)
            return st;
    }
    return finish(op);
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
        if (src && (st = post(op, q, src, len)) != TC_OK) {
            if (st != TC_INPROGRESS || !early)
                return st;
            continue; /* it takes what it can meanwhile: its peers' slots free up */
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
    return finish(op);
}
