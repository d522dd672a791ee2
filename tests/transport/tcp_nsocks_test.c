/* Several TCP sockets per peer: striped messages around the threshold and up to 64 MiB, many
 * in flight both ways with small ones between them, truncation, cancel, the socket count
 * (configuration, hints, the connecting side's choice), data sockets refused, chunks from a
 * hostile peer, and a data socket cut in the middle of a transfer.
 *
 * Raw-socket tests spell the wire format out here, independently of the backend's sources. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcomms/base/config.h"
#include "tcomms/base/status.h"
#include "tcomms/base/time.h"
#include "tcomms/transport/tcp.h"
#include "tcomms/transport/transport.h"
#include "tp_util.h"

#define WAIT_MS 30000
#define GUARD 64
#define GUARD_BYTE 0xA5
#define THR (256u << 10) /* the default striping threshold (TC_SOCKET_STRIPE_MIN) */

/* ---- helpers ---- */

static void set_nsocks(int n)
{
    char v[16];
    snprintf(v, sizeof(v), "%d", n);
    setenv("TC_SOCKET_NSOCKS", v, 1);
}

static void pair_open_n(tp_pair_t *p, int n0, int n1)
{
    unsigned char addr[2][64];
    size_t len[2];
    set_nsocks(n0);
    p->ctx[0] = tp_ctx_new(0, "stripes");
    set_nsocks(n1);
    p->ctx[1] = tp_ctx_new(1, "stripes");
    unsetenv("TC_SOCKET_NSOCKS");
    for (int i = 0; i < 2; i++)
        len[i] = tp_addr(p->ctx[i], addr[i]);
    for (int i = 0; i < 2; i++)
        assert_int_equal(
            tc_tp_ep_connect(p->ctx[i], (uint64_t)(1 - i), addr[1 - i], len[1 - i], &p->ep[i]),
            TC_OK);
}

static unsigned char *guarded_alloc(size_t cap)
{
    unsigned char *raw = malloc(cap + 2 * GUARD);
    assert_non_null(raw);
    memset(raw, GUARD_BYTE, cap + 2 * GUARD);
    return raw + GUARD;
}

static void guarded_check_free(unsigned char *buf, size_t cap)
{
    unsigned char *raw = buf - GUARD;
    for (size_t i = 0; i < GUARD; i++) {
        assert_int_equal(raw[i], GUARD_BYTE);
        assert_int_equal(buf[cap + i], GUARD_BYTE);
    }
    free(raw);
}

/* The IPv4 address a context listens on (from its packed address). */
static struct sockaddr_in listen_addr(tc_tp_ctx_t *ctx)
{
    unsigned char addr[64];
    tp_addr(ctx, addr);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    memcpy(&sa.sin_port, addr + 2, 2);
    memcpy(&sa.sin_addr.s_addr, addr + 4, 4);
    return sa;
}

/* Sockets of this process that @p ctx accepted (local address = its listening one, with a
 * peer), in ascending fd order; returns how many. */
static int accepted_fds(tc_tp_ctx_t *ctx, int *fds, int max)
{
    struct sockaddr_in want = listen_addr(ctx);
    int n = 0;
    for (int fd = 0; fd < 4096 && n < max; fd++) {
        struct sockaddr_in sa, peer;
        socklen_t len = sizeof(sa), plen = sizeof(peer);
        if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0 || sa.sin_family != AF_INET ||
            sa.sin_port != want.sin_port || sa.sin_addr.s_addr != want.sin_addr.s_addr)
            continue;
        if (getpeername(fd, (struct sockaddr *)&peer, &plen) != 0)
            continue; /* the listening socket */
        fds[n++] = fd;
    }
    return n;
}

/* Progress until @p ctx accepted @p want sockets (bounded); returns the count seen last. */
static int wait_accepted(tp_pair_t *p, int want)
{
    int fds[64];
    uint64_t deadline = tc_deadline_after_ms(5000);
    int n = accepted_fds(p->ctx[1], fds, 64);
    while (n != want && !tc_deadline_passed(deadline)) {
        tp_spin(p->ctx, 2, 5);
        n = accepted_fds(p->ctx[1], fds, 64);
    }
    return n;
}

static uint64_t bytes_received(int fd)
{
    struct tcp_info ti;
    socklen_t len = sizeof(ti);
    memset(&ti, 0, sizeof(ti));
    assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len), 0);
    return ti.tcpi_bytes_received;
}

/* Send @p len bytes of @p src (pattern @p seed) from side @p from and check them. */
static void transfer(tp_pair_t *p, int from, uint64_t tag, const unsigned char *src, size_t len,
                     uint64_t seed, int recv_first)
{
    int to = 1 - from;
    unsigned char *dst = guarded_alloc(len);
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
    if (recv_first)
        assert_int_equal(tc_tp_recv(p->ep[to], tag, dst, len, &r), TC_OK);
    assert_int_equal(tc_tp_send(p->ep[from], tag, src, len, &s), TC_OK);
    if (!recv_first) {
        assert_int_equal(tp_wait_req(p->ctx, 2, &s, WAIT_MS), TC_OK); /* buffered unexpected */
        assert_int_equal(tc_tp_recv(p->ep[to], tag, dst, len, &r), TC_OK);
    }
    assert_int_equal(tp_wait_req(p->ctx, 2, &r, WAIT_MS), TC_OK);
    assert_int_equal(tp_wait_req(p->ctx, 2, &s, WAIT_MS), TC_OK);
    assert_int_equal(r.bytes, len);
    assert_int_equal(s.bytes, len);
    assert_int_equal(tp_check(dst, len, seed), len);
    guarded_check_free(dst, len);
}

/* ---- configuration ---- */

static void expect_config_error(const char *var, const char *value, const char *hint)
{
    tc_hints_t hints;
    tc_hints_init(&hints);
    if (var != NULL)
        setenv(var, value, 1);
    else
        assert_int_equal(tc_hints_parse(&hints, hint), TC_OK);
    tc_tp_ctx_params_t params = TC_TP_CTX_PARAMS_INIT;
    params.hints = var != NULL ? NULL : &hints;
    tc_tp_ctx_t *ctx = NULL;
    assert_int_equal(tc_tp_ctx_create(&tc_tp_tcp_ops, &params, &ctx), TC_ERR_CONFIG);
    assert_null(ctx);
    const char *name = var != NULL ? var : strchr(hint, 't');
    char key[32];
    snprintf(key, sizeof(key), "%.*s", (int)strcspn(name, "="), name);
    if (strstr(tc_last_error(), key) == NULL)
        print_error("error text '%s' does not name %s\n", tc_last_error(), key);
    assert_non_null(strstr(tc_last_error(), key));
    if (var != NULL)
        unsetenv(var);
    tc_hints_free(&hints);
}

static void test_bad_config(void **state)
{
    (void)state;
    const char *bad[] = {"0", "17", "-1", "abc", "", "4x", " 2", "99999999999999999999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        expect_config_error("TC_SOCKET_NSOCKS", bad[i], NULL);
    expect_config_error(NULL, NULL, "tcp_nsocks=0");
    expect_config_error(NULL, NULL, "tcp_nsocks=many");
    expect_config_error("TC_SOCKET_STRIPE_MIN", "100", NULL);
    expect_config_error("TC_SOCKET_STRIPE_MIN", "lots", NULL);
    expect_config_error(NULL, NULL, "tcp_stripe_min=1K");
    /* the bounds themselves are fine */
    const char *good[] = {"1", "16"};
    for (size_t i = 0; i < 2; i++) {
        setenv("TC_SOCKET_NSOCKS", good[i], 1);
        tc_tp_ctx_t *ctx = tp_ctx_new(0, NULL);
        tc_tp_ctx_destroy(ctx);
    }
    unsetenv("TC_SOCKET_NSOCKS");
}

/* ---- sizes around the threshold, for 1, 2, 4 and 16 sockets ---- */

static void test_sizes(void **state)
{
    (void)state;
    static const int counts[] = {1, 2, 4, 16};
    const size_t sizes[] = {0, 1, THR - 1, THR, THR + 1, 2 * THR + 4095, (3u << 20) + 7, 64u << 20};
    const size_t nsizes = sizeof(sizes) / sizeof(sizes[0]);
    unsigned char *src = malloc(64u << 20);
    assert_non_null(src);
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        int n = counts[c];
        tp_pair_t p;
        pair_open_n(&p, n, n);
        tp_fill(src, 16, 1);
        transfer(&p, 0, 1, src, 16, 1, 1);
        assert_int_equal(wait_accepted(&p, n), n); /* every data socket is up */
        for (size_t i = 0; i < nsizes; i++) {
            size_t len = sizes[i];
            for (int from = 0; from < 2; from++) {
                uint64_t seed = 1000 * (uint64_t)n + 10 * i + (uint64_t)from;
                tp_fill(src, len, seed);
                transfer(&p, from, 100 + i, src, len, seed, 1);
                if (len <= (3u << 20) + 7) /* unexpected (buffered) as well */
                    transfer(&p, from, 200 + i, src, len, seed, 0);
            }
        }
        /* the 64 MiB messages went over every socket: each received far more than a chunk */
        int fds[32];
        assert_int_equal(accepted_fds(p.ctx[1], fds, 32), n);
        for (int k = 0; k < n; k++)
            assert_true(bytes_received(fds[k]) > (64u << 10));
        assert_int_equal(p.ep[0]->failed, TC_OK);
        assert_int_equal(p.ep[1]->failed, TC_OK);
        tp_pair_close(&p);
    }
    free(src);
}

/* ---- many messages in flight both ways, striped and small interleaved ---- */

#define NMSG 120
static void test_many_in_flight(void **state)
{
    (void)state;
    tp_pair_t p;
    pair_open_n(&p, 4, 4);
    static tc_tp_req_t sreq[2][NMSG], rreq[2][NMSG];
    static unsigned char *sbuf[2][NMSG], *rbuf[2][NMSG];
    size_t len[NMSG];
    uint64_t tag[NMSG];
    int seq_of[NMSG];
    int count[3] = {0, 0, 0};
    for (int i = 0; i < NMSG; i++) {
        tag[i] = (uint64_t)((i * 7 + i / 5) % 3);
        seq_of[i] = count[tag[i]]++;
        /* every third one striped (around and well above the threshold), the rest small */
        len[i] = i % 3 == 0 ? THR + (size_t)((i * 104729) % (3u << 20)) - (i % 2 ? 1 : 0)
                            : (size_t)((i * 131) % 3000);
    }
    for (int d = 0; d < 2; d++) {
        for (int i = 0; i < NMSG; i++) {
            sbuf[d][i] = malloc(len[i] + 1);
            rbuf[d][i] = guarded_alloc(len[i]);
            tp_fill(sbuf[d][i], len[i], (uint64_t)(d * 100000 + tag[i] * 1000 + seq_of[i]));
            tc_tp_req_t init = TC_TP_REQ_INIT;
            sreq[d][i] = rreq[d][i] = init;
        }
    }
    /* the first half of the receives posted before any send, in a tag-permuted order */
    for (int d = 0; d < 2; d++)
        for (int t = 2; t >= 0; t--)
            for (int i = 0; i < NMSG / 2; i++)
                if (tag[i] == (uint64_t)t)
                    assert_int_equal(
                        tc_tp_recv(p.ep[1 - d], tag[i], rbuf[d][i], len[i], &rreq[d][i]), TC_OK);
    for (int i = 0; i < NMSG; i++)
        for (int d = 0; d < 2; d++)
            assert_int_equal(tc_tp_send(p.ep[d], tag[i], sbuf[d][i], len[i], &sreq[d][i]), TC_OK);
    tp_spin(p.ctx, 2, 30);
    /* the second half: some buffered whole, some still arriving, claimed in another order */
    for (int d = 0; d < 2; d++)
        for (int t = 1; t < 4; t++)
            for (int i = NMSG / 2; i < NMSG; i++)
                if (tag[i] == (uint64_t)(t % 3))
                    assert_int_equal(
                        tc_tp_recv(p.ep[1 - d], tag[i], rbuf[d][i], len[i], &rreq[d][i]), TC_OK);
    for (int d = 0; d < 2; d++) {
        for (int i = 0; i < NMSG; i++) {
            assert_int_equal(tp_wait_req(p.ctx, 2, &rreq[d][i], WAIT_MS), TC_OK);
            assert_int_equal(tp_wait_req(p.ctx, 2, &sreq[d][i], WAIT_MS), TC_OK);
            assert_int_equal(rreq[d][i].bytes, len[i]);
            assert_int_equal(
                tp_check(rbuf[d][i], len[i], (uint64_t)(d * 100000 + tag[i] * 1000 + seq_of[i])),
                len[i]);
            guarded_check_free(rbuf[d][i], len[i]);
            free(sbuf[d][i]);
        }
    }
    tp_pair_close(&p);
}

/* ---- truncation of a striped message ---- */

/* mode 0: receive first; 1: buffered whole first; 2: claimed while arriving */
static void truncate_case(tp_pair_t *p, size_t len, size_t cap, int mode)
{
    unsigned char *src = malloc(len > THR + 5 ? len : THR + 5);
    tp_fill(src, len, len + cap);
    unsigned char *dst = guarded_alloc(cap);
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
    if (mode == 0)
        assert_int_equal(tc_tp_recv(p->ep[1], 11, dst, cap, &r), TC_OK);
    assert_int_equal(tc_tp_send(p->ep[0], 11, src, len, &s), TC_OK);
    if (mode == 1)
        assert_int_equal(tp_wait_req(p->ctx, 2, &s, WAIT_MS), TC_OK);
    if (mode == 2)
        for (int k = 0; k < 3; k++) {
            tc_tp_progress(p->ctx[0]);
            tc_tp_progress(p->ctx[1]);
        }
    if (mode != 0)
        assert_int_equal(tc_tp_recv(p->ep[1], 11, dst, cap, &r), TC_OK);
    assert_int_equal(tp_wait_req(p->ctx, 2, &r, WAIT_MS), TC_ERR_TRUNCATED);
    assert_int_equal(tp_wait_req(p->ctx, 2, &s, WAIT_MS), TC_OK);
    assert_int_equal(r.bytes, cap);
    assert_int_equal(tp_check(dst, cap, len + cap), cap);
    guarded_check_free(dst, cap);
    /* the next message on the same tag is whole: the rest was consumed */
    tp_fill(src, THR + 5, 77);
    transfer(p, 0, 11, src, THR + 5, 77, mode == 0);
    free(src);
}

static void test_truncation(void **state)
{
    (void)state;
    tp_pair_t p;
    pair_open_n(&p, 4, 4);
    size_t len = 5u << 20;
    const size_t caps[] = {0, 1000, THR, (1u << 20) + 3, len - 1};
    for (int mode = 0; mode < 3; mode++)
        for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
            truncate_case(&p, len, caps[i], mode);
    truncate_case(&p, THR, THR - 1, 0);
    assert_int_equal(p.ep[0]->failed, TC_OK);
    assert_int_equal(p.ep[1]->failed, TC_OK);
    tp_pair_close(&p);
}

/* ---- cancel ---- */

static void test_cancel(void **state)
{
    (void)state;
    tp_pair_t p;
    pair_open_n(&p, 4, 4);
    unsigned char tiny[16];
    tp_fill(tiny, sizeof(tiny), 3);
    transfer(&p, 0, 1, tiny, sizeof(tiny), 3, 1);
    assert_int_equal(wait_accepted(&p, 4), 4);
    size_t len = 64u << 20;
    unsigned char *big = malloc(len), *copy = malloc(len), *dst = malloc(len);
    tp_fill(big, len, 5);
    memcpy(copy, big, len);

    /* a striped send on the wire: cancelled at once, its chunks go on from a private copy */
    tc_tp_req_t s1 = TC_TP_REQ_INIT, r1 = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(p.ep[0], 1, big, len, &s1), TC_OK);
    tc_tp_progress(p.ctx[0]);
    tc_tp_progress(p.ctx[0]);
    assert_int_equal(s1.status, TC_INPROGRESS);
    assert_int_equal(p.ep[0]->ops->cancel(p.ep[0], &s1), TC_OK);
    assert_int_equal(s1.status, TC_ERR_ABORTED);
    memset(big, 0x5a, len); /* no longer read */
    assert_int_equal(tc_tp_recv(p.ep[1], 1, dst, len, &r1), TC_OK);
    assert_int_equal(tp_wait_req(p.ctx, 2, &r1, WAIT_MS), TC_OK);
    assert_int_equal(r1.bytes, len);
    assert_int_equal(tp_check(dst, len, 5), len);
    memcpy(big, copy, len);

    /* a receive being filled by a striped message: nothing more lands in its buffer */
    tc_tp_req_t s2 = TC_TP_REQ_INIT, r2 = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(p.ep[1], 2, dst, len, &r2), TC_OK);
    assert_int_equal(tc_tp_send(p.ep[0], 2, big, len, &s2), TC_OK);
    /* one round each: the socket buffers hold far less than 64 MiB */
    tc_tp_progress(p.ctx[0]);
    tc_tp_progress(p.ctx[1]);
    assert_int_equal(r2.status, TC_INPROGRESS);
    assert_int_equal(p.ep[1]->ops->cancel(p.ep[1], &r2), TC_OK);
    assert_int_equal(r2.status, TC_ERR_ABORTED);
    assert_int_equal(p.ep[1]->ops->cancel(p.ep[1], &r2), TC_ERR_INVALID_STATE);
    memset(dst, 0xee, len);
    assert_int_equal(tp_wait_req(p.ctx, 2, &s2, WAIT_MS), TC_OK);
    tp_spin(p.ctx, 2, 50);
    for (size_t i = 0; i < len; i += 4093)
        assert_int_equal(dst[i], 0xee);

    /* a receive that claimed a striped message still arriving, then cancelled */
    tc_tp_req_t s3 = TC_TP_REQ_INIT, r3 = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(p.ep[0], 3, big, len, &s3), TC_OK);
    tc_tp_progress(p.ctx[0]);
    tc_tp_progress(p.ctx[1]);
    assert_int_equal(tc_tp_recv(p.ep[1], 3, dst, len, &r3), TC_OK);
    if (r3.status == TC_INPROGRESS) {
        assert_int_equal(p.ep[1]->ops->cancel(p.ep[1], &r3), TC_OK);
        assert_int_equal(r3.status, TC_ERR_ABORTED);
        memset(dst, 0xee, len);
        assert_int_equal(tp_wait_req(p.ctx, 2, &s3, WAIT_MS), TC_OK);
        tp_spin(p.ctx, 2, 50);
        for (size_t i = 0; i < len; i += 4093)
            assert_int_equal(dst[i], 0xee);
    } else {
        assert_int_equal(r3.status, TC_OK);
    }

    /* the stream is intact: a striped and a small message arrive whole */
    transfer(&p, 0, 4, big, len, 5, 1);
    transfer(&p, 1, 5, tiny, sizeof(tiny), 3, 1);
    free(big);
    free(copy);
    free(dst);
    tp_pair_close(&p);
}

/* ---- the socket count: the connecting side decides, hints override the environment ---- */

static void test_count_agreement(void **state)
{
    (void)state;
    const int cases[][3] = {{4, 1, 4}, {1, 4, 1}, {2, 16, 2}, {16, 3, 16}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        tp_pair_t p;
        pair_open_n(&p, cases[c][0], cases[c][1]); /* id 0 connects */
        unsigned char *src = malloc(3u << 20);
        tp_fill(src, 3u << 20, c);
        transfer(&p, 0, 1, src, 3u << 20, c, 1);
        transfer(&p, 1, 1, src, 3u << 20, c, 1);
        assert_int_equal(wait_accepted(&p, cases[c][2]), cases[c][2]);
        tp_spin(p.ctx, 2, 30);
        int fds[32];
        assert_int_equal(accepted_fds(p.ctx[1], fds, 32), cases[c][2]);
        transfer(&p, 1, 2, src, 3u << 20, c, 0);
        free(src);
        tp_pair_close(&p);
    }

    /* tcp_nsocks=3 in the hints beats TC_SOCKET_NSOCKS=5 */
    setenv("TC_SOCKET_NSOCKS", "5", 1);
    tc_hints_t hints;
    tc_hints_init(&hints);
    assert_int_equal(tc_hints_parse(&hints, "tcp_nsocks=3"), TC_OK);
    tp_pair_t p;
    unsigned char addr[2][64];
    size_t alen[2];
    for (int i = 0; i < 2; i++) {
        tc_tp_ctx_params_t params = TC_TP_CTX_PARAMS_INIT;
        params.self_id = (uint64_t)i;
        params.hints = &hints;
        assert_int_equal(tc_tp_ctx_create(&tc_tp_tcp_ops, &params, &p.ctx[i]), TC_OK);
        alen[i] = tp_addr(p.ctx[i], addr[i]);
    }
    unsetenv("TC_SOCKET_NSOCKS");
    tc_hints_free(&hints);
    for (int i = 0; i < 2; i++)
        assert_int_equal(
            tc_tp_ep_connect(p.ctx[i], (uint64_t)(1 - i), addr[1 - i], alen[1 - i], &p.ep[i]),
            TC_OK);
    unsigned char tiny[8];
    tp_fill(tiny, sizeof(tiny), 9);
    transfer(&p, 0, 1, tiny, sizeof(tiny), 9, 1);
    assert_int_equal(wait_accepted(&p, 3), 3);
    tp_pair_close(&p);
}

/* The accepting side creates its endpoint late: primary and data sockets wait parked. */
static void test_parked(void **state)
{
    (void)state;
    set_nsocks(4);
    tc_tp_ctx_t *ctx[2] = {tp_ctx_new(0, "k"), tp_ctx_new(1, "k")};
    unsetenv("TC_SOCKET_NSOCKS");
    unsigned char addr[2][64];
    size_t alen[2] = {tp_addr(ctx[0], addr[0]), tp_addr(ctx[1], addr[1])};
    tc_tp_ep_t *ep0, *ep1;
    assert_int_equal(tc_tp_ep_connect(ctx[0], 1, addr[1], alen[1], &ep0), TC_OK);
    size_t len = 2u << 20;
    unsigned char *src = malloc(len), *dst = guarded_alloc(len);
    tp_fill(src, len, 44);
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(ep0, 5, src, len, &s), TC_OK);
    tp_spin(ctx, 2, 200); /* primary and data sockets accepted and parked by ctx[1] */
    tp_pair_t p = {{ctx[0], ctx[1]}, {ep0, NULL}};
    int fds[8];
    assert_int_equal(accepted_fds(ctx[1], fds, 8), 4);
    assert_int_equal(tc_tp_ep_connect(ctx[1], 0, addr[0], alen[0], &ep1), TC_OK);
    p.ep[1] = ep1;
    assert_int_equal(tc_tp_recv(ep1, 5, dst, len, &r), TC_OK);
    assert_int_equal(tp_wait_req(ctx, 2, &r, WAIT_MS), TC_OK);
    assert_int_equal(tp_wait_req(ctx, 2, &s, WAIT_MS), TC_OK);
    assert_int_equal(r.bytes, len);
    assert_int_equal(tp_check(dst, len, 44), len);
    guarded_check_free(dst, len);
    transfer(&p, 1, 6, src, len, 44, 1);
    free(src);
    tp_pair_close(&p);
}

/* ---- raw sockets: data sockets refused, chunks checked ---- */

static void le(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* hello: u32 "TCTP", u16 version 1, u16 flags, u64 sender, u64 receiver, 32-byte digest
 * (zero: no secret), then the u64 token when flags != 0 */
static size_t make_hello(unsigned char h[64], uint16_t flags, uint64_t sender, uint64_t receiver,
                         uint64_t token)
{
    memset(h, 0, 64);
    le(h, 0x50544354u, 4);
    le(h + 4, 1, 2);
    le(h + 6, flags, 2);
    le(h + 8, sender, 8);
    le(h + 16, receiver, 8);
    le(h + 56, token, 8);
    return flags != 0 ? 64 : 56;
}

/* large header: tag, 0xB1 << 56 | length, id, 0; chunk: id, 0xB2 << 56 | length, offset, 0 */
static void make_hdr32(unsigned char h[32], uint64_t a, int kind, uint64_t len, uint64_t c)
{
    le(h, a, 8);
    le(h + 8, (uint64_t)kind << 56 | len, 8);
    le(h + 16, c, 8);
    le(h + 24, 0, 8);
}

static int raw_connect(tc_tp_ctx_t *ctx)
{
    struct sockaddr_in sa = listen_addr(ctx);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

static void raw_send(int fd, const void *buf, size_t len)
{
    assert_int_equal(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
}

static size_t raw_read(tc_tp_ctx_t *ctx, int fd, unsigned char *buf, size_t want, int *eof_p)
{
    size_t got = 0;
    *eof_p = 0;
    uint64_t deadline = tc_deadline_after_ms(5000);
    while (got < want && !tc_deadline_passed(deadline)) {
        tc_tp_progress(ctx);
        ssize_t n = recv(fd, buf + got, want - got, MSG_DONTWAIT);
        if (n > 0) {
            got += (size_t)n;
        } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            *eof_p = 1;
            break;
        } else {
            tc_tp_wait(ctx, 5);
        }
    }
    return got;
}

/* Connect, send a hello, expect an ack with @p result (and EOF after a refusal). */
static int raw_hello(tc_tp_ctx_t *ctx, uint16_t flags, uint64_t sender, uint64_t receiver,
                     uint64_t token, unsigned result)
{
    int fd = raw_connect(ctx);
    unsigned char h[64], ack[24], expect[24], b[1];
    raw_send(fd, h, make_hello(h, flags, sender, receiver, token));
    int eof;
    assert_int_equal(raw_read(ctx, fd, ack, sizeof(ack), &eof), sizeof(ack));
    le(expect, 0x50544354u, 4);
    le(expect + 4, 1, 2);
    le(expect + 6, result, 2);
    le(expect + 8, receiver, 8);
    le(expect + 16, sender, 8);
    if (memcmp(ack, expect, sizeof(ack)) != 0)
        print_error("ack result %u, expected %u\n", ack[6] | ack[7] << 8, result);
    assert_memory_equal(ack, expect, sizeof(ack));
    if (result != 0) {
        assert_int_equal(raw_read(ctx, fd, b, 1, &eof), 0);
        assert_true(eof);
        close(fd);
        return -1;
    }
    return fd;
}

static void test_data_socket_refused(void **state)
{
    (void)state;
    tc_tp_ctx_t *ctx = tp_ctx_new(5, NULL);
    unsigned char self[64];
    size_t alen = tp_addr(ctx, self);
    tc_tp_ep_t *ep;
    assert_int_equal(tc_tp_ep_connect(ctx, 2, self, alen, &ep), TC_OK);
    const uint64_t token = 0x1234abcd5678ef90ULL;

    /* a data socket before any primary from id 2: result 7 */
    raw_hello(ctx, 0x8001, 2, 5, token, 7);
    /* the primary of id 2 asks for 4 sockets */
    int prim = raw_hello(ctx, 3, 2, 5, token, 0);
    /* data socket 1 with the primary's token is taken */
    int d1 = raw_hello(ctx, 0x8001, 2, 5, token, 0);
    raw_hello(ctx, 0x8001, 2, 5, token, 5);     /* again: duplicate */
    raw_hello(ctx, 0x8002, 2, 5, token + 1, 8); /* another token: stale or foreign */
    raw_hello(ctx, 0x8004, 2, 5, token, 9);     /* beyond the primary's 4 sockets */
    raw_hello(ctx, 0x8000, 2, 5, token, 6);     /* index 0 */
    raw_hello(ctx, 0x8010, 2, 5, token, 6);     /* index 16 */
    raw_hello(ctx, 0x4001, 2, 5, token, 6);     /* unknown flag */
    raw_hello(ctx, 0x8002, 3, 5, token, 7);     /* from an id without a primary */
    raw_hello(ctx, 0x0010, 1, 5, token, 6);     /* a primary asking for 17 sockets */
    raw_hello(ctx, 0x8002, 9, 5, token, 4);     /* from a larger id */
    assert_int_equal(ep->failed, TC_OK);

    /* A striped message of 300000 bytes, tag 9, id 1: its second chunk comes first, on the
     * data socket, before the header on the primary (the data socket waits for it). */
    size_t len = 300000;
    unsigned char *msg = malloc(len), h[32];
    tp_fill(msg, len, 21);
    unsigned char *dst = guarded_alloc(len);
    tc_tp_req_t r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(ep, 9, dst, len, &r), TC_OK);
    make_hdr32(h, 1, 0xB2, len - 100000, 100000);
    raw_send(d1, h, 32);
    raw_send(d1, msg + 100000, len - 100000);
    tp_spin(&ctx, 1, 50);
    assert_int_equal(r.status, TC_INPROGRESS);
    make_hdr32(h, 9, 0xB1, len, 1);
    raw_send(prim, h, 32);
    make_hdr32(h, 1, 0xB2, 100000, 0);
    raw_send(prim, h, 32);
    raw_send(prim, msg, 100000);
    assert_int_equal(tp_wait_req(&ctx, 1, &r, 5000), TC_OK);
    assert_int_equal(r.bytes, len);
    assert_int_equal(tp_check(dst, len, 21), len);
    guarded_check_free(dst, len);

    /* the endpoint answers on its primary (a small message, not striped) */
    tc_tp_req_t s = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(ep, 78, "back", 4, &s), TC_OK);
    assert_int_equal(tp_wait_req(&ctx, 1, &s, 5000), TC_OK);
    unsigned char out[20], expect[20];
    int eof;
    assert_int_equal(raw_read(ctx, prim, out, sizeof(out), &eof), sizeof(out));
    le(expect, 78, 8);
    le(expect + 8, 4, 8);
    memcpy(expect + 16, "back", 4);
    assert_memory_equal(out, expect, sizeof(out));

    /* the data socket is cut in the middle of a chunk: TC_ERR_PEER_FAILED naming the peer */
    tc_tp_req_t r2 = TC_TP_REQ_INIT;
    unsigned char *dst2 = guarded_alloc(len);
    assert_int_equal(tc_tp_recv(ep, 10, dst2, len, &r2), TC_OK);
    make_hdr32(h, 10, 0xB1, len, 2);
    raw_send(prim, h, 32);
    make_hdr32(h, 2, 0xB2, len, 0);
    raw_send(d1, h, 32);
    raw_send(d1, msg, 1000);
    tp_spin(&ctx, 1, 50);
    assert_int_equal(r2.status, TC_INPROGRESS);
    close(d1);
    assert_int_equal(tp_wait_req(&ctx, 1, &r2, 5000), TC_ERR_PEER_FAILED);
    assert_int_equal(ep->failed, TC_ERR_PEER_FAILED);
    const char *err = tc_tp_ep_error(ep);
    assert_non_null(strstr(err, "peer 2 (127.0.0.1:"));
    assert_non_null(strstr(err, "data socket 1 of 4 in the middle of a chunk (1000 of 300000"));
    assert_non_null(strstr(err, "1 receive pending"));
    guarded_check_free(dst2, len);
    close(prim);
    free(msg);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);
}

/* With a secret, a data socket carrying another digest is refused (result 3). */
static void test_data_socket_wrong_secret(void **state)
{
    (void)state;
    tc_tp_ctx_t *ctx = tp_ctx_new(1, "job-42");
    raw_hello(ctx, 0x8001, 0, 1, 77, 3);
    tc_tp_ctx_destroy(ctx);
}

/* A raw primary (one socket: chunks on the primary are still checked) sends @p frames. */
static void hostile_case(const unsigned char *frames, size_t len, const char *expect)
{
    tc_tp_ctx_t *ctx = tp_ctx_new(1, NULL);
    unsigned char self[64];
    size_t alen = tp_addr(ctx, self);
    tc_tp_ep_t *ep;
    assert_int_equal(tc_tp_ep_connect(ctx, 0, self, alen, &ep), TC_OK);
    unsigned char *dst = guarded_alloc(4096);
    tc_tp_req_t r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(ep, 9, dst, 4096, &r), TC_OK);
    int fd = raw_hello(ctx, 0, 0, 1, 0, 0);
    raw_send(fd, frames, len);
    assert_int_equal(tp_wait_failed(&ctx, 1, ep, 5000), TC_ERR_PROTOCOL);
    assert_int_equal(r.status, TC_ERR_PROTOCOL);
    if (strstr(tc_tp_ep_error(ep), expect) == NULL)
        print_error("'%s' lacks '%s'\n", tc_tp_ep_error(ep), expect);
    assert_non_null(strstr(tc_tp_ep_error(ep), expect));
    assert_non_null(strstr(tc_tp_ep_error(ep), "peer 0 (127.0.0.1:"));
    guarded_check_free(dst, 4096); /* nothing written outside the receive */
    close(fd);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);
}

static void test_hostile_chunks(void **state)
{
    (void)state;
    static unsigned char f[8192];
    memset(f, 0x33, sizeof(f));
    /* a chunk before its header */
    make_hdr32(f, 1, 0xB2, 64, 0);
    hostile_case(f, 32 + 64, "before its header");
    /* a chunk reaching past the end of the message (and of the receive) */
    make_hdr32(f, 9, 0xB1, 4096, 1);
    make_hdr32(f + 32, 1, 0xB2, 64, 4096 - 32);
    hostile_case(f, 64 + 64, "has fewer bytes left");
    /* chunks adding up to more than the message */
    make_hdr32(f, 9, 0xB1, 4096, 1);
    make_hdr32(f + 32, 1, 0xB2, 4000, 0);
    memset(f + 64, 0x44, 4000);
    make_hdr32(f + 64 + 4000, 1, 0xB2, 200, 3896);
    hostile_case(f, 64 + 4000 + 32, "has fewer bytes left");
    /* chunk lengths 0 and beyond 16 MiB, a chunk with a non-zero reserved word */
    make_hdr32(f, 9, 0xB1, 4096, 1);
    make_hdr32(f + 32, 1, 0xB2, 0, 0);
    hostile_case(f, 64, "malformed chunk");
    make_hdr32(f + 32, 1, 0xB2, (16u << 20) + 1, 0);
    hostile_case(f, 64, "malformed chunk");
    make_hdr32(f + 32, 1, 0xB2, 64, 0);
    le(f + 32 + 24, 1, 8);
    hostile_case(f, 64, "malformed chunk");
    /* headers: length 0, length beyond the maximum, an id that does not increase */
    make_hdr32(f, 9, 0xB1, 0, 1);
    hostile_case(f, 32, "out of bounds");
    make_hdr32(f, 9, 0xB1, (1ULL << 40) + 1, 1);
    hostile_case(f, 32, "out of bounds");
    make_hdr32(f, 8, 0xB1, 64, 5); /* tag 8: nobody waits for it, buffered */
    make_hdr32(f + 32, 5, 0xB2, 64, 0);
    memset(f + 64, 0x55, 64);
    make_hdr32(f + 128, 9, 0xB1, 64, 5);
    hostile_case(f, 160, "out of bounds");
    /* a chunk of a message already complete */
    make_hdr32(f + 128, 5, 0xB2, 64, 0);
    hostile_case(f, 160, "is not being received");
}

/* ---- a data socket cut in the middle of a striped transfer between two contexts ---- */

static void test_cut_data_socket(void **state)
{
    (void)state;
    tp_pair_t p;
    pair_open_n(&p, 4, 4);
    unsigned char tiny[8];
    tp_fill(tiny, sizeof(tiny), 1);
    transfer(&p, 0, 1, tiny, sizeof(tiny), 1, 1);
    assert_int_equal(wait_accepted(&p, 4), 4);
    int fds[8];
    assert_int_equal(accepted_fds(p.ctx[1], fds, 8), 4);
    size_t len = 64u << 20;
    unsigned char *src = malloc(len), *dst = malloc(len);
    tp_fill(src, 4096, 2);
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(p.ep[1], 2, dst, len, &r), TC_OK);
    assert_int_equal(tc_tp_send(p.ep[0], 2, src, len, &s), TC_OK);
    tc_tp_progress(p.ctx[0]);
    tc_tp_progress(p.ctx[1]);
    assert_int_equal(r.status, TC_INPROGRESS);
    /* the last accepted socket is a data socket (the primary came first) */
    assert_int_equal(shutdown(fds[3], SHUT_RDWR), 0);
    assert_int_equal(tp_wait_req(p.ctx, 2, &r, WAIT_MS), TC_ERR_PEER_FAILED);
    assert_int_equal(tp_wait_req(p.ctx, 2, &s, WAIT_MS), TC_ERR_PEER_FAILED);
    assert_int_equal(p.ep[1]->failed, TC_ERR_PEER_FAILED);
    assert_int_equal(p.ep[0]->failed, TC_ERR_PEER_FAILED);
    assert_non_null(strstr(tc_tp_ep_error(p.ep[1]), "peer 0 (127.0.0.1:"));
    assert_non_null(strstr(tc_tp_ep_error(p.ep[0]), "peer 1 (127.0.0.1:"));
    /* whichever side saw the cut first names the data socket; the other may see the primary
     * end, since that side then closes every socket */
    assert_true(strstr(tc_tp_ep_error(p.ep[0]), "data socket") != NULL ||
                strstr(tc_tp_ep_error(p.ep[1]), "data socket") != NULL);
    /* posts on the failed endpoints fail at once */
    tc_tp_req_t s2 = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(p.ep[0], 3, tiny, sizeof(tiny), &s2), TC_ERR_PEER_FAILED);
    free(src);
    free(dst);
    tp_pair_close(&p);
}

int main(void)
{
    setenv("TC_SOCKET_IFNAME", "lo", 1);
    unsetenv("TC_SOCKET_NSOCKS");
    unsetenv("TC_SOCKET_STRIPE_MIN");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_config),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_many_in_flight),
        cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_count_agreement),
        cmocka_unit_test(test_parked),
        cmocka_unit_test(test_data_socket_refused),
        cmocka_unit_test(test_data_socket_wrong_secret),
        cmocka_unit_test(test_hostile_chunks),
        cmocka_unit_test(test_cut_data_socket),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
