/**
 * @file cuda_reduce.h
 * @brief Reduction kernels on a CUDA device, launched on the caller's stream.
 *
 * Same semantics as the CPU kernels of tcomms/kernels/reduce.h, bit for bit,
 * with one exception the hardware decides: the payload of a NaN produced by
 * SUM, PROD or AVG (the GPU returns its canonical NaN; it is still a NaN).
 * MIN and MAX return the same NaN bits as the CPU kernels.
 *
 * The pointers must be device-accessible (device, managed or mapped host
 * memory) and aligned to their element size. The calls only enqueue work:
 * errors of the kernel's execution (an illegal address) surface at the
 * caller's next synchronisation of @p stream. The header needs no CUDA
 * header: a stream is passed as `void *` (a cudaStream_t; NULL is the
 * legacy default stream).
 *
 * Built without the CUDA toolkit, every entry point that needs a device
 * returns TC_ERR_UNSUPPORTED ("built without CUDA") after checking its
 * arguments.
 */
#ifndef TCOMMS_KERNELS_CUDA_REDUCE_H
#define TCOMMS_KERNELS_CUDA_REDUCE_H

#include <stddef.h>

#include "tcomms/base/dtype.h"
#include "tcomms/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Whether the CUDA kernels plugin (libtcomms_cuda.so, which carries
 *        the CUDA runtime) is loaded; the first call tries to load it:
 *        `$TC_CUDA_PLUGIN`, else beside the object holding tcomms (and in
 *        `../lib` from it), else the dynamic loader's search path.
 * @param where_p receives the plugin's path when loaded, else every place
 *        tried and why it failed, or "built without CUDA" (may be NULL).
 * @return 1 when loaded, 0 otherwise. Thread-safe.
 */
int tc_kern_cuda_plugin(const char **where_p);

/**
 * @brief Whether a CUDA device can be used by this process.
 * @param count_p receives the number of devices on success (may be NULL).
 * @return TC_OK with at least one device; TC_ERR_UNSUPPORTED with the detail
 *         "no CUDA device: <CUDA's error text>" when there is no driver or no
 *         device, or "built without CUDA".
 */
tc_status_t tc_kern_cuda_available(int *count_p);

/**
 * @brief Make CUDA device @p device current for the calling thread.
 * @return TC_OK; TC_ERR_INVALID_ARG for a negative device; CUDA's error
 *         otherwise (TC_ERR_UNSUPPORTED when built without CUDA).
 */
tc_status_t tc_kern_cuda_set_device(int device);

/**
 * @brief Copy @p bytes between host and device memory in either direction
 *        (unified addressing decides), synchronously.
 * @return TC_OK; TC_ERR_INVALID_ARG for a NULL pointer with bytes > 0; CUDA's
 *         error otherwise (TC_ERR_UNSUPPORTED when built without CUDA).
 */
tc_status_t tc_kern_cuda_memcpy(void *dst, const void *src, size_t bytes);

/**
 * @brief Enqueue dst[i] = a[i] op b[i] for i < n on @p stream.
 *
 * TC_AVG reduces as TC_SUM; scale once at the end with tc_kern_cuda_scale_div().
 * Integers wrap; float16/bfloat16 are computed in float32 and rounded to
 * nearest even; MIN/MAX follow IEEE 754-2019 minimum/maximum (NaN wins,
 * -0 < +0), as in tc_kern_reduce().
 * @param dtype element type.
 * @param op the operation.
 * @param dst the result, n elements of device memory; may equal @p a or @p b.
 * @param a first operand, n elements.
 * @param b second operand, n elements.
 * @param n number of elements (0 is allowed, pointers may then be NULL;
 *          nothing is launched).
 * @param stream the cudaStream_t to launch on.
 * @return TC_OK once enqueued; TC_ERR_UNSUPPORTED naming the pair when @p op
 *         does not apply to @p dtype (checked before any device call);
 *         TC_ERR_INVALID_ARG for an unknown type or op, a NULL pointer, a
 *         pointer not aligned to the element size, or a partial overlap;
 *         TC_ERR_UNSUPPORTED "no CUDA device: ..." without a driver or device;
 *         TC_ERR_SYSTEM for another CUDA error, with CUDA's text and the
 *         kernel's name.
 */
tc_status_t tc_kern_cuda_reduce(tc_dtype_t dtype, tc_redop_t op, void *dst, const void *a,
                                const void *b, size_t n, void *stream);

/**
 * @brief Enqueue dst[i] /= divisor for i < n on @p stream (the end of TC_AVG).
 *
 * Integers: truncating division; floats: division in the type
 * (float16/bfloat16 through float32, rounded to nearest even).
 * @param dtype element type.
 * @param dst the elements (device memory), divided in place.
 * @param n number of elements.
 * @param divisor a positive divisor (the number of ranks); 1 launches nothing.
 * @param stream the cudaStream_t to launch on.
 * @return TC_OK once enqueued; TC_ERR_INVALID_ARG for an unknown type, a
 *         divisor < 1, a NULL or misaligned @p dst with n > 0; device errors
 *         as tc_kern_cuda_reduce().
 */
tc_status_t tc_kern_cuda_scale_div(tc_dtype_t dtype, void *dst, size_t n, int divisor,
                                   void *stream);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_KERNELS_CUDA_REDUCE_H */
