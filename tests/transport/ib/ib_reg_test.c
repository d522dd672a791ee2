/* The verbs backend's memory registrations against the emulated HCA: the cache of transfer
 * registrations (TC_IB_REG_CACHE: invalidation, its bound, off) and the default, which registers
 * a transfer's buffer for the transfer alone unless the caller registered it. */
#include <arpa/inet.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ib_pair.h"
#include "tcomms/base/time.h"
#include "tcomms/transport/ib.h"

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

int main(void)
{
    setenv("TC_SOCKET_IFNAME", "lo", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reg_cache),
        cmocka_unit_test(test_reg_cache_invalidate),
        cmocka_unit_test(test_reg_cache_lru),
        cmocka_unit_test(test_reg_cache_off),
        cmocka_unit_test(test_reg_default_rndv_released),
        cmocka_unit_test(test_reg_default_explicit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
