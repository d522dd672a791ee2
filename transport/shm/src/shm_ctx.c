/* The shm context: options, the /dev/shm pre-flight, the process_vm_readv self-test, progress,
 * wait and the ops table. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include "shm_internal.h"
#include "tcomms/base/copy.h"
#include "tcomms/base/config.h"
#include "tcomms/base/log.h"
#include "tcomms/base/proc.h"
#include "tcomms/base/time.h"

void tc_shm_req_complete(tc_shm_ctx_t *ctx, tc_tp_req_t *req, tc_status_t status, size_t bytes)
{
    if (req->bytes == TC_SHM_ORPHAN) { /* cancelled by its owner, finished by us */
        free(req);
        return;
    }
    req->bytes = bytes;
    req->priv[TC_SHM_P_NEXT] = 0;
    req->status = status;
    ctx->ncompleted++;
}

static uint64_t tc_shm_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

tc_status_t tc_shm_free_bytes(uint64_t *avail_p)
{
    struct statvfs sv;
    if (statvfs(TC_SHM_DEV, &sv) != 0)
        return tc_error_set(TC_ERR_NO_RESOURCE, "shm: cannot use %s: statvfs: %s", TC_SHM_DEV,
                            strerror(errno));
    *avail_p = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
    return TC_OK;
}

tc_status_t tc_shm_preflight(size_t need, uint32_t cell_size, uint32_t ncells)
{
    uint64_t avail = 0;
    tc_status_t st = tc_shm_free_bytes(&avail);
    if (st != TC_OK || avail >= need)
        return st;
    return tc_error_set(TC_ERR_NO_RESOURCE,
                        "shm: %s has %.1f MiB free, a segment for one peer needs %.1f MiB (%u "
                        "cells of %u bytes each way); enlarge %s (docker run --shm-size=1g, or "
                        "mount -o remount,size=2g %s), lower TC_SHM_CELLS / TC_SHM_CELL_SIZE, or "
                        "use another transport",
                        TC_SHM_DEV, (double)avail / 1048576.0, (double)need / 1048576.0, ncells,
                        cell_size, TC_SHM_DEV, TC_SHM_DEV);
}

ssize_t tc_shm_cma(pid_t pid, void *local, uint64_t remote, size_t len, int write)
{
    size_t done = 0;
    while (done < len) {
        struct iovec l = {(char *)local + done, len - done};
        struct iovec r = {(void *)(uintptr_t)(remote + done), len - done};
        ssize_t n = write ? process_vm_writev(pid, &l, 1, &r, 1, 0)
                          : process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0) {
            errno = EFAULT;
            return -1;
        }
        done += (size_t)n;
    }
    return (ssize_t)done;
}

ssize_t tc_shm_cma_at(tc_shm_ctx_t *ctx, pid_t pid, void *local, uint64_t remote, size_t len,
                      int write)
{
    uintptr_t at = (uintptr_t)local, peer = (uintptr_t)remote;
    if (len < TC_COPY_LOOP_MIN ||
        !(write ? tc_copy_near_ahead(peer, at) : tc_copy_near_ahead(at, peer)) ||
        !tc_copy_loop_on() ||
        (ctx->stage == NULL && (ctx->stage = malloc(TC_SHM_STAGE_BYTES)) == NULL))
        return tc_shm_cma(pid, local, remote, len, write);
    unsigned char *mine = local;
    for (size_t done = 0; done < len;) {
        uint64_t r = remote + done;
        /* the staging piece at distance 0 modulo 64 from the peer's bytes */
        unsigned char *p = ctx->stage + ((r - (uintptr_t)ctx->stage) & 63);
        size_t n = len - done < TC_SHM_STAGE_BYTES - 64 ? len - done : TC_SHM_STAGE_BYTES - 64;
        if (write)
            tc_copy(p, mine + done, n);
        if (tc_shm_cma(pid, p, r, n, write) < 0)
            return -1;
        if (!write)
            tc_copy(mine + done, p, n);
        done += n;
    }
    return (ssize_t)len;
}

static tc_status_t tc_shm_query(tc_tp_caps_t *caps_p)
{
    if (caps_p == NULL || caps_p->size != sizeof(tc_tp_caps_t))
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "shm query: caps is NULL or caps->size is not sizeof(tc_tp_caps_t)");
    struct stat st;
    caps_p->available = stat(TC_SHM_DEV, &st) == 0 && S_ISDIR(st.st_mode);
    caps_p->same_node_only = 1;
    caps_p->one_sided = 1;
    caps_p->max_addr_len = TC_TP_SHM_ADDR_LEN;
    return TC_OK;
}

/* An option: the environment variable, overridden by the hint. */
static tc_status_t tc_shm_opt_int(const tc_hints_t *hints, const char *key, const char *env,
                                  int64_t def, int64_t min, int64_t max, int64_t *value_p)
{
    int64_t v;
    tc_status_t st = tc_config_int(env, def, min, max, &v);
    if (st == TC_OK && hints != NULL)
        st = tc_hints_int(hints, key, v, min, max, &v);
    if (st == TC_OK)
        *value_p = v;
    return st;
}

/* shm_full_pairs / TC_SHM_FULL_PAIRS: "A-B,C-D" (or spaces) pairs of ids whose segment is taken not
 * to fit (fault injection: a test makes chosen pairs fall back as a full /dev/shm would). */
static tc_status_t tc_shm_full_pairs(tc_shm_ctx_t *ctx, const tc_hints_t *hints)
{
    const char *v = hints != NULL ? tc_hints_get(hints, "shm_full_pairs") : NULL;
    if (v == NULL)
        v = tc_config_string("TC_SHM_FULL_PAIRS", NULL);
    ctx->nfull = 0;
    while (v != NULL && *v != '\0') {
        char *end;
        errno = 0;
        unsigned long long a = strtoull(v, &end, 10), b = 0;
        int ok = end != v && *end == '-' && errno == 0;
        if (ok) {
            const char *bs = end + 1;
            b = strtoull(bs, &end, 10);
            ok = end != bs && (*end == ',' || *end == ' ' || *end == '\0') && errno == 0 && a != b;
        }
        if (!ok)
            return tc_error_set(TC_ERR_CONFIG,
                                "shm: shm_full_pairs / TC_SHM_FULL_PAIRS '%s': expected pairs of "
                                "two different ids, A-B[,C-D...] (or spaces)",
                                v);
        if (a == ctx->self_id || b == ctx->self_id) {
            if (ctx->nfull == TC_SHM_FULL_MAX)
                return tc_error_set(TC_ERR_CONFIG,
                                    "shm: shm_full_pairs names more than %d peers of id %llu",
                                    TC_SHM_FULL_MAX, (unsigned long long)ctx->self_id);
            ctx->full[ctx->nfull++] = a == ctx->self_id ? b : a;
        }
        v = *end != '\0' ? end + 1 : end;
    }
    return TC_OK;
}

static tc_status_t tc_shm_options(tc_shm_ctx_t *ctx, const tc_hints_t *hints)
{
    uint64_t cell;
    tc_status_t st = tc_config_size("TC_SHM_CELL_SIZE", 8192, &cell);
    if (st == TC_OK && hints != NULL)
        st = tc_hints_size(hints, "shm_cell_size", cell, &cell);
    if (st != TC_OK)
        return st;
    if (cell < 64 || cell > (1u << 20) || cell % 64 != 0)
        return tc_error_set(TC_ERR_CONFIG,
                            "shm: cell size %llu (shm_cell_size / TC_SHM_CELL_SIZE) must be a "
                            "multiple of 64 in [64, 1M]",
                            (unsigned long long)cell);
    int64_t ncells, cma, live, local = 1;
    if ((st = tc_shm_opt_int(hints, "shm_cells", "TC_SHM_CELLS", 32, 2, 1 << 24, &ncells)) !=
            TC_OK ||
        (hints != NULL &&
         (st = tc_hints_int(hints, "shm_local_ranks", 1, 1, 1 << 20, &local)) != TC_OK) ||
        (st = tc_shm_opt_int(hints, "shm_liveness_ms", "TC_SHM_LIVENESS_MS", 100, 1, 60000,
                             &live)) != TC_OK)
        return st;
    bool use_cma;
    if ((st = tc_config_bool("TC_SHM_CMA", true, &use_cma)) != TC_OK ||
        (hints != NULL && (st = tc_hints_bool(hints, "shm_cma", use_cma, &use_cma)) != TC_OK))
        return st;
    cma = use_cma;
    if ((st = tc_shm_full_pairs(ctx, hints)) != TC_OK)
        return st;
    ctx->cell_size = (uint32_t)cell;
    ctx->ncells = (uint32_t)ncells;
    ctx->liveness_ns = (uint64_t)live * 1000000ULL;
    ctx->cma = (int)cma;
    ctx->local_ranks = (uint32_t)local;
    /* the pre-flight asks for the smallest segment: the others are chosen when connecting */
    tc_shm_geom_t plan[TC_SHM_LEVELS];
    int n = tc_shm_geom_plan(ctx->cell_size, ctx->ncells, 0, plan);
    ctx->seg_size = tc_shm_geom_seg_size(plan[n - 1].cell_size, plan[n - 1].ncells,
                                         (size_t)sysconf(_SC_PAGESIZE));
    return TC_OK;
}

static void tc_shm_ctx_destroy(tc_tp_ctx_t *super)
{
    tc_shm_ctx_t *ctx = (tc_shm_ctx_t *)super;
    if (ctx == NULL)
        return;
    while (ctx->eps != NULL)
        tc_shm_ep_close(&ctx->eps->super);
    while (ctx->mems != NULL) {
        tc_shm_mem_t *m = ctx->mems;
        ctx->mems = m->next;
        free(m);
    }
    tc_shm_unlink_marks(ctx);
    tc_auth_key_wipe(&ctx->key);
    free(ctx->stage);
    while (ctx->unexp_free != NULL) {
        tc_shm_unexp_t *u = ctx->unexp_free;
        ctx->unexp_free = u->next;
        free(u);
    }
    tc_pool_destroy(&ctx->jobs);
    free(ctx);
}

static tc_status_t tc_shm_ctx_create(const tc_tp_ctx_params_t *params, tc_tp_ctx_t **ctx_p)
{
    if (params == NULL || ctx_p == NULL || params->size != sizeof(tc_tp_ctx_params_t) ||
        (params->secret == NULL && params->secret_len != 0))
        return tc_error_set(TC_ERR_INVALID_ARG, "shm ctx_create: bad params or ctx_p");
    tc_shm_ctx_t *ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL)
        return tc_error_set(TC_ERR_NO_MEMORY, "shm: cannot allocate a context of %zu bytes",
                            sizeof(*ctx));
    ctx->super.ops = &tc_tp_shm_ops;
    ctx->self_id = params->self_id;
    ctx->pid = getpid();
    ctx->next_key = 1;
    ctx->next_cookie = 1;

    tc_status_t status = tc_auth_key_init(&ctx->key, params->secret, params->secret_len);
    if (status != TC_OK)
        goto err;
    status = tc_pool_init(&ctx->jobs, "shm get jobs", sizeof(tc_shm_job_t), 16, 0);
    if (status != TC_OK)
        goto err;
    status = tc_shm_options(ctx, params->hints);
    if (status != TC_OK)
        goto err;
    ctx->pidns = tc_proc_pidns();
    tc_shm_sweep(ctx); /* before the pre-flight: what it frees is free */
    /* The floor's size (the smallest pair segment, lanes included) not free is no error: each
     * pair decides when it connects, and one without room takes another transport. */
    if (tc_shm_preflight(ctx->seg_size, ctx->cell_size, ctx->ncells) != TC_OK)
        tc_log_info(TC_SUBSYS_TRANSPORT, "%s (pairs without room are refused)", tc_last_error());

    uint64_t nonce = 0;
    if (getrandom(&nonce, sizeof(nonce), GRND_NONBLOCK) != (ssize_t)sizeof(nonce))
        nonce = tc_shm_mix64(tc_time_ns() ^ ((uint64_t)ctx->pid << 32) ^ (uintptr_t)ctx);
    ctx->nonce = nonce;
    ctx->probe = nonce;

    /* Seccomp (containers) or the kernel may forbid process_vm_readv even on ourselves. */
    if (ctx->cma) {
        uint64_t got = 0;
        if (tc_shm_cma(ctx->pid, &got, (uint64_t)(uintptr_t)&ctx->probe, sizeof(got), 0) !=
                (ssize_t)sizeof(got) ||
            got != nonce) {
            tc_log_info(TC_SUBSYS_TRANSPORT,
                        "shm: process_vm_readv does not work here (%s): large messages are "
                        "pipelined through the segment",
                        strerror(errno));
            ctx->cma = 0;
        }
    }
    ctx->next_check_ns = tc_time_ns() + ctx->liveness_ns;
    tc_log_debug(TC_SUBSYS_TRANSPORT,
                 "shm: id %llu pid %d: at most %u cells x %u bytes per pair (sized from the "
                 "free space of /dev/shm for %u local ranks), single-copy %s",
                 (unsigned long long)ctx->self_id, (int)ctx->pid, ctx->ncells, ctx->cell_size,
                 ctx->local_ranks, ctx->cma ? "on" : "off");
    *ctx_p = &ctx->super;
    return TC_OK;

err:
    tc_shm_ctx_destroy(&ctx->super);
    return status;
}

/* address: u32 magic, u16 version, u16 0, i32 pid, u32 0, u64 id, u64 nonce, u64 probe address,
 * u64 pid namespace inode (host order: both ends are on one node) */
static tc_status_t tc_shm_addr_pack(tc_tp_ctx_t *super, void *buf, size_t cap, size_t *len_p)
{
    tc_shm_ctx_t *ctx = (tc_shm_ctx_t *)super;
    if (cap < TC_TP_SHM_ADDR_LEN)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "shm addr_pack: buffer of %zu bytes, the address needs %d", cap,
                            TC_TP_SHM_ADDR_LEN);
    unsigned char *p = buf;
    uint32_t magic = TC_SHM_ADDR_MAGIC, zero = 0;
    uint16_t version = TC_SHM_ADDR_VERSION, z16 = 0;
    int32_t pid = (int32_t)ctx->pid;
    uint64_t probe = (uint64_t)(uintptr_t)&ctx->probe;
    memcpy(p, &magic, 4);
    /* NOLINTNEXTLINE(bugprone-not-null-terminated-result): a u16, not a string */
    memcpy(p + 4, &version, 2);
    memcpy(p + 6, &z16, 2);
    memcpy(p + 8, &pid, 4);
    memcpy(p + 12, &zero, 4);
    memcpy(p + 16, &ctx->self_id, 8);
    memcpy(p + 24, &ctx->nonce, 8);
    memcpy(p + 32, &probe, 8);
    memcpy(p + 40, &ctx->pidns, 8);
    *len_p = TC_TP_SHM_ADDR_LEN;
    return TC_OK;
}

static int tc_shm_progress(tc_tp_ctx_t *super)
{
    tc_shm_ctx_t *ctx = (tc_shm_ctx_t *)super;
    /* pieces count too: a caller that saw nothing move would nap while a message is half read */
    uint64_t before = ctx->ncompleted + ctx->moved;
    if (ctx->eps == NULL)
        return 0;
    ctx->pass_copied = 0;
    /* The liveness check is a system call per peer, so only every liveness_ns;
     * even the clock is read only every 64 calls (it is most of a call's cost). */
    int check = 0;
    if (++ctx->progress_calls % 64 == 0) {
        uint64_t now = tc_time_ns();
        if (now >= ctx->next_check_ns) {
            check = 1;
            ctx->next_check_ns = now + ctx->liveness_ns;
        }
    }
    for (tc_shm_ep_t *ep = ctx->eps; ep != NULL; ep = ep->next) {
        if (ep->state == TC_SHM_EP_FAILED)
            continue;
        if (ep->state != TC_SHM_EP_UP)
            tc_shm_ep_connecting(ctx, ep);
        if (ep->state == TC_SHM_EP_UP) {
            int n = tc_shm_ep_read(ctx, ep);
            if (ep->state == TC_SHM_EP_UP)
                tc_shm_ep_flush(ctx, ep);
            /* the peer closed: deliver what it wrote before, then fail */
            if (n == 0 && ep->state == TC_SHM_EP_UP &&
                __atomic_load_n(&ep->hdr->state[1 - ep->side], __ATOMIC_ACQUIRE) ==
                    TC_SHM_SIDE_CLOSED &&
                tc_shm_ep_read(ctx, ep) == 0 && ep->state == TC_SHM_EP_UP)
                tc_shm_ep_fail(ctx, ep, TC_ERR_PEER_FAILED, "%s", tc_shm_ep_closed_why(ep));
        }
        if (check && ep->state == TC_SHM_EP_UP)
            tc_shm_withdraw_sweep(ctx, ep);
        if (check && ep->state != TC_SHM_EP_FAILED && tc_shm_peer_exited(ep)) {
            while (ep->state == TC_SHM_EP_UP && tc_shm_ep_read(ctx, ep) > 0)
                ;
            if (ep->state != TC_SHM_EP_FAILED)
                tc_shm_ep_fail(ctx, ep, TC_ERR_PEER_FAILED, "exited");
        }
    }
    uint64_t done = ctx->ncompleted + ctx->moved - before;
    return done > INT_MAX ? INT_MAX : (int)done;
}

/* Whether progress() has something to do right now. */
static int tc_shm_ready(tc_shm_ctx_t *ctx)
{
    for (tc_shm_ep_t *ep = ctx->eps; ep != NULL; ep = ep->next) {
        if (ep->state != TC_SHM_EP_UP)
            continue;
        if (ep->rd_head != NULL || __atomic_load_n(ep->rx.tail, __ATOMIC_ACQUIRE) != ep->rx.pos)
            return 1;
        if ((ep->ctrl_n > 0 || ep->jobs_head != NULL || ep->sq.head != NULL) &&
            ep->tx.pos - __atomic_load_n(ep->tx.head, __ATOMIC_ACQUIRE) < ep->ncells)
            return 1;
        if (__atomic_load_n(&ep->hdr->state[1 - ep->side], __ATOMIC_ACQUIRE) == TC_SHM_SIDE_CLOSED)
            return 1;
    }
    return 0;
}

/* No file descriptor to sleep on: look at the rings, sleeping a little longer each time. */
static tc_status_t tc_shm_wait(tc_tp_ctx_t *super, int timeout_ms)
{
    tc_shm_ctx_t *ctx = (tc_shm_ctx_t *)super;
    if (timeout_ms < 0)
        timeout_ms = 0;
    uint64_t deadline = tc_deadline_after_ms((uint64_t)timeout_ms);
    uint64_t nap = 10000; /* ns */
    while (!tc_shm_ready(ctx)) {
        uint64_t now = tc_time_ns();
        if (now >= deadline || now >= ctx->next_check_ns)
            break;
        uint64_t left = deadline - now;
        tc_sleep_ns(nap < left ? nap : left);
        if (nap < 1000000)
            nap *= 2;
        for (tc_shm_ep_t *ep = ctx->eps; ep != NULL; ep = ep->next)
            if (ep->state == TC_SHM_EP_OPENING || ep->state == TC_SHM_EP_CONNECTING ||
                ep->state == TC_SHM_EP_PROVING)
                return TC_OK;
    }
    return TC_OK;
}

tc_status_t tc_tp_shm_ep_segment(const tc_tp_ep_t *super, void **base_p, size_t *len_p)
{
    if (super == NULL || super->ops != &tc_tp_shm_ops || base_p == NULL || len_p == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "tc_tp_shm_ep_segment: not an shm endpoint, or NULL output");
    const tc_shm_ep_t *ep = (const tc_shm_ep_t *)super;
    if (ep->seg == NULL)
        return tc_error_set(TC_ERR_INVALID_STATE,
                            "tc_tp_shm_ep_segment: the endpoint to peer %llu has no segment yet",
                            (unsigned long long)super->peer_id);
    *base_p = ep->seg;
    *len_p = ep->seg_len;
    return TC_OK;
}

tc_status_t tc_tp_shm_ep_lane(tc_tp_ep_t *super, tc_tp_shm_lane_t **lane_p)
{
    if (super == NULL || super->ops != &tc_tp_shm_ops || lane_p == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "tc_tp_shm_ep_lane: not an shm endpoint, or NULL output");
    tc_shm_ep_t *ep = (tc_shm_ep_t *)super;
    if (ep->state == TC_SHM_EP_FAILED)
        return tc_error_set(super->failed, "%s", super->error);
    if (ep->state != TC_SHM_EP_UP)
        return tc_error_set(TC_ERR_INVALID_STATE,
                            "tc_tp_shm_ep_lane: the endpoint to peer %llu is not connected yet",
                            (unsigned long long)super->peer_id);
    tc_status_t st = tc_shm_ep_reserve_lanes((tc_shm_ctx_t *)super->ctx, ep);
    if (st != TC_OK)
        return st;
    *lane_p = &ep->lane;
    return TC_OK;
}

tc_status_t tc_tp_shm_ep_lane_cost(const tc_tp_ep_t *super, uint64_t *cost_p, uint64_t *free_p)
{
    if (super == NULL || super->ops != &tc_tp_shm_ops || cost_p == NULL || free_p == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "tc_tp_shm_ep_lane_cost: not an shm endpoint, or NULL output");
    const tc_shm_ep_t *ep = (const tc_shm_ep_t *)super;
    if (ep->state == TC_SHM_EP_FAILED)
        return tc_error_set(super->failed, "%s", super->error);
    if (ep->state != TC_SHM_EP_UP)
        return tc_error_set(
            TC_ERR_INVALID_STATE,
            "tc_tp_shm_ep_lane_cost: the endpoint to peer %llu is not connected yet",
            (unsigned long long)super->peer_id);
    tc_status_t st = tc_shm_free_bytes(free_p);
    if (st == TC_OK)
        *cost_p = ep->lanes_pending ? 2 * TC_SHM_LANE_BYTES : 0;
    return st;
}

int tc_tp_shm_ep_single_copy(const tc_tp_ep_t *super)
{
    if (super == NULL || super->ops != &tc_tp_shm_ops)
        return 0;
    const tc_shm_ep_t *ep = (const tc_shm_ep_t *)super;
    return ep->state == TC_SHM_EP_UP && ep->cma_peer;
}

/* The communicator hints a shm context reads (docs/transport_shm.md) */
static const char *const tc_shm_hints[] = {
    "shm_cells",       "shm_cell_size",  "shm_cma", "shm_liveness_ms",
    "shm_local_ranks", "shm_full_pairs", NULL};

const tc_tp_ops_t tc_tp_shm_ops = {
    .version = TC_TP_API_VERSION,
    .name = "shm",
    .query = tc_shm_query,
    .ctx_create = tc_shm_ctx_create,
    .ctx_destroy = tc_shm_ctx_destroy,
    .addr_pack = tc_shm_addr_pack,
    .ep_connect = tc_shm_ep_connect,
    .ep_close = tc_shm_ep_close,
    .send = tc_shm_send,
    .recv = tc_shm_recv,
    .cancel = tc_shm_cancel,
    .discard = tc_shm_discard,
    .progress = tc_shm_progress,
    .wait = tc_shm_wait,
    .mem_reg = tc_shm_mem_reg,
    .mem_dereg = tc_shm_mem_dereg,
    .rkey_pack = tc_shm_rkey_pack,
    .rkey_unpack = tc_shm_rkey_unpack,
    .rkey_release = tc_shm_rkey_release,
    .put = tc_shm_put,
    .get = tc_shm_get,
    .signal = tc_shm_signal,
    .recv_sink = tc_shm_recv_sink,
    .probe = tc_shm_probe,
    .hint_keys = tc_shm_hints,
};
