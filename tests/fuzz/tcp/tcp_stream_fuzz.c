/* Fuzz the TCP data path: the bytes a peer writes on an established connection (message
 * headers, striped-message headers and chunks, one-sided requests and answers), parsed by
 * tcp_rx.c, tcp_stripe.c and tcp_rma.c.
 *
 * The endpoint is the backend's own (its structures, state UP, after the handshake) and reads
 * one end of a socketpair; the harness writes the stream to the other end in pieces and lets
 * the endpoint read after each, then ends the stream. Input: 8 bytes of set-up, then the stream:
 *   s[0] bits 0-2: receives posted before the stream (receive i: tag i % 4, capacity 8 s[1+i],
 *                  at most 6; into a sink of unit 8 when s[1+i] is odd); bit 3: a get of 64 bytes
 * is waiting for its answer; bit 4: a put of 100 bytes; bit 5: a signal; bit 6: receives posted
 * after the stream end take the unexpected messages; bit 7: the stream is split after every (s[7] &
 * 0x7f) + 1 bytes (else written whole) s[7] bit 7: the pair has two rails (chunks on a grid,
 * re-sent chunks, chunk acks, lane down) The peer may address the registered range of 4096 bytes
 * with key 1 << 32 (slot 0, gen 1).
 *
 * Properties, besides ASan's (no byte read or written outside a buffer, no leak):
 * - the parser's state stays within bounds after every piece;
 * - every request completes with a status from the list a receive can get, never with more
 *   bytes than its capacity;
 * - a sink gets its pieces in order, without gaps, inside the capacity, on its unit (only the
 *   last one short), and none after its receive completed;
 * - plain messages (kind 0), up to the first header of another kind, are a reference: every
 *   such message that arrived whole goes to the receives of its tag in order, with its bytes
 *   (truncated to the capacity). */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcomms/base/log.h"
#include "tcomms/transport/tcp.h"
#include "tcomms/transport/transport.h"
#include "transport/tcp/tcp_internal.h"

#define SELF 1000000
#define PEER 7
#define MEM_LEN 4096
#define NPRE 6
#define NPOST 16
#define NMODEL 64

static tc_tp_ctx_t *g_ctx;
static unsigned char *g_mem;

static void init_once(void)
{
    if (g_ctx != NULL)
        return;
    tc_log_configure("none");
    tc_tp_ctx_params_t p = TC_TP_CTX_PARAMS_INIT;
    tc_tp_mem_t *mem;
    p.self_id = SELF;
    if (tc_tp_ctx_create(&tc_tp_tcp_ops, &p, &g_ctx) != TC_OK)
        abort();
    g_mem = calloc(1, MEM_LEN); /* on the heap: ASan guards its ends */
    if (g_mem == NULL || tc_tp_mem_reg(g_ctx, g_mem, MEM_LEN, &mem) != TC_OK)
        abort(); /* slot 0, generation 1: key 1 << 32, for the whole process */
}

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Plain messages that arrived whole, in stream order, up to the first other header. */
typedef struct {
    uint64_t tag, len;
    const uint8_t *data;
} msg_t;

static int model(const uint8_t *s, size_t n, msg_t *m)
{
    size_t pos = 0;
    int k = 0;
    while (k < NMODEL && n - pos >= TC_TCP_HDR_LEN) {
        uint64_t word = le64(s + pos + 8);
        if (word >> 56 != 0 || word > (1u << 20) || n - pos - TC_TCP_HDR_LEN < word)
            break; /* another kind, a length that may not be buffered, or cut */
        m[k].tag = le64(s + pos);
        m[k].len = word;
        m[k].data = s + pos + TC_TCP_HDR_LEN;
        k++;
        pos += TC_TCP_HDR_LEN + (size_t)word;
    }
    return k;
}

static void check_state(const tc_tcp_ep_t *ep)
{
    if (ep->state != TC_TCP_EP_UP)
        return;
    if (ep->rx_hdr_got >= TC_TCP_RMA_HDR_LEN)
        abort();
    if (ep->rx_state == TC_TCP_RX_PAYLOAD &&
        (ep->rx_dst_left > ep->rx_len || ep->rx_discard > ep->rx_len - ep->rx_dst_left))
        abort();
    for (const tc_tcp_unexp_t *u = ep->uq_head; u != NULL; u = u->next)
        if (u->len > TC_TP_TCP_MAX_MSG)
            abort();
    for (const tc_tcp_lrx_t *l = ep->lrx_head; l != NULL; l = l->next)
        if (l->len == 0 || l->len > TC_TP_TCP_MAX_MSG || l->begun > l->len || l->done > l->begun ||
            l->id > ep->rx_last_id)
            abort();
}

static int status_ok(tc_status_t st)
{
    return st == TC_INPROGRESS || st == TC_OK || st == TC_ERR_TRUNCATED || st == TC_ERR_PROTOCOL ||
           st == TC_ERR_PEER_FAILED || st == TC_ERR_NO_MEMORY || st == TC_ERR_ABORTED;
}

/* A receive of capacity @p cap for model message @p m (NULL: none arrived whole). */
static void check_recv(const tc_tp_req_t *r, const uint8_t *buf, size_t cap, const msg_t *m)
{
    if (!status_ok(r->status) || (r->status != TC_INPROGRESS && r->bytes > cap))
        abort();
    if (m == NULL)
        return;
    if (r->status == TC_OK && (r->bytes != m->len || memcmp(buf, m->data, r->bytes) != 0))
        abort();
    if (r->status == TC_ERR_TRUNCATED &&
        (m->len <= cap || r->bytes != cap || memcmp(buf, m->data, cap) != 0))
        abort();
    if (r->status != TC_OK && r->status != TC_ERR_TRUNCATED)
        abort(); /* it arrived whole before anything that could fail the endpoint */
}

/* A sink that copies its pieces to a buffer, so that check_recv() sees them like a receive's. */
typedef struct {
    uint8_t *buf;
    size_t cap, next;
    int short_seen;
    const tc_tp_req_t *req;
} copy_sink_t;

#define SINK_UNIT 8

static tc_status_t copy_fn(void *arg, size_t off, const void *data, size_t len)
{
    copy_sink_t *k = arg;
    if (off != k->next || len == 0 || len > k->cap - off || off % SINK_UNIT != 0 ||
        (uintptr_t)data % SINK_UNIT != 0 || k->short_seen || k->req->status != TC_INPROGRESS)
        abort();
    k->short_seen = len % SINK_UNIT != 0;
    memcpy(k->buf + off, data, len);
    k->next = off + len;
    return TC_OK;
}

static void drain(int fd)
{
    static unsigned char sink[65536];
    while (recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0) {
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static msg_t m[NMODEL];
    uint8_t *pre_buf[NPRE] = {0}, *post_buf[NPOST] = {0};
    copy_sink_t pre_sink[NPRE];
    tc_tp_sink_t pre_tp[NPRE];
    tc_tp_req_t pre[NPRE], post[NPOST], rma[3];
    unsigned char get_buf[64], put_buf[100];
    int sv[2];

    if (size < 8)
        return 0;
    init_once();
    const uint8_t *s = data + 8;
    size_t n = size - 8;
    int npre = data[0] & 7;
    npre = npre > NPRE ? NPRE : npre;
    int nmsg = model(s, n, m);

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
        abort();
    tc_tcp_ep_t *ep = calloc(1, sizeof(*ep));
    if (ep == NULL)
        abort();
    ep->super.ops = &tc_tp_tcp_ops;
    ep->super.ctx = g_ctx;
    ep->super.peer_id = PEER;
    ep->super.failed = TC_OK;
    ep->poll.kind = TC_TCP_POLL_EP;
    ep->poll.owner = ep;
    ep->fd = sv[0];
    ep->nsocks = 1;
    ep->nrails = (data[7] & 0x80) ? 2 : 1; /* chunk grid, re-sent flag, chunk acks, lane down */
    ep->state = TC_TCP_EP_UP;
    ep->rx_state = TC_TCP_RX_HDR;
    strcpy(ep->peer_str, "fuzz");

    for (int i = 0; i < npre; i++) {
        size_t cap = 8u * data[1 + i];
        pre_buf[i] = malloc(cap ? cap : 1);
        pre[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        pre_sink[i] = (copy_sink_t){pre_buf[i], cap, 0, 0, &pre[i]};
        pre_tp[i] = (tc_tp_sink_t){copy_fn, &pre_sink[i], SINK_UNIT};
        tc_status_t st =
            (data[1 + i] & 1)
                ? tc_tp_recv_sink(&ep->super, (uint64_t)(i % 4), &pre_tp[i], cap, &pre[i])
                : tc_tp_recv(&ep->super, (uint64_t)(i % 4), cap ? pre_buf[i] : NULL, cap, &pre[i]);
        if (st != TC_OK)
            abort();
    }
    /* one-sided requests of this side, written whole, waiting for the peer's answers */
    unsigned char blob[TC_TCP_RKEY_LEN];
    tc_tcp_put_u32(blob, TC_TCP_RKEY_MAGIC);
    tc_tcp_put_u32(blob + 4, 1);
    tc_tcp_put_u64(blob + 8, PEER);
    tc_tcp_put_u64(blob + 16, 0x500000003ull);
    tc_tcp_put_u64(blob + 24, 1u << 20);
    tc_tp_rkey_t *rkey;
    if (tc_tp_rkey_unpack(&ep->super, blob, sizeof(blob), &rkey) != TC_OK)
        abort();
    memset(put_buf, 0x5a, sizeof(put_buf));
    for (int i = 0; i < 3; i++)
        rma[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
    if (((data[0] & 0x08) &&
         tc_tp_get(&ep->super, get_buf, sizeof(get_buf), rkey, 8, &rma[0]) != TC_OK) ||
        ((data[0] & 0x10) &&
         tc_tp_put(&ep->super, put_buf, sizeof(put_buf), rkey, 0, &rma[1]) != TC_OK) ||
        ((data[0] & 0x20) &&
         tc_tp_signal(&ep->super, rkey, 16, TC_TP_SIGNAL_ADD, 3, &rma[2]) != TC_OK))
        abort();

    size_t piece = (data[0] & 0x80) ? (size_t)(data[7] & 0x7f) + 1 : n;
    for (size_t off = 0; off < n && ep->state == TC_TCP_EP_UP; off += piece) {
        size_t k = n - off < piece ? n - off : piece;
        if (send(sv[1], s + off, k, MSG_NOSIGNAL) != (ssize_t)k)
            abort(); /* the endpoint is up and inputs fit the socket buffer */
        tc_tcp_ep_read((tc_tcp_ctx_t *)g_ctx, ep, 0); /* stops at a short read: all was read */
        check_state(ep);
        drain(sv[1]);
    }
    shutdown(sv[1], SHUT_WR);
    tc_tcp_ep_read((tc_tcp_ctx_t *)g_ctx, ep, 1);
    if (ep->state == TC_TCP_EP_UP)
        abort(); /* the end of the stream fails the endpoint */

    /* the reference: the k-th whole message of a tag goes to the k-th receive of that tag */
    int seen[4] = {0};
    int used[NMODEL] = {0};
    for (int i = 0; i < npre; i++) {
        const msg_t *want = NULL;
        for (int j = 0, c = 0; j < nmsg; j++) {
            if (m[j].tag != (uint64_t)(i % 4) || c++ != seen[i % 4])
                continue;
            want = &m[j];
            used[j] = 1;
            break;
        }
        seen[i % 4]++;
        check_recv(&pre[i], pre_buf[i], 8u * data[1 + i], want);
    }
    int npost = 0;
    if (data[0] & 0x40) {
        for (int j = 0; j < nmsg && npost < NPOST; j++) {
            if (used[j] || m[j].tag > 3)
                continue;
            size_t cap = (size_t)(m[j].len / 2 + (j & 1) * m[j].len); /* truncate every other */
            post_buf[npost] = malloc(cap ? cap : 1);
            post[npost] = (tc_tp_req_t)TC_TP_REQ_INIT;
            tc_status_t st =
                tc_tp_recv(&ep->super, m[j].tag, cap ? post_buf[npost] : NULL, cap, &post[npost]);
            if (st != TC_OK || post[npost].status == TC_INPROGRESS)
                abort(); /* a whole message is kept after the failure, in order */
            check_recv(&post[npost], post_buf[npost], cap, &m[j]);
            npost++;
        }
    }
    for (int i = 0; i < 3; i++)
        if (!status_ok(rma[i].status) || (rma[i].status == TC_OK && i == 0 && rma[i].bytes != 64))
            abort();

    tc_tp_rkey_release(rkey);
    tc_tp_ep_close(&ep->super);
    for (int i = 0; i < npre; i++) {
        if (pre[i].status == TC_INPROGRESS)
            abort(); /* closing completes every request */
        free(pre_buf[i]);
    }
    for (int i = 0; i < npost; i++)
        free(post_buf[i]);
    close(sv[1]);
    return 0;
}
