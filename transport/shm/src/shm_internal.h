/* Private structures of the shm backend, shared by its source files. */
#ifndef TCOMMS_TRANSPORT_SHM_INTERNAL_H
#define TCOMMS_TRANSPORT_SHM_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tcomms/base/pool.h"
#include "tcomms/base/status.h"
#include "tcomms/transport/auth.h"
#include "tcomms/transport/shm.h"
#include "tcomms/transport/shm_lane.h"
#include "tcomms/transport/shm_layout.h"
#include "tcomms/transport/transport.h"

#define TC_SHM_DEV "/dev/shm"         /* where shm_open's names live (glibc, Linux) */
#define TC_SHM_ADDR_MAGIC 0x4d534354u /* "TCSM" */
#define TC_SHM_RKEY_MAGIC 0x4b4d5354u /* "TSMK" */
#define TC_SHM_ADDR_VERSION 2         /* 2: the side that connects first makes the segment */
/* Cells handled per endpoint and progress call, so one busy peer cannot starve the others. */
#define TC_SHM_RX_BUDGET 64
/* Bytes of single-copy reads per progress call, after which the call reads nothing more of
 * any message or cell (it always reads one piece when there is one): a caller holds its
 * world's lock for the call, and another thread waiting for that lock should not wait for a
 * whole burst of MiBs, or a whole 64 MiB message. */
#define TC_SHM_PASS_COPY_MAX (1u << 20)
/* Unexpected-message records of a cell's size kept for reuse, so an eager message that arrives
 * before its receive costs no allocation once the context has seen as many in flight. */
#define TC_SHM_UNEXP_KEEP 16
/* How often a side waiting for the other's segment tries shm_open again. */
#define TC_SHM_OPEN_RETRY_NS 200000ULL

/* Layout of tc_tp_req_t.priv while a request is pending. */
enum {
    TC_SHM_P_NEXT = 0,   /* next request in its queue */
    TC_SHM_P_BUF = 1,    /* user buffer (signal: the value) */
    TC_SHM_P_LEN = 2,    /* length or capacity (signal: the op) */
    TC_SHM_P_TAG = 3,    /* tag (put/get/signal: the remote offset) */
    TC_SHM_P_KIND = 4,   /* TC_SHM_K_* */
    TC_SHM_P_OFF = 5,    /* bytes pushed into the ring or received */
    TC_SHM_P_COOKIE = 6, /* identifies the request in ACK / GET_DATA cells */
    TC_SHM_P_KEY = 7,    /* remote key id (put/get/signal) */
};
/* Receives: 1 when P_BUF is a tc_tp_sink_t, not a buffer (tc_shm_recv_sink). */
#define TC_SHM_P_SINK TC_SHM_P_KEY
/* Bytes of a context's staging area, through which a sink receive reads a
 * single-copy message piece by piece: small enough to stay in cache while the
 * consumer uses a piece, large enough that a system call moves a lot. */
#define TC_SHM_STAGE_BYTES (128u << 10)
enum {
    TC_SHM_K_SEND = 1,
    TC_SHM_K_RECV = 2,
    TC_SHM_K_PUT = 3,
    TC_SHM_K_GET = 4,
    TC_SHM_K_SIGNAL = 5,
};
/* req->bytes of a request its owner cancelled while the peer still holds a
 * part of it (a send half pushed, or announced for a single-copy read): the
 * backend owns this copy and frees it when it completes. */
#define TC_SHM_ORPHAN ((size_t)-1)
/* req->bytes while a caller's send or receive is pending (every completion overwrites it): a
 * second post of it, which would link it into a queue twice, is refused */
#define TC_SHM_POSTED ((size_t)-2)

#define TC_SHM_NEXT(req) ((tc_tp_req_t *)(uintptr_t)(req)->priv[TC_SHM_P_NEXT])

typedef struct tc_shm_queue {
    tc_tp_req_t *head, *tail;
    size_t n;
} tc_shm_queue_t;

/* One direction of the segment, as seen by one side. */
typedef struct tc_shm_ring {
    uint64_t *head;       /* in the segment: cells consumed */
    uint64_t *tail;       /* in the segment: cells produced */
    unsigned char *cells; /* in the segment */
    uint64_t pos;         /* producer: our tail; consumer: our head */
    uint64_t seen;        /* producer: last head read; consumer: last tail read */
} tc_shm_ring_t;

/* A single-copy read of a matched RTS, queued on its endpoint and read a piece at a time. */
typedef struct tc_shm_read {
    struct tc_shm_read *next;
    tc_tp_req_t *req; /* NULL once its receive was cancelled */
    uint64_t total, addr, cookie;
    struct tc_shm_unexp *owner; /* the unexpected record holding it (NULL: the endpoint's) */
} tc_shm_read_t;

/* A message that arrived before its receive was posted. */
typedef struct tc_shm_unexp {
    struct tc_shm_unexp *next;
    uint64_t tag;
    uint64_t total;
    uint64_t cap; /* bytes data[] holds */
    int rts;      /* 1: data stays with the sender (addr, cookie) */
    int complete; /* all data is in data[] (or rts) */
    int withdrawn; /* rts: its sender withdrew it (acknowledged; a receive that takes it fails) */
    uint64_t addr, cookie;
    tc_tp_req_t *req; /* a receive matched while cells still arrive */
    tc_shm_read_t rd; /* an RTS's read, once its receive is posted */
    /* handed to a sink as one piece, which transport.h aligns to the unit up to 16 bytes;
     * malloc's alignment (max_align_t) keeps that for the record's address */
    _Alignas(16) unsigned char data[];
} tc_shm_unexp_t;
_Static_assert(_Alignof(max_align_t) >= 16, "malloc must align unexpected records to 16 bytes");

/* A control cell waiting for ring space. */
typedef struct tc_shm_ctrl {
    uint32_t type;
    uint64_t cookie;
} tc_shm_ctrl_t;

/* Data of a get that the peer asked for (pipelined mode), streamed in GET_DATA cells. */
typedef struct tc_shm_job {
    struct tc_shm_job *next;
    const unsigned char *src;
    uint64_t len, off, cookie;
} tc_shm_job_t;

typedef struct tc_shm_mem {
    tc_tp_mem_t super;
    struct tc_shm_mem *next;
    uint64_t key;
} tc_shm_mem_t;

typedef struct tc_shm_rkey {
    tc_tp_rkey_t super;
    uint64_t key;
    uint64_t addr; /* in the peer's address space */
} tc_shm_rkey_t;

typedef enum tc_shm_ep_state {
    TC_SHM_EP_OPENING,    /* opener: the creator's segment does not exist (or is not ready) yet */
    TC_SHM_EP_CONNECTING, /* creator: the opener has not attached (and proved itself) yet */
    TC_SHM_EP_PROVING,    /* opener: attached and proved, waiting for the creator's proof */
    TC_SHM_EP_UP,
    TC_SHM_EP_FAILED,
} tc_shm_ep_state_t;

typedef struct tc_shm_ep tc_shm_ep_t;

/* Peers of one context that shm_full_pairs can name. */
#define TC_SHM_FULL_MAX 16

typedef struct tc_shm_ctx {
    tc_tp_ctx_t super;
    uint64_t self_id;
    pid_t pid;
    uint64_t nonce;
    uint64_t pidns;             /* inode of /proc/self/ns/pid (0: unknown) */
    volatile uint64_t probe;    /* == nonce; peers read it to test process_vm_readv */
    tc_auth_key_t key;          /* from the job secret (keyed 0: the public key) */
    uint32_t cell_size, ncells; /* configured: the largest geometry a segment gets */
    size_t seg_size;            /* of the smallest geometry (the ctx_create pre-flight) */
    uint32_t local_ranks;       /* ranks on this node sharing /dev/shm (hint shm_local_ranks) */
    int warned;                 /* the one warning about smaller segments was given */
    size_t shm_bytes;           /* of /dev/shm reserved by this process's segments */
    unsigned nsegs;             /* segments this process created and holds */
    int cma; /* allowed by the options and process_vm_readv works in this process */
    uint64_t liveness_ns, next_check_ns;
    unsigned progress_calls; /* progress() calls, to read the clock only every 64 */
    tc_shm_ep_t *eps;
    tc_shm_mem_t *mems;
    uint64_t next_key;
    uint64_t next_cookie;
    uint64_t ncompleted;
    uint64_t pass_copied; /* single-copy bytes read in this progress call */
    uint64_t moved; /* pieces of messages received (progress() counts them with completions) */
    unsigned char *stage;            /* TC_SHM_STAGE_BYTES, allocated at the first staged read */
    struct tc_shm_unexp *unexp_free; /* records of cell_size bytes kept for reuse (shm_rx.c) */
    unsigned nunexp_free;            /* at most TC_SHM_UNEXP_KEEP */
    uint64_t unexp_allocs;           /* records allocated (a white-box test counts them) */
    tc_pool_t jobs;                  /* get jobs: kept at the peak in flight, no malloc once warm */
    uint64_t full[TC_SHM_FULL_MAX];  /* peers whose segment is taken not to fit (shm_full_pairs) */
    unsigned nfull;
    char (*marks)[96]; /* names of decisions without a segment this context made (shm_seg.c) */
    unsigned nmarks, marks_cap;
} tc_shm_ctx_t;

struct tc_shm_ep {
    tc_tp_ep_t super;
    tc_shm_ep_t *next;
    tc_shm_ep_state_t state;
    int side; /* 0: creator (connected first), 1: opener */
    pid_t peer_pid;
    uint64_t peer_nonce;
    int pidfd; /* -1: check with kill() */
    char name[96];
    int linked;        /* creator: the name may still exist */
    int lanes_pending; /* fd holds the segment's file; its lanes are not reserved yet */
    int fd;            /* the segment's file while opening or lanes_pending, else -1 */
    size_t reserved;   /* bytes this side counted in ctx->shm_bytes (creator only) */
    /* the handshake: this side's copies, never re-read from the segment */
    unsigned char nonce_i[TC_SHM_NONCE_LEN], nonce_a[TC_SHM_NONCE_LEN];
    uint32_t seg_cell_size, seg_ncells; /* the geometry the transcript binds */
    uint64_t seg_size;
    uint64_t next_open_ns;

    unsigned char *seg;
    size_t seg_len;
    tc_shm_seg_hdr_t *hdr;
    uint32_t cell_size, ncells; /* private copies: never re-read from the segment */
    size_t stride;
    tc_shm_ring_t tx, rx;
    tc_tp_shm_lane_t lane; /* the small-message slots (shm_lane.h), used by the runtime */
    int cma_local;         /* we can read/write the peer's memory */
    int cma_peer;          /* the peer can read ours: large sends go by RTS */

    tc_shm_queue_t sq; /* sends, puts, gets, signals not fully pushed, in order */
    tc_shm_queue_t wq; /* pushed, waiting for an ACK or GET_DATA */
    tc_shm_queue_t rq; /* posted receives not matched */
    tc_shm_unexp_t *uq_head, *uq_tail;

    tc_shm_ctrl_t *ctrl; /* control cells to push, a FIFO in a growing array */
    size_t ctrl_head, ctrl_n, ctrl_cap;
    tc_shm_job_t *jobs_head, *jobs_tail;

    /* single-copy reads of matched RTSs, in order (shm_rx.c); rd_own serves an RTS matched
     * on arrival (the ring is read only while this queue is empty, so one at a time) */
    tc_shm_read_t *rd_head, *rd_tail;
    tc_shm_read_t rd_own;
    uint64_t withdraws_seen; /* the peer's withdrawal count at our last sweep (shm_cancel.c) */
    /* single-copy sends announced and not yet acknowledged (at most TC_SHM_WITHDRAW_SLOTS: a
     * later one goes through the cells), and which slots of our withdrawal row they took (kept
     * here, never read back from the segment, which the peer can write) */
    unsigned rts_out;
    uint64_t wslots[TC_SHM_WITHDRAW_SLOTS / 64];

    /* a message pipelined in cells (FIRST, MORE...) being received */
    int rx_active;
    uint64_t rx_total, rx_off;
    tc_tp_req_t *rx_req;
    tc_shm_unexp_t *rx_unexp;
};

/* ---- shm_ctx.c ---- */
void tc_shm_req_complete(tc_shm_ctx_t *ctx, tc_tp_req_t *req, tc_status_t status, size_t bytes);
/* Free bytes of /dev/shm (TC_ERR_NO_RESOURCE when it cannot be read). */
TC_MUST_USE tc_status_t tc_shm_free_bytes(uint64_t *avail_p);
/* Check that /dev/shm can hold @p need more bytes. */
TC_MUST_USE tc_status_t tc_shm_preflight(size_t need, uint32_t cell_size, uint32_t ncells);
/* Read or write @p len bytes at @p remote in process @p pid (process_vm_readv/writev, looped). */
ssize_t tc_shm_cma(pid_t pid, void *local, uint64_t remote, size_t len, int write);
/* The same, through the context's staging area when the kernel's copy would be slow: where
 * tc_copy takes its loop (base/copy.h), the kernel's copy of process_vm_readv/writev has the
 * same hazard (a destination 1-31 bytes ahead of the source modulo 4 KiB: 2.3 against 9.4 GB/s
 * here), so the kernel copies at a good distance into the staging area and tc_copy does the
 * rest. Returns @p len or -1 (errno), as tc_shm_cma. */
ssize_t tc_shm_cma_at(tc_shm_ctx_t *ctx, pid_t pid, void *local, uint64_t remote, size_t len,
                      int write);

/* ---- shm_size.c ---- */
/* Geometries a creator tries: the configured one, then smaller ones, down to a floor. */
#define TC_SHM_LEVELS 4
typedef struct tc_shm_geom {
    uint32_t cell_size, ncells;
    size_t reserve; /* bytes reserved at creation: header and both rings (not the lanes) */
} tc_shm_geom_t;
/* Header and both rings of a geometry (what is reserved when the segment is made). */
size_t tc_shm_geom_reserve(uint32_t cell_size, uint32_t ncells);
/* The whole segment, lanes included, rounded up to @p page. */
size_t tc_shm_geom_seg_size(uint32_t cell_size, uint32_t ncells, size_t page);
/* Bytes one pair's rings may take of @p free_bytes shared by @p local_ranks ranks. */
uint64_t tc_shm_pair_budget(uint64_t free_bytes, uint32_t local_ranks);
/* Into @p out (TC_SHM_LEVELS entries): the geometries to try in order, the first the largest
 * of the configured one and its smaller steps whose reserve fits @p budget (the floor when
 * none does), then each smaller one down to the floor (a creation that finds no space tries
 * the next). Returns how many. */
int tc_shm_geom_plan(uint32_t cell_size, uint32_t ncells, uint64_t budget, tc_shm_geom_t *out);

/* ---- shm_ep.c ---- */
TC_MUST_USE tc_status_t tc_shm_ep_connect(tc_tp_ctx_t *ctx, uint64_t peer_id, const void *addr,
                                          size_t addr_len, tc_tp_ep_t **ep_p);
void tc_shm_ep_close(tc_tp_ep_t *ep);
/* Fail the endpoint: the text follows "shm: peer N (pid P) ". */
void tc_shm_ep_fail(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep, tc_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Connection set-up steps of a non-UP endpoint. */
void tc_shm_ep_connecting(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep);
/* Creator: its segment of @p size bytes is mapped at @p p (fresh, zero): write the header
 * (the geometry of ep->cell_size/ncells, or the context's when those are 0; ids, pids, our
 * nonce, then magic), point the rings into it; CONNECTING. */
void tc_shm_ep_seg_init(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep, void *p, size_t size);
/* ---- shm_seg.c ---- */
/* What the size of a pair's file says (the creator's decision), after its owner and mode. */
enum {
    TC_SHM_SEG_PENDING = 0, /* empty: the creator is deciding */
    TC_SHM_SEG_NOFIT = 1,   /* the creator found no room: both sides refuse the peer */
    TC_SHM_SEG_FAILED = 2,  /* the creator failed: both sides fail */
    TC_SHM_SEG_READY = 3,   /* a segment of its final size (at least a header) */
    TC_SHM_SEG_GONE = 4,    /* empty and unlinked: the creator gave up without a word */
    TC_SHM_SEG_BAD = 5,     /* not private to this user, or a size no creator gives */
};
/* Classify a pair's file from its fstat (@p euid: ours). Pure; a fuzz target drives it. */
int tc_shm_seg_classify(uint64_t size, uint64_t nlink, uint32_t uid, uint32_t mode, uint32_t euid);
/* Make or open the pair's file (ep->name; ep->peer_pid set): creator (side 0, its segment made,
 * CONNECTING) or opener (side 1, OPENING with ep->fd), or the decision without a segment:
 * TC_ERR_UNSUPPORTED when there is no room (on both sides), another error when the creator
 * failed. */
TC_MUST_USE tc_status_t tc_shm_ep_claim(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep);
/* Opener: map the segment once its magic is there, and attach. */
void tc_shm_ep_try_open(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep);
/* Whether shm_full_pairs names the pair with @p peer_id. */
int tc_shm_pair_full(const tc_shm_ctx_t *ctx, uint64_t peer_id);
/* Remove the names of the decisions without a segment that this context made. */
void tc_shm_unlink_marks(tc_shm_ctx_t *ctx);
/* The bytes this process holds changed: say so (the scale benchmark reads this line). */
void tc_shm_log_held(const tc_shm_ctx_t *ctx);
/* ---- shm_sweep.c ---- */
/* Whether the header @p hdr (@p len bytes, read from a segment file private to us) is a
 * leftover to remove: complete, of this layout and of pid namespace @p pidns (not 0), and
 * neither of its pids @p alive. Pure; a fuzz target drives it. */
int tc_shm_sweep_stale(const void *hdr, size_t len, uint64_t pidns, int (*alive)(int32_t pid));
/* Remove the leftovers of ended processes from /dev/shm (said at info level). */
void tc_shm_sweep(const tc_shm_ctx_t *ctx);

/* Opener: the creator's segment of @p size bytes is mapped at @p p (the endpoint's now): when
 * its magic is there, check what the creator wrote, attach and prove this side (PROVING), or
 * fail the endpoint; without the magic, unmap it (OPENING still). Rings are not read. */
void tc_shm_ep_attach(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep, void *p, size_t size);
/* Reserve the segment's lanes in /dev/shm before their first use (then the file is closed):
 * TC_ERR_NO_RESOURCE naming the space when /dev/shm is full. */
TC_MUST_USE tc_status_t tc_shm_ep_reserve_lanes(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep);
/* Why the peer's side closed: "closed its endpoint", or that it refused our proof. */
const char *tc_shm_ep_closed_why(const tc_shm_ep_t *ep);
/* Whether the peer's process has exited. */
int tc_shm_peer_exited(tc_shm_ep_t *ep);

void tc_shm_queue_push(tc_shm_queue_t *q, tc_tp_req_t *req);
tc_tp_req_t *tc_shm_queue_pop(tc_shm_queue_t *q);
int tc_shm_queue_remove(tc_shm_queue_t *q, tc_tp_req_t *req);

/* A full barrier between the accesses of this thread before and after it: a sequentially
 * consistent read-modify-write (a locked instruction on x86, acquire and release on ARMv8).
 * Not __atomic_thread_fence, which GCC's ThreadSanitizer refuses to build. */
static inline void tc_shm_full_barrier(void)
{
    static __thread uint64_t word;
    (void)__atomic_fetch_add(&word, 0, __ATOMIC_SEQ_CST);
}

/* ---- shm_cancel.c ---- */
TC_MUST_USE tc_status_t tc_shm_cancel(tc_tp_ep_t *ep, tc_tp_req_t *req);
/* The endpoint closes or fails with single-copy sends announced: withdraw every one not yet
 * withdrawn (a full fence after), so that a reader still copying never completes with what
 * their owners write once the drain hands the buffers back. */
void tc_shm_withdraw_all(tc_shm_ep_t *ep);
/* The peer acknowledged @p req (taken from wq): count a single-copy send back in, and free its
 * withdrawal slot when it was withdrawn. */
void tc_shm_rts_acked(tc_shm_ep_t *ep, const tc_tp_req_t *req);
/* Whether the peer withdrew its single-copy send @p cookie. A full fence first: when it says
 * no, every copy from the peer's memory made before the call took the sender's data. */
int tc_shm_withdrawn(const tc_shm_ep_t *ep, uint64_t cookie);
/* When the peer withdrew sends since the last sweep: mark its unexpected announcements that
 * it withdrew and acknowledge them, so the sender is free although no receive takes them. */
void tc_shm_withdraw_sweep(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep);
/* ops->discard: unexpected messages, whole and unclaimed; an announcement is acknowledged (its
 * sender completes, as it would over tcp once its bytes were out). */
int tc_shm_discard(tc_tp_ep_t *ep, int (*drop)(void *arg, uint64_t tag), void *arg);

/* ---- shm_tx.c ---- */
TC_MUST_USE tc_status_t tc_shm_send(tc_tp_ep_t *ep, uint64_t tag, const void *buf, size_t len,
                                    tc_tp_req_t *req);
/* Push what the ring takes: control cells, get replies, then the send queue. */
void tc_shm_ep_flush(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep);
/* Queue a control cell for the peer. */
void tc_shm_ctrl_post(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep, uint32_t type, uint64_t cookie);
/* Post a one-sided request that travels through the ring. */
TC_MUST_USE tc_status_t tc_shm_post_ring(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep, tc_tp_req_t *req);
/* The next free cell of the tx ring, or NULL when it is full (or the peer broke the head). */
tc_shm_cell_hdr_t *tc_shm_tx_cell(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep);
void tc_shm_tx_commit(tc_shm_ep_t *ep);

/* ---- shm_rx.c ---- */
/* Give an unexpected-message record back: kept for reuse, or freed. */
void tc_shm_unexp_release(tc_shm_ctx_t *ctx, tc_shm_unexp_t *u);
TC_MUST_USE tc_status_t tc_shm_recv(tc_tp_ep_t *ep, uint64_t tag, void *buf, size_t cap,
                                    tc_tp_req_t *req);
/* An unexpected message with @p tag that no receive claimed: 1 and its length (ops->probe). */
int tc_shm_probe(tc_tp_ep_t *ep, uint64_t tag, uint64_t *len_p);
/* A receive into @p buf, or (@p sink) into the tc_tp_sink_t @p buf points to. */
TC_MUST_USE tc_status_t tc_shm_recv_post(tc_tp_ep_t *ep, uint64_t tag, void *buf, size_t cap,
                                         int sink, tc_tp_req_t *req);
/* Handle what the rx ring holds; returns cells consumed. */
int tc_shm_ep_read(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep);
void tc_shm_unexp_free_all(tc_shm_ep_t *ep, int only_complete_kept);

/* ---- shm_sink.c ---- */
TC_MUST_USE tc_status_t tc_shm_recv_sink(tc_tp_ep_t *ep, uint64_t tag, const tc_tp_sink_t *sink,
                                         size_t cap, tc_tp_req_t *req);
/* Bytes [off, off+len) of the message into receive @p req (len already clipped to its capacity):
 * copied to its buffer or handed to its sink; @p last: the message's last piece. Returns the
 * sink's status, or TC_ERR_PROTOCOL (with the detail) for a piece off the sink's unit. */
TC_MUST_USE tc_status_t tc_shm_rx_piece(tc_tp_req_t *req, uint64_t off, const void *data,
                                        uint64_t len, int last);
/* Single copy: read bytes [off, off + len) of the message @p cookie at the peer's @p addr, of
 * which @p end bytes are delivered in all, into @p req's buffer or piece by piece through the
 * staging area into its sink. Returns 1 when the sender withdrew the message (what was read
 * may be anything; a sink never sees such a piece); -1 with errno when the read fails; else 0
 * with the consumer's status in @p st_p. */
int tc_shm_cma_into(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep, tc_tp_req_t *req, uint64_t addr,
                    uint64_t cookie, uint64_t off, uint64_t len, uint64_t end, tc_status_t *st_p);

/* ---- shm_rma.c ---- */
TC_MUST_USE tc_status_t tc_shm_mem_reg(tc_tp_ctx_t *ctx, void *addr, size_t len,
                                       tc_tp_mem_t **mem_p);
void tc_shm_mem_dereg(tc_tp_mem_t *mem);
TC_MUST_USE tc_status_t tc_shm_rkey_pack(tc_tp_mem_t *mem, void *buf, size_t cap, size_t *len_p);
TC_MUST_USE tc_status_t tc_shm_rkey_unpack(tc_tp_ep_t *ep, const void *buf, size_t len,
                                           tc_tp_rkey_t **rkey_p);
void tc_shm_rkey_release(tc_tp_rkey_t *rkey);
TC_MUST_USE tc_status_t tc_shm_put(tc_tp_ep_t *ep, const void *buf, size_t len, tc_tp_rkey_t *rkey,
                                   uint64_t offset, tc_tp_req_t *req);
TC_MUST_USE tc_status_t tc_shm_get(tc_tp_ep_t *ep, void *buf, size_t len, tc_tp_rkey_t *rkey,
                                   uint64_t offset, tc_tp_req_t *req);
TC_MUST_USE tc_status_t tc_shm_signal(tc_tp_ep_t *ep, tc_tp_rkey_t *rkey, uint64_t offset,
                                      tc_tp_signal_op_t op, uint64_t value, tc_tp_req_t *req);
/* The registration @p key of this context covering [off, off+len), or NULL. */
tc_shm_mem_t *tc_shm_mem_find(tc_shm_ctx_t *ctx, uint64_t key, uint64_t off, uint64_t len);

#endif /* TCOMMS_TRANSPORT_SHM_INTERNAL_H */
