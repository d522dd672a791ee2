/* One-sided operations over TCP: registered memory, remote keys, put / get / signal.
 *
 * The initiator sends PUT, GET and SIG_* messages through the ordinary send
 * queue; once written whole they wait in ep->wq for the target's answer. The
 * target applies each message in stream order inside its progress, after
 * validating the key and the range (a violation fails the endpoint with
 * TC_ERR_PROTOCOL), and answers in the same order: a GET_RESP carrying the data
 * for a get; for puts and signals an ACK that counts them (arg), sent once their
 * data is in place, before the next GET_RESP and at the latest at the end of the
 * read that applied them, so a burst of puts costs the target one answer per
 * read, not one per put. Since the stream is ordered, a signal is applied after
 * every earlier put. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tcp_internal.h"

/* ---- registration table ---- */

tc_status_t tc_tcp_mem_reg(tc_tp_ctx_t *super, void *addr, size_t len, tc_tp_mem_t **mem_p)
{
    tc_tcp_ctx_t *ctx = (tc_tcp_ctx_t *)super;
    uint32_t slot = 0;
    while (slot < ctx->nmems && ctx->mems[slot].mem != NULL)
        slot++;
    if (slot == ctx->nmems) {
        if (ctx->nmems >= (1u << 24))
            return tc_error_set(TC_ERR_NO_RESOURCE, "tcp mem_reg: %u registrations already",
                                ctx->nmems);
        uint32_t n = ctx->nmems ? 2 * ctx->nmems : 16;
        tc_tcp_mem_slot_t *t = realloc(ctx->mems, n * sizeof(*t));
        if (t == NULL)
            return tc_error_set(TC_ERR_NO_MEMORY, "tcp mem_reg: cannot grow the table to %u", n);
        memset(t + ctx->nmems, 0, (n - ctx->nmems) * sizeof(*t));
        ctx->mems = t;
        ctx->nmems = n;
    }
    tc_tcp_mem_t *mem = calloc(1, sizeof(*mem));
    if (mem == NULL)
        return tc_error_set(TC_ERR_NO_MEMORY, "tcp mem_reg: cannot allocate a registration");
    mem->super.ops = &tc_tp_tcp_ops;
    mem->super.ctx = super;
    mem->super.addr = addr;
    mem->super.len = len;
    mem->slot = slot;
    mem->gen = ++ctx->mems[slot].gen;
    ctx->mems[slot].mem = mem;
    *mem_p = &mem->super;
    return TC_OK;
}

void tc_tcp_mem_dereg(tc_tp_mem_t *super)
{
    tc_tcp_mem_t *mem = (tc_tcp_mem_t *)super;
    tc_tcp_ctx_t *ctx = (tc_tcp_ctx_t *)super->ctx;
    if (mem->slot < ctx->nmems && ctx->mems[mem->slot].mem == mem)
        ctx->mems[mem->slot].mem = NULL;
    free(mem);
}

void tc_tcp_mem_table_free(tc_tcp_ctx_t *ctx)
{
    for (uint32_t i = 0; i < ctx->nmems; i++)
        free(ctx->mems[i].mem); /* registrations the caller did not release */
    free(ctx->mems);
    ctx->mems = NULL;
    ctx->nmems = 0;
}

static uint64_t tc_tcp_mem_key(const tc_tcp_mem_t *mem)
{
    return (uint64_t)mem->gen << 32 | mem->slot;
}

static tc_tcp_mem_t *tc_tcp_mem_lookup(tc_tcp_ctx_t *ctx, uint64_t key)
{
    uint32_t slot = (uint32_t)key;
    if (slot >= ctx->nmems || ctx->mems[slot].mem == NULL)
        return NULL;
    tc_tcp_mem_t *mem = ctx->mems[slot].mem;
    return mem->gen == (uint32_t)(key >> 32) ? mem : NULL;
}

/* ---- remote keys: u32 magic "TCRK", u32 version 1, u64 owner id, u64 key, u64 length ---- */

tc_status_t tc_tcp_rkey_pack(tc_tp_mem_t *super, void *buf, size_t cap, size_t *len_p)
{
    tc_tcp_mem_t *mem = (tc_tcp_mem_t *)super;
    tc_tcp_ctx_t *ctx = (tc_tcp_ctx_t *)super->ctx;
    if (cap < TC_TCP_RKEY_LEN)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "tcp rkey_pack: buffer of %zu bytes, the key needs %d", cap,
                            TC_TCP_RKEY_LEN);
    unsigned char *p = buf;
    tc_tcp_put_u32(p, TC_TCP_RKEY_MAGIC);
    tc_tcp_put_u32(p + 4, 1);
    tc_tcp_put_u64(p + 8, ctx->self_id);
    tc_tcp_put_u64(p + 16, tc_tcp_mem_key(mem));
    tc_tcp_put_u64(p + 24, super->len);
    *len_p = TC_TCP_RKEY_LEN;
    return TC_OK;
}

tc_status_t tc_tcp_rkey_unpack(tc_tp_ep_t *ep, const void *buf, size_t len, tc_tp_rkey_t **rkey_p)
{
    const unsigned char *p = buf;
    if (len != TC_TCP_RKEY_LEN)
        return tc_error_set(TC_ERR_INVALID_ARG, "tcp rkey_unpack: %zu bytes, a key has %d", len,
                            TC_TCP_RKEY_LEN);
    if (tc_tcp_get_u32(p) != TC_TCP_RKEY_MAGIC || tc_tcp_get_u32(p + 4) != 1)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "tcp rkey_unpack: not a tcp remote key of version 1 (magic 0x%08x "
                            "version %u)",
                            tc_tcp_get_u32(p), tc_tcp_get_u32(p + 4));
    uint64_t owner = tc_tcp_get_u64(p + 8);
    if (owner != ep->peer_id)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "tcp rkey_unpack: the key belongs to id %llu, the endpoint leads to "
                            "id %llu",
                            (unsigned long long)owner, (unsigned long long)ep->peer_id);
    uint64_t rlen = tc_tcp_get_u64(p + 24);
    if (rlen > SIZE_MAX)
        return tc_error_set(TC_ERR_INVALID_ARG, "tcp rkey_unpack: range of %llu bytes",
                            (unsigned long long)rlen);
    tc_tcp_rkey_t *rkey = calloc(1, sizeof(*rkey));
    if (rkey == NULL)
        return tc_error_set(TC_ERR_NO_MEMORY, "tcp rkey_unpack: out of memory");
    rkey->super.ops = &tc_tp_tcp_ops;
    rkey->super.ep = ep;
    rkey->super.len = (size_t)rlen;
    rkey->key = tc_tcp_get_u64(p + 16);
    *rkey_p = &rkey->super;
    return TC_OK;
}

void tc_tcp_rkey_release(tc_tp_rkey_t *rkey)
{
    free(rkey);
}

/* ---- initiator ---- */

static tc_status_t tc_tcp_rma_post(tc_tp_ep_t *super, int kind, uint64_t key, const void *buf,
                                   size_t len, uint64_t payload, uint64_t offset, uint64_t arg,
                                   tc_tp_req_t *req)
{
    tc_tcp_ep_t *ep = (tc_tcp_ep_t *)super;
    if (super->failed != TC_OK) {
        req->status = super->failed;
        return tc_error_set(super->failed, "%s", super->error);
    }
    if (payload > TC_TP_TCP_MAX_MSG)
        return tc_error_set(TC_ERR_INVALID_ARG, "tcp put to peer %llu: %llu bytes, more than %llu",
                            (unsigned long long)super->peer_id, (unsigned long long)payload,
                            (unsigned long long)TC_TP_TCP_MAX_MSG);
    req->status = TC_INPROGRESS;
    req->bytes = 0;
    req->priv[TC_TCP_P_BUF] = (uintptr_t)buf;
    req->priv[TC_TCP_P_LEN] = len;
    unsigned char *hdr = tc_tcp_sq_hdr(req);
    tc_tcp_put_u64(hdr, key);
    tc_tcp_put_u64(hdr + 8, (uint64_t)kind << 56 | payload);
    tc_tcp_put_u64(hdr + 16, offset);
    tc_tcp_put_u64(hdr + 24, arg);
    tc_tcp_sq_push((tc_tcp_ctx_t *)super->ctx, ep, req);
    return TC_OK;
}

tc_status_t tc_tcp_put(tc_tp_ep_t *ep, const void *buf, size_t len, tc_tp_rkey_t *rkey,
                       uint64_t offset, tc_tp_req_t *req)
{
    return tc_tcp_rma_post(ep, TC_TCP_K_PUT, ((tc_tcp_rkey_t *)rkey)->key, buf, len, len, offset, 0,
                           req);
}

tc_status_t tc_tcp_get(tc_tp_ep_t *ep, void *buf, size_t len, tc_tp_rkey_t *rkey, uint64_t offset,
                       tc_tp_req_t *req)
{
    return tc_tcp_rma_post(ep, TC_TCP_K_GET, ((tc_tcp_rkey_t *)rkey)->key, buf, len, 0, offset, len,
                           req);
}

tc_status_t tc_tcp_signal(tc_tp_ep_t *ep, tc_tp_rkey_t *rkey, uint64_t offset, tc_tp_signal_op_t op,
                          uint64_t value, tc_tp_req_t *req)
{
    int kind = op == TC_TP_SIGNAL_ADD ? TC_TCP_K_SIG_ADD : TC_TCP_K_SIG_SET;
    return tc_tcp_rma_post(ep, kind, ((tc_tcp_rkey_t *)rkey)->key, NULL, sizeof(uint64_t), 0,
                           offset, value, req);
}

static int tc_tcp_kind_is_ctl(int kind)
{
    return kind == TC_TCP_K_ACK || kind == TC_TCP_K_GET_RESP || kind == TC_TCP_K_LACK ||
           kind == TC_TCP_K_LDOWN;
}

void tc_tcp_sq_written(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_tp_req_t *req)
{
    int kind = tc_tcp_sq_kind(req);
    if (kind == TC_TCP_K_LMSG) {
        tc_tcp_lq_push(ctx, ep, req); /* its chunks follow, orphaned or not */
    } else if (kind == TC_TCP_K_MSG && req->bytes == TC_TCP_ORPHAN) {
        free(req);
    } else if (kind == TC_TCP_K_MSG) {
        tc_tcp_req_complete(ctx, req, TC_OK, req->priv[TC_TCP_P_LEN]);
    } else if (tc_tcp_kind_is_ctl(kind)) {
        tc_tcp_ctl_t *ctl = (tc_tcp_ctl_t *)req;
        ctl->next_free = ep->ctl_free;
        ep->ctl_free = ctl;
    } else {
        req->priv[TC_TCP_P_NEXT] = 0;
        if (ep->wq_tail != NULL)
            ep->wq_tail->priv[TC_TCP_P_NEXT] = (uintptr_t)req;
        else
            ep->wq_head = req;
        ep->wq_tail = req;
        ep->nwq++;
    }
}

void tc_tcp_sq_drop(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_status_t status)
{
    tc_tp_req_t *req = ep->sq_head;
    while (req != NULL) {
        tc_tp_req_t *next = TC_TCP_REQ_NEXT(req);
        if (tc_tcp_kind_is_ctl(tc_tcp_sq_kind(req))) {
            tc_tcp_ctl_t *ctl = (tc_tcp_ctl_t *)req;
            ctl->next_free = ep->ctl_free;
            ep->ctl_free = ctl;
        } else if (req->bytes == TC_TCP_ORPHAN) {
            free(req);
        } else {
            tc_tcp_req_complete(ctx, req, status, 0);
        }
        req = next;
    }
    ep->sq_head = ep->sq_tail = NULL;
    ep->nsq = 0;
    tc_tcp_queue_fail(ctx, &ep->wq_head, &ep->wq_tail, status);
    ep->nwq = 0;
}

void tc_tcp_ctl_free_all(tc_tcp_ep_t *ep)
{
    while (ep->ctl_free != NULL) {
        tc_tcp_ctl_t *ctl = ep->ctl_free;
        ep->ctl_free = ctl->next_free;
        free(ctl);
    }
}

/* ---- target ---- */

int tc_tcp_ctl_push(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, int kind, const void *data, uint64_t len,
                    uint64_t word0, uint64_t word3)
{
    tc_tcp_ctl_t *ctl = ep->ctl_free;
    if (ctl != NULL) {
        ep->ctl_free = ctl->next_free;
    } else {
        ctl = calloc(1, sizeof(*ctl));
        if (ctl == NULL) {
            tc_tcp_ep_fail(ctx, ep, TC_ERR_NO_MEMORY,
                           "is owed an answer that cannot be "
                           "allocated: out of memory");
            return 0;
        }
    }
    tc_tp_req_t *req = &ctl->req;
    req->status = TC_INPROGRESS;
    req->priv[TC_TCP_P_BUF] = (uintptr_t)data;
    req->priv[TC_TCP_P_LEN] = len;
    unsigned char *hdr = tc_tcp_sq_hdr(req);
    memset(hdr, 0, TC_TCP_RMA_HDR_LEN);
    tc_tcp_put_u64(hdr, word0);
    tc_tcp_put_u64(hdr + 8, (uint64_t)kind << 56 | len);
    tc_tcp_put_u64(hdr + 24, word3);
    tc_tcp_sq_push(ctx, ep, req);
    return 1;
}

static const char *tc_tcp_kind_name(int kind)
{
    switch (kind) {
    case TC_TCP_K_PUT:
        return "put";
    case TC_TCP_K_GET:
        return "get";
    case TC_TCP_K_SIG_ADD:
    case TC_TCP_K_SIG_SET:
        return "signal";
    case TC_TCP_K_ACK:
        return "ack";
    default:
        return "get response";
    }
}

/* The waiting request an answer of @p kind belongs to, unlinked; NULL (endpoint failed) if the
 * answer was not expected. */
static tc_tp_req_t *tc_tcp_wq_pop(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, int kind, uint64_t len)
{
    tc_tp_req_t *req = ep->wq_head;
    int want = req == NULL ? -1 : tc_tcp_sq_kind(req);
    int ok = req != NULL &&
             (kind == TC_TCP_K_ACK ? want != TC_TCP_K_GET
                                   : want == TC_TCP_K_GET && len == req->priv[TC_TCP_P_LEN]);
    if (!ok) {
        tc_tcp_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                       "sent an unexpected %s of %llu bytes (%s): corrupt or hostile stream",
                       tc_tcp_kind_name(kind), (unsigned long long)len,
                       req == NULL            ? "no one-sided request is waiting"
                       : want == TC_TCP_K_GET ? "a get is waiting"
                                              : "a put or signal is waiting");
        return NULL;
    }
    ep->wq_head = TC_TCP_REQ_NEXT(req);
    if (ep->wq_head == NULL)
        ep->wq_tail = NULL;
    ep->nwq--;
    return req;
}

void tc_tcp_rx_on_rma(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, int kind, uint64_t len)
{
    const unsigned char *h = ep->rx_hdr;
    uint64_t key = tc_tcp_get_u64(h);
    uint64_t offset = tc_tcp_get_u64(h + 16);
    uint64_t arg = tc_tcp_get_u64(h + 24);
    ep->rx_state = TC_TCP_RX_HDR;

    if (kind == TC_TCP_K_ACK || kind == TC_TCP_K_GET_RESP) {
        if (key != 0 || offset != 0 || (kind == TC_TCP_K_ACK ? len != 0 || arg == 0 : arg != 0)) {
            tc_tcp_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                           "sent a malformed %s header: corrupt or hostile stream",
                           tc_tcp_kind_name(kind));
            return;
        }
        if (kind == TC_TCP_K_ACK) {
            for (uint64_t i = 0; i < arg; i++) {
                tc_tp_req_t *req = tc_tcp_wq_pop(ctx, ep, kind, len);
                if (req == NULL)
                    return;
                tc_tcp_req_complete(ctx, req, TC_OK, req->priv[TC_TCP_P_LEN]);
            }
            return;
        }
        tc_tp_req_t *req = tc_tcp_wq_pop(ctx, ep, kind, len);
        if (req == NULL)
            return;
        /* the data streams into the get's buffer like a matched receive */
        ep->rx_kind = TC_TCP_K_GET_RESP;
        ep->rx_state = TC_TCP_RX_PAYLOAD;
        ep->rx_len = len;
        ep->rx_req = req;
        ep->rx_unexp = NULL;
        ep->rx_dst = (unsigned char *)(uintptr_t)req->priv[TC_TCP_P_BUF];
        ep->rx_dst_left = len;
        ep->rx_discard = 0;
        return;
    }

    /* a request from the initiator: the key and the range must be ours */
    uint64_t span = kind == TC_TCP_K_PUT ? len : kind == TC_TCP_K_GET ? arg : sizeof(uint64_t);
    tc_tcp_mem_t *mem = tc_tcp_mem_lookup(ctx, key);
    if (mem == NULL) {
        tc_tcp_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                       "sent a %s with remote key 0x%016llx that is not registered here "
                       "(stale or hostile)",
                       tc_tcp_kind_name(kind), (unsigned long long)key);
        return;
    }
    if (offset > mem->super.len || span > mem->super.len - offset ||
        (kind != TC_TCP_K_PUT && len != 0)) {
        tc_tcp_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                       "sent a %s of %llu bytes at offset %llu for a registered range of %zu "
                       "bytes: hostile or corrupt",
                       tc_tcp_kind_name(kind), (unsigned long long)span, (unsigned long long)offset,
                       mem->super.len);
        return;
    }
    unsigned char *at = (unsigned char *)mem->super.addr + offset;
    switch (kind) {
    case TC_TCP_K_PUT:
        ep->rx_kind = TC_TCP_K_PUT;
        ep->rx_state = TC_TCP_RX_PAYLOAD;
        ep->rx_len = len;
        ep->rx_req = NULL;
        ep->rx_unexp = NULL;
        ep->rx_dst = at;
        ep->rx_dst_left = len;
        ep->rx_discard = 0;
        return;
    case TC_TCP_K_GET:
        ctx->nserved++;
        tc_tcp_acks_send(ctx, ep); /* answers go in order */
        tc_tcp_ctl_push(ctx, ep, TC_TCP_K_GET_RESP, at, arg, 0, 0);
        return;
    default:
        if ((uintptr_t)at % sizeof(uint64_t) != 0) {
            tc_tcp_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                           "sent a signal to offset %llu, which is not 8-byte aligned here",
                           (unsigned long long)offset);
            return;
        }
        if (kind == TC_TCP_K_SIG_ADD)
            __atomic_fetch_add((uint64_t *)(void *)at, arg, __ATOMIC_RELEASE);
        else
            __atomic_store_n((uint64_t *)(void *)at, arg, __ATOMIC_RELEASE);
        ctx->nserved++;
        ep->acks_owed++;
        return;
    }
}

void tc_tcp_rx_put_done(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep)
{
    ctx->nserved++;
    ep->acks_owed++;
}

void tc_tcp_acks_send(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep)
{
    if (ep->acks_owed == 0)
        return;
    uint64_t n = ep->acks_owed;
    ep->acks_owed = 0;
    (void)tc_tcp_ctl_push(ctx, ep, TC_TCP_K_ACK, NULL, 0, 0, n);
}
