/* The TCP context: listening socket, epoll set, progress and the ops table. */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcomms/base/config.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"
#include "tcp_internal.h"

static tc_status_t tc_tcp_query(tc_tp_caps_t *caps_p)
{
    if (caps_p == NULL || caps_p->size != sizeof(tc_tp_caps_t))
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "tcp query: caps is NULL or caps->size is not sizeof(tc_tp_caps_t)");
    caps_p->available = 1;
    caps_p->same_node_only = 0;
    caps_p->one_sided = 1;
    caps_p->max_addr_len = TC_TCP_ADDR_LEN_MAX;
    return TC_OK;
}

/* One rail: listen on its address. Several: one socket on the wildcard address, so that one
 * port, one accept path and one bound on handshakes in progress serve every rail; each rail's
 * address is published with that port (the handshake authenticates whatever comes in). */
static tc_status_t tc_tcp_listen(tc_tcp_ctx_t *ctx)
{
    tc_status_t status = tc_tcp_iface_select(ctx->rails, &ctx->nrails);
    if (status != TC_OK)
        return status;
    if (ctx->nrails > 1 && ctx->nsocks < ctx->nrails) {
        tc_log_info(TC_SUBSYS_TRANSPORT,
                    "tcp: %d sockets per peer instead of %d, so that each of the %d rails "
                    "carries one",
                    ctx->nrails, ctx->nsocks, ctx->nrails);
        ctx->nsocks = ctx->nrails;
    }

    ctx->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (ctx->listen_fd < 0)
        return tc_error_set(errno == EMFILE || errno == ENFILE ? TC_ERR_NO_RESOURCE : TC_ERR_SYSTEM,
                            "tcp: socket() for the listening socket failed: %s", strerror(errno));
    memset(&ctx->addr, 0, sizeof(ctx->addr));
    ctx->addr.sin_family = AF_INET;
    ctx->addr.sin_addr.s_addr = ctx->nrails > 1 ? htonl(INADDR_ANY) : ctx->rails[0].ip.s_addr;
    ctx->addr.sin_port = 0; /* any free port */
    char where[32];
    tc_tcp_sockaddr_string(&ctx->addr, where, sizeof(where));
    if (bind(ctx->listen_fd, (struct sockaddr *)&ctx->addr, sizeof(ctx->addr)) != 0)
        return tc_error_set(TC_ERR_SYSTEM, "tcp: bind to %s (%s) failed: %s", where,
                            ctx->rails[0].name, strerror(errno));
    socklen_t len = sizeof(ctx->addr);
    if (getsockname(ctx->listen_fd, (struct sockaddr *)&ctx->addr, &len) != 0)
        return tc_error_set(TC_ERR_SYSTEM, "tcp: getsockname failed: %s", strerror(errno));
    ctx->addr.sin_addr = ctx->rails[0].ip;
    tc_tcp_sockaddr_string(&ctx->addr, where, sizeof(where));
    if (listen(ctx->listen_fd, SOMAXCONN) != 0)
        return tc_error_set(TC_ERR_SYSTEM, "tcp: listen on %s failed: %s", where, strerror(errno));

    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &ctx->listen_poll};
    if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, ctx->listen_fd, &ev) != 0)
        return tc_error_set(TC_ERR_SYSTEM, "tcp: epoll_ctl(ADD) of the listening socket: %s",
                            strerror(errno));
    tc_log_info(TC_SUBSYS_TRANSPORT,
                "tcp: id %llu listening on %s (%s%s), %d rail%s, %d socket%s per peer, striping "
                "from %llu bytes",
                (unsigned long long)ctx->self_id, where, ctx->rails[0].name,
                ctx->nrails > 1 ? ", and the other rails' addresses at the same port" : "",
                ctx->nrails, ctx->nrails == 1 ? "" : "s", ctx->nsocks, ctx->nsocks == 1 ? "" : "s",
                (unsigned long long)ctx->stripe_min);
    return TC_OK;
}

static void tc_tcp_ctx_destroy(tc_tp_ctx_t *super)
{
    tc_tcp_ctx_t *ctx = (tc_tcp_ctx_t *)super;
    if (ctx == NULL)
        return;
    while (ctx->eps != NULL)
        tc_tcp_ep_close(&ctx->eps->super);
    while (ctx->hello_conns != NULL) {
        tc_tcp_conn_t *conn = ctx->hello_conns;
        ctx->hello_conns = conn->next;
        tc_tcp_conn_free(conn);
    }
    while (ctx->parked != NULL) {
        tc_tcp_conn_t *conn = ctx->parked;
        ctx->parked = conn->next;
        tc_tcp_conn_free(conn);
    }
    while (ctx->parked_data != NULL) {
        tc_tcp_conn_t *conn = ctx->parked_data;
        ctx->parked_data = conn->next;
        tc_tcp_conn_free(conn);
    }
    if (ctx->listen_fd >= 0)
        close(ctx->listen_fd);
    if (ctx->epfd >= 0)
        close(ctx->epfd);
    tc_tcp_mem_table_free(ctx);
    tc_auth_key_wipe(&ctx->key);
    while (ctx->unexp_free != NULL) {
        tc_tcp_unexp_t *u = ctx->unexp_free;
        ctx->unexp_free = u->next;
        free(u);
    }
    free(ctx->unexp_big);
    free(ctx);
}

/* Sockets per peer and the striping threshold: the environment, then the hints. */
static tc_status_t tc_tcp_options(tc_tcp_ctx_t *ctx, const tc_hints_t *hints)
{
    int64_t nsocks, hs_ms, rail_ms;
    uint64_t stripe_min;
    tc_status_t st =
        tc_config_int("TC_SOCKET_NSOCKS", TC_TCP_NSOCKS_DEFAULT, 1, TC_TCP_NSOCKS_MAX, &nsocks);
    if (st == TC_OK && hints != NULL)
        st = tc_hints_int(hints, "tcp_nsocks", nsocks, 1, TC_TCP_NSOCKS_MAX, &nsocks);
    if (st == TC_OK)
        st = tc_config_int("TC_SOCKET_HANDSHAKE_TIMEOUT_MS", TC_TCP_HELLO_TIMEOUT_MS, 10, 600000,
                           &hs_ms);
    if (st == TC_OK)
        st = tc_config_int("TC_SOCKET_RAIL_TIMEOUT_MS", TC_TCP_RAIL_TIMEOUT_MS, 100, 600000,
                           &rail_ms);
    if (st != TC_OK)
        return st;
    ctx->rail_timeout_ms = (int)rail_ms;
    ctx->hs_timeout_ms = (int)hs_ms;
    const char *what = "TC_SOCKET_STRIPE_MIN";
    st = tc_config_size(what, TC_TCP_STRIPE_MIN_DEFAULT, &stripe_min);
    if (st == TC_OK && hints != NULL && tc_hints_get(hints, "tcp_stripe_min") != NULL) {
        what = "tcp_stripe_min";
        st = tc_hints_size(hints, what, stripe_min, &stripe_min);
    }
    if (st != TC_OK)
        return st;
    if (stripe_min < TC_TCP_STRIPE_MIN_LOW || stripe_min > TC_TP_TCP_MAX_MSG)
        return tc_error_set(TC_ERR_CONFIG,
                            "%s=%llu: out of range (accepted: sizes in [%u, %llu] bytes)", what,
                            (unsigned long long)stripe_min, TC_TCP_STRIPE_MIN_LOW,
                            (unsigned long long)TC_TP_TCP_MAX_MSG);
    ctx->nsocks = (int)nsocks;
    ctx->stripe_min = stripe_min;
    return TC_OK;
}

static tc_status_t tc_tcp_ctx_create(const tc_tp_ctx_params_t *params, tc_tp_ctx_t **ctx_p)
{
    if (params == NULL || ctx_p == NULL || params->size != sizeof(tc_tp_ctx_params_t) ||
        (params->secret == NULL && params->secret_len != 0))
        return tc_error_set(TC_ERR_INVALID_ARG, "tcp ctx_create: bad params or ctx_p");

    tc_tcp_ctx_t *ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL)
        return tc_error_set(TC_ERR_NO_MEMORY, "tcp: cannot allocate a context of %zu bytes",
                            sizeof(*ctx));
    ctx->super.ops = &tc_tp_tcp_ops;
    ctx->self_id = params->self_id;
    ctx->listen_fd = -1;
    ctx->epfd = -1;
    ctx->listen_poll.kind = TC_TCP_POLL_LISTEN;
    ctx->listen_poll.owner = ctx;
    tc_status_t status = tc_auth_key_init(&ctx->key, params->secret, params->secret_len);
    if (status == TC_OK)
        status = tc_tcp_options(ctx, params->hints);
    if (status != TC_OK)
        goto err;
    ctx->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (ctx->epfd < 0) {
        status = tc_error_set(TC_ERR_SYSTEM, "tcp: epoll_create1 failed: %s", strerror(errno));
        goto err;
    }
    status = tc_tcp_listen(ctx);
    if (status != TC_OK)
        goto err;
    *ctx_p = &ctx->super;
    return TC_OK;

err:
    tc_tcp_ctx_destroy(&ctx->super);
    return status;
}

static tc_status_t tc_tcp_addr_pack(tc_tp_ctx_t *super, void *buf, size_t cap, size_t *len_p)
{
    tc_tcp_ctx_t *ctx = (tc_tcp_ctx_t *)super;
    size_t need = TC_TCP_ADDR_LEN + 4 * (size_t)(ctx->nrails - 1);
    if (cap < need)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "tcp addr_pack: buffer of %zu bytes, the address needs %zu", cap, need);
    unsigned char *p = buf;
    p[0] = TC_TCP_ADDR_VERSION;
    p[1] = 4;
    memcpy(p + 2, &ctx->addr.sin_port, 2); /* already big-endian */
    for (int r = 0; r < ctx->nrails; r++)  /* already big-endian */
        memcpy(p + 4 + 4 * (size_t)r, &ctx->rails[r].ip.s_addr, 4);
    *len_p = need;
    return TC_OK;
}

static int tc_tcp_progress(tc_tp_ctx_t *super)
{
    tc_tcp_ctx_t *ctx = (tc_tcp_ctx_t *)super;
    /* a peer's put, get or signal served here is progress too: it completes
     * nothing local, but a caller that counted it as idle would back off to
     * naps while the peer waits for the answer */
    uint64_t before = ctx->ncompleted + ctx->nserved;
    struct epoll_event events[64];

    tc_tcp_held_flush(ctx); /* requests held for one write (a burst of puts) go out first */
    int n = epoll_wait(ctx->epfd, events, 64, 0);
    if (n < 0) {
        if (errno != EINTR)
            return tc_error_set(TC_ERR_SYSTEM, "tcp progress: epoll_wait failed: %s",
                                strerror(errno));
        n = 0;
    }
    for (int i = 0; i < n; i++) {
        tc_tcp_pollable_t *poll = events[i].data.ptr;
        switch (poll->kind) {
        case TC_TCP_POLL_LISTEN:
            tc_tcp_on_listen(ctx);
            break;
        case TC_TCP_POLL_CONN:
            tc_tcp_conn_on_events(ctx, poll->owner, events[i].events);
            break;
        case TC_TCP_POLL_EP:
            tc_tcp_ep_on_events(ctx, poll->owner, events[i].events);
            break;
        case TC_TCP_POLL_LANE:
            tc_tcp_lane_on_events(ctx, poll->owner, events[i].events);
            break;
        }
    }
    if (ctx->hello_conns != NULL)
        tc_tcp_conn_expire(ctx);
    if (ctx->listen_paused)
        tc_tcp_listen_resume(ctx);
    if (ctx->rail_sends > 0)
        tc_tcp_rail_watch(ctx);
    tc_tcp_held_flush(ctx); /* answers to what this pass read */

    uint64_t done = ctx->ncompleted + ctx->nserved - before;
    return done > INT_MAX ? INT_MAX : (int)done;
}

/* Level-triggered: the events seen here are reported again to the next progress. */
static tc_status_t tc_tcp_wait(tc_tp_ctx_t *super, int timeout_ms)
{
    tc_tcp_ctx_t *ctx = (tc_tcp_ctx_t *)super;
    struct epoll_event ev;
    tc_tcp_held_flush(ctx); /* nothing held while this side sleeps */
    if (timeout_ms < 0)
        timeout_ms = 0;       /* every wait is bounded */
    if (ctx->listen_paused) { /* wake up when the listener is due back */
        int left = tc_deadline_left_ms(ctx->listen_resume_ns);
        timeout_ms = left < timeout_ms ? left : timeout_ms;
    }
    if (ctx->rail_sends > 0) { /* wake up for the next look at the data sockets */
        int left = tc_deadline_left_ms(ctx->rail_watch_ns);
        timeout_ms = left < timeout_ms ? left : timeout_ms;
    }
    if (epoll_wait(ctx->epfd, &ev, 1, timeout_ms) < 0 && errno != EINTR)
        return tc_error_set(TC_ERR_SYSTEM, "tcp wait: epoll_wait failed: %s", strerror(errno));
    return TC_OK;
}

/* The epoll set: readable while one of its sockets has an event. */
static int tc_tcp_wait_fd(tc_tp_ctx_t *super)
{
    return ((tc_tcp_ctx_t *)super)->epfd;
}

/* The communicator hints a TCP context reads (docs/transport_tcp.md) */
static const char *const tc_tcp_hints[] = {"tcp_nsocks", "tcp_stripe_min", NULL};

const tc_tp_ops_t tc_tp_tcp_ops = {
    .version = TC_TP_API_VERSION,
    .name = "tcp",
    .query = tc_tcp_query,
    .ctx_create = tc_tcp_ctx_create,
    .ctx_destroy = tc_tcp_ctx_destroy,
    .addr_pack = tc_tcp_addr_pack,
    .ep_connect = tc_tcp_ep_connect,
    .ep_close = tc_tcp_ep_close,
    .send = tc_tcp_send,
    .recv = tc_tcp_recv,
    .cancel = tc_tcp_cancel,
    .progress = tc_tcp_progress,
    .wait = tc_tcp_wait,
    .mem_reg = tc_tcp_mem_reg,
    .mem_dereg = tc_tcp_mem_dereg,
    .rkey_pack = tc_tcp_rkey_pack,
    .rkey_unpack = tc_tcp_rkey_unpack,
    .rkey_release = tc_tcp_rkey_release,
    .put = tc_tcp_put,
    .get = tc_tcp_get,
    .signal = tc_tcp_signal,
    .recv_sink = tc_tcp_recv_sink,
    .wait_fd = tc_tcp_wait_fd,
    .probe = tc_tcp_probe,
    .trim = tc_tcp_trim,
    .defer = tc_tcp_defer,
    .discard = tc_tcp_discard,
    .hint_keys = tc_tcp_hints,
};
