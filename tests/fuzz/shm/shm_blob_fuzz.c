/* Fuzz the blobs an shm peer publishes through the bootstrap: its address (48 bytes: magic,
 * version, pid, id, nonce, probe address, pid namespace; unpacked by tc_tp_ep_connect) and its
 * remote keys (40 bytes, tc_tp_rkey_unpack).
 *
 * Connecting to a valid address makes the pair's segment (this context connects first: the peer
 * never does), of the smallest geometry (4 cells of 64 bytes), which closing removes.
 *
 * Properties: an address is accepted exactly when its length, magic, version, id, pid and pid
 * namespace are right; a key exactly when its length, magic, pid and nonce are the endpoint's
 * peer's and its range does not wrap, and the unpacked key covers the length it carries; this
 * context's own address and keys are accepted (decode(encode(x)) keeps the length). The input
 * is tried as is and with the fixed fields patched in, to reach the checks behind them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tcomms/base/config.h"
#include "tcomms/base/log.h"
#include "tcomms/transport/shm.h"
#include "tcomms/transport/transport.h"

#define SELF 1000000
#define PEER 7
#define ADDR_MAGIC 0x4d534354u /* "TCSM" */
#define RKEY_MAGIC 0x4b4d5354u /* "TSMK" */
#define ADDR_VERSION 2

static tc_tp_ctx_t *g_ctx;
static tc_tp_ep_t *g_ep; /* to PEER, whose address is this context's own with PEER's id */
static unsigned char g_addr[TC_TP_SHM_ADDR_LEN], g_key[TC_TP_SHM_RKEY_LEN];
static uint64_t g_pidns;

static void init_once(void)
{
    static unsigned char region[256];
    tc_tp_ctx_params_t p = TC_TP_CTX_PARAMS_INIT;
    tc_tp_mem_t *mem;
    struct stat sb;
    size_t len;
    uint64_t peer = PEER;
    if (g_ctx != NULL)
        return;
    tc_log_configure("none");
    g_pidns = stat("/proc/self/ns/pid", &sb) == 0 ? (uint64_t)sb.st_ino : 0;
    p.self_id = SELF;
    static tc_hints_t hints;
    tc_hints_init(&hints);
    if (tc_hints_parse(&hints, "shm_cells=4,shm_cell_size=64") != TC_OK)
        abort();
    p.hints = &hints;
    if (tc_tp_ctx_create(&tc_tp_shm_ops, &p, &g_ctx) != TC_OK ||
        tc_tp_addr_pack(g_ctx, g_addr, sizeof(g_addr), &len) != TC_OK || len != sizeof(g_addr))
        abort();
    memcpy(g_addr + 16, &peer, 8);
    if (tc_tp_ep_connect(g_ctx, PEER, g_addr, sizeof(g_addr), &g_ep) != TC_OK ||
        tc_tp_mem_reg(g_ctx, region, sizeof(region), &mem) != TC_OK ||
        tc_tp_rkey_pack(mem, g_key, sizeof(g_key), &len) != TC_OK || len != sizeof(g_key))
        abort();
}

static void check_addr(const uint8_t *a, size_t len, uint64_t peer)
{
    uint32_t magic = 0;
    uint16_t version = 0;
    int32_t pid = 0;
    uint64_t id = 0, pidns = 0;
    tc_tp_ep_t *ep = NULL;
    if (len == TC_TP_SHM_ADDR_LEN) {
        memcpy(&magic, a, 4);
        memcpy(&version, a + 4, 2);
        memcpy(&pid, a + 8, 4);
        memcpy(&id, a + 16, 8);
        memcpy(&pidns, a + 40, 8);
    }
    int valid = len == TC_TP_SHM_ADDR_LEN && magic == ADDR_MAGIC && version == ADDR_VERSION &&
                id == peer && pid > 0;
    int ns_unknown = valid && pidns != 0 && pidns != g_pidns; /* refused if the ctx knows its */
    tc_status_t st = tc_tp_ep_connect(g_ctx, peer, a, len, &ep);
    if (ns_unknown ? (st == TC_OK && g_pidns != 0) : (st == TC_OK) != valid)
        abort();
    if (st == TC_OK) {
        if (ep == NULL || ep->peer_id != peer)
            abort();
        tc_tp_ep_close(ep);
    }
}

static void check_rkey(const uint8_t *k, size_t len)
{
    uint32_t magic = 0;
    int32_t pid = 0, own_pid;
    uint64_t nonce = 0, own_nonce, addr = 0, klen = 0;
    tc_tp_rkey_t *rkey = NULL;
    memcpy(&own_pid, g_addr + 8, 4);
    memcpy(&own_nonce, g_addr + 24, 8);
    if (len == TC_TP_SHM_RKEY_LEN) {
        memcpy(&magic, k, 4);
        memcpy(&pid, k + 4, 4);
        memcpy(&nonce, k + 8, 8);
        memcpy(&addr, k + 24, 8);
        memcpy(&klen, k + 32, 8);
    }
    int valid = len == TC_TP_SHM_RKEY_LEN && magic == RKEY_MAGIC && pid == own_pid &&
                nonce == own_nonce && klen <= UINTPTR_MAX - addr && !(addr == 0 && klen > 0);
    tc_status_t st = tc_tp_rkey_unpack(g_ep, k, len, &rkey);
    if ((st == TC_OK) != valid)
        abort();
    if (st == TC_OK) {
        if (rkey == NULL || rkey->ep != g_ep || rkey->len != klen)
            abort();
        tc_tp_rkey_release(rkey);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t buf[64];
    uint64_t other = PEER + 1;
    init_once();
    memcpy(buf, g_addr, sizeof(g_addr)); /* this context's own address, under another id */
    memcpy(buf + 16, &other, 8);
    check_addr(buf, sizeof(g_addr), other);
    check_rkey(g_key, sizeof(g_key));

    check_addr(data, size, PEER + 2);
    check_rkey(data, size);
    if (size <= sizeof(buf)) {
        memcpy(buf, data, size);
        if (size == TC_TP_SHM_ADDR_LEN) {
            uint32_t magic = ADDR_MAGIC;
            uint16_t version = ADDR_VERSION;
            uint64_t id = PEER + 3;
            memcpy(buf, &magic, 4);
            memcpy(buf + 4, &version, 2);
            memcpy(buf + 16, &id, 8);
            check_addr(buf, size, PEER + 3);
        }
        if (size == TC_TP_SHM_RKEY_LEN) {
            uint32_t magic = RKEY_MAGIC;
            memcpy(buf, &magic, 4);
            memcpy(buf + 4, g_addr + 8, 4);  /* pid */
            memcpy(buf + 8, g_addr + 24, 8); /* nonce */
            check_rkey(buf, size);
        }
    }
    return 0;
}
