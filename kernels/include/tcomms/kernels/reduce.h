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
 * tc_kern_scale().
 * @return TC_ERR_UNSUPPORTED naming the pair when @p op does not apply to @p dtype.
 */
tc_status_t tc_kern_reduce(tc_dtype_t dtype, tc_redop_t op, void *dst, const void *a,
                           const void *b, size_t n);

/** @brief dst[i] /= divisor for i < n (the end of TC_AVG). */
tc_status_t tc_kern_scale_div(tc_dtype_t dtype, void *dst, size_t n, int divisor);

/** @brief Copy @p bytes (memcpy that tolerates n == 0 and dst == src). */
void tc_kern_copy(void *dst, const void *src, size_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_KERNELS_REDUCE_H */
