/* Private structures of the TCP backend, shared by its source files. */
#ifndef TCOMMS_TRANSPORT_TCP_INTERNAL_H
#define TCOMMS_TRANSPORT_TCP_INTERNAL_H

#include <net/if.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "tcomms/base/status.h"
#include "tcomms/transport/tcp.h"
#include "tcomms/transport/transport.h"

/* ---- wire format (all integers little-endian) ----
 * address  : u8 version=1, u8 family=4, u16 port (big-endian), u32 IPv4 (big-endian)
 * hello    : u32 magic, u16 version, u16 flags=0, u64 sender id, u64 receiver id, 32-byte digest
 * ack      : u32 magic, u16 version, u16 result, u64 sender id, u64 receiver id
 * message  : u64 tag, u64 kind << 56 | length, then length payload bytes (kind 0)
 * one-sided: u64 key, u64 kind << 56 | length, u64 offset, u64 arg, then length
 *            payload bytes (kinds TC_TCP_K_*; see tcp_rma.c)
 * The connecting side (smaller id) sends the hello, then messages; the
 * accepting side answers with the ack, then messages. */
#define TC_TCP_ADDR_LEN 8
#define TC_TCP_ADDR_VERSION 1
#define TC_TCP_MAGIC 0x50544354u /* "TCTP" */
#define TC_TCP_WIRE_VERSION 1
#define TC_TCP_DIGEST_LEN 32
#define TC_TCP_HELLO_LEN 56
#define TC_TCP_ACK_LEN 24
#define TC_TCP_HDR_LEN 16
#define TC_TCP_RMA_HDR_LEN 32
#define TC_TCP_LEN_MASK ((1ULL << 56) - 1)
#define TC_TCP_RKEY_LEN 32
#define TC_TCP_RKEY_MAGIC 0x4b524354u /* "TCRK" */

/* Kinds of one-sided messages (top byte of the length word). The initiator
 * sends PUT, GET and SIG_*; the target answers each, in order, with an ACK
 * (put, signal) or a GET_RESP carrying the data. */
enum {
    TC_TCP_K_MSG = 0,
    TC_TCP_K_PUT = 0xA1,     /* key, offset, arg 0; payload: the data */
    TC_TCP_K_GET = 0xA2,     /* key, offset, arg = length; no payload */
    TC_TCP_K_SIG_ADD = 0xA3, /* key, offset, arg = value */
    TC_TCP_K_SIG_SET = 0xA4,
    TC_TCP_K_ACK = 0xA5,      /* all zero */
    TC_TCP_K_GET_RESP = 0xA6, /* payload: the data */
};

/* Result codes carried by the ack. */
enum {
    TC_TCP_ACK_OK = 0,
    TC_TCP_ACK_BAD_VERSION = 1,
    TC_TCP_ACK_WRONG_RECEIVER = 2,
    TC_TCP_ACK_WRONG_SECRET = 3,
    TC_TCP_ACK_WRONG_DIRECTION = 4,
    TC_TCP_ACK_DUPLICATE = 5,
};

/* Bytes read per recv() into the staging buffer; many small messages arrive in one call. */
#define TC_TCP_STAGE_LEN 65536
/* A payload remainder at least this large is read straight into its destination. */
#define TC_TCP_DIRECT_MIN 16384
/* Most iovecs handed to one sendmsg(). */
#define TC_TCP_IOV_MAX 64
/* An accepted socket must deliver its hello within this time. */
#define TC_TCP_HELLO_TIMEOUT_MS 30000

/* Layout of tc_tp_req_t.priv while a request is pending. */
enum {
    TC_TCP_P_NEXT = 0, /* next request in its queue */
    TC_TCP_P_BUF = 1,  /* user buffer (payload of sends, destination of receives and gets) */
    TC_TCP_P_LEN = 2,  /* send/put/get length or receive capacity */
    TC_TCP_P_OFF = 3,  /* bytes of header + payload already written (sends) */
    TC_TCP_P_TAG = 4,  /* receives: the tag */
    TC_TCP_P_HDR = 4,  /* sends: priv[4..7], the header in wire order (16 or 32 bytes) */
};

/* What an epoll event points at. */
enum { TC_TCP_POLL_LISTEN = 1, TC_TCP_POLL_CONN, TC_TCP_POLL_EP };
typedef struct tc_tcp_pollable {
    int kind;
    void *owner;
} tc_tcp_pollable_t;

typedef enum tc_tcp_ep_state {
    TC_TCP_EP_CONNECTING, /* active side: connect() in progress */
    TC_TCP_EP_WAITING,    /* passive side: the peer has not connected yet */
    TC_TCP_EP_UP,         /* the socket is established */
    TC_TCP_EP_FAILED,     /* the socket is closed; super.failed says why */
} tc_tcp_ep_state_t;

typedef enum tc_tcp_rx_state {
    TC_TCP_RX_ACK,     /* active side: the handshake answer */
    TC_TCP_RX_HDR,     /* a message header */
    TC_TCP_RX_PAYLOAD, /* a message payload */
} tc_tcp_rx_state_t;

/* A message that arrived before its receive was posted. */
typedef struct tc_tcp_unexp {
    struct tc_tcp_unexp *next;
    uint64_t tag;
    uint64_t len;
    int complete;
    unsigned char data[];
} tc_tcp_unexp_t;

/* An accepted socket before it belongs to an endpoint. */
typedef struct tc_tcp_conn {
    tc_tcp_pollable_t poll;
    struct tc_tcp_conn *next;
    int fd;
    char remote[32]; /* "a.b.c.d:port" of the connecting socket */
    uint64_t peer_id;
    uint64_t deadline_ns; /* for the hello */
    size_t hello_got;
    unsigned char hello[TC_TCP_HELLO_LEN];
    unsigned char ack[TC_TCP_ACK_LEN];
    size_t ack_off; /* ack bytes already written */
} tc_tcp_conn_t;

typedef struct tc_tcp_ep tc_tcp_ep_t;

/* Registered memory; its key is (generation << 32 | slot) in the context's table. */
typedef struct tc_tcp_mem {
    tc_tp_mem_t super;
    uint32_t slot;
    uint32_t gen;
} tc_tcp_mem_t;

typedef struct tc_tcp_mem_slot {
    tc_tcp_mem_t *mem; /* NULL: free */
    uint32_t gen;      /* bumped on every release so that stale keys miss */
} tc_tcp_mem_slot_t;

/* An unpacked remote key. */
typedef struct tc_tcp_rkey {
    tc_tp_rkey_t super;
    uint64_t key;
} tc_tcp_rkey_t;

/* A response the target owes (ACK or GET_RESP), sent through the send queue. */
typedef struct tc_tcp_ctl {
    tc_tp_req_t req;
    struct tc_tcp_ctl *next_free;
} tc_tcp_ctl_t;

typedef struct tc_tcp_ctx {
    tc_tp_ctx_t super;
    uint64_t self_id;
    int has_secret;
    unsigned char digest[TC_TCP_DIGEST_LEN];
    int epfd;
    int listen_fd;
    tc_tcp_pollable_t listen_poll;
    struct sockaddr_in addr; /* where listen_fd is bound */
    char ifname[IF_NAMESIZE];
    tc_tcp_ep_t *eps;
    tc_tcp_conn_t *hello_conns;            /* accepted, hello not complete */
    tc_tcp_conn_t *parked;                 /* validated, waiting for ep_connect (not in epoll) */
    uint64_t ncompleted;                   /* requests completed, ever */
    tc_tcp_mem_slot_t *mems;               /* registered memory by slot */
    uint32_t nmems;
    unsigned char stage[TC_TCP_STAGE_LEN]; /* always fully consumed before use elsewhere */
} tc_tcp_ctx_t;

struct tc_tcp_ep {
    tc_tp_ep_t super;
    tc_tcp_pollable_t poll;
    tc_tcp_ep_t *next;
    int fd;
    tc_tcp_ep_state_t state;
    uint32_t ev_mask; /* events registered in epoll (0: not registered) */
    char peer_str[32];

    /* tx: handshake bytes first (hello or ack), then the send queue */
    unsigned char tx_pre[TC_TCP_HELLO_LEN];
    size_t tx_pre_len;
    size_t tx_pre_off;
    tc_tp_req_t *sq_head, *sq_tail;
    size_t nsq;
    /* one-sided requests written whole, waiting for the target's answer (FIFO) */
    tc_tp_req_t *wq_head, *wq_tail;
    size_t nwq;
    tc_tcp_ctl_t *ctl_free; /* recycled response requests */

    /* rx */
    tc_tp_req_t *rq_head, *rq_tail; /* posted receives not matched yet */
    size_t nrq;
    tc_tcp_unexp_t *uq_head, *uq_tail;
    tc_tcp_rx_state_t rx_state;
    unsigned char rx_hdr[TC_TCP_RMA_HDR_LEN];
    int rx_kind; /* TC_TCP_K_* of the message being received */
    size_t rx_hdr_got;
    uint64_t rx_len;          /* length of the message being received */
    tc_tp_req_t *rx_req;      /* its receive, or NULL */
    tc_tcp_unexp_t *rx_unexp; /* or its unexpected buffer */
    unsigned char *rx_dst;    /* where the next payload byte goes */
    uint64_t rx_dst_left;     /* bytes still to store at rx_dst */
    uint64_t rx_discard;      /* bytes to drop after that (truncation) */
};

/* ---- tcp_wire.c ---- */
void tc_tcp_put_u16(unsigned char *p, uint16_t v);
void tc_tcp_put_u32(unsigned char *p, uint32_t v);
void tc_tcp_put_u64(unsigned char *p, uint64_t v);
uint16_t tc_tcp_get_u16(const unsigned char *p);
uint32_t tc_tcp_get_u32(const unsigned char *p);
uint64_t tc_tcp_get_u64(const unsigned char *p);
void tc_tcp_digest(const void *secret, size_t len, unsigned char out[TC_TCP_DIGEST_LEN]);
int tc_tcp_digest_equal(const unsigned char *a, const unsigned char *b);
const char *tc_tcp_ack_string(unsigned result);
void tc_tcp_sockaddr_string(const struct sockaddr_in *sa, char *buf, size_t cap);

/* ---- tcp_iface.c ---- */
tc_status_t tc_tcp_iface_select(struct in_addr *addr_p, char *name, size_t name_cap);

/* ---- tcp_ep.c ---- */
tc_status_t tc_tcp_ep_connect(tc_tp_ctx_t *ctx, uint64_t peer_id, const void *addr, size_t addr_len,
                              tc_tp_ep_t **ep_p);
void tc_tcp_ep_close(tc_tp_ep_t *ep);
tc_status_t tc_tcp_cancel(tc_tp_ep_t *ep, tc_tp_req_t *req);
/* Handle epoll @p events on an endpoint's socket. */
void tc_tcp_ep_on_events(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, uint32_t events);
/* Give a validated accepted connection to its waiting endpoint (frees @p conn). */
void tc_tcp_ep_attach(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_tcp_conn_t *conn);
tc_tcp_ep_t *tc_tcp_ep_find(tc_tcp_ctx_t *ctx, uint64_t peer_id);

void tc_tcp_req_complete(tc_tcp_ctx_t *ctx, tc_tp_req_t *req, tc_status_t status, size_t bytes);
/* Complete every request of a queue with @p status. */
void tc_tcp_queue_fail(tc_tcp_ctx_t *ctx, tc_tp_req_t **head, tc_tp_req_t **tail,
                       tc_status_t status);
/* Fail the endpoint: close its socket and complete its requests with @p status. The
 * text (a predicate, e.g. "closed the connection") follows "tcp: peer N (addr) ". */
void tc_tcp_ep_fail(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void tc_tcp_ep_update_events(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep);

/* ---- tcp_tx.c ---- */
tc_status_t tc_tcp_send(tc_tp_ep_t *ep, uint64_t tag, const void *buf, size_t len,
                        tc_tp_req_t *req);
/* Write what the socket takes of the handshake and the send queue. */
void tc_tcp_ep_flush(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep);

/* ---- tcp_rx.c ---- */
tc_status_t tc_tcp_recv(tc_tp_ep_t *ep, uint64_t tag, void *buf, size_t cap, tc_tp_req_t *req);
/* Read what the socket has and deliver it. */
void tc_tcp_ep_read(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep);

/* req->bytes of a send cancelled half-written, now owned by the backend (its
 * payload follows the request in the same allocation). */
#define TC_TCP_ORPHAN ((size_t)-1)

#define TC_TCP_REQ_NEXT(req) ((tc_tp_req_t *)(uintptr_t)(req)->priv[TC_TCP_P_NEXT])

/* The header of a queued send, its kind and lengths. */
static inline unsigned char *tc_tcp_sq_hdr(tc_tp_req_t *req)
{
    return (unsigned char *)&req->priv[TC_TCP_P_HDR];
}
static inline int tc_tcp_sq_kind(tc_tp_req_t *req)
{
    return tc_tcp_sq_hdr(req)[15];
}
static inline size_t tc_tcp_sq_hdr_len(tc_tp_req_t *req)
{
    return tc_tcp_sq_kind(req) == TC_TCP_K_MSG ? TC_TCP_HDR_LEN : TC_TCP_RMA_HDR_LEN;
}
static inline uint64_t tc_tcp_sq_payload_len(tc_tp_req_t *req)
{
    return tc_tcp_get_u64(tc_tcp_sq_hdr(req) + 8) & TC_TCP_LEN_MASK;
}
/* Append @p req to the send queue and write at once if it is alone there. */
void tc_tcp_sq_push(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_tp_req_t *req);

/* ---- tcp_rma.c ---- */
tc_status_t tc_tcp_mem_reg(tc_tp_ctx_t *ctx, void *addr, size_t len, tc_tp_mem_t **mem_p);
void tc_tcp_mem_dereg(tc_tp_mem_t *mem);
tc_status_t tc_tcp_rkey_pack(tc_tp_mem_t *mem, void *buf, size_t cap, size_t *len_p);
tc_status_t tc_tcp_rkey_unpack(tc_tp_ep_t *ep, const void *buf, size_t len, tc_tp_rkey_t **rkey_p);
void tc_tcp_rkey_release(tc_tp_rkey_t *rkey);
tc_status_t tc_tcp_put(tc_tp_ep_t *ep, const void *buf, size_t len, tc_tp_rkey_t *rkey,
                       uint64_t offset, tc_tp_req_t *req);
tc_status_t tc_tcp_get(tc_tp_ep_t *ep, void *buf, size_t len, tc_tp_rkey_t *rkey, uint64_t offset,
                       tc_tp_req_t *req);
tc_status_t tc_tcp_signal(tc_tp_ep_t *ep, tc_tp_rkey_t *rkey, uint64_t offset,
                          tc_tp_signal_op_t op, uint64_t value, tc_tp_req_t *req);
void tc_tcp_mem_table_free(tc_tcp_ctx_t *ctx);
/* A one-sided header (kind != 0) arrived whole in ep->rx_hdr: validate and act on it. */
void tc_tcp_rx_on_rma(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, int kind, uint64_t len);
/* The payload of a PUT is stored: answer it. */
void tc_tcp_rx_put_done(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep);
/* A send-queue entry was written whole: complete it, wait for its answer or recycle it. */
void tc_tcp_sq_written(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_tp_req_t *req);
/* The endpoint fails or closes: drop queued control requests, fail the waiting ones. */
void tc_tcp_sq_drop(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_status_t status);
void tc_tcp_ctl_free_all(tc_tcp_ep_t *ep);

/* ---- tcp_accept.c ---- */
void tc_tcp_on_listen(tc_tcp_ctx_t *ctx);
void tc_tcp_conn_on_events(tc_tcp_ctx_t *ctx, tc_tcp_conn_t *conn, uint32_t events);
void tc_tcp_conn_expire(tc_tcp_ctx_t *ctx);
/* Remove and return the parked connection from @p peer_id, or NULL. */
tc_tcp_conn_t *tc_tcp_conn_unpark(tc_tcp_ctx_t *ctx, uint64_t peer_id);
void tc_tcp_conn_free(tc_tcp_conn_t *conn);

#endif /* TCOMMS_TRANSPORT_TCP_INTERNAL_H */
