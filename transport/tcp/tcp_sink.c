/* Receiving into a consumer (tc_tp_recv_sink): the bytes of a message go to the caller's sink
 * instead of a buffer.
 *
 * A message on the primary socket is handed over as it is read: each recv() fills the
 * context's staging area (64 KiB, so it stays in cache) and the payload bytes in it go to the
 * sink at once, in order, in whole units of the sink; a tail shorter than a unit waits in the
 * endpoint's carry (at most 63 bytes), and the next read lands right behind a copy of it.
 * Pieces are aligned (the consumer reads elements): the stage is, reads of a sink's payload
 * start where the carry ends on an aligned address, and the first piece after a header is
 * moved down to one. No allocation, and no buffer of the message's size.
 *
 * A striped message (several sockets, TC_SOCKET_NSOCKS > 1) arrives in chunks over several
 * sockets in any order, while the sink takes pieces in order: it lands in a buffer of the
 * message's size, allocated when its header is matched, and goes to the sink whole once its
 * last chunk is in. So do unexpected messages (they are buffered before any receive exists). */
#include <stdlib.h>
#include <string.h>

#include "tcp_internal.h"

tc_status_t tc_tcp_recv_sink(tc_tp_ep_t *super, uint64_t tag, const tc_tp_sink_t *sink, size_t cap,
                             tc_tp_req_t *req)
{
    if (sink == NULL || sink->fn == NULL || sink->unit == 0 || sink->unit > TC_TCP_SINK_UNIT_MAX ||
        (sink->unit & (sink->unit - 1)) != 0)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "tcp recv_sink from peer %llu: the sink is NULL, has no function or "
                            "its unit (%zu) is not a power of two up to %d",
                            (unsigned long long)super->peer_id, sink ? sink->unit : 0,
                            TC_TCP_SINK_UNIT_MAX);
    /* a receive like any other, whose buffer is the sink */
    return tc_tcp_recv_post(super, tag, (void *)(uintptr_t)sink, cap, 1, req);
}

static const tc_tp_sink_t *tc_tcp_sink_of(const tc_tp_req_t *req)
{
    return (const tc_tp_sink_t *)(uintptr_t)req->priv[TC_TCP_P_BUF];
}

/* The consumer failed: the receive ends with its status, the rest of the message is dropped. */
static void tc_tcp_sink_failed(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_status_t st)
{
    tc_tp_req_t *req = ep->rx_req;
    ep->rx_discard += ep->rx_dst_left;
    ep->rx_dst_left = 0;
    ep->rx_req = NULL;
    ep->rx_sink = 0;
    ep->rx_carry_len = 0;
    tc_tcp_req_complete(ctx, req, st, 0);
}

void tc_tcp_sink_feed(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, const unsigned char *p, size_t n,
                      int last)
{
    tc_tp_req_t *req = ep->rx_req;
    const tc_tp_sink_t *sink = tc_tcp_sink_of(req);
    size_t unit = sink->unit;
    size_t align = unit < TC_TCP_SINK_ALIGN ? unit : TC_TCP_SINK_ALIGN;
    size_t off = (size_t)req->priv[TC_TCP_P_OFF];
    /* p is in the stage: writable, and what lies before it is consumed */
    unsigned char *q = (unsigned char *)(uintptr_t)p;
    if (ep->rx_carry_len > 0) { /* the start of this piece, left by the previous read */
        q -= ep->rx_carry_len;
        memcpy(q, ep->rx_carry, ep->rx_carry_len);
        n += ep->rx_carry_len;
        ep->rx_carry_len = 0;
    }
    size_t mis = (uintptr_t)q % align; /* the stage is aligned: q - mis is inside it */
    if (mis != 0) {                    /* once per message: its payload began after a header */
        memmove(q - mis, q, n);
        q -= mis;
    }
    size_t whole = last ? n : n - n % unit;
    if (whole > 0) {
        tc_status_t st = sink->fn(sink->arg, off, q, whole);
        if (st != TC_OK) {
            tc_tcp_sink_failed(ctx, ep, st);
            return;
        }
        off += whole;
    }
    memcpy(ep->rx_carry, q + whole, n - whole);
    ep->rx_carry_len = n - whole;
    req->priv[TC_TCP_P_OFF] = off;
}

void tc_tcp_sink_deliver(tc_tcp_ctx_t *ctx, tc_tp_req_t *req, const unsigned char *data, uint64_t n,
                         uint64_t len)
{
    const tc_tp_sink_t *sink = tc_tcp_sink_of(req);
    tc_status_t st = TC_OK;
    /* in pieces of the staging area's size, as if read now */
    for (uint64_t off = 0; off < n && st == TC_OK; off += TC_TCP_STAGE_LEN) {
        uint64_t k = n - off < TC_TCP_STAGE_LEN ? n - off : TC_TCP_STAGE_LEN;
        st = sink->fn(sink->arg, (size_t)off, data + off, (size_t)k);
    }
    if (st != TC_OK)
        tc_tcp_req_complete(ctx, req, st, 0);
    else
        tc_tcp_req_complete(ctx, req, len > n ? TC_ERR_TRUNCATED : TC_OK, (size_t)n);
}
