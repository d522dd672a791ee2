/* Messages that arrive over TCP before their receive: one up to 8 KiB is kept in a record the
 * context reuses, so a steady stream of them allocates nothing after the first; a burst of more
 * than the context keeps allocates only the excess again; of larger records the context keeps
 * the last one released, which a message of its size down to half of it reuses; the same for
 * striped messages (several sockets); a trim gives the large one back; every message arrives
 * whole and in order; the probe finds them before their receive; those of a tag no receive will
 * take are freed on request. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/transport/tcp.h"
#include "tcomms/transport/transport.h"
#include "tests/transport/tp_util.h"
#include "transport/tcp/tcp_internal.h"

#define WAIT_MS 20000

static void test_reuse(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_tpt_pair_open(&p, &tc_tp_tcp_ops, NULL, NULL);
    tc_tpt_pair_up(&p, WAIT_MS);
    tc_tcp_ctx_t *rx = (tc_tcp_ctx_t *)p.ctx[1];

    tc_tpt_unexpected_burst(&p, 1, 100, 1, WAIT_MS);
    uint64_t base = rx->unexp_allocs;
    assert_int_equal(base, 1);
    for (int i = 0; i < 200; i++) /* one at a time: the same record each time */
        tc_tpt_unexpected_burst(&p, 1, 1 + (size_t)(i * 37) % TC_TCP_UNEXP_BYTES, 2 + (uint64_t)i,
                                WAIT_MS);
    assert_int_equal(rx->unexp_allocs, base);

    /* 24 in flight: the context keeps 16, so a second burst allocates 8 again */
    tc_tpt_unexpected_burst(&p, 24, 512, 300, WAIT_MS);
    uint64_t after_first = rx->unexp_allocs;
    assert_int_equal(after_first, 24);
    assert_int_equal(rx->nunexp_free, TC_TCP_UNEXP_KEEP);
    tc_tpt_unexpected_burst(&p, 24, 512, 301, WAIT_MS);
    assert_int_equal(rx->unexp_allocs - after_first, 24 - TC_TCP_UNEXP_KEEP);

    /* larger than a small record, growing: each allocated, the last one kept */
    const uint64_t small = rx->unexp_allocs;
    for (int i = 0; i < 3; i++)
        tc_tpt_unexpected_burst(&p, 1, TC_TCP_UNEXP_BYTES + 1 + (size_t)i * 5000, 400 + (uint64_t)i,
                                WAIT_MS);
    assert_int_equal(rx->unexp_allocs - small, 3);
    assert_int_equal(rx->nunexp_free, TC_TCP_UNEXP_KEEP);
    assert_non_null(rx->unexp_big);
    assert_int_equal(rx->unexp_big->cap, TC_TCP_UNEXP_BYTES + 1 + 2 * 5000);
    /* the same size again and again, and down to half of it: the kept record each time */
    for (int i = 0; i < 20; i++)
        tc_tpt_unexpected_burst(&p, 1, TC_TCP_UNEXP_BYTES + 1 + 2 * 5000 - (size_t)i * 400,
                                500 + (uint64_t)i, WAIT_MS);
    assert_int_equal(rx->unexp_allocs - small, 3);
    /* 1 MiB, then less than half of it: each its own allocation, the latest kept */
    tc_tpt_unexpected_burst(&p, 1, 1u << 20, 600, WAIT_MS);
    tc_tpt_unexpected_burst(&p, 1, (1u << 19) - 1, 601, WAIT_MS);
    assert_int_equal(rx->unexp_allocs - small, 5);
    assert_int_equal(rx->unexp_big->cap, (1u << 19) - 1);
    /* trimmed (the runtime's idle look): the large record goes, the small ones stay; the next
     * large message allocates again and works */
    tc_tp_trim(p.ctx[1]);
    assert_null(rx->unexp_big);
    assert_int_equal(rx->nunexp_free, TC_TCP_UNEXP_KEEP);
    tc_tpt_unexpected_burst(&p, 1, (1u << 19) - 1, 602, WAIT_MS);
    assert_int_equal(rx->unexp_allocs - small, 6);
    assert_non_null(rx->unexp_big);
    tc_tpt_pair_close(&p);
}

/* Striped messages (4 sockets, striped from 4 KiB) that arrive before their receive: one up
 * to 8 KiB takes a kept record too, a larger one the kept large record when it fits; all arrive
 * whole. */
static void test_striped(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_tpt_pair_open(&p, &tc_tp_tcp_ops, NULL, "tcp_nsocks=4,tcp_stripe_min=4096");
    tc_tpt_pair_up(&p, WAIT_MS);
    tc_tcp_ctx_t *rx = (tc_tcp_ctx_t *)p.ctx[1];

    tc_tpt_unexpected_burst(&p, 1, 5000, 1, WAIT_MS);
    uint64_t base = rx->unexp_allocs;
    assert_int_equal(base, 1);
    for (int i = 0; i < 50; i++)
        tc_tpt_unexpected_burst(&p, 1, 4096 + (size_t)(i * 61) % (TC_TCP_UNEXP_BYTES - 4096),
                                2 + (uint64_t)i, WAIT_MS);
    assert_int_equal(rx->unexp_allocs, base);
    assert_int_equal(rx->nunexp_free, 1);
    for (int i = 0; i < 3; i++)
        tc_tpt_unexpected_burst(&p, 1, 20000 + (size_t)i * 7000, 100 + (uint64_t)i, WAIT_MS);
    assert_int_equal(rx->unexp_allocs, base + 3);
    assert_int_equal(rx->nunexp_free, 1);
    for (int i = 0; i < 5; i++) /* the last one's record, kept */
        tc_tpt_unexpected_burst(&p, 1, 34000 - (size_t)i * 3000, 200 + (uint64_t)i, WAIT_MS);
    assert_int_equal(rx->unexp_allocs, base + 3);
    tc_tpt_pair_close(&p);
}

/* The probe finds a message before its receive, on one socket and striped over four (still
 * arriving when the probe finds it, then claimed), the second of a tag after the first. */
static void test_probe(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_tpt_pair_open(&p, &tc_tp_tcp_ops, NULL, NULL);
    tc_tpt_pair_up(&p, WAIT_MS);
    tc_tpt_probe_check(&p, 100, 0, 1);
    tc_tpt_probe_check(&p, 1u << 20, 50000, 2);
    tc_tpt_pair_close(&p);
    tc_tpt_pair_open(&p, &tc_tp_tcp_ops, NULL, "tcp_nsocks=4,tcp_stripe_min=4096");
    tc_tpt_pair_up(&p, WAIT_MS);
    tc_tpt_probe_check(&p, 20000, 4u << 20, 3);
    tc_tpt_pair_close(&p);
}

/* Unexpected messages of a tag no receive will take (a destroyed communicator's) are freed,
 * small and large: before tc_tp_discard they stayed for the context's life (200 kB more per
 * cycle of dup, 1 MiB messages, abort on one rank, destroy). */
static void test_discard(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_tpt_pair_open(&p, &tc_tp_tcp_ops, NULL, NULL);
    tc_tpt_pair_up(&p, WAIT_MS);
    tc_tpt_discard_check(&p, 100, WAIT_MS);
    tc_tpt_discard_check(&p, 1u << 20, WAIT_MS);
    tc_tpt_pair_close(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reuse),
        cmocka_unit_test(test_striped),
        cmocka_unit_test(test_probe),
        cmocka_unit_test(test_discard),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
