/* Receiving into a consumer (tc_tp_recv_sink) over TCP: every piece arrives in order, without
 * gaps, aligned to the sink's unit, and a consumer that combines each piece with local memory
 * (a byte-wise sum, the shape of the executor's receive-reduce) gets, byte by byte, what the
 * sum computed here from the sent pattern gives. Sizes around the staging area (64 KiB) and the
 * striping threshold, odd counts, units of every element size, expected and unexpected
 * messages, truncation, a consumer that fails, cancel, and bad arguments; with one socket per
 * pair and with four (striped messages). A raw peer writes a message in pieces of chosen sizes
 * (1, 3, 63 bytes ...), so that reads end inside a unit, and a message claimed while arriving. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcomms/base/status.h"
#include "tcomms/transport/tcp.h"
#include "tcomms/transport/transport.h"
#include "tcp_util.h"
#include "tp_util.h"

#define WAIT_MS 20000

static const char *hints(void **state)
{
    return *state;
}

static void pair_open(tp_pair_t *p, void **state)
{
    tc_tpt_pair_open(p, &tc_tp_tcp_ops, NULL, hints(state)[0] ? hints(state) : NULL);
    tc_tpt_pair_up(p, WAIT_MS);
}

static void one_sum(tp_pair_t *p, size_t len, size_t cap, size_t unit, int unexpected,
                    uint64_t seed)
{
    tc_tpt_one_sum(p, len, cap, unit, unexpected, seed, WAIT_MS);
}

static void test_sum_every_size_and_unit(void **state)
{
    /* element counts: odd, around the staging area (64 KiB), the direct-read threshold
     * (16 KiB), the striping threshold (4 KiB or 256 KiB) and a chunk (64-512 KiB) */
    static const size_t elems[] = {0, 1, 3, 1023, 1025, 4097, 16385, 65535, 65537, 262145, 700001};
    static const size_t units[] = {1, 2, 4, 8, 64};
    tp_pair_t p;
    pair_open(&p, state);
    uint64_t seed = 1;
    for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++)
        for (size_t e = 0; e < sizeof(elems) / sizeof(elems[0]); e++, seed++) {
            size_t len = elems[e] * units[u];
            if (len > (8u << 20))
                continue;
            one_sum(&p, len, len, units[u], (int)(seed % 3 == 0), seed);
        }
    one_sum(&p, (16u << 20) + 8, (16u << 20) + 8, 8, 0, 99); /* a large one, several chunks */
    tc_tpt_pair_close(&p);
}

static void test_sum_truncated(void **state)
{
    tp_pair_t p;
    pair_open(&p, state);
    one_sum(&p, 300001 * 4, 200003 * 4, 4, 0, 7);
    one_sum(&p, 300001 * 4, 200003 * 4, 4, 1, 8);
    one_sum(&p, 9000, 4096, 8, 0, 9);
    one_sum(&p, 9000, 4095, 8, 0, 10); /* ends inside a unit: the last piece is short */
    one_sum(&p, 100000, 0, 8, 0, 11);
    tc_tpt_pair_close(&p);
}

/* A consumer error ends that receive with its status and no piece follows; the endpoint and the
 * next message are whole. */
static void test_consumer_error(void **state)
{
    tp_pair_t p;
    pair_open(&p, state);
    size_t len = 600000;
    unsigned char *src = malloc(len), *local = calloc(1, len), *out = malloc(len);
    assert_true(src && local && out);
    tc_tpt_fill(src, len, 3);
    tc_tpt_sum_sink_t k = {local, out, 8, 0, 0, 8192, 0, len};
    tc_tp_sink_t sink = {tc_tpt_sum_fn, &k, 8};
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv_sink(p.ep[1], 5, &sink, len, &r), TC_OK);
    assert_int_equal(tc_tp_send(p.ep[0], 5, src, len, &s), TC_OK);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &r, WAIT_MS), TC_ERR_UNSUPPORTED);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &s, WAIT_MS), TC_OK);
    size_t calls = k.pieces;
    tc_tpt_spin(p.ctx, 2, 20);
    assert_int_equal(k.pieces, calls); /* nothing after the refusal */
    assert_int_equal(k.bad, 0);
    assert_int_equal(p.ep[1]->failed, TC_OK);
    one_sum(&p, 100000, 100000, 8, 0, 4);
    one_sum(&p, 700000, 700000, 4, 1, 5);
    free(src);
    free(local);
    free(out);
    tc_tpt_pair_close(&p);
}

/* Cancel of a sink receive while posted and while being filled: TC_ERR_ABORTED, no piece after
 * it; the next message is whole. */
static void test_cancel(void **state)
{
    tp_pair_t p;
    pair_open(&p, state);
    size_t len = 8u << 20;
    unsigned char *src = malloc(len), *local = calloc(1, len), *out = malloc(len);
    assert_true(src && local && out);
    tc_tpt_fill(src, len, 21);
    tc_tpt_sum_sink_t k = {local, out, 4, 0, 0, SIZE_MAX, 0, len};
    tc_tp_sink_t sink = {tc_tpt_sum_fn, &k, 4};
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv_sink(p.ep[1], 6, &sink, len, &r), TC_OK);
    assert_int_equal(p.ep[1]->ops->cancel(p.ep[1], &r), TC_OK);
    assert_int_equal(r.status, TC_ERR_ABORTED);

    r = (tc_tp_req_t)TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv_sink(p.ep[1], 6, &sink, len, &r), TC_OK);
    assert_int_equal(tc_tp_send(p.ep[0], 6, src, len, &s), TC_OK);
    /* a few passes, so that part of the message is in (striped: landed, not handed over) */
    for (int i = 0; i < 400 && k.pieces == 0 && r.status == TC_INPROGRESS; i++) {
        tc_tp_progress(p.ctx[0]);
        tc_tp_progress(p.ctx[1]);
    }
    if (r.status == TC_INPROGRESS) {
        assert_int_equal(p.ep[1]->ops->cancel(p.ep[1], &r), TC_OK);
        assert_int_equal(r.status, TC_ERR_ABORTED);
    }
    size_t calls = k.pieces;
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &s, WAIT_MS), TC_OK);
    tc_tpt_spin(p.ctx, 2, 20);
    assert_int_equal(k.pieces, calls);
    assert_int_equal(k.bad, 0);
    one_sum(&p, 300000, 300000, 8, 0, 22);
    free(src);
    free(local);
    free(out);
    tc_tpt_pair_close(&p);
}

static void test_bad_unit(void **state)
{
    tp_pair_t p;
    pair_open(&p, state);
    tc_tpt_sum_sink_t k = {NULL, NULL, 3, 0, 0, SIZE_MAX, 0, 0};
    tc_tp_sink_t sink = {tc_tpt_sum_fn, &k, 3};
    tc_tp_req_t r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv_sink(p.ep[1], 5, &sink, 12, &r), TC_ERR_INVALID_ARG);
    sink.unit = 128;
    assert_int_equal(tc_tp_recv_sink(p.ep[1], 5, &sink, 12, &r), TC_ERR_INVALID_ARG);
    sink.unit = 0;
    assert_int_equal(tc_tp_recv_sink(p.ep[1], 5, &sink, 12, &r), TC_ERR_INVALID_ARG);
    sink.unit = 4;
    sink.fn = NULL;
    assert_int_equal(tc_tp_recv_sink(p.ep[1], 5, &sink, 12, &r), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_tp_recv_sink(p.ep[1], 5, NULL, 12, &r), TC_ERR_INVALID_ARG);
    tc_tpt_pair_close(&p);
}

/* Write @p len bytes of a message (tag 3) from a raw peer in pieces of the sizes in @p cuts
 * (cycled), progressing the receiver between them; a part (@p before bytes) before the sink
 * receive is posted, so that it claims the message while it arrives. */
static void raw_pieces(size_t len, size_t cap, size_t unit, size_t before, const size_t *cuts,
                       size_t ncuts, uint64_t seed)
{
    tc_tp_ctx_t *ctx = tc_tcpt_ctx_new(1, NULL);
    tc_tp_ep_t *ep = tc_tcpt_loop_ep(ctx, 0);
    int fd = tc_tcpt_raw_hello(ctx, 0, 0, 1, 0, 0);
    assert_true(fd >= 0);
    size_t n = len <= cap ? len : cap;
    unsigned char *msg = malloc(16 + len), *local = malloc(cap + 1), *out = malloc(cap + 64);
    assert_true(msg && local && out);
    tc_tcpt_le(msg, 3, 8);
    tc_tcpt_le(msg + 8, len, 8);
    tc_tpt_fill(msg + 16, len, seed);
    tc_tpt_fill(local, cap, seed + 7);
    memset(out, 0xA5, cap + 64);
    tc_tpt_sum_sink_t k = {local, out, unit, 0, 0, SIZE_MAX, 0, n};
    tc_tp_sink_t sink = {tc_tpt_sum_fn, &k, unit};
    tc_tp_req_t r = TC_TP_REQ_INIT;
    size_t at = 0, c = 0;
    int posted = 0;
    while (at < 16 + len) {
        if (!posted && at >= 16 + before) {
            tc_tpt_spin(&ctx, 1, 5);
            assert_int_equal(tc_tp_recv_sink(ep, 3, &sink, cap, &r), TC_OK);
            posted = 1;
        }
        size_t w = cuts[c++ % ncuts];
        w = w < 16 + len - at ? w : 16 + len - at;
        if (!posted && at < 16 + before && w > 16 + before - at)
            w = 16 + before - at;
        tc_tcpt_raw_send(fd, msg + at, w);
        at += w;
        tc_tpt_spin(&ctx, 1, 1);
    }
    if (!posted)
        assert_int_equal(tc_tp_recv_sink(ep, 3, &sink, cap, &r), TC_OK);
    assert_int_equal(tc_tpt_wait_req(&ctx, 1, &r, WAIT_MS), len <= cap ? TC_OK : TC_ERR_TRUNCATED);
    assert_int_equal(r.bytes, n);
    assert_int_equal(k.bad, 0);
    assert_int_equal(k.next, n);
    char what[96];
    snprintf(what, sizeof(what), "raw %zu bytes into %zu, unit %zu, %zu before", len, cap, unit,
             before);
    tc_tpt_check_sum(out, local, n, cap, seed, what);
    assert_int_equal(ep->failed, TC_OK);
    close(fd);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);
    free(msg);
    free(local);
    free(out);
}

/* Reads that end inside a unit: the piece is completed by the next read. */
static void test_raw_odd_pieces(void **state)
{
    (void)state;
    static const size_t tiny[] = {1, 3, 5, 63, 2, 17};
    static const size_t mixed[] = {7, 20000, 1, 65, 40001};
    raw_pieces(1000, 1000, 8, 0, tiny, 6, 31);
    raw_pieces(999, 999, 64, 0, tiny, 6, 32);
    raw_pieces(100003, 100003, 4, 0, mixed, 5, 33);
    raw_pieces(100003, 50001, 8, 0, mixed, 5, 34); /* truncated inside a unit */
    /* claimed while arriving: the bytes buffered so far go to the sink at the post */
    raw_pieces(100000, 100000, 8, 33, mixed, 5, 35);
    raw_pieces(100000, 100000, 8, 60000, mixed, 5, 36);
    raw_pieces(100000, 40000, 8, 60000, mixed, 5, 37); /* more buffered than it keeps */
    raw_pieces(5000, 5000, 16, 4999, tiny, 6, 38);
}

#define MODES(f)                                                                                   \
    cmocka_unit_test_prestate(f, ""), cmocka_unit_test_prestate(f, "tcp_nsocks=4"),                \
        cmocka_unit_test_prestate(f, "tcp_nsocks=4,tcp_stripe_min=4096")

int main(void)
{
    const struct CMUnitTest tests[] = {
        MODES(test_sum_every_size_and_unit),
        MODES(test_sum_truncated),
        MODES(test_consumer_error),
        MODES(test_cancel),
        cmocka_unit_test_prestate(test_bad_unit, ""),
        cmocka_unit_test(test_raw_odd_pieces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
