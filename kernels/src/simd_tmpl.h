/*
 * The float and half loops written with vector intrinsics, for one
 * instruction set. The including file defines, for its set:
 *   TC_T_ATTR                      the target attribute
 *   TC_T_VF, TC_T_NF               float vector type and its lanes
 *   TC_T_VD, TC_T_ND               double vector type and its lanes
 *   TC_T_LDF/STF/NTF, ..D          unaligned load, unaligned store and aligned
 *                                  non-temporal store of floats, doubles
 *   TC_T_LD_F16/ST_F16/NT_F16      TC_T_NF float16 <-> a float vector (F16C,
 *                                  rounding to nearest even)
 *   TC_T_VI                        an integer vector of 2 * TC_T_NF bfloat16
 *   TC_T_LDI/STI/NTI               its load / store / non-temporal store
 *   TC_T_BF16_EVEN/ODD(vi)         the even / odd bfloat16 of vi as floats
 *   TC_T_BF16_PACK(even, odd)      both rounded back into one integer vector
 *   TC_T_BF16_PACK_ARITH(e, o)     the same for results of sum and prod, whose
 *                                  NaNs need no care (may be TC_T_BF16_PACK)
 *   TC_T_SFENCE()                  orders the non-temporal stores
 *   TC_T_{SUM,PROD,MIN,MAX}F, ..D  the operations (MIN/MAX: IEEE 754-2019, as ops.h)
 * and expands TC_T_GEN_ALL(SFX), which defines tc_kern_<op>_<type>_<SFX> for
 * f16, bf16, f32 and f64.
 *
 * bfloat16 is the top half of a float32, so a vector of 2k bfloat16 gives k
 * floats by shifting the even elements up and masking the odd ones in place:
 * no shuffle, and the results are blended back the same way.
 *
 * Each vector is loaded before it is stored and the index only grows, so dst
 * may equal a or b. The tail runs the scalar operation of ops.h, which rounds
 * the same way, and so do the few elements before an aligned dst.
 */
#ifndef TCOMMS_KERNELS_SRC_SIMD_TMPL_H
#define TCOMMS_KERNELS_SRC_SIMD_TMPL_H

#include <stddef.h>
#include <stdint.h>

#include "ops.h"

/*
 * From this many bytes of dst, stores bypass the cache (non-temporal): the
 * three arrays (3 x 8 MiB) no longer fit in a share of a last-level cache, and
 * a plain store would first read each line of dst from memory. Smaller
 * results stay in the cache for whatever uses them next.
 */
#define TC_KERN_NT_MIN_BYTES ((size_t)8 << 20)
/*
 * How far ahead the non-temporal loop prefetches its inputs. The hardware
 * prefetcher alone leaves the half-precision loops (many instructions per
 * cache line) short of memory speed: measured here at 64 MiB, bfloat16 sum
 * went from 0.57-0.78 to 0.81-0.93 of the streaming bound with 512 bytes.
 * A prefetch never faults, so reading past the end is harmless.
 */
#define TC_KERN_PF_BYTES 512

/* Elements i .. i + 2 * NL - 1, two vectors of NL, stored with ST. */
#define TC_T_STEP(V, NL, LD, ST, VOP)                                                              \
    do {                                                                                           \
        V x0_ = LD(a + i), y0_ = LD(b + i), x1_ = LD(a + i + (NL)), y1_ = LD(b + i + (NL));        \
        ST(d + i, VOP(x0_, y0_));                                                                  \
        ST(d + i + (NL), VOP(x1_, y1_));                                                           \
    } while (0)

/* NAME(d, a, b, n) over elements of type T, NL per vector of type V. Big
 * arrays use non-temporal stores NT once dst is 64-byte aligned.
 * NOLINTBEGIN(bugprone-macro-parentheses): T is a type, it cannot be parenthesized */
#define TC_T_LOOP(NAME, T, V, NL, LD, ST, NT, VOP, SOP)                                            \
    TC_T_ATTR static void NAME(void *d_, const void *a_, const void *b_, size_t n)                 \
    {                                                                                              \
        T *d = (T *)d_;                                                                            \
        const T *a = (const T *)a_, *b = (const T *)b_;                                            \
        size_t i = 0;                                                                              \
        if (n * sizeof(T) >= TC_KERN_NT_MIN_BYTES && (uintptr_t)d % sizeof(T) == 0) {              \
            for (; (uintptr_t)(d + i) % 64 != 0; i++) {                                            \
                d[i] = SOP(a[i], b[i]);                                                            \
            }                                                                                      \
            for (; i + 2 * (size_t)(NL) <= n; i += 2 * (size_t)(NL)) {                             \
                __builtin_prefetch((const char *)(a + i) + TC_KERN_PF_BYTES);                      \
                __builtin_prefetch((const char *)(b + i) + TC_KERN_PF_BYTES);                      \
                TC_T_STEP(V, NL, LD, NT, VOP);                                                     \
            }                                                                                      \
            TC_T_SFENCE();                                                                         \
        }                                                                                          \
        for (; i + 2 * (size_t)(NL) <= n; i += 2 * (size_t)(NL)) {                                 \
            TC_T_STEP(V, NL, LD, ST, VOP);                                                         \
        }                                                                                          \
        for (; i < n; i++) {                                                                       \
            d[i] = SOP(a[i], b[i]);                                                                \
        }                                                                                          \
    }
/* NOLINTEND(bugprone-macro-parentheses) */

/* bfloat16: an integer vector of 2 * TC_T_NF elements, as even and odd floats. */
#define TC_T_BF16_OP(x, y, VOP, PACK)                                                              \
    PACK(VOP(TC_T_BF16_EVEN(x), TC_T_BF16_EVEN(y)), VOP(TC_T_BF16_ODD(x), TC_T_BF16_ODD(y)))
#define TC_T_BF16_SUM(x, y) TC_T_BF16_OP(x, y, TC_T_SUMF, TC_T_BF16_PACK_ARITH)
#define TC_T_BF16_PROD(x, y) TC_T_BF16_OP(x, y, TC_T_PRODF, TC_T_BF16_PACK_ARITH)
#define TC_T_BF16_MIN(x, y) TC_T_BF16_OP(x, y, TC_T_MINF, TC_T_BF16_PACK)
#define TC_T_BF16_MAX(x, y) TC_T_BF16_OP(x, y, TC_T_MAXF, TC_T_BF16_PACK)

#define TC_T_GEN_OP(SFX, OP, OPU)                                                                  \
    TC_T_LOOP(tc_kern_##OP##_f32_##SFX, float, TC_T_VF, TC_T_NF, TC_T_LDF, TC_T_STF, TC_T_NTF,     \
              TC_T_##OPU##F, tc_kern_##OP##_f32_op)                                                \
    TC_T_LOOP(tc_kern_##OP##_f64_##SFX, double, TC_T_VD, TC_T_ND, TC_T_LDD, TC_T_STD, TC_T_NTD,    \
              TC_T_##OPU##D, tc_kern_##OP##_f64_op)                                                \
    TC_T_LOOP(tc_kern_##OP##_f16_##SFX, uint16_t, TC_T_VF, TC_T_NF, TC_T_LD_F16, TC_T_ST_F16,      \
              TC_T_NT_F16, TC_T_##OPU##F, tc_kern_##OP##_f16_op)                                   \
    TC_T_LOOP(tc_kern_##OP##_bf16_##SFX, uint16_t, TC_T_VI, (size_t)2 * TC_T_NF, TC_T_LDI,        \
              TC_T_STI,                                                                            \
              TC_T_NTI, TC_T_BF16_##OPU, tc_kern_##OP##_bf16_op)

#define TC_T_GEN_ALL(SFX)                                                                          \
    TC_T_GEN_OP(SFX, sum, SUM)                                                                     \
    TC_T_GEN_OP(SFX, prod, PROD)                                                                   \
    TC_T_GEN_OP(SFX, min, MIN)                                                                     \
    TC_T_GEN_OP(SFX, max, MAX)

#endif /* TCOMMS_KERNELS_SRC_SIMD_TMPL_H */
