/*
 * Element-wise binary loops the compiler vectorises.
 *
 * restrict lets the compiler vectorise without run-time alias checks, but
 * the API allows dst == a and dst == b: so each operation gets one loop per
 * aliasing case, each taking only distinct restrict-qualified pointers. The
 * inner loop has a fixed trip count (a block of 128 bytes: two AVX-512 or four
 * AVX2 vectors, whatever the element size), which GCC's -O2 "very cheap"
 * vectoriser accepts; the tail runs scalar.
 */
#ifndef TCOMMS_KERNELS_SRC_BINOP_H
#define TCOMMS_KERNELS_SRC_BINOP_H

#include <stddef.h>

#define TC_KERN_BLOCK_BYTES 128

/* d[k] = OP(x[k], y[k]) for k < n. */
#define TC_KERN_LOOP(n, d, x, y, OP)                                                               \
    do {                                                                                           \
        enum { blk_ = TC_KERN_BLOCK_BYTES / sizeof(*(d)) };                                        \
        size_t i_ = 0, j_;                                                                         \
        for (; i_ + blk_ <= (n); i_ += blk_) {                                                     \
            for (j_ = i_; j_ < i_ + blk_; j_++) {                                                  \
                (d)[j_] = OP((x)[j_], (y)[j_]);                                                    \
            }                                                                                      \
        }                                                                                          \
        for (; i_ < (n); i_++) {                                                                   \
            (d)[i_] = OP((x)[i_], (y)[i_]);                                                        \
        }                                                                                          \
    } while (0)

/* Defines `ATTR static void NAME(void *d, const void *a, const void *b, size_t n)`
 * computing d[i] = OP(a[i], b[i]) for elements of type T; d may equal a or b.
 * NOLINTBEGIN(bugprone-macro-parentheses): T is a type and ATTR an attribute,
 * neither can be parenthesized */
#define TC_KERN_BINOP(ATTR, NAME, T, OP)                                                           \
    ATTR static void NAME##_abc(T *restrict d, const T *restrict a, const T *restrict b, size_t n) \
    {                                                                                              \
        TC_KERN_LOOP(n, d, a, b, OP);                                                              \
    }                                                                                              \
    ATTR static void NAME##_ab(T *restrict d, const T *restrict b, size_t n)                       \
    {                                                                                              \
        TC_KERN_LOOP(n, d, d, b, OP);                                                              \
    }                                                                                              \
    ATTR static void NAME##_ba(T *restrict d, const T *restrict a, size_t n)                       \
    {                                                                                              \
        TC_KERN_LOOP(n, d, a, d, OP);                                                              \
    }                                                                                              \
    ATTR static void NAME##_aa(T *restrict d, size_t n)                                            \
    {                                                                                              \
        TC_KERN_LOOP(n, d, d, d, OP);                                                              \
    }                                                                                              \
    ATTR static void NAME(void *d, const void *a, const void *b, size_t n)                         \
    {                                                                                              \
        if (d == a) {                                                                              \
            if (d == b) {                                                                          \
                NAME##_aa((T *)d, n);                                                              \
            } else {                                                                               \
                NAME##_ab((T *)d, (const T *)b, n);                                                \
            }                                                                                      \
        } else if (d == b) {                                                                       \
            NAME##_ba((T *)d, (const T *)a, n);                                                    \
        } else {                                                                                   \
            NAME##_abc((T *)d, (const T *)a, (const T *)b, n);                                     \
        }                                                                                          \
    }
/* NOLINTEND(bugprone-macro-parentheses) */

#endif /* TCOMMS_KERNELS_SRC_BINOP_H */
