/* Fuzz the bodies of the bootstrap store's frames after joining (runtime/src/boot_store_body.c):
 * PUT, FENCE, GET and NOTIFY as the store takes them apart (boot_store.c), REPLY and EVENT as a
 * client does (bootstrap_env.c). Every input is given to all six.
 *
 * Input: s[0] % 64 + 1: the world size; s[1]: the sender's rank (taken modulo the world); then
 * the body.
 *
 * Properties, besides ASan's: each parser accepts exactly the bodies an independent model of
 * boot_store.h's format accepts; an accepted body's fields are its bytes, its views lie inside
 * it, and it re-encodes to the very same bytes (decode(encode(x)) == x); a refused store body
 * says why (TC_ERR_PROTOCOL and a text). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/src/boot_store.h"
#include "tcomms/base/log.h"
#include "tcomms/base/status.h"
#include "tcomms/runtime/bootstrap.h"

static uint64_t le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static size_t put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
    return (size_t)n;
}

static int inside(const uint8_t *view, size_t n, const uint8_t *b, size_t len)
{
    return n == 0 || (view >= b && view + n <= b + len);
}

static void refused(tc_status_t rc)
{
    if (rc != TC_ERR_PROTOCOL || tc_last_error()[0] == '\0')
        abort();
}

/* A key at @p b (of @p len bytes): its length, or 0 when malformed. */
static size_t model_key(const uint8_t *b, size_t len)
{
    if (len < 2)
        return 0;
    size_t k = (size_t)le(b, 2);
    if (k == 0 || k > TC_BS_MAX_KEY || len - 2 < k || memchr(b + 2, 0, k) != NULL)
        return 0;
    return k;
}

static void fuzz_put(const uint8_t *b, size_t len, uint8_t *again)
{
    tc_bs_put_t p;
    tc_status_t rc = tc_boot_store_put_parse(b, len, &p);
    size_t k = model_key(b, len);
    int ok = k > 0 && len - 2 - k >= 4 && le(b + 2 + k, 4) <= TC_BS_MAX_VALUE &&
             len - 2 - k - 4 == le(b + 2 + k, 4);
    if ((rc == TC_OK) != ok)
        abort();
    if (!ok) {
        refused(rc);
        return;
    }
    if (p.klen != k || !inside(p.key, p.klen, b, len) || !inside(p.val, p.vlen, b, len))
        abort();
    size_t n = put_le(again, p.klen, 2);
    memcpy(again + n, p.key, p.klen);
    n += p.klen;
    n += put_le(again + n, p.vlen, 4);
    if (p.vlen)
        memcpy(again + n, p.val, p.vlen);
    n += p.vlen;
    if (n != len || memcmp(again, b, len) != 0)
        abort();
}

static void fuzz_fence(const uint8_t *b, size_t len)
{
    tc_bs_fence_t f;
    tc_status_t rc = tc_boot_store_fence_parse(b, len, &f);
    if ((rc == TC_OK) != (len == 20))
        abort();
    if (rc != TC_OK) {
        refused(rc);
        return;
    }
    if (f.req != le(b, 8) || f.seq != le(b + 8, 8) || f.wait_ms != le(b + 16, 4))
        abort();
}

static void fuzz_get(const uint8_t *b, size_t len, uint8_t *again)
{
    tc_bs_get_t g;
    tc_status_t rc = tc_boot_store_get_parse(b, len, &g);
    size_t k = len >= 12 ? model_key(b + 12, len - 12) : 0;
    int ok = k > 0 && len == 14 + k;
    if ((rc == TC_OK) != ok)
        abort();
    if (!ok) {
        refused(rc);
        return;
    }
    if (!inside(g.key, g.klen, b, len))
        abort();
    size_t n = put_le(again, g.req, 8);
    n += put_le(again + n, g.rank, 4);
    n += put_le(again + n, g.klen, 2);
    memcpy(again + n, g.key, g.klen);
    n += g.klen;
    if (n != len || memcmp(again, b, len) != 0)
        abort();
}

static void fuzz_notify(const uint8_t *b, size_t len, uint32_t world, uint32_t sender)
{
    tc_bs_notice_t v;
    tc_status_t rc = tc_boot_store_notify_parse(b, len, world, sender, &v);
    int ok = len == 12;
    if (ok) {
        uint32_t kind = (uint32_t)le(b, 4), rank = (uint32_t)le(b + 4, 4);
        uint32_t comm = (uint32_t)le(b + 8, 4);
        ok = rank < world && ((kind == TC_BOOT_EV_REVOKE && rank == sender) ||
                              (kind == TC_BOOT_EV_PROC_FAILED && rank != sender && comm <= 1));
    }
    if ((rc == TC_OK) != ok)
        abort();
    if (!ok) {
        refused(rc);
        return;
    }
    if (v.kind != le(b, 4) || v.rank != le(b + 4, 4) || v.comm_id != le(b + 8, 4) ||
        v.from != sender)
        abort();
}

static void fuzz_reply(const uint8_t *b, size_t len)
{
    tc_bs_reply_t r;
    int got = tc_boot_store_reply_parse(b, len, &r);
    int ok = len >= 16 && le(b + 12, 4) == len - 16;
    if (ok) {
        tc_status_t s = (tc_status_t)(int32_t)(uint32_t)le(b + 8, 4);
        ok = s == TC_OK || s == TC_ERR_NOT_FOUND || s == TC_ERR_TIMEOUT ||
             s == TC_ERR_PEER_FAILED || s == TC_ERR_BOOTSTRAP || s == TC_ERR_INVALID_ARG ||
             s == TC_ERR_INVALID_STATE;
    }
    if (got != ok || r.left > len || !inside(r.data, r.left, b, len))
        abort();
    if (len >= 16 && (r.req != le(b, 8) || (uint32_t)r.status != le(b + 8, 4) ||
                      r.len != le(b + 12, 4) || r.left != len - 16 || (r.left && r.data != b + 16)))
        abort();
}

static void fuzz_event(const uint8_t *b, size_t len, uint32_t world)
{
    tc_bs_notice_t v;
    int got = tc_boot_store_event_parse(b, len, world, &v);
    int ok = len == 16;
    if (ok) {
        uint32_t kind = (uint32_t)le(b, 4);
        ok = (kind == TC_BOOT_EV_PROC_FAILED || kind == TC_BOOT_EV_REVOKE) &&
             le(b + 4, 4) < world && le(b + 12, 4) < world;
    }
    if (got != ok)
        abort();
    if (len == 16 && (v.kind != le(b, 4) || v.rank != le(b + 4, 4) || v.comm_id != le(b + 8, 4) ||
                      v.from != le(b + 12, 4)))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t again[8192];
    static int init;
    if (!init) {
        tc_log_configure("none");
        init = 1;
    }
    if (size < 2 || size - 2 > sizeof(again))
        return 0;
    uint32_t world = (uint32_t)(data[0] % 64) + 1, sender = data[1] % world;
    size_t len = size - 2;
    /* the body on the heap, exactly its size: ASan guards its ends */
    uint8_t *b = malloc(len ? len : 1);
    if (b == NULL)
        abort();
    memcpy(b, data + 2, len);
    fuzz_put(b, len, again);
    fuzz_fence(b, len);
    fuzz_get(b, len, again);
    fuzz_notify(b, len, world, sender);
    fuzz_reply(b, len);
    fuzz_event(b, len, world);
    free(b);
    return 0;
}
