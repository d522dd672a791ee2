/* The receive side: the consumer end of the rx ring. Every cell header is copied out of the
 * segment once and checked against the ring's geometry before anything is read or written. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/base/copy.h"
#include "shm_internal.h"

static tc_tp_req_t *tc_shm_wq_find(tc_shm_ep_t *ep, uint64_t cookie)
{
    for (tc_tp_req_t *r = ep->wq.head; r != NULL; r = TC_SHM_NEXT(r))
        if (r->priv[TC_SHM_P_COOKIE] == cookie)
            return r;
    return NULL;
}

static void tc_shm_uq_remove(tc_shm_ep_t *ep, tc_shm_unexp_t *u)
{
    tc_shm_unexp_t *prev = NULL;
    for (tc_shm_unexp_t *x = ep->uq_head; x != NULL; prev = x, x = x->next) {
        if (x != u)
            continue;
        if (prev != NULL)
            prev->next = x->next;
        else
            ep->uq_head = x->next;
        if (ep->uq_tail == x)
            ep->uq_tail = prev;
        return;
    }
}

static tc_shm_unexp_t *tc_shm_unexp_new(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep, uint64_t tag,
                                        uint64_t total, size_t data_len)
{
    tc_shm_unexp_t *u = NULL;
    uint64_t cap = data_len <= ctx->cell_size ? ctx->cell_size : data_len;
    if (cap == ctx->cell_size && ctx->unexp_free != NULL) {
        u = ctx->unexp_free;
        ctx->unexp_free = u->next;
        ctx->nunexp_free--;
    } else if ((u = malloc(sizeof(*u) + (size_t)cap)) != NULL) {
        ctx->unexp_allocs++;
    }
    if (u == NULL) {
        tc_shm_ep_fail(ctx, ep, TC_ERR_NO_MEMORY,
                       "sent a message of %llu bytes (tag %llu) that could not be stored before "
                       "its receive was posted: out of memory",
                       (unsigned long long)total, (unsigned long long)tag);
        return NULL;
    }
    memset(u, 0, sizeof(*u));
    u->cap = cap;
    u->tag = tag;
    u->total = total;
    if (ep->uq_tail != NULL)
        ep->uq_tail->next = u;
    else
        ep->uq_head = u;
    ep->uq_tail = u;
    return u;
}

void tc_shm_unexp_release(tc_shm_ctx_t *ctx, tc_shm_unexp_t *u)
{
    if (u->cap == ctx->cell_size && ctx->nunexp_free < TC_SHM_UNEXP_KEEP) {
        u->next = ctx->unexp_free;
        ctx->unexp_free = u;
        ctx->nunexp_free++;
        return;
    }
    free(u);
}

static tc_tp_req_t *tc_shm_rq_match(tc_shm_ep_t *ep, uint64_t tag)
{
    for (tc_tp_req_t *r = ep->rq.head; r != NULL; r = TC_SHM_NEXT(r)) {
        if (r->priv[TC_SHM_P_TAG] == tag) {
            tc_shm_queue_remove(&ep->rq, r);
            return r;
        }
    }
    return NULL;
}

/* Copy a whole message into a receive (or its sink) and complete it. */
static void tc_shm_deliver(tc_shm_ctx_t *ctx, tc_tp_req_t *req, const void *data, uint64_t total)
{
    uint64_t cap = req->priv[TC_SHM_P_LEN];
    uint64_t n = total <= cap ? total : cap;
    tc_status_t st = n > 0 ? tc_shm_rx_piece(req, 0, data, n, 1) : TC_OK;
    if (st != TC_OK)
        tc_shm_req_complete(ctx, req, st, 0);
    else
        tc_shm_req_complete(ctx, req, total <= cap ? TC_OK : TC_ERR_TRUNCATED, n);
}

/* Single copy: queue the read of a message announced by RTS into @p req. @p u is the RTS's
 * unexpected record, or NULL for one matched on arrival. */
static void tc_shm_rd_queue(tc_shm_ep_t *ep, tc_tp_req_t *req, tc_shm_unexp_t *u, uint64_t total,
                            uint64_t addr, uint64_t cookie)
{
    tc_shm_read_t *rd = u != NULL ? &u->rd : &ep->rd_own;
    *rd = (tc_shm_read_t){NULL, req, total, addr, cookie, u};
    req->priv[TC_SHM_P_OFF] = 0;
    if (ep->rd_tail != NULL)
        ep->rd_tail->next = rd;
    else
        ep->rd_head = rd;
    ep->rd_tail = rd;
}

/* The oldest queued read is done (or cancelled): acknowledge it so the sender completes. */
static void tc_shm_rd_pop(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep)
{
    tc_shm_read_t *rd = ep->rd_head;
    ep->rd_head = rd->next;
    if (ep->rd_head == NULL)
        ep->rd_tail = NULL;
    tc_shm_ctrl_post(ctx, ep, TC_SHM_T_ACK, rd->cookie);
    if (rd->owner != NULL)
        tc_shm_unexp_release(ctx, rd->owner);
}

/* Read the oldest queued message on: at least one piece, then on while the pass's budget
 * lasts, so one large message is read over several progress calls. A message its sender
 * withdrew ends the receive with TC_ERR_ABORTED, whatever was read of it (shm_cancel.c). */
static void tc_shm_rd_pull(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep)
{
    tc_shm_read_t *rd = ep->rd_head;
    tc_tp_req_t *req = rd->req;
    if (req == NULL) { /* its receive was cancelled */
        tc_shm_rd_pop(ctx, ep);
        return;
    }
    uint64_t cap = req->priv[TC_SHM_P_LEN];
    uint64_t end = rd->total <= cap ? rd->total : cap;
    uint64_t off = req->priv[TC_SHM_P_OFF];
    uint64_t piece = req->priv[TC_SHM_P_SINK] ? TC_SHM_STAGE_BYTES : TC_SHM_PASS_COPY_MAX;
    tc_status_t consumed = TC_OK;
    int first = 1, got = 0;
    while (off < end && consumed == TC_OK && (first || ctx->pass_copied < TC_SHM_PASS_COPY_MAX)) {
        uint64_t n = end - off < piece ? end - off : piece;
        if ((got = tc_shm_cma_into(ctx, ep, req, rd->addr, rd->cookie, off, n, end, &consumed)) <
            0) {
            int err = errno;
            tc_status_t st = err == ESRCH    ? TC_ERR_PEER_FAILED
                             : err == EFAULT ? TC_ERR_PROTOCOL
                                             : TC_ERR_SYSTEM;
            if (err == ESRCH)
                tc_shm_ep_fail(ctx, ep, st, "exited");
            else
                tc_shm_ep_fail(ctx, ep, st,
                               "announced %llu bytes at 0x%llx that process_vm_readv cannot read "
                               "at offset %llu: %s",
                               (unsigned long long)rd->total, (unsigned long long)rd->addr,
                               (unsigned long long)off, strerror(err));
            return; /* failing the endpoint completed the receive */
        }
        if (got > 0)
            break; /* withdrawn */
        off += n;
        ctx->pass_copied += n;
        ctx->moved++;
        first = 0;
    }
    req->priv[TC_SHM_P_OFF] = off;
    if (off < end && consumed == TC_OK && got == 0)
        return;
    tc_status_t st = got > 0             ? TC_ERR_ABORTED
                     : consumed != TC_OK ? consumed
                     : rd->total <= cap  ? TC_OK
                                         : TC_ERR_TRUNCATED;
    tc_shm_rd_pop(ctx, ep); /* frees rd's owner */
    tc_shm_req_complete(ctx, req, st, st == TC_OK || st == TC_ERR_TRUNCATED ? end : 0);
}

/* Payload of a pipelined message (FIRST/MORE) at ep->rx_off. */
static void tc_shm_rx_data(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep, const unsigned char *p, uint64_t len)
{
    uint64_t off = ep->rx_off;
    if (ep->rx_req != NULL) {
        tc_tp_req_t *req = ep->rx_req;
        uint64_t cap = req->priv[TC_SHM_P_LEN];
        uint64_t end = ep->rx_total < cap ? ep->rx_total : cap;
        if (off < cap && len > 0) {
            uint64_t n = len < cap - off ? len : cap - off;
            tc_status_t st = tc_shm_rx_piece(req, off, p, n, off + n == end);
            if (st != TC_OK) { /* the rest of the message is dropped */
                ep->rx_req = NULL;
                tc_shm_req_complete(ctx, req, st, 0);
            }
        }
    } else if (ep->rx_unexp != NULL && len > 0) { /* neither: its receive was cancelled */
        tc_copy(ep->rx_unexp->data + off, p, len);
    }
    ep->rx_off = off + len;
    ctx->moved++;
    if (ep->rx_off < ep->rx_total)
        return;
    ep->rx_active = 0;
    if (ep->rx_req != NULL) {
        tc_tp_req_t *req = ep->rx_req;
        uint64_t cap = req->priv[TC_SHM_P_LEN];
        ep->rx_req = NULL;
        tc_shm_req_complete(ctx, req, ep->rx_total <= cap ? TC_OK : TC_ERR_TRUNCATED,
                            ep->rx_total <= cap ? ep->rx_total : cap);
        return;
    }
    tc_shm_unexp_t *u = ep->rx_unexp;
    ep->rx_unexp = NULL;
    if (u == NULL)
        return;
    u->complete = 1;
    if (u->req != NULL) { /* a receive matched it while it arrived */
        tc_shm_deliver(ctx, u->req, u->data, u->total);
        tc_shm_uq_remove(ep, u);
        tc_shm_unexp_release(ctx, u);
    }
}

/* Start of a message: EAGER, FIRST or RTS. */
static void tc_shm_rx_msg(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep, const tc_shm_cell_hdr_t *h,
                          const unsigned char *p)
{
    if (ep->rx_active) {
        tc_shm_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                       "started a message (cell type %u) inside another one (%llu of %llu bytes "
                       "received)",
                       h->type, (unsigned long long)ep->rx_off, (unsigned long long)ep->rx_total);
        return;
    }
    if (h->type == TC_SHM_T_EAGER) {
        tc_tp_req_t *req = tc_shm_rq_match(ep, h->tag);
        if (req != NULL) {
            tc_shm_deliver(ctx, req, p, h->len);
            return;
        }
        tc_shm_unexp_t *u = tc_shm_unexp_new(ctx, ep, h->tag, h->len, h->len);
        if (u == NULL)
            return;
        if (h->len > 0)
            tc_copy(u->data, p, h->len);
        u->complete = 1;
        return;
    }
    if (h->total > TC_TP_SHM_MAX_MSG || h->total <= ep->cell_size ||
        (h->type == TC_SHM_T_FIRST && h->len > h->total) || h->off != 0) {
        tc_shm_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                       "announced a message of %llu bytes (cell type %u, %llu at offset %llu); "
                       "large messages are %u..%llu bytes",
                       (unsigned long long)h->total, h->type, (unsigned long long)h->len,
                       (unsigned long long)h->off, ep->cell_size + 1,
                       (unsigned long long)TC_TP_SHM_MAX_MSG);
        return;
    }
    if (h->type == TC_SHM_T_RTS) {
        if (!ep->cma_local) {
            tc_shm_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                           "sent a single-copy rendezvous, but this side cannot read its memory");
            return;
        }
        tc_tp_req_t *req = tc_shm_rq_match(ep, h->tag);
        if (req != NULL) {
            tc_shm_rd_queue(ep, req, NULL, h->total, h->addr, h->cookie);
            return;
        }
        tc_shm_unexp_t *u = tc_shm_unexp_new(ctx, ep, h->tag, h->total, 0);
        if (u == NULL)
            return;
        u->rts = 1;
        u->complete = 1;
        u->addr = h->addr;
        u->cookie = h->cookie;
        if (tc_shm_withdrawn(ep, h->cookie)) { /* a sweep before it arrived missed it */
            u->withdrawn = 1;
            tc_shm_ctrl_post(ctx, ep, TC_SHM_T_ACK, h->cookie);
        }
        return;
    }
    /* FIRST */
    ep->rx_req = tc_shm_rq_match(ep, h->tag);
    ep->rx_unexp = NULL;
    if (ep->rx_req == NULL &&
        (ep->rx_unexp = tc_shm_unexp_new(ctx, ep, h->tag, h->total, (size_t)h->total)) == NULL)
        return;
    ep->rx_active = 1;
    ep->rx_total = h->total;
    ep->rx_off = 0;
    tc_shm_rx_data(ctx, ep, p, h->len);
}

static void tc_shm_rx_cell(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep, const tc_shm_cell_hdr_t *h,
                           const unsigned char *p)
{
    tc_tp_req_t *req;
    tc_shm_mem_t *mem;
    switch (h->type) {
    case TC_SHM_T_EAGER:
    case TC_SHM_T_FIRST:
    case TC_SHM_T_RTS:
        tc_shm_rx_msg(ctx, ep, h, p);
        return;
    case TC_SHM_T_MORE:
        if (!ep->rx_active || h->off != ep->rx_off || h->len > ep->rx_total - ep->rx_off) {
            tc_shm_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                           "sent %llu bytes at offset %llu of a message, expected offset %llu "
                           "of %llu bytes%s",
                           (unsigned long long)h->len, (unsigned long long)h->off,
                           (unsigned long long)ep->rx_off, (unsigned long long)ep->rx_total,
                           ep->rx_active ? "" : " (no message is in progress)");
            return;
        }
        tc_shm_rx_data(ctx, ep, p, h->len);
        return;
    case TC_SHM_T_ACK:
        req = tc_shm_wq_find(ep, h->cookie);
        if (req == NULL || req->priv[TC_SHM_P_KIND] == TC_SHM_K_GET) {
            tc_shm_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                           "acknowledged request %llu, which is not waiting for an "
                           "acknowledgement",
                           (unsigned long long)h->cookie);
            return;
        }
        tc_shm_queue_remove(&ep->wq, req);
        tc_shm_rts_acked(ep, req);
        tc_shm_req_complete(ctx, req, TC_OK,
                            req->priv[TC_SHM_P_KIND] == TC_SHM_K_SIGNAL
                                ? sizeof(uint64_t)
                                : (size_t)req->priv[TC_SHM_P_LEN]);
        return;
    case TC_SHM_T_PUT:
        mem = tc_shm_mem_find(ctx, h->aux, h->off, h->len);
        if (mem == NULL) {
            tc_shm_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                           "put %llu bytes at offset %llu of key %llu, outside every registration",
                           (unsigned long long)h->len, (unsigned long long)h->off,
                           (unsigned long long)h->aux);
            return;
        }
        if (h->len > 0)
            tc_copy((unsigned char *)mem->super.addr + h->off, p, h->len);
        if (h->flags & TC_SHM_F_LAST)
            tc_shm_ctrl_post(ctx, ep, TC_SHM_T_ACK, h->cookie);
        return;
    case TC_SHM_T_SIGNAL:
        mem = tc_shm_mem_find(ctx, h->aux, h->off, sizeof(uint64_t));
        if (mem == NULL || ((uintptr_t)mem->super.addr + h->off) % sizeof(uint64_t) != 0 ||
            (h->flags != TC_TP_SIGNAL_ADD && h->flags != TC_TP_SIGNAL_SET)) {
            tc_shm_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                           "signalled (op %u) offset %llu of key %llu: not an aligned word of a "
                           "registration, or an unknown op",
                           h->flags, (unsigned long long)h->off, (unsigned long long)h->aux);
            return;
        }
        uint64_t *word = (uint64_t *)(void *)((unsigned char *)mem->super.addr + h->off);
        if (h->flags == TC_TP_SIGNAL_ADD)
            __atomic_fetch_add(word, h->addr, __ATOMIC_RELEASE);
        else
            __atomic_store_n(word, h->addr, __ATOMIC_RELEASE);
        tc_shm_ctrl_post(ctx, ep, TC_SHM_T_ACK, h->cookie);
        return;
    case TC_SHM_T_GET_REQ: {
        mem = tc_shm_mem_find(ctx, h->aux, h->off, h->total);
        if (mem == NULL) {
            tc_shm_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                           "asked for %llu bytes at offset %llu of key %llu, outside every "
                           "registration",
                           (unsigned long long)h->total, (unsigned long long)h->off,
                           (unsigned long long)h->aux);
            return;
        }
        tc_shm_job_t *j = tc_pool_get(&ctx->jobs);
        if (j == NULL) {
            tc_shm_ep_fail(ctx, ep, TC_ERR_NO_MEMORY, "asked for a get: %s", tc_last_error());
            return;
        }
        memset(j, 0, sizeof(*j));
        j->src = (const unsigned char *)mem->super.addr + h->off;
        j->len = h->total;
        j->cookie = h->cookie;
        if (ep->jobs_tail != NULL)
            ep->jobs_tail->next = j;
        else
            ep->jobs_head = j;
        ep->jobs_tail = j;
        return;
    }
    case TC_SHM_T_GET_DATA:
        req = tc_shm_wq_find(ep, h->cookie);
        if (req == NULL || req->priv[TC_SHM_P_KIND] != TC_SHM_K_GET ||
            h->off != req->priv[TC_SHM_P_OFF] ||
            h->len > req->priv[TC_SHM_P_LEN] - req->priv[TC_SHM_P_OFF] ||
            ((h->flags & TC_SHM_F_LAST) && h->off + h->len != req->priv[TC_SHM_P_LEN])) {
            tc_shm_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                           "answered get %llu with %llu bytes at offset %llu that do not fit",
                           (unsigned long long)h->cookie, (unsigned long long)h->len,
                           (unsigned long long)h->off);
            return;
        }
        if (h->len > 0)
            tc_copy((unsigned char *)(uintptr_t)req->priv[TC_SHM_P_BUF] + h->off, p, h->len);
        req->priv[TC_SHM_P_OFF] += h->len;
        if (h->flags & TC_SHM_F_LAST) {
            tc_shm_queue_remove(&ep->wq, req);
            tc_shm_req_complete(ctx, req, TC_OK, (size_t)req->priv[TC_SHM_P_LEN]);
        }
        return;
    default:
        tc_shm_ep_fail(ctx, ep, TC_ERR_PROTOCOL, "wrote a cell of unknown type %u", h->type);
        return;
    }
}

int tc_shm_ep_read(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep)
{
    tc_shm_ring_t *r = &ep->rx;
    int n = 0;
    while (n < TC_SHM_RX_BUDGET && (n == 0 || ctx->pass_copied < TC_SHM_PASS_COPY_MAX) &&
           ep->state == TC_SHM_EP_UP) {
        if (ep->rd_head != NULL) { /* cells wait while a single-copy message is read */
            tc_shm_rd_pull(ctx, ep);
            n++;
            continue;
        }
        if (r->pos == r->seen) {
            uint64_t tail = __atomic_load_n(r->tail, __ATOMIC_ACQUIRE);
            if (tail < r->pos || tail - r->pos > ep->ncells) {
                tc_shm_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                               "broke the ring: tail %llu, but %llu cells were consumed of %u",
                               (unsigned long long)tail, (unsigned long long)r->pos, ep->ncells);
                break;
            }
            r->seen = tail;
            if (tail == r->pos)
                break;
        }
        const unsigned char *cell = r->cells + (size_t)(r->pos % ep->ncells) * ep->stride;
        tc_shm_cell_hdr_t h;
        memcpy(&h, cell, sizeof(h)); /* read once: the peer may change it under us */
        if (h.len > ep->cell_size) {
            tc_shm_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                           "wrote a cell (type %u) of %llu bytes, cells hold %u", h.type,
                           (unsigned long long)h.len, ep->cell_size);
            break;
        }
        tc_shm_rx_cell(ctx, ep, &h, cell + TC_SHM_CELL_HDR);
        r->pos++;
        __atomic_store_n(r->head, r->pos, __ATOMIC_RELEASE);
        n++;
    }
    return n;
}

int tc_shm_probe(tc_tp_ep_t *super, uint64_t tag, uint64_t *len_p)
{
    const tc_shm_ep_t *ep = (const tc_shm_ep_t *)super;
    for (const tc_shm_unexp_t *u = ep->uq_head; u != NULL; u = u->next)
        if (u->tag == tag && u->req == NULL) { /* not claimed while its cells arrive */
            *len_p = u->total;
            return 1;
        }
    return 0;
}

tc_status_t tc_shm_recv(tc_tp_ep_t *super, uint64_t tag, void *buf, size_t cap, tc_tp_req_t *req)
{
    return tc_shm_recv_post(super, tag, buf, cap, 0, req);
}

tc_status_t tc_shm_recv_post(tc_tp_ep_t *super, uint64_t tag, void *buf, size_t cap, int sink,
                             tc_tp_req_t *req)
{
    tc_shm_ep_t *ep = (tc_shm_ep_t *)super;
    tc_shm_ctx_t *ctx = (tc_shm_ctx_t *)super->ctx;
    if (req == NULL || (buf == NULL && cap != 0))
        return tc_error_set(TC_ERR_INVALID_ARG, "shm recv from peer %llu: req or buf is NULL",
                            (unsigned long long)super->peer_id);
    if (req->status == TC_INPROGRESS && req->bytes == TC_SHM_POSTED)
        return tc_error_set(TC_ERR_INVALID_STATE,
                            "shm recv from peer %llu (tag %llu): request already pending",
                            (unsigned long long)super->peer_id, (unsigned long long)tag);
    req->status = TC_INPROGRESS;
    req->bytes = TC_SHM_POSTED;
    req->priv[TC_SHM_P_BUF] = (uintptr_t)buf;
    req->priv[TC_SHM_P_LEN] = cap;
    req->priv[TC_SHM_P_TAG] = tag;
    req->priv[TC_SHM_P_KIND] = TC_SHM_K_RECV;
    req->priv[TC_SHM_P_OFF] = 0;
    req->priv[TC_SHM_P_SINK] = (uint64_t)sink;

    /* The oldest unexpected message with this tag, even on a failed endpoint. */
    for (tc_shm_unexp_t *u = ep->uq_head; u != NULL; u = u->next) {
        if (u->tag != tag || u->req != NULL)
            continue;
        if (!u->complete) {
            u->req = req; /* delivered when its last cell arrives */
            return TC_OK;
        }
        tc_shm_uq_remove(ep, u);
        if (u->withdrawn) { /* acknowledged when it was withdrawn */
            tc_shm_unexp_release(ctx, u);
            tc_shm_req_complete(ctx, req, TC_ERR_ABORTED, 0);
            return TC_OK;
        }
        if (u->rts) {
            tc_shm_rd_queue(ep, req, u, u->total, u->addr, u->cookie);
            return TC_OK;
        }
        tc_shm_deliver(ctx, req, u->data, u->total);
        tc_shm_unexp_release(ctx, u);
        return TC_OK;
    }
    if (super->failed != TC_OK) {
        req->status = super->failed;
        req->bytes = 0; /* ended: not the pending mark */
        return tc_error_set(super->failed, "%s", super->error);
    }
    tc_shm_queue_push(&ep->rq, req);
    return TC_OK;
}
