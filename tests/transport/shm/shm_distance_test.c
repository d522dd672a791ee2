/*
 * Copies at every distance class (base/copy.h, docs/kernels.md "Copies"), with TC_COPY=loop so
 * that the paths taken on AMD processors run on any CPU: messages through the cells and the
 * single-copy path (tc_shm_cma_at: through the staging area in pieces when the receive buffer is
 * 1-63 bytes ahead of the send buffer modulo 4 KiB), and one-sided puts and gets; every byte
 * checked, and the bytes around the receive buffer untouched.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "shm_util.h"
#include "tcomms/base/copy.h"
#include "tcomms/base/status.h"

#define GUARD 0xa5
static const size_t sizes[] = {4096 + 3, 70001, 300000, (1u << 20) + 5};
static const size_t dists[] = {0, 1, 16, 31, 32, 63, 64, 100, 4095};

static void check_guard(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        assert_int_equal(p[i], GUARD);
}

static void test_messages(void **state)
{
    (void)state;
    assert_int_equal(tc_copy_loop_on(), 1);
    tp_pair_t p;
    tc_shmt_pair_open(&p, NULL);
    assert_int_equal(tc_tp_shm_ep_single_copy(p.ep[1]), 1);
    size_t area = (1u << 20) + 3 * 4096; /* the largest message and its margins; 4 KiB pages */
    unsigned char *src = aligned_alloc(4096, area), *dst = aligned_alloc(4096, area);
    assert_non_null(src);
    assert_non_null(dst);
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        for (size_t di = 0; di < sizeof(dists) / sizeof(dists[0]); di++) {
            size_t len = sizes[si], d = dists[di];
            uint64_t seed = si * 16 + di;
            unsigned char *from = src + 64, *to = dst + 64 + d;
            tc_tpt_fill(from, len, seed);
            memset(dst, GUARD, area);
            tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
            assert_int_equal(tc_tp_recv(p.ep[1], 3, to, len, &r), TC_OK);
            assert_int_equal(tc_tp_send(p.ep[0], 3, from, len, &s), TC_OK);
            assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &r, SU_WAIT_MS), TC_OK);
            assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &s, SU_WAIT_MS), TC_OK);
            assert_int_equal(r.bytes, len);
            assert_int_equal(tc_tpt_check(to, len, seed), len);
            check_guard(dst, 64 + d);
            check_guard(to + len, 64);
        }
    }
    free(src);
    free(dst);
    tc_tpt_pair_close(&p);
}

static void test_one_sided(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_shmt_pair_open(&p, NULL);
    size_t len = 2u << 20;
    unsigned char *target = aligned_alloc(4096, len), *local = aligned_alloc(4096, len);
    assert_non_null(target);
    assert_non_null(local);
    tc_tp_mem_t *mem;
    tc_tp_rkey_t *rk = tc_shmt_rkey(&p, target, len, &mem);
    for (size_t di = 0; di < sizeof(dists) / sizeof(dists[0]); di++) {
        size_t n = 300000, d = dists[di], at = 4096; /* the target's bytes at a page */
        uint64_t seed = 100 + di;
        /* put: the target is d bytes ahead of the source; get: the local buffer is */
        tc_tpt_fill(local + 4096 - d, n, seed);
        memset(target, GUARD, len);
        tc_tp_req_t put = TC_TP_REQ_INIT, get = TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_put(p.ep[0], local + 4096 - d, n, rk, at, &put), TC_OK);
        assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &put, SU_WAIT_MS), TC_OK);
        assert_int_equal(tc_tpt_check(target + at, n, seed), n);
        check_guard(target, at);
        check_guard(target + at + n, 64);
        memset(local, GUARD, len);
        assert_int_equal(tc_tp_get(p.ep[0], local + 4096 + d, n, rk, at, &get), TC_OK);
        assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &get, SU_WAIT_MS), TC_OK);
        assert_int_equal(tc_tpt_check(local + 4096 + d, n, seed), n);
        check_guard(local, 4096 + d);
        check_guard(local + 4096 + d + n, 64);
    }
    tc_tp_rkey_release(rk);
    tc_tp_mem_dereg(mem);
    free(target);
    free(local);
    tc_tpt_pair_close(&p);
}

int main(void)
{
    setenv("TC_COPY", "loop", 1); /* before any copy decides */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_messages),
        cmocka_unit_test(test_one_sided),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
