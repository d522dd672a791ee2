/* The TCP handshake of the verbs backend (wire format in ib_internal.h): a challenge-response
 * keyed by the job secret (auth.h) authenticates the active side's hello before anything of
 * this side's queue pair is given out, then the QP numbers are exchanged.
 *
 * The listener is bounded: at most TC_IB_PENDING_MAX accepted sockets in their exchange (more
 * are closed at once), each within a deadline; accept() out of descriptors backs off; lines
 * about refused connections are rate-limited per reason. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcomms/base/log.h"
#include "tcomms/base/time.h"
#include "ib_internal.h"

enum { TC_IB_RL_TIMEOUT = 0, TC_IB_RL_CAP = 5, TC_IB_RL_ACCEPT = 6, TC_IB_RL_FOREIGN = 7 };

/* One line per reason per TC_IB_LOG_INTERVAL_MS, with the number left out since the last. */
#define tc_ib_rlog(ctx, reason, ...) \
    tc_tp_loglimit_warn(&(ctx)->rlog[reason], TC_IB_LOG_INTERVAL_MS, __VA_ARGS__)

static const char *tc_ib_hs_result_string(unsigned result)
{
    switch (result) {
    case TC_IB_HS_R_REFUSED:
        return "refused (version, receiver id, direction or ring geometry; the peer logs which)";
    case TC_IB_HS_R_WRONG_SECRET:
        return "wrong secret (one side has a job secret, the other none: another job?)";
    case TC_IB_HS_R_BAD_PROOF:
        return "bad proof (wrong secret, or a replayed hello)";
    case TC_IB_HS_R_DUPLICATE:
        return "duplicate handshake from the same id";
    default:
        return "unknown reason";
    }
}

static void tc_ib_hdr_fill(tc_ib_ctx_t *ctx, unsigned char *h, unsigned result, uint64_t receiver)
{
    tc_ib_put_u32(h, TC_IB_HS_MAGIC);
    tc_ib_put_u16(h + 4, TC_IB_HS_VERSION);
    tc_ib_put_u16(h + 6, (uint16_t)result);
    tc_ib_put_u64(h + 8, ctx->self_id);
    tc_ib_put_u64(h + 16, receiver);
}

static void tc_ib_hs_fill(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep, unsigned char *h, uint64_t receiver)
{
    memset(h, 0, TC_IB_HS_LEN);
    tc_ib_hdr_fill(ctx, h, 0, receiver);
    tc_ib_put_u32(h + 24, ep->qp->qp_num);
    tc_ib_put_u32(h + 28, ep->psn);
    tc_ib_put_u16(h + 32, ctx->port_attr.lid);
    memcpy(h + 40, ctx->gid.raw, 16);
    tc_ib_put_u16(h + 56, ctx->key.keyed ? TC_IB_HS_F_KEYED : 0);
    tc_ib_put_u64(h + 64, (uint64_t)(uintptr_t)ep->recv_buf);
    tc_ib_put_u32(h + 72, ep->recv_mr->rkey);
    tc_ib_put_u16(h + 76, TC_IB_NRECV);
    tc_ib_put_u16(h + 78, TC_IB_SLOT);
}

static void tc_ib_transcript(tc_auth_transcript_t *t, const unsigned char *m,
                             const unsigned char *na)
{
    t->purpose = "ib";
    t->initiator_id = tc_ib_get_u64(m + 8);
    t->acceptor_id = tc_ib_get_u64(m + 16);
    memcpy(t->nonce_i, m + TC_IB_HS_LEN, TC_AUTH_NONCE_LEN);
    memcpy(t->nonce_a, na, TC_AUTH_NONCE_LEN);
    t->extra = m;
    t->extra_len = TC_IB_HS_LEN;
}

int tc_ib_hello_check(const unsigned char *m, size_t len, uint64_t self_id, int self_keyed,
                      const char **why_p)
{
    *why_p = NULL;
    if (len < 8)
        return TC_IB_HS_MORE;
    if (tc_ib_get_u32(m) != TC_IB_HS_MAGIC)
        return TC_IB_HS_FOREIGN;
    if (tc_ib_get_u16(m + 4) != TC_IB_HS_VERSION) {
        *why_p = "another handshake version (mixed builds?)";
        return TC_IB_HS_R_REFUSED;
    }
    if (len < TC_IB_HELLO_LEN)
        return TC_IB_HS_MORE;
    if (tc_ib_get_u16(m + 6) != 0)
        *why_p = "a hello carrying a result";
    else if (tc_ib_get_u64(m + 16) != self_id)
        *why_p = "addressed to another id (stale address?)";
    else if (((tc_ib_get_u16(m + 56) & TC_IB_HS_F_KEYED) != 0) != (self_keyed != 0)) {
        *why_p = tc_ib_hs_result_string(TC_IB_HS_R_WRONG_SECRET);
        return TC_IB_HS_R_WRONG_SECRET;
    } else if (tc_ib_get_u64(m + 8) >= self_id)
        *why_p = "the connecting id must be the smaller one";
    else if (tc_ib_get_u16(m + 76) != TC_IB_NRECV || tc_ib_get_u16(m + 78) != TC_IB_SLOT)
        *why_p = "its receive ring has another geometry (slots or slot size)";
    return *why_p != NULL ? TC_IB_HS_R_REFUSED : 0;
}

int tc_ib_proof_check(const tc_auth_key_t *key, const unsigned char *m,
                      const unsigned char na[TC_AUTH_NONCE_LEN], const unsigned char *proof)
{
    tc_auth_transcript_t t;
    tc_ib_transcript(&t, m, na);
    return tc_auth_check(key, TC_AUTH_INITIATOR, &t, proof);
}

int tc_ib_challenge_answer(const tc_auth_key_t *key, const unsigned char *hello,
                           const unsigned char *chal, unsigned char proof[TC_AUTH_MAC_LEN])
{
    tc_auth_transcript_t t;
    tc_ib_transcript(&t, hello, chal + TC_IB_HDR_LEN);
    if (!tc_auth_check(key, TC_AUTH_ACCEPTOR, &t, chal + TC_IB_HDR_LEN + TC_AUTH_NONCE_LEN))
        return 0;
    tc_auth_mac(key, TC_AUTH_INITIATOR, &t, proof);
    return 1;
}

/* The QP is connected (RTR/RTS). The passive side connects first and sends its reply; the
 * active side then connects and tells the passive one with a ready byte, so that the passive
 * side posts nothing before the active QP can receive it. */
static void tc_ib_ep_connected(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep, const unsigned char *hs, int active)
{
    tc_status_t st = tc_ib_qp_connect(ctx, ep, hs);
    if (st != TC_OK) {
        tc_ib_ep_fail(ctx, ep, st, "could not connect its queue pair: %s", tc_last_error());
        return;
    }
    if (!active) {
        ep->hs_wait_ready = 1;
        return;
    }
    if (send(ep->fd, "R", 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1) {
        tc_ib_ep_fail(ctx, ep, TC_ERR_PEER_FAILED, "handshake ready byte could not be sent: %s",
                      strerror(errno));
        return;
    }
    close(ep->fd);
    ep->fd = -1;
    ep->state = TC_IB_EP_UP;
    tc_ib_ep_kick(ctx, ep);
}

static void tc_ib_ready_progress(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep)
{
    char c;
    ssize_t n = recv(ep->fd, &c, 1, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        if (tc_deadline_passed(ep->hs_deadline))
            tc_ib_ep_fail(ctx, ep, TC_ERR_PEER_FAILED, "did not complete the handshake within "
                          "%d ms", TC_IB_HS_TIMEOUT_MS);
        return;
    }
    if (n != 1 || c != 'R') {
        tc_ib_ep_fail(ctx, ep, TC_ERR_PEER_FAILED, "broke the handshake before its ready byte");
        return;
    }
    close(ep->fd);
    ep->fd = -1;
    ep->hs_wait_ready = 0;
    ep->state = TC_IB_EP_UP;
    tc_log_debug(TC_SUBSYS_TRANSPORT, "ib: id %llu QP %u connected to peer %llu",
                 (unsigned long long)ctx->self_id, ep->qp->qp_num,
                 (unsigned long long)ep->super.peer_id);
    tc_ib_ep_kick(ctx, ep);
}

/* Passive side: a proved hello from a smaller id and its waiting endpoint. */
static void tc_ib_accept_hello(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep, int fd, const unsigned char *hs)
{
    unsigned char reply[TC_IB_HS_LEN];
    tc_ib_hs_fill(ctx, ep, reply, ep->super.peer_id);
    ctx->nwaiting--;
    ep->state = TC_IB_EP_CONNECTING;
    ep->fd = fd;
    ep->hs_deadline = tc_deadline_after_ms(TC_IB_HS_TIMEOUT_MS);
    /* RTR before the reply: the active side may send as soon as it has it */
    tc_ib_ep_connected(ctx, ep, hs, 0);
    if (ep->state == TC_IB_EP_FAILED)
        return;
    /* 80 bytes into a socket buffer that only carried the challenge: one send */
    ssize_t n = send(fd, reply, sizeof(reply), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n != (ssize_t)sizeof(reply))
        tc_ib_ep_fail(ctx, ep, TC_ERR_PEER_FAILED, "handshake reply could not be sent: %s",
                      n < 0 ? strerror(errno) : "short write");
}

/* Answer with a refusal (best effort), log it (rate-limited) and close. */
static void tc_ib_refuse(tc_ib_ctx_t *ctx, struct parked *p, unsigned result, const char *why)
{
    uint64_t sender = p->got >= 16 ? tc_ib_get_u64(p->hs + 8) : 0;
    tc_ib_rlog(ctx, (int)result, "ib: id %llu refused a handshake (claiming id %llu): %s",
               (unsigned long long)ctx->self_id, (unsigned long long)sender, why);
    unsigned char hdr[TC_IB_HDR_LEN];
    tc_ib_hdr_fill(ctx, hdr, result, sender);
    (void)!send(p->fd, hdr, sizeof(hdr), MSG_NOSIGNAL | MSG_DONTWAIT);
    close(p->fd);
    p->fd = -1;
}

/* Read into @p buf until @p want bytes are in *got_p: 1 done, 0 more later, -1 closed. */
static int tc_ib_read_some(int fd, unsigned char *buf, size_t want, size_t *got_p)
{
    while (*got_p < want) {
        ssize_t n = recv(fd, buf + *got_p, want - *got_p, MSG_DONTWAIT);
        if (n > 0) {
            *got_p += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
    }
    return 1;
}

/* One step of an accepted socket's exchange: 1 keep it, 0 drop it (closed already or now). */
static int tc_ib_parked_step(tc_ib_ctx_t *ctx, struct parked *p)
{
    if (p->stage == 0) {
        int r = tc_ib_read_some(p->fd, p->hs, TC_IB_HELLO_LEN, &p->got);
        const char *why;
        int c = tc_ib_hello_check(p->hs, p->got, ctx->self_id, ctx->key.keyed, &why);
        if (c == TC_IB_HS_FOREIGN) {
            tc_ib_rlog(ctx, TC_IB_RL_FOREIGN, "ib: id %llu dropped a handshake connection: not "
                       "a tcomms ib hello (magic 0x%08x)", (unsigned long long)ctx->self_id,
                       tc_ib_get_u32(p->hs));
            return 0;
        }
        if (c > 0) {
            tc_ib_refuse(ctx, p, (unsigned)c, why);
            return 0;
        }
        if (r < 0)
            return 0; /* closed before its hello */
        if (c == TC_IB_HS_MORE)
            return 1;
        /* the challenge: our nonce and our MAC; 88 bytes into an empty buffer: one send */
        unsigned char chal[TC_IB_CHAL_LEN];
        tc_auth_transcript_t t;
        tc_auth_nonce(p->na);
        tc_ib_hdr_fill(ctx, chal, 0, tc_ib_get_u64(p->hs + 8));
        memcpy(chal + TC_IB_HDR_LEN, p->na, TC_AUTH_NONCE_LEN);
        tc_ib_transcript(&t, p->hs, p->na);
        tc_auth_mac(&ctx->key, TC_AUTH_ACCEPTOR, &t, chal + TC_IB_HDR_LEN + TC_AUTH_NONCE_LEN);
        if (send(p->fd, chal, sizeof(chal), MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(chal))
            return 0;
        p->stage = 1;
    }
    if (p->stage == 1) {
        int r = tc_ib_read_some(p->fd, p->proof, sizeof(p->proof), &p->proof_got);
        if (r <= 0)
            return r == 0;
        if (!tc_ib_proof_check(&ctx->key, p->hs, p->na, p->proof)) {
            tc_ib_refuse(ctx, p, TC_IB_HS_R_BAD_PROOF,
                         tc_ib_hs_result_string(TC_IB_HS_R_BAD_PROOF));
            return 0;
        }
        p->stage = 2; /* proved: no deadline, not counted against the cap */
        ctx->npending--;
    }
    tc_ib_ep_t *ep = tc_ib_ep_find(ctx, tc_ib_get_u64(p->hs + 8));
    if (ep == NULL)
        return 1; /* its endpoint does not exist yet */
    if (ep->state != TC_IB_EP_WAITING) {
        tc_ib_refuse(ctx, p, TC_IB_HS_R_DUPLICATE, tc_ib_hs_result_string(TC_IB_HS_R_DUPLICATE));
        return 0;
    }
    tc_ib_accept_hello(ctx, ep, p->fd, p->hs);
    p->fd = -1; /* the endpoint's now */
    return 0;
}

static void tc_ib_accept_pause(tc_ib_ctx_t *ctx, int err)
{
    int ms = ctx->accept_backoff_ms == 0 ? 10 : ctx->accept_backoff_ms * 2;
    ctx->accept_backoff_ms = ms > 1000 ? 1000 : ms;
    ctx->accept_resume_ns = tc_deadline_after_ms((uint64_t)ctx->accept_backoff_ms);
    tc_ib_rlog(ctx, TC_IB_RL_ACCEPT, "ib: id %llu cannot accept handshake connections: accept: "
               "%s; not accepting for %d ms", (unsigned long long)ctx->self_id, strerror(err),
               ctx->accept_backoff_ms);
}

/* Accept and run the exchange of accepted sockets; hand proved ones to their endpoint or keep
 * them until it exists. */
static void tc_ib_passive_progress(tc_ib_ctx_t *ctx)
{
    for (int i = 0; i < 16 && ctx->nwaiting > 0 && tc_deadline_passed(ctx->accept_resume_ns);
         i++) {
        int fd = accept4(ctx->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                tc_ib_accept_pause(ctx, errno);
            else if (errno == EAGAIN || errno == EWOULDBLOCK)
                ctx->accept_backoff_ms = 0;
            break;
        }
        if (ctx->npending >= TC_IB_PENDING_MAX) {
            tc_ib_rlog(ctx, TC_IB_RL_CAP, "ib: id %llu closed a handshake connection at once: "
                       "%d are in their handshake already", (unsigned long long)ctx->self_id,
                       ctx->npending);
            close(fd);
            continue;
        }
        struct parked *p = calloc(1, sizeof(*p));
        if (p == NULL) {
            close(fd);
            break;
        }
        p->fd = fd;
        p->deadline = tc_deadline_after_ms((uint64_t)ctx->pending_ms);
        p->next = ctx->accepted;
        ctx->accepted = p;
        ctx->npending++;
    }
    for (struct parked **pp = &ctx->accepted; *pp != NULL;) {
        struct parked *p = *pp;
        int keep = tc_ib_parked_step(ctx, p);
        if (keep && p->stage < 2 && tc_deadline_passed(p->deadline)) {
            tc_ib_rlog(ctx, TC_IB_RL_TIMEOUT, "ib: id %llu dropped a handshake connection: no "
                       "%s within %d ms", (unsigned long long)ctx->self_id,
                       p->stage == 0 ? "hello" : "proof", ctx->pending_ms);
            keep = 0;
        }
        if (keep) {
            pp = &p->next;
            continue;
        }
        if (p->stage < 2)
            ctx->npending--;
        if (p->fd >= 0)
            close(p->fd);
        *pp = p->next;
        free(p);
    }
}

/* Active side: after the challenge, the proof; after the reply, the ready byte. */
static void tc_ib_active_on_answer(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep)
{
    const unsigned char *h = ep->hs_in;
    if (tc_ib_get_u64(h + 8) != ep->super.peer_id || tc_ib_get_u64(h + 16) != ctx->self_id) {
        tc_ib_ep_fail(ctx, ep, TC_ERR_PROTOCOL, "answered the handshake as id %llu to id %llu "
                      "(stale address?)", (unsigned long long)tc_ib_get_u64(h + 8),
                      (unsigned long long)tc_ib_get_u64(h + 16));
        return;
    }
    if (!ep->hs_proved) {
        if (!tc_ib_challenge_answer(&ctx->key, ep->hs_hello, h, ep->hs_out)) {
            tc_ib_ep_fail(ctx, ep, TC_ERR_PEER_FAILED, "failed the challenge: its MAC does not "
                          "prove the job secret (wrong secret: another job, or not a tcomms "
                          "peer)");
            return;
        }
        ep->hs_out_len = TC_AUTH_MAC_LEN;
        ep->hs_out_off = 0;
        ep->hs_in_got = 0;
        ep->hs_proved = 1;
        return;
    }
    if (tc_ib_get_u16(h + 76) != TC_IB_NRECV || tc_ib_get_u16(h + 78) != TC_IB_SLOT) {
        tc_ib_ep_fail(ctx, ep, TC_ERR_PEER_FAILED, "refused or broke the handshake: its receive "
                      "ring has another geometry (slots or slot size)");
        return;
    }
    tc_ib_ep_connected(ctx, ep, h, 1);
}

/* Active side: connect, write the hello and the proof, read the challenge and the reply. */
static void tc_ib_active_progress(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep)
{
    if (tc_deadline_passed(ep->hs_deadline)) {
        tc_ib_ep_fail(ctx, ep, TC_ERR_PEER_FAILED, "did not complete the handshake within %d ms",
                      TC_IB_HS_TIMEOUT_MS);
        return;
    }
    struct pollfd pfd = {.fd = ep->fd, .events = POLLOUT | POLLIN};
    if (poll(&pfd, 1, 0) <= 0)
        return;
    int err = 0;
    socklen_t elen = sizeof(err);
    getsockopt(ep->fd, SOL_SOCKET, SO_ERROR, &err, &elen);
    if (err != 0) {
        tc_ib_ep_fail(ctx, ep, TC_ERR_PEER_FAILED, "could not be reached for the handshake: %s",
                      strerror(err));
        return;
    }
    for (int i = 0; i < 4 && ep->state == TC_IB_EP_CONNECTING && !ep->hs_wait_ready && ep->fd >= 0;
         i++) {
        while (ep->hs_out_off < ep->hs_out_len) {
            ssize_t n = send(ep->fd, ep->hs_out + ep->hs_out_off, ep->hs_out_len - ep->hs_out_off,
                             MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n < 0 && (errno == EAGAIN || errno == EINTR || errno == ENOTCONN))
                return;
            if (n < 0) {
                tc_ib_ep_fail(ctx, ep, TC_ERR_PEER_FAILED, "handshake send failed: %s",
                              strerror(errno));
                return;
            }
            ep->hs_out_off += (size_t)n;
        }
        /* a refusal is the 24-byte header; else the challenge, then the reply */
        size_t want = TC_IB_HDR_LEN;
        if (ep->hs_in_got >= TC_IB_HDR_LEN && tc_ib_get_u16(ep->hs_in + 6) == 0)
            want = ep->hs_proved ? TC_IB_HS_LEN : TC_IB_CHAL_LEN;
        int r = tc_ib_read_some(ep->fd, ep->hs_in, want, &ep->hs_in_got);
        if (r < 0) {
            tc_ib_ep_fail(ctx, ep, TC_ERR_PEER_FAILED, "closed the handshake connection %s",
                          ep->hs_proved ? "after the proof" : "before its challenge");
            return;
        }
        if (r == 0)
            return;
        const unsigned char *h = ep->hs_in;
        if (tc_ib_get_u32(h) != TC_IB_HS_MAGIC || tc_ib_get_u16(h + 4) != TC_IB_HS_VERSION) {
            tc_ib_ep_fail(ctx, ep, TC_ERR_PROTOCOL, "refused or broke the handshake: not a "
                          "tcomms ib handshake of this version");
            return;
        }
        if (tc_ib_get_u16(h + 6) != 0) {
            tc_ib_ep_fail(ctx, ep, TC_ERR_PEER_FAILED, "refused the handshake: %s",
                          tc_ib_hs_result_string(tc_ib_get_u16(h + 6)));
            return;
        }
        if (want == TC_IB_HDR_LEN)
            continue; /* the header says more follows */
        tc_ib_active_on_answer(ctx, ep);
    }
}

void tc_ib_hs_start(tc_ib_ctx_t *ctx, tc_ib_ep_t *ep)
{
    tc_ib_hs_fill(ctx, ep, ep->hs_hello, ep->super.peer_id);
    tc_auth_nonce(ep->hs_hello + TC_IB_HS_LEN);
    memcpy(ep->hs_out, ep->hs_hello, TC_IB_HELLO_LEN);
    ep->hs_out_len = TC_IB_HELLO_LEN;
    ep->hs_out_off = 0;
    ep->hs_in_got = 0;
    ep->hs_proved = 0;
    ep->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (ep->fd < 0) {
        tc_ib_ep_fail(ctx, ep, TC_ERR_NO_RESOURCE, "handshake socket: %s", strerror(errno));
    } else if (connect(ep->fd, (struct sockaddr *)&ep->peer_sa, sizeof(ep->peer_sa)) != 0 &&
               errno != EINPROGRESS) {
        tc_ib_ep_fail(ctx, ep, TC_ERR_PEER_FAILED, "could not be reached for the handshake: "
                      "connect: %s", strerror(errno));
    }
}

void tc_ib_handshake_progress(tc_ib_ctx_t *ctx)
{
    if (ctx->nwaiting > 0 || ctx->accepted != NULL)
        tc_ib_passive_progress(ctx);
    for (tc_ib_ep_t *ep = ctx->eps; ep != NULL; ep = ep->next)
        if (ep->state == TC_IB_EP_CONNECTING && ep->fd >= 0) {
            if (ep->hs_wait_ready)
                tc_ib_ready_progress(ctx, ep);
            else
                tc_ib_active_progress(ctx, ep);
        }
}
