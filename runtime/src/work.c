/* Work objects: issuing operations (collectives, point-to-point batches),
 * starting them, the public waits and tests; the running ones are
 * work_progress.c's.
 *
 * Every operation is a work. A blocking call without a work object uses the
 * communicator's inline work (no allocation); asynchronous and persistent
 * ones are allocated. Running works of every communicator of the world sit
 * in one list; whoever progresses (a blocking caller, a waiter, or the
 * progress thread) advances all of them, so a rank blocked in one operation
 * still serves the others. Operations of one communicator are matched by
 * their tags (issue order), so they may overlap. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comms.h"
#include "ft.h"
#include "obs.h"
#include "progress.h"
#include "small.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"

/* Start a prepared work: a fresh tag, its deadline, its state; it is running after. */
static tc_status_t work_start(tc_rt_work_t *w)
{
    tc_rt_comm_t *comm = w->comm;
    w->sched = w->main_sched;
    if (w->call.coll != TC_COLL_COUNT) {
        w->op.seq = ++comm->seq;
        w->tag = tc_rt_coll_tag(comm->comm_id, w->call.coll, w->op.seq);
    }
    tc_status_t st = TC_OK;
    if (comm->device >= 0 && w->call.coll != TC_COLL_COUNT)
        st = tc_rt_cuda_stage_in(w); /* device buffers: run on host copies */
    if (st == TC_OK)
        st = w->checking ? tc_rt_check_prepare(w) : tc_rt_exec_begin(w);
    if (st != TC_OK)
        return st;
    uint64_t now = tc_time_ns();
    w->deadline = tc_deadline_add_ms(now, (uint64_t)w->timeout_ms);
    w->failed_peer = -1;
    w->start_ns = now;
    tc_rt_fr_begin(w, now);
    tc_rt_stats_hook_before(w);
    tc_rt_work_set_state(w, TC_RT_WORK_RUNNING);
    w->result = TC_INPROGRESS;
    w->error[0] = '\0';
    tc_rt_work_link(w);
    return TC_OK;
}

static tc_status_t comm_usable(tc_rt_comm_t *comm, const char *what)
{
    tc_rt_world_poll_events(comm->world);
    if (comm->broken != TC_OK)
        return tc_error_set(comm->broken,
                            "%s on comm '%s': the communicator is unusable since "
                            "an earlier failure: %s",
                            what, comm->name, comm->broken_why);
    return TC_OK;
}

/* Copy the call's arrays: the work may outlive the caller's. */
static tc_status_t work_copy_arrays(tc_rt_work_t *w, const tc_rt_coll_t *call, int p)
{
    const size_t *src[6] = {call->counts, call->displs, NULL, NULL, NULL, NULL};
    int n = call->counts ? 2 : 0;
    if (call->sendcounts) {
        src[0] = call->sendcounts, src[1] = call->sdispls, src[2] = call->recvcounts,
        src[3] = call->rdispls;
        n = 4;
    }
    if (n == 0)
        return TC_OK;
    w->varr = calloc((size_t)n * (size_t)p, sizeof(uint64_t));
    if (!w->varr)
        return tc_error_set(TC_ERR_NO_MEMORY, "copying %d arrays of %d counts", n, p);
    for (int a = 0; a < n; a++) {
        uint64_t *dst = w->varr + (size_t)a * (size_t)p;
        if (src[a]) {
            for (int q = 0; q < p; q++)
                dst[q] = src[a][q];
        } else if (a == 1 || a == 3) { /* displacements left out: packed */
            uint64_t off = 0;
            for (int q = 0; q < p; q++) {
                dst[q] = off;
                off += w->varr[(size_t)(a - 1) * (size_t)p + q];
            }
        }
    }
    return TC_OK;
}

/* Released heap works a communicator keeps for its next operations, with their executors'
 * step arrays: once as many were in flight as the program keeps in flight,
 * an asynchronous operation allocates nothing. Beyond this many, released works are freed. */
#define WORK_SPARES 16

tc_rt_work_t *tc_rt_work_alloc(tc_rt_comm_t *comm)
{
    tc_rt_work_t *w = comm->spare;
    if (w) {
        comm->spare = w->cnext;
        comm->nspare--;
        tc_rt_exec_t ex = w->ex; /* emptied by tc_rt_exec_keep; its arrays stay */
        struct tc_rt_lane_work *lane = w->lane;
        memset(w, 0, sizeof(*w));
        w->ex = ex;
        w->lane = lane;
    } else if (!(w = calloc(1, sizeof(*w)))) {
        return NULL;
    }
    w->heap = 1;
    w->comm = comm;
    w->cnext = comm->works;
    if (comm->works)
        comm->works->cprev = w;
    comm->works = w;
    return w;
}

/* Free a work's memory (lock held; the work is not running). */
void tc_rt_work_release(tc_rt_work_t *w)
{
    tc_rt_comm_t *comm = w->comm;
    if (comm) {
        tc_rt_sched_release(w);
        if (w->cprev)
            w->cprev->cnext = w->cnext;
        else
            comm->works = w->cnext;
        if (w->cnext)
            w->cnext->cprev = w->cprev;
    }
    if (w->sched == &w->own)
        tc_sched_free(&w->own);
    free(w->varr);
    free(w->h_buf);
    free(w->step_tags); /* a work without them uses one tag (p2p batches set them) */
    if (comm && comm->nspare < WORK_SPARES) {
        tc_rt_exec_keep(&w->ex);
        w->cnext = comm->spare;
        comm->spare = w;
        comm->nspare++;
        return;
    }
    tc_rt_work_free_spare(w);
}

void tc_rt_work_free_spare(tc_rt_work_t *w)
{
    tc_rt_exec_free(&w->ex);
    tc_rt_small_work_free(w);
    free(w);
}

/* Lock the world; the first asynchronous operation starts the progress thread. */
static tc_status_t issue_lock(tc_rt_comm_t *comm, int flags)
{
    tc_rt_world_lock(comm->world);
    tc_status_t st = TC_OK;
    if ((flags & (TC_RT_ASYNC | TC_RT_PERSISTENT)) && !comm->world->threaded &&
        (st = tc_rt_world_go_threaded(comm->world)) != TC_OK)
        tc_rt_world_unlock(comm->world);
    return st;
}

/* Run or hand over a prepared work, per the flags; lock held. */
static tc_status_t issue_finish(tc_rt_work_t *w, int flags, tc_rt_work_t **work_p)
{
    tc_status_t st = TC_OK;
    if (flags & TC_RT_PERSISTENT) {
        *work_p = w;
        return TC_OK;
    }
    w->async = (flags & TC_RT_ASYNC) != 0;
    if ((st = work_start(w)) != TC_OK)
        goto fail;
    if (w->async) {
        *work_p = w;
        return TC_OK;
    }
    st = tc_rt_work_wait_locked(w, 0);
    if (st != TC_OK)
        tc_error_set(st, "%s", w->error);
    if (w->heap) {
        *work_p = w; /* a finished work object, as asked */
        return st;
    }
    return st;
fail:
    if (w->heap)
        tc_rt_work_release(w);
    else
        tc_rt_sched_release(w);
    return st;
}

tc_status_t tc_rt_work_go_general(tc_rt_work_t *w)
{
    const tc_rt_coll_t *c = &w->call;
    /* no algorithm runs all-to-all in place: stage the input, run out of place */
    w->stage_send = c->coll == TC_COLL_ALL_TO_ALL && c->sendbuf == c->recvbuf;
    tc_status_t st = tc_rt_plan_get(w->comm, w, NULL);
    if (st == TC_OK) {
        w->sched = w->main_sched;
        st = tc_rt_exec_begin(w);
    }
    if (st == TC_OK)
        tc_rt_fr_algo(w, w->sched->algo);
    return st;
}

/* @p name: the collective's, for messages. */
static tc_status_t coll_issue(tc_rt_comm_t *comm, const tc_rt_coll_t *call, int flags,
                              tc_rt_work_t **work_p, const char *name)
{
    tc_status_t st;
    if (!work_p && !(flags & (TC_RT_ASYNC | TC_RT_PERSISTENT))) {
        int fast = 0; /* on the lanes without the world's lock (small.h) */
        st = tc_rt_small_fast(comm, call, &fast);
        if (fast)
            return st;
    }
    st = issue_lock(comm, flags);
    if (st != TC_OK)
        return st;
    if ((st = comm_usable(comm, name)) != TC_OK)
        goto out;
    int small = 0; /* small, all ranks over shm, not persistent: the lanes (small.c) */
    if ((st = tc_rt_small_try(comm, call, flags, work_p, &small)) != TC_OK || small)
        goto out;
    char what[128];
    /* the v-forms by their own names, in errors and the flight recorder */
    const char *vname = call->sendcounts                       ? "all_to_all_v"
                        : !call->counts                        ? NULL
                        : call->coll == TC_COLL_REDUCE_SCATTER ? "reduce_scatter_v"
                                                               : "all_gather_v";
    tc_rt_op_t op = {call->coll, comm->seq + 1, comm->name, vname};
    tc_rt_work_t *w;
    if (work_p) {
        if (!(w = tc_rt_work_alloc(comm))) {
            st = tc_error_set(TC_ERR_NO_MEMORY, "%s: work object", tc_rt_op_what(&op, what, 128));
            goto out;
        }
    } else {
        w = &comm->inline_work;
        if (tc_rt_work_get_state(w) == TC_RT_WORK_RUNNING) {
            st = tc_error_set(TC_ERR_INVALID_STATE,
                              "%s: another blocking operation is running "
                              "on this communicator (calls on one communicator must not be "
                              "concurrent)",
                              tc_rt_op_what(&op, what, 128));
            goto out;
        }
        w->comm = comm;
        w->varr = NULL;
    }
    w->call = *call;
    w->call.hints = NULL;
    w->staged = 0;
    /* no algorithm runs all-to-all in place: stage the input, run out of place */
    w->stage_send =
        call->coll == TC_COLL_ALL_TO_ALL && !call->sendcounts && call->sendbuf == call->recvbuf;
    w->op = op;
    w->persistent = (flags & TC_RT_PERSISTENT) != 0;
    w->checking = comm->check && comm->size > 1;
    w->timeout_ms = call->timeout_ms > 0 ? call->timeout_ms : comm->timeout_ms;
    const char *algo = call->hints ? tc_hints_get(call->hints, "algo") : NULL;
    /* the communicator's, where this collective has an algorithm of that name; not for the
     * v-forms, which have fewer (all_to_all_v its own, all_gather_v no bruck) */
    if (!algo && !call->sendcounts && !call->counts)
        algo = tc_rt_comm_algo(comm, call->coll);
    if ((st = work_copy_arrays(w, call, comm->size)) != TC_OK ||
        (st = tc_rt_plan_get(comm, w, algo)) != TC_OK) {
        tc_error_prefix("%s: ", tc_rt_op_what(&op, what, sizeof(what)));
        if (w->heap)
            tc_rt_work_release(w);
        else
            free(w->varr);
        goto out;
    }
    st = issue_finish(w, flags, work_p);
    if (!w->heap) {
        free(w->varr);
        w->varr = NULL;
    }
out:
    /* work_release above frees heap works only, never the comm (nor its inline work) */
    /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): comm is not freed, see above */
    tc_rt_world_unlock(comm->world);
    return st;
}

tc_status_t tc_rt_coll_issue(tc_rt_comm_t *comm, const tc_rt_coll_t *call, int flags,
                             tc_rt_work_t **work_p)
{
    const char *name = tc_coll_name(call->coll);
    tc_status_t st = tc_rt_comm_enter(comm, name);
    if (st != TC_OK)
        return st;
    st = coll_issue(comm, call, flags, work_p, name);
    tc_rt_comm_leave(comm);
    return st;
}

tc_status_t tc_rt_coll_run(tc_rt_comm_t *comm, const tc_rt_coll_t *call)
{
    return tc_rt_coll_issue(comm, call, 0, NULL);
}

typedef struct {
    uint64_t sends, recvs;
} p2p_seq_t;

tc_status_t tc_rt_p2p_tag(tc_rt_comm_t *comm, int peer, int is_send, int take, uint64_t *tag_p)
{
    p2p_seq_t *seq = tc_hmap_get(&comm->p2p_seq, (uint64_t)peer);
    if (!seq) {
        tc_status_t st;
        if (!(seq = calloc(1, sizeof(*seq))))
            return tc_error_set(TC_ERR_NO_MEMORY, "point-to-point state of rank %d", peer);
        if ((st = tc_hmap_put(&comm->p2p_seq, (uint64_t)peer, seq)) != TC_OK) {
            free(seq);
            return st;
        }
    }
    uint64_t *n = is_send ? &seq->sends : &seq->recvs;
    *tag_p = tc_rt_tag(comm->comm_id, TC_RT_TAG_P2P, *n);
    *n += take != 0;
    return TC_OK;
}

/* A schedule of the batch in bytes: the send buffer is based at the lowest
 * send address and the receive buffer at the lowest receive address. */
static tc_status_t p2p_build(tc_rt_comm_t *comm, tc_rt_work_t *w, const tc_rt_p2p_t *ops, int n)
{
    char *base[2] = {NULL, NULL};
    for (int i = 0; i < n; i++) {
        char *b = ops[i].buf;
        int k = !ops[i].is_send;
        if (ops[i].count && (!base[k] || b < base[k]))
            base[k] = b;
    }
    tc_algo_args_t args = {
        .coll = TC_COLL_COUNT, .nranks = comm->size, .rank = comm->rank, .root = -1};
    /* a reused work keeps its arrays: no allocation in the steady state */
    tc_step_t *steps = w->own.steps;
    uint32_t cap = w->own.cap;
    tc_sched_init(&w->own, &args, "p2p");
    w->own.steps = steps;
    w->own.cap = cap;
    w->sched = w->main_sched = &w->own;
    if ((uint32_t)n > w->step_tags_cap) {
        uint64_t *tags = realloc(w->step_tags, (size_t)n * sizeof(uint64_t));
        if (!tags)
            return tc_error_set(TC_ERR_NO_MEMORY, "tags of %d messages", n);
        w->step_tags = tags;
        w->step_tags_cap = (uint32_t)n;
    }
    tc_status_t st = TC_OK;
    for (int i = 0; i < n && st == TC_OK; i++) {
        const tc_rt_p2p_t *o = &ops[i];
        uint64_t bytes = o->count * tc_dtype_size(o->dtype);
        int k = !o->is_send;
        uint64_t off = bytes ? (uint64_t)((char *)o->buf - base[k]) : 0;
        tc_step_t s = {.kind = o->is_send ? TC_STEP_SEND : TC_STEP_RECV,
                       .buf = TC_BUF_SEND,
                       .dst_buf = TC_BUF_RECV,
                       .peer = o->peer,
                       .off = o->is_send ? off : 0,
                       .dst_off = o->is_send ? 0 : off,
                       .count = bytes,
                       .dep = {TC_STEP_NO_DEP, TC_STEP_NO_DEP}};
        if (off + bytes > w->own.buf_count[k ? TC_BUF_RECV : TC_BUF_SEND])
            w->own.buf_count[k ? TC_BUF_RECV : TC_BUF_SEND] = off + bytes;
        if ((st = tc_sched_add(&w->own, &s, NULL)) == TC_OK)
            st = tc_rt_p2p_tag(comm, o->peer, o->is_send, 1, &w->step_tags[i]);
    }
    w->call.sendbuf = base[0];
    w->call.recvbuf = base[1];
    return st;
}

static tc_status_t p2p_issue(tc_rt_comm_t *comm, const tc_rt_p2p_t *ops, int n, int64_t timeout_ms,
                             int flags, tc_rt_work_t **work_p)
{
    tc_status_t st = issue_lock(comm, flags);
    if (st != TC_OK)
        return st;
    if ((st = comm_usable(comm, "send/recv")) != TC_OK)
        goto out;
    if (comm->device >= 0) {
        st = tc_error_set(TC_ERR_UNSUPPORTED,
                          "send/recv on comm '%s', bound to CUDA device "
                          "%d: device buffers are staged for collectives only",
                          comm->name, comm->device);
        goto out;
    }
    if ((st = tc_rt_any_check(comm, ops, n)) != TC_OK)
        goto out;
    if (n == 1 && ops[0].peer == TC_RT_ANY_SOURCE) { /* alone: tc_rt_any_check */
        st = tc_rt_any_issue(comm, &ops[0], timeout_ms, flags, work_p);
        goto out;
    }
    if (n == 1 && !(flags & TC_RT_PERSISTENT)) { /* no schedule needed */
        st = tc_rt_one_run(comm, &ops[0], timeout_ms, flags, work_p);
        goto out;
    }
    /* A batch owns its schedule and tags. Blocking without a work object: the
     * communicator's send/recv work, reused (its arrays only grow); else a
     * heap work (freed here when the caller wants none). */
    tc_rt_work_t *w;
    if (!(flags & TC_RT_ASYNC) && !work_p) {
        if (!comm->p2p_work && (comm->p2p_work = calloc(1, sizeof(*w))) != NULL) {
            comm->p2p_work->comm = comm;
            // cppcheck-suppress nullPointerRedundantCheck ; not NULL: the condition above
            comm->p2p_work->persistent = 1; /* keeps its schedule's steps between calls */
        }
        w = comm->p2p_work;
        if (w && tc_rt_work_get_state(w) == TC_RT_WORK_RUNNING) {
            st = tc_error_set(TC_ERR_INVALID_STATE,
                              "send/recv on comm '%s': another blocking "
                              "send/recv is running (calls on one communicator must not be "
                              "concurrent)",
                              comm->name);
            goto out;
        }
    } else {
        w = tc_rt_work_alloc(comm);
    }
    if (!w) {
        st = tc_error_set(TC_ERR_NO_MEMORY, "send/recv on comm '%s': work object", comm->name);
        goto out;
    }
    size_t bytes = 0; /* the batch's, as a single send's or receive's count (stats, hooks) */
    for (int i = 0; i < n; i++)
        bytes += ops[i].count * tc_dtype_size(ops[i].dtype);
    w->call = (tc_rt_coll_t){
        .coll = TC_COLL_COUNT, .count = bytes, .dtype = TC_UINT8, .op = TC_SUM, .root = -1};
    w->op = (tc_rt_op_t){TC_COLL_COUNT, ++comm->p2p_ops, comm->name, NULL};
    w->timeout_ms = timeout_ms > 0 ? timeout_ms : comm->timeout_ms;
    if ((st = p2p_build(comm, w, ops, n)) != TC_OK) {
        if (w->heap)
            tc_rt_work_release(w);
        goto out;
    }
    tc_rt_work_t *keep = NULL;
    st = issue_finish(w, flags & TC_RT_ASYNC, &keep);
    if (keep && work_p)
        *work_p = keep;
    else if (keep)
        tc_rt_work_release(keep);
out:
    tc_rt_world_unlock(comm->world);
    return st;
}

tc_status_t tc_rt_p2p_issue(tc_rt_comm_t *comm, const tc_rt_p2p_t *ops, int n, int64_t timeout_ms,
                            int flags, tc_rt_work_t **work_p)
{
    if (flags & TC_RT_ENTERED)
        return p2p_issue(comm, ops, n, timeout_ms, flags & ~TC_RT_ENTERED, work_p);
    tc_status_t st = tc_rt_comm_enter(comm, "send/recv");
    if (st != TC_OK)
        return st;
    st = p2p_issue(comm, ops, n, timeout_ms, flags, work_p);
    tc_rt_comm_leave(comm);
    return st;
}

tc_status_t tc_rt_work_start(tc_rt_work_t *w)
{
    if (!w->comm)
        return tc_error_set(TC_ERR_INVALID_STATE, "its communicator was destroyed");
    tc_rt_comm_t *comm = w->comm;
    tc_status_t st = tc_rt_comm_enter(comm, tc_coll_name(w->call.coll));
    if (st != TC_OK)
        return st;
    tc_rt_world_lock(comm->world);
    char what[128];
    if (!w->persistent)
        st = tc_error_set(TC_ERR_INVALID_STATE, "%s is not persistent",
                          tc_rt_op_what(&w->op, what, sizeof(what)));
    else if (tc_rt_work_get_state(w) == TC_RT_WORK_RUNNING)
        st = tc_error_set(TC_ERR_INVALID_STATE, "%s is still running",
                          tc_rt_op_what(&w->op, what, sizeof(what)));
    else if ((st = comm_usable(w->comm, tc_coll_name(w->call.coll))) == TC_OK) {
        w->async = 1;
        st = work_start(w);
    }
    tc_rt_world_unlock(comm->world);
    tc_rt_comm_leave(comm);
    return st;
}

tc_status_t tc_rt_work_wait(tc_rt_work_t *w, int64_t timeout_ms)
{
    if (tc_rt_work_get_state(w) != TC_RT_WORK_RUNNING) {
        if (tc_rt_work_get_state(w) == TC_RT_WORK_IDLE)
            return tc_error_set(TC_ERR_INVALID_STATE, "the persistent work was never "
                                                      "started");
        return w->result == TC_OK ? TC_OK : tc_error_set(w->result, "%s", w->error);
    }
    tc_rt_world_lock(w->comm->world);
    uint64_t until = timeout_ms >= 0 ? tc_deadline_after_ms((uint64_t)timeout_ms) : 0;
    if (timeout_ms == 0)
        until = tc_time_ns();
    tc_status_t st = tc_rt_work_wait_locked(w, until);
    int running = tc_rt_work_get_state(w) == TC_RT_WORK_RUNNING;
    tc_rt_world_unlock(w->comm->world);
    char what[128];
    if (running)
        return tc_error_set(TC_ERR_TIMEOUT, "work wait: %s still running after %lld ms",
                            tc_rt_op_what(&w->op, what, sizeof(what)), (long long)timeout_ms);
    return st == TC_OK ? TC_OK : tc_error_set(st, "%s", w->error);
}

tc_status_t tc_rt_work_test(tc_rt_work_t *w, int *done_p)
{
    if (tc_rt_work_get_state(w) == TC_RT_WORK_RUNNING) {
        tc_rt_world_lock(w->comm->world);
        if (tc_rt_work_get_state(w) == TC_RT_WORK_RUNNING)
            tc_rt_world_progress(w->comm->world);
        tc_rt_world_unlock(w->comm->world);
    }
    if (tc_rt_work_get_state(w) == TC_RT_WORK_IDLE) /* as tc_rt_work_wait says */
        return tc_error_set(TC_ERR_INVALID_STATE, "the persistent work was never started");
    *done_p = tc_rt_work_get_state(w) != TC_RT_WORK_RUNNING;
    if (!*done_p)
        return TC_INPROGRESS;
    return w->result == TC_OK ? TC_OK : tc_error_set(w->result, "%s", w->error);
}

void tc_rt_work_state(const tc_rt_work_t *w, int *running_p, int *started_p, tc_status_t *result_p)
{
    *running_p = tc_rt_work_get_state(w) == TC_RT_WORK_RUNNING;
    *started_p = tc_rt_work_get_state(w) != TC_RT_WORK_IDLE;
    *result_p = w->result;
}

const char *tc_rt_work_error(const tc_rt_work_t *w)
{
    return w->result == TC_OK || w->result == TC_INPROGRESS ? "" : w->error;
}

tc_status_t tc_rt_work_free(tc_rt_work_t *w)
{
    if (!w->comm) { /* detached when its communicator was destroyed */
        tc_rt_work_release(w);
        return TC_OK;
    }
    tc_rt_world_t *world = w->comm->world;
    tc_rt_world_lock(world);
    tc_status_t st = TC_OK;
    if (tc_rt_work_get_state(w) == TC_RT_WORK_RUNNING)
        st = tc_rt_work_wait_locked(w, 0);
    tc_rt_work_release(w);
    tc_rt_world_unlock(world);
    return st == TC_OK || st == TC_INPROGRESS ? TC_OK : st;
}
