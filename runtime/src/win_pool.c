/* The records of a window's fire-and-forget operations (asynchronous, no work
 * object, off the direct path): a pool of TC_WIN_POOL works allocated with the
 * first such operation and reused, so that a burst of them allocates nothing;
 * the list of those still kept for a flush; the sweep that releases them.
 *
 * When every pool record is taken (more operations in flight than the pool
 * holds), the ones that ended well are reclaimed first; if none did, the
 * operation gets a heap work of the communicator, freed when a flush releases
 * it. So the pool never makes an operation wait and memory stays proportional
 * to the operations in flight. A record that ended with an error stays kept
 * until a flush reports it. Lock held throughout. */
#include <stdlib.h>

#include "progress.h"
#include "tcomms/base/config.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"
#include "win.h"

#define WIN_POOL_DEFAULT 64
#define WIN_POOL_MAX 4096

tc_status_t tc_rt_win_pool_config(tc_rt_comm_t *comm)
{
    int64_t n;
    tc_status_t st = tc_config_int("TC_WIN_POOL", WIN_POOL_DEFAULT, 0, WIN_POOL_MAX, &n);
    if (st == TC_OK)
        comm->win_pool = (int)n;
    return st;
}

/* The pool's records, on first use; NULL when out of memory (operations then
 * allocate their own, as beyond the pool). */
static int pool_alloc(tc_rt_win_t *win)
{
    tc_rt_win_pool_t *pool = &win->pool;
    tc_rt_work_t *recs = calloc((size_t)pool->cap, sizeof(*recs));
    tc_tp_req_t *reqs = calloc((size_t)pool->cap * TC_RT_WIN_BATCH, sizeof(*reqs));
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
    tc_rt_work_t **ff = win->ffcap < pool->cap ? malloc((size_t)pool->cap * sizeof(*ff)) : NULL;
    if (!recs || !reqs || (win->ffcap < pool->cap && !ff)) {
        free(recs);
        free(reqs);
        free(ff);
        tc_log_warn(TC_SUBSYS_RUNTIME,
                    "window %llu: no memory for a pool of %d operation records: each "
                    "fire-and-forget operation allocates its own",
                    (unsigned long long)win->id, pool->cap);
        pool->cap = 0;
        return 0;
    }
    if (ff) { /* room to keep every pool record for the flush: no growth in a burst */
        for (int i = 0; i < win->nff; i++)
            ff[i] = win->ff[i];
        free(win->ff);
        win->ff = ff;
        win->ffcap = pool->cap;
    }
    for (int i = pool->cap - 1; i >= 0; i--) {
        recs[i].rma.batch = reqs + (size_t)i * TC_RT_WIN_BATCH;
        recs[i].next = pool->free;
        pool->free = &recs[i];
    }
    pool->recs = recs;
    pool->reqs = reqs;
    return 1;
}

/* Give the pool records that ended well back (they need no flush to report). */
static void pool_reclaim(tc_rt_win_t *win)
{
    int k = 0;
    for (int i = 0; i < win->nff; i++) {
        tc_rt_work_t *w = win->ff[i];
        if (w->rma.batch && tc_rt_work_get_state(w) != TC_RT_WORK_RUNNING && w->result == TC_OK)
            tc_rt_win_rec_give(win, w);
        else
            win->ff[k++] = w;
    }
    __atomic_store_n(&win->nff, k, __ATOMIC_RELEASE);
    win->pool.ended = 0;
}

tc_rt_work_t *tc_rt_win_rec_take(tc_rt_win_t *win)
{
    tc_rt_win_pool_t *pool = &win->pool;
    if (!pool->recs && pool->cap > 0)
        (void)pool_alloc(win);
    if (!pool->free && pool->ended > 0)
        pool_reclaim(win);
    tc_rt_work_t *w = pool->free;
    if (!w) {
        if ((w = tc_rt_work_alloc(win->comm)))
            pool->allocated++;
        return w;
    }
    pool->free = w->next;
    w->next = NULL;
    w->comm = win->comm;
    if (++pool->used > pool->used_max)
        pool->used_max = pool->used;
    return w;
}

void tc_rt_win_rec_give(tc_rt_win_t *win, tc_rt_work_t *w)
{
    if (!w->rma.batch) {
        tc_rt_work_release(w);
        return;
    }
    w->next = win->pool.free;
    win->pool.free = w;
    win->pool.used--;
}

void tc_rt_win_rec_ended(tc_rt_win_t *win, tc_rt_work_t *w)
{
    if (w->rma.batch)
        win->pool.ended++;
}

void tc_rt_win_ff_keep(tc_rt_win_t *win, tc_rt_work_t *w)
{
    if (win->nff == win->ffcap) {
        int cap = win->ffcap ? 2 * win->ffcap : 64;
        /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
        tc_rt_work_t **ff = realloc(win->ff, (size_t)cap * sizeof(*ff));
        if (!ff) {
            /* complete it now, bounded by its deadline; a failure broke the
             * communicator, which the flush reports */
            if (!w->deadline)
                w->deadline = tc_deadline_after_ms((uint64_t)w->timeout_ms);
            tc_status_t st = tc_rt_work_wait_locked(w, 0);
            (void)st;
            tc_rt_win_rec_give(win, w);
            return;
        }
        win->ff = ff;
        win->ffcap = cap;
    }
    win->ff[win->nff] = w;
    __atomic_store_n(&win->nff, win->nff + 1, __ATOMIC_RELEASE);
}

tc_status_t tc_rt_win_ff_sweep(tc_rt_win_t *win, int peer)
{
    tc_status_t st = TC_OK;
    int k = 0;
    for (int i = 0; i < win->nff; i++) {
        tc_rt_work_t *w = win->ff[i];
        if ((peer >= 0 && w->rma.peer != peer) || tc_rt_work_get_state(w) == TC_RT_WORK_RUNNING) {
            win->ff[k++] = w;
            continue;
        }
        if (st == TC_OK && w->result != TC_OK)
            st = tc_error_set(w->result, "%s", w->error);
        tc_rt_win_rec_give(win, w);
    }
    __atomic_store_n(&win->nff, k, __ATOMIC_RELEASE);
    if (k == 0)
        win->pool.ended = 0; /* every pool record is free */
    return st;
}

void tc_rt_win_pool_free(tc_rt_win_t *win)
{
    free(win->pool.reqs);
    win->pool.reqs = NULL;
    free(win->pool.recs);
    win->pool.recs = win->pool.free = NULL;
}

tc_status_t tc_rt_win_pool_query(tc_rt_win_t *win, tc_rt_win_pool_info_t *info_p)
{
    if (!info_p)
        return tc_error_set(TC_ERR_INVALID_ARG, "win_pool_query: info_p is NULL");
    tc_rt_comm_t *comm = win->comm;
    if (comm)
        tc_rt_world_lock(comm->world);
    *info_p = (tc_rt_win_pool_info_t){.cap = win->pool.cap,
                                      .used = win->pool.used,
                                      .used_max = win->pool.used_max,
                                      .allocated = win->pool.allocated};
    if (comm)
        tc_rt_world_unlock(comm->world);
    return TC_OK;
}
