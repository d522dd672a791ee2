/* Statistics (operations, bytes and time per collective and algorithm) and
 * the hooks called before and after each operation, on whichever thread issues or completes
 * the operation. Hooks run under the world's lock; the statistics under the communicator's
 * records lock (tc_rt_obs_lock), which the small path's blocking calls take without the
 * world's. */
#include <stdlib.h>
#include <string.h>

#include "comms.h"
#include "progress.h"
#include "tcomms/base/log.h"

/* The elements of @p w's call: what this rank sends in an all_to_all_v (its count is 0), the
 * bytes of a point-to-point batch or message (as elements of TC_UINT8). */
static size_t stats_count(const tc_rt_work_t *w)
{
    size_t n = w->call.count;
    for (int q = 0; w->call.sendcounts && q < w->comm->size; q++)
        n += w->call.sendcounts[q];
    return n;
}

static void stats_info(const tc_rt_work_t *w, tc_rt_op_info_t *info)
{
    *info = (tc_rt_op_info_t){.coll = w->op.coll,
                              .seq = w->op.seq,
                              .count = stats_count(w),
                              .dtype = w->call.dtype,
                              .root = w->call.root,
                              .algo = w->main_sched ? w->main_sched->algo
                                      : w->ops      ? w->ops->algo
                                                    : NULL,
                              .status = TC_INPROGRESS};
}

void tc_rt_stats_hook_before(tc_rt_work_t *w)
{
    tc_rt_comm_t *comm = w->comm;
    if (comm->nhooks == 0)
        return;
    tc_rt_op_info_t info;
    stats_info(w, &info);
    for (int i = 0; i < comm->nhooks; i++)
        comm->hooks[i].fn(&info, 0, comm->hooks[i].arg);
}

int tc_rt_stats_index(tc_rt_comm_t *comm, int coll, const char *algo)
{
    for (int i = 0; i < comm->nstats; i++)
        if (comm->stats[i].coll == coll && strcmp(comm->stats[i].algo, algo) == 0)
            return i;
    if (comm->nstats == comm->stats_cap) {
        int cap = comm->stats_cap ? 2 * comm->stats_cap : 16;
        tc_rt_stat_t *grown = realloc(comm->stats, (size_t)cap * sizeof(*grown));
        if (!grown) {
            if (!comm->stats_lost++)
                tc_log_warn(TC_SUBSYS_RUNTIME,
                            "comm '%s': out of memory for statistics: operations of %s (%s) "
                            "and of later new algorithms are not counted",
                            comm->name,
                            coll == TC_COLL_COUNT ? "send/recv" : tc_coll_name((tc_coll_t)coll),
                            algo);
            return -1;
        }
        comm->stats = grown;
        comm->stats_cap = cap;
    }
    comm->stats[comm->nstats] = (tc_rt_stat_t){.coll = coll, .algo = algo};
    return comm->nstats++;
}

/* The slot of @p w's collective and algorithm: the one its cached plan
 * remembers, else found by name (and remembered), else a new one. */
static tc_rt_stat_t *stats_slot(tc_rt_comm_t *comm, tc_rt_work_t *w, const char *algo)
{
    int *known = w->entry && w->main_sched == &w->entry->sched ? &w->entry->stat : NULL;
    if (known && *known >= 0)
        return &comm->stats[*known];
    int i = tc_rt_stats_index(comm, (int)w->op.coll, algo);
    if (i >= 0 && known)
        *known = i;
    return i >= 0 ? &comm->stats[i] : NULL;
}

void tc_rt_stats_end(tc_rt_work_t *w, tc_status_t st, uint64_t now_ns)
{
    tc_rt_comm_t *comm = w->comm;
    if (!comm || w->tolerant || !w->start_ns)
        return; /* internal exchanges are not the application's operations */
    uint64_t took = now_ns - w->start_ns;
    const char *algo = w->main_sched ? w->main_sched->algo : w->ops ? w->ops->algo : "?";
    tc_rt_obs_lock(comm);
    tc_rt_stat_t *e = stats_slot(comm, w, algo);
    if (e) {
        e->ops++;
        e->failed += st != TC_OK;
        e->bytes += (uint64_t)stats_count(w) *
                    (w->op.coll == TC_COLL_COUNT ? 1 : tc_dtype_size(w->call.dtype));
        e->time_ns += took;
    }
    tc_rt_obs_unlock(comm);
    if (comm->nhooks == 0)
        return;
    tc_rt_op_info_t info;
    stats_info(w, &info);
    info.status = st;
    info.time_ns = took;
    for (int i = 0; i < comm->nhooks; i++)
        comm->hooks[i].fn(&info, 1, comm->hooks[i].arg);
}

int tc_rt_comm_stats(tc_rt_comm_t *comm, tc_rt_stat_t *stats, int cap)
{
    tc_rt_obs_lock(comm);
    tc_rt_obs_settle(comm);
    int n = comm->nstats;
    for (int i = 0; i < n && i < cap; i++)
        stats[i] = comm->stats[i];
    tc_rt_obs_unlock(comm);
    return n;
}

tc_status_t tc_rt_comm_add_hook(tc_rt_comm_t *comm, tc_rt_hook_fn fn, void *arg)
{
    tc_rt_world_lock(comm->world);
    tc_status_t st = TC_OK;
    if (comm->nhooks == TC_RT_HOOKS)
        st = tc_error_set(TC_ERR_NO_RESOURCE, "comm '%s': already %d hooks", comm->name,
                          TC_RT_HOOKS);
    else {
        comm->hooks[comm->nhooks].fn = fn;
        comm->hooks[comm->nhooks].arg = arg;
        /* release: the small path's lock-free entry reads it, and then runs no hook */
        __atomic_store_n(&comm->nhooks, comm->nhooks + 1, __ATOMIC_RELEASE);
    }
    tc_rt_world_unlock(comm->world);
    return st;
}
