/* The accepting side: accept (bounded: at most TC_TCP_PENDING_MAX connections in their
 * exchange, each within a deadline; accept() out of descriptors backs off), run the
 * challenge-response (hello in, challenge out, proof in), then park the connection or hand it
 * to its endpoint. Lines about refused connections are rate-limited per reason. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcomms/base/log.h"
#include "tcomms/base/time.h"
#include "tcp_internal.h"

/* One line per reason per TC_TCP_LOG_INTERVAL_MS, with the number left out since the last. */
#define tc_tcp_rlog(ctx, reason, ...) \
    tc_tp_loglimit_warn(&(ctx)->rlog[reason], TC_TCP_LOG_INTERVAL_MS, __VA_ARGS__)

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

/* Drop a connection still in its exchange. */
static void tc_tcp_conn_drop(tc_tcp_ctx_t *ctx, tc_tcp_conn_t *conn)
{
    tc_tcp_conn_unlink(&ctx->hello_conns, conn);
    ctx->nhello--;
    tc_tcp_conn_free(conn);
}

/* accept() failed for lack of descriptors or memory: the listening socket leaves the epoll set
 * for a growing interval (the pending connections wait in the kernel's queue); progress puts
 * it back (tc_tcp_listen_resume). */
static void tc_tcp_listen_pause(tc_tcp_ctx_t *ctx, int err)
{
    int ms = ctx->accept_backoff_ms == 0 ? TC_TCP_ACCEPT_BACKOFF_MIN_MS
                                         : ctx->accept_backoff_ms * 2;
    if (ms > TC_TCP_ACCEPT_BACKOFF_MAX_MS)
        ms = TC_TCP_ACCEPT_BACKOFF_MAX_MS;
    ctx->accept_backoff_ms = ms;
    ctx->listen_resume_ns = tc_deadline_after_ms((uint64_t)ms);
    if (!ctx->listen_paused)
        epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, ctx->listen_fd, NULL);
    ctx->listen_paused = 1;
    tc_tcp_rlog(ctx, TC_TCP_RL_ACCEPT,
                "tcp: id %llu cannot accept connections: accept: %s; not accepting for %d ms",
                (unsigned long long)ctx->self_id, strerror(err), ms);
}

void tc_tcp_listen_resume(tc_tcp_ctx_t *ctx)
{
    if (!ctx->listen_paused || !tc_deadline_passed(ctx->listen_resume_ns))
        return;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &ctx->listen_poll};
    if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, ctx->listen_fd, &ev) != 0) {
        tc_tcp_listen_pause(ctx, errno);
        return;
    }
    ctx->listen_paused = 0;
    tc_tcp_on_listen(ctx);
}

void tc_tcp_on_listen(tc_tcp_ctx_t *ctx)
{
    for (int i = 0; i < 64 && !ctx->listen_paused; i++) {
        struct sockaddr_in remote;
        socklen_t len = sizeof(remote);
        int fd =
            accept4(ctx->listen_fd, (struct sockaddr *)&remote, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                ctx->accept_backoff_ms = 0; /* the queue is empty: the shortage is over */
                return;
            }
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                tc_tcp_listen_pause(ctx, errno);
                return;
            }
            tc_tcp_rlog(ctx, TC_TCP_RL_ACCEPT, "tcp: id %llu: accept failed: %s",
                        (unsigned long long)ctx->self_id, strerror(errno));
            return;
        }
        char where[32];
        tc_tcp_sockaddr_string(&remote, where, sizeof(where));
        if (ctx->nhello >= TC_TCP_PENDING_MAX) {
            tc_tcp_rlog(ctx, TC_TCP_RL_CAP,
                        "tcp: id %llu closed the connection from %s at once: %d connections are "
                        "in their handshake already",
                        (unsigned long long)ctx->self_id, where, ctx->nhello);
            close(fd);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

        tc_tcp_conn_t *conn = calloc(1, sizeof(*conn));
        if (conn == NULL) {
            tc_tcp_rlog(ctx, TC_TCP_RL_OTHER, "tcp: out of memory for an accepted connection");
            close(fd);
            continue;
        }
        conn->poll.kind = TC_TCP_POLL_CONN;
        conn->poll.owner = conn;
        conn->fd = fd;
        conn->deadline_ns = tc_deadline_after_ms((uint64_t)ctx->hs_timeout_ms);
        memcpy(conn->remote, where, sizeof(conn->remote));
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &conn->poll};
        if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
            tc_tcp_rlog(ctx, TC_TCP_RL_OTHER, "tcp: epoll_ctl(ADD) of a connection from %s: %s",
                        conn->remote, strerror(errno));
            tc_tcp_conn_free(conn);
            continue;
        }
        conn->ev_mask = EPOLLIN;
        conn->next = ctx->hello_conns;
        ctx->hello_conns = conn;
        ctx->nhello++;
    }
}

/* Answer a refused hello or proof (best effort: one non-blocking send) and drop the
 * connection. The line names what was refused and why; never a secret or a MAC. */
static void tc_tcp_conn_refuse(tc_tcp_ctx_t *ctx, tc_tcp_conn_t *conn, unsigned result,
                               uint64_t sender)
{
    char what[32] = "the connection";
    if (conn->is_data)
        snprintf(what, sizeof(what), "data socket %d", conn->index);
    tc_tcp_rlog(ctx, (int)result, "tcp: id %llu refused %s from %s (claiming id %llu): %s",
                (unsigned long long)ctx->self_id, what, conn->remote, (unsigned long long)sender,
                tc_tcp_ack_string(result));
    unsigned char ack[TC_TCP_ACK_LEN];
    tc_tcp_ack_make(ack, result, ctx->self_id, sender);
    (void)!send(conn->fd, ack, sizeof(ack), MSG_NOSIGNAL | MSG_DONTWAIT);
    tc_tcp_conn_drop(ctx, conn);
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

/* The hello is whole and passed the checks that need no secret: answer with the challenge. */
static void tc_tcp_conn_challenge(tc_tcp_ctx_t *ctx, tc_tcp_conn_t *conn)
{
    tc_auth_nonce(conn->na);
    tc_tcp_challenge_make(conn->out, &ctx->key, &conn->hello, conn->na);
    conn->challenged = 1;
    conn->in_got = 0;
    conn->out_off = 0;
}

/* Write what the socket takes of the challenge; 0 when the connection was dropped. */
static int tc_tcp_conn_flush(tc_tcp_ctx_t *ctx, tc_tcp_conn_t *conn)
{
    while (conn->challenged && conn->out_off < sizeof(conn->out)) {
        ssize_t n = send(conn->fd, conn->out + conn->out_off, sizeof(conn->out) - conn->out_off,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            conn->out_off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        tc_tcp_rlog(ctx, TC_TCP_RL_CLOSED,
                    "tcp: id %llu: connection from %s ended before its challenge was sent: %s",
                    (unsigned long long)ctx->self_id, conn->remote, strerror(errno));
        tc_tcp_conn_drop(ctx, conn);
        return 0;
    }
    uint32_t want = EPOLLIN | (conn->challenged && conn->out_off < sizeof(conn->out) ? EPOLLOUT : 0);
    if (want != conn->ev_mask) {
        struct epoll_event ev = {.events = want, .data.ptr = &conn->poll};
        if (epoll_ctl(ctx->epfd, EPOLL_CTL_MOD, conn->fd, &ev) != 0) {
            tc_tcp_rlog(ctx, TC_TCP_RL_OTHER, "tcp: epoll_ctl(MOD) of a connection from %s: %s",
                        conn->remote, strerror(errno));
            tc_tcp_conn_drop(ctx, conn);
            return 0;
        }
        conn->ev_mask = want;
    }
    return 1;
}

/* The proof is in: check it, then whether the connection fits; ack and attach or park. */
static void tc_tcp_conn_on_proof(tc_tcp_ctx_t *ctx, tc_tcp_conn_t *conn)
{
    uint64_t sender = conn->hello.sender;
    unsigned result = tc_tcp_proof_check(&ctx->key, &conn->hello, conn->na, conn->in, conn->in_got);
    tc_tcp_ep_t *ep = NULL;
    if (result != TC_TCP_ACK_OK)
        ;
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
    tc_tcp_ack_make(conn->ack, TC_TCP_ACK_OK, ctx->self_id, sender);
    ssize_t n = send(conn->fd, conn->ack, sizeof(conn->ack), MSG_NOSIGNAL | MSG_DONTWAIT);
    conn->ack_off = n > 0 ? (size_t)n : 0; /* the rest goes out with the endpoint's sends */

    tc_tcp_conn_unlink(&ctx->hello_conns, conn);
    ctx->nhello--;
    tc_log_debug(TC_SUBSYS_TRANSPORT, "tcp: id %llu accepted %s %d of id %llu from %s%s%s",
                 (unsigned long long)ctx->self_id, conn->is_data ? "data socket" : "socket",
                 conn->index, (unsigned long long)sender, conn->remote,
                 ctx->key.keyed ? "" : " (no secret: not authenticated)",
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

/* Check what has arrived of the hello: -1 when the connection is refused or dropped, 0 when
 * more bytes are needed, 1 when the hello is whole and the challenge made. */
static int tc_tcp_conn_on_hello(tc_tcp_ctx_t *ctx, tc_tcp_conn_t *conn)
{
    int r = tc_tcp_hello_parse(conn->in, conn->in_got, ctx->self_id, ctx->key.keyed, &conn->hello);
    if (r == TC_TCP_HS_MORE)
        return 0;
    if (r == TC_TCP_HS_FOREIGN) {
        /* Not one of ours: no answer at all. */
        tc_tcp_rlog(ctx, TC_TCP_RL_FOREIGN,
                    "tcp: id %llu dropped the connection from %s: not a tcomms hello "
                    "(magic 0x%08x)",
                    (unsigned long long)ctx->self_id, conn->remote, tc_tcp_get_u32(conn->in));
        tc_tcp_conn_drop(ctx, conn);
        return -1;
    }
    if (r != TC_TCP_ACK_OK) {
        uint64_t sender = conn->in_got >= 16 ? tc_tcp_get_u64(conn->in + 8) : 0;
        conn->is_data = conn->in_got >= 8 && (tc_tcp_get_u16(conn->in + 6) & TC_TCP_HELLO_F_DATA);
        conn->index = conn->is_data ? (int)(tc_tcp_get_u16(conn->in + 6) & TC_TCP_HELLO_F_INDEX) : 0;
        tc_tcp_conn_refuse(ctx, conn, (unsigned)r, sender);
        return -1;
    }
    conn->is_data = conn->hello.is_data;
    conn->index = conn->hello.index;
    conn->nsocks = conn->hello.nsocks;
    conn->token = conn->hello.token;
    tc_tcp_conn_challenge(ctx, conn);
    return 1;
}

void tc_tcp_conn_on_events(tc_tcp_ctx_t *ctx, tc_tcp_conn_t *conn, uint32_t events)
{
    (void)events;
    if (!tc_tcp_conn_flush(ctx, conn))
        return;
    /* Read exactly the hello, then exactly the proof: what follows belongs to the endpoint. */
    for (;;) {
        size_t need = conn->challenged ? TC_TCP_PROOF_LEN : TC_TCP_HELLO_LEN;
        if (conn->in_got >= need)
            break;
        ssize_t n = recv(conn->fd, conn->in + conn->in_got, need - conn->in_got, 0);
        if (n > 0) {
            conn->in_got += (size_t)n;
            if (!conn->challenged) {
                int r = tc_tcp_conn_on_hello(ctx, conn);
                if (r < 0 || (r > 0 && !tc_tcp_conn_flush(ctx, conn)))
                    return;
            }
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        tc_tcp_rlog(ctx, TC_TCP_RL_CLOSED,
                    "tcp: id %llu: connection from %s ended %s (%zu of %zu bytes): %s%s",
                    (unsigned long long)ctx->self_id, conn->remote,
                    conn->challenged ? "before its proof" : "before its hello", conn->in_got, need,
                    n == 0 ? "closed" : strerror(errno),
                    conn->challenged ? " (a peer with another secret?)" : "");
        tc_tcp_conn_drop(ctx, conn);
        return;
    }
    tc_tcp_conn_on_proof(ctx, conn);
}

void tc_tcp_conn_expire(tc_tcp_ctx_t *ctx)
{
    tc_tcp_conn_t *conn = ctx->hello_conns;
    while (conn != NULL) {
        tc_tcp_conn_t *next = conn->next;
        if (tc_deadline_passed(conn->deadline_ns)) {
            tc_tcp_rlog(ctx, TC_TCP_RL_TIMEOUT,
                        "tcp: id %llu dropped the connection from %s: %s within %d ms",
                        (unsigned long long)ctx->self_id, conn->remote,
                        conn->challenged ? "no proof" : "no hello", ctx->hs_timeout_ms);
            tc_tcp_conn_drop(ctx, conn);
        }
        conn = next;
    }
}
