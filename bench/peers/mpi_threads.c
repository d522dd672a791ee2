/* Open MPI's MPI_Allreduce from T threads at once (MPI_THREAD_MULTIPLE), each
 * on its own MPI_Comm_dup of the world, timed as tcperf --threads times
 * tcomms (threads.c there): per size the threads start together, each runs
 * -n operations; prints "bytes latency_us agg_ops_per_s agg_GB_per_s" with
 * the window from the first thread's start to the last one's end (the widest
 * over ranks); latency: the slowest thread's. Float sums, checked once after
 * the timed loop against the exact sum.
 *   mpirun -np 2 mpi_threads -t T [-b min] [-e max] [-f factor] [-n iters] [-w warmup] */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "size_arg.h"

typedef struct {
    MPI_Comm comm;
    float *s, *r;
    size_t count;
    int iters, warmup, index, wrong;
    double begin, end;
    pthread_barrier_t *start;
} worker_t;

static int rank, nranks;

static void *run(void *arg)
{
    worker_t *w = arg;
    for (int i = 0; i < w->warmup; i++)
        MPI_Allreduce(w->s, w->r, (int)w->count, MPI_FLOAT, MPI_SUM, w->comm);
    pthread_barrier_wait(w->start);
    w->begin = MPI_Wtime();
    for (int i = 0; i < w->iters; i++)
        MPI_Allreduce(w->s, w->r, (int)w->count, MPI_FLOAT, MPI_SUM, w->comm);
    w->end = MPI_Wtime();
    for (size_t i = 0; i < w->count; i++) /* small integers: exact sums */
        w->s[i] = (float)((rank + 1) * (w->index + 1) + (int)(i % 7));
    MPI_Allreduce(w->s, w->r, (int)w->count, MPI_FLOAT, MPI_SUM, w->comm);
    w->wrong = 0;
    for (size_t i = 0; i < w->count; i++) {
        float want = (float)(nranks * (nranks + 1) / 2 * (w->index + 1) + nranks * (int)(i % 7));
        w->wrong += w->r[i] != want;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0)
            fprintf(stderr, "mpi_threads: MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
        MPI_Finalize();
        return 2;
    }
    size_t minb = 8, maxb = 1 << 20;
    int factor = 2, iters = 100, warmup = 10, threads = 1, c;
    while ((c = getopt(argc, argv, "t:b:e:f:n:w:")) != -1) {
        switch (c) {
        case 't':
            threads = atoi(optarg);
            break;
        case 'b':
            minb = bench_parse_size(optarg);
            break;
        case 'e':
            maxb = bench_parse_size(optarg);
            break;
        case 'f':
            factor = atoi(optarg);
            break;
        case 'n':
            iters = atoi(optarg);
            break;
        case 'w':
            warmup = atoi(optarg);
            break;
        default:
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (threads < 1 || threads > 64 || factor < 2 || iters < 1 || minb < 4 || maxb < minb)
        MPI_Abort(MPI_COMM_WORLD, 2);
    worker_t *w = calloc((size_t)threads, sizeof(*w));
    pthread_t *tid = calloc((size_t)threads, sizeof(*tid));
    pthread_barrier_t start;
    for (int k = 0; k < threads; k++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &w[k].comm);
        w[k].s = calloc(maxb / 4 + 1, 4);
        w[k].r = calloc(maxb / 4 + 1, 4);
        w[k].iters = iters, w[k].warmup = warmup, w[k].index = k, w[k].start = &start;
    }
    for (size_t bytes = minb; bytes <= maxb; bytes *= (size_t)factor) {
        pthread_barrier_init(&start, NULL, (unsigned)threads);
        MPI_Barrier(MPI_COMM_WORLD);
        for (int k = 0; k < threads; k++) {
            w[k].count = bytes / 4;
            pthread_create(&tid[k], NULL, run, &w[k]);
        }
        double first = 0, last = 0, lat = 0; /* the window of all threads; a thread's latency */
        int wrong = 0;
        for (int k = 0; k < threads; k++) {
            pthread_join(tid[k], NULL);
            first = k == 0 || w[k].begin < first ? w[k].begin : first;
            last = k == 0 || w[k].end > last ? w[k].end : last;
            lat = w[k].end - w[k].begin > lat ? w[k].end - w[k].begin : lat;
            wrong += w[k].wrong;
        }
        double slowest = last - first;
        MPI_Allreduce(MPI_IN_PLACE, &lat, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        pthread_barrier_destroy(&start);
        MPI_Allreduce(MPI_IN_PLACE, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        double ops = (double)threads * iters / slowest;
        if (rank == 0)
            printf("%zu %.2f %.0f %.3f %d\n", bytes, lat * 1e6 / iters, ops,
                   ops * (double)bytes / 1e9, wrong);
    }
    for (int k = 0; k < threads; k++) {
        MPI_Comm_free(&w[k].comm);
        free(w[k].s);
        free(w[k].r);
    }
    free(w);
    free(tid);
    MPI_Finalize();
    return 0;
}
