/* The independent reference of the CUDA kernel tests (see cref.h). */
#include "cref.h"

#include <float.h>
#include <math.h>
#include <string.h>

typedef unsigned __int128 u128;
typedef __int128 i128;

size_t cref_size(tc_dtype_t t)
{
    static const size_t sizes[TC_DTYPE_COUNT] = {
        [TC_INT8] = 1,   [TC_UINT8] = 1,   [TC_INT32] = 4,    [TC_UINT32] = 4,  [TC_INT64] = 8,
        [TC_UINT64] = 8, [TC_FLOAT16] = 2, [TC_BFLOAT16] = 2, [TC_FLOAT32] = 4, [TC_FLOAT64] = 8,
    };
    return sizes[t];
}

static int cref_is_int(tc_dtype_t t)
{
    return t <= TC_UINT64;
}

static int cref_is_signed(tc_dtype_t t)
{
    return t == TC_INT8 || t == TC_INT32 || t == TC_INT64;
}

int cref_applies(tc_redop_t op, tc_dtype_t t)
{
    return cref_is_int(t) || !(op == TC_BAND || op == TC_BOR || op == TC_BXOR);
}

uint64_t cref_rand(uint64_t *seed)
{
    uint64_t z = (*seed += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ---- raw element access (little endian) ------------------------------------------- */

/* Fixed-size copies, which the compiler turns into single loads and stores. */
uint64_t cref_bits(tc_dtype_t t, const void *buf, size_t i)
{
    const char *p = (const char *)buf;
    uint8_t v8;
    uint16_t v16;
    uint32_t v32;
    uint64_t v64;

    switch (cref_size(t)) {
    case 1:
        memcpy(&v8, p + i, 1);
        return v8;
    case 2:
        memcpy(&v16, p + 2 * i, 2);
        return v16;
    case 4:
        memcpy(&v32, p + 4 * i, 4);
        return v32;
    default:
        memcpy(&v64, p + 8 * i, 8);
        return v64;
    }
}

static void cref_set_bits(tc_dtype_t t, void *buf, size_t i, uint64_t v)
{
    char *p = (char *)buf;
    uint8_t v8 = (uint8_t)v;
    uint16_t v16 = (uint16_t)v;
    uint32_t v32 = (uint32_t)v;

    switch (cref_size(t)) {
    case 1:
        memcpy(p + i, &v8, 1);
        break;
    case 2:
        memcpy(p + 2 * i, &v16, 2);
        break;
    case 4:
        memcpy(p + 4 * i, &v32, 4);
        break;
    default:
        memcpy(p + 8 * i, &v, 8);
        break;
    }
}

/* ---- integers: the exact value, and the value modulo 2^width ------------------------- */

static i128 cref_int_value(tc_dtype_t t, const void *buf, size_t i)
{
    unsigned width = 8 * (unsigned)cref_size(t);
    uint64_t bits = cref_bits(t, buf, i);

    if (cref_is_signed(t) && (bits >> (width - 1)) & 1u) {
        return (i128)bits - ((i128)1 << width);
    }
    return (i128)bits;
}

/* Keeps the low bits: the value modulo 2^width, which is what wrapping means. */
static void cref_int_store(tc_dtype_t t, void *buf, size_t i, u128 v)
{
    cref_set_bits(t, buf, i, (uint64_t)v);
}

/* ---- float16 / bfloat16 by hand ------------------------------------------------------ */

typedef struct cref_half {
    int mbits; /* stored mantissa bits */
    int ebits; /* exponent bits */
} cref_half_t;

static cref_half_t cref_half_fmt(tc_dtype_t t)
{
    return t == TC_FLOAT16 ? (cref_half_t){10, 5} : (cref_half_t){7, 8};
}

static int cref_half_is_nan(cref_half_t f, uint16_t h)
{
    unsigned emask = (1u << f.ebits) - 1u;

    return ((h >> f.mbits) & emask) == emask && (h & ((1u << f.mbits) - 1u)) != 0;
}

static double cref_half_decode(cref_half_t f, uint16_t h)
{
    int bias = (1 << (f.ebits - 1)) - 1;
    unsigned emask = (1u << f.ebits) - 1u, e = (h >> f.mbits) & emask;
    unsigned m = h & ((1u << f.mbits) - 1u);
    double s = (h >> 15) ? -1.0 : 1.0;

    if (e == emask) {
        return m != 0 ? NAN : s * INFINITY;
    }
    if (e == 0) {
        return s * ldexp(m, 1 - bias - f.mbits);
    }
    return s * ldexp(m | (1u << f.mbits), (int)e - bias - f.mbits);
}

/* Round v to the format, to nearest with ties to even, by counting ulps. */
static uint16_t cref_half_encode(cref_half_t f, double v)
{
    int bias = (1 << (f.ebits - 1)) - 1, e;
    unsigned emask = (1u << f.ebits) - 1u;
    uint16_t sign = signbit(v) ? 0x8000u : 0;
    double a = fabs(v), k, fl;

    if (isnan(v)) {
        return (uint16_t)((emask << f.mbits) | (1u << (f.mbits - 1)));
    }
    if (isinf(v)) {
        return (uint16_t)(sign | (emask << f.mbits));
    }
    if (a == 0.0) {
        return sign;
    }
    (void)frexp(a, &e);
    e -= 1; /* 2^e <= a < 2^(e+1) */
    if (e < 1 - bias) {
        e = 1 - bias; /* subnormal range: the ulp of the smallest normal */
    }
    k = ldexp(a, f.mbits - e); /* a in ulps of 2^(e - mbits): exact scaling */
    fl = floor(k);
    if (k - fl > 0.5 || (k - fl == 0.5 && fmod(fl, 2.0) != 0.0)) {
        fl += 1.0;
    }
    if (fl >= ldexp(1.0, f.mbits + 1)) { /* rounded up to the next binade */
        fl /= 2.0;
        e += 1;
    }
    if (e > bias) {
        return (uint16_t)(sign | (emask << f.mbits));
    }
    if (fl < ldexp(1.0, f.mbits)) {
        return (uint16_t)(sign | (uint16_t)fl); /* subnormal: exponent field 0 */
    }
    return (uint16_t)(sign | ((unsigned)(e + bias) << f.mbits) | ((unsigned)fl - (1u << f.mbits)));
}

/* ---- IEEE 754-2019 minimum / maximum on bits ----------------------------------------- */

/* Sign-magnitude bits to a key ordered as the values, with -0 < +0. */
static int64_t cref_order_key(uint64_t bits, unsigned width)
{
    uint64_t mag = bits & ((1ull << (width - 1)) - 1ull);

    return (bits >> (width - 1)) & 1u ? -(int64_t)mag - 1 : (int64_t)mag;
}

static int cref_float_bits_nan(tc_dtype_t t, uint64_t bits)
{
    switch (t) {
    case TC_FLOAT16:
    case TC_BFLOAT16:
        return cref_half_is_nan(cref_half_fmt(t), (uint16_t)bits);
    case TC_FLOAT32:
        return (bits & 0x7fffffffu) > 0x7f800000u;
    default:
        return (bits & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
    }
}

/* The result of min/max when the chosen operand is NaN: float16/bfloat16
 * quiet it (they pass through float32); float32/float64 return it as is. */
static uint64_t cref_nan_result(tc_dtype_t t, uint64_t bits)
{
    if (t == TC_FLOAT16) {
        return bits | 0x0200u;
    }
    if (t == TC_BFLOAT16) {
        return bits | 0x0040u;
    }
    return bits;
}

static uint64_t cref_minmax(tc_dtype_t t, int is_max, uint64_t x, uint64_t y)
{
    unsigned width = 8 * (unsigned)cref_size(t);
    int64_t kx, ky;

    if (cref_float_bits_nan(t, x)) {
        return cref_nan_result(t, x);
    }
    if (cref_float_bits_nan(t, y)) {
        return cref_nan_result(t, y);
    }
    kx = cref_order_key(x, width);
    ky = cref_order_key(y, width);
    if (is_max) {
        return kx >= ky ? x : y;
    }
    return kx <= ky ? x : y;
}

/* ---- values of floats as doubles ----------------------------------------------------- */

static double cref_float_value(tc_dtype_t t, const void *buf, size_t i)
{
    uint64_t bits = cref_bits(t, buf, i);
    float f;
    double d;

    switch (t) {
    case TC_FLOAT16:
    case TC_BFLOAT16:
        return cref_half_decode(cref_half_fmt(t), (uint16_t)bits);
    case TC_FLOAT32: {
        uint32_t b32 = (uint32_t)bits;
        memcpy(&f, &b32, sizeof(f));
        return f;
    }
    default:
        memcpy(&d, &bits, sizeof(d));
        return d;
    }
}

/* Store the float32-rounded v (float16/bfloat16 are computed in float32 first). */
static void cref_float_store(tc_dtype_t t, void *buf, size_t i, double v)
{
    float f = (float)v;
    uint32_t b32;

    switch (t) {
    case TC_FLOAT16:
    case TC_BFLOAT16:
        cref_set_bits(t, buf, i, cref_half_encode(cref_half_fmt(t), f));
        break;
    case TC_FLOAT32:
        memcpy(&b32, &f, sizeof(f));
        cref_set_bits(t, buf, i, b32);
        break;
    default:
        memcpy((char *)buf + i * 8, &v, 8);
        break;
    }
}

/* ---- the operations -------------------------------------------------------------------- */

static void cref_int_op(tc_dtype_t t, tc_redop_t op, void *out, const void *a, const void *b,
                        size_t i)
{
    i128 x = cref_int_value(t, a, i), y = cref_int_value(t, b, i);
    uint64_t bx = cref_bits(t, a, i), by = cref_bits(t, b, i);

    switch (op) {
    case TC_SUM:
    case TC_AVG:
        cref_int_store(t, out, i, (u128)x + (u128)y);
        break;
    case TC_PROD:
        cref_int_store(t, out, i, (u128)x * (u128)y); /* modulo 2^128, then 2^width */
        break;
    case TC_MIN:
        cref_int_store(t, out, i, (u128)(x < y ? x : y));
        break;
    case TC_MAX:
        cref_int_store(t, out, i, (u128)(x > y ? x : y));
        break;
    case TC_BAND:
        cref_set_bits(t, out, i, bx & by);
        break;
    case TC_BOR:
        cref_set_bits(t, out, i, bx | by);
        break;
    default:
        cref_set_bits(t, out, i, bx ^ by);
        break;
    }
}

static void cref_float_op(tc_dtype_t t, tc_redop_t op, void *out, const void *a, const void *b,
                          size_t i)
{
    double x = cref_float_value(t, a, i), y = cref_float_value(t, b, i);

    switch (op) {
    case TC_SUM:
    case TC_AVG:
        cref_float_store(t, out, i, x + y); /* float64: the FPU's own rounding */
        break;
    case TC_PROD:
        cref_float_store(t, out, i, x * y);
        break;
    default:
        cref_set_bits(t, out, i,
                      cref_minmax(t, op == TC_MAX, cref_bits(t, a, i), cref_bits(t, b, i)));
        break;
    }
}

void cref_scale(tc_dtype_t t, void *buf, size_t n, int divisor)
{
    for (size_t i = 0; i < n && divisor > 1; i++) {
        if (cref_is_int(t)) {
            cref_int_store(t, buf, i, (u128)(cref_int_value(t, buf, i) / divisor));
        } else {
            cref_float_store(t, buf, i, cref_float_value(t, buf, i) / divisor);
        }
    }
}

void cref_reduce(tc_dtype_t t, tc_redop_t op, void *out, const void *a, const void *b, size_t n,
                 int divisor)
{
    for (size_t i = 0; i < n; i++) {
        if (cref_is_int(t)) {
            cref_int_op(t, op, out, a, b, i);
        } else {
            cref_float_op(t, op, out, a, b, i);
        }
    }
    if (op == TC_AVG) {
        cref_scale(t, out, n, divisor);
    }
}

int cref_same(tc_dtype_t t, tc_redop_t op, const void *got, const void *want, size_t i)
{
    uint64_t g = cref_bits(t, got, i), w = cref_bits(t, want, i);

    if (!cref_is_int(t) && op != TC_MIN && op != TC_MAX && cref_float_bits_nan(t, w)) {
        return cref_float_bits_nan(t, g);
    }
    return g == w;
}

/* ---- inputs ------------------------------------------------------------------------------ */

static uint64_t cref_special(tc_dtype_t t, uint64_t r)
{
    static const uint64_t f16[] = {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfd55, 0x0001,
                                   0x8001, 0x03ff, 0x0400, 0x7bff, 0xfbff, 0x3c00, 0x3c01, 0x1400};
    static const uint64_t bf16[] = {0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0x7f81, 0xffa5, 0x0001,
                                    0x8001, 0x007f, 0x0080, 0x7f7f, 0xff7f, 0x3f80, 0x3f81, 0x3b80};
    static const uint64_t f32[] = {0x00000000, 0x80000000, 0x7f800000, 0xff800000,
                                   0x7fc00000, 0x7f800001, 0xffa5a5a5, 0x00000001,
                                   0x80000001, 0x007fffff, 0x00800000, 0x7f7fffff,
                                   0xff7fffff, 0x3f800000, 0x3f800001, 0x33800000};
    static const uint64_t f64[] = {0,
                                   0x8000000000000000ull,
                                   0x7ff0000000000000ull,
                                   0xfff0000000000000ull,
                                   0x7ff8000000000000ull,
                                   0x7ff0000000000001ull,
                                   0xfff5a5a5a5a5a5a5ull,
                                   1,
                                   0x8000000000000001ull,
                                   0x000fffffffffffffull,
                                   0x0010000000000000ull,
                                   0x7fefffffffffffffull,
                                   0xffefffffffffffffull,
                                   0x3ff0000000000000ull,
                                   0x3ff0000000000001ull,
                                   0x3ca0000000000000ull};
    unsigned width = 8 * (unsigned)cref_size(t);
    uint64_t top = 1ull << (width - 1), ones = width == 64 ? ~0ull : (1ull << width) - 1;
    uint64_t ints[8] = {0, 1, ones, top, top - 1, top + 1, 2, ones - 1};

    switch (t) {
    case TC_FLOAT16:
        return f16[r % 16];
    case TC_BFLOAT16:
        return bf16[r % 16];
    case TC_FLOAT32:
        return f32[r % 16];
    case TC_FLOAT64:
        return f64[r % 16];
    default:
        return ints[r % 8];
    }
}

/* A finite float near 1 (exponent -12..12), so sums and products round often. */
static uint64_t cref_moderate(tc_dtype_t t, uint64_t r)
{
    uint64_t sign = r >> 63, e = (r >> 40) % 25;
    double v = ldexp(1.0 + (double)(r & 0xffffffffffull) / 0x10000000000ull, (int)e - 12);
    float f;
    uint32_t b32;

    if (sign) {
        v = -v;
    }
    switch (t) {
    case TC_FLOAT16:
    case TC_BFLOAT16:
        return cref_half_encode(cref_half_fmt(t), (float)v);
    case TC_FLOAT32:
        f = (float)v;
        memcpy(&b32, &f, sizeof(f));
        return b32;
    default: {
        uint64_t b64;
        memcpy(&b64, &v, sizeof(v));
        return b64;
    }
    }
}

void cref_fill(tc_dtype_t t, void *buf, size_t n, uint64_t *seed)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t r = cref_rand(seed), v;

        switch (r & 7) {
        case 0:
            v = cref_special(t, r >> 3);
            break;
        case 1:
        case 2:
        case 3:
            v = cref_is_int(t) ? cref_rand(seed) : cref_moderate(t, cref_rand(seed));
            break;
        default:
            v = cref_rand(seed); /* any bit pattern */
            break;
        }
        cref_set_bits(t, buf, i, v);
    }
}

void cref_pair_up(tc_dtype_t t, const void *a, void *b, size_t n, uint64_t *seed)
{
    unsigned width = 8 * (unsigned)cref_size(t);

    for (size_t i = 0; i < n; i++) {
        uint64_t r = cref_rand(seed);

        if ((r & 7) == 0) {
            cref_set_bits(t, b, i, cref_bits(t, a, i));
        } else if ((r & 7) == 1) {
            cref_set_bits(t, b, i, cref_bits(t, a, i) ^ (1ull << (width - 1)));
        }
    }
}
