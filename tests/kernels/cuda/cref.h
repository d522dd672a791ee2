/*
 * The independent reference of the CUDA kernel tests, written without the
 * kernels' code: integers in 128-bit arithmetic truncated to their width,
 * float32 through double (correctly rounded: 53 >= 2 * 24 + 2), float64 on
 * the host's FPU, float16/bfloat16 decoded and re-rounded by hand with
 * ldexp/frexp on doubles, IEEE minimum/maximum through a total-order key.
 */
#ifndef TCOMMS_TESTS_KERNELS_CUDA_CREF_H
#define TCOMMS_TESTS_KERNELS_CUDA_CREF_H

#include <stddef.h>
#include <stdint.h>

#include "tcomms/kernels/cuda_reduce.h" /* tc_dtype_t, tc_redop_t (and base's status) */

/* Bytes per element (own table). */
size_t cref_size(tc_dtype_t t);

/* Whether op applies to t (bitwise ops on integers only). */
int cref_applies(tc_redop_t op, tc_dtype_t t);

/* n random elements of t mixed with the type's special values (NaN with
 * payloads, infinities, signed zeros, subnormals, extremes), from *seed. */
void cref_fill(tc_dtype_t t, void *buf, size_t n, uint64_t *seed);

/* Make some b[i] equal to a[i] or to a[i] with the sign bit flipped (zero sums, -0 vs +0). */
void cref_pair_up(tc_dtype_t t, const void *a, void *b, size_t n, uint64_t *seed);

/* out[i] = a[i] op b[i]; then, for TC_AVG, out[i] /= divisor. */
void cref_reduce(tc_dtype_t t, tc_redop_t op, void *out, const void *a, const void *b, size_t n,
                 int divisor);

/* buf[i] /= divisor. */
void cref_scale(tc_dtype_t t, void *buf, size_t n, int divisor);

/* Whether element i of got matches want: exact bits, except that a NaN of
 * SUM/PROD/AVG only has to be a NaN (its payload is the hardware's). */
int cref_same(tc_dtype_t t, tc_redop_t op, const void *got, const void *want, size_t i);

/* The bits of element i as an unsigned number (for messages). */
uint64_t cref_bits(tc_dtype_t t, const void *buf, size_t i);

/* Small deterministic generator (splitmix64). */
uint64_t cref_rand(uint64_t *seed);

#endif /* TCOMMS_TESTS_KERNELS_CUDA_CREF_H */
