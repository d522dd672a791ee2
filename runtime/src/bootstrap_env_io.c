/* The torchrun-environment bootstrap's connection to the store: connecting (with retries until
 * the deadline: rank 0 may start later), sending a frame whole, receiving frames incrementally,
 * replies matched by request number, and the ring of events that arrive in between. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap_env_impl.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"
#include "tcomms/base/wire.h"

tc_status_t tc_benv_broken_error(tc_boot_env_t *e)
{
    return tc_error_set(TC_ERR_BOOTSTRAP,
                        "bootstrap(env): rank %d: the connection to the store "
                        "at %s failed earlier and is unusable",
                        e->head.rank, e->master);
}

/* Wait until @p fd is ready for @p events: 1 ready, 0 deadline passed, -1 error
 * (errno), -2 the creation was aborted (the detail is set). Sleeps in slices so
 * that an abort is seen within TC_BOOT_ABORT_POLL_MS. */
static int env_poll(int fd, short events, uint64_t deadline_ns)
{
    for (;;) {
        if (tc_boot_creation_aborted("the torchrun-environment store") != TC_OK)
            return -2;
        struct pollfd p = {.fd = fd, .events = events};
        int left = tc_deadline_left_ms(deadline_ns);
        int n = poll(&p, 1, left < TC_BOOT_ABORT_POLL_MS ? left : TC_BOOT_ABORT_POLL_MS);
        if (n > 0)
            return 1;
        if (n == 0) {
            if (tc_deadline_passed(deadline_ns))
                return 0;
            continue;
        }
        if (errno != EINTR)
            return -1;
    }
}

tc_status_t tc_benv_send(tc_boot_env_t *e, const void *buf, size_t len, uint64_t deadline_ns,
                         const char *what)
{
    const uint8_t *p = buf;
    size_t done = 0;
    while (done < len) {
        ssize_t n = send(e->fd, p + done, len - done, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int r = env_poll(e->fd, POLLOUT, deadline_ns);
            if (r > 0)
                continue;
            if (r == -2) {
                e->broken = done > 0;
                return TC_ERR_ABORTED;
            }
            if (r == 0) {
                e->broken = done > 0; /* half a frame is on the wire */
                return tc_error_set(TC_ERR_TIMEOUT,
                                    "bootstrap(env): rank %d: %s: the store at "
                                    "%s took no more bytes before the deadline (%zu of %zu sent)",
                                    e->head.rank, what, e->master, done, len);
            }
        }
        e->broken = e->lost = true;
        return tc_error_set(TC_ERR_BOOTSTRAP,
                            "bootstrap(env): rank %d: %s: lost the connection "
                            "to the store at %s: %s",
                            e->head.rank, what, e->master, strerror(errno));
    }
    return TC_OK;
}

void tc_benv_rx_reset(env_rx_t *rx)
{
    if (rx->body && rx->body != rx->small)
        free(rx->body);
    rx->body = NULL;
    rx->hdr_got = rx->got = 0;
    rx->in_body = false;
}

/* A header just completed: check it and make room for the body. */
static tc_status_t env_rx_header(tc_boot_env_t *e, const char *what)
{
    env_rx_t *rx = &e->rx;
    tc_status_t rc = tc_boot_store_hdr_parse(rx->hdr, &rx->type, &rx->len);
    if (rc == TC_OK && rx->type == TC_BS_EVENT && rx->len != TC_BS_EVENT_LEN)
        rc = tc_error_set(TC_ERR_PROTOCOL, "EVENT frame of %u bytes, expected %d", rx->len,
                          TC_BS_EVENT_LEN);
    else if (rc == TC_OK && rx->type == TC_BS_REPLY && rx->len < ENV_REPLY_FIXED)
        rc = tc_error_set(TC_ERR_PROTOCOL, "REPLY frame of %u bytes", rx->len);
    else if (rc == TC_OK && rx->type == TC_BS_CHALLENGE && rx->len != TC_BS_CHALLENGE_LEN)
        rc = tc_error_set(TC_ERR_PROTOCOL, "CHALLENGE frame of %u bytes, expected %d", rx->len,
                          TC_BS_CHALLENGE_LEN);
    else if (rc == TC_OK && rx->type != TC_BS_EVENT && rx->type != TC_BS_REPLY &&
             rx->type != TC_BS_CHALLENGE)
        rc = tc_error_set(TC_ERR_PROTOCOL, "frame of type %u and %u bytes", rx->type, rx->len);
    if (rc != TC_OK) {
        e->broken = true;
        tc_error_prefix("bootstrap(env): rank %d: %s: bad frame from the store at %s: ",
                        e->head.rank, what, e->master);
        return TC_ERR_PROTOCOL;
    }
    rx->body = rx->type == TC_BS_EVENT ? rx->small : malloc(rx->len);
    if (!rx->body) {
        e->broken = true;
        return tc_error_set(TC_ERR_NO_MEMORY, "bootstrap(env): %s: a reply of %u bytes", what,
                            rx->len);
    }
    rx->in_body = true;
    rx->got = 0;
    return TC_OK;
}

/*
 * Read until a whole frame is in e->rx: TC_OK. When nothing more is there,
 * wait until @p deadline_ns if @p wait (TC_ERR_TIMEOUT, or TC_ERR_ABORTED
 * for an aborted creation), else return TC_INPROGRESS at once. What was read
 * stays for the next call. A lost connection or a bad frame breaks the stream.
 */
tc_status_t tc_benv_rx(tc_boot_env_t *e, uint64_t deadline_ns, bool wait, const char *what)
{
    env_rx_t *rx = &e->rx;
    for (;;) {
        uint8_t *dst = rx->in_body ? rx->body + rx->got : rx->hdr + rx->hdr_got;
        size_t want = rx->in_body ? rx->len - rx->got : TC_BS_HDR_LEN - rx->hdr_got;
        if (rx->in_body && want == 0)
            return TC_OK; /* an empty body cannot be: REPLY and EVENT have fixed fields */
        ssize_t n = recv(e->fd, dst, want, MSG_DONTWAIT);
        if (n > 0) {
            if (!rx->in_body) {
                rx->hdr_got += (size_t)n;
                tc_status_t rc;
                if (rx->hdr_got == TC_BS_HDR_LEN && (rc = env_rx_header(e, what)) != TC_OK)
                    return rc;
            } else if ((rx->got += (size_t)n) == rx->len) {
                return TC_OK;
            }
            continue;
        }
        if (n == 0) {
            e->broken = e->lost = true;
            return tc_error_set(TC_ERR_BOOTSTRAP,
                                "bootstrap(env): rank %d: %s: the store at %s "
                                "closed the connection (rank 0 gone?)",
                                e->head.rank, what, e->master);
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (!wait)
                return TC_INPROGRESS;
            int r = env_poll(e->fd, POLLIN, deadline_ns);
            if (r > 0)
                continue;
            if (r == -2)
                return TC_ERR_ABORTED;
            if (r == 0)
                return tc_error_set(TC_ERR_TIMEOUT,
                                    "bootstrap(env): rank %d: %s: no answer from "
                                    "the store at %s before the deadline",
                                    e->head.rank, what, e->master);
        }
        e->broken = e->lost = true;
        return tc_error_set(TC_ERR_BOOTSTRAP,
                            "bootstrap(env): rank %d: %s: lost the connection "
                            "to the store at %s: %s",
                            e->head.rank, what, e->master, strerror(errno));
    }
}

/* Queue an event for poll_event; a full ring loses its oldest. */
static void env_ev_push(tc_boot_env_t *e, const tc_boot_event_t *ev)
{
    uint64_t dropped = 0;
    pthread_mutex_lock(&e->ev_lock);
    if (e->ev_len == ENV_EVENT_RING) {
        e->ev_head = (e->ev_head + 1) % ENV_EVENT_RING;
        e->ev_len--;
        dropped = ++e->ev_dropped;
    }
    e->ev_ring[(e->ev_head + e->ev_len) % ENV_EVENT_RING] = *ev;
    e->ev_len++;
    atomic_store_explicit(&e->ev_count, e->ev_len, memory_order_release);
    pthread_mutex_unlock(&e->ev_lock);
    /* The first loss, then one line per thousand: a flood must not flood the log too. */
    if (dropped % 1000 == 1)
        tc_log_warn(TC_SUBSYS_RUNTIME,
                    "bootstrap(env): rank %d: %llu events not polled in time were dropped "
                    "(a ring of %d); failures they reported are left to the transports",
                    e->head.rank, (unsigned long long)dropped, ENV_EVENT_RING);
}

int tc_benv_ev_pop(tc_boot_env_t *e, tc_boot_event_t *ev)
{
    if (atomic_load_explicit(&e->ev_count, memory_order_acquire) == 0)
        return 0;
    int got = 0;
    pthread_mutex_lock(&e->ev_lock);
    if (e->ev_len > 0) {
        *ev = e->ev_ring[e->ev_head];
        e->ev_head = (e->ev_head + 1) % ENV_EVENT_RING;
        e->ev_len--;
        atomic_store_explicit(&e->ev_count, e->ev_len, memory_order_release);
        got = 1;
    }
    pthread_mutex_unlock(&e->ev_lock);
    return got;
}

/* The EVENT frame in e->rx: check it and queue it. */
tc_status_t tc_benv_rx_event(tc_boot_env_t *e, const char *what)
{
    tc_bs_notice_t n;
    int ok = tc_boot_store_event_parse(e->rx.body, e->rx.len, (uint32_t)e->head.size, &n);
    uint32_t kind = n.kind, rank = n.rank, comm_id = n.comm_id, from = n.from;
    tc_benv_rx_reset(&e->rx);
    if (!ok) {
        e->broken = true;
        return tc_error_set(TC_ERR_PROTOCOL,
                            "bootstrap(env): rank %d: %s: malformed EVENT from the store at %s "
                            "(kind %u, rank %u, from rank %u, of %d ranks)",
                            e->head.rank, what, e->master, kind, rank, from, e->head.size);
    }
    int failed = kind == TC_BOOT_EV_PROC_FAILED; /* its third word: found silent */
    tc_boot_event_t ev = {.kind = (int)kind,
                          .rank = (int)rank,
                          .comm_id = failed ? 0 : comm_id,
                          .reporter = (int)from + 1,
                          .silent = failed && comm_id == 1};
    tc_log_debug(TC_SUBSYS_RUNTIME, "bootstrap(env): rank %u notifies %s of rank %u (comm %u)",
                 from, kind == TC_BOOT_EV_REVOKE ? "a revoke" : "the failure", rank, comm_id);
    env_ev_push(e, &ev);
    return TC_OK;
}

/* Wait for the reply to request @p req, queueing events and skipping late
 * replies to earlier requests. */
tc_status_t tc_benv_wait_reply(tc_boot_env_t *e, uint64_t req, uint64_t deadline_ns,
                               const char *what, env_reply_t *reply)
{
    for (;;) {
        tc_status_t rc = tc_benv_rx(e, deadline_ns, true, what);
        if (rc != TC_OK)
            return rc;
        if (e->rx.type == TC_BS_EVENT && req == 0) {
            /* The store sends events to ranks it let in only. One before its verdict comes from
             * a peer that proved nothing (a process on the store's port before rank 0 binds it):
             * queued, it would report failures and revokes to this rank once it joined the
             * real store. */
            tc_benv_rx_reset(&e->rx);
            e->broken = true;
            return tc_error_set(TC_ERR_PROTOCOL,
                                "bootstrap(env): rank %d: %s: the store at %s sent an EVENT "
                                "before it let this rank in (not a tcomms store of this job)",
                                e->head.rank, what, e->master);
        }
        if (e->rx.type == TC_BS_EVENT) {
            if ((rc = tc_benv_rx_event(e, what)) != TC_OK)
                return rc;
            continue;
        }
        uint8_t *body = e->rx.body;
        uint32_t len = e->rx.len;
        uint8_t type = e->rx.type;
        e->rx.body = NULL; /* the reply's now */
        tc_benv_rx_reset(&e->rx);
        if (type == TC_BS_CHALLENGE) {
            if (req != 0) { /* only a hello is challenged */
                e->broken = true;
                free(body);
                return tc_error_set(TC_ERR_PROTOCOL,
                                    "bootstrap(env): rank %d: %s: a CHALLENGE from the store "
                                    "at %s after joining",
                                    e->head.rank, what, e->master);
            }
            *reply = (env_reply_t){.body = body, .data = body, .len = len, .challenge = true};
            return TC_OK;
        }
        tc_bs_reply_t rp;
        if (!tc_boot_store_reply_parse(body, len, &rp)) {
            e->broken = true;
            free(body);
            return tc_error_set(TC_ERR_PROTOCOL,
                                "bootstrap(env): rank %d: %s: malformed reply "
                                "from the store at %s (status %d, %u of %zu bytes)",
                                e->head.rank, what, e->master, (int)rp.status, rp.len, rp.left);
        }
        uint64_t rreq = rp.req;
        if (rreq != req) {
            free(body); /* a reply to a request that timed out here */
            continue;
        }
        reply->body = body;
        reply->data = body + ENV_REPLY_FIXED;
        reply->len = rp.len;
        reply->status = rp.status;
        reply->challenge = false;
        return TC_OK;
    }
}

/* One connection attempt to one address: the socket, or -1 with the reason in @p why. */
static int env_try_connect(const struct addrinfo *ai, uint64_t deadline_ns, char *why, size_t cap)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    int err = 0;
    if (fd < 0) {
        snprintf(why, cap, "socket: %s", strerror(errno));
        return -1;
    }
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        if (errno != EINPROGRESS) {
            err = errno;
        } else {
            uint64_t try_end = tc_deadline_after_ms(ENV_CONNECT_TRY_MS);
            int r = env_poll(fd, POLLOUT, try_end < deadline_ns ? try_end : deadline_ns);
            socklen_t sl = sizeof(err);
            if (r == -2) {
                snprintf(why, cap, "%s", tc_last_error());
                close(fd);
                return -2;
            }
            if (r == 0)
                err = ETIMEDOUT;
            else if (r < 0)
                /* NOLINTNEXTLINE(bugprone-branch-clone): poll's errno; the next is getsockopt's */
                err = errno;
            else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl) != 0)
                err = errno;
        }
    }
    if (!err) {
        /* Connecting to a port with no listener on this host can, rarely, connect the
         * socket to itself (TCP simultaneous open); that is no store. */
        struct sockaddr_storage me, peer;
        socklen_t ml = sizeof(me), pl = sizeof(peer);
        if (getsockname(fd, (struct sockaddr *)&me, &ml) == 0 &&
            getpeername(fd, (struct sockaddr *)&peer, &pl) == 0 && ml == pl &&
            memcmp(&me, &peer, ml) == 0)
            err = ECONNREFUSED;
    }
    if (err) {
        snprintf(why, cap, "connect: %s", strerror(err));
        close(fd);
        return -1;
    }
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

/* Connect to @p host:port, trying again until the deadline (rank 0 may start later). */
tc_status_t tc_benv_connect(tc_boot_env_t *e, const char *host, int port, uint64_t deadline_ns)
{
    char service[8], why[256] = "no attempt";
    uint64_t start = tc_time_ns(), backoff_ms = 10;
    snprintf(service, sizeof(service), "%d", port);
    for (;;) {
        struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
        struct addrinfo *res = NULL;
        int g = getaddrinfo(host, service, &hints, &res);
        if (g == 0) {
            for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
                int fd = env_try_connect(ai, deadline_ns, why, sizeof(why));
                if (fd == -2) {
                    freeaddrinfo(res);
                    return TC_ERR_ABORTED;
                }
                if (fd >= 0) {
                    freeaddrinfo(res);
                    e->fd = fd;
                    return TC_OK;
                }
            }
            freeaddrinfo(res);
        } else {
            /* A name that does not resolve yet (a container still starting) may later. */
            snprintf(why, sizeof(why), "resolving \"%s\": %s", host,
                     g == EAI_SYSTEM ? strerror(errno) : gai_strerror(g));
        }
        if (tc_deadline_passed(deadline_ns))
            break;
        uint64_t left = (uint64_t)tc_deadline_left_ms(deadline_ns);
        for (uint64_t slept = 0; slept < backoff_ms && slept < left;
             slept += TC_BOOT_ABORT_POLL_MS) {
            tc_status_t ab = tc_boot_creation_aborted("the torchrun-environment store to accept");
            if (ab != TC_OK)
                return ab;
            tc_sleep_ns(TC_BOOT_ABORT_POLL_MS * ENV_NS_PER_MS);
        }
        backoff_ms = backoff_ms * 2 > 250 ? 250 : backoff_ms * 2;
    }
    return tc_error_set(TC_ERR_TIMEOUT,
                        "bootstrap(env): rank %d could not reach the store at %s "
                        "within %.1f s (last error: %s); is rank 0 running with the same "
                        "MASTER_ADDR and MASTER_PORT?",
                        e->head.rank, e->master, (double)(tc_time_ns() - start) * 1e-9, why);
}
