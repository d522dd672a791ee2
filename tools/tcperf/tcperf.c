/* tcperf: collective benchmark in the format of nccl-tests.
 *
 *   tcperf [-b minbytes] [-e maxbytes] [-f factor | -i step] [-n iters] [-w warmup]
 *          [-c 0|1] [-d type] [-o op] [-a algo]
 *
 * Run one process per rank under a launcher (tcrun -n 4 tcperf ...). Rank 0
 * prints the table; with -c 1 every element of every rank's result is checked
 * against an independently computed reference and #wrong is summed over ranks.
 * Exit status: 0 when every check passed, 1 on wrong results, 2 on errors. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pattern.h"
#include "tcomms/base/config.h"
#include "tcomms/base/time.h"
#include "tcomms/tcomms.h"

typedef struct {
    uint64_t min_bytes, max_bytes, step_bytes;
    int factor, iters, warmup, check;
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
} perf_t;

static int fail(const char *what, tc_status_t st)
{
    fprintf(stderr, "tcperf: %s: %s: %s\n", what, tc_status_string(st), tc_last_error());
    return 2;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: tcperf [-b minbytes] [-e maxbytes] [-f factor | -i stepbytes] [-n iters]\n"
               "              [-w warmup] [-c 0|1] [-d type] [-o op] [-a algo]\n"
               "sizes take K, M, G suffixes; run under a launcher: tcrun -n 4 tcperf -b 8 -e 64M\n");
}

static int parse_args(int argc, char **argv, opts_t *o)
{
    *o = (opts_t){8, 64ull << 20, 0, 2, 20, 5, 1, TC_FLOAT32, TC_SUM, NULL};
    int c;
    int64_t v;
    tc_status_t st = TC_OK;
    while ((c = getopt(argc, argv, "b:e:f:i:n:w:c:d:o:a:h")) != -1) {
        switch (c) {
        case 'b': st = tc_parse_size("-b", optarg, &o->min_bytes); break;
        case 'e': st = tc_parse_size("-e", optarg, &o->max_bytes); break;
        case 'i': st = tc_parse_size("-i", optarg, &o->step_bytes); o->factor = 0; break;
        case 'f':
            st = tc_parse_int("-f", optarg, 2, 1024, &v);
            o->factor = (int)v;
            o->step_bytes = 0;
            break;
        case 'n': st = tc_parse_int("-n", optarg, 1, 1000000, &v); o->iters = (int)v; break;
        case 'w': st = tc_parse_int("-w", optarg, 0, 1000000, &v); o->warmup = (int)v; break;
        case 'c': st = tc_parse_int("-c", optarg, 0, 1, &v); o->check = (int)v; break;
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
    if (optind != argc || o->min_bytes > o->max_bytes || (o->factor == 0 && o->step_bytes == 0)) {
        usage(stderr);
        return 2;
    }
    return 0;
}

/* Max (over ranks) of a per-rank double, and the sum of a per-rank count. */
static tc_status_t reduce_double(perf_t *p, double *v, tc_redop_t op)
{
    return tc_all_reduce(p->comm, v, v, 1, TC_FLOAT64, op, NULL, NULL);
}

/* One timed measurement: average microseconds per operation, max over ranks. */
static tc_status_t time_op(perf_t *p, const void *sbuf, void *rbuf, size_t count, double *us_p)
{
    tc_status_t st;
    for (int i = 0; i < p->o.warmup; i++)
        if ((st = tc_all_reduce(p->comm, sbuf, rbuf, count, p->o.dtype, p->o.op, &p->op_opts,
                                NULL)) != TC_OK)
            return st;
    double sync = 0; /* align the ranks' start */
    if ((st = reduce_double(p, &sync, TC_SUM)) != TC_OK)
        return st;
    double t0 = tc_time_s();
    for (int i = 0; i < p->o.iters; i++)
        if ((st = tc_all_reduce(p->comm, sbuf, rbuf, count, p->o.dtype, p->o.op, &p->op_opts,
                                NULL)) != TC_OK)
            return st;
    double us = (tc_time_s() - t0) * 1e6 / p->o.iters;
    if ((st = reduce_double(p, &us, TC_MAX)) != TC_OK)
        return st;
    *us_p = us;
    return TC_OK;
}

/* One checked operation; returns the number of wrong elements over all ranks. */
static tc_status_t check_op(perf_t *p, void *sbuf, void *rbuf, size_t count, int in_place,
                            double *wrong_p)
{
    tcperf_fill(in_place ? rbuf : sbuf, count, p->o.dtype, p->o.op, p->rank);
    if (!in_place)
        memset(rbuf, 0xa5, count * tc_dtype_size(p->o.dtype));
    tc_status_t st = tc_all_reduce(p->comm, in_place ? rbuf : sbuf, rbuf, count, p->o.dtype,
                                   p->o.op, &p->op_opts, NULL);
    if (st != TC_OK)
        return st;
    double wrong = (double)tcperf_check(rbuf, count, p->o.dtype, p->o.op, p->size);
    if ((st = reduce_double(p, &wrong, TC_SUM)) != TC_OK)
        return st;
    *wrong_p = wrong;
    return TC_OK;
}

static void print_header(const perf_t *p, char **argv)
{
    char host[64] = "";
    gethostname(host, sizeof(host) - 1);
    printf("# tcperf all_reduce: %d ranks, minBytes %llu maxBytes %llu step: %llu(%s) warmup iters:"
           " %d iters: %d validation: %d\n", p->size, (unsigned long long)p->o.min_bytes,
           (unsigned long long)p->o.max_bytes,
           (unsigned long long)(p->o.factor ? (uint64_t)p->o.factor : p->o.step_bytes),
           p->o.factor ? "factor" : "bytes", p->o.warmup, p->o.iters, p->o.check);
    printf("#\n# Using devices\n#  Rank %3d Pid %7d on %10s device -1 [cpu]%s\n#\n", p->rank,
           (int)getpid(), host, p->size > 1 ? " (rank 0 shown)" : "");
    printf("# %10s  %12s  %8s  %6s  %6s  %33s  %33s\n", "", "", "", "", "", "out-of-place",
           "in-place");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count",
           "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
           "#wrong");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)",
           "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
    fflush(stdout);
    (void)argv;
}

static void print_half(double us, size_t bytes, int nranks, double wrong, int check)
{
    double algbw = us > 0 ? (double)bytes / us / 1e3 : 0;
    double busbw = algbw * (nranks > 1 ? 2.0 * (nranks - 1) / nranks : 0.0);
    printf("  %7.2f  %6.2f  %6.2f", us, algbw, busbw);
    if (check)
        printf("  %6.0f", wrong);
    else
        printf("  %6s", "N/A");
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
    if (p.o.algo) {
        snprintf(p.hints, sizeof(p.hints), "algo=%s", p.o.algo);
        p.op_opts.hints = p.hints;
    }
    size_t esize = tc_dtype_size(p.o.dtype);
    size_t max_count = p.o.max_bytes / esize;
    void *sbuf = malloc(max_count * esize + 1), *rbuf = malloc(max_count * esize + 1);
    if (!sbuf || !rbuf) {
        fprintf(stderr, "tcperf: cannot allocate 2 x %llu bytes\n",
                (unsigned long long)p.o.max_bytes);
        return 2;
    }
    if (p.rank == 0)
        print_header(&p, argv);

    double bw_sum = 0, wrong_total = 0;
    int nsizes = 0;
    for (uint64_t bytes = p.o.min_bytes; bytes <= p.o.max_bytes;) {
        size_t count = bytes / esize;
        double us[2] = {0, 0}, wrong[2] = {0, 0};
        for (int in_place = 0; in_place < 2; in_place++) {
            void *s = in_place ? rbuf : sbuf;
            tcperf_fill(s, count, p.o.dtype, p.o.op, p.rank);
            if ((st = time_op(&p, s, rbuf, count, &us[in_place])) != TC_OK ||
                (p.o.check && (st = check_op(&p, sbuf, rbuf, count, in_place, &wrong[in_place])) !=
                                  TC_OK)) {
                rc = fail("all_reduce", st);
                goto out;
            }
        }
        if (p.rank == 0) {
            printf("  %10zu  %12zu  %8s  %6s  %6d", count * esize, count,
                   tc_dtype_name(p.o.dtype), tc_redop_name(p.o.op), -1);
            print_half(us[0], count * esize, p.size, wrong[0], p.o.check);
            print_half(us[1], count * esize, p.size, wrong[1], p.o.check);
            printf("\n");
            fflush(stdout);
        }
        wrong_total += wrong[0] + wrong[1];
        double algbw = us[1] > 0 ? (double)(count * esize) / us[1] / 1e3 : 0;
        bw_sum += algbw * (p.size > 1 ? 2.0 * (p.size - 1) / p.size : 0.0);
        nsizes++;
        uint64_t next = p.o.factor ? bytes * (uint64_t)p.o.factor : bytes + p.o.step_bytes;
        if (next <= bytes)
            break;
        bytes = next;
    }
    if (p.rank == 0) {
        printf("# Out of bounds values : %.0f %s\n", wrong_total, wrong_total == 0 ? "OK" : "FAILED");
        printf("# Avg bus bandwidth    : %g \n#\n", nsizes ? bw_sum / nsizes : 0.0);
    }
    rc = wrong_total == 0 ? 0 : 1;
out:
    free(sbuf);
    free(rbuf);
    tc_comm_destroy(p.comm);
    return rc;
}
