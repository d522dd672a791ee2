/* The verbs context: device, port, protection domain, the handshake listener, progress and the
 * ops table. */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcomms/base/config.h"
#include "tcomms/base/log.h"
#include "ib_internal.h"

void tc_ib_put_u16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}
void tc_ib_put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}
void tc_ib_put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}
uint16_t tc_ib_get_u16(const unsigned char *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}
uint32_t tc_ib_get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}
uint64_t tc_ib_get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* "no devices" and ENOSYS (no kernel support) both mean: nothing to open here. */
static tc_status_t tc_ib_no_device(int err, int num)
{
    if (err != 0)
        return tc_error_set(TC_ERR_UNSUPPORTED,
                            "no InfiniBand/RoCE device: ibv_get_device_list failed: %s (no "
                            "RDMA support in this kernel or container?)",
                            strerror(err));
    return tc_error_set(TC_ERR_UNSUPPORTED,
                        "no InfiniBand/RoCE device: ibv_get_device_list found %d devices", num);
}

tc_status_t tc_tp_ib_query_verbs(const tc_ib_verbs_t *v, tc_tp_caps_t *caps_p)
{
    if (v == NULL || caps_p == NULL || caps_p->size != sizeof(tc_tp_caps_t))
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "ib query: verbs or caps is NULL or caps->size is wrong");
    caps_p->same_node_only = 0;
    caps_p->one_sided = 1;
    caps_p->max_addr_len = TC_IB_ADDR_LEN;
    int num = 0;
    errno = 0;
    struct ibv_device **list = v->get_device_list(&num);
    int err = list == NULL ? (errno ? errno : ENODEV) : 0;
    caps_p->available = list != NULL && num > 0;
    if (!caps_p->available)
        tc_ib_no_device(err, num); /* the reason, for tc_last_error() */
    if (list != NULL)
        v->free_device_list(list);
    return TC_OK;
}

static tc_status_t tc_ib_query(tc_tp_caps_t *caps_p)
{
    const tc_ib_verbs_t *v = tc_ib_verbs_real();

    if (v != NULL || caps_p == NULL || caps_p->size != sizeof(tc_tp_caps_t))
        return tc_tp_ib_query_verbs(v, caps_p);
    caps_p->same_node_only = 0;
    caps_p->one_sided = 1;
    caps_p->max_addr_len = TC_IB_ADDR_LEN;
    caps_p->available = 0; /* tc_last_error() says why libibverbs is missing */
    return TC_OK;
}

/* The IPv4 address peers reach the handshake listener at: TC_SOCKET_IFNAME (its first entry
 * when it lists several interfaces for the tcp transport's rails), else the first non-loopback
 * interface that is up, else 127.0.0.1. */
static tc_status_t tc_ib_handshake_ip(struct in_addr *ip)
{
    const char *want = tc_config_string("TC_SOCKET_IFNAME", NULL);
    struct ifaddrs *list = NULL;
    if (getifaddrs(&list) != 0)
        return tc_error_set(TC_ERR_SYSTEM, "ib: getifaddrs failed: %s", strerror(errno));
    size_t want_len = want != NULL ? strcspn(want, ",") : 0;
    ip->s_addr = htonl(INADDR_LOOPBACK);
    int found = 0;
    for (struct ifaddrs *i = list; i != NULL && !found; i = i->ifa_next) {
        if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP))
            continue;
        if (want ? strlen(i->ifa_name) == want_len && strncmp(i->ifa_name, want, want_len) == 0
                 : !(i->ifa_flags & IFF_LOOPBACK)) {
            *ip = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
            found = 1;
        }
    }
    freeifaddrs(list);
    if (want != NULL && !found)
        return tc_error_set(TC_ERR_CONFIG,
                            "TC_SOCKET_IFNAME='%s': no IPv4 interface named '%.*s' is up (ib "
                            "handshake listener: the first entry)",
                            want, (int)want_len, want);
    return TC_OK;
}

static tc_status_t tc_ib_listen(tc_ib_ctx_t *ctx)
{
    tc_status_t st = tc_ib_handshake_ip(&ctx->listen_sa.sin_addr);
    if (st != TC_OK)
        return st;
    ctx->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (ctx->listen_fd < 0)
        return tc_error_set(TC_ERR_SYSTEM, "ib: socket() for the handshake listener: %s",
                            strerror(errno));
    ctx->listen_sa.sin_family = AF_INET;
    ctx->listen_sa.sin_port = 0;
    socklen_t len = sizeof(ctx->listen_sa);
    if (bind(ctx->listen_fd, (struct sockaddr *)&ctx->listen_sa, sizeof(ctx->listen_sa)) != 0 ||
        getsockname(ctx->listen_fd, (struct sockaddr *)&ctx->listen_sa, &len) != 0 ||
        listen(ctx->listen_fd, SOMAXCONN) != 0)
        return tc_error_set(TC_ERR_SYSTEM, "ib: handshake listener on %s: %s",
                            inet_ntoa(ctx->listen_sa.sin_addr), strerror(errno));
    return TC_OK;
}

static void tc_ib_ctx_destroy(tc_tp_ctx_t *super)
{
    tc_ib_ctx_t *ctx = (tc_ib_ctx_t *)super;
    if (ctx == NULL)
        return;
    while (ctx->eps != NULL)
        tc_ib_ep_close(&ctx->eps->super);
    while (ctx->accepted != NULL) {
        struct parked *p = ctx->accepted;
        ctx->accepted = p->next;
        close(p->fd);
        free(p);
    }
    if (ctx->listen_fd >= 0)
        close(ctx->listen_fd);
    if (ctx->pd != NULL) {
        tc_ib_mr_cache_free(ctx);
        ctx->v->dealloc_pd(ctx->pd);
    }
    if (ctx->dev != NULL)
        ctx->v->close_device(ctx->dev);
    tc_auth_key_wipe(&ctx->key);
    free(ctx);
}

tc_status_t tc_tp_ib_ctx_create_verbs(const tc_ib_verbs_t *v, const tc_tp_ctx_params_t *params,
                                      tc_tp_ctx_t **ctx_p)
{
    if (v == NULL || params == NULL || ctx_p == NULL || params->size != sizeof(*params) ||
        (params->secret == NULL && params->secret_len != 0))
        return tc_error_set(TC_ERR_INVALID_ARG, "ib ctx_create: bad verbs, params or ctx_p");
    int64_t port = 1, gid_index = 0;
    const char *want = tc_config_string("TC_IB_DEVICE", NULL), *hinted;
    tc_status_t st = tc_ib_hints_read(params->hints, &hinted, &port, &gid_index);
    if (st == TC_OK)
        st = tc_config_int("TC_IB_PORT", port, 1, 255, &port);
    if (st != TC_OK)
        return st;
    if (want == NULL)
        want = hinted;

    int num = 0;
    errno = 0;
    struct ibv_device **list = v->get_device_list(&num);
    if (list == NULL || num <= 0) {
        int err = list == NULL ? (errno ? errno : ENODEV) : 0;
        if (list != NULL)
            v->free_device_list(list);
        return tc_ib_no_device(err, num);
    }
    struct ibv_device *dev = NULL;
    for (int i = 0; i < num && dev == NULL; i++)
        if (want == NULL || strcmp(v->get_device_name(list[i]), want) == 0)
            dev = list[i];
    if (dev == NULL) {
        v->free_device_list(list);
        return tc_error_set(TC_ERR_NOT_FOUND, "ib: no device named '%s' (TC_IB_DEVICE / "
                            "ib.device) among %d", want, num);
    }

    tc_ib_ctx_t *ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        v->free_device_list(list);
        return tc_error_set(TC_ERR_NO_MEMORY, "ib: cannot allocate a context");
    }
    ctx->super.ops = &tc_tp_ib_ops;
    ctx->v = v;
    ctx->self_id = params->self_id;
    ctx->listen_fd = -1;
    ctx->port = (uint8_t)port;
    ctx->gid_index = (int)gid_index;
    snprintf(ctx->dev_name, sizeof(ctx->dev_name), "%s", v->get_device_name(dev));
    ctx->dev = v->open_device(dev);
    v->free_device_list(list);
    int64_t pending_ms = TC_IB_PENDING_TIMEOUT_MS;
    st = tc_auth_key_init(&ctx->key, params->secret, params->secret_len);
    if (st == TC_OK)
        st = tc_config_int("TC_SOCKET_HANDSHAKE_TIMEOUT_MS", TC_IB_PENDING_TIMEOUT_MS, 10, 600000,
                           &pending_ms);
    if (st != TC_OK)
        goto err;
    ctx->pending_ms = (int)pending_ms;
    if (ctx->dev == NULL) {
        st = tc_error_set(TC_ERR_SYSTEM, "ib: ibv_open_device(%s) failed: %s", ctx->dev_name,
                          strerror(errno));
        goto err;
    }
    if (v->query_port(ctx->dev, ctx->port, &ctx->port_attr) != 0) {
        st = tc_error_set(TC_ERR_NOT_FOUND, "ib: %s has no port %u: %s", ctx->dev_name, ctx->port,
                          strerror(errno));
        goto err;
    }
    if (ctx->port_attr.state != IBV_PORT_ACTIVE) {
        st = tc_error_set(TC_ERR_UNSUPPORTED, "ib: port %u of %s is not active (state %d: cable "
                          "or subnet manager?)", ctx->port, ctx->dev_name,
                          (int)ctx->port_attr.state);
        goto err;
    }
    int64_t ka_ms = TC_IB_KEEPALIVE_MS_DEFAULT;
    st = tc_config_int("TC_IB_KEEPALIVE_MS", TC_IB_KEEPALIVE_MS_DEFAULT, 0, 3600000, &ka_ms);
    if (st == TC_OK)
        st = tc_ib_mr_cache_init(ctx);
    if (st != TC_OK)
        goto err;
    ctx->ka_ns = (uint64_t)ka_ms * 1000000u;
    if (v->query_gid(ctx->dev, ctx->port, ctx->gid_index, &ctx->gid) != 0)
        memset(&ctx->gid, 0, sizeof(ctx->gid)); /* InfiniBand with LIDs only */
    ctx->pd = v->alloc_pd(ctx->dev);
    if (ctx->pd == NULL) {
        st = tc_error_set(TC_ERR_SYSTEM, "ib: ibv_alloc_pd on %s failed: %s", ctx->dev_name,
                          strerror(errno));
        goto err;
    }
    st = tc_ib_listen(ctx);
    if (st != TC_OK)
        goto err;
    tc_log_info(TC_SUBSYS_TRANSPORT, "ib: id %llu on %s port %u lid %u, handshake at %s:%u",
                (unsigned long long)ctx->self_id, ctx->dev_name, ctx->port, ctx->port_attr.lid,
                inet_ntoa(ctx->listen_sa.sin_addr), ntohs(ctx->listen_sa.sin_port));
    *ctx_p = &ctx->super;
    return TC_OK;
err:
    tc_ib_ctx_destroy(&ctx->super);
    return st;
}

static tc_status_t tc_ib_ctx_create(const tc_tp_ctx_params_t *params, tc_tp_ctx_t **ctx_p)
{
    const tc_ib_verbs_t *v = tc_ib_verbs_real();

    if (v == NULL)
        return TC_ERR_UNSUPPORTED; /* tc_ib_verbs_real() set the detail */
    return tc_tp_ib_ctx_create_verbs(v, params, ctx_p);
}

static tc_status_t tc_ib_addr_pack(tc_tp_ctx_t *super, void *buf, size_t cap, size_t *len_p)
{
    tc_ib_ctx_t *ctx = (tc_ib_ctx_t *)super;
    if (cap < TC_IB_ADDR_LEN)
        return tc_error_set(TC_ERR_INVALID_ARG, "ib addr_pack: buffer of %zu bytes, the address "
                            "needs %d", cap, TC_IB_ADDR_LEN);
    unsigned char *p = buf;
    memset(p, 0, TC_IB_ADDR_LEN);
    p[0] = 1;
    p[1] = ctx->port;
    tc_ib_put_u16(p + 2, ctx->port_attr.lid);
    memcpy(p + 4, ctx->gid.raw, 16);
    memcpy(p + 20, &ctx->listen_sa.sin_addr.s_addr, 4);
    memcpy(p + 24, &ctx->listen_sa.sin_port, 2);
    *len_p = TC_IB_ADDR_LEN;
    return TC_OK;
}

static int tc_ib_progress(tc_tp_ctx_t *super)
{
    tc_ib_ctx_t *ctx = (tc_ib_ctx_t *)super;
    uint64_t before = ctx->ncompleted;
    tc_ib_handshake_progress(ctx);
    for (tc_ib_ep_t *ep = ctx->eps; ep != NULL; ep = ep->next)
        if (ep->state == TC_IB_EP_UP) {
            tc_ib_ep_poll(ctx, ep);
            tc_ib_ep_keepalive(ctx, ep);
        }
    uint64_t done = ctx->ncompleted - before;
    return done > INT_MAX ? INT_MAX : (int)done;
}

/* Completions are polled, not waited for (no completion channel): wait sleeps briefly, or
 * until a handshake socket has activity. */
static tc_status_t tc_ib_wait(tc_tp_ctx_t *super, int timeout_ms)
{
    tc_ib_ctx_t *ctx = (tc_ib_ctx_t *)super;
    struct pollfd fds[1] = {{.fd = ctx->listen_fd, .events = POLLIN}};
    int ms = timeout_ms < 0 ? 0 : timeout_ms > 1 ? 1 : timeout_ms;
    if (poll(fds, ctx->nwaiting > 0 ? 1 : 0, ms) < 0 && errno != EINTR)
        return tc_error_set(TC_ERR_SYSTEM, "ib wait: poll failed: %s", strerror(errno));
    return TC_OK;
}

/* The communicator hints an ib context reads (docs/transport_ib.md) */
static const char *const tc_ib_hints[] = {"ib.device", "ib.port", "ib.gid_index", NULL};

const tc_tp_ops_t tc_tp_ib_ops = {
    .version = TC_TP_API_VERSION,
    .name = "ib",
    .query = tc_ib_query,
    .ctx_create = tc_ib_ctx_create,
    .ctx_destroy = tc_ib_ctx_destroy,
    .addr_pack = tc_ib_addr_pack,
    .ep_connect = tc_ib_ep_connect,
    .ep_close = tc_ib_ep_close,
    .send = tc_ib_send,
    .recv = tc_ib_recv,
    .cancel = tc_ib_cancel,
    .progress = tc_ib_progress,
    .wait = tc_ib_wait,
    .mem_reg = tc_ib_mem_reg,
    .mem_dereg = tc_ib_mem_dereg,
    .rkey_pack = tc_ib_rkey_pack,
    .rkey_unpack = tc_ib_rkey_unpack,
    .rkey_release = tc_ib_rkey_release,
    .put = tc_ib_put,
    .get = tc_ib_get,
    .signal = tc_ib_signal,
    .probe = tc_ib_probe,
    .discard = tc_ib_discard,
    .hint_keys = tc_ib_hints,
};
