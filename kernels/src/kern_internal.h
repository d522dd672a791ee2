/* Shared between the files of the CPU kernels (not public). */
#ifndef TCOMMS_KERNELS_SRC_KERN_INTERNAL_H
#define TCOMMS_KERNELS_SRC_KERN_INTERNAL_H

#include <stddef.h>

#include "tcomms/base/dtype.h"

/* d[i] = a[i] op b[i]; d may equal a or b (never partially overlap them). */
typedef void (*tc_kern_binop_fn)(void *d, const void *a, const void *b, size_t n);

/* The loops of one instruction set by (type, op); NULL where the op does not apply. */
typedef struct tc_kern_table {
    tc_kern_binop_fn fn[TC_DTYPE_COUNT][TC_REDOP_COUNT];
} tc_kern_table_t;

/* Portable C (reduce_base.c), AVX2 + F16C (reduce_avx2.c), AVX-512 F/BW (reduce_avx512.c). */
extern const tc_kern_table_t tc_kern_table_base;
#if defined(__x86_64__)
#define TC_KERN_HAVE_X86 1
extern const tc_kern_table_t tc_kern_table_avx2;
extern const tc_kern_table_t tc_kern_table_avx512;
#endif

/* The table in use: detected on first use (dispatch.c), then one atomic load. */
const tc_kern_table_t *tc_kern_table(void);

#endif /* TCOMMS_KERNELS_SRC_KERN_INTERNAL_H */
