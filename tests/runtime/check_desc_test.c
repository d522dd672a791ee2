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
    assert_non_null(strstr(tc_last_error(), "rank 1 called invalid(invalid, invalid, count "
                                              "18446744073709551615, root -2147483648, v-counts)"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_compare)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
