/* Argument checks around the backend calls that are not on the hot path. */
#include <stddef.h>

#include "tcomms/base/status.h"
#include "tcomms/transport/transport.h"

tc_status_t tc_tp_ctx_create(const tc_tp_ops_t *ops, const tc_tp_ctx_params_t *params,
                             tc_tp_ctx_t **ctx_p)
{
    if (ops == NULL || params == NULL || ctx_p == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_tp_ctx_create: ops, params or ctx_p is NULL");
    if (ops->version != TC_TP_API_VERSION)
        return tc_error_set(TC_ERR_UNSUPPORTED,
                            "tc_tp_ctx_create: backend '%s' has ops version %u, this build "
                            "expects %u",
                            ops->name ? ops->name : "?", ops->version, TC_TP_API_VERSION);
    if (params->size != sizeof(tc_tp_ctx_params_t))
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "tc_tp_ctx_create: params->size is %u, expected %zu (initialise "
                            "with TC_TP_CTX_PARAMS_INIT)",
                            params->size, sizeof(tc_tp_ctx_params_t));
    if (params->secret == NULL && params->secret_len != 0)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "tc_tp_ctx_create: params->secret is NULL but secret_len is %zu",
                            params->secret_len);

    tc_tp_ctx_t *ctx = NULL;
    tc_status_t status = ops->ctx_create(params, &ctx);
    if (status != TC_OK)
        return status;
    ctx->ops = ops;
    *ctx_p = ctx;
    return TC_OK;
}

void tc_tp_ctx_destroy(tc_tp_ctx_t *ctx)
{
    if (ctx != NULL)
        ctx->ops->ctx_destroy(ctx);
}

tc_status_t tc_tp_addr_pack(tc_tp_ctx_t *ctx, void *buf, size_t cap, size_t *len_p)
{
    if (ctx == NULL || buf == NULL || len_p == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_tp_addr_pack: ctx, buf or len_p is NULL");
    return ctx->ops->addr_pack(ctx, buf, cap, len_p);
}

tc_status_t tc_tp_ep_connect(tc_tp_ctx_t *ctx, uint64_t peer_id, const void *addr, size_t addr_len,
                             tc_tp_ep_t **ep_p)
{
    if (ctx == NULL || ep_p == NULL || (addr == NULL && addr_len != 0))
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "tc_tp_ep_connect: ctx, ep_p or addr is NULL (peer %llu)",
                            (unsigned long long)peer_id);
    return ctx->ops->ep_connect(ctx, peer_id, addr, addr_len, ep_p);
}

void tc_tp_ep_close(tc_tp_ep_t *ep)
{
    if (ep != NULL)
        ep->ops->ep_close(ep);
}

/* ---- one-sided ---- */

static tc_status_t tc_tp_no_one_sided(const tc_tp_ops_t *ops, const char *what)
{
    return tc_error_set(TC_ERR_UNSUPPORTED, "transport %s: %s: one-sided operations are not "
                        "supported by this backend", ops->name, what);
}

tc_status_t tc_tp_mem_reg(tc_tp_ctx_t *ctx, void *addr, size_t len, tc_tp_mem_t **mem_p)
{
    if (ctx == NULL || mem_p == NULL || (addr == NULL && len > 0))
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_tp_mem_reg: %s is NULL",
                            ctx == NULL ? "ctx" : mem_p == NULL ? "mem_p" : "addr");
    if (ctx->ops->mem_reg == NULL)
        return tc_tp_no_one_sided(ctx->ops, "mem_reg");
    return ctx->ops->mem_reg(ctx, addr, len, mem_p);
}

void tc_tp_mem_dereg(tc_tp_mem_t *mem)
{
    if (mem != NULL && mem->ops->mem_dereg != NULL)
        mem->ops->mem_dereg(mem);
}

tc_status_t tc_tp_rkey_pack(tc_tp_mem_t *mem, void *buf, size_t cap, size_t *len_p)
{
    if (mem == NULL || buf == NULL || len_p == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_tp_rkey_pack: %s is NULL",
                            mem == NULL ? "mem" : buf == NULL ? "buf" : "len_p");
    if (mem->ops->rkey_pack == NULL)
        return tc_tp_no_one_sided(mem->ops, "rkey_pack");
    return mem->ops->rkey_pack(mem, buf, cap, len_p);
}

tc_status_t tc_tp_rkey_unpack(tc_tp_ep_t *ep, const void *buf, size_t len, tc_tp_rkey_t **rkey_p)
{
    if (ep == NULL || buf == NULL || rkey_p == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_tp_rkey_unpack: %s is NULL",
                            ep == NULL ? "ep" : buf == NULL ? "buf" : "rkey_p");
    if (ep->ops->rkey_unpack == NULL)
        return tc_tp_no_one_sided(ep->ops, "rkey_unpack");
    return ep->ops->rkey_unpack(ep, buf, len, rkey_p);
}

void tc_tp_rkey_release(tc_tp_rkey_t *rkey)
{
    if (rkey != NULL && rkey->ops->rkey_release != NULL)
        rkey->ops->rkey_release(rkey);
}

/* Checks shared by put, get and signal: the range lies inside the remote key. */
static tc_status_t tc_tp_rma_check(const char *what, tc_tp_ep_t *ep, tc_tp_rkey_t *rkey,
                                   uint64_t offset, size_t len, tc_tp_req_t *req)
{
    if (ep == NULL || rkey == NULL || req == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: %s is NULL", what,
                            ep == NULL ? "ep" : rkey == NULL ? "rkey" : "req");
    if (rkey->ep != ep)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: the remote key was unpacked for another "
                            "endpoint (peer %llu, not %llu)", what,
                            (unsigned long long)rkey->ep->peer_id,
                            (unsigned long long)ep->peer_id);
    if (offset > rkey->len || len > rkey->len - offset)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: %zu bytes at offset %llu do not fit the "
                            "remote range of %zu bytes", what, len, (unsigned long long)offset,
                            rkey->len);
    return TC_OK;
}

tc_status_t tc_tp_put(tc_tp_ep_t *ep, const void *buf, size_t len, tc_tp_rkey_t *rkey,
                      uint64_t offset, tc_tp_req_t *req)
{
    tc_status_t st = tc_tp_rma_check("tc_tp_put", ep, rkey, offset, len, req);
    if (st != TC_OK)
        return st;
    if (buf == NULL && len > 0)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_tp_put: buf is NULL");
    if (ep->ops->put == NULL)
        return tc_tp_no_one_sided(ep->ops, "put");
    return ep->ops->put(ep, buf, len, rkey, offset, req);
}

tc_status_t tc_tp_get(tc_tp_ep_t *ep, void *buf, size_t len, tc_tp_rkey_t *rkey, uint64_t offset,
                      tc_tp_req_t *req)
{
    tc_status_t st = tc_tp_rma_check("tc_tp_get", ep, rkey, offset, len, req);
    if (st != TC_OK)
        return st;
    if (buf == NULL && len > 0)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_tp_get: buf is NULL");
    if (ep->ops->get == NULL)
        return tc_tp_no_one_sided(ep->ops, "get");
    return ep->ops->get(ep, buf, len, rkey, offset, req);
}

tc_status_t tc_tp_signal(tc_tp_ep_t *ep, tc_tp_rkey_t *rkey, uint64_t offset,
                         tc_tp_signal_op_t op, uint64_t value, tc_tp_req_t *req)
{
    tc_status_t st = tc_tp_rma_check("tc_tp_signal", ep, rkey, offset, sizeof(uint64_t), req);
    if (st != TC_OK)
        return st;
    if (offset % sizeof(uint64_t) != 0)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_tp_signal: offset %llu is not 8-byte aligned",
                            (unsigned long long)offset);
    if (op != TC_TP_SIGNAL_ADD && op != TC_TP_SIGNAL_SET)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_tp_signal: op %d (accepted: "
                            "TC_TP_SIGNAL_ADD, TC_TP_SIGNAL_SET)", (int)op);
    if (ep->ops->signal == NULL)
        return tc_tp_no_one_sided(ep->ops, "signal");
    return ep->ops->signal(ep, rkey, offset, op, value, req);
}
