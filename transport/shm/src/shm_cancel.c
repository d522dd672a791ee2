/* Cancel: a request taken back by its owner, and messages whose receiver is gone. What the peer
 * already holds a part of is finished privately (the rest of a half-pushed send from a copy); a
 * single-copy send the peer may be reading is withdrawn through the segment (shm_layout.h,
 * withdrawn), so the reader never takes bytes the owner has had back for its own. */
#include <stdlib.h>

#include "shm_internal.h"
#include "tcomms/base/copy.h"
#include "tcomms/base/log.h"

/* A private copy of @p req the backend finishes and frees (payload bytes copied too when
 * @p copy_len), or NULL (the error set). */
static tc_tp_req_t *tc_shm_orphan_new(const tc_tp_req_t *req, uint64_t copy_len)
{
    tc_tp_req_t *o = malloc(sizeof(*o) + (size_t)copy_len);
    if (o == NULL) {
        tc_error_set(TC_ERR_NO_MEMORY, "shm cancel: copying a request of %llu bytes",
                     (unsigned long long)copy_len);
        return NULL;
    }
    *o = *req;
    if (copy_len) {
        tc_copy(o + 1, (const void *)(uintptr_t)req->priv[TC_SHM_P_BUF], (size_t)copy_len);
        o->priv[TC_SHM_P_BUF] = (uintptr_t)(o + 1);
    }
    o->bytes = TC_SHM_ORPHAN;
    o->priv[TC_SHM_P_KEY] = 0;
    return o;
}

/* Hand @p req's place in queue @p q to its copy @p o, and abort @p req. */
static void tc_shm_orphan_install(tc_shm_ctx_t *ctx, tc_shm_queue_t *q, tc_tp_req_t *req,
                                  tc_tp_req_t *o)
{
    tc_tp_req_t *prev = NULL;
    for (tc_tp_req_t *r = q->head; r != NULL && r != req; r = TC_SHM_NEXT(r))
        prev = r;
    if (prev != NULL)
        prev->priv[TC_SHM_P_NEXT] = (uintptr_t)o;
    else
        q->head = o;
    if (q->tail == req)
        q->tail = o;
    tc_shm_req_complete(ctx, req, TC_ERR_ABORTED, 0);
}

/* Put @p cookie in a free slot of this side's row (the caller fences before the sender's memory
 * goes back to its owner): the slot + 1. One is free: every withdrawn send is among the
 * rts_out announced, at most TC_SHM_WITHDRAW_SLOTS. */
static uint64_t tc_shm_withdraw_publish(tc_shm_ep_t *ep, uint64_t cookie)
{
    unsigned i = 0;
    while (i < TC_SHM_WITHDRAW_SLOTS && (ep->wslots[i / 64] >> (i % 64) & 1))
        i++;
    if (i == TC_SHM_WITHDRAW_SLOTS)
        return 0;
    ep->wslots[i / 64] |= 1ull << (i % 64);
    __atomic_store_n(&ep->hdr->withdrawn[ep->side][i], cookie, __ATOMIC_RELAXED);
    __atomic_add_fetch(&ep->hdr->withdraws[ep->side], 1, __ATOMIC_RELEASE);
    return i + 1;
}

/* A single-copy send announced to the peer: publish its cookie in this side's row, and only
 * then give the caller its memory back (the orphan waits for the peer's acknowledgement). */
static tc_status_t tc_shm_withdraw(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep, tc_tp_req_t *req)
{
    tc_tp_req_t *o = tc_shm_orphan_new(req, 0); /* first: once published, there is no way back */
    if (o == NULL)
        return TC_ERR_NO_MEMORY;
    uint64_t slot = tc_shm_withdraw_publish(ep, req->priv[TC_SHM_P_COOKIE]);
    if (slot == 0) {
        free(o);
        return tc_error_set(TC_ERR_INTERNAL,
                            "shm cancel: all %u withdrawal slots to peer %llu are taken, with %u "
                            "single-copy sends announced",
                            TC_SHM_WITHDRAW_SLOTS, (unsigned long long)ep->super.peer_id,
                            ep->rts_out);
    }
    /* the cookie is visible before the caller writes to its buffer again: a reader that
     * checks the row after its copy and misses it copied before that */
    tc_shm_full_barrier();
    o->priv[TC_SHM_P_KEY] = slot;
    tc_shm_orphan_install(ctx, &ep->wq, req, o);
    return TC_OK;
}

void tc_shm_withdraw_all(tc_shm_ep_t *ep)
{
    if (ep->hdr == NULL)
        return;
    int any = 0;
    for (tc_tp_req_t *r = ep->wq.head; r != NULL; r = TC_SHM_NEXT(r))
        if (r->priv[TC_SHM_P_KIND] == TC_SHM_K_SEND &&
            !(r->bytes == TC_SHM_ORPHAN && r->priv[TC_SHM_P_KEY] != 0))
            any |= tc_shm_withdraw_publish(ep, r->priv[TC_SHM_P_COOKIE]) != 0;
    if (any)
        tc_shm_full_barrier();
}

void tc_shm_rts_acked(tc_shm_ep_t *ep, const tc_tp_req_t *req)
{
    if (req->priv[TC_SHM_P_KIND] != TC_SHM_K_SEND)
        return;
    ep->rts_out--;
    uint64_t slot = req->priv[TC_SHM_P_KEY];
    if (req->bytes == TC_SHM_ORPHAN && slot != 0) {
        __atomic_store_n(&ep->hdr->withdrawn[ep->side][slot - 1], 0, __ATOMIC_RELEASE);
        ep->wslots[(slot - 1) / 64] &= ~(1ull << ((slot - 1) % 64));
    }
}

int tc_shm_withdrawn(const tc_shm_ep_t *ep, uint64_t cookie)
{
    tc_shm_full_barrier(); /* the copy before it, then the peer's row */
    const uint64_t *row = ep->hdr->withdrawn[1 - ep->side];
    for (unsigned i = 0; i < TC_SHM_WITHDRAW_SLOTS; i++)
        if (__atomic_load_n(&row[i], __ATOMIC_RELAXED) == cookie)
            return 1;
    return 0;
}

void tc_shm_withdraw_sweep(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep)
{
    uint64_t n = __atomic_load_n(&ep->hdr->withdraws[1 - ep->side], __ATOMIC_ACQUIRE);
    if (n == ep->withdraws_seen)
        return;
    ep->withdraws_seen = n;
    for (tc_shm_unexp_t *u = ep->uq_head; u != NULL; u = u->next)
        if (u->rts && !u->withdrawn && tc_shm_withdrawn(ep, u->cookie)) {
            u->withdrawn = 1; /* a receive that takes it fails; the sender may go now */
            tc_shm_ctrl_post(ctx, ep, TC_SHM_T_ACK, u->cookie);
            if (ep->state != TC_SHM_EP_UP)
                return; /* no memory for the cell: failing the endpoint freed the records */
        }
}

tc_status_t tc_shm_cancel(tc_tp_ep_t *super, tc_tp_req_t *req)
{
    tc_shm_ep_t *ep = (tc_shm_ep_t *)super;
    tc_shm_ctx_t *ctx = (tc_shm_ctx_t *)super->ctx;
    if (req == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "shm cancel: req is NULL");
    if (req->status != TC_INPROGRESS)
        return tc_error_set(TC_ERR_INVALID_STATE, "shm cancel: the request already completed");
    if (req->priv[TC_SHM_P_KIND] == TC_SHM_K_RECV) {
        if (tc_shm_queue_remove(&ep->rq, req)) {
            tc_shm_req_complete(ctx, req, TC_ERR_ABORTED, 0);
            return TC_OK;
        }
        /* being filled: the rest of the message is dropped */
        if (ep->rx_req == req)
            ep->rx_req = NULL;
        for (tc_shm_unexp_t *u = ep->uq_head; u != NULL; u = u->next)
            if (u->req == req)
                u->req = NULL; /* stays unexpected; freed with the endpoint */
        for (tc_shm_read_t *rd = ep->rd_head; rd != NULL; rd = rd->next)
            if (rd->req == req)
                rd->req = NULL; /* not read further; acknowledged so the sender completes */
        tc_shm_req_complete(ctx, req, TC_ERR_ABORTED, 0);
        return TC_OK;
    }
    if (req->priv[TC_SHM_P_KIND] == TC_SHM_K_SEND) {
        if (req->priv[TC_SHM_P_OFF] == 0 && tc_shm_queue_remove(&ep->sq, req)) {
            tc_shm_req_complete(ctx, req, TC_ERR_ABORTED, 0);
            return TC_OK;
        }
        for (tc_tp_req_t *r = ep->sq.head; r != NULL; r = TC_SHM_NEXT(r))
            if (r == req) { /* half pushed through the cells: the rest goes from a copy */
                tc_tp_req_t *o = tc_shm_orphan_new(req, req->priv[TC_SHM_P_LEN]);
                if (o == NULL)
                    return TC_ERR_NO_MEMORY;
                tc_shm_orphan_install(ctx, &ep->sq, req, o);
                return TC_OK;
            }
        for (tc_tp_req_t *r = ep->wq.head; r != NULL; r = TC_SHM_NEXT(r))
            if (r == req) /* announced for a single-copy read */
                return tc_shm_withdraw(ctx, ep, req);
        return tc_error_set(TC_ERR_NOT_FOUND, "shm cancel: the request is not pending on peer %llu",
                            (unsigned long long)super->peer_id);
    }
    uint64_t kind = req->priv[TC_SHM_P_KIND];
    if (kind == TC_SHM_K_PUT || kind == TC_SHM_K_GET || kind == TC_SHM_K_SIGNAL)
        return tc_error_set(
            TC_ERR_INVALID_STATE,
            "shm cancel: the one-sided request to peer %llu is partly or wholly sent",
            (unsigned long long)super->peer_id);
    /* never posted (TC_TP_REQ_INIT leaves no kind): as tcp and self say */
    return tc_error_set(TC_ERR_NOT_FOUND, "shm cancel: the request is not pending on peer %llu",
                        (unsigned long long)super->peer_id);
}

int tc_shm_discard(tc_tp_ep_t *super, int (*drop)(void *arg, uint64_t tag), void *arg)
{
    tc_shm_ep_t *ep = (tc_shm_ep_t *)super;
    tc_shm_ctx_t *ctx = (tc_shm_ctx_t *)super->ctx;
    int n = 0;
    tc_shm_unexp_t **pp = &ep->uq_head, *last = NULL;
    while (*pp != NULL) {
        tc_shm_unexp_t *u = *pp;
        /* whole and unclaimed; an announcement's sender is told it is done, as a send over
         * another transport is once its bytes are out: nothing will read them */
        if (u->complete && u->req == NULL && u != ep->rx_unexp && drop(arg, u->tag)) {
            *pp = u->next;
            int ack = u->rts && !u->withdrawn && ep->state == TC_SHM_EP_UP;
            if (ack)
                tc_shm_ctrl_post(ctx, ep, TC_SHM_T_ACK, u->cookie);
            tc_shm_unexp_release(ctx, u);
            n++;
            if (ack && ep->state != TC_SHM_EP_UP)
                return n; /* no memory for the cell: failing the endpoint freed the rest */
            continue;
        }
        last = u;
        pp = &u->next;
    }
    ep->uq_tail = last;
    return n;
}
