/* Striped messages: a large send cut into chunks that any socket of the endpoint takes, and
 * their reassembly in the posted receive buffer.
 *
 * Send side: the header (LMSG: tag, length, id) goes through the primary's send queue, so
 * matching keeps the order of the primary stream. Once it is written the send waits in
 * ep->lq; each socket (the primary when its send queue is empty, and every data socket) takes
 * the next chunk of the oldest send when it has none, so faster sockets take more. The send
 * completes when its last chunk is written.
 *
 * Receive side: the header is matched like a message; the record (tc_tcp_lrx_t) says where
 * chunks go: the posted buffer (no copy; bytes past its capacity are dropped and the receive
 * ends TC_ERR_TRUNCATED) or an unexpected buffer. A chunk carries (id, offset, length) and is
 * checked against the record: an unknown or finished id, a range outside the message or more
 * bytes than the message has fail the endpoint with TC_ERR_PROTOCOL. A chunk that overtook its
 * header (it came on a data socket) waits: its socket stops reading until the header is in.
 *
 * Between peers with several rails a data socket may be lost and its chunks sent again
 * (tcp_rail.c): then chunks lie on a fixed grid, the receiver keeps a bit per chunk received
 * whole (a copy of a chunk it has is read and dropped) and acknowledges the message on the
 * primary once every chunk is in; the send completes on that acknowledgement, not when its
 * last chunk is written, since until then a lost socket may have swallowed a chunk. */
#include <stdlib.h>
#include <string.h>

#include "tcp_internal.h"

/* ---- send side ---- */

void tc_tcp_lq_push(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_tp_req_t *req)
{
    req->priv[TC_TCP_P_NEXT] = 0;
    req->priv[TC_TCP_P_LNEXT] = 0;
    req->priv[TC_TCP_P_LDONE] = 0;
    req->priv[TC_TCP_P_LFLAGS] = 0;
    if (ep->lq_tail != NULL)
        ep->lq_tail->priv[TC_TCP_P_NEXT] = (uintptr_t)req;
    else
        ep->lq_head = req;
    ep->lq_tail = req;
    ep->nlq++;
    if (ep->nrails > 1)
        ctx->rail_sends++;
}

static void tc_tcp_lq_unlink(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_tp_req_t *req)
{
    tc_tp_req_t *prev = NULL;
    for (tc_tp_req_t *r = ep->lq_head; r != NULL; prev = r, r = TC_TCP_REQ_NEXT(r)) {
        if (r != req)
            continue;
        if (prev != NULL)
            prev->priv[TC_TCP_P_NEXT] = r->priv[TC_TCP_P_NEXT];
        else
            ep->lq_head = TC_TCP_REQ_NEXT(r);
        if (ep->lq_tail == r)
            ep->lq_tail = prev;
        ep->nlq--;
        if (ep->nrails > 1)
            ctx->rail_sends--;
        return;
    }
}

/* Chunks of about len / nsocks, so that every socket gets some, within [CHUNK_MIN, CHUNK_LEN].
 * Both sides of a pair compute the same size (nsocks is the connecting side's), which is the
 * receiver's grid with several rails. */
/* Every chunk of @p req is written (and, with several rails, acknowledged). */
static void tc_tcp_lq_finish(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_tp_req_t *req)
{
    tc_tcp_lq_unlink(ctx, ep, req);
    if (req->bytes == TC_TCP_ORPHAN)
        free(req);
    else
        tc_tcp_req_complete(ctx, req, TC_OK, req->priv[TC_TCP_P_LEN]);
}

static uint64_t tc_tcp_chunk_size(const tc_tcp_ep_t *ep, uint64_t len)
{
    uint64_t c = (len + (uint64_t)ep->nsocks - 1) / (uint64_t)ep->nsocks;
    c = (c + 4095) & ~(uint64_t)4095;
    if (c < TC_TCP_CHUNK_MIN)
        c = TC_TCP_CHUNK_MIN;
    return c > TC_TCP_CHUNK_LEN ? TC_TCP_CHUNK_LEN : c;
}

int tc_tcp_chunk_pull(tc_tcp_ep_t *ep, tc_tcp_chunk_tx_t *tx)
{
    for (tc_tp_req_t *req = ep->lq_head; req != NULL; req = TC_TCP_REQ_NEXT(req)) {
        uint64_t len = req->priv[TC_TCP_P_LEN];
        uint64_t next = req->priv[TC_TCP_P_LNEXT];
        if (next >= len)
            continue; /* every chunk handed out, some still being written */
        uint64_t n = tc_tcp_chunk_size(ep, len);
        n = n < len - next ? n : len - next;
        tx->req = req;
        tx->off = next;
        tx->len = n;
        tx->done = 0;
        tc_tcp_put_u64(tx->hdr, req->priv[TC_TCP_P_LID]);
        tc_tcp_put_u64(tx->hdr + 8, (uint64_t)TC_TCP_K_CHUNK << 56 | n);
        tc_tcp_put_u64(tx->hdr + 16, next);
        tc_tcp_put_u64(tx->hdr + 24,
                       (req->priv[TC_TCP_P_LFLAGS] & TC_TCP_LF_RESENT) ? TC_TCP_CHUNK_F_RESENT : 0);
        req->priv[TC_TCP_P_LNEXT] = next + n;
        return 1;
    }
    return 0;
}

int tc_tcp_chunk_iov(tc_tcp_chunk_tx_t *tx, struct iovec *iov, size_t *total_p)
{
    if (tx->req == NULL)
        return 0;
    int n = 0;
    size_t done = tx->done;
    if (done < TC_TCP_RMA_HDR_LEN) {
        iov[n].iov_base = tx->hdr + done;
        iov[n].iov_len = TC_TCP_RMA_HDR_LEN - done;
        *total_p += iov[n++].iov_len;
        done = TC_TCP_RMA_HDR_LEN;
    }
    uint64_t sent = done - TC_TCP_RMA_HDR_LEN;
    if (sent < tx->len) {
        iov[n].iov_base = (unsigned char *)(uintptr_t)tx->req->priv[TC_TCP_P_BUF] + tx->off + sent;
        iov[n].iov_len = (size_t)(tx->len - sent);
        *total_p += iov[n++].iov_len;
    }
    return n;
}

size_t tc_tcp_chunk_advance(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_tcp_chunk_tx_t *tx, size_t n)
{
    if (tx->req == NULL)
        return 0;
    size_t left = TC_TCP_RMA_HDR_LEN + (size_t)tx->len - tx->done;
    size_t k = n < left ? n : left;
    tx->done += k;
    if (k < left)
        return k;
    tc_tp_req_t *req = tx->req;
    tx->req = NULL;
    req->priv[TC_TCP_P_LDONE] += tx->len;
    if (ep->nrails > 1)
        tc_tcp_lq_try_done(ctx, ep, req); /* waits for the receiver's acknowledgement */
    else if (req->priv[TC_TCP_P_LDONE] == req->priv[TC_TCP_P_LEN])
        tc_tcp_lq_finish(ctx, ep, req);
    return k;
}

tc_tp_req_t *tc_tcp_lq_find(tc_tcp_ep_t *ep, uint64_t id)
{
    for (tc_tp_req_t *req = ep->lq_head; req != NULL; req = TC_TCP_REQ_NEXT(req))
        if (req->priv[TC_TCP_P_LID] == id)
            return req;
    return NULL;
}

void tc_tcp_lq_try_done(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_tp_req_t *req)
{
    if (!(req->priv[TC_TCP_P_LFLAGS] & TC_TCP_LF_ACKED) || ep->tx_chunk.req == req)
        return;
    for (int i = 0; ep->lanes != NULL && i < ep->nsocks - 1; i++)
        if (ep->lanes[i].tx.req == req)
            return; /* a copy is half-written there: the stream needs its bytes */
    tc_tcp_lq_finish(ctx, ep, req);
}

static void tc_tcp_chunk_retarget(tc_tcp_chunk_tx_t *tx, tc_tp_req_t *from, tc_tp_req_t *to)
{
    if (tx->req == from)
        tx->req = to;
}

int tc_tcp_lq_cancel(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_tp_req_t *req, tc_status_t *status_p)
{
    tc_tp_req_t *prev = NULL;
    tc_tp_req_t *r = ep->lq_head;
    while (r != NULL && r != req) {
        prev = r;
        r = TC_TCP_REQ_NEXT(r);
    }
    if (r == NULL)
        return 0;
    /* The header is on the wire, so the peer waits for every chunk: they go on from a copy. */
    uint64_t len = req->priv[TC_TCP_P_LEN];
    tc_tp_req_t *o = malloc(sizeof(*o) + (size_t)len);
    if (o == NULL) {
        *status_p = tc_error_set(TC_ERR_NO_MEMORY,
                                 "tcp cancel: copying the %llu bytes of a striped send to peer "
                                 "%llu that is partly written",
                                 (unsigned long long)len, (unsigned long long)ep->super.peer_id);
        return 1;
    }
    *o = *req;
    memcpy(o + 1, (const void *)(uintptr_t)req->priv[TC_TCP_P_BUF], (size_t)len);
    o->priv[TC_TCP_P_BUF] = (uintptr_t)(o + 1);
    o->bytes = TC_TCP_ORPHAN;
    if (prev != NULL)
        prev->priv[TC_TCP_P_NEXT] = (uintptr_t)o;
    else
        ep->lq_head = o;
    if (ep->lq_tail == req)
        ep->lq_tail = o;
    tc_tcp_chunk_retarget(&ep->tx_chunk, req, o);
    for (int i = 0; ep->lanes != NULL && i < ep->nsocks - 1; i++)
        tc_tcp_chunk_retarget(&ep->lanes[i].tx, req, o);
    tc_tcp_req_complete(ctx, req, TC_ERR_ABORTED, 0);
    *status_p = TC_OK;
    return 1;
}

/* ---- receive side ---- */

void tc_tcp_lrx_announce(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, const unsigned char *hdr)
{
    uint64_t tag = tc_tcp_get_u64(hdr);
    uint64_t len = tc_tcp_get_u64(hdr + 8) & TC_TCP_LEN_MASK;
    uint64_t id = tc_tcp_get_u64(hdr + 16);
    uint64_t zero = tc_tcp_get_u64(hdr + 24);
    if (len == 0 || len > TC_TP_TCP_MAX_MSG || id <= ep->rx_last_id || zero != 0) {
        tc_tcp_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                       "sent a striped message header (tag %llu, id %llu after %llu, length "
                       "%llu) that is out of bounds: corrupt or hostile stream",
                       (unsigned long long)tag, (unsigned long long)id,
                       (unsigned long long)ep->rx_last_id, (unsigned long long)len);
        return;
    }
    /* several rails: a bit per chunk of the grid, in the same allocation */
    uint64_t chunk = tc_tcp_chunk_size(ep, len);
    size_t map_len = ep->nrails > 1 ? (size_t)((len + chunk - 1) / chunk + 7) / 8 : 0;
    tc_tcp_lrx_t *lrx = calloc(1, sizeof(*lrx) + map_len);
    if (lrx == NULL) {
        tc_tcp_ep_fail(ctx, ep, TC_ERR_NO_MEMORY,
                       "sent a striped message (tag %llu) whose record cannot be allocated",
                       (unsigned long long)tag);
        return;
    }
    lrx->id = id;
    lrx->len = len;
    lrx->chunk = chunk;
    lrx->map = map_len > 0 ? (unsigned char *)(lrx + 1) : NULL;
    tc_tp_req_t *req = tc_tcp_rq_match(ep, tag);
    if (req != NULL && req->priv[TC_TCP_P_SINK]) {
        /* chunks come in any order, the sink takes them in order: land, then hand over */
        uint64_t cap = req->priv[TC_TCP_P_LEN] < len ? req->priv[TC_TCP_P_LEN] : len;
        lrx->own = cap > 0 ? malloc((size_t)cap) : NULL;
        if (cap > 0 && lrx->own == NULL) /* the message is read and dropped */
            tc_tcp_req_complete(ctx, req,
                                tc_error_set(TC_ERR_NO_MEMORY,
                                             "tcp: %llu bytes to receive a striped "
                                             "message into a sink",
                                             (unsigned long long)cap),
                                0);
        else
            lrx->req = req;
        lrx->dst = lrx->own;
        lrx->cap = lrx->own != NULL ? cap : 0;
    } else if (req != NULL) {
        lrx->req = req;
        lrx->dst = (unsigned char *)(uintptr_t)req->priv[TC_TCP_P_BUF];
        lrx->cap = req->priv[TC_TCP_P_LEN];
    } else {
        tc_tcp_unexp_t *u = tc_tcp_unexp_append(ep, tag, len);
        if (u == NULL) {
            free(lrx);
            tc_tcp_ep_fail(ctx, ep, TC_ERR_NO_MEMORY,
                           "sent an unexpected striped message (tag %llu) of %llu bytes that "
                           "cannot be buffered: out of memory",
                           (unsigned long long)tag, (unsigned long long)len);
            return;
        }
        u->lrx = lrx;
        lrx->unexp = u;
        lrx->dst = u->data;
        lrx->cap = len;
    }
    lrx->next = ep->lrx_head;
    ep->lrx_head = lrx;
    ep->rx_last_id = id;
    tc_tcp_lanes_unstall(ctx, ep);
}

static tc_tcp_lrx_t *tc_tcp_lrx_find(tc_tcp_ep_t *ep, uint64_t id)
{
    for (tc_tcp_lrx_t *lrx = ep->lrx_head; lrx != NULL; lrx = lrx->next)
        if (lrx->id == id)
            return lrx;
    return NULL;
}

/* Several rails: the chunk must be a cell of the grid; a cell received whole already is read
 * and dropped (a copy sent again after a lost socket). */
static int tc_tcp_chunk_rx_grid(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, int index, tc_tcp_lrx_t *lrx,
                                uint64_t off, uint64_t len, tc_tcp_lrx_t **lrx_p,
                                unsigned char **dst_p, uint64_t *dst_left_p, uint64_t *discard_p)
{
    if (off % lrx->chunk != 0 || off >= lrx->len ||
        len != (lrx->chunk < lrx->len - off ? lrx->chunk : lrx->len - off)) {
        tc_tcp_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                       "sent a chunk on socket %d of %llu bytes at offset %llu for striped "
                       "message %llu of %llu bytes, off its grid of %llu-byte chunks: corrupt or "
                       "hostile stream",
                       index, (unsigned long long)len, (unsigned long long)off,
                       (unsigned long long)lrx->id, (unsigned long long)lrx->len,
                       (unsigned long long)lrx->chunk);
        return -1;
    }
    uint64_t cell = off / lrx->chunk;
    uint64_t keep = 0;
    if (!(lrx->map[cell / 8] & (1u << (cell % 8))) && lrx->dst != NULL && off < lrx->cap)
        keep = len < lrx->cap - off ? len : lrx->cap - off;
    *lrx_p = lrx;
    *dst_p = keep > 0 ? lrx->dst + off : NULL;
    *dst_left_p = keep;
    *discard_p = len - keep;
    return 1;
}

int tc_tcp_chunk_rx_begin(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, int index, const unsigned char *hdr,
                          tc_tcp_lrx_t **lrx_p, unsigned char **dst_p, uint64_t *dst_left_p,
                          uint64_t *discard_p, uint64_t *len_p, uint64_t *off_p)
{
    uint64_t id = tc_tcp_get_u64(hdr);
    uint64_t word = tc_tcp_get_u64(hdr + 8);
    uint64_t len = word & TC_TCP_LEN_MASK;
    uint64_t off = tc_tcp_get_u64(hdr + 16);
    uint64_t flags = tc_tcp_get_u64(hdr + 24);
    uint64_t flags_ok = ep->nrails > 1 ? TC_TCP_CHUNK_F_RESENT : 0;
    if ((int)(word >> 56) != TC_TCP_K_CHUNK || len == 0 || len > TC_TCP_CHUNK_MAX ||
        (flags & ~flags_ok) != 0) {
        tc_tcp_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                       "sent a malformed chunk header on socket %d (kind 0x%02x, length %llu, "
                       "max %u, flags 0x%llx): corrupt or hostile stream",
                       index, (unsigned)(word >> 56), (unsigned long long)len, TC_TCP_CHUNK_MAX,
                       (unsigned long long)flags);
        return -1;
    }
    *len_p = len;
    *off_p = off;
    if (id > ep->rx_last_id) {
        if (index > 0)
            return 0; /* overtook its header on the primary: wait for it */
        tc_tcp_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                       "sent a chunk of striped message %llu before its header: corrupt or "
                       "hostile stream",
                       (unsigned long long)id);
        return -1;
    }
    tc_tcp_lrx_t *lrx = tc_tcp_lrx_find(ep, id);
    if (lrx == NULL && (flags & TC_TCP_CHUNK_F_RESENT)) { /* a copy of a message complete here */
        *lrx_p = NULL;
        *dst_p = NULL;
        *dst_left_p = 0;
        *discard_p = len;
        return 1;
    }
    if (lrx != NULL && lrx->map != NULL)
        return tc_tcp_chunk_rx_grid(ctx, ep, index, lrx, off, len, lrx_p, dst_p, dst_left_p,
                                    discard_p);
    if (lrx == NULL || off > lrx->len || len > lrx->len - off || len > lrx->len - lrx->begun) {
        tc_tcp_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                       "sent a chunk on socket %d of %llu bytes at offset %llu for striped "
                       "message %llu, which %s: corrupt or hostile stream",
                       index, (unsigned long long)len, (unsigned long long)off,
                       (unsigned long long)id,
                       lrx == NULL ? "is not being received" : "has fewer bytes left");
        return -1;
    }
    lrx->begun += len;
    uint64_t keep = 0;
    if (lrx->dst != NULL && off < lrx->cap)
        keep = len < lrx->cap - off ? len : lrx->cap - off;
    *lrx_p = lrx;
    *dst_p = keep > 0 ? lrx->dst + off : NULL;
    *dst_left_p = keep;
    *discard_p = len - keep;
    return 1;
}

/* Chunk bytes still to come for @p lrx are dropped instead of stored; with @p forget the
 * readers let go of it too (it is about to be freed). */
static void tc_tcp_lrx_detach_readers(tc_tcp_ep_t *ep, tc_tcp_lrx_t *lrx, int forget)
{
    if (ep->rx_lrx == lrx) {
        ep->rx_discard += ep->rx_dst_left;
        ep->rx_dst_left = 0;
        ep->rx_dst = NULL;
        if (forget)
            ep->rx_lrx = NULL;
    }
    for (int i = 0; ep->lanes != NULL && i < ep->nsocks - 1; i++) {
        tc_tcp_lane_t *lane = &ep->lanes[i];
        if (lane->rx_lrx == lrx) {
            lane->rx_discard += lane->rx_dst_left;
            lane->rx_dst_left = 0;
            lane->rx_dst = NULL;
            if (forget)
                lane->rx_lrx = NULL;
        }
    }
}

static void tc_tcp_lrx_unlink(tc_tcp_ep_t *ep, tc_tcp_lrx_t *lrx)
{
    for (tc_tcp_lrx_t **pp = &ep->lrx_head; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == lrx) {
            *pp = lrx->next;
            return;
        }
    }
}

void tc_tcp_chunk_rx_done(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_tcp_lrx_t *lrx, uint64_t off,
                          uint64_t len)
{
    if (lrx == NULL)
        return; /* a dropped copy */
    if (lrx->map != NULL) {
        uint64_t cell = off / lrx->chunk;
        unsigned bit = 1u << (cell % 8);
        if (lrx->map[cell / 8] & bit)
            return; /* the other copy came first */
        lrx->map[cell / 8] |= (unsigned char)bit;
    }
    lrx->done += len;
    if (lrx->done < lrx->len)
        return;
    tc_tcp_lrx_unlink(ep, lrx);
    if (lrx->map != NULL) { /* copies still arriving elsewhere are dropped */
        tc_tcp_lrx_detach_readers(ep, lrx, 1);
        tc_tcp_rail_ack_send(ctx, ep, lrx->id);
    }
    tc_tp_req_t *req = lrx->req;
    tc_tcp_unexp_t *u = lrx->unexp;
    if (req != NULL) {
        uint64_t cap = req->priv[TC_TCP_P_LEN];
        uint64_t n = lrx->len < cap ? lrx->len : cap;
        if (req->priv[TC_TCP_P_SINK]) {
            tc_tcp_sink_deliver(ctx, req, u != NULL ? u->data : lrx->own, n, lrx->len);
        } else {
            if (u != NULL && n > 0) /* claimed while arriving: the one copy of that path */
                memcpy((void *)(uintptr_t)req->priv[TC_TCP_P_BUF], u->data, (size_t)n);
            tc_tcp_req_complete(ctx, req, lrx->len > cap ? TC_ERR_TRUNCATED : TC_OK, (size_t)n);
        }
    }
    if (u != NULL && lrx->claimed) {
        tc_tcp_unexp_release(ctx, u);
    } else if (u != NULL) {
        u->complete = 1;
        u->lrx = NULL;
    }
    free(lrx->own);
    free(lrx);
}

void tc_tcp_lrx_claim(tc_tcp_lrx_t *lrx, tc_tp_req_t *req)
{
    lrx->req = req;
    lrx->claimed = 1;
}

int tc_tcp_lrx_cancel(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_tp_req_t *req)
{
    for (tc_tcp_lrx_t *lrx = ep->lrx_head; lrx != NULL; lrx = lrx->next) {
        if (lrx->req != req)
            continue;
        lrx->req = NULL;
        if (lrx->unexp == NULL) { /* the caller's buffer: nothing more is written to it */
            lrx->dst = NULL;
            lrx->cap = 0;
            tc_tcp_lrx_detach_readers(ep, lrx, 0);
            free(lrx->own);
            lrx->own = NULL;
        }
        tc_tcp_req_complete(ctx, req, TC_ERR_ABORTED, 0);
        return 1;
    }
    return 0;
}

size_t tc_tcp_lrx_nrecv(const tc_tcp_ep_t *ep)
{
    size_t n = 0;
    for (const tc_tcp_lrx_t *lrx = ep->lrx_head; lrx != NULL; lrx = lrx->next)
        n += lrx->req != NULL;
    return n;
}

void tc_tcp_stripe_drop(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_status_t status)
{
    tc_tp_req_t *req = ep->lq_head;
    while (req != NULL) {
        tc_tp_req_t *next = TC_TCP_REQ_NEXT(req);
        if (req->bytes == TC_TCP_ORPHAN)
            free(req);
        else
            tc_tcp_req_complete(ctx, req, status, 0);
        req = next;
    }
    if (ep->nrails > 1)
        ctx->rail_sends -= ep->nlq;
    ep->lq_head = ep->lq_tail = NULL;
    ep->nlq = 0;
    ep->tx_chunk.req = NULL;
    for (int i = 0; ep->lanes != NULL && i < ep->nsocks - 1; i++) {
        ep->lanes[i].tx.req = NULL;
        ep->lanes[i].rx_lrx = NULL;
        ep->lanes[i].rx_dst = NULL;
    }
    ep->rx_lrx = NULL;

    tc_tcp_lrx_t *lrx = ep->lrx_head;
    while (lrx != NULL) {
        tc_tcp_lrx_t *next = lrx->next;
        if (lrx->req != NULL)
            tc_tcp_req_complete(ctx, lrx->req, status, 0);
        if (lrx->unexp != NULL && lrx->claimed)
            tc_tcp_unexp_release(ctx, lrx->unexp); /* out of the unexpected queue already */
        else if (lrx->unexp != NULL)
            lrx->unexp->lrx = NULL; /* incomplete: freed with the queue's incomplete ones */
        free(lrx->own);
        free(lrx);
        lrx = next;
    }
    ep->lrx_head = NULL;
}
