/* Inputs are small integers, so sums, products of ones and twos, minima,
 * maxima and bitwise ops are exact in every type; the expected value is
 * computed here in int64/double arithmetic, independently of the library. */
#include "pattern.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static int64_t input(int rank, size_t i, tc_redop_t op)
{
    if (op == TC_PROD)
        return (i + (size_t)rank) % 5 == 0 ? 2 : 1;
    if (op == TC_BAND || op == TC_BOR || op == TC_BXOR)
        return (int64_t)(((size_t)rank * 37 + i * 11) % 64);
    return (int64_t)(((size_t)rank * 7 + i) % 17) - 8; /* in [-8, 8] */
}

static int64_t expected_int(size_t i, tc_redop_t op, int nranks)
{
    int64_t acc = input(0, i, op);
    for (int r = 1; r < nranks; r++) {
        int64_t v = input(r, i, op);
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
    return acc;
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

void tcperf_fill(void *buf, size_t count, tc_dtype_t dtype, tc_redop_t op, int rank)
{
    for (size_t i = 0; i < count; i++)
        store(buf, i, dtype, (double)input(rank, i, op));
}

static int is_float(tc_dtype_t t)
{
    return t == TC_FLOAT16 || t == TC_BFLOAT16 || t == TC_FLOAT32 || t == TC_FLOAT64;
}

size_t tcperf_check(const void *buf, size_t count, tc_dtype_t dtype, tc_redop_t op, int nranks)
{
    /* the expected value, stored in the type exactly as tcperf_fill would */
    union { int64_t i64; double f64; uint64_t raw; } want;
    size_t wrong = 0, esize = tc_dtype_size(dtype);
    for (size_t i = 0; i < count; i++) {
        int64_t e = expected_int(i, op, nranks);
        unsigned char expect[8] = {0};
        if (op == TC_AVG && is_float(dtype)) {
            /* avg of floats: compare within the type's precision */
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
            unsigned char sum[8] = {0};
            store(sum, 0, dtype, (double)e);
            int64_t s;
            switch (dtype) {
            case TC_INT8: s = *(int8_t *)sum; break;
            case TC_UINT8: s = *(uint8_t *)sum; break;
            case TC_INT32: s = *(int32_t *)sum; break;
            case TC_UINT32: s = *(uint32_t *)sum; break;
            case TC_INT64: s = *(int64_t *)sum; break;
            default: s = (int64_t) * (uint64_t *)sum; break;
            }
            if (dtype == TC_UINT64)
                want.raw = *(uint64_t *)sum / (uint64_t)nranks;
            else
                want.i64 = s / nranks;
            store(expect, 0, dtype, (double)(dtype == TC_UINT64 ? (int64_t)want.raw : want.i64));
        } else {
            store(expect, 0, dtype, (double)e);
        }
        wrong += memcmp((const char *)buf + i * esize, expect, esize) != 0;
    }
    return wrong;
}
