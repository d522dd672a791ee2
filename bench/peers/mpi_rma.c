/* Open MPI's passive-target RMA timed the way `tcperf --coll put|get|put_signal` times tcomms'
 * windows, for bench/run_rma.sh: rank 0 reaches into rank 1's window (MPI_Win_allocate of
 * max bytes + a signal word; -C: MPI_Win_create over malloc'd memory), one MPI_Win_lock_all epoch
 * for the whole run; per size latency:   one operation + MPI_Win_flush(1) per iteration; bandwidth:
 * -B operations back to back (each to its own offset while they fit), then one MPI_Win_flush(1);
 * time per operation. put_signal has no MPI counterpart; it is MPI_Put, MPI_Win_flush (MPI orders a
 * put before an accumulate to the same target only through a flush), then MPI_Accumulate(+1,
 * MPI_SUM) on the target's signal word. The data of the timed loops is checked after them as tcperf
 * does (the target's regions after puts, the origin's buffer after gets, the signal count). mpirun
 * -np 2 mpi_rma [-o put,get,put_signal] [-b 8] [-e 64M] [-f 2] [-n iters] [-w warmup]
 *          [-B burst] [-C] [-L large_bytes -N large_iters -W large_warmup]
 * Prints "<op> <bytes> <lat_us> <bw_us_per_op> <wrong>" per size; exit status 1 on wrong
 * data. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "size_arg.h"

enum { PUT, GET, PUT_SIGNAL, NOPS };
static const char *const op_names[NOPS] = {"put", "get", "put_signal"};

typedef struct {
    size_t min_bytes, max_bytes, large_bytes;
    int factor, iters, warmup, large_iters, large_warmup, burst;
    int ops[NOPS], nops;
} opts_t;

typedef struct {
    const opts_t *o;
    int rank, op;
    MPI_Win win;
    unsigned char *wbuf, *lbuf;
    uint64_t signals, one;
} rma_t;

static uint64_t mix(uint64_t x) /* splitmix64's finaliser, as tcperf's pattern */
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static void fill(unsigned char *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)mix(seed + i);
}

static size_t wrong_of(const unsigned char *p, size_t n, uint64_t seed)
{
    size_t w = 0;
    for (size_t i = 0; i < n; i++)
        w += p[i] != (unsigned char)mix(seed + i);
    return w;
}

static size_t offset_of(const rma_t *r, size_t bytes, int k)
{
    size_t off = (size_t)k * bytes;
    return off + bytes <= r->o->max_bytes ? off : 0;
}

static int regions_of(const rma_t *r, size_t bytes)
{
    int n = 1;
    while (n < r->o->burst && offset_of(r, bytes, n) != 0)
        n++;
    return n;
}

static void issue(rma_t *r, size_t bytes, size_t off)
{
    switch (r->op) {
    case PUT:
        MPI_Put(r->lbuf, (int)bytes, MPI_BYTE, 1, (MPI_Aint)off, (int)bytes, MPI_BYTE, r->win);
        break;
    case GET:
        MPI_Get(r->lbuf, (int)bytes, MPI_BYTE, 1, (MPI_Aint)off, (int)bytes, MPI_BYTE, r->win);
        break;
    default:
        MPI_Put(r->lbuf, (int)bytes, MPI_BYTE, 1, (MPI_Aint)off, (int)bytes, MPI_BYTE, r->win);
        MPI_Win_flush(1, r->win);
        MPI_Accumulate(&r->one, 1, MPI_UINT64_T, 1, (MPI_Aint)r->o->max_bytes, 1, MPI_UINT64_T,
                       MPI_SUM, r->win);
        r->signals++;
        break;
    }
}

static void measure(rma_t *r, size_t bytes, uint64_t seed, double us[2], double *wrong)
{
    const opts_t *o = r->o;
    const int large = bytes > o->large_bytes;
    const int iters = large ? o->large_iters : o->iters;
    const int warmup = large ? o->large_warmup : o->warmup;
    const int regions = regions_of(r, bytes);
    if (r->op == GET) {
        if (r->rank == 1)
            for (int k = 0; k < regions; k++)
                fill(r->wbuf + offset_of(r, bytes, k), bytes, seed);
        if (r->rank == 0)
            memset(r->lbuf, 0xa5, bytes);
    } else {
        if (r->rank == 0)
            fill(r->lbuf, bytes, seed);
        if (r->rank == 1)
            memset(r->wbuf, 0xa5, offset_of(r, bytes, regions - 1) + bytes);
    }
    MPI_Win_sync(r->win);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int half = 0; half < 2; half++) {
        double t = 0;
        if (r->rank == 0) {
            double t0 = 0;
            for (int i = 0; i < warmup + iters; i++) {
                if (i == warmup)
                    t0 = MPI_Wtime();
                for (int k = 0; k < (half ? o->burst : 1); k++)
                    issue(r, bytes, half ? offset_of(r, bytes, k) : 0);
                MPI_Win_flush(1, r->win);
            }
            t = (MPI_Wtime() - t0) * 1e6 / iters / (half ? o->burst : 1);
        }
        MPI_Allreduce(&t, &us[half], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(r->win);
    double w = 0;
    if (r->op == GET && r->rank == 0)
        w = (double)wrong_of(r->lbuf, bytes, seed);
    if (r->op != GET && r->rank == 1)
        for (int k = 0; k < regions; k++)
            w += (double)wrong_of(r->wbuf + offset_of(r, bytes, k), bytes, seed);
    if (r->op == PUT_SIGNAL) {
        uint64_t sent = r->signals, seen;
        MPI_Bcast(&sent, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
        memcpy(&seen, r->wbuf + o->max_bytes, sizeof(seen));
        if (r->rank == 1 && seen != sent)
            w += 1;
    }
    MPI_Allreduce(&w, wrong, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    opts_t o = {8, 64 << 20, 1 << 20, 2, 20, 5, 5, 2, 16, {0}, 0};
    int c, rank, size, create = 0;
    char *list = NULL;
    while ((c = getopt(argc, argv, "o:b:e:f:n:w:B:CL:N:W:")) != -1) {
        switch (c) {
        case 'o':
            list = optarg;
            break;
        case 'b':
            o.min_bytes = bench_parse_size(optarg);
            break;
        case 'e':
            o.max_bytes = bench_parse_size(optarg);
            break;
        case 'f':
            o.factor = atoi(optarg);
            break;
        case 'n':
            o.iters = atoi(optarg);
            break;
        case 'w':
            o.warmup = atoi(optarg);
            break;
        case 'B':
            o.burst = atoi(optarg);
            break;
        case 'C':
            create = 1;
            break;
        case 'L':
            o.large_bytes = bench_parse_size(optarg);
            break;
        case 'N':
            o.large_iters = atoi(optarg);
            break;
        case 'W':
            o.large_warmup = atoi(optarg);
            break;
        default:
            fprintf(stderr,
                    "usage: mpi_rma [-o put,get,put_signal] [-b min] [-e max] [-f factor]"
                    " [-n iters] [-w warmup] [-B burst] [-C] [-L large -N iters -W warmup]\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    char all[] = "put,get,put_signal";
    for (char *t = strtok(list ? list : all, ","); t; t = strtok(NULL, ",")) {
        int k = 0;
        while (k < NOPS && strcmp(t, op_names[k]) != 0)
            k++;
        if (k == NOPS) {
            fprintf(stderr, "mpi_rma: -o %s: put, get or put_signal\n", t);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        o.ops[o.nops++] = k;
    }
    if (o.min_bytes < 1 || o.max_bytes < o.min_bytes || o.factor < 2 || o.iters < 1 ||
        o.large_iters < 1 || o.burst < 1 || o.max_bytes > (size_t)1 << 30) {
        fprintf(stderr, "mpi_rma: bad sizes or counts\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        fprintf(stderr, "mpi_rma: needs 2 ranks (rank 0 -> rank 1)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    rma_t r = {&o, rank, 0, MPI_WIN_NULL, NULL, NULL, 0, 1};
    MPI_Aint wbytes = rank <= 1 ? (MPI_Aint)(o.max_bytes + sizeof(uint64_t)) : 0;
    if (create) {
        r.wbuf = wbytes ? malloc((size_t)wbytes) : NULL;
        MPI_Win_create(r.wbuf, wbytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &r.win);
    } else {
        MPI_Win_allocate(wbytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &r.wbuf, &r.win);
    }
    if (rank <= 1)
        memset(r.wbuf, 0, (size_t)wbytes);
    r.lbuf = malloc(o.max_bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, r.win);
    double total_wrong = 0;
    uint64_t seq = 0;
    for (int i = 0; i < o.nops; i++) {
        r.op = o.ops[i];
        for (size_t b = o.min_bytes; b <= o.max_bytes; b *= (size_t)o.factor) {
            double us[2], wrong;
            measure(&r, b, mix(++seq), us, &wrong);
            total_wrong += wrong;
            if (rank == 0) {
                printf("%s %zu %.3f %.3f %.0f\n", op_names[r.op], b, us[0], us[1], wrong);
                fflush(stdout);
            }
        }
    }
    MPI_Win_unlock_all(r.win);
    MPI_Win_free(&r.win);
    if (create)
        free(r.wbuf);
    free(r.lbuf);
    MPI_Finalize();
    return total_wrong != 0;
}
