/* Id set, checked against a plain bitmap over random takes and gives, and at the ends of the
 * 32-bit range. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/base/idset.h"

#define SPAN 300 /* ids 0..SPAN-1 in the random test */

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

/* Sorted, disjoint, never adjacent, and exactly the bitmap. */
static void check_same(const tc_idset_t *s, const unsigned char *in)
{
    for (size_t i = 0; i < s->n; i++) {
        assert_true(s->r[i].lo <= s->r[i].hi);
        if (i > 0)
            assert_true(s->r[i - 1].hi + 1 < s->r[i].lo);
    }
    for (uint32_t id = 0; id < SPAN; id++) {
        assert_int_equal(tc_idset_has(s, id), in[id]);
        uint32_t want = id, got = 0;
        while (want < SPAN && !in[want])
            want++;
        int found = tc_idset_first(s, id, &got);
        assert_int_equal(found, want < SPAN);
        if (found)
            assert_int_equal(got, want);
    }
}

static void test_idset_random(void **state)
{
    (void)state;
    unsigned char in[SPAN];
    tc_idset_t s;
    assert_int_equal(tc_idset_init(&s, 10, 200), TC_OK);
    for (uint32_t id = 0; id < SPAN; id++)
        in[id] = id >= 10 && id <= 200;
    check_same(&s, in);
    size_t most = 0;
    for (int step = 0; step < 20000; step++) {
        uint32_t id = (uint32_t)(rng() % SPAN);
        if (rng() % 2) {
            assert_int_equal(tc_idset_take(&s, id), in[id] ? TC_OK : TC_ERR_INVALID_STATE);
            in[id] = 0;
        } else {
            assert_int_equal(tc_idset_give(&s, id), in[id] ? TC_ERR_INVALID_STATE : TC_OK);
            in[id] = 1;
        }
        if (s.n > most)
            most = s.n;
        if (step % 97 == 0)
            check_same(&s, in);
    }
    check_same(&s, in);
    assert_true(most > 20); /* the walk did split and merge many ranges */
    tc_idset_free(&s);
    assert_int_equal(s.n, 0);
    assert_false(tc_idset_has(&s, 10));
}

static void test_idset_ends(void **state)
{
    (void)state;
    tc_idset_t s;
    assert_int_equal(tc_idset_init(&s, 5, 4), TC_OK); /* empty */
    uint32_t id = 0;
    assert_int_equal(tc_idset_first(&s, 0, &id), 0);
    assert_int_equal(tc_idset_take(&s, 4), TC_ERR_INVALID_STATE);
    assert_int_equal(tc_idset_give(&s, UINT32_MAX), TC_OK);
    assert_int_equal(tc_idset_give(&s, 0), TC_OK);
    assert_int_equal(tc_idset_give(&s, UINT32_MAX - 1), TC_OK);
    assert_int_equal(s.n, 2);
    assert_int_equal(tc_idset_first(&s, 1, &id), 1);
    assert_int_equal(id, UINT32_MAX - 1);
    assert_int_equal(tc_idset_take(&s, UINT32_MAX), TC_OK);
    assert_true(tc_idset_has(&s, UINT32_MAX - 1));
    assert_false(tc_idset_has(&s, UINT32_MAX));
    tc_idset_free(&s);

    /* the whole range: taking from the middle splits it, giving back joins it */
    assert_int_equal(tc_idset_init(&s, 0, UINT32_MAX), TC_OK);
    assert_int_equal(tc_idset_take(&s, 1u << 31), TC_OK);
    assert_int_equal(s.n, 2);
    assert_int_equal(tc_idset_first(&s, 1u << 31, &id), 1);
    assert_int_equal(id, (1u << 31) + 1);
    assert_int_equal(tc_idset_give(&s, 1u << 31), TC_OK);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.r[0].lo, 0);
    assert_int_equal(s.r[0].hi, UINT32_MAX);
    tc_idset_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idset_random),
        cmocka_unit_test(test_idset_ends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
