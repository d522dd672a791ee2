/* The self backend: tag matching (FIFO per tag), sizes, truncation with guard bytes, cancel,
 * close, refused addresses and keys, one-sided operations on its own memory, and the probe
 * that finds a message before its receive. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/base/status.h"
#include "tcomms/transport/self.h"
#include "tcomms/transport/transport.h"
#include "tests/transport/tp_util.h"

typedef struct one {
    tc_tp_ctx_t *ctx;
    tc_tp_ep_t *ep;
} one_t;

static void open_self(one_t *o, uint64_t id)
{
    tc_tp_ctx_params_t params = TC_TP_CTX_PARAMS_INIT;
    params.self_id = id;
    assert_int_equal(tc_tp_ctx_create(&tc_tp_self_ops, &params, &o->ctx), TC_OK);
    unsigned char addr[TC_TP_SELF_ADDR_LEN];
    size_t len;
    assert_int_equal(tc_tp_addr_pack(o->ctx, addr, sizeof(addr), &len), TC_OK);
    assert_int_equal(len, TC_TP_SELF_ADDR_LEN);
    assert_int_equal(tc_tp_ep_connect(o->ctx, id, addr, len, &o->ep), TC_OK);
}

static void close_self(one_t *o)
{
    tc_tp_ep_close(o->ep);
    tc_tp_ctx_destroy(o->ctx);
}

static unsigned char pat(uint64_t seed, size_t i)
{
    return (unsigned char)((seed * 131 + i * 7 + (i >> 8)) ^ 0x5a);
}

static void test_sizes_and_truncation(void **state)
{
    one_t o;
    open_self(&o, 3);
    size_t sizes[] = {0, 1, 2, 4095, 4096, 4097, 1u << 20, 64u << 20};
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t len = sizes[k];
        for (int trunc = 0; trunc < (len > (1u << 20) ? 1 : 2); trunc++) {
            size_t cap = trunc ? len / 2 : len;
            unsigned char *src = malloc(len + 1), *dst = malloc(cap + 64);
            for (size_t i = 0; i < len; i++)
                src[i] = pat(k, i);
            memset(dst, 0xA5, cap + 64);
            tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
            /* alternate which side is posted first */
            if (k % 2) {
                assert_int_equal(tc_tp_send(o.ep, 1, src, len, &s), TC_OK);
                assert_int_equal(s.status, TC_INPROGRESS); /* no receive yet */
                assert_int_equal(tc_tp_recv(o.ep, 1, dst, cap, &r), TC_OK);
            } else {
                assert_int_equal(tc_tp_recv(o.ep, 1, dst, cap, &r), TC_OK);
                assert_int_equal(tc_tp_send(o.ep, 1, src, len, &s), TC_OK);
            }
            assert_int_equal(tc_tp_progress(o.ctx), 2);
            assert_int_equal(tc_tp_progress(o.ctx), 0);
            assert_int_equal(s.status, TC_OK);
            assert_int_equal(s.bytes, len);
            assert_int_equal(r.status, len <= cap ? TC_OK : TC_ERR_TRUNCATED);
            assert_int_equal(r.bytes, len <= cap ? len : cap);
            for (size_t i = 0; i < r.bytes; i++)
                if (dst[i] != pat(k, i))
                    fail_msg("size %zu: byte %zu differs", len, i);
            for (size_t i = r.bytes; i < cap + 64; i++)
                assert_int_equal(dst[i], 0xA5);
            free(src);
            free(dst);
        }
    }
    close_self(&o);
}

/* FIFO per tag, any order across tags, many in flight. */
static void test_ordering(void **state)
{
    enum { N = 600 };
    one_t o;
    open_self(&o, 0);
    static tc_tp_req_t s[N], r[N];
    static uint32_t val[N], got[N];
    for (int i = 0; i < N; i++) {
        val[i] = (uint32_t)i * 2654435761u;
        got[i] = 0;
        s[i] = r[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_send(o.ep, (uint64_t)(i % 5), &val[i], sizeof(val[i]), &s[i]),
                         TC_OK);
    }
    for (int t = 4; t >= 0; t--)
        for (int i = t; i < N; i += 5)
            assert_int_equal(tc_tp_recv(o.ep, (uint64_t)t, &got[i], sizeof(got[i]), &r[i]),
                             TC_OK);
    assert_int_equal(tc_tp_progress(o.ctx), 2 * N);
    for (int i = 0; i < N; i++) {
        assert_int_equal(r[i].status, TC_OK);
        assert_int_equal(got[i], val[i]);
    }
    close_self(&o);
}

static void test_cancel_close(void **state)
{
    one_t o;
    open_self(&o, 0);
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT, r2 = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(o.ep, 1, "a", 1, &s), TC_OK);
    assert_int_equal(tc_tp_recv(o.ep, 2, NULL, 0, &r), TC_OK);
    assert_int_equal(o.ep->ops->cancel(o.ep, &s), TC_OK);
    assert_int_equal(s.status, TC_ERR_ABORTED);
    assert_int_equal(o.ep->ops->cancel(o.ep, &s), TC_ERR_INVALID_STATE);
    /* the cancelled send is gone: a receive of tag 1 waits */
    char c = 0;
    assert_int_equal(tc_tp_recv(o.ep, 1, &c, 1, &r2), TC_OK);
    assert_int_equal(r2.status, TC_INPROGRESS);
    tc_tp_ep_close(o.ep);
    assert_int_equal(r.status, TC_ERR_ABORTED);
    assert_int_equal(r2.status, TC_ERR_ABORTED);
    tc_tp_ctx_destroy(o.ctx);
}

/* A request posted again while pending is refused; completed ones post again. */
static void test_repost_pending(void **state)
{
    one_t o;
    open_self(&o, 4);
    tc_tpt_repost_check(&o.ctx, 1, o.ep, o.ep);
    close_self(&o);
}

static void test_refusals(void **state)
{
    one_t a, b;
    open_self(&a, 0);
    open_self(&b, 0);
    unsigned char addr[TC_TP_SELF_ADDR_LEN];
    size_t len;
    tc_tp_ep_t *ep;
    assert_int_equal(tc_tp_addr_pack(b.ctx, addr, sizeof(addr), &len), TC_OK);
    assert_int_equal(tc_tp_ep_connect(a.ctx, 0, addr, len, &ep), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "another context"));
    assert_int_equal(tc_tp_addr_pack(a.ctx, addr, sizeof(addr), &len), TC_OK);
    assert_int_equal(tc_tp_ep_connect(a.ctx, 0, addr, len, &ep), TC_ERR_INVALID_STATE);
    assert_int_equal(tc_tp_ep_connect(a.ctx, 1, addr, len, &ep), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_tp_ep_connect(a.ctx, 0, addr, len - 1, &ep), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_tp_addr_pack(a.ctx, addr, len - 1, &len), TC_ERR_INVALID_ARG);
    /* lengths above the maximum are refused as shm and tcp refuse them, nothing is queued */
    tc_tp_req_t big = TC_TP_REQ_INIT;
    size_t too_long[] = {(size_t)TC_TP_SELF_MAX_MSG + 1, SIZE_MAX};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(tc_tp_send(b.ep, 5, addr, too_long[i], &big), TC_ERR_INVALID_ARG);
        assert_non_null(strstr(tc_last_error(), "more than the maximum 1099511627776"));
        assert_non_null(strstr(tc_last_error(), "self send to peer 0"));
    }
    assert_int_equal(tc_tp_send(b.ep, 5, addr, (size_t)TC_TP_SELF_MAX_MSG, &big), TC_OK);
    assert_int_equal(b.ep->ops->cancel(b.ep, &big), TC_OK);
    /* keys of another context are refused */
    uint64_t word = 0;
    tc_tp_mem_t *mem;
    unsigned char key[TC_TP_SELF_RKEY_LEN];
    size_t klen;
    tc_tp_rkey_t *rk;
    assert_int_equal(tc_tp_mem_reg(b.ctx, &word, sizeof(word), &mem), TC_OK);
    assert_int_equal(tc_tp_rkey_pack(mem, key, sizeof(key), &klen), TC_OK);
    assert_int_equal(tc_tp_rkey_unpack(a.ep, key, klen, &rk), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_tp_rkey_unpack(b.ep, key, klen - 1, &rk), TC_ERR_INVALID_ARG);
    tc_tp_mem_dereg(mem);
    assert_int_equal(tc_tp_rkey_unpack(b.ep, key, klen, &rk), TC_ERR_INVALID_ARG); /* dead */
    close_self(&a);
    close_self(&b);
}

static void test_one_sided(void **state)
{
    one_t o;
    open_self(&o, 9);
    enum { LEN = 4096 };
    static unsigned char reg[LEN], src[LEN], back[LEN];
    for (int i = 0; i < LEN; i++)
        src[i] = pat(1, (size_t)i);
    tc_tp_mem_t *mem;
    assert_int_equal(tc_tp_mem_reg(o.ctx, reg, LEN, &mem), TC_OK);
    unsigned char key[TC_TP_SELF_RKEY_LEN];
    size_t klen;
    tc_tp_rkey_t *rk;
    assert_int_equal(tc_tp_rkey_pack(mem, key, sizeof(key), &klen), TC_OK);
    assert_int_equal(tc_tp_rkey_unpack(o.ep, key, klen, &rk), TC_OK);
    assert_int_equal(rk->len, LEN);
    tc_tp_req_t p = TC_TP_REQ_INIT, g = TC_TP_REQ_INIT, s1 = TC_TP_REQ_INIT, s2 = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_put(o.ep, src, 1000, rk, 16, &p), TC_OK);
    assert_int_equal(p.status, TC_OK);
    assert_memory_equal(reg + 16, src, 1000);
    assert_int_equal(reg[15], 0);
    assert_int_equal(reg[1016], 0);
    assert_int_equal(tc_tp_get(o.ep, back, 1000, rk, 16, &g), TC_OK);
    assert_memory_equal(back, src, 1000);
    assert_int_equal(tc_tp_signal(o.ep, rk, 0, TC_TP_SIGNAL_ADD, 5, &s1), TC_OK);
    assert_int_equal(tc_tp_signal(o.ep, rk, 8, TC_TP_SIGNAL_SET, 77, &s2), TC_OK);
    assert_int_equal(tc_tp_signal(o.ep, rk, 0, TC_TP_SIGNAL_ADD, 6, &s1), TC_OK);
    assert_int_equal(tc_tp_signal_read(mem, 0), 11);
    assert_int_equal(tc_tp_signal_read(mem, 8), 77);
    assert_int_equal(tc_tp_progress(o.ctx), 5);
    tc_tp_req_t bad = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_put(o.ep, src, 2, rk, LEN - 1, &bad), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_tp_signal(o.ep, rk, 3, TC_TP_SIGNAL_ADD, 1, &bad), TC_ERR_INVALID_ARG);
    tc_tp_rkey_release(rk);
    tc_tp_mem_dereg(mem);
    close_self(&o);
}

static void test_probe(void **state)
{
    (void)state;
    one_t o;
    open_self(&o, 4);
    tc_tpt_probe_check_self(o.ctx, o.ep);
    close_self(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_and_truncation),
        cmocka_unit_test(test_ordering),
        cmocka_unit_test(test_cancel_close),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_one_sided),
        cmocka_unit_test(test_probe),
        cmocka_unit_test(test_repost_pending),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
