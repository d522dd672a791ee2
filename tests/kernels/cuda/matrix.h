/*
 * The case matrix shared by the emulation test and the GPU test: every
 * (type, op) pair x lengths 0..70 and 1<<20 + 3 x pointer offsets (same and
 * different misalignment) x in-place use, checked element by element
 * against cref, with the bytes around the destination checked untouched.
 */
#ifndef TCOMMS_TESTS_KERNELS_CUDA_MATRIX_H
#define TCOMMS_TESTS_KERNELS_CUDA_MATRIX_H

#include <stddef.h>

#include "tcomms/kernels/cuda_reduce.h" /* tc_dtype_t, tc_status_t */

/* Where the kernels run: memory there, copies to and from it, the calls. */
typedef struct mx_target {
    const char *name;
    void *(*alloc)(size_t bytes);
    void (*release)(void *p);
    void (*put)(void *there, const void *here, size_t bytes);
    void (*get)(void *here, const void *there, size_t bytes);
    tc_status_t (*reduce)(tc_dtype_t t, tc_redop_t op, void *d, const void *a, const void *b,
                          size_t n);
    tc_status_t (*scale)(tc_dtype_t t, void *d, size_t n, int divisor);
    void (*sync)(void); /* wait for the calls, fail the test on an error */
} mx_target_t;

/* Every pair at lengths 0..70, under every offset and aliasing layout. */
void mx_run_small(const mx_target_t *tg);

/* Every pair at `n` elements, each under one of a few layouts (in turn). */
void mx_run_large(const mx_target_t *tg, size_t n);

/* One pair at `n` elements, plain layout (for the grid-stride loops of huge arrays). */
void mx_run_one(const mx_target_t *tg, tc_dtype_t t, tc_redop_t op, size_t n);

/* scale_div alone: every type x lengths 0..70 x divisors 1, 2, 3, 7, 64 x offsets 0, 1, 3,
 * and n_large elements by 3 at offsets 0 and 1. */
void mx_run_scale(const mx_target_t *tg, size_t n_large);

#endif /* TCOMMS_TESTS_KERNELS_CUDA_MATRIX_H */
