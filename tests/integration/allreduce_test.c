/* Multi-process all-reduce test on the public API, run under every launcher.
 *
 * Every rank checks every element of its result against a reference computed
 * here from every rank's input (which each rank can regenerate), for every
 * data type and op, counts around the chunk boundaries, both algorithms, in
 * place and out of place; then bad arguments. Prints one summary line per
 * rank; exit status 0 only when everything matched. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/tcomms.h"

static int rank, nranks, failures;

#define FAIL(...)                                                                                 \
    do {                                                                                          \
        fprintf(stderr, "rank %d: FAIL: ", rank);                                                 \
        fprintf(stderr, __VA_ARGS__);                                                             \
        fprintf(stderr, "\n");                                                                    \
        failures++;                                                                               \
    } while (0)

/* Input of rank r at index i: small integers so every op is exact. */
static int64_t input(int r, size_t i, tc_redop_t op)
{
    if (op == TC_PROD)
        return ((i * 3 + (size_t)r) % 7 == 0) ? 2 : ((i + (size_t)r) % 11 == 0 ? -1 : 1);
    if (op >= TC_BAND)
        return (int64_t)(((size_t)r * 29 + i * 13 + 5) % 128);
    return (int64_t)(((size_t)r * 5 + i * 3) % 19) - 9;
}

static double reference(size_t i, tc_redop_t op)
{
    int64_t acc = input(0, i, op);
    for (int r = 1; r < nranks; r++) {
        int64_t v = input(r, i, op);
        switch (op) {
        case TC_SUM: case TC_AVG: acc += v; break;
        case TC_PROD: acc *= v; break;
        case TC_MIN: acc = v < acc ? v : acc; break;
        case TC_MAX: acc = v > acc ? v : acc; break;
        case TC_BAND: acc &= v; break;
        case TC_BOR: acc |= v; break;
        case TC_BXOR: acc ^= v; break;
        default: break;
        }
    }
    if (op == TC_AVG)
        return (double)acc / nranks;
    return (double)acc;
}

/* bfloat16 / float16 of small integers, and back, written for this test. */
static uint16_t bf16_of(double v)
{
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}
static double bf16_val(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint16_t fp16_of(double v)
{
    if (v == 0)
        return 0;
    uint16_t s = v < 0 ? 0x8000 : 0;
    double a = fabs(v);
    int e = 0;
    while (a >= 2.0) { a /= 2; e++; }
    while (a < 1.0) { a *= 2; e--; }
    return (uint16_t)(s | ((e + 15) << 10) | (uint16_t)llround((a - 1.0) * 1024));
}
static double fp16_val(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e ? ldexp(1.0 + m / 1024.0, e - 15) : ldexp(m, -24);
    return (h & 0x8000) ? -v : v;
}

static void put(void *b, size_t i, tc_dtype_t t, int64_t v)
{
    switch (t) {
    case TC_INT8: ((int8_t *)b)[i] = (int8_t)v; break;
    case TC_UINT8: ((uint8_t *)b)[i] = (uint8_t)v; break;
    case TC_INT32: ((int32_t *)b)[i] = (int32_t)v; break;
    case TC_UINT32: ((uint32_t *)b)[i] = (uint32_t)v; break;
    case TC_INT64: ((int64_t *)b)[i] = v; break;
    case TC_UINT64: ((uint64_t *)b)[i] = (uint64_t)v; break;
    case TC_FLOAT16: ((uint16_t *)b)[i] = fp16_of((double)v); break;
    case TC_BFLOAT16: ((uint16_t *)b)[i] = bf16_of((double)v); break;
    case TC_FLOAT32: ((float *)b)[i] = (float)v; break;
    case TC_FLOAT64: ((double *)b)[i] = (double)v; break;
    default: break;
    }
}

/* The value of an integer input in type t, as int64 (signed types) or as the
 * zero-extended bit pattern (unsigned types). */
static int is_unsigned(tc_dtype_t t)
{
    return t == TC_UINT8 || t == TC_UINT32 || t == TC_UINT64;
}

static uint64_t in_type(tc_dtype_t t, uint64_t bits)
{
    switch (t) {
    case TC_INT8: return (uint64_t)(int64_t)(int8_t)bits;
    case TC_UINT8: return (uint8_t)bits;
    case TC_INT32: return (uint64_t)(int64_t)(int32_t)bits;
    case TC_UINT32: return (uint32_t)bits;
    default: return bits;
    }
}

/* The integer reference: each rank's input converted to the type, combined
 * with wrap-around in the type's width, compared signed or unsigned. */
static uint64_t int_reference(size_t i, tc_dtype_t t, tc_redop_t op)
{
    int u = is_unsigned(t);
    uint64_t acc = in_type(t, (uint64_t)input(0, i, op));
    for (int r = 1; r < nranks; r++) {
        uint64_t v = in_type(t, (uint64_t)input(r, i, op));
        int less = u ? v < acc : (int64_t)v < (int64_t)acc;
        switch (op) {
        case TC_SUM: case TC_AVG: acc = in_type(t, acc + v); break;
        case TC_PROD: acc = in_type(t, acc * v); break;
        case TC_MIN: acc = less ? v : acc; break;
        case TC_MAX: acc = (!less && v != acc) ? v : acc; break;
        case TC_BAND: acc &= v; break;
        case TC_BOR: acc |= v; break;
        case TC_BXOR: acc ^= v; break;
        default: break;
        }
    }
    if (op == TC_AVG)
        acc = u ? acc / (uint64_t)nranks : (uint64_t)((int64_t)acc / nranks);
    return in_type(t, acc);
}

/* Whether element i holds the reference (integers exactly; floats within the
 * type's precision, which only matters for avg). */
static int matches(const void *b, size_t i, tc_dtype_t t, tc_redop_t op)
{
    if (t <= TC_UINT64) {
        uint64_t got;
        switch (t) {
        case TC_INT8: got = (uint64_t)(int64_t)((const int8_t *)b)[i]; break;
        case TC_UINT8: got = ((const uint8_t *)b)[i]; break;
        case TC_INT32: got = (uint64_t)(int64_t)((const int32_t *)b)[i]; break;
        case TC_UINT32: got = ((const uint32_t *)b)[i]; break;
        case TC_INT64: got = (uint64_t)((const int64_t *)b)[i]; break;
        default: got = ((const uint64_t *)b)[i]; break;
        }
        return got == int_reference(i, t, op);
    }
    double want = reference(i, op);
    double got;
    switch (t) {
    case TC_FLOAT16: got = fp16_val(((const uint16_t *)b)[i]); break;
    case TC_BFLOAT16: got = bf16_val(((const uint16_t *)b)[i]); break;
    case TC_FLOAT32: got = ((const float *)b)[i]; break;
    default: got = ((const double *)b)[i]; break;
    }
    double tol = t == TC_FLOAT64 ? 1e-12 : t == TC_FLOAT32 ? 1e-6 : 1e-2;
    return fabs(got - want) <= tol * (fabs(want) > 1 ? fabs(want) : 1);
}

static void run_case(tc_comm_t *comm, tc_dtype_t t, tc_redop_t op, size_t count,
                     const char *algo, int in_place)
{
    size_t es = tc_dtype_size(t);
    unsigned char *s = malloc(count * es + 16), *r = malloc(count * es + 16);
    for (size_t i = 0; i < count; i++)
        put(in_place ? r : s, i, t, input(rank, i, op));
    if (!in_place)
        memset(r, 0x5a, count * es);
    memset(r + count * es, 0xee, 16); /* guard: nothing written past the end */
    char hints[64];
    snprintf(hints, sizeof(hints), "algo=%s", algo);
    tc_op_opts_t o = TC_OP_OPTS_INIT;
    o.hints = strcmp(algo, "auto") == 0 ? NULL : hints; /* auto: the cost model chooses */
    o.timeout_ms = 60000;
    tc_status_t st = tc_all_reduce(comm, in_place ? r : s, r, count, t, op, &o, NULL);
    if (st != TC_OK) {
        FAIL("%s %s count %zu %s %s: %s: %s", tc_dtype_name(t), tc_redop_name(op), count, algo,
             in_place ? "in-place" : "out-of-place", tc_status_string(st), tc_last_error());
    } else {
        size_t wrong = 0, first = 0;
        for (size_t i = 0; i < count; i++)
            if (!matches(r, i, t, op) && wrong++ == 0)
                first = i;
        for (int g = 0; g < 16; g++)
            wrong += r[count * es + g] != 0xee;
        if (wrong)
            FAIL("%s %s count %zu %s %s: %zu wrong elements, first at %zu", tc_dtype_name(t),
                 tc_redop_name(op), count, algo, in_place ? "in-place" : "out-of-place", wrong,
                 first);
    }
    free(s);
    free(r);
}

static void expect(tc_status_t got, tc_status_t want, const char *what)
{
    if (got != want)
        FAIL("%s: got %s, want %s (%s)", what, tc_status_string(got), tc_status_string(want),
             tc_last_error());
    else if (want != TC_OK && tc_last_error()[0] == '\0')
        FAIL("%s: %s without a detail message", what, tc_status_string(got));
}

static void bad_arguments(tc_comm_t *comm)
{
    float a[8] = {0}, b[8];
    expect(tc_all_reduce(NULL, a, b, 8, TC_FLOAT32, TC_SUM, NULL, NULL), TC_ERR_INVALID_ARG,
           "NULL comm");
    expect(tc_all_reduce(comm, NULL, b, 8, TC_FLOAT32, TC_SUM, NULL, NULL), TC_ERR_INVALID_ARG,
           "NULL sendbuf");
    expect(tc_all_reduce(comm, a, NULL, 8, TC_FLOAT32, TC_SUM, NULL, NULL), TC_ERR_INVALID_ARG,
           "NULL recvbuf");
    expect(tc_all_reduce(comm, a, b, 8, (tc_dtype_t)99, TC_SUM, NULL, NULL), TC_ERR_INVALID_ARG,
           "bad dtype");
    expect(tc_all_reduce(comm, a, b, 8, TC_FLOAT32, (tc_redop_t)-1, NULL, NULL),
           TC_ERR_INVALID_ARG, "bad op");
    expect(tc_all_reduce(comm, a, b, 8, TC_FLOAT32, TC_BXOR, NULL, NULL), TC_ERR_UNSUPPORTED,
           "bxor on float32");
    expect(tc_all_reduce(comm, a, a + 1, 4, TC_FLOAT32, TC_SUM, NULL, NULL), TC_ERR_INVALID_ARG,
           "overlapping buffers");
    expect(tc_all_reduce(comm, a, b, SIZE_MAX / 2, TC_FLOAT32, TC_SUM, NULL, NULL),
           TC_ERR_INVALID_ARG, "overflowing count");
    tc_op_opts_t o = TC_OP_OPTS_INIT;
    o.hints = "algo=no_such_algorithm";
    expect(tc_all_reduce(comm, a, b, 8, TC_FLOAT32, TC_SUM, &o, NULL), TC_ERR_NOT_FOUND,
           "unknown algorithm");
    o.hints = "algo";
    expect(tc_all_reduce(comm, a, b, 8, TC_FLOAT32, TC_SUM, &o, NULL), TC_ERR_CONFIG,
           "malformed hints");
    o.hints = NULL;
    o.size = 3;
    expect(tc_all_reduce(comm, a, b, 8, TC_FLOAT32, TC_SUM, &o, NULL), TC_ERR_INVALID_ARG,
           "opts without TC_OP_OPTS_INIT");
    tc_work_t *w = NULL;
    tc_work_state_t ws = TC_WORK_FAILED;
    expect(tc_all_reduce(comm, a, b, 8, TC_FLOAT32, TC_SUM, NULL, &w), TC_OK,
           "blocking call with a work object");
    expect(tc_work_status(w, &ws, NULL), TC_OK, "status of a finished work");
    expect(ws == TC_WORK_COMPLETED ? TC_OK : TC_ERR_INTERNAL, TC_OK, "finished work completed");
    expect(tc_work_free(w), TC_OK, "free a finished work");
    int x;
    expect(tc_comm_rank(NULL, &x), TC_ERR_INVALID_ARG, "rank of NULL comm");
    expect(tc_comm_size(comm, NULL), TC_ERR_INVALID_ARG, "size into NULL");
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    tc_comm_t *comm;
    tc_status_t st = tc_comm_create(NULL, &comm);
    if (st != TC_OK) {
        fprintf(stderr, "tc_comm_create: %s: %s\n", tc_status_string(st), tc_last_error());
        return 2;
    }
    tc_comm_rank(comm, &rank);
    tc_comm_size(comm, &nranks);

    static const char *const algos[] = {"ring",        "recursive_doubling", "rabenseifner",
                                        "binary_tree", "double_binary_tree", "hierarchical",
                                        "auto"};
    const int nalgos = sizeof(algos) / sizeof(algos[0]);
    size_t n = (size_t)nranks;
    size_t counts[] = {0, 1, 2, n - 1 ? n - 1 : 1, n, n + 1, 2 * n + 1, 1000, 4097};
    int ncases = 0;
    for (int a = 0; a < nalgos; a++) {
        for (int t = 0; t < TC_DTYPE_COUNT; t++) {
            for (int op = 0; op < TC_REDOP_COUNT; op++) {
                if (!tc_redop_valid_for((tc_redop_t)op, (tc_dtype_t)t))
                    continue;
                for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
                    if (quick && c % 3)
                        continue;
                    for (int ip = 0; ip < 2; ip++, ncases++)
                        run_case(comm, (tc_dtype_t)t, (tc_redop_t)op, counts[c], algos[a], ip);
                }
            }
        }
        /* large: several MiB, both placements */
        run_case(comm, TC_FLOAT32, TC_SUM, (3u << 20) + 7, algos[a], 0);
        run_case(comm, TC_FLOAT32, TC_SUM, (3u << 20) + 7, algos[a], 1);
        ncases += 2;
    }
    bad_arguments(comm);
    /* the communicator still works after rejected calls */
    run_case(comm, TC_INT32, TC_SUM, 77, "ring", 0);
    ncases++;

    printf("rank %d of %d: %d cases, %d failures\n", rank, nranks, ncases, failures);
    tc_comm_destroy(comm);
    return failures ? 1 : 0;
}
