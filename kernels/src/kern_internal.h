/* Shared between the files of the CPU kernels (not public). */
#ifndef TCOMMS_KERNELS_SRC_KERN_INTERNAL_H
#define TCOMMS_KERNELS_SRC_KERN_INTERNAL_H

#include <stddef.h>

/* d[i] = a[i] op b[i]; d may equal a or b. */
typedef void (*tc_kern_binop_fn)(void *d, const void *a, const void *b, size_t n);

/* float32 sum on the best instruction set allowed (reduce_f32.c). */
void tc_kern_sum_f32(void *d, const void *a, const void *b, size_t n);

#endif /* TCOMMS_KERNELS_SRC_KERN_INTERNAL_H */
