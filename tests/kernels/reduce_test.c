/* tc_kern_reduce against independent references: every type x op, lengths 0..70
 * and 100000, vector-unaligned pointers, every aliasing case, every SIMD level. */
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

#define GUARD 8 /* elements checked on each side of the output */

enum { MODE_OUT = 0, MODE_DST_A, MODE_DST_B, MODE_DST_AB, MODE_COUNT };
static const char *const mode_names[] = {"out-of-place", "dst==a", "dst==b", "dst==a==b"};

/* ---- inputs ------------------------------------------------------------- */

static float gen_f32(uint64_t *s)
{
    static const float special[] = {
        0.0f, -0.0f, INFINITY, -INFINITY, NAN, FLT_MIN, FLT_MAX, 1e-45f /* subnormal */, -FLT_MAX};
    uint64_t r = ref_rand(s);
    uint32_t bits = (uint32_t)(r >> 32);
    float f;

    switch (r & 15) {
    case 0:
        return special[(r >> 4) % (sizeof(special) / sizeof(special[0]))];
    case 1:
    case 2:
    case 3:
    case 4:
    case 5:
    case 6:
    case 7:
        memcpy(&f, &bits, sizeof(f));
        return f;
    default:
        return (float)ldexp((double)((int64_t)((r >> 8) % 2001) - 1000),
                            (int)((r >> 20) % 41) - 20);
    }
}

/* float64 inputs keep long-double references exact: short significands, or
 * powers of two (see the comment of ref_elem). */
static double gen_f64(uint64_t *s)
{
    static const double special[] = {0.0,      -0.0,      INFINITY,  -INFINITY, NAN,
                                     0x1p1023, 0x1p-1074, 0x1p-1022, -0x1p1000};
    uint64_t r = ref_rand(s);

    if ((r & 15) == 0) {
        return special[(r >> 4) % (sizeof(special) / sizeof(special[0]))];
    }
    return ldexp((double)((int64_t)((r >> 8) % (1u << 21)) - (1 << 20)),
                 (int)((r >> 32) % 21) - 10);
}

static void fill(tc_dtype_t t, void *p, size_t n, uint64_t seed)
{
    uint64_t s = seed;
    size_t i;

    for (i = 0; i < n; i++) {
        if (t == TC_FLOAT32) {
            ((float *)p)[i] = gen_f32(&s);
        } else if (t == TC_FLOAT64) {
            ((double *)p)[i] = gen_f64(&s);
        } else {
            ref_store_bits(t, p, i, ref_rand(&s)); /* halves: every bit pattern */
        }
    }
}

/* ---- the reference ----------------------------------------------------- */

/*
 * Expected bits of a op b. Sets *nan when the expected value is NaN (any
 * NaN is then accepted). float32: the exact double result rounded once to
 * float (double has > 2*24+2 bits, so this is the correctly rounded float
 * result). float64: long double, exact for the generated inputs. Halves:
 * the float32 result of the double computation, then rounded to the format.
 */
static uint64_t ref_elem(tc_dtype_t t, tc_redop_t op, uint64_t ab, uint64_t bb, int *nan)
{
    *nan = 0;
    if (op == TC_AVG) {
        op = TC_SUM;
    }
    if (ref_is_int(t)) {
        uint64_t m = ref_mask(t);
        int64_t x, y;
        uint64_t ux = ab & m, uy = bb & m;
        /* sign-extend small signed types */
        if (ref_is_signed(t) && m != ~0ull) {
            x = (int64_t)(ux ^ ((m >> 1) + 1)) - (int64_t)((m >> 1) + 1);
            y = (int64_t)(uy ^ ((m >> 1) + 1)) - (int64_t)((m >> 1) + 1);
        } else {
            x = (int64_t)ux;
            y = (int64_t)uy;
        }
        switch (op) {
        case TC_SUM:
            return (uint64_t)((__int128)x + (__int128)y) & m;
        case TC_PROD:
            return (uint64_t)((unsigned __int128)(__int128)x * (unsigned __int128)(__int128)y) & m;
        case TC_MIN:
            if (ref_is_signed(t)) {
                return (uint64_t)(x < y ? x : y) & m;
            }
            return ux < uy ? ux : uy;
        case TC_MAX:
            if (ref_is_signed(t)) {
                return (uint64_t)(x > y ? x : y) & m;
            }
            return ux > uy ? ux : uy;
        case TC_BAND:
            return ux & uy;
        case TC_BOR:
            return ux | uy;
        case TC_BXOR:
            return ux ^ uy;
        default:
            fail_msg("bad op");
            return 0;
        }
    }
    if (t == TC_FLOAT64) {
        double x, y, r;
        memcpy(&x, &ab, 8);
        memcpy(&y, &bb, 8);
        switch (op) {
        case TC_SUM:
            r = (double)((long double)x + (long double)y);
            break;
        case TC_PROD:
            r = (double)((long double)x * (long double)y);
            break;
        case TC_MIN:
            r = ref_min(x, y);
            break;
        default:
            r = ref_max(x, y);
            break;
        }
        *nan = isnan(r);
        memcpy(&ab, &r, 8);
        return ab;
    }
    {
        double x, y, r;
        float rf;
        uint32_t bits;
        if (t == TC_FLOAT32) {
            float fx, fy;
            uint32_t bx = (uint32_t)ab, by = (uint32_t)bb;
            memcpy(&fx, &bx, 4);
            memcpy(&fy, &by, 4);
            x = fx;
            y = fy;
        } else {
            ref_fmt_t f = t == TC_FLOAT16 ? REF_F16 : REF_BF16;
            x = ref_decode(f, (uint16_t)ab);
            y = ref_decode(f, (uint16_t)bb);
        }
        switch (op) {
        case TC_SUM:
            r = x + y;
            break;
        case TC_PROD:
            r = x * y;
            break;
        case TC_MIN:
            r = ref_min(x, y);
            break;
        default:
            r = ref_max(x, y);
            break;
        }
        *nan = isnan(r);
        rf = (float)r;
        if (t == TC_FLOAT32) {
            memcpy(&bits, &rf, 4);
            return bits;
        }
        return ref_encode(t == TC_FLOAT16 ? REF_F16 : REF_BF16, (double)rf);
    }
}

static int result_is_nan(tc_dtype_t t, uint64_t bits)
{
    if (t == TC_FLOAT32) {
        float f;
        uint32_t b = (uint32_t)bits;
        memcpy(&f, &b, 4);
        return isnan(f);
    }
    if (t == TC_FLOAT64) {
        double d;
        memcpy(&d, &bits, 8);
        return isnan(d);
    }
    return ref_is_nan16(t == TC_FLOAT16 ? REF_F16 : REF_BF16, (uint16_t)bits);
}

/* ---- one case ------------------------------------------------------------- */

static void run_case(tc_dtype_t t, tc_redop_t op, size_t n, int mode, uint64_t seed)
{
    const size_t sz = tc_dtype_size(t);
    const size_t off = (n % 4) + 1; /* elements: pointers are not 16/32-byte aligned */
    size_t bytes = (n + 2 * GUARD + 8) * sz, i;
    char *ba = aligned_alloc(64, (bytes + 63) / 64 * 64);
    char *bb = aligned_alloc(64, (bytes + 63) / 64 * 64);
    char *bd = aligned_alloc(64, (bytes + 63) / 64 * 64);
    char *a, *b, *d, *a0, *b0;
    const char *pa, *pb;
    tc_status_t status;

    assert_non_null(ba);
    assert_non_null(bb);
    assert_non_null(bd);
    a0 = malloc(n * sz + 1);
    b0 = malloc(n * sz + 1);
    assert_non_null(a0);
    assert_non_null(b0);
    memset(bd, 0xA5, bytes);
    a = ba + (GUARD + off) * sz;
    b = bb + (GUARD + ((off + 1) % 4)) * sz;
    d = bd + (GUARD + ((off + 2) % 4)) * sz;
    fill(t, a0, n, seed);
    fill(t, b0, n, seed ^ 0x5555);
    if (mode == MODE_DST_AB) {
        memcpy(b0, a0, n * sz);
    }
    memcpy(a, a0, n * sz);
    memcpy(b, b0, n * sz);

    switch (mode) {
    case MODE_OUT:
        status = tc_kern_reduce(t, op, d, a, b, n);
        break;
    case MODE_DST_A:
        memcpy(d, a0, n * sz);
        status = tc_kern_reduce(t, op, d, d, b, n);
        break;
    case MODE_DST_B:
        memcpy(d, b0, n * sz);
        status = tc_kern_reduce(t, op, d, a, d, n);
        break;
    default:
        memcpy(d, a0, n * sz);
        status = tc_kern_reduce(t, op, d, d, d, n);
        break;
    }
    if (status != TC_OK) {
        fail_msg("%s %s n=%zu %s: %s: %s", tc_dtype_name(t), tc_redop_name(op), n, mode_names[mode],
                 tc_status_string(status), tc_last_error());
    }
    pa = a0;
    pb = b0;
    for (i = 0; i < n; i++) {
        int nan;
        uint64_t x = ref_bits(t, pa, i), y = ref_bits(t, pb, i);
        uint64_t want = ref_elem(t, op, x, y, &nan), got = ref_bits(t, d, i);
        if (nan ? !result_is_nan(t, got) : got != want) {
            fail_msg("%s %s n=%zu %s element %zu: %#llx op %#llx = %#llx, expected %#llx%s",
                     tc_dtype_name(t), tc_redop_name(op), n, mode_names[mode], i,
                     (unsigned long long)x, (unsigned long long)y, (unsigned long long)got,
                     (unsigned long long)want, nan ? " (NaN)" : "");
        }
    }
    /* nothing written outside [d, d + n) */
    for (i = 0; i < (size_t)(d - bd); i++) {
        assert_int_equal((unsigned char)bd[i], 0xA5);
    }
    for (i = (size_t)(d - bd) + n * sz; i < bytes; i++) {
        assert_int_equal((unsigned char)bd[i], 0xA5);
    }
    /* inputs untouched */
    if (mode == MODE_OUT) {
        assert_memory_equal(a, a0, n * sz);
        assert_memory_equal(b, b0, n * sz);
    }
    free(b0);
    free(a0);
    free(bd);
    free(bb);
    free(ba);
}

static void sweep(tc_kern_simd_t simd)
{
    int t, op, mode;
    size_t n;

    assert_int_equal(tc_kern_simd_limit(simd),
                     simd == TC_KERN_SIMD_NONE ? TC_KERN_SIMD_NONE : tc_kern_simd());
    for (t = 0; t < TC_DTYPE_COUNT; t++) {
        for (op = 0; op < TC_REDOP_COUNT; op++) {
            if (!tc_redop_valid_for((tc_redop_t)op, (tc_dtype_t)t)) {
                continue;
            }
            for (mode = 0; mode < MODE_COUNT; mode++) {
                for (n = 0; n <= 70; n++) {
                    run_case((tc_dtype_t)t, (tc_redop_t)op, n, mode,
                             (uint64_t)(t * 1000003 + op * 10007 + (int)n * 101 + mode));
                }
                run_case((tc_dtype_t)t, (tc_redop_t)op, 100000, mode, (uint64_t)(t + 77 * op));
            }
        }
    }
    tc_kern_simd_limit(TC_KERN_SIMD_AVX2);
}

static void test_all_types_ops_best_simd(void **state)
{
    (void)state;
    sweep(TC_KERN_SIMD_AVX2);
}

static void test_all_types_ops_portable(void **state)
{
    (void)state;
    sweep(TC_KERN_SIMD_NONE);
}

static void test_simd_detection(void **state)
{
    (void)state;
    __builtin_cpu_init();
    assert_int_equal(tc_kern_simd(),
                     __builtin_cpu_supports("avx2") ? TC_KERN_SIMD_AVX2 : TC_KERN_SIMD_NONE);
    assert_int_equal(tc_kern_simd_limit(TC_KERN_SIMD_NONE), TC_KERN_SIMD_NONE);
    assert_int_equal(tc_kern_simd(), TC_KERN_SIMD_NONE);
    tc_kern_simd_limit(TC_KERN_SIMD_AVX2);
    assert_int_equal(tc_kern_simd(),
                     __builtin_cpu_supports("avx2") ? TC_KERN_SIMD_AVX2 : TC_KERN_SIMD_NONE);
}

/* ---- known answers (hand-computed, independent of both implementations) --- */

static uint16_t red16(tc_dtype_t t, tc_redop_t op, uint16_t x, uint16_t y)
{
    uint16_t d;
    assert_int_equal(tc_kern_reduce(t, op, &d, &x, &y, 1), TC_OK);
    return d;
}

static void test_half_known_answers(void **state)
{
    (void)state;
    /* float16: 1 + 2^-11 is a tie: to even (1.0); 1+2^-10 + 2^-11 goes up */
    assert_int_equal(red16(TC_FLOAT16, TC_SUM, 0x3c00, 0x1000), 0x3c00);
    assert_int_equal(red16(TC_FLOAT16, TC_SUM, 0x3c01, 0x1000), 0x3c02);
    assert_int_equal(red16(TC_FLOAT16, TC_SUM, 0x3c00, 0x3c00), 0x4000);  /* 1 + 1 = 2 */
    assert_int_equal(red16(TC_FLOAT16, TC_SUM, 0x7bff, 0x7bff), 0x7c00);  /* 65504*2: inf */
    assert_int_equal(red16(TC_FLOAT16, TC_SUM, 0x7bff, 0x4c00), 0x7c00);  /* 65504+16: inf */
    assert_int_equal(red16(TC_FLOAT16, TC_SUM, 0x7bff, 0x4bfc), 0x7bff);  /* 65504+15.97 */
    assert_int_equal(red16(TC_FLOAT16, TC_SUM, 0x0001, 0x0001), 0x0002);  /* subnormals */
    assert_int_equal(red16(TC_FLOAT16, TC_PROD, 0x0001, 0x3800), 0x0000); /* 2^-25: tie to 0 */
    assert_int_equal(red16(TC_FLOAT16, TC_PROD, 0x0003, 0x3800), 0x0002); /* 1.5 ulp: to 2 */
    assert_int_equal(red16(TC_FLOAT16, TC_PROD, 0x0400, 0x3800), 0x0200); /* normal -> sub */
    assert_int_equal(red16(TC_FLOAT16, TC_PROD, 0xc000, 0x4200), 0xc600); /* -2 * 3 = -6 */
    assert_int_equal(red16(TC_FLOAT16, TC_SUM, 0x8000, 0x8000), 0x8000);  /* -0 + -0 */
    assert_int_equal(red16(TC_FLOAT16, TC_MIN, 0x0000, 0x8000), 0x8000);  /* -0 < +0 */
    assert_int_equal(red16(TC_FLOAT16, TC_MAX, 0x8000, 0x0000), 0x0000);
    assert_int_equal(red16(TC_FLOAT16, TC_SUM, 0x7c00, 0xfc00) & 0x7c00, 0x7c00); /* NaN */
    assert_true((red16(TC_FLOAT16, TC_SUM, 0x7c00, 0xfc00) & 0x3ff) != 0);
    /* bfloat16: 1.0 = 0x3f80, 2^-8 = 0x3b80 */
    assert_int_equal(red16(TC_BFLOAT16, TC_SUM, 0x3f80, 0x3b80), 0x3f80);
    assert_int_equal(red16(TC_BFLOAT16, TC_SUM, 0x3f81, 0x3b80), 0x3f82);
    assert_int_equal(red16(TC_BFLOAT16, TC_SUM, 0x7f7f, 0x7f7f), 0x7f80);  /* overflow: inf */
    assert_int_equal(red16(TC_BFLOAT16, TC_PROD, 0x4040, 0x4000), 0x40c0); /* 3 * 2 = 6 */
    assert_int_equal(red16(TC_BFLOAT16, TC_MAX, 0x7fc1, 0x3f80) & 0x7fff, 0x7fc1); /* NaN */
}

static void test_float_nan_and_zero_rules(void **state)
{
    const float qa = NAN, one = 1.0f, pz = 0.0f, nz = -0.0f;
    float qb, d;
    double dd, dn = NAN, done = 1.0;
    uint32_t bits_a, bits_b, bits_d;
    int op;

    (void)state;
    /* a second NaN with another payload, to see whose NaN comes out */
    bits_b = 0x7fc00123u;
    memcpy(&qb, &bits_b, 4);
    memcpy(&bits_a, &qa, 4);
    for (op = TC_MIN; op <= TC_MAX; op++) {
        assert_int_equal(tc_kern_reduce(TC_FLOAT32, op, &d, &qa, &one, 1), TC_OK);
        assert_true(isnan(d));
        assert_int_equal(tc_kern_reduce(TC_FLOAT32, op, &d, &one, &qa, 1), TC_OK);
        assert_true(isnan(d));
        assert_int_equal(tc_kern_reduce(TC_FLOAT32, op, &d, &qa, &qb, 1), TC_OK);
        memcpy(&bits_d, &d, 4);
        assert_int_equal(bits_d, bits_a); /* both NaN: the NaN of a */
        assert_int_equal(tc_kern_reduce(TC_FLOAT32, op, &d, &qb, &qa, 1), TC_OK);
        memcpy(&bits_d, &d, 4);
        assert_int_equal(bits_d, bits_b);
        assert_int_equal(tc_kern_reduce(TC_FLOAT64, op, &dd, &dn, &done, 1), TC_OK);
        assert_true(isnan(dd));
        assert_int_equal(tc_kern_reduce(TC_FLOAT64, op, &dd, &done, &dn, 1), TC_OK);
        assert_true(isnan(dd));
    }
    /* -0 < +0 in both orders */
    assert_int_equal(tc_kern_reduce(TC_FLOAT32, TC_MIN, &d, &pz, &nz, 1), TC_OK);
    assert_true(d == 0 && signbit(d));
    assert_int_equal(tc_kern_reduce(TC_FLOAT32, TC_MIN, &d, &nz, &pz, 1), TC_OK);
    assert_true(d == 0 && signbit(d));
    assert_int_equal(tc_kern_reduce(TC_FLOAT32, TC_MAX, &d, &pz, &nz, 1), TC_OK);
    assert_true(d == 0 && !signbit(d));
    assert_int_equal(tc_kern_reduce(TC_FLOAT32, TC_MAX, &d, &nz, &pz, 1), TC_OK);
    assert_true(d == 0 && !signbit(d));
    /* sum of NaN stays NaN; inf - inf is NaN */
    {
        float inf = INFINITY, ninf = -INFINITY;
        assert_int_equal(tc_kern_reduce(TC_FLOAT32, TC_SUM, &d, &qa, &one, 1), TC_OK);
        assert_true(isnan(d));
        assert_int_equal(tc_kern_reduce(TC_FLOAT32, TC_SUM, &d, &inf, &ninf, 1), TC_OK);
        assert_true(isnan(d));
    }
}

static void test_integer_wrap_known_answers(void **state)
{
    int8_t a8 = 127, b8 = 1, d8;
    int32_t a32 = INT32_MIN, b32 = -1, d32;
    int64_t a64 = INT64_MAX, b64 = 2, d64;
    uint8_t ua = 200, ub = 100, ud;

    (void)state;
    assert_int_equal(tc_kern_reduce(TC_INT8, TC_SUM, &d8, &a8, &b8, 1), TC_OK);
    assert_int_equal(d8, -128);
    assert_int_equal(tc_kern_reduce(TC_INT32, TC_SUM, &d32, &a32, &b32, 1), TC_OK);
    assert_int_equal(d32, INT32_MAX);
    assert_int_equal(tc_kern_reduce(TC_INT32, TC_PROD, &d32, &a32, &b32, 1), TC_OK);
    assert_int_equal(d32, INT32_MIN);
    assert_int_equal(tc_kern_reduce(TC_INT64, TC_PROD, &d64, &a64, &b64, 1), TC_OK);
    assert_int_equal(d64, -2);
    assert_int_equal(tc_kern_reduce(TC_UINT8, TC_SUM, &ud, &ua, &ub, 1), TC_OK);
    assert_int_equal(ud, 44);
    assert_int_equal(tc_kern_reduce(TC_UINT8, TC_PROD, &ud, &ua, &ub, 1), TC_OK);
    assert_int_equal(ud, (200 * 100) % 256);
    assert_int_equal(tc_kern_reduce(TC_UINT8, TC_AVG, &ud, &ua, &ub, 1), TC_OK);
    assert_int_equal(ud, 44); /* AVG reduces as SUM */
}

/* ---- errors ------------------------------------------------------------- */

static void test_bitwise_on_floats_unsupported(void **state)
{
    const tc_dtype_t fl[] = {TC_FLOAT16, TC_BFLOAT16, TC_FLOAT32, TC_FLOAT64};
    const tc_redop_t bw[] = {TC_BAND, TC_BOR, TC_BXOR};
    double a[2] = {1, 2}, b[2] = {3, 4}, d[2] = {9, 9};
    char want[128];
    size_t i, j;

    (void)state;
    for (i = 0; i < 4; i++) {
        for (j = 0; j < 3; j++) {
            assert_int_equal(tc_kern_reduce(fl[i], bw[j], d, a, b, 2), TC_ERR_UNSUPPORTED);
            snprintf(want, sizeof(want), "op %s does not apply to %s", tc_redop_name(bw[j]),
                     tc_dtype_name(fl[i]));
            if (strstr(tc_last_error(), want) == NULL) {
                fail_msg("detail \"%s\" lacks \"%s\"", tc_last_error(), want);
            }
            assert_true(d[0] == 9 && d[1] == 9); /* nothing written */
            /* also with n == 0: the pair is still wrong */
            assert_int_equal(tc_kern_reduce(fl[i], bw[j], d, a, b, 0), TC_ERR_UNSUPPORTED);
        }
    }
}

static void test_bad_arguments(void **state)
{
    int32_t buf[8] = {0};

    (void)state;
    assert_int_equal(tc_kern_reduce((tc_dtype_t)TC_DTYPE_COUNT, TC_SUM, buf, buf, buf, 1),
                     TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "unknown dtype 10"));
    assert_int_equal(tc_kern_reduce((tc_dtype_t)-1, TC_SUM, buf, buf, buf, 1), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_kern_reduce(TC_INT32, (tc_redop_t)TC_REDOP_COUNT, buf, buf, buf, 1),
                     TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "unknown op 8"));
    assert_int_equal(tc_kern_reduce(TC_INT32, TC_SUM, NULL, buf, buf, 1), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "dst is NULL"));
    assert_int_equal(tc_kern_reduce(TC_INT32, TC_SUM, buf, NULL, buf, 1), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "a is NULL"));
    assert_int_equal(tc_kern_reduce(TC_INT32, TC_SUM, buf, buf, NULL, 1), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "b is NULL"));
    assert_int_equal(tc_kern_reduce(TC_INT32, TC_SUM, NULL, NULL, NULL, 0), TC_OK);
    /* dst overlapping an input without being equal to it */
    assert_int_equal(tc_kern_reduce(TC_INT32, TC_SUM, buf + 1, buf, buf + 4, 4),
                     TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "overlaps a"));
    assert_int_equal(tc_kern_reduce(TC_INT32, TC_SUM, buf, buf + 4, buf + 2, 4),
                     TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "overlaps b"));
    /* adjacent is fine */
    assert_int_equal(tc_kern_reduce(TC_INT32, TC_SUM, buf, buf + 4, buf + 4, 4), TC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_simd_detection),
        cmocka_unit_test(test_half_known_answers),
        cmocka_unit_test(test_float_nan_and_zero_rules),
        cmocka_unit_test(test_integer_wrap_known_answers),
        cmocka_unit_test(test_bitwise_on_floats_unsupported),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_all_types_ops_best_simd),
        cmocka_unit_test(test_all_types_ops_portable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
