/*
 * Which instruction set the kernels use: detected once, on first use
 * (pthread_once, no constructor), then a single atomic load per call.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "kern_internal.h"
#ifdef TC_KERN_HAVE_X86
#include <cpuid.h>
#endif
#include "tcomms/kernels/reduce.h"

static pthread_once_t tc_kern_detect_once = PTHREAD_ONCE_INIT;
static int tc_kern_cpu_level;                           /* set once by tc_kern_detect() */
static atomic_int tc_kern_level;                        /* min(cpu, limit) */
static _Atomic(const tc_kern_table_t *) tc_kern_active; /* NULL until detected */

static const tc_kern_table_t *tc_kern_table_for(int level)
{
#ifdef TC_KERN_HAVE_X86
    if (level >= TC_KERN_SIMD_AVX512) {
        return &tc_kern_table_avx512;
    }
    if (level >= TC_KERN_SIMD_AVX2) {
        return &tc_kern_table_avx2;
    }
#endif
    (void)level;
    return &tc_kern_table_base;
}

static void tc_kern_detect(void)
{
    int cpu = TC_KERN_SIMD_NONE;

#ifdef TC_KERN_HAVE_X86
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;

    /* __builtin_cpu_supports also checks that the OS saves the vector registers;
     * F16C from CPUID directly (not every compiler knows its name there). */
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) &&
        (ecx & bit_F16C) != 0) {
        cpu = TC_KERN_SIMD_AVX2;
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) {
            cpu = TC_KERN_SIMD_AVX512;
        }
    }
#endif
    tc_kern_cpu_level = cpu;
    atomic_store_explicit(&tc_kern_level, cpu, memory_order_relaxed);
    atomic_store_explicit(&tc_kern_active, tc_kern_table_for(cpu), memory_order_release);
}

const tc_kern_table_t *tc_kern_table(void)
{
    const tc_kern_table_t *t = atomic_load_explicit(&tc_kern_active, memory_order_acquire);

    if (t == NULL) {
        pthread_once(&tc_kern_detect_once, tc_kern_detect);
        t = atomic_load_explicit(&tc_kern_active, memory_order_acquire);
    }
    return t;
}

tc_kern_simd_t tc_kern_simd(void)
{
    pthread_once(&tc_kern_detect_once, tc_kern_detect);
    return (tc_kern_simd_t)atomic_load_explicit(&tc_kern_level, memory_order_relaxed);
}

tc_kern_simd_t tc_kern_simd_limit(tc_kern_simd_t max)
{
    int level;

    pthread_once(&tc_kern_detect_once, tc_kern_detect);
    level = (int)max < tc_kern_cpu_level ? (int)max : tc_kern_cpu_level;
    if (level < TC_KERN_SIMD_NONE) {
        level = TC_KERN_SIMD_NONE;
    }
    atomic_store_explicit(&tc_kern_level, level, memory_order_relaxed);
    atomic_store_explicit(&tc_kern_active, tc_kern_table_for(level), memory_order_release);
    return (tc_kern_simd_t)level;
}
