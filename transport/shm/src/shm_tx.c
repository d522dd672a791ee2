/* The send side: the producer end of the tx ring, the send queue (eager, rendezvous,
 * pipelined), one-sided requests that travel through the ring, control cells and get replies. */
#include <stdlib.h>
#include <string.h>

#include "tcomms/base/copy.h"
#include "shm_internal.h"

tc_shm_cell_hdr_t *tc_shm_tx_cell(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep)
{
    tc_shm_ring_t *r = &ep->tx;
    if (r->pos - r->seen >= ep->ncells) {
        uint64_t head = __atomic_load_n(r->head, __ATOMIC_ACQUIRE);
        if (head > r->pos || r->pos - head > ep->ncells) {
            tc_shm_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                           "broke the ring: head %llu, but %llu cells were produced into %u",
                           (unsigned long long)head, (unsigned long long)r->pos, ep->ncells);
            return NULL;
        }
        r->seen = head;
        if (r->pos - head >= ep->ncells)
            return NULL; /* full */
    }
    return (tc_shm_cell_hdr_t *)(void *)(r->cells + (size_t)(r->pos % ep->ncells) * ep->stride);
}

void tc_shm_tx_commit(tc_shm_ep_t *ep)
{
    ep->tx.pos++;
    __atomic_store_n(ep->tx.tail, ep->tx.pos, __ATOMIC_RELEASE);
}

static unsigned char *tc_shm_payload(tc_shm_cell_hdr_t *cell)
{
    return (unsigned char *)(cell + 1);
}

/* Fill a cell header; the shared cell is written field by field, never read back. */
static void tc_shm_cell_set(tc_shm_cell_hdr_t *c, uint32_t type, uint32_t flags, uint64_t len,
                            uint64_t tag, uint64_t total, uint64_t off, uint64_t cookie,
                            uint64_t addr, uint64_t aux)
{
    tc_shm_cell_hdr_t h = {type, flags, len, tag, total, off, cookie, addr, aux};
    memcpy(c, &h, sizeof(h));
}

void tc_shm_ctrl_post(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep, uint32_t type, uint64_t cookie)
{
    if (ep->ctrl_n == ep->ctrl_cap) {
        /* grow and unwrap the FIFO; amortised, so no allocation in the steady state */
        size_t cap = ep->ctrl_cap ? 2 * ep->ctrl_cap : 16;
        tc_shm_ctrl_t *a = malloc(cap * sizeof(*a));
        if (a == NULL) {
            tc_shm_ep_fail(ctx, ep, TC_ERR_NO_MEMORY, "could not be answered: out of memory");
            return;
        }
        for (size_t i = 0; i < ep->ctrl_n; i++)
            a[i] = ep->ctrl[(ep->ctrl_head + i) % ep->ctrl_cap];
        free(ep->ctrl);
        ep->ctrl = a;
        ep->ctrl_cap = cap;
        ep->ctrl_head = 0;
    }
    ep->ctrl[(ep->ctrl_head + ep->ctrl_n) % ep->ctrl_cap] = (tc_shm_ctrl_t){type, cookie};
    ep->ctrl_n++;
}

/* Push cells of the request at the head of the send queue; returns 0 when the ring is full. */
static int tc_shm_push_req(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep, tc_tp_req_t *req)
{
    const unsigned char *buf = (const unsigned char *)(uintptr_t)req->priv[TC_SHM_P_BUF];
    uint64_t len = req->priv[TC_SHM_P_LEN];
    uint64_t cookie = req->priv[TC_SHM_P_COOKIE];
    uint64_t key = req->priv[TC_SHM_P_KEY];
    uint64_t roff = req->priv[TC_SHM_P_TAG]; /* tag of a send, remote offset of the others */
    tc_shm_cell_hdr_t *c;

    switch (req->priv[TC_SHM_P_KIND]) {
    case TC_SHM_K_SEND:
        if (len <= ep->cell_size) {
            if ((c = tc_shm_tx_cell(ctx, ep)) == NULL)
                return 0;
            tc_shm_cell_set(c, TC_SHM_T_EAGER, 0, len, roff, len, 0, 0, 0, 0);
            if (len > 0)
                tc_copy(tc_shm_payload(c), buf, len);
            tc_shm_tx_commit(ep);
            tc_shm_queue_pop(&ep->sq);
            tc_shm_req_complete(ctx, req, TC_OK, len);
            return 1;
        }
        /* single copy, unless TC_SHM_WITHDRAW_SLOTS are announced already: then through the
         * cells, which depends on no receive (a send waiting for an acknowledgement would hold
         * up everything behind it on the endpoint, other communicators' messages included) */
        if (ep->cma_peer && req->priv[TC_SHM_P_OFF] == 0 && ep->rts_out < TC_SHM_WITHDRAW_SLOTS) {
            if ((c = tc_shm_tx_cell(ctx, ep)) == NULL)
                return 0;
            tc_shm_cell_set(c, TC_SHM_T_RTS, 0, 0, roff, len, 0, cookie, (uintptr_t)buf, 0);
            tc_shm_tx_commit(ep);
            tc_shm_queue_pop(&ep->sq);
            tc_shm_queue_push(&ep->wq, req);
            ep->rts_out++;
            return 1;
        }
        for (;;) { /* pipelined through the cells */
            uint64_t off = req->priv[TC_SHM_P_OFF];
            if ((c = tc_shm_tx_cell(ctx, ep)) == NULL)
                return 0;
            uint64_t n = len - off < ep->cell_size ? len - off : ep->cell_size;
            tc_shm_cell_set(c, off == 0 ? TC_SHM_T_FIRST : TC_SHM_T_MORE, 0, n, roff, len, off,
                            0, 0, 0);
            tc_copy(tc_shm_payload(c), buf + off, n);
            tc_shm_tx_commit(ep);
            req->priv[TC_SHM_P_OFF] = off + n;
            if (off + n == len) {
                tc_shm_queue_pop(&ep->sq);
                tc_shm_req_complete(ctx, req, TC_OK, len);
                return 1;
            }
        }
    case TC_SHM_K_PUT:
        for (;;) {
            uint64_t off = req->priv[TC_SHM_P_OFF];
            if ((c = tc_shm_tx_cell(ctx, ep)) == NULL)
                return 0;
            uint64_t n = len - off < ep->cell_size ? len - off : ep->cell_size;
            int last = off + n == len;
            tc_shm_cell_set(c, TC_SHM_T_PUT, last ? TC_SHM_F_LAST : 0, n, 0, len, roff + off,
                            cookie, 0, key);
            if (n > 0)
                tc_copy(tc_shm_payload(c), buf + off, n);
            tc_shm_tx_commit(ep);
            req->priv[TC_SHM_P_OFF] = off + n;
            if (last) {
                tc_shm_queue_pop(&ep->sq);
                tc_shm_queue_push(&ep->wq, req);
                return 1;
            }
        }
    case TC_SHM_K_SIGNAL:
        if ((c = tc_shm_tx_cell(ctx, ep)) == NULL)
            return 0;
        /* value in BUF, op in LEN */
        tc_shm_cell_set(c, TC_SHM_T_SIGNAL, (uint32_t)len, 0, 0, 0, roff, cookie,
                        req->priv[TC_SHM_P_BUF], key);
        tc_shm_tx_commit(ep);
        tc_shm_queue_pop(&ep->sq);
        tc_shm_queue_push(&ep->wq, req);
        return 1;
    case TC_SHM_K_GET:
        if ((c = tc_shm_tx_cell(ctx, ep)) == NULL)
            return 0;
        tc_shm_cell_set(c, TC_SHM_T_GET_REQ, 0, 0, 0, len, roff, cookie, 0, key);
        tc_shm_tx_commit(ep);
        tc_shm_queue_pop(&ep->sq);
        tc_shm_queue_push(&ep->wq, req);
        return 1;
    default:
        tc_shm_ep_fail(ctx, ep, TC_ERR_INTERNAL, "has a request of unknown kind %llu queued",
                       (unsigned long long)req->priv[TC_SHM_P_KIND]);
        return 0;
    }
}

void tc_shm_ep_flush(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep)
{
    tc_shm_cell_hdr_t *c;
    while (ep->ctrl_n > 0 && ep->state == TC_SHM_EP_UP) {
        if ((c = tc_shm_tx_cell(ctx, ep)) == NULL)
            return;
        tc_shm_ctrl_t *m = &ep->ctrl[ep->ctrl_head];
        tc_shm_cell_set(c, m->type, 0, 0, 0, 0, 0, m->cookie, 0, 0);
        tc_shm_tx_commit(ep);
        ep->ctrl_head = (ep->ctrl_head + 1) % ep->ctrl_cap;
        ep->ctrl_n--;
    }
    while (ep->jobs_head != NULL && ep->state == TC_SHM_EP_UP) {
        tc_shm_job_t *j = ep->jobs_head;
        for (;;) {
            if ((c = tc_shm_tx_cell(ctx, ep)) == NULL)
                return;
            uint64_t n = j->len - j->off < ep->cell_size ? j->len - j->off : ep->cell_size;
            int last = j->off + n == j->len;
            tc_shm_cell_set(c, TC_SHM_T_GET_DATA, last ? TC_SHM_F_LAST : 0, n, 0, j->len, j->off,
                            j->cookie, 0, 0);
            if (n > 0)
                tc_copy(tc_shm_payload(c), j->src + j->off, n);
            tc_shm_tx_commit(ep);
            j->off += n;
            if (last)
                break;
        }
        ep->jobs_head = j->next;
        if (ep->jobs_head == NULL)
            ep->jobs_tail = NULL;
        tc_pool_put(&ctx->jobs, j);
    }
    while (ep->sq.head != NULL && ep->state == TC_SHM_EP_UP)
        if (!tc_shm_push_req(ctx, ep, ep->sq.head))
            return;
}

tc_status_t tc_shm_send(tc_tp_ep_t *super, uint64_t tag, const void *buf, size_t len,
                        tc_tp_req_t *req)
{
    tc_shm_ep_t *ep = (tc_shm_ep_t *)super;
    tc_shm_ctx_t *ctx = (tc_shm_ctx_t *)super->ctx;
    if (req == NULL || (buf == NULL && len != 0))
        return tc_error_set(TC_ERR_INVALID_ARG, "shm send to peer %llu: req or buf is NULL",
                            (unsigned long long)super->peer_id);
    if (req->status == TC_INPROGRESS && req->bytes == TC_SHM_POSTED)
        return tc_error_set(TC_ERR_INVALID_STATE,
                            "shm send to peer %llu (tag %llu): request already pending",
                            (unsigned long long)super->peer_id, (unsigned long long)tag);
    if ((uint64_t)len > TC_TP_SHM_MAX_MSG)
        return tc_error_set(
            TC_ERR_INVALID_ARG, "shm send to peer %llu: %zu bytes, more than the maximum %llu",
            (unsigned long long)super->peer_id, len, (unsigned long long)TC_TP_SHM_MAX_MSG);
    if (super->failed != TC_OK) {
        req->status = super->failed;
        return tc_error_set(super->failed, "%s", super->error);
    }
    req->status = TC_INPROGRESS;
    req->bytes = TC_SHM_POSTED;
    req->priv[TC_SHM_P_BUF] = (uintptr_t)buf;
    req->priv[TC_SHM_P_LEN] = len;
    req->priv[TC_SHM_P_TAG] = tag;
    req->priv[TC_SHM_P_KIND] = TC_SHM_K_SEND;
    req->priv[TC_SHM_P_OFF] = 0;
    req->priv[TC_SHM_P_COOKIE] = ctx->next_cookie++;
    req->priv[TC_SHM_P_KEY] = 0;
    tc_shm_queue_push(&ep->sq, req);
    /* alone in the queue: push now rather than at the next progress (latency) */
    if (ep->state == TC_SHM_EP_UP && ep->sq.head == req && ep->ctrl_n == 0 && ep->jobs_head == NULL)
        tc_shm_push_req(ctx, ep, req);
    return TC_OK;
}

tc_status_t tc_shm_post_ring(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep, tc_tp_req_t *req)
{
    req->status = TC_INPROGRESS;
    req->bytes = 0;
    req->priv[TC_SHM_P_OFF] = 0;
    req->priv[TC_SHM_P_COOKIE] = ctx->next_cookie++;
    tc_shm_queue_push(&ep->sq, req);
    if (ep->state == TC_SHM_EP_UP && ep->sq.head == req && ep->ctrl_n == 0 && ep->jobs_head == NULL)
        tc_shm_push_req(ctx, ep, req);
    return TC_OK;
}
