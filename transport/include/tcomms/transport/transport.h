/**
 * @file transport.h
 * @brief The transport layer: move bytes between two processes.
 *
 * One versioned ops table per backend (self, shm, tcp, ib, ...). The layer
 * never bootstraps itself: the caller packs this process's address with
 * tc_tp_addr_pack(), moves the opaque bytes to the peer by any means (PMIx,
 * a file, a socket) and connects with tc_tp_ep_connect().
 *
 * Requests are owned by the caller (no allocation per message): post a send or
 * receive with a ::tc_tp_req_t, call tc_tp_progress() until its status leaves
 * TC_INPROGRESS. A failed request carries a negative status, and
 * tc_tp_ep_error() says what happened to the endpoint.
 *
 * A backend fails an endpoint on evidence (a closed connection, a process
 * gone, bytes that break its format). A peer stopped (SIGSTOP), hung, or
 * computing without calling tc_tp_progress() gives none: requests to it stay
 * pending until the caller's own timeout cancels them (the runtime's
 * heartbeats and operation timeouts do this).
 *
 * Messages are matched per endpoint by an exact 64-bit tag, in posting order
 * for equal tags. A message longer than the posted receive completes the
 * receive with TC_ERR_TRUNCATED and nothing is written past the buffer.
 */
#ifndef TCOMMS_TRANSPORT_TRANSPORT_H
#define TCOMMS_TRANSPORT_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "tcomms/base/config.h"
#include "tcomms/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief Version of ::tc_tp_ops_t and ::tc_tp_ep_t (4: rx_bytes; 5: trim; 6: defer; 7:
 *         discard; 8: hint_keys); a backend built for another is refused. */
#define TC_TP_API_VERSION 8

typedef struct tc_tp_ops tc_tp_ops_t;

/** @brief A backend context: one per process and backend (common head). */
typedef struct tc_tp_ctx {
    const tc_tp_ops_t *ops; /**< the backend */
} tc_tp_ctx_t;

/** @brief Size of the failure text an endpoint keeps. */
#define TC_TP_ERROR_LEN 256

/** @brief An endpoint to one peer (common head of every backend's endpoint). */
typedef struct tc_tp_ep {
    const tc_tp_ops_t *ops;        /**< the backend */
    tc_tp_ctx_t *ctx;              /**< the context it belongs to */
    uint64_t peer_id;              /**< the peer's id as given to connect */
    tc_status_t failed;            /**< TC_OK, or why the endpoint is unusable */
    char error[TC_TP_ERROR_LEN];   /**< failure text when failed != TC_OK */
    /** bytes received from the peer so far, on any of its connections (0
     *  where the backend does not count): evidence that the peer lives,
     *  which a heartbeat queued behind bulk data on the same connection is
     *  not (the runtime's heartbeats read it once per period) */
    uint64_t rx_bytes;
} tc_tp_ep_t;

/** @brief Parameters of a context. */
typedef struct tc_tp_ctx_params {
    uint32_t size;            /**< sizeof(tc_tp_ctx_params_t) */
    uint64_t self_id;         /**< this process's id among its peers (e.g. its rank) */
    const void *secret;       /**< per-job secret that authenticates connections */
    size_t secret_len;        /**< bytes of @p secret (0: no authentication) */
    const tc_hints_t *hints;  /**< backend options, or NULL */
} tc_tp_ctx_params_t;

#define TC_TP_CTX_PARAMS_INIT {sizeof(tc_tp_ctx_params_t), 0, NULL, 0, NULL}

/** @brief What a backend can do. */
typedef struct tc_tp_caps {
    uint32_t size;        /**< sizeof(tc_tp_caps_t) */
    int available;        /**< 1 when usable on this machine */
    int same_node_only;   /**< 1 for self, shm, cuda_ipc */
    int one_sided;        /**< put/get/signal supported */
    size_t max_addr_len;  /**< bound on tc_tp_addr_pack() output */
} tc_tp_caps_t;

/** @brief A caller-owned request. Initialise with TC_TP_REQ_INIT before posting; a completed
 *         request may be posted again as it is. Posting a send or receive that is still
 *         pending again is refused (TC_ERR_INVALID_STATE, "request already pending"). */
typedef struct tc_tp_req {
    tc_status_t status;   /**< TC_INPROGRESS while pending, then TC_OK or an error */
    size_t bytes;         /**< bytes transferred (the received length for receives), once
                               completed; while pending the backend keeps a mark here */
    void *user;           /**< for the caller */
    uint64_t priv[8];     /**< backend state; do not touch */
} tc_tp_req_t;

#define TC_TP_REQ_INIT {TC_INPROGRESS, 0, NULL, {0}}

/* ---- receiving into a consumer ----
 *
 * A receive can hand its bytes to a consumer as they land instead of writing
 * them to a buffer: the consumer sees the message in order, piece by piece,
 * each piece valid only during the call, so it can combine a piece with other
 * memory while the piece is still in cache. The executor's receive-reduce
 * works so: each piece is reduced into the destination as it arrives, with
 * no message-sized landing area. A backend moves pieces of a size it chooses:
 * shm passes its cells as they are read from the ring, and reads a
 * single-copy message in pieces through a small staging area of its context
 * that stays in cache; tcp passes what each read of its staging area holds.
 * The consumer must not call into the context. The request completes after the last piece was
 * consumed; it matches, truncates, cancels and fails like a receive of @p cap
 * bytes. A consumer's error ends the request with that status (the pieces
 * before it were consumed; the rest of the message is dropped).
 */

/** @brief Consume @p len bytes at byte offset @p off of a message. */
typedef tc_status_t (*tc_tp_sink_fn)(void *arg, size_t off, const void *data, size_t len);

/** @brief A consumer for tc_tp_recv_sink(); must stay valid until the request completes. */
typedef struct tc_tp_sink {
    tc_tp_sink_fn fn; /**< called for every piece, in order, from the progress call */
    void *arg;        /**< for fn */
    /** a power of two up to 64 (an element): every piece's offset is a multiple
     *  of it, and so is every length but that of the message's last piece; a
     *  piece's data is aligned to it (to 16 bytes for larger units) */
    size_t unit;
} tc_tp_sink_t;

/* ---- one-sided: registered memory, remote keys, put / get / signal ----
 *
 * A process registers a buffer (tc_tp_mem_reg), packs a remote key for it
 * (tc_tp_rkey_pack) and hands the bytes to a peer by any means; the peer
 * unpacks the key against its endpoint (tc_tp_rkey_unpack) and then writes
 * (put), reads (get) or updates a 64-bit signal word (signal) inside the
 * buffer, at a byte offset. Completion of a put or signal request means the
 * local buffer may be reused and the data is visible at the target; a get
 * completes when the data is in the local buffer. On one endpoint a signal is
 * applied at the target only after every put posted before it is visible
 * (put-with-signal). The target observes a signal with tc_tp_signal_read(),
 * an atomic load; backends that move data in software (tcp, shm without
 * single-copy) need the target to call tc_tp_progress() for puts, gets and
 * signals to land. Out-of-range offsets are refused (TC_ERR_INVALID_ARG) at
 * the initiator and, for hostile peers, at the target (TC_ERR_PROTOCOL).
 */

/** @brief Memory registered with a context (common head of every backend's). */
typedef struct tc_tp_mem {
    const tc_tp_ops_t *ops; /**< the backend */
    tc_tp_ctx_t *ctx;       /**< the context it belongs to */
    void *addr;             /**< start of the registered range */
    size_t len;             /**< bytes registered */
} tc_tp_mem_t;

/** @brief A peer's registered memory, as seen through an endpoint (common head). */
typedef struct tc_tp_rkey {
    const tc_tp_ops_t *ops; /**< the backend */
    tc_tp_ep_t *ep;         /**< the endpoint it was unpacked for */
    size_t len;             /**< bytes of the remote range */
} tc_tp_rkey_t;

/** @brief How a signal updates the remote 64-bit word. */
typedef enum tc_tp_signal_op {
    TC_TP_SIGNAL_ADD = 0, /**< word += value (atomic) */
    TC_TP_SIGNAL_SET = 1, /**< word = value (atomic) */
} tc_tp_signal_op_t;

/** @brief The ops table every backend fills. */
struct tc_tp_ops {
    uint32_t version; /**< TC_TP_API_VERSION */
    const char *name; /**< "self", "shm", "tcp", "ib", ... */

    tc_status_t (*query)(tc_tp_caps_t *caps_p);
    tc_status_t (*ctx_create)(const tc_tp_ctx_params_t *params, tc_tp_ctx_t **ctx_p);
    void (*ctx_destroy)(tc_tp_ctx_t *ctx);
    tc_status_t (*addr_pack)(tc_tp_ctx_t *ctx, void *buf, size_t cap, size_t *len_p);
    tc_status_t (*ep_connect)(tc_tp_ctx_t *ctx, uint64_t peer_id, const void *addr,
                              size_t addr_len, tc_tp_ep_t **ep_p);
    void (*ep_close)(tc_tp_ep_t *ep);
    tc_status_t (*send)(tc_tp_ep_t *ep, uint64_t tag, const void *buf, size_t len,
                        tc_tp_req_t *req);
    tc_status_t (*recv)(tc_tp_ep_t *ep, uint64_t tag, void *buf, size_t cap, tc_tp_req_t *req);
    /* completes @p req with TC_ERR_ABORTED and gives its buffer back; a send the
     * peer already holds part of is finished from a copy or withdrawn (shm.h,
     * tcp.h): a receive that shm ends with TC_ERR_ABORTED although its owner
     * never cancelled it is a message its sender withdrew, or the endpoint closed */
    tc_status_t (*cancel)(tc_tp_ep_t *ep, tc_tp_req_t *req);
    int (*progress)(tc_tp_ctx_t *ctx);
    tc_status_t (*wait)(tc_tp_ctx_t *ctx, int timeout_ms);

    /* one-sided; NULL when the backend has none (the wrappers then return
     * TC_ERR_UNSUPPORTED) */
    tc_status_t (*mem_reg)(tc_tp_ctx_t *ctx, void *addr, size_t len, tc_tp_mem_t **mem_p);
    void (*mem_dereg)(tc_tp_mem_t *mem);
    tc_status_t (*rkey_pack)(tc_tp_mem_t *mem, void *buf, size_t cap, size_t *len_p);
    tc_status_t (*rkey_unpack)(tc_tp_ep_t *ep, const void *buf, size_t len,
                               tc_tp_rkey_t **rkey_p);
    void (*rkey_release)(tc_tp_rkey_t *rkey);
    tc_status_t (*put)(tc_tp_ep_t *ep, const void *buf, size_t len, tc_tp_rkey_t *rkey,
                       uint64_t offset, tc_tp_req_t *req);
    tc_status_t (*get)(tc_tp_ep_t *ep, void *buf, size_t len, tc_tp_rkey_t *rkey,
                       uint64_t offset, tc_tp_req_t *req);
    tc_status_t (*signal)(tc_tp_ep_t *ep, tc_tp_rkey_t *rkey, uint64_t offset,
                          tc_tp_signal_op_t op, uint64_t value, tc_tp_req_t *req);

    /* receive into a consumer (see above); NULL when the backend has none
     * (the caller receives into a buffer and consumes it whole) */
    tc_status_t (*recv_sink)(tc_tp_ep_t *ep, uint64_t tag, const tc_tp_sink_t *sink, size_t cap,
                             tc_tp_req_t *req);

    /* a descriptor, fixed for the context's life, that polls readable while
     * the context may have progress to make; NULL when the backend has none */
    int (*wait_fd)(tc_tp_ctx_t *ctx);

    /* whether a message with this tag arrived, whole or in part, that no
     * receive has taken (1, its length in *len_p) or not (0); NULL when the
     * backend cannot tell (tc_tp_probe() then returns TC_ERR_UNSUPPORTED) */
    int (*probe)(tc_tp_ep_t *ep, uint64_t tag, uint64_t *len_p);

    /* give back what the context keeps for reuse beyond a small working set
     * (its user has been idle a while); NULL when the backend keeps nothing */
    void (*trim)(tc_tp_ctx_t *ctx);

    /* the one-sided requests posted on @p ep until its context's next
     * progress may wait for that progress (tc_tp_defer); NULL when the
     * backend has nothing to hold */
    void (*defer)(tc_tp_ep_t *ep);

    /* free the messages that arrived whole, that no receive has taken and that @p drop
     * says no receive ever will (1 for their tag); returns how many; NULL when the backend
     * keeps none (tc_tp_discard) */
    int (*discard)(tc_tp_ep_t *ep, int (*drop)(void *arg, uint64_t tag), void *arg);

    /* the keys of tc_tp_ctx_params_t.hints this backend reads, NULL-terminated, or NULL for
     * none: the runtime refuses a communicator's hint no backend (nor itself) reads */
    const char *const *hint_keys;
};

/* ---- backends ---- */

/**
 * @brief Make a backend known by name. Backends are registered by whoever
 *        links them (tc_tp_register_builtin() registers those of this build).
 * @return TC_ERR_UNSUPPORTED for a table of another version.
 */
tc_status_t tc_tp_register(const tc_tp_ops_t *ops);

/** @brief The backend called @p name, or NULL (and a detail listing the known ones). */
const tc_tp_ops_t *tc_tp_lookup(const char *name);

/**
 * @brief Which peers a backend should carry traffic to: its own applicability
 *        check, declared when it is registered. Whoever picks a backend per
 *        peer (the runtime) tries the most specific that applies first, in
 *        registration order within one kind, and falls back to the next when
 *        a connection is refused with TC_ERR_UNSUPPORTED or TC_ERR_NOT_FOUND.
 */
typedef enum tc_tp_reach {
    TC_TP_REACH_ANY = 0,    /**< every peer (what tc_tp_register() declares) */
    TC_TP_REACH_REMOTE = 1, /**< peers on other nodes */
    TC_TP_REACH_NODE = 2,   /**< other processes on this node */
    TC_TP_REACH_SELF = 3,   /**< this process only */
} tc_tp_reach_t;

/**
 * @brief tc_tp_register() with the peers the backend reaches. Registering the
 *        same table again with another reach is refused (TC_ERR_INVALID_STATE).
 */
tc_status_t tc_tp_register_reach(const tc_tp_ops_t *ops, tc_tp_reach_t reach);

/**
 * @brief The registered backends in registration order: up to @p cap of them
 *        into @p ops and (when not NULL) their reach into @p reach.
 * @return how many are registered (may exceed @p cap).
 */
int tc_tp_registered(const tc_tp_ops_t **ops, tc_tp_reach_t *reach, int cap);

/* ---- contexts and endpoints ---- */

tc_status_t tc_tp_ctx_create(const tc_tp_ops_t *ops, const tc_tp_ctx_params_t *params,
                             tc_tp_ctx_t **ctx_p);
void tc_tp_ctx_destroy(tc_tp_ctx_t *ctx);

/** @brief Pack this context's address into @p buf (at most caps.max_addr_len bytes). */
tc_status_t tc_tp_addr_pack(tc_tp_ctx_t *ctx, void *buf, size_t cap, size_t *len_p);

/**
 * @brief Connect to a peer from its packed address. Returns at once; sends
 *        posted before the connection is up wait inside the transport.
 */
tc_status_t tc_tp_ep_connect(tc_tp_ctx_t *ctx, uint64_t peer_id, const void *addr,
                             size_t addr_len, tc_tp_ep_t **ep_p);

/** @brief Close an endpoint; pending requests complete with TC_ERR_ABORTED. */
void tc_tp_ep_close(tc_tp_ep_t *ep);

/** @brief Why @p ep failed ("" while healthy). */
static inline const char *tc_tp_ep_error(const tc_tp_ep_t *ep)
{
    return ep->failed == TC_OK ? "" : ep->error;
}

/* ---- data movement (hot path: inline dispatch) ---- */

/** @brief Post a tagged send of @p len bytes. */
static inline tc_status_t tc_tp_send(tc_tp_ep_t *ep, uint64_t tag, const void *buf, size_t len,
                                     tc_tp_req_t *req)
{
    return ep->ops->send(ep, tag, buf, len, req);
}

/** @brief Post a tagged receive into @p buf of @p cap bytes. */
static inline tc_status_t tc_tp_recv(tc_tp_ep_t *ep, uint64_t tag, void *buf, size_t cap,
                                     tc_tp_req_t *req)
{
    return ep->ops->recv(ep, tag, buf, cap, req);
}

/**
 * @brief Look, without receiving, for a message with @p tag from @p ep's peer
 *        that arrived (its first bytes at least) and that no receive has taken:
 *        *found_p = 1 and its length in *len_p, or *found_p = 0. What arrives
 *        is taken in by tc_tp_progress(); a receive posted for the tag after a
 *        probe found it takes that message. Used for receives from any source.
 * @return TC_OK, or TC_ERR_UNSUPPORTED when the backend cannot look.
 */
static inline tc_status_t tc_tp_probe(tc_tp_ep_t *ep, uint64_t tag, int *found_p, uint64_t *len_p)
{
    *found_p = 0;
    if (!ep->ops->probe)
        return TC_ERR_UNSUPPORTED;
    *found_p = ep->ops->probe(ep, tag, len_p);
    return TC_OK;
}

/**
 * @brief Free the messages from @p ep's peer that arrived whole and that no receive has
 *        taken, whose tag @p drop says no receive ever will take (its owner is gone): the
 *        runtime drops those of communicators it has destroyed. A send whose data stays with
 *        the sender until read (shm's single copy) completes at the sender, as a send over
 *        tcp does once its bytes are out. @return how many were freed (0 when the backend
 *        keeps none).
 */
static inline int tc_tp_discard(tc_tp_ep_t *ep, int (*drop)(void *arg, uint64_t tag), void *arg)
{
    return ep->ops->discard ? ep->ops->discard(ep, drop, arg) : 0;
}

/** @brief Whether @p ep's backend can receive into a consumer. */
static inline int tc_tp_has_recv_sink(const tc_tp_ep_t *ep)
{
    return ep->ops->recv_sink != NULL;
}

/**
 * @brief Post a tagged receive of up to @p cap bytes whose pieces go to @p sink
 *        as they land (only where tc_tp_has_recv_sink()).
 * @return as tc_tp_recv(); TC_ERR_INVALID_ARG for a unit that is not a power
 *         of two up to 64.
 */
static inline tc_status_t tc_tp_recv_sink(tc_tp_ep_t *ep, uint64_t tag, const tc_tp_sink_t *sink,
                                          size_t cap, tc_tp_req_t *req)
{
    return ep->ops->recv_sink(ep, tag, sink, cap, req);
}

/** @brief Progress all endpoints without blocking; returns completions (and
 *         peers' one-sided requests served here, and pieces of messages still
 *         being received: more than 0 means something moved) or a negative
 *         status. */
static inline int tc_tp_progress(tc_tp_ctx_t *ctx)
{
    return ctx->ops->progress(ctx);
}

/**
 * @brief A descriptor that polls readable (POLLIN) while the context may have
 *        progress to make, or -1. Unlike tc_tp_wait(), polling it touches no
 *        state of the context: a thread may sleep on it while another
 *        progresses the context.
 */
static inline int tc_tp_wait_fd(tc_tp_ctx_t *ctx)
{
    return ctx->ops->wait_fd ? ctx->ops->wait_fd(ctx) : -1;
}

/**
 * @brief Give back the memory @p ctx keeps for reuse beyond a small working
 *        set (a record of the last large message, say): the runtime calls it
 *        once nothing has started for a while. Nothing in flight is touched;
 *        the next operation that needs such memory allocates it again.
 */
static inline void tc_tp_trim(tc_tp_ctx_t *ctx)
{
    if (ctx->ops->trim)
        ctx->ops->trim(ctx);
}

/**
 * @brief A hint: the one-sided requests posted on @p ep from now until its
 *        context's next progress (or wait) belong to a burst whose completion
 *        someone will progress for (a flush), so none of them needs to go out
 *        before that progress, not even the first. A backend that gathers
 *        small requests into one write then sends the whole burst at once
 *        instead of its first request alone; one without the hint ignores it.
 *        Signals still go out as the backend's own rules say (a target may wait
 *        for one calling nothing).
 */
static inline void tc_tp_defer(tc_tp_ep_t *ep)
{
    if (ep->ops->defer)
        ep->ops->defer(ep);
}

/** @brief Block up to @p timeout_ms until the context may have progress to make. */
static inline tc_status_t tc_tp_wait(tc_tp_ctx_t *ctx, int timeout_ms)
{
    return ctx->ops->wait(ctx, timeout_ms);
}

/* ---- one-sided wrappers (TC_ERR_UNSUPPORTED when the backend has none) ---- */

/** @brief Register [addr, addr+len) with @p ctx. */
tc_status_t tc_tp_mem_reg(tc_tp_ctx_t *ctx, void *addr, size_t len, tc_tp_mem_t **mem_p);

/** @brief Release a registration (no request may still use it). */
void tc_tp_mem_dereg(tc_tp_mem_t *mem);

/** @brief Pack the remote key of @p mem for a peer (opaque bytes). */
tc_status_t tc_tp_rkey_pack(tc_tp_mem_t *mem, void *buf, size_t cap, size_t *len_p);

/** @brief Unpack a peer's remote key for use through @p ep; strict about malformed bytes. */
tc_status_t tc_tp_rkey_unpack(tc_tp_ep_t *ep, const void *buf, size_t len, tc_tp_rkey_t **rkey_p);

/** @brief Release an unpacked key. */
void tc_tp_rkey_release(tc_tp_rkey_t *rkey);

/** @brief Write @p len bytes to the peer's range at @p offset. */
tc_status_t tc_tp_put(tc_tp_ep_t *ep, const void *buf, size_t len, tc_tp_rkey_t *rkey,
                      uint64_t offset, tc_tp_req_t *req);

/** @brief Read @p len bytes from the peer's range at @p offset. */
tc_status_t tc_tp_get(tc_tp_ep_t *ep, void *buf, size_t len, tc_tp_rkey_t *rkey, uint64_t offset,
                      tc_tp_req_t *req);

/** @brief Update the 64-bit word at @p offset (8-byte aligned) of the peer's range. */
tc_status_t tc_tp_signal(tc_tp_ep_t *ep, tc_tp_rkey_t *rkey, uint64_t offset,
                         tc_tp_signal_op_t op, uint64_t value, tc_tp_req_t *req);

/** @brief Atomic load of the 64-bit signal word at @p offset of local registered memory. */
static inline uint64_t tc_tp_signal_read(const tc_tp_mem_t *mem, uint64_t offset)
{
    return __atomic_load_n((const uint64_t *)((const char *)mem->addr + offset), __ATOMIC_ACQUIRE);
}

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_TRANSPORT_TRANSPORT_H */
