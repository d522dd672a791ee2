/* tc_kern_reduce: one loop per (type, op), chosen from a table. */
#include <stdint.h>

#include "binop.h"
#include "half.h"
#include "kern_internal.h"
#include "tcomms/kernels/reduce.h"

/* ---- integers: SUM and PROD wrap, computed in the unsigned type ---------- */

#define TC_KERN_INT_OPS(S, T, U)                                                                   \
    static inline T tc_kern_sum_##S##_op(T x, T y)                                                 \
    {                                                                                              \
        return (T)((U)x + (U)y);                                                                   \
    }                                                                                              \
    static inline T tc_kern_prod_##S##_op(T x, T y)                                                \
    {                                                                                              \
        return (T)((U)x * (U)y);                                                                   \
    }                                                                                              \
    static inline T tc_kern_min_##S##_op(T x, T y)                                                 \
    {                                                                                              \
        return y < x ? y : x;                                                                      \
    }                                                                                              \
    static inline T tc_kern_max_##S##_op(T x, T y)                                                 \
    {                                                                                              \
        return y > x ? y : x;                                                                      \
    }                                                                                              \
    static inline T tc_kern_band_##S##_op(T x, T y)                                                \
    {                                                                                              \
        return (T)(x & y);                                                                         \
    }                                                                                              \
    static inline T tc_kern_bor_##S##_op(T x, T y)                                                 \
    {                                                                                              \
        return (T)(x | y);                                                                         \
    }                                                                                              \
    static inline T tc_kern_bxor_##S##_op(T x, T y)                                                \
    {                                                                                              \
        return (T)(x ^ y);                                                                         \
    }                                                                                              \
    TC_KERN_BINOP(, tc_kern_sum_##S, T, tc_kern_sum_##S##_op)                                      \
    TC_KERN_BINOP(, tc_kern_prod_##S, T, tc_kern_prod_##S##_op)                                    \
    TC_KERN_BINOP(, tc_kern_min_##S, T, tc_kern_min_##S##_op)                                      \
    TC_KERN_BINOP(, tc_kern_max_##S, T, tc_kern_max_##S##_op)                                      \
    TC_KERN_BINOP(, tc_kern_band_##S, T, tc_kern_band_##S##_op)                                    \
    TC_KERN_BINOP(, tc_kern_bor_##S, T, tc_kern_bor_##S##_op)                                      \
    TC_KERN_BINOP(, tc_kern_bxor_##S, T, tc_kern_bxor_##S##_op)

/* Unsigned operands of uint8_t promote to int: 255 * 255 still fits. */
TC_KERN_INT_OPS(i8, int8_t, uint8_t)
TC_KERN_INT_OPS(u8, uint8_t, uint8_t)
TC_KERN_INT_OPS(i32, int32_t, uint32_t)
TC_KERN_INT_OPS(u32, uint32_t, uint32_t)
TC_KERN_INT_OPS(i64, int64_t, uint64_t)
TC_KERN_INT_OPS(u64, uint64_t, uint64_t)

/* ---- floats ------------------------------------------------------------- */

/* IEEE 754-2019 minimum/maximum: NaN propagates, -0 < +0 (order-independent). */
#define TC_KERN_FLOAT_OPS(S, T)                                                                    \
    static inline T tc_kern_sum_##S##_op(T x, T y)                                                 \
    {                                                                                              \
        return x + y;                                                                              \
    }                                                                                              \
    static inline T tc_kern_prod_##S##_op(T x, T y)                                                \
    {                                                                                              \
        return x * y;                                                                              \
    }                                                                                              \
    static inline T tc_kern_min_##S##_op(T x, T y)                                                 \
    {                                                                                              \
        if (x != x || x < y) {                                                                     \
            return x;                                                                              \
        }                                                                                          \
        if (y != y || y < x) {                                                                     \
            return y;                                                                              \
        }                                                                                          \
        return __builtin_signbit(x) ? x : y; /* equal: only the sign of zero differs */            \
    }                                                                                              \
    static inline T tc_kern_max_##S##_op(T x, T y)                                                 \
    {                                                                                              \
        if (x != x || x > y) {                                                                     \
            return x;                                                                              \
        }                                                                                          \
        if (y != y || y > x) {                                                                     \
            return y;                                                                              \
        }                                                                                          \
        return __builtin_signbit(x) ? y : x;                                                       \
    }

TC_KERN_FLOAT_OPS(f32, float)
TC_KERN_FLOAT_OPS(f64, double)

TC_KERN_BINOP(, tc_kern_prod_f32, float, tc_kern_prod_f32_op)
TC_KERN_BINOP(, tc_kern_min_f32, float, tc_kern_min_f32_op)
TC_KERN_BINOP(, tc_kern_max_f32, float, tc_kern_max_f32_op)
TC_KERN_BINOP(, tc_kern_sum_f64, double, tc_kern_sum_f64_op)
TC_KERN_BINOP(, tc_kern_prod_f64, double, tc_kern_prod_f64_op)
TC_KERN_BINOP(, tc_kern_min_f64, double, tc_kern_min_f64_op)
TC_KERN_BINOP(, tc_kern_max_f64, double, tc_kern_max_f64_op)

/* float16 / bfloat16: widen to float32, compute, round back to nearest even. */
#define TC_KERN_HALF_OP(H, OP)                                                                     \
    static inline uint16_t tc_kern_##OP##_##H##_op(uint16_t x, uint16_t y)                         \
    {                                                                                              \
        return tc_kern_f32_to_##H(                                                                 \
            tc_kern_##OP##_f32_op(tc_kern_##H##_to_f32(x), tc_kern_##H##_to_f32(y)));              \
    }                                                                                              \
    TC_KERN_BINOP(, tc_kern_##OP##_##H, uint16_t, tc_kern_##OP##_##H##_op)

TC_KERN_HALF_OP(f16, sum)
TC_KERN_HALF_OP(f16, prod)
TC_KERN_HALF_OP(f16, min)
TC_KERN_HALF_OP(f16, max)
TC_KERN_HALF_OP(bf16, sum)
TC_KERN_HALF_OP(bf16, prod)
TC_KERN_HALF_OP(bf16, min)
TC_KERN_HALF_OP(bf16, max)

/* ---- the table: AVG reduces as SUM; NULL where the op does not apply ----- */

#define TC_KERN_INT_ROW(S)                                                                         \
    {                                                                                              \
        [TC_SUM] = tc_kern_sum_##S, [TC_PROD] = tc_kern_prod_##S, [TC_MIN] = tc_kern_min_##S,      \
        [TC_MAX] = tc_kern_max_##S, [TC_AVG] = tc_kern_sum_##S, [TC_BAND] = tc_kern_band_##S,      \
        [TC_BOR] = tc_kern_bor_##S, [TC_BXOR] = tc_kern_bxor_##S,                                  \
    }

#define TC_KERN_FLOAT_ROW(SUM, S)                                                                  \
    {                                                                                              \
        [TC_SUM] = SUM, [TC_PROD] = tc_kern_prod_##S, [TC_MIN] = tc_kern_min_##S,                  \
        [TC_MAX] = tc_kern_max_##S, [TC_AVG] = SUM,                                                \
    }

static const tc_kern_binop_fn tc_kern_table[TC_DTYPE_COUNT][TC_REDOP_COUNT] = {
    [TC_INT8] = TC_KERN_INT_ROW(i8),
    [TC_UINT8] = TC_KERN_INT_ROW(u8),
    [TC_INT32] = TC_KERN_INT_ROW(i32),
    [TC_UINT32] = TC_KERN_INT_ROW(u32),
    [TC_INT64] = TC_KERN_INT_ROW(i64),
    [TC_UINT64] = TC_KERN_INT_ROW(u64),
    [TC_FLOAT16] = TC_KERN_FLOAT_ROW(tc_kern_sum_f16, f16),
    [TC_BFLOAT16] = TC_KERN_FLOAT_ROW(tc_kern_sum_bf16, bf16),
    [TC_FLOAT32] = TC_KERN_FLOAT_ROW(tc_kern_sum_f32, f32),
    [TC_FLOAT64] = TC_KERN_FLOAT_ROW(tc_kern_sum_f64, f64),
};

/* Whether [p, p+bytes) and [q, q+bytes) overlap without being the same range. */
static int tc_kern_partial_overlap(const void *p, const void *q, size_t bytes)
{
    uintptr_t x = (uintptr_t)p, y = (uintptr_t)q;

    return x != y && x < y + bytes && y < x + bytes;
}

tc_status_t tc_kern_reduce(tc_dtype_t dtype, tc_redop_t op, void *dst, const void *a, const void *b,
                           size_t n)
{
    tc_kern_binop_fn fn;
    size_t bytes;

    if ((int)dtype < 0 || dtype >= TC_DTYPE_COUNT) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_kern_reduce: unknown dtype %d", (int)dtype);
    }
    if ((int)op < 0 || op >= TC_REDOP_COUNT) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_kern_reduce: unknown op %d", (int)op);
    }
    fn = tc_kern_table[dtype][op];
    if (fn == NULL) {
        return tc_error_set(TC_ERR_UNSUPPORTED,
                            "tc_kern_reduce: op %s does not apply to %s (bitwise ops take "
                            "integer types only)",
                            tc_redop_name(op), tc_dtype_name(dtype));
    }
    if (n == 0) {
        return TC_OK;
    }
    if (dst == NULL || a == NULL || b == NULL) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_kern_reduce: %s is NULL with n = %zu",
                            dst == NULL ? "dst"
                            : a == NULL ? "a"
                                        : "b",
                            n);
    }
    bytes = tc_dtype_size(dtype);
    if (n > SIZE_MAX / bytes) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_kern_reduce: %zu elements of %s overflow", n,
                            tc_dtype_name(dtype));
    }
    bytes *= n;
    if (tc_kern_partial_overlap(dst, a, bytes) || tc_kern_partial_overlap(dst, b, bytes)) {
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "tc_kern_reduce: dst %p overlaps %s %p without being equal to it "
                            "(%zu bytes)",
                            dst, tc_kern_partial_overlap(dst, a, bytes) ? "a" : "b",
                            tc_kern_partial_overlap(dst, a, bytes) ? a : b, bytes);
    }
    fn(dst, a, b, n);
    return TC_OK;
}
