/* TCP endpoints: connection set-up, failure, close and the request queues. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcomms/base/log.h"
#include "tcp_internal.h"

tc_tcp_ep_t *tc_tcp_ep_find(tc_tcp_ctx_t *ctx, uint64_t peer_id)
{
    for (tc_tcp_ep_t *ep = ctx->eps; ep != NULL; ep = ep->next)
        if (ep->super.peer_id == peer_id)
            return ep;
    return NULL;
}

void tc_tcp_req_complete(tc_tcp_ctx_t *ctx, tc_tp_req_t *req, tc_status_t status, size_t bytes)
{
    req->bytes = bytes;
    req->priv[TC_TCP_P_NEXT] = 0;
    req->status = status;
    ctx->ncompleted++;
}

/* Complete every request of a queue with @p status. */
void tc_tcp_queue_fail(tc_tcp_ctx_t *ctx, tc_tp_req_t **head, tc_tp_req_t **tail,
                       tc_status_t status)
{
    tc_tp_req_t *req = *head;
    while (req != NULL) {
        tc_tp_req_t *next = TC_TCP_REQ_NEXT(req);
        tc_tcp_req_complete(ctx, req, status, 0);
        req = next;
    }
    *head = *tail = NULL;
}

static void tc_tcp_unexp_free_all(tc_tcp_ep_t *ep, int only_incomplete)
{
    tc_tcp_unexp_t **pp = &ep->uq_head;
    ep->uq_tail = NULL;
    while (*pp != NULL) {
        tc_tcp_unexp_t *u = *pp;
        if (only_incomplete && u->complete) {
            ep->uq_tail = u;
            pp = &u->next;
            continue;
        }
        *pp = u->next;
        tc_tcp_unexp_release((tc_tcp_ctx_t *)ep->super.ctx, u);
    }
}

static void tc_tcp_ep_close_fd(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep)
{
    if (ep->fd < 0)
        return;
    if (ep->ev_mask != 0)
        epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, ep->fd, NULL);
    close(ep->fd);
    ep->fd = -1;
    ep->ev_mask = 0;
}

void tc_tcp_ep_fail(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_status_t status, const char *fmt, ...)
{
    if (ep->state == TC_TCP_EP_FAILED)
        return;
    char reason[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof(reason), fmt, ap);
    va_end(ap);

    size_t nsend = ep->nsq + ep->nwq + ep->nlq;
    size_t nrecv = ep->nrq + (ep->rx_req != NULL) + tc_tcp_lrx_nrecv(ep);
    snprintf(ep->super.error, sizeof(ep->super.error),
             "tcp: peer %llu (%s) %s (%zu send%s, %zu receive%s pending)",
             (unsigned long long)ep->super.peer_id, ep->peer_str, reason, nsend,
             nsend == 1 ? "" : "s", nrecv, nrecv == 1 ? "" : "s");
    ep->super.failed = status;
    ep->state = TC_TCP_EP_FAILED;
    /* A peer that closes with nothing pending is a normal shutdown; the
     * operation that hits a failed endpoint reports it with context. */
    if (nsend + nrecv > 0)
        tc_log_warn(TC_SUBSYS_TRANSPORT, "%s", ep->super.error);
    else
        tc_log_debug(TC_SUBSYS_TRANSPORT, "%s", ep->super.error);

    tc_tcp_ep_close_fd(ctx, ep);
    tc_tcp_lanes_close(ctx, ep);
    tc_tcp_sq_drop(ctx, ep, status);
    tc_tcp_stripe_drop(ctx, ep, status);
    tc_tcp_queue_fail(ctx, &ep->rq_head, &ep->rq_tail, status);
    ep->nrq = 0;
    if (ep->rx_req != NULL)
        tc_tcp_req_complete(ctx, ep->rx_req, status, 0);
    ep->rx_req = NULL;
    ep->rx_sink = 0;
    ep->rx_unexp = NULL;
    ep->rx_kind = TC_TCP_K_MSG;
    /* Messages that arrived whole before the failure can still be received. */
    tc_tcp_unexp_free_all(ep, 1);
}

/* Keep the epoll registration in line with what the endpoint waits for. */
void tc_tcp_ep_update_events(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep)
{
    if (ep->fd < 0)
        return;
    uint32_t want = EPOLLIN;
    if (ep->state == TC_TCP_EP_CONNECTING || ep->tx_pre_off < ep->tx_pre_len ||
        (!ep->hs_wait && (ep->sq_head != NULL || ep->tx_chunk.req != NULL)))
        want |= EPOLLOUT;
    if (want == ep->ev_mask)
        return;
    struct epoll_event ev = {.events = want, .data.ptr = &ep->poll};
    int op = ep->ev_mask == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
    if (epoll_ctl(ctx->epfd, op, ep->fd, &ev) != 0) {
        tc_tcp_ep_fail(ctx, ep, TC_ERR_SYSTEM, "could not be watched: epoll_ctl: %s",
                       strerror(errno));
        return;
    }
    ep->ev_mask = want;
}

void tc_tcp_ep_attach(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_tcp_conn_t *conn)
{
    /* the connecting side chose the socket count; this side follows */
    if (conn->nsocks != ctx->nsocks)
        tc_log_debug(TC_SUBSYS_TRANSPORT,
                     "tcp: peer %llu (%s) uses %d socket%s per peer, this side would use %d: "
                     "the connecting side's count holds",
                     (unsigned long long)ep->super.peer_id, conn->remote, conn->nsocks,
                     conn->nsocks == 1 ? "" : "s", ctx->nsocks);
    int asked = conn->nsocks;
    ep->nsocks = conn->nsocks;
    ep->token = conn->token;
    int lanes_ok = tc_tcp_lanes_alloc(ep);
    ep->fd = conn->fd;
    conn->fd = -1;
    ep->state = TC_TCP_EP_UP;
    ep->rx_state = TC_TCP_RX_HDR;
    memcpy(ep->tx_pre, conn->ack, TC_TCP_ACK_LEN);
    ep->tx_pre_len = TC_TCP_ACK_LEN;
    ep->tx_pre_off = conn->ack_off;
    /* It may be in the epoll set as a connection still: register it afresh as the endpoint. */
    epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, ep->fd, NULL);
    ep->ev_mask = 0;
    tc_tcp_conn_free(conn);
    if (!lanes_ok) {
        ep->nsocks = 1;
        tc_tcp_ep_fail(ctx, ep, TC_ERR_NO_MEMORY,
                       "asks for %d sockets, whose state cannot be "
                       "allocated: out of memory",
                       asked);
        return;
    }
    tc_tcp_ep_update_events(ctx, ep);
    if (ep->state == TC_TCP_EP_UP)
        tc_tcp_ep_flush(ctx, ep);
    /* data sockets that came while the primary was parked */
    tc_tcp_conn_t *data;
    while ((data = tc_tcp_conn_unpark_data(ctx, ep->super.peer_id)) != NULL) {
        if (ep->state == TC_TCP_EP_UP && ep->lanes != NULL && data->token == ep->token &&
            data->index < ep->nsocks && ep->lanes[data->index - 1].state == TC_TCP_LANE_OFF)
            tc_tcp_lane_attach(ctx, ep, data);
        else
            tc_tcp_conn_free(data);
    }
}

/* The peer's rail 0 in @p sa, every rail's address in @p ips, their count in *nrails_p. */
static tc_status_t tc_tcp_addr_unpack(uint64_t peer_id, const void *addr, size_t addr_len,
                                      struct sockaddr_in *sa, struct in_addr *ips, int *nrails_p)
{
    const unsigned char *p = addr;
    if (addr == NULL || addr_len < TC_TCP_ADDR_LEN || addr_len > TC_TCP_ADDR_LEN_MAX ||
        (addr_len - TC_TCP_ADDR_LEN) % 4 != 0)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "tcp: the address of peer %llu is %zu bytes, expected %d + 4 per rail "
                            "beyond the first (at most %d rails)",
                            (unsigned long long)peer_id, addr_len, TC_TCP_ADDR_LEN,
                            TC_TCP_RAILS_MAX);
    if (p[0] != TC_TCP_ADDR_VERSION || p[1] != 4)
        return tc_error_set(TC_ERR_UNSUPPORTED,
                            "tcp: the address of peer %llu has version %u family %u, this "
                            "build knows version %d family 4 (mixed builds?)",
                            (unsigned long long)peer_id, p[0], p[1], TC_TCP_ADDR_VERSION);
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    memcpy(&sa->sin_port, p + 2, 2);
    memcpy(&sa->sin_addr.s_addr, p + 4, 4);
    *nrails_p = 1 + (int)((addr_len - TC_TCP_ADDR_LEN) / 4);
    for (int r = 0; r < *nrails_p; r++)
        memcpy(&ips[r].s_addr, p + 4 + 4 * (size_t)r, 4);
    return TC_OK;
}

/* Active side: start a non-blocking connect; failures fail the endpoint, not the call. */
static tc_status_t tc_tcp_ep_start_connect(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep,
                                           const struct sockaddr_in *sa)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return tc_error_set(errno == EMFILE || errno == ENFILE ? TC_ERR_NO_RESOURCE : TC_ERR_SYSTEM,
                            "tcp: socket() to connect to peer %llu (%s) failed: %s",
                            (unsigned long long)ep->super.peer_id, ep->peer_str, strerror(errno));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    ep->fd = fd;

    /* the hello; nothing else goes out before the challenge proved the acceptor */
    unsigned char nonce[TC_AUTH_NONCE_LEN];
    tc_auth_nonce(nonce);
    uint16_t flags = (uint16_t)(ep->nsocks - 1) | (ctx->key.keyed ? TC_TCP_HELLO_F_KEYED : 0);
    tc_tcp_hello_make(ep->hello, flags, ctx->self_id, ep->super.peer_id, nonce,
                      ep->nsocks > 1 ? ep->token : 0);
    memcpy(ep->tx_pre, ep->hello, TC_TCP_HELLO_LEN);
    ep->tx_pre_len = TC_TCP_HELLO_LEN;
    ep->tx_pre_off = 0;
    ep->hs_wait = 1;
    ep->rx_state = TC_TCP_RX_CHALLENGE;

    int rc;
    do {
        rc = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
    } while (rc != 0 && errno == EINTR);
    if (rc == 0) {
        ep->state = TC_TCP_EP_UP;
    } else if (errno == EINPROGRESS) {
        ep->state = TC_TCP_EP_CONNECTING;
    } else {
        ep->state = TC_TCP_EP_CONNECTING;
        tc_tcp_ep_fail(ctx, ep, TC_ERR_PEER_FAILED, "could not be reached: connect: %s",
                       strerror(errno));
        return TC_OK;
    }
    tc_tcp_ep_update_events(ctx, ep);
    return TC_OK;
}

tc_status_t tc_tcp_ep_connect(tc_tp_ctx_t *super, uint64_t peer_id, const void *addr,
                              size_t addr_len, tc_tp_ep_t **ep_p)
{
    tc_tcp_ctx_t *ctx = (tc_tcp_ctx_t *)super;
    struct sockaddr_in sa;
    struct in_addr ips[TC_TCP_RAILS_MAX];
    int nrails = 1;
    tc_status_t status = tc_tcp_addr_unpack(peer_id, addr, addr_len, &sa, ips, &nrails);
    if (status != TC_OK)
        return status;
    if (peer_id == ctx->self_id)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "tcp: cannot connect id %llu to itself (use the self backend)",
                            (unsigned long long)peer_id);
    if (tc_tcp_ep_find(ctx, peer_id) != NULL)
        return tc_error_set(TC_ERR_INVALID_STATE, "tcp: id %llu already has an endpoint to %llu",
                            (unsigned long long)ctx->self_id, (unsigned long long)peer_id);

    tc_tcp_ep_t *ep = calloc(1, sizeof(*ep));
    if (ep == NULL)
        return tc_error_set(TC_ERR_NO_MEMORY, "tcp: cannot allocate an endpoint to peer %llu",
                            (unsigned long long)peer_id);
    ep->super.ops = &tc_tp_tcp_ops;
    ep->super.ctx = super;
    ep->super.peer_id = peer_id;
    ep->super.failed = TC_OK;
    ep->poll.kind = TC_TCP_POLL_EP;
    ep->poll.owner = ep;
    ep->fd = -1;
    ep->nsocks = 1;
    ep->peer_sa = sa;
    /* rail i pairs with the peer's rail i; both sides take the smaller count */
    ep->nrails = nrails < ctx->nrails ? nrails : ctx->nrails;
    memcpy(ep->peer_ip, ips, sizeof(ips[0]) * (size_t)nrails);
    tc_tcp_sockaddr_string(&sa, ep->peer_str, sizeof(ep->peer_str));

    if (ctx->self_id < peer_id) {
        ep->nsocks = ctx->nsocks;
        if (ep->nsocks > 1) {
            ep->token = tc_tcp_token_new();
            if (!tc_tcp_lanes_alloc(ep)) {
                free(ep);
                return tc_error_set(TC_ERR_NO_MEMORY,
                                    "tcp: cannot allocate %d data sockets to peer %llu",
                                    ctx->nsocks - 1, (unsigned long long)peer_id);
            }
        }
        status = tc_tcp_ep_start_connect(ctx, ep, &sa);
        if (status != TC_OK) {
            free(ep->lanes);
            free(ep);
            return status;
        }
    } else {
        ep->state = TC_TCP_EP_WAITING;
        tc_tcp_conn_t *conn = tc_tcp_conn_unpark(ctx, peer_id);
        if (conn != NULL)
            tc_tcp_ep_attach(ctx, ep, conn);
    }
    ep->next = ctx->eps;
    ctx->eps = ep;
    tc_log_debug(TC_SUBSYS_TRANSPORT, "tcp: id %llu %s peer %llu (%s)",
                 (unsigned long long)ctx->self_id,
                 ctx->self_id < peer_id ? "connects to" : "waits for", (unsigned long long)peer_id,
                 ep->peer_str);
    *ep_p = &ep->super;
    return TC_OK;
}

void tc_tcp_ep_close(tc_tp_ep_t *super)
{
    tc_tcp_ep_t *ep = (tc_tcp_ep_t *)super;
    tc_tcp_ctx_t *ctx = (tc_tcp_ctx_t *)super->ctx;

    for (tc_tcp_ep_t **pp = &ctx->eps; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == ep) {
            *pp = ep->next;
            break;
        }
    }
    tc_tcp_held_unlink(ctx, ep);
    tc_tcp_ep_close_fd(ctx, ep);
    tc_tcp_lanes_close(ctx, ep);
    tc_tcp_sq_drop(ctx, ep, TC_ERR_ABORTED);
    tc_tcp_stripe_drop(ctx, ep, TC_ERR_ABORTED);
    tc_tcp_queue_fail(ctx, &ep->rq_head, &ep->rq_tail, TC_ERR_ABORTED);
    if (ep->rx_req != NULL)
        tc_tcp_req_complete(ctx, ep->rx_req, TC_ERR_ABORTED, 0);
    tc_tcp_unexp_free_all(ep, 0);
    tc_tcp_ctl_free_all(ep);
    free(ep->lanes);
    free(ep);
}

void tc_tcp_ep_on_events(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, uint32_t events)
{
    if (ep->state == TC_TCP_EP_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof(err);
        if (getsockopt(ep->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
            err = errno;
        if (err != 0) {
            tc_tcp_ep_fail(ctx, ep, TC_ERR_PEER_FAILED, "could not be reached: connect: %s",
                           strerror(err));
            return;
        }
        if (!(events & (EPOLLOUT | EPOLLIN | EPOLLHUP | EPOLLERR)))
            return;
        ep->state = TC_TCP_EP_UP;
    }
    if (ep->state == TC_TCP_EP_UP && (events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
        tc_tcp_ep_read(ctx, ep, 0);
    if (ep->state == TC_TCP_EP_UP)
        tc_tcp_ep_flush(ctx, ep);
}

/* Unlink @p req from a queue; returns 1 if it was there. */
static int tc_tcp_queue_remove(tc_tp_req_t **head, tc_tp_req_t **tail, tc_tp_req_t *req)
{
    tc_tp_req_t *prev = NULL;
    for (tc_tp_req_t *r = *head; r != NULL; prev = r, r = TC_TCP_REQ_NEXT(r)) {
        if (r != req)
            continue;
        if (prev != NULL)
            prev->priv[TC_TCP_P_NEXT] = r->priv[TC_TCP_P_NEXT];
        else
            *head = TC_TCP_REQ_NEXT(r);
        if (*tail == r)
            *tail = prev;
        return 1;
    }
    return 0;
}

/* A send cancelled after part of it was written: the rest must still go out
 * (the peer's stream expects it), so it continues from a private copy. */
static tc_status_t tc_tcp_orphan_send(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_tp_req_t *req)
{
    uint64_t len = tc_tcp_sq_payload_len(req);
    tc_tp_req_t *o = malloc(sizeof(*o) + (size_t)len);
    if (o == NULL)
        return tc_error_set(TC_ERR_NO_MEMORY,
                            "tcp cancel: copying the %llu bytes of a send to "
                            "peer %llu that is partly written",
                            (unsigned long long)len, (unsigned long long)ep->super.peer_id);
    *o = *req;
    memcpy(o + 1, (const void *)(uintptr_t)req->priv[TC_TCP_P_BUF], (size_t)len);
    o->priv[TC_TCP_P_BUF] = (uintptr_t)(o + 1);
    o->bytes = TC_TCP_ORPHAN;
    tc_tp_req_t *prev = NULL;
    for (tc_tp_req_t *r = ep->sq_head; r != req; r = TC_TCP_REQ_NEXT(r))
        prev = r;
    if (prev != NULL)
        prev->priv[TC_TCP_P_NEXT] = (uintptr_t)o;
    else
        ep->sq_head = o;
    if (ep->sq_tail == req)
        ep->sq_tail = o;
    tc_tcp_req_complete(ctx, req, TC_ERR_ABORTED, 0);
    return TC_OK;
}

tc_status_t tc_tcp_cancel(tc_tp_ep_t *super, tc_tp_req_t *req)
{
    tc_tcp_ep_t *ep = (tc_tcp_ep_t *)super;
    tc_tcp_ctx_t *ctx = (tc_tcp_ctx_t *)super->ctx;
    if (req == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "tcp cancel: req is NULL");
    if (req->status != TC_INPROGRESS)
        return tc_error_set(TC_ERR_INVALID_STATE, "tcp cancel: the request already completed");
    if (req == ep->rx_req) {
        /* being filled: the rest of the message is read and dropped */
        ep->rx_discard += ep->rx_dst_left;
        ep->rx_dst_left = 0;
        ep->rx_dst = NULL;
        ep->rx_req = NULL;
        ep->rx_sink = 0;
        ep->rx_carry_len = 0;
        tc_tcp_req_complete(ctx, req, TC_ERR_ABORTED, 0);
        return TC_OK;
    }
    for (tc_tp_req_t *r = ep->sq_head; r != NULL; r = TC_TCP_REQ_NEXT(r)) {
        if (r != req)
            continue;
        if (req->priv[TC_TCP_P_OFF] > 0) {
            if (tc_tcp_sq_kind(req) != TC_TCP_K_MSG && tc_tcp_sq_kind(req) != TC_TCP_K_LMSG)
                return tc_error_set(TC_ERR_INVALID_STATE,
                                    "tcp cancel: the one-sided request to peer %llu is partly "
                                    "written",
                                    (unsigned long long)super->peer_id);
            return tc_tcp_orphan_send(ctx, ep, req);
        }
        tc_tcp_queue_remove(&ep->sq_head, &ep->sq_tail, req);
        ep->nsq--;
        tc_tcp_req_complete(ctx, req, TC_ERR_ABORTED, 0);
        tc_tcp_ep_update_events(ctx, ep);
        return TC_OK;
    }
    tc_status_t status;
    if (tc_tcp_lq_cancel(ctx, ep, req, &status))
        return status;
    for (tc_tp_req_t *r = ep->wq_head; r != NULL; r = TC_TCP_REQ_NEXT(r))
        if (r == req)
            return tc_error_set(TC_ERR_INVALID_STATE,
                                "tcp cancel: the one-sided request to peer %llu is sent and "
                                "waits for the target's answer",
                                (unsigned long long)super->peer_id);
    if (tc_tcp_queue_remove(&ep->rq_head, &ep->rq_tail, req)) {
        ep->nrq--;
        tc_tcp_req_complete(ctx, req, TC_ERR_ABORTED, 0);
        return TC_OK;
    }
    if (tc_tcp_lrx_cancel(ctx, ep, req))
        return TC_OK;
    return tc_error_set(TC_ERR_NOT_FOUND, "tcp cancel: the request is not pending on peer %llu",
                        (unsigned long long)super->peer_id);
}
