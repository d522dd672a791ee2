/*
 * Internal to the store (boot_store.c, boot_store_auth.c): its state and
 * connections. Everything here belongs to the store's thread.
 */
#ifndef TC_RUNTIME_BOOT_STORE_IMPL_H
#define TC_RUNTIME_BOOT_STORE_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "boot_store.h"
#include "tcomms/base/hmap.h"
#include "tcomms/base/vec.h"
#include "tcomms/base/wire.h"
#include "tcomms/transport/loglimit.h"

#define BS_NS_PER_MS 1000000ull
#define BS_HELLO_TIMEOUT_NS (10ull * 1000000000ull)
#define BS_CLOSE_FLUSH_NS (2ull * 1000000000ull)
#define BS_LINGER_WARN_NS (5ull * 1000000000ull) /* rank 0's wait for goodbyes: warn after */
#define BS_MAX_OUT (16u << 20)
#define BS_READ_BUDGET (1u << 20) /* bytes read from one client per poll round */
#define BS_MISSING_LISTED 16
#define BS_REPLY_FIXED 16 /* request, status, length */
/* Events queued for one client since its output was last fully sent: a client
 * that reads (the kernel's buffers take thousands) never comes near it. */
#define BS_MAX_EVENTS 4096

typedef struct bs_entry {
    struct bs_entry *next; /* same hash */
    uint32_t rank;
    uint32_t vlen;
    uint16_t klen;
    uint8_t data[]; /* key, then value */
} bs_entry_t;

enum { BS_RANK_ABSENT = 0, BS_RANK_JOINED, BS_RANK_LEFT };

/* Where a connection is in joining (boot_store.h); then rank >= 0. */
enum { BS_AUTH_HELLO = 0, BS_AUTH_PROOF, BS_AUTH_DONE };

typedef struct bs_conn {
    int fd;
    int rank;              /* -1 until its proof is accepted */
    uint8_t auth;          /* BS_AUTH_* */
    uint8_t client_keyed;  /* from its HELLO */
    uint32_t claimed_rank; /* from its HELLO, taken only after its proof */
    uint32_t claimed_world;
    uint8_t nonce_i[TC_BS_NONCE_LEN], nonce_a[TC_BS_NONCE_LEN];
    bool said_bye;
    bool reported_failed; /* another rank reported it failed: rank 0 does not wait for it */
    bool closing;         /* flush the output, then close */
    bool dead;            /* closed: removed after this poll round */
    uint64_t deadline_ns; /* of the hello, or of the flush before closing */
    char name[64];        /* the peer's address, for logs */
    uint8_t hdr[TC_BS_HDR_LEN];
    size_t hdr_got;
    bool in_body;
    uint8_t type;
    uint8_t *body;
    uint32_t body_len;
    size_t body_got;
    uint8_t *out;
    size_t out_len, out_off, out_cap;
    uint32_t events_unsent; /* EVENT frames queued since out was last empty */
    bool fence_waiting;
    uint64_t fence_req, fence_seq, fence_start_ns, fence_deadline_ns;
} bs_conn_t;

struct tc_boot_store {
    int listen_fd;
    int wake_fd;
    int port;
    int world;
    tc_auth_key_t key;            /* from the job secret (or the public key); never logged */
    tc_tp_loglimit_t refused_log; /* refusals: a line a second at most */
    pthread_t thread;
    atomic_bool stop;
    _Atomic uint64_t linger_deadline_ns;
    /* Everything below belongs to the thread. */
    bs_conn_t **conns;
    size_t nconns, conns_cap;
    struct pollfd *pfds;
    size_t pfds_cap;
    uint64_t accept_pause_until_ns;
    uint8_t *rank_state;
    uint64_t *arrived;
    uint64_t left_min_arrived; /* the least fence reached by a rank that left */
    int left_min_rank;
    tc_vec_t fence_count; /* uint32_t per fence */
    tc_hmap_t table;      /* hash of (rank, key) -> chain of bs_entry_t */
    size_t nkeys;
    uint64_t linger_start_ns; /* when rank 0 began waiting for goodbyes (0: not yet) */
    bool linger_warned;       /* the wait lasted BS_LINGER_WARN_NS, and was logged */
    bool linger_told;         /* whom it waits for was logged */
};

/* ---- boot_store.c ---- */
/* " (rank r)" once the client has joined, for logs. */
const char *tc_bs_who(const bs_conn_t *c);
/* Queue a REPLY frame and try to send it at once. */
void tc_bs_reply(tc_boot_store_t *st, bs_conn_t *c, uint64_t req, tc_status_t status,
                 const void *data, uint32_t len);
void tc_bs_reply_text(tc_boot_store_t *st, bs_conn_t *c, uint64_t req, tc_status_t status,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Room for @p need more bytes of output, or NULL when the client was dropped. */
uint8_t *tc_bs_out_reserve(tc_boot_store_t *st, bs_conn_t *c, size_t need);
void tc_bs_flush(tc_boot_store_t *st, bs_conn_t *c);
/* Close the connection (after this poll round). */
void tc_bs_drop(tc_boot_store_t *st, bs_conn_t *c, const char *why);
/* A store for @p world ranks and @p secret (@p slen bytes) that neither listens nor runs its
 * thread yet (tc_boot_store_start does both; tests and fuzz targets drive its connections). */
TC_MUST_USE tc_status_t tc_bs_create(int world, const void *secret, size_t slen,
                                     tc_boot_store_t **store_p);
/* Free a store whose thread is not running (connections left in it are not freed). */
void tc_bs_free(tc_boot_store_t *st);
/* A new connection on socket @p fd (the store's now) from @p name; NULL when out of memory. */
bs_conn_t *tc_bs_conn_add(tc_boot_store_t *st, int fd, const char *name);
/* Read what @p c sent (up to a budget) and handle every complete frame. */
void tc_bs_read(tc_boot_store_t *st, bs_conn_t *c);
/* The store's thread's name, as top -H, perf and gdb show it (at most 15 characters). */
#define TC_BS_THREAD_NAME "tc-store"
/* The store's thread: polls the listening socket and every connection until stopped. */
void *tc_bs_main(void *arg);
/* Free the connections that are dead, or closing with their output sent. */
void tc_bs_reap(tc_boot_store_t *st);
/* Close and free a connection (not in the store's list any more). */
void tc_bs_conn_free(bs_conn_t *c);

/* ---- boot_store_auth.c ---- */
TC_MUST_USE tc_status_t tc_bs_on_hello(tc_boot_store_t *st, bs_conn_t *c, tc_wire_reader_t *r);
TC_MUST_USE tc_status_t tc_bs_on_proof(tc_boot_store_t *st, bs_conn_t *c, tc_wire_reader_t *r);
/* Log a refused client (@p who: its name), or a connection that has not joined closed for what
 * it sent or did not send: the first at once, then at most one line per second with the count
 * (anyone may connect). */
void tc_bs_refused(tc_boot_store_t *st, const char *who, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- boot_store_req.c: the requests ---- */

void tc_bs_table_free(tc_boot_store_t *st);
void tc_bs_fence_timeout(tc_boot_store_t *st, bs_conn_t *c, uint64_t now);
void tc_bs_rank_left(tc_boot_store_t *st, int rank, const char *how);
TC_MUST_USE tc_status_t tc_bs_on_frame(tc_boot_store_t *st, bs_conn_t *c);

#endif
