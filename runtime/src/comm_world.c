/* The world as communicators see it: its assembly (which module runs on each
 * progress pass and hears of failures), its last release, the list of live
 * communicators, and what a failure or a revocation does to them. */
#include <sched.h>
#include <stdio.h>

#include "comms.h"
#include "ft.h"
#include "progress.h"
#include "tcomms/base/copy.h"
#include "tcomms/base/time.h"

int tc_rt_comm_rank_of(const tc_rt_comm_t *comm, int wrank)
{
    if (!comm->ranks)
        return wrank < comm->size ? wrank : -1;
    for (int i = 0; i < comm->size; i++)
        if (comm->ranks[i] == wrank)
            return i;
    return -1;
}

void tc_rt_comm_failed_describe(const tc_rt_comm_t *comm, const tc_rt_failed_t *f, char *buf,
                                size_t cap)
{
    tc_rt_failed_describe(f, tc_rt_comm_rank_of(comm, f->rank), comm->ranks != NULL, buf, cap);
}

void tc_rt_world_add_comm(tc_rt_world_t *world, tc_rt_comm_t *comm)
{
    comm->wprev = NULL;
    comm->wnext = world->comms;
    if (world->comms)
        world->comms->wprev = comm;
    world->comms = comm;
}

void tc_rt_world_remove_comm(tc_rt_world_t *world, tc_rt_comm_t *comm)
{
    if (comm->wprev)
        comm->wprev->wnext = comm->wnext;
    else if (world->comms == comm)
        world->comms = comm->wnext;
    if (comm->wnext)
        comm->wnext->wprev = comm->wprev;
    comm->wnext = comm->wprev = NULL;
}

void tc_rt_world_fail_comms(tc_rt_world_t *world, const tc_rt_failed_t *f)
{
    for (tc_rt_comm_t *c = world->comms; c; c = c->wnext) {
        if (tc_rt_comm_rank_of(c, f->rank) < 0 || c->broken != TC_OK)
            continue;
        char desc[160];
        tc_rt_comm_failed_describe(c, f, desc, sizeof(desc));
        __atomic_store_n(&c->broken, TC_ERR_PEER_FAILED, __ATOMIC_RELEASE);
        snprintf(c->broken_why, sizeof(c->broken_why), "%s failed: %s", desc, f->why);
        tc_rt_comm_cancel_works(c, TC_ERR_PEER_FAILED, c->broken_why);
        tc_rt_fr_dump_auto(c, "peer failed", TC_OK);
    }
}

void tc_rt_comm_revoke_local(tc_rt_comm_t *comm, const char *why)
{
    if (comm->broken == TC_ERR_REVOKED)
        return;
    __atomic_store_n(&comm->broken, TC_ERR_REVOKED, __ATOMIC_RELEASE);
    snprintf(comm->broken_why, sizeof(comm->broken_why), "%s", why);
    tc_rt_comm_cancel_works(comm, TC_ERR_REVOKED, comm->broken_why);
}

/* ids are unique among one process's communicators, so (revoker, id) names one */
static void world_revoked(tc_rt_world_t *world, int by, uint32_t comm_id)
{
    int live = 0;
    for (tc_rt_comm_t *c = world->comms; c; c = c->wnext) {
        live |= c->comm_id == comm_id;
        int r = tc_rt_comm_rank_of(c, by);
        if (c->comm_id == comm_id && r >= 0) {
            char why[160];
            snprintf(why, sizeof(why), "comm '%s' was revoked by rank %d", c->name, r);
            tc_rt_comm_revoke_local(c, why);
        }
    }
    if (!live) /* destroyed here first, or not made here yet */
        tc_rt_ids_revoked(world, comm_id, by);
}

/* An endpoint is about to close: wait for the blocking calls that run on the lanes without the
 * world's lock (small.h). Each comes back within its spin time; one that begins meanwhile sees
 * world->ep_drops changed and takes the lock. */
static void world_closing(tc_rt_world_t *world)
{
    for (tc_rt_comm_t *c = world->comms; c; c = c->wnext)
        while (__atomic_load_n(&c->outside, __ATOMIC_SEQ_CST))
            sched_yield();
}

static void world_tick(tc_rt_world_t *world)
{
    uint64_t now = tc_time_ns();
    tc_rt_hb_tick(world, now);
    tc_rt_works_idle(world, now);
    tc_rt_world_trim_idle(world, now);
}

/* Every progress pass: SIGUSR1; the bootstrap's events one pass in 64 while
 * operations move, every pass once they have been waiting a while (when the
 * clock is read too); heartbeats one pass in 64; for a few seconds after a
 * communicator id was spoilt, its late messages one pass in 1024. */
static void world_poll(tc_rt_world_t *world)
{
    if ((++world->poll_passes & 63) == 0 || world->idle_passes >= TC_RT_IDLE_CLOCK_PASSES)
        tc_rt_world_poll_events(world);
    tc_rt_fr_poll_signal(world);
    if (world->hb_ns && (++world->hb_passes & 63) == 0)
        tc_rt_hb_tick(world, tc_time_ns());
    if (world->leftovers_until && (world->poll_passes & 1023) == 0) /* for a while after a spoil */
        tc_rt_ids_tick(world, tc_time_ns());
}

static tc_status_t world_assemble(tc_boot_kind_t boot, const tc_boot_kv_params_t *kv,
                                  const tc_hints_t *hints, uint64_t deadline,
                                  tc_rt_world_t **world_p)
{
    tc_rt_world_t *world;
    tc_status_t st = tc_rt_world_create(boot, kv, hints, deadline, &world);
    if (st != TC_OK)
        return st;
    world->hooks = (tc_rt_world_hooks_t){.poll = world_poll,
                                         .advance = tc_rt_works_advance,
                                         .expire = tc_rt_works_expire,
                                         .fail_all = tc_rt_works_fail_all,
                                         .failed = tc_rt_world_fail_comms,
                                         .revoked = world_revoked,
                                         .tick = world_tick,
                                         .connected = tc_rt_hb_peer,
                                         .closing = world_closing};
    if ((st = tc_rt_ids_init(world)) != TC_OK || (st = tc_rt_progress_init(world)) != TC_OK ||
        (st = tc_copy_config()) != TC_OK || /* TC_COPY: a bad value is an error here */
        (st = tc_rt_ft_init(world)) != TC_OK ||
        (st = tc_rt_world_fence(world, deadline)) != TC_OK ||
        (st = tc_rt_hb_start(world, deadline)) != TC_OK)
        goto err;
    if (world->hb_ns) {
        /* heartbeats are sent by the progress thread, whatever the caller does */
        tc_rt_world_lock(world);
        st = tc_rt_world_go_threaded(world);
        tc_rt_world_unlock(world);
        if (st != TC_OK)
            goto err;
    }
    *world_p = world;
    return TC_OK;
err:
    tc_rt_world_lock(world);
    tc_rt_world_release(world);
    return st;
}

/* Creation runs with this thread marked as creating, so tc_comm_create_abort()
 * from another thread or a signal handler ends its bootstrap waits. */
tc_status_t tc_rt_comm_world_create(tc_boot_kind_t boot, const tc_boot_kv_params_t *kv,
                                    const tc_hints_t *hints, uint64_t deadline,
                                    tc_rt_world_t **world_p)
{
    tc_boot_creation_begin();
    tc_status_t st = world_assemble(boot, kv, hints, deadline, world_p);
    tc_boot_creation_end();
    return st;
}

void tc_rt_world_release(tc_rt_world_t *world)
{
    if (!world)
        return;
    if (--world->refs > 0) {
        tc_rt_world_unlock(world);
        return;
    }
    tc_rt_hb_leave(world);
    tc_rt_progress_stop(world); /* unlocks */
    tc_rt_world_close_backends(world);
    tc_rt_ft_free(world); /* after the endpoints: their requests point into it */
    tc_rt_ids_free(world);
    tc_rt_world_free(world);
}
