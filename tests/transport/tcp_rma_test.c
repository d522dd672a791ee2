/* One-sided operations over TCP: put / get / signal contents, ranges, ordering of a signal
 * after puts, hostile one-sided headers from a raw socket, and a peer lost during a get.
 * The wire format is spelled out in tcp_util.h, independently of the backend's sources. */
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcomms/base/status.h"
#include "tcomms/base/time.h"
#include "tcomms/transport/tcp.h"
#include "tcomms/transport/transport.h"
#include "tcp_util.h"
#include "tp_util.h"

#define GUARD 64
#define GUARD_BYTE 0x5A

/* Register @p len bytes (plus guards) on ctx[owner] and give the key to ep[1-owner]. */
typedef struct region {
    unsigned char *raw; /* guard | len bytes | guard */
    unsigned char *buf;
    size_t len;
    tc_tp_mem_t *mem;
    tc_tp_rkey_t *rkey;
} region_t;

static void region_open(tp_pair_t *p, int owner, size_t len, region_t *r)
{
    r->len = len;
    r->raw = malloc(len + 2 * GUARD);
    assert_non_null(r->raw);
    memset(r->raw, GUARD_BYTE, len + 2 * GUARD);
    r->buf = r->raw + GUARD;
    assert_int_equal(tc_tp_mem_reg(p->ctx[owner], r->buf, len, &r->mem), TC_OK);
    assert_ptr_equal(r->mem->addr, r->buf);
    assert_int_equal(r->mem->len, len);
    unsigned char blob[128];
    size_t blen = 0;
    assert_int_equal(tc_tp_rkey_pack(r->mem, blob, sizeof(blob), &blen), TC_OK);
    assert_int_equal(tc_tp_rkey_unpack(p->ep[1 - owner], blob, blen, &r->rkey), TC_OK);
    assert_int_equal(r->rkey->len, len);
}

static void region_close(region_t *r)
{
    for (size_t i = 0; i < GUARD; i++) {
        assert_int_equal(r->raw[i], GUARD_BYTE);
        assert_int_equal(r->buf[r->len + i], GUARD_BYTE);
    }
    tc_tp_rkey_release(r->rkey);
    tc_tp_mem_dereg(r->mem);
    free(r->raw);
}

/* Put pattern @p seed at every size/offset, read it back with get, compare byte by byte. */
static void test_put_get_contents(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_tcpt_pair_open(&p, "rma");
    const size_t total = (4u << 20) + 64;
    region_t r;
    region_open(&p, 1, total, &r);
    memset(r.buf, 0, total);
    tc_tp_caps_t caps = {.size = sizeof(caps)};
    assert_int_equal(tc_tp_tcp_ops.query(&caps), TC_OK);
    assert_int_equal(caps.one_sided, 1);

    static const size_t sizes[] = {0, 1, 7, 4096, 16383, 16384, 65537, 1u << 20, 4u << 20};
    static const size_t offs[] = {0, 3, 64};
    uint64_t seed = 1;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        for (size_t j = 0; j < sizeof(offs) / sizeof(offs[0]); j++, seed++) {
            size_t len = sizes[i], off = offs[j];
            if (off + len > total)
                continue;
            unsigned char *src = malloc(len + 1), *back = malloc(len + 1);
            assert_non_null(src);
            assert_non_null(back);
            tc_tpt_fill(src, len, seed);
            memset(back, 0, len + 1);
            /* the bytes around the target range keep their previous contents */
            unsigned char before = off > 0 ? r.buf[off - 1] : 0;
            unsigned char after = off + len < total ? r.buf[off + len] : 0;
            tc_tp_req_t put = TC_TP_REQ_INIT, get = TC_TP_REQ_INIT;
            assert_int_equal(tc_tp_put(p.ep[0], src, len, r.rkey, off, &put), TC_OK);
            assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &put, TP_WAIT_MS), TC_OK);
            assert_int_equal(put.bytes, len);
            /* completion of the put: the data is in the target's memory already */
            assert_int_equal(tc_tpt_check(r.buf + off, len, seed), len);
            if (off > 0)
                assert_int_equal(r.buf[off - 1], before);
            if (off + len < total)
                assert_int_equal(r.buf[off + len], after);
            assert_int_equal(tc_tp_get(p.ep[0], back, len, r.rkey, off, &get), TC_OK);
            assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &get, TP_WAIT_MS), TC_OK);
            assert_int_equal(get.bytes, len);
            assert_int_equal(tc_tpt_check(back, len, seed), len);
            assert_int_equal(back[len], 0);
            free(src);
            free(back);
        }
    }
    /* the other direction, with a key of ctx 0 */
    region_t r0;
    region_open(&p, 0, 100, &r0);
    tc_tpt_fill(r0.buf, 100, 99);
    unsigned char got[40];
    tc_tp_req_t get = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_get(p.ep[1], got, 40, r0.rkey, 60, &get), TC_OK);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &get, TP_WAIT_MS), TC_OK);
    for (size_t i = 0; i < 40; i++)
        assert_int_equal(got[i], tc_tpt_pattern(99, 60 + i));
    region_close(&r0);
    region_close(&r);
    tc_tpt_pair_close(&p);
}

/* Many puts and gets in flight at once complete in order with the right contents. */
static void test_many_in_flight(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_tcpt_pair_open(&p, NULL);
    enum { N = 256, CHUNK = 3000 };
    region_t r;
    region_open(&p, 1, N * CHUNK, &r);
    unsigned char *src = malloc(N * CHUNK), *back = malloc(N * CHUNK);
    assert_non_null(src);
    assert_non_null(back);
    tc_tpt_fill(src, N * CHUNK, 7);
    static tc_tp_req_t put[N], get[N];
    for (int i = 0; i < N; i++) {
        put[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        get[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        assert_int_equal(
            tc_tp_put(p.ep[0], src + i * CHUNK, CHUNK, r.rkey, (uint64_t)i * CHUNK, &put[i]),
            TC_OK);
    }
    /* gets posted after the puts on the same endpoint see their data */
    for (int i = 0; i < N; i++)
        assert_int_equal(
            tc_tp_get(p.ep[0], back + i * CHUNK, CHUNK, r.rkey, (uint64_t)i * CHUNK, &get[i]),
            TC_OK);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &get[N - 1], TP_WAIT_MS), TC_OK);
    for (int i = 0; i < N; i++) {
        assert_int_equal(put[i].status, TC_OK);
        assert_int_equal(get[i].status, TC_OK);
    }
    assert_int_equal(tc_tpt_check(back, N * CHUNK, 7), N * CHUNK);
    assert_int_equal(tc_tpt_check(r.buf, N * CHUNK, 7), N * CHUNK);
    free(src);
    free(back);
    region_close(&r);
    tc_tpt_pair_close(&p);
}

/* Signals: ADD accumulates, SET overwrites, neighbours untouched. */
static void test_signal_values(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_tcpt_pair_open(&p, NULL);
    region_t r;
    region_open(&p, 1, 64, &r);
    memset(r.buf, 0, 64);
    uint64_t expect = 0;
    for (uint64_t v = 1; v <= 20; v++) {
        tc_tp_req_t s = TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_signal(p.ep[0], r.rkey, 8, TC_TP_SIGNAL_ADD, v * 1000003, &s),
                         TC_OK);
        assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &s, TP_WAIT_MS), TC_OK);
        expect += v * 1000003;
        assert_int_equal(tc_tp_signal_read(r.mem, 8), expect);
    }
    tc_tp_req_t s = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_signal(p.ep[0], r.rkey, 56, TC_TP_SIGNAL_SET, 0xfedcba9876543210ULL, &s),
                     TC_OK);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &s, TP_WAIT_MS), TC_OK);
    assert_int_equal(tc_tp_signal_read(r.mem, 56), 0xfedcba9876543210ULL);
    assert_int_equal(tc_tp_signal_read(r.mem, 8), expect);
    for (uint64_t off = 0; off < 64; off += 8)
        if (off != 8 && off != 56)
            assert_int_equal(tc_tp_signal_read(r.mem, off), 0);
    region_close(&r);
    tc_tpt_pair_close(&p);
}

/* Initiator-side checks: ranges, alignment, malformed or foreign keys. */
static void test_ranges_and_keys(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_tcpt_pair_open(&p, NULL);
    region_t r;
    region_open(&p, 1, 100, &r);
    unsigned char b[200];
    tc_tp_req_t q = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_put(p.ep[0], b, 1, r.rkey, 100, &q), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_tp_put(p.ep[0], b, 101, r.rkey, 0, &q), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_tp_get(p.ep[0], b, 2, r.rkey, 99, &q), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_tp_get(p.ep[0], b, 1, r.rkey, UINT64_MAX, &q), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_tp_signal(p.ep[0], r.rkey, 4, TC_TP_SIGNAL_ADD, 1, &q), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_tp_signal(p.ep[0], r.rkey, 96, TC_TP_SIGNAL_ADD, 1, &q),
                     TC_ERR_INVALID_ARG);
    assert_int_equal(tc_tp_signal(p.ep[0], r.rkey, 0, (tc_tp_signal_op_t)7, 1, &q),
                     TC_ERR_INVALID_ARG);
    /* the key was unpacked for ep[0]: using it through ep[1] is refused */
    assert_int_equal(tc_tp_put(p.ep[1], b, 1, r.rkey, 0, &q), TC_ERR_INVALID_ARG);
    /* exactly at the end is fine */
    memset(b, 0x33, sizeof(b));
    assert_int_equal(tc_tp_put(p.ep[0], b, 0, r.rkey, 100, &q), TC_OK);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &q, TP_WAIT_MS), TC_OK);
    q = (tc_tp_req_t)TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_put(p.ep[0], b, 100, r.rkey, 0, &q), TC_OK);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &q, TP_WAIT_MS), TC_OK);
    for (int i = 0; i < 100; i++)
        assert_int_equal(r.buf[i], 0x33);

    unsigned char blob[64];
    size_t blen = 0;
    tc_tp_rkey_t *k = NULL;
    assert_int_equal(tc_tp_rkey_pack(r.mem, blob, 8, &blen), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_tp_rkey_pack(r.mem, blob, sizeof(blob), &blen), TC_OK);
    assert_int_equal(blen, 32);
    assert_int_equal(tc_tp_rkey_unpack(p.ep[0], blob, blen - 1, &k), TC_ERR_INVALID_ARG);
    /* a key of ctx 1 does not belong to ep[1], which leads to ctx 0 */
    assert_int_equal(tc_tp_rkey_unpack(p.ep[1], blob, blen, &k), TC_ERR_INVALID_ARG);
    blob[0] ^= 1;
    assert_int_equal(tc_tp_rkey_unpack(p.ep[0], blob, blen, &k), TC_ERR_INVALID_ARG);
    assert_null(k);
    region_close(&r);
    tc_tpt_pair_close(&p);
}

/* The target sees the signal only after every earlier put's data (two threads). */
typedef struct order_arg {
    tp_pair_t *p;
    region_t *r;
    int errors;
    int done;
    uint64_t checked; /* last round the target has checked */
} order_arg_t;

enum { ORD_N = 64, ORD_CHUNK = 32768, ORD_ROUNDS = 4 };

static void *order_target(void *argp)
{
    order_arg_t *a = argp;
    uint64_t deadline = tc_deadline_after_ms(TP_WAIT_MS);
    for (uint64_t round = 1; round <= ORD_ROUNDS && !tc_deadline_passed(deadline);) {
        tc_tp_progress(a->p->ctx[1]);
        if (tc_tp_signal_read(a->r->mem, (uint64_t)ORD_N * ORD_CHUNK) < round)
            continue;
        /* every chunk of this round is already there */
        for (int i = 0; i < ORD_N; i++)
            if (tc_tpt_check(a->r->buf + (size_t)i * ORD_CHUNK, ORD_CHUNK, round * 1000 + i) !=
                ORD_CHUNK)
                a->errors++;
        /* one progress call may apply the next round's puts too, so the
         * initiator starts a round only after this one has been checked */
        __atomic_store_n(&a->checked, round, __ATOMIC_RELEASE);
        round++;
    }
    /* keep answering until the initiator is done */
    while (!__atomic_load_n(&a->done, __ATOMIC_ACQUIRE) && !tc_deadline_passed(deadline))
        tc_tp_progress(a->p->ctx[1]);
    return NULL;
}

static void test_put_then_signal_order(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_tcpt_pair_open(&p, NULL);
    region_t r;
    region_open(&p, 1, (size_t)ORD_N * ORD_CHUNK + 8, &r);
    memset(r.buf, 0, r.len);
    unsigned char *src = malloc((size_t)ORD_N * ORD_CHUNK);
    assert_non_null(src);
    order_arg_t a = {&p, &r, 0, 0, 0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, order_target, &a), 0);
    static tc_tp_req_t put[ORD_N];
    for (uint64_t round = 1; round <= ORD_ROUNDS; round++) {
        for (int i = 0; i < ORD_N; i++)
            tc_tpt_fill(src + (size_t)i * ORD_CHUNK, ORD_CHUNK, round * 1000 + i);
        for (int i = 0; i < ORD_N; i++) {
            put[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
            assert_int_equal(tc_tp_put(p.ep[0], src + (size_t)i * ORD_CHUNK, ORD_CHUNK, r.rkey,
                                       (uint64_t)i * ORD_CHUNK, &put[i]),
                             TC_OK);
        }
        tc_tp_req_t sig = TC_TP_REQ_INIT;
        assert_int_equal(
            tc_tp_signal(p.ep[0], r.rkey, (uint64_t)ORD_N * ORD_CHUNK, TC_TP_SIGNAL_ADD, 1, &sig),
            TC_OK);
        assert_int_equal(tc_tpt_wait_req(&p.ctx[0], 1, &sig, TP_WAIT_MS), TC_OK);
        for (int i = 0; i < ORD_N; i++)
            assert_int_equal(put[i].status, TC_OK); /* answered in order, before the signal */
        uint64_t deadline = tc_deadline_after_ms(TP_WAIT_MS);
        while (__atomic_load_n(&a.checked, __ATOMIC_ACQUIRE) < round &&
               !tc_deadline_passed(deadline))
            tc_tp_progress(p.ctx[0]);
        assert_int_equal(__atomic_load_n(&a.checked, __ATOMIC_ACQUIRE), round);
    }
    __atomic_store_n(&a.done, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    assert_int_equal(a.errors, 0);
    assert_int_equal(tc_tp_signal_read(r.mem, (uint64_t)ORD_N * ORD_CHUNK), ORD_ROUNDS);
    free(src);
    region_close(&r);
    tc_tpt_pair_close(&p);
}

/* A key used after the target released it fails the connection at the target (stale key). */
static void test_stale_key(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_tcpt_pair_open(&p, NULL);
    region_t r;
    region_open(&p, 1, 64, &r);
    tc_tp_mem_dereg(r.mem);
    tc_tp_mem_t *again = NULL; /* the slot is reused with another generation */
    assert_int_equal(tc_tp_mem_reg(p.ctx[1], r.buf, 64, &again), TC_OK);
    unsigned char b[8] = {0};
    tc_tp_req_t q = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_put(p.ep[0], b, 8, r.rkey, 0, &q), TC_OK);
    assert_int_equal(tc_tpt_wait_failed(p.ctx, 2, p.ep[1], TP_WAIT_MS), TC_ERR_PROTOCOL);
    assert_non_null(strstr(tc_tp_ep_error(p.ep[1]), "not registered here"));
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &q, TP_WAIT_MS), TC_ERR_PEER_FAILED);
    tc_tp_mem_dereg(again);
    tc_tp_rkey_release(r.rkey);
    free(r.raw);
    tc_tpt_pair_close(&p);
}

/* ---- raw sockets ---- */

static uint64_t rd(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

typedef struct raw_target {
    tc_tp_ctx_t *ctx;
    tc_tp_ep_t *ep;
    int fd;
    _Alignas(64) unsigned char buf[256];
    tc_tp_mem_t *mem;
    uint64_t key;
} raw_target_t;

/* ctx id 1 with 256 bytes registered, and a raw peer logged in as id 0 (no secret). */
static void raw_target_open(raw_target_t *t)
{
    t->ctx = tc_tcpt_ctx_new(1, NULL);
    t->ep = tc_tcpt_loop_ep(t->ctx, 0);
    memset(t->buf, 0, sizeof(t->buf));
    assert_int_equal(tc_tp_mem_reg(t->ctx, t->buf, sizeof(t->buf), &t->mem), TC_OK);
    unsigned char blob[32];
    size_t blen;
    assert_int_equal(tc_tp_rkey_pack(t->mem, blob, sizeof(blob), &blen), TC_OK);
    /* key blob: magic, version, owner id, key, length */
    assert_int_equal(rd(blob + 8), 1);
    assert_int_equal(rd(blob + 24), sizeof(t->buf));
    t->key = rd(blob + 16);
    t->fd = tc_tcpt_raw_hello(t->ctx, 0, 0, 1, 0, 0); /* logged in as id 0, accepted */
}

static void raw_target_close(raw_target_t *t)
{
    close(t->fd);
    tc_tp_mem_dereg(t->mem);
    tc_tp_ep_close(t->ep);
    tc_tp_ctx_destroy(t->ctx);
}

/* Well-formed raw one-sided messages work: put lands and is acked, get answers, signal adds. */
static void test_raw_wire_format(void **state)
{
    (void)state;
    raw_target_t t;
    raw_target_open(&t);
    unsigned char m[32 + 5];
    tc_tcpt_make_hdr32(m, t.key, 0xA1, 5, 10, 0);
    memcpy(m + 32, "abcde", 5);
    tc_tcpt_raw_send(t.fd, m, sizeof(m));
    unsigned char a[32], expect[32];
    assert_int_equal(tc_tcpt_raw_read(t.ctx, t.fd, a, 32, NULL), 32);
    tc_tcpt_make_hdr32(expect, 0, 0xA5, 0, 0, 1); /* an ack answering one put */
    assert_memory_equal(a, expect, 32);
    assert_memory_equal(t.buf + 10, "abcde", 5);

    tc_tcpt_make_hdr32(m, t.key, 0xA3, 0, 16, 41);
    tc_tcpt_raw_send(t.fd, m, 32);
    assert_int_equal(tc_tcpt_raw_read(t.ctx, t.fd, a, 32, NULL), 32);
    assert_memory_equal(a, expect, 32);
    assert_int_equal(tc_tp_signal_read(t.mem, 16), 41);

    tc_tcpt_make_hdr32(m, t.key, 0xA2, 0, 10, 5);
    tc_tcpt_raw_send(t.fd, m, 32);
    unsigned char r[37];
    assert_int_equal(tc_tcpt_raw_read(t.ctx, t.fd, r, 37, NULL), 37);
    tc_tcpt_make_hdr32(expect, 0, 0xA6, 5, 0, 0);
    assert_memory_equal(r, expect, 32);
    assert_memory_equal(r + 32, "abcde", 5);
    assert_int_equal(t.ep->failed, TC_OK);
    raw_target_close(&t);
}

/* Appends a raw one-sided request at *@p p: a put of the 4 bytes @p data at @p off, or, with
 * @p data NULL, a signal adding @p v (kind 0xA3) or a get of @p v bytes (0xA2) at @p off. */
static void raw_req(unsigned char **p, uint64_t key, int kind, uint64_t off, const char *data,
                    uint64_t v)
{
    tc_tcpt_make_hdr32(*p, key, kind, data ? 4 : 0, off, data ? 0 : v);
    if (data)
        memcpy(*p + 32, data, 4);
    *p += data ? 36 : 32;
}

/* Answers are counted and stay in order: puts and signals that one read applies get one ack
 * counting them, written before the answer of a get that follows them and after the answer of
 * a get before them (one write of put, put, signal, get, put, signal: ack 3, the get's data,
 * ack 2). */
static void test_raw_acks_counted(void **state)
{
    (void)state;
    raw_target_t t;
    raw_target_open(&t);
    unsigned char m[6 * 32 + 3 * 4], *p = m;
    raw_req(&p, t.key, 0xA1, 0, "wxyz", 0);
    raw_req(&p, t.key, 0xA1, 4, "1234", 0);
    raw_req(&p, t.key, 0xA3, 16, NULL, 7);
    raw_req(&p, t.key, 0xA2, 0, NULL, 8); /* reads what the two puts wrote */
    raw_req(&p, t.key, 0xA1, 8, "tail", 0);
    raw_req(&p, t.key, 0xA3, 16, NULL, 1);
    assert_int_equal((size_t)(p - m), sizeof(m));
    tc_tcpt_raw_send(t.fd, m, sizeof(m)); /* one write: the target reads it at once */
    unsigned char r[32 + 32 + 8 + 32], expect[32];
    assert_int_equal(tc_tcpt_raw_read(t.ctx, t.fd, r, sizeof(r), NULL), sizeof(r));
    tc_tcpt_make_hdr32(expect, 0, 0xA5, 0, 0, 3);
    assert_memory_equal(r, expect, 32);
    tc_tcpt_make_hdr32(expect, 0, 0xA6, 8, 0, 0);
    assert_memory_equal(r + 32, expect, 32);
    assert_memory_equal(r + 64, "wxyz1234", 8);
    tc_tcpt_make_hdr32(expect, 0, 0xA5, 0, 0, 2);
    assert_memory_equal(r + 72, expect, 32);
    assert_memory_equal(t.buf + 8, "tail", 4);
    assert_int_equal(tc_tp_signal_read(t.mem, 16), 8);
    assert_int_equal(t.ep->failed, TC_OK);
    raw_target_close(&t);
}

/* Hostile one-sided headers: each fails the endpoint with TC_ERR_PROTOCOL, nothing written. */
static void test_raw_hostile(void **state)
{
    (void)state;
    struct {
        int kind;
        int bad_key;
        uint64_t len, off, arg;
        const char *text;
    } cases[] = {
        {0xA1, 1, 4, 0, 0, "not registered here"},
        {0xA1, 0, 4, 253, 0, "4 bytes at offset 253"},
        {0xA1, 0, 1, UINT64_MAX, 0, "at offset 18446744073709551615"},
        {0xA2, 0, 0, 0, 257, "257 bytes at offset 0"},
        {0xA2, 0, 3, 0, 1, "get of 1 bytes"},
        {0xA3, 0, 0, 252, 1, "8 bytes at offset 252"},
        {0xA4, 0, 0, 3, 1, "not 8-byte aligned"},
        {0xA5, 0, 0, 0, 1, "no one-sided request is waiting"},
        {0xA5, 0, 0, 0, 5, "no one-sided request is waiting"},
        {0xA6, 0, 4, 0, 0, "unexpected get response"},
        {0xA5, 0, 1, 0, 1, "malformed ack"},
        {0xA5, 0, 0, 0, 0, "malformed ack"}, /* answers nothing */
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        raw_target_t t;
        raw_target_open(&t);
        unsigned char in[8];
        tc_tp_req_t rq = TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_recv(t.ep, 1, in, sizeof(in), &rq), TC_OK);
        unsigned char m[32 + 8];
        memset(m, 0x77, sizeof(m));
        uint64_t key = cases[c].kind >= 0xA5 ? 0 : cases[c].bad_key ? t.key + 1 : t.key;
        tc_tcpt_make_hdr32(m, key, cases[c].kind, cases[c].len, cases[c].off, cases[c].arg);
        tc_tcpt_raw_send(t.fd, m, sizeof(m));
        assert_int_equal(tc_tpt_wait_failed(&t.ctx, 1, t.ep, 5000), TC_ERR_PROTOCOL);
        if (strstr(tc_tp_ep_error(t.ep), cases[c].text) == NULL)
            print_error("case %zu: '%s' lacks '%s'\n", c, tc_tp_ep_error(t.ep), cases[c].text);
        assert_non_null(strstr(tc_tp_ep_error(t.ep), cases[c].text));
        assert_int_equal(rq.status, TC_ERR_PROTOCOL);
        for (size_t i = 0; i < sizeof(t.buf); i++)
            assert_int_equal(t.buf[i], 0);
        raw_target_close(&t);
    }
}

/* The target dies in the middle of a get's answer, or before answering: PEER_FAILED. */
static void test_peer_lost_during_get(void **state)
{
    (void)state;
    for (int partial = 0; partial < 2; partial++) {
        raw_target_t t; /* here the raw side plays the target of a get by ctx 1 */
        raw_target_open(&t);
        unsigned char blob[32];
        tc_tcpt_le(blob, 0x4b524354u, 4); /* "TCRK" */
        tc_tcpt_le(blob + 4, 1, 4);
        tc_tcpt_le(blob + 8, 0, 8); /* owner: id 0, the raw peer */
        tc_tcpt_le(blob + 16, 5, 8);
        tc_tcpt_le(blob + 24, 1000, 8);
        tc_tp_rkey_t *k = NULL;
        assert_int_equal(tc_tp_rkey_unpack(t.ep, blob, sizeof(blob), &k), TC_OK);
        unsigned char dst[100];
        tc_tp_req_t g = TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_get(t.ep, dst, sizeof(dst), k, 20, &g), TC_OK);
        unsigned char req[32], expect[32];
        assert_int_equal(tc_tcpt_raw_read(t.ctx, t.fd, req, 32, NULL), 32);
        tc_tcpt_make_hdr32(expect, 5, 0xA2, 0, 20, 100);
        assert_memory_equal(req, expect, 32);
        if (partial) {
            unsigned char resp[32 + 30];
            tc_tcpt_make_hdr32(resp, 0, 0xA6, 100, 0, 0);
            memset(resp + 32, 1, 30);
            tc_tcpt_raw_send(t.fd, resp, sizeof(resp));
        }
        close(t.fd);
        t.fd = -1;
        assert_int_equal(tc_tpt_wait_req(&t.ctx, 1, &g, 5000), TC_ERR_PEER_FAILED);
        assert_int_equal(t.ep->failed, TC_ERR_PEER_FAILED);
        assert_non_null(strstr(tc_tp_ep_error(t.ep), partial ? "in the middle of a message (30 "
                                                               "of 100"
                                                             : "closed the connection"));
        /* later one-sided posts fail at once */
        tc_tp_req_t g2 = TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_get(t.ep, dst, 1, k, 0, &g2), TC_ERR_PEER_FAILED);
        assert_int_equal(g2.status, TC_ERR_PEER_FAILED);
        tc_tp_rkey_release(k);
        tc_tp_mem_dereg(t.mem);
        tc_tp_ep_close(t.ep);
        tc_tp_ctx_destroy(t.ctx);
    }
}

/* Progress on ctx[1] until its calls have reported @p want changes in all (at
 * most TP_WAIT_MS); returns what they reported. */
static int target_progress_until(tp_pair_t *p, int want)
{
    int sum = 0;
    uint64_t end = tc_time_ns() + (uint64_t)TP_WAIT_MS * 1000000u;
    while (sum < want && tc_time_ns() < end) {
        int n = tc_tp_progress(p->ctx[1]);
        assert_true(n >= 0);
        sum += n;
        if (n == 0)
            assert_int_equal(tc_tp_wait(p->ctx[1], 10), TC_OK);
    }
    return sum;
}

/* The target's progress reports every put, get and signal it serves, though
 * they complete no request of its own: callers back off to naps after passes
 * that report nothing, and a target that took served requests for idleness
 * answered its peers only when its nap ended. */
static void test_target_progress_counts_served(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_tcpt_pair_open(&p, "rma");
    tc_tpt_pair_up(&p, TP_WAIT_MS); /* the handshake's progress is not under test */
    region_t r;
    region_open(&p, 1, 64, &r);
    memset(r.buf, 0, 64);
    unsigned char src[8], back[8];
    tc_tpt_fill(src, sizeof(src), 7);
    tc_tp_req_t put = TC_TP_REQ_INIT, get = TC_TP_REQ_INIT, sig = TC_TP_REQ_INIT;

    assert_int_equal(tc_tp_put(p.ep[0], src, sizeof(src), r.rkey, 8, &put), TC_OK);
    assert_int_equal(tc_tp_progress(p.ctx[0]), 0); /* sent, not answered */
    assert_int_equal(target_progress_until(&p, 1), 1);
    assert_int_equal(tc_tpt_check(r.buf + 8, sizeof(src), 7), sizeof(src));
    assert_int_equal(tc_tpt_wait_req(p.ctx, 1, &put, TP_WAIT_MS), TC_OK); /* the initiator only */

    assert_int_equal(tc_tp_get(p.ep[0], back, sizeof(back), r.rkey, 8, &get), TC_OK);
    assert_int_equal(target_progress_until(&p, 1), 1);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 1, &get, TP_WAIT_MS), TC_OK);
    assert_int_equal(tc_tpt_check(back, sizeof(back), 7), sizeof(back));

    assert_int_equal(tc_tp_signal(p.ep[0], r.rkey, 16, TC_TP_SIGNAL_ADD, 5, &sig), TC_OK);
    assert_int_equal(target_progress_until(&p, 1), 1);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 1, &sig, TP_WAIT_MS), TC_OK);
    assert_int_equal(tc_tp_signal_read(r.mem, 16), 5);

    /* nothing more arrives: the target reports no change */
    tc_tpt_spin(p.ctx, 2, 20);
    assert_int_equal(tc_tp_progress(p.ctx[1]), 0);
    region_close(&r);
    tc_tpt_pair_close(&p);
}

/* A readable wait descriptor while the socket has something; @p ms at most. */
static int wait_fd_readable(tc_tp_ctx_t *ctx, int ms)
{
    struct pollfd pfd = {.fd = tc_tp_wait_fd(ctx), .events = POLLIN};
    return poll(&pfd, 1, ms) == 1 && (pfd.revents & POLLIN);
}

/* A target that makes no call has a descriptor to sleep on that a peer's put
 * makes readable (a progress thread sleeping on it serves the put at once,
 * instead of when a nap ends), and that is quiet again once served. */
static void test_wait_fd_wakes_target(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_tcpt_pair_open(&p, "rma");
    tc_tpt_pair_up(&p, TP_WAIT_MS);
    assert_true(tc_tp_wait_fd(p.ctx[1]) >= 0);
    region_t r;
    region_open(&p, 1, 64, &r);
    memset(r.buf, 0, 64);
    tc_tpt_spin(p.ctx, 2, 20);
    assert_false(wait_fd_readable(p.ctx[1], 0)); /* nothing to progress */
    unsigned char src[8];
    tc_tpt_fill(src, sizeof(src), 3);
    for (int round = 0; round < 3; round++) {
        tc_tp_req_t put = TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_put(p.ep[0], src, sizeof(src), r.rkey, 8 * round, &put), TC_OK);
        tc_tp_progress(p.ctx[0]);
        assert_true(wait_fd_readable(p.ctx[1], TP_WAIT_MS));
        assert_int_equal(target_progress_until(&p, 1), 1);
        assert_false(wait_fd_readable(p.ctx[1], 0)); /* served: quiet again */
        assert_int_equal(tc_tpt_wait_req(p.ctx, 1, &put, TP_WAIT_MS), TC_OK);
        assert_int_equal(tc_tpt_check(r.buf + 8 * round, sizeof(src), 3), sizeof(src));
    }
    region_close(&r);
    tc_tpt_pair_close(&p);
}

int main(void)
{
    setenv("TC_SOCKET_IFNAME", "lo", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_get_contents),
        cmocka_unit_test(test_many_in_flight),
        cmocka_unit_test(test_signal_values),
        cmocka_unit_test(test_ranges_and_keys),
        cmocka_unit_test(test_put_then_signal_order),
        cmocka_unit_test(test_stale_key),
        cmocka_unit_test(test_raw_wire_format),
        cmocka_unit_test(test_raw_acks_counted),
        cmocka_unit_test(test_raw_hostile),
        cmocka_unit_test(test_peer_lost_during_get),
        cmocka_unit_test(test_target_progress_counts_served),
        cmocka_unit_test(test_wait_fd_wakes_target),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
