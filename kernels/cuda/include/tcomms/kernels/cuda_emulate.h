/**
 * @file cuda_emulate.h
 * @brief For tests: run the CUDA kernels' code on the host.
 *
 * The element operations, the float16/bfloat16 conversions and the
 * head/vector/tail split of the CUDA kernels are `__host__ __device__`
 * code. These entry points run that code on the CPU, thread by thread of
 * the grid the launch would use, on host memory, so the arithmetic and the
 * indexing are tested on a machine without a GPU. On a device, the
 * conversions use the hardware instructions (cvt.rn), whose host
 * counterparts in cuda_fp16.h compute the same IEEE rounding.
 */
#ifndef TCOMMS_KERNELS_CUDA_EMULATE_H
#define TCOMMS_KERNELS_CUDA_EMULATE_H

#include <stddef.h>

#include "tcomms/base/dtype.h"
#include "tcomms/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief tc_kern_cuda_reduce() on host memory, through the kernel's code.
 * @param dtype element type.
 * @param op the operation.
 * @param dst the result (host memory); may equal @p a or @p b.
 * @param a first operand.
 * @param b second operand.
 * @param n number of elements.
 * @param max_blocks 0 for the grid a launch would use; otherwise at most
 *        this many blocks (so that each thread loops over several vectors).
 * @return as tc_kern_cuda_reduce() for bad arguments; TC_ERR_UNSUPPORTED
 *         "built without CUDA" when the kernels were not compiled.
 */
tc_status_t tc_kern_cuda_emulate_reduce(tc_dtype_t dtype, tc_redop_t op, void *dst, const void *a,
                                        const void *b, size_t n, unsigned max_blocks);

/**
 * @brief tc_kern_cuda_scale_div() on host memory, through the kernel's code.
 * @param dtype element type.
 * @param dst the elements (host memory), divided in place.
 * @param n number of elements.
 * @param divisor a positive divisor.
 * @param max_blocks as tc_kern_cuda_emulate_reduce().
 * @return as tc_kern_cuda_scale_div() for bad arguments; TC_ERR_UNSUPPORTED
 *         "built without CUDA" when the kernels were not compiled.
 */
tc_status_t tc_kern_cuda_emulate_scale_div(tc_dtype_t dtype, void *dst, size_t n, int divisor,
                                           unsigned max_blocks);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_KERNELS_CUDA_EMULATE_H */
