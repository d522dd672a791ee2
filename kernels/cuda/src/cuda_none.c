/* The device side when tcomms is built without the CUDA toolkit: every call is refused. */
#include "cuda_dev.h"

static tc_status_t tc_kern_cuda_none(const char *what)
{
    return tc_error_set(TC_ERR_UNSUPPORTED,
                        "%s: tcomms was built without CUDA (no toolkit at $CUDA_HOME or "
                        "/usr/local/cuda when it was configured)",
                        what);
}

tc_status_t tc_kern_cuda_dev_count(int *count_p)
{
    return tc_kern_cuda_none("tc_kern_cuda_available");
}

tc_status_t tc_kern_cuda_dev_reduce(tc_dtype_t dtype, tc_redop_t op, void *dst, const void *a,
                                    const void *b, size_t n, void *stream)
{
    return tc_kern_cuda_none("tc_kern_cuda_reduce");
}

tc_status_t tc_kern_cuda_dev_scale_div(tc_dtype_t dtype, void *dst, size_t n, int divisor,
                                       void *stream)
{
    return tc_kern_cuda_none("tc_kern_cuda_scale_div");
}

tc_status_t tc_kern_cuda_dev_emulate_reduce(tc_dtype_t dtype, tc_redop_t op, void *dst,
                                            const void *a, const void *b, size_t n,
                                            unsigned max_blocks)
{
    return tc_kern_cuda_none("tc_kern_cuda_emulate_reduce");
}

tc_status_t tc_kern_cuda_dev_emulate_scale_div(tc_dtype_t dtype, void *dst, size_t n, int divisor,
                                               unsigned max_blocks)
{
    return tc_kern_cuda_none("tc_kern_cuda_emulate_scale_div");
}

tc_status_t tc_kern_cuda_dev_set_device(int device)
{
    (void)device;
    return tc_kern_cuda_none("tc_kern_cuda_set_device");
}

tc_status_t tc_kern_cuda_dev_memcpy(void *dst, const void *src, size_t bytes)
{
    (void)dst;
    (void)src;
    (void)bytes;
    return tc_kern_cuda_none("tc_kern_cuda_memcpy");
}
