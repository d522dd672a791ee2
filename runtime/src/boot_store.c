/*
 * The key/value store of the torchrun-environment bootstrap, served by rank 0.
 *
 * One thread polls the listening socket and every client's non-blocking
 * socket; nothing it does can block on one client. Bytes from a client are
 * untrusted: a malformed frame closes that connection with a logged error.
 * A connection must join (hello and proof, boot_store_auth.c) within
 * BS_HELLO_TIMEOUT_NS; a client that leaves
 * more than BS_MAX_OUT bytes of replies, or BS_MAX_EVENTS events, unread is
 * dropped.
 *
 * Notices: a NOTIFY from one client becomes an EVENT frame queued to every
 * other client that joined and has not left, after whatever is already queued
 * for it; the store remembers nothing else about it.
 *
 * Fences: rank r has reached arrived[r]; fence_count[s-1] counts the ranks
 * that reached fence s. A client waits in at most one fence; it is answered
 * when every rank has reached it, when its wait ran out (with the missing
 * ranks), or at once when a rank that has not reached it left the store.
 *
 * Memory grows with the keys stored (it is the store) and O(world) per rank.
 *
 * This file serves the connections; the requests (keys, fences, notices) are boot_store_req.c,
 * the join boot_store_auth.c, the bodies' parsing boot_store_body.c, the listening socket,
 * start and stop boot_store_life.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "boot_store_impl.h"
#include "tcomms/base/hmap.h"
#include "tcomms/runtime/bootstrap.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"
#include "tcomms/base/vec.h"
#include "tcomms/base/wire.h"

/* ---- frame headers (shared with the clients) ---- */

void tc_boot_store_hdr_write(uint8_t hdr[TC_BS_HDR_LEN], uint8_t type, uint32_t body_len)
{
    tc_wire_writer_t w;
    tc_wire_writer_init(&w, hdr, TC_BS_HDR_LEN);
    /* Cannot fail: the header fits exactly. */
    (void)tc_wire_put_u32(&w, body_len);
    (void)tc_wire_put_u8(&w, type);
    (void)tc_wire_put_u8(&w, 0);
    (void)tc_wire_put_u16(&w, 0);
}

tc_status_t tc_boot_store_hdr_parse(const uint8_t hdr[TC_BS_HDR_LEN], uint8_t *type_p,
                                    uint32_t *body_len_p)
{
    tc_wire_reader_t r;
    uint32_t len;
    uint8_t type, zero8;
    uint16_t zero16;
    tc_wire_reader_init(&r, hdr, TC_BS_HDR_LEN);
    (void)tc_wire_get_u32(&r, &len);
    (void)tc_wire_get_u8(&r, &type);
    (void)tc_wire_get_u8(&r, &zero8);
    (void)tc_wire_get_u16(&r, &zero16);
    if (zero8 != 0 || zero16 != 0)
        return tc_error_set(TC_ERR_PROTOCOL,
                            "frame header with non-zero reserved bytes "
                            "(0x%02x 0x%04x): not a tcomms store peer",
                            zero8, zero16);
    if (type != TC_BS_HELLO && type != TC_BS_PUT && type != TC_BS_FENCE && type != TC_BS_GET &&
        type != TC_BS_BYE && type != TC_BS_NOTIFY && type != TC_BS_PROOF && type != TC_BS_REPLY &&
        type != TC_BS_EVENT && type != TC_BS_CHALLENGE)
        return tc_error_set(TC_ERR_PROTOCOL, "frame of unknown type %u", type);
    if (len > TC_BS_MAX_BODY)
        return tc_error_set(TC_ERR_PROTOCOL,
                            "frame of type %u announces %u bytes, more than "
                            "the limit of %u",
                            type, len, TC_BS_MAX_BODY);
    *type_p = type;
    *body_len_p = len;
    return TC_OK;
}

/* ---- the table ---- */

/* " (rank r)" once the client has joined, for logs. */
const char *tc_bs_who(const bs_conn_t *c)
{
    static _Thread_local char buf[32];
    if (c->rank < 0)
        return " (before its hello)";
    snprintf(buf, sizeof(buf), " (rank %d)", c->rank);
    return buf;
}

void tc_bs_flush(tc_boot_store_t *st, bs_conn_t *c)
{
    while (!c->dead && c->out_off < c->out_len) {
        ssize_t n =
            send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            c->out_off += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return;
        } else {
            char why[160];
            snprintf(why, sizeof(why), "send failed: %s", strerror(errno));
            tc_bs_drop(st, c, why);
            return;
        }
    }
    c->out_off = c->out_len = 0;
    c->events_unsent = 0;
}

/* Room for @p need more bytes of output (at c->out + c->out_len), or NULL when
 * the client was dropped (too much unread, or no memory). */
uint8_t *tc_bs_out_reserve(tc_boot_store_t *st, bs_conn_t *c, size_t need)
{
    if (c->dead)
        return NULL;
    if (c->out_len - c->out_off + need > BS_MAX_OUT) {
        tc_log_error(TC_SUBSYS_RUNTIME,
                     "bootstrap store: dropping %s%s: it leaves more than %u "
                     "bytes of output unread",
                     c->name, tc_bs_who(c), BS_MAX_OUT);
        tc_bs_drop(st, c, "too much unread output");
        return NULL;
    }
    if (c->out_off > 0 && c->out_off == c->out_len)
        c->out_off = c->out_len = 0;
    if (c->out_len + need > c->out_cap) {
        size_t cap = c->out_cap ? c->out_cap : 4096;
        while (cap < c->out_len + need)
            cap *= 2;
        uint8_t *p = realloc(c->out, cap);
        if (!p) {
            tc_log_error(TC_SUBSYS_RUNTIME,
                         "bootstrap store: no memory for %zu bytes of output "
                         "to %s",
                         need, c->name);
            tc_bs_drop(st, c, "out of memory");
            return NULL;
        }
        c->out = p;
        c->out_cap = cap;
    }
    return c->out + c->out_len;
}

/* Queue a REPLY frame and try to send it at once. */
void tc_bs_reply(tc_boot_store_t *st, bs_conn_t *c, uint64_t req, tc_status_t status,
                 const void *data, uint32_t len)
{
    size_t need = TC_BS_HDR_LEN + BS_REPLY_FIXED + (size_t)len;
    uint8_t *p = tc_bs_out_reserve(st, c, need);
    if (!p)
        return;
    tc_wire_writer_t w;
    tc_boot_store_hdr_write(p, TC_BS_REPLY, (uint32_t)(BS_REPLY_FIXED + len));
    tc_wire_writer_init(&w, p + TC_BS_HDR_LEN, need - TC_BS_HDR_LEN);
    (void)tc_wire_put_u64(&w, req);
    (void)tc_wire_put_u32(&w, (uint32_t)(int32_t)status);
    (void)tc_wire_put_u32(&w, len);
    (void)tc_wire_put_bytes(&w, data, len);
    c->out_len += need;
    tc_bs_flush(st, c);
}

void tc_bs_reply_text(tc_boot_store_t *st, bs_conn_t *c, uint64_t req, tc_status_t status,
                      const char *fmt, ...)
{
    char text[TC_BS_MAX_TEXT];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof(text))
        n = (int)sizeof(text) - 1;
    tc_bs_reply(st, c, req, status, text, (uint32_t)n);
}

void tc_bs_drop(tc_boot_store_t *st, bs_conn_t *c, const char *why)
{
    if (c->dead)
        return;
    c->dead = true;
    c->fence_waiting = false;
    if (c->auth == BS_AUTH_PROOF && !c->closing)
        tc_bs_refused(st, c->name,
                      "it left (%s) after the challenge without proving it holds the "
                      "job's secret (claimed rank %u)",
                      why, c->claimed_rank);
    if (c->rank >= 0 && !c->said_bye) {
        tc_log_debug(TC_SUBSYS_RUNTIME, "bootstrap store: rank %d (%s) disconnected: %s", c->rank,
                     c->name, why);
        tc_bs_rank_left(st, c->rank, "disconnected without goodbye");
    }
}

void tc_bs_conn_free(bs_conn_t *c)
{
    if (c->fd >= 0)
        close(c->fd);
    free(c->body);
    free(c->out);
    free(c);
}

/* Close @p c for the frame it sent (the error is set): a rank's is an error line; one from a
 * connection that has not joined is a refusal, a line a second at most, since anyone may
 * connect. */
static void bs_malformed(tc_boot_store_t *st, bs_conn_t *c)
{
    if (c->rank >= 0)
        tc_log_error(TC_SUBSYS_RUNTIME, "bootstrap store: closing the connection from %s%s: %s",
                     c->name, tc_bs_who(c), tc_last_error());
    else
        tc_bs_refused(st, c->name, "%s", tc_last_error());
    tc_bs_drop(st, c, "malformed frame");
}

/* Read what is there (up to a budget, for fairness) and handle every complete frame. */
void tc_bs_read(tc_boot_store_t *st, bs_conn_t *c)
{
    size_t budget = BS_READ_BUDGET;
    while (!c->dead && !c->closing && budget > 0) {
        uint8_t *dst;
        size_t want;
        if (!c->in_body) {
            dst = c->hdr + c->hdr_got;
            want = TC_BS_HDR_LEN - c->hdr_got;
        } else {
            dst = c->body + c->body_got;
            want = c->body_len - c->body_got;
        }
        ssize_t n = want ? recv(c->fd, dst, want < budget ? want : budget, MSG_DONTWAIT) : 0;
        if (want && n == 0) {
            tc_bs_drop(st, c,
                       c->hdr_got || c->in_body ? "closed in the middle of a frame"
                                                : "closed the connection");
            return;
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                char why[160];
                snprintf(why, sizeof(why), "recv failed: %s", strerror(errno));
                tc_bs_drop(st, c, why);
            }
            return;
        }
        budget -= (size_t)n;
        if (!c->in_body) {
            c->hdr_got += (size_t)n;
            if (c->hdr_got < TC_BS_HDR_LEN)
                continue;
            tc_status_t rc = tc_boot_store_hdr_parse(c->hdr, &c->type, &c->body_len);
            if (rc == TC_OK &&
                (c->type == TC_BS_REPLY || c->type == TC_BS_EVENT || c->type == TC_BS_CHALLENGE))
                rc = tc_error_set(TC_ERR_PROTOCOL, "%s frame from a client",
                                  c->type == TC_BS_REPLY   ? "REPLY"
                                  : c->type == TC_BS_EVENT ? "EVENT"
                                                           : "CHALLENGE");
            if (rc == TC_OK && c->type == TC_BS_NOTIFY && c->body_len != TC_BS_NOTIFY_LEN)
                rc = tc_error_set(TC_ERR_PROTOCOL, "NOTIFY frame of %u bytes, expected %d",
                                  c->body_len, TC_BS_NOTIFY_LEN);
            if (rc == TC_OK && c->rank < 0 && c->body_len > TC_BS_HELLO_LEN)
                rc = tc_error_set(TC_ERR_PROTOCOL, "%u-byte frame before joining", c->body_len);
            if (rc == TC_OK && c->body_len > 0 && !(c->body = malloc(c->body_len)))
                rc = tc_error_set(TC_ERR_NO_MEMORY, "no memory for a frame of %u bytes",
                                  c->body_len);
            if (rc != TC_OK) {
                bs_malformed(st, c);
                return;
            }
            c->in_body = true;
            c->body_got = 0;
        } else {
            c->body_got += (size_t)n;
        }
        if (c->body_got < c->body_len)
            continue;
        tc_status_t rc = tc_bs_on_frame(st, c);
        free(c->body);
        c->body = NULL;
        c->in_body = false;
        c->hdr_got = 0;
        if (rc != TC_OK) {
            bs_malformed(st, c);
            return;
        }
    }
}

bs_conn_t *tc_bs_conn_add(tc_boot_store_t *st, int fd, const char *name)
{
    if (st->nconns == st->conns_cap) {
        size_t cap = st->conns_cap ? st->conns_cap * 2 : 16;
        /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
        bs_conn_t **p = realloc(st->conns, cap * sizeof(*p));
        if (!p)
            return NULL;
        st->conns = p;
        st->conns_cap = cap;
    }
    bs_conn_t *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->fd = fd;
    c->rank = -1;
    c->deadline_ns = tc_time_ns() + BS_HELLO_TIMEOUT_NS;
    snprintf(c->name, sizeof(c->name), "%s", name);
    st->conns[st->nconns++] = c;
    return c;
}

static void bs_accept(tc_boot_store_t *st)
{
    for (;;) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        int fd = accept4(st->listen_fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* The connection stays queued; look again a little later instead of spinning. */
                tc_log_warn(TC_SUBSYS_RUNTIME, "bootstrap store: accept failed: %s",
                            strerror(errno));
                st->accept_pause_until_ns = tc_time_ns() + 100 * BS_NS_PER_MS;
            }
            return;
        }
        if (st->nconns >= (size_t)st->world * 2 + 64) {
            tc_bs_refused(st, "a connection", "already %zu for %d ranks", st->nconns, st->world);
            goto refuse;
        }
        char host[INET6_ADDRSTRLEN] = "?", name[64];
        int port = 0;
        /* NOLINTNEXTLINE(clang-analyzer-core.UndefinedBinaryOperatorResult): accept4 set ss */
        if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
            port = ntohs(a->sin6_port);
        } else if (ss.ss_family == AF_INET) {
            struct sockaddr_in *a = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
            port = ntohs(a->sin_port);
        }
        snprintf(name, sizeof(name), "%s port %d", host, port);
        int one = 1;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (!tc_bs_conn_add(st, fd, name))
            goto refuse;
        continue;
    refuse:
        close(fd);
    }
}

/* ---- the thread ---- */

static bool bs_clients_remain(const tc_boot_store_t *st)
{
    for (size_t i = 0; i < st->nconns; i++)
        if (!st->conns[i]->dead && st->conns[i]->rank >= 0 && !st->conns[i]->said_bye &&
            !st->conns[i]->reported_failed)
            return true;
    return false;
}

/* Rank 0 is leaving and waits (TC_BOOT_LINGER_S) for the ranks that have not
 * said goodbye (not for those another rank reported failed): say who, at once (info), after
 * BS_LINGER_WARN_NS (warn), and when the wait ends. @p how: "waits", "still waits", "stopped
 * waiting". */
static void bs_linger_log(tc_boot_store_t *st, uint64_t now, uint64_t linger, const char *how)
{
    char ranks[160];
    size_t len = 0;
    int n = 0;
    ranks[0] = '\0';
    for (size_t i = 0; i < st->nconns; i++) {
        const bs_conn_t *c = st->conns[i];
        if (c->dead || c->rank <= 0 || c->said_bye || c->reported_failed)
            continue; /* (rank 0 is the one leaving: its goodbye may not be read yet) */
        if (len + 16 < sizeof(ranks))
            len +=
                (size_t)snprintf(ranks + len, sizeof(ranks) - len, "%s%d", n ? ", " : "", c->rank);
        else if (len + 5 < sizeof(ranks))
            len += (size_t)snprintf(ranks + len, sizeof(ranks) - len, ", ...");
        n++;
    }
    if (n == 0)
        return;
    st->linger_told = true;
    double waited = (double)(now - st->linger_start_ns) * 1e-9;
    double left = linger > now ? (double)(linger - now) * 1e-9 : 0;
    if (strcmp(how, "waits") == 0)
        tc_log_info(TC_SUBSYS_RUNTIME,
                    "bootstrap store: rank 0 is leaving and waits up to %.0f s (TC_BOOT_LINGER_S) "
                    "for %d rank(s) that have not said goodbye: %s",
                    left, n, ranks);
    else
        tc_log_warn(TC_SUBSYS_RUNTIME,
                    "bootstrap store: rank 0 %s after %.1f s (%.0f s left) for %d rank(s) that "
                    "have not said goodbye: %s",
                    how, waited, left, n, ranks);
}

/* Fire expired timers; return the earliest deadline still pending. */
static uint64_t bs_timers(tc_boot_store_t *st, uint64_t now)
{
    uint64_t next = UINT64_MAX;
    for (size_t i = 0; i < st->nconns; i++) {
        bs_conn_t *c = st->conns[i];
        if (c->dead)
            continue;
        if (c->fence_waiting && now >= c->fence_deadline_ns)
            tc_bs_fence_timeout(st, c, now);
        if (c->fence_waiting && c->fence_deadline_ns < next)
            next = c->fence_deadline_ns;
        if (c->deadline_ns != UINT64_MAX && now >= c->deadline_ns) {
            if (!c->closing)
                tc_bs_refused(st, c->name, "it did not join (hello and proof) within %llu s",
                              BS_HELLO_TIMEOUT_NS / 1000000000ull);
            tc_bs_drop(st, c, "timed out");
        } else if (c->deadline_ns < next) {
            next = c->deadline_ns;
        }
    }
    return next;
}

void tc_bs_reap(tc_boot_store_t *st)
{
    size_t j = 0;
    for (size_t i = 0; i < st->nconns; i++) {
        bs_conn_t *c = st->conns[i];
        if (!c->dead && c->closing && c->out_off == c->out_len)
            c->dead = true; /* a refused client: its reason is sent */
        if (c->dead)
            tc_bs_conn_free(c);
        else
            st->conns[j++] = c;
    }
    st->nconns = j;
}

void *tc_bs_main(void *arg)
{
    tc_boot_store_t *st = arg;
    for (;;) {
        uint64_t now = tc_time_ns();
        uint64_t next = bs_timers(st, now);
        bool stopping = atomic_load(&st->stop);
        if (stopping) {
            uint64_t linger = atomic_load(&st->linger_deadline_ns);
            if (st->listen_fd >= 0) {
                close(st->listen_fd); /* later connections are refused */
                st->listen_fd = -1;
            }
            bool remain = bs_clients_remain(st);
            if (remain && now >= linger) {
                if (st->linger_start_ns) /* (no wait at all: an aborted creation) */
                    bs_linger_log(st, now, linger, "stopped waiting");
            } else if (remain && st->linger_start_ns == 0) {
                st->linger_start_ns = now;
                bs_linger_log(st, now, linger, "waits");
            } else if (remain && !st->linger_warned &&
                       now - st->linger_start_ns >= BS_LINGER_WARN_NS) {
                st->linger_warned = true;
                bs_linger_log(st, now, linger, "still waits");
            } else if (!remain && st->linger_told) {
                tc_log_info(TC_SUBSYS_RUNTIME,
                            "bootstrap store: every rank said goodbye after %.1f s of waiting",
                            (double)(now - st->linger_start_ns) * 1e-9);
            }
            if (!remain || now >= linger)
                break;
            if (linger < next)
                next = linger;
            if (!st->linger_warned && st->linger_start_ns + BS_LINGER_WARN_NS < next)
                next = st->linger_start_ns + BS_LINGER_WARN_NS;
        }
        tc_bs_reap(st);
        if (st->nconns + 2 > st->pfds_cap) {
            size_t cap = (st->nconns + 2) * 2;
            struct pollfd *p = realloc(st->pfds, cap * sizeof(*p));
            if (!p) {
                tc_log_error(TC_SUBSYS_RUNTIME,
                             "bootstrap store: no memory for %zu poll "
                             "entries; the store stops",
                             cap);
                break;
            }
            st->pfds = p;
            st->pfds_cap = cap;
        }
        st->pfds[0] = (struct pollfd){.fd = st->wake_fd, .events = POLLIN};
        bool listening = st->listen_fd >= 0 && now >= st->accept_pause_until_ns;
        st->pfds[1] = (struct pollfd){.fd = listening ? st->listen_fd : -1, .events = POLLIN};
        if (st->listen_fd >= 0 && !listening && st->accept_pause_until_ns < next)
            next = st->accept_pause_until_ns;
        for (size_t i = 0; i < st->nconns; i++) {
            bs_conn_t *c = st->conns[i];
            short ev = c->closing ? 0 : POLLIN;
            if (c->out_off < c->out_len)
                ev |= POLLOUT;
            st->pfds[2 + i] = (struct pollfd){.fd = c->fd, .events = ev};
        }
        /* Wake at least once a second so that a lost wake-up cannot stall a stop. */
        int timeout = 1000;
        if (next != UINT64_MAX) {
            uint64_t ms = next > now ? (next - now + BS_NS_PER_MS - 1) / BS_NS_PER_MS : 0;
            if (ms < (uint64_t)timeout)
                timeout = (int)ms;
        }
        int n = poll(st->pfds, st->nconns + 2, timeout);
        if (n < 0 && errno != EINTR) {
            tc_log_error(TC_SUBSYS_RUNTIME, "bootstrap store: poll failed: %s; the store stops",
                         strerror(errno));
            break;
        }
        if (n <= 0)
            continue;
        if (st->pfds[0].revents) {
            uint64_t v;
            (void)!read(st->wake_fd, &v, sizeof(v));
        }
        /* Connections first: accepting may grow the array past the poll entries. */
        size_t polled = st->nconns;
        for (size_t i = 0; i < polled; i++) {
            bs_conn_t *c = st->conns[i];
            short rev = st->pfds[2 + i].revents;
            if (!rev || c->dead)
                continue;
            if (rev & POLLOUT)
                tc_bs_flush(st, c);
            if (rev & (POLLIN | POLLHUP | POLLERR)) {
                if (!c->closing)
                    tc_bs_read(st, c);
                else if (rev & (POLLHUP | POLLERR))
                    c->dead = true;
            }
            if (rev & POLLNVAL)
                tc_bs_drop(st, c, "invalid descriptor");
        }
        if (st->pfds[1].revents)
            bs_accept(st);
    }
    for (size_t i = 0; i < st->nconns; i++)
        tc_bs_conn_free(st->conns[i]);
    st->nconns = 0;
    return NULL;
}
