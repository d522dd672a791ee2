/* Windows end to end over the ib transport on the emulated HCA: 2, 3 and 4 ranks as threads
 * of this process, each with its communicator from tc_comm_create_from_store() over a store in
 * memory, with no other inter-rank transport (ib_ranks.h). Every window's contents are compared
 * byte by byte with a model; the HCA's counters must show every put, get and signal to another
 * rank as an RDMA write, read or atomic, so that the test fails if the runtime took any other
 * path. Parts: random puts and gets (0 B to 5 MiB, offsets across the window), put_signal
 * ordering, concurrent signal counts (ADD, SET), every comparison of wait_signal, flush,
 * out-of-range arguments, a split communicator, a target whose QP is destroyed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "tests/transport/ib/ib_emu.h"
#include "ib_ranks.h"
#include "tcomms/tcomms.h"
#include "tcomms/win.h"
#include "win_ib_parts.h"

/* What the HCA executed during a run, against what the ranks expected of it. */
static void check_hca(const char *part, int n, const ib_emu_stats_t *before,
                      const ibr_expect_t *want, int exact_cas)
{
    ib_emu_stats_t after = tc_ibemu_stats();
    int64_t writes = after.writes - before->writes, reads = after.reads - before->reads;
    int64_t wbytes = (int64_t)(after.write_bytes - before->write_bytes);
    int64_t rbytes = (int64_t)(after.read_bytes - before->read_bytes);
    int64_t fadd = after.fetch_adds - before->fetch_adds;
    int64_t cas = after.cmp_swaps - before->cmp_swaps;
    int ok = writes == want->writes && wbytes == want->write_bytes && reads == want->reads &&
             rbytes == want->read_bytes && fadd == want->fetch_adds &&
             (exact_cas ? cas == want->cmp_swaps : cas >= want->cmp_swaps);
    if (!ok)
        fprintf(stderr,
                "%s, %d ranks: the HCA executed %lld writes (%lld bytes), %lld reads (%lld "
                "bytes), %lld fetch-and-adds, %lld compare-and-swaps; expected %lld (%lld), "
                "%lld (%lld), %lld, %s%lld\n",
                part, n, (long long)writes, (long long)wbytes, (long long)reads, (long long)rbytes,
                (long long)fadd, (long long)cas, (long long)want->writes,
                (long long)want->write_bytes, (long long)want->reads, (long long)want->read_bytes,
                (long long)want->fetch_adds, exact_cas ? "" : ">= ", (long long)want->cmp_swaps);
    assert_true(ok);
    assert_int_equal(after.cq_overflow, before->cq_overflow);
    assert_int_equal(after.local_overlaps, before->local_overlaps);
}

/* Run @p fn at 2, 3 and 4 ranks; the HCA's counters must match the expectations. */
static void run_part(const char *part, ibr_fn fn, int exact_cas)
{
    for (int n = 2; n <= 4; n++) {
        char name[64];
        snprintf(name, sizeof(name), "%s.%d", part, n);
        ib_emu_stats_t before = tc_ibemu_stats();
        ibr_expect_t want;
        assert_int_equal(ibr_run(name, n, fn, NULL, &want), 0);
        check_hca(part, n, &before, &want, exact_cas);
        assert_int_equal(tc_ibemu_stats().live_qps, 0); /* every world closed its QPs */
    }
}

static void test_random_rma(void **state)
{
    (void)state;
    run_part("random", part_random_rma, 1);
}

static void test_put_signal_order(void **state)
{
    (void)state;
    run_part("order", part_put_signal_order, 0);
}

static void test_signal_counts(void **state)
{
    (void)state;
    run_part("counts", part_signal_counts, 0);
}

static void test_wait_signal(void **state)
{
    (void)state;
    run_part("wait", part_wait_signal, 0);
}

static void test_flush(void **state)
{
    (void)state;
    run_part("flush", part_flush, 1);
}

static void test_out_of_range(void **state)
{
    (void)state;
    run_part("range", part_out_of_range, 1);
}

static void test_split(void **state)
{
    (void)state;
    run_part("split", part_split, 1);
}

/* Not run_part: the operations to the dead target fail, and the HCA only counts those that
 * executed; the part checks the writes before the death itself. */
static void test_dead_target(void **state)
{
    (void)state;
    for (int n = 2; n <= 4; n++) {
        char name[64];
        snprintf(name, sizeof(name), "dead.%d", n);
        ib_emu_stats_t before = tc_ibemu_stats();
        ibr_expect_t want;
        assert_int_equal(ibr_run(name, n, part_dead_target, NULL, &want), 0);
        ib_emu_stats_t after = tc_ibemu_stats();
        assert_int_equal(after.writes - before.writes, want.writes);
        assert_int_equal(after.live_qps, 0);
    }
}

/* Not run_part: the refused operations do not count on the HCA, and the parts need the
 * emulation to forge the last rank's keys. */
static void test_bad_key(void **state)
{
    (void)state;
    for (int n = 2; n <= 4; n++) {
        char name[64];
        snprintf(name, sizeof(name), "badkey.%d", n);
        wib_bad_key_t bk = {0};
        ib_emu_stats_t before = tc_ibemu_stats();
        ibr_expect_t want;
        tc_ibemu_set_tamper(wib_forge_rkey, &bk);
        int rc = ibr_run(name, n, part_bad_key, &bk, &want);
        tc_ibemu_set_tamper(NULL, NULL);
        assert_int_equal(rc, 0);
        check_hca("badkey", n, &before, &want, 1);
        assert_int_equal(tc_ibemu_stats().live_qps, 0);
    }
}

int main(void)
{
    if (ibr_setup() != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_rma),    cmocka_unit_test(test_put_signal_order),
        cmocka_unit_test(test_signal_counts), cmocka_unit_test(test_wait_signal),
        cmocka_unit_test(test_flush),         cmocka_unit_test(test_out_of_range),
        cmocka_unit_test(test_split),         cmocka_unit_test(test_dead_target),
        cmocka_unit_test(test_bad_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
