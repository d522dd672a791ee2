/* Multi-process test of every collective of the public API, run under every
 * launcher (tests/integration/run_launchers.sh).
 *
 *   coll_test [--quick] [--skip NAME]...
 *
 * --skip leaves out a part while a known bug is being fixed: a collective's
 * matrix (all_reduce), one algorithm's (reduce/linear), or v, p2p, any, work,
 * comm, errors.
 *
 * Every collective x data type x op x size class x algorithm (every name the
 * algorithm layer registers, plus the cost model's choice), in place and out
 * of place, blocking and asynchronous; then the v-variants with uneven and
 * zero counts and gapped displacements, send/recv and batches, receives from
 * any source, asynchronous and persistent work objects, split/split_ranks/dup
 * with concurrent operations on several communicators, argument errors, and
 * (when the runner sets TC_CHECK=1) a mismatched call that every rank must see as
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

#include "tests/integration/coll_test.h"

int rank, nranks, failures, checks, status_errors, quick;
static const char *skips[32];
static int nskips;
uint64_t salt;

/* ------------------------------------------------------------------------ */
/* Collectives and the algorithm names registered for them (the TC_ALGO_DEFINE lines of
 * algo/src/; docs/algorithms/). */

enum {
    C_ALL_REDUCE,
    C_REDUCE,
    C_BROADCAST,
    C_ALL_GATHER,
    C_REDUCE_SCATTER,
    C_ALL_TO_ALL,
    C_GATHER,
    C_SCATTER,
    C_BARRIER,
    C_COUNT
};

typedef struct {
    const char *name;
    int reduces, rooted, multiplied; /* multiplied: a buffer of size * count elements */
    const char *algos[8];            /* NULL-terminated; "auto" = the cost model chooses */
} coll_t;

static const coll_t colls[C_COUNT] = {
    {"all_reduce",
     1,
     0,
     0,
     {"ring", "recursive_doubling", "rabenseifner", "binary_tree", "double_binary_tree",
      "hierarchical", "auto", NULL}},
    {"reduce",
     1,
     1,
     0,
     {"binomial_tree", "linear", "binary_tree", "double_binary_tree", "hierarchical", "auto",
      NULL}},
    {"broadcast",
     0,
     1,
     0,
     {"binomial_tree", "linear", "binary_tree", "double_binary_tree", "hierarchical", "auto",
      NULL}},
    {"all_gather",
     0,
     0,
     1,
     {"ring", "recursive_doubling", "bruck", "linear", "hierarchical", "auto", NULL}},
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
int refused(const char *coll, const char *algo, tc_status_t st, const char *example)
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
    case C_ALL_REDUCE:
    case C_REDUCE:
        sn = rn = cnt;
        break;
    case C_BROADCAST:
        rn = cnt;
        break;
    case C_ALL_GATHER:
    case C_GATHER:
        sn = cnt, rn = big;
        break;
    case C_REDUCE_SCATTER:
        sn = big, rn = c->in_place ? big : cnt;
        break;
    case C_ALL_TO_ALL:
        sn = rn = big;
        break;
    case C_SCATTER:
        sn = big, rn = cnt;
        break;
    default:
        break;
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
        unsigned char *mine =
            c->in_place && (c->coll == C_ALL_GATHER || is_root) ? r + me * cnt * es : s;
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
    case C_ALL_REDUCE:
        st = tc_all_reduce(comm, src, r, cnt, t, op, &o, wp);
        break;
    case C_REDUCE:
        st = tc_reduce(comm, src, r, cnt, t, op, root, &o, wp);
        break;
    case C_BROADCAST:
        st = tc_broadcast(comm, r, cnt, t, root, &o, wp);
        break;
    case C_ALL_GATHER:
        st = tc_all_gather(comm, c->in_place ? r + me * cnt * es : s, r, cnt, t, &o, wp);
        break;
    case C_REDUCE_SCATTER:
        /* in place: tcomms' form (recvbuf == sendbuf) or, for odd counts, NCCL's (recvbuf at
         * this rank's block of sendbuf), refused as an overlap on every rank but 0 before */
        st = tc_reduce_scatter(comm, src, c->in_place && cnt % 2 ? r + me * cnt * es : r, cnt, t,
                               op, &o, wp);
        break;
    case C_ALL_TO_ALL:
        st = tc_all_to_all(comm, src, r, cnt, t, &o, wp);
        break;
    case C_GATHER:
        /* in place at the root; other ranks pass no receive buffer in the in-place variant */
        st = tc_gather(comm, c->in_place && is_root ? r + me * cnt * es : s,
                       c->in_place && !is_root ? NULL : r, cnt, t, root, &o, wp);
        break;
    case C_SCATTER:
        st = tc_scatter(comm, c->in_place && !is_root ? NULL : s,
                        c->in_place && is_root ? s + me * cnt * es : r, cnt, t, root, &o, wp);
        break;
    default:
        break;
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
            tally(&w, red_matches(r, off + i, t, op, tab[(me * cnt + i) % PERIOD], nranks), off + i,
                  "result");
        break;
    }
    case C_ALL_TO_ALL:
        for (size_t i = 0; i < big; i++)
            tally(&w, has_payload(r, i, es, payload((int)(i / cnt), rank, i % cnt)), i, "result");
        break;
    case C_GATHER:
        for (size_t i = 0; i < rn; i++) {
            if (is_root)
                tally(&w, has_payload(r, i, es, payload((int)(i / cnt), 0, i % cnt)), i, "result");
            else
                tally(&w, r[i * es] == FILL_BYTE, i, "non-root recvbuf (must not be written)");
        }
        break;
    case C_SCATTER: {
        const unsigned char *got = c->in_place && is_root ? s + me * cnt * es : r;
        for (size_t i = 0; i < cnt; i++)
            tally(&w, has_payload(got, i, es, payload(root, rank, i)), i, "result");
        /* the root's input is const, in place too (the small path wrote block 0 there) */
        for (size_t d = 0; is_root && d < n; d++)
            for (size_t i = 0; i < cnt; i++)
                tally(&w, has_payload(s, d * cnt + i, es, payload(root, (int)d, i)), d * cnt + i,
                      "root's sendbuf (must not be written)");
        break;
    }
    default:
        break;
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
double wall_s(void)
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
                            case_t c = {ci,
                                        cl->algos[a],
                                        (tc_dtype_t)t,
                                        (tc_redop_t)op,
                                        cnt,
                                        ip,
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

/* Every named algorithm the matrix ran has its statistics entry, with operations counted (the
 * matrix runs more than 40 collective and algorithm pairs: entries past the 32nd were once
 * dropped without a word). */
static void matrix_stats(tc_comm_t *comm)
{
    enum { CAP = 256 };
    static tc_comm_stat_t stats[CAP];
    int n = 0;
    tc_status_t st = tc_comm_stats(comm, stats, CAP, &n);
    if (st != TC_OK || n > CAP) {
        FAIL("tc_comm_stats: %s, %d entries", tc_status_string(st), n);
        return;
    }
    for (int i = 0; i < nrefusals; i++) {
        const refusal_t *r = &refusals[i];
        const char *slash = strchr(r->what, '/');
        if (!r->ran || !slash || strcmp(slash + 1, "auto") == 0)
            continue;
        int len = (int)(slash - r->what), found = 0;
        for (int e = 0; e < n && !found; e++)
            found = (int)strlen(stats[e].coll) == len &&
                    strncmp(stats[e].coll, r->what, (size_t)len) == 0 &&
                    strcmp(stats[e].algo, slash + 1) == 0 && stats[e].ops > 0;
        checks++;
        if (!found)
            FAIL("statistics: no operations of %s (it ran %d cases; %d entries)", r->what, r->ran,
                 n);
    }
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
    matrix_stats(comm);
    double t1 = wall_s();
    if (!skipped("v"))
        v_variants(comm);
    if (!skipped("p2p"))
        point_to_point(comm);
    if (!skipped("any"))
        any_source(comm);
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
