/*
 * The element operations: one static inline function per (op, type), named
 * tc_kern_<op>_<type>_op. Every loop (portable, compiler-vectorised, or the
 * scalar tail of a hand-vectorised one) computes through these, so all paths
 * agree bit for bit.
 */
#ifndef TCOMMS_KERNELS_SRC_OPS_H
#define TCOMMS_KERNELS_SRC_OPS_H

#include <stdint.h>

#include "half.h"

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
    }

/* Unsigned operands of uint8_t promote to int: 255 * 255 still fits. */
TC_KERN_INT_OPS(i8, int8_t, uint8_t)
TC_KERN_INT_OPS(u8, uint8_t, uint8_t)
TC_KERN_INT_OPS(i32, int32_t, uint32_t)
TC_KERN_INT_OPS(u32, uint32_t, uint32_t)
TC_KERN_INT_OPS(i64, int64_t, uint64_t)
TC_KERN_INT_OPS(u64, uint64_t, uint64_t)

/* ---- floats ------------------------------------------------------------- */

/* IEEE 754-2019 minimum/maximum: NaN propagates (a's when both are), -0 < +0. */
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

/* float16 / bfloat16: widen to float32, compute, round back to nearest even. */
#define TC_KERN_HALF_OP(H, OP)                                                                     \
    static inline uint16_t tc_kern_##OP##_##H##_op(uint16_t x, uint16_t y)                         \
    {                                                                                              \
        return tc_kern_f32_to_##H(                                                                 \
            tc_kern_##OP##_f32_op(tc_kern_##H##_to_f32(x), tc_kern_##H##_to_f32(y)));              \
    }

TC_KERN_HALF_OP(f16, sum)
TC_KERN_HALF_OP(f16, prod)
TC_KERN_HALF_OP(f16, min)
TC_KERN_HALF_OP(f16, max)
TC_KERN_HALF_OP(bf16, sum)
TC_KERN_HALF_OP(bf16, prod)
TC_KERN_HALF_OP(bf16, min)
TC_KERN_HALF_OP(bf16, max)

#endif /* TCOMMS_KERNELS_SRC_OPS_H */
