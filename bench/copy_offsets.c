/* Copy speed by the destination's distance ahead of the source modulo 4 KiB: the C library's
 * memcpy against tc_copy (base/copy.h), which takes its own loop where the C library is slow.
 *
 *   bazel run -c opt //bench:copy_offsets -- [BYTES]     (default 16384)
 *
 * For each distance d from 0 to 4095 bytes, BYTES are copied from a page-aligned buffer plus 64
 * to another plus 64 + d, 2000 times; prints the GB/s of both for the distances where memcpy
 * is under half its median, then the medians. The tc_copy column follows TC_COPY. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/base/copy.h"
#include "tcomms/base/time.h"

#define DISTANCES 4096

static double rate(int lib, unsigned char *dst, const unsigned char *src, size_t n)
{
    const int iters = 2000;
    double t0 = tc_time_s();
    for (int i = 0; i < iters; i++) {
        if (lib)
            memcpy(dst, src, n);
        else
            tc_copy(dst, src, n);
        __asm__ volatile("" : : "r"(dst) : "memory");
    }
    return (double)n * iters / (tc_time_s() - t0) / 1e9;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 0) : 16384;
    size_t area = (n + 8192 + 4095) / 4096 * 4096; /* aligned_alloc wants a multiple */
    unsigned char *src = aligned_alloc(4096, area), *dst = aligned_alloc(4096, area);
    static double lib[DISTANCES], own[DISTANCES], sorted[DISTANCES];
    if (!src || !dst || n == 0) {
        fprintf(stderr, "copy_offsets: bad size or no memory\n");
        return 1;
    }
    memset(src, 1, area);
    memset(dst, 2, area);
    for (int d = 0; d < DISTANCES; d++) {
        lib[d] = rate(1, dst + 64 + d, src + 64, n);
        own[d] = rate(0, dst + 64 + d, src + 64, n);
    }
    memcpy(sorted, lib, sizeof(sorted));
    qsort(sorted, DISTANCES, sizeof(double), by_value);
    double lib_med = sorted[DISTANCES / 2];
    memcpy(sorted, own, sizeof(sorted));
    qsort(sorted, DISTANCES, sizeof(double), by_value);
    double own_med = sorted[DISTANCES / 2];
    printf("# %zu bytes; tc_copy's loop %s (TC_COPY); distances where memcpy is under half its "
           "median:\n# distance  memcpy GB/s  tc_copy GB/s\n",
           n, tc_copy_loop_on() ? "on" : "off");
    for (int d = 0; d < DISTANCES; d++)
        if (lib[d] < lib_med / 2)
            printf("%10d %12.1f %13.1f\n", d, lib[d], own[d]);
    printf("# medians over all distances: memcpy %.1f GB/s, tc_copy %.1f GB/s\n", lib_med, own_med);
    free(src);
    free(dst);
    return 0;
}
