/* The float32 sum, the hottest loop: portable and AVX2 variants, and the choice. */
#include <stdatomic.h>

#include "binop.h"
#include "kern_internal.h"
#include "tcomms/kernels/reduce.h"

#define TC_KERN_ADD(x, y) ((x) + (y))

TC_KERN_BINOP(, tc_kern_sum_f32_base, float, TC_KERN_ADD)

#if defined(__x86_64__) || defined(__i386__)
#define TC_KERN_HAVE_AVX2_CODE 1
TC_KERN_BINOP(__attribute__((target("avx2"))), tc_kern_sum_f32_avx2, float, TC_KERN_ADD)
#endif

/* -1: not detected yet. A race between first callers stores the same value. */
static atomic_int tc_kern_simd_cpu = -1;
static atomic_int tc_kern_simd_max = TC_KERN_SIMD_AVX2;

static int tc_kern_simd_detect(void)
{
    int cpu = atomic_load_explicit(&tc_kern_simd_cpu, memory_order_relaxed);

    if (cpu < 0) {
        cpu = TC_KERN_SIMD_NONE;
#ifdef TC_KERN_HAVE_AVX2_CODE
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx2")) {
            cpu = TC_KERN_SIMD_AVX2;
        }
#endif
        atomic_store_explicit(&tc_kern_simd_cpu, cpu, memory_order_relaxed);
    }
    return cpu;
}

tc_kern_simd_t tc_kern_simd(void)
{
    int cpu = tc_kern_simd_detect();
    int max = atomic_load_explicit(&tc_kern_simd_max, memory_order_relaxed);

    return (tc_kern_simd_t)(cpu < max ? cpu : max);
}

tc_kern_simd_t tc_kern_simd_limit(tc_kern_simd_t max)
{
    atomic_store_explicit(&tc_kern_simd_max, (int)max, memory_order_relaxed);
    return tc_kern_simd();
}

void tc_kern_sum_f32(void *d, const void *a, const void *b, size_t n)
{
#ifdef TC_KERN_HAVE_AVX2_CODE
    if (tc_kern_simd() == TC_KERN_SIMD_AVX2) {
        tc_kern_sum_f32_avx2(d, a, b, n);
        return;
    }
#endif
    tc_kern_sum_f32_base(d, a, b, n);
}
