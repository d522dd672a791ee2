/* Fixed-size object pool. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/base/pool.h"

#define OBJ 24

static void test_pool_init_errors(void **state)
{
    tc_pool_t p;

    assert_int_equal(tc_pool_init(NULL, "x", 8, 4, 0), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_pool_init(&p, "x", 0, 4, 0), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_pool_init(&p, "x", 8, 0, 0), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_pool_init(&p, "x", SIZE_MAX, 4, 0), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_pool_init(&p, "x", 1024, SIZE_MAX / 512, 0), TC_ERR_INVALID_ARG);
}

static void test_pool_exhaustion(void **state)
{
    enum { MAX = 10 };
    tc_pool_t p;
    unsigned char *obj[MAX], *again;

    assert_int_equal(tc_pool_init(&p, "requests", OBJ, 4, MAX), TC_OK);
    assert_int_equal(tc_pool_in_use(&p), 0);
    for (int i = 0; i < MAX; i++) {
        obj[i] = tc_pool_get(&p);
        assert_non_null(obj[i]);
        assert_int_equal((uintptr_t)obj[i] % 16, 0);
        memset(obj[i], i + 1, OBJ); /* whole object writable */
        assert_int_equal(tc_pool_in_use(&p), (size_t)i + 1);
    }
    /* objects do not overlap: each still holds its own pattern */
    for (int i = 0; i < MAX; i++)
        for (int b = 0; b < OBJ; b++)
            assert_int_equal(obj[i][b], i + 1);
    tc_error_clear();
    assert_null(tc_pool_get(&p));
    assert_non_null(strstr(tc_last_error(), "pool 'requests' exhausted"));
    assert_non_null(strstr(tc_last_error(), "10 objects"));
    assert_int_equal(tc_pool_in_use(&p), MAX);
    assert_null(tc_pool_get(&p)); /* still exhausted */
    /* a put object is reused */
    tc_pool_put(&p, obj[3]);
    assert_int_equal(tc_pool_in_use(&p), MAX - 1);
    again = tc_pool_get(&p);
    assert_ptr_equal(again, obj[3]);
    assert_null(tc_pool_get(&p));
    tc_pool_put(&p, NULL); /* ignored */
    assert_int_equal(tc_pool_in_use(&p), MAX);
    for (int i = 0; i < MAX; i++)
        tc_pool_put(&p, obj[i]);
    assert_int_equal(tc_pool_in_use(&p), 0);
    /* all MAX come back, and no more */
    for (int i = 0; i < MAX; i++)
        assert_non_null(obj[i] = tc_pool_get(&p));
    assert_null(tc_pool_get(&p));
    tc_pool_destroy(&p);
}

/* Random gets and puts against a set of live objects; ASan checks bounds and leaks. */
static void test_pool_random_unlimited(void **state)
{
    enum { LIVE_MAX = 2000, OPS = 100000 };
    static unsigned char *live[LIVE_MAX];
    static uint32_t tag[LIVE_MAX];
    size_t n = 0;
    uint64_t s = 88172645463325252ull;
    tc_pool_t p;

    assert_int_equal(tc_pool_init(&p, "random", 40, 64, 0), TC_OK);
    for (int op = 0; op < OPS; op++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        if ((s % 3 != 0 && n < LIVE_MAX) || n == 0) {
            live[n] = tc_pool_get(&p);
            assert_non_null(live[n]);
            tag[n] = (uint32_t)op;
            memset(live[n], 0, 40);
            memcpy(live[n], &tag[n], sizeof(tag[n]));
            memcpy(live[n] + 36, &tag[n], sizeof(tag[n]));
            n++;
        } else {
            size_t i = (size_t)(s >> 20) % n;
            uint32_t t1, t2;
            memcpy(&t1, live[i], 4);
            memcpy(&t2, live[i] + 36, 4);
            assert_int_equal(t1, tag[i]);
            assert_int_equal(t2, tag[i]);
            tc_pool_put(&p, live[i]);
            live[i] = live[n - 1];
            tag[i] = tag[n - 1];
            n--;
        }
        assert_int_equal(tc_pool_in_use(&p), n);
    }
    tc_pool_destroy(&p);
    assert_int_equal(tc_pool_in_use(&p), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_init_errors),
        cmocka_unit_test(test_pool_exhaustion),
        cmocka_unit_test(test_pool_random_unlimited),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
