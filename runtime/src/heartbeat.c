/* Heartbeats (TC_HEARTBEAT_MS > 0): every rank sends a small message to each
 * peer it is connected to every TC_HEARTBEAT_MS, and keeps a receive posted
 * for the peer's. A peer heard from for TC_HEARTBEAT_MISSES periods is taken
 * as failed: this finds peers that hang without dying (a stopped process, a
 * frozen node), which no connection and no launcher reports. The progress
 * thread runs for as long as heartbeats are on, so a rank busy outside
 * tcomms still sends them; a stopped process sends none.
 *
 * State grows with the peers used, never with the world size. Heartbeats use
 * a communicator id no communicator gets (TC_RT_HB_COMM_ID). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"

typedef struct tc_rt_hb {
    int peer;       /* world rank */
    tc_tp_ep_t *ep; /* the endpoint the requests were posted on */
    tc_tp_req_t rreq, sreq;
    uint64_t rbuf, sbuf;
    uint64_t last_heard; /* ns */
    uint64_t last_sent;  /* ns */
    int reported;
} tc_rt_hb_t;

static uint64_t hb_tag(void)
{
    return tc_rt_tag(TC_RT_HB_COMM_ID, TC_RT_TAG_COLL, 0);
}

tc_status_t tc_rt_hb_init(tc_rt_world_t *world)
{
    int64_t ms, misses;
    tc_status_t st = tc_config_int("TC_HEARTBEAT_MS", 0, 0, 3600000, &ms);
    if (st == TC_OK)
        st = tc_config_int("TC_HEARTBEAT_MISSES", 3, 2, 1000, &misses);
    if (st != TC_OK)
        return st;
    world->hb_ns = (uint64_t)ms * 1000000ull;
    world->hb_misses = (int)misses;
    tc_hmap_init(&world->hb);
    if (ms > 0)
        tc_log_info(TC_SUBSYS_RUNTIME,
                    "heartbeats every %lld ms; a peer silent for %lld of "
                    "them is failed",
                    (long long)ms, (long long)misses);
    return TC_OK;
}

void tc_rt_hb_free(tc_rt_world_t *world)
{
    size_t iter = 0;
    uint64_t peer;
    void *hb;
    while (tc_hmap_next(&world->hb, &iter, &peer, &hb))
        free(hb);
    tc_hmap_free(&world->hb);
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
    if (!world->hb_ns || tc_hmap_get(&world->hb, (uint64_t)peer))
        return;
    tc_rt_hb_t *hb = calloc(1, sizeof(*hb));
    if (!hb || tc_hmap_put(&world->hb, (uint64_t)peer, hb) != TC_OK) {
        free(hb); /* without heartbeats this peer is still found by its connection */
        return;
    }
    hb->peer = peer;
    hb->ep = ep;
    hb->last_heard = tc_time_ns();
    hb->sreq = (tc_tp_req_t)TC_TP_REQ_INIT;
    hb->sreq.status = TC_OK;
    hb_post_recv(hb);
}

void tc_rt_hb_tick(tc_rt_world_t *world, uint64_t now)
{
    if (!world->hb_ns || now < world->hb_next)
        return;
    world->hb_next = now + world->hb_ns / 4;
    size_t iter = 0;
    uint64_t key;
    void *v;
    while (tc_hmap_next(&world->hb, &iter, &key, &v)) {
        tc_rt_hb_t *hb = v;
        const tc_tp_ep_t *ep = tc_rt_world_ep_get(world, (int)key);
        if (hb->reported || !ep || ep != hb->ep)
            continue;                   /* already failed, or the endpoint was closed */
        if (hb->rreq.status == TC_OK) { /* heard: again */
            hb->last_heard = now;
            hb_post_recv(hb);
        }
        if (hb->sreq.status != TC_INPROGRESS && now - hb->last_sent >= world->hb_ns) {
            hb->sreq = (tc_tp_req_t)TC_TP_REQ_INIT;
            hb->sbuf = now;
            hb->last_sent = now;
            if (tc_tp_send(hb->ep, hb_tag(), &hb->sbuf, sizeof(hb->sbuf), &hb->sreq) < 0)
                hb->sreq.status = TC_ERR_PEER_FAILED;
        }
        uint64_t silent = now - hb->last_heard;
        if (silent > (uint64_t)world->hb_misses * world->hb_ns) {
            char why[128];
            snprintf(why, sizeof(why),
                     "sent no heartbeat for %llu ms (TC_HEARTBEAT_MS %llu, "
                     "%d missed)",
                     (unsigned long long)(silent / 1000000),
                     (unsigned long long)(world->hb_ns / 1000000), world->hb_misses);
            hb->reported = 1;
            const tc_rt_failed_t *f = tc_rt_world_note_failure(world, hb->peer, why, 0);
            if (f) {
                /* a silent process is not confirmed dead: tell the others
                 * anyway, it is what heartbeats are for */
                tc_boot_event_t ev = {TC_BOOT_EV_PROC_FAILED, hb->peer, 0, 0};
                (void)tc_boot_notify(world->boot, &ev);
                world->hooks.failed(world, f);
            }
            iter = 0; /* failing communicators may have closed endpoints */
        }
    }
}
