/* The self backend: sends and receives of a process to itself, matched by tag and copied with
 * memcpy; one-sided operations on the context's own registered memory. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tcomms/base/copy.h"
#include "tcomms/base/status.h"
#include "tcomms/base/time.h"
#include "tcomms/transport/self.h"
#include "tcomms/transport/transport.h"

#define TC_SELF_ADDR_MAGIC 0x46534354u /* "TCSF" */
#define TC_SELF_RKEY_MAGIC 0x4b534354u /* "TCSK" */

/* Layout of tc_tp_req_t.priv while a request waits for its match. */
enum { TC_SELF_P_NEXT = 0, TC_SELF_P_BUF = 1, TC_SELF_P_LEN = 2, TC_SELF_P_TAG = 3 };
#define TC_SELF_NEXT(req) ((tc_tp_req_t *)(uintptr_t)(req)->priv[TC_SELF_P_NEXT])
/* req->bytes while a request waits (every completion overwrites it): a second post of it, which
 * would link it into a queue twice, is refused */
#define TC_SELF_POSTED ((size_t)-2)

typedef struct tc_self_queue {
    tc_tp_req_t *head, *tail;
} tc_self_queue_t;

typedef struct tc_self_mem {
    tc_tp_mem_t super;
    struct tc_self_mem *next;
    uint64_t key;
} tc_self_mem_t;

typedef struct tc_self_rkey {
    tc_tp_rkey_t super;
    unsigned char *addr;
} tc_self_rkey_t;

typedef struct tc_self_ep tc_self_ep_t;

typedef struct tc_self_ctx {
    tc_tp_ctx_t super;
    uint64_t self_id;
    uint32_t pid;
    uint64_t nonce; /* tells this context's address and keys from another's */
    tc_self_ep_t *ep;
    tc_self_mem_t *mems;
    uint64_t next_key;
    uint64_t ncompleted; /* requests completed, ever */
    uint64_t nreported;  /* of those, already returned by progress() */
} tc_self_ctx_t;

struct tc_self_ep {
    tc_tp_ep_t super;
    tc_self_queue_t sends; /* sends waiting for a receive */
    tc_self_queue_t recvs; /* receives waiting for a send */
};

static void tc_self_put_u32(unsigned char *p, uint32_t v)
{
    memcpy(p, &v, 4); /* same process: host order */
}

static void tc_self_put_u64(unsigned char *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

static uint32_t tc_self_get_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static uint64_t tc_self_get_u64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static void tc_self_complete(tc_self_ctx_t *ctx, tc_tp_req_t *req, tc_status_t status,
                             size_t bytes)
{
    req->bytes = bytes;
    req->priv[TC_SELF_P_NEXT] = 0;
    req->status = status;
    ctx->ncompleted++;
}

static void tc_self_enqueue(tc_self_queue_t *q, tc_tp_req_t *req)
{
    req->priv[TC_SELF_P_NEXT] = 0;
    if (q->tail != NULL)
        q->tail->priv[TC_SELF_P_NEXT] = (uint64_t)(uintptr_t)req;
    else
        q->head = req;
    q->tail = req;
}

/* Remove and return the first request of @p q with @p tag (or @p req itself when tag_any). */
static tc_tp_req_t *tc_self_dequeue(tc_self_queue_t *q, uint64_t tag, tc_tp_req_t *which)
{
    tc_tp_req_t *prev = NULL;
    for (tc_tp_req_t *r = q->head; r != NULL; prev = r, r = TC_SELF_NEXT(r)) {
        if (which != NULL ? r != which : r->priv[TC_SELF_P_TAG] != tag)
            continue;
        if (prev != NULL)
            prev->priv[TC_SELF_P_NEXT] = r->priv[TC_SELF_P_NEXT];
        else
            q->head = TC_SELF_NEXT(r);
        if (q->tail == r)
            q->tail = prev;
        return r;
    }
    return NULL;
}

static void tc_self_queue_abort(tc_self_ctx_t *ctx, tc_self_queue_t *q)
{
    tc_tp_req_t *req = q->head;
    while (req != NULL) {
        tc_tp_req_t *next = TC_SELF_NEXT(req);
        tc_self_complete(ctx, req, TC_ERR_ABORTED, 0);
        req = next;
    }
    q->head = q->tail = NULL;
}

/* Copy the send into the receive and complete both. */
static void tc_self_match(tc_self_ctx_t *ctx, tc_tp_req_t *send, tc_tp_req_t *recv)
{
    size_t len = (size_t)send->priv[TC_SELF_P_LEN];
    size_t cap = (size_t)recv->priv[TC_SELF_P_LEN];
    size_t n = len <= cap ? len : cap;
    if (n > 0)
        tc_copy((void *)(uintptr_t)recv->priv[TC_SELF_P_BUF],
                (const void *)(uintptr_t)send->priv[TC_SELF_P_BUF], n);
    tc_self_complete(ctx, send, TC_OK, len);
    tc_self_complete(ctx, recv, len <= cap ? TC_OK : TC_ERR_TRUNCATED, n);
}

static tc_status_t tc_self_query(tc_tp_caps_t *caps_p)
{
    if (caps_p == NULL || caps_p->size != sizeof(tc_tp_caps_t))
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "self query: caps is NULL or caps->size is not sizeof(tc_tp_caps_t)");
    caps_p->available = 1;
    caps_p->same_node_only = 1;
    caps_p->one_sided = 1;
    caps_p->max_addr_len = TC_TP_SELF_ADDR_LEN;
    return TC_OK;
}

static tc_status_t tc_self_ctx_create(const tc_tp_ctx_params_t *params, tc_tp_ctx_t **ctx_p)
{
    if (params == NULL || ctx_p == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "self ctx_create: params or ctx_p is NULL");
    tc_self_ctx_t *ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL)
        return tc_error_set(TC_ERR_NO_MEMORY, "self: cannot allocate a context of %zu bytes",
                            sizeof(*ctx));
    ctx->super.ops = &tc_tp_self_ops;
    ctx->self_id = params->self_id;
    ctx->pid = (uint32_t)getpid();
    /* unique among the live contexts of this process, and unlikely to repeat after one ends */
    ctx->nonce = ((uint64_t)(uintptr_t)ctx * 0x9e3779b97f4a7c15ULL) ^ tc_time_ns();
    ctx->next_key = 1;
    *ctx_p = &ctx->super;
    return TC_OK;
}

static void tc_self_ep_close(tc_tp_ep_t *super)
{
    tc_self_ep_t *ep = (tc_self_ep_t *)super;
    tc_self_ctx_t *ctx = (tc_self_ctx_t *)super->ctx;
    tc_self_queue_abort(ctx, &ep->sends);
    tc_self_queue_abort(ctx, &ep->recvs);
    if (ctx->ep == ep)
        ctx->ep = NULL;
    free(ep);
}

static void tc_self_ctx_destroy(tc_tp_ctx_t *super)
{
    tc_self_ctx_t *ctx = (tc_self_ctx_t *)super;
    if (ctx == NULL)
        return;
    if (ctx->ep != NULL)
        tc_self_ep_close(&ctx->ep->super);
    while (ctx->mems != NULL) {
        tc_self_mem_t *m = ctx->mems;
        ctx->mems = m->next;
        free(m);
    }
    free(ctx);
}

static tc_status_t tc_self_addr_pack(tc_tp_ctx_t *super, void *buf, size_t cap, size_t *len_p)
{
    tc_self_ctx_t *ctx = (tc_self_ctx_t *)super;
    if (cap < TC_TP_SELF_ADDR_LEN)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "self addr_pack: buffer of %zu bytes, the address needs %d", cap,
                            TC_TP_SELF_ADDR_LEN);
    unsigned char *p = buf;
    tc_self_put_u32(p, TC_SELF_ADDR_MAGIC);
    tc_self_put_u32(p + 4, ctx->pid);
    tc_self_put_u64(p + 8, ctx->nonce);
    tc_self_put_u64(p + 16, ctx->self_id);
    *len_p = TC_TP_SELF_ADDR_LEN;
    return TC_OK;
}

static tc_status_t tc_self_ep_connect(tc_tp_ctx_t *super, uint64_t peer_id, const void *addr,
                                      size_t addr_len, tc_tp_ep_t **ep_p)
{
    tc_self_ctx_t *ctx = (tc_self_ctx_t *)super;
    const unsigned char *p = addr;
    if (addr_len != TC_TP_SELF_ADDR_LEN || tc_self_get_u32(p) != TC_SELF_ADDR_MAGIC)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "self: the address of peer %llu is not a self address (%zu bytes, "
                            "expected %d starting with the self magic)",
                            (unsigned long long)peer_id, addr_len, TC_TP_SELF_ADDR_LEN);
    if (tc_self_get_u32(p + 4) != ctx->pid || tc_self_get_u64(p + 8) != ctx->nonce)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "self: the address of peer %llu belongs to another context (pid %u), "
                            "the self backend only connects a context to itself",
                            (unsigned long long)peer_id, tc_self_get_u32(p + 4));
    if (peer_id != ctx->self_id || tc_self_get_u64(p + 16) != ctx->self_id)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "self: peer id %llu is not this context's id %llu",
                            (unsigned long long)peer_id, (unsigned long long)ctx->self_id);
    if (ctx->ep != NULL)
        return tc_error_set(TC_ERR_INVALID_STATE, "self: context %llu already has its endpoint",
                            (unsigned long long)ctx->self_id);
    tc_self_ep_t *ep = calloc(1, sizeof(*ep));
    if (ep == NULL)
        return tc_error_set(TC_ERR_NO_MEMORY, "self: cannot allocate an endpoint");
    ep->super.ops = &tc_tp_self_ops;
    ep->super.ctx = super;
    ep->super.peer_id = peer_id;
    ep->super.failed = TC_OK;
    ctx->ep = ep;
    *ep_p = &ep->super;
    return TC_OK;
}

static tc_status_t tc_self_post_check(const char *what, tc_tp_ep_t *ep, uint64_t tag,
                                      const void *buf, size_t len, tc_tp_req_t *req)
{
    if (req == NULL || (buf == NULL && len > 0))
        return tc_error_set(TC_ERR_INVALID_ARG, "self %s: %s is NULL", what,
                            req == NULL ? "req" : "buf");
    if (req->status == TC_INPROGRESS && req->bytes == TC_SELF_POSTED)
        return tc_error_set(TC_ERR_INVALID_STATE,
                            "self %s with peer %llu (tag %llu): request already pending", what,
                            (unsigned long long)ep->peer_id, (unsigned long long)tag);
    return TC_OK;
}

static tc_status_t tc_self_send(tc_tp_ep_t *super, uint64_t tag, const void *buf, size_t len,
                                tc_tp_req_t *req)
{
    tc_status_t st = tc_self_post_check("send", super, tag, buf, len, req);
    if (st != TC_OK)
        return st;
    /* the same bound as shm and tcp, so a length is refused whichever backend carries it */
    if ((uint64_t)len > TC_TP_SELF_MAX_MSG)
        return tc_error_set(
            TC_ERR_INVALID_ARG, "self send to peer %llu: %zu bytes, more than the maximum %llu",
            (unsigned long long)super->peer_id, len, (unsigned long long)TC_TP_SELF_MAX_MSG);
    tc_self_ep_t *ep = (tc_self_ep_t *)super;
    tc_self_ctx_t *ctx = (tc_self_ctx_t *)super->ctx;
    req->status = TC_INPROGRESS;
    req->bytes = TC_SELF_POSTED;
    req->priv[TC_SELF_P_BUF] = (uint64_t)(uintptr_t)buf;
    req->priv[TC_SELF_P_LEN] = len;
    req->priv[TC_SELF_P_TAG] = tag;
    tc_tp_req_t *recv = tc_self_dequeue(&ep->recvs, tag, NULL);
    if (recv != NULL)
        tc_self_match(ctx, req, recv);
    else
        tc_self_enqueue(&ep->sends, req);
    return TC_OK;
}

static tc_status_t tc_self_recv(tc_tp_ep_t *super, uint64_t tag, void *buf, size_t cap,
                                tc_tp_req_t *req)
{
    tc_status_t st = tc_self_post_check("recv", super, tag, buf, cap, req);
    if (st != TC_OK)
        return st;
    tc_self_ep_t *ep = (tc_self_ep_t *)super;
    tc_self_ctx_t *ctx = (tc_self_ctx_t *)super->ctx;
    req->status = TC_INPROGRESS;
    req->bytes = TC_SELF_POSTED;
    req->priv[TC_SELF_P_BUF] = (uint64_t)(uintptr_t)buf;
    req->priv[TC_SELF_P_LEN] = cap;
    req->priv[TC_SELF_P_TAG] = tag;
    tc_tp_req_t *send = tc_self_dequeue(&ep->sends, tag, NULL);
    if (send != NULL)
        tc_self_match(ctx, send, req);
    else
        tc_self_enqueue(&ep->recvs, req);
    return TC_OK;
}

static tc_status_t tc_self_cancel(tc_tp_ep_t *super, tc_tp_req_t *req)
{
    tc_self_ep_t *ep = (tc_self_ep_t *)super;
    tc_self_ctx_t *ctx = (tc_self_ctx_t *)super->ctx;
    if (req == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "self cancel: req is NULL");
    if (req->status != TC_INPROGRESS)
        return tc_error_set(TC_ERR_INVALID_STATE, "self cancel: the request already completed");
    if (tc_self_dequeue(&ep->sends, 0, req) == NULL && tc_self_dequeue(&ep->recvs, 0, req) == NULL)
        return tc_error_set(TC_ERR_NOT_FOUND, "self cancel: the request is not pending here");
    tc_self_complete(ctx, req, TC_ERR_ABORTED, 0);
    return TC_OK;
}

static int tc_self_progress(tc_tp_ctx_t *super)
{
    tc_self_ctx_t *ctx = (tc_self_ctx_t *)super;
    uint64_t done = ctx->ncompleted - ctx->nreported;
    ctx->nreported = ctx->ncompleted;
    return done > INT_MAX ? INT_MAX : (int)done;
}

static tc_status_t tc_self_wait(tc_tp_ctx_t *super, int timeout_ms)
{
    return TC_OK;
}

/* ---- one-sided ---- */

static tc_status_t tc_self_mem_reg(tc_tp_ctx_t *super, void *addr, size_t len, tc_tp_mem_t **mem_p)
{
    tc_self_ctx_t *ctx = (tc_self_ctx_t *)super;
    tc_self_mem_t *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return tc_error_set(TC_ERR_NO_MEMORY, "self: cannot allocate a memory registration");
    m->super.ops = &tc_tp_self_ops;
    m->super.ctx = super;
    m->super.addr = addr;
    m->super.len = len;
    m->key = ctx->next_key++;
    m->next = ctx->mems;
    ctx->mems = m;
    *mem_p = &m->super;
    return TC_OK;
}

static void tc_self_mem_dereg(tc_tp_mem_t *super)
{
    tc_self_mem_t *m = (tc_self_mem_t *)super;
    tc_self_ctx_t *ctx = (tc_self_ctx_t *)super->ctx;
    for (tc_self_mem_t **pp = &ctx->mems; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == m) {
            *pp = m->next;
            break;
        }
    }
    free(m);
}

/* rkey: u32 magic, u32 pid, u64 context nonce, u64 key id, u64 length */
static tc_status_t tc_self_rkey_pack(tc_tp_mem_t *super, void *buf, size_t cap, size_t *len_p)
{
    tc_self_mem_t *m = (tc_self_mem_t *)super;
    tc_self_ctx_t *ctx = (tc_self_ctx_t *)super->ctx;
    if (cap < TC_TP_SELF_RKEY_LEN)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "self rkey_pack: buffer of %zu bytes, the key needs %d", cap,
                            TC_TP_SELF_RKEY_LEN);
    unsigned char *p = buf;
    tc_self_put_u32(p, TC_SELF_RKEY_MAGIC);
    tc_self_put_u32(p + 4, ctx->pid);
    tc_self_put_u64(p + 8, ctx->nonce);
    tc_self_put_u64(p + 16, m->key);
    tc_self_put_u64(p + 24, super->len);
    *len_p = TC_TP_SELF_RKEY_LEN;
    return TC_OK;
}

static tc_status_t tc_self_rkey_unpack(tc_tp_ep_t *ep, const void *buf, size_t len,
                                       tc_tp_rkey_t **rkey_p)
{
    tc_self_ctx_t *ctx = (tc_self_ctx_t *)ep->ctx;
    const unsigned char *p = buf;
    if (len != TC_TP_SELF_RKEY_LEN || tc_self_get_u32(p) != TC_SELF_RKEY_MAGIC)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "self rkey_unpack: not a self key (%zu bytes, expected %d starting "
                            "with the key magic)",
                            len, TC_TP_SELF_RKEY_LEN);
    if (tc_self_get_u32(p + 4) != ctx->pid || tc_self_get_u64(p + 8) != ctx->nonce)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "self rkey_unpack: the key was packed by another context (pid %u)",
                            tc_self_get_u32(p + 4));
    uint64_t key = tc_self_get_u64(p + 16);
    uint64_t klen = tc_self_get_u64(p + 24);
    tc_self_mem_t *m = ctx->mems;
    while (m != NULL && m->key != key)
        m = m->next;
    if (m == NULL || klen != m->super.len)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "self rkey_unpack: key %llu of %llu bytes is not a live registration "
                            "of this context",
                            (unsigned long long)key, (unsigned long long)klen);
    tc_self_rkey_t *rk = calloc(1, sizeof(*rk));
    if (rk == NULL)
        return tc_error_set(TC_ERR_NO_MEMORY, "self: cannot allocate a remote key");
    rk->super.ops = &tc_tp_self_ops;
    rk->super.ep = ep;
    rk->super.len = m->super.len;
    rk->addr = m->super.addr;
    *rkey_p = &rk->super;
    return TC_OK;
}

static void tc_self_rkey_release(tc_tp_rkey_t *rkey)
{
    free(rkey);
}

/* The wrappers have checked the range; memmove since a buffer may overlap the registration. */
static tc_status_t tc_self_put(tc_tp_ep_t *ep, const void *buf, size_t len, tc_tp_rkey_t *rkey,
                               uint64_t offset, tc_tp_req_t *req)
{
    tc_self_rkey_t *rk = (tc_self_rkey_t *)rkey;
    if (len > 0)
        tc_copy_any(rk->addr + offset, buf, len);
    tc_self_complete((tc_self_ctx_t *)ep->ctx, req, TC_OK, len);
    return TC_OK;
}

static tc_status_t tc_self_get(tc_tp_ep_t *ep, void *buf, size_t len, tc_tp_rkey_t *rkey,
                               uint64_t offset, tc_tp_req_t *req)
{
    tc_self_rkey_t *rk = (tc_self_rkey_t *)rkey;
    if (len > 0)
        tc_copy_any(buf, rk->addr + offset, len);
    tc_self_complete((tc_self_ctx_t *)ep->ctx, req, TC_OK, len);
    return TC_OK;
}

static tc_status_t tc_self_signal(tc_tp_ep_t *ep, tc_tp_rkey_t *rkey, uint64_t offset,
                                  tc_tp_signal_op_t op, uint64_t value, tc_tp_req_t *req)
{
    tc_self_rkey_t *rk = (tc_self_rkey_t *)rkey;
    uint64_t *word = (uint64_t *)(void *)(rk->addr + offset);
    if (op == TC_TP_SIGNAL_ADD)
        __atomic_fetch_add(word, value, __ATOMIC_RELEASE);
    else
        __atomic_store_n(word, value, __ATOMIC_RELEASE);
    tc_self_complete((tc_self_ctx_t *)ep->ctx, req, TC_OK, sizeof(uint64_t));
    return TC_OK;
}

/* A send waiting for its receive is the message that arrived. */
static int tc_self_probe(tc_tp_ep_t *super, uint64_t tag, uint64_t *len_p)
{
    const tc_self_ep_t *ep = (const tc_self_ep_t *)super;
    for (const tc_tp_req_t *r = ep->sends.head; r != NULL; r = TC_SELF_NEXT(r))
        if (r->priv[TC_SELF_P_TAG] == tag) {
            *len_p = r->priv[TC_SELF_P_LEN];
            return 1;
        }
    return 0;
}

const tc_tp_ops_t tc_tp_self_ops = {
    .version = TC_TP_API_VERSION,
    .name = "self",
    .query = tc_self_query,
    .ctx_create = tc_self_ctx_create,
    .ctx_destroy = tc_self_ctx_destroy,
    .addr_pack = tc_self_addr_pack,
    .ep_connect = tc_self_ep_connect,
    .ep_close = tc_self_ep_close,
    .send = tc_self_send,
    .recv = tc_self_recv,
    .cancel = tc_self_cancel,
    .progress = tc_self_progress,
    .wait = tc_self_wait,
    .mem_reg = tc_self_mem_reg,
    .mem_dereg = tc_self_mem_dereg,
    .rkey_pack = tc_self_rkey_pack,
    .rkey_unpack = tc_self_rkey_unpack,
    .rkey_release = tc_self_rkey_release,
    .put = tc_self_put,
    .get = tc_self_get,
    .signal = tc_self_signal,
    .probe = tc_self_probe,
};
