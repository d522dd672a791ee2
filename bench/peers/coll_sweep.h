/* What every peer benchmark (mpi_coll.c, gloo_coll.cc; torch_coll.py mirrors it) shares: the
 * options, the size sweep, how a requested size becomes the bytes of one collective, and the
 * nccl-tests bus-bandwidth factors, so the peers and tcperf print comparable rows:
 *
 *   <coll> <bytes> <time_us> <algbw GB/s> <busbw GB/s>
 *
 * bytes, as in nccl-tests: the per-rank buffer for all_reduce, reduce and broadcast; the total
 * (nranks chunks of float32) for all_gather, reduce_scatter, all_to_all, gather and scatter,
 * rounded down to a multiple of 4 * nranks (sizes that round to 0 are skipped); 0 for barrier,
 * timed once. Plain C so that both the C and the C++ peer include it. */
#ifndef BENCH_PEERS_COLL_SWEEP_H
#define BENCH_PEERS_COLL_SWEEP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "size_arg.h"

enum {
    COLL_ALL_REDUCE,
    COLL_REDUCE,
    COLL_BROADCAST,
    COLL_ALL_GATHER,
    COLL_REDUCE_SCATTER,
    COLL_ALL_TO_ALL,
    COLL_GATHER,
    COLL_SCATTER,
    COLL_BARRIER,
    COLL_COUNT
};

static const char *const coll_names[COLL_COUNT] = {
    "all_reduce", "reduce", "broadcast", "all_gather", "reduce_scatter",
    "all_to_all", "gather", "scatter",   "barrier",
};

typedef struct {
    size_t min_bytes, max_bytes, large_bytes;
    int factor, iters, warmup, large_iters, large_warmup;
    int colls[COLL_COUNT], ncolls;
} sweep_opts_t;

static int sweep_coll_index(const char *name)
{
    for (int i = 0; i < COLL_COUNT; i++)
        if (strcmp(name, coll_names[i]) == 0)
            return i;
    return -1;
}

static void sweep_usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [-c coll,coll,...] [-b min] [-e max] [-f factor] [-n iters] [-w warmup]\n"
            "       [-L large_bytes -N large_iters -W large_warmup] (sizes > large_bytes use\n"
            "       the large iteration counts); colls: all_reduce reduce broadcast all_gather\n"
            "       reduce_scatter all_to_all gather scatter barrier\n",
            prog);
}

/* getopt over the common options; extra_opts/extra handle a peer's own (e.g. rank, size). */
static int sweep_parse(int argc, char **argv, sweep_opts_t *o, const char *extra_opts,
                       int (*extra)(int c, const char *arg, void *ctx), void *ctx)
{
    char optstr[64];
    snprintf(optstr, sizeof(optstr), "c:b:e:f:n:w:L:N:W:%s", extra_opts ? extra_opts : "");
    memset(o, 0, sizeof(*o));
    o->min_bytes = 8;
    o->max_bytes = 64u << 20;
    o->large_bytes = (size_t)-1;
    o->factor = 2;
    o->iters = 20;
    o->warmup = 5;
    o->large_iters = 5;
    o->large_warmup = 2;
    o->colls[0] = COLL_ALL_REDUCE;
    o->ncolls = 1;
    int c;
    while ((c = getopt(argc, argv, optstr)) != -1) {
        switch (c) {
        case 'c': {
            o->ncolls = 0;
            char *list = strdup(optarg), *save = NULL;
            for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                int i = sweep_coll_index(t);
                if (i < 0 || o->ncolls == COLL_COUNT) {
                    fprintf(stderr, "%s: unknown collective '%s'\n", argv[0], t);
                    free(list);
                    return 2;
                }
                o->colls[o->ncolls++] = i;
            }
            free(list);
            break;
        }
        case 'b':
            o->min_bytes = bench_parse_size(optarg);
            break;
        case 'e':
            o->max_bytes = bench_parse_size(optarg);
            break;
        case 'f':
            o->factor = atoi(optarg);
            break;
        case 'n':
            o->iters = atoi(optarg);
            break;
        case 'w':
            o->warmup = atoi(optarg);
            break;
        case 'L':
            o->large_bytes = bench_parse_size(optarg);
            break;
        case 'N':
            o->large_iters = atoi(optarg);
            break;
        case 'W':
            o->large_warmup = atoi(optarg);
            break;
        default:
            if (extra && c != '?' && extra(c, optarg, ctx) == 0)
                break;
            sweep_usage(argv[0]);
            return 2;
        }
    }
    if (optind != argc || o->min_bytes == 0 || o->min_bytes > o->max_bytes || o->factor < 2 ||
        o->iters < 1 || o->warmup < 0 || o->large_iters < 1 || o->large_warmup < 0 ||
        o->ncolls == 0) {
        sweep_usage(argv[0]);
        return 2;
    }
    return 0;
}

/* True for the collectives whose bytes are nranks chunks. */
static int sweep_chunked(int coll)
{
    return coll == COLL_ALL_GATHER || coll == COLL_REDUCE_SCATTER || coll == COLL_ALL_TO_ALL ||
           coll == COLL_GATHER || coll == COLL_SCATTER;
}

/* The float32 elements of one chunk (chunked collectives) or of the buffer (the others) for a
 * requested size; 0 means skip this size. */
static size_t sweep_count(int coll, size_t requested, int nranks)
{
    return sweep_chunked(coll) ? requested / 4 / (size_t)nranks : requested / 4;
}

static size_t sweep_bytes(int coll, size_t count, int nranks)
{
    if (coll == COLL_BARRIER)
        return 0;
    return count * 4 * (sweep_chunked(coll) ? (size_t)nranks : 1);
}

/* nccl-tests' busbw / algbw. */
static double sweep_bus_factor(int coll, int nranks)
{
    double n = nranks;
    switch (coll) {
    case COLL_ALL_REDUCE:
        return nranks > 1 ? 2.0 * (n - 1) / n : 0;
    case COLL_REDUCE:
    case COLL_BROADCAST:
        return 1.0;
    case COLL_BARRIER:
        return 0.0;
    default:
        return (n - 1) / n;
    }
}

static void sweep_iters(const sweep_opts_t *o, size_t bytes, int *iters, int *warmup)
{
    int large = bytes > o->large_bytes;
    *iters = large ? o->large_iters : o->iters;
    *warmup = large ? o->large_warmup : o->warmup;
}

static void sweep_print(int coll, size_t bytes, double us, int nranks)
{
    double algbw = us > 0 ? (double)bytes / us / 1e3 : 0;
    printf("%s %zu %.2f %.3f %.3f\n", coll_names[coll], bytes, us, algbw,
           algbw * sweep_bus_factor(coll, nranks));
    fflush(stdout);
}

#endif
