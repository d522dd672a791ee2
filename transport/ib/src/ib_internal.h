/* Private structures of the verbs backend, shared by its source files. */
#ifndef TCOMMS_TRANSPORT_IB_INTERNAL_H
#define TCOMMS_TRANSPORT_IB_INTERNAL_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "tcomms/base/status.h"
#include "tcomms/transport/auth.h"
#include "tcomms/transport/ib.h"
#include "tcomms/transport/loglimit.h"
#include "tcomms/transport/transport.h"

/* ---- wire formats (integers little-endian unless said) ----
 * address  (32): u8 version 1, u8 port, u16 lid, 16-byte gid, 4-byte IPv4 and 2-byte TCP port
 *                of the handshake listener (both big-endian), 6 zero bytes
 * handshake(80): u32 magic "TCIB", u16 version, u16 result, u64 sender, u64 receiver,
 *                u32 qpn, u32 psn, u16 lid, 6 zero bytes, 16-byte gid, u16 flags
 *                (TC_IB_HS_F_KEYED: the sender has a secret), 6 zero bytes,
 *                u64 receive-ring address, u32 ring rkey, u16 ring slots, u16 slot bytes
 * The exchange on the handshake socket (ib_hs.c), the active side (smaller id) first:
 *   hello (112)    -> its handshake (80), then a 32-byte nonce Ni
 *   challenge (88) <- u32 magic, u16 version, u16 result 0, u64 sender, u64 receiver, 32-byte
 *                     nonce Na, 32-byte MAC(acceptor role); a refusal: those 24 bytes with
 *                     result != 0 (TC_IB_HS_R_*), then close
 *   proof (32)     -> MAC(initiator role); both MACs (auth.h) over purpose "ib", both ids,
 *                     Ni, Na and the active side's 80-byte handshake as extra
 *   reply (80)     <- the passive side's handshake once its endpoint exists and its QP is
 *                     ready to receive (or a 24-byte refusal: bad proof, duplicate)
 *   ready (1)      -> 'R' once the active QP is ready to receive; both sides are up
 * message header (48, at the start of a ring slot): u8 type, 7 zero bytes, u64 tag,
 *                u64 length, then for RTS: u64 address, u32 rkey, u32 0, u64 rendezvous id
 * immediate data (32 bits, big-endian on the wire), see TC_IB_IMM_*:
 *                bits 31-30 kind, 29-22 credits returned to the receiver of the immediate;
 *                MSG: 21-14 ring slot, 13-0 bytes written (header + payload);
 *                FIN: 21-0 rendezvous id; CREDIT: 21-0 zero
 * remote key (40): u32 magic "TCIK", u32 version 1, u64 owner id, u64 address, u64 length,
 *                u32 rkey, u32 0 */
#define TC_IB_ADDR_LEN 32
#define TC_IB_HS_LEN 80
#define TC_IB_HELLO_LEN (TC_IB_HS_LEN + TC_AUTH_NONCE_LEN)
#define TC_IB_HDR_LEN 24
#define TC_IB_CHAL_LEN (TC_IB_HDR_LEN + TC_AUTH_NONCE_LEN + TC_AUTH_MAC_LEN)
#define TC_IB_HS_MAGIC 0x42494354u /* "TCIB" */
#define TC_IB_HS_VERSION 3
#define TC_IB_HS_F_KEYED 0x0100u
/* Results of a refused handshake. */
enum {
    TC_IB_HS_R_REFUSED = 1,      /* version, receiver, direction or ring geometry (logged) */
    TC_IB_HS_R_WRONG_SECRET = 2, /* one side has a secret, the other none */
    TC_IB_HS_R_BAD_PROOF = 3,    /* the proof is not the MAC of this exchange */
    TC_IB_HS_R_DUPLICATE = 4,    /* another connection from that id got its endpoint */
};
/* tc_ib_hello_check(), besides 0 and TC_IB_HS_R_*: need more bytes; not a tcomms hello. */
#define TC_IB_HS_MORE (-2)
#define TC_IB_HS_FOREIGN (-1)
/* Connections of the listener still in their exchange (unauthenticated): at most this many,
 * each within TC_SOCKET_HANDSHAKE_TIMEOUT_MS (default below); accept() out of descriptors
 * backs off from 10 ms to 1 s; refusal lines: one per reason per second. */
#define TC_IB_PENDING_MAX 64
#define TC_IB_PENDING_TIMEOUT_MS 5000
#define TC_IB_LOG_INTERVAL_MS 1000
#define TC_IB_MSG_HDR 48
#define TC_IB_RKEY_LEN 40
#define TC_IB_RKEY_MAGIC 0x4b494354u /* "TCIK" */

enum { TC_IB_MSG_EAGER = 1, TC_IB_MSG_RTS = 2 };

/* Kinds of immediate data. MSG and FIN each take one credit (a ring slot and a receive work
 * request of the peer); CREDIT only returns credits and uses a reserved receive request. */
enum { TC_IB_IMM_MSG = 0, TC_IB_IMM_CREDIT = 1, TC_IB_IMM_FIN = 2 };
#define TC_IB_IMM(kind, credits, low)                                                              \
    (((uint32_t)(kind) << 30) | ((uint32_t)(credits) << 22) | ((uint32_t)(low)&0x3fffffu))
#define TC_IB_IMM_SLOT_LEN(slot, n) (((uint32_t)(slot) << 14) | (uint32_t)(n))
#define TC_IB_RNDV_ID_MASK 0x3fffffu

#define TC_IB_NRECV 64                                  /* ring slots per endpoint (= credits) */
#define TC_IB_NCTRL 4                                   /* extra receive requests for CREDIT */
#define TC_IB_NRQ (TC_IB_NRECV + TC_IB_NCTRL)           /* zero-length receives posted */
#define TC_IB_NSEND 64                                  /* send bounce buffers per QP */
#define TC_IB_SLOT (TC_IB_MSG_HDR + TC_TP_IB_EAGER_MAX) /* bytes of a ring slot / bounce buffer */
#define TC_IB_CREDIT_BATCH (TC_IB_NRECV / 2) /* credits owed that trigger a CREDIT message */
#define TC_IB_SQ_DEPTH 256                   /* data work requests in flight */
#define TC_IB_SQ_CTRL 8                      /* extra send requests for CREDIT / keepalive */
#define TC_IB_CQ_DEPTH (TC_IB_SQ_DEPTH + TC_IB_SQ_CTRL + TC_IB_NRQ + 16)
#define TC_IB_HS_TIMEOUT_MS 30000
#define TC_IB_KEEPALIVE_MS_DEFAULT 1000
#define TC_IB_REG_CACHE_MAX_DEFAULT 256

/* wr_id: an object pointer (or 0) with its type in the low 3 bits */
enum {
    TC_IB_WR_SLOT = 1, /* a send bounce buffer (tc_ib_slot_t) */
    TC_IB_WR_REQ = 2,  /* a request (one-sided, rendezvous read) */
    TC_IB_WR_CTRL = 3, /* FIN or CREDIT: zero-length write with immediate */
    TC_IB_WR_RECV = 4, /* a zero-length receive */
    TC_IB_WR_KA = 5,   /* keepalive: zero-length RDMA write */
};

/* Layout of tc_tp_req_t.priv. */
enum {
    TC_IB_P_NEXT = 0,
    TC_IB_P_BUF = 1,
    TC_IB_P_LEN = 2,  /* length or capacity */
    TC_IB_P_KIND = 3, /* TC_IB_K_* */
    TC_IB_P_TAG = 4,  /* tag; remote address for one-sided */
    TC_IB_P_KEY = 5,  /* rkey for one-sided; cache entry of a rendezvous */
    TC_IB_P_ARG = 6,  /* signal value; received length of a rendezvous; rendezvous id (send) */
    TC_IB_P_AUX = 7,  /* CAS compare value; scratch index */
};
enum {
    TC_IB_K_SEND = 1,
    TC_IB_K_RECV,
    TC_IB_K_PUT,
    TC_IB_K_GET,
    TC_IB_K_SIG_ADD,
    TC_IB_K_SIG_SET,
};

#define TC_IB_REQ_NEXT(r) ((tc_tp_req_t *)(uintptr_t)(r)->priv[TC_IB_P_NEXT])

/* ---- registration cache (ib_mr.c) ---- */
typedef struct tc_ib_mr_entry {
    uintptr_t start, end; /* page-aligned registered range */
    struct ibv_mr *mr;
    int refs;          /* explicit registrations (tc_tp_mem_reg) and requests in flight */
    int detached;      /* not in the array (invalidated or uncached): released at refs 0 */
    uint64_t last_use; /* cache clock at the last lookup (LRU) */
} tc_ib_mr_entry_t;

typedef struct tc_ib_mr_cache {
    tc_ib_mr_entry_t **v; /* sorted by start */
    size_t n, cap;
    size_t nunused;    /* entries in v with refs == 0 */
    size_t max_unused; /* TC_IB_REG_CACHE_MAX */
    int enabled;       /* TC_IB_REG_CACHE; 0: only explicit registrations are in v */
    uint64_t clock;
    uint64_t hits, misses;
} tc_ib_mr_cache_t;

typedef struct tc_ib_ctx tc_ib_ctx_t;
typedef struct tc_ib_ep tc_ib_ep_t;

/* A bounce buffer; its address is the wr_id of the work request that uses it. */
typedef struct tc_ib_slot {
    tc_ib_ep_t *ep;
    unsigned char *buf;
    int index;
} tc_ib_slot_t;

typedef struct tc_ib_unexp {
    struct tc_ib_unexp *next;
    uint64_t tag, len;
    int rts; /* 1: data still at the sender (addr, rkey, cookie) */
    uint64_t addr, cookie;
    uint32_t rkey;
    unsigned char data[];
} tc_ib_unexp_t;

typedef enum {
    TC_IB_EP_CONNECTING, /* active: TCP connect / hello / reply in progress */
    TC_IB_EP_WAITING,    /* passive: the peer has not connected yet */
    TC_IB_EP_UP,
    TC_IB_EP_FAILED,
} tc_ib_ep_state_t;

struct tc_ib_ep {
    tc_tp_ep_t super;
    tc_ib_ep_t *next;
    tc_ib_ep_state_t state;
    char peer_str[32];
    struct sockaddr_in peer_sa;

    /* handshake */
    int fd;
    uint64_t hs_deadline;
    unsigned char hs_out[TC_IB_HELLO_LEN], hs_in[TC_IB_CHAL_LEN];
    unsigned char hs_hello[TC_IB_HELLO_LEN]; /* active: the hello sent (for the proof) */
    size_t hs_out_len, hs_out_off, hs_in_got;
    int hs_proved; /* active: the proof is out, the reply is awaited */
    uint32_t psn;
    int hs_wait_ready; /* passive: QP is RTS, waiting for the active side's ready byte */

    struct ibv_cq *cq;
    struct ibv_qp *qp;
    unsigned char *send_buf, *recv_buf; /* send bounce buffers (+ atomic scratch); the ring */
    struct ibv_mr *send_mr, *recv_mr;
    tc_ib_slot_t send_slot[TC_IB_NSEND];
    int send_free[TC_IB_NSEND];
    int nsend_free;
    int sq_used; /* send work requests posted, not completed */
    /* atomic scratch words no signal in flight uses: a signal keeps its word until it
     * completes (a SET's compare-and-swap retries land in it too) */
    uint16_t scratch_free[TC_IB_SQ_DEPTH];
    int nscratch_free;
    /* a SET whose compare-and-swap loop runs: the requests after it wait until it is applied
     * (its retries would otherwise land behind them) */
    tc_tp_req_t *set_busy;

    /* eager ring: the peer writes into our ring (recv_buf), we into its (r_addr, r_rkey) */
    uint64_t r_addr;
    uint32_t r_rkey;
    uint32_t tx_seq;     /* sequence of our next MSG/FIN; its slot is tx_seq % TC_IB_NRECV */
    uint32_t tx_credits; /* peer slots we may still fill */
    uint32_t rx_seq;     /* sequence the next MSG/FIN from the peer must have */
    uint32_t rx_unacked; /* slots consumed, not yet returned to the peer as credits */
    uint32_t rndv_next;  /* next rendezvous id */

    /* keepalive of an idle endpoint that waits for the peer */
    uint64_t nactivity, ka_seen; /* completions polled; value at ka_since */
    uint64_t ka_since;           /* when the endpoint was last seen active (0: not waiting) */
    int ka_inflight;

    tc_tp_req_t *pq_head, *pq_tail; /* posted sends/one-sided waiting for resources (FIFO) */
    tc_tp_req_t *rq_head, *rq_tail; /* posted receives */
    tc_tp_req_t *rndv;              /* rendezvous sends waiting for their FIN */
    tc_tp_req_t *if_head, *if_tail; /* one-sided ops and rendezvous reads posted (FIFO) */
    tc_ib_unexp_t *uq_head, *uq_tail;
    uint64_t *fin_backlog; /* FIN ids not sent yet for lack of send room or credits */
    size_t nfin, fin_cap;
    size_t npending; /* requests owned by the endpoint (for the failure text) */
};

struct tc_ib_ctx {
    tc_tp_ctx_t super;
    const tc_ib_verbs_t *v;
    uint64_t self_id;
    tc_auth_key_t key; /* from the job secret; key.keyed 0: none (not authenticated) */
    struct ibv_context *dev;
    char dev_name[64];
    uint8_t port;
    int gid_index;
    struct ibv_port_attr port_attr;
    union ibv_gid gid;
    struct ibv_pd *pd;
    int listen_fd;
    struct sockaddr_in listen_sa; /* advertised */
    tc_ib_ep_t *eps;
    int nwaiting; /* passive endpoints whose peer has not connected */
    struct parked {
        struct parked *next;
        int fd;
        int stage; /* 0: reading the hello, 1: challenged, reading the proof, 2: proved */
        unsigned char hs[TC_IB_HELLO_LEN];
        size_t got;
        unsigned char proof[TC_AUTH_MAC_LEN];
        size_t proof_got;
        unsigned char na[TC_AUTH_NONCE_LEN];
        uint64_t deadline; /* of stages 0 and 1 */
    } * accepted;   /* accepted sockets: in their exchange, or proved and waiting for ep_connect */
    int npending;   /* of them in stages 0 and 1 (bounded by TC_IB_PENDING_MAX) */
    int pending_ms; /* their deadline */
    uint64_t accept_resume_ns; /* accept() ran out of descriptors: not before this */
    int accept_backoff_ms;
    tc_tp_loglimit_t rlog[8]; /* refusals by reason (TC_IB_HS_R_*, 0 and 5..7 for others) */
    tc_ib_mr_cache_t cache;
    uint64_t ncompleted;
    uint64_t ka_ns; /* TC_IB_KEEPALIVE_MS in ns; 0: off */
};

/* ---- helpers ---- */
void tc_ib_put_u16(unsigned char *p, uint16_t v);
void tc_ib_put_u32(unsigned char *p, uint32_t v);
void tc_ib_put_u64(unsigned char *p, uint64_t v);
uint16_t tc_ib_get_u16(const unsigned char *p);
uint32_t tc_ib_get_u32(const unsigned char *p);
uint64_t tc_ib_get_u64(const unsigned char *p);

/* ---- ib_mr.c ---- */
/* Read TC_IB_REG_CACHE and TC_IB_REG_CACHE_MAX. */
/* ib_config.c: the hints ib.device (NULL when absent), ib.port and ib.gid_index (their
 * defaults when absent); TC_ERR_CONFIG naming a malformed one. */
TC_MUST_USE tc_status_t tc_ib_hints_read(const tc_hints_t *hints, const char **device_p,
                                         int64_t *port_p, int64_t *gid_index_p);
TC_MUST_USE tc_status_t tc_ib_mr_cache_init(tc_ib_ctx_t *ctx);
/* The entry covering [addr, addr+len) (refcounted): one in the array (cached, or an explicit
 * registration), else a new registration, put in the array when the cache is on or
 * @p explicit_reg (tc_tp_mem_reg) is set, else kept out of it and released after its use.
 * Cache off: an explicit registration always gets a new entry of its own. */
TC_MUST_USE tc_status_t tc_ib_mr_get(tc_ib_ctx_t *ctx, const void *addr, size_t len,
                                     int explicit_reg, tc_ib_mr_entry_t **e_p);
/* Drop a reference; @p explicit_dereg (tc_tp_mem_dereg): the entry is released at once if now
 * unused, and with the cache off it leaves the array (later transfers no longer find it). */
void tc_ib_mr_put(tc_ib_ctx_t *ctx, tc_ib_mr_entry_t *e, int explicit_dereg);
void tc_ib_mr_cache_free(tc_ib_ctx_t *ctx);

/* ---- ib_conn.c ---- */
TC_MUST_USE tc_status_t tc_ib_ep_connect(tc_tp_ctx_t *ctx, uint64_t peer_id, const void *addr,
                                         size_t addr_len, tc_tp_ep_t **ep_p);
void tc_ib_ep_close(tc_tp_ep_t *ep);
void tc_ib_ep_fail(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep, tc_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* INIT -> RTR -> RTS with the peer's QP number, PSN, LID and GID from its handshake. */
TC_MUST_USE tc_status_t tc_ib_qp_connect(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep, const unsigned char *hs);
tc_ib_ep_t *tc_ib_ep_find(tc_ib_ctx_t *ctx, uint64_t peer_id);

/* ---- ib_hs.c: the handshake ---- */
void tc_ib_handshake_progress(tc_ib_ctx_t *ctx);
/* Active side: start the handshake of @p ep (connect, the hello queued). */
void tc_ib_hs_start(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep);
/* Take apart and check a hello (@p len bytes; a prefix is enough to refuse) for @p self_id
 * (with a secret when @p self_keyed): 0 when whole and acceptable, TC_IB_HS_MORE,
 * TC_IB_HS_FOREIGN, or a refusal TC_IB_HS_R_* with *why_p saying why. Pure: no sockets. */
int tc_ib_hello_check(const unsigned char *m, size_t len, uint64_t self_id, int self_keyed,
                      const char **why_p);
/* 1 when @p proof is the active side's MAC for hello @p m (TC_IB_HELLO_LEN bytes) and our
 * nonce @p na under @p key (constant time), else 0. Pure. */
int tc_ib_proof_check(const tc_auth_key_t *key, const unsigned char *m,
                      const unsigned char na[TC_AUTH_NONCE_LEN], const unsigned char *proof);
/* Active side: 1 when challenge @p chal (TC_IB_CHAL_LEN bytes, header already checked) carries
 * the passive side's MAC of the exchange opened by our hello @p hello (TC_IB_HELLO_LEN bytes),
 * and then @p proof is ours; 0 (and @p proof untouched) when it does not. Pure: no sockets. */
int tc_ib_challenge_answer(const tc_auth_key_t *key, const unsigned char *hello,
                           const unsigned char *chal, unsigned char proof[TC_AUTH_MAC_LEN]);
void tc_ib_req_complete(tc_ib_ctx_t *ctx, tc_tp_req_t *req, tc_status_t status, size_t bytes);
/* Append / unlink in a singly linked request list. */
void tc_ib_list_push(tc_tp_req_t **head, tc_tp_req_t **tail, tc_tp_req_t *req);
int tc_ib_list_remove(tc_tp_req_t **head, tc_tp_req_t **tail, tc_tp_req_t *req);

/* ---- ib_data.c ---- */
TC_MUST_USE tc_status_t tc_ib_send(tc_tp_ep_t *ep, uint64_t tag, const void *buf, size_t len,
                                   tc_tp_req_t *req);
/* The rendezvous with id @p id may complete at the sender: FIN now, or once there is room and a
 * credit (in order behind earlier FINs). */
void tc_ib_post_fin(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep, uint64_t id);
TC_MUST_USE tc_status_t tc_ib_recv(tc_tp_ep_t *ep, uint64_t tag, void *buf, size_t cap,
                                   tc_tp_req_t *req);
TC_MUST_USE tc_status_t tc_ib_cancel(tc_tp_ep_t *ep, tc_tp_req_t *req);
TC_MUST_USE tc_status_t tc_ib_put(tc_tp_ep_t *ep, const void *buf, size_t len, tc_tp_rkey_t *rkey,
                                  uint64_t offset, tc_tp_req_t *req);
TC_MUST_USE tc_status_t tc_ib_get(tc_tp_ep_t *ep, void *buf, size_t len, tc_tp_rkey_t *rkey,
                                  uint64_t offset, tc_tp_req_t *req);
TC_MUST_USE tc_status_t tc_ib_signal(tc_tp_ep_t *ep, tc_tp_rkey_t *rkey, uint64_t offset,
                                     tc_tp_signal_op_t op, uint64_t value, tc_tp_req_t *req);
/* Post the zero-length receives of a new QP (one per ring slot, plus TC_IB_NCTRL). */
TC_MUST_USE tc_status_t tc_ib_post_recvs(tc_ib_ep_t *ep);
/* Send a keepalive when the endpoint waits for its peer and has been idle long enough. */
void tc_ib_ep_keepalive(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep);
/* Poll an endpoint's completion queue and act on what completed. */
void tc_ib_ep_poll(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep);
/* Complete every request the endpoint owns with @p status (failure or close). */
void tc_ib_ep_fail_requests(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep, tc_status_t status);
/* Start what waits in the endpoint's pending queue (after it came up or got room). */
void tc_ib_ep_kick(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep);

/* ---- ib_unexp.c: messages that arrived before their receive ---- */
/* An unexpected message with @p tag: 1 and its length (ops->probe). */
int tc_ib_probe(tc_tp_ep_t *ep, uint64_t tag, uint64_t *len_p);
/* Free those @p drop says no receive will take (ops->discard). */
int tc_ib_discard(tc_tp_ep_t *ep, int (*drop)(void *arg, uint64_t tag), void *arg);

/* ---- ib_rkey.c ---- */
TC_MUST_USE tc_status_t tc_ib_mem_reg(tc_tp_ctx_t *ctx, void *addr, size_t len,
                                      tc_tp_mem_t **mem_p);
void tc_ib_mem_dereg(tc_tp_mem_t *mem);
TC_MUST_USE tc_status_t tc_ib_rkey_pack(tc_tp_mem_t *mem, void *buf, size_t cap, size_t *len_p);
TC_MUST_USE tc_status_t tc_ib_rkey_unpack(tc_tp_ep_t *ep, const void *buf, size_t len,
                                          tc_tp_rkey_t **rkey_p);
void tc_ib_rkey_release(tc_tp_rkey_t *rkey);

typedef struct tc_ib_mem {
    tc_tp_mem_t super;
    tc_ib_mr_entry_t *entry;
} tc_ib_mem_t;

typedef struct tc_ib_rkey {
    tc_tp_rkey_t super;
    uint64_t addr;
    uint32_t rkey;
} tc_ib_rkey_t;

#endif /* TCOMMS_TRANSPORT_IB_INTERNAL_H */
