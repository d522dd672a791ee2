/*
 * The CUDA kernels plugin (not public). nvcc's code and the static CUDA runtime live in a shared
 * object of their own, libtcomms_cuda.so, which the library opens with dlopen only when CUDA is
 * asked for (cuda_load.c). A program linking tcomms therefore needs no CUDA library to start, and
 * the CUDA runtime is not forced on every consumer of the archives.
 *
 * The plugin exports one symbol, TC_KERN_CUDA_PLUGIN_ENTRY, which fills a tc_kern_cuda_plugin_t
 * with the functions of cuda_dev.h. The plugin has its own copy of the base layer, so its error
 * detail is read back with last_error() and set again in the caller's thread.
 */
#ifndef TCOMMS_KERNELS_CUDA_SRC_CUDA_PLUGIN_H
#define TCOMMS_KERNELS_CUDA_SRC_CUDA_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "tcomms/base/dtype.h"
#include "tcomms/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Raised whenever the table below changes: a plugin of another build is refused. */
#define TC_KERN_CUDA_PLUGIN_ABI 1u

/* The file name the loader looks for, and its one exported symbol. */
#define TC_KERN_CUDA_PLUGIN_FILE "libtcomms_cuda.so"
#define TC_KERN_CUDA_PLUGIN_ENTRY "tc_kern_cuda_plugin_init"

typedef struct tc_kern_cuda_plugin {
    tc_status_t (*dev_count)(int *count_p);
    tc_status_t (*set_device)(int device);
    tc_status_t (*memcpy)(void *dst, const void *src, size_t bytes);
    tc_status_t (*reduce)(tc_dtype_t dtype, tc_redop_t op, void *dst, const void *a,
                          const void *b, size_t n, void *stream);
    tc_status_t (*scale_div)(tc_dtype_t dtype, void *dst, size_t n, int divisor, void *stream);
    tc_status_t (*emulate_reduce)(tc_dtype_t dtype, tc_redop_t op, void *dst, const void *a,
                                  const void *b, size_t n, unsigned max_blocks);
    tc_status_t (*emulate_scale_div)(tc_dtype_t dtype, void *dst, size_t n, int divisor,
                                     unsigned max_blocks);
    const char *(*last_error)(void); /* the plugin's detail of its last error */
} tc_kern_cuda_plugin_t;

/* The entry point: fills @p table when @p abi and @p table_size match the plugin's; else -1. */
typedef int (*tc_kern_cuda_plugin_init_fn)(uint32_t abi, size_t table_size,
                                           tc_kern_cuda_plugin_t *table);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_KERNELS_CUDA_SRC_CUDA_PLUGIN_H */
