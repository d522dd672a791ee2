/* Verdicts over the data network: a rank passes every failure it holds as
 * certain (a watch neighbour silent too long, a process found gone on its
 * host, the launcher's or a peer's notice) to each of its watch neighbours,
 * one message at a time per neighbour, and each passes on what it believes
 * (tcomms/runtime/watch.h, tc_rt_watch_judge). The graph is connected, so a
 * verdict reaches every rank that can be reached, whatever the bootstrap's
 * channel does: rank 0's store may be on the node that vanished. Each hop
 * waits for the next heartbeat duty of the receiving rank (a quarter of a
 * period at most). A failure is sent once per neighbour: memory is one
 * message each way per neighbour. */
#include <stdio.h>
#include <string.h>

#include "heartbeat.h"
#include "tcomms/base/log.h"

static uint64_t verdict_tag(void)
{
    return tc_rt_tag(TC_RT_HB_COMM_ID, TC_RT_TAG_P2P, 0);
}

void tc_rt_verdict_post(tc_rt_hb_t *hb)
{
    hb->vrreq = (tc_tp_req_t)TC_TP_REQ_INIT;
    if (tc_tp_recv(hb->ep, verdict_tag(), &hb->vrbuf, sizeof(hb->vrbuf), &hb->vrreq) < 0)
        hb->vrreq.status = TC_ERR_PEER_FAILED;
}

/* A verdict arrived from @p hb's neighbour: believe it or not. */
static void verdict_take(tc_rt_world_t *world, tc_rt_hb_t *hb, uint64_t now)
{
    tc_rt_verdict_msg_t m = hb->vrbuf;
    if (!tc_rt_verdict_valid(&m, hb->vrreq.bytes, world->boot->size)) {
        tc_log_warn(TC_SUBSYS_RUNTIME,
                    "heartbeats: a malformed verdict from rank %d (%zu bytes, magic 0x%08x, "
                    "rank %d of %d): dropped",
                    hb->peer, (size_t)hb->vrreq.bytes, m.magic, m.rank, world->boot->size);
        return;
    }
    if (!tc_rt_hb_believe(world, m.rank, hb->peer, m.silent != 0, now))
        return;
    char why[160];
    snprintf(why, sizeof(why), "%s (told by rank %d, host %s)",
             m.silent ? "its watchers found it silent" : "a rank saw its process gone", hb->peer,
             hb->host[0] ? hb->host : "?");
    const tc_rt_failed_t *f = tc_rt_world_note_failure_at(
        world, m.rank, why, 0, TC_RT_FAIL_SPREAD | (m.silent ? TC_RT_FAIL_SILENT : 0), m.pid,
        m.host[0] ? m.host : NULL);
    if (f)
        world->hooks.failed(world, f);
}

/* Send @p hb's neighbour the next failure it has not been told, if any. */
static void verdict_forward(tc_rt_world_t *world, tc_rt_hb_t *hb)
{
    while (hb->vsreq.status != TC_INPROGRESS && hb->forwarded < world->nfailed) {
        const tc_rt_failed_t *f = &world->failed[hb->forwarded++];
        if (!f->spread || f->rank == hb->peer)
            continue;
        memset(&hb->vsbuf, 0, sizeof(hb->vsbuf));
        hb->vsbuf.magic = TC_RT_VERDICT_MAGIC;
        hb->vsbuf.rank = f->rank;
        hb->vsbuf.pid = f->pid;
        hb->vsbuf.silent = f->silent;
        snprintf(hb->vsbuf.host, sizeof(hb->vsbuf.host), "%s", f->host);
        hb->vsreq = (tc_tp_req_t)TC_TP_REQ_INIT;
        if (tc_tp_send(hb->ep, verdict_tag(), &hb->vsbuf, sizeof(hb->vsbuf), &hb->vsreq) < 0)
            hb->vsreq.status = TC_ERR_PEER_FAILED;
    }
}

void tc_rt_verdict_tick(tc_rt_world_t *world, tc_rt_hb_t *hb, uint64_t now)
{
    if (hb->vrreq.status == TC_OK) {
        verdict_take(world, hb, now);
        if (hb->reported || !hb->ep || tc_rt_world_ep_get(world, hb->peer) != hb->ep)
            return; /* it named the neighbour itself, or its endpoint went */
        tc_rt_verdict_post(hb);
    }
    verdict_forward(world, hb);
}
