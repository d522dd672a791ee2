/**
 * @file reduce.h
 * @brief Reduction and copy kernels on the CPU.
 */
#ifndef TCOMMS_KERNELS_REDUCE_H
#define TCOMMS_KERNELS_REDUCE_H

#include <stddef.h>

#include "tcomms/base/dtype.h"
#include "tcomms/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief dst[i] = a[i] op b[i] for i < n. @p dst may equal @p a or @p b.
 *
 * TC_AVG reduces as TC_SUM here; the caller scales once at the end with
 * tc_kern_scale_div().
 *
 * Semantics:
 * - Integers wrap (two's complement) on overflow for SUM and PROD.
 * - float16 and bfloat16 are computed in float32 and rounded to nearest,
 *   ties to even (overflow gives infinity, NaN stays NaN).
 * - MIN and MAX on floats follow IEEE 754-2019 minimum/maximum: a NaN in
 *   either operand gives NaN (the NaN of @p a when both are), and -0 is
 *   smaller than +0. Both rules make the result independent of operand
 *   order, so every rank of a reduction tree gets the same bits.
 * - Partial overlap of @p dst with @p a or @p b (other than equality) is
 *   rejected with TC_ERR_INVALID_ARG.
 * @param dtype element type.
 * @param op the operation.
 * @param dst the result, n elements.
 * @param a first operand, n elements.
 * @param b second operand, n elements.
 * @param n number of elements (0 is allowed, pointers may then be NULL).
 * @return TC_OK; TC_ERR_UNSUPPORTED naming the pair when @p op does not apply
 *         to @p dtype (bitwise ops on floats); TC_ERR_INVALID_ARG for an
 *         unknown type or op, a NULL pointer or a partial overlap.
 */
tc_status_t tc_kern_reduce(tc_dtype_t dtype, tc_redop_t op, void *dst, const void *a,
                           const void *b, size_t n);

/**
 * @brief dst[i] /= divisor for i < n (the end of TC_AVG).
 *
 * Integers: truncating division (towards zero). Floats: division in the
 * type (float16/bfloat16 through float32, rounded to nearest even).
 * @param dtype element type.
 * @param dst the elements, divided in place.
 * @param n number of elements.
 * @param divisor a positive divisor (the number of ranks).
 * @return TC_OK; TC_ERR_INVALID_ARG for an unknown type, a divisor < 1, or a
 *         NULL @p dst with n > 0.
 */
tc_status_t tc_kern_scale_div(tc_dtype_t dtype, void *dst, size_t n, int divisor);

/**
 * @brief Copy @p bytes (memcpy that tolerates n == 0 and dst == src).
 * @param dst destination.
 * @param src source (may overlap @p dst).
 * @param bytes bytes to copy.
 */
void tc_kern_copy(void *dst, const void *src, size_t bytes);

/** @brief Vector instruction sets the CPU kernels can use. */
typedef enum tc_kern_simd {
    TC_KERN_SIMD_NONE = 0,   /**< portable C (vectorised by the compiler for the baseline, SSE2) */
    TC_KERN_SIMD_AVX2 = 1,   /**< AVX2 and F16C: every loop in 256-bit vectors */
    TC_KERN_SIMD_AVX512 = 2, /**< AVX-512 F and BW: every loop in 512-bit vectors */
} tc_kern_simd_t;

/**
 * @brief The instruction set the kernels use now: the best the CPU supports
 *        (detected once, on first use; no constructor), lowered by tc_kern_simd_limit().
 * @return the level in use.
 */
tc_kern_simd_t tc_kern_simd(void);

/**
 * @brief Never use more than @p max (tests of every path, benchmarks).
 *
 * Process-wide; meant for tests and benchmarks, not to be called while other
 * threads reduce (each call of theirs uses one level or the other, both correct).
 * @param max the highest level allowed; TC_KERN_SIMD_AVX512 allows all the CPU has.
 * @return the level now in use.
 */
tc_kern_simd_t tc_kern_simd_limit(tc_kern_simd_t max);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_KERNELS_REDUCE_H */
