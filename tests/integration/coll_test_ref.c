/* coll_test's reference: deterministic inputs, the exact result of every reduction, data
 * payloads by (source, destination, index), buffers with guard bytes, and calls finished
 * and counted (coll_test.h). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/integration/coll_test.h"

/* ------------------------------------------------------------------------ */
/* Values. */

static int is_float(tc_dtype_t t)
{
    return t == TC_FLOAT16 || t == TC_BFLOAT16 || t == TC_FLOAT32 || t == TC_FLOAT64;
}

static int is_unsigned(tc_dtype_t t)
{
    return t == TC_UINT8 || t == TC_UINT32 || t == TC_UINT64;
}

uint64_t mix(uint64_t x) /* splitmix64's finaliser */
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Data-movement payload: element j of the block that @p src sends to @p dst
 * (dst = 0 where every rank gets the same block). Raw bytes: the library must
 * move them unchanged whatever the type. */
uint64_t payload(int src, int dst, size_t j)
{
    return mix(salt ^ mix(((uint64_t)(unsigned)src << 32) ^ (uint64_t)(unsigned)dst) ^
               (uint64_t)j * 0x2545f4914f6cdd1dull);
}

void put_payload(unsigned char *b, size_t i, size_t es, uint64_t v)
{
    memcpy(b + i * es, &v, es); /* the low bytes (little-endian) */
}

int has_payload(const unsigned char *b, size_t i, size_t es, uint64_t v)
{
    return memcmp(b + i * es, &v, es) == 0;
}

/* Amplitude of sum/min/max inputs: sums over every rank stay inside int8 (and
 * inside uint8 after the shift to non-negative values for unsigned types). */
static int amplitude(void)
{
    int a = 63 / (nranks > 0 ? nranks : 1);
    return a > 9 ? 9 : a < 1 ? 1 : a;
}

/* Reduction input of rank r at index i: small integers, exact in every type.
 * prod: 1, -1 and rarely 2 (at most two 2s per index below 15 ranks);
 * bitwise: [0, 127]; others: [-amp, amp] (shifted to [0, 2 amp] if unsigned). */
int64_t red_input(int r, size_t i, tc_dtype_t t, tc_redop_t op)
{
    size_t k = i % PERIOD, ur = (size_t)r;
    if (op == TC_PROD) {
        if ((k * 3 + ur) % 7 == 0)
            return 2;
        return !is_unsigned(t) && (k + 2 * ur) % 5 == 0 ? -1 : 1;
    }
    if (op == TC_BAND || op == TC_BOR || op == TC_BXOR)
        return (int64_t)((ur * 29 + k * 13 + 5) % 128);
    int amp = amplitude();
    int64_t v = (int64_t)((ur * 5 + k * 3 + 1) % (size_t)(2 * amp + 1)) - amp;
    return is_unsigned(t) ? v + amp : v;
}

/* The exact combination over ranks 0..n-1 (for avg: the sum). */
void red_table(tc_dtype_t t, tc_redop_t op, int n, int64_t *tab)
{
    for (size_t k = 0; k < PERIOD; k++) {
        int64_t acc = red_input(0, k, t, op);
        for (int r = 1; r < n; r++) {
            int64_t v = red_input(r, k, t, op);
            switch (op) {
            case TC_SUM:
            case TC_AVG:
                acc += v;
                break;
            case TC_PROD:
                acc *= v;
                break;
            case TC_MIN:
                acc = v < acc ? v : acc;
                break;
            case TC_MAX:
                acc = v > acc ? v : acc;
                break;
            case TC_BAND:
                acc &= v;
                break;
            case TC_BOR:
                acc |= v;
                break;
            case TC_BXOR:
                acc ^= v;
                break;
            default:
                break;
            }
        }
        tab[k] = acc;
    }
}

/* binary16 and bfloat16 of small integers (exact), and back. */
static uint16_t fp16_of(int64_t v)
{
    if (v == 0)
        return 0;
    uint16_t s = v < 0 ? 0x8000 : 0;
    uint64_t a = (uint64_t)(v < 0 ? -v : v);
    int e = 63 - __builtin_clzll(a); /* a = 1.m * 2^e, e <= 10 for |v| < 2048 */
    uint16_t m = (uint16_t)(((a << 10) >> e) & 0x3ff);
    return (uint16_t)(s | ((e + 15) << 10) | m);
}

static double fp16_val(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 31 ? (m ? NAN : INFINITY) : e ? ldexp(1.0 + m / 1024.0, e - 15) : ldexp(m, -24);
    return (h & 0x8000) ? -v : v;
}

static uint16_t bf16_of(int64_t v)
{
    float f = (float)v; /* exact below 2^24; the top 16 bits are exact below 2^8 */
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

static double bf16_val(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

void put_int(void *b, size_t i, tc_dtype_t t, int64_t v)
{
    switch (t) {
    case TC_INT8:
        ((int8_t *)b)[i] = (int8_t)v;
        break;
    case TC_UINT8:
        ((uint8_t *)b)[i] = (uint8_t)v;
        break;
    case TC_INT32:
        ((int32_t *)b)[i] = (int32_t)v;
        break;
    case TC_UINT32:
        ((uint32_t *)b)[i] = (uint32_t)v;
        break;
    case TC_INT64:
        ((int64_t *)b)[i] = v;
        break;
    case TC_UINT64:
        ((uint64_t *)b)[i] = (uint64_t)v;
        break;
    case TC_FLOAT16:
        ((uint16_t *)b)[i] = fp16_of(v);
        break;
    case TC_BFLOAT16:
        ((uint16_t *)b)[i] = bf16_of(v);
        break;
    case TC_FLOAT32:
        ((float *)b)[i] = (float)v;
        break;
    case TC_FLOAT64:
        ((double *)b)[i] = (double)v;
        break;
    default:
        break;
    }
}

static int64_t get_int(const void *b, size_t i, tc_dtype_t t)
{
    switch (t) {
    case TC_INT8:
        return ((const int8_t *)b)[i];
    case TC_UINT8:
        return ((const uint8_t *)b)[i];
    case TC_INT32:
        return ((const int32_t *)b)[i];
    case TC_UINT32:
        return ((const uint32_t *)b)[i];
    case TC_INT64:
        return ((const int64_t *)b)[i];
    default:
        return (int64_t)((const uint64_t *)b)[i];
    }
}

static double get_float(const void *b, size_t i, tc_dtype_t t)
{
    switch (t) {
    case TC_FLOAT16:
        return fp16_val(((const uint16_t *)b)[i]);
    case TC_BFLOAT16:
        return bf16_val(((const uint16_t *)b)[i]);
    case TC_FLOAT32:
        return ((const float *)b)[i];
    default:
        return ((const double *)b)[i];
    }
}

/* Whether element i of @p b is the reduction @p combined (the table's value)
 * over @p n ranks: exact, except avg of floats within the type's rounding. */
int red_matches(const void *b, size_t i, tc_dtype_t t, tc_redop_t op, int64_t combined, int n)
{
    if (!is_float(t)) {
        int64_t want = op == TC_AVG ? combined / n : combined; /* C: truncation towards zero */
        return get_int(b, i, t) == want;
    }
    double got = get_float(b, i, t);
    if (op != TC_AVG)
        return got == (double)combined;
    double want = (double)combined / n;
    double tol = t == TC_FLOAT64 ? 1e-14 : t == TC_FLOAT32 ? 1e-6 : t == TC_FLOAT16 ? 1e-3 : 8e-3;
    return fabs(got - want) <= tol * (fabs(want) > 1 ? fabs(want) : 1);
}

/* ------------------------------------------------------------------------ */
/* Buffers with guard bytes. */

unsigned char *buf_new(size_t bytes, int fill)
{
    unsigned char *b = malloc(bytes + GUARD);
    if (!b) {
        fprintf(stderr, "rank %d: out of memory (%zu bytes)\n", rank, bytes);
        exit(2);
    }
    memset(b, fill, bytes);
    memset(b + bytes, GUARD_BYTE, GUARD);
    return b;
}

int guard_broken(const unsigned char *b, size_t bytes)
{
    for (size_t g = 0; g < GUARD; g++)
        if (b[bytes + g] != GUARD_BYTE)
            return 1;
    return 0;
}

void tally(tally_t *w, int ok, size_t i, const char *where)
{
    if (!ok && w->wrong++ == 0) {
        w->first = i;
        w->where = where;
    }
}

tc_op_opts_t op_opts(const char *algo, char *hints, size_t cap, int async)
{
    tc_op_opts_t o = TC_OP_OPTS_INIT;
    o.timeout_ms = TIMEOUT_MS;
    o.async = async;
    if (algo && strcmp(algo, "auto") != 0) {
        snprintf(hints, cap, "algo=%s", algo);
        o.hints = hints;
    }
    return o;
}

/* An unexpected error status: counted; after too many the communicator is
 * most likely broken and the run stops rather than waiting out timeouts. */
void status_fail(const char *what, tc_status_t st, const char *detail)
{
    FAIL("%s: %s: %s", what, tc_status_string(st), detail);
    if (st == TC_ERR_UNSUPPORTED || st == TC_ERR_NOT_FOUND || st == TC_ERR_INVALID_ARG ||
        st == TC_ERR_MISMATCH)
        return; /* the same on every rank, the communicator intact: the ranks stay in step */
    if (++status_errors >= MAX_STATUS_ERRORS) {
        fprintf(stderr, "rank %d: giving up after %d failed calls\n", rank, status_errors);
        printf("rank %d of %d: %d checks, %d failures\n", rank, nranks, checks, failures);
        exit(1);
    }
}

/* Finish a call issued blocking (work NULL) or asynchronously (wait, check the
 * state, free); returns the operation's status. */
tc_status_t finish(tc_status_t st, tc_work_t *work, const char *what)
{
    if (!work)
        return st;
    if (st == TC_OK) {
        st = tc_work_wait(work, TIMEOUT_MS);
        tc_work_state_t state;
        tc_status_t result;
        if (st == TC_OK &&
            (tc_work_status(work, &state, &result) != TC_OK || state != TC_WORK_COMPLETED ||
             result != TC_OK || tc_work_error(work)[0] != '\0'))
            FAIL("%s: completed work reports state %d, result %s, error '%s'", what, (int)state,
                 tc_status_string(result), tc_work_error(work));
    }
    tc_status_t fst = tc_work_free(work);
    if (fst != TC_OK)
        FAIL("%s: tc_work_free: %s: %s", what, tc_status_string(fst), tc_last_error());
    return st;
}

void expect(tc_status_t got, tc_status_t want, const char *what)
{
    checks++;
    if (got != want)
        FAIL("%s: got %s, want %s (%s)", what, tc_status_string(got), tc_status_string(want),
             tc_last_error());
    else if (want != TC_OK && tc_last_error()[0] == '\0')
        FAIL("%s: %s without a detail message", what, tc_status_string(got));
}
