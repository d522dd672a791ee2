/*
 * The bodies of the store's frames after joining (boot_store.h), taken apart: pure functions
 * of the bytes (and of the world size and sender's rank where a field is checked against
 * them), used by the store (boot_store.c) and its clients (bootstrap_env.c), and fuzzed alone.
 */
#include <string.h>

#include "boot_store.h"
#include "tcomms/base/wire.h"
#include "tcomms/runtime/bootstrap.h"

/* Read a key: 1..TC_BS_MAX_KEY bytes, no NUL. */
static tc_status_t bs_get_key(tc_wire_reader_t *r, const uint8_t **key_p, uint16_t *klen_p)
{
    uint16_t klen;
    const void *key;
    if (tc_wire_get_u16(r, &klen) != TC_OK || klen == 0 || klen > TC_BS_MAX_KEY ||
        tc_wire_get_view(r, klen, &key) != TC_OK)
        return tc_error_set(TC_ERR_PROTOCOL, "malformed key (length 1..%d expected)",
                            TC_BS_MAX_KEY);
    if (memchr(key, '\0', klen))
        return tc_error_set(TC_ERR_PROTOCOL, "key with a NUL byte");
    *key_p = key;
    *klen_p = klen;
    return TC_OK;
}

tc_status_t tc_boot_store_put_parse(const uint8_t *body, size_t len, tc_bs_put_t *put)
{
    tc_wire_reader_t r;
    const uint8_t *key;
    const void *val;
    uint16_t klen;
    uint32_t vlen;
    tc_wire_reader_init(&r, body, len);
    tc_status_t rc = bs_get_key(&r, &key, &klen);
    if (rc != TC_OK)
        return rc;
    if (tc_wire_get_u32(&r, &vlen) != TC_OK || vlen > TC_BS_MAX_VALUE ||
        tc_wire_get_view(&r, vlen, &val) != TC_OK || tc_wire_reader_left(&r) != 0)
        return tc_error_set(TC_ERR_PROTOCOL, "malformed PUT of key '%.*s' (body %zu bytes)",
                            (int)klen, (const char *)key, r.len);
    put->key = key;
    put->klen = klen;
    put->val = val;
    put->vlen = vlen;
    return TC_OK;
}

tc_status_t tc_boot_store_fence_parse(const uint8_t *body, size_t len, tc_bs_fence_t *fence)
{
    tc_wire_reader_t r;
    uint64_t req, seq;
    uint32_t wait_ms;
    tc_wire_reader_init(&r, body, len);
    if (tc_wire_get_u64(&r, &req) != TC_OK || tc_wire_get_u64(&r, &seq) != TC_OK ||
        tc_wire_get_u32(&r, &wait_ms) != TC_OK || tc_wire_reader_left(&r) != 0)
        return tc_error_set(TC_ERR_PROTOCOL, "FENCE body of %zu bytes, expected 20", r.len);
    fence->req = req;
    fence->seq = seq;
    fence->wait_ms = wait_ms;
    return TC_OK;
}

tc_status_t tc_boot_store_get_parse(const uint8_t *body, size_t len, tc_bs_get_t *get)
{
    tc_wire_reader_t r;
    uint64_t req;
    uint32_t rank;
    const uint8_t *key;
    uint16_t klen;
    tc_status_t rc;
    tc_wire_reader_init(&r, body, len);
    if (tc_wire_get_u64(&r, &req) != TC_OK || tc_wire_get_u32(&r, &rank) != TC_OK)
        return tc_error_set(TC_ERR_PROTOCOL, "GET body of %zu bytes is too short", r.len);
    if ((rc = bs_get_key(&r, &key, &klen)) != TC_OK)
        return rc;
    if (tc_wire_reader_left(&r) != 0)
        return tc_error_set(TC_ERR_PROTOCOL, "GET with %zu trailing bytes",
                            tc_wire_reader_left(&r));
    get->req = req;
    get->rank = rank;
    get->key = key;
    get->klen = klen;
    return TC_OK;
}

tc_status_t tc_boot_store_notify_parse(const uint8_t *body, size_t len, uint32_t world,
                                       uint32_t sender, tc_bs_notice_t *n)
{
    tc_wire_reader_t r;
    uint32_t kind, rank, comm_id;
    tc_wire_reader_init(&r, body, len);
    if (tc_wire_get_u32(&r, &kind) != TC_OK || tc_wire_get_u32(&r, &rank) != TC_OK ||
        tc_wire_get_u32(&r, &comm_id) != TC_OK || tc_wire_reader_left(&r) != 0)
        return tc_error_set(TC_ERR_PROTOCOL, "NOTIFY body of %zu bytes, expected %d", r.len,
                            TC_BS_NOTIFY_LEN);
    if (kind != TC_BOOT_EV_PROC_FAILED && kind != TC_BOOT_EV_REVOKE)
        return tc_error_set(TC_ERR_PROTOCOL, "NOTIFY of unknown kind %u", kind);
    if (rank >= world)
        return tc_error_set(TC_ERR_PROTOCOL, "NOTIFY about rank %u of %d", rank, (int)world);
    if (kind == TC_BOOT_EV_REVOKE && rank != sender)
        return tc_error_set(TC_ERR_PROTOCOL, "NOTIFY: a revoke on behalf of rank %u", rank);
    if (kind == TC_BOOT_EV_PROC_FAILED && (rank == sender || comm_id > 1))
        return tc_error_set(TC_ERR_PROTOCOL,
                            "NOTIFY: rank %u failed, with comm id %u (another rank, id 0 "
                            "expected, or 1: found silent)",
                            rank, comm_id);
    n->kind = kind;
    n->rank = rank;
    n->comm_id = comm_id;
    n->from = sender;
    return TC_OK;
}

int tc_boot_store_reply_parse(const uint8_t *body, size_t len, tc_bs_reply_t *reply)
{
    tc_wire_reader_t r;
    uint64_t rreq = 0;
    uint32_t status = 0, dlen = 0;
    tc_wire_reader_init(&r, body, len);
    int whole = tc_wire_get_u64(&r, &rreq) == TC_OK && tc_wire_get_u32(&r, &status) == TC_OK &&
                tc_wire_get_u32(&r, &dlen) == TC_OK;
    tc_status_t s = (tc_status_t)(int32_t)status;
    reply->req = rreq;
    reply->status = s;
    reply->len = dlen;
    reply->left = tc_wire_reader_left(&r);
    reply->data = reply->left ? body + (len - reply->left) : body;
    return whole && dlen == reply->left &&
           (s == TC_OK || s == TC_ERR_NOT_FOUND || s == TC_ERR_TIMEOUT || s == TC_ERR_PEER_FAILED ||
            s == TC_ERR_BOOTSTRAP || s == TC_ERR_INVALID_ARG || s == TC_ERR_INVALID_STATE);
}

int tc_boot_store_event_parse(const uint8_t *body, size_t len, uint32_t world, tc_bs_notice_t *ev)
{
    tc_wire_reader_t r;
    uint32_t kind = 0, rank = 0, comm_id = 0, from = 0;
    tc_wire_reader_init(&r, body, len);
    int whole = len == TC_BS_EVENT_LEN && tc_wire_get_u32(&r, &kind) == TC_OK &&
                tc_wire_get_u32(&r, &rank) == TC_OK && tc_wire_get_u32(&r, &comm_id) == TC_OK &&
                tc_wire_get_u32(&r, &from) == TC_OK;
    ev->kind = kind;
    ev->rank = rank;
    ev->comm_id = comm_id;
    ev->from = from;
    return whole && (kind == TC_BOOT_EV_PROC_FAILED || kind == TC_BOOT_EV_REVOKE) && rank < world &&
           from < world;
}
