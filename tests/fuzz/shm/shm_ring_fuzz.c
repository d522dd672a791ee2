/* Fuzz the shm receive side: the cells a peer writes into the shared ring (shm_rx.c: eager,
 * pipelined and rendezvous messages, acknowledgements, puts, signals, get requests and get
 * data) and the tail counter it publishes.
 *
 * The endpoint is the backend's own (state UP, after the handshake) with its rings in the
 * harness's memory: the harness plays the peer, writes cells into the receive ring, publishes
 * the tail, lets the endpoint read, and empties the send ring (the endpoint's answers).
 * Input: 8 bytes of set-up, then cells, each a 64-byte header (shm_layout.h) followed by as
 * many payload bytes as its len field says (at most the cell size, 256):
 *   s[0] bits 0-2: receives posted first (receive i: tag i % 4, capacity 8 s[1+i], at most 5);
 *        bit 3: this side may read the peer's memory (single copy; the peer is this process);
 *        bit 4: a get of 300 bytes (cookie 1) waits for its data; bit 5: a put of 100 bytes
 *        (cookie 2 or 1) waits for its ack; bit 6: receives posted after the cells take the
 *        unexpected messages
 *   s[6]: with s[7] bit 7, a last tail is published, beyond the cells written by s[6] + 1
 *   s[7] bits 0-3: cells published per round - 1; bit 4: the peer withdrew the single-copy
 *        messages it announces in the first 16 RTS cells (their cookies in its row of the
 *        segment header, shm_layout.h), and the endpoint sweeps its unexpected ones each round
 * The peer may address the registered range of 4096 bytes with key 1.
 *
 * Properties, besides ASan's: the receive state stays within bounds; requests complete with a
 * status a receive can get and never more bytes than their capacity; eager messages before any
 * other cell are a reference: each goes to the receives of its tag in order, with its bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tcomms/base/log.h"
#include "tcomms/transport/shm.h"
#include "tcomms/transport/shm_layout.h"
#include "tcomms/transport/transport.h"
#include "transport/shm/src/shm_internal.h"

#define SELF 1000000
#define PEER 7
#define CELL 256
#define NCELLS 16
#define STRIDE (TC_SHM_CELL_HDR + CELL)
#define MEM_LEN 4096
#define NPRE 5
#define NPOST 16
#define NMODEL 64

static tc_tp_ctx_t *g_ctx;

static void init_once(void)
{
    tc_tp_ctx_params_t p = TC_TP_CTX_PARAMS_INIT;
    tc_tp_mem_t *mem;
    if (g_ctx != NULL)
        return;
    tc_log_configure("none");
    p.self_id = SELF;
    unsigned char *region = calloc(1, MEM_LEN); /* on the heap: ASan guards its ends */
    if (tc_tp_ctx_create(&tc_tp_shm_ops, &p, &g_ctx) != TC_OK || region == NULL ||
        tc_tp_mem_reg(g_ctx, region, MEM_LEN, &mem) != TC_OK || ((tc_shm_mem_t *)mem)->key != 1)
        abort();
}

typedef struct {
    uint64_t tag, len;
    const uint8_t *data;
} msg_t;

/* Eager messages before any other cell (the cells as the harness will write them). */
static int model(const uint8_t *s, size_t n, msg_t *m)
{
    size_t pos = 0;
    int k = 0;
    while (k < NMODEL && n - pos >= TC_SHM_CELL_HDR) {
        tc_shm_cell_hdr_t h;
        memcpy(&h, s + pos, sizeof(h));
        if (h.type != TC_SHM_T_EAGER || h.len > CELL || n - pos - TC_SHM_CELL_HDR < h.len)
            break;
        m[k].tag = h.tag;
        m[k].len = h.len;
        m[k].data = s + pos + TC_SHM_CELL_HDR;
        k++;
        pos += TC_SHM_CELL_HDR + (size_t)h.len;
    }
    return k;
}

static void check_state(const tc_shm_ep_t *ep)
{
    if (ep->state != TC_SHM_EP_UP)
        return;
    if (ep->rx_active && (ep->rx_off >= ep->rx_total || ep->rx_total > TC_TP_SHM_MAX_MSG))
        abort();
    if (ep->rx.pos > ep->rx.seen || ep->rx.seen - ep->rx.pos > NCELLS)
        abort();
    for (const tc_shm_unexp_t *u = ep->uq_head; u != NULL; u = u->next)
        if (u->total > TC_TP_SHM_MAX_MSG || (u->withdrawn && !u->rts))
            abort();
}

static int status_ok(tc_status_t st)
{
    return st == TC_INPROGRESS || st == TC_OK || st == TC_ERR_TRUNCATED ||
           st == TC_ERR_PROTOCOL || st == TC_ERR_PEER_FAILED || st == TC_ERR_NO_MEMORY ||
           st == TC_ERR_ABORTED || st == TC_ERR_SYSTEM;
}

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
        abort(); /* it was in the ring before anything that could fail the endpoint */
}

/* Ring @p r over @p lines (head, tail) and @p cells. */
static void ring_init(tc_shm_ring_t *r, uint64_t *lines, unsigned char *cells)
{
    memset(r, 0, sizeof(*r));
    r->head = &lines[0];
    r->tail = &lines[TC_SHM_LINE / 8];
    r->cells = cells;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static msg_t m[NMODEL];
    static uint64_t rx_lines[16], tx_lines[16];
    static tc_shm_seg_hdr_t hdr; /* the peer's withdrawals are all the endpoint reads of it */
    uint8_t *pre_buf[NPRE] = {0}, *post_buf[NPOST] = {0};
    tc_tp_req_t pre[NPRE], post[NPOST], rma[2];
    unsigned char get_buf[300], put_buf[100];

    if (size < 8)
        return 0;
    init_once();
    const uint8_t *s = data + 8;
    size_t n = size - 8;
    int npre = data[0] & 7;
    npre = npre > NPRE ? NPRE : npre;
    int nmsg = model(s, n, m);
    tc_shm_ctx_t *ctx = (tc_shm_ctx_t *)g_ctx;
    ctx->next_cookie = 1; /* the same cookies for every input */

    unsigned char *rx_cells = calloc(NCELLS, STRIDE), *tx_cells = calloc(NCELLS, STRIDE);
    tc_shm_ep_t *ep = calloc(1, sizeof(*ep));
    if (rx_cells == NULL || tx_cells == NULL || ep == NULL)
        abort();
    memset(rx_lines, 0, sizeof(rx_lines));
    memset(tx_lines, 0, sizeof(tx_lines));
    ep->super.ops = &tc_tp_shm_ops;
    ep->super.ctx = g_ctx;
    ep->super.peer_id = PEER;
    ep->super.failed = TC_OK;
    ep->state = TC_SHM_EP_UP;
    ep->side = 1;
    ep->peer_pid = getpid();
    ep->peer_nonce = 42;
    ep->pidfd = -1;
    strcpy(ep->name, "/tcomms-fuzz");
    ep->cell_size = CELL;
    ep->ncells = NCELLS;
    ep->stride = STRIDE;
    ep->cma_local = (data[0] & 0x08) != 0;
    ring_init(&ep->rx, rx_lines, rx_cells);
    ring_init(&ep->tx, tx_lines, tx_cells);
    memset(&hdr, 0, sizeof(hdr));
    ep->hdr = &hdr;
    for (size_t at = 0, k = 0;
         (data[7] & 0x10) && n - at >= TC_SHM_CELL_HDR && k < TC_SHM_WITHDRAW_SLOTS;) {
        tc_shm_cell_hdr_t h;
        memcpy(&h, s + at, sizeof(h));
        if (h.type == TC_SHM_T_RTS) {
            hdr.withdrawn[0][k++] = h.cookie;
            hdr.withdraws[0]++;
        }
        size_t body = h.len < CELL ? (size_t)h.len : CELL; /* as the cells are written below */
        at += TC_SHM_CELL_HDR + (body < n - at - TC_SHM_CELL_HDR ? body : n - at - TC_SHM_CELL_HDR);
    }

    for (int i = 0; i < npre; i++) {
        size_t cap = 8u * data[1 + i];
        pre_buf[i] = malloc(cap ? cap : 1);
        pre[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        if (tc_tp_recv(&ep->super, (uint64_t)(i % 4), cap ? pre_buf[i] : NULL, cap, &pre[i]) !=
            TC_OK)
            abort();
    }
    /* one-sided requests of this side through the ring, waiting for the peer's answers */
    unsigned char blob[TC_TP_SHM_RKEY_LEN];
    uint32_t magic = TC_SHM_RKEY_MAGIC;
    int32_t pid = (int32_t)getpid();
    static unsigned char remote[4096]; /* the peer is this process: single copies land here */
    uint64_t nonce = 42, key = 9, addr = (uintptr_t)remote, klen = sizeof(remote);
    memcpy(blob, &magic, 4);
    memcpy(blob + 4, &pid, 4);
    memcpy(blob + 8, &nonce, 8);
    memcpy(blob + 16, &key, 8);
    memcpy(blob + 24, &addr, 8);
    memcpy(blob + 32, &klen, 8);
    tc_tp_rkey_t *rkey;
    if (tc_tp_rkey_unpack(&ep->super, blob, sizeof(blob), &rkey) != TC_OK)
        abort();
    memset(put_buf, 0x5a, sizeof(put_buf));
    rma[0] = rma[1] = (tc_tp_req_t)TC_TP_REQ_INIT;
    if (((data[0] & 0x10) &&
         tc_tp_get(&ep->super, get_buf, sizeof(get_buf), rkey, 8, &rma[0]) != TC_OK) ||
        ((data[0] & 0x20) &&
         tc_tp_put(&ep->super, put_buf, sizeof(put_buf), rkey, 0, &rma[1]) != TC_OK))
        abort();

    /* play the peer: write cells, publish, let the endpoint read, take its answers */
    size_t pos = 0;
    uint64_t prod = 0;
    unsigned batch = (data[7] & 15u) + 1;
    for (int round = 0; round < 4096 && ep->state == TC_SHM_EP_UP; round++) {
        unsigned k = 0;
        while (k < batch && n - pos >= TC_SHM_CELL_HDR && prod - *ep->rx.head < NCELLS) {
            unsigned char *cell = rx_cells + (prod % NCELLS) * STRIDE;
            tc_shm_cell_hdr_t h;
            memcpy(&h, s + pos, sizeof(h));
            size_t body = h.len < CELL ? (size_t)h.len : CELL;
            body = body < n - pos - TC_SHM_CELL_HDR ? body : n - pos - TC_SHM_CELL_HDR;
            memcpy(cell, s + pos, TC_SHM_CELL_HDR + body);
            pos += TC_SHM_CELL_HDR + body;
            prod++;
            k++;
        }
        int last = n - pos < TC_SHM_CELL_HDR;
        __atomic_store_n(ep->rx.tail, prod, __ATOMIC_RELEASE);
        int got = tc_shm_ep_read(ctx, ep);
        if ((data[7] & 0x10) && ep->state == TC_SHM_EP_UP)
            tc_shm_withdraw_sweep(ctx, ep);
        check_state(ep);
        *ep->tx.head = *ep->tx.tail; /* the peer takes whatever the endpoint wrote */
        tc_shm_ep_flush(ctx, ep);
        *ep->tx.head = *ep->tx.tail;
        if (last && got == 0)
            break;
    }
    if ((data[7] & 0x80) && ep->state == TC_SHM_EP_UP) {
        /* a lie once the cells are read: a tail beyond the cells written */
        __atomic_store_n(ep->rx.tail, prod + data[6] + 1, __ATOMIC_RELEASE);
        tc_shm_ep_read(ctx, ep);
        check_state(ep);
    }

    int seen[4] = {0}, used[NMODEL] = {0};
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
            size_t cap = (size_t)(m[j].len / 2 + (j & 1) * m[j].len);
            post_buf[npost] = malloc(cap ? cap : 1);
            post[npost] = (tc_tp_req_t)TC_TP_REQ_INIT;
            tc_status_t st = tc_tp_recv(&ep->super, m[j].tag, cap ? post_buf[npost] : NULL, cap,
                                        &post[npost]);
            if (st != TC_OK || post[npost].status == TC_INPROGRESS)
                abort(); /* a whole message is kept, in order, even after a failure */
            check_recv(&post[npost], post_buf[npost], cap, &m[j]);
            npost++;
        }
    }
    for (int i = 0; i < 2; i++)
        if (!status_ok(rma[i].status) ||
            (rma[i].status == TC_OK && rma[i].bytes != (i == 0 ? sizeof(get_buf) : sizeof(put_buf))))
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
    free(rx_cells);
    free(tx_cells);
    return 0;
}
