/* tc_kern_scale_div and tc_kern_copy against independent references. */
#include <float.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ref.h"
#include "tcomms/base/status.h"
#include "tcomms/kernels/reduce.h"

static void fill(tc_dtype_t t, void *p, size_t n, uint64_t seed)
{
    uint64_t s = seed;
    size_t i;

    for (i = 0; i < n; i++) {
        uint64_t r = ref_rand(&s);
        if (t == TC_FLOAT32) {
            float f = (r & 3) ? (float)ldexp((double)((int64_t)(r >> 40) - (1 << 23)),
                                             (int)((r >> 8) % 60) - 30)
                              : (float)ldexp(1.0, -149 + (int)((r >> 8) % 10)); /* subnormal */
            if ((r & 0xff) == 0x10) {
                f = NAN;
            } else if ((r & 0xff) == 0x20) {
                f = -INFINITY;
            }
            ((float *)p)[i] = f;
        } else if (t == TC_FLOAT64) {
            ((double *)p)[i] = ldexp((double)(int64_t)(r >> 11) - 0x1p52, (int)(r % 40) - 20);
        } else {
            ref_store_bits(t, p, i, r);
        }
    }
}

/* Expected bits of x / d; *nan when NaN is expected. */
static uint64_t ref_div(tc_dtype_t t, uint64_t xb, int d, int *nan)
{
    *nan = 0;
    if (ref_is_int(t)) {
        uint64_t m = ref_mask(t), ux = xb & m;
        if (ref_is_signed(t)) {
            __int128 x = (int64_t)ux;
            if (m != ~0ull && (ux & ((m >> 1) + 1))) {
                x = (__int128)ux - (__int128)m - 1; /* sign-extend */
            }
            /* truncation towards zero, from the magnitude */
            __int128 q = x < 0 ? -((-x) / d) : x / d;
            return (uint64_t)q & m;
        }
        return ux / (uint64_t)d;
    }
    if (t == TC_FLOAT32) {
        float f;
        uint32_t b = (uint32_t)xb;
        memcpy(&f, &b, 4);
        f = (float)((double)f / d); /* correctly rounded: double has > 2*24+2 bits */
        *nan = isnan(f);
        memcpy(&b, &f, 4);
        return b;
    }
    if (t == TC_FLOAT64) {
        double f;
        memcpy(&f, &xb, 8);
        f = f / (double)d; /* IEEE division is correctly rounded */
        *nan = isnan(f);
        memcpy(&xb, &f, 8);
        return xb;
    }
    {
        ref_fmt_t f = t == TC_FLOAT16 ? REF_F16 : REF_BF16;
        double v = ref_decode(f, (uint16_t)xb) / d;
        *nan = isnan(v);
        return ref_encode(f, v);
    }
}

static void test_scale_div_all_types(void **state)
{
    const int divisors[] = {1, 2, 3, 7, 64, 100};
    size_t n, i, k;
    int t;

    (void)state;
    for (t = 0; t < TC_DTYPE_COUNT; t++) {
        const size_t sz = tc_dtype_size((tc_dtype_t)t);
        for (k = 0; k < sizeof(divisors) / sizeof(divisors[0]); k++) {
            for (n = 0; n <= 71; n++) {
                size_t len = n == 71 ? 100000 : n;
                char *buf = malloc((len + 4) * sz), *orig = malloc(len * sz + 1);
                char *p = buf + (n % 3 + 1) * sz; /* not vector-aligned */
                assert_non_null(buf);
                assert_non_null(orig);
                fill((tc_dtype_t)t, orig, len, (uint64_t)(t * 131 + (int)n * 7 + (int)k));
                memcpy(p, orig, len * sz);
                assert_int_equal(tc_kern_scale_div((tc_dtype_t)t, p, len, divisors[k]), TC_OK);
                for (i = 0; i < len; i++) {
                    int nan;
                    uint64_t x = ref_bits((tc_dtype_t)t, orig, i);
                    uint64_t want = ref_div((tc_dtype_t)t, x, divisors[k], &nan);
                    uint64_t got = ref_bits((tc_dtype_t)t, p, i);
                    int ok = got == want;
                    if (nan) {
                        ok = t == TC_FLOAT32   ? isnan(*(float *)(p + i * sz))
                             : t == TC_FLOAT64 ? isnan(*(double *)(p + i * sz))
                                               : ref_is_nan16(t == TC_FLOAT16 ? REF_F16 : REF_BF16,
                                                              (uint16_t)got);
                    }
                    if (!ok) {
                        fail_msg("%s n=%zu /%d element %zu: %#llx -> %#llx, expected %#llx",
                                 tc_dtype_name((tc_dtype_t)t), len, divisors[k], i,
                                 (unsigned long long)x, (unsigned long long)got,
                                 (unsigned long long)want);
                    }
                }
                free(orig);
                free(buf);
            }
        }
    }
}

static void test_scale_div_known_answers(void **state)
{
    int32_t v[4] = {-7, 7, -1, INT32_MIN};
    int8_t w[2] = {-128, 127};
    uint16_t h = 0x3c00; /* float16 1.0 */

    (void)state;
    assert_int_equal(tc_kern_scale_div(TC_INT32, v, 4, 2), TC_OK);
    assert_int_equal(v[0], -3); /* truncation, not floor */
    assert_int_equal(v[1], 3);
    assert_int_equal(v[2], 0);
    assert_int_equal(v[3], INT32_MIN / 2);
    assert_int_equal(tc_kern_scale_div(TC_INT8, w, 2, 3), TC_OK);
    assert_int_equal(w[0], -42);
    assert_int_equal(w[1], 42);
    assert_int_equal(tc_kern_scale_div(TC_FLOAT16, &h, 1, 3), TC_OK);
    assert_int_equal(h, 0x3555); /* 1/3 = 0x3555 in float16 */
}

static void test_scale_div_errors(void **state)
{
    float f[2] = {1, 2};

    (void)state;
    assert_int_equal(tc_kern_scale_div(TC_FLOAT32, f, 2, 0), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "divisor 0 (must be >= 1"));
    assert_int_equal(tc_kern_scale_div(TC_FLOAT32, f, 2, -4), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "divisor -4"));
    assert_true(f[0] == 1 && f[1] == 2);
    assert_int_equal(tc_kern_scale_div((tc_dtype_t)TC_DTYPE_COUNT, f, 2, 2), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "unknown dtype"));
    assert_int_equal(tc_kern_scale_div(TC_FLOAT32, NULL, 2, 2), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "dst is NULL"));
    assert_int_equal(tc_kern_scale_div(TC_FLOAT32, NULL, 0, 2), TC_OK);
}

static void test_copy(void **state)
{
    unsigned char buf[300], ref[300];
    size_t n, i, d;

    (void)state;
    tc_kern_copy(NULL, NULL, 0);
    for (i = 0; i < sizeof(buf); i++) {
        buf[i] = (unsigned char)(i * 7 + 1);
    }
    tc_kern_copy(buf, buf, sizeof(buf)); /* dst == src */
    for (i = 0; i < sizeof(buf); i++) {
        assert_int_equal(buf[i], (unsigned char)(i * 7 + 1));
    }
    /* every length 0..100 at shifts -3..3 (overlapping both ways) */
    for (n = 0; n <= 100; n++) {
        for (d = 0; d <= 6; d++) {
            size_t src = 100, dst = 100 + d - 3;
            for (i = 0; i < sizeof(buf); i++) {
                buf[i] = ref[i] = (unsigned char)(i * 13 + n);
            }
            for (i = 0; i < n; i++) { /* reference: through a temporary */
                ref[dst + i] = (unsigned char)((src + i) * 13 + n);
            }
            tc_kern_copy(buf + dst, buf + src, n);
            assert_memory_equal(buf, ref, sizeof(buf));
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scale_div_known_answers),
        cmocka_unit_test(test_scale_div_errors),
        cmocka_unit_test(test_scale_div_all_types),
        cmocka_unit_test(test_copy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
