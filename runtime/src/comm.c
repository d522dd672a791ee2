/* Communicators: the world communicator, a child's making (its parts agreed in comm_split.c),
 * destruction, abort and revoke. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comms.h"
#include "win.h"
#include "ft.h"
#include "progress.h"
#include "small.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"

#define TC_RT_DEFAULT_TIMEOUT_S 600

static tc_status_t comm_timeout(int64_t asked_ms, int64_t *timeout_ms_p)
{
    if (asked_ms > 0) {
        *timeout_ms_p = asked_ms;
        return TC_OK;
    }
    int64_t s;
    tc_status_t st = tc_config_int("TC_TIMEOUT_S", TC_RT_DEFAULT_TIMEOUT_S, 1, 86400LL * 365, &s);
    if (st == TC_OK)
        *timeout_ms_p = s * 1000;
    return st;
}

/* A communicator's hint algo=@p name must name an algorithm of some collective (it applies to
 * those that have one: tc_rt_comm_algo); else TC_ERR_INVALID_ARG listing the names. Every
 * collective failed with TC_ERR_NOT_FOUND before, the communicator made without a word. */
static tc_status_t comm_algo_hint(const char *name)
{
    size_t n, len = 0;
    const tc_algo_desc_t *t = tc_algo_table(&n);
    char names[768] = "";
    for (size_t i = 0; i < n; i++) {
        if (strcmp(t[i].name, name) == 0)
            return TC_OK;
        if (!strstr(names, t[i].name) && len < sizeof(names))
            len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s", len ? ", " : "",
                                    t[i].name);
    }
    return tc_error_set(TC_ERR_INVALID_ARG,
                        "hint algo=%s: no collective has an algorithm of that name (known: %s)",
                        name, names);
}

const char *tc_rt_comm_algo(const tc_rt_comm_t *comm, tc_coll_t coll)
{
    const char *name = tc_hints_get(&comm->hints, "algo");
    size_t n;
    const tc_algo_desc_t *t = name ? tc_algo_table(&n) : NULL;
    for (size_t i = 0; t && i < n; i++)
        if (t[i].coll == coll && strcmp(t[i].name, name) == 0)
            return name;
    return NULL;
}

tc_status_t tc_rt_comm_child_hints(const tc_rt_comm_t *parent, const tc_rt_comm_params_t *params)
{
    if (!params || !params->hints)
        return TC_OK;
    tc_status_t st = tc_rt_world_hints_check(params->hints, &parent->hints);
    const char *algo = tc_hints_get(params->hints, "algo");
    return st == TC_OK && algo ? comm_algo_hint(algo) : st;
}

/* A communicator without its world and membership: name, hints, check flag. @p opens: it opens
 * the transports (tc_comm_create), whose hints are checked here; a child's were, before its
 * creation began (tc_rt_comm_child_hints). */
static tc_status_t comm_alloc(const char *name, const tc_hints_t *hints, int opens,
                              tc_rt_comm_t **comm_p)
{
    tc_rt_comm_t *comm = calloc(1, sizeof(*comm));
    if (!comm)
        return tc_error_set(TC_ERR_NO_MEMORY, "allocating a communicator");
    snprintf(comm->name, sizeof(comm->name), "%s", name);
    tc_hints_init(&comm->hints);
    tc_hmap_init(&comm->p2p_seq);
    bool check;
    tc_status_t st = tc_config_bool("TC_CHECK", false, &check);
    if (st == TC_OK)
        st = tc_rt_win_pool_config(comm);
    if (st == TC_OK && hints && opens)
        st = tc_rt_world_hints_check(hints, NULL);
    if (st == TC_OK && hints)
        st = tc_hints_copy(&comm->hints, hints);
    if (st == TC_OK && opens && tc_hints_get(&comm->hints, "algo"))
        st = comm_algo_hint(tc_hints_get(&comm->hints, "algo")); /* a child's: child_hints */
    if (st != TC_OK) {
        tc_hints_free(&comm->hints);
        free(comm);
        return st;
    }
    comm->check = check;
    comm->device = -1;
    if ((st = tc_rt_fr_init(comm)) != TC_OK) {
        tc_hints_free(&comm->hints);
        free(comm);
        return st;
    }
    *comm_p = comm;
    return TC_OK;
}

/* Free what comm_alloc and the communicator's operations allocated. */
static void comm_free(tc_rt_comm_t *comm)
{
    size_t iter = 0;
    uint64_t peer;
    void *seq;
    while (tc_hmap_next(&comm->p2p_seq, &iter, &peer, &seq))
        free(seq);
    tc_hmap_free(&comm->p2p_seq);
    tc_rt_exec_free(&comm->inline_work.ex);
    free(comm->inline_work.h_buf);
    tc_rt_work_t *p2p = comm->p2p_work;
    if (p2p) {
        tc_sched_free(&p2p->own);
        tc_rt_exec_free(&p2p->ex);
        free(p2p->step_tags);
        free(p2p);
    }
    free(comm->p2p_one);
    while (comm->spare) {
        tc_rt_work_t *w = comm->spare;
        comm->spare = w->cnext;
        tc_rt_work_free_spare(w);
    }
    tc_rt_plan_cache_free(comm);
    tc_hints_free(&comm->hints);
    tc_rt_fr_free(comm);
    free(comm->stats);
    tc_rt_small_free(comm);
    free(comm->ranks);
    free(comm);
}

static _Thread_local char thread_mark; /* its address tells threads apart */

tc_status_t tc_rt_comm_enter(tc_rt_comm_t *comm, const char *what)
{
    void *none = NULL;
    if (__atomic_compare_exchange_n(&comm->user, &none, &thread_mark, 0, __ATOMIC_ACQUIRE,
                                    __ATOMIC_RELAXED))
        return TC_OK;
    return tc_error_set(TC_ERR_INVALID_STATE,
                        "%s on comm '%s': another thread is inside a call on this communicator "
                        "(calls that start operations on one communicator must come from one "
                        "thread at a time: ranks match them in issue order)",
                        what, comm->name);
}

void tc_rt_comm_leave(tc_rt_comm_t *comm)
{
    __atomic_store_n(&comm->user, NULL, __ATOMIC_RELEASE);
}

tc_status_t tc_rt_config_check(void)
{
    int64_t v;
    tc_status_t st = tc_rt_world_config_check();
    if (st == TC_OK)
        st = tc_rt_small_config(&v);
    if (st == TC_OK)
        st = tc_rt_shrink_config(&v);
    if (st == TC_OK)
        st = tc_rt_fr_config();
    return st;
}

tc_status_t tc_rt_comm_create(const tc_rt_comm_params_t *params, tc_rt_comm_t **comm_p)
{
    tc_status_t st = tc_log_init();
    if (st != TC_OK)
        return st;
    const char *name = params->name ? params->name : "world";
    tc_rt_comm_t *comm = NULL;
    if ((st = tc_rt_config_check()) != TC_OK ||
        (st = comm_alloc(name, params->hints, 1, &comm)) != TC_OK ||
        (st = comm_timeout(params->timeout_ms, &comm->timeout_ms)) != TC_OK) {
        if (st != TC_OK && comm)
            comm_free(comm);
        tc_error_prefix("comm '%s' create: ", name);
        return st;
    }
    uint64_t deadline = tc_deadline_after_ms((uint64_t)comm->timeout_ms);
    if ((st = tc_rt_comm_world_create(params->boot, params->kv, &comm->hints, deadline,
                                      &comm->world)) != TC_OK) {
        comm_free(comm);
        tc_error_prefix("comm '%s' create: ", name);
        return st;
    }
    tc_boot_t *boot = comm->world->boot;
    comm->rank = boot->rank;
    comm->size = boot->size;
    /* the progress thread may run already (heartbeats), and walks the world's communicators */
    tc_rt_world_lock(comm->world);
    tc_rt_world_add_comm(comm->world, comm);
    tc_rt_world_unlock(comm->world);
    /* the agreement runs on host buffers: before the communicator is bound to a device */
    if ((st = tc_rt_comm_agree_nodes(comm)) != TC_OK ||
        (params->use_cuda && (st = tc_rt_cuda_bind(comm, params->cuda_device)) != TC_OK)) {
        tc_error_prefix("comm '%s' create: ", name);
        tc_rt_comm_destroy(comm);
        return st;
    }
    tc_log_info(TC_SUBSYS_RUNTIME, "comm '%s': rank %d of %d on %s via %s, timeout %lld ms%s",
                comm->name, comm->rank, comm->size, boot->host, boot->launcher,
                (long long)comm->timeout_ms, comm->check ? ", TC_CHECK on" : "");
    *comm_p = comm;
    return TC_OK;
}

void tc_rt_comm_adopt(tc_rt_comm_t *comm)
{
    tc_rt_world_t *world = comm->world;
    tc_rt_world_add_comm(world, comm);
    /* a member that failed before the communicator existed breaks it at once */
    for (int i = 0; i < world->nfailed; i++)
        if (tc_rt_comm_rank_of(comm, world->failed[i].rank) >= 0) {
            tc_rt_world_fail_comms(world, &world->failed[i]);
            break;
        }
    /* so does a member's revoke that came first (the member was quicker to make it) */
    int by = tc_rt_ids_revoked_early(comm);
    if (by >= 0) {
        char why[160];
        snprintf(why, sizeof(why), "comm '%s' was revoked by rank %d", comm->name,
                 tc_rt_comm_rank_of(comm, by));
        tc_rt_comm_revoke_local(comm, why);
    }
}

tc_status_t tc_rt_comm_make(tc_rt_comm_t *parent, const tc_rt_comm_params_t *params,
                            const char *default_name, const int *wranks, int n, int rank,
                            int64_t id, tc_rt_comm_t **child_p)
{
    tc_rt_comm_t *child = NULL;
    const char *name = params && params->name ? params->name : default_name;
    tc_status_t st =
        comm_alloc(name, params && params->hints ? params->hints : &parent->hints, 0, &child);
    if (st != TC_OK) {
        tc_rt_ids_release(parent->world, id);
        return st;
    }
    tc_rt_world_t *world = parent->world;
    int identity = n == world->boot->size;
    for (int i = 0; i < n && identity; i++)
        identity = wranks[i] == i;
    if (!identity) {
        if (!(child->ranks = malloc((size_t)n * sizeof(int)))) {
            comm_free(child);
            tc_rt_ids_release(world, id);
            return tc_error_set(TC_ERR_NO_MEMORY, "%d ranks", n);
        }
        memcpy(child->ranks, wranks, (size_t)n * sizeof(int));
    } else {
        child->ranks_per_node = world->ranks_per_node;
    }
    child->rank = rank;
    child->size = n;
    child->comm_id = (uint32_t)id;
    child->timeout_ms = params && params->timeout_ms > 0 ? params->timeout_ms : parent->timeout_ms;
    child->check = parent->check;
    child->device = parent->device;
    tc_rt_world_lock(world);
    child->world = world;
    world->refs++;
    tc_rt_comm_adopt(child);
    tc_rt_world_unlock(world);
    *child_p = child;
    return TC_OK;
}

void tc_rt_comm_destroy(tc_rt_comm_t *comm)
{
    if (!comm)
        return;
    tc_rt_world_t *world = comm->world;
    if (!world) {
        comm_free(comm);
        return;
    }
    tc_rt_world_lock(world);
    tc_rt_comm_cancel_works(comm, TC_ERR_ABORTED, "the communicator was destroyed");
    tc_rt_comm_release_wins(comm); /* they stay, unusable, until tc_win_destroy */
    tc_rt_world_remove_comm(world, comm);
    tc_rt_ids_retire(comm);
    for (tc_rt_work_t *w = comm->works; w; w = w->cnext) {
        tc_rt_sched_release(w);
        w->comm = NULL;
    }
    comm_free(comm);
    tc_rt_world_release(world); /* unlocks */
}

int tc_rt_comm_rank(const tc_rt_comm_t *comm)
{
    return comm->rank;
}

int tc_rt_comm_device(const tc_rt_comm_t *comm)
{
    return comm->device;
}

int tc_rt_comm_size(const tc_rt_comm_t *comm)
{
    return comm->size;
}

const char *tc_rt_comm_name(const tc_rt_comm_t *comm)
{
    return comm->name;
}

void tc_rt_comm_info(tc_rt_comm_t *comm, tc_rt_comm_info_t *info)
{
    tc_rt_world_t *world = comm->world;
    tc_rt_world_lock(world);
    info->local_size = world->boot->local_size;
    snprintf(info->launcher, sizeof(info->launcher), "%s", world->boot->launcher);
    snprintf(info->host, sizeof(info->host), "%s", world->boot->host);
    info->peers_shm = tc_rt_world_peers_over(world, "shm");
    info->peers_tcp = tc_rt_world_peers_over(world, "tcp");
    info->peers_self = tc_rt_world_ep_get(world, world->boot->rank) != NULL;
    tc_rt_world_unlock(world);
}

tc_status_t tc_rt_comm_same_node(tc_rt_comm_t *comm, int peer, uint64_t deadline_ns, int *same_p)
{
    if (peer < 0 || peer >= comm->size)
        return tc_error_set(TC_ERR_INVALID_ARG, "comm '%s': rank %d of %d", comm->name, peer,
                            comm->size);
    tc_rt_world_lock(comm->world);
    tc_status_t st =
        tc_rt_world_same_node(comm->world, tc_rt_world_rank(comm, peer), deadline_ns, same_p);
    tc_rt_world_unlock(comm->world);
    return st;
}

const char *tc_rt_op_what(const tc_rt_op_t *op, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s #%llu on comm '%s'",
             op->name                    ? op->name
             : op->coll == TC_COLL_COUNT ? "send/recv"
                                         : tc_coll_name(op->coll),
             (unsigned long long)op->seq, op->comm_name);
    return buf;
}

void tc_rt_comm_abort(tc_rt_comm_t *comm)
{
    tc_rt_world_lock(comm->world);
    if (comm->broken == TC_OK) {
        __atomic_store_n(&comm->broken, TC_ERR_ABORTED,
                         __ATOMIC_RELEASE); /* the window direct path reads it unlocked */
        snprintf(comm->broken_why, sizeof(comm->broken_why),
                 "comm '%s' was aborted by the "
                 "application",
                 comm->name);
    }
    tc_rt_comm_cancel_works(comm, TC_ERR_ABORTED, "the communicator was aborted");
    tc_rt_world_unlock(comm->world);
}

tc_status_t tc_rt_comm_revoke(tc_rt_comm_t *comm)
{
    tc_rt_world_t *world = comm->world;
    tc_rt_world_lock(world);
    char why[128];
    snprintf(why, sizeof(why), "comm '%s' was revoked by rank %d (this rank)", comm->name,
             comm->rank);
    tc_rt_comm_revoke_local(comm, why);
    tc_boot_event_t ev = {TC_BOOT_EV_REVOKE, world->boot->rank, comm->comm_id, 0, 0, 0};
    tc_status_t st = comm->size > 1 ? tc_boot_notify(world->boot, &ev) : TC_OK;
    tc_rt_world_unlock(world);
    if (st != TC_OK)
        tc_error_prefix("comm '%s' revoke: revoked here, but the other ranks cannot be told: ",
                        comm->name);
    return st;
}

int tc_rt_comm_failed_ranks(tc_rt_comm_t *comm, int *ranks, int cap)
{
    tc_rt_world_t *world = comm->world;
    tc_rt_world_lock(world);
    tc_rt_world_poll_events(world);
    int n = 0;
    for (int i = 0; i < world->nfailed; i++) {
        int r = tc_rt_comm_rank_of(comm, world->failed[i].rank);
        if (r < 0)
            continue;
        if (n < cap)
            ranks[n] = r;
        n++;
    }
    tc_rt_world_unlock(world);
    return n;
}

tc_status_t tc_rt_comm_dump_fr(tc_rt_comm_t *comm)
{
    tc_rt_world_lock(comm->world);
    tc_status_t st = tc_rt_fr_dump(comm, "requested");
    tc_rt_world_unlock(comm->world);
    return st;
}
