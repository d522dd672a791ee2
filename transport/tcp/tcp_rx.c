/* The receive side: exact-tag matching, unexpected messages and the stream parser. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "tcp_internal.h"
#include "tcomms/base/log.h"

/* A new unexpected message of @p len bytes at the end of @p ep's queue (its
 * bytes still to come), or NULL when it cannot be allocated. */
tc_tcp_unexp_t *tc_tcp_unexp_append(tc_tcp_ep_t *ep, uint64_t tag, uint64_t len)
{
    tc_tcp_ctx_t *ctx = (tc_tcp_ctx_t *)ep->super.ctx;
    uint64_t cap = len <= TC_TCP_UNEXP_BYTES ? TC_TCP_UNEXP_BYTES : len;
    tc_tcp_unexp_t *u = NULL;
    if (cap == TC_TCP_UNEXP_BYTES && ctx->unexp_free != NULL) {
        u = ctx->unexp_free;
        ctx->unexp_free = u->next;
        ctx->nunexp_free--;
    } else if (cap > TC_TCP_UNEXP_BYTES && ctx->unexp_big != NULL && ctx->unexp_big->cap >= cap &&
               ctx->unexp_big->cap / 2 <= cap) {
        u = ctx->unexp_big; /* its pages are in: no fault per page again */
        ctx->unexp_big = NULL;
        cap = u->cap;
    } else if ((u = malloc(sizeof(*u) + (size_t)cap)) != NULL) {
        ctx->unexp_allocs++;
    }
    if (u == NULL)
        return NULL;
    u->cap = cap;
    u->next = NULL;
    u->tag = tag;
    u->len = len;
    u->complete = 0;
    u->lrx = NULL;
    if (ep->uq_tail != NULL)
        ep->uq_tail->next = u;
    else
        ep->uq_head = u;
    ep->uq_tail = u;
    return u;
}

void tc_tcp_unexp_release(tc_tcp_ctx_t *ctx, tc_tcp_unexp_t *u)
{
    if (u->cap == TC_TCP_UNEXP_BYTES && ctx->nunexp_free < TC_TCP_UNEXP_KEEP) {
        u->next = ctx->unexp_free;
        ctx->unexp_free = u;
        ctx->nunexp_free++;
        return;
    }
    if (u->cap > TC_TCP_UNEXP_BYTES) { /* the latest large one stays, in place of the last */
        free(ctx->unexp_big);
        ctx->unexp_big = u;
        return;
    }
    free(u);
}

int tc_tcp_discard(tc_tp_ep_t *super, int (*drop)(void *arg, uint64_t tag), void *arg)
{
    tc_tcp_ep_t *ep = (tc_tcp_ep_t *)super;
    tc_tcp_ctx_t *ctx = (tc_tcp_ctx_t *)super->ctx;
    int n = 0;
    tc_tcp_unexp_t **pp = &ep->uq_head, *last = NULL;
    while (*pp != NULL) {
        tc_tcp_unexp_t *u = *pp;
        if (u->complete && u->lrx == NULL && u != ep->rx_unexp && drop(arg, u->tag)) {
            *pp = u->next;
            tc_tcp_unexp_release(ctx, u);
            n++;
            continue;
        }
        last = u;
        pp = &u->next;
    }
    ep->uq_tail = last;
    return n;
}

void tc_tcp_trim(tc_tp_ctx_t *super)
{
    tc_tcp_ctx_t *ctx = (tc_tcp_ctx_t *)super;
    if (ctx->unexp_big != NULL)
        tc_log_debug(TC_SUBSYS_TRANSPORT, "tcp: idle: gave back the kept record of %llu bytes",
                     (unsigned long long)ctx->unexp_big->cap);
    free(ctx->unexp_big);
    ctx->unexp_big = NULL;
}

/* Largest single recv() straight into a destination (keeps the length an ssize_t). */
#define TC_TCP_RECV_CHUNK (1u << 30)

static int tc_tcp_kind_is_rma(int kind)
{
    return kind >= TC_TCP_K_PUT && kind <= TC_TCP_K_GET_RESP;
}

static int tc_tcp_kind_is_stripe(int kind)
{
    return kind == TC_TCP_K_LMSG || kind == TC_TCP_K_CHUNK || kind == TC_TCP_K_LACK ||
           kind == TC_TCP_K_LDOWN;
}

/* Header bytes the parser needs now: one-sided and striped kinds carry 16 more. */
static size_t tc_tcp_rx_hdr_need(const tc_tcp_ep_t *ep)
{
    if (ep->rx_state == TC_TCP_RX_CHALLENGE)
        return tc_tcp_challenge_need(ep->rx_hdr, ep->rx_hdr_got);
    if (ep->rx_state == TC_TCP_RX_ACK)
        return TC_TCP_ACK_LEN;
    if (ep->rx_hdr_got >= TC_TCP_HDR_LEN &&
        (tc_tcp_kind_is_rma(ep->rx_hdr[15]) || tc_tcp_kind_is_stripe(ep->rx_hdr[15])))
        return TC_TCP_RMA_HDR_LEN;
    return TC_TCP_HDR_LEN;
}

static void tc_tcp_rx_message_done(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep)
{
    if (ep->rx_kind == TC_TCP_K_CHUNK) {
        tc_tcp_lrx_t *lrx = ep->rx_lrx;
        ep->rx_lrx = NULL;
        ep->rx_dst = NULL;
        ep->rx_state = TC_TCP_RX_HDR;
        ep->rx_kind = TC_TCP_K_MSG;
        tc_tcp_chunk_rx_done(ctx, ep, lrx, ep->rx_off, ep->rx_len);
        return;
    }
    if (ep->rx_kind == TC_TCP_K_PUT) {
        ep->rx_dst = NULL;
        ep->rx_state = TC_TCP_RX_HDR;
        ep->rx_kind = TC_TCP_K_MSG;
        tc_tcp_rx_put_done(ctx, ep);
        return;
    }
    ep->rx_kind = TC_TCP_K_MSG;
    if (ep->rx_req != NULL) {
        tc_tp_req_t *req = ep->rx_req;
        uint64_t cap = req->priv[TC_TCP_P_LEN];
        if (ep->rx_len > cap)
            tc_tcp_req_complete(ctx, req, TC_ERR_TRUNCATED, cap);
        else
            tc_tcp_req_complete(ctx, req, TC_OK, ep->rx_len);
    } else if (ep->rx_unexp != NULL) {
        ep->rx_unexp->complete = 1;
    }
    ep->rx_req = NULL;
    ep->rx_sink = 0;
    ep->rx_unexp = NULL;
    ep->rx_dst = NULL;
    ep->rx_state = TC_TCP_RX_HDR;
}

static void tc_tcp_rx_on_ack(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep)
{
    const unsigned char *a = ep->rx_hdr;
    uint32_t magic = tc_tcp_get_u32(a);
    uint16_t version = tc_tcp_get_u16(a + 4);
    uint16_t result = tc_tcp_get_u16(a + 6);
    uint64_t sender = tc_tcp_get_u64(a + 8);
    uint64_t receiver = tc_tcp_get_u64(a + 16);

    if (magic != TC_TCP_MAGIC || version != TC_TCP_WIRE_VERSION) {
        tc_tcp_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                       "answered the handshake with foreign bytes (magic 0x%08x version %u)", magic,
                       version);
    } else if (result != TC_TCP_ACK_OK) {
        tc_tcp_ep_fail(ctx, ep, TC_ERR_PEER_FAILED, "refused the connection: %s",
                       tc_tcp_ack_string(result));
    } else if (sender != ep->super.peer_id || receiver != ctx->self_id) {
        tc_tcp_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                       "answered the handshake as id %llu to id %llu (stale address?)",
                       (unsigned long long)sender, (unsigned long long)receiver);
    } else {
        ep->rx_state = TC_TCP_RX_HDR;
        if (ep->nsocks > 1)
            tc_tcp_lanes_start(ctx, ep);
    }
}

/* The whole challenge is in rx_hdr (its header says: accepted so far): check that the
 * acceptor holds the key, then send the proof, and the queued messages after it. */
static void tc_tcp_rx_on_challenge(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep)
{
    const unsigned char *a = ep->rx_hdr;
    uint64_t sender = tc_tcp_get_u64(a + 8);
    uint64_t receiver = tc_tcp_get_u64(a + 16);
    if (sender != ep->super.peer_id || receiver != ctx->self_id) {
        tc_tcp_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                       "answered the handshake as id %llu to id %llu (stale address?)",
                       (unsigned long long)sender, (unsigned long long)receiver);
        return;
    }
    if (!tc_tcp_challenge_answer(&ctx->key, ep->hello, a, ep->tx_pre)) {
        tc_tcp_ep_fail(ctx, ep, TC_ERR_PEER_FAILED,
                       "failed the challenge: its MAC does not prove the job secret (wrong "
                       "secret: another job, or not a tcomms peer)");
        return;
    }
    ep->tx_pre_len = TC_TCP_PROOF_LEN;
    ep->tx_pre_off = 0;
    ep->hs_wait = 0;
    ep->rx_state = TC_TCP_RX_ACK;
    tc_tcp_ep_flush(ctx, ep);
}

tc_tp_req_t *tc_tcp_rq_match(tc_tcp_ep_t *ep, uint64_t tag)
{
    tc_tp_req_t *prev = NULL;
    tc_tp_req_t *req = ep->rq_head;
    while (req != NULL && req->priv[TC_TCP_P_TAG] != tag) {
        prev = req;
        req = TC_TCP_REQ_NEXT(req);
    }
    if (req == NULL)
        return NULL;
    tc_tp_req_t *next = TC_TCP_REQ_NEXT(req);
    if (prev != NULL)
        prev->priv[TC_TCP_P_NEXT] = (uintptr_t)next;
    else
        ep->rq_head = next;
    if (ep->rq_tail == req)
        ep->rq_tail = prev;
    ep->nrq--;
    return req;
}

static void tc_tcp_rx_on_header(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep)
{
    uint64_t tag = tc_tcp_get_u64(ep->rx_hdr);
    uint64_t len = tc_tcp_get_u64(ep->rx_hdr + 8);
    int kind = ep->rx_hdr[15];
    if (tc_tcp_kind_is_rma(kind)) {
        tc_tcp_rx_on_rma(ctx, ep, kind, len & TC_TCP_LEN_MASK);
        if (ep->state == TC_TCP_EP_UP && ep->rx_state == TC_TCP_RX_PAYLOAD && ep->rx_len == 0)
            tc_tcp_rx_message_done(ctx, ep);
        return;
    }
    if (kind == TC_TCP_K_LMSG) {
        tc_tcp_lrx_announce(ctx, ep, ep->rx_hdr); /* no payload: the bytes come as chunks */
        return;
    }
    if (kind == TC_TCP_K_LACK || kind == TC_TCP_K_LDOWN) {
        tc_tcp_rail_on_ctl(ctx, ep, ep->rx_hdr);
        return;
    }
    if (kind == TC_TCP_K_CHUNK) {
        if (tc_tcp_chunk_rx_begin(ctx, ep, 0, ep->rx_hdr, &ep->rx_lrx, &ep->rx_dst,
                                  &ep->rx_dst_left, &ep->rx_discard, &ep->rx_len, &ep->rx_off) != 1)
            return; /* failed: the primary never waits for an announcement */
        ep->rx_kind = TC_TCP_K_CHUNK;
        ep->rx_state = TC_TCP_RX_PAYLOAD;
        ep->rx_req = NULL;
        ep->rx_unexp = NULL;
        return;
    }
    if (len > TC_TP_TCP_MAX_MSG) {
        /* the kind is the length word's top byte: any kind left here makes the length huge */
        if (kind != TC_TCP_K_MSG)
            tc_tcp_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                           "sent a frame of unknown kind 0x%02x (tag %llu): corrupt or hostile "
                           "stream",
                           (unsigned)kind, (unsigned long long)tag);
        else
            tc_tcp_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                           "sent a message header (tag %llu) with length %llu, more than the "
                           "maximum %llu: corrupt or hostile stream",
                           (unsigned long long)tag, (unsigned long long)len,
                           (unsigned long long)TC_TP_TCP_MAX_MSG);
        return;
    }

    ep->rx_kind = TC_TCP_K_MSG;
    tc_tp_req_t *req = tc_tcp_rq_match(ep, tag);
    ep->rx_len = len;
    ep->rx_state = TC_TCP_RX_PAYLOAD;
    if (req != NULL) {
        uint64_t cap = req->priv[TC_TCP_P_LEN];
        ep->rx_req = req;
        ep->rx_sink = (int)req->priv[TC_TCP_P_SINK];
        ep->rx_carry_len = 0;
        ep->rx_dst = ep->rx_sink ? NULL : (unsigned char *)(uintptr_t)req->priv[TC_TCP_P_BUF];
        ep->rx_dst_left = len < cap ? len : cap;
        ep->rx_discard = len - ep->rx_dst_left;
    } else {
        tc_tcp_unexp_t *u = tc_tcp_unexp_append(ep, tag, len);
        if (u == NULL) {
            tc_tcp_ep_fail(ctx, ep, TC_ERR_NO_MEMORY,
                           "sent an unexpected message (tag %llu) of %llu bytes that cannot "
                           "be buffered: out of memory",
                           (unsigned long long)tag, (unsigned long long)len);
            return;
        }
        ep->rx_unexp = u;
        ep->rx_dst = u->data;
        ep->rx_dst_left = len;
        ep->rx_discard = 0;
    }
    if (len == 0)
        tc_tcp_rx_message_done(ctx, ep);
}

/* Deliver @p n bytes read into the staging buffer; always consumes all of them. */
static void tc_tcp_rx_consume(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, const unsigned char *p, size_t n)
{
    while (n > 0 && ep->state == TC_TCP_EP_UP) {
        size_t k;
        if (ep->rx_state != TC_TCP_RX_PAYLOAD) {
            size_t full = tc_tcp_rx_hdr_need(ep);
            k = full - ep->rx_hdr_got;
            k = n < k ? n : k;
            memcpy(ep->rx_hdr + ep->rx_hdr_got, p, k);
            ep->rx_hdr_got += k;
            if (ep->rx_hdr_got == tc_tcp_rx_hdr_need(ep)) {
                ep->rx_hdr_got = 0;
                if (ep->rx_state == TC_TCP_RX_CHALLENGE && full == TC_TCP_CHALLENGE_LEN)
                    tc_tcp_rx_on_challenge(ctx, ep);
                else if (ep->rx_state == TC_TCP_RX_CHALLENGE || ep->rx_state == TC_TCP_RX_ACK)
                    tc_tcp_rx_on_ack(ctx, ep);
                else
                    tc_tcp_rx_on_header(ctx, ep);
            }
        } else {
            if (ep->rx_dst_left > 0 && ep->rx_sink) { /* to the consumer, from the stage */
                k = n < ep->rx_dst_left ? n : (size_t)ep->rx_dst_left;
                ep->rx_dst_left -= k;
                tc_tcp_sink_feed(ctx, ep, p, k, ep->rx_dst_left == 0);
            } else if (ep->rx_dst_left > 0) {
                k = n < ep->rx_dst_left ? n : (size_t)ep->rx_dst_left;
                memcpy(ep->rx_dst, p, k);
                ep->rx_dst += k;
                ep->rx_dst_left -= k;
            } else {
                k = n < ep->rx_discard ? n : (size_t)ep->rx_discard;
                ep->rx_discard -= k;
            }
            if (ep->rx_dst_left == 0 && ep->rx_discard == 0)
                tc_tcp_rx_message_done(ctx, ep);
        }
        p += k;
        n -= k;
    }
}

static void tc_tcp_ep_read_stream(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, int drain)
{
    /* Bounded so that one busy peer does not starve the others (epoll is level-triggered). */
    for (int i = 0; i < 64 && ep->state == TC_TCP_EP_UP; i++) {
        int direct = ep->rx_state == TC_TCP_RX_PAYLOAD && ep->rx_dst_left >= TC_TCP_DIRECT_MIN &&
                     !ep->rx_sink;
        size_t front = 0, want;
        ssize_t n;
        if (direct) {
            want =
                ep->rx_dst_left < TC_TCP_RECV_CHUNK ? (size_t)ep->rx_dst_left : TC_TCP_RECV_CHUNK;
            n = recv(ep->fd, ep->rx_dst, want, 0);
        } else {
            /* a sink's payload: room before it for the carry, which then lands aligned */
            front = ep->rx_state == TC_TCP_RX_PAYLOAD && ep->rx_sink
                        ? TC_TCP_SINK_UNIT_MAX + ep->rx_carry_len
                        : 0;
            want = sizeof(ctx->stage) - front;
            n = recv(ep->fd, ctx->stage + front, want, 0);
        }
        if (n > 0) {
            ep->super.rx_bytes += (uint64_t)n;
            if (direct) {
                ep->rx_dst += n;
                ep->rx_dst_left -= (uint64_t)n;
                if (ep->rx_dst_left == 0 && ep->rx_discard == 0)
                    tc_tcp_rx_message_done(ctx, ep);
            } else {
                tc_tcp_rx_consume(ctx, ep, ctx->stage + front, (size_t)n);
            }
            if (!drain && (size_t)n < want)
                return;
            continue;
        }
        if (n == 0) {
            if (ep->lrx_head != NULL) {
                tc_tcp_lanes_drain(ctx, ep);
                if (ep->state != TC_TCP_EP_UP)
                    return;
            }
            if (ep->rx_state == TC_TCP_RX_PAYLOAD)
                tc_tcp_ep_fail(ctx, ep, TC_ERR_PEER_FAILED,
                               "closed the connection in the middle of a %s (%llu of "
                               "%llu bytes received)",
                               ep->rx_kind == TC_TCP_K_CHUNK ? "chunk" : "message",
                               (unsigned long long)(ep->rx_len - ep->rx_dst_left - ep->rx_discard),
                               (unsigned long long)ep->rx_len);
            else
                tc_tcp_ep_fail(ctx, ep, TC_ERR_PEER_FAILED, "closed the connection");
            return;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return;
        tc_tcp_ep_fail(ctx, ep, TC_ERR_PEER_FAILED, "reset the connection: recv: %s",
                       strerror(errno));
        return;
    }
}

void tc_tcp_ep_read(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, int drain)
{
    tc_tcp_ep_read_stream(ctx, ep, drain);
    if (ep->state == TC_TCP_EP_UP)
        tc_tcp_acks_send(ctx, ep); /* one ack for the puts and signals this read applied */
}

/* A receive claims the unexpected message still arriving: copy what is here (or hand it to the
 * sink), stream the rest. */
static void tc_tcp_rx_claim_partial(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_tcp_unexp_t *u,
                                    unsigned char *buf, size_t cap, int sink, tc_tp_req_t *req)
{
    uint64_t got = u->len - ep->rx_dst_left;
    ep->rx_req = req;
    ep->rx_unexp = NULL;
    if (sink) {
        uint64_t keep = u->len < cap ? u->len : cap;
        uint64_t fed = got < keep ? got : keep;
        ep->rx_sink = 1;
        ep->rx_carry_len = 0;
        ep->rx_dst = NULL;
        ep->rx_dst_left = keep - fed;
        ep->rx_discard = u->len - got - ep->rx_dst_left;
        /* through the stage (free outside progress), where the pieces can be aligned */
        size_t room = sizeof(ctx->stage) - (size_t)2 * TC_TCP_SINK_UNIT_MAX;
        for (uint64_t at = 0; at < fed && ep->rx_req == req; at += room) {
            size_t k = fed - at < room ? (size_t)(fed - at) : room;
            unsigned char *p = ctx->stage + TC_TCP_SINK_UNIT_MAX + ep->rx_carry_len;
            memcpy(p, u->data + at, k);
            tc_tcp_sink_feed(ctx, ep, p, k, at + k == fed && ep->rx_dst_left == 0);
        }
        return;
    }
    if (got > 0 && cap > 0)
        memcpy(buf, u->data, got < cap ? (size_t)got : cap);
    if (got < cap) {
        ep->rx_dst = buf + got;
        ep->rx_dst_left = (u->len < cap ? u->len : cap) - got;
    } else {
        ep->rx_dst = NULL;
        ep->rx_dst_left = 0;
    }
    ep->rx_discard = u->len - got - ep->rx_dst_left;
}

int tc_tcp_probe(tc_tp_ep_t *super, uint64_t tag, uint64_t *len_p)
{
    const tc_tcp_ep_t *ep = (const tc_tcp_ep_t *)super;
    for (const tc_tcp_unexp_t *u = ep->uq_head; u != NULL; u = u->next) /* striped ones too */
        if (u->tag == tag) {
            *len_p = u->len;
            return 1;
        }
    return 0;
}

tc_status_t tc_tcp_recv(tc_tp_ep_t *super, uint64_t tag, void *buf, size_t cap, tc_tp_req_t *req)
{
    return tc_tcp_recv_post(super, tag, buf, cap, 0, req);
}

tc_status_t tc_tcp_recv_post(tc_tp_ep_t *super, uint64_t tag, void *buf, size_t cap, int sink,
                             tc_tp_req_t *req)
{
    tc_tcp_ep_t *ep = (tc_tcp_ep_t *)super;
    tc_tcp_ctx_t *ctx = (tc_tcp_ctx_t *)super->ctx;
    if (req == NULL || (buf == NULL && cap != 0))
        return tc_error_set(TC_ERR_INVALID_ARG, "tcp recv from peer %llu: req or buf is NULL",
                            (unsigned long long)super->peer_id);
    if (req->status == TC_INPROGRESS && req->bytes == TC_TCP_POSTED)
        return tc_error_set(TC_ERR_INVALID_STATE,
                            "tcp recv from peer %llu (tag %llu): request already pending",
                            (unsigned long long)super->peer_id, (unsigned long long)tag);

    req->status = TC_INPROGRESS;
    req->bytes = TC_TCP_POSTED;
    req->priv[TC_TCP_P_NEXT] = 0;
    req->priv[TC_TCP_P_BUF] = (uintptr_t)buf;
    req->priv[TC_TCP_P_LEN] = cap;
    req->priv[TC_TCP_P_OFF] = 0;
    req->priv[TC_TCP_P_TAG] = tag;
    req->priv[TC_TCP_P_SINK] = (uint64_t)sink;

    /* The oldest unexpected message with this tag, even on a failed endpoint. */
    tc_tcp_unexp_t *prev = NULL;
    tc_tcp_unexp_t *u = ep->uq_head;
    while (u != NULL && u->tag != tag) {
        prev = u;
        u = u->next;
    }
    if (u != NULL) {
        if (prev != NULL)
            prev->next = u->next;
        else
            ep->uq_head = u->next;
        if (ep->uq_tail == u)
            ep->uq_tail = prev;
        if (u->complete && sink) {
            tc_tcp_sink_deliver(ctx, req, u->data, u->len < cap ? u->len : cap, u->len);
        } else if (u->complete) {
            size_t n = u->len < cap ? (size_t)u->len : cap;
            if (n > 0)
                memcpy(buf, u->data, n);
            tc_tcp_req_complete(ctx, req, u->len > cap ? TC_ERR_TRUNCATED : TC_OK, n);
        } else if (u->lrx != NULL) {
            /* striped and still arriving: its chunks keep landing in u, copied at the end */
            tc_tcp_lrx_claim(u->lrx, req);
            return TC_OK;
        } else {
            tc_tcp_rx_claim_partial(ctx, ep, u, buf, cap, sink, req);
        }
        tc_tcp_unexp_release(ctx, u);
        return TC_OK;
    }

    if (super->failed != TC_OK) {
        req->status = super->failed;
        req->bytes = 0; /* ended: not the pending mark */
        return tc_error_set(super->failed, "%s", super->error);
    }
    if (ep->rq_tail != NULL)
        ep->rq_tail->priv[TC_TCP_P_NEXT] = (uintptr_t)req;
    else
        ep->rq_head = req;
    ep->rq_tail = req;
    ep->nrq++;
    return TC_OK;
}
