/* The verbs backend against the emulated HCA (two contexts in one process, one thread or two),
 * and against the real libibverbs of this machine (which has no RDMA device). */
#include <arpa/inet.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ib_emu.h"
#include "tcomms/base/status.h"
#include "tcomms/base/time.h"
#include "tcomms/transport/ib.h"
#include "tcomms/transport/transport.h"

#define WAIT_MS 20000

typedef struct pair {
    tc_tp_ctx_t *ctx[2];
    tc_tp_ep_t *ep[2];
} pair_t;

static unsigned char pat(uint64_t seed, size_t i)
{
    uint64_t x = (seed + 1) * 0x9e3779b97f4a7c15ULL + i * 0xbf58476d1ce4e5b9ULL;
    return (unsigned char)((x >> 29) ^ (x >> 47) ^ i);
}

static void fill(unsigned char *b, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = pat(seed, i);
}

static size_t check(const unsigned char *b, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != pat(seed, i))
            return i;
    return n;
}

static tc_tp_ctx_t *ctx_new(uint64_t id, const char *secret)
{
    tc_tp_ctx_params_t p = TC_TP_CTX_PARAMS_INIT;
    p.self_id = id;
    p.secret = secret;
    p.secret_len = secret ? strlen(secret) : 0;
    tc_tp_ctx_t *ctx = NULL;
    tc_status_t st = tc_tp_ib_ctx_create_verbs(tc_ibemu_verbs(), &p, &ctx);
    if (st != TC_OK)
        print_error("%s\n", tc_last_error());
    assert_int_equal(st, TC_OK);
    return ctx;
}

static void spin_until(pair_t *p, volatile tc_status_t *st, int ms)
{
    uint64_t deadline = tc_deadline_after_ms((uint64_t)ms);
    while (*st == TC_INPROGRESS && !tc_deadline_passed(deadline)) {
        tc_tp_progress(p->ctx[0]);
        tc_tp_progress(p->ctx[1]);
    }
}

static void pair_open(pair_t *p, const char *s0, const char *s1)
{
    tc_ibemu_reset();
    unsigned char addr[2][64];
    size_t len[2];
    p->ctx[0] = ctx_new(0, s0);
    p->ctx[1] = ctx_new(1, s1);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(tc_tp_addr_pack(p->ctx[i], addr[i], sizeof(addr[i]), &len[i]), TC_OK);
        assert_int_equal(len[i], 32);
    }
    for (int i = 0; i < 2; i++)
        assert_int_equal(
            tc_tp_ep_connect(p->ctx[i], (uint64_t)(1 - i), addr[1 - i], len[1 - i], &p->ep[i]),
            TC_OK);
    /* Same secrets: run the handshake (hello, challenge, proof, reply, ready) until both
     * queue pairs are connected, so that tests start from connected endpoints. */
    if ((s0 == NULL && s1 == NULL) || (s0 != NULL && s1 != NULL && strcmp(s0, s1) == 0)) {
        uint64_t deadline = tc_deadline_after_ms(WAIT_MS);
        while (tc_ibemu_stats().rts_qps < 2 && !tc_deadline_passed(deadline)) {
            tc_tp_progress(p->ctx[0]);
            tc_tp_progress(p->ctx[1]);
        }
        assert_int_equal(tc_ibemu_stats().rts_qps, 2);
    }
}

/* A pair whose contexts cache registrations of transfers (TC_IB_REG_CACHE=1, not the default). */
static void pair_open_cached(pair_t *p)
{
    setenv("TC_IB_REG_CACHE", "1", 1);
    pair_open(p, NULL, NULL);
    unsetenv("TC_IB_REG_CACHE");
}

static void pair_close(pair_t *p)
{
    for (int i = 0; i < 2; i++) {
        tc_tp_ep_close(p->ep[i]);
        tc_tp_ctx_destroy(p->ctx[i]);
    }
    ib_emu_stats_t s = tc_ibemu_stats();
    assert_int_equal(s.live_qps, 0);
    assert_int_equal(s.live_mrs, 0);
    assert_int_equal(s.cq_overflow, 0);
}

/* ---- the real library: opened with dlopen, found here (libibverbs-dev brings it) ---- */
static void test_real_library_loaded(void **state)
{
    (void)state;
    const char *where = NULL;
    assert_int_equal(tc_tp_ib_verbs_library(&where), 1);
    assert_non_null(where);
    assert_non_null(strstr(where, "libibverbs"));
    assert_non_null(tc_ib_verbs_real());
}

/* ---- the real library: no device on this machine ---- */
static void test_real_no_device(void **state)
{
    (void)state;
    tc_tp_caps_t caps = {.size = sizeof(caps)};
    assert_int_equal(tc_tp_ib_ops.query(&caps), TC_OK);
    if (caps.available) {
        print_message("an RDMA device is present: the no-device checks do not apply\n");
        return;
    }
    assert_non_null(strstr(tc_last_error(), "no InfiniBand/RoCE device"));
    assert_int_equal(caps.one_sided, 1);
    tc_tp_ctx_params_t p = TC_TP_CTX_PARAMS_INIT;
    tc_tp_ctx_t *ctx = NULL;
    assert_int_equal(tc_tp_ctx_create(&tc_tp_ib_ops, &p, &ctx), TC_ERR_UNSUPPORTED);
    assert_null(ctx);
    assert_non_null(strstr(tc_last_error(), "no InfiniBand/RoCE device: "));
}

static void test_emu_no_device_port_down(void **state)
{
    (void)state;
    tc_ibemu_reset();
    tc_ibemu_set_no_device(1);
    tc_tp_caps_t caps = {.size = sizeof(caps)};
    assert_int_equal(tc_tp_ib_query_verbs(tc_ibemu_verbs(), &caps), TC_OK);
    assert_int_equal(caps.available, 0);
    assert_non_null(strstr(tc_last_error(), "Function not implemented"));
    tc_tp_ctx_params_t p = TC_TP_CTX_PARAMS_INIT;
    tc_tp_ctx_t *ctx = NULL;
    assert_int_equal(tc_tp_ib_ctx_create_verbs(tc_ibemu_verbs(), &p, &ctx), TC_ERR_UNSUPPORTED);
    assert_non_null(strstr(tc_last_error(), "no InfiniBand/RoCE device: "));
    tc_ibemu_set_no_device(0);
    tc_ibemu_set_port_down(1);
    assert_int_equal(tc_tp_ib_ctx_create_verbs(tc_ibemu_verbs(), &p, &ctx), TC_ERR_UNSUPPORTED);
    assert_non_null(strstr(tc_last_error(), "not active"));
    tc_ibemu_set_port_down(0);
    assert_int_equal(tc_tp_ib_query_verbs(tc_ibemu_verbs(), &caps), TC_OK);
    assert_int_equal(caps.available, 1);
    ib_emu_stats_t s = tc_ibemu_stats();
    assert_int_equal(s.live_mrs, 0);
}

/* ---- two-sided ---- */
static void xfer(pair_t *p, int from, uint64_t tag, size_t len, size_t cap, int recv_first,
                 tc_status_t want)
{
    int to = 1 - from;
    unsigned char *src = malloc(len + 1), *dst = malloc(cap + 16);
    assert_non_null(src);
    assert_non_null(dst);
    fill(src, len, tag);
    memset(dst, 0xEE, cap + 16);
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
    if (recv_first)
        assert_int_equal(tc_tp_recv(p->ep[to], tag, dst, cap, &r), TC_OK);
    assert_int_equal(tc_tp_send(p->ep[from], tag, src, len, &s), TC_OK);
    if (!recv_first) {
        spin_until(p, &s.status, 50); /* let it arrive unexpected */
        assert_int_equal(tc_tp_recv(p->ep[to], tag, dst, cap, &r), TC_OK);
    }
    spin_until(p, &r.status, WAIT_MS);
    spin_until(p, &s.status, WAIT_MS);
    assert_int_equal(r.status, want);
    assert_int_equal(s.status, TC_OK);
    size_t n = len < cap ? len : cap;
    assert_int_equal(r.bytes, n);
    assert_int_equal(check(dst, n, tag), n);
    for (size_t i = n; i < cap + 16; i++)
        assert_int_equal(dst[i], 0xEE);
    free(src);
    free(dst);
}

static void test_send_recv_sizes(void **state)
{
    (void)state;
    pair_t p;
    pair_open(&p, "s", "s");
    static const size_t sizes[] = {
        0,     1,       8, TC_TP_IB_EAGER_MAX - 1, TC_TP_IB_EAGER_MAX, TC_TP_IB_EAGER_MAX + 1,
        65536, 4u << 20};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        for (int rf = 0; rf < 2; rf++) {
            xfer(&p, (int)(i % 2), 100 + i, sizes[i], sizes[i], rf, TC_OK);
            xfer(&p, 1 - (int)(i % 2), 200 + i, sizes[i], sizes[i] + 5, rf, TC_OK);
        }
    /* truncation, eager and rendezvous */
    xfer(&p, 0, 7, 100, 10, 1, TC_ERR_TRUNCATED);
    xfer(&p, 0, 8, 100000, 5000, 1, TC_ERR_TRUNCATED);
    xfer(&p, 1, 9, 100000, 5000, 0, TC_ERR_TRUNCATED);
    xfer(&p, 1, 10, 100000, 0, 1, TC_ERR_TRUNCATED);
    pair_close(&p);
}

/* Many messages in flight (more than the bounce buffers and the send queue), in order. */
static void test_many_messages(void **state)
{
    (void)state;
    pair_t p;
    pair_open(&p, NULL, NULL);
    enum { N = 700 };
    static tc_tp_req_t s[N], r[N];
    static uint32_t out[N], in[N];
    static unsigned char big[4][20000], bigin[4][20000];
    for (int i = 0; i < N; i++) {
        out[i] = (uint32_t)i * 2654435761u;
        in[i] = 0;
        s[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        r[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
    }
    for (int i = 0; i < N; i++) /* same tag: matched in posting order */
        assert_int_equal(tc_tp_send(p.ep[0], 5, &out[i], 4, &s[i]), TC_OK);
    for (int k = 0; k < 4; k++) {
        fill(big[k], sizeof(big[k]), (uint64_t)k);
        tc_tp_req_t bs = TC_TP_REQ_INIT, br = TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_send(p.ep[1], 6, big[k], sizeof(big[k]), &bs), TC_OK);
        assert_int_equal(tc_tp_recv(p.ep[0], 6, bigin[k], sizeof(bigin[k]), &br), TC_OK);
        spin_until(&p, &br.status, WAIT_MS);
        spin_until(&p, &bs.status, WAIT_MS);
        assert_int_equal(br.status, TC_OK);
        assert_int_equal(check(bigin[k], sizeof(bigin[k]), (uint64_t)k), sizeof(bigin[k]));
    }
    for (int i = 0; i < N; i++)
        assert_int_equal(tc_tp_recv(p.ep[1], 5, &in[i], 4, &r[i]), TC_OK);
    spin_until(&p, &r[N - 1].status, WAIT_MS);
    for (int i = 0; i < N; i++) {
        assert_int_equal(r[i].status, TC_OK);
        assert_int_equal(s[i].status, TC_OK);
        assert_int_equal(in[i], out[i]);
    }
    pair_close(&p);
}

/* ---- one-sided ---- */
typedef struct region {
    unsigned char *buf;
    size_t len;
    tc_tp_mem_t *mem;
    tc_tp_rkey_t *rkey;
} region_t;

static void region_open(pair_t *p, int owner, size_t len, region_t *r)
{
    r->len = len;
    r->buf = aligned_alloc(64, (len + 63) / 64 * 64);
    assert_non_null(r->buf);
    memset(r->buf, 0, len);
    assert_int_equal(tc_tp_mem_reg(p->ctx[owner], r->buf, len, &r->mem), TC_OK);
    unsigned char blob[64];
    size_t n;
    assert_int_equal(tc_tp_rkey_pack(r->mem, blob, sizeof(blob), &n), TC_OK);
    assert_int_equal(n, 40);
    assert_int_equal(tc_tp_rkey_unpack(p->ep[1 - owner], blob, n, &r->rkey), TC_OK);
}

static void region_close(region_t *r)
{
    tc_tp_rkey_release(r->rkey);
    tc_tp_mem_dereg(r->mem);
    free(r->buf);
}

static void test_put_get_signal(void **state)
{
    (void)state;
    pair_t p;
    pair_open(&p, NULL, NULL);
    region_t r;
    region_open(&p, 1, 1 << 20, &r);
    unsigned char *src = malloc(1 << 20), *back = malloc(1 << 20);
    assert_non_null(src);
    assert_non_null(back);
    static const size_t sizes[] = {0, 1, 7, 4096, 100000, (1 << 20) - 64};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t len = sizes[i], off = i * 8;
        fill(src, len, i);
        tc_tp_req_t q = TC_TP_REQ_INIT, g = TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_put(p.ep[0], src, len, r.rkey, off, &q), TC_OK);
        spin_until(&p, &q.status, WAIT_MS);
        assert_int_equal(q.status, TC_OK);
        assert_int_equal(check(r.buf + off, len, i), len);
        memset(back, 0, len + 1);
        assert_int_equal(tc_tp_get(p.ep[0], back, len, r.rkey, off, &g), TC_OK);
        spin_until(&p, &g.status, WAIT_MS);
        assert_int_equal(g.status, TC_OK);
        assert_int_equal(check(back, len, i), len);
    }
    /* signals: add accumulates, set overwrites (compare-and-swap loop) */
    uint64_t *w = (uint64_t *)(void *)(r.buf + 4096);
    memset(r.buf + 4096, 0, 16);
    *w = 5;
    for (int k = 0; k < 3; k++) {
        tc_tp_req_t q = TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_signal(p.ep[0], r.rkey, 4096, TC_TP_SIGNAL_ADD, 10, &q), TC_OK);
        spin_until(&p, &q.status, WAIT_MS);
        assert_int_equal(q.status, TC_OK);
    }
    assert_int_equal(tc_tp_signal_read(r.mem, 4096), 35);
    tc_tp_req_t q = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_signal(p.ep[0], r.rkey, 4096, TC_TP_SIGNAL_SET, 0xabcdef0123ULL, &q),
                     TC_OK);
    spin_until(&p, &q.status, WAIT_MS);
    assert_int_equal(q.status, TC_OK);
    assert_int_equal(tc_tp_signal_read(r.mem, 4096), 0xabcdef0123ULL);
    assert_int_equal(tc_tp_signal_read(r.mem, 4104), 0);

    /* 600 puts (more than the send queue) then a signal: in order, all data before it */
    enum { N = 600 };
    static tc_tp_req_t puts[N];
    fill(src, N * 1000, 77);
    for (int i = 0; i < N; i++) {
        puts[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        assert_int_equal(
            tc_tp_put(p.ep[0], src + i * 1000, 1000, r.rkey, (uint64_t)i * 1000, &puts[i]), TC_OK);
    }
    tc_tp_req_t sig = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_signal(p.ep[0], r.rkey, 800000, TC_TP_SIGNAL_ADD, 1, &sig),
                     TC_OK); /* after the data */
    spin_until(&p, &sig.status, WAIT_MS);
    assert_int_equal(sig.status, TC_OK);
    for (int i = 0; i < N; i++)
        assert_int_equal(puts[i].status, TC_OK);
    assert_int_equal(check(r.buf, 600 * 1000, 77), 600 * 1000);
    free(src);
    free(back);
    region_close(&r);
    pair_close(&p);
}

/* A SET whose compare-and-swap lost (the word is not 0) retries from its completion; without
 * the SET's order (test_signal_set_in_order), behind the send queue full of ADDs posted after
 * it, and later signals started while that retry was in flight. Each signal's old value lands in a
 * scratch word of the endpoint: a scratch word given to a later signal while the retry still uses
 * it would take two HCA writes in any order, and the retry could read the other's value (a lost or
 * misapplied SET). The emulation counts such overlaps; there must be none. */
static void test_signal_scratch_reuse(void **state)
{
    (void)state;
    pair_t p;
    pair_open(&p, NULL, NULL);
    region_t r;
    region_open(&p, 1, 64, &r);
    uint64_t *w = (uint64_t *)(void *)r.buf;
    *w = 5;
    enum { ADDS = 600 };
    static tc_tp_req_t reqs[ADDS + 1];
    reqs[0] = (tc_tp_req_t)TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_signal(p.ep[0], r.rkey, 0, TC_TP_SIGNAL_SET, 100, &reqs[0]), TC_OK);
    for (int i = 1; i <= ADDS; i++) {
        reqs[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_signal(p.ep[0], r.rkey, 0, TC_TP_SIGNAL_ADD, 1, &reqs[i]), TC_OK);
    }
    spin_until(&p, &reqs[ADDS].status, WAIT_MS);
    spin_until(&p, &reqs[0].status, WAIT_MS);
    for (int i = 0; i <= ADDS; i++)
        assert_int_equal(reqs[i].status, TC_OK);
    ib_emu_stats_t s = tc_ibemu_stats();
    assert_int_equal(s.local_overlaps, 0);
    assert_int_equal(s.fetch_adds, ADDS);
    assert_true(s.cmp_swaps >= 2); /* guessed 0, then retried */
    /* in order: the SET, then every ADD */
    assert_int_equal(tc_tp_signal_read(r.mem, 0), 100 + ADDS);
    region_close(&r);
    pair_close(&p);
}

/* Signals of one endpoint apply in the order posted, as over tcp and shm: a SET whose first
 * compare-and-swap guessed wrong (the word was not 0) retries, and the signals posted after it
 * must not land before its retry. */
static void test_signal_set_in_order(void **state)
{
    (void)state;
    pair_t p;
    pair_open(&p, NULL, NULL);
    region_t r;
    region_open(&p, 1, 64, &r);
    *(uint64_t *)(void *)r.buf = 5;
    static const struct {
        tc_tp_signal_op_t op;
        uint64_t v;
    } seq[] = {{TC_TP_SIGNAL_SET, 100}, {TC_TP_SIGNAL_ADD, 1}, {TC_TP_SIGNAL_ADD, 2},
               {TC_TP_SIGNAL_SET, 7},   {TC_TP_SIGNAL_SET, 9}, {TC_TP_SIGNAL_ADD, 1}};
    enum { NSEQ = sizeof(seq) / sizeof(seq[0]) };
    tc_tp_req_t q[NSEQ];
    for (int i = 0; i < NSEQ; i++) {
        q[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_signal(p.ep[0], r.rkey, 8 * (i >= 3), seq[i].op, seq[i].v, &q[i]),
                         TC_OK);
    }
    for (int i = 0; i < NSEQ; i++) {
        spin_until(&p, &q[i].status, WAIT_MS);
        assert_int_equal(q[i].status, TC_OK);
    }
    assert_int_equal(tc_tp_signal_read(r.mem, 0), 103); /* 5, SET 100, +1, +2 */
    assert_int_equal(tc_tp_signal_read(r.mem, 8), 10);  /* 0, SET 7, SET 9, +1 */
    region_close(&r);
    pair_close(&p);
}

/* The registration cache (TC_IB_REG_CACHE=1): the same buffer (and sub-ranges) register once. */
static void test_reg_cache(void **state)
{
    (void)state;
    pair_t p;
    pair_open_cached(&p);
    size_t len = 1 << 20;
    unsigned char *a = aligned_alloc(4096, len), *b = malloc(len);
    assert_non_null(a);
    assert_non_null(b);
    fill(a, len, 3);
    int before = tc_ibemu_stats().reg_mr;
    for (int k = 0; k < 10; k++) { /* rendezvous sends of the same buffer, and parts of it */
        tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
        size_t off = (size_t)k * 1000;
        assert_int_equal(tc_tp_recv(p.ep[1], 1, b, len, &r), TC_OK);
        assert_int_equal(tc_tp_send(p.ep[0], 1, a + off, len - off, &s), TC_OK);
        spin_until(&p, &r.status, WAIT_MS);
        spin_until(&p, &s.status, WAIT_MS);
        assert_int_equal(r.status, TC_OK);
        assert_int_equal(r.bytes, len - off);
        for (size_t i = 0; i < len - off; i += 4093)
            assert_int_equal(b[i], pat(3, off + i));
    }
    /* one registration for a on the sender, one for b on the receiver */
    assert_int_equal(tc_ibemu_stats().reg_mr - before, 2);
    tc_tp_mem_t *m1, *m2;
    assert_int_equal(tc_tp_mem_reg(p.ctx[0], a + 100, 5000, &m1), TC_OK);
    assert_int_equal(tc_tp_mem_reg(p.ctx[0], a, len, &m2), TC_OK);
    assert_int_equal(tc_ibemu_stats().reg_mr - before, 2);
    tc_tp_mem_dereg(m1);
    tc_tp_mem_dereg(m2);
    free(a);
    free(b);
    pair_close(&p);
}

/* A forged remote key: the HCA answers with a remote access error -> TC_ERR_PROTOCOL. */
static void test_bad_rkey(void **state)
{
    (void)state;
    pair_t p;
    pair_open(&p, NULL, NULL);
    region_t r;
    region_open(&p, 1, 4096, &r);
    unsigned char blob[64];
    size_t n;
    assert_int_equal(tc_tp_rkey_pack(r.mem, blob, sizeof(blob), &n), TC_OK);
    blob[32] ^= 0x55; /* the rkey */
    tc_tp_rkey_t *bad;
    assert_int_equal(tc_tp_rkey_unpack(p.ep[0], blob, n, &bad), TC_OK);
    assert_int_equal(tc_tp_rkey_unpack(p.ep[1], blob, n, &bad), TC_ERR_INVALID_ARG);
    unsigned char x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    tc_tp_req_t q = TC_TP_REQ_INIT, rr = TC_TP_REQ_INIT;
    unsigned char in[4];
    assert_int_equal(tc_tp_recv(p.ep[0], 3, in, 4, &rr), TC_OK);
    assert_int_equal(tc_tp_put(p.ep[0], x, 8, bad, 0, &q), TC_OK);
    spin_until(&p, &q.status, WAIT_MS);
    assert_int_equal(q.status, TC_ERR_PROTOCOL);
    assert_int_equal(p.ep[0]->failed, TC_ERR_PROTOCOL);
    assert_non_null(strstr(tc_tp_ep_error(p.ep[0]), "remote access error"));
    assert_int_equal(rr.status, TC_ERR_PROTOCOL); /* the pending receive fails with it */
    for (int i = 0; i < 8; i++)
        assert_int_equal(r.buf[i], 0);
    /* the target's QP went to the error state: its endpoint fails too */
    uint64_t deadline = tc_deadline_after_ms(WAIT_MS);
    while (p.ep[1]->failed == TC_OK && !tc_deadline_passed(deadline))
        tc_tp_progress(p.ctx[1]);
    assert_int_equal(p.ep[1]->failed, TC_ERR_PEER_FAILED);
    tc_tp_req_t q2 = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_put(p.ep[0], x, 8, r.rkey, 0, &q2), TC_ERR_PROTOCOL);
    tc_tp_rkey_release(bad);
    region_close(&r);
    pair_close(&p);
}

/* The peer's context is destroyed: the next operation fails with retries exceeded, and a
 * rendezvous send waiting for its FIN fails too. */
static void test_peer_gone(void **state)
{
    (void)state;
    pair_t p;
    pair_open(&p, NULL, NULL);
    region_t r;
    region_open(&p, 1, 4096, &r);
    static unsigned char big[50000];
    tc_tp_req_t rs = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(p.ep[0], 1, big, sizeof(big), &rs), TC_OK);
    tc_tp_progress(p.ctx[0]);
    tc_tp_rkey_t *k = r.rkey;
    tc_tp_mem_dereg(r.mem);
    free(r.buf);
    tc_tp_ep_close(p.ep[1]);
    tc_tp_ctx_destroy(p.ctx[1]);
    unsigned char x[8] = {0};
    tc_tp_req_t q = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_put(p.ep[0], x, 8, k, 0, &q), TC_OK);
    uint64_t deadline = tc_deadline_after_ms(WAIT_MS);
    while (q.status == TC_INPROGRESS && !tc_deadline_passed(deadline))
        tc_tp_progress(p.ctx[0]);
    assert_int_equal(q.status, TC_ERR_PEER_FAILED);
    assert_int_equal(rs.status, TC_ERR_PEER_FAILED);
    assert_non_null(strstr(tc_tp_ep_error(p.ep[0]), "transport retries exceeded"));
    tc_tp_rkey_release(k);
    tc_tp_ep_close(p.ep[0]);
    tc_tp_ctx_destroy(p.ctx[0]);
    ib_emu_stats_t s = tc_ibemu_stats();
    assert_int_equal(s.live_qps, 0);
    assert_int_equal(s.live_mrs, 0);
}

/* A wrong secret: the active side finds that the passive side's challenge does not prove its
 * secret. */
static void test_wrong_secret(void **state)
{
    (void)state;
    pair_t p;
    pair_open(&p, "a", "b");
    tc_tp_req_t s = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(p.ep[0], 1, "x", 1, &s), TC_OK);
    spin_until(&p, &s.status, WAIT_MS);
    assert_int_equal(s.status, TC_ERR_PEER_FAILED);
    assert_non_null(strstr(tc_tp_ep_error(p.ep[0]), "failed the challenge: its MAC does not "
                                                    "prove the job secret"));
    pair_close(&p);
}

/* Two threads, each driving its own context: ping-pong of mixed sizes. */
typedef struct targ {
    pair_t *p;
    int side, errors;
} targ_t;

static void *thread_main(void *a_)
{
    targ_t *a = a_;
    tc_tp_ep_t *ep = a->p->ep[a->side];
    tc_tp_ctx_t *ctx = a->p->ctx[a->side];
    static const size_t sizes[] = {1, 8192, 8193, 300000};
    unsigned char *buf = malloc(300000);
    for (int it = 0; it < 40 && buf; it++) {
        size_t len = sizes[it % 4];
        tc_tp_req_t q = TC_TP_REQ_INIT;
        if ((it % 2) == a->side) {
            fill(buf, len, (uint64_t)it);
            tc_tp_send(ep, (uint64_t)it, buf, len, &q);
        } else {
            tc_tp_recv(ep, (uint64_t)it, buf, 300000, &q);
        }
        uint64_t deadline = tc_deadline_after_ms(WAIT_MS);
        while (q.status == TC_INPROGRESS && !tc_deadline_passed(deadline))
            tc_tp_progress(ctx);
        if (q.status != TC_OK || ((it % 2) != a->side && check(buf, len, (uint64_t)it) != len))
            a->errors++;
    }
    free(buf);
    return NULL;
}

static void test_two_threads(void **state)
{
    (void)state;
    pair_t p;
    pair_open(&p, NULL, NULL);
    targ_t a[2] = {{&p, 0, 0}, {&p, 1, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, thread_main, &a[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(a[0].errors, 0);
    assert_int_equal(a[1].errors, 0);
    pair_close(&p);
}

/* ---- eager ring: RDMA write with immediate data and credits ---- */

#define RING_SLOTS 64 /* TC_IB_NRECV: ring slots, i.e. credits, per endpoint (ib_internal.h) */

static size_t ring_size(int i)
{
    static const size_t sizes[] = {0, 1, 7, TC_TP_IB_EAGER_MAX - 1, TC_TP_IB_EAGER_MAX, 100};
    return sizes[i % 6];
}

/* More sends than ring slots while the receiver does not progress: exactly RING_SLOTS are
 * written (then the sender waits for credits, never overwriting an unconsumed slot and never
 * finding no receive posted), and all arrive in order and intact once the receiver runs. */
static void test_ring_credits(void **state)
{
    (void)state;
    pair_t p;
    pair_open(&p, NULL, NULL);
    enum { N = 3 * RING_SLOTS + 5 };
    static unsigned char out[N][TC_TP_IB_EAGER_MAX], in[N][TC_TP_IB_EAGER_MAX + 8];
    static tc_tp_req_t s[N], r[N];
    /* bring the QPs up first (handshake), so that the count below is about credits only */
    xfer(&p, 0, 1, 1, 1, 1, TC_OK);
    int w0 = tc_ibemu_stats().writes_imm;
    for (int i = 0; i < N; i++) {
        fill(out[i], ring_size(i), (uint64_t)i);
        s[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        r[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_send(p.ep[0], 9, out[i], ring_size(i), &s[i]), TC_OK);
    }
    for (int k = 0; k < 2000; k++) /* the slow receiver: only the sender progresses */
        tc_tp_progress(p.ctx[0]);
    /* the first message's credit is still owed by the receiver (credits go back in batches of
     * half the ring, or with the receiver's own messages) */
    int done = 0;
    for (int i = 0; i < N; i++)
        done += s[i].status == TC_OK;
    assert_int_equal(done, RING_SLOTS - 1);
    for (int i = 0; i < RING_SLOTS - 1; i++)
        assert_int_equal(s[i].status, TC_OK); /* in posting order */
    ib_emu_stats_t st = tc_ibemu_stats();
    assert_int_equal(st.writes_imm - w0, RING_SLOTS - 1);
    assert_int_equal(st.rnr_errors, 0);
    assert_int_equal(p.ep[0]->failed, TC_OK);
    /* now the receiver consumes (unexpected queue), credits flow back, the rest is written */
    spin_until(&p, &s[N - 1].status, WAIT_MS);
    for (int i = 0; i < N; i++)
        assert_int_equal(s[i].status, TC_OK);
    for (int i = 0; i < N; i++) {
        memset(in[i], 0xEE, sizeof(in[i]));
        assert_int_equal(tc_tp_recv(p.ep[1], 9, in[i], TC_TP_IB_EAGER_MAX + 8, &r[i]), TC_OK);
    }
    spin_until(&p, &r[N - 1].status, WAIT_MS);
    for (int i = 0; i < N; i++) {
        assert_int_equal(r[i].status, TC_OK);
        assert_int_equal(r[i].bytes, ring_size(i));
        assert_int_equal(check(in[i], ring_size(i), (uint64_t)i), ring_size(i));
        assert_int_equal(in[i][ring_size(i)], 0xEE);
    }
    /* both directions at once, with receives posted first: credits also return piggybacked */
    for (int i = 0; i < N; i++) {
        int from = i % 2;
        r[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_recv(p.ep[1 - from], 10, in[i], sizeof(in[i]), &r[i]), TC_OK);
    }
    for (int i = 0; i < N; i++) {
        s[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_send(p.ep[i % 2], 10, out[i], ring_size(i), &s[i]), TC_OK);
    }
    spin_until(&p, &r[N - 1].status, WAIT_MS);
    spin_until(&p, &r[N - 2].status, WAIT_MS);
    for (int i = 0; i < N; i++) {
        assert_int_equal(r[i].status, TC_OK);
        assert_int_equal(check(in[i], ring_size(i), (uint64_t)i), ring_size(i));
    }
    assert_int_equal(tc_ibemu_stats().rnr_errors, 0);
    pair_close(&p);
}

/* A corrupt or hostile peer: the emulation rewrites its next write with immediate data. */
typedef struct tamper {
    int mode, fired;
} tamper_t;

enum {
    T_SLOT_OUT,  /* slot index beyond the ring */
    T_SLOT_SKIP, /* a valid slot, not the next one */
    T_LEN_BIG,   /* length beyond the slot */
    T_LEN_SHORT, /* shorter than a header */
    T_LEN_WRONG, /* immediate length differs from the bytes written */
    T_HDR_LEN,   /* header length disagrees with the payload */
    T_KIND,      /* unknown kind */
    T_CREDITS,   /* returns more credits than it could owe */
    T_SEND,      /* a zero-length SEND instead of a write with immediate data */
    T_FIN,       /* FIN for a rendezvous that does not exist */
    T_RTS_ID,    /* RTS with a rendezvous id beyond 22 bits */
};

static void tamper_fn(struct ibv_send_wr *wr, void *arg)
{
    tamper_t *t = arg;
    if (t->fired || wr->opcode != IBV_WR_RDMA_WRITE_WITH_IMM)
        return;
    uint32_t imm = ntohl(wr->imm_data), kind = imm >> 30;
    unsigned char *b = wr->num_sge ? (unsigned char *)(uintptr_t)wr->sg_list[0].addr : NULL;
    if (t->mode == T_FIN ? kind != 2 : kind != 0)
        return;
    t->fired = 1;
    switch (t->mode) {
    case T_SLOT_OUT:
        imm = (imm & ~(0xffu << 14)) | (200u << 14);
        break;
    case T_SLOT_SKIP:
        imm = (imm & ~(0xffu << 14)) | ((((imm >> 14) & 0xff) + 5) << 14);
        break;
    case T_LEN_BIG:
        imm |= 0x3fff;
        break;
    case T_LEN_SHORT:
        imm = (imm & ~0x3fffu) | 10;
        break;
    case T_LEN_WRONG:
        imm = (imm & ~0x3fffu) | ((imm & 0x3fff) - 1);
        break;
    case T_HDR_LEN:
        b[16] ^= 0x40; /* the u64 length in the header */
        break;
    case T_KIND:
        imm |= 3u << 30;
        break;
    case T_CREDITS:
        imm = (imm & ~(0xffu << 22)) | (200u << 22);
        break;
    case T_SEND:
        wr->opcode = IBV_WR_SEND;
        wr->num_sge = 0;
        break;
    case T_FIN:
        imm ^= 0x155555;
        break;
    case T_RTS_ID:
        b[44] = 0x7f; /* the u64 rendezvous id */
        break;
    }
    wr->imm_data = htonl(imm);
}

static void test_hostile_immediate(void **state)
{
    (void)state;
    static const struct {
        int mode;
        const char *text;
    } cases[] = {
        {T_SLOT_OUT, "wrote ring slot 200 where slot"},
        {T_SLOT_SKIP, "where slot"},
        {T_LEN_BIG, "announced 16383 bytes"},
        {T_LEN_SHORT, "announced 10 bytes"},
        {T_LEN_WRONG, "bytes in ring slot"},
        {T_HDR_LEN, "malformed message"},
        {T_KIND, "unknown kind"},
        {T_CREDITS, "returned 200 credits"},
        {T_SEND, "not an RDMA write with immediate data"},
        {T_FIN, "FIN for an unknown rendezvous"},
        {T_RTS_ID, "malformed message"},
    };
    static unsigned char big[20000], in[20000];
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        pair_t p;
        pair_open(&p, NULL, NULL);
        xfer(&p, 0, 1, 10, 10, 1, TC_OK); /* up, and one message through the ring first */
        tamper_t t = {cases[c].mode, 0};
        tc_ibemu_set_tamper(tamper_fn, &t);
        tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
        int victim = 1; /* the receiver of the tampered write */
        int big_msg = cases[c].mode == T_FIN || cases[c].mode == T_RTS_ID;
        assert_int_equal(tc_tp_recv(p.ep[1], 2, in, sizeof(in), &r), TC_OK);
        assert_int_equal(tc_tp_send(p.ep[0], 2, big, big_msg ? sizeof(big) : 5, &s), TC_OK);
        tc_tp_req_t *watch = &r;
        if (cases[c].mode == T_FIN) { /* the FIN goes from 1 to 0: the sender is the victim */
            victim = 0;
            watch = &s;
        }
        spin_until(&p, &watch->status, WAIT_MS);
        assert_int_equal(t.fired, 1);
        assert_int_equal(watch->status, TC_ERR_PROTOCOL);
        assert_int_equal(p.ep[victim]->failed, TC_ERR_PROTOCOL);
        if (strstr(tc_tp_ep_error(p.ep[victim]), cases[c].text) == NULL)
            print_error("case %zu: %s\n", c, tc_tp_ep_error(p.ep[victim]));
        assert_non_null(strstr(tc_tp_ep_error(p.ep[victim]), cases[c].text));
        assert_non_null(strstr(tc_tp_ep_error(p.ep[victim]), victim ? "peer 0" : "peer 1"));
        tc_ibemu_set_tamper(NULL, NULL);
        pair_close(&p);
    }
}

/* ---- keepalive: a dead peer noticed on an idle endpoint ---- */

static void pair_open_ka(pair_t *p, const char *ka_ms)
{
    setenv("TC_IB_KEEPALIVE_MS", ka_ms, 1);
    pair_open(p, NULL, NULL);
    unsetenv("TC_IB_KEEPALIVE_MS");
    xfer(p, 0, 1, 1, 1, 1, TC_OK); /* up */
}

/* A receive pending on an endpoint whose peer's QP is destroyed completes with PEER_FAILED
 * within a bounded time although nothing is sent by the test. */
static void test_keepalive_dead_peer(void **state)
{
    (void)state;
    pair_t p;
    pair_open_ka(&p, "100");
    unsigned char buf[16];
    tc_tp_req_t r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(p.ep[1], 5, buf, sizeof(buf), &r), TC_OK);
    tc_tp_ep_close(p.ep[0]); /* the peer dies: its QP is destroyed */
    tc_tp_ctx_destroy(p.ctx[0]);
    uint64_t t0 = tc_time_ns(), deadline = tc_deadline_after_ms(WAIT_MS);
    while (r.status == TC_INPROGRESS && !tc_deadline_passed(deadline)) {
        tc_tp_progress(p.ctx[1]);
        tc_tp_wait(p.ctx[1], 1);
    }
    uint64_t ms = (tc_time_ns() - t0) / 1000000u;
    assert_int_equal(r.status, TC_ERR_PEER_FAILED);
    assert_true(ms >= 90);  /* after an idle interval, not at once */
    assert_true(ms < 1500); /* and soon after it */
    assert_int_equal(p.ep[1]->failed, TC_ERR_PEER_FAILED);
    assert_non_null(strstr(tc_tp_ep_error(p.ep[1]), "peer 0"));
    assert_non_null(strstr(tc_tp_ep_error(p.ep[1]), "keepalive"));
    assert_int_equal(tc_ibemu_stats().zero_writes, 0); /* it failed: the peer was gone */
    tc_tp_ep_close(p.ep[1]);
    tc_tp_ctx_destroy(p.ctx[1]);
    ib_emu_stats_t s = tc_ibemu_stats();
    assert_int_equal(s.live_qps, 0);
    assert_int_equal(s.live_mrs, 0);
}

static void progress_for(pair_t *p, int ms)
{
    uint64_t deadline = tc_deadline_after_ms((uint64_t)ms);
    while (!tc_deadline_passed(deadline)) {
        tc_tp_progress(p->ctx[0]);
        tc_tp_progress(p->ctx[1]);
        tc_tp_wait(p->ctx[0], 1);
    }
}

/* A live peer: keepalives only while something waits, they succeed, the endpoint stays up; and
 * TC_IB_KEEPALIVE_MS=0 turns them off (then a dead peer is not noticed by a receive). */
static void test_keepalive_live_and_off(void **state)
{
    (void)state;
    pair_t p;
    pair_open_ka(&p, "50");
    progress_for(&p, 300); /* nothing pending: no keepalive */
    assert_int_equal(tc_ibemu_stats().zero_writes, 0);
    unsigned char buf[16] = {0};
    tc_tp_req_t r = TC_TP_REQ_INIT, s = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(p.ep[1], 5, buf, sizeof(buf), &r), TC_OK);
    progress_for(&p, 400);
    int ka = tc_ibemu_stats().zero_writes;
    assert_true(ka >= 2);
    assert_true(ka <= 9); /* one per idle interval, not one per progress call */
    assert_int_equal(r.status, TC_INPROGRESS);
    assert_int_equal(p.ep[1]->failed, TC_OK);
    assert_int_equal(tc_tp_send(p.ep[0], 5, "alive", 5, &s), TC_OK);
    spin_until(&p, &r.status, WAIT_MS);
    assert_int_equal(r.status, TC_OK);
    assert_memory_equal(buf, "alive", 5);
    pair_close(&p);

    pair_open_ka(&p, "0");
    r = (tc_tp_req_t)TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(p.ep[1], 5, buf, sizeof(buf), &r), TC_OK);
    tc_tp_ep_close(p.ep[0]);
    tc_tp_ctx_destroy(p.ctx[0]);
    uint64_t deadline = tc_deadline_after_ms(300);
    while (!tc_deadline_passed(deadline))
        tc_tp_progress(p.ctx[1]);
    assert_int_equal(r.status, TC_INPROGRESS);
    assert_int_equal(tc_ibemu_stats().zero_writes, 0);
    tc_tp_ep_close(p.ep[1]);
    assert_int_equal(r.status, TC_ERR_ABORTED);
    tc_tp_ctx_destroy(p.ctx[1]);
    assert_int_equal(tc_ibemu_stats().live_qps, 0);
}

/* ---- registration cache: invalidation, bound, off ---- */

static void put_from(pair_t *p, region_t *r, const unsigned char *buf, size_t len, uint64_t seed)
{
    tc_tp_req_t q = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_put(p->ep[0], buf, len, r->rkey, 0, &q), TC_OK);
    spin_until(p, &q.status, WAIT_MS);
    assert_int_equal(q.status, TC_OK);
    assert_int_equal(check(r->buf, len, seed), len);
}

typedef struct mrcount {
    int reg, dereg;
} mrcount_t;

static mrcount_t mr_delta(const ib_emu_stats_t *base)
{
    ib_emu_stats_t s = tc_ibemu_stats();
    return (mrcount_t){s.reg_mr - base->reg_mr, s.dereg_mr - base->dereg_mr};
}

#define ASSERT_MR(base, r, d)                                                                      \
    do {                                                                                           \
        mrcount_t m_ = mr_delta(base);                                                             \
        assert_int_equal(m_.reg, r);                                                               \
        assert_int_equal(m_.dereg, d);                                                             \
    } while (0)

static void test_reg_cache_invalidate(void **state)
{
    (void)state;
    pair_t p;
    pair_open_cached(&p);
    region_t r;
    region_open(&p, 1, 65536, &r);
    size_t len = 65536;
    unsigned char *a = aligned_alloc(4096, len), *b = aligned_alloc(4096, len);
    assert_non_null(a);
    assert_non_null(b);
    fill(a, len, 1);
    fill(b, len, 2);
    ib_emu_stats_t base = tc_ibemu_stats();
    put_from(&p, &r, a, len, 1);
    put_from(&p, &r, b, len, 2);
    put_from(&p, &r, a, len, 1);
    ASSERT_MR(&base, 2, 0); /* a and b, cached */
    /* one byte of a: its entry goes (deregistered: unused); b stays */
    assert_int_equal(tc_tp_ib_mem_invalidate(p.ctx[0], a + len - 1, 1), TC_OK);
    ASSERT_MR(&base, 2, 1);
    put_from(&p, &r, b, len, 2);
    ASSERT_MR(&base, 2, 1);
    fill(a, len, 3); /* "freed and reused": a new registration, not the stale one */
    put_from(&p, &r, a, len, 3);
    ASSERT_MR(&base, 3, 1);
    /* ranges that touch no entry, and an empty range */
    assert_int_equal(tc_tp_ib_mem_invalidate(p.ctx[0], a + len, 0), TC_OK);
    assert_int_equal(tc_tp_ib_mem_invalidate(p.ctx[1], a, len), TC_OK); /* other context */
    ASSERT_MR(&base, 3, 1);
    /* in use by a rendezvous send that waits for the receiver: released only after its FIN */
    tc_tp_req_t s = TC_TP_REQ_INIT, rr = TC_TP_REQ_INIT;
    unsigned char *in = malloc(len);
    assert_non_null(in);
    assert_int_equal(tc_tp_send(p.ep[0], 4, a, len, &s), TC_OK);
    for (int k = 0; k < 100; k++)
        tc_tp_progress(p.ctx[0]);
    assert_int_equal(tc_tp_ib_mem_invalidate(p.ctx[0], a, len), TC_OK);
    ASSERT_MR(&base, 3, 1);
    assert_int_equal(tc_tp_recv(p.ep[1], 4, in, len, &rr), TC_OK);
    spin_until(&p, &rr.status, WAIT_MS);
    spin_until(&p, &s.status, WAIT_MS);
    assert_int_equal(s.status, TC_OK);
    assert_int_equal(rr.status, TC_OK);
    assert_int_equal(check(in, len, 3), len);
    mrcount_t m = mr_delta(&base); /* + the receiver's registration of in (cached) */
    assert_int_equal(m.reg, 4);
    assert_int_equal(m.dereg, 2);
    put_from(&p, &r, a, len, 3); /* a registers again */
    ASSERT_MR(&base, 5, 2);
    /* tc_tp_mem_dereg releases a registration nothing else uses */
    tc_tp_mem_t *mem;
    assert_int_equal(tc_tp_mem_reg(p.ctx[0], in, 100, &mem), TC_OK);
    ASSERT_MR(&base, 6, 2); /* a miss: "in" is cached by ctx 1, not by ctx 0 */
    tc_tp_mem_dereg(mem);
    ASSERT_MR(&base, 6, 3); /* released at once; a, b (ctx 0) and in (ctx 1) stay cached */
    /* bad arguments */
    assert_int_equal(tc_tp_ib_mem_invalidate(NULL, a, len), TC_ERR_INVALID_ARG);
    tc_tp_ctx_t fake = {NULL};
    assert_int_equal(tc_tp_ib_mem_invalidate(&fake, a, len), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_tp_ib_mem_invalidate(p.ctx[0], (void *)(UINTPTR_MAX - 10), 100),
                     TC_ERR_INVALID_ARG);
    free(in);
    free(a);
    free(b);
    region_close(&r);
    pair_close(&p);
}

/* TC_IB_REG_CACHE_MAX bounds the unused entries (TC_IB_REG_CACHE=1), least recently used
 * released first. */
static void test_reg_cache_lru(void **state)
{
    (void)state;
    pair_t p;
    setenv("TC_IB_REG_CACHE_MAX", "3", 1);
    pair_open_cached(&p);
    unsetenv("TC_IB_REG_CACHE_MAX");
    region_t r;
    region_open(&p, 1, 8192, &r);
    enum { B = 5 };
    unsigned char *buf[B];
    for (int i = 0; i < B; i++) {
        buf[i] = aligned_alloc(4096, 8192);
        assert_non_null(buf[i]);
        fill(buf[i], 8192, (uint64_t)i);
    }
    ib_emu_stats_t base = tc_ibemu_stats();
    for (int i = 0; i < B; i++)
        put_from(&p, &r, buf[i], 8192, (uint64_t)i);
    ASSERT_MR(&base, 5, 2);            /* 0 and 1 released; 2, 3, 4 kept */
    put_from(&p, &r, buf[2], 8192, 2); /* hit: 2 becomes the most recent, 3 the least */
    ASSERT_MR(&base, 5, 2);
    put_from(&p, &r, buf[0], 8192, 0); /* miss; 3 released */
    ASSERT_MR(&base, 6, 3);
    put_from(&p, &r, buf[4], 8192, 4); /* hit */
    put_from(&p, &r, buf[2], 8192, 2); /* hit */
    ASSERT_MR(&base, 6, 3);
    put_from(&p, &r, buf[3], 8192, 3); /* miss: it was released; 0 is the least recent now */
    ASSERT_MR(&base, 7, 4);
    put_from(&p, &r, buf[4], 8192, 4); /* hit */
    ASSERT_MR(&base, 7, 4);
    for (int i = 0; i < B; i++)
        free(buf[i]);
    region_close(&r);
    pair_close(&p);
    /* a bad value is refused when the context is created */
    setenv("TC_IB_REG_CACHE_MAX", "-1", 1);
    tc_tp_ctx_params_t pp = TC_TP_CTX_PARAMS_INIT;
    tc_tp_ctx_t *ctx = NULL;
    assert_int_equal(tc_tp_ib_ctx_create_verbs(tc_ibemu_verbs(), &pp, &ctx), TC_ERR_CONFIG);
    assert_null(ctx);
    assert_non_null(strstr(tc_last_error(), "TC_IB_REG_CACHE_MAX"));
    unsetenv("TC_IB_REG_CACHE_MAX");
    assert_int_equal(tc_ibemu_stats().live_mrs, 0);
}

/* TC_IB_REG_CACHE=0: a registration per transfer, released when it completes. */
static void test_reg_cache_off(void **state)
{
    (void)state;
    pair_t p;
    setenv("TC_IB_REG_CACHE", "0", 1);
    pair_open(&p, NULL, NULL);
    unsetenv("TC_IB_REG_CACHE");
    region_t r;
    region_open(&p, 1, 65536, &r);
    unsigned char *a = aligned_alloc(4096, 65536), *in = malloc(65536);
    assert_non_null(a);
    assert_non_null(in);
    fill(a, 65536, 9);
    ib_emu_stats_t base = tc_ibemu_stats();
    for (int k = 1; k <= 3; k++) {
        put_from(&p, &r, a, 65536, 9);
        ASSERT_MR(&base, k, k);
    }
    tc_tp_req_t s = TC_TP_REQ_INIT, rr = TC_TP_REQ_INIT; /* rendezvous: both sides */
    assert_int_equal(tc_tp_recv(p.ep[1], 4, in, 65536, &rr), TC_OK);
    assert_int_equal(tc_tp_send(p.ep[0], 4, a, 65536, &s), TC_OK);
    spin_until(&p, &rr.status, WAIT_MS);
    spin_until(&p, &s.status, WAIT_MS);
    assert_int_equal(rr.status, TC_OK);
    assert_int_equal(s.status, TC_OK);
    assert_int_equal(check(in, 65536, 9), 65536);
    ASSERT_MR(&base, 5, 5);
    free(a);
    free(in);
    region_close(&r);
    pair_close(&p);
}

/* The default (TC_IB_REG_CACHE unset): a rendezvous registers the buffer of each side for the
 * transfer only; both registrations are released when the requests complete, none stays. */
static void test_reg_default_rndv_released(void **state)
{
    (void)state;
    unsetenv("TC_IB_REG_CACHE");
    pair_t p;
    pair_open(&p, NULL, NULL);
    enum { LEN = 65536 + 3, PAD = 16 };
    unsigned char *a = malloc(LEN), *in = malloc(LEN + PAD);
    assert_non_null(a);
    assert_non_null(in);
    ib_emu_stats_t base = tc_ibemu_stats();
    for (int k = 0; k < 4; k++) { /* the same buffers again: registered again every time */
        uint64_t tag = 40 + (uint64_t)k;
        fill(a, LEN, tag);
        memset(in, 0xEE, LEN + PAD);
        tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
        int recv_first = k % 2;
        if (recv_first)
            assert_int_equal(tc_tp_recv(p.ep[1], tag, in, LEN, &r), TC_OK);
        assert_int_equal(tc_tp_send(p.ep[0], tag, a, LEN, &s), TC_OK);
        if (!recv_first) { /* the sender holds its registration until the FIN */
            for (int i = 0; i < 100; i++)
                tc_tp_progress(p.ctx[0]);
            assert_int_equal(s.status, TC_INPROGRESS);
            ASSERT_MR(&base, 2 * k + 1, 2 * k);
            assert_int_equal(tc_ibemu_stats().live_mrs, base.live_mrs + 1);
            assert_int_equal(tc_tp_recv(p.ep[1], tag, in, LEN, &r), TC_OK);
        }
        spin_until(&p, &r.status, WAIT_MS);
        spin_until(&p, &s.status, WAIT_MS);
        assert_int_equal(r.status, TC_OK);
        assert_int_equal(s.status, TC_OK);
        assert_int_equal(r.bytes, LEN);
        assert_int_equal(check(in, LEN, tag), LEN);
        for (size_t i = LEN; i < LEN + PAD; i++)
            assert_int_equal(in[i], 0xEE);
        ASSERT_MR(&base, 2 * k + 2, 2 * k + 2); /* sender's and receiver's, both released */
        assert_int_equal(tc_ibemu_stats().live_mrs, base.live_mrs);
    }
    free(a);
    free(in);
    pair_close(&p);
    /* a bad value is refused when the context is created */
    setenv("TC_IB_REG_CACHE", "maybe", 1);
    tc_tp_ctx_params_t pp = TC_TP_CTX_PARAMS_INIT;
    tc_tp_ctx_t *ctx = NULL;
    assert_int_equal(tc_tp_ib_ctx_create_verbs(tc_ibemu_verbs(), &pp, &ctx), TC_ERR_CONFIG);
    unsetenv("TC_IB_REG_CACHE");
    assert_null(ctx);
    assert_non_null(strstr(tc_last_error(), "TC_IB_REG_CACHE"));
    assert_int_equal(tc_ibemu_stats().live_mrs, 0);
}

/* The default: tc_tp_mem_reg registrations live from reg to dereg; put, get and rendezvous
 * inside one use it (no registration of their own), other buffers register per transfer. */
static void test_reg_default_explicit(void **state)
{
    (void)state;
    unsetenv("TC_IB_REG_CACHE");
    pair_t p;
    pair_open(&p, NULL, NULL);
    enum { LEN = 1 << 18 };
    ib_emu_stats_t base = tc_ibemu_stats();
    region_t win; /* the window of ctx 1, target of puts and gets */
    region_open(&p, 1, LEN, &win);
    ASSERT_MR(&base, 1, 0);
    unsigned char *src = aligned_alloc(4096, LEN), *back = aligned_alloc(4096, LEN);
    unsigned char *loose = malloc(LEN);
    assert_non_null(src);
    assert_non_null(back);
    assert_non_null(loose);
    tc_tp_mem_t *msrc, *mback;
    assert_int_equal(tc_tp_mem_reg(p.ctx[0], src, LEN, &msrc), TC_OK);
    assert_int_equal(tc_tp_mem_reg(p.ctx[0], back, LEN, &mback), TC_OK);
    ASSERT_MR(&base, 3, 0);
    for (int k = 0; k < 4; k++) { /* sub-ranges of the registered buffers */
        size_t off = (size_t)k * 5000 + 3, n = LEN - 2 * off;
        uint64_t seed = 60 + (uint64_t)k;
        fill(src + off, n, seed);
        tc_tp_req_t q = TC_TP_REQ_INIT, g = TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_put(p.ep[0], src + off, n, win.rkey, off, &q), TC_OK);
        spin_until(&p, &q.status, WAIT_MS);
        assert_int_equal(q.status, TC_OK);
        assert_int_equal(check(win.buf + off, n, seed), n);
        memset(back, 0, LEN);
        assert_int_equal(tc_tp_get(p.ep[0], back + off, n, win.rkey, off, &g), TC_OK);
        spin_until(&p, &g.status, WAIT_MS);
        assert_int_equal(g.status, TC_OK);
        assert_int_equal(check(back + off, n, seed), n);
        for (size_t i = 0; i < off; i++) {
            assert_int_equal(back[i], 0);
            assert_int_equal(back[LEN - 1 - i], 0);
        }
        ASSERT_MR(&base, 3, 0);
    }
    /* an unregistered buffer: registered for the put, released after it */
    fill(loose, LEN, 70);
    put_from(&p, &win, loose, LEN, 70);
    ASSERT_MR(&base, 4, 1);
    /* rendezvous from a registered buffer into the registered window: no registration at all */
    fill(src, LEN, 71);
    memset(win.buf, 0, LEN);
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(p.ep[1], 9, win.buf, LEN, &r), TC_OK);
    assert_int_equal(tc_tp_send(p.ep[0], 9, src, LEN, &s), TC_OK);
    spin_until(&p, &r.status, WAIT_MS);
    spin_until(&p, &s.status, WAIT_MS);
    assert_int_equal(r.status, TC_OK);
    assert_int_equal(s.status, TC_OK);
    assert_int_equal(check(win.buf, LEN, 71), LEN);
    ASSERT_MR(&base, 4, 1);
    /* a registration inside another one is one of its own, released at its own dereg; the
     * outer one, deregistered, is no longer used by transfers in its range */
    tc_tp_mem_t *minner;
    assert_int_equal(tc_tp_mem_reg(p.ctx[0], src + 8192, 16384, &minner), TC_OK);
    ASSERT_MR(&base, 5, 1);
    tc_tp_mem_dereg(msrc);
    ASSERT_MR(&base, 5, 2);
    fill(src + 8192, 4096, 72);
    put_from(&p, &win, src + 8192, 4096, 72);
    ASSERT_MR(&base, 5, 2); /* inside the inner registration */
    fill(src, LEN, 74);
    put_from(&p, &win, src, LEN, 74); /* beyond it: registered for the transfer */
    ASSERT_MR(&base, 6, 3);
    /* dereg while a rendezvous that uses the registration waits for its receiver: released
     * when the send completes; a transfer in the range after the dereg registers for itself */
    tc_tp_req_t s2 = TC_TP_REQ_INIT, r2 = TC_TP_REQ_INIT;
    fill(src + 8192, 12288, 73);
    assert_int_equal(tc_tp_send(p.ep[0], 11, src + 8192, 12288, &s2), TC_OK);
    for (int i = 0; i < 100; i++)
        tc_tp_progress(p.ctx[0]);
    assert_int_equal(s2.status, TC_INPROGRESS);
    ASSERT_MR(&base, 6, 3);
    tc_tp_mem_dereg(minner);
    ASSERT_MR(&base, 6, 3); /* still used by the send */
    fill(src + 20480, 4096, 75);
    put_from(&p, &win, src + 20480, 4096, 75);
    ASSERT_MR(&base, 7, 4);
    memset(loose, 0, LEN);
    assert_int_equal(tc_tp_recv(p.ep[1], 11, loose, LEN, &r2), TC_OK);
    spin_until(&p, &r2.status, WAIT_MS);
    spin_until(&p, &s2.status, WAIT_MS);
    assert_int_equal(r2.status, TC_OK);
    assert_int_equal(s2.status, TC_OK);
    assert_int_equal(r2.bytes, 12288);
    assert_int_equal(check(loose, 12288, 73), 12288);
    for (size_t i = 12288; i < LEN; i++)
        assert_int_equal(loose[i], 0);
    ASSERT_MR(&base, 8, 6); /* the receiver's (for the transfer) and the inner one, released */
    tc_tp_mem_dereg(mback);
    ASSERT_MR(&base, 8, 7);
    free(src);
    free(back);
    free(loose);
    region_close(&win);
    ASSERT_MR(&base, 8, 8);
    assert_int_equal(tc_ibemu_stats().live_mrs, base.live_mrs);
    pair_close(&p);
}

/* TC_SOCKET_IFNAME listing the tcp transport's rails: the handshake listener takes the first
 * entry; a first entry that is no interface is refused, naming it. */
static void test_ifname_list(void **state)
{
    (void)state;
    tc_tp_ctx_params_t p = TC_TP_CTX_PARAMS_INIT;
    tc_tp_ctx_t *ctx = NULL;
    setenv("TC_SOCKET_IFNAME", "lo,nosuch0", 1);
    ctx = ctx_new(0, NULL);
    tc_tp_ctx_destroy(ctx);
    ctx = NULL;
    setenv("TC_SOCKET_IFNAME", "nosuch0,lo", 1);
    assert_int_equal(tc_tp_ib_ctx_create_verbs(tc_ibemu_verbs(), &p, &ctx), TC_ERR_CONFIG);
    assert_null(ctx);
    assert_non_null(strstr(tc_last_error(), "no IPv4 interface named 'nosuch0' is up"));
    setenv("TC_SOCKET_IFNAME", "lo", 1);
}

int main(void)
{
    setenv("TC_SOCKET_IFNAME", "lo", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_library_loaded),
        cmocka_unit_test(test_real_no_device),
        cmocka_unit_test(test_emu_no_device_port_down),
        cmocka_unit_test(test_send_recv_sizes),
        cmocka_unit_test(test_many_messages),
        cmocka_unit_test(test_put_get_signal),
        cmocka_unit_test(test_signal_scratch_reuse),
        cmocka_unit_test(test_signal_set_in_order),
        cmocka_unit_test(test_reg_cache),
        cmocka_unit_test(test_bad_rkey),
        cmocka_unit_test(test_peer_gone),
        cmocka_unit_test(test_wrong_secret),
        cmocka_unit_test(test_two_threads),
        cmocka_unit_test(test_ring_credits),
        cmocka_unit_test(test_hostile_immediate),
        cmocka_unit_test(test_keepalive_dead_peer),
        cmocka_unit_test(test_keepalive_live_and_off),
        cmocka_unit_test(test_reg_cache_invalidate),
        cmocka_unit_test(test_reg_cache_lru),
        cmocka_unit_test(test_reg_cache_off),
        cmocka_unit_test(test_reg_default_rndv_released),
        cmocka_unit_test(test_reg_default_explicit),
        cmocka_unit_test(test_ifname_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
