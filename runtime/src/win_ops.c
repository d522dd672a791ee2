/* Window operations: put, get, put with signal, signal (works of the
 * window's communicator that post one or two transport requests and run no
 * schedule). Every argument is checked at the origin before anything moves;
 * waiting for a signal and flush are win_wait.c's. */
#include <stdio.h>
#include <string.h>

#include "tcomms/base/copy.h"
#include "ft.h"
#include "obs.h"
#include "progress.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"
#include "win.h"

static const char *const win_op_names[] = {"win_put", "win_get", "win_put_signal", "win_signal"};

/* ---- the work of one operation ---- */

static int win_work_done(const tc_rt_work_t *w)
{
    for (int i = w->rma.ndone; i < w->rma.nreq; i++)
        if (__atomic_load_n(&w->rma.req[i].status, __ATOMIC_ACQUIRE) == TC_INPROGRESS)
            return 0;
    return 1;
}

/* "(8 bytes, rank 0 of 2 to rank 1)"; a batch: "(16 operations, 128 bytes, ...)". */
static void win_work_describe(const tc_rt_work_t *w, char *buf, size_t cap)
{
    char ops[32] = "";
    if (w->rma.nops > 1)
        snprintf(ops, sizeof(ops), "%d operations, ", w->rma.nops);
    snprintf(buf, cap, "(%s%zu bytes, rank %d of %d to rank %d)", ops, w->call.count, w->comm->rank,
             w->comm->size, w->rma.peer);
}

/* A request failed: the error names the operation and the target. */
static tc_status_t win_work_error(tc_rt_work_t *w, tc_status_t st)
{
    tc_rt_win_t *win = w->rma.win;
    tc_rt_comm_t *comm = w->comm;
    const tc_tp_ep_t *ep = win->peers[w->rma.peer].ep;
    if (st == TC_ERR_PEER_FAILED || (ep && ep->failed == TC_ERR_PEER_FAILED)) {
        st = TC_ERR_PEER_FAILED;
        w->failed_peer = tc_rt_world_rank(comm, w->rma.peer); /* named by the failure path */
    }
    char what[128], desc[128];
    win_work_describe(w, desc, sizeof(desc));
    return tc_error_set(st, "%s %s: %s", tc_rt_op_what(&w->op, what, sizeof(what)), desc,
                        ep && ep->failed != TC_OK ? tc_tp_ep_error(ep) : tc_status_string(st));
}

/* The requests that completed since the last pass (counted as changes), in order up to the
 * first still in progress; a failed one fails the work. Requests of one endpoint complete in
 * order or fail together (the endpoint's failure), so looking further finds nothing more. */
static int win_work_pass(tc_rt_work_t *w)
{
    int i = w->rma.ndone;
    tc_status_t st = TC_OK;
    while (i < w->rma.nreq &&
           (st = __atomic_load_n(&w->rma.req[i].status, __ATOMIC_ACQUIRE)) == TC_OK)
        i++;
    int changes = i - w->rma.ndone;
    w->rma.ndone = i;
    if (st != TC_OK && st != TC_INPROGRESS)
        return (int)win_work_error(w, st);
    return changes;
}

static void win_work_end(tc_rt_work_t *w, tc_status_t st)
{
    tc_rt_win_t *win = w->rma.win;
    tc_rt_world_t *world = w->comm->world;
    if (st != TC_OK && !win_work_done(w)) {
        /* an RMA request cannot be taken back: close the endpoint, which ends it */
        int wr = tc_rt_world_rank(w->comm, w->rma.peer);
        if (tc_rt_world_ep_get(world, wr) == win->peers[w->rma.peer].ep)
            tc_rt_world_ep_drop(world, wr);
    }
    int counted = w->rma.counted;
    if (counted) {
        w->rma.counted = 0; /* flush reads the counts unlocked */
        __atomic_fetch_sub(&win->pending, counted, __ATOMIC_ACQ_REL);
        __atomic_fetch_sub(&win->peers[w->rma.peer].pending, counted, __ATOMIC_ACQ_REL);
    }
    tc_rt_win_rec_ended(win, w);
}

static void win_work_awaited(const tc_rt_work_t *w, char *buf, size_t cap)
{
    snprintf(buf, cap, "%d", w->rma.peer); /* its target */
}

static const tc_rt_work_ops_t win_work_ops = {win_work_pass,     win_work_done,    win_work_end,
                                              win_work_describe, win_work_awaited, "window"};

void tc_rt_win_cancel(tc_rt_win_t *win, tc_status_t st, const char *why)
{
    tc_rt_world_t *world = win->comm->world;
    for (tc_rt_work_t *w = world->active, *next; w; w = next) {
        next = w->next;
        if (w->ops != &win_work_ops || w->rma.win != win)
            continue;
        char what[128];
        snprintf(w->error, sizeof(w->error), "%s (rank %d of %d to rank %d): %s",
                 tc_rt_op_what(&w->op, what, sizeof(what)), w->comm->rank, w->comm->size,
                 w->rma.peer, why);
        tc_rt_work_end(w, st);
        next = world->active; /* an endpoint may have closed: restart the walk */
    }
}

/* ---- issuing ---- */

static const char *win_fn(const tc_rt_win_op_t *op)
{
    return (unsigned)op->kind <= TC_RT_WIN_SIGNAL ? win_op_names[op->kind] : "win_op";
}

tc_status_t tc_rt_win_usable(tc_rt_win_t *win, const char *fn)
{
    tc_rt_comm_t *comm = win->comm;
    if (!comm || __atomic_load_n(&win->released, __ATOMIC_ACQUIRE))
        return tc_error_set(TC_ERR_INVALID_STATE,
                            "%s: the window's communicator was destroyed (tc_comm_destroy); "
                            "only tc_win_destroy is left to call",
                            fn);
    tc_rt_world_poll_events(comm->world);
    if (comm->broken != TC_OK)
        return tc_error_set(comm->broken,
                            "%s on comm '%s': the communicator is unusable since an earlier "
                            "failure: %s",
                            fn, comm->name, comm->broken_why);
    return TC_OK;
}

/* What is wrong with @p op against what its peer exposed: the rules once, for the direct path's
 * test (OP_OK: nothing) and for win_check's texts. */
enum { OP_OK = 0, OP_KIND, OP_PEER, OP_RANGE, OP_BUF, OP_SLOT, OP_SIG };
static inline int win_op_fault(const tc_rt_win_t *win, const tc_rt_win_op_t *op)
{
    unsigned kind = (unsigned)op->kind;
    if (kind > TC_RT_WIN_SIGNAL)
        return OP_KIND;
    if (op->peer < 0 || op->peer >= win->comm->size)
        return OP_PEER;
    size_t size = win->peers[op->peer].bytes;
    if (kind != TC_RT_WIN_SIGNAL && (op->offset > size || op->bytes > size - op->offset))
        return OP_RANGE;
    if (kind != TC_RT_WIN_SIGNAL && op->bytes && !op->buf)
        return OP_BUF;
    if (kind != TC_RT_WIN_SIGNAL && kind != TC_RT_WIN_PUT_SIGNAL)
        return OP_OK;
    if (op->slot < 0 || op->slot >= TC_RT_WIN_SLOTS)
        return OP_SLOT;
    return op->sig_op == TC_RT_WIN_ADD || op->sig_op == TC_RT_WIN_SET ? OP_OK : OP_SIG;
}

/* Peer, range, slot and buffer of @p op against what the peer exposed, with the text of what
 * is wrong. */
static tc_status_t win_check(const tc_rt_win_t *win, const tc_rt_win_op_t *op)
{
    const tc_rt_comm_t *comm = win->comm;
    switch (win_op_fault(win, op)) {
    case OP_OK:
        return TC_OK;
    case OP_KIND:
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: operation kind %d is unknown", win_fn(op),
                            op->kind);
    case OP_PEER:
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "%s: peer %d is not a rank of the window's communicator '%s' (size "
                            "%d)",
                            win_fn(op), op->peer, comm->name, comm->size);
    case OP_RANGE:
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "%s: %zu bytes at offset %llu are beyond rank %d's window of %zu "
                            "bytes",
                            win_fn(op), op->bytes, (unsigned long long)op->offset, op->peer,
                            win->peers[op->peer].bytes);
    case OP_BUF:
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: the local buffer is NULL with %zu bytes",
                            win_fn(op), op->bytes);
    case OP_SLOT:
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: signal slot %d is not in [0, %d)", win_fn(op),
                            op->slot, TC_RT_WIN_SLOTS);
    default:
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "%s: signal op %d is neither TC_WIN_SIGNAL_ADD nor "
                            "TC_WIN_SIGNAL_SET",
                            win_fn(op), op->sig_op);
    }
}

/* The endpoint the window's keys for @p peer were unpacked for, if the world still has it. */
static tc_status_t win_ep(tc_rt_win_t *win, int peer, const char *fn, tc_tp_ep_t **ep_p)
{
    tc_rt_comm_t *comm = win->comm;
    int wr = tc_rt_world_rank(comm, peer);
    tc_tp_ep_t *ep = tc_rt_world_ep_get(comm->world, wr);
    if (ep && ep == win->peers[peer].ep) {
        *ep_p = ep;
        return TC_OK;
    }
    const tc_rt_failed_t *f = tc_rt_world_failed(comm->world, wr);
    if (f) {
        char desc[160];
        tc_rt_comm_failed_describe(comm, f, desc, sizeof(desc));
        return tc_error_set(TC_ERR_PEER_FAILED, "%s: %s failed: %s", fn, desc, f->why);
    }
    return tc_error_set(TC_ERR_INVALID_STATE,
                        "%s: the connection to rank %d that the window was set up over was "
                        "closed (an earlier operation to it was cancelled)",
                        fn, peer);
}

/* The direct path (peer->direct): copy, then update the slot with a release
 * atomic, so that the target's acquire load of the slot sees the data. The
 * transports apply their signals to the same word with atomics too (self,
 * shm's cells and tcp at the target). Complete on return. */
static inline __attribute__((always_inline)) void win_direct(const tc_rt_win_peer_t *peer,
                                                             const tc_rt_win_op_t *op)
{
    if (op->bytes && op->kind != TC_RT_WIN_SIGNAL) {
        char *at = peer->direct + op->offset;
        if (op->kind == TC_RT_WIN_GET)
            tc_copy_any(op->buf, at, op->bytes); /* this rank's own window may overlap */
        else
            tc_copy_any(at, op->buf, op->bytes);
    }
    if (op->kind == TC_RT_WIN_SIGNAL || op->kind == TC_RT_WIN_PUT_SIGNAL) {
        uint64_t *word = &peer->direct_slots[op->slot];
        if (op->sig_op == TC_RT_WIN_SET)
            __atomic_store_n(word, op->value, __ATOMIC_RELEASE);
        else
            __atomic_fetch_add(word, op->value, __ATOMIC_RELEASE);
    }
}

/* @p op's timeout: its own, else its communicator's. */
static int64_t win_timeout_ms(const tc_rt_win_t *win, const tc_rt_win_op_t *op)
{
    return op->timeout_ms > 0 ? op->timeout_ms : win->comm->timeout_ms;
}

/* One more operation in flight to @p peer (flush reads the counts unlocked). */
static void win_pending_add(tc_rt_win_t *win, int peer)
{
    __atomic_fetch_add(&win->pending, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&win->peers[peer].pending, 1, __ATOMIC_RELAXED);
}

/* Post the requests of @p op; an error is set for the work. */
static tc_status_t win_post(tc_rt_work_t *w, tc_tp_ep_t *ep, const tc_rt_win_op_t *op)
{
    tc_rt_win_peer_t *peer = &w->rma.win->peers[op->peer];
    tc_status_t st = TC_OK;
    tc_tp_req_t init = TC_TP_REQ_INIT;
    if (peer->direct) {
        win_direct(peer, op); /* nothing pending: the work ends at once */
        return TC_OK;
    }
    if (op->bytes && op->kind != TC_RT_WIN_SIGNAL) {
        tc_tp_req_t *req = &w->rma.req[w->rma.nreq++];
        *req = init;
        st = op->kind == TC_RT_WIN_GET
                 ? tc_tp_get(ep, op->buf, op->bytes, peer->data, op->offset, req)
                 : tc_tp_put(ep, op->buf, op->bytes, peer->data, op->offset, req);
        if (st != TC_OK && req->status == TC_INPROGRESS)
            w->rma.nreq--; /* refused: nothing pending */
    }
    if (st == TC_OK && (op->kind == TC_RT_WIN_SIGNAL || op->kind == TC_RT_WIN_PUT_SIGNAL)) {
        int i = w->rma.nreq++;
        w->rma.req[i] = init;
        st = tc_tp_signal(ep, peer->slots, (uint64_t)op->slot * 8,
                          op->sig_op == TC_RT_WIN_SET ? TC_TP_SIGNAL_SET : TC_TP_SIGNAL_ADD,
                          op->value, &w->rma.req[i]);
        if (st != TC_OK && w->rma.req[i].status == TC_INPROGRESS)
            w->rma.nreq--;
    }
    return st == TC_OK ? TC_OK : win_work_error(w, st);
}

/* Lock held: start @p w for @p op. The result is the work's. A
 * fire-and-forget operation (@p ff) reads no clock: its flight-recorder times
 * are the burst's clock, and the first expiry pass after it sets its deadline
 * (so it never expires early; see tc_rt_works_expire). */
static void win_start(tc_rt_win_t *win, tc_rt_work_t *w, tc_tp_ep_t *ep, const tc_rt_win_op_t *op,
                      int async, int ff)
{
    tc_rt_comm_t *comm = win->comm;
    tc_tp_req_t *batch = w->rma.batch;
    w->ops = &win_work_ops;
    w->rma.win = win;
    w->rma.peer = op->peer;
    w->rma.kind = op->kind;
    w->rma.nops = 1;
    w->rma.nreq = w->rma.ndone = 0;
    w->rma.req = batch ? batch : w->rma.one;
    w->rma.counted = 1;
    if (batch)
        win->peers[op->peer].batch = w;
    win_pending_add(win, op->peer);
    w->op = (tc_rt_op_t){TC_COLL_COUNT, ++win->ops, comm->name, win_op_names[op->kind]};
    w->call = (tc_rt_coll_t){.coll = TC_COLL_COUNT,
                             .count = op->bytes,
                             .dtype = TC_UINT8,
                             .op = TC_SUM,
                             .root = op->peer};
    w->sched = w->main_sched = NULL;
    w->async = async;
    w->timeout_ms = win_timeout_ms(win, op);
    uint64_t now = ff ? win->burst_ns : tc_time_ns();
    w->deadline = ff ? 0 : tc_deadline_add_ms(now, (uint64_t)w->timeout_ms);
    w->rma.coarse_ns = ff ? now : 0;
    w->failed_peer = -1;
    w->start_ns = 0; /* not in the collectives' statistics and hooks */
    w->error[0] = '\0';
    w->result = TC_INPROGRESS;
    tc_rt_fr_begin(w, now);
    tc_rt_work_set_state(w, TC_RT_WORK_RUNNING);
    if (!tc_rt_work_link(w))
        return; /* the communicator broke since tc_rt_win_usable() */
    tc_status_t st = win_post(w, ep, op);
    if (st != TC_OK)
        tc_rt_work_fail(w, st); /* ends it, names a failed peer, breaks the communicator */
    else if (win_work_done(w))
        tc_rt_work_end(w, TC_OK); /* nothing to move, or it completed at once */
}

/* The pool record a fire-and-forget @p op joins, or NULL: the last one started to its peer, if
 * still running, of its kind and timeout, with room for its requests. */
static tc_rt_work_t *win_batch_open(tc_rt_win_t *win, const tc_rt_win_op_t *op)
{
    tc_rt_work_t *w = win->peers[op->peer].batch;
    int need = op->kind == TC_RT_WIN_PUT_SIGNAL ? 2 : 1;
    if (!w || tc_rt_work_get_state(w) != TC_RT_WORK_RUNNING || w->rma.win != win ||
        w->rma.peer != op->peer || w->rma.kind != op->kind ||
        w->rma.nreq + need > TC_RT_WIN_BATCH || w->timeout_ms != win_timeout_ms(win, op))
        return NULL;
    return w;
}

/* Lock held: @p op joins the running batch @p w. Its deadline is set again by the next expiry
 * pass, so that it counts from after this operation's start too (never early for any of
 * them; at most TC_RT_WIN_BATCH operations can push it back). A refusal fails the batch (its
 * endpoint is closed, as for any operation's), so its result is this call's too. */
static void win_batch_add(tc_rt_win_t *win, tc_rt_work_t *w, tc_tp_ep_t *ep,
                          const tc_rt_win_op_t *op)
{
    ++win->ops;
    w->deadline = 0;
    w->rma.nops++;
    w->rma.counted++;
    w->call.count += op->bytes;
    win_pending_add(win, op->peer);
    tc_status_t st = win_post(w, ep, op);
    if (st != TC_OK)
        tc_rt_work_fail(w, st);
}

/* The operation off the direct path: a work under the lock (kept out of line
 * so that the direct path's frame stays small). */
__attribute__((noinline)) static tc_status_t
win_issue_locked(tc_rt_win_t *win, const tc_rt_win_op_t *op, int flags, tc_rt_work_t **work_p)
{
    const char *fn = win_fn(op);
    tc_rt_comm_t *comm = win->comm;
    tc_rt_world_t *world = comm->world;
    int async = (flags & TC_RT_ASYNC) != 0;
    tc_rt_world_lock(world);
    tc_tp_ep_t *ep = NULL;
    tc_rt_work_t *w = NULL;
    tc_status_t st;
    if ((st = tc_rt_win_usable(win, fn)) != TC_OK || (st = win_ep(win, op->peer, fn, &ep)) != TC_OK)
        goto out;
    int ff = async && !work_p;
    if (ff) {
        tc_tp_defer(ep); /* the flush progresses it: the burst may go out whole, even its first */
        if ((w = win_batch_open(win, op))) {
            win_batch_add(win, w, ep, op); /* kept for the flush since it started */
            st = tc_rt_work_get_state(w) == TC_RT_WORK_RUNNING || w->result == TC_OK
                     ? TC_OK
                     : tc_error_set(w->result, "%s", w->error);
            goto out;
        }
        if (__atomic_load_n(&win->nff, __ATOMIC_RELAXED) == 0)
            win->burst_ns = tc_time_ns(); /* a burst begins: its one clock read */
        w = tc_rt_win_rec_take(win);
    } else if (work_p) {
        w = tc_rt_work_alloc(comm);
    }
    if (ff || work_p) {
        if (!w) {
            st = tc_error_set(TC_ERR_NO_MEMORY, "%s: work object", fn);
            goto out;
        }
    } else {
        w = win->inline_work;
        if (tc_rt_work_get_state(w) == TC_RT_WORK_RUNNING) {
            st = tc_error_set(TC_ERR_INVALID_STATE,
                              "%s: another blocking window operation is running on this "
                              "window in another thread",
                              fn);
            goto out;
        }
    }
    win_start(win, w, ep, op, async, ff);
    if (!async && tc_rt_work_get_state(w) == TC_RT_WORK_RUNNING &&
        tc_rt_work_wait_locked(w, 0) != TC_OK) {
        /* bounded by the work's own deadline: the result is the work's */
    }
    st = tc_rt_work_get_state(w) == TC_RT_WORK_RUNNING ? TC_OK : w->result;
    if (st != TC_OK)
        st = tc_error_set(st, "%s", w->error);
    if (st != TC_OK && w != win->inline_work) {
        /* ended: no work object for a failed call */
        if (ff)
            tc_rt_win_rec_give(win, w);
        else
            tc_rt_work_release(w);
        w = NULL;
    }
    if (st == TC_OK && work_p)
        *work_p = w;
    else if (st == TC_OK && ff && tc_rt_work_get_state(w) != TC_RT_WORK_RUNNING)
        tc_rt_win_rec_give(win, w); /* already complete */
    else if (st == TC_OK && ff)
        tc_rt_win_ff_keep(win, w); /* the next flush releases it */
out:
    tc_rt_world_unlock(world);
    return st;
}

/* A refused operation: the checks that say why (or, if it passes them now, a work under the
 * lock). */
__attribute__((noinline)) static tc_status_t
win_issue_slow(tc_rt_win_t *win, const tc_rt_win_op_t *op, int flags, tc_rt_work_t **work_p)
{
    if (!win->comm || __atomic_load_n(&win->released, __ATOMIC_ACQUIRE))
        return tc_rt_win_usable(win, win_fn(op));
    tc_status_t st = win_check(win, op);
    if (st != TC_OK)
        return st;
    return win_issue_locked(win, op, flags, work_p);
}

tc_status_t tc_rt_win_issue(tc_rt_win_t *win, const tc_rt_win_op_t *op, int flags,
                            tc_rt_work_t **work_p)
{
    /* the direct path: no lock, clock, work object or flight-recorder slot;
     * asynchronous without a work object too (complete on return). A broken
     * communicator takes the locked path, which says why. Only tail calls
     * leave it, so it saves no registers. The flags are read relaxed: set,
     * the locked path reads them again (win_usable) and the slow path with
     * their texts. */
    const tc_rt_comm_t *comm = win->comm;
    if (comm && !__atomic_load_n(&win->released, __ATOMIC_RELAXED) &&
        win_op_fault(win, op) == OP_OK) {
        const tc_rt_win_peer_t *peer = &win->peers[op->peer];
        if (!work_p && peer->direct && __atomic_load_n(&comm->broken, __ATOMIC_RELAXED) == TC_OK) {
            win_direct(peer, op);
            return TC_OK;
        }
        return win_issue_locked(win, op, flags, work_p); /* checked once */
    }
    return win_issue_slow(win, op, flags, work_p);
}
