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
