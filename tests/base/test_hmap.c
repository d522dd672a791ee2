/* Hash map, checked against a direct-indexed reference over random operations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/base/hmap.h"

static uint64_t rng_state = 0x243f6a8885a308d3ull;

static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

static void test_hmap_basic(void **state)
{
    tc_hmap_t m;
    void *v = (void *)1;
    int a, b;
    size_t iter = 0;
    uint64_t k;

    tc_hmap_init(&m);
    assert_int_equal(tc_hmap_count(&m), 0);
    assert_null(tc_hmap_get(&m, 5));
    assert_false(tc_hmap_find(&m, 5, &v));
    assert_ptr_equal(v, (void *)1);
    assert_false(tc_hmap_remove(&m, 5, NULL));
    assert_false(tc_hmap_next(&m, &iter, &k, &v));

    assert_int_equal(tc_hmap_put(&m, 0, &a), TC_OK);
    assert_int_equal(tc_hmap_put(&m, UINT64_MAX, &b), TC_OK);
    assert_int_equal(tc_hmap_put(&m, 7, NULL), TC_OK);
    assert_int_equal(tc_hmap_count(&m), 3);
    assert_ptr_equal(tc_hmap_get(&m, 0), &a);
    assert_ptr_equal(tc_hmap_get(&m, UINT64_MAX), &b);
    /* a NULL value is present, distinguishable with find */
    assert_null(tc_hmap_get(&m, 7));
    assert_true(tc_hmap_find(&m, 7, &v));
    assert_null(v);
    assert_true(tc_hmap_find(&m, 0, NULL));
    /* replace */
    assert_int_equal(tc_hmap_put(&m, 0, &b), TC_OK);
    assert_int_equal(tc_hmap_count(&m), 3);
    assert_ptr_equal(tc_hmap_get(&m, 0), &b);
    assert_true(tc_hmap_remove(&m, 0, &v));
    assert_ptr_equal(v, &b);
    assert_false(tc_hmap_find(&m, 0, NULL));
    assert_int_equal(tc_hmap_count(&m), 2);
    tc_hmap_free(&m);
    assert_int_equal(tc_hmap_count(&m), 0);
    assert_null(tc_hmap_get(&m, UINT64_MAX));
    /* usable after free */
    assert_int_equal(tc_hmap_put(&m, 1, &a), TC_OK);
    assert_ptr_equal(tc_hmap_get(&m, 1), &a);
    tc_hmap_free(&m);
}

#define OPS 100000

/* Keys are drawn from @p keys (n of them); the reference is indexed by position. */
static void run_random(const uint64_t *keys, size_t n)
{
    uintptr_t *ref = calloc(n, sizeof(*ref)); /* 0 = absent, else the value */
    unsigned char *seen = calloc(n, 1);
    size_t ref_count = 0, iter = 0, visited = 0;
    tc_hmap_t m;
    uint64_t k;
    void *v;

    assert_non_null(ref);
    assert_non_null(seen);
    tc_hmap_init(&m);
    for (int op = 0; op < OPS; op++) {
        size_t i = (size_t)(rng() % n);
        uint64_t r = rng() % 10;

        if (r < 5) { /* put */
            uintptr_t val = (uintptr_t)(rng() | 1);
            assert_int_equal(tc_hmap_put(&m, keys[i], (void *)val), TC_OK);
            if (ref[i] == 0)
                ref_count++;
            ref[i] = val;
        } else if (r < 8) { /* remove */
            bool had = tc_hmap_remove(&m, keys[i], &v);
            assert_int_equal(had, ref[i] != 0);
            if (had) {
                assert_ptr_equal(v, (void *)ref[i]);
                ref[i] = 0;
                ref_count--;
            }
        } else { /* lookup */
            bool has = tc_hmap_find(&m, keys[i], &v);
            assert_int_equal(has, ref[i] != 0);
            if (has)
                assert_ptr_equal(v, (void *)ref[i]);
        }
        assert_int_equal(tc_hmap_count(&m), ref_count);
    }
    /* every key agrees with the reference */
    for (size_t i = 0; i < n; i++)
        assert_ptr_equal(tc_hmap_get(&m, keys[i]), (void *)ref[i]);
    /* iteration visits exactly the present keys, once each */
    while (tc_hmap_next(&m, &iter, &k, &v)) {
        size_t i;
        for (i = 0; i < n && keys[i] != k; i++) {
        }
        assert_true(i < n);
        assert_int_equal(seen[i], 0);
        seen[i] = 1;
        assert_ptr_equal(v, (void *)ref[i]);
        visited++;
    }
    assert_int_equal(visited, ref_count);
    tc_hmap_free(&m);
    free(seen);
    free(ref);
}

static void test_hmap_random_dense(void **state)
{
    enum { N = 3000 };
    static uint64_t keys[N];

    for (size_t i = 0; i < N; i++)
        keys[i] = i; /* consecutive keys, like ranks */
    run_random(keys, N);
}

static void test_hmap_random_sparse(void **state)
{
    enum { N = 2000 };
    static uint64_t keys[N];

    /* distinct random keys, and keys that differ only in high bits */
    for (size_t i = 0; i < N; i++) {
        keys[i] = i < N / 2 ? (rng() & ~(uint64_t)0xffff) | i : ((uint64_t)i << 40);
    }
    run_random(keys, N);
}

static void test_hmap_grow_shrink(void **state)
{
    tc_hmap_t m;

    tc_hmap_init(&m);
    for (uint64_t k = 0; k < 50000; k++)
        assert_int_equal(tc_hmap_put(&m, k * 0x10001, (void *)(uintptr_t)(k + 1)), TC_OK);
    assert_int_equal(tc_hmap_count(&m), 50000);
    assert_true(m.capacity * 3 >= 50000 * 4); /* load at most 3/4 */
    for (uint64_t k = 0; k < 50000; k += 2)
        assert_true(tc_hmap_remove(&m, k * 0x10001, NULL));
    for (uint64_t k = 0; k < 50000; k++)
        assert_ptr_equal(tc_hmap_get(&m, k * 0x10001), k % 2 ? (void *)(uintptr_t)(k + 1) : NULL);
    tc_hmap_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hmap_basic),
        cmocka_unit_test(test_hmap_random_dense),
        cmocka_unit_test(test_hmap_random_sparse),
        cmocka_unit_test(test_hmap_grow_shrink),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
