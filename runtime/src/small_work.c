/* The small-message path's operations that are works (small.h): asynchronous ones, and blocking
 * ones whose caller wants a work object. They run on the lanes like the blocking calls of
 * small_issue.c, so every rank takes the path for an eligible call however it makes it, and the
 * ranks of one operation may differ in that (before, only blocking calls without a work object
 * took it, and a rank calling otherwise never met the others).
 *
 * Such a work has no schedule: its pass runs tc_rt_small_run as far as the lanes allow (what it
 * posts at issue lets the peers go on at once) and stops where a lane is not ready, to go on at
 * the next pass. Everything else is the work module's: the flight recorder and the statistics
 * (algorithm "shm_lanes"), hooks, the deadline, cancellation by abort or revoke, and a failed
 * peer named by the failure path. It holds no slot between passes, so an end at any point leaves
 * the lanes to the others; messages of it that arrive later are dropped as stale (small.c). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "small.h"
#include "work.h"

#define LANE_ALGO "shm_lanes"
/* A work that got nowhere this many passes in a row looks at the lanes (tc_rt_small_unblock):
 * each look walks every communicator's lanes */
#define SMALL_UNBLOCK_PASSES 64u

/* A work's lane state: allocated at its first lane operation, kept while it is a spare. */
struct tc_rt_lane_work {
    tc_rt_small_op_t op;
    tc_rt_work_t *work;
    int done;
    int general; /* the set-up turned the path off: the executor runs it (tc_rt_work_go_general) */
    uint64_t ticket; /* its place in the posting order (small.h) */
    int turn;        /* 0: waiting for its turn to post; 1: posting; 2: posted everything */
    unsigned stuck;  /* passes in a row that got nowhere */
    _Alignas(64) unsigned char keep[TC_SHM_LANE_PAYLOAD]; /* op.keep: any element type folds there */
};

/* A lane not ready (or another thread's turn on it): go on at the next pass, unless the peer
 * failed. The world's lock is held: the time to free slots no operation will read. */
static tc_status_t lane_later(tc_rt_small_op_t *op, int q, int what, void **slot_p)
{
    *slot_p = NULL;
    const tc_tp_ep_t *ep = op->s->peer[q].ep;
    if (what == TC_RT_SMALL_RX)
        tc_rt_small_drop_stale(op, q);
    if (ep->failed == TC_OK)
        return TC_INPROGRESS;
    struct tc_rt_lane_work *lw =
        (struct tc_rt_lane_work *)(void *)((char *)op - offsetof(struct tc_rt_lane_work, op));
    op->awaited = q;
    if (ep->failed == TC_ERR_PEER_FAILED)
        lw->work->failed_peer = tc_rt_world_rank(op->comm, q); /* named by the failure path */
    return tc_error_set(ep->failed, "rank %d: %s", q,
                        tc_tp_ep_error(ep)[0] ? tc_tp_ep_error(ep) : tc_status_string(ep->failed));
}

static void lane_describe(const tc_rt_work_t *w, char *buf, size_t cap)
{
    const char *algo = w->lane->general                            ? w->sched->algo
                       : w->lane->op.s->state == TC_RT_SMALL_SETUP ? "setting up " LANE_ALGO
                                                                   : LANE_ALGO;
    snprintf(buf, cap, "(%s, rank %d of %d)", algo, w->comm->rank, w->comm->size);
}

/* The rank the operation stopped at: posting to it (its reader has not freed a slot), or
 * taking from it. */
static void lane_awaited(const tc_rt_work_t *w, char *buf, size_t cap)
{
    const tc_rt_small_op_t *op = &w->lane->op;
    int n = w->comm->size;
    if (w->lane->general)
        tc_rt_exec_awaited(w, buf, cap);
    else if (op->s->state == TC_RT_SMALL_SETUP && op->s->vote &&
             tc_rt_work_get_state(op->s->vote) == TC_RT_WORK_RUNNING)
        tc_rt_exec_awaited(op->s->vote, buf, cap); /* the set-up's vote */
    else if (op->s->state == TC_RT_SMALL_SETUP)
        snprintf(buf, cap, "(the set-up)");
    else if (w->lane->turn == 0) /* op->posted is 0: no rank was posted to yet */
        snprintf(buf, cap, "none (an earlier operation of this communicator posts first)");
    else if (op->posted < n)
        snprintf(buf, cap, "%d (to read an earlier message)", op->posted);
    else
        snprintf(buf, cap, "%d", op->taken < n ? op->taken : -1);
}

/* An error of the operation, its text naming it. */
static int lane_error(tc_rt_work_t *w, tc_status_t st)
{
    char what[128], desc[96];
    lane_describe(w, desc, sizeof(desc));
    tc_error_prefix("%s %s: ", tc_rt_op_what(&w->op, what, sizeof(what)), desc);
    return (int)st;
}

/* The general path's pass (the set-up turned the path off). */
static int general_pass(tc_rt_work_t *w)
{
    int c = tc_rt_exec_pass(w);
    if (c < 0 || w->lane->done || !tc_rt_exec_done(w))
        return c;
    tc_status_t st = tc_rt_work_finish_avg(w);
    if (st != TC_OK)
        return (int)st;
    w->lane->done = 1;
    return c + 1;
}

/* The set-up this work waits for (begun by its call or an earlier one): 1 once it ended on,
 * 0 while it runs, or the error. Off, the work goes to the general path. */
static int lane_ready(tc_rt_work_t *w)
{
    tc_rt_small_t *s = w->lane->op.s;
    tc_status_t st;
    if (s->state == TC_RT_SMALL_SETUP && (st = tc_rt_small_setup_step(w->comm, s)) != TC_OK)
        return lane_error(w, st);
    if (s->state == TC_RT_SMALL_SETUP)
        return 0;
    if (s->state == TC_RT_SMALL_ON)
        return 1;
    if ((st = tc_rt_work_go_general(w)) != TC_OK)
        return lane_error(w, st);
    w->lane->general = 1;
    return 0;
}

/* The work posted all it posts (or ended while posting: its communicator is broken then): the
 * next one's turn. */
static void lane_posted(struct tc_rt_lane_work *lw)
{
    lw->turn = 2;
    __atomic_store_n(&lw->op.s->turn, lw->ticket + 1, __ATOMIC_RELEASE);
}

static int lane_pass(tc_rt_work_t *w)
{
    struct tc_rt_lane_work *lw = w->lane;
    if (lw->done)
        return 0;
    int ready = lw->general ? 0 : lane_ready(w);
    if (ready < 0)
        return ready;
    if (lw->general)
        return general_pass(w);
    if (!ready)
        return 0;
    tc_rt_small_op_t *op = &lw->op;
    /* until an earlier operation posted all, this one only takes (tc_rt_small_run) */
    if (lw->turn == 0 && __atomic_load_n(&op->s->turn, __ATOMIC_ACQUIRE) == lw->ticket)
        lw->turn = 1;
    /* another communicator's operation may have closed an endpoint holding our lanes since the
     * last pass (that one breaks its own communicator, not this one) */
    tc_status_t st = tc_rt_small_lanes_open(w->comm, op->s);
    if (st != TC_OK)
        return lane_error(w, st);
    int before = tc_rt_small_progress(op);
    st = tc_rt_small_run(op, lw->turn != 0);
    if (lw->turn == 1 && (op->posted >= w->comm->size || st != TC_INPROGRESS))
        lane_posted(lw);
    lw->stuck = st == TC_INPROGRESS && tc_rt_small_progress(op) == before ? lw->stuck + 1 : 0;
    if (lw->stuck % SMALL_UNBLOCK_PASSES == SMALL_UNBLOCK_PASSES - 1)
        tc_rt_small_unblock(w->comm->world); /* its peers may wait for slots this rank holds */
    if (st == TC_INPROGRESS)
        return tc_rt_small_progress(op) - before;
    if (st != TC_OK)
        return lane_error(w, st);
    lw->done = 1;
    return 1;
}

static int lane_done(const tc_rt_work_t *w)
{
    return w->lane->done;
}

static void lane_end(tc_rt_work_t *w, tc_status_t st)
{
    if (w->lane->turn == 1)
        lane_posted(w->lane);
    /* On the lanes no slot is held between passes, and what a failed operation posted that no
     * peer took is withdrawn; on the general path no request may point into the caller's
     * buffers after the end. */
    if (!w->lane->general) {
        tc_rt_small_withdraw(&w->lane->op, st);
        tc_rt_small_op_free(&w->lane->op);
    }
    if (w->lane->general && st != TC_OK)
        tc_rt_exec_abandon(w);
}

static const tc_rt_work_ops_t lane_ops = {lane_pass,     lane_done,    lane_end,
                                          lane_describe, lane_awaited, LANE_ALGO};

tc_status_t tc_rt_small_work(tc_rt_comm_t *comm, tc_rt_small_t *s, const tc_rt_coll_t *call,
                             size_t bytes, int flags, tc_rt_work_t **work_p)
{
    int async = (flags & TC_RT_ASYNC) != 0;
    tc_rt_op_t op = {call->coll, comm->seq + 1, comm->name, NULL};
    char what[128];
    tc_rt_work_t *w = tc_rt_work_alloc(comm);
    if (w && !w->lane && !(w->lane = malloc(sizeof(*w->lane)))) {
        tc_rt_work_release(w);
        w = NULL;
    }
    if (!w)
        return tc_error_set(TC_ERR_NO_MEMORY, "%s: work object", tc_rt_op_what(&op, what, 128));
    struct tc_rt_lane_work *lw = w->lane;
    w->ops = &lane_ops;
    w->call = *call;
    w->call.hints = NULL;
    op.seq = ++comm->seq;
    w->op = op;
    w->tag = tc_rt_coll_tag(comm->comm_id, call->coll, op.seq);
    lw->op = (tc_rt_small_op_t){.comm = comm,
                                .s = s,
                                .call = &w->call,
                                .bytes = bytes,
                                .seq = op.seq,
                                .tag = w->tag,
                                .awaited = -1,
                                .wait = lane_later,
                                .keep = lw->keep};
    lw->work = w;
    lw->done = 0;
    lw->general = 0;
    lw->ticket = s->tickets++;
    lw->turn = 0;
    lw->stuck = 0;
    tc_rt_work_begin(w, async, call->timeout_ms);
    if (tc_rt_work_link(w)) /* post at once: the peers need not wait for a progress pass */
        tc_rt_work_after_first(w, lane_pass(w));
    tc_status_t st = tc_rt_work_get_state(w) == TC_RT_WORK_RUNNING ? TC_OK : w->result;
    if (st != TC_OK)
        tc_error_set(st, "%s", w->error);
    *work_p = w;
    return st;
}

void tc_rt_small_work_free(tc_rt_work_t *w)
{
    free(w->lane);
    w->lane = NULL;
}
