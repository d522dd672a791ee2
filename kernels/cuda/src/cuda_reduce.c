/* The public entry points of the CUDA kernels: check the arguments, then hand over. */
#include <stdint.h>

#include "cuda_dev.h"
#include "tcomms/kernels/cuda_emulate.h"
#include "tcomms/kernels/cuda_reduce.h"

/* Whether [p, p+bytes) and [q, q+bytes) overlap without being the same range. */
static int tc_kern_cuda_partial_overlap(const void *p, const void *q, size_t bytes)
{
    uintptr_t x = (uintptr_t)p, y = (uintptr_t)q;

    return x != y && x < y + bytes && y < x + bytes;
}

/* A pointer a device can load elements of `size` bytes from (natural alignment). */
static tc_status_t tc_kern_cuda_check_ptr(const char *fn, const char *name, const void *p,
                                          tc_dtype_t dtype, size_t n)
{
    size_t size = tc_dtype_size(dtype);

    if (p == NULL) {
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: %s is NULL with n = %zu", fn, name, n);
    }
    if ((uintptr_t)p % size != 0) {
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "%s: %s %p is not aligned to the %zu-byte %s element (a GPU "
                            "needs natural alignment)",
                            fn, name, p, size, tc_dtype_name(dtype));
    }
    return TC_OK;
}

/* Everything tc_kern_cuda_reduce() refuses before touching a device. */
static tc_status_t tc_kern_cuda_check_reduce(const char *fn, tc_dtype_t dtype, tc_redop_t op,
                                             const void *dst, const void *a, const void *b,
                                             size_t n)
{
    size_t bytes;
    tc_status_t st;

    if ((int)dtype < 0 || dtype >= TC_DTYPE_COUNT) {
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: unknown dtype %d", fn, (int)dtype);
    }
    if ((int)op < 0 || op >= TC_REDOP_COUNT) {
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: unknown op %d", fn, (int)op);
    }
    if (!tc_redop_valid_for(op, dtype)) {
        return tc_error_set(TC_ERR_UNSUPPORTED,
                            "%s: op %s does not apply to %s (bitwise ops take integer types "
                            "only)",
                            fn, tc_redop_name(op), tc_dtype_name(dtype));
    }
    if (n == 0) {
        return TC_OK;
    }
    if ((st = tc_kern_cuda_check_ptr(fn, "dst", dst, dtype, n)) != TC_OK ||
        (st = tc_kern_cuda_check_ptr(fn, "a", a, dtype, n)) != TC_OK ||
        (st = tc_kern_cuda_check_ptr(fn, "b", b, dtype, n)) != TC_OK) {
        return st;
    }
    bytes = tc_dtype_size(dtype);
    if (n > SIZE_MAX / bytes) {
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: %zu elements of %s overflow", fn, n,
                            tc_dtype_name(dtype));
    }
    bytes *= n;
    if (tc_kern_cuda_partial_overlap(dst, a, bytes)) {
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "%s: dst %p overlaps a %p without being equal to it (%zu bytes)", fn,
                            dst, a, bytes);
    }
    if (tc_kern_cuda_partial_overlap(dst, b, bytes)) {
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "%s: dst %p overlaps b %p without being equal to it (%zu bytes)", fn,
                            dst, b, bytes);
    }
    return TC_OK;
}

static tc_status_t tc_kern_cuda_check_scale(const char *fn, tc_dtype_t dtype, const void *dst,
                                            size_t n, int divisor)
{
    if ((int)dtype < 0 || dtype >= TC_DTYPE_COUNT) {
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: unknown dtype %d", fn, (int)dtype);
    }
    if (divisor < 1) {
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "%s: divisor %d (must be >= 1, the number of ranks)", fn, divisor);
    }
    if (n == 0 || divisor == 1) {
        return TC_OK;
    }
    return tc_kern_cuda_check_ptr(fn, "dst", dst, dtype, n);
}

tc_status_t tc_kern_cuda_available(int *count_p)
{
    int count = 0;
    tc_status_t st = tc_kern_cuda_dev_count(&count);

    if (st != TC_OK) {
        return st;
    }
    if (count_p != NULL) {
        *count_p = count;
    }
    return TC_OK;
}

tc_status_t tc_kern_cuda_reduce(tc_dtype_t dtype, tc_redop_t op, void *dst, const void *a,
                                const void *b, size_t n, void *stream)
{
    tc_status_t st = tc_kern_cuda_check_reduce("tc_kern_cuda_reduce", dtype, op, dst, a, b, n);

    if (st != TC_OK || n == 0) {
        return st;
    }
    return tc_kern_cuda_dev_reduce(dtype, op, dst, a, b, n, stream);
}

tc_status_t tc_kern_cuda_scale_div(tc_dtype_t dtype, void *dst, size_t n, int divisor, void *stream)
{
    tc_status_t st = tc_kern_cuda_check_scale("tc_kern_cuda_scale_div", dtype, dst, n, divisor);

    if (st != TC_OK || n == 0 || divisor == 1) {
        return st;
    }
    return tc_kern_cuda_dev_scale_div(dtype, dst, n, divisor, stream);
}

tc_status_t tc_kern_cuda_emulate_reduce(tc_dtype_t dtype, tc_redop_t op, void *dst, const void *a,
                                        const void *b, size_t n, unsigned max_blocks)
{
    tc_status_t st =
        tc_kern_cuda_check_reduce("tc_kern_cuda_emulate_reduce", dtype, op, dst, a, b, n);

    if (st != TC_OK || n == 0) {
        return st;
    }
    return tc_kern_cuda_dev_emulate_reduce(dtype, op, dst, a, b, n, max_blocks);
}

tc_status_t tc_kern_cuda_emulate_scale_div(tc_dtype_t dtype, void *dst, size_t n, int divisor,
                                           unsigned max_blocks)
{
    tc_status_t st =
        tc_kern_cuda_check_scale("tc_kern_cuda_emulate_scale_div", dtype, dst, n, divisor);

    if (st != TC_OK || n == 0 || divisor == 1) {
        return st;
    }
    return tc_kern_cuda_dev_emulate_scale_div(dtype, dst, n, divisor, max_blocks);
}

tc_status_t tc_kern_cuda_set_device(int device)
{
    if (device < 0)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_kern_cuda_set_device: device %d", device);
    return tc_kern_cuda_dev_set_device(device);
}

tc_status_t tc_kern_cuda_memcpy(void *dst, const void *src, size_t bytes)
{
    if (bytes == 0)
        return TC_OK;
    if (dst == NULL || src == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_kern_cuda_memcpy: %s is NULL with %zu bytes",
                            dst == NULL ? "dst" : "src", bytes);
    return tc_kern_cuda_dev_memcpy(dst, src, bytes);
}
