/* Receiving into a consumer (tc_tp_recv_sink) over shm: every piece arrives in order, without
 * gaps, aligned to the sink's unit, and a consumer that combines each piece with local memory
 * (here: a byte-wise sum, the shape of the executor's receive-reduce) gets, element by element,
 * what a plain receive followed by the same sum gives. Sizes around the cell size and the
 * staging area, odd element counts, units of every element size, expected and unexpected
 * messages, truncation, a consumer that fails, and a bad unit. Each test runs with single copy
 * (process_vm_readv through the staging area) and with pipelined copies through the cells. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shm_util.h"
#include "tcomms/base/status.h"
#include "tcomms/transport/shm.h"
#include "tcomms/transport/transport.h"
#include "tests/transport/tp_util.h"

static const char *mode(void **state)
{
    return *state;
}

/* One message into a checking sink (tc_tpt_one_sum); pieces no larger than the staging area
 * (single copy) or a cell (pipelined); an unexpected pipelined message was stored whole and
 * comes in one piece. */
static void one_sum(tp_pair_t *p, size_t len, size_t cap, size_t unit, int unexpected,
                    uint64_t seed)
{
    size_t n = len <= cap ? len : cap;
    size_t pieces = tc_tpt_one_sum(p, len, cap, unit, unexpected, seed, SU_WAIT_MS);
    if (!unexpected)
        assert_true(pieces >= (n + (128u << 10) - 1) / (128u << 10));
}

static void test_sum_every_size_and_unit(void **state)
{
    /* element counts: odd, around the cell (8 KiB) and the staging area (128 KiB) */
    static const size_t elems[] = {0, 1, 3, 1023, 1025, 8191, 16385, 32769, 131073, 393217};
    static const size_t units[] = {1, 2, 4, 8};
    tp_pair_t p;
    tc_shmt_pair_open(&p, mode(state));
    assert_int_equal(tc_tp_shm_ep_single_copy(p.ep[0]), strstr(mode(state), "shm_cma=0") == NULL);
    uint64_t seed = 1;
    for (size_t u = 0; u < 4; u++)
        for (size_t e = 0; e < sizeof(elems) / sizeof(elems[0]); e++, seed++) {
            size_t len = elems[e] * units[u];
            if (len > (2u << 20))
                continue;
            one_sum(&p, len, len, units[u], (int)(seed % 3 == 0), seed);
        }
    tc_tpt_pair_close(&p);
}

/* Messages that arrive before their receive and fit the record kept for them (a cell, or any
 * size through the cells): the one piece is aligned to the larger units too (16 bytes). */
static void test_unexpected_large_units(void **state)
{
    static const size_t units[] = {16, 32, 64};
    static const size_t lens[] = {64, 4096, 8192, 3 * 8192 + 64};
    tp_pair_t p;
    tc_shmt_pair_open(&p, mode(state));
    uint64_t seed = 7;
    for (size_t u = 0; u < 3; u++)
        for (size_t l = 0; l < 4; l++, seed++)
            one_sum(&p, lens[l], lens[l], units[u], 1, seed);
    tc_tpt_pair_close(&p);
}

static void test_sum_truncated(void **state)
{
    tp_pair_t p;
    tc_shmt_pair_open(&p, mode(state));
    one_sum(&p, 300001 * 4, 200003 * 4, 4, 0, 7);
    one_sum(&p, 300001 * 4, 200003 * 4, 4, 1, 8);
    one_sum(&p, 9000, 4096, 8, 0, 9);
    tc_tpt_pair_close(&p);
}

/* A consumer error ends that receive with its status; the next message is whole. */
static void test_consumer_error(void **state)
{
    tp_pair_t p;
    tc_shmt_pair_open(&p, mode(state));
    size_t len = 600000;
    unsigned char *src = malloc(len), *local = calloc(1, len), *out = malloc(len);
    assert_true(src && local && out);
    tc_tpt_fill(src, len, 3);
    tc_tpt_sum_sink_t k = {local, out, 8, 0, 0, 8192, 0, len};
    tc_tp_sink_t sink = {tc_tpt_sum_fn, &k, 8};
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv_sink(p.ep[1], 5, &sink, len, &r), TC_OK);
    assert_int_equal(tc_tp_send(p.ep[0], 5, src, len, &s), TC_OK);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &r, SU_WAIT_MS), TC_ERR_UNSUPPORTED);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &s, SU_WAIT_MS), TC_OK);
    assert_true(k.next <= 8192 + (128u << 10)); /* no piece after the refusal */
    one_sum(&p, 100000, 100000, 8, 0, 4);
    free(src);
    free(local);
    free(out);
    tc_tpt_pair_close(&p);
}

static void test_bad_unit(void **state)
{
    tp_pair_t p;
    tc_shmt_pair_open(&p, mode(state));
    tc_tpt_sum_sink_t k = {NULL, NULL, 3, 0, 0, SIZE_MAX, 0, 0};
    tc_tp_sink_t sink = {tc_tpt_sum_fn, &k, 3};
    tc_tp_req_t r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv_sink(p.ep[1], 5, &sink, 12, &r), TC_ERR_INVALID_ARG);
    sink.unit = 128;
    assert_int_equal(tc_tp_recv_sink(p.ep[1], 5, &sink, 12, &r), TC_ERR_INVALID_ARG);
    sink.unit = 4;
    sink.fn = NULL;
    assert_int_equal(tc_tp_recv_sink(p.ep[1], 5, &sink, 12, &r), TC_ERR_INVALID_ARG);
    tc_tpt_pair_close(&p);
}

#define MODES(f)                                                                                   \
    cmocka_unit_test_prestate(f, ""), cmocka_unit_test_prestate(f, "shm_cma=0"),                   \
        cmocka_unit_test_prestate(f, "shm_cell_size=64,shm_cells=2,shm_cma=0")

int main(void)
{
    const struct CMUnitTest tests[] = {
        MODES(test_sum_every_size_and_unit),
        MODES(test_unexpected_large_units),
        MODES(test_sum_truncated),
        MODES(test_consumer_error),
        cmocka_unit_test_prestate(test_bad_unit, ""),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
