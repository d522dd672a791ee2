/* Multi-process test of every collective of the public API, run under every
 * launcher (tests/integration/run_launchers.sh).
 *
 *   coll_test [--quick] [--skip NAME]...
 *
 * --skip leaves out a part while a known bug is being fixed: a collective's
 * matrix (all_reduce), one algorithm's (reduce/linear), or v, p2p, work,
 * comm, errors.
 *
 * Every collective x data type x op x size class x algorithm (every name the
 * algorithm layer registers, plus the cost model's choice), in place and out
 * of place, blocking and asynchronous; then the v-variants with uneven and
 * zero counts and gapped displacements, send/recv and batches, asynchronous
 * and persistent work objects, split/split_ranks/dup with concurrent
 * operations on several communicators, argument errors, and (when the runner
 * sets TC_CHECK=1) a mismatched call that every rank must see as
 * TC_ERR_MISMATCH naming the rank at fault.
 *
 * Every rank checks every element it receives against a reference computed
 * here from the deterministic inputs of every rank: reductions from small
 * integers (exact in every type), data movement from a hash of (source,
 * destination, index, case), so a misplaced or stale element is caught.
 * Buffers carry guard bytes; gaps between v-blocks must stay untouched.
 *
 * Prints one line per rank "rank R of N: C checks, F failures" and exits 0
 * only when F is 0. Every operation is bounded by a 60 s timeout. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tcomms/tcomms.h"

#define TIMEOUT_MS 60000
#define GUARD 64           /* guard bytes after every buffer */
#define GUARD_BYTE 0xee
#define FILL_BYTE 0x5a     /* what receive buffers hold before an operation */
#define PERIOD 4099        /* reduction inputs repeat with this (prime) period */
#define MAX_STATUS_ERRORS 20

static int rank, nranks, failures, checks, status_errors, quick;
static const char *skips[32];
static int nskips;
static uint64_t salt; /* changes every case: stale data from an earlier case never matches */

#define MAX_PRINTED 200 /* failure lines per rank; more are only counted */

#define FAIL(...)                                                                                 \
    do {                                                                                          \
        if (failures++ < MAX_PRINTED) {                                                           \
            fprintf(stderr, "rank %d: FAIL: ", rank);                                             \
            fprintf(stderr, __VA_ARGS__);                                                         \
            fprintf(stderr, "\n");                                                                \
        }                                                                                         \
    } while (0)

/* ------------------------------------------------------------------------ */
/* Collectives and the algorithm names registered for them (the TC_ALGO_DEFINE lines of
 * algo/src/; docs/algorithms/). */

enum { C_ALL_REDUCE, C_REDUCE, C_BROADCAST, C_ALL_GATHER, C_REDUCE_SCATTER, C_ALL_TO_ALL,
       C_GATHER, C_SCATTER, C_BARRIER, C_COUNT };

typedef struct {
    const char *name;
    int reduces, rooted, multiplied; /* multiplied: a buffer of size * count elements */
    const char *algos[8];            /* NULL-terminated; "auto" = the cost model chooses */
} coll_t;

static const coll_t colls[C_COUNT] = {
    {"all_reduce", 1, 0, 0, {"ring", "recursive_doubling", "rabenseifner", "binary_tree",
                             "double_binary_tree", "hierarchical", "auto", NULL}},
    {"reduce", 1, 1, 0, {"binomial_tree", "linear", "binary_tree", "double_binary_tree",
                         "hierarchical", "auto", NULL}},
    {"broadcast", 0, 1, 0, {"binomial_tree", "linear", "binary_tree", "double_binary_tree",
                            "hierarchical", "auto", NULL}},
    {"all_gather", 0, 0, 1, {"ring", "recursive_doubling", "bruck", "linear", "hierarchical",
                             "auto", NULL}},
    {"reduce_scatter", 1, 0, 1, {"ring", "pairwise", "linear", "hierarchical", "auto", NULL}},
    {"all_to_all", 0, 0, 1, {"pairwise", "linear", "auto", NULL}},
    {"gather", 0, 1, 1, {"binomial_tree", "linear", "auto", NULL}},
    {"scatter", 0, 1, 1, {"binomial_tree", "linear", "auto", NULL}},
    {"barrier", 0, 0, 0, {"bruck", "linear", "auto", NULL}},
};

static int skipped(const char *part)
{
    for (int i = 0; i < nskips; i++)
        if (strcmp(skips[i], part) == 0)
            return 1;
    return 0;
}

/* Algorithms refused (TC_ERR_NOT_FOUND / TC_ERR_UNSUPPORTED) per collective
 * and name. A refusal is legitimate only for the algorithm as a whole at this
 * rank count: one that refuses some cases and runs others (e.g. only in place)
 * is a failure, reported once at the end. */
typedef struct {
    char what[48];
    int refused, ran;
    tc_status_t st;
    char example[160], why[240];
} refusal_t;
static refusal_t refusals[96];
static int nrefusals, refused_total;

static refusal_t *refusal_of(const char *coll, const char *algo)
{
    char what[48];
    snprintf(what, sizeof(what), "%s/%s", coll, algo);
    for (int i = 0; i < nrefusals; i++)
        if (strcmp(refusals[i].what, what) == 0)
            return &refusals[i];
    if (nrefusals == (int)(sizeof(refusals) / sizeof(refusals[0])))
        return NULL;
    refusal_t *r = &refusals[nrefusals++];
    memset(r, 0, sizeof(*r));
    snprintf(r->what, sizeof(r->what), "%s", what);
    return r;
}

/* Whether @p st is a refusal of a named algorithm; counts it, or counts a run. */
static int refused(const char *coll, const char *algo, tc_status_t st, const char *example)
{
    int is = st == TC_ERR_NOT_FOUND || (st == TC_ERR_UNSUPPORTED && strcmp(algo, "auto") != 0);
    refusal_t *r = refusal_of(coll, algo);
    if (!r)
        return is;
    if (!is) {
        r->ran++;
        return 0;
    }
    if (r->refused++ == 0) {
        r->st = st;
        snprintf(r->example, sizeof(r->example), "%s", example);
        snprintf(r->why, sizeof(r->why), "%s", tc_last_error());
    }
    refused_total++;
    return 1;
}

static void report_refusals(void)
{
    for (int i = 0; i < nrefusals; i++) {
        refusal_t *r = &refusals[i];
        if (r->refused && r->ran)
            FAIL("%s refused %d cases but ran %d others; e.g. %s: %s: %s", r->what, r->refused,
                 r->ran, r->example, tc_status_string(r->st), r->why);
        else if (r->refused && rank == 0)
            printf("  refused (all %d cases): %s: %s: %s\n", r->refused, r->what,
                   tc_status_string(r->st), r->why);
    }
}

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

static uint64_t mix(uint64_t x) /* splitmix64's finaliser */
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Data-movement payload: element j of the block that @p src sends to @p dst
 * (dst = 0 where every rank gets the same block). Raw bytes: the library must
 * move them unchanged whatever the type. */
static uint64_t payload(int src, int dst, size_t j)
{
    return mix(salt ^ mix(((uint64_t)(unsigned)src << 32) ^ (uint64_t)(unsigned)dst) ^
               (uint64_t)j * 0x2545f4914f6cdd1dull);
}

static void put_payload(unsigned char *b, size_t i, size_t es, uint64_t v)
{
    memcpy(b + i * es, &v, es); /* the low bytes (little-endian) */
}

static int has_payload(const unsigned char *b, size_t i, size_t es, uint64_t v)
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
static int64_t red_input(int r, size_t i, tc_dtype_t t, tc_redop_t op)
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
static void red_table(tc_dtype_t t, tc_redop_t op, int n, int64_t *tab)
{
    for (size_t k = 0; k < PERIOD; k++) {
        int64_t acc = red_input(0, k, t, op);
        for (int r = 1; r < n; r++) {
            int64_t v = red_input(r, k, t, op);
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
    double v = e == 31 ? (m ? NAN : INFINITY)
                       : e ? ldexp(1.0 + m / 1024.0, e - 15) : ldexp(m, -24);
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

static void put_int(void *b, size_t i, tc_dtype_t t, int64_t v)
{
    switch (t) {
    case TC_INT8: ((int8_t *)b)[i] = (int8_t)v; break;
    case TC_UINT8: ((uint8_t *)b)[i] = (uint8_t)v; break;
    case TC_INT32: ((int32_t *)b)[i] = (int32_t)v; break;
    case TC_UINT32: ((uint32_t *)b)[i] = (uint32_t)v; break;
    case TC_INT64: ((int64_t *)b)[i] = v; break;
    case TC_UINT64: ((uint64_t *)b)[i] = (uint64_t)v; break;
    case TC_FLOAT16: ((uint16_t *)b)[i] = fp16_of(v); break;
    case TC_BFLOAT16: ((uint16_t *)b)[i] = bf16_of(v); break;
    case TC_FLOAT32: ((float *)b)[i] = (float)v; break;
    case TC_FLOAT64: ((double *)b)[i] = (double)v; break;
    default: break;
    }
}

static int64_t get_int(const void *b, size_t i, tc_dtype_t t)
{
    switch (t) {
    case TC_INT8: return ((const int8_t *)b)[i];
    case TC_UINT8: return ((const uint8_t *)b)[i];
    case TC_INT32: return ((const int32_t *)b)[i];
    case TC_UINT32: return ((const uint32_t *)b)[i];
    case TC_INT64: return ((const int64_t *)b)[i];
    default: return (int64_t)((const uint64_t *)b)[i];
    }
}

static double get_float(const void *b, size_t i, tc_dtype_t t)
{
    switch (t) {
    case TC_FLOAT16: return fp16_val(((const uint16_t *)b)[i]);
    case TC_BFLOAT16: return bf16_val(((const uint16_t *)b)[i]);
    case TC_FLOAT32: return ((const float *)b)[i];
    default: return ((const double *)b)[i];
    }
}

/* Whether element i of @p b is the reduction @p combined (the table's value)
 * over @p n ranks: exact, except avg of floats within the type's rounding. */
static int red_matches(const void *b, size_t i, tc_dtype_t t, tc_redop_t op, int64_t combined,
                       int n)
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

static unsigned char *buf_new(size_t bytes, int fill)
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

static int guard_broken(const unsigned char *b, size_t bytes)
{
    for (size_t g = 0; g < GUARD; g++)
        if (b[bytes + g] != GUARD_BYTE)
            return 1;
    return 0;
}

/* Tally of wrong elements of one check, with the first one for the message. */
typedef struct {
    size_t wrong, first;
    const char *where;
} tally_t;

static void tally(tally_t *w, int ok, size_t i, const char *where)
{
    if (!ok && w->wrong++ == 0) {
        w->first = i;
        w->where = where;
    }
}

static tc_op_opts_t op_opts(const char *algo, char *hints, size_t cap, int async)
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
static void status_fail(const char *what, tc_status_t st, const char *detail)
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
static tc_status_t finish(tc_status_t st, tc_work_t *work, const char *what)
{
    if (!work)
        return st;
    if (st == TC_OK) {
        st = tc_work_wait(work, TIMEOUT_MS);
        tc_work_state_t state;
        tc_status_t result;
        if (st == TC_OK && (tc_work_status(work, &state, &result) != TC_OK ||
                            state != TC_WORK_COMPLETED || result != TC_OK ||
                            tc_work_error(work)[0] != '\0'))
            FAIL("%s: completed work reports state %d, result %s, error '%s'", what, (int)state,
                 tc_status_string(result), tc_work_error(work));
    }
    tc_status_t fst = tc_work_free(work);
    if (fst != TC_OK)
        FAIL("%s: tc_work_free: %s: %s", what, tc_status_string(fst), tc_last_error());
    return st;
}

/* ------------------------------------------------------------------------ */
/* One case of the matrix. */

typedef struct {
    int coll;
    const char *algo;
    tc_dtype_t t;
    tc_redop_t op;
    size_t count;
    int in_place, root, async;
} case_t;

static void case_name(const case_t *c, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s algo=%s %s %s count %zu root %d %s %s", colls[c->coll].name, c->algo,
             tc_dtype_name(c->t), colls[c->coll].reduces ? tc_redop_name(c->op) : "-", c->count,
             c->root, c->in_place ? "in-place" : "out-of-place", c->async ? "async" : "blocking");
}

static void run_case(tc_comm_t *comm, const case_t *c, int64_t *tab)
{
    const size_t es = tc_dtype_size(c->t), n = (size_t)nranks, me = (size_t)rank;
    const size_t cnt = c->count, big = cnt * (colls[c->coll].multiplied ? n : 1);
    const int root = c->root, is_root = rank == root;
    const tc_dtype_t t = c->t;
    const tc_redop_t op = c->op;
    char hints[64], name[200];
    tc_op_opts_t o = op_opts(c->algo, hints, sizeof(hints), c->async);
    tc_work_t *work = NULL, **wp = c->async ? &work : NULL;
    salt = mix(salt + 1);

    /* sbuf and rbuf; in place, the collective's single buffer is rbuf */
    size_t sn = 0, rn = 0; /* elements */
    switch (c->coll) {
    case C_ALL_REDUCE: case C_REDUCE: sn = rn = cnt; break;
    case C_BROADCAST: rn = cnt; break;
    case C_ALL_GATHER: case C_GATHER: sn = cnt, rn = big; break;
    case C_REDUCE_SCATTER: sn = big, rn = c->in_place ? big : cnt; break;
    case C_ALL_TO_ALL: sn = rn = big; break;
    case C_SCATTER: sn = big, rn = cnt; break;
    default: break;
    }
    unsigned char *s = buf_new(sn * es, 0), *r = buf_new(rn * es, FILL_BYTE);
    unsigned char *src = c->in_place ? r : s; /* where the input is written */

    /* inputs */
    if (colls[c->coll].reduces) {
        for (size_t i = 0; i < sn; i++)
            put_int(src, i, t, red_input(rank, i, t, op));
        red_table(t, op, nranks, tab);
    } else if (c->coll == C_BROADCAST) {
        if (is_root)
            for (size_t i = 0; i < cnt; i++)
                put_payload(r, i, es, payload(root, 0, i));
    } else if (c->coll == C_ALL_GATHER || c->coll == C_GATHER) {
        unsigned char *mine = c->in_place && (c->coll == C_ALL_GATHER || is_root)
                                  ? r + me * cnt * es : s;
        for (size_t i = 0; i < cnt; i++)
            put_payload(mine, i, es, payload(rank, 0, i));
    } else if (c->coll == C_ALL_TO_ALL) {
        for (size_t d = 0; d < n; d++)
            for (size_t i = 0; i < cnt; i++)
                put_payload(src, d * cnt + i, es, payload(rank, (int)d, i));
    } else if (c->coll == C_SCATTER && is_root) {
        for (size_t d = 0; d < n; d++)
            for (size_t i = 0; i < cnt; i++)
                put_payload(s, d * cnt + i, es, payload(root, (int)d, i));
    }

    /* the call */
    tc_status_t st = TC_OK;
    switch (c->coll) {
    case C_ALL_REDUCE: st = tc_all_reduce(comm, src, r, cnt, t, op, &o, wp); break;
    case C_REDUCE: st = tc_reduce(comm, src, r, cnt, t, op, root, &o, wp); break;
    case C_BROADCAST: st = tc_broadcast(comm, r, cnt, t, root, &o, wp); break;
    case C_ALL_GATHER:
        st = tc_all_gather(comm, c->in_place ? r + me * cnt * es : s, r, cnt, t, &o, wp);
        break;
    case C_REDUCE_SCATTER: st = tc_reduce_scatter(comm, src, r, cnt, t, op, &o, wp); break;
    case C_ALL_TO_ALL: st = tc_all_to_all(comm, src, r, cnt, t, &o, wp); break;
    case C_GATHER:
        /* in place at the root; other ranks pass no receive buffer in the in-place variant */
        st = tc_gather(comm, c->in_place && is_root ? r + me * cnt * es : s,
                       c->in_place && !is_root ? NULL : r, cnt, t, root, &o, wp);
        break;
    case C_SCATTER:
        st = tc_scatter(comm, c->in_place && !is_root ? NULL : s,
                        c->in_place && is_root ? s + me * cnt * es : r, cnt, t, root, &o, wp);
        break;
    default: break;
    }
    case_name(c, name, sizeof(name));
    st = finish(st, work, name);
    if (refused(colls[c->coll].name, c->algo, st, name))
        goto out;
    checks++;
    if (st != TC_OK) {
        status_fail(name, st, tc_last_error());
        goto out;
    }

    /* the check */
    tally_t w = {0, 0, NULL};
    switch (c->coll) {
    case C_ALL_REDUCE:
        for (size_t i = 0; i < cnt; i++)
            tally(&w, red_matches(r, i, t, op, tab[i % PERIOD], nranks), i, "result");
        break;
    case C_REDUCE:
        if (!is_root && c->in_place) /* not written off the root: still the input */
            for (size_t i = 0; i < cnt; i++)
                put_int(s, i, t, red_input(rank, i, t, op));
        for (size_t i = 0; i < cnt; i++) {
            if (is_root)
                tally(&w, red_matches(r, i, t, op, tab[i % PERIOD], nranks), i, "result");
            else if (c->in_place)
                tally(&w, memcmp(r + i * es, s + i * es, es) == 0, i,
                      "non-root in-place buffer (must not be written)");
            else
                tally(&w, r[i * es] == FILL_BYTE, i, "non-root recvbuf (must not be written)");
        }
        break;
    case C_BROADCAST:
        for (size_t i = 0; i < cnt; i++)
            tally(&w, has_payload(r, i, es, payload(root, 0, i)), i, "result");
        break;
    case C_ALL_GATHER:
        for (size_t i = 0; i < big; i++)
            tally(&w, has_payload(r, i, es, payload((int)(i / cnt), 0, i % cnt)), i, "result");
        break;
    case C_REDUCE_SCATTER: {
        size_t off = c->in_place ? me * cnt : 0;
        for (size_t i = 0; i < cnt; i++)
            tally(&w, red_matches(r, off + i, t, op, tab[(me * cnt + i) % PERIOD], nranks),
                  off + i, "result");
        break;
    }
    case C_ALL_TO_ALL:
        for (size_t i = 0; i < big; i++)
            tally(&w, has_payload(r, i, es, payload((int)(i / cnt), rank, i % cnt)), i, "result");
        break;
    case C_GATHER:
        for (size_t i = 0; i < rn; i++) {
            if (is_root)
                tally(&w, has_payload(r, i, es, payload((int)(i / cnt), 0, i % cnt)), i,
                      "result");
            else
                tally(&w, r[i * es] == FILL_BYTE, i, "non-root recvbuf (must not be written)");
        }
        break;
    case C_SCATTER: {
        const unsigned char *got = c->in_place && is_root ? s + me * cnt * es : r;
        for (size_t i = 0; i < cnt; i++)
            tally(&w, has_payload(got, i, es, payload(root, rank, i)), i, "result");
        break;
    }
    default: break;
    }
    if (guard_broken(r, rn * es) || guard_broken(s, sn * es))
        tally(&w, 0, rn, "guard bytes after a buffer");
    if (w.wrong)
        FAIL("%s: %zu wrong elements, first at %zu (%s)", name, w.wrong, w.first, w.where);
out:
    free(s);
    free(r);
}

/* Barrier: the last rank enters 30 ms after the others; nobody may leave
 * before it entered (same host: CLOCK_REALTIME is common to the ranks). */
static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void barrier_case(tc_comm_t *comm, const char *algo, int async)
{
    char hints[64], name[96];
    snprintf(name, sizeof(name), "barrier algo=%s %s", algo, async ? "async" : "blocking");
    double *t0 = calloc((size_t)nranks, sizeof(double)), mine = wall_s();
    tc_status_t st = tc_all_gather(comm, &mine, t0, 1, TC_FLOAT64, NULL, NULL);
    if (st != TC_OK) {
        status_fail("barrier: all_gather of the start times", st, tc_last_error());
        free(t0);
        return;
    }
    if (rank == nranks - 1)
        nanosleep(&(struct timespec){0, 30 * 1000 * 1000}, NULL);
    tc_op_opts_t o = op_opts(algo, hints, sizeof(hints), async);
    tc_work_t *work = NULL;
    st = tc_barrier(comm, &o, async ? &work : NULL);
    st = finish(st, work, name); /* after the call: it sets work */
    double left = wall_s();
    int skip = refused("barrier", algo, st, name);
    checks += !skip;
    if (skip) {
        /* counted among the refusals */
    } else if (st != TC_OK) {
        status_fail(name, st, tc_last_error());
    } else if (left < t0[nranks - 1] + 0.030) {
        FAIL("%s: left %.1f ms after rank %d's start, before it entered (>= 30 ms)", name,
             (left - t0[nranks - 1]) * 1e3, nranks - 1);
    }
    free(t0);
}

static void matrix(tc_comm_t *comm)
{
    const size_t n = (size_t)nranks;
    /* size classes: 0, 1, a small odd count, ~1000, ~300000 elements in all */
    size_t sizes[] = {0, 1, 7, 1000, 300000};
    int nsizes = 5;
    int64_t *tab = malloc(PERIOD * sizeof(int64_t));
    int ncase = 0;
    for (int ci = 0; ci < C_COUNT; ci++) {
        const coll_t *cl = &colls[ci];
        if (skipped(cl->name))
            continue;
        for (int a = 0; cl->algos[a]; a++) {
            char part[64];
            snprintf(part, sizeof(part), "%s/%s", cl->name, cl->algos[a]);
            if (skipped(part))
                continue;
            if (ci == C_BARRIER) {
                barrier_case(comm, cl->algos[a], 0);
                barrier_case(comm, cl->algos[a], 1);
                continue;
            }
            for (int t = 0; t < TC_DTYPE_COUNT; t++) {
                for (int op = 0; op < (cl->reduces ? TC_REDOP_COUNT : 1); op++) {
                    if (cl->reduces && !tc_redop_valid_for((tc_redop_t)op, (tc_dtype_t)t))
                        continue;
                    for (int si = 0; si < nsizes; si++) {
                        size_t cnt = sizes[si];
                        int large = si == nsizes - 1;
                        if (cl->multiplied && large)
                            cnt = cnt / n + 1; /* ~300000 in all */
                        /* --quick: no large class, every second small class
                         * and op; large only for sum (every type) and for
                         * every op of int32 and float32; more than 4 ranks:
                         * large only for sum */
                        if (large && ((quick) || (op != TC_SUM && nranks > 4) ||
                                      (op != TC_SUM && t != TC_INT32 && t != TC_FLOAT32)))
                            continue;
                        if (quick && (si + op + t) % 2)
                            continue;
                        for (int ip = 0; ip < (ci == C_BROADCAST ? 1 : 2); ip++) {
                            case_t c = {ci, cl->algos[a], (tc_dtype_t)t, (tc_redop_t)op, cnt, ip,
                                        cl->rooted ? (int)((size_t)ncase % n) : -1,
                                        ncase % 4 == 3};
                            ncase++;
                            run_case(comm, &c, tab);
                        }
                    }
                }
            }
        }
    }
    free(tab);
}

/* ------------------------------------------------------------------------ */
/* v-variants. */

/* Uneven counts with zeros: block q holds vcount(q) * scale elements. */
static size_t vcount(int q, size_t scale)
{
    return q % 3 == 1 ? 0 : (size_t)(1 + (q * 7 + 3) % 11) * scale;
}

/* Packed (gaps 0) or with gaps before every block; returns the extent. */
static size_t vdispls(const size_t *counts, int gaps, size_t *displs)
{
    size_t off = 0;
    for (int q = 0; q < nranks; q++) {
        off += gaps ? (size_t)(q % 2 + 1) * 3 : 0;
        displs[q] = off;
        off += counts[q];
    }
    return off;
}

static void all_gather_v_case(tc_comm_t *comm, const char *algo, tc_dtype_t t, size_t scale,
                              int gaps, int in_place)
{
    size_t es = tc_dtype_size(t), *counts = calloc((size_t)nranks, sizeof(size_t)),
           *displs = calloc((size_t)nranks, sizeof(size_t));
    char hints[64], name[160];
    snprintf(name, sizeof(name), "all_gather_v algo=%s %s scale %zu displs %s %s", algo,
             tc_dtype_name(t), scale, gaps ? "gapped" : "NULL", in_place ? "in-place" : "out");
    salt = mix(salt + 1);
    for (int q = 0; q < nranks; q++)
        counts[q] = vcount(q, scale);
    size_t extent = vdispls(counts, gaps, displs), mine = counts[rank];
    unsigned char *r = buf_new(extent * es, FILL_BYTE), *s = buf_new(mine * es, 0);
    unsigned char *send = in_place ? r + displs[rank] * es : s;
    for (size_t i = 0; i < mine; i++)
        put_payload(send, i, es, payload(rank, 0, i));
    tc_op_opts_t o = op_opts(algo, hints, sizeof(hints), 0);
    tc_status_t st = tc_all_gather_v(comm, send, mine, r, counts, gaps ? displs : NULL, t, &o,
                                     NULL);
    int skip = refused("all_gather_v", algo, st, name);
    checks += !skip;
    if (skip) {
        /* counted among the refusals */
    } else if (st != TC_OK) {
        status_fail(name, st, tc_last_error());
    } else {
        tally_t w = {0, 0, NULL};
        for (int q = 0; q < nranks; q++) {
            size_t gap_from = q ? displs[q - 1] + counts[q - 1] : 0;
            for (size_t i = gap_from; i < displs[q]; i++)
                tally(&w, r[i * es] == FILL_BYTE, i, "gap (must not be written)");
            for (size_t i = 0; i < counts[q]; i++)
                tally(&w, has_payload(r, displs[q] + i, es, payload(q, 0, i)), displs[q] + i,
                      "block");
        }
        if (guard_broken(r, extent * es))
            tally(&w, 0, extent, "guard");
        if (w.wrong)
            FAIL("%s: %zu wrong elements, first at %zu (%s)", name, w.wrong, w.first, w.where);
    }
    free(r);
    free(s);
    free(counts);
    free(displs);
}

static void reduce_scatter_v_case(tc_comm_t *comm, const char *algo, tc_dtype_t t, tc_redop_t op,
                                  size_t scale, int gaps, int in_place, int64_t *tab)
{
    size_t es = tc_dtype_size(t), *counts = calloc((size_t)nranks, sizeof(size_t)),
           *displs = calloc((size_t)nranks, sizeof(size_t));
    char hints[64], name[160];
    snprintf(name, sizeof(name), "reduce_scatter_v algo=%s %s %s scale %zu displs %s %s", algo,
             tc_dtype_name(t), tc_redop_name(op), scale, gaps ? "gapped" : "NULL",
             in_place ? "in-place" : "out");
    for (int q = 0; q < nranks; q++)
        counts[q] = vcount(nranks - 1 - q, scale);
    size_t extent = vdispls(counts, gaps, displs), mine = counts[rank];
    unsigned char *s = buf_new(extent * es, 0), *r = buf_new((in_place ? extent : mine) * es,
                                                             FILL_BYTE);
    unsigned char *src = in_place ? r : s;
    for (size_t i = 0; i < extent; i++)
        put_int(src, i, t, red_input(rank, i, t, op));
    red_table(t, op, nranks, tab);
    tc_op_opts_t o = op_opts(algo, hints, sizeof(hints), 0);
    tc_status_t st = tc_reduce_scatter_v(comm, src, r, counts, gaps ? displs : NULL, t, op, &o,
                                         NULL);
    int skip = refused("reduce_scatter_v", algo, st, name);
    checks += !skip;
    if (skip) {
        /* counted among the refusals */
    } else if (st != TC_OK) {
        status_fail(name, st, tc_last_error());
    } else {
        tally_t w = {0, 0, NULL};
        size_t off = in_place ? displs[rank] : 0; /* in place: left at my block */
        for (size_t i = 0; i < mine; i++)
            tally(&w, red_matches(r, off + i, t, op, tab[(displs[rank] + i) % PERIOD], nranks),
                  off + i, "result");
        if (guard_broken(r, (in_place ? extent : mine) * es))
            tally(&w, 0, mine, "guard");
        if (w.wrong)
            FAIL("%s: %zu wrong elements, first at %zu (%s)", name, w.wrong, w.first, w.where);
    }
    free(r);
    free(s);
    free(counts);
    free(displs);
}

/* Elements rank s sends to rank d: uneven, zero for some pairs (and for self sometimes). */
static size_t a2a_count(int s, int d, size_t scale)
{
    return (size_t)((s * 3 + d * 5 + 1) % 6) * scale;
}

static void all_to_all_v_case(tc_comm_t *comm, tc_dtype_t t, size_t scale, int gaps)
{
    size_t p = (size_t)nranks, es = tc_dtype_size(t);
    size_t *sc = calloc(p, sizeof(size_t)), *sd = calloc(p, sizeof(size_t)),
           *rc = calloc(p, sizeof(size_t)), *rd = calloc(p, sizeof(size_t));
    char name[128];
    snprintf(name, sizeof(name), "all_to_all_v %s scale %zu displs %s", tc_dtype_name(t), scale,
             gaps ? "gapped" : "NULL");
    salt = mix(salt + 1);
    size_t soff = 0, roff = 0;
    for (int q = 0; q < nranks; q++) {
        sc[q] = a2a_count(rank, q, scale);
        rc[q] = a2a_count(q, rank, scale);
        soff += gaps ? (size_t)(q % 3) : 0; /* different gaps on each side, in reverse order */
        sd[q] = soff;
        soff += sc[q];
    }
    for (int q = gaps ? nranks - 1 : 0; gaps ? q >= 0 : q < nranks; q += gaps ? -1 : 1) {
        roff += gaps ? (size_t)(q % 2) * 2 + 1 : 0; /* gapped: blocks in reverse rank order */
        rd[q] = roff;
        roff += rc[q];
    }
    unsigned char *s = buf_new(soff * es, 0), *r = buf_new(roff * es, FILL_BYTE);
    for (int q = 0; q < nranks; q++)
        for (size_t i = 0; i < sc[q]; i++)
            put_payload(s, sd[q] + i, es, payload(rank, q, i));
    tc_op_opts_t o = {sizeof(tc_op_opts_t), TIMEOUT_MS, NULL, 0};
    tc_status_t st = tc_all_to_all_v(comm, s, sc, gaps ? sd : NULL, r, rc, gaps ? rd : NULL, t,
                                     &o, NULL);
    checks++;
    if (st != TC_OK) {
        status_fail(name, st, tc_last_error());
    } else {
        tally_t w = {0, 0, NULL};
        unsigned char *covered = calloc(roff + 1, 1);
        for (int q = 0; q < nranks; q++)
            for (size_t i = 0; i < rc[q]; i++) {
                covered[rd[q] + i] = 1;
                tally(&w, has_payload(r, rd[q] + i, es, payload(q, rank, i)), rd[q] + i,
                      "block");
            }
        for (size_t i = 0; i < roff; i++)
            if (!covered[i])
                tally(&w, r[i * es] == FILL_BYTE, i, "gap (must not be written)");
        if (guard_broken(r, roff * es))
            tally(&w, 0, roff, "guard");
        if (w.wrong)
            FAIL("%s: %zu wrong elements, first at %zu (%s)", name, w.wrong, w.first, w.where);
        free(covered);
    }
    free(s);
    free(r);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
}

static void v_variants(tc_comm_t *comm)
{
    static const char *const ag[] = {"ring", "recursive_doubling", "bruck", "linear",
                                     "hierarchical", "auto"};
    static const char *const rs[] = {"ring", "pairwise", "linear", "hierarchical", "auto"};
    size_t scales[] = {1, 997};
    int64_t *tab = malloc(PERIOD * sizeof(int64_t));
    for (int si = 0; si < 2; si++)
        for (int gaps = 0; gaps < 2; gaps++)
            for (int ip = 0; ip < 2; ip++) {
                for (size_t a = 0; a < sizeof(ag) / sizeof(ag[0]); a++)
                    for (int t = 0; t < TC_DTYPE_COUNT; t++)
                        if (!quick || t % 3 == 0)
                            all_gather_v_case(comm, ag[a], (tc_dtype_t)t, scales[si], gaps, ip);
                for (size_t a = 0; a < sizeof(rs) / sizeof(rs[0]); a++) {
                    for (int t = 0; t < TC_DTYPE_COUNT; t++)
                        if (!quick || t % 3 == 0)
                            reduce_scatter_v_case(comm, rs[a], (tc_dtype_t)t, TC_SUM, scales[si],
                                                  gaps, ip, tab);
                    for (int op = 1; op < TC_REDOP_COUNT; op++) {
                        reduce_scatter_v_case(comm, rs[a], TC_INT32, (tc_redop_t)op, scales[si],
                                              gaps, ip, tab);
                        if (op < TC_BAND)
                            reduce_scatter_v_case(comm, rs[a], TC_FLOAT32, (tc_redop_t)op,
                                                  scales[si], gaps, ip, tab);
                    }
                }
            }
    for (int si = 0; si < 2; si++)
        for (int gaps = 0; gaps < 2; gaps++)
            for (int t = 0; t < TC_DTYPE_COUNT; t++)
                all_to_all_v_case(comm, (tc_dtype_t)t, scales[si], gaps);
    free(tab);
}

/* ------------------------------------------------------------------------ */
/* Point to point. */

static void check_payload(const unsigned char *b, size_t count, size_t es, int src, int dst,
                          const char *what)
{
    tally_t w = {0, 0, NULL};
    for (size_t i = 0; i < count; i++)
        tally(&w, has_payload(b, i, es, payload(src, dst, i)), i, "message");
    if (guard_broken(b, count * es))
        tally(&w, 0, count, "guard");
    checks++;
    if (w.wrong)
        FAIL("%s: %zu wrong elements from rank %d, first at %zu (%s)", what, w.wrong, src,
             w.first, w.where);
}

/* Ring: send to the next rank, receive from the previous. */
static void p2p_ring(tc_comm_t *comm, size_t count, tc_dtype_t t, int blocking)
{
    int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
    size_t es = tc_dtype_size(t);
    char what[96];
    snprintf(what, sizeof(what), "send/recv ring %s count %zu %s", tc_dtype_name(t), count,
             blocking ? "blocking (even ranks send first)" : "async send, blocking recv");
    salt = mix(salt + 1);
    unsigned char *s = buf_new(count * es, 0), *r = buf_new(count * es, FILL_BYTE);
    for (size_t i = 0; i < count; i++)
        put_payload(s, i, es, payload(rank, next, i));
    tc_op_opts_t o = {sizeof(tc_op_opts_t), TIMEOUT_MS, NULL, 0};
    tc_status_t st;
    if (blocking) {
        if (rank % 2 == 0) {
            if ((st = tc_send(comm, s, count, t, next, &o, NULL)) == TC_OK)
                st = tc_recv(comm, r, count, t, prev, &o, NULL);
        } else if ((st = tc_recv(comm, r, count, t, prev, &o, NULL)) == TC_OK) {
            st = tc_send(comm, s, count, t, next, &o, NULL);
        }
    } else {
        tc_op_opts_t oa = o;
        oa.async = 1;
        tc_work_t *w = NULL;
        st = tc_send(comm, s, count, t, next, &oa, &w);
        tc_status_t rst = st == TC_OK ? tc_recv(comm, r, count, t, prev, &o, NULL) : st;
        st = finish(st, w, what);
        if (st == TC_OK)
            st = rst;
    }
    if (st != TC_OK)
        status_fail(what, st, tc_last_error());
    else
        check_payload(r, count, es, prev, rank, what);
    free(s);
    free(r);
}

/* A batch: two messages to every rank (self included) and two from every
 * rank; they match in order, so the second message of each pair must land in
 * the second receive buffer. */
static void p2p_batch(tc_comm_t *comm, size_t scale, int async)
{
    size_t p = (size_t)nranks, es = 4;
    char what[96];
    snprintf(what, sizeof(what), "batch to/from every rank, scale %zu, %s", scale,
             async ? "async" : "blocking");
    salt = mix(salt + 1);
    unsigned char **sb = calloc(2 * p, sizeof(*sb)), **rb = calloc(2 * p, sizeof(*rb));
    tc_status_t st = tc_batch_begin(comm);
    for (int q = 0; q < nranks && st == TC_OK; q++)
        for (int k = 0; k < 2 && st == TC_OK; k++) {
            size_t sc = a2a_count(rank, q, scale) + (size_t)k * 3;
            size_t rc = a2a_count(q, rank, scale) + (size_t)k * 3;
            unsigned char *s = sb[2 * q + k] = buf_new(sc * es, 0);
            rb[2 * q + k] = buf_new(rc * es, FILL_BYTE);
            for (size_t i = 0; i < sc; i++)
                put_payload(s, i, es, payload(rank, q * 2 + k, i));
            if ((st = tc_send(comm, s, sc, TC_UINT32, q, NULL, NULL)) == TC_OK)
                st = tc_recv(comm, rb[2 * q + k], rc, TC_UINT32, q, NULL, NULL);
        }
    if (st == TC_OK) {
        tc_op_opts_t o = {sizeof(tc_op_opts_t), TIMEOUT_MS, NULL, async};
        tc_work_t *w = NULL;
        st = tc_batch_end(comm, &o, async ? &w : NULL);
        st = finish(st, w, what); /* after the call: it sets w */
    } else {
        tc_batch_end(comm, NULL, NULL);
    }
    if (st != TC_OK) {
        status_fail(what, st, tc_last_error());
    } else {
        for (int q = 0; q < nranks; q++)
            for (int k = 0; k < 2; k++) {
                size_t rc = a2a_count(q, rank, scale) + (size_t)k * 3;
                tally_t w = {0, 0, NULL};
                for (size_t i = 0; i < rc; i++)
                    tally(&w, has_payload(rb[2 * q + k], i, es, payload(q, rank * 2 + k, i)), i,
                          "message");
                if (guard_broken(rb[2 * q + k], rc * es))
                    tally(&w, 0, rc, "guard");
                checks++;
                if (w.wrong)
                    FAIL("%s: message %d from rank %d: %zu wrong, first at %zu (%s)", what, k, q,
                         w.wrong, w.first, w.where);
            }
    }
    for (size_t i = 0; i < 2 * p; i++) {
        free(sb[i]);
        free(rb[i]);
    }
    free(sb);
    free(rb);
}

static void point_to_point(tc_comm_t *comm)
{
    size_t counts[] = {0, 5, 100003};
    for (int c = 0; c < 3; c++) {
        p2p_ring(comm, counts[c], c == 1 ? TC_BFLOAT16 : TC_FLOAT64, 0);
        if (nranks > 1)
            p2p_ring(comm, counts[c], TC_INT8, 1);
    }
    p2p_batch(comm, 1, 0);
    p2p_batch(comm, 1, 1);
    p2p_batch(comm, 5000, 0);
}

/* ------------------------------------------------------------------------ */
/* Work objects: several operations in flight, test loops, persistent all_gather. */

/* All-reduce sum of int32 over @p comm (rank r's input by its rank in comm). */
static void fill_sum(int32_t *b, size_t count, int r)
{
    for (size_t i = 0; i < count; i++)
        b[i] = (int32_t)red_input(r, i, TC_INT32, TC_SUM);
}

static void check_sum(const int32_t *b, size_t count, int n, const char *what)
{
    int64_t *tab = malloc(PERIOD * sizeof(int64_t));
    red_table(TC_INT32, TC_SUM, n, tab);
    tally_t w = {0, 0, NULL};
    for (size_t i = 0; i < count; i++)
        tally(&w, b[i] == tab[i % PERIOD], i, "result");
    checks++;
    if (w.wrong)
        FAIL("%s: %zu wrong elements, first at %zu: %d, want %lld", what, w.wrong, w.first,
             b[w.first], (long long)tab[w.first % PERIOD]);
    free(tab);
}

static void async_works(tc_comm_t *comm)
{
    size_t ac = 1000, gc = 777, bc = 999, n = (size_t)nranks;
    int root = nranks - 1;
    salt = mix(salt + 1);
    int32_t *as = malloc(ac * 4), *ar = malloc(ac * 4);
    float *gs = malloc(gc * 4), *gr = malloc(gc * n * 4);
    int64_t *bb = malloc(bc * 8);
    fill_sum(as, ac, rank);
    for (size_t i = 0; i < gc; i++)
        gs[i] = (float)(rank * 1000 + (int)(i % 1000));
    for (size_t i = 0; i < bc; i++)
        bb[i] = rank == root ? (int64_t)payload(root, 0, i) : -1;
    tc_op_opts_t o = {sizeof(tc_op_opts_t), TIMEOUT_MS, NULL, 1};
    tc_work_t *w[3] = {NULL, NULL, NULL};
    const char *what[3] = {"async all_reduce", "async all_gather", "async broadcast"};
    tc_status_t st[3];
    st[0] = tc_all_reduce(comm, as, ar, ac, TC_INT32, TC_SUM, &o, &w[0]);
    st[1] = tc_all_gather(comm, gs, gr, gc, TC_FLOAT32, &o, &w[1]);
    st[2] = tc_broadcast(comm, bb, bc, TC_INT64, root, &o, &w[2]);
    for (int k = 2; k >= 0; k--) /* waited for in reverse order */
        if ((st[k] = finish(st[k], w[k], what[k])) != TC_OK)
            status_fail(what[k], st[k], tc_last_error());
    if (st[0] == TC_OK)
        check_sum(ar, ac, nranks, what[0]);
    if (st[1] == TC_OK) {
        size_t wrong = 0;
        for (size_t i = 0; i < gc * n; i++)
            wrong += gr[i] != (float)((int)(i / gc) * 1000 + (int)(i % gc % 1000));
        checks++;
        if (wrong)
            FAIL("%s: %zu wrong elements", what[1], wrong);
    }
    if (st[2] == TC_OK) {
        size_t wrong = 0;
        for (size_t i = 0; i < bc; i++)
            wrong += bb[i] != (int64_t)payload(root, 0, i);
        checks++;
        if (wrong)
            FAIL("%s: %zu wrong elements", what[2], wrong);
    }

    /* tc_work_test until done, bounded */
    size_t lc = 300000;
    int32_t *ls = malloc(lc * 4), *lr = malloc(lc * 4);
    fill_sum(ls, lc, rank);
    tc_work_t *lw = NULL;
    tc_status_t s = tc_all_reduce(comm, ls, lr, lc, TC_INT32, TC_SUM, &o, &lw);
    int done = 0;
    long polls = 0;
    double until = wall_s() + TIMEOUT_MS / 1000.0;
    while (s == TC_OK || s == TC_INPROGRESS) {
        s = tc_work_test(lw, &done);
        polls++;
        if (done || wall_s() > until)
            break;
        if (s != TC_INPROGRESS && s != TC_OK)
            break;
    }
    checks++;
    if (!done || s != TC_OK) {
        FAIL("tc_work_test loop: done %d after %ld polls: %s: %s", done, polls,
             tc_status_string(s), tc_last_error());
    } else {
        tc_work_state_t state;
        tc_status_t result;
        if (tc_work_status(lw, &state, &result) != TC_OK || state != TC_WORK_COMPLETED ||
            result != TC_OK)
            FAIL("tc_work_test loop: done, but status says state %d result %s", (int)state,
                 tc_status_string(result));
        check_sum(lr, lc, nranks, "tc_work_test loop all_reduce");
    }
    if (lw && tc_work_free(lw) != TC_OK)
        FAIL("tc_work_test loop: free: %s", tc_last_error());

    /* a blocking call with work_p gets a completed work object */
    tc_work_t *bw = NULL;
    tc_status_t bs = tc_all_reduce(comm, as, ar, ac, TC_INT32, TC_SUM, NULL, &bw);
    tc_work_state_t state = TC_WORK_FAILED;
    if (bs == TC_OK && bw)
        tc_work_status(bw, &state, NULL);
    checks++;
    if (bs != TC_OK || !bw || state != TC_WORK_COMPLETED)
        FAIL("blocking all_reduce with work_p: %s, work %p, state %d (want completed)",
             tc_status_string(bs), (void *)bw, (int)state);
    else
        check_sum(ar, ac, nranks, "blocking all_reduce with work_p");
    tc_work_free(bw);

    free(as), free(ar), free(gs), free(gr), free(bb), free(ls), free(lr);
}

static void persistent(tc_comm_t *comm, int in_place)
{
    size_t count = 1001, n = (size_t)nranks, es = 8;
    const char *what = in_place ? "persistent all_gather in place" : "persistent all_gather";
    unsigned char *s = buf_new(count * es, 0), *r = buf_new(count * n * es, FILL_BYTE);
    unsigned char *send = in_place ? r + (size_t)rank * count * es : s;
    tc_op_opts_t o = {sizeof(tc_op_opts_t), TIMEOUT_MS, NULL, 0};
    tc_work_t *w = NULL;
    tc_status_t st = tc_all_gather_init(comm, send, r, count, TC_UINT64, &o, &w);
    if (st != TC_OK) {
        status_fail(what, st, tc_last_error());
        goto out;
    }
    tc_work_state_t state;
    checks++;
    if (tc_work_status(w, &state, NULL) != TC_OK || state != TC_WORK_NOT_STARTED)
        FAIL("%s: before the first start, state %d (want not started)", what, (int)state);
    for (int k = 0; k < 3; k++) {
        salt = mix(salt + 1); /* new data every start */
        for (size_t i = 0; i < count; i++)
            put_payload(send, i, es, payload(rank, k, i));
        if ((st = tc_work_start(w)) != TC_OK || (st = tc_work_wait(w, TIMEOUT_MS)) != TC_OK) {
            status_fail(what, st, tc_last_error());
            break;
        }
        tally_t tw = {0, 0, NULL};
        for (size_t i = 0; i < count * n; i++)
            tally(&tw, has_payload(r, i, es, payload((int)(i / count), k, i % count)), i,
                  "result");
        if (guard_broken(r, count * n * es))
            tally(&tw, 0, count * n, "guard");
        checks++;
        if (tw.wrong)
            FAIL("%s: start %d: %zu wrong elements, first at %zu (%s)", what, k, tw.wrong,
                 tw.first, tw.where);
    }
    if ((st = tc_work_free(w)) != TC_OK)
        FAIL("%s: free: %s", what, tc_last_error());
out:
    free(s);
    free(r);
}

/* ------------------------------------------------------------------------ */
/* Communicators. */

/* Gather every member's world rank, in the new communicator's order. */
static void check_members(tc_comm_t *sub, const int *want, int n, const char *what)
{
    int sz = -1, rk = -1;
    tc_comm_size(sub, &sz);
    tc_comm_rank(sub, &rk);
    checks++;
    if (sz != n) {
        FAIL("%s: size %d, want %d", what, sz, n);
        return;
    }
    int32_t mine = rank, *all = calloc((size_t)n, sizeof(int32_t));
    tc_op_opts_t o = {sizeof(tc_op_opts_t), TIMEOUT_MS, NULL, 0};
    tc_status_t st = tc_all_gather(sub, &mine, all, 1, TC_INT32, &o, NULL);
    if (st != TC_OK) {
        status_fail(what, st, tc_last_error());
    } else {
        for (int i = 0; i < n; i++)
            if (all[i] != want[i]) {
                FAIL("%s: new rank %d is world rank %d, want %d", what, i, all[i], want[i]);
                break;
            }
        if (all[rk] != rank)
            FAIL("%s: my new rank %d holds world rank %d", what, rk, all[rk]);
    }
    free(all);
}

/* An async all_reduce on @p a and one on @p b, issued in an order that
 * depends on the rank, waited for together. */
static void concurrent_sums(tc_comm_t *a, tc_comm_t *b, const char *what)
{
    int ra, na, rb_, nb;
    tc_comm_rank(a, &ra), tc_comm_size(a, &na), tc_comm_rank(b, &rb_), tc_comm_size(b, &nb);
    size_t ca = 1001, cb = 4099 * 3 + 5;
    int32_t *as = malloc(ca * 4), *ar = malloc(ca * 4), *bs = malloc(cb * 4), *br = malloc(cb * 4);
    fill_sum(as, ca, ra);
    fill_sum(bs, cb, rb_);
    tc_op_opts_t o = {sizeof(tc_op_opts_t), TIMEOUT_MS, NULL, 1};
    tc_work_t *wa = NULL, *wb = NULL;
    tc_status_t sa, sb;
    if (rank % 2) {
        sa = tc_all_reduce(a, as, ar, ca, TC_INT32, TC_SUM, &o, &wa);
        sb = tc_all_reduce(b, bs, br, cb, TC_INT32, TC_SUM, &o, &wb);
    } else {
        sb = tc_all_reduce(b, bs, br, cb, TC_INT32, TC_SUM, &o, &wb);
        sa = tc_all_reduce(a, as, ar, ca, TC_INT32, TC_SUM, &o, &wa);
    }
    char wha[96], whb[96];
    snprintf(wha, sizeof(wha), "%s: first communicator", what);
    snprintf(whb, sizeof(whb), "%s: second communicator", what);
    if ((sa = finish(sa, wa, wha)) != TC_OK)
        status_fail(wha, sa, tc_last_error());
    else
        check_sum(ar, ca, na, wha);
    if ((sb = finish(sb, wb, whb)) != TC_OK)
        status_fail(whb, sb, tc_last_error());
    else
        check_sum(br, cb, nb, whb);
    free(as), free(ar), free(bs), free(br);
}

static void communicators(tc_comm_t *world)
{
    int *want = calloc((size_t)nranks, sizeof(int));
    tc_comm_opts_t co = TC_COMM_OPTS_INIT;
    co.timeout_ms = TIMEOUT_MS;

    /* split by parity, then both halves (and the world) busy at once */
    tc_comm_t *half = NULL;
    tc_status_t st = tc_comm_split(world, rank % 2, rank, &co, &half);
    checks++;
    if (st != TC_OK || !half) {
        status_fail("split by parity", st, tc_last_error());
    } else {
        int n = 0;
        for (int q = rank % 2; q < nranks; q += 2)
            want[n++] = q;
        check_members(half, want, n, "split by parity");
        concurrent_sums(half, world, "split by parity, with the world");
        /* the halves alone, each at its own pace: a broadcast from the half's last rank */
        int64_t v[3] = {rank, rank, rank};
        tc_op_opts_t o = {sizeof(tc_op_opts_t), TIMEOUT_MS, NULL, 0};
        if ((st = tc_broadcast(half, v, 3, TC_INT64, n - 1, &o, NULL)) != TC_OK)
            status_fail("broadcast on a half", st, tc_last_error());
        checks++;
        if (st == TC_OK && (v[0] != want[n - 1] || v[2] != want[n - 1]))
            FAIL("broadcast on a half: got %lld, want %d", (long long)v[0], want[n - 1]);
        tc_comm_destroy(half);
    }

    /* split_ranks with the ranks reversed */
    int *rev = calloc((size_t)nranks, sizeof(int));
    for (int i = 0; i < nranks; i++)
        rev[i] = want[i] = nranks - 1 - i;
    tc_comm_t *r = NULL;
    st = tc_comm_split_ranks(world, rev, nranks, &co, &r);
    checks++;
    if (st != TC_OK || !r) {
        status_fail("split_ranks reversed", st, tc_last_error());
    } else {
        int rr = -1;
        tc_comm_rank(r, &rr);
        if (rr != nranks - 1 - rank)
            FAIL("split_ranks reversed: rank %d, want %d", rr, nranks - 1 - rank);
        check_members(r, want, nranks, "split_ranks reversed");
        concurrent_sums(r, world, "split_ranks reversed, with the world");
        tc_comm_destroy(r);
    }

    /* split_ranks of the even ranks only: odd ranks get NULL */
    int ne = 0;
    for (int q = 0; q < nranks; q += 2)
        rev[ne] = want[ne] = q, ne++;
    tc_comm_t *ev = (tc_comm_t *)1;
    st = tc_comm_split_ranks(world, rev, ne, &co, &ev);
    checks++;
    if (st != TC_OK)
        status_fail("split_ranks of the even ranks", st, tc_last_error());
    else if (rank % 2 && ev != NULL)
        FAIL("split_ranks of the even ranks: odd rank got a communicator");
    else if (rank % 2 == 0 && !ev)
        FAIL("split_ranks of the even ranks: even rank got NULL");
    else if (ev) {
        check_members(ev, want, ne, "split_ranks of the even ranks");
        tc_comm_destroy(ev);
    }

    /* TC_SPLIT_NONE on rank 0 */
    tc_comm_t *none = (tc_comm_t *)1;
    st = tc_comm_split(world, rank == 0 ? TC_SPLIT_NONE : 7, 0, NULL, &none);
    checks++;
    if (st != TC_OK) {
        status_fail("split with TC_SPLIT_NONE on rank 0", st, tc_last_error());
    } else if ((rank == 0) != (none == NULL)) {
        FAIL("split with TC_SPLIT_NONE on rank 0: got %p", (void *)none);
    } else if (none) {
        for (int q = 1; q < nranks; q++)
            want[q - 1] = q;
        check_members(none, want, nranks - 1, "split without rank 0");
        tc_comm_destroy(none);
    }

    /* dup: independent of the world; used concurrently with it */
    tc_comm_t *d = NULL;
    st = tc_comm_dup(world, &co, &d);
    checks++;
    if (st != TC_OK || !d) {
        status_fail("dup", st, tc_last_error());
    } else {
        for (int q = 0; q < nranks; q++)
            want[q] = q;
        check_members(d, want, nranks, "dup");
        concurrent_sums(d, world, "dup, with the world");
        tc_comm_destroy(d);
    }
    free(rev);
    free(want);
}

/* ------------------------------------------------------------------------ */
/* Errors. */

static void expect(tc_status_t got, tc_status_t want, const char *what)
{
    checks++;
    if (got != want)
        FAIL("%s: got %s, want %s (%s)", what, tc_status_string(got), tc_status_string(want),
             tc_last_error());
    else if (want != TC_OK && tc_last_error()[0] == '\0')
        FAIL("%s: %s without a detail message", what, tc_status_string(got));
}

/* Calls rejected locally, before anything is sent (so every rank may make them). */
static void bad_arguments(tc_comm_t *comm)
{
    int32_t a[64] = {0}, b[64] = {0};
    size_t counts[1024], displs[1024];
    tc_op_opts_t async = {sizeof(tc_op_opts_t), TIMEOUT_MS, NULL, 1};
    tc_op_opts_t bad_algo = {sizeof(tc_op_opts_t), TIMEOUT_MS, "algo=no_such_algorithm", 0};
    tc_work_t *w = NULL;
    expect(tc_all_reduce(comm, a, b, 4, TC_INT32, TC_SUM, &async, NULL), TC_ERR_INVALID_ARG,
           "async without work_p");
    expect(tc_reduce(comm, a, b, 4, TC_INT32, TC_SUM, nranks, NULL, NULL), TC_ERR_INVALID_ARG,
           "reduce: root == size");
    expect(tc_broadcast(comm, a, 4, TC_INT32, -1, NULL, NULL), TC_ERR_INVALID_ARG,
           "broadcast: root -1");
    expect(tc_gather(comm, a, NULL, 4, TC_INT32, rank, NULL, NULL), TC_ERR_INVALID_ARG,
           "gather: NULL recvbuf at the root");
    expect(tc_reduce_scatter(comm, a, b, 4, TC_FLOAT32, TC_BAND, NULL, NULL), TC_ERR_UNSUPPORTED,
           "reduce_scatter: band on float32");
    expect(tc_all_gather(comm, a, b, 4, TC_INT32, &bad_algo, NULL), TC_ERR_NOT_FOUND,
           "all_gather: unknown algorithm");
    for (int q = 0; q < nranks && q < 1024; q++)
        counts[q] = 1, displs[q] = (size_t)q;
    expect(tc_all_gather_v(comm, a, 2, b, counts, displs, TC_INT32, NULL, NULL),
           TC_ERR_INVALID_ARG, "all_gather_v: sendcount != recvcounts[rank]");
    expect(tc_all_gather_v(comm, a, 1, b, NULL, NULL, TC_INT32, NULL, NULL), TC_ERR_INVALID_ARG,
           "all_gather_v: NULL recvcounts");
    expect(tc_all_to_all_v(comm, a, counts, NULL, a, counts, NULL, TC_INT32, NULL, NULL),
           TC_ERR_INVALID_ARG, "all_to_all_v in place");
    expect(tc_all_gather_init(comm, a, b, 1, TC_INT32, NULL, NULL), TC_ERR_INVALID_ARG,
           "all_gather_init without work_p");
    expect(tc_batch_begin(comm), TC_OK, "batch_begin");
    expect(tc_all_reduce(comm, a, b, 4, TC_INT32, TC_SUM, NULL, NULL), TC_ERR_INVALID_STATE,
           "all_reduce inside a batch");
    expect(tc_batch_begin(comm), TC_ERR_INVALID_STATE, "batch_begin inside a batch");
    expect(tc_send(comm, a, 1, TC_INT32, 0, &async, &w), TC_ERR_INVALID_ARG,
           "send with opts inside a batch");
    expect(tc_batch_end(comm, NULL, NULL), TC_OK, "empty batch_end");
    expect(tc_batch_end(comm, NULL, NULL), TC_ERR_INVALID_STATE, "batch_end without begin");
    expect(tc_send(comm, a, 1, TC_INT32, nranks, NULL, NULL), TC_ERR_INVALID_ARG,
           "send to rank == size");
    expect(tc_recv(comm, NULL, 1, TC_INT32, 0, NULL, NULL), TC_ERR_INVALID_ARG,
           "recv into NULL");
    int dup_list[2] = {0, 0};
    tc_comm_t *nc = NULL;
    expect(tc_comm_split_ranks(comm, dup_list, 2, NULL, &nc), TC_ERR_INVALID_ARG,
           "split_ranks with a repeated rank");
    expect(tc_comm_split_ranks(comm, dup_list, 0, NULL, &nc), TC_ERR_INVALID_ARG,
           "split_ranks with an empty list");
    dup_list[0] = nranks;
    expect(tc_comm_split_ranks(comm, dup_list, 1, NULL, &nc), TC_ERR_INVALID_ARG,
           "split_ranks with an out-of-range rank");
    /* a completed, non-persistent work cannot be started; waiting again returns its result */
    if (tc_all_reduce(comm, a, b, 4, TC_INT32, TC_SUM, NULL, &w) == TC_OK && w) {
        expect(tc_work_start(w), TC_ERR_INVALID_STATE, "start of a non-persistent work");
        expect(tc_work_wait(w, 0), TC_OK, "second wait on a completed work");
        tc_work_free(w);
    } else {
        FAIL("all_reduce with work_p: %s", tc_last_error());
    }
    w = NULL;
    if (tc_all_gather_init(comm, a, b, 1, TC_INT32, NULL, &w) == TC_OK) {
        expect(tc_work_wait(w, 0), TC_ERR_INVALID_STATE, "wait on a never-started persistent");
        tc_work_free(w);
    } else {
        FAIL("all_gather_init: %s", tc_last_error());
    }
}

/* TC_CHECK=1: the last rank calls all_reduce with a different count, then a
 * broadcast with a different root: every rank gets TC_ERR_MISMATCH naming it;
 * the communicator then still works. */
static void mismatch(tc_comm_t *comm)
{
    const char *env = getenv("TC_CHECK");
    if (!env || strcmp(env, "1") != 0 || nranks < 2)
        return;
    int32_t a[16], b[16];
    char name[32];
    snprintf(name, sizeof(name), "rank %d", nranks - 1);
    tc_op_opts_t o = {sizeof(tc_op_opts_t), TIMEOUT_MS, NULL, 0};
    int odd = rank == nranks - 1;
    fill_sum(a, 16, rank);
    tc_status_t st = tc_all_reduce(comm, a, b, odd ? 9 : 8, TC_INT32, TC_SUM, &o, NULL);
    checks++;
    if (st != TC_ERR_MISMATCH || !strstr(tc_last_error(), name))
        FAIL("TC_CHECK all_reduce count mismatch: %s (%s); want TC_ERR_MISMATCH naming %s",
             tc_status_string(st), tc_last_error(), name);
    st = tc_broadcast(comm, a, 4, TC_INT32, odd ? 0 : nranks - 1, &o, NULL);
    checks++;
    if (st != TC_ERR_MISMATCH || !strstr(tc_last_error(), name))
        FAIL("TC_CHECK broadcast root mismatch: %s (%s); want TC_ERR_MISMATCH naming %s",
             tc_status_string(st), tc_last_error(), name);
    st = tc_all_reduce(comm, a, b, 16, TC_INT32, TC_SUM, &o, NULL);
    if (st != TC_OK)
        status_fail("all_reduce after the mismatches", st, tc_last_error());
    else
        check_sum(b, 16, nranks, "all_reduce after the mismatches");
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else if (strcmp(argv[i], "--skip") == 0 && i + 1 < argc && nskips < 32) {
            skips[nskips++] = argv[++i];
        } else {
            fprintf(stderr, "usage: coll_test [--quick] [--skip PART]...\n");
            return 2;
        }
    }
    tc_comm_t *comm;
    tc_comm_opts_t co = TC_COMM_OPTS_INIT;
    co.timeout_ms = TIMEOUT_MS;
    tc_status_t st = tc_comm_create(&co, &comm);
    if (st != TC_OK) {
        fprintf(stderr, "tc_comm_create: %s: %s\n", tc_status_string(st), tc_last_error());
        return 2;
    }
    tc_comm_rank(comm, &rank);
    tc_comm_size(comm, &nranks);
    salt = 0x5eed;

    double t0 = wall_s();
    mismatch(comm);
    if (!skipped("errors"))
        bad_arguments(comm);
    matrix(comm);
    double t1 = wall_s();
    if (!skipped("v"))
        v_variants(comm);
    if (!skipped("p2p"))
        point_to_point(comm);
    if (!skipped("work")) {
        async_works(comm);
        persistent(comm, 0);
        persistent(comm, 1);
    }
    if (!skipped("comm"))
        communicators(comm);
    mismatch(comm);
    if (rank == 0) {
        printf("coll_test: %d ranks%s, matrix %.1f s, the rest %.1f s\n", nranks,
               quick ? " (quick)" : "", t1 - t0, wall_s() - t1);
    }
    report_refusals();
    fflush(stdout);
    printf("rank %d of %d: %d checks, %d failures (%d cases refused)\n", rank, nranks, checks,
           failures, refused_total);
    fflush(stdout);
    tc_barrier(comm, NULL, NULL); /* a launcher stops every rank when one fails: print first */
    tc_comm_destroy(comm);
    return failures ? 1 : 0;
}
