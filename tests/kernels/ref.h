/*
 * Independent references for the kernel tests: half-precision formats are
 * decoded and rounded with frexp/ldexp/nearbyint on doubles (not with the bit
 * tricks of the kernels), integers are computed in 128-bit arithmetic and
 * truncated, floats in double / long double.
 */
#ifndef TCOMMS_TESTS_KERNELS_REF_H
#define TCOMMS_TESTS_KERNELS_REF_H

#include <fenv.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "tcomms/base/dtype.h"

/* A binary floating-point format with `mbits` stored mantissa bits, `ebits` exponent bits. */
typedef struct ref_fmt {
    int mbits;
    int ebits;
} ref_fmt_t;

static const ref_fmt_t REF_F16 = {10, 5};
static const ref_fmt_t REF_BF16 = {7, 8};

static inline double ref_decode(ref_fmt_t f, uint16_t h)
{
    int bias = (1 << (f.ebits - 1)) - 1;
    unsigned e = (h >> f.mbits) & ((1u << f.ebits) - 1u);
    unsigned m = h & ((1u << f.mbits) - 1u);
    double sign = (h >> (f.mbits + f.ebits)) & 1u ? -1.0 : 1.0;

    if (e == (1u << f.ebits) - 1u) {
        return m ? NAN : sign * INFINITY;
    }
    if (e == 0) {
        return sign * ldexp((double)m, 1 - bias - f.mbits);
    }
    return sign * ldexp((double)((1u << f.mbits) + m), (int)e - bias - f.mbits);
}

static inline int ref_is_nan16(ref_fmt_t f, uint16_t h)
{
    return isnan(ref_decode(f, h));
}

/* Round v to the format, to nearest even (as the FPU does in its default mode). */
static inline uint16_t ref_encode(ref_fmt_t f, double v)
{
    int bias = (1 << (f.ebits - 1)) - 1, emin = 1 - bias, emax = bias, e, q;
    unsigned sign = signbit(v) ? 1u << (f.mbits + f.ebits) : 0;
    unsigned expmask = ((1u << f.ebits) - 1u) << f.mbits;
    double a = fabs(v), r, val;

    if (isnan(v)) {
        return (uint16_t)(expmask | (1u << (f.mbits - 1)));
    }
    if (isinf(a)) {
        return (uint16_t)(sign | expmask);
    }
    if (a == 0) {
        return (uint16_t)sign;
    }
    frexp(a, &e); /* a in [2^(e-1), 2^e) */
    q = (e - 1) - f.mbits;
    if (q < emin - f.mbits) {
        q = emin - f.mbits; /* subnormal quantum */
    }
    r = nearbyint(ldexp(a, -q));
    val = ldexp(r, q);
    if (val >= ldexp(1.0, emax + 1)) {
        return (uint16_t)(sign | expmask);
    }
    if (val < ldexp(1.0, emin)) {
        return (uint16_t)(sign | (unsigned)ldexp(val, f.mbits - emin));
    }
    frexp(val, &e);
    e -= 1;
    return (uint16_t)(sign | ((unsigned)(e + bias) << f.mbits) |
                      ((unsigned)ldexp(val, f.mbits - e) - (1u << f.mbits)));
}

/* IEEE 754-2019 minimum / maximum on doubles, written with libm. */
static inline double ref_min(double x, double y)
{
    if (isnan(x)) {
        return x;
    }
    if (isnan(y)) {
        return y;
    }
    if (x == y) {
        return (signbit(x) || signbit(y)) ? -fabs(x) : x;
    }
    return fmin(x, y);
}

static inline double ref_max(double x, double y)
{
    if (isnan(x)) {
        return x;
    }
    if (isnan(y)) {
        return y;
    }
    if (x == y) {
        return (signbit(x) && signbit(y)) ? x : fabs(x);
    }
    return fmax(x, y);
}

/* splitmix64: a small deterministic generator. */
static inline uint64_t ref_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline int ref_is_int(tc_dtype_t t)
{
    return t <= TC_UINT64;
}

static inline int ref_is_signed(tc_dtype_t t)
{
    return t == TC_INT8 || t == TC_INT32 || t == TC_INT64;
}

/* Integer element i of buffer p as a sign- or zero-extended 64-bit value. */
static inline int64_t ref_load_int(tc_dtype_t t, const void *p, size_t i)
{
    switch (t) {
    case TC_INT8:
        return ((const int8_t *)p)[i];
    case TC_UINT8:
        return ((const uint8_t *)p)[i];
    case TC_INT32:
        return ((const int32_t *)p)[i];
    case TC_UINT32:
        return (int64_t)((const uint32_t *)p)[i];
    case TC_INT64:
        return ((const int64_t *)p)[i];
    default:
        return (int64_t)((const uint64_t *)p)[i];
    }
}

/* The raw bits of element i (any type), zero-extended. */
static inline uint64_t ref_bits(tc_dtype_t t, const void *p, size_t i)
{
    uint64_t v = 0;
    size_t sz = tc_dtype_size(t);
    memcpy(&v, (const char *)p + i * sz, sz); /* little endian */
    return v;
}

static inline void ref_store_bits(tc_dtype_t t, void *p, size_t i, uint64_t v)
{
    size_t sz = tc_dtype_size(t);
    memcpy((char *)p + i * sz, &v, sz);
}

static inline uint64_t ref_mask(tc_dtype_t t)
{
    size_t sz = tc_dtype_size(t);
    return sz == 8 ? ~0ull : (1ull << (8 * sz)) - 1;
}

#endif /* TCOMMS_TESTS_KERNELS_REF_H */
