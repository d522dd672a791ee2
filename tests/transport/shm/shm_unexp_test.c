/* Messages that arrive before their receive: an eager one is kept in a record of a cell's size
 * that the context reuses, so a steady stream of them allocates nothing after the first; a
 * burst of more than the context keeps allocates only the excess again; records of larger
 * (pipelined) messages are freed, never kept; every message arrives whole and in order; the
 * probe finds them before their receive. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "transport/shm/src/shm_internal.h"
#include "shm_util.h"
#include "tcomms/transport/shm.h"
#include "tcomms/transport/transport.h"
#include "tests/transport/tp_util.h"

static void test_reuse(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_shmt_pair_open(&p, "shm_cells=64");
    tc_shm_ctx_t *rx = (tc_shm_ctx_t *)p.ctx[1];

    tc_tpt_unexpected_burst(&p, 1, 100, 1, SU_WAIT_MS);
    uint64_t base = rx->unexp_allocs;
    assert_int_equal(base, 1);
    for (int i = 0; i < 200; i++) /* one at a time: the same record each time */
        tc_tpt_unexpected_burst(&p, 1, 1 + (size_t)(i * 37) % 8192, 2 + (uint64_t)i, SU_WAIT_MS);
    assert_int_equal(rx->unexp_allocs, base);

    /* 24 in flight: the context keeps 16, so a second burst allocates 8 again */
    tc_tpt_unexpected_burst(&p, 24, 512, 300, SU_WAIT_MS);
    uint64_t after_first = rx->unexp_allocs;
    assert_int_equal(after_first, 24);
    assert_int_equal(rx->nunexp_free, TC_SHM_UNEXP_KEEP);
    tc_tpt_unexpected_burst(&p, 24, 512, 301, SU_WAIT_MS);
    assert_int_equal(rx->unexp_allocs - after_first, 24 - TC_SHM_UNEXP_KEEP);

    /* pipelined (larger than a cell, single copy off): allocated each time, never kept */
    tc_tpt_pair_close(&p);
    tc_shmt_pair_open(&p, "shm_cma=0");
    rx = (tc_shm_ctx_t *)p.ctx[1];
    for (int i = 0; i < 3; i++)
        tc_tpt_unexpected_burst(&p, 1, 3 * 8192 + 5, 400 + (uint64_t)i, SU_WAIT_MS);
    assert_int_equal(rx->unexp_allocs, 3);
    assert_int_equal(rx->nunexp_free, 0);
    tc_tpt_pair_close(&p);
}

/* Gets in pipelined mode (single copy off): the target's job records come from its pool. 200
 * gets one at a time take one chunk; bursts of 24 grow it once to the peak in flight, and later
 * bursts allocate nothing. Every get's bytes are checked against the target's. */
static void get_burst(tp_pair_t *p, tc_tp_rkey_t *rk, const unsigned char *target, int n,
                      size_t len, size_t off)
{
    unsigned char back[24][3000];
    tc_tp_req_t g[24];
    assert_true(n <= 24 && len <= sizeof(back[0]));
    for (int i = 0; i < n; i++) {
        memset(back[i], 0, len);
        g[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_get(p->ep[0], back[i], len, rk, off + (size_t)i * 7, &g[i]), TC_OK);
    }
    for (int i = 0; i < n; i++) {
        assert_int_equal(tc_tpt_wait_req(p->ctx, 2, &g[i], SU_WAIT_MS), TC_OK);
        assert_int_equal(g[i].bytes, len);
        assert_memory_equal(back[i], target + off + (size_t)i * 7, len);
    }
}

static void test_get_jobs(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_shmt_pair_open(&p, "shm_cma=0");
    tc_shm_ctx_t *target_ctx = (tc_shm_ctx_t *)p.ctx[1];
    size_t len = 64u << 10;
    unsigned char *target = malloc(len);
    assert_non_null(target);
    tc_tpt_fill(target, len, 77);
    tc_tp_mem_t *mem;
    tc_tp_rkey_t *rk = tc_shmt_rkey(&p, target, len, &mem);

    for (int i = 0; i < 200; i++) /* one at a time: one chunk serves them all */
        get_burst(&p, rk, target, 1, 1 + (size_t)(i * 131) % 3000, (size_t)i * 97);
    size_t chunk = target_ctx->jobs.objs_per_chunk;
    assert_int_equal(target_ctx->jobs.total_objs, chunk);
    assert_int_equal(tc_pool_in_use(&target_ctx->jobs), 0);
    size_t peak = 0;
    for (int i = 0; i < 3; i++) { /* up to 24 in flight: the pool grows once, then stays */
        get_burst(&p, rk, target, 24, 2500, 1000 + (size_t)i);
        assert_int_equal(tc_pool_in_use(&target_ctx->jobs), 0);
        size_t total = target_ctx->jobs.total_objs;
        assert_true(total > chunk && total <= 24 + chunk);
        if (i > 0)
            assert_int_equal(total, peak);
        peak = total;
    }

    tc_tp_rkey_release(rk);
    tc_tp_mem_dereg(mem);
    free(target);
    tc_tpt_pair_close(&p); /* frees the pool (ASan checks) */
}

/* The probe finds a message before its receive: one cell, one that stays with its sender
 * (single-copy), and one pipelined through the ring (found while its cells arrive); the second
 * of a tag after the first is received. */
static void test_probe(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_shmt_pair_open(&p, NULL);
    tc_tpt_probe_check(&p, 100, 0, 1);
    tc_tpt_probe_check(&p, 50000, 7, 2);
    tc_tpt_probe_check(&p, 4u << 20, 3u << 20, 3);
    tc_tpt_pair_close(&p);
    /* pipelined through a ring of 4 cells: still arriving when found, and when claimed */
    tc_shmt_pair_open(&p, "shm_cma=0,shm_cells=4");
    tc_tpt_probe_check(&p, 100000, 300000, 4);
    tc_tpt_pair_close(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reuse),
        cmocka_unit_test(test_get_jobs),
        cmocka_unit_test(test_probe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
