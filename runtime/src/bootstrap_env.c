/*
 * The torchrun-environment bootstrap: MASTER_ADDR, MASTER_PORT (29500),
 * RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE describe the job, and rank
 * 0 serves a key/value store (boot_store.c) on MASTER_PORT. Every rank, rank 0
 * too over loopback, is a client of that store:
 *   put    buffers the key here until the next fence;
 *   fence  sends the buffered keys, then waits until every rank has reached
 *          the same fence (a barrier in the store);
 *   get    one round trip for "rank/key" (fetched lazily, no all-to-all).
 * A client keeps O(1) state besides the keys put since the last fence.
 *
 * Other variables: TC_JOB_SECRET (every rank must hold the same one, up to
 * 256 bytes; joining the store proves it without sending it, boot_store.h;
 * without it the store and the transports run with the public key, and each
 * process warns once: docs/security.md), TC_STORE_PORT (overrides MASTER_PORT, e.g. when torchrun's
 * agent already holds it), TC_BOOT_LINGER_S (default 30: how long rank 0's destroy keeps serving
 * ranks that are still connected and have not left; it returns as soon as they all have, so only a
 * rank that keeps running longer than rank 0 makes it wait; 0 stops at once).
 *
 * A rank that creates a new bootstrap right after destroying one may reach the
 * previous store (rank 0 not done with it yet): that store refuses it as a rank
 * that already left, and it tries again until the deadline.
 *
 * Requests are answered in order, each reply carrying its request number, so a
 * late reply to a request that timed out here is recognised and skipped. A
 * frame is read incrementally (what arrived stays for the next call), but a
 * timeout in the middle of sending one leaves the stream unusable: later calls
 * fail at once with TC_ERR_BOOTSTRAP.
 *
 * Events (failure and revoke notices): notify sends a NOTIFY frame, and the
 * store pushes an EVENT frame to every other rank. Those arrive whenever they
 * do: a request waiting for its reply queues them, and poll_event reads the
 * socket without waiting, at most once per ENV_EVENT_POLL_NS (a time it
 * looks at once per ENV_EVENT_CLOCK_EVERY calls) and only when no
 * other thread holds the connection (a trylock), so the progress thread
 * neither makes a syscall per pass nor waits behind a get. They go into a
 * fixed ring; a full ring drops the oldest (the runtime takes events as hints:
 * a lost one leaves the failure to the transports and timeouts).
 *
 * This file holds the requests; the connection to the store (connect, send, receive, replies,
 * the event ring) is bootstrap_env_io.c.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "boot_store.h"
#include "bootstrap_env_impl.h"
#include "bootstrap_impl.h"
#include "tcomms/base/config.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"
#include "tcomms/base/wire.h"

int tc_boot_env_announced(void)
{
    return getenv("MASTER_ADDR") != NULL;
}

/* ---- configuration ---- */

static tc_status_t env_required_int(const char *name, int64_t min, int64_t max, int *value_p)
{
    const char *text = getenv(name);
    int64_t v;
    if (!text)
        return tc_error_set(TC_ERR_CONFIG,
                            "bootstrap(env): %s is not set (the torchrun "
                            "environment needs MASTER_ADDR, RANK and WORLD_SIZE)",
                            name);
    tc_status_t rc = tc_parse_int(name, text, min, max, &v);
    if (rc != TC_OK) {
        tc_error_prefix("bootstrap(env): ");
        return rc;
    }
    *value_p = (int)v;
    return TC_OK;
}

static tc_status_t env_optional_int(const char *name, int64_t def, int64_t min, int64_t max,
                                    int *value_p)
{
    int64_t v;
    tc_status_t rc = tc_config_int(name, def, min, max, &v);
    if (rc != TC_OK) {
        tc_error_prefix("bootstrap(env): ");
        return rc;
    }
    *value_p = (int)v;
    return TC_OK;
}

static tc_status_t env_read_config(env_config_t *cfg)
{
    tc_status_t rc;
    int linger_s;
    memset(cfg, 0, sizeof(*cfg));
    cfg->addr = getenv("MASTER_ADDR");
    if (!cfg->addr || !*cfg->addr || strlen(cfg->addr) > ENV_MAX_HOST)
        return tc_error_set(TC_ERR_CONFIG,
                            "bootstrap(env): MASTER_ADDR=\"%.64s\" %s (a host "
                            "name or an IPv4/IPv6 address of rank 0)",
                            cfg->addr ? cfg->addr : "",
                            !cfg->addr    ? "is not set"
                            : !*cfg->addr ? "is empty"
                                          : "is too long");
    if ((rc = env_optional_int("MASTER_PORT", ENV_DEFAULT_PORT, 1, 65535, &cfg->port)) != TC_OK ||
        (rc = env_optional_int("TC_STORE_PORT", cfg->port, 1, 65535, &cfg->port)) != TC_OK ||
        (rc = env_required_int("WORLD_SIZE", 1, ENV_MAX_WORLD, &cfg->world)) != TC_OK ||
        (rc = env_required_int("RANK", 0, ENV_MAX_WORLD, &cfg->rank)) != TC_OK ||
        (rc = env_optional_int("LOCAL_WORLD_SIZE", 1, 1, cfg->world, &cfg->local_size)) != TC_OK ||
        (rc = env_optional_int("LOCAL_RANK", 0, 0, cfg->world - 1, &cfg->local_rank)) != TC_OK ||
        (rc = env_optional_int("TC_BOOT_LINGER_S", ENV_DEFAULT_LINGER_S, 0, 86400, &linger_s)) !=
            TC_OK)
        return rc;
    if (cfg->rank >= cfg->world)
        return tc_error_set(TC_ERR_CONFIG,
                            "bootstrap(env): RANK=\"%s\" is not below "
                            "WORLD_SIZE=\"%s\"",
                            getenv("RANK"), getenv("WORLD_SIZE"));
    /* Without LOCAL_WORLD_SIZE the local size is unknown (1); with it, they must agree. */
    if (getenv("LOCAL_WORLD_SIZE") && cfg->local_rank >= cfg->local_size)
        return tc_error_set(TC_ERR_CONFIG,
                            "bootstrap(env): LOCAL_RANK=\"%s\" is not below "
                            "LOCAL_WORLD_SIZE=\"%s\"",
                            getenv("LOCAL_RANK"), getenv("LOCAL_WORLD_SIZE"));
    cfg->linger_ns = (uint64_t)linger_s * 1000000000ull;
    return TC_OK;
}

/* ---- the connection ---- */

/* Once per process: without a secret nothing of the job is authenticated. */
static void env_warn_no_secret(int port)
{
    char what[128];
    snprintf(what, sizeof(what),
             "this job's store (port %d) and the connections between its ranks are", port);
    tc_boot_warn_no_secret("env", what);
}

/* ---- the operations ---- */

static tc_status_t env_put(tc_boot_t *boot, const char *key, const void *val, size_t len)
{
    tc_boot_env_t *e = (tc_boot_env_t *)boot;
    size_t klen = key ? strlen(key) : 0;
    if (klen == 0 || klen > TC_BS_MAX_KEY || (len > 0 && !val))
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "bootstrap(env): put of key '%s' (%zu bytes; "
                            "keys have 1 to %d bytes) with %s value",
                            key ? key : "(null)", klen, TC_BS_MAX_KEY, val ? "a" : "a NULL");
    if (len > TC_BS_MAX_VALUE)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "bootstrap(env): put of key '%s': %zu bytes, "
                            "more than the store's limit of %u",
                            key, len, TC_BS_MAX_VALUE);
    size_t body = 2 + klen + 4 + len, need = TC_BS_HDR_LEN + body;
    tc_status_t rc = TC_OK;
    pthread_mutex_lock(&e->lock);
    if (e->pending_len + need > e->pending_cap) {
        size_t cap = e->pending_cap ? e->pending_cap : 1024;
        while (cap < e->pending_len + need)
            cap *= 2;
        uint8_t *p = realloc(e->pending, cap);
        if (!p) {
            rc = tc_error_set(TC_ERR_NO_MEMORY, "bootstrap(env): put of key '%s' (%zu bytes)", key,
                              len);
            goto out;
        }
        e->pending = p;
        e->pending_cap = cap;
    }
    tc_wire_writer_t w;
    tc_boot_store_hdr_write(e->pending + e->pending_len, TC_BS_PUT, (uint32_t)body);
    tc_wire_writer_init(&w, e->pending + e->pending_len + TC_BS_HDR_LEN, body);
    (void)tc_wire_put_u16(&w, (uint16_t)klen);
    (void)tc_wire_put_bytes(&w, key, klen);
    (void)tc_wire_put_u32(&w, (uint32_t)len);
    (void)tc_wire_put_bytes(&w, val, len);
    e->pending_len += need;
out:
    pthread_mutex_unlock(&e->lock);
    return rc;
}

static tc_status_t env_fence(tc_boot_t *boot, uint64_t deadline_ns)
{
    tc_boot_env_t *e = (tc_boot_env_t *)boot;
    uint8_t frame[TC_BS_HDR_LEN + 20];
    char what[64];
    env_reply_t reply;
    tc_status_t rc;
    pthread_mutex_lock(&e->lock);
    if (e->broken) {
        rc = tc_benv_broken_error(e);
        goto out;
    }
    uint64_t seq = e->fences + 1, req = e->next_req++;
    /* Let the store answer a timeout (with the missing ranks) a little before ours. */
    uint32_t wait_ms = TC_BS_WAIT_FOREVER;
    if (deadline_ns != UINT64_MAX) {
        uint64_t left = (uint64_t)tc_deadline_left_ms(deadline_ns);
        uint64_t margin = left / 4 < ENV_FENCE_MARGIN_MS ? left / 4 : ENV_FENCE_MARGIN_MS;
        wait_ms = (uint32_t)(left - margin);
    }
    snprintf(what, sizeof(what), "fence %llu", (unsigned long long)seq);
    tc_wire_writer_t w;
    tc_boot_store_hdr_write(frame, TC_BS_FENCE, 20);
    tc_wire_writer_init(&w, frame + TC_BS_HDR_LEN, 20);
    (void)tc_wire_put_u64(&w, req);
    (void)tc_wire_put_u64(&w, seq);
    (void)tc_wire_put_u32(&w, wait_ms);
    if (e->pending_len > 0) {
        rc = tc_benv_send(e, e->pending, e->pending_len, deadline_ns, what);
        if (rc != TC_OK) {
            e->broken = true; /* which keys arrived is unknown */
            goto out;
        }
        e->pending_len = 0;
    }
    if ((rc = tc_benv_send(e, frame, sizeof(frame), deadline_ns, what)) != TC_OK ||
        (rc = tc_benv_wait_reply(e, req, deadline_ns, what, &reply)) != TC_OK)
        goto out;
    if (reply.status == TC_OK) {
        e->fences = seq;
    } else {
        tc_status_t s = reply.status == TC_ERR_TIMEOUT || reply.status == TC_ERR_PEER_FAILED
                            ? reply.status
                            : TC_ERR_BOOTSTRAP;
        rc = tc_error_set(s, "bootstrap(env): rank %d: %.*s (store at %s)", e->head.rank,
                          (int)reply.len, (const char *)reply.data, e->master);
    }
    free(reply.body);
out:
    pthread_mutex_unlock(&e->lock);
    return rc;
}

static tc_status_t env_get(tc_boot_t *boot, int peer, const char *key, void *buf, size_t cap,
                           size_t *len_p, uint64_t deadline_ns)
{
    tc_boot_env_t *e = (tc_boot_env_t *)boot;
    size_t klen = key ? strlen(key) : 0;
    uint8_t frame[TC_BS_HDR_LEN + 14 + TC_BS_MAX_KEY];
    char what[TC_BS_MAX_KEY + 48];
    env_reply_t reply;
    tc_status_t rc;
    if (klen == 0 || klen > TC_BS_MAX_KEY || !len_p || (cap > 0 && !buf))
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "bootstrap(env): get of key '%s' (%zu bytes; "
                            "keys have 1 to %d bytes) of rank %d",
                            key ? key : "(null)", klen, TC_BS_MAX_KEY, peer);
    snprintf(what, sizeof(what), "get of key '%s' of rank %d", key, peer);
    pthread_mutex_lock(&e->lock);
    if (e->broken) {
        rc = tc_benv_broken_error(e);
        goto out;
    }
    uint64_t req = e->next_req++;
    size_t body = 14 + klen;
    tc_wire_writer_t w;
    tc_boot_store_hdr_write(frame, TC_BS_GET, (uint32_t)body);
    tc_wire_writer_init(&w, frame + TC_BS_HDR_LEN, body);
    (void)tc_wire_put_u64(&w, req);
    (void)tc_wire_put_u32(&w, (uint32_t)peer);
    (void)tc_wire_put_u16(&w, (uint16_t)klen);
    (void)tc_wire_put_bytes(&w, key, klen);
    if ((rc = tc_benv_send(e, frame, TC_BS_HDR_LEN + body, deadline_ns, what)) != TC_OK ||
        (rc = tc_benv_wait_reply(e, req, deadline_ns, what, &reply)) != TC_OK)
        goto out;
    if (reply.status == TC_OK && reply.len > cap) {
        rc = tc_error_set(TC_ERR_TRUNCATED,
                          "bootstrap(env): key '%s' of rank %d has %u bytes, "
                          "more than the %zu expected",
                          key, peer, reply.len, cap);
    } else if (reply.status == TC_OK) {
        if (reply.len)
            memcpy(buf, reply.data, reply.len);
        *len_p = reply.len;
    } else {
        tc_status_t s = reply.status == TC_ERR_NOT_FOUND || reply.status == TC_ERR_INVALID_ARG
                            ? reply.status
                            : TC_ERR_BOOTSTRAP;
        rc = tc_error_set(s, "bootstrap(env): rank %d: %.*s (store at %s)", e->head.rank,
                          (int)reply.len, (const char *)reply.data, e->master);
    }
    free(reply.body);
out:
    pthread_mutex_unlock(&e->lock);
    return rc;
}

/* Dequeue an event; read what the store sent (without waiting) at most once per
 * ENV_EVENT_POLL_NS, and only when no request holds the connection. The clock is read at every
 * ENV_EVENT_CLOCK_EVERY-th call only (callers on several threads may lose a count: harmless). */
static int env_poll_event(tc_boot_t *boot, tc_boot_event_t *ev)
{
    tc_boot_env_t *e = (tc_boot_env_t *)boot;
    if (tc_benv_ev_pop(e, ev))
        return 1;
    unsigned calls = atomic_load_explicit(&e->ev_calls, memory_order_relaxed) + 1;
    atomic_store_explicit(&e->ev_calls, calls, memory_order_relaxed);
    if (calls % ENV_EVENT_CLOCK_EVERY != 0)
        return 0;
    uint64_t now = tc_time_ns();
    if (now - atomic_load_explicit(&e->ev_polled_ns, memory_order_relaxed) < ENV_EVENT_POLL_NS)
        return 0;
    atomic_store_explicit(&e->ev_polled_ns, now, memory_order_relaxed);
    if (pthread_mutex_trylock(&e->lock) != 0)
        return 0; /* a request is reading: it queues what comes */
    if (!e->broken && e->fd >= 0) {
        /* Nothing of this is the caller's error: keep its detail. */
        char saved[2048];
        snprintf(saved, sizeof(saved), "%s", tc_last_error());
        tc_status_t rc = TC_OK;
        for (int i = 0; i < ENV_DRAIN_FRAMES && rc == TC_OK; i++) {
            rc = tc_benv_rx(e, 0, false, "reading events");
            if (rc == TC_OK && e->rx.type == TC_BS_EVENT)
                rc = tc_benv_rx_event(e, "reading events");
            else if (rc == TC_OK)
                tc_benv_rx_reset(&e->rx); /* a late reply to a request that timed out */
        }
        if (rc != TC_OK && rc != TC_INPROGRESS) {
            tc_log_warn(TC_SUBSYS_RUNTIME, "%s; other ranks' notices no longer arrive",
                        tc_last_error());
            tc_error_set(TC_ERR_BOOTSTRAP, "%s", saved);
        }
    }
    pthread_mutex_unlock(&e->lock);
    return tc_benv_ev_pop(e, ev);
}

/* Tell every other rank through the store (no reply: the store passes it on). */
static tc_status_t env_notify(tc_boot_t *boot, const tc_boot_event_t *ev)
{
    tc_boot_env_t *e = (tc_boot_env_t *)boot;
    int me = e->head.rank;
    if (!ev || (ev->kind != TC_BOOT_EV_PROC_FAILED && ev->kind != TC_BOOT_EV_REVOKE) ||
        ev->rank < 0 || ev->rank >= e->head.size ||
        (ev->kind == TC_BOOT_EV_REVOKE) != (ev->rank == me))
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "bootstrap(env): rank %d: notify of kind %d about rank %d of %d "
                            "(a rank revokes its own communicators, and reports other ranks "
                            "failed)",
                            me, ev ? ev->kind : -1, ev ? ev->rank : -1, e->head.size);
    uint8_t frame[TC_BS_HDR_LEN + TC_BS_NOTIFY_LEN];
    tc_wire_writer_t w;
    tc_boot_store_hdr_write(frame, TC_BS_NOTIFY, TC_BS_NOTIFY_LEN);
    tc_wire_writer_init(&w, frame + TC_BS_HDR_LEN, TC_BS_NOTIFY_LEN);
    (void)tc_wire_put_u32(&w, (uint32_t)ev->kind);
    (void)tc_wire_put_u32(&w, (uint32_t)ev->rank);
    /* a failure's third word: 1 when found silent (boot_store.h) */
    (void)tc_wire_put_u32(&w, ev->kind == TC_BOOT_EV_REVOKE ? ev->comm_id : ev->silent != 0);
    tc_status_t rc;
    pthread_mutex_lock(&e->lock);
    if (e->broken)
        rc = tc_benv_broken_error(e);
    else
        rc = tc_benv_send(e, frame, sizeof(frame), tc_deadline_after_ms(ENV_NOTIFY_WAIT_MS),
                          ev->kind == TC_BOOT_EV_REVOKE ? "revoke notice" : "failure notice");
    pthread_mutex_unlock(&e->lock);
    return rc;
}

static void env_destroy(tc_boot_t *boot)
{
    tc_boot_env_t *e = (tc_boot_env_t *)boot;
    if (e->fd >= 0) {
        if (!e->broken) {
            /* Say goodbye so that rank 0 need not linger for this rank. */
            uint8_t bye[TC_BS_HDR_LEN];
            tc_boot_store_hdr_write(bye, TC_BS_BYE, 0);
            if (tc_benv_send(e, bye, sizeof(bye), tc_deadline_after_ms(ENV_BYE_WAIT_MS),
                             "goodbye") != TC_OK)
                tc_log_debug(TC_SUBSYS_RUNTIME,
                             "bootstrap(env): the goodbye was not sent (%s): "
                             "rank 0 lingers for this rank",
                             tc_last_error());
        }
        close(e->fd);
    }
    /* An aborted creation must return promptly: no lingering for the others. */
    tc_boot_store_stop(e->store, tc_boot_creation_is_aborted() ? 0 : e->linger_ns);
    tc_benv_rx_reset(&e->rx);
    pthread_mutex_destroy(&e->ev_lock);
    pthread_mutex_destroy(&e->lock);
    free(e->pending);
    free(e);
}

static const tc_boot_ops_t env_ops = {
    .name = "env",
    .put = env_put,
    .fence = env_fence,
    .get = env_get,
    .destroy = env_destroy,
    .poll_event = env_poll_event,
    .notify = env_notify,
};

/* A bootstrap of the job @p cfg describes, not connected yet; NULL when out of memory. */
static tc_boot_env_t *env_new(const env_config_t *cfg)
{
    tc_boot_env_t *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->fd = -1;
    e->next_req = 1; /* 0 is the hello's */
    e->linger_ns = cfg->linger_ns;
    e->head.ops = &env_ops;
    e->head.rank = cfg->rank;
    e->head.size = cfg->world;
    e->head.local_size = cfg->local_size;
    e->head.local_rank = cfg->local_rank;
    strcpy(e->head.launcher, "env");
    tc_boot_fill_common(&e->head);
    /* An IPv6 literal is written in brackets before the port. */
    snprintf(e->master, sizeof(e->master), strchr(cfg->addr, ':') ? "[%s]:%d" : "%s:%d", cfg->addr,
             cfg->port);
    pthread_mutex_init(&e->lock, NULL);
    pthread_mutex_init(&e->ev_lock, NULL);
    atomic_init(&e->ev_count, 0);
    atomic_init(&e->ev_polled_ns, 0);
    atomic_init(&e->ev_calls, 0);
    return e;
}

tc_status_t tc_boot_env_join_fd(int fd, int rank, int world, const void *secret, size_t slen,
                                uint64_t deadline_ns, tc_boot_t **boot_p)
{
    env_config_t cfg = {.addr = "socket",
                        .port = 0,
                        .rank = rank,
                        .world = world,
                        .local_rank = 0,
                        .local_size = 1,
                        .linger_ns = 0};
    tc_auth_key_t key;
    tc_status_t rc;
    if (rank < 0 || world < 1 || rank >= world || slen > TC_BOOT_SECRET_MAX ||
        (slen > 0 && !secret)) {
        close(fd);
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "bootstrap(env): joining as rank %d of %d with a secret of %zu bytes",
                            rank, world, slen);
    }
    tc_boot_env_t *e = env_new(&cfg);
    if (!e) {
        close(fd);
        return tc_error_set(TC_ERR_NO_MEMORY, "bootstrap(env): allocating the bootstrap");
    }
    e->fd = fd;
    if (slen > 0)
        memcpy(e->head.secret, secret, slen);
    e->head.secret_len = slen;
    if ((rc = tc_auth_key_init(&key, secret, slen)) == TC_OK) {
        rc = tc_benv_hello(e, &cfg, &key, deadline_ns);
        tc_auth_key_wipe(&key);
    }
    if (rc != TC_OK) {
        close(e->fd);
        tc_benv_rx_reset(&e->rx);
        pthread_mutex_destroy(&e->ev_lock);
        pthread_mutex_destroy(&e->lock);
        free(e);
        return rc;
    }
    *boot_p = &e->head;
    return TC_OK;
}

tc_status_t tc_boot_env_create(uint64_t deadline_ns, tc_boot_t **boot_p)
{
    env_config_t cfg;
    tc_status_t rc = env_read_config(&cfg);
    if (rc != TC_OK)
        return rc;
    tc_boot_env_t *e = env_new(&cfg);
    if (!e)
        return tc_error_set(TC_ERR_NO_MEMORY, "bootstrap(env): allocating the bootstrap");
    tc_auth_key_t key;
    memset(&key, 0, sizeof(key));
    if ((rc = tc_boot_secret_from_env(&e->head, "env")) != TC_OK ||
        (rc = tc_auth_key_init(&key, e->head.secret, e->head.secret_len)) != TC_OK)
        goto fail;
    if (e->head.secret_len == 0)
        env_warn_no_secret(cfg.port);
    if (cfg.rank == 0 && (rc = tc_boot_store_start(cfg.port, cfg.world, e->head.secret,
                                                   e->head.secret_len, &e->store)) != TC_OK)
        goto fail;
    /* Rank 0 reaches its own store over loopback (IPv4, which the store always serves). */
    for (;;) {
        if ((rc = tc_benv_connect(e, cfg.rank == 0 ? "127.0.0.1" : cfg.addr, cfg.port,
                                  deadline_ns)) != TC_OK ||
            (rc = tc_benv_hello(e, &cfg, &key, deadline_ns)) != TC_ERR_INVALID_STATE)
            break;
        /* This rank left that store already: it is the previous bootstrap's, which rank 0
         * has not closed yet. Try again until rank 0 serves the new one. */
        close(e->fd);
        e->fd = -1;
        e->broken = false;
        tc_benv_rx_reset(&e->rx);
        if (tc_deadline_passed(deadline_ns)) {
            char why[TC_BS_MAX_TEXT + 128];
            snprintf(why, sizeof(why), "%s", tc_last_error());
            rc = tc_error_set(TC_ERR_BOOTSTRAP, "%s; still so at the deadline", why);
            break;
        }
        uint64_t left = (uint64_t)tc_deadline_left_ms(deadline_ns);
        tc_sleep_ns((left < ENV_STALE_RETRY_MS ? left : ENV_STALE_RETRY_MS) * ENV_NS_PER_MS);
    }
    tc_auth_key_wipe(&key);
    if (rc != TC_OK)
        goto fail;
    tc_log_info(TC_SUBSYS_RUNTIME, "bootstrap: env rank %d of %d (local %d of %d), store at %s",
                cfg.rank, cfg.world, cfg.local_rank, cfg.local_size, e->master);
    *boot_p = &e->head;
    return TC_OK;

fail:
    tc_auth_key_wipe(&key);
    if (e->fd >= 0)
        close(e->fd);
    tc_boot_store_stop(e->store, 0);
    tc_benv_rx_reset(&e->rx);
    pthread_mutex_destroy(&e->ev_lock);
    pthread_mutex_destroy(&e->lock);
    free(e);
    return rc;
}
