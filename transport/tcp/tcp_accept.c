/* The accepting side: accept, read and check the hello, park or hand to an endpoint. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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

tc_tcp_conn_t *tc_tcp_conn_unpark(tc_tcp_ctx_t *ctx, uint64_t peer_id)
{
    for (tc_tcp_conn_t *conn = ctx->parked; conn != NULL; conn = conn->next) {
        if (conn->peer_id == peer_id) {
            tc_tcp_conn_unlink(&ctx->parked, conn);
            return conn;
        }
    }
    return NULL;
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
    tc_log_warn(TC_SUBSYS_TRANSPORT,
                "tcp: id %llu refused the connection from %s (claiming id %llu): %s",
                (unsigned long long)ctx->self_id, conn->remote, (unsigned long long)sender,
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
    else {
        ep = tc_tcp_ep_find(ctx, sender);
        int parked = 0;
        for (tc_tcp_conn_t *p = ctx->parked; p != NULL; p = p->next)
            parked |= p->peer_id == sender;
        if (parked || (ep != NULL && ep->state != TC_TCP_EP_WAITING))
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
    tc_log_debug(TC_SUBSYS_TRANSPORT, "tcp: id %llu accepted id %llu from %s%s",
                 (unsigned long long)ctx->self_id, (unsigned long long)sender, conn->remote,
                 ep ? "" : " (parked until its endpoint is created)");
    if (ep != NULL) {
        tc_tcp_ep_attach(ctx, ep, conn);
        return;
    }
    /* Parked sockets stay out of epoll so that their data or a reset does not spin wait(). */
    epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, conn->fd, NULL);
    conn->next = ctx->parked;
    ctx->parked = conn;
}

void tc_tcp_conn_on_events(tc_tcp_ctx_t *ctx, tc_tcp_conn_t *conn, uint32_t events)
{
    (void)events;
    /* Read exactly the hello: what follows belongs to the endpoint. */
    while (conn->hello_got < TC_TCP_HELLO_LEN) {
        ssize_t n =
            recv(conn->fd, conn->hello + conn->hello_got, TC_TCP_HELLO_LEN - conn->hello_got, 0);
        if (n > 0) {
            conn->hello_got += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        tc_log_warn(TC_SUBSYS_TRANSPORT,
                    "tcp: id %llu: connection from %s ended before its hello (%zu of %d "
                    "bytes): %s",
                    (unsigned long long)ctx->self_id, conn->remote, conn->hello_got,
                    TC_TCP_HELLO_LEN, n == 0 ? "closed" : strerror(errno));
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
