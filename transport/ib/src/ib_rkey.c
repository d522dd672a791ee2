/* Registered memory and remote keys of the verbs backend. */
#include <stdlib.h>

#include "ib_internal.h"

tc_status_t tc_ib_mem_reg(tc_tp_ctx_t *super, void *addr, size_t len, tc_tp_mem_t **mem_p)
{
    tc_ib_ctx_t *ctx = (tc_ib_ctx_t *)super;
    tc_ib_mem_t *mem = calloc(1, sizeof(*mem));
    if (mem == NULL)
        return tc_error_set(TC_ERR_NO_MEMORY, "ib mem_reg: out of memory");
    tc_status_t st = tc_ib_mr_get(ctx, addr, len, 1, &mem->entry);
    if (st != TC_OK) {
        free(mem);
        return st;
    }
    mem->super.ops = &tc_tp_ib_ops;
    mem->super.ctx = super;
    mem->super.addr = addr;
    mem->super.len = len;
    *mem_p = &mem->super;
    return TC_OK;
}

void tc_ib_mem_dereg(tc_tp_mem_t *super)
{
    tc_ib_mem_t *mem = (tc_ib_mem_t *)super;
    /* an explicit deregistration hints that the memory may be freed next: do not keep the
     * registration once nothing else uses it */
    tc_ib_mr_put((tc_ib_ctx_t *)super->ctx, mem->entry, 1);
    free(mem);
}

tc_status_t tc_ib_rkey_pack(tc_tp_mem_t *super, void *buf, size_t cap, size_t *len_p)
{
    tc_ib_mem_t *mem = (tc_ib_mem_t *)super;
    tc_ib_ctx_t *ctx = (tc_ib_ctx_t *)super->ctx;
    if (cap < TC_IB_RKEY_LEN)
        return tc_error_set(TC_ERR_INVALID_ARG, "ib rkey_pack: buffer of %zu bytes, the key needs "
                            "%d", cap, TC_IB_RKEY_LEN);
    unsigned char *p = buf;
    tc_ib_put_u32(p, TC_IB_RKEY_MAGIC);
    tc_ib_put_u32(p + 4, 1);
    tc_ib_put_u64(p + 8, ctx->self_id);
    tc_ib_put_u64(p + 16, (uint64_t)(uintptr_t)super->addr);
    tc_ib_put_u64(p + 24, super->len);
    tc_ib_put_u32(p + 32, mem->entry->mr->rkey);
    tc_ib_put_u32(p + 36, 0);
    *len_p = TC_IB_RKEY_LEN;
    return TC_OK;
}

tc_status_t tc_ib_rkey_unpack(tc_tp_ep_t *ep, const void *buf, size_t len, tc_tp_rkey_t **rkey_p)
{
    const unsigned char *p = buf;
    if (len != TC_IB_RKEY_LEN)
        return tc_error_set(TC_ERR_INVALID_ARG, "ib rkey_unpack: %zu bytes, a key has %d", len,
                            TC_IB_RKEY_LEN);
    if (tc_ib_get_u32(p) != TC_IB_RKEY_MAGIC || tc_ib_get_u32(p + 4) != 1)
        return tc_error_set(TC_ERR_INVALID_ARG, "ib rkey_unpack: not an ib remote key of version 1");
    if (tc_ib_get_u64(p + 8) != ep->peer_id)
        return tc_error_set(TC_ERR_INVALID_ARG, "ib rkey_unpack: the key belongs to id %llu, the "
                            "endpoint leads to id %llu",
                            (unsigned long long)tc_ib_get_u64(p + 8),
                            (unsigned long long)ep->peer_id);
    uint64_t addr = tc_ib_get_u64(p + 16), rlen = tc_ib_get_u64(p + 24);
    if (rlen > SIZE_MAX || addr + rlen < addr)
        return tc_error_set(TC_ERR_INVALID_ARG, "ib rkey_unpack: range of %llu bytes at 0x%llx "
                            "wraps", (unsigned long long)rlen, (unsigned long long)addr);
    tc_ib_rkey_t *k = calloc(1, sizeof(*k));
    if (k == NULL)
        return tc_error_set(TC_ERR_NO_MEMORY, "ib rkey_unpack: out of memory");
    k->super.ops = &tc_tp_ib_ops;
    k->super.ep = ep;
    k->super.len = (size_t)rlen;
    k->addr = addr;
    k->rkey = tc_ib_get_u32(p + 32);
    *rkey_p = &k->super;
    return TC_OK;
}

void tc_ib_rkey_release(tc_tp_rkey_t *rkey)
{
    free(rkey);
}
