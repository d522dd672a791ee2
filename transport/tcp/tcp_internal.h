/* Private structures of the TCP backend, shared by its source files. */
#ifndef TCOMMS_TRANSPORT_TCP_INTERNAL_H
#define TCOMMS_TRANSPORT_TCP_INTERNAL_H

#include <net/if.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "tcomms/base/status.h"
#include "tcomms/transport/auth.h"
#include "tcomms/transport/loglimit.h"
#include "tcomms/transport/tcp.h"
#include "tcomms/transport/transport.h"

#include "tcp_bytes.h"

/* ---- wire format (all integers little-endian) ----
 * address  : u8 version=1, u8 family=4, u16 port (big-endian), u32 IPv4 (big-endian) of rail 0,
 *            then u32 IPv4 of each further rail (same port; 8 + 4 * (rails - 1) bytes)
 * Every socket (the primary and each data socket) opens with a challenge-response keyed by
 * the job secret (auth.h: HMAC-SHA-256 over purpose, both ids, both nonces and "extra"):
 * hello    : u32 magic, u16 version, u16 flags, u64 initiator id, u64 acceptor id, 32-byte
 *            nonce Ni, u64 session token (0 on a one-socket primary)            (64 bytes)
 *            flags of the primary socket: the number of sockets - 1 (0: one socket);
 *            flags of a data socket: TC_TCP_HELLO_F_DATA | its index (1 .. sockets - 1);
 *            TC_TCP_HELLO_F_KEYED when the initiator has a secret
 * challenge: u32 magic, u16 version, u16 result 0, u64 acceptor id, u64 initiator id,
 *            32-byte nonce Na, 32-byte MAC(acceptor role)                        (88 bytes)
 *            or, for a hello refused as it stands, an ack with the refusal, then close
 * proof    : 32-byte MAC(initiator role)                                         (32 bytes)
 *            both MACs: purpose "tcp/primary" or "tcp/data", ids, Ni, Na, and as extra the
 *            hello's u16 version, u16 flags and u64 token (12 bytes, little-endian)
 * ack      : u32 magic, u16 version, u16 result, u64 acceptor id, u64 initiator id (24 bytes)
 * message  : u64 tag, u64 kind << 56 | length, then length payload bytes (kind 0)
 * large    : u64 tag, u64 LMSG << 56 | length, u64 message id, u64 0; no payload: the bytes
 *            follow as chunks (primary socket only; ids strictly increase)
 * chunk    : u64 message id, u64 CHUNK << 56 | length, u64 offset, u64 flags, then length
 *            bytes of the large message at offset (any socket, after the large header on the
 *            primary); flags 0, or TC_TCP_CHUNK_F_RESENT between peers with several rails
 * chunk ack: u64 message id, u64 LACK << 56 | 0, u64 0, u64 0 (primary only, several rails:
 *            the receiver has every chunk of that striped message; see tcp_rail.c)
 * lane down: u64 data socket index, u64 LDOWN << 56 | 0, u64 0, u64 0 (primary only, several
 *            rails: the sender lost that data socket; the receiver drops it and sends again)
 * one-sided: u64 key, u64 kind << 56 | length, u64 offset, u64 arg, then length
 *            payload bytes (kinds TC_TCP_K_*; see tcp_rma.c)
 * The connecting side (smaller id) sends the hello; the accepting side checks what needs no
 * secret (version, ids, flags) and answers with the challenge; the connecting side checks the
 * acceptor's MAC (a fake acceptor fails the endpoint) and sends the proof, then its messages
 * at once; the accepting side checks the proof in constant time, then whether the connection
 * fits (duplicate, data socket of which primary), and answers with the ack, then messages.
 * With several sockets the connecting side opens the data sockets once the primary's ack
 * arrived; each carries the primary's token (see tcp_lane.c). Without a secret the same
 * exchange runs with a key anyone can compute: it is not authenticated. Payloads are neither
 * encrypted nor MACed. */
#define TC_TCP_ADDR_LEN 8
/* Interfaces (rails) one context uses (TC_SOCKET_IFNAME lists at most this many). */
#define TC_TCP_RAILS_MAX 4
#define TC_TCP_ADDR_LEN_MAX (TC_TCP_ADDR_LEN + 4 * (TC_TCP_RAILS_MAX - 1))
/* Chunk flags word: a copy re-sent after a data socket was lost (several rails only). */
#define TC_TCP_CHUNK_F_RESENT 1u
/* Several rails: data in flight on a data socket with no acknowledgement from the peer's kernel
 * for this long means the socket is lost (TC_SOCKET_RAIL_TIMEOUT_MS). */
#define TC_TCP_RAIL_TIMEOUT_MS 2000
#define TC_TCP_ADDR_VERSION 1
#define TC_TCP_MAGIC 0x50544354u /* "TCTP" */
#define TC_TCP_WIRE_VERSION 3
#define TC_TCP_HELLO_LEN 64
#define TC_TCP_CHALLENGE_LEN 88
#define TC_TCP_PROOF_LEN 32
#define TC_TCP_HS_EXTRA_LEN 12
#define TC_TCP_HELLO_F_DATA 0x8000u
#define TC_TCP_HELLO_F_KEYED 0x0100u
#define TC_TCP_HELLO_F_INDEX 0x00ffu
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
    TC_TCP_K_ACK = 0xA5,      /* arg = how many puts and signals it answers (at least 1) */
    TC_TCP_K_GET_RESP = 0xA6, /* payload: the data */
    TC_TCP_K_LMSG = 0xB1,     /* a striped message: tag, length, id; its bytes come as chunks */
    TC_TCP_K_CHUNK = 0xB2,    /* id, offset; payload: bytes of that message */
    TC_TCP_K_LACK = 0xB3,     /* id: every chunk of that striped message arrived */
    TC_TCP_K_LDOWN = 0xB4,    /* data socket index: lost on the sender's side */
};

/* Result codes carried by the ack. */
enum {
    TC_TCP_ACK_OK = 0,
    TC_TCP_ACK_BAD_VERSION = 1,
    TC_TCP_ACK_WRONG_RECEIVER = 2,
    TC_TCP_ACK_WRONG_SECRET = 3,
    TC_TCP_ACK_WRONG_DIRECTION = 4,
    TC_TCP_ACK_DUPLICATE = 5,
    TC_TCP_ACK_BAD_FLAGS = 6,     /* socket count or data socket index out of bounds */
    TC_TCP_ACK_NO_PRIMARY = 7,    /* a data socket, but no primary connection from that id */
    TC_TCP_ACK_WRONG_SESSION = 8, /* a data socket with another token than the primary's */
    TC_TCP_ACK_LANE_RANGE = 9,    /* a data socket index beyond the primary's socket count */
    TC_TCP_ACK_BAD_PROOF = 10,    /* the proof is not the MAC of this exchange under our key */
    TC_TCP_ACK_COUNT = 11,
};
/* tc_tcp_hello_parse(), besides the ack codes: not a tcomms hello (no answer at all), and
 * not enough bytes yet to decide. */
#define TC_TCP_HS_FOREIGN (-1)
#define TC_TCP_HS_MORE (-2)

/* Sockets per peer (TC_SOCKET_NSOCKS, hint tcp_nsocks): 1 .. TC_TCP_NSOCKS_MAX. One is the
 * default: on loopback and on a 2-core machine more sockets only add system calls (see
 * docs/transport_tcp.md for the measurements). */
#define TC_TCP_NSOCKS_MAX 16
#define TC_TCP_NSOCKS_DEFAULT 1
/* Messages of at least this many bytes are striped when there are several sockets
 * (TC_SOCKET_STRIPE_MIN, hint tcp_stripe_min); smaller ones are not worth the extra headers. */
#define TC_TCP_STRIPE_MIN_DEFAULT (256u << 10)
#define TC_TCP_STRIPE_MIN_LOW 4096u
/* Chunks of a striped message: at most this long (a socket takes one chunk at a time, so this
 * bounds how long a small message waits behind chunk data on the primary), at least
 * TC_TCP_CHUNK_MIN unless the message ends. */
#define TC_TCP_CHUNK_LEN (512u << 10)
#define TC_TCP_CHUNK_MIN (64u << 10)
/* Longest chunk a receiver accepts (the sender never exceeds TC_TCP_CHUNK_LEN). */
#define TC_TCP_CHUNK_MAX (16u << 20)

/* Largest unit of a sink (tc_tp_sink_t.unit); its pieces are aligned to the unit, at most to
 * TC_TCP_SINK_ALIGN. */
#define TC_TCP_SINK_UNIT_MAX 64
#define TC_TCP_SINK_ALIGN 16
/* Bytes read per recv() into the staging buffer (less the room for a sink's carry); many small
 * messages arrive in one call. */
#define TC_TCP_STAGE_LEN 65536
/* A payload remainder at least this large is read straight into its destination. */
#define TC_TCP_DIRECT_MIN 16384
/* Queued sends with at most this many bytes left are copied, header and payload, into one
 * contiguous area of TC_TCP_TX_COPY_LEN for the sendmsg() (tcp_tx.c): the kernel's copy costs
 * far more per iovec than a small memcpy (perf: a third of a burst of 8-byte puts' time at the
 * initiator was _copy_from_iter over 40-byte iovecs). */
#define TC_TCP_TX_COPY_MAX 512
#define TC_TCP_TX_COPY_LEN 16384
/* Most iovecs handed to one sendmsg() (the kernel takes 1024): a held burst's worth. */
#define TC_TCP_IOV_MAX 512
/* One-sided requests and their answers held unwritten per endpoint (tcp_tx.c: coalescing a
 * burst into one sendmsg); the next one is written with them at once. 2 iovecs each: one
 * sendmsg's worth. Fewer cost a system call per few puts, the kernel's send path being
 * most of a small put's time (perf, bursts of 512 8-byte puts: 32 held gave 0.55-0.76 us
 * per put, 256 gave 0.16). */
#define TC_TCP_HOLD_MAX 255
/* An accepted socket must complete the whole exchange (hello, challenge, proof) within this
 * time (TC_SOCKET_HANDSHAKE_TIMEOUT_MS); at most this many are in it at once per listener
 * (beyond, a new connection is closed at once). */
#define TC_TCP_HELLO_TIMEOUT_MS 5000
#define TC_TCP_PENDING_MAX 64
/* accept() failing for lack of descriptors or memory: the listener is not polled for this
 * long, doubling up to the maximum while it keeps failing. */
#define TC_TCP_ACCEPT_BACKOFF_MIN_MS 10
#define TC_TCP_ACCEPT_BACKOFF_MAX_MS 1000
/* Lines about refused or dropped connections: at most one per reason per this interval. */
#define TC_TCP_LOG_INTERVAL_MS 1000

/* Layout of tc_tp_req_t.priv while a request is pending. */
enum {
    TC_TCP_P_NEXT = 0, /* next request in its queue */
    TC_TCP_P_BUF = 1,  /* user buffer (payload of sends, destination of receives and gets) */
    TC_TCP_P_LEN = 2,  /* send/put/get length or receive capacity */
    TC_TCP_P_OFF = 3,  /* bytes of header + payload already written (sends) */
    TC_TCP_P_TAG = 4,  /* receives: the tag */
    TC_TCP_P_SINK = 5, /* receives: 1 when P_BUF is a tc_tp_sink_t (tcp_sink.c); P_OFF then
                          counts the bytes handed to it */
    TC_TCP_P_HDR = 4,  /* sends: priv[4..7], the header in wire order (16 or 32 bytes) */
    /* striped sends once their header is written (the tag is not needed any more; priv[5],
     * kind and length, and priv[6], the message id, stay as in the header) */
    TC_TCP_P_LNEXT = 4,  /* next byte not handed to a socket yet */
    TC_TCP_P_LID = 6,    /* message id */
    TC_TCP_P_LDONE = 7,  /* bytes written in whole chunks */
    TC_TCP_P_LFLAGS = 3, /* TC_TCP_LF_*: several rails only */
};
/* Flags of a striped send (priv[TC_TCP_P_LFLAGS]) between peers with several rails. */
#define TC_TCP_LF_RESENT 1u /* its chunks are being sent again after a lost data socket */
#define TC_TCP_LF_ACKED 2u  /* the receiver has every chunk: complete once no socket writes one */

/* What an epoll event points at. */
enum { TC_TCP_POLL_LISTEN = 1, TC_TCP_POLL_CONN, TC_TCP_POLL_EP, TC_TCP_POLL_LANE };
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
    TC_TCP_RX_CHALLENGE, /* active side: the challenge (or a refusal) */
    TC_TCP_RX_ACK,       /* active side: the answer to the proof */
    TC_TCP_RX_HDR,       /* a message header */
    TC_TCP_RX_PAYLOAD,   /* a message payload */
} tc_tcp_rx_state_t;

struct tc_tcp_lrx;

/* A message that arrived before its receive was posted. */
typedef struct tc_tcp_unexp {
    struct tc_tcp_unexp *next;
    uint64_t tag;
    uint64_t len;
    uint64_t cap; /* bytes data[] holds */
    int complete;
    struct tc_tcp_lrx *lrx;            /* a striped message still arriving, or NULL */
    _Alignas(16) unsigned char data[]; /* aligned for a sink's elements */
} tc_tcp_unexp_t;

/* A striped message being received: chunks land at dst + offset (below cap). */
typedef struct tc_tcp_lrx {
    struct tc_tcp_lrx *next;
    uint64_t id;
    uint64_t len;          /* message length */
    uint64_t begun;        /* bytes of chunks whose header arrived (bounded by len) */
    uint64_t done;         /* bytes of chunks received whole; complete when == len */
    unsigned char *dst;    /* the posted buffer or the unexpected one; NULL: drop (cancelled) */
    uint64_t cap;          /* bytes of dst */
    tc_tp_req_t *req;      /* the matched receive, or NULL */
    tc_tcp_unexp_t *unexp; /* the unexpected buffer, or NULL */
    int claimed;           /* unexp was taken out of the queue by a receive: copy, then free */
    /* several rails: chunks lie on a grid of `chunk` bytes (the sender's tc_tcp_chunk_size),
     * map has a bit per chunk received whole, so a re-sent copy is neither lost nor counted
     * twice; NULL with one rail */
    uint64_t chunk;
    unsigned char *map;
    unsigned char *own; /* a sink receive's landing buffer (dst), freed with the record */
} tc_tcp_lrx_t;

/* A hello taken apart (tc_tcp_hello_parse). */
typedef struct tc_tcp_hello {
    uint16_t version, flags;
    uint64_t sender, receiver; /* initiator and acceptor ids */
    unsigned char nonce[TC_AUTH_NONCE_LEN];
    uint64_t token;
    int is_data; /* a data socket (index) or the primary (nsocks) */
    int index;
    int nsocks;
    int keyed; /* the initiator has a secret */
} tc_tcp_hello_t;

/* An accepted socket before it belongs to an endpoint. */
typedef struct tc_tcp_conn {
    tc_tcp_pollable_t poll;
    struct tc_tcp_conn *next;
    int fd;
    char remote[32]; /* "a.b.c.d:port" of the connecting socket */
    uint64_t peer_id;
    uint64_t deadline_ns; /* for the whole exchange */
    int challenged;       /* 0: reading the hello; 1: the challenge went out, reading the proof */
    uint32_t ev_mask;     /* events registered in epoll */
    size_t in_got;
    unsigned char in[TC_TCP_HELLO_LEN]; /* the hello, then the proof */
    tc_tcp_hello_t hello;
    unsigned char na[TC_AUTH_NONCE_LEN]; /* our nonce */
    unsigned char out[TC_TCP_CHALLENGE_LEN];
    size_t out_off; /* challenge bytes already written */
    unsigned char ack[TC_TCP_ACK_LEN];
    size_t ack_off; /* ack bytes already written */
    int is_data;    /* a data socket (index) or the primary (nsocks) */
    int index;
    int nsocks;
    uint64_t token;
} tc_tcp_conn_t;

/* A chunk of a striped send being written on one socket. */
typedef struct tc_tcp_chunk_tx {
    tc_tp_req_t *req; /* the striped send, or NULL: idle */
    uint64_t off, len;
    size_t done; /* bytes of header + payload written */
    unsigned char hdr[TC_TCP_RMA_HDR_LEN];
} tc_tcp_chunk_tx_t;

typedef enum tc_tcp_lane_state {
    TC_TCP_LANE_OFF,        /* not opened (yet) */
    TC_TCP_LANE_CONNECTING, /* active side: connect() in progress */
    TC_TCP_LANE_HANDSHAKE,  /* active side: hello sent or being sent, waiting for the challenge */
    TC_TCP_LANE_PROOF,      /* active side: proof sent or being sent, waiting for the ack */
    TC_TCP_LANE_UP,         /* carries chunks */
    TC_TCP_LANE_CLOSED,     /* the peer closed it while no striped message was in flight, or
                               (several rails) it was lost and its chunks went elsewhere */
} tc_tcp_lane_state_t;

typedef enum tc_tcp_lane_rx {
    TC_TCP_LANE_RX_HDR,     /* a chunk header (the ack while in HANDSHAKE) */
    TC_TCP_LANE_RX_PAYLOAD, /* chunk bytes */
    TC_TCP_LANE_RX_STALLED, /* a chunk of a message the primary has not announced yet */
} tc_tcp_lane_rx_t;

/* A data socket of an endpoint (index 1 .. nsocks - 1): chunks only, both ways. */
typedef struct tc_tcp_lane {
    tc_tcp_pollable_t poll;
    struct tc_tcp_ep *ep;
    int index;
    int rail; /* index % the endpoint's rails */
    int fd;
    tc_tcp_lane_state_t state;
    uint32_t ev_mask;
    int registered;                        /* in the epoll set (ev_mask may be 0 while stalled) */
    unsigned char pre[TC_TCP_HELLO_LEN];   /* hello, then proof (active side) or ack */
    unsigned char hello[TC_TCP_HELLO_LEN]; /* active side: the hello sent (for the proof) */
    size_t pre_len, pre_off;
    tc_tcp_chunk_tx_t tx;
    tc_tcp_lane_rx_t rx_state;
    unsigned char rx_hdr[TC_TCP_CHALLENGE_LEN]; /* a chunk header, or the challenge or ack */
    size_t rx_hdr_got;
    uint64_t rx_len;
    tc_tcp_lrx_t *rx_lrx;
    uint64_t rx_off; /* offset of the chunk being received */
    unsigned char *rx_dst;
    uint64_t rx_dst_left;
    uint64_t rx_discard;
} tc_tcp_lane_t;

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

/* One interface this context uses (TC_SOCKET_IFNAME). */
typedef struct tc_tcp_rail {
    char name[IF_NAMESIZE];
    struct in_addr ip;
} tc_tcp_rail_t;

typedef struct tc_tcp_ctx {
    tc_tp_ctx_t super;
    uint64_t self_id;
    tc_auth_key_t key; /* from the job secret; key.keyed 0: none (not authenticated) */
    int epfd;
    int listen_fd;
    tc_tcp_pollable_t listen_poll;
    int listen_paused;         /* accept() ran out of descriptors: out of epoll until... */
    uint64_t listen_resume_ns; /* ...this time */
    int accept_backoff_ms;     /* the current back-off (0: none) */
    int hs_timeout_ms;         /* the exchange of an accepted socket must end within this */
    int nhello;                /* connections in hello_conns (bounded by TC_TCP_PENDING_MAX) */
    tc_tp_loglimit_t rlog[TC_TCP_ACK_COUNT + 6]; /* refusals by ack code, then TC_TCP_RL_* */
    struct sockaddr_in addr; /* rail 0's address and the port (several rails: listen_fd is
                                bound to the wildcard address at that port) */
    tc_tcp_rail_t rails[TC_TCP_RAILS_MAX];
    int nrails;
    int rail_timeout_ms;    /* several rails: a data socket unacknowledged this long is lost */
    uint64_t rail_sends;    /* striped sends in flight to peers with several rails */
    uint64_t rail_watch_ns; /* when tc_tcp_rail_watch looks at their data sockets next */
    tc_tcp_ep_t *eps;
    tc_tcp_conn_t *hello_conns; /* accepted, hello not complete */
    tc_tcp_conn_t *parked;      /* validated, waiting for ep_connect (not in epoll) */
    tc_tcp_conn_t *parked_data; /* data sockets of parked primaries */
    int nsocks;                 /* sockets per peer this side asks for */
    uint64_t stripe_min;        /* smallest striped message */
    uint64_t ncompleted;        /* requests completed, ever */
    uint64_t nserved;           /* peers' puts, gets and signals applied here, ever */
    tc_tcp_ep_t *held;          /* endpoints with held sends (tcp_tx.c), written by progress */
    tc_tcp_mem_slot_t *mems;    /* registered memory by slot */
    uint32_t nmems;
    unsigned nunexp_free;            /* at most TC_TCP_UNEXP_KEEP */
    struct tc_tcp_unexp *unexp_free; /* records of TC_TCP_UNEXP_BYTES kept for reuse (tcp_rx.c) */
    struct tc_tcp_unexp *unexp_big;  /* the last larger record released, kept for the next */
    uint64_t unexp_allocs;           /* records allocated (a white-box test counts them) */
    /* always fully consumed before use elsewhere; aligned, so that a sink's pieces can be */
    _Alignas(16) unsigned char stage[TC_TCP_STAGE_LEN];
    /* small queued sends gathered for one sendmsg (tc_tcp_ep_flush), rebuilt from the
     * requests for each call: nothing in it outlives the call */
    unsigned char tx_copy[TC_TCP_TX_COPY_LEN];
} tc_tcp_ctx_t;

struct tc_tcp_ep {
    tc_tp_ep_t super;
    tc_tcp_pollable_t poll;
    tc_tcp_ep_t *next;
    int fd;
    tc_tcp_ep_state_t state;
    uint32_t ev_mask; /* events registered in epoll (0: not registered) */
    char peer_str[32];
    struct sockaddr_in peer_sa;               /* active side: where the data sockets connect */
    struct in_addr peer_ip[TC_TCP_RAILS_MAX]; /* the peer's rails (same port) */
    int nrails;           /* rails of this pair: the smaller count of the two sides */
    int nsocks;           /* sockets of this pair (the connecting side's choice) */
    int lanes_lost;       /* data sockets lost and failed over (several rails) */
    uint64_t token;       /* binds the data sockets to the primary */
    tc_tcp_lane_t *lanes; /* nsocks - 1 data sockets, or NULL */

    /* tx: handshake bytes first (hello or ack), then a chunk being written, then the send
     * queue */
    unsigned char tx_pre[TC_TCP_HELLO_LEN];
    size_t tx_pre_len;
    size_t tx_pre_off;
    int hs_wait;                           /* active side: waiting for the challenge, nothing
                                              but the hello may be written */
    unsigned char hello[TC_TCP_HELLO_LEN]; /* active side: the hello sent (for the proof) */
    tc_tp_req_t *sq_head, *sq_tail;
    size_t nsq;
    tc_tcp_ep_t *held_next; /* in ctx->held while held is set */
    int held;               /* the send queue holds requests not handed to the socket yet */
    int defer;              /* tc_tp_defer: hold puts and gets until the next progress */
    /* one-sided requests written whole, waiting for the target's answer (FIFO) */
    tc_tp_req_t *wq_head, *wq_tail;
    size_t nwq;
    tc_tcp_ctl_t *ctl_free; /* recycled response requests */
    uint64_t acks_owed;     /* puts and signals applied here and not yet acknowledged */
    /* striped sends whose header is written, until their last chunk is (FIFO) */
    tc_tp_req_t *lq_head, *lq_tail;
    size_t nlq;
    uint64_t tx_last_id;        /* id of the last striped send posted */
    tc_tcp_chunk_tx_t tx_chunk; /* a chunk on the primary socket */

    /* rx */
    tc_tp_req_t *rq_head, *rq_tail; /* posted receives not matched yet */
    size_t nrq;
    tc_tcp_unexp_t *uq_head, *uq_tail;
    tc_tcp_rx_state_t rx_state;
    unsigned char rx_hdr[TC_TCP_CHALLENGE_LEN]; /* a header, or the challenge or ack */
    int rx_kind;                                /* TC_TCP_K_* of the message being received */
    size_t rx_hdr_got;
    uint64_t rx_len;          /* length of the message being received */
    uint64_t rx_off;          /* offset of the chunk being received */
    tc_tp_req_t *rx_req;      /* its receive, or NULL */
    tc_tcp_unexp_t *rx_unexp; /* or its unexpected buffer */
    unsigned char *rx_dst;    /* where the next payload byte goes */
    uint64_t rx_dst_left;     /* bytes still to store at rx_dst */
    uint64_t rx_discard;      /* bytes to drop after that (truncation) */
    int rx_sink;              /* rx_req is a sink receive: rx_dst_left bytes go to its sink */
    size_t rx_carry_len;      /* bytes in rx_carry: the start of a piece not a unit long yet */
    unsigned char rx_carry[TC_TCP_SINK_UNIT_MAX];
    tc_tcp_lrx_t *rx_lrx;   /* the striped message of a chunk being received */
    tc_tcp_lrx_t *lrx_head; /* striped messages announced and not complete */
    uint64_t rx_last_id;    /* id of the last striped message announced */
    int draining;           /* the primary ended: the data sockets are being read out */
};

/* ---- tcp_wire.c ---- */
const char *tc_tcp_ack_string(unsigned result);
/* A fresh non-zero session token (getrandom, else time and pid mixed). */
uint64_t tc_tcp_token_new(void);
void tc_tcp_sockaddr_string(const struct sockaddr_in *sa, char *buf, size_t cap);

/* ---- tcp_hs.c: the handshake's bytes (pure functions: no sockets, no context) ---- */
/* Take apart and check a hello (@p len bytes; a prefix is enough to refuse) for an acceptor
 * with id @p self_id that has a secret when @p self_keyed: TC_TCP_ACK_OK with *h filled,
 * TC_TCP_HS_MORE (need TC_TCP_HELLO_LEN bytes), TC_TCP_HS_FOREIGN (not a tcomms hello: no
 * answer), or the refusal code (version, receiver, secret flag, direction, flags). Nothing in
 * it is authenticated yet: state (duplicates, sessions) is looked at only after the proof. */
int tc_tcp_hello_parse(const unsigned char *buf, size_t len, uint64_t self_id, int self_keyed,
                       tc_tcp_hello_t *h);
/* Encode a hello. */
void tc_tcp_hello_make(unsigned char out[TC_TCP_HELLO_LEN], uint16_t flags, uint64_t sender,
                       uint64_t receiver, const unsigned char nonce[TC_AUTH_NONCE_LEN],
                       uint64_t token);
/* Acceptor: the challenge to hello @p h with our nonce @p na. */
void tc_tcp_challenge_make(unsigned char out[TC_TCP_CHALLENGE_LEN], const tc_auth_key_t *key,
                           const tc_tcp_hello_t *h, const unsigned char na[TC_AUTH_NONCE_LEN]);
/* Acceptor: TC_TCP_ACK_OK when @p proof (@p len bytes) is the initiator's MAC of the exchange
 * of @p h and @p na under @p key (constant time), else TC_TCP_ACK_BAD_PROOF. */
unsigned tc_tcp_proof_check(const tc_auth_key_t *key, const tc_tcp_hello_t *h,
                            const unsigned char na[TC_AUTH_NONCE_LEN], const unsigned char *proof,
                            size_t len);
/* Initiator: 1 when challenge @p chal (TC_TCP_CHALLENGE_LEN bytes, header already checked)
 * carries the acceptor's MAC of the exchange opened by @p hello, and then @p proof is ours;
 * 0 when the acceptor does not hold the key. */
int tc_tcp_challenge_answer(const tc_auth_key_t *key, const unsigned char hello[TC_TCP_HELLO_LEN],
                            const unsigned char *chal, unsigned char proof[TC_TCP_PROOF_LEN]);
/* An ack (or refusal) from @p sender to @p receiver. */
void tc_tcp_ack_make(unsigned char out[TC_TCP_ACK_LEN], unsigned result, uint64_t sender,
                     uint64_t receiver);
/* Bytes of the answer to a hello needed once @p got bytes of it are in @p a: the header of a
 * refusal, or the whole challenge. */
size_t tc_tcp_challenge_need(const unsigned char *a, size_t got);

/* Reasons of rate-limited log lines beyond the ack codes (index into ctx->rlog). */
enum {
    TC_TCP_RL_FOREIGN = TC_TCP_ACK_COUNT, /* not a tcomms hello */
    TC_TCP_RL_TIMEOUT,                    /* the exchange did not end in time */
    TC_TCP_RL_CLOSED,                     /* closed or reset during the exchange */
    TC_TCP_RL_CAP,                        /* too many connections in their exchange */
    TC_TCP_RL_ACCEPT,                     /* accept() failed */
    TC_TCP_RL_OTHER,                      /* out of memory, epoll */
};

/* ---- tcp_iface.c ---- */
/* The rails from TC_SOCKET_IFNAME (a comma-separated list of interface names; unset: the first
 * non-loopback IPv4 interface up, else 127.0.0.1): fills rails[0 .. *nrails_p - 1]. */
TC_MUST_USE tc_status_t tc_tcp_iface_select(tc_tcp_rail_t rails[TC_TCP_RAILS_MAX], int *nrails_p);

/* ---- tcp_ep.c ---- */
TC_MUST_USE tc_status_t tc_tcp_ep_connect(tc_tp_ctx_t *ctx, uint64_t peer_id, const void *addr,
                                          size_t addr_len, tc_tp_ep_t **ep_p);
void tc_tcp_ep_close(tc_tp_ep_t *ep);
TC_MUST_USE tc_status_t tc_tcp_cancel(tc_tp_ep_t *ep, tc_tp_req_t *req);
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

/* ---- tcp_sink.c: receiving into a consumer ---- */
TC_MUST_USE tc_status_t tc_tcp_recv_sink(tc_tp_ep_t *ep, uint64_t tag, const tc_tp_sink_t *sink,
                                         size_t cap, tc_tp_req_t *req);
/* Hand @p n payload bytes of the primary's current message to its sink receive ep->rx_req, in
 * whole units (a tail shorter than the unit waits in ep->rx_carry); @p last: they end the bytes
 * the receive keeps. @p p lies in ctx->stage, whose bytes before it are consumed, and with
 * ep->rx_carry_len bytes of room before it: the carry is put there and the piece moved down
 * to an aligned address when it is not on one. A consumer's error completes the receive with
 * it and drops the rest. */
void tc_tcp_sink_feed(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, const unsigned char *p, size_t n,
                      int last);
/* Hand the first @p n bytes of a message, landed whole at @p data (16-byte aligned), to sink
 * receive @p req, then complete it (TC_ERR_TRUNCATED when the message had @p len > n bytes). */
void tc_tcp_sink_deliver(tc_tcp_ctx_t *ctx, tc_tp_req_t *req, const unsigned char *data, uint64_t n,
                         uint64_t len);

/* ---- tcp_tx.c ---- */
TC_MUST_USE tc_status_t tc_tcp_send(tc_tp_ep_t *ep, uint64_t tag, const void *buf, size_t len,
                                    tc_tp_req_t *req);
/* Write what the socket takes of the handshake and the send queue. */
void tc_tcp_ep_flush(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep);
/* Write the send queues of the endpoints holding requests (start and end of each progress). */
void tc_tcp_held_flush(tc_tcp_ctx_t *ctx);
/* Take @p ep off the held list (it is being freed). */
void tc_tcp_held_unlink(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep);
/* tc_tp_defer: puts and gets posted on @p ep wait for the next progress, which clears it. */
void tc_tcp_defer(tc_tp_ep_t *ep);

/* ---- tcp_rx.c ---- */
TC_MUST_USE tc_status_t tc_tcp_recv(tc_tp_ep_t *ep, uint64_t tag, void *buf, size_t cap,
                                    tc_tp_req_t *req);
/* An unexpected message with @p tag (striped ones included): 1 and its length (ops->probe). */
int tc_tcp_probe(tc_tp_ep_t *ep, uint64_t tag, uint64_t *len_p);
/* A receive into @p buf, or (@p sink) into the tc_tp_sink_t @p buf points to. */
TC_MUST_USE tc_status_t tc_tcp_recv_post(tc_tp_ep_t *ep, uint64_t tag, void *buf, size_t cap,
                                         int sink, tc_tp_req_t *req);
/* Unlink and return the oldest posted receive for @p tag, or NULL. */
tc_tp_req_t *tc_tcp_rq_match(tc_tcp_ep_t *ep, uint64_t tag);
/* Read what the socket has and deliver it: until it would block when @p drain, else until a
 * read comes back short of what it asked for (the socket had no more then; epoll, level-triggered,
 * reports what arrives later), which spares the read that would only say EAGAIN. Then queues one
 * ack for the puts and signals the read applied (tc_tcp_acks_send). */
void tc_tcp_ep_read(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, int drain);

/* req->bytes of a send cancelled half-written, now owned by the backend (its
 * payload follows the request in the same allocation). */
#define TC_TCP_ORPHAN ((size_t)-1)
/* req->bytes while a caller's send or receive is pending (every completion overwrites it): a
 * second post of it, which would link it into a queue twice, is refused */
#define TC_TCP_POSTED ((size_t)-2)

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
/* Payload bytes that follow the header on the primary (none for a striped message). */
static inline uint64_t tc_tcp_sq_wire_len(tc_tp_req_t *req)
{
    return tc_tcp_sq_kind(req) == TC_TCP_K_LMSG ? 0 : tc_tcp_sq_payload_len(req);
}
/* Append @p req to the send queue and write at once if it is alone there, except one-sided
 * requests and answers, which may be held for one write (tcp_tx.c). */
void tc_tcp_sq_push(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_tp_req_t *req);

/* ---- tcp_rma.c ---- */
TC_MUST_USE tc_status_t tc_tcp_mem_reg(tc_tp_ctx_t *ctx, void *addr, size_t len,
                                       tc_tp_mem_t **mem_p);
void tc_tcp_mem_dereg(tc_tp_mem_t *mem);
TC_MUST_USE tc_status_t tc_tcp_rkey_pack(tc_tp_mem_t *mem, void *buf, size_t cap, size_t *len_p);
TC_MUST_USE tc_status_t tc_tcp_rkey_unpack(tc_tp_ep_t *ep, const void *buf, size_t len,
                                           tc_tp_rkey_t **rkey_p);
void tc_tcp_rkey_release(tc_tp_rkey_t *rkey);
TC_MUST_USE tc_status_t tc_tcp_put(tc_tp_ep_t *ep, const void *buf, size_t len, tc_tp_rkey_t *rkey,
                                   uint64_t offset, tc_tp_req_t *req);
TC_MUST_USE tc_status_t tc_tcp_get(tc_tp_ep_t *ep, void *buf, size_t len, tc_tp_rkey_t *rkey,
                                   uint64_t offset, tc_tp_req_t *req);
TC_MUST_USE tc_status_t tc_tcp_signal(tc_tp_ep_t *ep, tc_tp_rkey_t *rkey, uint64_t offset,
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
/* Queue the ack the target owes for the puts and signals applied since its last answer, if any. */
void tc_tcp_acks_send(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep);

/* ---- tcp_stripe.c: striped messages ---- */
/* The header of striped send @p req is written: its chunks may go out on any socket. */
void tc_tcp_lq_push(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_tp_req_t *req);
/* Hand @p tx the next chunk of the oldest striped send with bytes left; 0 when none. */
int tc_tcp_chunk_pull(tc_tcp_ep_t *ep, tc_tcp_chunk_tx_t *tx);
/* iovecs of what is left of @p tx (at most 2); adds their bytes to *total_p. */
int tc_tcp_chunk_iov(tc_tcp_chunk_tx_t *tx, struct iovec *iov, size_t *total_p);
/* Account up to @p n written bytes to @p tx; returns how many it took. A send whose last
 * chunk is written completes. */
size_t tc_tcp_chunk_advance(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_tcp_chunk_tx_t *tx, size_t n);
/* Cancel of a striped send already on the wire: its chunks continue from a private copy.
 * Returns 0 when @p req is not such a send. */
int tc_tcp_lq_cancel(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_tp_req_t *req, tc_status_t *status_p);
/* The primary announced a striped message (header in @p hdr): match or buffer it. */
void tc_tcp_lrx_announce(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, const unsigned char *hdr);
/* A chunk header arrived on socket @p index: 1 when *dst_p etc. say where its bytes go, 0 when
 * its message is not announced yet (data sockets only), -1 when the endpoint failed. */
int tc_tcp_chunk_rx_begin(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, int index, const unsigned char *hdr,
                          tc_tcp_lrx_t **lrx_p, unsigned char **dst_p, uint64_t *dst_left_p,
                          uint64_t *discard_p, uint64_t *len_p, uint64_t *off_p);
/* The chunk of @p len bytes at @p off of @p lrx is in (lrx NULL: a dropped copy); the message
 * completes with its last one. */
void tc_tcp_chunk_rx_done(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_tcp_lrx_t *lrx, uint64_t off,
                          uint64_t len);
/* Several rails: a striped send whose chunks may all be out completes once acknowledged and
 * no socket is writing one of them. */
void tc_tcp_lq_try_done(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_tp_req_t *req);
/* The striped send with id @p id, or NULL. */
tc_tp_req_t *tc_tcp_lq_find(tc_tcp_ep_t *ep, uint64_t id);
/* A receive claims an unexpected striped message still arriving. */
void tc_tcp_lrx_claim(tc_tcp_lrx_t *lrx, tc_tp_req_t *req);
/* Cancel of a receive matched to a striped message: 0 when @p req is not one. */
int tc_tcp_lrx_cancel(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_tp_req_t *req);
/* Pending striped sends and receives (for failure texts). */
size_t tc_tcp_lrx_nrecv(const tc_tcp_ep_t *ep);
/* The endpoint fails or closes: complete striped sends and receives with @p status. */
void tc_tcp_stripe_drop(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_status_t status);

/* ---- tcp_lane.c: data sockets ---- */
/* Room for the nsocks - 1 data sockets of @p ep (nsocks already set); 0 when out of memory. */
int tc_tcp_lanes_alloc(tc_tcp_ep_t *ep);
/* Active side, primary acknowledged: connect the data sockets. */
void tc_tcp_lanes_start(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep);
/* Passive side: give a validated data connection to its lane (frees @p conn). */
void tc_tcp_lane_attach(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, tc_tcp_conn_t *conn);
void tc_tcp_lane_on_events(tc_tcp_ctx_t *ctx, tc_tcp_lane_t *lane, uint32_t events);
/* Idle data sockets take chunks of the striped sends. */
void tc_tcp_lanes_kick(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep);
/* A striped message was announced: data sockets waiting for it go on. */
void tc_tcp_lanes_unstall(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep);
/* Close the data sockets (their requests are the caller's business). */
void tc_tcp_lanes_close(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep);
/* Close @p lane and forget what it was reading and writing; returns the striped send whose
 * chunk it was writing, or NULL. */
tc_tp_req_t *tc_tcp_lane_drop(tc_tcp_ctx_t *ctx, tc_tcp_lane_t *lane);
/* The primary ended: take the chunks already in the data sockets, so that striped messages
 * sent whole before the end can still be received. */
void tc_tcp_lanes_drain(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep);

/* ---- tcp_rail.c: several rails: failover of lost data sockets ---- */
/* Data socket @p lane is lost (reset, error, end of stream, no acknowledgement): with several
 * rails close it, log one warning and send again the chunks the peer may lack on the other
 * sockets (1); with one rail, or while it is in its handshake, fail the endpoint (0). */
int tc_tcp_rail_lane_lost(tc_tcp_ctx_t *ctx, tc_tcp_lane_t *lane, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Several rails: tell the peer that striped message @p id arrived whole. */
void tc_tcp_rail_ack_send(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, uint64_t id);
/* A chunk ack or lane down (header in @p hdr) arrived on the primary. */
void tc_tcp_rail_on_ctl(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, const unsigned char *hdr);
/* Connecting side, several rails: bind data socket @p fd of @p lane to the local rail's
 * address. 0 on failure (errno set). */
int tc_tcp_rail_bind(const tc_tcp_ctx_t *ctx, const tc_tcp_lane_t *lane, int fd);
/* Progress, while striped sends to peers with several rails are in flight (rail_sends > 0):
 * at most every TC_SOCKET_RAIL_TIMEOUT_MS / 4, declare lost the data sockets whose data in
 * flight has had no acknowledgement for TC_SOCKET_RAIL_TIMEOUT_MS. */
void tc_tcp_rail_watch(tc_tcp_ctx_t *ctx);

/* ---- tcp_accept.c ---- */
void tc_tcp_on_listen(tc_tcp_ctx_t *ctx);
/* Put a listener paused by accept() failures back into epoll once its back-off ended. */
void tc_tcp_listen_resume(tc_tcp_ctx_t *ctx);
void tc_tcp_conn_on_events(tc_tcp_ctx_t *ctx, tc_tcp_conn_t *conn, uint32_t events);
void tc_tcp_conn_expire(tc_tcp_ctx_t *ctx);
/* Remove and return the parked connection from @p peer_id, or NULL. */
tc_tcp_conn_t *tc_tcp_conn_unpark(tc_tcp_ctx_t *ctx, uint64_t peer_id);
/* Remove and return a parked data connection from @p peer_id, or NULL. */
tc_tcp_conn_t *tc_tcp_conn_unpark_data(tc_tcp_ctx_t *ctx, uint64_t peer_id);
void tc_tcp_conn_free(tc_tcp_conn_t *conn);

/* tcp_rma.c: queue a control message of @p kind (ACK, GET_RESP with @p len bytes at @p data,
 * LACK, LDOWN) on the primary; its header's first word is @p word0, its last @p word3. 0 when out
 * of memory (the endpoint failed). */
int tc_tcp_ctl_push(tc_tcp_ctx_t *ctx, tc_tcp_ep_t *ep, int kind, const void *data, uint64_t len,
                    uint64_t word0, uint64_t word3);

/* tcp_rx.c: a new unexpected message at the end of the queue, or NULL (no memory). Records of
 * messages up to TC_TCP_UNEXP_BYTES come from the context's kept ones (up to TC_TCP_UNEXP_KEEP),
 * so a small message that arrives before its receive costs no allocation in the steady state.
 * The last larger record released stays for a message of its size down to half of it: large
 * operations back to back, whose next message often arrives before its receive, reuse its pages
 * instead of faulting a fresh allocation in page by page (about 20 ms for 32 MiB on the AMD
 * VM); a context holds at most one, of the size of a message it received. */
#define TC_TCP_UNEXP_BYTES 8192
#define TC_TCP_UNEXP_KEEP 16
tc_tcp_unexp_t *tc_tcp_unexp_append(tc_tcp_ep_t *ep, uint64_t tag, uint64_t len);
/* Give an unexpected-message record back: kept for reuse, or freed. */
void tc_tcp_unexp_release(tc_tcp_ctx_t *ctx, tc_tcp_unexp_t *u);
/* ops->discard: unexpected messages, whole and unclaimed. */
int tc_tcp_discard(tc_tp_ep_t *ep, int (*drop)(void *arg, uint64_t tag), void *arg);
/* The ops' trim: free the kept large record (the small ones stay: 128 KiB at most). */
void tc_tcp_trim(tc_tp_ctx_t *ctx);

#endif /* TCOMMS_TRANSPORT_TCP_INTERNAL_H */
