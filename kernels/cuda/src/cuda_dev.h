/*
 * The device side of the CUDA kernels (not public). cuda_reduce.c checks the
 * arguments, then calls these. cuda_dev.cu implements them with nvcc inside the
 * plugin libtcomms_cuda.so; in the library, cuda_load.c implements them by
 * calling into the plugin (cuda_plugin.h), or refuses them when tcomms was
 * built without the toolkit.
 *
 * Arguments reaching here are valid: a known (type, op) pair that applies,
 * n > 0, non-NULL pointers aligned to the element size, no partial overlap,
 * divisor >= 2.
 */
#ifndef TCOMMS_KERNELS_CUDA_SRC_CUDA_DEV_H
#define TCOMMS_KERNELS_CUDA_SRC_CUDA_DEV_H

#include <stddef.h>

#include "tcomms/base/dtype.h"
#include "tcomms/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The number of devices, or TC_ERR_UNSUPPORTED "no CUDA device: ...". */
TC_MUST_USE tc_status_t tc_kern_cuda_dev_count(int *count_p);

/* Make @p device current for the calling thread. */
TC_MUST_USE tc_status_t tc_kern_cuda_dev_set_device(int device);

/* Copy @p bytes between any two of host and device memory (unified addressing),
 * synchronously. */
TC_MUST_USE tc_status_t tc_kern_cuda_dev_memcpy(void *dst, const void *src, size_t bytes);

/* Launch the kernels on `stream` (a cudaStream_t). */
TC_MUST_USE tc_status_t tc_kern_cuda_dev_reduce(tc_dtype_t dtype, tc_redop_t op, void *dst,
                                                const void *a, const void *b, size_t n,
                                                void *stream);
TC_MUST_USE tc_status_t tc_kern_cuda_dev_scale_div(tc_dtype_t dtype, void *dst, size_t n,
                                                   int divisor, void *stream);

/* Run the kernels' code on the host (cuda_emulate.h). */
TC_MUST_USE tc_status_t tc_kern_cuda_dev_emulate_reduce(tc_dtype_t dtype, tc_redop_t op, void *dst,
                                                        const void *a, const void *b, size_t n,
                                                        unsigned max_blocks);
TC_MUST_USE tc_status_t tc_kern_cuda_dev_emulate_scale_div(tc_dtype_t dtype, void *dst, size_t n,
                                                           int divisor, unsigned max_blocks);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_KERNELS_CUDA_SRC_CUDA_DEV_H */
