/* Fuzz the blobs a TCP peer publishes through the bootstrap: its address (8 bytes, + 4 per rail
 * beyond the first; unpacked by
 * tc_tp_ep_connect) and its remote keys (32 bytes, tc_tp_rkey_unpack).
 *
 * The endpoints lead to smaller ids than this context's, so that connecting only parses the
 * address and waits for the peer (the smaller id connects): no socket is opened to what the
 * bytes name.
 *
 * Properties: an address is accepted exactly when it has 8, 12, 16 or 20 bytes (1 to 4 rails),
 * version 1 and family 4; a key
 * exactly when it has 32 bytes, the magic, version 1 and the endpoint's id as owner, and the
 * unpacked key covers the length it carries; this context's own address and keys are accepted
 * (decode(encode(x)) keeps the length). The input is tried as is and with the fixed fields
 * patched in, so that the checks behind them are reached. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/base/log.h"
#include "tcomms/transport/tcp.h"
#include "tcomms/transport/transport.h"

#define SELF 1000000 /* the larger id waits: connecting opens no socket */
#define PEER 7
#define RKEY_MAGIC 0x4b524354u /* "TCRK" */

static tc_tp_ctx_t *g_ctx;
static tc_tp_ep_t *g_ep; /* waits for PEER, never connected: only the key owner matters */
static unsigned char g_own_addr[64], g_own_key[64];
static size_t g_own_addr_len, g_own_key_len;

static uint64_t le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void init_once(void)
{
    static unsigned char region[256];
    tc_tp_ctx_params_t p = TC_TP_CTX_PARAMS_INIT;
    tc_tp_mem_t *mem;
    if (g_ctx != NULL)
        return;
    tc_log_configure("none");
    p.self_id = SELF;
    if (tc_tp_ctx_create(&tc_tp_tcp_ops, &p, &g_ctx) != TC_OK ||
        tc_tp_addr_pack(g_ctx, g_own_addr, sizeof(g_own_addr), &g_own_addr_len) != TC_OK ||
        tc_tp_ep_connect(g_ctx, PEER, g_own_addr, g_own_addr_len, &g_ep) != TC_OK ||
        tc_tp_mem_reg(g_ctx, region, sizeof(region), &mem) != TC_OK ||
        tc_tp_rkey_pack(mem, g_own_key, sizeof(g_own_key), &g_own_key_len) != TC_OK)
        abort();
    put_le(g_own_key + 8, PEER, 8); /* as if PEER had packed it */
}

static void check_addr(const uint8_t *a, size_t len, uint64_t peer)
{
    tc_tp_ep_t *ep = NULL;
    /* 8 bytes, and 4 more per rail beyond the first, at most 4 rails */
    int valid = len >= 8 && len <= 20 && (len - 8) % 4 == 0 && a[0] == 1 && a[1] == 4;
    tc_status_t st = tc_tp_ep_connect(g_ctx, peer, a, len, &ep);
    if ((st == TC_OK) != valid)
        abort();
    if (st == TC_OK) {
        if (ep == NULL || ep->peer_id != peer || ep->failed != TC_OK)
            abort();
        tc_tp_ep_close(ep);
    }
}

static void check_rkey(const uint8_t *k, size_t len)
{
    tc_tp_rkey_t *rkey = NULL;
    int valid = len == 32 && le(k, 4) == RKEY_MAGIC && le(k + 4, 4) == 1 && le(k + 8, 8) == PEER;
    tc_status_t st = tc_tp_rkey_unpack(g_ep, k, len, &rkey);
    if ((st == TC_OK) != valid)
        abort();
    if (st == TC_OK) {
        if (rkey == NULL || rkey->ep != g_ep || rkey->len != le(k + 24, 8))
            abort();
        tc_tp_rkey_release(rkey);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t buf[64];
    init_once();
    check_addr(g_own_addr, g_own_addr_len, PEER + 1);
    check_rkey(g_own_key, g_own_key_len);

    check_addr(data, size, PEER + 2);
    check_rkey(data, size);
    if (size <= sizeof(buf)) {
        memcpy(buf, data, size);
        if (size >= 2) {
            buf[0] = 1;
            buf[1] = 4;
            check_addr(buf, size, PEER + 3);
        }
        if (size >= 16) {
            put_le(buf, RKEY_MAGIC, 4);
            put_le(buf + 4, 1, 4);
            put_le(buf + 8, PEER, 8);
            check_rkey(buf, size);
        }
    }
    return 0;
}
