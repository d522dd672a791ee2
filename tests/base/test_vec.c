/* Growable array, checked against a plain array over random operations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/base/vec.h"

/* A 12-byte element: not a power of two, so index arithmetic is exercised. */
typedef struct {
    unsigned char b[12];
} elem_t;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
    /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

static elem_t make_elem(uint64_t v)
{
    elem_t e;

    for (int i = 0; i < 12; i++)
        e.b[i] = (unsigned char)(v >> (5 * i));
    return e;
}

static void test_vec_basic(void **state)
{
    tc_vec_t v;
    elem_t e = make_elem(1), out;
    void *data;

    tc_vec_init(&v, sizeof(elem_t));
    assert_int_equal(tc_vec_size(&v), 0);
    assert_null(tc_vec_at(&v, 0));
    assert_int_equal(tc_vec_pop(&v, &out), TC_ERR_INVALID_STATE);
    assert_int_equal(tc_vec_reserve(&v, 100), TC_OK);
    assert_true(v.capacity >= 100);
    data = v.data;
    for (int i = 0; i < 100; i++) {
        e = make_elem((uint64_t)i * 7919);
        assert_int_equal(tc_vec_push(&v, &e), TC_OK);
    }
    assert_ptr_equal(v.data, data); /* no reallocation within the reserve */
    assert_int_equal(tc_vec_size(&v), 100);
    for (int i = 0; i < 100; i++) {
        e = make_elem((uint64_t)i * 7919);
        assert_memory_equal(tc_vec_at(&v, (size_t)i), &e, sizeof(e));
    }
    assert_null(tc_vec_at(&v, 100));
    assert_int_equal(tc_vec_reserve(&v, 10), TC_OK); /* shrinking request: no change */
    assert_int_equal(tc_vec_size(&v), 100);
    assert_int_equal(tc_vec_pop(&v, &out), TC_OK);
    e = make_elem(99ull * 7919);
    assert_memory_equal(&out, &e, sizeof(e));
    assert_int_equal(tc_vec_pop(&v, NULL), TC_OK);
    assert_int_equal(tc_vec_size(&v), 98);
    tc_vec_clear(&v);
    assert_int_equal(tc_vec_size(&v), 0);
    assert_null(tc_vec_at(&v, 0));
    /* overflowing reserve fails cleanly */
    assert_int_equal(tc_vec_reserve(&v, SIZE_MAX / 4), TC_ERR_NO_MEMORY);
    assert_int_equal(tc_vec_size(&v), 0);
    tc_vec_free(&v);
    assert_null(v.data);
    /* usable after free */
    assert_int_equal(tc_vec_push(&v, &e), TC_OK);
    assert_int_equal(tc_vec_size(&v), 1);
    tc_vec_free(&v);

    tc_vec_init(&v, 0);
    assert_int_equal(tc_vec_push(&v, &e), TC_ERR_INVALID_ARG);
}

#define OPS 100000
#define REF_MAX OPS

static void test_vec_random(void **state)
{
    static elem_t ref[REF_MAX];
    size_t ref_n = 0;
    tc_vec_t v;
    elem_t e, out;

    tc_vec_init(&v, sizeof(elem_t));
    for (int op = 0; op < OPS; op++) {
        uint64_t r = rng();
        switch (r % 16) {
        case 0:
        case 1:
        case 2:
        case 3:
        case 4:
        case 5:
        case 6: /* push */
            e = make_elem(rng());
            assert_int_equal(tc_vec_push(&v, &e), TC_OK);
            ref[ref_n++] = e;
            break;
        case 7:
        case 8:
        case 9: /* pop */
            if (ref_n == 0) {
                assert_int_equal(tc_vec_pop(&v, &out), TC_ERR_INVALID_STATE);
            } else {
                assert_int_equal(tc_vec_pop(&v, &out), TC_OK);
                ref_n--;
                assert_memory_equal(&out, &ref[ref_n], sizeof(out));
            }
            break;
        case 10:
        case 11:
        case 12:
        case 13: /* read */
            if (ref_n > 0) {
                size_t i = (size_t)(rng() % ref_n);
                assert_memory_equal(tc_vec_at(&v, i), &ref[i], sizeof(elem_t));
            }
            assert_null(tc_vec_at(&v, ref_n));
            break;
        case 14: /* overwrite in place */
            if (ref_n > 0) {
                size_t i = (size_t)(rng() % ref_n);
                e = make_elem(rng());
                memcpy(tc_vec_at(&v, i), &e, sizeof(e));
                ref[i] = e;
            }
            break;
        default:
            if (rng() % 64 == 0) { /* rare clear */
                tc_vec_clear(&v);
                ref_n = 0;
            }
        }
        assert_int_equal(tc_vec_size(&v), ref_n);
    }
    for (size_t i = 0; i < ref_n; i++)
        assert_memory_equal(tc_vec_at(&v, i), &ref[i], sizeof(elem_t));
    tc_vec_free(&v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vec_basic),
        cmocka_unit_test(test_vec_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
