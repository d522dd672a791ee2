/* One-sided operations: registrations, remote keys, put and get (process_vm_writev/readv, or
 * cells through the ring that the target's progress applies) and signals (always by cell). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shm_internal.h"

tc_shm_mem_t *tc_shm_mem_find(tc_shm_ctx_t *ctx, uint64_t key, uint64_t off, uint64_t len)
{
    for (tc_shm_mem_t *m = ctx->mems; m != NULL; m = m->next)
        if (m->key == key)
            return off <= m->super.len && len <= m->super.len - off ? m : NULL;
    return NULL;
}

tc_status_t tc_shm_mem_reg(tc_tp_ctx_t *super, void *addr, size_t len, tc_tp_mem_t **mem_p)
{
    tc_shm_ctx_t *ctx = (tc_shm_ctx_t *)super;
    tc_shm_mem_t *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return tc_error_set(TC_ERR_NO_MEMORY, "shm: cannot allocate a memory registration");
    m->super.ops = &tc_tp_shm_ops;
    m->super.ctx = super;
    m->super.addr = addr;
    m->super.len = len;
    m->key = ctx->next_key++;
    m->next = ctx->mems;
    ctx->mems = m;
    *mem_p = &m->super;
    return TC_OK;
}

void tc_shm_mem_dereg(tc_tp_mem_t *super)
{
    tc_shm_mem_t *m = (tc_shm_mem_t *)super;
    tc_shm_ctx_t *ctx = (tc_shm_ctx_t *)super->ctx;
    for (tc_shm_mem_t **pp = &ctx->mems; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == m) {
            *pp = m->next;
            break;
        }
    }
    free(m);
}

/* rkey: u32 magic, i32 pid, u64 context nonce, u64 key id, u64 address, u64 length */
tc_status_t tc_shm_rkey_pack(tc_tp_mem_t *super, void *buf, size_t cap, size_t *len_p)
{
    tc_shm_mem_t *m = (tc_shm_mem_t *)super;
    tc_shm_ctx_t *ctx = (tc_shm_ctx_t *)super->ctx;
    if (cap < TC_TP_SHM_RKEY_LEN)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "shm rkey_pack: buffer of %zu bytes, the key needs %d", cap,
                            TC_TP_SHM_RKEY_LEN);
    unsigned char *p = buf;
    uint32_t magic = TC_SHM_RKEY_MAGIC;
    int32_t pid = (int32_t)ctx->pid;
    uint64_t addr = (uintptr_t)super->addr, len = super->len;
    memcpy(p, &magic, 4);
    memcpy(p + 4, &pid, 4);
    memcpy(p + 8, &ctx->nonce, 8);
    memcpy(p + 16, &m->key, 8);
    memcpy(p + 24, &addr, 8);
    memcpy(p + 32, &len, 8);
    *len_p = TC_TP_SHM_RKEY_LEN;
    return TC_OK;
}

tc_status_t tc_shm_rkey_unpack(tc_tp_ep_t *super, const void *buf, size_t len,
                               tc_tp_rkey_t **rkey_p)
{
    tc_shm_ep_t *ep = (tc_shm_ep_t *)super;
    const unsigned char *p = buf;
    uint32_t magic = 0;
    if (len == TC_TP_SHM_RKEY_LEN)
        memcpy(&magic, p, 4);
    if (len != TC_TP_SHM_RKEY_LEN || magic != TC_SHM_RKEY_MAGIC)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "shm rkey_unpack: not an shm key (%zu bytes, expected %d starting "
                            "with the key magic)",
                            len, TC_TP_SHM_RKEY_LEN);
    int32_t pid;
    uint64_t nonce, key, addr, klen;
    memcpy(&pid, p + 4, 4);
    memcpy(&nonce, p + 8, 8);
    memcpy(&key, p + 16, 8);
    memcpy(&addr, p + 24, 8);
    memcpy(&klen, p + 32, 8);
    if (pid != (int32_t)ep->peer_pid || nonce != ep->peer_nonce)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "shm rkey_unpack: the key was packed by pid %d, not by peer %llu "
                            "(pid %d) of this endpoint",
                            (int)pid, (unsigned long long)super->peer_id, (int)ep->peer_pid);
    if (klen > UINTPTR_MAX - addr || (addr == 0 && klen > 0))
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "shm rkey_unpack: the key claims %llu bytes at 0x%llx",
                            (unsigned long long)klen, (unsigned long long)addr);
    tc_shm_rkey_t *rk = calloc(1, sizeof(*rk));
    if (rk == NULL)
        return tc_error_set(TC_ERR_NO_MEMORY, "shm: cannot allocate a remote key");
    rk->super.ops = &tc_tp_shm_ops;
    rk->super.ep = super;
    rk->super.len = (size_t)klen;
    rk->key = key;
    rk->addr = addr;
    *rkey_p = &rk->super;
    return TC_OK;
}

void tc_shm_rkey_release(tc_tp_rkey_t *rkey)
{
    free(rkey);
}

/* Failed endpoint: the request fails at once with the endpoint's status. */
static tc_status_t tc_shm_rma_failed(tc_tp_ep_t *super, tc_tp_req_t *req)
{
    req->status = super->failed;
    return tc_error_set(super->failed, "%s", super->error);
}

/* A direct process_vm_writev/readv of the peer's memory; completes @p req. */
static tc_status_t tc_shm_rma_direct(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep, void *local, size_t len,
                                     tc_shm_rkey_t *rk, uint64_t offset, int write,
                                     tc_tp_req_t *req)
{
    if (len > 0 && tc_shm_cma_at(ctx, ep->peer_pid, local, rk->addr + offset, len, write) < 0) {
        int err = errno;
        const char *what = write ? "put" : "get";
        if (err == ESRCH) {
            tc_shm_ep_fail(ctx, ep, TC_ERR_PEER_FAILED, "exited");
            req->status = TC_ERR_PEER_FAILED;
            return tc_error_set(TC_ERR_PEER_FAILED, "%s", ep->super.error);
        }
        req->status = err == EFAULT ? TC_ERR_INVALID_ARG : TC_ERR_SYSTEM;
        return tc_error_set(req->status,
                            "shm %s: %zu bytes at offset %llu of peer %llu's key %llu (pid %d): "
                            "%s: %s",
                            what, len, (unsigned long long)offset,
                            (unsigned long long)ep->super.peer_id, (unsigned long long)rk->key,
                            (int)ep->peer_pid, write ? "process_vm_writev" : "process_vm_readv",
                            strerror(err));
    }
    req->priv[TC_SHM_P_NEXT] = 0;
    tc_shm_req_complete(ctx, req, TC_OK, len);
    return TC_OK;
}

tc_status_t tc_shm_put(tc_tp_ep_t *super, const void *buf, size_t len, tc_tp_rkey_t *rkey,
                       uint64_t offset, tc_tp_req_t *req)
{
    tc_shm_ep_t *ep = (tc_shm_ep_t *)super;
    tc_shm_ctx_t *ctx = (tc_shm_ctx_t *)super->ctx;
    tc_shm_rkey_t *rk = (tc_shm_rkey_t *)rkey;
    if (super->failed != TC_OK)
        return tc_shm_rma_failed(super, req);
    if (ep->cma_local)
        return tc_shm_rma_direct(ctx, ep, (void *)(uintptr_t)buf, len, rk, offset, 1, req);
    req->priv[TC_SHM_P_BUF] = (uintptr_t)buf;
    req->priv[TC_SHM_P_LEN] = len;
    req->priv[TC_SHM_P_TAG] = offset;
    req->priv[TC_SHM_P_KIND] = TC_SHM_K_PUT;
    req->priv[TC_SHM_P_KEY] = rk->key;
    return tc_shm_post_ring(ctx, ep, req);
}

tc_status_t tc_shm_get(tc_tp_ep_t *super, void *buf, size_t len, tc_tp_rkey_t *rkey,
                       uint64_t offset, tc_tp_req_t *req)
{
    tc_shm_ep_t *ep = (tc_shm_ep_t *)super;
    tc_shm_ctx_t *ctx = (tc_shm_ctx_t *)super->ctx;
    tc_shm_rkey_t *rk = (tc_shm_rkey_t *)rkey;
    if (super->failed != TC_OK)
        return tc_shm_rma_failed(super, req);
    if (ep->cma_local)
        return tc_shm_rma_direct(ctx, ep, buf, len, rk, offset, 0, req);
    req->priv[TC_SHM_P_BUF] = (uintptr_t)buf;
    req->priv[TC_SHM_P_LEN] = len;
    req->priv[TC_SHM_P_TAG] = offset;
    req->priv[TC_SHM_P_KIND] = TC_SHM_K_GET;
    req->priv[TC_SHM_P_KEY] = rk->key;
    return tc_shm_post_ring(ctx, ep, req);
}

tc_status_t tc_shm_signal(tc_tp_ep_t *super, tc_tp_rkey_t *rkey, uint64_t offset,
                          tc_tp_signal_op_t op, uint64_t value, tc_tp_req_t *req)
{
    tc_shm_ep_t *ep = (tc_shm_ep_t *)super;
    tc_shm_ctx_t *ctx = (tc_shm_ctx_t *)super->ctx;
    tc_shm_rkey_t *rk = (tc_shm_rkey_t *)rkey;
    if (super->failed != TC_OK)
        return tc_shm_rma_failed(super, req);
    req->priv[TC_SHM_P_BUF] = value;
    req->priv[TC_SHM_P_LEN] = (uint64_t)op;
    req->priv[TC_SHM_P_TAG] = offset;
    req->priv[TC_SHM_P_KIND] = TC_SHM_K_SIGNAL;
    req->priv[TC_SHM_P_KEY] = rk->key;
    return tc_shm_post_ring(ctx, ep, req);
}
