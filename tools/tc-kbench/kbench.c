/*
 * tc-kbench: throughput of tc_kern_reduce per type and op, from 4 KiB to
 * 256 MiB per array, beside memcpy and the "streaming bound" of the same
 * machine, measured in the same run (see docs/kernels.md).
 *
 * Bytes counted: dst = a op b reads two arrays and writes one, 3 * size;
 * memcpy reads one and writes one, 2 * size. Each figure is the median of
 * -r repetitions of -n calls each.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tcomms/base/config.h"
#include "tcomms/base/dtype.h"
#include "tcomms/base/status.h"
#include "tcomms/kernels/reduce.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define KB_X86 1
#endif

#define KB_MAX_TYPES TC_DTYPE_COUNT
#define KB_MAX_OPS TC_REDOP_COUNT
#define KB_MAX_REPS 101
#define KB_MIN_FACTOR 2
#define KB_MAX_FACTOR 1024
#define KB_MAX_ITERS 1000000000

typedef struct kb_opts {
    tc_dtype_t types[KB_MAX_TYPES];
    int ntypes;
    tc_redop_t ops[KB_MAX_OPS];
    int nops;
    size_t begin, end, factor;
    long iters; /* 0: automatic */
    int reps;
    int simd; /* -1: the best the CPU has */
} kb_opts_t;

static double kb_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int kb_cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* ---- what is measured ---------------------------------------------------- */

typedef enum { KB_KERNEL, KB_MEMCPY, KB_BOUND_PLAIN, KB_BOUND_NT } kb_what_t;

typedef struct kb_job {
    kb_what_t what;
    tc_dtype_t dtype;
    tc_redop_t op;
    void *d;
    const void *a, *b;
    size_t bytes;
} kb_job_t;

/* The streaming bound: 64-bit integer adds, dst = a + b, over aligned arrays
 * (the simplest loop that reads two arrays and writes one); plain stores, or
 * non-temporal stores that skip reading dst into the cache. */
#ifdef KB_X86
__attribute__((target("avx2"))) static void kb_stream_plain(void *d, const void *a, const void *b,
                                                            size_t bytes)
{
    __m256i *pd = d;
    const __m256i *pa = a, *pb = b;
    size_t i, n = bytes / 32;

    for (i = 0; i < n; i++) {
        _mm256_store_si256(pd + i,
                           _mm256_add_epi64(_mm256_load_si256(pa + i), _mm256_load_si256(pb + i)));
    }
}

__attribute__((target("avx2"))) static void kb_stream_nt(void *d, const void *a, const void *b,
                                                         size_t bytes)
{
    __m256i *pd = d;
    const __m256i *pa = a, *pb = b;
    size_t i, n = bytes / 32;

    for (i = 0; i < n; i++) {
        _mm256_stream_si256(pd + i,
                            _mm256_add_epi64(_mm256_load_si256(pa + i), _mm256_load_si256(pb + i)));
    }
    _mm_sfence();
}
#else
static void kb_stream_plain(void *d, const void *a, const void *b, size_t bytes)
{
    uint64_t *restrict pd = d;
    const uint64_t *restrict pa = a, *restrict pb = b;
    size_t i, n = bytes / 8;

    for (i = 0; i < n; i++) {
        pd[i] = pa[i] + pb[i];
    }
}
#define kb_stream_nt kb_stream_plain
#endif

static int kb_run_once(const kb_job_t *j)
{
    tc_status_t st;

    switch (j->what) {
    case KB_KERNEL:
        st = tc_kern_reduce(j->dtype, j->op, j->d, j->a, j->b, j->bytes / tc_dtype_size(j->dtype));
        if (st != TC_OK) {
            fprintf(stderr, "tc-kbench: tc_kern_reduce %s %s: %s\n", tc_dtype_name(j->dtype),
                    tc_redop_name(j->op), tc_last_error());
            return -1;
        }
        return 0;
    case KB_MEMCPY:
        memcpy(j->d, j->a, j->bytes);
        return 0;
    case KB_BOUND_PLAIN:
        kb_stream_plain(j->d, j->a, j->b, j->bytes);
        return 0;
    default:
        kb_stream_nt(j->d, j->a, j->b, j->bytes);
        return 0;
    }
}

/* One repetition: iters calls, in GB/s (1e9 bytes/s) of bytes moved. */
static double kb_rep(const kb_job_t *j, long iters)
{
    double moved = (double)j->bytes * (j->what == KB_MEMCPY ? 2.0 : 3.0), t0 = kb_now(), dt;
    long k;

    for (k = 0; k < iters; k++) {
        kb_run_once(j);
    }
    dt = kb_now() - t0;
    return moved * (double)iters / (dt > 0 ? dt : 1e-9) / 1e9;
}

static double kb_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(v[0]), kb_cmp_double);
    return v[n / 2];
}

typedef struct kb_result {
    double kernel, plain, nt, bound, ratio; /* medians over the repetitions */
} kb_result_t;

/*
 * Repetitions interleave the kernel with both streaming loops, so that the
 * ratio of each repetition compares runs a few milliseconds apart (the
 * machine may be shared); the ratio reported is the median of those ratios.
 */
static int kb_measure(const kb_job_t *kernel, long iters, int reps, kb_result_t *res)
{
    double k[KB_MAX_REPS], p[KB_MAX_REPS], t[KB_MAX_REPS], bd[KB_MAX_REPS], ra[KB_MAX_REPS];
    kb_job_t plain = *kernel, nt = *kernel;
    int r;

    plain.what = KB_BOUND_PLAIN;
    nt.what = KB_BOUND_NT;
    /* warm-up: page faults, caches, branch predictors */
    if (kb_run_once(kernel) != 0 || kb_run_once(&plain) != 0 || kb_run_once(&nt) != 0) {
        return -1;
    }
    for (r = 0; r < reps; r++) {
        k[r] = kb_rep(kernel, iters);
        p[r] = kb_rep(&plain, iters);
        t[r] = kb_rep(&nt, iters);
        bd[r] = p[r] > t[r] ? p[r] : t[r];
        ra[r] = k[r] / bd[r];
    }
    res->kernel = kb_median(k, reps);
    res->plain = kb_median(p, reps);
    res->nt = kb_median(t, reps);
    res->bound = kb_median(bd, reps);
    res->ratio = kb_median(ra, reps);
    return 0;
}

/* ---- options -------------------------------------------------------------- */

static void kb_usage(FILE *f)
{
    fprintf(f,
            "usage: tc-kbench [-t types] [-o ops] [-b bytes] [-e bytes] [-f factor] [-n iters]\n"
            "                 [-r reps] [-s portable|avx2|avx512]\n"
            "  -t  comma-separated types (default float32,bfloat16,float16,float64,int32)\n"
            "  -o  comma-separated ops (default sum)\n"
            "  -b  smallest array, bytes, K/M/G suffixes (default 4K, at least 1)\n"
            "  -e  largest array, at least -b (default 256M)\n"
            "  -f  size factor between rows, %d to %d (default 4)\n"
            "  -n  calls per repetition, 1 to %d (default: about 256 MiB of arrays per\n"
            "      repetition)\n"
            "  -r  repetitions, the median is reported, 1 to %d (default 7)\n"
            "  -s  highest instruction set the kernels may use (default: the best)\n"
            "  every type must fit a whole number of times in at least one size\n",
            KB_MIN_FACTOR, KB_MAX_FACTOR, KB_MAX_ITERS, KB_MAX_REPS);
}

static int kb_parse_list(char *text, int is_type, kb_opts_t *o)
{
    char *save = NULL, *tok;

    if (is_type) {
        o->ntypes = 0;
    } else {
        o->nops = 0;
    }
    for (tok = strtok_r(text, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        if (is_type) {
            if (o->ntypes == KB_MAX_TYPES || tc_dtype_parse(tok, &o->types[o->ntypes]) != TC_OK) {
                fprintf(stderr, "tc-kbench: -t %s: %s\n", tok, tc_last_error());
                return -1;
            }
            o->ntypes++;
        } else {
            if (o->nops == KB_MAX_OPS || tc_redop_parse(tok, &o->ops[o->nops]) != TC_OK) {
                fprintf(stderr, "tc-kbench: -o %s: %s\n", tok, tc_last_error());
                return -1;
            }
            o->nops++;
        }
    }
    if ((is_type ? o->ntypes : o->nops) == 0) {
        fprintf(stderr, "tc-kbench: -%c '%s': no %s given\n", is_type ? 't' : 'o', text,
                is_type ? "type" : "op");
        return -1;
    }
    return 0;
}

/* -b, -e (sizes of at least 1 byte), -f, -n, -r (integers in their ranges). */
static int kb_parse_number(int c, const char *text, kb_opts_t *o)
{
    const char what[3] = {'-', (char)c, '\0'};
    uint64_t size;
    int64_t v = 0;
    tc_status_t st;

    if (c == 'b' || c == 'e') {
        st = tc_parse_size(what, text, &size);
        if (st == TC_OK && size == 0) {
            fprintf(stderr, "tc-kbench: %s 0: an array must be at least 1 byte\n", what);
            return -1;
        }
    } else {
        st = tc_parse_int(what, text, c == 'f' ? KB_MIN_FACTOR : 1,
                          c == 'f'   ? KB_MAX_FACTOR
                          : c == 'n' ? KB_MAX_ITERS
                                     : KB_MAX_REPS,
                          &v);
    }
    if (st != TC_OK) {
        fprintf(stderr, "tc-kbench: %s\n", tc_last_error());
        return -1;
    }
    if (c == 'b') {
        o->begin = (size_t)size;
    } else if (c == 'e') {
        o->end = (size_t)size;
    } else if (c == 'f') {
        o->factor = (size_t)v;
    } else if (c == 'n') {
        o->iters = (long)v;
    } else {
        o->reps = (int)v;
    }
    return 0;
}

/* The rows, -b to -e by -f (as main runs them), must hold whole elements of every type: a type
 * that fits none would print no row. Every op must apply to every type: the kernel refuses a
 * bitwise op on floats, which stopped the table after its header. */
static int kb_check_types(const kb_opts_t *o)
{
    int ti, oi;

    for (ti = 0; ti < o->ntypes; ti++) {
        size_t es = tc_dtype_size(o->types[ti]), bytes;
        int fits = 0;

        for (oi = 0; oi < o->nops; oi++) {
            if (!tc_redop_valid_for(o->ops[oi], o->types[ti])) {
                fprintf(stderr,
                        "tc-kbench: -o %s does not apply to -t %s (bitwise ops: integer types "
                        "only)\n",
                        tc_redop_name(o->ops[oi]), tc_dtype_name(o->types[ti]));
                return -1;
            }
        }

        for (bytes = o->begin; bytes <= o->end && !fits; bytes *= o->factor) {
            fits = bytes % es == 0;
            if (bytes > SIZE_MAX / o->factor) {
                break;
            }
        }
        if (!fits) {
            fprintf(stderr,
                    "tc-kbench: -t %s: no size from -b %zu to -e %zu (factor %zu) holds whole "
                    "%s elements (%zu bytes)\n",
                    tc_dtype_name(o->types[ti]), o->begin, o->end, o->factor,
                    tc_dtype_name(o->types[ti]), es);
            return -1;
        }
    }
    return 0;
}

static int kb_parse(int argc, char **argv, kb_opts_t *o)
{
    static char default_types[] = "float32,bfloat16,float16,float64,int32";
    static char default_ops[] = "sum";
    int c, i;

    memset(o, 0, sizeof(*o));
    o->begin = 4 << 10;
    o->end = (size_t)256 << 20;
    o->factor = 4;
    o->reps = 7;
    o->simd = -1;
    if (kb_parse_list(default_types, 1, o) != 0 || kb_parse_list(default_ops, 0, o) != 0) {
        return -1;
    }
    for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--help") == 0) { /* as tc-sim and tc-info */
            kb_usage(stdout);
            exit(0);
        }
    }
    while ((c = getopt(argc, argv, "t:o:b:e:f:n:r:s:h")) != -1) {
        switch (c) {
        case 't':
        case 'o':
            if (kb_parse_list(optarg, c == 't', o) != 0) {
                return -1;
            }
            break;
        case 'b':
        case 'e':
        case 'f':
        case 'n':
        case 'r':
            if (kb_parse_number(c, optarg, o) != 0) {
                return -1;
            }
            break;
        case 's':
            if (strcmp(optarg, "portable") == 0) {
                o->simd = TC_KERN_SIMD_NONE;
            } else if (strcmp(optarg, "avx2") == 0) {
                o->simd = TC_KERN_SIMD_AVX2;
            } else if (strcmp(optarg, "avx512") == 0) {
                o->simd = TC_KERN_SIMD_AVX512;
            } else {
                fprintf(stderr, "tc-kbench: -s %s: use portable, avx2 or avx512\n", optarg);
                return -1;
            }
            break;
        case 'h':
            kb_usage(stdout);
            exit(0);
        default:
            kb_usage(stderr);
            return -1;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "tc-kbench: an argument that is not an option: %s\n", argv[optind]);
        kb_usage(stderr);
        return -1;
    }
    if (o->begin > o->end) {
        fprintf(stderr, "tc-kbench: -b %zu is larger than -e %zu\n", o->begin, o->end);
        kb_usage(stderr);
        return -1;
    }
    return kb_check_types(o);
}

/* ---- main ------------------------------------------------------------------ */

static const char *kb_simd_name(tc_kern_simd_t s)
{
    return s == TC_KERN_SIMD_AVX512 ? "avx512" : s == TC_KERN_SIMD_AVX2 ? "avx2" : "portable";
}

int main(int argc, char **argv)
{
    kb_opts_t o;
    size_t alloc, bytes;
    unsigned char *a = NULL, *b = NULL, *d = NULL;
    int rc = 1, ti, oi;

    if (kb_parse(argc, argv, &o) != 0) {
        return 2;
    }
#ifdef KB_X86
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2")) {
        fprintf(stderr, "tc-kbench: the streaming bound needs AVX2, which this CPU lacks\n");
        return 1;
    }
#endif
    if (o.simd >= 0) {
        tc_kern_simd_limit((tc_kern_simd_t)o.simd);
    }
    alloc = (o.end + 4095) / 4096 * 4096;
    a = aligned_alloc(4096, alloc);
    b = aligned_alloc(4096, alloc);
    d = aligned_alloc(4096, alloc);
    if (a == NULL || b == NULL || d == NULL) {
        fprintf(stderr, "tc-kbench: cannot allocate 3 x %zu bytes: %s\n", alloc, strerror(errno));
        goto out;
    }
    /* 0x3c in every byte: small normal numbers in every float type (no NaN,
     * no subnormal), so sums stay in the fast path and inputs never change */
    memset(a, 0x3c, alloc);
    memset(b, 0x3c, alloc);
    memset(d, 0, alloc);

    printf("# tc-kbench: CPU kernels %s, median of %d repetitions; GB/s = 1e9 bytes/s\n",
           kb_simd_name(tc_kern_simd()), o.reps);
    printf("# reduce and bound count 3 x bytes (read a, b; write dst), memcpy 2 x bytes\n");
    printf("# bound = max(plain, nt): streaming dst = a + b with plain / non-temporal stores,\n"
           "# interleaved with the kernel; ratio = median over repetitions of kernel / bound\n");
    printf("%10s %-9s %-5s %9s %9s %9s %9s %9s %7s\n", "bytes", "type", "op", "kernel", "memcpy",
           "plain", "nt", "bound", "ratio");
    for (bytes = o.begin; bytes <= o.end; bytes *= o.factor) {
        long iters = o.iters > 0 ? o.iters : (long)(((size_t)256 << 20) / bytes);
        kb_job_t job = {.d = d, .a = a, .b = b, .bytes = bytes};
        double mcp[KB_MAX_REPS];
        int r;

        if (iters < 1) {
            iters = 1;
        }
        job.what = KB_MEMCPY;
        kb_run_once(&job);
        for (r = 0; r < o.reps; r++) {
            mcp[r] = kb_rep(&job, iters);
        }
        for (ti = 0; ti < o.ntypes; ti++) {
            for (oi = 0; oi < o.nops; oi++) {
                kb_result_t res;
                job.what = KB_KERNEL;
                job.dtype = o.types[ti];
                job.op = o.ops[oi];
                if (bytes % tc_dtype_size(job.dtype) != 0) {
                    continue;
                }
                if (kb_measure(&job, iters, o.reps, &res) != 0) {
                    goto out;
                }
                printf("%10zu %-9s %-5s %9.2f %9.2f %9.2f %9.2f %9.2f %7.3f\n", bytes,
                       tc_dtype_name(job.dtype), tc_redop_name(job.op), res.kernel,
                       kb_median(mcp, o.reps), res.plain, res.nt, res.bound, res.ratio);
                fflush(stdout);
            }
        }
        if (bytes > SIZE_MAX / o.factor) {
            break;
        }
    }
    rc = 0;
out:
    free(d);
    free(b);
    free(a);
    return rc;
}
