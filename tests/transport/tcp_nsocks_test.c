/* Several TCP sockets per peer: striped messages around the threshold and up to 64 MiB, many
 * in flight both ways with small ones between them, truncation, cancel, the socket count
 * (configuration, hints, the connecting side's choice), data sockets refused, chunks from a
 * hostile peer, and a data socket cut in the middle of a transfer.
 *
 * Raw-socket tests use the wire format spelled out in tcp_util.h, independently of the
 * backend's sources. */
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
#include "tcp_util.h"
#include "tp_util.h"

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
    unsigned char addr[2][TP_ADDR_MAX];
    size_t len[2];
    set_nsocks(n0);
    p->ctx[0] = tc_tcpt_ctx_new(0, "stripes");
    set_nsocks(n1);
    p->ctx[1] = tc_tcpt_ctx_new(1, "stripes");
    unsetenv("TC_SOCKET_NSOCKS");
    for (int i = 0; i < 2; i++)
        len[i] = tc_tpt_addr(p->ctx[i], addr[i]);
    tc_tpt_pair_connect(p, addr, len);
}

/* Sockets of this process that @p ctx accepted (local address = its listening one, with a
 * peer), in ascending fd order; returns how many. */
static int accepted_fds(tc_tp_ctx_t *ctx, int *fds, int max)
{
    struct sockaddr_in want = tc_tcpt_listen_addr(ctx);
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
        tc_tpt_spin(p->ctx, 2, 5);
        n = accepted_fds(p->ctx[1], fds, 64);
    }
    return n;
}

/* pair_open_n(@p n, @p n), then up: @p len bytes of pattern @p seed (left in @p tiny) went
 * 0 -> 1 and every data socket was accepted. */
static void pair_open_up(tp_pair_t *p, int n, unsigned char *tiny, size_t len, uint64_t seed)
{
    pair_open_n(p, n, n);
    tc_tpt_fill(tiny, len, seed);
    tc_tpt_transfer(p, 0, 1, tiny, len, seed, 1);
    assert_int_equal(wait_accepted(p, n), n); /* every data socket is up */
}

static uint64_t bytes_received(int fd)
{
    struct tcp_info ti;
    socklen_t len = sizeof(ti);
    memset(&ti, 0, sizeof(ti));
    assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len), 0);
    return ti.tcpi_bytes_received;
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
        tc_tp_ctx_t *ctx = tc_tcpt_ctx_new(0, NULL);
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
        uint64_t payload[2] = {0, 0}; /* bytes each side received */
        pair_open_up(&p, n, src, 16, 1);
        const uint64_t rx0[2] = {p.ep[0]->rx_bytes, p.ep[1]->rx_bytes};
        for (size_t i = 0; i < nsizes; i++) {
            size_t len = sizes[i];
            payload[0] += (len <= (3u << 20) + 7 ? 2 : 1) * (uint64_t)len;
            payload[1] += (len <= (3u << 20) + 7 ? 2 : 1) * (uint64_t)len;
            for (int from = 0; from < 2; from++) {
                uint64_t seed = 1000 * (uint64_t)n + 10 * i + (uint64_t)from;
                tc_tpt_fill(src, len, seed);
                tc_tpt_transfer(&p, from, 100 + i, src, len, seed, 1);
                if (len <= (3u << 20) + 7) /* unexpected (buffered) as well */
                    tc_tpt_transfer(&p, from, 200 + i, src, len, seed, 0);
            }
        }
        /* the 64 MiB messages went over every socket: each received far more than a chunk */
        int fds[32];
        assert_int_equal(accepted_fds(p.ctx[1], fds, 32), n);
        for (int k = 0; k < n; k++)
            assert_true(bytes_received(fds[k]) > (64u << 10));
        assert_int_equal(p.ep[0]->failed, TC_OK);
        assert_int_equal(p.ep[1]->failed, TC_OK);
        /* rx_bytes (the runtime's evidence that a peer lives) counts what arrived on
         * every socket: at least the payloads, at most them and a header each */
        for (int k = 0; k < 2; k++) {
            uint64_t got = p.ep[k]->rx_bytes - rx0[k];
            if (got < payload[k] || got > payload[k] + (1u << 20))
                fail_msg("%d sockets: side %d counted %llu bytes received, sent %llu", n, k,
                         (unsigned long long)got, (unsigned long long)payload[k]);
        }
        tc_tpt_pair_close(&p);
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
    size_t len[NMSG];
    /* every third one striped (around and well above the threshold), the rest small */
    for (int i = 0; i < NMSG; i++)
        len[i] = i % 3 == 0 ? THR + (size_t)((i * 104729) % (3u << 20)) - (i % 2 ? 1 : 0)
                            : (size_t)((i * 131) % 3000);
    tc_tpt_many_in_flight(&p, NMSG, len, 30);
    tc_tpt_pair_close(&p);
}

/* ---- truncation of a striped message ---- */

/* mode 0: receive first; 1: buffered whole first; 2: claimed while arriving */
static void truncate_case(tp_pair_t *p, size_t len, size_t cap, int mode)
{
    unsigned char *src = malloc(len > THR + 5 ? len : THR + 5);
    tc_tpt_fill(src, len, len + cap);
    unsigned char *dst = tc_tpt_guarded_alloc(cap);
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
    if (mode == 0)
        assert_int_equal(tc_tp_recv(p->ep[1], 11, dst, cap, &r), TC_OK);
    assert_int_equal(tc_tp_send(p->ep[0], 11, src, len, &s), TC_OK);
    if (mode == 1)
        assert_int_equal(tc_tpt_wait_req(p->ctx, 2, &s, TP_WAIT_MS), TC_OK);
    if (mode == 2)
        for (int k = 0; k < 3; k++) {
            tc_tp_progress(p->ctx[0]);
            tc_tp_progress(p->ctx[1]);
        }
    if (mode != 0)
        assert_int_equal(tc_tp_recv(p->ep[1], 11, dst, cap, &r), TC_OK);
    assert_int_equal(tc_tpt_wait_req(p->ctx, 2, &r, TP_WAIT_MS), TC_ERR_TRUNCATED);
    assert_int_equal(tc_tpt_wait_req(p->ctx, 2, &s, TP_WAIT_MS), TC_OK);
    assert_int_equal(r.bytes, cap);
    assert_int_equal(tc_tpt_check(dst, cap, len + cap), cap);
    tc_tpt_guarded_check_free(dst, cap);
    /* the next message on the same tag is whole: the rest was consumed */
    tc_tpt_fill(src, THR + 5, 77);
    tc_tpt_transfer(p, 0, 11, src, THR + 5, 77, mode == 0);
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
    tc_tpt_pair_close(&p);
}

/* ---- cancel ---- */

static void test_cancel(void **state)
{
    (void)state;
    tp_pair_t p;
    unsigned char tiny[16];
    pair_open_up(&p, 4, tiny, sizeof(tiny), 3);
    size_t len = 64u << 20;
    unsigned char *big = malloc(len), *copy = malloc(len), *dst = malloc(len);
    tc_tpt_fill(big, len, 5);
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
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &r1, TP_WAIT_MS), TC_OK);
    assert_int_equal(r1.bytes, len);
    assert_int_equal(tc_tpt_check(dst, len, 5), len);
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
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &s2, TP_WAIT_MS), TC_OK);
    tc_tpt_spin(p.ctx, 2, 50);
    for (size_t i = 0; i < len; i += 4093)
        assert_int_equal(dst[i], 0xee);

    /* a receive that claimed a striped message still arriving, then cancelled */
    tc_tp_req_t s3 = TC_TP_REQ_INIT, r3 = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(p.ep[0], 3, big, len, &s3), TC_OK);
    tc_tp_progress(p.ctx[0]);
    tc_tp_progress(p.ctx[1]);
    assert_int_equal(tc_tp_recv(p.ep[1], 3, dst, len, &r3), TC_OK);
    if (r3.status == TC_INPROGRESS)
        tc_tpt_cancel_filling(&p, &r3, &s3, dst, len, TP_WAIT_MS, 50, 4093);
    else
        assert_int_equal(r3.status, TC_OK);

    /* the stream is intact: a striped and a small message arrive whole */
    tc_tpt_transfer(&p, 0, 4, big, len, 5, 1);
    tc_tpt_transfer(&p, 1, 5, tiny, sizeof(tiny), 3, 1);
    free(big);
    free(copy);
    free(dst);
    tc_tpt_pair_close(&p);
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
        tc_tpt_fill(src, 3u << 20, c);
        tc_tpt_transfer(&p, 0, 1, src, 3u << 20, c, 1);
        tc_tpt_transfer(&p, 1, 1, src, 3u << 20, c, 1);
        assert_int_equal(wait_accepted(&p, cases[c][2]), cases[c][2]);
        tc_tpt_spin(p.ctx, 2, 30);
        int fds[32];
        assert_int_equal(accepted_fds(p.ctx[1], fds, 32), cases[c][2]);
        tc_tpt_transfer(&p, 1, 2, src, 3u << 20, c, 0);
        free(src);
        tc_tpt_pair_close(&p);
    }

    /* tcp_nsocks=3 in the hints beats TC_SOCKET_NSOCKS=5 */
    setenv("TC_SOCKET_NSOCKS", "5", 1);
    tp_pair_t p;
    tc_tpt_pair_open(&p, &tc_tp_tcp_ops, NULL, "tcp_nsocks=3");
    unsetenv("TC_SOCKET_NSOCKS");
    unsigned char tiny[8];
    tc_tpt_fill(tiny, sizeof(tiny), 9);
    tc_tpt_transfer(&p, 0, 1, tiny, sizeof(tiny), 9, 1);
    assert_int_equal(wait_accepted(&p, 3), 3);
    tc_tpt_pair_close(&p);
}

/* The accepting side creates its endpoint late: primary and data sockets wait parked. */
static void test_parked(void **state)
{
    (void)state;
    set_nsocks(4);
    tc_tp_ctx_t *ctx[2] = {tc_tcpt_ctx_new(0, "k"), tc_tcpt_ctx_new(1, "k")};
    unsetenv("TC_SOCKET_NSOCKS");
    unsigned char addr[2][64];
    size_t alen[2] = {tc_tpt_addr(ctx[0], addr[0]), tc_tpt_addr(ctx[1], addr[1])};
    tc_tp_ep_t *ep0, *ep1;
    assert_int_equal(tc_tp_ep_connect(ctx[0], 1, addr[1], alen[1], &ep0), TC_OK);
    size_t len = 2u << 20;
    unsigned char *src = malloc(len), *dst = tc_tpt_guarded_alloc(len);
    tc_tpt_fill(src, len, 44);
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(ep0, 5, src, len, &s), TC_OK);
    tc_tpt_spin(ctx, 2, 200); /* primary and data sockets accepted and parked by ctx[1] */
    tp_pair_t p = {{ctx[0], ctx[1]}, {ep0, NULL}};
    int fds[8];
    assert_int_equal(accepted_fds(ctx[1], fds, 8), 4);
    assert_int_equal(tc_tp_ep_connect(ctx[1], 0, addr[0], alen[0], &ep1), TC_OK);
    p.ep[1] = ep1;
    assert_int_equal(tc_tp_recv(ep1, 5, dst, len, &r), TC_OK);
    assert_int_equal(tc_tpt_wait_req(ctx, 2, &r, TP_WAIT_MS), TC_OK);
    assert_int_equal(tc_tpt_wait_req(ctx, 2, &s, TP_WAIT_MS), TC_OK);
    assert_int_equal(r.bytes, len);
    assert_int_equal(tc_tpt_check(dst, len, 44), len);
    tc_tpt_guarded_check_free(dst, len);
    tc_tpt_transfer(&p, 1, 6, src, len, 44, 1);
    free(src);
    tc_tpt_pair_close(&p);
}

/* ---- raw sockets: data sockets refused, chunks checked ---- */

static void test_data_socket_refused(void **state)
{
    (void)state;
    tc_tp_ctx_t *ctx = tc_tcpt_ctx_new(5, NULL);
    tc_tp_ep_t *ep = tc_tcpt_loop_ep(ctx, 2);
    const uint64_t token = 0x1234abcd5678ef90ULL;

    /* a data socket before any primary from id 2: result 7 */
    tc_tcpt_raw_hello(ctx, 0x8001, 2, 5, token, 7);
    /* the primary of id 2 asks for 4 sockets */
    int prim = tc_tcpt_raw_hello(ctx, 3, 2, 5, token, 0);
    /* data socket 1 with the primary's token is taken */
    int d1 = tc_tcpt_raw_hello(ctx, 0x8001, 2, 5, token, 0);
    tc_tcpt_raw_hello(ctx, 0x8001, 2, 5, token, 5);     /* again: duplicate */
    tc_tcpt_raw_hello(ctx, 0x8002, 2, 5, token + 1, 8); /* another token: stale or foreign */
    tc_tcpt_raw_hello(ctx, 0x8004, 2, 5, token, 9);     /* beyond the primary's 4 sockets */
    tc_tcpt_raw_hello(ctx, 0x8000, 2, 5, token, 6);     /* index 0 */
    tc_tcpt_raw_hello(ctx, 0x8010, 2, 5, token, 6);     /* index 16 */
    tc_tcpt_raw_hello(ctx, 0x4001, 2, 5, token, 6);     /* unknown flag */
    tc_tcpt_raw_hello(ctx, 0x8002, 3, 5, token, 7);     /* from an id without a primary */
    tc_tcpt_raw_hello(ctx, 0x0010, 1, 5, token, 6);     /* a primary asking for 17 sockets */
    tc_tcpt_raw_hello(ctx, 0x8002, 9, 5, token, 4);     /* from a larger id */
    assert_int_equal(ep->failed, TC_OK);

    /* A striped message of 300000 bytes, tag 9, id 1: its second chunk comes first, on the
     * data socket, before the header on the primary (the data socket waits for it). */
    size_t len = 300000;
    unsigned char *msg = malloc(len), h[32];
    tc_tpt_fill(msg, len, 21);
    unsigned char *dst = tc_tpt_guarded_alloc(len);
    tc_tp_req_t r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(ep, 9, dst, len, &r), TC_OK);
    tc_tcpt_make_hdr32(h, 1, 0xB2, len - 100000, 100000, 0);
    tc_tcpt_raw_send(d1, h, 32);
    tc_tcpt_raw_send(d1, msg + 100000, len - 100000);
    tc_tpt_spin(&ctx, 1, 50);
    assert_int_equal(r.status, TC_INPROGRESS);
    tc_tcpt_make_hdr32(h, 9, 0xB1, len, 1, 0);
    tc_tcpt_raw_send(prim, h, 32);
    tc_tcpt_make_hdr32(h, 1, 0xB2, 100000, 0, 0);
    tc_tcpt_raw_send(prim, h, 32);
    tc_tcpt_raw_send(prim, msg, 100000);
    assert_int_equal(tc_tpt_wait_req(&ctx, 1, &r, 5000), TC_OK);
    assert_int_equal(r.bytes, len);
    assert_int_equal(tc_tpt_check(dst, len, 21), len);
    tc_tpt_guarded_check_free(dst, len);

    /* the endpoint answers on its primary (a small message, not striped) */
    tc_tp_req_t s = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(ep, 78, "back", 4, &s), TC_OK);
    assert_int_equal(tc_tpt_wait_req(&ctx, 1, &s, 5000), TC_OK);
    tc_tcpt_expect_msg(ctx, prim, 78, "back", 4);

    /* the data socket is cut in the middle of a chunk: TC_ERR_PEER_FAILED naming the peer */
    tc_tp_req_t r2 = TC_TP_REQ_INIT;
    unsigned char *dst2 = tc_tpt_guarded_alloc(len);
    assert_int_equal(tc_tp_recv(ep, 10, dst2, len, &r2), TC_OK);
    tc_tcpt_make_hdr32(h, 10, 0xB1, len, 2, 0);
    tc_tcpt_raw_send(prim, h, 32);
    tc_tcpt_make_hdr32(h, 2, 0xB2, len, 0, 0);
    tc_tcpt_raw_send(d1, h, 32);
    tc_tcpt_raw_send(d1, msg, 1000);
    tc_tpt_spin(&ctx, 1, 50);
    assert_int_equal(r2.status, TC_INPROGRESS);
    close(d1);
    assert_int_equal(tc_tpt_wait_req(&ctx, 1, &r2, 5000), TC_ERR_PEER_FAILED);
    assert_int_equal(ep->failed, TC_ERR_PEER_FAILED);
    const char *err = tc_tp_ep_error(ep);
    assert_non_null(strstr(err, "peer 2 (127.0.0.1:"));
    assert_non_null(strstr(err, "data socket 1 of 4 in the middle of a chunk (1000 of 300000"));
    assert_non_null(strstr(err, "1 receive pending"));
    tc_tpt_guarded_check_free(dst2, len);
    close(prim);
    free(msg);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);
}

/* With a secret, a data socket carrying another digest is refused (result 3). */
static void test_data_socket_wrong_secret(void **state)
{
    (void)state;
    tc_tp_ctx_t *ctx = tc_tcpt_ctx_new(1, "job-42");
    tc_tcpt_raw_hello(ctx, 0x8001, 0, 1, 77, 3);
    tc_tp_ctx_destroy(ctx);
}

/* A raw primary (one socket: chunks on the primary are still checked) sends @p frames. */
static void hostile_case(const unsigned char *frames, size_t len, const char *expect)
{
    tc_tp_ctx_t *ctx = tc_tcpt_ctx_new(1, NULL);
    tc_tp_ep_t *ep = tc_tcpt_loop_ep(ctx, 0);
    unsigned char *dst = tc_tpt_guarded_alloc(4096);
    tc_tp_req_t r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(ep, 9, dst, 4096, &r), TC_OK);
    int fd = tc_tcpt_raw_hello(ctx, 0, 0, 1, 0, 0);
    tc_tcpt_raw_send(fd, frames, len);
    assert_int_equal(tc_tpt_wait_failed(&ctx, 1, ep, 5000), TC_ERR_PROTOCOL);
    assert_int_equal(r.status, TC_ERR_PROTOCOL);
    if (strstr(tc_tp_ep_error(ep), expect) == NULL)
        print_error("'%s' lacks '%s'\n", tc_tp_ep_error(ep), expect);
    assert_non_null(strstr(tc_tp_ep_error(ep), expect));
    assert_non_null(strstr(tc_tp_ep_error(ep), "peer 0 (127.0.0.1:"));
    tc_tpt_guarded_check_free(dst, 4096); /* nothing written outside the receive */
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
    tc_tcpt_make_hdr32(f, 1, 0xB2, 64, 0, 0);
    hostile_case(f, 32 + 64, "before its header");
    /* a chunk reaching past the end of the message (and of the receive) */
    tc_tcpt_make_hdr32(f, 9, 0xB1, 4096, 1, 0);
    tc_tcpt_make_hdr32(f + 32, 1, 0xB2, 64, 4096 - 32, 0);
    hostile_case(f, 64 + 64, "has fewer bytes left");
    /* chunks adding up to more than the message */
    tc_tcpt_make_hdr32(f, 9, 0xB1, 4096, 1, 0);
    tc_tcpt_make_hdr32(f + 32, 1, 0xB2, 4000, 0, 0);
    memset(f + 64, 0x44, 4000);
    tc_tcpt_make_hdr32(f + 64 + 4000, 1, 0xB2, 200, 3896, 0);
    hostile_case(f, 64 + 4000 + 32, "has fewer bytes left");
    /* chunk lengths 0 and beyond 16 MiB, a chunk with a non-zero reserved word */
    tc_tcpt_make_hdr32(f, 9, 0xB1, 4096, 1, 0);
    tc_tcpt_make_hdr32(f + 32, 1, 0xB2, 0, 0, 0);
    hostile_case(f, 64, "malformed chunk");
    tc_tcpt_make_hdr32(f + 32, 1, 0xB2, (16u << 20) + 1, 0, 0);
    hostile_case(f, 64, "malformed chunk");
    tc_tcpt_make_hdr32(f + 32, 1, 0xB2, 64, 0, 0);
    tc_tcpt_le(f + 32 + 24, 1, 8);
    hostile_case(f, 64, "malformed chunk");
    /* headers: length 0, length beyond the maximum, an id that does not increase */
    tc_tcpt_make_hdr32(f, 9, 0xB1, 0, 1, 0);
    hostile_case(f, 32, "out of bounds");
    tc_tcpt_make_hdr32(f, 9, 0xB1, (1ULL << 40) + 1, 1, 0);
    hostile_case(f, 32, "out of bounds");
    tc_tcpt_make_hdr32(f, 8, 0xB1, 64, 5, 0); /* tag 8: nobody waits for it, buffered */
    tc_tcpt_make_hdr32(f + 32, 5, 0xB2, 64, 0, 0);
    memset(f + 64, 0x55, 64);
    tc_tcpt_make_hdr32(f + 128, 9, 0xB1, 64, 5, 0);
    hostile_case(f, 160, "out of bounds");
    /* a chunk of a message already complete */
    tc_tcpt_make_hdr32(f + 128, 5, 0xB2, 64, 0, 0);
    hostile_case(f, 160, "is not being received");
}

/* ---- a data socket cut in the middle of a striped transfer between two contexts ---- */

static void test_cut_data_socket(void **state)
{
    (void)state;
    tp_pair_t p;
    unsigned char tiny[8];
    pair_open_up(&p, 4, tiny, sizeof(tiny), 1);
    int fds[8];
    assert_int_equal(accepted_fds(p.ctx[1], fds, 8), 4);
    size_t len = 64u << 20;
    unsigned char *src = malloc(len), *dst = malloc(len);
    tc_tpt_fill(src, 4096, 2);
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(p.ep[1], 2, dst, len, &r), TC_OK);
    assert_int_equal(tc_tp_send(p.ep[0], 2, src, len, &s), TC_OK);
    tc_tp_progress(p.ctx[0]);
    tc_tp_progress(p.ctx[1]);
    assert_int_equal(r.status, TC_INPROGRESS);
    /* the last accepted socket is a data socket (the primary came first) */
    assert_int_equal(shutdown(fds[3], SHUT_RDWR), 0);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &r, TP_WAIT_MS), TC_ERR_PEER_FAILED);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &s, TP_WAIT_MS), TC_ERR_PEER_FAILED);
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
    tc_tpt_pair_close(&p);
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
