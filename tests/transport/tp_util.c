#include "tp_util.h"

#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcomms/base/config.h"
#include "tcomms/base/time.h"

#define GUARD 64
#define GUARD_BYTE 0xA5

tc_status_t tc_tpt_ctx_try(const tc_tp_ops_t *ops, uint64_t id, const char *secret,
                           const char *hints, tc_tp_ctx_t **ctx_p)
{
    tc_hints_t h;
    tc_hints_init(&h);
    tc_status_t st = hints ? tc_hints_parse(&h, hints) : TC_OK;
    if (st == TC_OK) {
        tc_tp_ctx_params_t params = TC_TP_CTX_PARAMS_INIT;
        params.self_id = id;
        params.secret = secret;
        params.secret_len = secret ? strlen(secret) : 0;
        params.hints = hints ? &h : NULL;
        st = tc_tp_ctx_create(ops, &params, ctx_p);
    }
    tc_hints_free(&h);
    return st;
}

tc_tp_ctx_t *tc_tpt_ctx_new(const tc_tp_ops_t *ops, uint64_t id, const char *secret,
                            const char *hints)
{
    tc_tp_ctx_t *ctx = NULL;
    tc_status_t st = tc_tpt_ctx_try(ops, id, secret, hints, &ctx);
    if (st != TC_OK)
        print_error("ctx_create: %s: %s\n", tc_status_string(st), tc_last_error());
    assert_int_equal(st, TC_OK);
    assert_non_null(ctx);
    return ctx;
}

size_t tc_tpt_addr(tc_tp_ctx_t *ctx, unsigned char addr[TP_ADDR_MAX])
{
    size_t len = 0;
    assert_int_equal(tc_tp_addr_pack(ctx, addr, TP_ADDR_MAX, &len), TC_OK);
    assert_true(len > 0 && len <= TP_ADDR_MAX);
    return len;
}

void tc_tpt_pair_connect(tp_pair_t *pair, unsigned char addr[2][TP_ADDR_MAX], const size_t len[2])
{
    for (int i = 0; i < 2; i++)
        assert_int_equal(tc_tp_ep_connect(pair->ctx[i], (uint64_t)(1 - i), addr[1 - i], len[1 - i],
                                          &pair->ep[i]),
                         TC_OK);
}

void tc_tpt_pair_open(tp_pair_t *pair, const tc_tp_ops_t *ops, const char *secret,
                      const char *hints)
{
    unsigned char addr[2][TP_ADDR_MAX];
    size_t len[2];
    for (int i = 0; i < 2; i++) {
        pair->ctx[i] = tc_tpt_ctx_new(ops, (uint64_t)i, secret, hints);
        len[i] = tc_tpt_addr(pair->ctx[i], addr[i]);
    }
    tc_tpt_pair_connect(pair, addr, len);
}

void tc_tpt_pair_up(tp_pair_t *pair, int timeout_ms)
{
    for (int i = 0; i < 2; i++) {
        tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_recv(pair->ep[1 - i], 999, NULL, 0, &r), TC_OK);
        assert_int_equal(tc_tp_send(pair->ep[i], 999, NULL, 0, &s), TC_OK);
        assert_int_equal(tc_tpt_wait_req(pair->ctx, 2, &r, timeout_ms), TC_OK);
        assert_int_equal(tc_tpt_wait_req(pair->ctx, 2, &s, timeout_ms), TC_OK);
    }
}

void tc_tpt_pair_close(tp_pair_t *pair)
{
    for (int i = 0; i < 2; i++) {
        tc_tp_ep_close(pair->ep[i]);
        tc_tp_ctx_destroy(pair->ctx[i]);
    }
}

static void tp_round(tc_tp_ctx_t *const *ctxs, int n, int left_ms)
{
    int total = 0;
    for (int i = 0; i < n; i++) {
        int c = tc_tp_progress(ctxs[i]);
        assert_true(c >= 0);
        total += c;
    }
    /* one context: sleep in wait(); several: just yield so none starves */
    if (total == 0 && n == 1)
        assert_int_equal(tc_tp_wait(ctxs[0], left_ms < 10 ? left_ms : 10), TC_OK);
    else if (total == 0)
        sched_yield();
}

tc_status_t tc_tpt_wait_req(tc_tp_ctx_t *const *ctxs, int n, tc_tp_req_t *req, int timeout_ms)
{
    uint64_t deadline = tc_deadline_after_ms((uint64_t)timeout_ms);
    while (req->status == TC_INPROGRESS && !tc_deadline_passed(deadline))
        tp_round(ctxs, n, tc_deadline_left_ms(deadline));
    return req->status;
}

tc_status_t tc_tpt_wait_failed(tc_tp_ctx_t *const *ctxs, int n, tc_tp_ep_t *ep, int timeout_ms)
{
    uint64_t deadline = tc_deadline_after_ms((uint64_t)timeout_ms);
    while (ep->failed == TC_OK && !tc_deadline_passed(deadline))
        tp_round(ctxs, n, tc_deadline_left_ms(deadline));
    return ep->failed;
}

void tc_tpt_spin(tc_tp_ctx_t *const *ctxs, int n, int ms)
{
    uint64_t deadline = tc_deadline_after_ms((uint64_t)ms);
    while (!tc_deadline_passed(deadline))
        tp_round(ctxs, n, tc_deadline_left_ms(deadline));
}

tc_status_t tc_tpt_wait_bare(tc_tp_ctx_t *ctx, tc_tp_req_t *req, int timeout_ms, int idle_ms)
{
    uint64_t deadline = tc_deadline_after_ms((uint64_t)timeout_ms);
    while (req->status == TC_INPROGRESS && !tc_deadline_passed(deadline))
        if (tc_tp_progress(ctx) == 0)
            tc_tp_wait(ctx, idle_ms);
    return req->status;
}

void tc_tpt_fill(unsigned char *buf, size_t len, uint64_t seed)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = tc_tpt_pattern(seed, i);
}

size_t tc_tpt_check(const unsigned char *buf, size_t len, uint64_t seed)
{
    for (size_t i = 0; i < len; i++)
        if (buf[i] != tc_tpt_pattern(seed, i))
            return i;
    return len;
}

unsigned char *tc_tpt_guarded_alloc(size_t cap)
{
    unsigned char *raw = malloc(cap + 2 * GUARD);
    assert_non_null(raw);
    memset(raw, GUARD_BYTE, cap + 2 * GUARD);
    return raw + GUARD;
}

void tc_tpt_guarded_check_free(unsigned char *buf, size_t cap)
{
    unsigned char *raw = buf - GUARD;
    for (size_t i = 0; i < GUARD; i++) {
        assert_int_equal(raw[i], GUARD_BYTE);
        assert_int_equal(buf[cap + i], GUARD_BYTE);
    }
    free(raw);
}

void tc_tpt_transfer(tp_pair_t *p, int from, uint64_t tag, const unsigned char *src, size_t len,
                     uint64_t seed, int recv_first)
{
    int to = 1 - from;
    unsigned char *dst = tc_tpt_guarded_alloc(len);
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
    if (recv_first)
        assert_int_equal(tc_tp_recv(p->ep[to], tag, dst, len, &r), TC_OK);
    assert_int_equal(tc_tp_send(p->ep[from], tag, src, len, &s), TC_OK);
    if (!recv_first) {
        assert_int_equal(tc_tpt_wait_req(p->ctx, 2, &s, TP_WAIT_MS),
                         TC_OK); /* buffered unexpected */
        assert_int_equal(tc_tp_recv(p->ep[to], tag, dst, len, &r), TC_OK);
    }
    assert_int_equal(tc_tpt_wait_req(p->ctx, 2, &r, TP_WAIT_MS), TC_OK);
    assert_int_equal(tc_tpt_wait_req(p->ctx, 2, &s, TP_WAIT_MS), TC_OK);
    assert_int_equal(r.bytes, len);
    assert_int_equal(s.bytes, len);
    assert_int_equal(tc_tpt_check(dst, len, seed), len);
    tc_tpt_guarded_check_free(dst, len);
}

/* One message of tc_tpt_many_in_flight, in both directions (index: the sending side). */
typedef struct tp_msg {
    uint64_t tag, seed[2];
    unsigned char *sbuf[2], *rbuf[2];
    tc_tp_req_t sreq[2], rreq[2];
} tp_msg_t;

/* Post the receives of messages [@p lo, @p hi) of tag order @p order (3 tags, mod 3). */
static void tp_post_recvs(tp_pair_t *p, tp_msg_t *m, const size_t *len, int lo, int hi,
                          const int order[3])
{
    for (int d = 0; d < 2; d++)
        for (int t = 0; t < 3; t++)
            for (int i = lo; i < hi; i++)
                if (m[i].tag == (uint64_t)order[t])
                    assert_int_equal(
                        tc_tp_recv(p->ep[1 - d], m[i].tag, m[i].rbuf[d], len[i], &m[i].rreq[d]),
                        TC_OK);
}

void tc_tpt_many_in_flight(tp_pair_t *p, int n, const size_t *len, int spin_ms)
{
    tp_msg_t *m = calloc((size_t)n, sizeof(*m));
    assert_non_null(m);
    int count[3] = {0, 0, 0};
    for (int i = 0; i < n; i++) {
        m[i].tag = (uint64_t)((i * 7 + i / 5) % 3);
        int seq = count[m[i].tag]++;
        for (int d = 0; d < 2; d++) {
            /* content identifies (direction, tag, index within the tag) */
            m[i].seed[d] = (uint64_t)(d * 100000) + m[i].tag * 1000 + (uint64_t)seq;
            m[i].sbuf[d] = malloc(len[i] + 1);
            assert_non_null(m[i].sbuf[d]);
            m[i].rbuf[d] = tc_tpt_guarded_alloc(len[i]);
            tc_tpt_fill(m[i].sbuf[d], len[i], m[i].seed[d]);
            m[i].sreq[d] = m[i].rreq[d] = (tc_tp_req_t)TC_TP_REQ_INIT;
        }
    }
    static const int first[3] = {2, 1, 0}, second[3] = {1, 2, 0};
    tp_post_recvs(p, m, len, 0, n / 2, first);
    for (int i = 0; i < n; i++)
        for (int d = 0; d < 2; d++)
            assert_int_equal(tc_tp_send(p->ep[d], m[i].tag, m[i].sbuf[d], len[i], &m[i].sreq[d]),
                             TC_OK);
    tc_tpt_spin(p->ctx, 2, spin_ms);
    /* the second half: some buffered whole, some still arriving, claimed in another order */
    tp_post_recvs(p, m, len, n / 2, n, second);
    for (int d = 0; d < 2; d++) {
        for (int i = 0; i < n; i++) {
            assert_int_equal(tc_tpt_wait_req(p->ctx, 2, &m[i].rreq[d], TP_WAIT_MS), TC_OK);
            assert_int_equal(tc_tpt_wait_req(p->ctx, 2, &m[i].sreq[d], TP_WAIT_MS), TC_OK);
            assert_int_equal(m[i].rreq[d].bytes, len[i]);
            assert_int_equal(tc_tpt_check(m[i].rbuf[d], len[i], m[i].seed[d]), len[i]);
            tc_tpt_guarded_check_free(m[i].rbuf[d], len[i]);
            free(m[i].sbuf[d]);
        }
    }
    free(m);
}

void tc_tpt_cancel_filling(tp_pair_t *p, tc_tp_req_t *r, tc_tp_req_t *s, unsigned char *dst,
                           size_t len, int timeout_ms, int spin_ms, size_t stride)
{
    assert_int_equal(p->ep[1]->ops->cancel(p->ep[1], r), TC_OK);
    assert_int_equal(r->status, TC_ERR_ABORTED);
    memset(dst, 0xee, len);
    assert_int_equal(tc_tpt_wait_req(p->ctx, 2, s, timeout_ms), TC_OK);
    tc_tpt_spin(p->ctx, 2, spin_ms);
    for (size_t i = 0; i < len; i += stride)
        assert_int_equal(dst[i], 0xee);
}

static int tp_fd_all(int fd, char *p, size_t len, int out)
{
    while (len > 0) {
        ssize_t n = out ? write(fd, p, len) : read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int tc_tpt_write_all(int fd, const void *buf, size_t len)
{
    return tp_fd_all(fd, (char *)buf, len, 1); /* only read from: the cast is safe */
}

int tc_tpt_read_all(int fd, void *buf, size_t len)
{
    return tp_fd_all(fd, buf, len, 0);
}

pid_t tc_tpt_fork(int (*body)(void *arg, int in, int out), void *arg, int *in_p, int *out_p)
{
    int to_child[2], from_child[2];
    assert_int_equal(pipe(to_child), 0);
    assert_int_equal(pipe(from_child), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(to_child[1]);
        close(from_child[0]);
        alarm(120); /* a stuck child never outlives the test */
        _exit(body(arg, to_child[0], from_child[1]));
    }
    close(to_child[0]);
    close(from_child[1]);
    *in_p = from_child[0];
    *out_p = to_child[1];
    return pid;
}

int tc_tpt_reap(pid_t pid, int timeout_ms)
{
    uint64_t deadline = tc_deadline_after_ms((uint64_t)timeout_ms);
    int st = 0;
    while (!tc_deadline_passed(deadline)) {
        if (waitpid(pid, &st, WNOHANG) == pid)
            return st;
        tc_sleep_ns(1000000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return -1;
}

int tc_tpt_swap_addr(int in, int out, const unsigned char *addr, size_t len,
                     unsigned char peer[TP_ADDR_MAX], size_t *peer_len)
{
    uint64_t len64 = len, peer_len64 = 0;
    if (tc_tpt_write_all(out, &len64, 8) || tc_tpt_write_all(out, addr, len))
        return -1;
    if (tc_tpt_read_all(in, &peer_len64, 8) || peer_len64 > TP_ADDR_MAX ||
        tc_tpt_read_all(in, peer, (size_t)peer_len64))
        return -1;
    *peer_len = (size_t)peer_len64;
    return 0;
}

int tc_tpt_exchange(const tc_tp_ops_t *ops, uint64_t self, uint64_t peer, const char *secret,
                    const char *hints, int in, int out, tc_tp_ctx_t **ctx_p, tc_tp_ep_t **ep_p)
{
    tc_tp_ctx_t *ctx = NULL;
    tc_tp_ep_t *ep = NULL;
    unsigned char addr[TP_ADDR_MAX], peer_addr[TP_ADDR_MAX];
    size_t len = 0, peer_len = 0;
    if (tc_tpt_ctx_try(ops, self, secret, hints, &ctx) != TC_OK)
        goto fail;
    if (tc_tp_addr_pack(ctx, addr, sizeof(addr), &len) != TC_OK)
        goto fail;
    if (tc_tpt_swap_addr(in, out, addr, len, peer_addr, &peer_len) != 0)
        goto fail;
    if (tc_tp_ep_connect(ctx, peer, peer_addr, peer_len, &ep) != TC_OK)
        goto fail;
    *ctx_p = ctx;
    *ep_p = ep;
    return 0;
fail:
    fprintf(stderr, "tc_tpt_exchange (id %llu): %s\n", (unsigned long long)self, tc_last_error());
    tc_tp_ctx_destroy(ctx);
    return -1;
}

tc_status_t tc_tpt_sum_fn(void *arg, size_t off, const void *data, size_t len)
{
    tc_tpt_sum_sink_t *k = arg;
    const unsigned char *d = data;
    if (off != k->next || off % k->unit != 0 || len == 0 ||
        (off + len != k->end && len % k->unit != 0) ||
        (uintptr_t)data % (k->unit < 16 ? k->unit : 16) != 0)
        k->bad = 1;
    if (off >= k->fail_at)
        return tc_error_set(TC_ERR_UNSUPPORTED, "the consumer refuses the piece at %zu", off);
    for (size_t i = 0; i < len; i++)
        k->out[off + i] = (unsigned char)(k->local[off + i] + d[i]);
    k->next = off + len;
    k->pieces++;
    return TC_OK;
}

void tc_tpt_check_sum(const unsigned char *out, const unsigned char *local, size_t n, size_t cap,
                      uint64_t seed, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (out[i] != (unsigned char)(local[i] + tc_tpt_pattern(seed, i)))
            fail_msg("%s: byte %zu is 0x%02x, expected 0x%02x", what, i, out[i],
                     (unsigned char)(local[i] + tc_tpt_pattern(seed, i)));
    for (size_t i = n; i < cap + 64; i++)
        if (out[i] != 0xA5)
            fail_msg("%s: byte %zu past the message was written", what, i);
}

size_t tc_tpt_one_sum(tp_pair_t *p, size_t len, size_t cap, size_t unit, int unexpected,
                      uint64_t seed, int wait_ms)
{
    size_t n = len <= cap ? len : cap;
    unsigned char *src = malloc(len + 1), *local = malloc(cap + 1), *out = malloc(cap + 64);
    assert_true(src && local && out);
    tc_tpt_fill(src, len, seed);
    tc_tpt_fill(local, cap, seed + 1000);
    memset(out, 0xA5, cap + 64);
    tc_tpt_sum_sink_t k = {local, out, unit, 0, 0, SIZE_MAX, 0, n};
    tc_tp_sink_t sink = {tc_tpt_sum_fn, &k, unit};
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
    assert_true(tc_tp_has_recv_sink(p->ep[1]));
    if (unexpected) { /* the send may wait for the receive (single copy): do not wait for it */
        assert_int_equal(tc_tp_send(p->ep[0], 9, src, len, &s), TC_OK);
        tc_tpt_spin(p->ctx, 2, 2);
        assert_int_equal(tc_tp_recv_sink(p->ep[1], 9, &sink, cap, &r), TC_OK);
    } else {
        assert_int_equal(tc_tp_recv_sink(p->ep[1], 9, &sink, cap, &r), TC_OK);
        assert_int_equal(tc_tp_send(p->ep[0], 9, src, len, &s), TC_OK);
    }
    assert_int_equal(tc_tpt_wait_req(p->ctx, 2, &r, wait_ms),
                     len <= cap ? TC_OK : TC_ERR_TRUNCATED);
    assert_int_equal(tc_tpt_wait_req(p->ctx, 2, &s, wait_ms), TC_OK);
    assert_int_equal(r.bytes, n);
    assert_int_equal(k.bad, 0);
    assert_int_equal(k.next, n);
    char what[96];
    snprintf(what, sizeof(what), "%zu bytes into %zu, unit %zu%s", len, cap, unit,
             unexpected ? ", unexpected" : "");
    tc_tpt_check_sum(out, local, n, cap, seed, what);
    free(src);
    free(local);
    free(out);
    return k.pieces;
}

/* Progress @p n contexts until the probe of @p tag on @p ep finds a message (asserted within
 * TP_WAIT_MS); returns its length. */
static uint64_t probe_until_found(tc_tp_ctx_t *const *ctxs, int n, tc_tp_ep_t *ep, uint64_t tag)
{
    uint64_t deadline = tc_deadline_after_ms(TP_WAIT_MS), len = UINT64_MAX;
    int found = 0;
    for (;;) {
        assert_int_equal(tc_tp_probe(ep, tag, &found, &len), TC_OK);
        if (found || tc_deadline_passed(deadline))
            break;
        tp_round(ctxs, n, 10);
    }
    assert_true(found);
    return len;
}

void tc_tpt_unexpected_burst(tp_pair_t *p, int n, size_t len, uint64_t seed, int wait_ms)
{
    unsigned char *src = malloc((size_t)n * len), *dst = malloc((size_t)n * len);
    tc_tp_req_t *s = calloc((size_t)n, sizeof(*s)), *r = calloc((size_t)n, sizeof(*r));
    assert_true(src && dst && s && r);
    tc_tpt_fill(src, (size_t)n * len, seed);
    memset(dst, 0, (size_t)n * len);
    for (int i = 0; i < n; i++) {
        s[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_send(p->ep[0], 100 + (uint64_t)i, src + (size_t)i * len, len, &s[i]),
                         TC_OK);
    }
    for (int i = 0; i < n; i++)
        assert_int_equal(tc_tpt_wait_req(p->ctx, 2, &s[i], wait_ms), TC_OK);
    /* every message read into an unexpected record before the first receive (a fixed spin of
     * 2 ms left some unread on a loaded machine, whose records the earlier ones then served) */
    if (!p->ep[1]->ops->probe)
        tc_tpt_spin(p->ctx, 2, 2);
    for (int i = 0; p->ep[1]->ops->probe && i < n; i++)
        (void)probe_until_found(p->ctx, 2, p->ep[1], 100 + (uint64_t)i);
    for (int i = 0; i < n; i++) {
        r[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_recv(p->ep[1], 100 + (uint64_t)i, dst + (size_t)i * len, len, &r[i]),
                         TC_OK);
        assert_int_equal(tc_tpt_wait_req(p->ctx, 2, &r[i], wait_ms), TC_OK);
        assert_int_equal(r[i].bytes, len);
    }
    assert_memory_equal(dst, src, (size_t)n * len);
    free(src);
    free(dst);
    free(s);
    free(r);
}

static int drop_even(void *arg, uint64_t tag)
{
    (void)arg;
    return tag % 2 == 0;
}

void tc_tpt_discard_check(tp_pair_t *p, size_t len, int wait_ms)
{
    enum { N = 6 };
    unsigned char *src = malloc(N * len), *dst = malloc(N * len);
    tc_tp_req_t s[N], r[N];
    assert_true(src && dst);
    tc_tpt_fill(src, N * len, 41);
    memset(dst, 0, N * len);
    for (int i = 0; i < N; i++) {
        s[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_send(p->ep[0], 300 + (uint64_t)i, src + (size_t)i * len, len, &s[i]),
                         TC_OK);
    }
    /* freed as they arrive whole (one still arriving is not), then no more */
    int freed = 0;
    for (int k = 0; k < wait_ms && freed < N / 2; k++) {
        freed += tc_tp_discard(p->ep[1], drop_even, NULL);
        if (freed < N / 2)
            tc_tpt_spin(p->ctx, 2, 1);
    }
    assert_int_equal(freed, N / 2);
    assert_int_equal(tc_tp_discard(p->ep[1], drop_even, NULL), 0);
    for (int i = 0; i < N; i++) {
        r[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_recv(p->ep[1], 300 + (uint64_t)i, dst + (size_t)i * len, len, &r[i]),
                         TC_OK);
    }
    tc_tpt_spin(p->ctx, 2, 5);
    for (int i = 0; i < N; i++) {
        if (i % 2 == 0) { /* dropped: nothing comes */
            assert_int_equal(r[i].status, TC_INPROGRESS);
            assert_int_equal(p->ep[1]->ops->cancel(p->ep[1], &r[i]), TC_OK);
            continue;
        }
        assert_int_equal(tc_tpt_wait_req(p->ctx, 2, &r[i], wait_ms), TC_OK);
        assert_memory_equal(dst + (size_t)i * len, src + (size_t)i * len, len);
    }
    /* every send completes, the dropped ones too: an announced message's sender is told that
     * nothing will read it */
    for (int i = 0; i < N; i++)
        assert_int_equal(tc_tpt_wait_req(p->ctx, 2, &s[i], wait_ms), TC_OK);
    free(src);
    free(dst);
}

static void probe_none(tc_tp_ep_t *ep, uint64_t tag)
{
    int found = -1;
    uint64_t len = 0;
    assert_int_equal(tc_tp_probe(ep, tag, &found, &len), TC_OK);
    assert_int_equal(found, 0);
}

/* Receive @p len bytes of tag @p tag on @p ep (already arrived or arriving) and check them; from
 * the moment it is posted, the probe no longer finds that message, even while it arrives
 * (it may find the next one of the tag, of @p next_len bytes, when that differs). */
static void probe_take(tc_tp_ctx_t *const *ctxs, int n, tc_tp_ep_t *ep, uint64_t tag, size_t len,
                       size_t next_len, uint64_t seed)
{
    unsigned char *dst = tc_tpt_guarded_alloc(len);
    tc_tp_req_t r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(ep, tag, dst, len, &r), TC_OK);
    int found = 0;
    uint64_t flen = 0;
    assert_int_equal(tc_tp_probe(ep, tag, &found, &flen), TC_OK);
    if (found && len != next_len)
        assert_int_equal(flen, next_len);
    assert_int_equal(tc_tpt_wait_req(ctxs, n, &r, TP_WAIT_MS), TC_OK);
    assert_int_equal(r.bytes, len);
    assert_int_equal(tc_tpt_check(dst, len, seed), len);
    tc_tpt_guarded_check_free(dst, len);
}

static void probe_check(tc_tp_ctx_t *const *ctxs, int n, tc_tp_ep_t *tx, tc_tp_ep_t *rx,
                        size_t len, size_t len2, uint64_t seed)
{
    const uint64_t tag = 7000 + seed;
    unsigned char *a = malloc(len + 1), *b = malloc(len2 + 1), *c = malloc(1);
    assert_true(a && b && c);
    tc_tpt_fill(a, len, seed);
    tc_tpt_fill(b, len2, seed + 1);
    tc_tpt_fill(c, 1, seed + 2);
    probe_none(rx, tag);
    tc_tp_req_t s[3] = {TC_TP_REQ_INIT, TC_TP_REQ_INIT, TC_TP_REQ_INIT};
    assert_int_equal(tc_tp_send(tx, tag, a, len, &s[0]), TC_OK);
    assert_int_equal(tc_tp_send(tx, tag, b, len2, &s[1]), TC_OK);
    assert_int_equal(tc_tp_send(tx, tag + 1, c, 1, &s[2]), TC_OK);
    assert_int_equal(probe_until_found(ctxs, n, rx, tag), len);
    probe_none(rx, tag + 2);
    if (tx != rx)
        probe_none(tx, tag); /* the sender's side has nothing of its own */
    probe_take(ctxs, n, rx, tag, len, len2, seed);
    assert_int_equal(probe_until_found(ctxs, n, rx, tag), len2);
    probe_take(ctxs, n, rx, tag, len2, SIZE_MAX, seed + 1);
    probe_none(rx, tag);
    assert_int_equal(probe_until_found(ctxs, n, rx, tag + 1), 1);
    probe_take(ctxs, n, rx, tag + 1, 1, SIZE_MAX, seed + 2);
    probe_none(rx, tag + 1);
    for (int i = 0; i < 3; i++)
        assert_int_equal(tc_tpt_wait_req(ctxs, n, &s[i], TP_WAIT_MS), TC_OK);
    free(a);
    free(b);
    free(c);
}

void tc_tpt_probe_check(tp_pair_t *p, size_t len, size_t len2, uint64_t seed)
{
    probe_check(p->ctx, 2, p->ep[0], p->ep[1], len, len2, seed);
}

void tc_tpt_probe_check_self(tc_tp_ctx_t *ctx, tc_tp_ep_t *ep)
{
    probe_check(&ctx, 1, ep, ep, 100, 3000, 1);
    probe_check(&ctx, 1, ep, ep, 0, 1u << 20, 2);
}

/* A second post of @p req, still pending with tag @p tag, is refused with the peer and tag named,
 * and leaves it pending. */
static void repost_refused(tc_status_t st, tc_tp_req_t *req, uint64_t peer, uint64_t tag)
{
    char want[96];
    assert_int_equal(st, TC_ERR_INVALID_STATE);
    snprintf(want, sizeof(want), "peer %llu (tag %llu): request already pending",
             (unsigned long long)peer, (unsigned long long)tag);
    assert_non_null(strstr(tc_last_error(), want));
    assert_int_equal(req->status, TC_INPROGRESS);
}

void tc_tpt_repost_check(tc_tp_ctx_t *const *ctxs, int n, tc_tp_ep_t *from, tc_tp_ep_t *to)
{
    size_t len = 16u << 20; /* more than socket buffers hold: the send stays pending */
    unsigned char *src = malloc(len), *dst = malloc(len), a[4] = {1, 2, 3, 4}, b[4] = {0};
    assert_true(src && dst);
    tc_tpt_fill(src, len, 41);
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT, s2 = TC_TP_REQ_INIT, r2 = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(from, 79, src, len, &s), TC_OK);
    assert_int_equal(s.status, TC_INPROGRESS); /* no receive for it yet */
    repost_refused(tc_tp_send(from, 80, a, sizeof(a), &s), &s, from->peer_id, 80);
    assert_int_equal(tc_tp_recv(to, 77, b, sizeof(b), &r), TC_OK);
    repost_refused(tc_tp_recv(to, 78, b, sizeof(b), &r), &r, to->peer_id, 78);
    /* both still work, once each */
    assert_int_equal(tc_tp_recv(to, 79, dst, len, &r2), TC_OK);
    assert_int_equal(tc_tp_send(from, 77, a, sizeof(a), &s2), TC_OK);
    assert_int_equal(tc_tpt_wait_req(ctxs, n, &r2, TP_WAIT_MS), TC_OK);
    assert_int_equal(tc_tpt_wait_req(ctxs, n, &s, TP_WAIT_MS), TC_OK);
    assert_int_equal(tc_tpt_wait_req(ctxs, n, &r, TP_WAIT_MS), TC_OK);
    assert_int_equal(tc_tpt_wait_req(ctxs, n, &s2, TP_WAIT_MS), TC_OK);
    assert_int_equal(r2.bytes, len);
    assert_int_equal(tc_tpt_check(dst, len, 41), len);
    assert_memory_equal(b, a, sizeof(a));
    /* completed requests are posted again without TC_TP_REQ_INIT */
    memset(b, 0, sizeof(b));
    assert_int_equal(tc_tp_recv(to, 81, b, sizeof(b), &r), TC_OK);
    assert_int_equal(tc_tp_send(from, 81, a, sizeof(a), &s), TC_OK);
    assert_int_equal(tc_tpt_wait_req(ctxs, n, &r, TP_WAIT_MS), TC_OK);
    assert_int_equal(tc_tpt_wait_req(ctxs, n, &s, TP_WAIT_MS), TC_OK);
    assert_memory_equal(b, a, sizeof(a));
    free(src);
    free(dst);
}
