/*
 * The loops written in plain C, instantiated once per instruction set: a file
 * expands these macros with ATTR = a target attribute (or nothing) and SFX =
 * its suffix, and the compiler vectorises them for that set. A loop is named
 * tc_kern_<op>_<type>_<SFX>; TC_KERN_TABLE(SFX) lists them by (type, op).
 */
#ifndef TCOMMS_KERNELS_SRC_GENERIC_H
#define TCOMMS_KERNELS_SRC_GENERIC_H

#include "binop.h"
#include "ops.h"

#define TC_KERN_GEN_INT_TYPE(ATTR, SFX, S, T)                                                      \
    TC_KERN_BINOP(ATTR, tc_kern_sum_##S##_##SFX, T, tc_kern_sum_##S##_op)                          \
    TC_KERN_BINOP(ATTR, tc_kern_prod_##S##_##SFX, T, tc_kern_prod_##S##_op)                        \
    TC_KERN_BINOP(ATTR, tc_kern_min_##S##_##SFX, T, tc_kern_min_##S##_op)                          \
    TC_KERN_BINOP(ATTR, tc_kern_max_##S##_##SFX, T, tc_kern_max_##S##_op)                          \
    TC_KERN_BINOP(ATTR, tc_kern_band_##S##_##SFX, T, tc_kern_band_##S##_op)                        \
    TC_KERN_BINOP(ATTR, tc_kern_bor_##S##_##SFX, T, tc_kern_bor_##S##_op)                          \
    TC_KERN_BINOP(ATTR, tc_kern_bxor_##S##_##SFX, T, tc_kern_bxor_##S##_op)

/* Every integer type and op. */
#define TC_KERN_GEN_INT(ATTR, SFX)                                                                 \
    TC_KERN_GEN_INT_TYPE(ATTR, SFX, i8, int8_t)                                                    \
    TC_KERN_GEN_INT_TYPE(ATTR, SFX, u8, uint8_t)                                                   \
    TC_KERN_GEN_INT_TYPE(ATTR, SFX, i32, int32_t)                                                  \
    TC_KERN_GEN_INT_TYPE(ATTR, SFX, u32, uint32_t)                                                 \
    TC_KERN_GEN_INT_TYPE(ATTR, SFX, i64, int64_t)                                                  \
    TC_KERN_GEN_INT_TYPE(ATTR, SFX, u64, uint64_t)

#define TC_KERN_GEN_FLOAT_TYPE(ATTR, SFX, S, T)                                                    \
    TC_KERN_BINOP(ATTR, tc_kern_sum_##S##_##SFX, T, tc_kern_sum_##S##_op)                          \
    TC_KERN_BINOP(ATTR, tc_kern_prod_##S##_##SFX, T, tc_kern_prod_##S##_op)                        \
    TC_KERN_BINOP(ATTR, tc_kern_min_##S##_##SFX, T, tc_kern_min_##S##_op)                          \
    TC_KERN_BINOP(ATTR, tc_kern_max_##S##_##SFX, T, tc_kern_max_##S##_op)

/* Every float and half type and op (the portable build; SIMD files write their own). */
#define TC_KERN_GEN_FLOAT(ATTR, SFX)                                                               \
    TC_KERN_GEN_FLOAT_TYPE(ATTR, SFX, f16, uint16_t)                                               \
    TC_KERN_GEN_FLOAT_TYPE(ATTR, SFX, bf16, uint16_t)                                              \
    TC_KERN_GEN_FLOAT_TYPE(ATTR, SFX, f32, float)                                                  \
    TC_KERN_GEN_FLOAT_TYPE(ATTR, SFX, f64, double)

/* ---- the table: AVG reduces as SUM; NULL where the op does not apply ----- */

#define TC_KERN_INT_ROW(S, SFX)                                                                    \
    {                                                                                              \
        [TC_SUM] = tc_kern_sum_##S##_##SFX, [TC_PROD] = tc_kern_prod_##S##_##SFX,                  \
        [TC_MIN] = tc_kern_min_##S##_##SFX, [TC_MAX] = tc_kern_max_##S##_##SFX,                    \
        [TC_AVG] = tc_kern_sum_##S##_##SFX, [TC_BAND] = tc_kern_band_##S##_##SFX,                  \
        [TC_BOR] = tc_kern_bor_##S##_##SFX, [TC_BXOR] = tc_kern_bxor_##S##_##SFX,                  \
    }

#define TC_KERN_FLOAT_ROW(S, SFX)                                                                  \
    {                                                                                              \
        [TC_SUM] = tc_kern_sum_##S##_##SFX, [TC_PROD] = tc_kern_prod_##S##_##SFX,                  \
        [TC_MIN] = tc_kern_min_##S##_##SFX, [TC_MAX] = tc_kern_max_##S##_##SFX,                    \
        [TC_AVG] = tc_kern_sum_##S##_##SFX,                                                        \
    }

#define TC_KERN_TABLE(SFX)                                                                         \
    {                                                                                              \
        .fn = {                                                                                    \
            [TC_INT8] = TC_KERN_INT_ROW(i8, SFX),                                                  \
            [TC_UINT8] = TC_KERN_INT_ROW(u8, SFX),                                                 \
            [TC_INT32] = TC_KERN_INT_ROW(i32, SFX),                                                \
            [TC_UINT32] = TC_KERN_INT_ROW(u32, SFX),                                               \
            [TC_INT64] = TC_KERN_INT_ROW(i64, SFX),                                                \
            [TC_UINT64] = TC_KERN_INT_ROW(u64, SFX),                                               \
            [TC_FLOAT16] = TC_KERN_FLOAT_ROW(f16, SFX),                                            \
            [TC_BFLOAT16] = TC_KERN_FLOAT_ROW(bf16, SFX),                                          \
            [TC_FLOAT32] = TC_KERN_FLOAT_ROW(f32, SFX),                                            \
            [TC_FLOAT64] = TC_KERN_FLOAT_ROW(f64, SFX),                                            \
        },                                                                                         \
    }

#endif /* TCOMMS_KERNELS_SRC_GENERIC_H */
