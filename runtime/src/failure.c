/* Failed ranks: learnt from a transport (a closed connection, a shared-memory
 * peer whose process is gone), from the launcher (PMIx "process terminated")
 * or from another rank's notice. Each failure is recorded once per process
 * with the rank's host and pid; the world's hook "failed" then breaks every
 * communicator holding the rank (comm_world.c), whose pending operations end
 * with TC_ERR_PEER_FAILED naming it. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "ft.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"

#define TC_RT_PROC_INFO_MS 500 /* how long to ask the bootstrap for a failed rank's host/pid */

tc_status_t tc_rt_ft_init(tc_rt_world_t *world)
{
    tc_status_t st = tc_rt_hb_init(world);
    return st == TC_OK ? tc_rt_fault_init(world) : st;
}

void tc_rt_ft_free(tc_rt_world_t *world)
{
    tc_rt_hb_free(world);
    free(world->failed);
    world->failed = NULL;
}

const tc_rt_failed_t *tc_rt_world_failed(const tc_rt_world_t *world, int rank)
{
    for (int i = 0; i < world->nfailed; i++)
        if (world->failed[i].rank == rank)
            return &world->failed[i];
    return NULL;
}

void tc_rt_failed_describe(const tc_rt_failed_t *f, int rank, int renumbered, char *buf, size_t cap)
{
    char pid[24] = "?";
    if (f->pid >= 0)
        snprintf(pid, sizeof(pid), "%d", f->pid);
    if (renumbered)
        snprintf(buf, cap, "rank %d (world rank %d, host %s, pid %s)", rank, f->rank, f->host, pid);
    else
        snprintf(buf, cap, "rank %d (host %s, pid %s)", rank, f->host, pid);
}

const tc_rt_failed_t *tc_rt_world_note_failure(tc_rt_world_t *world, int rank, const char *why,
                                               int notify)
{
    return tc_rt_world_note_failure_at(world, rank, why, notify, 0, -1, NULL);
}

const tc_rt_failed_t *tc_rt_world_note_failure_at(tc_rt_world_t *world, int rank, const char *why,
                                                  int notify, int how, int pid, const char *host)
{
    const tc_rt_failed_t *known = tc_rt_world_failed(world, rank);
    if (known || rank < 0 || rank >= world->boot->size || rank == world->boot->rank)
        return known;
    if (world->nfailed == world->failed_cap) {
        int cap = world->failed_cap ? world->failed_cap * 2 : 4;
        tc_rt_failed_t *f = realloc(world->failed, (size_t)cap * sizeof(*f));
        if (!f)
            return NULL; /* the failure still ends the operations that saw it */
        world->failed = f;
        world->failed_cap = cap;
    }
    tc_rt_failed_t *f = &world->failed[world->nfailed++];
    memset(f, 0, sizeof(*f));
    f->rank = rank;
    f->pid = pid;
    f->when_ns = tc_time_ns();
    f->spread = (how & TC_RT_FAIL_SPREAD) != 0;
    f->silent = (how & TC_RT_FAIL_SILENT) != 0;
    snprintf(f->host, sizeof(f->host), "%s", host ? host : "?");
    snprintf(f->why, sizeof(f->why), "%s", why);
    char saved[256];
    snprintf(saved, sizeof(saved), "%s", tc_last_error());
    /* Host and pid were published at start-up: a watch neighbour's were learnt
     * then; otherwise the bootstrap still has them (unless it died with the
     * rank). Bounded: a failure report never waits long. */
    int proc_pid;
    char proc_host[TC_RT_HOST_MAX];
    if (!host && tc_rt_hb_proc(world, rank, &f->pid, f->host)) {
        /* known since the start */
    } else if (!host && tc_rt_world_proc(world, rank, tc_deadline_after_ms(TC_RT_PROC_INFO_MS),
                                         &proc_pid, proc_host) == TC_OK) {
        f->pid = proc_pid;
        snprintf(f->host, sizeof(f->host), "%s", proc_host);
    }
    tc_error_set(TC_ERR_PEER_FAILED, "%s", saved);
    char desc[160];
    tc_rt_failed_describe(f, f->rank, 0, desc, sizeof(desc));
    tc_log_error(TC_SUBSYS_RUNTIME, "world %s failed: %s", desc, f->why);
    /* Tell the others only what is certain: a process on this host that is
     * gone. A connection that broke while its process lives (a cut link, a
     * peer that left the operation) is this rank's failure to see, not an
     * accusation to spread; real deaths elsewhere reach everyone through the
     * launcher, and silences through the watchers' verdicts (heartbeat.c). */
    int confirmed = f->pid > 0 && strcmp(f->host, world->boot->host) == 0 &&
                    kill((pid_t)f->pid, 0) != 0 && errno == ESRCH;
    if (confirmed)
        f->spread = 1;
    if (notify && confirmed) {
        tc_boot_event_t ev = {TC_BOOT_EV_PROC_FAILED, rank, 0, 0, 0, 0};
        if (tc_boot_notify(world->boot, &ev) != TC_OK)
            tc_log_debug(TC_SUBSYS_RUNTIME, "could not tell the other ranks: %s", tc_last_error());
        tc_error_set(TC_ERR_PEER_FAILED, "%s", saved);
    }
    return f;
}

void tc_rt_world_poll_events(tc_rt_world_t *world)
{
    tc_boot_event_t ev;
    while (tc_boot_poll_event(world->boot, &ev)) {
        if (ev.kind == TC_BOOT_EV_PROC_FAILED) {
            /* a peer's notice is judged like a verdict: not from a rank failed
             * here, not about a watch neighbour still heard (the cut-off side
             * of a partition accuses everyone) */
            if (!ev.from_launcher &&
                !tc_rt_hb_believe(world, ev.rank, ev.reporter - 1, ev.silent, tc_time_ns()))
                continue;
            char why[96];
            if (ev.from_launcher)
                snprintf(why, sizeof(why), "the launcher reported that its process ended");
            else if (ev.reporter > 0)
                snprintf(why, sizeof(why), "rank %d saw it fail", ev.reporter - 1);
            else
                snprintf(why, sizeof(why), "another rank saw it fail");
            const tc_rt_failed_t *f = tc_rt_world_note_failure_at(
                world, ev.rank, why, 0, TC_RT_FAIL_SPREAD | (ev.silent ? TC_RT_FAIL_SILENT : 0), -1,
                NULL);
            if (f)
                world->hooks.failed(world, f);
        } else if (ev.kind == TC_BOOT_EV_REVOKE && ev.rank != world->boot->rank) {
            world->hooks.revoked(world, ev.rank, ev.comm_id);
        }
    }
}
