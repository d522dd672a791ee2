/* Data movement of the verbs backend: eager messages written into the peer's receive ring with
 * RDMA write with immediate data (credit flow control), rendezvous with RDMA read and a FIN
 * carried by a zero-length write with immediate, one-sided RDMA write / read / atomics,
 * keepalives, and the completion handler. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/base/time.h"
#include "ib_internal.h"
#include "ib_parse.h"

#define TC_IB_WRID(ptr, type) ((uint64_t)(uintptr_t)(ptr) | (uint64_t)(type))
#define TC_IB_WRPTR(id) ((void *)(uintptr_t)((id) & ~7ULL))
/* req->bytes while a caller's send or receive is pending (every completion overwrites it): a
 * second post of it, which would link it into a queue twice, is refused */
#define TC_IB_POSTED ((size_t)-2)

static uint64_t *tc_ib_scratch(tc_ib_ep_t *ep, uint64_t i)
{
    return (uint64_t *)(void *)(ep->send_buf + (size_t)TC_IB_NSEND * TC_IB_SLOT + i * 8);
}

/* One zero-length receive: a write with immediate data consumes it and says, in its
 * immediate, which ring slot it filled. */
static tc_status_t tc_ib_post_recv_one(tc_ib_ep_t *ep)
{
    tc_ib_ctx_t *ctx = (tc_ib_ctx_t *)ep->super.ctx;
    struct ibv_recv_wr wr = {.wr_id = TC_IB_WR_RECV, .sg_list = NULL, .num_sge = 0};
    struct ibv_recv_wr *bad = NULL;
    if (ctx->v->post_recv(ep->qp, &wr, &bad) != 0)
        return tc_error_set(TC_ERR_SYSTEM, "ib: ibv_post_recv on QP %u failed", ep->qp->qp_num);
    return TC_OK;
}

tc_status_t tc_ib_post_recvs(tc_ib_ep_t *ep)
{
    for (int i = 0; i < TC_IB_NRQ; i++) {
        tc_status_t st = tc_ib_post_recv_one(ep);
        if (st != TC_OK)
            return st;
    }
    return TC_OK;
}

/* Post one send work request; the caller checked there is room. */
static int tc_ib_post(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep, struct ibv_send_wr *wr)
{
    struct ibv_send_wr *bad = NULL;
    wr->send_flags |= IBV_SEND_SIGNALED;
    if (ctx->v->post_send(ep->qp, wr, &bad) != 0) {
        tc_ib_ep_fail(ctx, ep, TC_ERR_SYSTEM, "refused a work request: ibv_post_send on QP %u "
                      "failed", ep->qp->qp_num);
        return 0;
    }
    ep->sq_used++;
    return 1;
}

static int tc_ib_room(const tc_ib_ep_t *ep)
{
    return ep->state == TC_IB_EP_UP && ep->sq_used < TC_IB_SQ_DEPTH;
}

/* Credit returns and keepalives may use a few more send requests, so that a send queue full of
 * one-sided work never holds them back. */
static int tc_ib_ctrl_room(const tc_ib_ep_t *ep)
{
    return ep->state == TC_IB_EP_UP && ep->sq_used < TC_IB_SQ_DEPTH + TC_IB_SQ_CTRL;
}

/* The credits we owe the peer, handed over in the immediate data being built. */
static uint32_t tc_ib_take_owed(tc_ib_ep_t *ep)
{
    uint32_t c = ep->rx_unacked;
    ep->rx_unacked = 0;
    return c;
}

/* A message into the peer's next ring slot: header, then @p dlen bytes of @p data, written
 * from a send bounce buffer with RDMA write with immediate data. The caller checked room, a
 * free bounce buffer and a credit. */
static int tc_ib_post_msg(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep, int type, uint64_t tag, uint64_t len,
                          const void *data, size_t dlen, uint64_t addr, uint32_t rkey,
                          uint64_t cookie)
{
    int i = ep->send_free[--ep->nsend_free];
    unsigned char *b = ep->send_slot[i].buf;
    memset(b, 0, TC_IB_MSG_HDR);
    b[0] = (unsigned char)type;
    tc_ib_put_u64(b + 8, tag);
    tc_ib_put_u64(b + 16, len);
    tc_ib_put_u64(b + 24, addr);
    tc_ib_put_u32(b + 32, rkey);
    tc_ib_put_u64(b + 40, cookie);
    if (dlen > 0)
        memcpy(b + TC_IB_MSG_HDR, data, dlen);
    uint32_t n = (uint32_t)(TC_IB_MSG_HDR + dlen), slot = ep->tx_seq % TC_IB_NRECV;
    struct ibv_sge sge = {(uintptr_t)b, n, ep->send_mr->lkey};
    struct ibv_send_wr wr = {.wr_id = TC_IB_WRID(&ep->send_slot[i], TC_IB_WR_SLOT),
                             .sg_list = &sge, .num_sge = 1,
                             .opcode = IBV_WR_RDMA_WRITE_WITH_IMM};
    wr.imm_data = htonl(TC_IB_IMM(TC_IB_IMM_MSG, tc_ib_take_owed(ep),
                                  TC_IB_IMM_SLOT_LEN(slot, n)));
    wr.wr.rdma.remote_addr = ep->r_addr + (uint64_t)slot * TC_IB_SLOT;
    wr.wr.rdma.rkey = ep->r_rkey;
    if (!tc_ib_post(ctx, ep, &wr)) {
        ep->send_free[ep->nsend_free++] = i;
        return 0;
    }
    ep->tx_seq++;
    ep->tx_credits--;
    return 1;
}

/* A zero-length write with immediate data (no ring data): FIN (takes a credit) or CREDIT. */
static int tc_ib_post_ctrl(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep, int kind, uint32_t low)
{
    struct ibv_send_wr wr = {.wr_id = TC_IB_WR_CTRL, .sg_list = NULL, .num_sge = 0,
                             .opcode = IBV_WR_RDMA_WRITE_WITH_IMM};
    wr.imm_data = htonl(TC_IB_IMM(kind, tc_ib_take_owed(ep), low));
    wr.wr.rdma.remote_addr = ep->r_addr;
    wr.wr.rdma.rkey = ep->r_rkey;
    if (!tc_ib_post(ctx, ep, &wr))
        return 0;
    if (kind == TC_IB_IMM_FIN) {
        ep->tx_seq++;
        ep->tx_credits--;
    }
    return 1;
}

void tc_ib_post_fin(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep, uint64_t id)
{
    if (ep->nfin > 0 || !tc_ib_room(ep) || ep->tx_credits == 0) {
        if (ep->nfin == ep->fin_cap) {
            size_t cap = ep->fin_cap ? 2 * ep->fin_cap : 16;
            uint64_t *f = realloc(ep->fin_backlog, cap * sizeof(*f));
            if (f == NULL) {
                tc_ib_ep_fail(ctx, ep, TC_ERR_NO_MEMORY, "cannot queue a rendezvous FIN");
                return;
            }
            ep->fin_backlog = f;
            ep->fin_cap = cap;
        }
        ep->fin_backlog[ep->nfin++] = id;
        return;
    }
    tc_ib_post_ctrl(ctx, ep, TC_IB_IMM_FIN, (uint32_t)id & TC_IB_RNDV_ID_MASK);
}

/* Return owed credits in a message of their own once half the ring is owed (they travel in the
 * immediate data of any MSG or FIN before that). */
static void tc_ib_post_credit(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep)
{
    if (ep->rx_unacked >= TC_IB_CREDIT_BATCH && tc_ib_ctrl_room(ep))
        tc_ib_post_ctrl(ctx, ep, TC_IB_IMM_CREDIT, 0);
}

void tc_ib_ep_keepalive(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep)
{
    if (ctx->ka_ns == 0 || ep->state != TC_IB_EP_UP || (ep->npending == 0 && ep->nfin == 0)) {
        ep->ka_since = 0; /* not waiting for the peer */
        return;
    }
    uint64_t now = tc_time_ns();
    if (ep->ka_since == 0 || ep->ka_seen != ep->nactivity) {
        ep->ka_since = now;
        ep->ka_seen = ep->nactivity;
        return;
    }
    if (now - ep->ka_since < ctx->ka_ns || ep->ka_inflight || !tc_ib_ctrl_room(ep))
        return;
    /* A zero-length RDMA write needs no receive and touches no memory, but the peer's HCA must
     * acknowledge it: a dead peer or a destroyed QP ends in retries exceeded. */
    struct ibv_send_wr wr = {.wr_id = TC_IB_WR_KA, .sg_list = NULL, .num_sge = 0,
                             .opcode = IBV_WR_RDMA_WRITE};
    wr.wr.rdma.remote_addr = ep->r_addr;
    wr.wr.rdma.rkey = ep->r_rkey;
    if (tc_ib_post(ctx, ep, &wr)) {
        ep->ka_inflight = 1;
        ep->ka_since = now;
    }
}

/* A signal's scratch word is free again (its request ended). */
static void tc_ib_scratch_put(tc_ib_ep_t *ep, const tc_tp_req_t *req)
{
    int kind = (int)(req->priv[TC_IB_P_KIND] & 0xffffffffu);
    if (kind == TC_IB_K_SIG_ADD || kind == TC_IB_K_SIG_SET)
        ep->scratch_free[ep->nscratch_free++] = (uint16_t)req->priv[TC_IB_P_BUF];
}

/* The registration a request holds (none for signals, whose AUX is the CAS compare value). */
static tc_ib_mr_entry_t *tc_ib_req_mr(const tc_tp_req_t *req)
{
    int kind = (int)(req->priv[TC_IB_P_KIND] & 0xffffffffu);
    if (kind == TC_IB_K_SIG_ADD || kind == TC_IB_K_SIG_SET)
        return NULL;
    return (tc_ib_mr_entry_t *)(uintptr_t)req->priv[TC_IB_P_AUX];
}

static void tc_ib_inflight(tc_ib_ep_t *ep, tc_tp_req_t *req)
{
    tc_ib_list_push(&ep->if_head, &ep->if_tail, req);
}

static void tc_ib_post_rma(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep, tc_tp_req_t *req,
                           enum ibv_wr_opcode op, struct ibv_sge *sge)
{
    struct ibv_send_wr wr = {.wr_id = TC_IB_WRID(req, TC_IB_WR_REQ), .sg_list = sge,
                             .num_sge = sge->length > 0 || op != IBV_WR_RDMA_WRITE, .opcode = op};
    uint64_t kind = req->priv[TC_IB_P_KIND] & 0xffffffffu;
    uint32_t rkey = kind == TC_IB_K_RECV ? (uint32_t)(req->priv[TC_IB_P_KIND] >> 32)
                                         : (uint32_t)req->priv[TC_IB_P_KEY];
    if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
        wr.wr.atomic.remote_addr = req->priv[TC_IB_P_TAG];
        wr.wr.atomic.rkey = rkey;
        wr.wr.atomic.compare_add = op == IBV_WR_ATOMIC_FETCH_AND_ADD ? req->priv[TC_IB_P_ARG]
                                                                    : req->priv[TC_IB_P_AUX];
        wr.wr.atomic.swap = req->priv[TC_IB_P_ARG];
    } else {
        wr.wr.rdma.remote_addr = req->priv[TC_IB_P_TAG];
        wr.wr.rdma.rkey = rkey;
    }
    tc_ib_inflight(ep, req);
    if (!tc_ib_post(ctx, ep, &wr))
        return; /* the endpoint failed, and the request with it */
}

static struct ibv_sge tc_ib_sge(tc_ib_mr_entry_t *e, const void *buf, size_t len)
{
    struct ibv_sge sge = {(uintptr_t)buf, (uint32_t)len, e ? e->mr->lkey : 0};
    return sge;
}

/* Start a queued request; 0 when it must wait for room (nothing changed). */
static int tc_ib_start(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep, tc_tp_req_t *req)
{
    if (!tc_ib_room(ep) || ep->set_busy != NULL)
        return 0;
    int kind = (int)(req->priv[TC_IB_P_KIND] & 0xffffffffu);
    void *buf = (void *)(uintptr_t)req->priv[TC_IB_P_BUF];
    size_t len = req->priv[TC_IB_P_LEN];
    tc_ib_mr_entry_t *e = NULL;
    tc_status_t st;
    switch (kind) {
    case TC_IB_K_SEND:
        if (ep->nsend_free == 0 || ep->tx_credits == 0)
            return 0; /* a credit comes back when the peer consumed a ring slot */
        if (len <= TC_TP_IB_EAGER_MAX) {
            if (tc_ib_post_msg(ctx, ep, TC_IB_MSG_EAGER, req->priv[TC_IB_P_TAG], len, buf, len, 0,
                               0, 0)) {
                ep->npending--;
                tc_ib_req_complete(ctx, req, TC_OK, len); /* copied: the buffer is free */
            }
            return 1;
        }
        st = tc_ib_mr_get(ctx, buf, len, 0, &e);
        if (st != TC_OK) {
            ep->npending--;
            tc_ib_req_complete(ctx, req, st, 0);
            return 1;
        }
        req->priv[TC_IB_P_AUX] = (uintptr_t)e;
        /* the id comes back in the FIN's immediate data (22 bits: an id is reused only after
         * 4 Mi later rendezvous on this endpoint) */
        req->priv[TC_IB_P_ARG] = ep->rndv_next++ & TC_IB_RNDV_ID_MASK;
        req->priv[TC_IB_P_NEXT] = (uintptr_t)ep->rndv;
        ep->rndv = req;
        tc_ib_post_msg(ctx, ep, TC_IB_MSG_RTS, req->priv[TC_IB_P_TAG], len, NULL, 0,
                       (uintptr_t)buf, e->mr->rkey, req->priv[TC_IB_P_ARG]);
        return 1;
    case TC_IB_K_RECV: /* a rendezvous read into the receive buffer */
    case TC_IB_K_PUT:
    case TC_IB_K_GET: {
        size_t n = kind == TC_IB_K_RECV ? (len < req->priv[TC_IB_P_ARG] ? len
                                                                         : req->priv[TC_IB_P_ARG])
                                        : len;
        if (n > 0) {
            st = tc_ib_mr_get(ctx, buf, n, 0, &e);
            if (st != TC_OK) {
                ep->npending--;
                tc_ib_req_complete(ctx, req, st, 0);
                return 1;
            }
        }
        req->priv[TC_IB_P_AUX] = (uintptr_t)e;
        struct ibv_sge sge = tc_ib_sge(e, buf, n);
        tc_ib_post_rma(ctx, ep, req, kind == TC_IB_K_PUT ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ,
                       &sge);
        return 1;
    }
    default: { /* signals: the old value lands in a scratch word of the bounce region, this
                * signal's alone until it completes. Signals start only with room, and a SET's
                * retry takes its own completed request's place: at most TC_IB_SQ_DEPTH are in
                * flight, as many as there are words. */
        if (ep->nscratch_free == 0)
            return 0;
        uint64_t i = ep->scratch_free[--ep->nscratch_free];
        req->priv[TC_IB_P_BUF] = i;
        if (kind == TC_IB_K_SIG_SET)
            ep->set_busy = req; /* in order: nothing after it starts before it is applied */
        struct ibv_sge sge = {(uintptr_t)tc_ib_scratch(ep, i), 8, ep->send_mr->lkey};
        tc_ib_post_rma(ctx, ep, req,
                       kind == TC_IB_K_SIG_ADD ? IBV_WR_ATOMIC_FETCH_AND_ADD
                                               : IBV_WR_ATOMIC_CMP_AND_SWP,
                       &sge);
        return 1;
    }
    }
}

void tc_ib_ep_kick(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep)
{
    size_t nf = 0;
    while (nf < ep->nfin && tc_ib_room(ep) && ep->tx_credits > 0) {
        if (!tc_ib_post_ctrl(ctx, ep, TC_IB_IMM_FIN,
                             (uint32_t)ep->fin_backlog[nf] & TC_IB_RNDV_ID_MASK))
            return; /* the endpoint failed */
        nf++;
    }
    if (nf > 0) {
        memmove(ep->fin_backlog, ep->fin_backlog + nf, (ep->nfin - nf) * sizeof(uint64_t));
        ep->nfin -= nf;
    }
    while (ep->pq_head != NULL && ep->state == TC_IB_EP_UP) {
        tc_tp_req_t *req = ep->pq_head;
        tc_tp_req_t *next = TC_IB_REQ_NEXT(req);
        if (!tc_ib_start(ctx, ep, req))
            break;
        if (ep->pq_head == req) { /* not already failed and emptied */
            ep->pq_head = next;
            if (next == NULL)
                ep->pq_tail = NULL;
        }
    }
}

/* Queue @p req behind earlier ones (order), and start what can start; req->bytes := @p mark
 * while it is pending. */
static tc_status_t tc_ib_submit(tc_ib_ep_t *ep, tc_tp_req_t *req, size_t mark)
{
    tc_ib_ctx_t *ctx = (tc_ib_ctx_t *)ep->super.ctx;
    req->status = TC_INPROGRESS;
    req->bytes = mark;
    ep->npending++;
    if (ep->pq_head == NULL && tc_ib_start(ctx, ep, req))
        return TC_OK;
    tc_ib_list_push(&ep->pq_head, &ep->pq_tail, req);
    return TC_OK;
}

static tc_status_t tc_ib_check_failed(tc_tp_ep_t *ep, tc_tp_req_t *req)
{
    if (ep->failed == TC_OK)
        return TC_OK;
    req->status = ep->failed;
    req->bytes = 0; /* ended: not the pending mark */
    return tc_error_set(ep->failed, "%s", ep->error);
}

tc_status_t tc_ib_send(tc_tp_ep_t *super, uint64_t tag, const void *buf, size_t len,
                       tc_tp_req_t *req)
{
    if (req == NULL || (buf == NULL && len != 0))
        return tc_error_set(TC_ERR_INVALID_ARG, "ib send to peer %llu: req or buf is NULL",
                            (unsigned long long)super->peer_id);
    if (req->status == TC_INPROGRESS && req->bytes == TC_IB_POSTED)
        return tc_error_set(TC_ERR_INVALID_STATE,
                            "ib send to peer %llu (tag %llu): request already pending",
                            (unsigned long long)super->peer_id, (unsigned long long)tag);
    if (len > UINT32_MAX)
        return tc_error_set(TC_ERR_INVALID_ARG, "ib send of %zu bytes: more than 4 GiB - 1",
                            len);
    tc_status_t st = tc_ib_check_failed(super, req);
    if (st != TC_OK)
        return st;
    req->priv[TC_IB_P_BUF] = (uintptr_t)buf;
    req->priv[TC_IB_P_LEN] = len;
    req->priv[TC_IB_P_KIND] = TC_IB_K_SEND;
    req->priv[TC_IB_P_TAG] = tag;
    return tc_ib_submit((tc_ib_ep_t *)super, req, TC_IB_POSTED);
}

/* A matched rendezvous: read the data into the receive (queued behind earlier work). */
static void tc_ib_recv_rts(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep, tc_tp_req_t *req, uint64_t len,
                           uint64_t addr, uint32_t rkey, uint64_t cookie)
{
    req->priv[TC_IB_P_KIND] = TC_IB_K_RECV | (uint64_t)rkey << 32;
    req->priv[TC_IB_P_TAG] = addr;
    req->priv[TC_IB_P_KEY] = cookie;
    req->priv[TC_IB_P_ARG] = len;
    if (req->priv[TC_IB_P_LEN] == 0) { /* nothing to read */
        tc_ib_post_fin(ctx, ep, cookie);
        ep->npending--;
        tc_ib_req_complete(ctx, req, TC_ERR_TRUNCATED, 0);
        return;
    }
    if (ep->pq_head == NULL && tc_ib_start(ctx, ep, req))
        return;
    tc_ib_list_push(&ep->pq_head, &ep->pq_tail, req);
}

tc_status_t tc_ib_recv(tc_tp_ep_t *super, uint64_t tag, void *buf, size_t cap, tc_tp_req_t *req)
{
    tc_ib_ep_t *ep = (tc_ib_ep_t *)super;
    tc_ib_ctx_t *ctx = (tc_ib_ctx_t *)super->ctx;
    if (req == NULL || (buf == NULL && cap != 0))
        return tc_error_set(TC_ERR_INVALID_ARG, "ib recv from peer %llu: req or buf is NULL",
                            (unsigned long long)super->peer_id);
    if (req->status == TC_INPROGRESS && req->bytes == TC_IB_POSTED)
        return tc_error_set(TC_ERR_INVALID_STATE,
                            "ib recv from peer %llu (tag %llu): request already pending",
                            (unsigned long long)super->peer_id, (unsigned long long)tag);
    req->status = TC_INPROGRESS;
    req->bytes = TC_IB_POSTED;
    req->priv[TC_IB_P_BUF] = (uintptr_t)buf;
    req->priv[TC_IB_P_LEN] = cap;
    req->priv[TC_IB_P_KIND] = TC_IB_K_RECV;
    req->priv[TC_IB_P_TAG] = tag;
    tc_ib_unexp_t *prev = NULL, *u = ep->uq_head;
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
        if (u->rts && super->failed == TC_OK) {
            ep->npending++;
            tc_ib_recv_rts(ctx, ep, req, u->len, u->addr, u->rkey, u->cookie);
        } else if (u->rts) {
            free(u);
            return tc_ib_check_failed(super, req);
        } else {
            size_t n = u->len < cap ? (size_t)u->len : cap;
            if (n > 0)
                memcpy(buf, u->data, n);
            tc_ib_req_complete(ctx, req, u->len > cap ? TC_ERR_TRUNCATED : TC_OK, n);
        }
        free(u);
        return TC_OK;
    }
    tc_status_t st = tc_ib_check_failed(super, req);
    if (st != TC_OK)
        return st;
    ep->npending++;
    tc_ib_list_push(&ep->rq_head, &ep->rq_tail, req);
    return TC_OK;
}

tc_status_t tc_ib_cancel(tc_tp_ep_t *super, tc_tp_req_t *req)
{
    tc_ib_ep_t *ep = (tc_ib_ep_t *)super;
    if (req == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "ib cancel: req is NULL");
    if (req->status != TC_INPROGRESS)
        return tc_error_set(TC_ERR_INVALID_STATE, "ib cancel: the request already completed");
    if (tc_ib_list_remove(&ep->rq_head, &ep->rq_tail, req) ||
        tc_ib_list_remove(&ep->pq_head, &ep->pq_tail, req)) {
        ep->npending--;
        tc_ib_req_complete((tc_ib_ctx_t *)super->ctx, req, TC_ERR_ABORTED, 0);
        return TC_OK;
    }
    return tc_error_set(TC_ERR_INVALID_STATE, "ib cancel: the request to peer %llu is already "
                        "with the HCA or not pending", (unsigned long long)super->peer_id);
}

/* ---- one-sided ---- */

static tc_status_t tc_ib_rma(tc_tp_ep_t *super, int kind, void *buf, size_t len,
                             tc_tp_rkey_t *rkey, uint64_t offset, uint64_t value,
                             tc_tp_req_t *req)
{
    tc_ib_rkey_t *k = (tc_ib_rkey_t *)rkey;
    if (len > UINT32_MAX)
        return tc_error_set(TC_ERR_INVALID_ARG, "ib: one-sided transfer of %zu bytes: more than "
                            "4 GiB - 1", len);
    tc_status_t st = tc_ib_check_failed(super, req);
    if (st != TC_OK)
        return st;
    req->priv[TC_IB_P_BUF] = (uintptr_t)buf;
    req->priv[TC_IB_P_LEN] = len;
    req->priv[TC_IB_P_KIND] = (uint64_t)kind;
    req->priv[TC_IB_P_TAG] = k->addr + offset;
    req->priv[TC_IB_P_KEY] = k->rkey;
    req->priv[TC_IB_P_ARG] = value;
    req->priv[TC_IB_P_AUX] = 0; /* CAS: first guess */
    return tc_ib_submit((tc_ib_ep_t *)super, req, 0);
}

tc_status_t tc_ib_put(tc_tp_ep_t *ep, const void *buf, size_t len, tc_tp_rkey_t *rkey,
                      uint64_t offset, tc_tp_req_t *req)
{
    return tc_ib_rma(ep, TC_IB_K_PUT, (void *)(uintptr_t)buf, len, rkey, offset, 0, req);
}

tc_status_t tc_ib_get(tc_tp_ep_t *ep, void *buf, size_t len, tc_tp_rkey_t *rkey, uint64_t offset,
                      tc_tp_req_t *req)
{
    return tc_ib_rma(ep, TC_IB_K_GET, buf, len, rkey, offset, 0, req);
}

tc_status_t tc_ib_signal(tc_tp_ep_t *ep, tc_tp_rkey_t *rkey, uint64_t offset,
                         tc_tp_signal_op_t op, uint64_t value, tc_tp_req_t *req)
{
    return tc_ib_rma(ep, op == TC_TP_SIGNAL_ADD ? TC_IB_K_SIG_ADD : TC_IB_K_SIG_SET, NULL, 8,
                     rkey, offset, value, req);
}

/* ---- completions ---- */

static void tc_ib_wc_fail(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep, const struct ibv_wc *wc,
                          const char *what)
{
    switch (wc->status) {
    case IBV_WC_REM_ACCESS_ERR:
        tc_ib_ep_fail(ctx, ep, TC_ERR_PROTOCOL, "refused the remote key or range of a %s (remote "
                      "access error): stale or forged key", what);
        break;
    case IBV_WC_RETRY_EXC_ERR:
    case IBV_WC_RNR_RETRY_EXC_ERR:
        tc_ib_ep_fail(ctx, ep, TC_ERR_PEER_FAILED, "does not answer (%s: transport retries "
                      "exceeded): dead peer or port down", what);
        break;
    case IBV_WC_WR_FLUSH_ERR:
        tc_ib_ep_fail(ctx, ep, TC_ERR_PEER_FAILED, "queue pair flushed (%s): the connection is "
                      "in the error state", what);
        break;
    default:
        tc_ib_ep_fail(ctx, ep, TC_ERR_PEER_FAILED, "%s completed with work-completion status %d",
                      what, (int)wc->status);
        break;
    }
}

/* A message the peer wrote into ring slot @p b (@p n bytes, checked to fit the slot). */
static void tc_ib_on_message(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep, const unsigned char *b, uint32_t n)
{
    tc_ib_msg_info_t m;
    if (!tc_ib_msg_parse(b, n, &m)) {
        tc_ib_ep_fail(ctx, ep, TC_ERR_PROTOCOL, "sent a malformed message (type %d, length "
                      "%llu in %u bytes): corrupt or hostile", b[0], (unsigned long long)m.len,
                      n);
        return;
    }
    int rts_ok = m.rts, eager_ok = !m.rts;
    uint64_t tag = m.tag, len = m.len, addr = m.addr, cookie = m.cookie;
    uint32_t rkey = m.rkey;
    tc_tp_req_t *prev = NULL, *req = ep->rq_head;
    while (req != NULL && req->priv[TC_IB_P_TAG] != tag) {
        prev = req;
        req = TC_IB_REQ_NEXT(req);
    }
    if (req != NULL) {
        if (prev != NULL)
            prev->priv[TC_IB_P_NEXT] = req->priv[TC_IB_P_NEXT];
        else
            ep->rq_head = TC_IB_REQ_NEXT(req);
        if (ep->rq_tail == req)
            ep->rq_tail = prev;
        if (rts_ok) {
            tc_ib_recv_rts(ctx, ep, req, len, addr, rkey, cookie);
            return;
        }
        size_t cap = req->priv[TC_IB_P_LEN], k = len < cap ? (size_t)len : cap;
        if (k > 0)
            memcpy((void *)(uintptr_t)req->priv[TC_IB_P_BUF], b + TC_IB_MSG_HDR, k);
        ep->npending--;
        tc_ib_req_complete(ctx, req, len > cap ? TC_ERR_TRUNCATED : TC_OK, k);
        return;
    }
    tc_ib_unexp_t *u = malloc(sizeof(*u) + (eager_ok ? (size_t)len : 0));
    if (u == NULL) {
        tc_ib_ep_fail(ctx, ep, TC_ERR_NO_MEMORY, "sent an unexpected message that cannot be "
                      "buffered");
        return;
    }
    *u = (tc_ib_unexp_t){NULL, tag, len, rts_ok, addr, cookie, rkey};
    if (eager_ok && len > 0)
        memcpy(u->data, b + TC_IB_MSG_HDR, (size_t)len);
    if (ep->uq_tail != NULL)
        ep->uq_tail->next = u;
    else
        ep->uq_head = u;
    ep->uq_tail = u;
}

static void tc_ib_on_req_done(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep, tc_tp_req_t *req)
{
    int kind = (int)(req->priv[TC_IB_P_KIND] & 0xffffffffu);
    tc_ib_list_remove(&ep->if_head, &ep->if_tail, req);
    if (kind == TC_IB_K_SIG_SET) {
        uint64_t old = *tc_ib_scratch(ep, req->priv[TC_IB_P_BUF]);
        if (old != req->priv[TC_IB_P_AUX]) { /* lost the race: compare with what is there */
            req->priv[TC_IB_P_AUX] = old;
            struct ibv_sge sge = {(uintptr_t)tc_ib_scratch(ep, req->priv[TC_IB_P_BUF]), 8,
                                  ep->send_mr->lkey};
            tc_ib_post_rma(ctx, ep, req, IBV_WR_ATOMIC_CMP_AND_SWP, &sge);
            return;
        }
    }
    tc_ib_mr_put(ctx, tc_ib_req_mr(req), 0);
    tc_ib_scratch_put(ep, req);
    if (ep->set_busy == req)
        ep->set_busy = NULL; /* applied: the requests behind it start (tc_ib_ep_poll kicks) */
    ep->npending--;
    if (kind == TC_IB_K_RECV) {
        uint64_t len = req->priv[TC_IB_P_ARG], cap = req->priv[TC_IB_P_LEN];
        ep->super.rx_bytes += len > cap ? cap : len; /* read from the peer */
        tc_ib_post_fin(ctx, ep, req->priv[TC_IB_P_KEY]);
        tc_ib_req_complete(ctx, req, len > cap ? TC_ERR_TRUNCATED : TC_OK,
                           len > cap ? cap : len);
        return;
    }
    tc_ib_req_complete(ctx, req, TC_OK, req->priv[TC_IB_P_LEN]);
}

/* A FIN: the rendezvous send with this id is complete (the peer has read its buffer). */
static void tc_ib_on_fin(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep, uint32_t id)
{
    tc_tp_req_t *req = ep->rndv;
    while (req != NULL && req->priv[TC_IB_P_ARG] != id)
        req = TC_IB_REQ_NEXT(req);
    if (req == NULL) {
        tc_ib_ep_fail(ctx, ep, TC_ERR_PROTOCOL, "sent a FIN for an unknown rendezvous (id %u): "
                      "corrupt or hostile", id);
        return;
    }
    tc_ib_list_remove(&ep->rndv, NULL, req);
    tc_ib_mr_put(ctx, (tc_ib_mr_entry_t *)(uintptr_t)req->priv[TC_IB_P_AUX], 0);
    ep->npending--;
    tc_ib_req_complete(ctx, req, TC_OK, req->priv[TC_IB_P_LEN]);
}

/* A write with immediate data from the peer, @p n bytes written: check the immediate before
 * trusting anything it names (a hostile or corrupt peer gets TC_ERR_PROTOCOL, never a read
 * outside the ring). */
static void tc_ib_on_imm(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep, uint32_t imm, uint32_t n)
{
    tc_ib_imm_info_t f;
    uint32_t want = ep->rx_seq % TC_IB_NRECV;
    tc_ib_imm_verdict_t v = tc_ib_imm_parse(imm, n, TC_IB_NRECV - ep->tx_credits, want, &f);
    if (v == TC_IB_IMM_BAD_CREDITS) {
        tc_ib_ep_fail(ctx, ep, TC_ERR_PROTOCOL, "returned %u credits with %u ring slots "
                      "outstanding: corrupt or hostile", f.credits,
                      TC_IB_NRECV - ep->tx_credits);
        return;
    }
    ep->tx_credits += f.credits;
    switch (v) {
    case TC_IB_IMM_IS_CREDIT:
        return;
    case TC_IB_IMM_IS_FIN:
        ep->rx_seq++; /* a FIN takes a credit (and a ring slot it leaves unused) */
        ep->rx_unacked++;
        tc_ib_on_fin(ctx, ep, f.low);
        return;
    case TC_IB_IMM_BAD_KIND:
        tc_ib_ep_fail(ctx, ep, TC_ERR_PROTOCOL, "sent immediate data 0x%08x of an unknown kind "
                      "or with %u bytes: corrupt or hostile", imm, n);
        return;
    case TC_IB_IMM_BAD_SLOT:
        tc_ib_ep_fail(ctx, ep, TC_ERR_PROTOCOL, "wrote ring slot %u where slot %u was next "
                      "(immediate 0x%08x): corrupt or hostile", f.slot, want, imm);
        return;
    case TC_IB_IMM_BAD_LEN:
        tc_ib_ep_fail(ctx, ep, TC_ERR_PROTOCOL, "announced %u bytes in ring slot %u (%u "
                      "written, a slot holds %d): corrupt or hostile", f.len, f.slot, n,
                      TC_IB_SLOT);
        return;
    default:
        break;
    }
    tc_ib_on_message(ctx, ep, ep->recv_buf + (size_t)f.slot * TC_IB_SLOT, f.len);
    /* the slot is consumed (copied out or matched): its credit may go back */
    ep->rx_seq++;
    ep->rx_unacked++;
}

void tc_ib_ep_poll(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep)
{
    struct ibv_wc wc[16];
    int n = ctx->v->poll_cq(ep->cq, 16, wc);
    if (n <= 0)
        return;
    ep->nactivity++; /* the peer's HCA answered something: not idle */
    /* account every send completion first, so that a failure met below leaves none behind */
    for (int i = 0; i < n; i++) {
        int type = (int)(wc[i].wr_id & 7);
        if (type == TC_IB_WR_RECV)
            continue;
        ep->sq_used--;
        if (type == TC_IB_WR_SLOT)
            ep->send_free[ep->nsend_free++] = ((tc_ib_slot_t *)TC_IB_WRPTR(wc[i].wr_id))->index;
        else if (type == TC_IB_WR_KA)
            ep->ka_inflight = 0;
    }
    for (int i = 0; i < n && ep->state == TC_IB_EP_UP; i++) {
        int type = (int)(wc[i].wr_id & 7);
        void *obj = TC_IB_WRPTR(wc[i].wr_id);
        if (type == TC_IB_WR_RECV) {
            if (wc[i].status != IBV_WC_SUCCESS) {
                tc_ib_wc_fail(ctx, ep, &wc[i], "receive");
                break;
            }
            if (tc_ib_post_recv_one(ep) != TC_OK) {
                tc_ib_ep_fail(ctx, ep, TC_ERR_SYSTEM, "could not repost a receive: %s",
                              tc_last_error());
                break;
            }
            if (wc[i].opcode != IBV_WC_RECV_RDMA_WITH_IMM || !(wc[i].wc_flags & IBV_WC_WITH_IMM)) {
                tc_ib_ep_fail(ctx, ep, TC_ERR_PROTOCOL, "sent %u bytes that are not an RDMA "
                              "write with immediate data (opcode %d): corrupt or hostile",
                              wc[i].byte_len, (int)wc[i].opcode);
                break;
            }
            ep->super.rx_bytes += wc[i].byte_len; /* evidence that the peer lives (heartbeats) */
            tc_ib_on_imm(ctx, ep, ntohl(wc[i].imm_data), wc[i].byte_len);
            continue;
        }
        if (wc[i].status != IBV_WC_SUCCESS) {
            if (type == TC_IB_WR_REQ) {
                tc_tp_req_t *req = obj;
                tc_ib_list_remove(&ep->if_head, &ep->if_tail, req);
                tc_ib_mr_put(ctx, tc_ib_req_mr(req), 0);
                tc_ib_scratch_put(ep, req);
                ep->npending--;
                tc_ib_wc_fail(ctx, ep, &wc[i], "one-sided operation");
                tc_ib_req_complete(ctx, req, ep->super.failed, 0);
            } else {
                tc_ib_wc_fail(ctx, ep, &wc[i], type == TC_IB_WR_KA ? "keepalive" : "send");
            }
            break;
        }
        if (type == TC_IB_WR_REQ)
            tc_ib_on_req_done(ctx, ep, obj);
    }
    if (ep->state == TC_IB_EP_UP && (ep->pq_head != NULL || ep->nfin > 0))
        tc_ib_ep_kick(ctx, ep);
    if (ep->state == TC_IB_EP_UP)
        tc_ib_post_credit(ctx, ep);
}

static void tc_ib_fail_list(tc_ib_ctx_t *ctx, tc_tp_req_t *head, tc_status_t status, int mr)
{
    while (head != NULL) {
        tc_tp_req_t *next = TC_IB_REQ_NEXT(head);
        if (mr)
            tc_ib_mr_put(ctx, tc_ib_req_mr(head), 0);
        tc_ib_req_complete(ctx, head, status, 0);
        head = next;
    }
}

void tc_ib_ep_fail_requests(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep, tc_status_t status)
{
    tc_ib_fail_list(ctx, ep->pq_head, status, 0);
    tc_ib_fail_list(ctx, ep->rq_head, status, 0);
    tc_ib_fail_list(ctx, ep->rndv, status, 1);
    tc_ib_fail_list(ctx, ep->if_head, status, 1);
    ep->pq_head = ep->pq_tail = ep->rq_head = ep->rq_tail = ep->rndv = NULL;
    ep->if_head = ep->if_tail = NULL;
    ep->set_busy = NULL;
    ep->npending = 0;
    ep->nfin = 0;
    /* rendezvous announcements still unexpected point at a dead peer's memory */
    for (tc_ib_unexp_t **pp = &ep->uq_head; *pp != NULL;) {
        tc_ib_unexp_t *u = *pp;
        if (u->rts) {
            *pp = u->next;
            free(u);
        } else {
            pp = &u->next;
        }
    }
    ep->uq_tail = NULL;
    for (tc_ib_unexp_t *u = ep->uq_head; u != NULL; u = u->next)
        ep->uq_tail = u;
}
