/* Inputs are small integers, so sums, products of ones, minus ones and a
 * few twos, minima, maxima and bitwise ops are exact in every type; the
 * expected value is computed here in int64 arithmetic, independently of the
 * library. Inputs repeat with a prime period (PERIOD), so the expected values
 * of one period are computed once per check. Unsigned types get non-negative
 * inputs, so that min and max compare the same in int64 as in the type. */
#include "pattern.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PERIOD 4099

static int is_unsigned(tc_dtype_t t)
{
    return t == TC_UINT8 || t == TC_UINT32 || t == TC_UINT64;
}

static int64_t input(int rank, size_t i, tc_redop_t op, tc_dtype_t t)
{
    size_t k = i % PERIOD, r = (size_t)rank;
    if (op == TC_PROD) /* at most ceil(nranks / 5) twos per index */
        return (k + r) % 5 == 0 ? 2 : (!is_unsigned(t) && (k * 3 + r) % 7 == 0 ? -1 : 1);
    if (op == TC_BAND || op == TC_BOR || op == TC_BXOR)
        return (int64_t)((r * 37 + k * 11) % 64);
    int64_t v = (int64_t)((r * 7 + k) % 17) - 8; /* in [-8, 8] */
    return is_unsigned(t) ? v + 8 : v;
}

/* The reduction over ranks 0..nranks-1 at every index of one period (for avg: the sum). */
static void expected_table(tc_redop_t op, tc_dtype_t t, int nranks, int64_t *tab)
{
    for (size_t k = 0; k < PERIOD; k++) {
        int64_t acc = input(0, k, op, t);
        for (int r = 1; r < nranks; r++) {
            int64_t v = input(r, k, op, t);
            switch (op) {
            case TC_SUM:
            case TC_AVG: acc += v; break;
            case TC_PROD: acc *= v; break;
            case TC_MIN: acc = v < acc ? v : acc; break;
            case TC_MAX: acc = v > acc ? v : acc; break;
            case TC_BAND: acc &= v; break;
            case TC_BOR: acc |= v; break;
            case TC_BXOR: acc ^= v; break;
            default: break;
            }
        }
        tab[k] = acc;
    }
}

/* Exact small values only: the top bits of a float32 are a bfloat16, and
 * float32 -> binary16 is exact for integers below 2048. */
static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

static float from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint16_t to_fp16(float f)
{
    if (f == 0.0f)
        return signbit(f) ? 0x8000 : 0;
    uint16_t sign = f < 0 ? 0x8000 : 0;
    f = fabsf(f);
    int e;
    float m = frexpf(f, &e); /* f = m * 2^e, m in [0.5, 1) */
    uint16_t mant = (uint16_t)((m * 2.0f - 1.0f) * 1024.0f + 0.5f);
    return (uint16_t)(sign | (uint16_t)((e - 1 + 15) << 10) | mant);
}

static float from_fp16(uint16_t h)
{
    int e = (h >> 10) & 0x1f, mant = h & 0x3ff;
    float v = e == 0 ? ldexpf((float)mant, -24) : ldexpf(1.0f + mant / 1024.0f, e - 15);
    return (h & 0x8000) ? -v : v;
}

static void store(void *buf, size_t i, tc_dtype_t dtype, double v)
{
    switch (dtype) {
    case TC_INT8: ((int8_t *)buf)[i] = (int8_t)(int64_t)v; break;
    case TC_UINT8: ((uint8_t *)buf)[i] = (uint8_t)(int64_t)v; break;
    case TC_INT32: ((int32_t *)buf)[i] = (int32_t)(int64_t)v; break;
    case TC_UINT32: ((uint32_t *)buf)[i] = (uint32_t)(int64_t)v; break;
    case TC_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case TC_UINT64: ((uint64_t *)buf)[i] = (uint64_t)(int64_t)v; break;
    case TC_FLOAT16: ((uint16_t *)buf)[i] = to_fp16((float)v); break;
    case TC_BFLOAT16: ((uint16_t *)buf)[i] = to_bf16((float)v); break;
    case TC_FLOAT32: ((float *)buf)[i] = (float)v; break;
    case TC_FLOAT64: ((double *)buf)[i] = v; break;
    default: break;
    }
}

void tcperf_fill(void *buf, size_t count, tc_dtype_t dtype, tc_redop_t op, int rank,
                 size_t first)
{
    for (size_t i = 0; i < count; i++)
        store(buf, i, dtype, (double)input(rank, first + i, op, dtype));
}

static int is_float(tc_dtype_t t)
{
    return t == TC_FLOAT16 || t == TC_BFLOAT16 || t == TC_FLOAT32 || t == TC_FLOAT64;
}

/* The integer result as the type holds it (wrapped), widened to int64 / uint64 bits. */
static int64_t wrapped(tc_dtype_t dtype, int64_t v)
{
    switch (dtype) {
    case TC_INT8: return (int8_t)v;
    case TC_UINT8: return (uint8_t)v;
    case TC_INT32: return (int32_t)v;
    case TC_UINT32: return (uint32_t)v;
    default: return v;
    }
}

size_t tcperf_check(const void *buf, size_t count, tc_dtype_t dtype, tc_redop_t op, int nranks,
                    size_t first)
{
    size_t wrong = 0, esize = tc_dtype_size(dtype);
    int64_t *tab = malloc(PERIOD * sizeof(int64_t));
    if (!tab)
        return count ? count : 1;
    expected_table(op, dtype, nranks, tab);
    for (size_t i = 0; i < count; i++) {
        int64_t e = tab[(first + i) % PERIOD];
        if (op == TC_AVG && is_float(dtype)) {
            /* avg of floats: within the type's precision */
            double got;
            switch (dtype) {
            case TC_FLOAT16: got = from_fp16(((const uint16_t *)buf)[i]); break;
            case TC_BFLOAT16: got = from_bf16(((const uint16_t *)buf)[i]); break;
            case TC_FLOAT32: got = ((const float *)buf)[i]; break;
            default: got = ((const double *)buf)[i]; break;
            }
            double exp = (double)e / nranks;
            double tol = dtype == TC_FLOAT64 ? 1e-12 : dtype == TC_FLOAT32 ? 1e-6 : 1e-2;
            wrong += !(fabs(got - exp) <= tol * (fabs(exp) > 1 ? fabs(exp) : 1));
            continue;
        }
        if (op == TC_AVG) {
            /* integer avg: the sum, wrapped in the type, then truncating division */
            int64_t s = wrapped(dtype, e);
            e = dtype == TC_UINT64 ? (int64_t)((uint64_t)s / (uint64_t)nranks) : s / nranks;
        }
        unsigned char expect[8] = {0};
        store(expect, 0, dtype, (double)e);
        wrong += memcmp((const char *)buf + i * esize, expect, esize) != 0;
    }
    free(tab);
    return wrong;
}

static uint64_t mix(uint64_t x) /* splitmix64's finaliser */
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t block_seed(int src, int dst, uint64_t seq)
{
    return mix(mix(seq) ^ ((uint64_t)(unsigned)src << 32 | (uint64_t)(unsigned)dst));
}

void tcperf_fill_block(void *buf, size_t count, size_t esize, int src, int dst, uint64_t seq)
{
    uint64_t seed = block_seed(src, dst, seq);
    for (size_t i = 0; i < count; i++) {
        uint64_t v = mix(seed + i);
        memcpy((char *)buf + i * esize, &v, esize);
    }
}

size_t tcperf_check_block(const void *buf, size_t count, size_t esize, int src, int dst,
                          uint64_t seq)
{
    uint64_t seed = block_seed(src, dst, seq);
    size_t wrong = 0;
    for (size_t i = 0; i < count; i++) {
        uint64_t v = mix(seed + i);
        wrong += memcmp((const char *)buf + i * esize, &v, esize) != 0;
    }
    return wrong;
}
