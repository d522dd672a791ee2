/* The store bootstrap's local rank (runtime/src/bootstrap_kv.c, tc_boot_kv_local_rank): from
 * the count, sum and sum of squares of a host's ranks, the local rank in rank order exactly when
 * the host holds a block of consecutive ranks, -1 for every other placement. Checked against a
 * direct reference over every set of ranks drawn from 0..11, and at the size limit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tcomms/runtime/bootstrap_kv.h"

#define UNIVERSE 12

/* The reference: the position of @p rank in the sorted set @p mask when its members are
 * consecutive, else -1. */
static int reference(unsigned mask, int rank)
{
    int lo = __builtin_ctz(mask), hi = 31 - __builtin_clz(mask);
    if (hi - lo + 1 != __builtin_popcount(mask) || !(mask & (1u << rank)))
        return -1;
    return rank - lo;
}

static void test_every_placement(void **state)
{
    (void)state;
    int blocks = 0, refuted = 0;
    for (unsigned mask = 1; mask < (1u << UNIVERSE); mask++) {
        int64_t n = 0, sum = 0, sumsq = 0;
        for (int r = 0; r < UNIVERSE; r++)
            if (mask & (1u << r))
                n++, sum += r, sumsq += (int64_t)r * r;
        for (int r = 0; r < UNIVERSE; r++) {
            if (!(mask & (1u << r)))
                continue;
            int got = tc_boot_kv_local_rank(r, n, sum, sumsq);
            if (got != reference(mask, r))
                fail_msg("ranks 0x%x, rank %d: local rank %d, want %d", mask, r, got,
                         reference(mask, r));
            got >= 0 ? blocks++ : refuted++;
        }
    }
    /* every block [s, s + n) of 0..11 contributes its n members */
    assert_int_equal(blocks, UNIVERSE * (UNIVERSE + 1) * (UNIVERSE + 2) / 6);
    assert_true(refuted > 0);
}

static void test_limits(void **state)
{
    (void)state;
    int64_t n = 4096, s = TC_BOOT_KV_LOCAL_SIZE_MAX - n, sum = 0, sumsq = 0;
    for (int64_t r = s; r < s + n; r++)
        sum += r, sumsq += r * r;
    assert_int_equal(tc_boot_kv_local_rank((int)(s + 17), n, sum, sumsq), 17);
    assert_int_equal(tc_boot_kv_local_rank((int)(s + 17), n, sum, sumsq + 1), -1);
    assert_int_equal(tc_boot_kv_local_rank((int)(s + n), n, sum, sumsq), -1); /* not in it */
    /* what a store holds when a counter was not kept (a job over the limit), or is nonsense */
    assert_int_equal(tc_boot_kv_local_rank(0, 1, -1, -1), -1);
    assert_int_equal(tc_boot_kv_local_rank(0, 0, 0, 0), -1);
    assert_int_equal(tc_boot_kv_local_rank(0, TC_BOOT_KV_LOCAL_SIZE_MAX + 1, 0, 0), -1);
    assert_int_equal(tc_boot_kv_local_rank(3, 1, 3, 9), 0); /* a host of one rank */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_placement),
        cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
