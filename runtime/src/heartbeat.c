/* Heartbeats, on by default (TC_HEARTBEAT_MS, 250; 0 turns them off): each
 * rank exchanges a small message every period with its watch neighbours
 * only (tcomms/runtime/watch.h: at most TC_RT_WATCH_MAX, whatever the size
 * of the job), connected when the world is made. A neighbour heard from for
 * TC_HEARTBEAT_MISSES (8) periods is failed: this finds a process that
 * stopped, a node whose link went silent or whose processes all died, which
 * no connection and no launcher may report. The verdict names the rank with
 * the host and pid learnt at the start, goes to the bootstrap's channel
 * (rank 0's store, PMIx) and to the neighbours, who pass it on (verdict.c),
 * so it reaches every rank even when rank 0's node is the one gone.
 *
 * The progress thread runs while heartbeats are on and does this duty every
 * quarter period (progress.c), so a rank busy outside tcomms still sends
 * them; blocking calls do it one progress pass in 64. A neighbour that
 * leaves says goodbye (a heartbeat of 0) and is no longer watched.
 *
 * Bytes arriving from the neighbour count as a heartbeat (the transport's
 * rx_bytes, looked at every quarter period): on a link shared with bulk
 * data a heartbeat waits in the same connection behind megabytes of it
 * (seconds at 1 Gbit/s with every rank sending), and a neighbour whose data
 * flows is not silent.
 *
 * Heartbeats and verdicts use a communicator id no communicator gets
 * (TC_RT_HB_COMM_ID). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartbeat.h"
#include "tcomms/base/log.h"
#include "tcomms/base/proc.h"
#include "tcomms/base/time.h"
#include "tcomms/runtime/watch.h"

#define HB_DEFAULT_MS 250
#define HB_DEFAULT_MISSES 8
#define HB_LEAVE_MS 150 /* longest wait for the goodbyes, ours and the neighbours' */

static uint64_t hb_tag(void)
{
    return tc_rt_tag(TC_RT_HB_COMM_ID, TC_RT_TAG_COLL, 0);
}

tc_status_t tc_rt_hb_init(tc_rt_world_t *world)
{
    int64_t ms, misses;
    tc_status_t st = tc_config_int("TC_HEARTBEAT_MS", HB_DEFAULT_MS, 0, 3600000, &ms);
    if (st == TC_OK)
        st = tc_config_int("TC_HEARTBEAT_MISSES", HB_DEFAULT_MISSES, 2, 1000, &misses);
    if (st != TC_OK)
        return st;
    world->hb_ns = (uint64_t)ms * 1000000ull;
    world->hb_misses = (int)misses;
    int peers[TC_RT_WATCH_MAX];
    int n = ms > 0 ? tc_rt_watch_peers(world->boot->size, world->boot->local_size,
                                       world->boot->rank, peers)
                   : 0;
    if (n == 0)
        return TC_OK;
    world->hb = calloc((size_t)n, sizeof(*world->hb));
    if (!world->hb)
        return tc_error_set(TC_ERR_NO_MEMORY, "heartbeats: no memory for %d neighbours", n);
    world->nhb = n;
    char list[TC_RT_WATCH_MAX * 12] = "";
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        world->hb[i].peer = peers[i];
        world->hb[i].pid = -1;
        len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d", i ? " " : "", peers[i]);
    }
    tc_log_info(TC_SUBSYS_RUNTIME,
                "heartbeats every %lld ms with ranks %s; a neighbour silent for %lld of them "
                "is failed",
                (long long)ms, list, (long long)misses);
    return TC_OK;
}

tc_status_t tc_rt_hb_start(tc_rt_world_t *world, uint64_t deadline)
{
    for (int i = 0; i < world->nhb; i++) {
        tc_rt_hb_t *hb = &world->hb[i];
        tc_tp_ep_t *ep;
        tc_status_t st = tc_rt_world_proc(world, hb->peer, deadline, &hb->pid, hb->host);
        if (st != TC_OK || (st = tc_rt_world_ep(world, hb->peer, deadline, &ep)) != TC_OK) {
            tc_error_prefix("heartbeats: watch neighbour rank %d: ", hb->peer);
            return st;
        }
    }
    return TC_OK;
}

tc_rt_hb_t *tc_rt_hb_find(const tc_rt_world_t *world, int rank)
{
    for (int i = 0; i < world->nhb; i++)
        if (world->hb[i].peer == rank)
            return &world->hb[i];
    return NULL;
}

int tc_rt_hb_proc(const tc_rt_world_t *world, int rank, int *pid_p, char host[TC_RT_HOST_MAX])
{
    const tc_rt_hb_t *hb = tc_rt_hb_find(world, rank);
    if (!hb || !hb->host[0])
        return 0;
    *pid_p = hb->pid;
    memcpy(host, hb->host, sizeof(hb->host));
    return 1;
}

/* Post the receive for the next heartbeat of @p hb's peer. */
static void hb_post_recv(tc_rt_hb_t *hb)
{
    hb->rreq = (tc_tp_req_t)TC_TP_REQ_INIT;
    if (tc_tp_recv(hb->ep, hb_tag(), &hb->rbuf, sizeof(hb->rbuf), &hb->rreq) < 0)
        hb->rreq.status = TC_ERR_PEER_FAILED;
}

void tc_rt_hb_peer(tc_rt_world_t *world, int peer, tc_tp_ep_t *ep)
{
    tc_rt_hb_t *hb = tc_rt_hb_find(world, peer);
    if (!hb || hb->reported || hb->left)
        return;
    if (!hb->ep)
        hb->last_heard = tc_time_ns(); /* the first endpoint: the clock starts */
    hb->ep = ep;
    hb->sreq = (tc_tp_req_t)TC_TP_REQ_INIT;
    hb->sreq.status = TC_OK;
    hb->vsreq = hb->sreq;
    hb_post_recv(hb);
    tc_rt_verdict_post(hb);
}

/* Take in what came from @p hb's neighbour: a heartbeat (post the receive of
 * the next), or its goodbye (take back the verdict's receive: it closes
 * next, and a receive left posted would be reported as lost). 1 when it left. */
static int hb_heard(tc_rt_hb_t *hb, uint64_t now)
{
    if (hb->rreq.status != TC_OK)
        return 0;
    if (hb->rbuf != 0) {
        hb->last_heard = now;
        hb_post_recv(hb);
        return 0;
    }
    hb->left = 1;
    if (hb->vrreq.status == TC_INPROGRESS && hb->ep->ops->cancel)
        (void)hb->ep->ops->cancel(hb->ep, &hb->vrreq);
    tc_log_debug(TC_SUBSYS_RUNTIME, "heartbeats: rank %d left", hb->peer);
    return 1;
}

/* Send a heartbeat carrying @p value (0: goodbye). */
static void hb_send(tc_rt_hb_t *hb, uint64_t value, uint64_t now)
{
    hb->sreq = (tc_tp_req_t)TC_TP_REQ_INIT;
    hb->sbuf = value;
    hb->last_sent = now;
    if (tc_tp_send(hb->ep, hb_tag(), &hb->sbuf, sizeof(hb->sbuf), &hb->sreq) < 0)
        hb->sreq.status = TC_ERR_PEER_FAILED;
}

/* Whether @p hb's silent neighbour is a process of this node that the kernel shows alive and not
 * stopped: then its silence is not a failure but a node with far more ranks than cores, where a
 * process may not run for seconds (256 ranks on 2 cores: 2 s,
 * bench/results/2026-12-04-tcrun-ds21.txt). What the silence is for here, a process that died or
 * stopped, the kernel says; a live one wedged inside tcomms is named by the operations' timeouts.
 * Looked at once per period while silent. */
static int hb_runs_here(tc_rt_world_t *world, tc_rt_hb_t *hb, uint64_t silent, uint64_t now)
{
    if (hb->pid <= 0 || strcmp(hb->host, world->boot->host) != 0)
        return 0;
    if (hb->runs_seen && now - hb->runs_seen < world->hb_ns)
        return 1;
    int state = tc_proc_state(hb->pid);
    if (state <= 0 || strchr("TtZXx", state)) /* gone, unreadable, stopped or dead */
        return 0;
    if (!hb->runs_seen)
        tc_log_info(TC_SUBSYS_RUNTIME,
                    "heartbeats: watch neighbour rank %d (pid %d) sent none for %llu ms, but it "
                    "runs on this node: not failed (more ranks than cores?)",
                    hb->peer, hb->pid, (unsigned long long)(silent / 1000000));
    hb->runs_seen = now;
    return 1;
}

/* @p hb's neighbour has been silent too long: fail it, tell everyone. */
static void hb_fail(tc_rt_world_t *world, tc_rt_hb_t *hb, uint64_t silent)
{
    char why[160];
    snprintf(why, sizeof(why),
             "sent no heartbeat for %llu ms to its watch neighbour rank %d (TC_HEARTBEAT_MS "
             "%llu, %d missed)",
             (unsigned long long)(silent / 1000000), world->boot->rank,
             (unsigned long long)(world->hb_ns / 1000000), world->hb_misses);
    hb->reported = 1;
    const tc_rt_failed_t *f =
        tc_rt_world_note_failure_at(world, hb->peer, why, 0, TC_RT_FAIL_SPREAD | TC_RT_FAIL_SILENT,
                                    hb->pid, hb->host[0] ? hb->host : NULL);
    if (!f)
        return;
    /* A silent process is not confirmed dead: tell the others anyway, it is
     * what heartbeats are for (verdict.c passes it to the neighbours; a
     * neighbour that hears the rank itself does not believe it). */
    tc_boot_event_t ev = {TC_BOOT_EV_PROC_FAILED, hb->peer, 0, 0, 0, 1};
    if (tc_boot_notify(world->boot, &ev) != TC_OK)
        tc_log_debug(TC_SUBSYS_RUNTIME, "heartbeats: the bootstrap did not take the verdict: %s",
                     tc_last_error());
    world->hooks.failed(world, f);
}

void tc_rt_hb_tick(tc_rt_world_t *world, uint64_t now)
{
    if (!world->hb_ns || now < world->hb_next)
        return;
    world->hb_next = now + world->hb_ns / 4;
    for (int i = 0; i < world->nhb; i++) {
        tc_rt_hb_t *hb = &world->hb[i];
        if (hb->reported || hb->left || !hb->ep)
            continue; /* failed, gone, or not yet connected */
        /* An endpoint closed under it (an operation could not take a request
         * back: its peer is mostly dead) brings no heartbeat: the silence
         * decides, its clock running on (a new endpoint re-arms it). */
        if (tc_rt_world_ep_get(world, hb->peer) == hb->ep) {
            if (hb_heard(hb, now))
                continue; /* it left */
            if (hb->ep->rx_bytes != hb->rx_seen) { /* its data arrives: it lives */
                hb->rx_seen = hb->ep->rx_bytes;
                hb->last_heard = now;
            }
            tc_rt_verdict_tick(world, hb, now);
            if (hb->reported) /* a verdict about the neighbour itself */
                continue;
            if (hb->sreq.status != TC_INPROGRESS && now - hb->last_sent >= world->hb_ns &&
                !world->fault.mute)
                hb_send(hb, now, now);
        }
        uint64_t silent = now - hb->last_heard;
        if (silent > (uint64_t)world->hb_misses * world->hb_ns &&
            !hb_runs_here(world, hb, silent, now))
            hb_fail(world, hb, silent);
    }
}

int tc_rt_hb_believe(tc_rt_world_t *world, int rank, int reporter, int silent, uint64_t now)
{
    const tc_rt_hb_t *hb = tc_rt_hb_find(world, rank);
    tc_rt_watch_case_t c = {
        .size = world->boot->size,
        .self = world->boot->rank,
        .accused = rank,
        .accuser = reporter,
        .silent = silent,
        .accused_known = tc_rt_world_failed(world, rank) != NULL,
        .accuser_failed = reporter >= 0 && tc_rt_world_failed(world, reporter) != NULL,
        .accused_watched = hb && !hb->reported && !hb->left && hb->ep,
        .heard_ago_ns = hb && now > hb->last_heard ? now - hb->last_heard : 0,
        .period_ns = world->hb_ns,
    };
    tc_rt_watch_judgement_t j = tc_rt_watch_judge(&c);
    static const char *const why[] = {
        [TC_RT_WATCH_ABOUT_SELF] = "it names this rank, which lives",
        [TC_RT_WATCH_ACCUSER_FAILED] = "its reporter is failed here",
        [TC_RT_WATCH_ACCUSED_HEARD] = "this rank heard it within the last two periods",
        [TC_RT_WATCH_BAD] = "a rank out of range",
    };
    if (j == TC_RT_WATCH_ACCEPT || j == TC_RT_WATCH_KNOWN)
        return j == TC_RT_WATCH_ACCEPT;
    if (j == TC_RT_WATCH_ABOUT_SELF && reporter >= 0) /* a shrink that leaves it out fails */
        __atomic_store_n(&world->accuser1, reporter + 1, __ATOMIC_RELAXED);
    tc_log_warn(TC_SUBSYS_RUNTIME, "a verdict that rank %d failed, from rank %d, not believed: %s",
                rank, reporter, why[j]);
    return 0;
}

void tc_rt_hb_leave(tc_rt_world_t *world)
{
    /* Until every neighbour has our goodbye and has said its own (they leave
     * together at the end of a job), or HB_LEAVE_MS: a neighbour still at
     * work takes in the goodbye at its next duty, a quarter period away. */
    uint64_t now = tc_time_ns(), deadline = tc_deadline_after_ms(HB_LEAVE_MS);
    int pending = world->hb_ns != 0;
    /* Leaving, this rank takes no more verdicts: their receives are taken back first. Left
     * posted, a neighbour's goodbye and its close could arrive in one transport pass, before
     * the goodbye is looked at, and the close would report the receive as lost (a warning). */
    for (int i = 0; pending && i < world->nhb; i++) {
        tc_rt_hb_t *hb = &world->hb[i];
        if (!hb->reported && hb->ep && tc_rt_world_ep_get(world, hb->peer) == hb->ep &&
            hb->vrreq.status == TC_INPROGRESS && hb->ep->ops->cancel)
            (void)hb->ep->ops->cancel(hb->ep, &hb->vrreq);
    }
    while (pending && now < deadline) {
        pending = 0;
        for (int i = 0; i < world->nhb; i++) {
            tc_rt_hb_t *hb = &world->hb[i];
            if (hb->reported || !hb->ep || tc_rt_world_ep_get(world, hb->peer) != hb->ep)
                continue; /* failed, or not connected */
            if (!hb->left)
                hb->left = hb_heard(hb, now);
            if (hb->sreq.status == TC_INPROGRESS || hb->vsreq.status == TC_INPROGRESS) {
                pending = 1; /* a heartbeat or a verdict still going, or the goodbye */
            } else if (!hb->said_bye) {
                hb_send(hb, 0, now);
                hb->said_bye = pending = 1;
            }
            pending |= !hb->left;
        }
        if (pending) {
            (void)tc_rt_world_progress_tp(world);
            now = tc_time_ns();
        }
    }
    world->hb_ns = 0; /* no more duty: the endpoints close next */
}

void tc_rt_hb_free(tc_rt_world_t *world)
{
    free(world->hb);
    world->hb = NULL;
    world->nhb = 0;
}
