/* Data sockets: the extra connections of an endpoint that carry chunks of striped messages.
 *
 * The connecting side opens them once the primary's ack arrived. Each runs the primary's
 * challenge-response (purpose "tcp/data") with a hello carrying the flag TC_TCP_HELLO_F_DATA,
 * its index and the token the primary's hello carried: hello, challenge (the acceptor's MAC is
 * checked), proof, ack; then it carries chunks both ways. The
 * accepting side takes a data socket only for a primary from the same id with the same token
 * (parked with it when that primary is parked), at an index below the primary's count and not
 * taken yet; anything else is refused with a reason and logged. A data socket that is refused
 * or fails its handshake fails the whole endpoint with TC_ERR_PEER_FAILED; one that fails, closes
 * or resets later does too with one rail, and fails over with several (tcp_rail.c).
 *
 * With several rails, data socket k runs on rail k % rails: from the local rail's address to the
 * peer's address on the same rail (the primary is on rail 0).
 *
 * Reads are exact (a header, then the payload straight into its destination) so that a socket
 * whose next chunk belongs to a message the primary has not announced yet can stop reading
 * without holding bytes of later chunks. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcomms/base/log.h"
#include "tcp_internal.h"

/* Largest single recv() straight into a destination (keeps the length an ssize_t). */
#define TC_TCP_LANE_RECV_CHUNK (1u << 30)

int tc_tcp_lanes_alloc(tc_tcp_ep_t *ep)
{
    if (ep->nsocks <= 1 || ep->lanes != NULL)
        return 1;
    ep->lanes = calloc((size_t)ep->nsocks - 1, sizeof(*ep->lanes));
    if (ep->lanes == NULL)
        return 0;
    for (int i = 0; i < ep->nsocks - 1; i++) {
        tc_tcp_lane_t *lane = &ep->lanes[i];
        lane->poll.kind = TC_TCP_POLL_LANE;
        lane->poll.owner = lane;
        lane->ep = ep;
        lane->index = i + 1;
        lane->rail = (i + 1) % (ep->nrails > 0 ? ep->nrails : 1);
        lane->fd = -1;
        lane->state = TC_TCP_LANE_OFF;
    }
    return 1;
}

static void tc_tcp_lane_update_events(tc_tcp_ctx_t *ctx, tc_tcp_lane_t *lane)
{
    if (lane->fd < 0)
        return;
    uint32_t want = 0;
    if (lane->state == TC_TCP_LANE_CONNECTING) {
        want = EPOLLOUT;
    } else {
        if (lane->rx_state != TC_TCP_LANE_RX_STALLED)
            want |= EPOLLIN;
        if (lane->pre_off < lane->pre_len || lane->tx.req != NULL)
            want |= EPOLLOUT;
    }
    if (lane->registered && want == lane->ev_mask)
        return;
    struct epoll_event ev = {.events = want, .data.ptr = &lane->poll};
    if (epoll_ctl(ctx->epfd, lane->registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, lane->fd, &ev) !=
        0) {
        tc_tcp_ep_fail(ctx, lane->ep, TC_ERR_SYSTEM,
                       "could not be watched on data socket %d: epoll_ctl: %s", lane->index,
                       strerror(errno));
        return;
    }
    lane->registered = 1;
    lane->ev_mask = want;
}

void tc_tcp_lanes_close(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep)
{
    for (int i = 0; ep->lanes != NULL && i < ep->nsocks - 1; i++) {
        tc_tcp_lane_t *lane = &ep->lanes[i];
        if (lane->fd < 0)
            continue;
        if (lane->registered)
            epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, lane->fd, NULL);
        close(lane->fd);
        lane->fd = -1;
        lane->registered = 0;
        lane->ev_mask = 0;
        lane->state = TC_TCP_LANE_OFF;
    }
}

static void tc_tcp_lane_flush(tc_tcp_ctx_t *ctx, tc_tcp_lane_t *lane)
{
    tc_tcp_ep_t *ep = lane->ep;
    while (ep->state == TC_TCP_EP_UP && lane->fd >= 0 &&
           (lane->state == TC_TCP_LANE_HANDSHAKE || lane->state == TC_TCP_LANE_PROOF ||
            lane->state == TC_TCP_LANE_UP)) {
        struct iovec iov[3];
        int n = 0;
        size_t total = 0;
        if (lane->pre_off < lane->pre_len) {
            iov[n].iov_base = lane->pre + lane->pre_off;
            iov[n].iov_len = lane->pre_len - lane->pre_off;
            total += iov[n++].iov_len;
        }
        if (lane->state == TC_TCP_LANE_UP) {
            if (lane->tx.req == NULL)
                tc_tcp_chunk_pull(ep, &lane->tx);
            n += tc_tcp_chunk_iov(&lane->tx, iov + n, &total);
        }
        if (n == 0)
            break;
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        ssize_t w = sendmsg(lane->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            int err = errno;
            if (!tc_tcp_rail_lane_lost(ctx, lane, "send: %s", strerror(err)))
                tc_tcp_ep_fail(ctx, ep, TC_ERR_PEER_FAILED,
                               "reset the connection on data socket %d of %d: send: %s",
                               lane->index, ep->nsocks, strerror(err));
            return;
        }
        size_t left = (size_t)w;
        size_t pre = lane->pre_len - lane->pre_off;
        size_t k = left < pre ? left : pre;
        lane->pre_off += k;
        left -= k;
        tc_tcp_chunk_advance(ctx, ep, &lane->tx, left);
        if ((size_t)w < total)
            break; /* the socket buffer is full */
    }
    if (ep->state == TC_TCP_EP_UP)
        tc_tcp_lane_update_events(ctx, lane);
}

void tc_tcp_lanes_kick(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep)
{
    for (int i = 0; ep->lanes != NULL && i < ep->nsocks - 1; i++) {
        if (ep->state != TC_TCP_EP_UP)
            return;
        tc_tcp_lane_t *lane = &ep->lanes[i];
        if (lane->state == TC_TCP_LANE_UP && lane->tx.req == NULL)
            tc_tcp_lane_flush(ctx, lane);
    }
}

void tc_tcp_lanes_start(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep)
{
    for (int i = 0; ep->lanes != NULL && i < ep->nsocks - 1; i++) {
        if (ep->state != TC_TCP_EP_UP)
            return;
        tc_tcp_lane_t *lane = &ep->lanes[i];
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            tc_tcp_ep_fail(ctx, ep,
                           errno == EMFILE || errno == ENFILE ? TC_ERR_NO_RESOURCE : TC_ERR_SYSTEM,
                           "cannot get data socket %d of %d: socket: %s", lane->index, ep->nsocks,
                           strerror(errno));
            return;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        lane->fd = fd;
        if (!tc_tcp_rail_bind(ctx, lane, fd)) {
            tc_tcp_ep_fail(ctx, ep, TC_ERR_SYSTEM,
                           "cannot set up data socket %d of %d on rail %d (%s): %s", lane->index,
                           ep->nsocks, lane->rail, ctx->rails[lane->rail].name, strerror(errno));
            return;
        }
        struct sockaddr_in to = ep->peer_sa;
        to.sin_addr = ep->peer_ip[lane->rail];
        unsigned char nonce[TC_AUTH_NONCE_LEN];
        tc_auth_nonce(nonce);
        uint16_t flags = (uint16_t)(TC_TCP_HELLO_F_DATA | (unsigned)lane->index |
                                    (ctx->key.keyed ? TC_TCP_HELLO_F_KEYED : 0));
        tc_tcp_hello_make(lane->hello, flags, ctx->self_id, ep->super.peer_id, nonce, ep->token);
        memcpy(lane->pre, lane->hello, TC_TCP_HELLO_LEN);
        lane->pre_len = TC_TCP_HELLO_LEN;
        lane->pre_off = 0;
        lane->rx_state = TC_TCP_LANE_RX_HDR;
        lane->rx_hdr_got = 0;

        int rc;
        do {
            rc = connect(fd, (const struct sockaddr *)&to, sizeof(to));
        } while (rc != 0 && errno == EINTR);
        if (rc != 0 && errno != EINPROGRESS) {
            tc_tcp_ep_fail(ctx, ep, TC_ERR_PEER_FAILED,
                           "could not be reached on data socket %d of %d: connect: %s", lane->index,
                           ep->nsocks, strerror(errno));
            return;
        }
        lane->state = rc == 0 ? TC_TCP_LANE_HANDSHAKE : TC_TCP_LANE_CONNECTING;
        tc_tcp_lane_update_events(ctx, lane);
        if (lane->state == TC_TCP_LANE_HANDSHAKE)
            tc_tcp_lane_flush(ctx, lane);
    }
}

void tc_tcp_lane_attach(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_tcp_conn_t *conn)
{
    tc_tcp_lane_t *lane = &ep->lanes[conn->index - 1];
    lane->fd = conn->fd;
    conn->fd = -1;
    /* It may be in the epoll set as a connection still: register it afresh as the lane. */
    epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, lane->fd, NULL);
    lane->registered = 0;
    lane->ev_mask = 0;
    memcpy(lane->pre, conn->ack, TC_TCP_ACK_LEN);
    lane->pre_len = TC_TCP_ACK_LEN;
    lane->pre_off = conn->ack_off;
    lane->state = TC_TCP_LANE_UP;
    lane->rx_state = TC_TCP_LANE_RX_HDR;
    lane->rx_hdr_got = 0;
    tc_tcp_conn_free(conn);
    tc_tcp_lane_update_events(ctx, lane);
    tc_tcp_lane_flush(ctx, lane);
}

/* The whole challenge of data socket @p lane is in: check the acceptor's MAC, send the proof. */
static void tc_tcp_lane_on_challenge(tc_tcp_ctx_t *ctx, tc_tcp_lane_t *lane)
{
    tc_tcp_ep_t *ep = lane->ep;
    const unsigned char *a = lane->rx_hdr;
    if (tc_tcp_get_u64(a + 8) != ep->super.peer_id || tc_tcp_get_u64(a + 16) != ctx->self_id) {
        tc_tcp_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                       "answered the handshake of data socket %d as id %llu to id %llu",
                       lane->index, (unsigned long long)tc_tcp_get_u64(a + 8),
                       (unsigned long long)tc_tcp_get_u64(a + 16));
        return;
    }
    if (!tc_tcp_challenge_answer(&ctx->key, lane->hello, a, lane->pre)) {
        tc_tcp_ep_fail(ctx, ep, TC_ERR_PEER_FAILED,
                       "failed the challenge of data socket %d of %d: its MAC does not prove "
                       "the job secret (wrong secret: another job, or not a tcomms peer)",
                       lane->index, ep->nsocks);
        return;
    }
    lane->pre_len = TC_TCP_PROOF_LEN;
    lane->pre_off = 0;
    lane->state = TC_TCP_LANE_PROOF;
    tc_tcp_lane_update_events(ctx, lane);
}

static void tc_tcp_lane_on_ack(tc_tcp_ctx_t *ctx, tc_tcp_lane_t *lane)
{
    tc_tcp_ep_t *ep = lane->ep;
    const unsigned char *a = lane->rx_hdr;
    uint32_t magic = tc_tcp_get_u32(a);
    uint16_t version = tc_tcp_get_u16(a + 4);
    uint16_t result = tc_tcp_get_u16(a + 6);
    if (magic != TC_TCP_MAGIC || version != TC_TCP_WIRE_VERSION) {
        tc_tcp_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                       "answered the handshake of data socket %d with foreign bytes (magic "
                       "0x%08x version %u)",
                       lane->index, magic, version);
    } else if (result != TC_TCP_ACK_OK) {
        tc_tcp_ep_fail(ctx, ep, TC_ERR_PEER_FAILED, "refused data socket %d of %d: %s", lane->index,
                       ep->nsocks, tc_tcp_ack_string(result));
    } else if (tc_tcp_get_u64(a + 8) != ep->super.peer_id ||
               tc_tcp_get_u64(a + 16) != ctx->self_id) {
        tc_tcp_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                       "answered the handshake of data socket %d as id %llu to id %llu",
                       lane->index, (unsigned long long)tc_tcp_get_u64(a + 8),
                       (unsigned long long)tc_tcp_get_u64(a + 16));
    } else if (lane->state == TC_TCP_LANE_PROOF) {
        lane->state = TC_TCP_LANE_UP;
        tc_tcp_lane_update_events(ctx, lane);
    } else {
        tc_tcp_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                       "answered the hello of data socket %d with an ack instead of a challenge",
                       lane->index);
    }
}

/* Where the bytes of the chunk whose header is in lane->rx_hdr go; stall if not announced. */
static void tc_tcp_lane_on_chunk(tc_tcp_ctx_t *ctx, tc_tcp_lane_t *lane)
{
    int r = tc_tcp_chunk_rx_begin(ctx, lane->ep, lane->index, lane->rx_hdr, &lane->rx_lrx,
                                  &lane->rx_dst, &lane->rx_dst_left, &lane->rx_discard,
                                  &lane->rx_len, &lane->rx_off);
    if (r < 0)
        return;
    lane->rx_state = r == 0 ? TC_TCP_LANE_RX_STALLED : TC_TCP_LANE_RX_PAYLOAD;
    tc_tcp_lane_update_events(ctx, lane);
}

void tc_tcp_lanes_unstall(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep)
{
    for (int i = 0; ep->lanes != NULL && i < ep->nsocks - 1; i++) {
        if (ep->state != TC_TCP_EP_UP)
            return;
        if (ep->lanes[i].rx_state == TC_TCP_LANE_RX_STALLED)
            tc_tcp_lane_on_chunk(ctx, &ep->lanes[i]);
    }
}

static void tc_tcp_lane_close_one(tc_tcp_ctx_t *ctx, tc_tcp_lane_t *lane)
{
    if (lane->fd < 0)
        return;
    if (lane->registered)
        epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, lane->fd, NULL);
    close(lane->fd);
    lane->fd = -1;
    lane->registered = 0;
    lane->ev_mask = 0;
}

tc_tp_req_t *tc_tcp_lane_drop(tc_tcp_ctx_t *ctx, tc_tcp_lane_t *lane)
{
    tc_tp_req_t *req = lane->tx.req;
    tc_tcp_lane_close_one(ctx, lane);
    lane->state = TC_TCP_LANE_CLOSED;
    lane->tx.req = NULL;
    lane->rx_state = TC_TCP_LANE_RX_HDR;
    lane->rx_hdr_got = 0;
    lane->rx_lrx = NULL;
    lane->rx_dst = NULL;
    lane->rx_dst_left = 0;
    lane->rx_discard = 0;
    return req;
}

/* The peer closed (@p err 0) or reset a data socket. Its messages sent before that may still
 * wait in the primary: they are taken first (and the primary's own end, if it is there). A
 * clean close while no striped message is in flight either way is the peer going away: the
 * primary reports it. Anything else fails the endpoint now. */
static void tc_tcp_lane_lost(tc_tcp_ctx_t *ctx, tc_tcp_lane_t *lane, int err)
{
    tc_tcp_ep_t *ep = lane->ep;
    int mid = lane->rx_state == TC_TCP_LANE_RX_PAYLOAD || lane->rx_hdr_got > 0;
    uint64_t got = lane->rx_len - lane->rx_dst_left - lane->rx_discard;
    if (ep->draining) { /* the primary ended and reports it once the lanes are read */
        tc_tcp_lane_close_one(ctx, lane);
        lane->state = TC_TCP_LANE_CLOSED;
        return;
    }
    if (ep->fd >= 0)
        tc_tcp_ep_read(ctx, ep, 1);
    if (ep->state != TC_TCP_EP_UP)
        return;
    if (err == 0 && !mid && lane->state == TC_TCP_LANE_UP && ep->lrx_head == NULL && ep->nlq == 0 &&
        lane->tx.req == NULL) {
        tc_log_debug(TC_SUBSYS_TRANSPORT,
                     "tcp: peer %llu (%s) closed data socket %d of %d while nothing was in flight",
                     (unsigned long long)ep->super.peer_id, ep->peer_str, lane->index, ep->nsocks);
        tc_tcp_lane_close_one(ctx, lane);
        lane->state = TC_TCP_LANE_CLOSED;
        return;
    }
    if (lane->state == TC_TCP_LANE_UP &&
        tc_tcp_rail_lane_lost(ctx, lane, "%s", err ? strerror(err) : "end of stream"))
        return;
    if (lane->state == TC_TCP_LANE_HANDSHAKE || lane->state == TC_TCP_LANE_PROOF)
        tc_tcp_ep_fail(ctx, ep, TC_ERR_PEER_FAILED,
                       "closed data socket %d of %d before answering its handshake: %s",
                       lane->index, ep->nsocks, err ? strerror(err) : "end of stream");
    else if (err != 0)
        tc_tcp_ep_fail(ctx, ep, TC_ERR_PEER_FAILED,
                       "reset the connection on data socket %d of %d: recv: %s", lane->index,
                       ep->nsocks, strerror(err));
    else if (lane->rx_state == TC_TCP_LANE_RX_PAYLOAD)
        tc_tcp_ep_fail(ctx, ep, TC_ERR_PEER_FAILED,
                       "closed the connection on data socket %d of %d in the middle of a chunk "
                       "(%llu of %llu bytes received)",
                       lane->index, ep->nsocks, (unsigned long long)got,
                       (unsigned long long)lane->rx_len);
    else
        tc_tcp_ep_fail(ctx, ep, TC_ERR_PEER_FAILED,
                       "closed the connection on data socket %d of %d with a striped message in "
                       "flight",
                       lane->index, ep->nsocks);
}

/* Returns 1 when it read anything. */
static int tc_tcp_lane_read(tc_tcp_ctx_t *ctx, tc_tcp_lane_t *lane)
{
    tc_tcp_ep_t *ep = lane->ep;
    int moved = 0;
    /* Bounded so that one busy socket does not starve the others (epoll is level-triggered). */
    for (int i = 0; i < 64 && ep->state == TC_TCP_EP_UP && lane->fd >= 0; i++) {
        ssize_t n;
        if (lane->rx_state == TC_TCP_LANE_RX_STALLED) {
            return moved;
        } else if (lane->rx_state == TC_TCP_LANE_RX_HDR) {
            size_t full = lane->state == TC_TCP_LANE_HANDSHAKE
                              ? tc_tcp_challenge_need(lane->rx_hdr, lane->rx_hdr_got)
                          : lane->state == TC_TCP_LANE_PROOF ? TC_TCP_ACK_LEN
                                                             : TC_TCP_RMA_HDR_LEN;
            n = recv(lane->fd, lane->rx_hdr + lane->rx_hdr_got, full - lane->rx_hdr_got, 0);
            if (n > 0) {
                moved = 1;
                ep->super.rx_bytes += (uint64_t)n;
                lane->rx_hdr_got += (size_t)n;
                if (lane->state == TC_TCP_LANE_HANDSHAKE &&
                    tc_tcp_challenge_need(lane->rx_hdr, lane->rx_hdr_got) > lane->rx_hdr_got)
                    continue; /* the header of a challenge: its nonce and MAC follow */
                if (lane->rx_hdr_got == full) {
                    lane->rx_hdr_got = 0;
                    if (lane->state == TC_TCP_LANE_HANDSHAKE && full == TC_TCP_CHALLENGE_LEN)
                        tc_tcp_lane_on_challenge(ctx, lane);
                    else if (lane->state != TC_TCP_LANE_UP)
                        tc_tcp_lane_on_ack(ctx, lane);
                    else
                        tc_tcp_lane_on_chunk(ctx, lane);
                }
                continue;
            }
        } else {
            if (lane->rx_dst_left > 0) {
                size_t want = lane->rx_dst_left < TC_TCP_LANE_RECV_CHUNK ? (size_t)lane->rx_dst_left
                                                                         : TC_TCP_LANE_RECV_CHUNK;
                n = recv(lane->fd, lane->rx_dst, want, 0);
                if (n > 0) {
                    lane->rx_dst += n;
                    lane->rx_dst_left -= (uint64_t)n;
                }
            } else {
                size_t want = lane->rx_discard < sizeof(ctx->stage) ? (size_t)lane->rx_discard
                                                                    : sizeof(ctx->stage);
                n = recv(lane->fd, ctx->stage, want, 0);
                if (n > 0)
                    lane->rx_discard -= (uint64_t)n;
            }
            if (n > 0) {
                moved = 1;
                ep->super.rx_bytes += (uint64_t)n;
                if (lane->rx_dst_left == 0 && lane->rx_discard == 0) {
                    tc_tcp_lrx_t *lrx = lane->rx_lrx;
                    lane->rx_lrx = NULL;
                    lane->rx_dst = NULL;
                    lane->rx_state = TC_TCP_LANE_RX_HDR;
                    tc_tcp_chunk_rx_done(ctx, ep, lrx, lane->rx_off, lane->rx_len);
                }
                continue;
            }
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return moved;
        tc_tcp_lane_lost(ctx, lane, n == 0 ? 0 : errno);
        return moved;
    }
    return moved;
}

void tc_tcp_lanes_drain(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep)
{
    int moved = 1;
    ep->draining = 1;
    while (moved && ep->lrx_head != NULL && ep->state == TC_TCP_EP_UP) {
        moved = 0;
        for (int i = 0; ep->lanes != NULL && i < ep->nsocks - 1; i++) {
            tc_tcp_lane_t *lane = &ep->lanes[i];
            if (lane->state == TC_TCP_LANE_UP && lane->fd >= 0 &&
                lane->rx_state != TC_TCP_LANE_RX_STALLED)
                moved |= tc_tcp_lane_read(ctx, lane);
            if (ep->state != TC_TCP_EP_UP)
                break;
        }
    }
    ep->draining = 0;
}

void tc_tcp_lane_on_events(tc_tcp_ctx_t *ctx, tc_tcp_lane_t *lane, uint32_t events)
{
    tc_tcp_ep_t *ep = lane->ep;
    if (ep->state != TC_TCP_EP_UP || lane->fd < 0)
        return; /* an event of a socket closed earlier in this round */
    if (lane->state == TC_TCP_LANE_UP && (events & EPOLLERR)) {
        /* a reset or an error, also on a stalled socket that is not read */
        int err = 0;
        socklen_t len = sizeof(err);
        if (getsockopt(lane->fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err != 0) {
            tc_tcp_lane_lost(ctx, lane, err);
            return;
        }
    }
    if (lane->state == TC_TCP_LANE_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof(err);
        if (getsockopt(lane->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
            err = errno;
        if (err != 0) {
            tc_tcp_ep_fail(ctx, ep, TC_ERR_PEER_FAILED,
                           "could not be reached on data socket %d of %d: connect: %s", lane->index,
                           ep->nsocks, strerror(err));
            return;
        }
        if (!(events & (EPOLLOUT | EPOLLIN | EPOLLHUP | EPOLLERR)))
            return;
        lane->state = TC_TCP_LANE_HANDSHAKE;
        tc_tcp_lane_update_events(ctx, lane);
    }
    /* A stalled socket reads again once its message is announced; the primary reports a
     * peer that went away meanwhile. */
    if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && lane->rx_state != TC_TCP_LANE_RX_STALLED)
        tc_tcp_lane_read(ctx, lane);
    if (ep->state == TC_TCP_EP_UP && lane->fd >= 0)
        tc_tcp_lane_flush(ctx, lane);
}
