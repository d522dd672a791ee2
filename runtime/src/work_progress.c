/* Running works: the world's list of them, one pass over it (the progress
 * module's "advance" hook), deadlines ("expire"), waiting for one, and the
 * one path by which a work ends, whether it completed, failed, timed out,
 * was cancelled or refused by TC_CHECK. */
#include <stdio.h>
#include <stdlib.h>

#include "comms.h"
#include "ft.h"
#include "obs.h"
#include "progress.h"
#include "small.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"
#include "tcomms/kernels/reduce.h"

bool tc_rt_work_link(tc_rt_work_t *w)
{
    tc_rt_comm_t *comm = w->comm;
    tc_rt_world_t *world = comm->world;
    w->prev = NULL;
    w->next = world->active;
    if (world->active)
        world->active->prev = w;
    world->active = w;
    world->links++;
    if (w->async && world->nasync++ == 0)
        pthread_cond_signal(&world->cv);
    /* Breaking a communicator ends the works linked then: one linked after (a failure learnt
     * since its caller looked, as while the small-message path's lanes connect before its
     * vote) ends here, or it would wait for the failed rank until its deadline. A tolerant
     * work (the shrink's agreement) runs on. */
    if (w->tolerant || comm->broken == TC_OK)
        return true;
    snprintf(w->error, sizeof(w->error), "%s", comm->broken_why);
    tc_rt_work_end(w, comm->broken);
    return false;
}

void tc_rt_work_begin(tc_rt_work_t *w, int async, int64_t timeout_ms)
{
    w->async = async;
    w->timeout_ms = timeout_ms > 0 ? timeout_ms : w->comm->timeout_ms;
    uint64_t now = tc_time_ns();
    w->deadline = tc_deadline_add_ms(now, (uint64_t)w->timeout_ms);
    w->failed_peer = -1;
    w->start_ns = now;
    w->error[0] = '\0';
    w->result = TC_INPROGRESS;
    tc_rt_fr_begin(w, now);
    tc_rt_stats_hook_before(w);
    tc_rt_work_set_state(w, TC_RT_WORK_RUNNING);
}

void tc_rt_work_after_first(tc_rt_work_t *w, int c)
{
    if (c < 0) {
        tc_rt_work_fail(w, (tc_status_t)c);
    } else if (w->ops->done(w)) {
        tc_rt_work_end(w, TC_OK);
    } else if (!w->async) {
        tc_status_t ignored = tc_rt_work_wait_locked(w, 0); /* bounded by its deadline */
        (void)ignored;                                      /* the result is the work's */
    }
}

void tc_rt_work_unlink(tc_rt_work_t *w)
{
    tc_rt_world_t *world = w->comm->world;
    if (w->prev)
        w->prev->next = w->next;
    else
        world->active = w->next;
    if (w->next)
        w->next->prev = w->prev;
    w->next = w->prev = NULL;
    if (w->async)
        world->nasync--;
}

void tc_rt_sched_release(tc_rt_work_t *work)
{
    if (work->entry) {
        work->entry->users--;
        work->entry = NULL;
    }
    if (!work->persistent) { /* a persistent work keeps its schedule for the next start */
        tc_sched_free(&work->own);
        work->main_sched = NULL;
        work->sched = NULL;
    }
    tc_rt_check_free(work);
}

void tc_rt_work_end(tc_rt_work_t *w, tc_status_t st)
{
    /* the one clock read of the end, for both records; internal exchanges have
     * neither; a fire-and-forget window operation reads none (its burst's
     * clock, or the progress's last read if later) */
    uint64_t now = 0;
    if (w->ops && w->rma.coarse_ns)
        now = w->rma.coarse_ns > w->comm->world->now_ns ? w->rma.coarse_ns : w->comm->world->now_ns;
    else if (w->start_ns || w->fr_id)
        now = tc_time_ns();
    tc_rt_fr_end(w, st, now);
    tc_rt_stats_end(w, st, now);
    if (st != TC_OK)
        w->comm->spoilt = 1; /* a peer's messages of it may still come: its id is not reused */
    if (w->ops)
        w->ops->end(w, st); /* a window's operation: its requests */
    else if (st != TC_OK)
        tc_rt_exec_abandon(w); /* no request may still point into the caller's buffers */
    tc_rt_work_unlink(w);
    tc_rt_sched_release(w);
    w->result = st;
    tc_rt_work_set_state(w, TC_RT_WORK_DONE);
}

tc_status_t tc_rt_work_finish_avg(tc_rt_work_t *w)
{
    const tc_rt_coll_t *c = &w->call;
    if (c->op != TC_AVG || (c->coll != TC_COLL_ALL_REDUCE && c->coll != TC_COLL_REDUCE &&
                            c->coll != TC_COLL_REDUCE_SCATTER))
        return TC_OK;
    tc_algo_args_t args = {.coll = c->coll,
                           .nranks = w->comm->size,
                           .rank = w->comm->rank,
                           .root = c->root,
                           .count = c->count,
                           .in_place = c->sendbuf == c->recvbuf,
                           .counts = c->counts ? w->varr : NULL,
                           .displs = c->displs ? w->varr + w->comm->size : NULL};
    tc_algo_layout_t lay;
    tc_status_t st = tc_algo_layout(&args, &lay);
    if (st == TC_OK && lay.out_count)
        st = tc_kern_scale_div(c->dtype, (char *)c->recvbuf + lay.out_off * w->ex.esize,
                               lay.out_count, w->comm->size);
    return st;
}

/* Every step is done: the last touches (AVG, a device's copy back), then the end. */
static void work_complete(tc_rt_work_t *w)
{
    tc_status_t st = tc_rt_work_finish_avg(w);
    if (st == TC_OK && w->staged)
        st = tc_rt_cuda_stage_out(w);
    if (st != TC_OK)
        snprintf(w->error, sizeof(w->error), "%s", tc_last_error());
    tc_rt_work_end(w, st);
}

void tc_rt_work_fail(tc_rt_work_t *w, tc_status_t st)
{
    tc_rt_comm_t *comm = w->comm;
    tc_rt_world_t *world = comm->world;
    const tc_rt_failed_t *f = NULL;
    if (w->failed_peer >= 0) {
        /* name the failed rank with its host and pid, and tell the others */
        char why[256], desc[160];
        snprintf(why, sizeof(why), "%s", tc_last_error());
        f = tc_rt_world_note_failure(world, w->failed_peer, why, 1);
        if (f) {
            tc_rt_comm_failed_describe(comm, f, desc, sizeof(desc));
            tc_error_set(st, "%s; %s failed", why, desc);
        }
    }
    snprintf(w->error, sizeof(w->error), "%s", tc_last_error());
    tc_log_error(TC_SUBSYS_RUNTIME, "%s", w->error);
    tc_rt_work_end(w, st);
    if (comm->broken == TC_OK) {
        __atomic_store_n(&comm->broken, st, __ATOMIC_RELEASE);
        snprintf(comm->broken_why, sizeof(comm->broken_why), "%s", w->error);
        /* the others of this communicator cannot complete consistently either */
        tc_rt_comm_cancel_works(comm, st, comm->broken_why);
    }
    if (f)
        world->hooks.failed(world, f);
    tc_rt_fr_dump_auto(comm, st == TC_ERR_TIMEOUT ? "timeout" : "error", st);
}

void tc_rt_comm_cancel_works(tc_rt_comm_t *comm, tc_status_t st, const char *why)
{
    tc_rt_world_t *world = comm->world;
    for (tc_rt_work_t *w = world->active, *next; w; w = next) {
        next = w->next;
        /* a tolerant work (the shrink's agreement) outlives failures, not an abort */
        if (w->comm != comm || (w->tolerant && st != TC_ERR_ABORTED))
            continue;
        char what[128], desc[128];
        if (w->ops) { /* a window's operation, a receive from any source */
            w->ops->describe(w, desc, sizeof(desc));
            snprintf(w->error, sizeof(w->error), "%s %s: %s",
                     tc_rt_op_what(&w->op, what, sizeof(what)), desc, why);
        } else
            snprintf(w->error, sizeof(w->error), "%s (%s, rank %d of %d, at step %u of %u): %s",
                     tc_rt_op_what(&w->op, what, sizeof(what)), w->sched ? w->sched->algo : "?",
                     comm->rank, comm->size, w->ex.first, w->sched ? w->sched->nsteps : 0, why);
        tc_rt_work_end(w, st);
        next = world->active; /* abandon may have closed endpoints: restart the walk */
    }
}

static void work_timeout(tc_rt_work_t *w)
{
    char awaited[160], what[128];
    if (w->ops) { /* a window's operation, a receive from any source */
        char desc[128];
        w->ops->describe(w, desc, sizeof(desc));
        w->ops->awaited(w, awaited, sizeof(awaited));
        tc_rt_work_fail(w, tc_error_set(TC_ERR_TIMEOUT,
                                        "%s %s: timed out after %lld ms; waiting for rank(s) %s",
                                        tc_rt_op_what(&w->op, what, sizeof(what)), desc,
                                        (long long)w->timeout_ms, awaited));
        return;
    }
    tc_rt_exec_awaited(w, awaited, sizeof(awaited));
    tc_status_t st = tc_error_set(
        TC_ERR_TIMEOUT,
        "%s (%s, rank %d of %d): timed out after %lld "
        "ms at step %u of %u; waiting for rank(s) %s%s",
        tc_rt_op_what(&w->op, what, sizeof(what)), w->sched->algo, w->comm->rank, w->comm->size,
        (long long)w->timeout_ms, w->ex.first, w->sched->nsteps, awaited,
        w->comm->check || w->op.coll == TC_COLL_COUNT ? "" : TC_RT_TIMEOUT_HINT);
    tc_rt_work_fail(w, st);
}

/* TC_CHECK's exchange completed: compare, then run the operation. A
 * mismatch ends the work on every rank alike and leaves the communicator
 * usable (nothing of the operation was sent). */
static void work_check_done(tc_rt_work_t *w)
{
    tc_status_t st = tc_rt_check_finish(w);
    if (st == TC_OK) {
        tc_rt_check_free(w);
        w->sched = w->main_sched;
        w->tag = tc_rt_coll_tag(w->comm->comm_id, w->call.coll, w->op.seq);
        if ((st = tc_rt_exec_begin(w)) == TC_OK)
            return;
        tc_rt_work_fail(w, st);
        return;
    }
    snprintf(w->error, sizeof(w->error), "%s", tc_last_error());
    tc_rt_work_end(w, st);
}

int tc_rt_works_advance(tc_rt_world_t *world)
{
    int total = 0;
    for (tc_rt_work_t *w = world->active, *next; w; w = next) {
        next = w->next;
        if (w->ops) { /* a window's operation */
            int c = w->ops->pass(w);
            if (c < 0) {
                tc_rt_work_fail(w, (tc_status_t)c);
                next = world->active;
                total++;
            } else if (w->ops->done(w)) {
                tc_rt_work_end(w, TC_OK);
                total++;
            } else {
                total += c;
            }
            continue;
        }
        int c = tc_rt_exec_pass(w);
        if (c < 0) {
            tc_rt_work_fail(w, (tc_status_t)c);
            next = world->active;
            total++;
            continue;
        }
        total += c;
        if (tc_rt_exec_done(w) && w->sched == &w->check_sched) {
            work_check_done(w); /* the arguments agree: the operation itself starts */
            next = world->active;
            total++;
        } else if (tc_rt_exec_done(w)) {
            work_complete(w);
            total++;
        }
    }
    return total;
}

void tc_rt_works_expire(tc_rt_world_t *world, uint64_t now)
{
    for (tc_rt_work_t *w = world->active, *next; w; w = next) {
        next = w->next;
        if (!w->deadline) { /* started without reading the clock (win_ops.c) */
            w->deadline = tc_deadline_add_ms(now, (uint64_t)w->timeout_ms);
            continue;
        }
        if (now >= w->deadline) {
            work_timeout(w);
            next = world->active;
        }
    }
    tc_rt_small_unblock(world); /* a peer whose messages fill the lanes may be why */
}

/* A communicator's work that is not running: its executor's look (tc_rt_exec_idle). */
static size_t work_idle(tc_rt_work_t *w, uint64_t now)
{
    return w && tc_rt_work_get_state(w) != TC_RT_WORK_RUNNING ? tc_rt_exec_idle(&w->ex, now) : 0;
}

void tc_rt_works_idle(tc_rt_world_t *world, uint64_t now)
{
    for (tc_rt_comm_t *comm = world->comms; comm; comm = comm->wnext) {
        size_t freed = work_idle(&comm->inline_work, now) + work_idle(comm->p2p_work, now) +
                       work_idle(comm->p2p_one, now);
        for (tc_rt_work_t *w = comm->works; w; w = w->cnext)
            freed += work_idle(w, now);
        if (freed)
            tc_log_debug(TC_SUBSYS_RUNTIME,
                         "comm '%s': %zu bytes of scratch given back (idle for a second)",
                         comm->name, freed);
    }
}

void tc_rt_works_fail_all(tc_rt_world_t *world, tc_status_t st)
{
    while (world->active)
        tc_rt_work_fail(world->active, st);
}

tc_status_t tc_rt_work_wait_locked(tc_rt_work_t *w, uint64_t wait_deadline)
{
    tc_status_t st = tc_rt_progress_wait(w->comm->world, &w->state, TC_RT_WORK_RUNNING,
                                         wait_deadline, w->deadline);
    return st == TC_OK ? w->result : st;
}

tc_status_t tc_rt_work_run_internal(tc_rt_work_t *w)
{
    tc_status_t st = tc_rt_exec_begin(w);
    if (st != TC_OK)
        return st;
    w->deadline = tc_deadline_after_ms((uint64_t)w->timeout_ms);
    w->failed_peer = -1;
    w->fr_id = 0; /* internal exchanges are not the application's operations */
    tc_rt_work_set_state(w, TC_RT_WORK_RUNNING);
    w->result = TC_INPROGRESS;
    tc_rt_work_link(w);
    st = tc_rt_work_wait_locked(w, 0);
    return st == TC_OK ? TC_OK : tc_error_set(st, "%s", w->error);
}
