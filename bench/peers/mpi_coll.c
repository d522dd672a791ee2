/* Open MPI's collectives timed the way tcperf times tcomms' (warm-up, then the mean of iters
 * back-to-back operations, max over ranks; float32 sum; root 0), for bench/run_collectives.sh.
 *   mpirun -np 4 mpi_coll [-c all_reduce,reduce,...] [-b 8] [-e 64M] [-f 2] [-n iters]
 *          [-w warmup] [-L large_bytes -N large_iters -W large_warmup]
 * Prints "<coll> <bytes> <time_us> <algbw GB/s> <busbw GB/s>" (see coll_sweep.h). */
#include <mpi.h>

#include "coll_sweep.h"

/* One operation of coll on count elements (per rank, or per chunk for the chunked ones). */
static void run_op(int coll, float *s, float *r, int count, int nranks)
{
    MPI_Comm w = MPI_COMM_WORLD;
    switch (coll) {
    case COLL_ALL_REDUCE:
        MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, w);
        break;
    case COLL_REDUCE:
        MPI_Reduce(s, r, count, MPI_FLOAT, MPI_SUM, 0, w);
        break;
    case COLL_BROADCAST:
        MPI_Bcast(r, count, MPI_FLOAT, 0, w);
        break;
    case COLL_ALL_GATHER:
        MPI_Allgather(s, count, MPI_FLOAT, r, count, MPI_FLOAT, w);
        break;
    case COLL_REDUCE_SCATTER:
        MPI_Reduce_scatter_block(s, r, count, MPI_FLOAT, MPI_SUM, w);
        break;
    case COLL_ALL_TO_ALL:
        MPI_Alltoall(s, count, MPI_FLOAT, r, count, MPI_FLOAT, w);
        break;
    case COLL_GATHER:
        MPI_Gather(s, count, MPI_FLOAT, r, count, MPI_FLOAT, 0, w);
        break;
    case COLL_SCATTER:
        MPI_Scatter(s, count, MPI_FLOAT, r, count, MPI_FLOAT, 0, w);
        break;
    case COLL_BARRIER:
        MPI_Barrier(w);
        break;
    default:
        break;
    }
    (void)nranks;
}

static double time_op(const sweep_opts_t *o, int coll, float *s, float *r, size_t count, int nranks)
{
    int iters, warmup;
    sweep_iters(o, sweep_bytes(coll, count, nranks), &iters, &warmup);
    for (int i = 0; i < warmup; i++)
        run_op(coll, s, r, (int)count, nranks);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++)
        run_op(coll, s, r, (int)count, nranks);
    double us = (MPI_Wtime() - t0) * 1e6 / iters, max;
    MPI_Allreduce(&us, &max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return max;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    sweep_opts_t o;
    if (sweep_parse(argc, argv, &o, NULL, NULL, NULL) != 0)
        MPI_Abort(MPI_COMM_WORLD, 2);
    if (o.max_bytes / 4 > 0x7fffffff) {
        fprintf(stderr, "mpi_coll: -e too large for an int count\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    size_t nfloat = o.max_bytes / 4 + 1;
    float *s = malloc(nfloat * 4), *r = malloc(nfloat * 4);
    if (!s || !r) {
        fprintf(stderr, "mpi_coll: cannot allocate 2 x %zu bytes\n", nfloat * 4);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (size_t i = 0; i < nfloat; i++)
        s[i] = r[i] = 1.0f;
    if (rank == 0)
        printf("# mpi_coll: %d ranks, float32 sum, root 0\n", nranks);
    for (int k = 0; k < o.ncolls; k++) {
        int coll = o.colls[k];
        if (coll == COLL_BARRIER) {
            double us = time_op(&o, coll, s, r, 0, nranks);
            if (rank == 0)
                sweep_print(coll, 0, us, nranks);
            continue;
        }
        size_t prev = 0;
        for (size_t req = o.min_bytes; req <= o.max_bytes; req *= (size_t)o.factor) {
            size_t count = sweep_count(coll, req, nranks), bytes = sweep_bytes(coll, count, nranks);
            if (count == 0 || bytes == prev)
                continue;
            prev = bytes;
            double us = time_op(&o, coll, s, r, count, nranks);
            if (rank == 0)
                sweep_print(coll, bytes, us, nranks);
        }
    }
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
