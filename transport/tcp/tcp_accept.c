/* The accepting side: accept, read and check the hello, park or hand to an endpoint. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcomms/base/log.h"
#include "tcomms/base/time.h"
#include "tcp_internal.h"

void tc_tcp_conn_free(tc_tcp_conn_t *conn)
{
    if (conn->fd >= 0)
        close(conn->fd); /* also leaves the epoll set */
    free(conn);
}

static void tc_tcp_conn_unlink(tc_tcp_conn_t **head, tc_tcp_conn_t *conn)
{
    for (tc_tcp_conn_t **pp = head; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == conn) {
            *pp = conn->next;
            conn->next = NULL;
            return;
        }
    }
}

static tc_tcp_conn_t *tc_tcp_conn_find(tc_tcp_conn_t *head, uint64_t peer_id)
{
    for (tc_tcp_conn_t *conn = head; conn != NULL; conn = conn->next)
        if (conn->peer_id == peer_id)
            return conn;
    return NULL;
}

tc_tcp_conn_t *tc_tcp_conn_unpark(tc_tcp_ctx_t *ctx, uint64_t peer_id)
{
    tc_tcp_conn_t *conn = tc_tcp_conn_find(ctx->parked, peer_id);
    if (conn != NULL)
        tc_tcp_conn_unlink(&ctx->parked, conn);
    return conn;
}

tc_tcp_conn_t *tc_tcp_conn_unpark_data(tc_tcp_ctx_t *ctx, uint64_t peer_id)
{
    tc_tcp_conn_t *conn = tc_tcp_conn_find(ctx->parked_data, peer_id);
    if (conn != NULL)
        tc_tcp_conn_unlink(&ctx->parked_data, conn);
    return conn;
}

void tc_tcp_on_listen(tc_tcp_ctx_t *ctx)
{
    for (int i = 0; i < 64; i++) {
        struct sockaddr_in remote;
        socklen_t len = sizeof(remote);
        int fd =
            accept4(ctx->listen_fd, (struct sockaddr *)&remote, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                tc_log_warn(TC_SUBSYS_TRANSPORT, "tcp: accept failed: %s", strerror(errno));
            return;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

        tc_tcp_conn_t *conn = calloc(1, sizeof(*conn));
        if (conn == NULL) {
            tc_log_warn(TC_SUBSYS_TRANSPORT, "tcp: out of memory for an accepted connection");
            close(fd);
            continue;
        }
        conn->poll.kind = TC_TCP_POLL_CONN;
        conn->poll.owner = conn;
        conn->fd = fd;
        conn->deadline_ns = tc_deadline_after_ms(TC_TCP_HELLO_TIMEOUT_MS);
        tc_tcp_sockaddr_string(&remote, conn->remote, sizeof(conn->remote));
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &conn->poll};
        if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
            tc_log_warn(TC_SUBSYS_TRANSPORT, "tcp: epoll_ctl(ADD) of a connection from %s: %s",
                        conn->remote, strerror(errno));
            tc_tcp_conn_free(conn);
            continue;
        }
        conn->next = ctx->hello_conns;
        ctx->hello_conns = conn;
    }
}

/* Answer a refused hello (best effort: one non-blocking send) and drop the connection. */
static void tc_tcp_conn_refuse(tc_tcp_ctx_t *ctx, tc_tcp_conn_t *conn, unsigned result,
                               uint64_t sender)
{
    char what[32] = "the connection";
    if (conn->is_data)
        snprintf(what, sizeof(what), "data socket %d", conn->index);
    tc_log_warn(TC_SUBSYS_TRANSPORT, "tcp: id %llu refused %s from %s (claiming id %llu): %s",
                (unsigned long long)ctx->self_id, what, conn->remote, (unsigned long long)sender,
                tc_tcp_ack_string(result));
    if (result != TC_TCP_ACK_OK) {
        unsigned char ack[TC_TCP_ACK_LEN];
        tc_tcp_put_u32(ack, TC_TCP_MAGIC);
        tc_tcp_put_u16(ack + 4, TC_TCP_WIRE_VERSION);
        tc_tcp_put_u16(ack + 6, (uint16_t)result);
        tc_tcp_put_u64(ack + 8, ctx->self_id);
        tc_tcp_put_u64(ack + 16, sender);
        (void)!send(conn->fd, ack, sizeof(ack), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    tc_tcp_conn_unlink(&ctx->hello_conns, conn);
    tc_tcp_conn_free(conn);
}

/* A data socket belongs to the primary from the same id with the same token, at an index
 * below that primary's count and not taken yet. Sets *ep_p when that primary is attached to
 * an endpoint (else it is parked, and so will this socket be). */
static unsigned tc_tcp_conn_check_data(tc_tcp_ctx_t *ctx, const tc_tcp_conn_t *conn,
                                       uint64_t sender, tc_tcp_ep_t **ep_p)
{
    tc_tcp_ep_t *ep = tc_tcp_ep_find(ctx, sender);
    if (ep != NULL) {
        if (ep->state != TC_TCP_EP_UP || ep->lanes == NULL) /* lanes: also a 1-socket primary */
            return ep->state != TC_TCP_EP_UP ? TC_TCP_ACK_NO_PRIMARY : TC_TCP_ACK_WRONG_SESSION;
        if (conn->token != ep->token)
            return TC_TCP_ACK_WRONG_SESSION;
        if (conn->index >= ep->nsocks)
            return TC_TCP_ACK_LANE_RANGE;
        if (ep->lanes[conn->index - 1].state != TC_TCP_LANE_OFF)
            return TC_TCP_ACK_DUPLICATE;
        *ep_p = ep;
        return TC_TCP_ACK_OK;
    }
    tc_tcp_conn_t *primary = tc_tcp_conn_find(ctx->parked, sender);
    if (primary == NULL)
        return TC_TCP_ACK_NO_PRIMARY;
    if (primary->token == 0 || conn->token != primary->token)
        return TC_TCP_ACK_WRONG_SESSION;
    if (conn->index >= primary->nsocks)
        return TC_TCP_ACK_LANE_RANGE;
    for (tc_tcp_conn_t *p = ctx->parked_data; p != NULL; p = p->next)
        if (p->peer_id == sender && p->index == conn->index)
            return TC_TCP_ACK_DUPLICATE;
    return TC_TCP_ACK_OK;
}

static void tc_tcp_conn_on_hello(tc_tcp_ctx_t *ctx, tc_tcp_conn_t *conn)
{
    const unsigned char *h = conn->hello;
    uint32_t magic = tc_tcp_get_u32(h);
    uint16_t version = tc_tcp_get_u16(h + 4);
    uint64_t sender = tc_tcp_get_u64(h + 8);
    uint64_t receiver = tc_tcp_get_u64(h + 16);

    if (magic != TC_TCP_MAGIC) {
        /* Not one of ours: no answer at all. */
        tc_log_warn(TC_SUBSYS_TRANSPORT,
                    "tcp: id %llu dropped the connection from %s: not a tcomms hello "
                    "(magic 0x%08x)",
                    (unsigned long long)ctx->self_id, conn->remote, magic);
        tc_tcp_conn_unlink(&ctx->hello_conns, conn);
        tc_tcp_conn_free(conn);
        return;
    }
    uint16_t flags = tc_tcp_get_u16(h + 6);
    conn->is_data = (flags & TC_TCP_HELLO_F_DATA) != 0;
    conn->index = conn->is_data ? (int)(flags & TC_TCP_HELLO_F_INDEX) : 0;
    conn->nsocks = conn->is_data ? 0 : (int)(flags & TC_TCP_HELLO_F_INDEX) + 1;
    conn->token = flags != 0 ? tc_tcp_get_u64(h + TC_TCP_HELLO_LEN) : 0;
    unsigned result = TC_TCP_ACK_OK;
    tc_tcp_ep_t *ep = NULL;
    if (version != TC_TCP_WIRE_VERSION)
        result = TC_TCP_ACK_BAD_VERSION;
    else if (receiver != ctx->self_id)
        result = TC_TCP_ACK_WRONG_RECEIVER;
    else if (ctx->has_secret && !tc_tcp_digest_equal(h + 24, ctx->digest))
        result = TC_TCP_ACK_WRONG_SECRET;
    else if (sender >= ctx->self_id)
        result = TC_TCP_ACK_WRONG_DIRECTION;
    else if ((flags & ~(TC_TCP_HELLO_F_DATA | TC_TCP_HELLO_F_INDEX)) != 0 ||
             (conn->is_data && (conn->index < 1 || conn->index >= TC_TCP_NSOCKS_MAX)) ||
             (!conn->is_data && conn->nsocks > TC_TCP_NSOCKS_MAX))
        result = TC_TCP_ACK_BAD_FLAGS;
    else if (conn->is_data)
        result = tc_tcp_conn_check_data(ctx, conn, sender, &ep);
    else {
        ep = tc_tcp_ep_find(ctx, sender);
        if (tc_tcp_conn_find(ctx->parked, sender) != NULL ||
            (ep != NULL && ep->state != TC_TCP_EP_WAITING))
            result = TC_TCP_ACK_DUPLICATE;
    }
    if (result != TC_TCP_ACK_OK) {
        tc_tcp_conn_refuse(ctx, conn, result, sender);
        return;
    }

    conn->peer_id = sender;
    tc_tcp_put_u32(conn->ack, TC_TCP_MAGIC);
    tc_tcp_put_u16(conn->ack + 4, TC_TCP_WIRE_VERSION);
    tc_tcp_put_u16(conn->ack + 6, TC_TCP_ACK_OK);
    tc_tcp_put_u64(conn->ack + 8, ctx->self_id);
    tc_tcp_put_u64(conn->ack + 16, sender);
    ssize_t n = send(conn->fd, conn->ack, sizeof(conn->ack), MSG_NOSIGNAL | MSG_DONTWAIT);
    conn->ack_off = n > 0 ? (size_t)n : 0; /* the rest goes out with the endpoint's sends */

    tc_tcp_conn_unlink(&ctx->hello_conns, conn);
    tc_log_debug(TC_SUBSYS_TRANSPORT, "tcp: id %llu accepted %s %d of id %llu from %s%s",
                 (unsigned long long)ctx->self_id, conn->is_data ? "data socket" : "socket",
                 conn->index, (unsigned long long)sender, conn->remote,
                 ep ? "" : " (parked until its endpoint is created)");
    if (ep != NULL) {
        if (conn->is_data)
            tc_tcp_lane_attach(ctx, ep, conn);
        else
            tc_tcp_ep_attach(ctx, ep, conn);
        return;
    }
    /* Parked sockets stay out of epoll so that their data or a reset does not spin wait(). */
    epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, conn->fd, NULL);
    tc_tcp_conn_t **list = conn->is_data ? &ctx->parked_data : &ctx->parked;
    conn->next = *list;
    *list = conn;
}

void tc_tcp_conn_on_events(tc_tcp_ctx_t *ctx, tc_tcp_conn_t *conn, uint32_t events)
{
    (void)events;
    /* Read exactly the hello: what follows belongs to the endpoint. A hello of ours with
     * flags carries the session token after the digest. */
    for (;;) {
        size_t need = TC_TCP_HELLO_LEN;
        if (conn->hello_got >= TC_TCP_HELLO_LEN && tc_tcp_get_u32(conn->hello) == TC_TCP_MAGIC &&
            tc_tcp_get_u16(conn->hello + 6) != 0)
            need = TC_TCP_HELLO_EXT_LEN;
        if (conn->hello_got >= need)
            break;
        ssize_t n = recv(conn->fd, conn->hello + conn->hello_got, need - conn->hello_got, 0);
        if (n > 0) {
            conn->hello_got += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        tc_log_warn(TC_SUBSYS_TRANSPORT,
                    "tcp: id %llu: connection from %s ended before its hello (%zu of %zu "
                    "bytes): %s",
                    (unsigned long long)ctx->self_id, conn->remote, conn->hello_got, need,
                    n == 0 ? "closed" : strerror(errno));
        tc_tcp_conn_unlink(&ctx->hello_conns, conn);
        tc_tcp_conn_free(conn);
        return;
    }
    tc_tcp_conn_on_hello(ctx, conn);
}

void tc_tcp_conn_expire(tc_tcp_ctx_t *ctx)
{
    tc_tcp_conn_t *conn = ctx->hello_conns;
    while (conn != NULL) {
        tc_tcp_conn_t *next = conn->next;
        if (tc_deadline_passed(conn->deadline_ns)) {
            tc_log_warn(TC_SUBSYS_TRANSPORT,
                        "tcp: id %llu dropped the connection from %s: no hello within %d ms",
                        (unsigned long long)ctx->self_id, conn->remote, TC_TCP_HELLO_TIMEOUT_MS);
            tc_tcp_conn_unlink(&ctx->hello_conns, conn);
            tc_tcp_conn_free(conn);
        }
        conn = next;
    }
}
