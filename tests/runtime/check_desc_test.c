/* TC_CHECK's comparison of the descriptions ranks exchange: equal ones pass, a rank that
 * disagrees is named with what it called, and values no rank could send (a peer's corrupt or
 * hostile bytes) are described as "invalid", not looked up out of bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/src/check_desc.h"
#include "tcomms/algo/schedule.h"
#include "tcomms/base/dtype.h"
#include "tcomms/base/status.h"

typedef struct {
    int32_t coll, dtype, op, root;
    uint64_t count, vhash;
} desc_t;

static void test_compare(void **state)
{
    (void)state;
    desc_t d[3] = {{0, 7, 0, -1, 1000, 0}, {0, 7, 0, -1, 1000, 0}, {0, 7, 0, -1, 1000, 0}};
    assert_int_equal(tc_rt_check_compare(d, 3, "world", 5), TC_OK);
    d[2].count = 999;
    assert_int_equal(tc_rt_check_compare(d, 3, "world", 5), TC_ERR_MISMATCH);
    assert_non_null(strstr(tc_last_error(), "collective #5 on comm 'world': 1 rank(s)"));
    assert_non_null(strstr(tc_last_error(), "rank 2 called"));
    assert_non_null(strstr(tc_last_error(), "count 999"));
    /* hostile values */
    d[1] = (desc_t){INT32_MAX, INT32_MAX, 12345, INT32_MIN, UINT64_MAX, 1};
    assert_int_equal(tc_rt_check_compare(d, 3, "world", 6), TC_ERR_MISMATCH);
    assert_non_null(strstr(tc_last_error(), "2 rank(s)"));
    assert_non_null(strstr(tc_last_error(), "rank 1 called invalid_v(invalid, invalid, counts "
                                            "#00000000, root -2147483648)"));
}

/* v-forms are named so, and their counts' hashes told apart (both printed "all_gather(...,
 * v-counts)" before) */
static void test_v_counts(void **state)
{
    (void)state;
    desc_t d[2] = {{TC_COLL_ALL_GATHER, TC_INT32, -1, -1, 0, 0x1234567800000000ull},
                   {TC_COLL_ALL_GATHER, TC_INT32, -1, -1, 0, 0xabcdef0100000000ull}};
    assert_int_equal(tc_rt_check_compare(d, 2, "world", 1), TC_ERR_MISMATCH);
    assert_non_null(strstr(tc_last_error(),
                           "rank 0, which called all_gather_v(int32, -, counts "
                           "#12345678, root -1); rank 1 called all_gather_v(int32, "
                           "-, counts #abcdef01, root -1)"));
}

/* all_to_all_v: each rank's sums of what it sends and receives differ; the totals must agree
 * (TC_CHECK let a pair that disagreed through) */
static void test_all_to_all_v_pairs(void **state)
{
    (void)state;
    desc_t d[3] = {{TC_COLL_ALL_TO_ALL, TC_INT32, TC_RT_CHECK_OP_PAIRS, -1, 10, 30},
                   {TC_COLL_ALL_TO_ALL, TC_INT32, TC_RT_CHECK_OP_PAIRS, -1, 25, 1},
                   {TC_COLL_ALL_TO_ALL, TC_INT32, TC_RT_CHECK_OP_PAIRS, -1, 0, 4}};
    assert_int_equal(tc_rt_check_compare(d, 3, "world", 2), TC_OK);
    d[1].count = 26;
    assert_int_equal(tc_rt_check_compare(d, 3, "world", 2), TC_ERR_MISMATCH);
    assert_non_null(strstr(tc_last_error(), "all_to_all_v's counts disagree"));
    d[1].count = 25, d[2].dtype = TC_UINT32; /* another type: named as usual */
    assert_int_equal(tc_rt_check_compare(d, 3, "world", 2), TC_ERR_MISMATCH);
    assert_non_null(strstr(tc_last_error(), "rank 2 called all_to_all_v(uint32)"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_compare),
                                       cmocka_unit_test(test_v_counts),
                                       cmocka_unit_test(test_all_to_all_v_pairs)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
