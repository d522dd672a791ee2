/* Receiving into a consumer (tc_tp_recv_sink): pieces of a message go to the
 * caller's sink as they land. Cells are passed as they are read from the ring;
 * a single-copy message is read in pieces of the context's staging area, each
 * handed over while it is still in cache, so no message-sized landing area is
 * needed and the consumer's work on a piece follows its copy at once. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/base/copy.h"
#include "shm_internal.h"

tc_status_t tc_shm_recv_sink(tc_tp_ep_t *super, uint64_t tag, const tc_tp_sink_t *sink, size_t cap,
                             tc_tp_req_t *req)
{
    if (sink == NULL || sink->fn == NULL || sink->unit == 0 || sink->unit > 64 ||
        (sink->unit & (sink->unit - 1)) != 0)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "shm recv_sink from peer %llu: the sink is NULL, has no function or "
                            "its unit (%zu) is not a power of two up to 64",
                            (unsigned long long)super->peer_id, sink ? sink->unit : 0);
    /* a receive like any other, whose buffer is the sink */
    return tc_shm_recv_post(super, tag, (void *)(uintptr_t)sink, cap, 1, req);
}

tc_status_t tc_shm_rx_piece(tc_tp_req_t *req, uint64_t off, const void *data, uint64_t len,
                            int last)
{
    if (!req->priv[TC_SHM_P_SINK]) {
        tc_copy((unsigned char *)(uintptr_t)req->priv[TC_SHM_P_BUF] + off, data, len);
        return TC_OK;
    }
    const tc_tp_sink_t *sink = (const tc_tp_sink_t *)(uintptr_t)req->priv[TC_SHM_P_BUF];
    if (off % sink->unit != 0 || (!last && len % sink->unit != 0))
        return tc_error_set(TC_ERR_PROTOCOL,
                            "shm: a piece of %llu bytes at offset %llu of a message is not "
                            "aligned to the receiver's unit of %zu bytes",
                            (unsigned long long)len, (unsigned long long)off, sink->unit);
    return sink->fn(sink->arg, (size_t)off, data, (size_t)len);
}

int tc_shm_cma_into(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep, tc_tp_req_t *req, uint64_t addr,
                    uint64_t cookie, uint64_t off, uint64_t len, uint64_t end, tc_status_t *st_p)
{
    *st_p = TC_OK;
    if (!req->priv[TC_SHM_P_SINK]) {
        ssize_t n = tc_shm_cma_at(ctx, ep->peer_pid,
                                  (unsigned char *)(uintptr_t)req->priv[TC_SHM_P_BUF] + off,
                                  addr + off, (size_t)len, 0);
        int err = errno;
        if (tc_shm_withdrawn(ep, cookie)) /* even a failed read: the memory may be gone */
            return 1;
        errno = err;
        return n < 0 ? -1 : 0;
    }
    if (ctx->stage == NULL && (ctx->stage = malloc(TC_SHM_STAGE_BYTES)) == NULL) {
        *st_p = tc_error_set(TC_ERR_NO_MEMORY, "shm: %u bytes of staging area", TC_SHM_STAGE_BYTES);
        return 0;
    }
    for (uint64_t at = off; at < off + len && *st_p == TC_OK; at += TC_SHM_STAGE_BYTES) {
        uint64_t n = off + len - at < TC_SHM_STAGE_BYTES ? off + len - at : TC_SHM_STAGE_BYTES;
        ssize_t got = tc_shm_cma(ep->peer_pid, ctx->stage, addr + at, (size_t)n, 0);
        int err = errno;
        if (tc_shm_withdrawn(ep, cookie)) /* checked before the consumer sees the piece */
            return 1;
        errno = err;
        if (got < 0)
            return -1;
        *st_p = tc_shm_rx_piece(req, at, ctx->stage, n, at + n == end);
    }
    return 0;
}
