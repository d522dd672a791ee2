/* tc_kern_reduce: argument checks, then the loop of the (type, op) from the table in use. */
#include <stdint.h>

#include "kern_internal.h"
#include "tcomms/kernels/reduce.h"

/* Whether [p, p+bytes) and [q, q+bytes) overlap without being the same range. */
static int tc_kern_partial_overlap(const void *p, const void *q, size_t bytes)
{
    uintptr_t x = (uintptr_t)p, y = (uintptr_t)q;

    return x != y && x < y + bytes && y < x + bytes;
}

tc_status_t tc_kern_reduce(tc_dtype_t dtype, tc_redop_t op, void *dst, const void *a, const void *b,
                           size_t n)
{
    tc_kern_binop_fn fn;
    size_t bytes;

    if ((int)dtype < 0 || dtype >= TC_DTYPE_COUNT) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_kern_reduce: unknown dtype %d", (int)dtype);
    }
    if ((int)op < 0 || op >= TC_REDOP_COUNT) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_kern_reduce: unknown op %d", (int)op);
    }
    fn = tc_kern_table()->fn[dtype][op];
    if (fn == NULL) {
        return tc_error_set(TC_ERR_UNSUPPORTED,
                            "tc_kern_reduce: op %s does not apply to %s (bitwise ops take "
                            "integer types only)",
                            tc_redop_name(op), tc_dtype_name(dtype));
    }
    if (n == 0) {
        return TC_OK;
    }
    if (dst == NULL || a == NULL || b == NULL) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_kern_reduce: %s is NULL with n = %zu",
                            dst == NULL ? "dst"
                            : a == NULL ? "a"
                                        : "b",
                            n);
    }
    bytes = tc_dtype_size(dtype);
    if (n > SIZE_MAX / bytes) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_kern_reduce: %zu elements of %s overflow", n,
                            tc_dtype_name(dtype));
    }
    bytes *= n;
    if (tc_kern_partial_overlap(dst, a, bytes) || tc_kern_partial_overlap(dst, b, bytes)) {
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "tc_kern_reduce: dst %p overlaps %s %p without being equal to it "
                            "(%zu bytes)",
                            dst, tc_kern_partial_overlap(dst, a, bytes) ? "a" : "b",
                            tc_kern_partial_overlap(dst, a, bytes) ? a : b, bytes);
    }
    fn(dst, a, b, n);
    return TC_OK;
}
