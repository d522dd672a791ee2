/* tcperf: collective benchmark in the format of nccl-tests.
 *
 *   tcperf [--coll NAME] [-b minbytes] [-e maxbytes] [-f factor | -i step] [-n iters]
 *          [-w warmup] [-c 0|1] [-d type] [-o op] [-a algo] [-r root] [-z 0|1]
 *          [-B burst] [--win allocate|create] [--threads T]
 *
 * NAME: all_reduce (default), reduce, broadcast, all_gather, reduce_scatter,
 * all_to_all, gather, scatter, barrier, or all (each in turn); or a one-sided
 * window operation, put, get or put_signal (rma.c: rank 0 into rank 1's
 * window; latency of one operation + flush, and bandwidth of -B operations
 * back to back + one flush; --win create: tc_win_create over malloc'd memory
 * instead of tc_win_allocate). --threads T (threads.c): T threads of each rank
 * run all-reduces at once, each on its own communicator; the table gives a
 * thread's latency and the aggregate rate. Sizes are total
 * bytes as nccl-tests counts them: the vector for all_reduce, reduce and
 * broadcast; the gathered buffer for all_gather and gather; the input for
 * reduce_scatter and scatter; everything sent for all_to_all. busbw uses
 * nccl-tests' factors. -z 1 issues every operation asynchronously and waits
 * for its work object.
 *
 * Run one process per rank under a launcher (tcrun -n 4 tcperf ...). Rank 0
 * prints the table; with -c 1 every element of every rank's result is checked
 * against an independently computed reference and #wrong is summed over ranks.
 * Exit status: 0 when every check passed, 1 on wrong results, 2 on errors (an
 * operation the library refuses, e.g. an algorithm that does not apply, is
 * reported on its row and the run goes on). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pattern.h"
#include "rma.h"
#include "threads.h"
#include "tcomms/base/config.h"
#include "tcomms/base/time.h"
#include "tcomms/tcomms.h"

typedef enum {
    ALL_REDUCE, REDUCE, BROADCAST, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL, GATHER, SCATTER,
    BARRIER, NCOLLS
} coll_id_t;

typedef struct {
    const char *name;
    int reduces, rooted;
    int per_rank; /* the size counts size blocks of `count` elements (count = size / nranks) */
} coll_t;

static const coll_t colls[NCOLLS] = {
    {"all_reduce", 1, 0, 0}, {"reduce", 1, 1, 0},     {"broadcast", 0, 1, 0},
    {"all_gather", 0, 0, 1}, {"reduce_scatter", 1, 0, 1}, {"all_to_all", 0, 0, 1},
    {"gather", 0, 1, 1},     {"scatter", 0, 1, 1},    {"barrier", 0, 0, 0},
};

/* nccl-tests' bus bandwidth factors (doc/PERFORMANCE.md there). */
static double bus_factor(coll_id_t c, int n)
{
    switch (c) {
    case ALL_REDUCE: return n > 1 ? 2.0 * (n - 1) / n : 0.0;
    case REDUCE:
    case BROADCAST: return 1.0;
    case BARRIER: return 0.0;
    default: return (double)(n - 1) / n; /* all_gather, reduce_scatter, all_to_all, (s)gather */
    }
}

typedef struct {
    uint64_t min_bytes, max_bytes, step_bytes;
    int factor, iters, warmup, check, root, async;
    int coll; /* a coll_id_t, or NCOLLS for all */
    int rma;  /* 1 + a tcperf_rma_op_t for put, get, put_signal; 0 for collectives */
    int burst, win_create;
    int threads; /* --threads: 0, or threads each on its own communicator (threads.c) */
    tc_dtype_t dtype;
    tc_redop_t op;
    const char *algo;
} opts_t;

typedef struct {
    tc_comm_t *comm;
    int rank, size;
    opts_t o;
    tc_op_opts_t op_opts;
    char hints[128];
    unsigned char *sbuf, *rbuf;
    uint64_t seq; /* checked operations so far: their data all differ */
} perf_t;

static int fail(const char *what, tc_status_t st)
{
    fprintf(stderr, "tcperf: %s: %s: %s\n", what, tc_status_string(st), tc_last_error());
    return 2;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: tcperf [--coll NAME] [-b minbytes] [-e maxbytes] [-f factor | -i step]\n"
               "              [-n iters] [-w warmup] [-c 0|1] [-d type] [-o op] [-a algo]\n"
               "              [-r root] [-z 0|1] [-B burst] [--win allocate|create]\n"
               "              [--threads T]\n"
               "NAME: all_reduce (default), reduce, broadcast, all_gather, reduce_scatter,\n"
               "      all_to_all, gather, scatter, barrier, all; one-sided (rank 0 into\n"
               "      rank 1's window): put, get, put_signal\n"
               "sizes (total bytes) take K, M, G suffixes; run under a launcher:\n"
               "  tcrun -n 4 tcperf -b 8 -e 64M\n");
}

static int parse_coll(const char *name, int *coll_p, int *rma_p)
{
    static const char *rma_names[] = {"put", "get", "put_signal"};
    *rma_p = 0;
    for (int k = 0; k < 3; k++)
        if (strcmp(name, rma_names[k]) == 0) {
            *rma_p = 1 + k;
            return 0;
        }
    if (strcmp(name, "all") == 0) {
        *coll_p = NCOLLS;
        return 0;
    }
    for (int c = 0; c < NCOLLS; c++)
        if (strcmp(name, colls[c].name) == 0) {
            *coll_p = c;
            return 0;
        }
    fprintf(stderr, "tcperf: --coll %s: not a collective (all_reduce, reduce, broadcast, "
                    "all_gather, reduce_scatter, all_to_all, gather, scatter, barrier, all, "
                    "put, get, put_signal)\n",
            name);
    return 2;
}

static int parse_args(int argc, char **argv, opts_t *o)
{
    *o = (opts_t){8,  64ull << 20, 0, 2, 20, 5, 1, 0, 0, ALL_REDUCE, 0, 16, 0, 0, TC_FLOAT32,
                  TC_SUM, NULL};
    static const struct option longopts[] = {{"coll", required_argument, NULL, 'C'},
                                             {"win", required_argument, NULL, 'W'},
                                             {"threads", required_argument, NULL, 'T'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    int c, steps = 0; /* -f and -i given */
    int64_t v;
    tc_status_t st = TC_OK;
    while ((c = getopt_long(argc, argv, "b:e:f:i:n:w:c:d:o:a:r:z:B:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'C':
            if (parse_coll(optarg, &o->coll, &o->rma))
                return 2;
            break;
        case 'W':
            if (strcmp(optarg, "allocate") != 0 && strcmp(optarg, "create") != 0) {
                fprintf(stderr, "tcperf: --win %s: allocate or create\n", optarg);
                return 2;
            }
            o->win_create = strcmp(optarg, "create") == 0;
            break;
        case 'B': st = tc_parse_int("-B", optarg, 1, 4096, &v); o->burst = (int)v; break;
        case 'T': st = tc_parse_int("--threads", optarg, 1, 64, &v); o->threads = (int)v; break;
        case 'b': st = tc_parse_size("-b", optarg, &o->min_bytes); break;
        case 'e': st = tc_parse_size("-e", optarg, &o->max_bytes); break;
        case 'i':
            st = tc_parse_size("-i", optarg, &o->step_bytes);
            o->factor = 0;
            steps |= 2;
            break;
        case 'f':
            st = tc_parse_int("-f", optarg, 2, 1024, &v);
            o->factor = (int)v;
            o->step_bytes = 0;
            steps |= 1;
            break;
        case 'n': st = tc_parse_int("-n", optarg, 1, 1000000, &v); o->iters = (int)v; break;
        case 'w': st = tc_parse_int("-w", optarg, 0, 1000000, &v); o->warmup = (int)v; break;
        case 'c': st = tc_parse_int("-c", optarg, 0, 1, &v); o->check = (int)v; break;
        case 'r': st = tc_parse_int("-r", optarg, 0, 1 << 30, &v); o->root = (int)v; break;
        case 'z': st = tc_parse_int("-z", optarg, 0, 1, &v); o->async = (int)v; break;
        case 'd': st = tc_dtype_parse(optarg, &o->dtype); break;
        case 'o': st = tc_redop_parse(optarg, &o->op); break;
        case 'a': o->algo = optarg; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return 2;
        }
        if (st != TC_OK) {
            fprintf(stderr, "tcperf: %s\n", tc_last_error());
            return 2;
        }
    }
    const char *why = optind != argc                ? "an argument that is not an option"
                      : o->min_bytes > o->max_bytes ? "-b is larger than -e"
                      : steps == 3 ? "-f and -i both given: sizes grow by a factor or by a step"
                      : o->factor == 0 && !o->step_bytes ? "-i 0: the step must be at least 1 byte"
                                                         : NULL;
    if (why) {
        fprintf(stderr, "tcperf: %s%s%s\n", why, optind != argc ? ": " : "",
                optind != argc ? argv[optind] : "");
        usage(stderr);
        return 2;
    }
    size_t esz = tc_dtype_size(o->dtype);
    if (!o->rma && o->min_bytes == o->max_bytes && o->min_bytes > 0 && o->min_bytes < esz) {
        fprintf(stderr, "tcperf: -b %zu -e %zu: not one whole %s (%zu bytes)\n",
                (size_t)o->min_bytes, (size_t)o->max_bytes, tc_dtype_name(o->dtype), esz);
        return 2;
    }
    if (o->threads && (o->rma || o->coll != ALL_REDUCE || o->algo)) {
        fprintf(stderr, "tcperf: --threads runs all_reduce only, without -a\n");
        return 2;
    }
    if (!o->rma && (o->coll == NCOLLS || colls[o->coll].reduces) &&
        !tc_redop_valid_for(o->op, o->dtype)) {
        fprintf(stderr, "tcperf: -o %s does not apply to -d %s\n", tc_redop_name(o->op),
                tc_dtype_name(o->dtype));
        return 2;
    }
    return 0;
}

/* Elements of the `count` argument for a total of @p bytes. */
static size_t count_of(const perf_t *p, coll_id_t c, uint64_t bytes)
{
    size_t elems = bytes / tc_dtype_size(p->o.dtype);
    return colls[c].per_rank ? elems / (size_t)p->size : elems;
}

/* Total elements the row stands for (nccl-tests' count column). */
static size_t total_of(const perf_t *p, coll_id_t c, size_t count)
{
    return colls[c].per_rank ? count * (size_t)p->size : count;
}

/* Issue one operation (blocking, or async and waited for with -z 1). */
static tc_status_t run_op(perf_t *p, coll_id_t c, size_t count, int in_place)
{
    const size_t es = tc_dtype_size(p->o.dtype), blk = count * es;
    unsigned char *s = p->sbuf, *r = p->rbuf;
    const int me = p->rank, root = p->o.root;
    const tc_dtype_t t = p->o.dtype;
    const tc_redop_t op = p->o.op;
    const tc_op_opts_t *o = &p->op_opts;
    tc_work_t *w = NULL, **wp = p->o.async ? &w : NULL;
    tc_status_t st = TC_OK;
    switch (c) {
    case ALL_REDUCE: st = tc_all_reduce(p->comm, in_place ? r : s, r, count, t, op, o, wp); break;
    case REDUCE:
        st = tc_reduce(p->comm, in_place ? r : s, r, count, t, op, root, o, wp);
        break;
    case BROADCAST: st = tc_broadcast(p->comm, r, count, t, root, o, wp); break;
    case ALL_GATHER:
        st = tc_all_gather(p->comm, in_place ? r + (size_t)me * blk : s, r, count, t, o, wp);
        break;
    case REDUCE_SCATTER:
        st = tc_reduce_scatter(p->comm, in_place ? r : s, r, count, t, op, o, wp);
        break;
    case ALL_TO_ALL: st = tc_all_to_all(p->comm, in_place ? r : s, r, count, t, o, wp); break;
    case GATHER:
        st = tc_gather(p->comm, in_place && me == root ? r + (size_t)me * blk : s, r, count, t,
                       root, o, wp);
        break;
    case SCATTER:
        st = tc_scatter(p->comm, s, in_place && me == root ? s + (size_t)me * blk : r, count, t,
                        root, o, wp);
        break;
    case BARRIER: st = tc_barrier(p->comm, o, wp); break;
    default: break;
    }
    if (w) {
        if (st == TC_OK)
            st = tc_work_wait(w, -1);
        tc_status_t fst = tc_work_free(w);
        if (st == TC_OK)
            st = fst;
    }
    return st;
}

static tc_status_t reduce_double(perf_t *p, double *v, tc_redop_t op)
{
    return tc_all_reduce(p->comm, v, v, 1, TC_FLOAT64, op, NULL, NULL);
}

/* One timed measurement: average microseconds per operation, max over ranks. */
static tc_status_t time_op(perf_t *p, coll_id_t c, size_t count, int in_place, double *us_p)
{
    tc_status_t st;
    for (int i = 0; i < p->o.warmup; i++)
        if ((st = run_op(p, c, count, in_place)) != TC_OK)
            return st;
    double sync = 0; /* align the ranks' start */
    if ((st = reduce_double(p, &sync, TC_SUM)) != TC_OK)
        return st;
    double t0 = tc_time_s();
    for (int i = 0; i < p->o.iters; i++)
        if ((st = run_op(p, c, count, in_place)) != TC_OK)
            return st;
    double us = (tc_time_s() - t0) * 1e6 / p->o.iters;
    if ((st = reduce_double(p, &us, TC_MAX)) != TC_OK)
        return st;
    *us_p = us;
    return TC_OK;
}

/* Write this rank's inputs for one checked operation (receive buffers get a
 * pattern no result has). */
static void fill_inputs(perf_t *p, coll_id_t c, size_t count, int in_place)
{
    const size_t es = tc_dtype_size(p->o.dtype), blk = count * es, n = (size_t)p->size;
    const int me = p->rank, root = p->o.root;
    unsigned char *s = p->sbuf, *r = p->rbuf;
    memset(r, 0xa5, total_of(p, c, count) * es); /* what any collective receives */
    switch (c) {
    case ALL_REDUCE:
    case REDUCE: tcperf_fill(in_place ? r : s, count, p->o.dtype, p->o.op, me, 0); break;
    case REDUCE_SCATTER:
        tcperf_fill(in_place ? r : s, count * n, p->o.dtype, p->o.op, me, 0);
        break;
    case BROADCAST:
        if (me == root)
            tcperf_fill_block(r, count, es, root, 0, p->seq);
        break;
    case ALL_GATHER:
    case GATHER:
        tcperf_fill_block(in_place && (c == ALL_GATHER || me == root) ? r + (size_t)me * blk : s,
                          count, es, me, 0, p->seq);
        break;
    case ALL_TO_ALL:
        for (size_t d = 0; d < n; d++)
            tcperf_fill_block((in_place ? r : s) + d * blk, count, es, me, (int)d, p->seq);
        break;
    case SCATTER:
        if (me == root)
            for (size_t d = 0; d < n; d++)
                tcperf_fill_block(s + d * blk, count, es, root, (int)d, p->seq);
        break;
    default: break;
    }
}

/* Wrong elements of this rank's result. */
static size_t count_wrong(perf_t *p, coll_id_t c, size_t count, int in_place)
{
    const size_t es = tc_dtype_size(p->o.dtype), blk = count * es, n = (size_t)p->size;
    const int me = p->rank, root = p->o.root;
    const unsigned char *s = p->sbuf, *r = p->rbuf;
    size_t wrong = 0;
    switch (c) {
    case ALL_REDUCE: return tcperf_check(r, count, p->o.dtype, p->o.op, p->size, 0);
    case REDUCE:
        return me == root ? tcperf_check(r, count, p->o.dtype, p->o.op, p->size, 0) : 0;
    case REDUCE_SCATTER:
        return tcperf_check(r + (in_place ? (size_t)me * blk : 0), count, p->o.dtype, p->o.op,
                            p->size, (size_t)me * count);
    case BROADCAST: return tcperf_check_block(r, count, es, root, 0, p->seq);
    case ALL_GATHER:
    case GATHER:
        if (c == GATHER && me != root)
            return 0;
        for (size_t q = 0; q < n; q++)
            wrong += tcperf_check_block(r + q * blk, count, es, (int)q, 0, p->seq);
        return wrong;
    case ALL_TO_ALL:
        for (size_t q = 0; q < n; q++)
            wrong += tcperf_check_block(r + q * blk, count, es, (int)q, me, p->seq);
        return wrong;
    case SCATTER:
        return tcperf_check_block(in_place && me == root ? s + (size_t)me * blk : r, count, es,
                                  root, me, p->seq);
    default: return 0;
    }
}

/* One checked operation; the number of wrong elements over all ranks. */
static tc_status_t check_op(perf_t *p, coll_id_t c, size_t count, int in_place, double *wrong_p)
{
    p->seq++;
    fill_inputs(p, c, count, in_place);
    tc_status_t st = run_op(p, c, count, in_place);
    if (st != TC_OK)
        return st;
    double wrong = (double)count_wrong(p, c, count, in_place);
    if ((st = reduce_double(p, &wrong, TC_SUM)) != TC_OK)
        return st;
    *wrong_p = wrong;
    return TC_OK;
}

static void print_header(const perf_t *p, coll_id_t c)
{
    char host[64] = "";
    gethostname(host, sizeof(host) - 1);
    printf("# tcperf %s: %d ranks, minBytes %llu maxBytes %llu step: %llu(%s) warmup iters: %d "
           "iters: %d agg iters: 1 validation: %d blocking: %d\n", colls[c].name, p->size,
           (unsigned long long)p->o.min_bytes, (unsigned long long)p->o.max_bytes,
           (unsigned long long)(p->o.factor ? (uint64_t)p->o.factor : p->o.step_bytes),
           p->o.factor ? "factor" : "bytes", p->o.warmup, p->o.iters, p->o.check, !p->o.async);
    printf("#\n# Using devices\n#  Rank %3d Pid %7d on %10s device -1 [cpu]%s\n#\n", p->rank,
           (int)getpid(), host, p->size > 1 ? " (rank 0 shown)" : "");
    printf("# %10s  %12s  %8s  %6s  %6s  %33s  %33s\n", "", "", "", "", "", "out-of-place",
           "in-place");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count",
           "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
           "#wrong");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)",
           "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)",
           "");
    fflush(stdout);
}

/* One half of a row: time, algbw, busbw, #wrong; or why it did not run. */
typedef struct {
    double us, algbw, busbw, wrong;
    tc_status_t refused; /* TC_OK when measured */
} half_t;

static void print_half(const half_t *h, int check)
{
    if (h->refused != TC_OK) {
        printf("  %7s  %6s  %6s  %6s", "refused", "N/A", "N/A", "N/A");
        return;
    }
    printf("  %7.2f  %6.2f  %6.2f", h->us, h->algbw, h->busbw);
    if (check)
        printf("  %6.0f", h->wrong);
    else
        printf("  %6s", "N/A");
}

/* An operation the library turns down locally, the same on every rank (an
 * algorithm that does not apply, an unsupported placement): the rows say so
 * and the run goes on. Anything else stops it. */
static int is_refusal(tc_status_t st)
{
    return st == TC_ERR_UNSUPPORTED || st == TC_ERR_NOT_FOUND;
}

typedef struct {
    double bw_sum, wrong_total;
    int nbw, refusals;
} totals_t;

/* The sweep of one collective. Returns 0, or 2 after an error. */
static int sweep(perf_t *p, coll_id_t c, totals_t *tot)
{
    const size_t es = tc_dtype_size(p->o.dtype);
    const int rooted = colls[c].rooted;
    if (rooted && p->o.root >= p->size) {
        fprintf(stderr, "tcperf: -r %d: not a rank (%d ranks)\n", p->o.root, p->size);
        return 2;
    }
    if (p->rank == 0)
        print_header(p, c);
    size_t last_count = (size_t)-1;
    for (uint64_t bytes = p->o.min_bytes; bytes <= p->o.max_bytes;) {
        size_t count = c == BARRIER ? 0 : count_of(p, c, bytes);
        if (count != last_count) { /* sizes below one element per rank collapse */
            last_count = count;
            half_t h[2];
            for (int in_place = 0; in_place < 2; in_place++) {
                half_t *x = &h[in_place];
                memset(x, 0, sizeof(*x));
                tc_status_t st = time_op(p, c, count, in_place, &x->us);
                if (st == TC_OK && p->o.check)
                    st = check_op(p, c, count, in_place, &x->wrong);
                if (is_refusal(st)) {
                    if (p->rank == 0)
                        printf("# %s %s, %zu elements: refused: %s: %s\n", colls[c].name,
                               in_place ? "in place" : "out of place", count,
                               tc_status_string(st), tc_last_error());
                    x->refused = st;
                    tot->refusals++;
                    continue;
                }
                if (st != TC_OK)
                    return fail(colls[c].name, st);
                size_t total_bytes = total_of(p, c, count) * es;
                x->algbw = x->us > 0 ? (double)total_bytes / x->us / 1e3 : 0;
                x->busbw = x->algbw * bus_factor(c, p->size);
                tot->wrong_total += x->wrong;
                tot->bw_sum += x->busbw;
                tot->nbw++;
            }
            if (p->rank == 0) {
                printf("  %10zu  %12zu  %8s  %6s  %6d", total_of(p, c, count) * es,
                       total_of(p, c, count), tc_dtype_name(p->o.dtype),
                       colls[c].reduces ? tc_redop_name(p->o.op) : "none",
                       rooted ? p->o.root : -1);
                print_half(&h[0], p->o.check);
                print_half(&h[1], p->o.check);
                printf("\n");
                fflush(stdout);
            }
        }
        if (c == BARRIER)
            break; /* no sizes */
        uint64_t next = p->o.factor ? bytes * (uint64_t)p->o.factor : bytes + p->o.step_bytes;
        if (next <= bytes)
            break;
        bytes = next;
    }
    return 0;
}

/* The end of a mode with its own sweep (rma.c, threads.c) that returned @p rc
 * and counted @p wrong elements: the verdict line, then the exit status. */
static int mode_end(perf_t *p, int rc, double wrong)
{
    if (rc == 0 && p->rank == 0)
        printf("# Out of bounds values : %.0f %s\n#\n", wrong, wrong == 0 ? "OK" : "FAILED");
    if (rc == 0 && wrong != 0)
        rc = 1;
    fflush(stdout);
    if (rc != 2)
        tc_barrier(p->comm, NULL, NULL); /* a launcher stops every rank when one fails */
    return rc;
}

int main(int argc, char **argv)
{
    perf_t p = {0};
    int rc = parse_args(argc, argv, &p.o);
    if (rc)
        return rc;
    tc_status_t st = tc_comm_create(NULL, &p.comm);
    if (st != TC_OK)
        return fail("tc_comm_create", st);
    tc_comm_rank(p.comm, &p.rank);
    tc_comm_size(p.comm, &p.size);
    p.op_opts = (tc_op_opts_t)TC_OP_OPTS_INIT;
    p.op_opts.async = p.o.async;
    if (p.o.rma) { /* one-sided: its own sweep and table (rma.c) */
        tcperf_rma_opts_t ro = {(tcperf_rma_op_t)(p.o.rma - 1), p.o.min_bytes, p.o.max_bytes,
                                p.o.step_bytes, p.o.factor, p.o.iters, p.o.warmup, p.o.check,
                                p.o.async, p.o.burst, p.o.win_create};
        double wrong = 0;
        rc = mode_end(&p, tcperf_rma(p.comm, &ro, &wrong), wrong);
        goto out;
    }
    if (p.o.threads) { /* threads on their own communicators: their own sweep (threads.c) */
        tcperf_threads_opts_t to = {p.o.threads, p.o.min_bytes, p.o.max_bytes, p.o.step_bytes,
                                    p.o.factor,  p.o.iters,     p.o.warmup,    p.o.check,
                                    p.o.async,   p.o.dtype,     p.o.op};
        double wrong = 0;
        rc = mode_end(&p, tcperf_threads(p.comm, &to, &wrong), wrong);
        goto out;
    }
    if (p.o.algo) {
        snprintf(p.hints, sizeof(p.hints), "algo=%s", p.o.algo);
        p.op_opts.hints = p.hints;
    }
    /* every collective's buffers fit in max_bytes (a total), plus a block of
     * slack for rounding */
    size_t bytes = p.o.max_bytes + 64;
    p.sbuf = malloc(bytes);
    p.rbuf = malloc(bytes);
    if (!p.sbuf || !p.rbuf) {
        fprintf(stderr, "tcperf: cannot allocate 2 x %zu bytes\n", bytes);
        rc = 2;
        goto out;
    }
    memset(p.sbuf, 0, bytes);
    memset(p.rbuf, 0, bytes);

    totals_t tot = {0, 0, 0, 0};
    int first = p.o.coll == NCOLLS ? 0 : p.o.coll;
    int last = p.o.coll == NCOLLS ? NCOLLS - 1 : first;
    for (int c = first; c <= last && rc == 0; c++)
        rc = sweep(&p, (coll_id_t)c, &tot);
    if (rc)
        goto out;
    if (p.rank == 0) {
        printf("# Out of bounds values : %.0f %s\n", tot.wrong_total,
               tot.wrong_total == 0 ? "OK" : "FAILED");
        if (tot.refusals)
            printf("# Refused measurements : %d\n", tot.refusals);
        printf("# Avg bus bandwidth    : %g \n#\n", tot.nbw ? tot.bw_sum / tot.nbw : 0.0);
    }
    rc = tot.wrong_total != 0 ? 1 : tot.refusals ? 2 : 0;
    fflush(stdout);
    tc_barrier(p.comm, NULL, NULL); /* a launcher stops every rank when one fails: print first */
out:
    free(p.sbuf);
    free(p.rbuf);
    tc_comm_destroy(p.comm);
    return rc;
}
