/* The torchrun-environment bootstrap's client (private): its state and the connection layer to
 * the store (bootstrap_env_io.c) that bootstrap_env.c's requests use. */
#ifndef TCOMMS_RUNTIME_SRC_BOOTSTRAP_ENV_IMPL_H
#define TCOMMS_RUNTIME_SRC_BOOTSTRAP_ENV_IMPL_H

#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "boot_store.h"
#include "tcomms/runtime/bootstrap.h"

#define ENV_NS_PER_MS 1000000ull
#define ENV_DEFAULT_PORT 29500
#define ENV_DEFAULT_LINGER_S 30
#define ENV_MAX_WORLD (1 << 22)
#define ENV_MAX_HOST 255
#define ENV_CONNECT_TRY_MS 5000 /* one connect attempt, before trying the next address */
#define ENV_FENCE_MARGIN_MS 100 /* the store answers a timed-out fence this much early */
#define ENV_BYE_WAIT_MS 1000
#define ENV_STALE_RETRY_MS 50 /* between hellos to the lingering store of an earlier bootstrap */
#define ENV_EVENT_POLL_NS 1000000ull /* poll_event reads the socket at most this often */
/* poll_event reads the clock once per this many calls: the runtime polls at every operation it
 * issues, and a small message must not cost a clock read */
#define ENV_EVENT_CLOCK_EVERY 16u
#define ENV_EVENT_RING 64
#define ENV_DRAIN_FRAMES 256 /* frames one poll_event reads at most */
#define ENV_NOTIFY_WAIT_MS 1000
#define ENV_REPLY_FIXED 16 /* request, status, length */

/* The frame being received: its header, then its body (EVENTs in place, replies on the heap). */
typedef struct {
    uint8_t hdr[TC_BS_HDR_LEN];
    size_t hdr_got;
    bool in_body;
    uint8_t type;
    uint32_t len;
    uint8_t *body; /* small, or a reply's heap buffer */
    size_t got;
    uint8_t small[TC_BS_EVENT_LEN];
} env_rx_t;

typedef struct {
    tc_boot_t head;
    int fd;
    pthread_mutex_t lock; /* one request at a time on the connection; the rx state */
    bool broken;          /* the stream is unusable: every call fails */
    bool lost;            /* the store closed or reset the connection */
    env_rx_t rx;
    uint64_t next_req;
    /* Events received, not yet polled: a ring under its own lock (never held long). */
    pthread_mutex_t ev_lock;
    tc_boot_event_t ev_ring[ENV_EVENT_RING];
    unsigned ev_head, ev_len; /* under ev_lock */
    atomic_uint ev_count;     /* ev_len, read without the lock */
    uint64_t ev_dropped;      /* under ev_lock */
    _Atomic uint64_t ev_polled_ns;
    atomic_uint ev_calls; /* poll_event calls that found the ring empty (a count, not exact) */
    uint64_t fences;  /* fences completed */
    uint8_t *pending; /* PUT frames not yet sent */
    size_t pending_len, pending_cap;
    char master[ENV_MAX_HOST + 16]; /* "MASTER_ADDR:port", for messages */
    tc_boot_store_t *store;         /* rank 0: the store it serves */
    uint64_t linger_ns;
} tc_boot_env_t;

typedef struct {
    uint8_t *body; /* owns the bytes */
    const uint8_t *data;
    uint32_t len;
    tc_status_t status;
    bool challenge; /* the store's CHALLENGE to a hello (data: its body), not a REPLY */
} env_reply_t;

/* What the environment says (bootstrap_env.c reads it). */
typedef struct {
    const char *addr;
    int port, rank, world, local_rank, local_size;
    uint64_t linger_ns;
} env_config_t;

/* ---- bootstrap_env_hello.c: joining the store ---- */

/* Say hello as @p cfg's rank and answer the store's challenge with @p key;
 * TC_ERR_INVALID_STATE when the store belongs to an earlier bootstrap. */
TC_MUST_USE tc_status_t tc_benv_hello(tc_boot_env_t *e, const env_config_t *cfg,
                                      const tc_auth_key_t *key, uint64_t deadline_ns);

/* ---- bootstrap_env_io.c: the connection to the store ---- */

TC_MUST_USE tc_status_t tc_benv_broken_error(tc_boot_env_t *e);
TC_MUST_USE tc_status_t tc_benv_send(tc_boot_env_t *e, const void *buf, size_t len,
                                     uint64_t deadline_ns, const char *what);
void tc_benv_rx_reset(env_rx_t *rx);
TC_MUST_USE tc_status_t tc_benv_rx(tc_boot_env_t *e, uint64_t deadline_ns, bool wait,
                                   const char *what);
int tc_benv_ev_pop(tc_boot_env_t *e, tc_boot_event_t *ev);
TC_MUST_USE tc_status_t tc_benv_rx_event(tc_boot_env_t *e, const char *what);
TC_MUST_USE tc_status_t tc_benv_wait_reply(tc_boot_env_t *e, uint64_t req, uint64_t deadline_ns,
                                           const char *what, env_reply_t *reply);
TC_MUST_USE tc_status_t tc_benv_connect(tc_boot_env_t *e, const char *host, int port,
                                        uint64_t deadline_ns);

#endif /* TCOMMS_RUNTIME_SRC_BOOTSTRAP_ENV_IMPL_H */
