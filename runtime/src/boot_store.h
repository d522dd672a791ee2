/*
 * Internal: the key/value store that rank 0 serves for the torchrun-environment
 * bootstrap, and the frames its clients (bootstrap_env.c) exchange with it.
 *
 * Every frame is an 8-byte header, then a body:
 *   header: u32 body length (<= TC_BS_MAX_BODY), u8 type, u8 0, u16 0   (little-endian)
 * Bodies (client to store):
 *   HELLO  u32 magic, u16 version, u32 rank, u32 world size, u16 secret length, secret
 *   PUT    u16 key length, key, u32 value length, value      (stored as rank/key)
 *   FENCE  u64 request, u64 fence number, u32 wait ms (UINT32_MAX: no limit)
 *   GET    u64 request, u32 rank, u16 key length, key
 *   BYE    (empty)
 *   NOTIFY u32 kind, u32 rank, u32 comm id   (tc_boot_event_t; no reply)
 *          REVOKE: rank is the sender's own; PROC_FAILED: another rank, comm id 0
 * Bodies (store to client):
 *   REPLY  u64 request, i32 status, u32 length, bytes (the value, or the error text);
 *          one per HELLO (request 0), FENCE and GET
 *   EVENT  u32 kind, u32 rank, u32 comm id, u32 notifying rank; pushed for each
 *          NOTIFY to every other client that said hello and not goodbye, at any
 *          time between two frames (a client waiting for a reply may get events first)
 * Every field is checked and a body must be consumed exactly; anything else
 * closes the connection. Keys are 1..TC_BS_MAX_KEY bytes without NUL.
 */
#ifndef TC_RUNTIME_BOOT_STORE_H
#define TC_RUNTIME_BOOT_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "tcomms/base/status.h"

#define TC_BS_MAGIC 0x53424354u /* "TCBS" */
#define TC_BS_VERSION 2         /* 2: NOTIFY and EVENT */
#define TC_BS_HDR_LEN 8
#define TC_BS_MAX_KEY 255
#define TC_BS_MAX_VALUE (4u << 20)
#define TC_BS_MAX_SECRET 256
#define TC_BS_MAX_TEXT 1024
#define TC_BS_MAX_BODY (TC_BS_MAX_VALUE + 64u)
#define TC_BS_WAIT_FOREVER UINT32_MAX
#define TC_BS_NOTIFY_LEN 12
#define TC_BS_EVENT_LEN 16

enum {
    TC_BS_HELLO = 1,
    TC_BS_PUT = 2,
    TC_BS_FENCE = 3,
    TC_BS_GET = 4,
    TC_BS_BYE = 5,
    TC_BS_NOTIFY = 6,
    TC_BS_REPLY = 16,
    TC_BS_EVENT = 17,
};

typedef struct tc_boot_store tc_boot_store_t;

/**
 * Listen on @p port of every address (IPv6 with IPv4-mapped, else IPv4) and
 * serve a store for @p world ranks in a background thread. @p secret (NULL or
 * "" for none) must match every client's.
 */
TC_MUST_USE tc_status_t tc_boot_store_start(int port, int world, const char *secret,
                                            tc_boot_store_t **store_p);

/**
 * Stop serving. Until @p linger_ns have passed, keep serving as long as some
 * client that joined is still connected and has not said goodbye (ranks fetch
 * keys lazily, long after they joined). Then close everything and free.
 */
void tc_boot_store_stop(tc_boot_store_t *store, uint64_t linger_ns);

/** Write a frame header. */
void tc_boot_store_hdr_write(uint8_t hdr[TC_BS_HDR_LEN], uint8_t type, uint32_t body_len);

/** Check a received header: TC_ERR_PROTOCOL naming the fault, else its type and length. */
TC_MUST_USE tc_status_t tc_boot_store_hdr_parse(const uint8_t hdr[TC_BS_HDR_LEN], uint8_t *type_p,
                                                uint32_t *body_len_p);

#endif
