/* The small-message path's vote (runtime/src/small.c, tc_rt_small_tally, docs/runtime.md "The
 * small-message path"): on only when every rank said yes and the lanes still needed (half the
 * sum: both ranks of a pair count them) fit the least free space any rank saw; a vote that is
 * neither 0 nor 1 is a protocol error naming the rank; sums that would overflow saturate. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/src/small.h"
#include "tcomms/base/status.h"

static void fill(tc_rt_small_vote_t *v, int n, uint64_t need, uint64_t avail)
{
    for (int q = 0; q < n; q++)
        v[q] = (tc_rt_small_vote_t){.free = avail, .need = need, .ok = 1};
}

static void test_all_yes_and_room(void **state)
{
    (void)state;
    tc_rt_small_vote_t v[4];
    int go = -1;
    uint64_t need, avail;
    fill(v, 4, 3 * 1000, 6000); /* 4 ranks, 3 peers each: 6 pairs of 1000 bytes */
    assert_int_equal(tc_rt_small_tally(v, 4, &go, &need, &avail), TC_OK);
    assert_int_equal(go, 1);
    assert_int_equal(need, 6000);
    assert_int_equal(avail, 6000);
    v[2].free = 5999; /* the least free space decides */
    assert_int_equal(tc_rt_small_tally(v, 4, &go, &need, &avail), TC_OK);
    assert_int_equal(go, 0);
    assert_int_equal(avail, 5999);
}

static void test_one_no(void **state)
{
    (void)state;
    tc_rt_small_vote_t v[5];
    int go = -1;
    uint64_t need, avail;
    for (int no = 0; no < 5; no++) {
        fill(v, 5, 0, UINT64_MAX);
        v[no] = (tc_rt_small_vote_t){0};
        assert_int_equal(tc_rt_small_tally(v, 5, &go, &need, &avail), TC_OK);
        assert_int_equal(go, 0);
    }
    fill(v, 1, 0, 0); /* nothing to reserve fits no space */
    assert_int_equal(tc_rt_small_tally(v, 1, &go, &need, &avail), TC_OK);
    assert_int_equal(go, 1);
}

static void test_hostile(void **state)
{
    (void)state;
    tc_rt_small_vote_t v[3];
    int go = 7;
    uint64_t need = 7, avail = 7;
    fill(v, 3, 1, 100);
    v[1].ok = 2;
    assert_int_equal(tc_rt_small_tally(v, 3, &go, &need, &avail), TC_ERR_PROTOCOL);
    assert_non_null(strstr(tc_last_error(), "rank 1 sent 2"));
    assert_int_equal(go, 7); /* outputs untouched on an error */
    fill(v, 3, UINT64_MAX, UINT64_MAX);
    assert_int_equal(tc_rt_small_tally(v, 3, &go, &need, &avail), TC_OK);
    assert_int_equal(need, UINT64_MAX / 2); /* saturated, then halved */
    assert_int_equal(go, 1);
    v[0].free = UINT64_MAX / 2 - 1;
    assert_int_equal(tc_rt_small_tally(v, 3, &go, &need, &avail), TC_OK);
    assert_int_equal(go, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_yes_and_room),
        cmocka_unit_test(test_one_no),
        cmocka_unit_test(test_hostile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
