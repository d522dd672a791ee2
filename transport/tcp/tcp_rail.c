/* Several rails: failover of lost data sockets.
 *
 * Between two peers that both list several interfaces (TC_SOCKET_IFNAME), data socket k runs
 * on rail k % rails and the primary on rail 0. A data socket is lost when it resets, fails a
 * send or recv, ends while in use, or holds data the peer has not acknowledged for
 * TC_SOCKET_RAIL_TIMEOUT_MS while the kernel retransmits it (a cable pulled, an interface down:
 * tc_tcp_rail_watch reads TCP_INFO of the data sockets a few times per timeout, only while
 * striped sends to such peers are in flight, never per message; TCP_USER_TIMEOUT is not used
 * because it also aborts a socket whose reader is merely slow, a zero window). Then:
 *
 * - this side closes it, forgets the chunk it was reading (its bit in the receiver's map stays
 *   clear) and the chunk it was writing, and tells the peer on the primary (LDOWN k), which does
 *   the same for its direction: bytes the peer's kernel had acknowledged but this side had not
 *   read yet are gone with the socket, and only the sender can send them again;
 * - every striped send not acknowledged by the receiver (LACK) is sent again from its first
 *   chunk, flagged RESENT, on the sockets left (the primary included). The receiver's map drops
 *   the copies of chunks it has, so none is lost or counted twice; a RESENT chunk of a message
 *   already complete there is dropped whole;
 * - one warning names the peer, the socket, its rail and interface, the reason and the bytes
 *   sent again.
 *
 * The endpoint fails only when the primary goes (it carries tag order and small messages,
 * which are not kept for sending again): losing rail 0 fails the peer. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "tcomms/base/log.h"
#include "tcomms/base/time.h"
#include "tcp_internal.h"

int tc_tcp_rail_bind(const tc_tcp_ctx_t *ctx, const tc_tcp_lane_t *lane, int fd)
{
    if (lane->ep->nrails <= 1)
        return 1;
    struct sockaddr_in from = {.sin_family = AF_INET, .sin_port = 0};
    from.sin_addr = ctx->rails[lane->rail].ip;
    return bind(fd, (const struct sockaddr *)&from, sizeof(from)) == 0;
}

void tc_tcp_rail_watch(tc_tcp_ctx_t *ctx)
{
    uint64_t now = tc_time_ns();
    if (now < ctx->rail_watch_ns)
        return;
    ctx->rail_watch_ns = tc_deadline_add_ms(now, (uint64_t)ctx->rail_timeout_ms / 4);
    unsigned limit = (unsigned)ctx->rail_timeout_ms;
    for (tc_tcp_ep_t *ep = ctx->eps; ep != NULL; ep = ep->next) {
        for (int i = 0; ep->nrails > 1 && ep->nlq > 0 && i < ep->nsocks - 1; i++) {
            tc_tcp_lane_t *lane = &ep->lanes[i];
            if (ep->state != TC_TCP_EP_UP || lane->state != TC_TCP_LANE_UP)
                continue;
            struct tcp_info ti;
            socklen_t len = sizeof(ti);
            memset(&ti, 0, sizeof(ti));
            if (getsockopt(lane->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0)
                continue;
            /* in flight, retransmitted at least once since the last acknowledgement, and that
             * is too old: a zero window (a slow reader) keeps acknowledging and is not this */
            if (ti.tcpi_unacked > 0 && ti.tcpi_retransmits > 0 && ti.tcpi_last_ack_recv >= limit)
                tc_tcp_rail_lane_lost(ctx, lane,
                                      "no acknowledgement for %u ms with %u segments in flight",
                                      ti.tcpi_last_ack_recv, ti.tcpi_unacked);
        }
    }
}

/* Send again every striped send the receiver has not acknowledged; returns the bytes. */
static uint64_t tc_tcp_rail_resend(tc_tcp_ep_t *ep, size_t *nmsg_p)
{
    uint64_t bytes = 0;
    size_t nmsg = 0;
    for (tc_tp_req_t *req = ep->lq_head; req != NULL; req = TC_TCP_REQ_NEXT(req)) {
        if ((req->priv[TC_TCP_P_LFLAGS] & TC_TCP_LF_ACKED) || req->priv[TC_TCP_P_LNEXT] == 0)
            continue; /* complete at the peer, or no chunk out yet */
        bytes += req->priv[TC_TCP_P_LNEXT];
        nmsg++;
        req->priv[TC_TCP_P_LNEXT] = 0;
        req->priv[TC_TCP_P_LFLAGS] |= TC_TCP_LF_RESENT;
    }
    *nmsg_p = nmsg;
    return bytes;
}

/* Drop @p lane and send again what the peer may lack; @p tell: say so to the peer. */
static void tc_tcp_rail_failover(tc_tcp_ctx_t *ctx, tc_tcp_lane_t *lane, int tell,
                                 const char *reason)
{
    tc_tcp_ep_t *ep = lane->ep;
    tc_tp_req_t *writing = tc_tcp_lane_drop(ctx, lane);
    ep->lanes_lost++;
    size_t nmsg;
    uint64_t bytes = tc_tcp_rail_resend(ep, &nmsg);
    int left = 1; /* the primary */
    for (int i = 0; i < ep->nsocks - 1; i++)
        left += ep->lanes[i].state == TC_TCP_LANE_UP;
    tc_log_warn(TC_SUBSYS_TRANSPORT,
                "tcp: peer %llu (%s): lost data socket %d of %d on rail %d (interface %s): %s; "
                "sending %llu bytes of %zu striped message%s again on the %d socket%s left",
                (unsigned long long)ep->super.peer_id, ep->peer_str, lane->index, ep->nsocks,
                lane->rail, ctx->rails[lane->rail].name, reason, (unsigned long long)bytes, nmsg,
                nmsg == 1 ? "" : "s", left, left == 1 ? "" : "s");
    if (tell && !tc_tcp_ctl_push(ctx, ep, TC_TCP_K_LDOWN, NULL, 0, (uint64_t)lane->index, 0))
        return;
    if (writing != NULL)
        tc_tcp_lq_try_done(ctx, ep, writing);
    if (ep->state != TC_TCP_EP_UP)
        return;
    tc_tcp_lanes_kick(ctx, ep);
    if (ep->state == TC_TCP_EP_UP)
        tc_tcp_ep_flush(ctx, ep);
}

int tc_tcp_rail_lane_lost(tc_tcp_ctx_t *ctx, tc_tcp_lane_t *lane, const char *fmt, ...)
{
    tc_tcp_ep_t *ep = lane->ep;
    if (ep->nrails <= 1 || lane->state != TC_TCP_LANE_UP)
        return 0;
    char reason[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof(reason), fmt, ap);
    va_end(ap);
    tc_tcp_rail_failover(ctx, lane, 1, reason);
    return 1;
}

void tc_tcp_rail_ack_send(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, uint64_t id)
{
    (void)tc_tcp_ctl_push(ctx, ep, TC_TCP_K_LACK, NULL, 0, id, 0); /* fails the endpoint if not */
}

void tc_tcp_rail_on_ctl(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, const unsigned char *hdr)
{
    uint64_t word0 = tc_tcp_get_u64(hdr);
    int kind = hdr[15];
    uint64_t len = tc_tcp_get_u64(hdr + 8) & TC_TCP_LEN_MASK;
    uint64_t rest = tc_tcp_get_u64(hdr + 16) | tc_tcp_get_u64(hdr + 24);
    const char *what = kind == TC_TCP_K_LACK ? "chunk ack" : "lane down";
    if (ep->nrails <= 1 || len != 0 || rest != 0) {
        tc_tcp_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                       "sent a %s (%llu, length %llu) %s: corrupt or hostile stream", what,
                       (unsigned long long)word0, (unsigned long long)len,
                       ep->nrails <= 1 ? "to a pair with one rail" : "with non-zero fields");
        return;
    }
    if (kind == TC_TCP_K_LDOWN) {
        if (word0 == 0 || word0 >= (uint64_t)ep->nsocks) {
            tc_tcp_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                           "sent a lane down for data socket %llu of %d: corrupt or hostile "
                           "stream",
                           (unsigned long long)word0, ep->nsocks);
            return;
        }
        tc_tcp_lane_t *lane = &ep->lanes[word0 - 1];
        if (lane->state == TC_TCP_LANE_UP)
            tc_tcp_rail_failover(ctx, lane, 0, "the peer lost it");
        return;
    }
    tc_tp_req_t *req = tc_tcp_lq_find(ep, word0);
    if (req == NULL) {
        tc_tcp_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                       "acknowledged striped message %llu, which is not being sent: corrupt or "
                       "hostile stream",
                       (unsigned long long)word0);
        return;
    }
    req->priv[TC_TCP_P_LFLAGS] |= TC_TCP_LF_ACKED;
    req->priv[TC_TCP_P_LNEXT] = req->priv[TC_TCP_P_LEN]; /* no more copies */
    tc_tcp_lq_try_done(ctx, ep, req);
}
