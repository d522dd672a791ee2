/*
 * Internal: the key/value store that rank 0 serves for the torchrun-environment
 * bootstrap, and the frames its clients (bootstrap_env.c) exchange with it.
 *
 * Every frame is an 8-byte header, then a body:
 *   header: u32 body length (<= TC_BS_MAX_BODY), u8 type, u8 0, u16 0   (little-endian)
 *
 * Joining is a challenge-response (tcomms/transport/auth.h, purpose "store") that
 * proves both sides hold the job secret without sending it:
 *   client HELLO      u32 magic, u16 version, u32 rank, u32 world size, u8 keyed, Ni[32]
 *   store  CHALLENGE  u8 keyed, Na[32], MAC(acceptor)[32]
 *          (or, for a version it does not speak, a REPLY with the reason)
 *   client PROOF      MAC(initiator)[32]   -- only once the store's MAC checked out
 *   store  REPLY      request 0: OK (the rank is taken), or the refusal's text, then close
 * keyed is 1 when that side has a secret (TC_JOB_SECRET), 0 when it runs with the public
 * key; it only makes the refusal precise. The transcript binds the purpose, the rank
 * (initiator id), TC_BS_STORE_ID (acceptor id), both nonces and the extra bytes
 * tc_boot_store_transcript() lays out (world size, both keyed flags, the version). A rank
 * is taken only after a PROOF that checks out; a recorded PROOF fails against the next
 * connection's fresh Na.
 *
 * Bodies after joining (client to store):
 *   PUT    u16 key length, key, u32 value length, value      (stored as rank/key)
 *   FENCE  u64 request, u64 fence number, u32 wait ms (UINT32_MAX: no limit)
 *   GET    u64 request, u32 rank, u16 key length, key
 *   BYE    (empty)
 *   NOTIFY u32 kind, u32 rank, u32 comm id   (tc_boot_event_t; no reply; a failure's
 *                                            third word: 1 found silent, else 0)
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
#include "tcomms/runtime/bootstrap.h"
#include "tcomms/transport/auth.h"

#define TC_BS_MAGIC 0x53424354u /* "TCBS" */
#define TC_BS_VERSION 3         /* 2: NOTIFY and EVENT; 3: the challenge-response */
#define TC_BS_HDR_LEN 8
#define TC_BS_MAX_KEY 255
#define TC_BS_MAX_VALUE (4u << 20)
#define TC_BS_NONCE_LEN 32 /* TC_AUTH_NONCE_LEN */
#define TC_BS_MAC_LEN 32   /* TC_AUTH_MAC_LEN */
#define TC_BS_HELLO_LEN 47 /* magic 4, version 2, rank 4, world 4, keyed 1, nonce 32 */
#define TC_BS_CHALLENGE_LEN (1 + TC_BS_NONCE_LEN + TC_BS_MAC_LEN)
#define TC_BS_PROOF_LEN TC_BS_MAC_LEN
#define TC_BS_STORE_ID UINT64_MAX /* the store's id in the transcript */
#define TC_BS_AUTH_EXTRA_LEN 8    /* u32 world, u8 client keyed, u8 store keyed, u16 version */
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
    TC_BS_PROOF = 7,
    TC_BS_REPLY = 16,
    TC_BS_EVENT = 17,
    TC_BS_CHALLENGE = 18,
};

typedef struct tc_boot_store tc_boot_store_t;

/**
 * Listen on @p port of every address (IPv6 with IPv4-mapped, else IPv4) and
 * serve a store for @p world ranks in a background thread. Every client must
 * prove it holds @p secret (@p len bytes; 0: none, the public key).
 */
TC_MUST_USE tc_status_t tc_boot_store_start(int port, int world, const void *secret, size_t len,
                                            tc_boot_store_t **store_p);

/**
 * Fill @p t (and @p extra, which it points to) for the join of @p rank: both
 * sides of the challenge-response call it with the same values.
 */
void tc_boot_store_transcript(tc_auth_transcript_t *t, uint8_t extra[TC_BS_AUTH_EXTRA_LEN],
                              uint32_t rank, uint32_t world, uint8_t client_keyed,
                              uint8_t store_keyed, const uint8_t nonce_i[TC_BS_NONCE_LEN],
                              const uint8_t nonce_a[TC_BS_NONCE_LEN]);

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

/**
 * The client's side (bootstrap_env.c) over a socket already connected to a store: join as
 * @p rank of @p world with @p secret (@p slen bytes; 0: the public key), HELLO, CHALLENGE,
 * PROOF and the verdict, as tc_boot_env_create does after connecting (without its retries).
 * On TC_OK *boot_p is a bootstrap of the "env" kind over @p fd (tc_boot_destroy closes it);
 * else @p fd is closed. For tests and fuzz targets: the environment is not read.
 */
TC_MUST_USE tc_status_t tc_boot_env_join_fd(int fd, int rank, int world, const void *secret,
                                            size_t slen, uint64_t deadline_ns, tc_boot_t **boot_p);

/* ---- bodies after joining (boot_store_body.c): pure functions of the bytes ---- */

/** A PUT body taken apart (views into the body). */
typedef struct tc_bs_put {
    const uint8_t *key, *val;
    uint16_t klen;
    uint32_t vlen;
} tc_bs_put_t;

/** A FENCE body. */
typedef struct tc_bs_fence {
    uint64_t req, seq;
    uint32_t wait_ms;
} tc_bs_fence_t;

/** A GET body (the key a view into the body). */
typedef struct tc_bs_get {
    uint64_t req;
    uint32_t rank;
    const uint8_t *key;
    uint16_t klen;
} tc_bs_get_t;

/** A NOTIFY body, or an EVENT body (from: the notifying rank). */
typedef struct tc_bs_notice {
    uint32_t kind, rank, comm_id, from;
} tc_bs_notice_t;

/** A REPLY body: its fixed fields, and the bytes after them. */
typedef struct tc_bs_reply {
    uint64_t req;
    tc_status_t status;
    uint32_t len;        /* the length field */
    const uint8_t *data; /* the bytes after the fixed fields */
    size_t left;         /* how many there are */
} tc_bs_reply_t;

/** Store: a PUT body of @p len bytes (a key of 1..TC_BS_MAX_KEY bytes without NUL, a value of at
 *  most TC_BS_MAX_VALUE bytes, nothing after): TC_OK, or TC_ERR_PROTOCOL naming the fault. */
TC_MUST_USE tc_status_t tc_boot_store_put_parse(const uint8_t *body, size_t len, tc_bs_put_t *put);
/** Store: a FENCE body (exactly 20 bytes): TC_OK, or TC_ERR_PROTOCOL. */
TC_MUST_USE tc_status_t tc_boot_store_fence_parse(const uint8_t *body, size_t len,
                                                  tc_bs_fence_t *fence);
/** Store: a GET body (request, rank, a key as PUT's, nothing after): TC_OK, or TC_ERR_PROTOCOL.
 *  The rank is not checked (the store answers a rank out of range with a REPLY). */
TC_MUST_USE tc_status_t tc_boot_store_get_parse(const uint8_t *body, size_t len, tc_bs_get_t *get);
/** Store: a NOTIFY body from rank @p sender of @p world: a known kind about a rank of the world,
 *  a revoke of the sender's own, a failure of another rank with comm id 0. TC_OK (from is
 *  @p sender), or TC_ERR_PROTOCOL naming the fault. */
TC_MUST_USE tc_status_t tc_boot_store_notify_parse(const uint8_t *body, size_t len, uint32_t world,
                                                   uint32_t sender, tc_bs_notice_t *n);
/** Client: a REPLY body: 1 when its length field counts exactly the bytes after the fixed
 *  fields and its status is one the store sends, else 0. The fields are filled either way (0
 *  where the body is too short), for the message. Sets no error text. */
int tc_boot_store_reply_parse(const uint8_t *body, size_t len, tc_bs_reply_t *reply);
/** Client of a world of @p world ranks: an EVENT body: 1 when it is TC_BS_EVENT_LEN bytes of a
 *  known kind about, and from, ranks of the world, else 0. The fields are filled either way.
 *  Sets no error text. */
int tc_boot_store_event_parse(const uint8_t *body, size_t len, uint32_t world, tc_bs_notice_t *ev);

#endif
