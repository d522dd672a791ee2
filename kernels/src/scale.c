/* tc_kern_scale_div: the final division of TC_AVG. */
#include <stdint.h>

#include "half.h"
#include "tcomms/kernels/reduce.h"

#define TC_KERN_DIV_LOOP(T, D)                                                                     \
    do {                                                                                           \
        T *p_ = (T *)dst; /* NOLINT(bugprone-macro-parentheses): T is a type */                   \
        for (i = 0; i < n; i++) {                                                                  \
            p_[i] = (T)(p_[i] / (D));                                                              \
        }                                                                                          \
    } while (0)

#define TC_KERN_DIV_HALF(H)                                                                        \
    do {                                                                                           \
        uint16_t *p_ = (uint16_t *)dst;                                                            \
        for (i = 0; i < n; i++) {                                                                  \
            p_[i] = tc_kern_f32_to_##H(tc_kern_##H##_to_f32(p_[i]) / fdiv);                        \
        }                                                                                          \
    } while (0)

tc_status_t tc_kern_scale_div(tc_dtype_t dtype, void *dst, size_t n, int divisor)
{
    const float fdiv = (float)divisor;
    size_t i;

    if ((int)dtype < 0 || dtype >= TC_DTYPE_COUNT) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_kern_scale_div: unknown dtype %d", (int)dtype);
    }
    if (divisor < 1) {
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "tc_kern_scale_div: divisor %d (must be >= 1, the number of ranks)",
                            divisor);
    }
    if (n == 0 || divisor == 1) {
        return TC_OK;
    }
    if (dst == NULL) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_kern_scale_div: dst is NULL with n = %zu", n);
    }
    /* Integer division truncates towards zero; divisor >= 2 cannot overflow. */
    switch (dtype) {
    case TC_INT8:
        TC_KERN_DIV_LOOP(int8_t, divisor);
        break;
    case TC_UINT8:
        TC_KERN_DIV_LOOP(uint8_t, divisor);
        break;
    case TC_INT32:
        TC_KERN_DIV_LOOP(int32_t, divisor);
        break;
    case TC_UINT32:
        TC_KERN_DIV_LOOP(uint32_t, (uint32_t)divisor);
        break;
    case TC_INT64:
        TC_KERN_DIV_LOOP(int64_t, (int64_t)divisor);
        break;
    case TC_UINT64:
        TC_KERN_DIV_LOOP(uint64_t, (uint64_t)divisor);
        break;
    case TC_FLOAT16:
        TC_KERN_DIV_HALF(f16);
        break;
    case TC_BFLOAT16:
        TC_KERN_DIV_HALF(bf16);
        break;
    case TC_FLOAT32:
        TC_KERN_DIV_LOOP(float, fdiv);
        break;
    case TC_FLOAT64:
        TC_KERN_DIV_LOOP(double, (double)divisor);
        break;
    default:
        break;
    }
    return TC_OK;
}
