/* Endpoints of the verbs backend: queue pairs, the RESET -> INIT -> RTR -> RTS transitions,
 * failure and close (the TCP handshake that exchanges QP numbers is in ib_hs.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcomms/base/log.h"
#include "tcomms/base/time.h"
#include "ib_internal.h"

void tc_ib_req_complete(tc_ib_ctx_t *ctx, tc_tp_req_t *req, tc_status_t status, size_t bytes)
{
    req->bytes = bytes;
    req->priv[TC_IB_P_NEXT] = 0;
    req->status = status;
    ctx->ncompleted++;
}

void tc_ib_list_push(tc_tp_req_t **head, tc_tp_req_t **tail, tc_tp_req_t *req)
{
    req->priv[TC_IB_P_NEXT] = 0;
    if (*tail != NULL)
        (*tail)->priv[TC_IB_P_NEXT] = (uintptr_t)req;
    else
        *head = req;
    *tail = req;
}

int tc_ib_list_remove(tc_tp_req_t **head, tc_tp_req_t **tail, tc_tp_req_t *req)
{
    tc_tp_req_t *prev = NULL;
    for (tc_tp_req_t *r = *head; r != NULL; prev = r, r = TC_IB_REQ_NEXT(r)) {
        if (r != req)
            continue;
        if (prev != NULL)
            prev->priv[TC_IB_P_NEXT] = r->priv[TC_IB_P_NEXT];
        else
            *head = TC_IB_REQ_NEXT(r);
        if (tail != NULL && *tail == r)
            *tail = prev;
        return 1;
    }
    return 0;
}

tc_ib_ep_t *tc_ib_ep_find(tc_ib_ctx_t *ctx, uint64_t peer_id)
{
    for (tc_ib_ep_t *ep = ctx->eps; ep != NULL; ep = ep->next)
        if (ep->super.peer_id == peer_id)
            return ep;
    return NULL;
}

static void tc_ib_close_fd(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep)
{
    if (ep->fd >= 0)
        close(ep->fd);
    ep->fd = -1;
    if (ep->state == TC_IB_EP_WAITING)
        ctx->nwaiting--;
}

/* Move the QP to the error state and take the flushed completions out of the CQ, so that no
 * work request still refers to a request the caller may reuse. */
static void tc_ib_qp_drain(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep)
{
    if (ep->qp == NULL)
        return;
    struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};
    ctx->v->modify_qp(ep->qp, &attr, IBV_QP_STATE);
    uint64_t deadline = tc_deadline_after_ms(1000);
    while (ep->sq_used > 0 && !tc_deadline_passed(deadline)) {
        struct ibv_wc wc[16];
        int n = ctx->v->poll_cq(ep->cq, 16, wc);
        for (int i = 0; i < n; i++) {
            int type = (int)(wc[i].wr_id & 7);
            if (type == TC_IB_WR_RECV)
                continue;
            if (type == TC_IB_WR_SLOT)
                ep->send_free[ep->nsend_free++] =
                    ((tc_ib_slot_t *)(uintptr_t)(wc[i].wr_id & ~7ULL))->index;
            ep->sq_used--;
        }
        if (n <= 0)
            sched_yield();
    }
}

void tc_ib_ep_fail(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep, tc_status_t status, const char *fmt, ...)
{
    if (ep->state == TC_IB_EP_FAILED)
        return;
    char reason[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof(reason), fmt, ap);
    va_end(ap);
    snprintf(ep->super.error, sizeof(ep->super.error), "ib: peer %llu (%s) %s (%zu requests "
             "pending)", (unsigned long long)ep->super.peer_id, ep->peer_str, reason,
             ep->npending);
    ep->super.failed = status;
    if (ep->npending > 0)
        tc_log_warn(TC_SUBSYS_TRANSPORT, "%s", ep->super.error);
    else
        tc_log_debug(TC_SUBSYS_TRANSPORT, "%s", ep->super.error);
    tc_ib_close_fd(ctx, ep);
    ep->state = TC_IB_EP_FAILED;
    tc_ib_qp_drain(ctx, ep);
    tc_ib_ep_fail_requests(ctx, ep, status);
}

/* ---- queue pair ---- */

static tc_status_t tc_ib_qp_create(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep)
{
    const tc_ib_verbs_t *v = ctx->v;
    ep->cq = v->create_cq(ctx->dev, TC_IB_CQ_DEPTH, NULL, NULL, 0);
    if (ep->cq == NULL)
        return tc_error_set(TC_ERR_NO_RESOURCE, "ib: ibv_create_cq(%d) on %s failed: %s",
                            TC_IB_CQ_DEPTH, ctx->dev_name, strerror(errno));
    struct ibv_qp_init_attr ia = {
        .send_cq = ep->cq,
        .recv_cq = ep->cq,
        .cap = {.max_send_wr = TC_IB_SQ_DEPTH + TC_IB_SQ_CTRL, .max_recv_wr = TC_IB_NRQ,
                .max_send_sge = 1, .max_recv_sge = 1, .max_inline_data = 64},
        .qp_type = IBV_QPT_RC,
        .sq_sig_all = 1,
    };
    ep->qp = v->create_qp(ctx->pd, &ia);
    if (ep->qp == NULL)
        return tc_error_set(TC_ERR_NO_RESOURCE, "ib: ibv_create_qp (RC) on %s failed: %s",
                            ctx->dev_name, strerror(errno));
    struct ibv_qp_attr a = {
        .qp_state = IBV_QPS_INIT,
        .pkey_index = 0,
        .port_num = ctx->port,
        .qp_access_flags =
            IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
    };
    if (v->modify_qp(ep->qp, &a,
                     IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0)
        return tc_error_set(TC_ERR_SYSTEM, "ib: QP %u to INIT failed: %s", ep->qp->qp_num,
                            strerror(errno));

    /* send bounce buffers then one atomic scratch word per send work request; the receive
     * ring the peer writes into with RDMA write with immediate data */
    size_t slen = (size_t)TC_IB_NSEND * TC_IB_SLOT + (size_t)TC_IB_SQ_DEPTH * 8;
    size_t rlen = (size_t)TC_IB_NRECV * TC_IB_SLOT;
    if (posix_memalign((void **)&ep->send_buf, 4096, slen) != 0 ||
        posix_memalign((void **)&ep->recv_buf, 4096, rlen) != 0)
        return tc_error_set(TC_ERR_NO_MEMORY, "ib: bounce buffers of %zu bytes", slen + rlen);
    memset(ep->send_buf, 0, slen);
    memset(ep->recv_buf, 0, rlen);
    ep->send_mr = v->reg_mr(ctx->pd, ep->send_buf, slen, IBV_ACCESS_LOCAL_WRITE);
    ep->recv_mr = ep->send_mr ? v->reg_mr(ctx->pd, ep->recv_buf, rlen,
                                          IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)
                              : NULL;
    if (ep->recv_mr == NULL)
        return tc_error_set(TC_ERR_NO_RESOURCE, "ib: ibv_reg_mr of the bounce buffers and the "
                            "receive ring failed: %s", strerror(errno));
    for (int i = 0; i < TC_IB_NSEND; i++) {
        ep->send_slot[i] = (tc_ib_slot_t){ep, ep->send_buf + (size_t)i * TC_IB_SLOT, i};
        ep->send_free[i] = TC_IB_NSEND - 1 - i;
    }
    ep->nsend_free = TC_IB_NSEND;
    for (int i = 0; i < TC_IB_SQ_DEPTH; i++)
        ep->scratch_free[i] = (uint16_t)(TC_IB_SQ_DEPTH - 1 - i);
    ep->nscratch_free = TC_IB_SQ_DEPTH;
    ep->tx_credits = TC_IB_NRECV;
    return tc_ib_post_recvs(ep);
}

tc_status_t tc_ib_qp_connect(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep, const unsigned char *hs)
{
    uint32_t qpn = tc_ib_get_u32(hs + 24), psn = tc_ib_get_u32(hs + 28);
    uint16_t lid = tc_ib_get_u16(hs + 32);
    union ibv_gid gid;
    memcpy(gid.raw, hs + 40, 16);
    ep->r_addr = tc_ib_get_u64(hs + 64);
    ep->r_rkey = tc_ib_get_u32(hs + 72);
    static const unsigned char zero[16];
    struct ibv_qp_attr a = {
        .qp_state = IBV_QPS_RTR,
        .path_mtu = ctx->port_attr.active_mtu,
        .dest_qp_num = qpn,
        .rq_psn = psn,
        .max_dest_rd_atomic = 16,
        .min_rnr_timer = 12,
        .ah_attr = {.dlid = lid, .sl = 0, .src_path_bits = 0, .port_num = ctx->port},
    };
    if (memcmp(gid.raw, zero, 16) != 0) { /* RoCE, or IB across subnets: a global route */
        a.ah_attr.is_global = 1;
        a.ah_attr.grh.dgid = gid; // cppcheck-suppress uninitvar ; the memcpy above set all 16 bytes
        a.ah_attr.grh.sgid_index = (uint8_t)ctx->gid_index;
        a.ah_attr.grh.hop_limit = 64;
    }
    if (ctx->v->modify_qp(ep->qp, &a,
                          IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                              IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                              IBV_QP_MIN_RNR_TIMER) != 0)
        return tc_error_set(TC_ERR_PEER_FAILED, "ib: QP %u to RTR (peer QP %u, lid %u) failed: "
                            "%s", ep->qp->qp_num, qpn, lid, strerror(errno));
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7; /* never needed: credits guarantee a posted receive (infinite anyway) */
    a.sq_psn = ep->psn;
    a.max_rd_atomic = 16;
    if (ctx->v->modify_qp(ep->qp, &a,
                          IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                              IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) != 0)
        return tc_error_set(TC_ERR_PEER_FAILED, "ib: QP %u to RTS failed: %s", ep->qp->qp_num,
                            strerror(errno));
    return TC_OK;
}

static void tc_ib_ep_free(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep)
{
    const tc_ib_verbs_t *v = ctx->v;
    if (ep->qp != NULL)
        v->destroy_qp(ep->qp);
    if (ep->cq != NULL)
        v->destroy_cq(ep->cq);
    if (ep->send_mr != NULL)
        v->dereg_mr(ep->send_mr);
    if (ep->recv_mr != NULL)
        v->dereg_mr(ep->recv_mr);
    free(ep->send_buf);
    free(ep->recv_buf);
    while (ep->uq_head != NULL) {
        tc_ib_unexp_t *u = ep->uq_head;
        ep->uq_head = u->next;
        free(u);
    }
    free(ep->fin_backlog);
    free(ep);
}

tc_status_t tc_ib_ep_connect(tc_tp_ctx_t *super, uint64_t peer_id, const void *addr,
                             size_t addr_len, tc_tp_ep_t **ep_p)
{
    tc_ib_ctx_t *ctx = (tc_ib_ctx_t *)super;
    const unsigned char *a = addr;
    if (addr_len != TC_IB_ADDR_LEN || a[0] != 1)
        return tc_error_set(TC_ERR_INVALID_ARG, "ib: the address of peer %llu is %zu bytes of "
                            "version %u, expected %d bytes of version 1",
                            (unsigned long long)peer_id, addr_len, addr_len ? a[0] : 0,
                            TC_IB_ADDR_LEN);
    if (peer_id == ctx->self_id)
        return tc_error_set(TC_ERR_INVALID_ARG, "ib: cannot connect id %llu to itself",
                            (unsigned long long)peer_id);
    if (tc_ib_ep_find(ctx, peer_id) != NULL)
        return tc_error_set(TC_ERR_INVALID_STATE, "ib: id %llu already has an endpoint to %llu",
                            (unsigned long long)ctx->self_id, (unsigned long long)peer_id);
    tc_ib_ep_t *ep = calloc(1, sizeof(*ep));
    if (ep == NULL)
        return tc_error_set(TC_ERR_NO_MEMORY, "ib: cannot allocate an endpoint");
    ep->super.ops = &tc_tp_ib_ops;
    ep->super.ctx = super;
    ep->super.peer_id = peer_id;
    ep->fd = -1;
    ep->peer_sa.sin_family = AF_INET;
    memcpy(&ep->peer_sa.sin_addr.s_addr, a + 20, 4);
    memcpy(&ep->peer_sa.sin_port, a + 24, 2);
    snprintf(ep->peer_str, sizeof(ep->peer_str), "%s:%u lid %u", inet_ntoa(ep->peer_sa.sin_addr),
             ntohs(ep->peer_sa.sin_port), tc_ib_get_u16(a + 2));
    ep->psn = (uint32_t)(tc_time_ns() ^ (peer_id * 0x9e3779b9u)) & 0xffffff;
    ep->hs_deadline = tc_deadline_after_ms(TC_IB_HS_TIMEOUT_MS);
    tc_status_t st = tc_ib_qp_create(ctx, ep);
    if (st != TC_OK) {
        tc_ib_ep_free(ctx, ep);
        return st;
    }
    ep->next = ctx->eps;
    ctx->eps = ep;
    if (ctx->self_id < peer_id) {
        ep->state = TC_IB_EP_CONNECTING;
        tc_ib_hs_start(ctx, ep);
    } else {
        ep->state = TC_IB_EP_WAITING;
        ctx->nwaiting++;
    }
    tc_ib_handshake_progress(ctx);
    *ep_p = &ep->super;
    return TC_OK;
}

void tc_ib_ep_close(tc_tp_ep_t *super)
{
    tc_ib_ep_t *ep = (tc_ib_ep_t *)super;
    tc_ib_ctx_t *ctx = (tc_ib_ctx_t *)super->ctx;
    for (tc_ib_ep_t **pp = &ctx->eps; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == ep) {
            *pp = ep->next;
            break;
        }
    }
    tc_ib_close_fd(ctx, ep);
    ep->state = TC_IB_EP_FAILED;
    tc_ib_qp_drain(ctx, ep);
    tc_ib_ep_fail_requests(ctx, ep, TC_ERR_ABORTED);
    tc_ib_ep_free(ctx, ep);
}
