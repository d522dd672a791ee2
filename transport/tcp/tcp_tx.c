/* The send side: caller-owned requests queued per endpoint, written with sendmsg(). */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "tcp_internal.h"

tc_status_t tc_tcp_send(tc_tp_ep_t *super, uint64_t tag, const void *buf, size_t len,
                        tc_tp_req_t *req)
{
    tc_tcp_ep_t *ep = (tc_tcp_ep_t *)super;
    if (req == NULL || (buf == NULL && len != 0))
        return tc_error_set(TC_ERR_INVALID_ARG, "tcp send to peer %llu: req or buf is NULL",
                            (unsigned long long)super->peer_id);
    if (req->status == TC_INPROGRESS && req->bytes == TC_TCP_POSTED)
        return tc_error_set(TC_ERR_INVALID_STATE,
                            "tcp send to peer %llu (tag %llu): request already pending",
                            (unsigned long long)super->peer_id, (unsigned long long)tag);
    if ((uint64_t)len > TC_TP_TCP_MAX_MSG)
        return tc_error_set(
            TC_ERR_INVALID_ARG, "tcp send to peer %llu: %zu bytes, more than the maximum %llu",
            (unsigned long long)super->peer_id, len, (unsigned long long)TC_TP_TCP_MAX_MSG);
    if (super->failed != TC_OK) {
        req->status = super->failed;
        return tc_error_set(super->failed, "%s", super->error);
    }

    req->status = TC_INPROGRESS;
    req->bytes = TC_TCP_POSTED;
    req->priv[TC_TCP_P_NEXT] = 0;
    req->priv[TC_TCP_P_BUF] = (uintptr_t)buf;
    req->priv[TC_TCP_P_LEN] = len;
    req->priv[TC_TCP_P_OFF] = 0;
    unsigned char *hdr = tc_tcp_sq_hdr(req);
    tc_tcp_ctx_t *ctx = (tc_tcp_ctx_t *)super->ctx;
    tc_tcp_put_u64(hdr, tag);
    if (ep->nsocks > 1 && (uint64_t)len >= ctx->stripe_min) {
        /* striped: the header goes in order with the other messages, the bytes as chunks */
        tc_tcp_put_u64(hdr + 8, (uint64_t)TC_TCP_K_LMSG << 56 | len);
        tc_tcp_put_u64(hdr + 16, ++ep->tx_last_id);
        tc_tcp_put_u64(hdr + 24, 0);
    } else {
        tc_tcp_put_u64(hdr + 8, len); /* kind 0 */
    }
    tc_tcp_sq_push(ctx, ep, req);
    return TC_OK;
}

/* Whether @p req, just queued on a connected @p ep, may wait for a later write of the whole
 * queue instead of a sendmsg() of its own (a burst of small one-sided operations otherwise costs
 * a system call per operation on each side):
 * - an answer (ack, get response) is pushed while the target reads what the initiator sent,
 *   and the read's end (tc_tcp_ep_on_events) or the end of the progress pass writes it with
 *   the answers to the rest of what that read brought;
 * - a put or get waits only while an earlier one's answer is due (its arrival wakes this
 *   side's progress, a reader of the epoll set, which writes the queue), while earlier
 *   requests wait in the queue themselves, or while the endpoint is deferred (tc_tp_defer:
 *   the caller's flush will progress; the whole burst goes out in one write, its first
 *   request too, so the target wakes and answers once); every progress pass starts by
 *   writing the held queues (tc_win_flush, a blocking operation's wait) and ends the defer;
 * - a signal, which a target may be waiting for while calling nothing, waits only while an
 *   earlier answer is due; otherwise it goes out at once with the requests held before it.
 * At most TC_TCP_HOLD_MAX are held: the next request is written with them at once. Held
 * requests are the callers' (or recycled answers): holding costs no memory. */
static int tc_tcp_sq_hold(const tc_tcp_ep_t *ep, tc_tp_req_t *req)
{
    if (ep->nsq > TC_TCP_HOLD_MAX)
        return 0;
    switch (tc_tcp_sq_kind(req)) {
    case TC_TCP_K_ACK:
    case TC_TCP_K_GET_RESP:
        return 1;
    case TC_TCP_K_PUT:
    case TC_TCP_K_GET:
        return ep->nwq > 0 || ep->sq_head != req || ep->defer;
    case TC_TCP_K_SIG_ADD:
    case TC_TCP_K_SIG_SET:
        return ep->nwq > 0;
    default:
        return 0;
    }
}

/* Put @p ep on the held list that the next progress writes (once). */
static void tc_tcp_held_link(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep)
{
    if (!ep->held) {
        ep->held = 1;
        ep->held_next = ctx->held;
        ctx->held = ep;
    }
}

void tc_tcp_sq_push(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_tp_req_t *req)
{
    req->priv[TC_TCP_P_NEXT] = 0;
    req->priv[TC_TCP_P_OFF] = 0;
    if (ep->sq_tail != NULL)
        ep->sq_tail->priv[TC_TCP_P_NEXT] = (uintptr_t)req;
    else
        ep->sq_head = req;
    ep->sq_tail = req;
    ep->nsq++;
    if (ep->state != TC_TCP_EP_UP)
        return;
    if (tc_tcp_sq_hold(ep, req)) {
        tc_tcp_held_link(ctx, ep);
        return;
    }
    /* Alone in the queue, a signal after held requests, or a held burst is full: write now
     * rather than after the next epoll round (latency). */
    if (ep->sq_head == req || ep->held)
        tc_tcp_ep_flush(ctx, ep);
}

void tc_tcp_defer(tc_tp_ep_t *super)
{
    tc_tcp_ep_t *ep = (tc_tcp_ep_t *)super;
    tc_tcp_ctx_t *ctx = (tc_tcp_ctx_t *)super->ctx;
    ep->defer = 1;
    tc_tcp_held_link(ctx, ep); /* so that the next progress ends the defer */
}

void tc_tcp_held_flush(tc_tcp_ctx_t *ctx)
{
    while (ctx->held != NULL) {
        tc_tcp_ep_t *ep = ctx->held;
        ctx->held = ep->held_next;
        ep->held = 0;
        ep->defer = 0;
        ep->held_next = NULL;
        if (ep->state == TC_TCP_EP_UP)
            tc_tcp_ep_flush(ctx, ep);
    }
}

void tc_tcp_held_unlink(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep)
{
    if (!ep->held)
        return;
    for (tc_tcp_ep_t **pp = &ctx->held; *pp != NULL; pp = &(*pp)->held_next) {
        if (*pp == ep) {
            *pp = ep->held_next;
            break;
        }
    }
    ep->held = 0;
}

/* Account @p n written bytes to the handshake, then to the queued sends in order. */
static void tc_tcp_tx_advance(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, size_t n)
{
    size_t pre = ep->tx_pre_len - ep->tx_pre_off;
    if (pre > 0) {
        size_t k = n < pre ? n : pre;
        ep->tx_pre_off += k;
        n -= k;
    }
    n -= tc_tcp_chunk_advance(ctx, ep, &ep->tx_chunk, n);
    while (n > 0 && ep->sq_head != NULL) {
        tc_tp_req_t *req = ep->sq_head;
        uint64_t left = tc_tcp_sq_hdr_len(req) + tc_tcp_sq_wire_len(req) - req->priv[TC_TCP_P_OFF];
        if (n < left) {
            req->priv[TC_TCP_P_OFF] += n;
            return;
        }
        n -= left;
        ep->sq_head = TC_TCP_REQ_NEXT(req);
        if (ep->sq_head == NULL)
            ep->sq_tail = NULL;
        ep->nsq--;
        tc_tcp_sq_written(ctx, ep, req);
    }
}

/* What is left to write of queued @p req: the rest of its header, then of its payload, as up
 * to 2 pieces. Returns the pieces, their bytes in *@p left_p. */
static int tc_tcp_sq_pieces(tc_tp_req_t *req, struct iovec piece[2], size_t *left_p)
{
    uint64_t off = req->priv[TC_TCP_P_OFF];
    uint64_t len = tc_tcp_sq_wire_len(req);
    size_t hlen = tc_tcp_sq_hdr_len(req);
    int np = 0;
    *left_p = 0;
    if (off < hlen) {
        piece[np].iov_base = tc_tcp_sq_hdr(req) + off;
        piece[np].iov_len = hlen - off;
        *left_p += piece[np++].iov_len;
        off = hlen;
    }
    if (len > off - hlen) {
        piece[np].iov_base = (unsigned char *)(uintptr_t)req->priv[TC_TCP_P_BUF] + (off - hlen);
        piece[np].iov_len = len - (off - hlen);
        *left_p += piece[np++].iov_len;
    }
    return np;
}

/* Copy @p np pieces to ctx->tx_copy after its first *@p copied bytes; the last of the @p n
 * iovecs grows over them when it is the copy's own (*@p last_copy == n - 1), else a new one
 * points at them. Returns the iovecs now in use. */
static int tc_tcp_tx_gather(tc_tcp_ctx_t *ctx, const struct iovec *piece, int np, struct iovec *iov,
                            int n, size_t *copied, int *last_copy)
{
    unsigned char *at = ctx->tx_copy + *copied, *p = at;
    for (int k = 0; k < np; k++) {
        memcpy(p, piece[k].iov_base, piece[k].iov_len);
        p += piece[k].iov_len;
    }
    *copied += (size_t)(p - at);
    if (p == at)
        return n;
    if (n > 0 && *last_copy == n - 1) {
        iov[n - 1].iov_len += (size_t)(p - at);
        return n;
    }
    iov[n].iov_base = at;
    iov[n].iov_len = (size_t)(p - at);
    *last_copy = n;
    return n + 1;
}

void tc_tcp_ep_flush(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep)
{
    while (ep->state == TC_TCP_EP_UP) {
        struct iovec iov[TC_TCP_IOV_MAX];
        int n = 0;
        size_t total = 0;
        if (ep->tx_pre_off < ep->tx_pre_len) {
            iov[n].iov_base = ep->tx_pre + ep->tx_pre_off;
            iov[n].iov_len = ep->tx_pre_len - ep->tx_pre_off;
            total += iov[n++].iov_len;
        }
        /* a chunk being written finishes before the next frame; a new one is taken only when
         * no message waits, so small messages pass large ones between chunks. While the
         * acceptor has not proved itself (hs_wait) only the hello goes out. */
        if (!ep->hs_wait && ep->tx_chunk.req == NULL && ep->sq_head == NULL && ep->lq_head != NULL)
            tc_tcp_chunk_pull(ep, &ep->tx_chunk);
        n += tc_tcp_chunk_iov(&ep->tx_chunk, iov + n, &total);
        size_t copied = 0;  /* bytes of ctx->tx_copy in this sendmsg */
        int last_copy = -1; /* the iovec over the copy's end, while it is the last one */
        for (tc_tp_req_t *req = ep->hs_wait ? NULL : ep->sq_head;
             req != NULL && n < TC_TCP_IOV_MAX - 1; req = TC_TCP_REQ_NEXT(req)) {
            struct iovec piece[2];
            size_t left;
            int np = tc_tcp_sq_pieces(req, piece, &left);
            total += left;
            if (left <= TC_TCP_TX_COPY_MAX && copied + left <= sizeof(ctx->tx_copy)) {
                n = tc_tcp_tx_gather(ctx, piece, np, iov, n, &copied, &last_copy);
                continue;
            }
            for (int k = 0; k < np; k++)
                iov[n++] = piece[k];
        }
        if (n == 0)
            break;

        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        ssize_t w = sendmsg(ep->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            tc_tcp_ep_fail(ctx, ep, TC_ERR_PEER_FAILED, "reset the connection: send: %s",
                           strerror(errno));
            return;
        }
        tc_tcp_tx_advance(ctx, ep, (size_t)w);
        if ((size_t)w < total)
            break; /* the socket buffer is full */
    }
    tc_tcp_ep_update_events(ctx, ep);
    if (ep->nlq > 0 && ep->state == TC_TCP_EP_UP)
        tc_tcp_lanes_kick(ctx, ep);
}
