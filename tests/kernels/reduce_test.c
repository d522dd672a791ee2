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
#include <cpuid.h>

#include "ref.h"
#include "tcomms/base/status.h"
#include "tcomms/kernels/reduce.h"

#define GUARD 8 /* elements checked on each side of the output */

enum { MODE_OUT = 0, MODE_DST_A, MODE_DST_B, MODE_DST_AB, MODE_COUNT };
static const char *const mode_names[] = {"out-of-place", "dst==a", "dst==b", "dst==a==b"};

/* ---- instruction-set levels ---------------------------------------------- */

static const char *const level_names[] = {"portable", "avx2", "avx512"};

/* What this CPU supports, found independently of the kernels' own detection. */
static tc_kern_simd_t cpu_level(void)
{
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;

    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__get_cpuid(1, &eax, &ebx, &ecx, &edx) ||
        (ecx & (1u << 29)) == 0) { /* CPUID.1:ECX bit 29: F16C */
        return TC_KERN_SIMD_NONE;
    }
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw")) {
        return TC_KERN_SIMD_AVX2;
    }
    return TC_KERN_SIMD_AVX512;
}

/* Use `level`; returns 0 (and says so) when this CPU cannot run it. */
static int use_level(tc_kern_simd_t level)
{
    if (level > cpu_level()) {
        print_message("kernels: %s path not run: this CPU lacks it\n", level_names[level]);
        return 0;
    }
    assert_int_equal(tc_kern_simd_limit(level), level);
    assert_int_equal(tc_kern_simd(), level);
    return 1;
}

static void restore_level(void)
{
    assert_int_equal(tc_kern_simd_limit(TC_KERN_SIMD_AVX512), cpu_level());
}

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

    if (!use_level(simd)) {
        skip();
    }
    print_message("kernels: sweeping every type x op on the %s path\n", level_names[simd]);
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
    restore_level();
}

static void test_all_types_ops_avx512(void **state)
{
    (void)state;
    sweep(TC_KERN_SIMD_AVX512);
}

static void test_all_types_ops_avx2(void **state)
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
    tc_kern_simd_t cpu = cpu_level();

    (void)state;
    print_message("kernels: this CPU runs the portable path%s%s\n",
                  cpu >= TC_KERN_SIMD_AVX2 ? " and avx2" : "",
                  cpu >= TC_KERN_SIMD_AVX512 ? " and avx512" : "");
    assert_int_equal(tc_kern_simd(), cpu);
    assert_int_equal(tc_kern_simd_limit(TC_KERN_SIMD_NONE), TC_KERN_SIMD_NONE);
    assert_int_equal(tc_kern_simd(), TC_KERN_SIMD_NONE);
    assert_int_equal(tc_kern_simd_limit(TC_KERN_SIMD_AVX2),
                     cpu < TC_KERN_SIMD_AVX2 ? cpu : TC_KERN_SIMD_AVX2);
    restore_level();
    assert_int_equal(tc_kern_simd(), cpu);
}

/* ---- known answers (hand-computed, independent of both implementations) --- */

#define REP 37 /* two AVX-512 vectors and a scalar tail, for any element size */

/* One element x op y, computed as REP copies so that every part of the loop
 * (vectors and tail) runs; all REP results must be the same bits. */
static tc_status_t rep_reduce(tc_dtype_t t, tc_redop_t op, void *d, const void *x, const void *y,
                              size_t n)
{
    const size_t sz = tc_dtype_size(t);
    _Alignas(64) unsigned char xs[(REP + 1) * 8], ys[(REP + 1) * 8], ds[(REP + 1) * 8];
    tc_status_t status;
    size_t i;

    assert_int_equal(n, 1);
    for (i = 0; i < REP; i++) { /* one element in: no vector alignment */
        memcpy(xs + sz + i * sz, x, sz);
        memcpy(ys + sz + i * sz, y, sz);
    }
    status = tc_kern_reduce(t, op, ds + sz, xs + sz, ys + sz, REP);
    if (status == TC_OK) {
        for (i = 1; i < REP; i++) {
            if (memcmp(ds + sz, ds + sz + i * sz, sz) != 0) {
                fail_msg("%s %s: element %zu differs from element 0", tc_dtype_name(t),
                         tc_redop_name(op), i);
            }
        }
        memcpy(d, ds + sz, sz);
    }
    return status;
}

/* Runs body at every level this CPU has. */
static void at_every_level(void (*body)(void))
{
    int level;

    for (level = TC_KERN_SIMD_NONE; level <= TC_KERN_SIMD_AVX512; level++) {
        if (use_level((tc_kern_simd_t)level)) {
            body();
        }
    }
    restore_level();
}

static uint16_t red16(tc_dtype_t t, tc_redop_t op, uint16_t x, uint16_t y)
{
    uint16_t d;
    assert_int_equal(rep_reduce(t, op, &d, &x, &y, 1), TC_OK);
    return d;
}

static void half_known_answers_body(void)
{
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
    /* min/max of two NaNs: the NaN of a, payload kept */
    assert_int_equal(red16(TC_BFLOAT16, TC_MIN, 0x7fc1, 0xffc2), 0x7fc1);
    assert_int_equal(red16(TC_BFLOAT16, TC_MAX, 0xffc2, 0x7fc1), 0xffc2);
    assert_int_equal(red16(TC_FLOAT16, TC_MIN, 0x7e01, 0xfe02), 0x7e01);
    assert_int_equal(red16(TC_FLOAT16, TC_MAX, 0xfe02, 0x7e01), 0xfe02);
    /* -0 < +0 in bfloat16 too */
    assert_int_equal(red16(TC_BFLOAT16, TC_MIN, 0x8000, 0x0000), 0x8000);
    assert_int_equal(red16(TC_BFLOAT16, TC_MAX, 0x8000, 0x0000), 0x0000);
}

static void float_nan_and_zero_rules_body(void)
{
    const float qa = NAN, one = 1.0f, pz = 0.0f, nz = -0.0f;
    float qb, d;
    double dd, dn = NAN, done = 1.0;
    uint32_t bits_a, bits_b, bits_d;
    int op;

    /* a second NaN with another payload, to see whose NaN comes out */
    bits_b = 0x7fc00123u;
    memcpy(&qb, &bits_b, 4);
    memcpy(&bits_a, &qa, 4);
    for (op = TC_MIN; op <= TC_MAX; op++) {
        assert_int_equal(rep_reduce(TC_FLOAT32, op, &d, &qa, &one, 1), TC_OK);
        assert_true(isnan(d));
        assert_int_equal(rep_reduce(TC_FLOAT32, op, &d, &one, &qa, 1), TC_OK);
        assert_true(isnan(d));
        assert_int_equal(rep_reduce(TC_FLOAT32, op, &d, &qa, &qb, 1), TC_OK);
        memcpy(&bits_d, &d, 4);
        assert_int_equal(bits_d, bits_a); /* both NaN: the NaN of a */
        assert_int_equal(rep_reduce(TC_FLOAT32, op, &d, &qb, &qa, 1), TC_OK);
        memcpy(&bits_d, &d, 4);
        assert_int_equal(bits_d, bits_b);
        assert_int_equal(rep_reduce(TC_FLOAT64, op, &dd, &dn, &done, 1), TC_OK);
        assert_true(isnan(dd));
        assert_int_equal(rep_reduce(TC_FLOAT64, op, &dd, &done, &dn, 1), TC_OK);
        assert_true(isnan(dd));
    }
    /* -0 < +0 in both orders */
    assert_int_equal(rep_reduce(TC_FLOAT32, TC_MIN, &d, &pz, &nz, 1), TC_OK);
    assert_true(d == 0 && signbit(d));
    assert_int_equal(rep_reduce(TC_FLOAT32, TC_MIN, &d, &nz, &pz, 1), TC_OK);
    assert_true(d == 0 && signbit(d));
    assert_int_equal(rep_reduce(TC_FLOAT32, TC_MAX, &d, &pz, &nz, 1), TC_OK);
    assert_true(d == 0 && !signbit(d));
    assert_int_equal(rep_reduce(TC_FLOAT32, TC_MAX, &d, &nz, &pz, 1), TC_OK);
    assert_true(d == 0 && !signbit(d));
    {
        double dpz = 0.0, dnz = -0.0, dqb;
        uint64_t b64 = 0x7ff8000000000123ull, a64, d64;
        memcpy(&dqb, &b64, 8);
        memcpy(&a64, &dn, 8);
        assert_int_equal(rep_reduce(TC_FLOAT64, TC_MIN, &dd, &dpz, &dnz, 1), TC_OK);
        assert_true(dd == 0 && signbit(dd));
        assert_int_equal(rep_reduce(TC_FLOAT64, TC_MAX, &dd, &dnz, &dpz, 1), TC_OK);
        assert_true(dd == 0 && !signbit(dd));
        assert_int_equal(rep_reduce(TC_FLOAT64, TC_MIN, &dd, &dn, &dqb, 1), TC_OK);
        memcpy(&d64, &dd, 8);
        assert_true(d64 == a64);
        assert_int_equal(rep_reduce(TC_FLOAT64, TC_MAX, &dd, &dqb, &dn, 1), TC_OK);
        memcpy(&d64, &dd, 8);
        assert_true(d64 == b64);
    }
    /* sum of NaN stays NaN; inf - inf is NaN */
    {
        float inf = INFINITY, ninf = -INFINITY;
        assert_int_equal(rep_reduce(TC_FLOAT32, TC_SUM, &d, &qa, &one, 1), TC_OK);
        assert_true(isnan(d));
        assert_int_equal(rep_reduce(TC_FLOAT32, TC_SUM, &d, &inf, &ninf, 1), TC_OK);
        assert_true(isnan(d));
    }
}

static void integer_wrap_known_answers_body(void)
{
    int8_t a8 = 127, b8 = 1, d8;
    int32_t a32 = INT32_MIN, b32 = -1, d32;
    int64_t a64 = INT64_MAX, b64 = 2, d64;
    uint8_t ua = 200, ub = 100, ud;

    assert_int_equal(rep_reduce(TC_INT8, TC_SUM, &d8, &a8, &b8, 1), TC_OK);
    assert_int_equal(d8, -128);
    assert_int_equal(rep_reduce(TC_INT32, TC_SUM, &d32, &a32, &b32, 1), TC_OK);
    assert_int_equal(d32, INT32_MAX);
    assert_int_equal(rep_reduce(TC_INT32, TC_PROD, &d32, &a32, &b32, 1), TC_OK);
    assert_int_equal(d32, INT32_MIN);
    assert_int_equal(rep_reduce(TC_INT64, TC_PROD, &d64, &a64, &b64, 1), TC_OK);
    assert_int_equal(d64, -2);
    assert_int_equal(rep_reduce(TC_UINT8, TC_SUM, &ud, &ua, &ub, 1), TC_OK);
    assert_int_equal(ud, 44);
    assert_int_equal(rep_reduce(TC_UINT8, TC_PROD, &ud, &ua, &ub, 1), TC_OK);
    assert_int_equal(ud, (200 * 100) % 256);
    assert_int_equal(rep_reduce(TC_UINT8, TC_AVG, &ud, &ua, &ub, 1), TC_OK);
    assert_int_equal(ud, 44); /* AVG reduces as SUM */
}

static void test_half_known_answers(void **state)
{
    (void)state;
    at_every_level(half_known_answers_body);
}

static void test_float_nan_and_zero_rules(void **state)
{
    (void)state;
    at_every_level(float_nan_and_zero_rules_body);
}

static void test_integer_wrap_known_answers(void **state)
{
    (void)state;
    at_every_level(integer_wrap_known_answers_body);
}

/* Every float16 / bfloat16 bit pattern as a, against four permutations of
 * them as b, for every op: the vector conversions and their rounding must
 * give the reference's bits (any NaN where the reference is NaN). */
static void half_exhaustive_body(void)
{
    static const tc_dtype_t types[] = {TC_FLOAT16, TC_BFLOAT16};
    static const tc_redop_t ops[] = {TC_SUM, TC_PROD, TC_MIN, TC_MAX};
    const size_t n = 65536;
    uint16_t *a = malloc((n + 1) * 2), *b = malloc((n + 1) * 2), *d = malloc((n + 1) * 2);
    size_t ti, oi, i;
    unsigned k;

    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(d);
    for (ti = 0; ti < 2; ti++) {
        for (oi = 0; oi < 4; oi++) {
            for (k = 0; k < 4; k++) {
                for (i = 0; i < n; i++) {
                    a[1 + i] = (uint16_t)i;
                    b[1 + i] = (uint16_t)(i * 40503u + k * 12345u); /* odd factor: a permutation */
                }
                assert_int_equal(tc_kern_reduce(types[ti], ops[oi], d + 1, a + 1, b + 1, n), TC_OK);
                for (i = 0; i < n; i++) {
                    int nan;
                    uint64_t want = ref_elem(types[ti], ops[oi], a[1 + i], b[1 + i], &nan);
                    if (nan ? !result_is_nan(types[ti], d[1 + i]) : d[1 + i] != want) {
                        fail_msg("%s %s on %s: %#x op %#x = %#x, expected %#llx%s",
                                 tc_dtype_name(types[ti]), tc_redop_name(ops[oi]),
                                 level_names[tc_kern_simd()], a[1 + i], b[1 + i], d[1 + i],
                                 (unsigned long long)want, nan ? " (NaN)" : "");
                    }
                }
            }
        }
    }
    free(d);
    free(b);
    free(a);
}

static void test_half_exhaustive(void **state)
{
    (void)state;
    at_every_level(half_exhaustive_body);
}

/* Arrays past the non-temporal threshold of the SIMD loops (8 MiB of dst):
 * dst one element off a 64-byte boundary, so the aligned part is preceded by
 * scalar elements and followed by a tail; also in place (dst == a). */
static void large_nt_body(void)
{
    static const tc_dtype_t types[] = {TC_FLOAT16, TC_BFLOAT16, TC_FLOAT32, TC_FLOAT64};
    static const tc_redop_t ops[] = {TC_SUM, TC_MAX};
    size_t ti, oi, i;
    int inplace;

    for (ti = 0; ti < 4; ti++) {
        const tc_dtype_t t = types[ti];
        const size_t sz = tc_dtype_size(t), n = ((size_t)8 << 20) / sz + 45;
        char *a = aligned_alloc(64, ((n + 64) * sz + 63) / 64 * 64),
             *b = aligned_alloc(64, ((n + 64) * sz + 63) / 64 * 64);
        char *d = aligned_alloc(64, ((n + 64) * sz + 63) / 64 * 64), *a0 = malloc(n * sz);
        assert_non_null(a);
        assert_non_null(b);
        assert_non_null(d);
        assert_non_null(a0);
        fill(t, a0, n, 1234 + ti);
        fill(t, b + 3 * sz, n, 4321 + ti);
        for (oi = 0; oi < (t == TC_BFLOAT16 ? 2u : 1u); oi++) { /* max: bfloat16 only */
            for (inplace = 0; inplace < 2; inplace++) {
                char *pa = inplace ? d + sz : a + 2 * sz;
                memcpy(pa, a0, n * sz);
                assert_int_equal(tc_kern_reduce(t, ops[oi], d + sz, pa, b + 3 * sz, n), TC_OK);
                for (i = 0; i < n; i++) {
                    int nan;
                    uint64_t want =
                        ref_elem(t, ops[oi], ref_bits(t, a0, i), ref_bits(t, b + 3 * sz, i), &nan);
                    uint64_t got = ref_bits(t, d + sz, i);
                    if (nan ? !result_is_nan(t, got) : got != want) {
                        fail_msg("%s %s n=%zu%s on %s, element %zu: %#llx, expected %#llx",
                                 tc_dtype_name(t), tc_redop_name(ops[oi]), n,
                                 inplace ? " in place" : "", level_names[tc_kern_simd()], i,
                                 (unsigned long long)got, (unsigned long long)want);
                    }
                }
            }
        }
        free(a0);
        free(d);
        free(b);
        free(a);
    }
}

/* Only the SIMD loops have a non-temporal path (the sweep covers portable ones). */
static void test_large_arrays(void **state)
{
    int level;

    (void)state;
    for (level = TC_KERN_SIMD_AVX2; level <= TC_KERN_SIMD_AVX512; level++) {
        if (use_level((tc_kern_simd_t)level)) {
            large_nt_body();
        }
    }
    restore_level();
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
        cmocka_unit_test(test_half_exhaustive),
        cmocka_unit_test(test_large_arrays),
        cmocka_unit_test(test_all_types_ops_avx512),
        cmocka_unit_test(test_all_types_ops_avx2),
        cmocka_unit_test(test_all_types_ops_portable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
