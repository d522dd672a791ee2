/* Bursts of one-sided operations over TCP (tcp_tx.c holds them for one write): what is held
 * and when it goes out, seen on a raw socket without progressing the backend; a target that
 * answers a burst of puts; a target lost, or the endpoint closed, with requests held; and
 * bursts between two contexts checked against a model of the window. The wire format is
 * spelled out in tcp_util.h, independently of the backend's sources. */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>

#include <cmocka.h>

#include "tcomms/base/status.h"
#include "tcomms/base/time.h"
#include "tcomms/transport/tcp.h"
#include "tcomms/transport/transport.h"
#include "tcp_util.h"
#include "tp_util.h"

#define K_PUT 0xA1
#define K_GET 0xA2
#define K_SIG_ADD 0xA3
#define K_ACK 0xA5
#define K_GET_RESP 0xA6
/* What the backend holds at most before it writes (TC_TCP_HOLD_MAX), restated here: the test
 * checks the behaviour on both sides of it. */
#define HOLD_MAX 255

static uint64_t rd(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* Read @p want bytes from @p fd without progressing any context: only what the backend wrote
 * before returning can arrive. Returns the bytes read within @p ms. */
static size_t read_unprogressed(int fd, unsigned char *buf, size_t want, int ms)
{
    size_t got = 0;
    uint64_t deadline = tc_deadline_after_ms((uint64_t)ms);
    while (got < want) {
        ssize_t n = recv(fd, buf + got, want - got, MSG_DONTWAIT);
        if (n > 0) {
            got += (size_t)n;
            continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) || tc_deadline_passed(deadline))
            break;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        (void)poll(&pfd, 1, 5);
    }
    return got;
}

/* Nothing readable on @p fd (the backend holds what was posted). */
static void expect_nothing(int fd)
{
    unsigned char b;
    ssize_t n = recv(fd, &b, 1, MSG_DONTWAIT);
    assert_int_equal(n, -1);
    assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
}

/* ctx id 1 whose endpoint to id 0 leads to a raw socket (logged in as id 0), and a key of
 * the raw side's: the raw socket plays the target of ctx's operations. */
typedef struct raw_origin {
    tc_tp_ctx_t *ctx;
    tc_tp_ep_t *ep;
    int fd;
    tc_tp_rkey_t *rkey;
} raw_origin_t;

#define RAW_KEY 5
#define RAW_LEN 100000

static void raw_origin_open(raw_origin_t *o)
{
    o->ctx = tc_tcpt_ctx_new(1, NULL);
    o->ep = tc_tcpt_loop_ep(o->ctx, 0);
    o->fd = tc_tcpt_raw_hello(o->ctx, 0, 0, 1, 0, 0);
    unsigned char blob[32];
    tc_tcpt_le(blob, 0x4b524354u, 4); /* "TCRK" */
    tc_tcpt_le(blob + 4, 1, 4);
    tc_tcpt_le(blob + 8, 0, 8); /* owner: id 0, the raw peer */
    tc_tcpt_le(blob + 16, RAW_KEY, 8);
    tc_tcpt_le(blob + 24, RAW_LEN, 8);
    assert_int_equal(tc_tp_rkey_unpack(o->ep, blob, sizeof(blob), &o->rkey), TC_OK);
}

static void raw_origin_close(raw_origin_t *o)
{
    if (o->fd >= 0)
        close(o->fd);
    if (o->rkey != NULL)
        tc_tp_rkey_release(o->rkey);
    if (o->ep != NULL)
        tc_tp_ep_close(o->ep);
    tc_tp_ctx_destroy(o->ctx);
}

/* Put i of a burst: (7 * i) % 61 + 1 bytes at offset 64 * i, pattern seed 100 + i. */
static size_t put_len(int i)
{
    return (size_t)(7 * i) % 61 + 1;
}

/* Read puts @p from .. @p to - 1 (already written, so no progress) and check each header and
 * byte against what was posted. */
static void expect_puts(int fd, int from, int to)
{
    for (int i = from; i < to; i++) {
        unsigned char h[32], d[64], want[64];
        assert_int_equal(read_unprogressed(fd, h, 32, 5000), 32);
        assert_int_equal(rd(h), RAW_KEY);
        assert_int_equal(h[15], K_PUT);
        assert_int_equal(rd(h + 8) & ((1ull << 56) - 1), put_len(i));
        assert_int_equal(rd(h + 16), 64 * (uint64_t)i);
        assert_int_equal(rd(h + 24), 0);
        assert_int_equal(read_unprogressed(fd, d, put_len(i), 5000), put_len(i));
        tc_tpt_fill(want, put_len(i), 100 + (uint64_t)i);
        assert_memory_equal(d, want, put_len(i));
    }
}

/* Post puts @p from .. @p to - 1 of a burst (put_len(i) bytes of src[i] at offset 64 * i). */
static void post_puts(raw_origin_t *o, unsigned char (*src)[64], tc_tp_req_t *put, int from, int to)
{
    for (int i = from; i < to; i++)
        assert_int_equal(tc_tp_put(o->ep, src[i], put_len(i), o->rkey, 64 * (uint64_t)i, &put[i]),
                         TC_OK);
}

/* Puts posted while an answer is due are held: none reaches the socket until HOLD_MAX + 1
 * are queued (written together at once) or a progress pass writes them; every header and
 * byte as posted, in order; the acks complete every put. */
static void test_burst_held_then_written(void **state)
{
    (void)state;
    enum { N = HOLD_MAX + 9 };
    raw_origin_t o;
    raw_origin_open(&o);
    static unsigned char src[N][64];
    static tc_tp_req_t put[N];
    for (int i = 0; i < N; i++) {
        tc_tpt_fill(src[i], put_len(i), 100 + (uint64_t)i);
        put[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
    }
    /* nothing due: the first put is written at once (a lone operation's latency) */
    assert_int_equal(tc_tp_put(o.ep, src[0], put_len(0), o.rkey, 0, &put[0]), TC_OK);
    expect_puts(o.fd, 0, 1);
    /* its ack is due: the next HOLD_MAX are held */
    post_puts(&o, src, put, 1, HOLD_MAX + 1);
    expect_nothing(o.fd);
    /* one more: all of them at once, before the call returns */
    int i = HOLD_MAX + 1;
    assert_int_equal(tc_tp_put(o.ep, src[i], put_len(i), o.rkey, 64 * (uint64_t)i, &put[i]), TC_OK);
    expect_puts(o.fd, 1, HOLD_MAX + 2);
    expect_nothing(o.fd);
    /* the rest are held until a progress pass (a flush's) writes them */
    post_puts(&o, src, put, HOLD_MAX + 2, N);
    expect_nothing(o.fd);
    assert_true(tc_tp_progress(o.ctx) >= 0);
    expect_puts(o.fd, HOLD_MAX + 2, N);
    for (i = 0; i < N; i++)
        assert_int_equal(put[i].status, TC_INPROGRESS);
    /* acks counting the puts (1, then the other N - 1), in one write: every put completes, in
     * order */
    unsigned char acks[2][32];
    tc_tcpt_make_hdr32(acks[0], 0, K_ACK, 0, 0, 1);
    tc_tcpt_make_hdr32(acks[1], 0, K_ACK, 0, 0, N - 1);
    tc_tcpt_raw_send(o.fd, acks, sizeof(acks));
    assert_int_equal(tc_tpt_wait_req(&o.ctx, 1, &put[N - 1], 5000), TC_OK);
    for (i = 0; i < N; i++) {
        assert_int_equal(put[i].status, TC_OK);
        assert_int_equal(put[i].bytes, put_len(i));
    }
    assert_int_equal(o.ep->failed, TC_OK);
    raw_origin_close(&o);
}

/* tc_tp_defer: with nothing due the first puts are held too, until HOLD_MAX + 1 are queued or
 * a progress pass; that pass ends the defer, so the next lone put goes out at once again. */
static void test_deferred_burst_held(void **state)
{
    (void)state;
    enum { N = HOLD_MAX + 4 };
    raw_origin_t o;
    raw_origin_open(&o);
    static unsigned char src[N + 1][64];
    static tc_tp_req_t put[N + 1];
    for (int i = 0; i <= N; i++) {
        tc_tpt_fill(src[i], put_len(i), 100 + (uint64_t)i);
        put[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
    }
    tc_tp_defer(o.ep);
    post_puts(&o, src, put, 0, HOLD_MAX);
    expect_nothing(o.fd);
    int i = HOLD_MAX;
    assert_int_equal(tc_tp_put(o.ep, src[i], put_len(i), o.rkey, 64 * (uint64_t)i, &put[i]), TC_OK);
    expect_puts(o.fd, 0, HOLD_MAX + 1);
    post_puts(&o, src, put, HOLD_MAX + 1, N);
    expect_nothing(o.fd);
    assert_true(tc_tp_progress(o.ctx) >= 0);
    expect_puts(o.fd, HOLD_MAX + 1, N);
    unsigned char ack[32];
    tc_tcpt_make_hdr32(ack, 0, K_ACK, 0, 0, N);
    tc_tcpt_raw_send(o.fd, ack, sizeof(ack));
    assert_int_equal(tc_tpt_wait_req(&o.ctx, 1, &put[N - 1], 5000), TC_OK);
    for (i = 0; i < N; i++)
        assert_int_equal(put[i].status, TC_OK);
    /* the progress ended the defer, and nothing is due: a lone put goes out at once */
    assert_int_equal(tc_tp_put(o.ep, src[N], put_len(N), o.rkey, 64 * (uint64_t)N, &put[N]), TC_OK);
    expect_puts(o.fd, N, N + 1);
    raw_origin_close(&o);
}

/* The next 32 bytes on @p fd are an ADD signal of @p value at slot offset @p off. */
static void expect_signal(int fd, uint64_t off, uint64_t value)
{
    unsigned char h[32];
    assert_int_equal(read_unprogressed(fd, h, 32, 5000), 32);
    assert_int_equal(rd(h), RAW_KEY);
    assert_int_equal(h[15], K_SIG_ADD);
    assert_int_equal(rd(h + 16), off);
    assert_int_equal(rd(h + 24), value);
}

/* A signal (a target may wait for it calling nothing) goes out at once with the puts a defer
 * held before it, unless an answer is due: then it waits with them for the pass that answer
 * wakes. */
static void test_signal_writes_held_puts(void **state)
{
    (void)state;
    enum { N = 3 };
    raw_origin_t o;
    raw_origin_open(&o);
    static unsigned char src[2 * N][64];
    static tc_tp_req_t put[2 * N], sig[2];
    for (int i = 0; i < 2 * N; i++) {
        tc_tpt_fill(src[i], put_len(i), 100 + (uint64_t)i);
        put[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
    }
    sig[0] = sig[1] = (tc_tp_req_t)TC_TP_REQ_INIT;
    tc_tp_defer(o.ep); /* a burst: the puts are held with nothing due */
    post_puts(&o, src, put, 0, N);
    expect_nothing(o.fd);
    assert_int_equal(tc_tp_signal(o.ep, o.rkey, 8, TC_TP_SIGNAL_ADD, 7, &sig[0]), TC_OK);
    expect_puts(o.fd, 0, N);
    expect_signal(o.fd, 8, 7);
    expect_nothing(o.fd);
    /* their answers are due: the next puts and signal wait for a pass */
    post_puts(&o, src, put, N, 2 * N);
    assert_int_equal(tc_tp_signal(o.ep, o.rkey, 16, TC_TP_SIGNAL_ADD, 9, &sig[1]), TC_OK);
    expect_nothing(o.fd);
    assert_true(tc_tp_progress(o.ctx) >= 0);
    expect_puts(o.fd, N, 2 * N);
    expect_signal(o.fd, 16, 9);
    unsigned char ack[32];
    tc_tcpt_make_hdr32(ack, 0, K_ACK, 0, 0, 2 * N + 2);
    tc_tcpt_raw_send(o.fd, ack, sizeof(ack));
    assert_int_equal(tc_tpt_wait_req(&o.ctx, 1, &sig[1], 5000), TC_OK);
    for (int i = 0; i < 2 * N; i++)
        assert_int_equal(put[i].status, TC_OK);
    assert_int_equal(sig[0].status, TC_OK);
    raw_origin_close(&o);
}

/* Small sends are copied into one area per sendmsg (tcp_tx.c); the raw target reads nothing
 * until all are posted, so the socket takes only part of such an area and the rest is copied
 * again from where the write stopped: every header and byte arrives as posted, in order. */
static void test_copied_sends_resume_after_short_writes(void **state)
{
    (void)state;
    enum { N = 4000, LEN = 200, WIRE = 32 + LEN };
    raw_origin_t o;
    raw_origin_open(&o);
    static unsigned char src[N][LEN], got[WIRE];
    static tc_tp_req_t put[N];
    for (int i = 0; i < N; i++) {
        tc_tpt_fill(src[i], LEN, 500 + (uint64_t)i);
        put[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        uint64_t off = (uint64_t)i * LEN % (RAW_LEN - LEN);
        assert_int_equal(tc_tp_put(o.ep, src[i], LEN, o.rkey, off, &put[i]), TC_OK);
    }
    /* 928 KB posted: far more than the socket buffers take without a reader */
    for (int i = 0; i < N; i++) {
        assert_int_equal(tc_tcpt_raw_read(o.ctx, o.fd, got, WIRE, NULL), WIRE);
        assert_int_equal(rd(got), RAW_KEY);
        assert_int_equal(got[15], K_PUT);
        assert_int_equal(rd(got + 8) & ((1ull << 56) - 1), LEN);
        assert_int_equal(rd(got + 16), (uint64_t)i * LEN % (RAW_LEN - LEN));
        assert_int_equal(tc_tpt_check(got + 32, LEN, 500 + (uint64_t)i), LEN);
    }
    unsigned char ack[32];
    tc_tcpt_make_hdr32(ack, 0, K_ACK, 0, 0, N);
    tc_tcpt_raw_send(o.fd, ack, sizeof(ack));
    assert_int_equal(tc_tpt_wait_req(&o.ctx, 1, &put[N - 1], 5000), TC_OK);
    for (int i = 0; i < N; i++)
        assert_int_equal(put[i].status, TC_OK);
    raw_origin_close(&o);
}

/* A raw initiator sends a burst of puts (more than HOLD_MAX) and a get of the whole range in
 * one write: one ack counting the puts, then the get's answer with every put's bytes, checked
 * against a model of the window. */
static void test_target_answers_burst(void **state)
{
    (void)state;
    enum { N = 3 * HOLD_MAX + 5, W = 2 * N };
    tc_tp_ctx_t *ctx = tc_tcpt_ctx_new(1, NULL);
    tc_tp_ep_t *ep = tc_tcpt_loop_ep(ctx, 0);
    static unsigned char win[W], model[W];
    memset(win, 0, sizeof(win));
    memset(model, 0, sizeof(model));
    tc_tp_mem_t *mem = NULL;
    assert_int_equal(tc_tp_mem_reg(ctx, win, sizeof(win), &mem), TC_OK);
    unsigned char blob[32];
    size_t blen = 0;
    assert_int_equal(tc_tp_rkey_pack(mem, blob, sizeof(blob), &blen), TC_OK);
    uint64_t key = rd(blob + 16);
    int fd = tc_tcpt_raw_hello(ctx, 0, 0, 1, 0, 0);

    /* puts of 2 bytes at offset 2 * (N - 1 - i) (last to first), then the get */
    static unsigned char out[N * 34 + 32];
    unsigned char *p = out;
    for (int i = 0; i < N; i++) {
        uint64_t off = 2 * (uint64_t)(N - 1 - i);
        tc_tcpt_make_hdr32(p, key, K_PUT, 2, off, 0);
        p[32] = (unsigned char)(i * 3 + 1);
        p[33] = (unsigned char)(i * 5 + 2);
        model[off] = p[32];
        model[off + 1] = p[33];
        p += 34;
    }
    tc_tcpt_make_hdr32(p, key, K_GET, 0, 0, W);
    tc_tcpt_raw_send(fd, out, sizeof(out));

    static unsigned char in[32 + 32 + W];
    assert_int_equal(tc_tcpt_raw_read(ctx, fd, in, sizeof(in), NULL), sizeof(in));
    unsigned char expect[32];
    tc_tcpt_make_hdr32(expect, 0, K_ACK, 0, 0, N);
    assert_memory_equal(in, expect, 32);
    tc_tcpt_make_hdr32(expect, 0, K_GET_RESP, W, 0, 0);
    assert_memory_equal(in + 32, expect, 32);
    assert_memory_equal(in + 64, model, W);
    assert_memory_equal(win, model, W);
    assert_int_equal(ep->failed, TC_OK);
    close(fd);
    tc_tp_mem_dereg(mem);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);
}

/* The target closes its socket while puts are held: every put fails with PEER_FAILED, the
 * error names the peer; later posts fail at once. */
static void test_target_lost_with_puts_held(void **state)
{
    (void)state;
    enum { N = 10 };
    raw_origin_t o;
    raw_origin_open(&o);
    static unsigned char src[N][64];
    static tc_tp_req_t put[N];
    for (int i = 0; i < N; i++) {
        tc_tpt_fill(src[i], put_len(i), 100 + (uint64_t)i);
        put[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_put(o.ep, src[i], put_len(i), o.rkey, 64 * (uint64_t)i, &put[i]),
                         TC_OK);
    }
    expect_puts(o.fd, 0, 1);
    expect_nothing(o.fd); /* 1 .. N - 1 held */
    close(o.fd);
    o.fd = -1;
    assert_int_equal(tc_tpt_wait_failed(&o.ctx, 1, o.ep, 5000), TC_ERR_PEER_FAILED);
    assert_non_null(strstr(tc_tp_ep_error(o.ep), "peer 0 "));
    for (int i = 0; i < N; i++)
        assert_int_equal(put[i].status, TC_ERR_PEER_FAILED);
    tc_tp_req_t late = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_put(o.ep, src[0], 1, o.rkey, 0, &late), TC_ERR_PEER_FAILED);
    assert_int_equal(late.status, TC_ERR_PEER_FAILED);
    raw_origin_close(&o);
}

/* The endpoint is closed while puts are held: they end ABORTED, and the context's next
 * progress does not touch the freed endpoint (ASan). */
static void test_close_with_puts_held(void **state)
{
    (void)state;
    enum { N = 5 };
    raw_origin_t o;
    raw_origin_open(&o);
    static unsigned char src[64];
    static tc_tp_req_t put[N];
    tc_tpt_fill(src, sizeof(src), 9);
    for (int i = 0; i < N; i++) {
        put[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_put(o.ep, src, 8, o.rkey, 8 * (uint64_t)i, &put[i]), TC_OK);
    }
    tc_tp_rkey_release(o.rkey);
    o.rkey = NULL;
    tc_tp_ep_close(o.ep);
    o.ep = NULL;
    for (int i = 0; i < N; i++)
        assert_int_equal(put[i].status, TC_ERR_ABORTED);
    assert_true(tc_tp_progress(o.ctx) >= 0);
    assert_true(tc_tp_progress(o.ctx) >= 0);
    raw_origin_close(&o);
}

/* Two contexts: bursts of puts (1 byte to 40 KiB, more than HOLD_MAX each) to disjoint
 * ranges, a get of each range posted behind them and an ADD signal last; after the signal
 * completes, the window and every get equal the model byte by byte. */
static void test_bursts_against_model(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_tcpt_pair_open(&p, NULL);
    enum { N = HOLD_MAX + 7, SLOT = 48 * 1024, W = N * SLOT };
    unsigned char *win = calloc(1, W + 8), *model = calloc(1, W), *src = malloc(W);
    unsigned char *back = calloc(1, W);
    assert_non_null(win);
    assert_non_null(model);
    assert_non_null(src);
    assert_non_null(back);
    tc_tp_mem_t *mem = NULL;
    assert_int_equal(tc_tp_mem_reg(p.ctx[1], win, W + 8, &mem), TC_OK);
    unsigned char blob[64];
    size_t blen = 0;
    tc_tp_rkey_t *rkey = NULL;
    assert_int_equal(tc_tp_rkey_pack(mem, blob, sizeof(blob), &blen), TC_OK);
    assert_int_equal(tc_tp_rkey_unpack(p.ep[0], blob, blen, &rkey), TC_OK);
    static tc_tp_req_t put[N], get[N], sig;
    size_t len[N];
    for (int round = 0; round < 3; round++) {
        tc_tpt_fill(src, W, 1000 + (uint64_t)round);
        for (int i = 0; i < N; i++) {
            /* mostly small, every 9th large enough to be read straight into the window */
            len[i] = i % 9 == 4 ? 40000 + (size_t)i : (size_t)(i * 37 + round) % 300 + 1;
            size_t off = (size_t)i * SLOT + (size_t)round * 7;
            memcpy(model + off, src + off, len[i]);
            put[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
            assert_int_equal(tc_tp_put(p.ep[0], src + off, len[i], rkey, off, &put[i]), TC_OK);
        }
        for (int i = 0; i < N; i++) {
            size_t off = (size_t)i * SLOT;
            get[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
            assert_int_equal(tc_tp_get(p.ep[0], back + off, 41000, rkey, off, &get[i]), TC_OK);
        }
        sig = (tc_tp_req_t)TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_signal(p.ep[0], rkey, W, TC_TP_SIGNAL_ADD, 3, &sig), TC_OK);
        assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &sig, TP_WAIT_MS), TC_OK);
        for (int i = 0; i < N; i++) {
            assert_int_equal(put[i].status, TC_OK);
            assert_int_equal(get[i].status, TC_OK);
            size_t off = (size_t)i * SLOT;
            assert_memory_equal(back + off, model + off, 41000);
        }
        assert_memory_equal(win, model, W);
        assert_int_equal(tc_tp_signal_read(mem, W), 3 * (uint64_t)(round + 1));
    }
    tc_tp_rkey_release(rkey);
    tc_tp_mem_dereg(mem);
    free(win);
    free(model);
    free(src);
    free(back);
    tc_tpt_pair_close(&p);
}

int main(void)
{
    setenv("TC_SOCKET_IFNAME", "lo", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burst_held_then_written),
        cmocka_unit_test(test_target_answers_burst),
        cmocka_unit_test(test_deferred_burst_held),
        cmocka_unit_test(test_signal_writes_held_puts),
        cmocka_unit_test(test_copied_sends_resume_after_short_writes),
        cmocka_unit_test(test_target_lost_with_puts_held),
        cmocka_unit_test(test_close_with_puts_held),
        cmocka_unit_test(test_bursts_against_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
