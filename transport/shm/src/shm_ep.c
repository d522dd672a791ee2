/* shm endpoints: the pair segment (create, open, validate, the handshake), liveness, failure,
 * close. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "shm_internal.h"
#include "tcomms/base/log.h"
#include "tcomms/base/proc.h"
#include "tcomms/base/time.h"

void tc_shm_queue_push(tc_shm_queue_t *q, tc_tp_req_t *req)
{
    req->priv[TC_SHM_P_NEXT] = 0;
    if (q->tail != NULL)
        q->tail->priv[TC_SHM_P_NEXT] = (uint64_t)(uintptr_t)req;
    else
        q->head = req;
    q->tail = req;
    q->n++;
}

tc_tp_req_t *tc_shm_queue_pop(tc_shm_queue_t *q)
{
    tc_tp_req_t *req = q->head;
    if (req == NULL)
        return NULL;
    q->head = TC_SHM_NEXT(req);
    if (q->head == NULL)
        q->tail = NULL;
    q->n--;
    return req;
}

int tc_shm_queue_remove(tc_shm_queue_t *q, tc_tp_req_t *req)
{
    tc_tp_req_t *prev = NULL;
    for (tc_tp_req_t *r = q->head; r != NULL; prev = r, r = TC_SHM_NEXT(r)) {
        if (r != req)
            continue;
        if (prev != NULL)
            prev->priv[TC_SHM_P_NEXT] = r->priv[TC_SHM_P_NEXT];
        else
            q->head = TC_SHM_NEXT(r);
        if (q->tail == r)
            q->tail = prev;
        q->n--;
        return 1;
    }
    return 0;
}

static void tc_shm_queue_fail(tc_shm_ctx_t *ctx, tc_shm_queue_t *q, tc_status_t status)
{
    tc_tp_req_t *req;
    while ((req = tc_shm_queue_pop(q)) != NULL)
        tc_shm_req_complete(ctx, req, status, 0);
}

/* Free unexpected messages (keeping the complete ones when @p keep_complete); a receive
 * attached to a dropped one completes with @p status. */
static void tc_shm_unexp_drop(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep, int keep_complete,
                              tc_status_t status)
{
    tc_shm_unexp_t **pp = &ep->uq_head;
    ep->uq_tail = NULL;
    while (*pp != NULL) {
        tc_shm_unexp_t *u = *pp;
        if (keep_complete && u->complete && !u->rts) {
            ep->uq_tail = u;
            pp = &u->next;
            continue;
        }
        *pp = u->next;
        if (u->req != NULL)
            tc_shm_req_complete(ctx, u->req, status, 0);
        tc_shm_unexp_release(ctx, u);
    }
}

/* Complete everything pending with @p status and drop what would need the peer. */
static void tc_shm_ep_drain(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep, tc_status_t status,
                            int keep_complete)
{
    tc_shm_queue_fail(ctx, &ep->sq, status);
    tc_shm_withdraw_all(ep);
    tc_shm_queue_fail(ctx, &ep->wq, status);
    ep->rts_out = 0;
    memset(ep->wslots, 0, sizeof(ep->wslots));
    tc_shm_queue_fail(ctx, &ep->rq, status);
    if (ep->rx_req != NULL)
        tc_shm_req_complete(ctx, ep->rx_req, status, 0);
    ep->rx_req = NULL;
    ep->rx_unexp = NULL; /* it is in the unexpected list, incomplete: dropped below */
    ep->rx_active = 0;
    while (ep->rd_head != NULL) { /* single-copy reads not finished */
        tc_shm_read_t *rd = ep->rd_head;
        ep->rd_head = rd->next;
        if (rd->req != NULL)
            tc_shm_req_complete(ctx, rd->req, status, 0);
        if (rd->owner != NULL)
            tc_shm_unexp_release(ctx, rd->owner);
    }
    ep->rd_tail = NULL;
    tc_shm_unexp_drop(ctx, ep, keep_complete, status);
    free(ep->ctrl);
    ep->ctrl = NULL;
    ep->ctrl_n = ep->ctrl_cap = ep->ctrl_head = 0;
    while (ep->jobs_head != NULL) {
        tc_shm_job_t *j = ep->jobs_head;
        ep->jobs_head = j->next;
        tc_pool_put(&ctx->jobs, j);
    }
    ep->jobs_tail = NULL;
}

void tc_shm_ep_fail(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep, tc_status_t status, const char *fmt, ...)
{
    if (ep->state == TC_SHM_EP_FAILED)
        return;
    char reason[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof(reason), fmt, ap);
    va_end(ap);

    size_t nsend = ep->sq.n + ep->wq.n;
    size_t nrecv = ep->rq.n + (ep->rx_req != NULL);
    for (const tc_shm_read_t *rd = ep->rd_head; rd != NULL; rd = rd->next)
        nrecv += rd->req != NULL;
    snprintf(ep->super.error, sizeof(ep->super.error),
             "shm: peer %llu (pid %d) %s (%zu send%s, %zu receive%s pending)",
             (unsigned long long)ep->super.peer_id, (int)ep->peer_pid, reason, nsend,
             nsend == 1 ? "" : "s", nrecv, nrecv == 1 ? "" : "s");
    ep->super.failed = status;
    ep->state = TC_SHM_EP_FAILED;
    if (nsend + nrecv > 0 || status == TC_ERR_PROTOCOL)
        tc_log_warn(TC_SUBSYS_TRANSPORT, "%s", ep->super.error);
    else
        tc_log_debug(TC_SUBSYS_TRANSPORT, "%s", ep->super.error);
    /* tell the peer we are gone (it may be waiting for an ACK) */
    if (ep->hdr != NULL)
        __atomic_store_n(&ep->hdr->state[ep->side], TC_SHM_SIDE_CLOSED, __ATOMIC_RELEASE);
    if (ep->linked) {
        shm_unlink(ep->name);
        ep->linked = 0;
    }
    tc_shm_ep_drain(ctx, ep, status, 1);
}

int tc_shm_peer_exited(tc_shm_ep_t *ep)
{
    if (ep->pidfd >= 0) {
        struct pollfd p = {.fd = ep->pidfd, .events = POLLIN};
        return poll(&p, 1, 0) > 0; /* a pidfd is readable once the process has exited */
    }
    return tc_proc_ended((int)ep->peer_pid);
}

_Static_assert(TC_SHM_NONCE_LEN == TC_AUTH_NONCE_LEN, "shm nonces are auth nonces");
_Static_assert(TC_SHM_MAC_LEN == TC_AUTH_MAC_LEN, "shm MACs are auth MACs");

#define TC_SHM_AUTH_EXTRA_LEN (sizeof(((tc_shm_ep_t *)0)->name) + 28)

/* The handshake's transcript (shm_layout.h), from this side's own copies only. */
static void tc_shm_transcript(const tc_shm_ctx_t *ctx, const tc_shm_ep_t *ep,
                              tc_auth_transcript_t *t, unsigned char *extra)
{
    int creator = ep->side == 0;
    int32_t pid[2] = {creator ? (int32_t)ctx->pid : (int32_t)ep->peer_pid,
                      creator ? (int32_t)ep->peer_pid : (int32_t)ctx->pid};
    uint32_t version = TC_SHM_VERSION;
    size_t off = sizeof(ep->name);
    memset(extra, 0, TC_SHM_AUTH_EXTRA_LEN);
    memcpy(extra, ep->name, strnlen(ep->name, sizeof(ep->name)));
    memcpy(extra + off, &version, sizeof(version));
    memcpy(extra + off + 4, &ep->seg_cell_size, 4);
    memcpy(extra + off + 8, &ep->seg_ncells, 4);
    memcpy(extra + off + 12, &ep->seg_size, 8);
    memcpy(extra + off + 20, pid, 8);
    memset(t, 0, sizeof(*t));
    t->purpose = "shm";
    t->initiator_id = creator ? ctx->self_id : ep->super.peer_id;
    t->acceptor_id = creator ? ep->super.peer_id : ctx->self_id;
    memcpy(t->nonce_i, ep->nonce_i, TC_SHM_NONCE_LEN);
    memcpy(t->nonce_a, ep->nonce_a, TC_SHM_NONCE_LEN);
    t->extra = extra;
    t->extra_len = TC_SHM_AUTH_EXTRA_LEN;
}

/* Check the peer's MAC (copied out of the segment first) for this side's transcript. */
static int tc_shm_peer_proof_ok(const tc_shm_ctx_t *ctx, const tc_shm_ep_t *ep)
{
    tc_auth_transcript_t t;
    unsigned char extra[TC_SHM_AUTH_EXTRA_LEN], mac[TC_SHM_MAC_LEN];
    memcpy(mac, ep->hdr->mac[1 - ep->side], TC_SHM_MAC_LEN);
    tc_shm_transcript(ctx, ep, &t, extra);
    return tc_auth_check(&ctx->key, ep->side == 0 ? TC_AUTH_ACCEPTOR : TC_AUTH_INITIATOR, &t, mac);
}

/* Write this side's MAC, then say so (release). */
static void tc_shm_prove(const tc_shm_ctx_t *ctx, tc_shm_ep_t *ep)
{
    tc_auth_transcript_t t;
    unsigned char extra[TC_SHM_AUTH_EXTRA_LEN];
    tc_shm_transcript(ctx, ep, &t, extra);
    tc_auth_mac(&ctx->key, ep->side == 0 ? TC_AUTH_INITIATOR : TC_AUTH_ACCEPTOR, &t,
                ep->hdr->mac[ep->side]);
    __atomic_store_n(&ep->hdr->proved[ep->side], 1, __ATOMIC_RELEASE);
}

/* The peer's proof did not check out: tell it (before our side reads CLOSED), then fail. */
static void tc_shm_refuse(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep)
{
    __atomic_store_n(&ep->hdr->verdict[ep->side], TC_SHM_VERDICT_REFUSED, __ATOMIC_RELEASE);
    tc_log_warn(TC_SUBSYS_TRANSPORT,
                "shm: refused peer %llu (pid %d) on %s: its proof does not match this job's "
                "secret",
                (unsigned long long)ep->super.peer_id, (int)ep->peer_pid, ep->name);
    tc_shm_ep_fail(ctx, ep, TC_ERR_PEER_FAILED,
                   "did not prove it holds this job's secret: its proof does not match (another "
                   "job, or the secrets differ)");
}

const char *tc_shm_ep_closed_why(const tc_shm_ep_t *ep)
{
    if (ep->hdr != NULL && __atomic_load_n(&ep->hdr->verdict[1 - ep->side], __ATOMIC_ACQUIRE) ==
                               TC_SHM_VERDICT_REFUSED)
        return "refused our proof: the secrets differ (another job?)";
    return "closed its endpoint";
}

/* Point the rings of @p ep into its mapped segment (geometry already validated). */
static void tc_shm_ep_map_rings(tc_shm_ep_t *ep)
{
    ep->stride = TC_SHM_CELL_HDR + (size_t)ep->cell_size;
    size_t ring_bytes = (size_t)2 * TC_SHM_LINE + (size_t)ep->ncells * ep->stride;
    unsigned char *ring[2] = {ep->seg + TC_SHM_HDR_SIZE, ep->seg + TC_SHM_HDR_SIZE + ring_bytes};
    tc_shm_ring_t *r[2] = {&ep->tx, &ep->rx};
    for (int i = 0; i < 2; i++) {
        unsigned char *base = ring[i == 0 ? ep->side : 1 - ep->side];
        r[i]->head = (uint64_t *)(void *)base;
        r[i]->tail = (uint64_t *)(void *)(base + TC_SHM_LINE);
        r[i]->cells = base + (size_t)2 * TC_SHM_LINE;
        r[i]->pos = 0;
        r[i]->seen = 0;
    }
    unsigned char *lanes = ep->seg + TC_SHM_HDR_SIZE + 2 * ring_bytes;
    tc_shm_lane_init(&ep->lane, lanes + (size_t)ep->side * TC_SHM_LANE_BYTES,
                     lanes + (size_t)(1 - ep->side) * TC_SHM_LANE_BYTES);
}

void tc_shm_ep_seg_init(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep, void *p, size_t size)
{
    ep->seg = p;
    ep->seg_len = size;
    ep->hdr = p;
    if (ep->cell_size == 0) {
        ep->cell_size = ctx->cell_size;
        ep->ncells = ctx->ncells;
    }
    tc_shm_ep_map_rings(ep);

    tc_shm_seg_hdr_t *h = ep->hdr; /* fresh pages are zero */
    h->version = TC_SHM_VERSION;
    h->cell_size = ep->cell_size;
    h->ncells = ep->ncells;
    h->seg_size = ep->seg_len;
    h->id[0] = ctx->self_id;
    h->id[1] = ep->super.peer_id;
    h->pid[0] = (int32_t)ctx->pid;
    h->pid[1] = (int32_t)ep->peer_pid;
    h->pidns = ctx->pidns;
    ep->seg_cell_size = ep->cell_size;
    ep->seg_ncells = ep->ncells;
    ep->seg_size = ep->seg_len;
    tc_auth_nonce(ep->nonce_i);
    memcpy(h->nonce[0], ep->nonce_i, TC_SHM_NONCE_LEN);
    h->cma[0] = (uint32_t)ep->cma_local;
    h->state[0] = TC_SHM_SIDE_UP;
    __atomic_store_n(&h->magic, TC_SHM_MAGIC, __ATOMIC_RELEASE);
    ep->state = TC_SHM_EP_CONNECTING;
}

void tc_shm_ep_attach(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep, void *p, size_t size)
{
    tc_shm_seg_hdr_t *h = p;
    if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != TC_SHM_MAGIC) {
        munmap(p, size); /* not initialised yet */
        return;
    }
    ep->seg = p;
    ep->seg_len = size;
    ep->hdr = h;

    /* Everything below comes from another process: check it before using it. */
    uint32_t cell = h->cell_size, ncells = h->ncells;
    uint64_t need =
        TC_SHM_HDR_SIZE +
        2 * (2ull * TC_SHM_LINE + (uint64_t)ncells * (TC_SHM_CELL_HDR + (uint64_t)cell)) +
        2ull * TC_SHM_LANE_BYTES;
    if (h->version != TC_SHM_VERSION) {
        tc_shm_ep_fail(ctx, ep, TC_ERR_UNSUPPORTED,
                       "made segment version %u, this build knows %d (mixed builds?)", h->version,
                       TC_SHM_VERSION);
        return;
    }
    if (cell < 64 || cell > (1u << 20) || cell % 64 != 0 || ncells < 2 || ncells > (1u << 24) ||
        need > size || h->seg_size != size) {
        tc_shm_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                       "made a malformed segment: %u cells of %u bytes need %llu bytes, the "
                       "segment has %zu (header says %llu)",
                       ncells, cell, (unsigned long long)need, size,
                       (unsigned long long)h->seg_size);
        return;
    }
    if (h->id[0] != ep->super.peer_id || h->id[1] != ctx->self_id ||
        h->pid[0] != (int32_t)ep->peer_pid) {
        tc_shm_ep_fail(ctx, ep, TC_ERR_PROTOCOL,
                       "made a segment for ids %llu -> %llu (pid %d), expected %llu -> %llu",
                       (unsigned long long)h->id[0], (unsigned long long)h->id[1], (int)h->pid[0],
                       (unsigned long long)ep->super.peer_id, (unsigned long long)ctx->self_id);
        return;
    }
    ep->cell_size = cell;
    ep->ncells = ncells;
    ep->seg_cell_size = cell;
    ep->seg_ncells = ncells;
    ep->seg_size = size;
    /* The acceptor's answer: our nonce and our MAC over the creator's; rings untouched. */
    memcpy(ep->nonce_i, h->nonce[0], TC_SHM_NONCE_LEN);
    tc_auth_nonce(ep->nonce_a);
    memcpy(h->nonce[1], ep->nonce_a, TC_SHM_NONCE_LEN);
    tc_shm_ep_map_rings(ep);
    h->cma[1] = (uint32_t)ep->cma_local;
    tc_shm_prove(ctx, ep);
    __atomic_store_n(&h->state[1], TC_SHM_SIDE_UP, __ATOMIC_RELEASE);
    shm_unlink(ep->name); /* both sides hold it now */
    ep->cma_peer = __atomic_load_n(&h->cma[0], __ATOMIC_RELAXED) != 0;
    ep->state = TC_SHM_EP_PROVING;
    tc_log_debug(TC_SUBSYS_TRANSPORT, "shm: id %llu attached to %s (peer %llu, pid %d)",
                 (unsigned long long)ctx->self_id, ep->name, (unsigned long long)ep->super.peer_id,
                 (int)ep->peer_pid);
}

/* Opener: the creator's verdict on our proof, and its own proof. */
static void tc_shm_ep_await_proof(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep)
{
    tc_shm_seg_hdr_t *h = ep->hdr;
    /* state first: a verdict written before the creator closed is then visible */
    int closed = __atomic_load_n(&h->state[0], __ATOMIC_ACQUIRE) == TC_SHM_SIDE_CLOSED;
    uint32_t verdict = __atomic_load_n(&h->verdict[0], __ATOMIC_ACQUIRE);
    uint32_t proved = __atomic_load_n(&h->proved[0], __ATOMIC_ACQUIRE);
    if (verdict == TC_SHM_VERDICT_REFUSED) {
        tc_shm_ep_fail(ctx, ep, TC_ERR_PEER_FAILED, "%s", tc_shm_ep_closed_why(ep));
    } else if (proved == 1) {
        if (!tc_shm_peer_proof_ok(ctx, ep)) {
            tc_shm_refuse(ctx, ep);
            return;
        }
        __atomic_store_n(&h->verdict[1], TC_SHM_VERDICT_OK, __ATOMIC_RELEASE);
        ep->state = TC_SHM_EP_UP;
    } else if (closed) {
        tc_shm_ep_fail(ctx, ep, TC_ERR_PEER_FAILED, "closed its endpoint before proving itself");
    }
}

void tc_shm_ep_connecting(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep)
{
    if (ep->state == TC_SHM_EP_OPENING) {
        tc_shm_ep_try_open(ctx, ep);
        if (ep->state == TC_SHM_EP_PROVING)
            tc_shm_ep_await_proof(ctx, ep);
        return;
    }
    if (ep->state == TC_SHM_EP_PROVING) {
        tc_shm_ep_await_proof(ctx, ep);
        return;
    }
    uint32_t opener;
    if (ep->state != TC_SHM_EP_CONNECTING ||
        (opener = __atomic_load_n(&ep->hdr->state[1], __ATOMIC_ACQUIRE)) == TC_SHM_SIDE_NONE)
        return;
    shm_unlink(ep->name); /* the opener did too; whoever is first */
    ep->linked = 0;
    if (__atomic_load_n(&ep->hdr->proved[1], __ATOMIC_ACQUIRE) != 1) {
        tc_shm_ep_fail(
            ctx, ep, opener == TC_SHM_SIDE_CLOSED ? TC_ERR_PEER_FAILED : TC_ERR_PROTOCOL, "%s",
            opener == TC_SHM_SIDE_CLOSED ? "closed its endpoint before proving itself"
                                         : "attached to the segment without proving itself");
        return;
    }
    /* The acceptor's nonce, copied once; its MAC is checked against our own Ni. */
    memcpy(ep->nonce_a, ep->hdr->nonce[1], TC_SHM_NONCE_LEN);
    if (!tc_shm_peer_proof_ok(ctx, ep)) {
        tc_shm_refuse(ctx, ep);
        return;
    }
    __atomic_store_n(&ep->hdr->verdict[0], TC_SHM_VERDICT_OK, __ATOMIC_RELEASE);
    tc_shm_prove(ctx, ep);
    ep->cma_peer = __atomic_load_n(&ep->hdr->cma[1], __ATOMIC_RELAXED) != 0;
    ep->state = TC_SHM_EP_UP;
}

static tc_shm_ep_t *tc_shm_ep_find(tc_shm_ctx_t *ctx, uint64_t peer_id)
{
    for (tc_shm_ep_t *ep = ctx->eps; ep != NULL; ep = ep->next)
        if (ep->super.peer_id == peer_id)
            return ep;
    return NULL;
}

tc_status_t tc_shm_ep_connect(tc_tp_ctx_t *super, uint64_t peer_id, const void *addr,
                              size_t addr_len, tc_tp_ep_t **ep_p)
{
    tc_shm_ctx_t *ctx = (tc_shm_ctx_t *)super;
    const unsigned char *p = addr;
    uint32_t magic = 0;
    uint16_t version = 0;
    if (addr_len == TC_TP_SHM_ADDR_LEN) {
        memcpy(&magic, p, 4);
        memcpy(&version, p + 4, 2);
    }
    if (addr_len != TC_TP_SHM_ADDR_LEN || magic != TC_SHM_ADDR_MAGIC)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "shm: the address of peer %llu is not an shm address (%zu bytes, "
                            "expected %d starting with the shm magic)",
                            (unsigned long long)peer_id, addr_len, TC_TP_SHM_ADDR_LEN);
    if (version != TC_SHM_ADDR_VERSION)
        return tc_error_set(TC_ERR_UNSUPPORTED,
                            "shm: the address of peer %llu has version %u, this build knows %d "
                            "(mixed builds?)",
                            (unsigned long long)peer_id, version, TC_SHM_ADDR_VERSION);
    int32_t pid;
    uint64_t id, nonce, probe, pidns;
    memcpy(&pid, p + 8, 4);
    memcpy(&id, p + 16, 8);
    memcpy(&nonce, p + 24, 8);
    memcpy(&probe, p + 32, 8);
    memcpy(&pidns, p + 40, 8);
    if (id != peer_id)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "shm: the address given for peer %llu is that of id %llu",
                            (unsigned long long)peer_id, (unsigned long long)id);
    if (peer_id == ctx->self_id)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "shm: cannot connect id %llu to itself (use the self backend)",
                            (unsigned long long)peer_id);
    if (pid <= 0)
        return tc_error_set(TC_ERR_INVALID_ARG, "shm: the address of peer %llu has pid %d",
                            (unsigned long long)peer_id, (int)pid);
    if (pidns != 0 && ctx->pidns != 0 && pidns != ctx->pidns)
        return tc_error_set(TC_ERR_UNSUPPORTED,
                            "shm: peer %llu (pid %d) is in another pid namespace (container?): "
                            "its pid cannot be watched here, use tcp",
                            (unsigned long long)peer_id, (int)pid);
    if (tc_shm_ep_find(ctx, peer_id) != NULL)
        return tc_error_set(TC_ERR_INVALID_STATE, "shm: id %llu already has an endpoint to %llu",
                            (unsigned long long)ctx->self_id, (unsigned long long)peer_id);

    tc_shm_ep_t *ep = calloc(1, sizeof(*ep));
    if (ep == NULL)
        return tc_error_set(TC_ERR_NO_MEMORY, "shm: cannot allocate an endpoint to peer %llu",
                            (unsigned long long)peer_id);
    ep->super.ops = &tc_tp_shm_ops;
    ep->super.ctx = super;
    ep->super.peer_id = peer_id;
    ep->super.failed = TC_OK;
    ep->peer_pid = pid;
    ep->peer_nonce = nonce;
    ep->pidfd = -1;
    ep->fd = -1;
#ifdef SYS_pidfd_open
    ep->pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
    if (ep->pidfd < 0)
        ep->pidfd = -1; /* old kernel or seccomp: kill() and /proc instead */
#endif
    /* Can we reach the peer's memory? Read its probe word, which holds its nonce. */
    if (ctx->cma) {
        uint64_t got = 0;
        ep->cma_local =
            tc_shm_cma(pid, &got, probe, sizeof(got), 0) == (ssize_t)sizeof(got) && got == nonce;
        if (!ep->cma_local)
            tc_log_info(TC_SUBSYS_TRANSPORT,
                        "shm: process_vm_readv of peer %llu (pid %d) is not allowed (%s; ptrace "
                        "scope?): pipelined copies instead",
                        (unsigned long long)peer_id, (int)pid, strerror(errno));
    }
    /* the name puts the smaller id's pid and nonce first: both sides know it before either
     * knows which of them makes the segment (tc_shm_ep_claim: the first to connect) */
    int lower = ctx->self_id < peer_id;
    snprintf(ep->name, sizeof(ep->name), "/tcomms-%d-%016llx-%016llx",
             lower ? (int)ctx->pid : (int)pid, (unsigned long long)(lower ? ctx->nonce : nonce),
             (unsigned long long)(lower ? nonce : ctx->nonce));
    tc_status_t status = tc_shm_ep_claim(ctx, ep);
    if (status != TC_OK) {
        if (ep->pidfd >= 0)
            close(ep->pidfd);
        free(ep);
        return status;
    }
    if (ep->side == 1)
        tc_shm_ep_try_open(ctx, ep);
    ep->next = ctx->eps;
    ctx->eps = ep;
    tc_log_debug(TC_SUBSYS_TRANSPORT, "shm: id %llu %s %s for peer %llu (pid %d)",
                 (unsigned long long)ctx->self_id, ep->side == 0 ? "created" : "opens", ep->name,
                 (unsigned long long)peer_id, (int)pid);
    *ep_p = &ep->super;
    return TC_OK;
}

void tc_shm_ep_close(tc_tp_ep_t *super)
{
    tc_shm_ep_t *ep = (tc_shm_ep_t *)super;
    tc_shm_ctx_t *ctx = (tc_shm_ctx_t *)super->ctx;
    for (tc_shm_ep_t **pp = &ctx->eps; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == ep) {
            *pp = ep->next;
            break;
        }
    }
    if (ep->hdr != NULL)
        __atomic_store_n(&ep->hdr->state[ep->side], TC_SHM_SIDE_CLOSED, __ATOMIC_RELEASE);
    tc_shm_ep_drain(ctx, ep, TC_ERR_ABORTED, 0);
    if (ep->seg != NULL)
        munmap(ep->seg, ep->seg_len);
    tc_shm_lane_spilled_free(&ep->lane);
    if (ep->linked)
        shm_unlink(ep->name);
    if (ep->fd >= 0)
        close(ep->fd);
    if (ep->pidfd >= 0)
        close(ep->pidfd);
    if (ep->reserved > 0) {
        ctx->shm_bytes -= ep->reserved;
        ctx->nsegs--;
        tc_shm_log_held(ctx);
    }
    free(ep);
}
