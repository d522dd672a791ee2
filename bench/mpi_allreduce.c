/* Open MPI's MPI_Allreduce timed the way tcperf times tc_all_reduce (same
 * sizes, warm-up, iterations, max over ranks), for side-by-side ratios.
 *   mpirun -np 4 mpi_allreduce [-b min] [-e max] [-f factor] [-n iters] [-w warmup] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'K': case 'k': v *= 1024; break;
    case 'M': case 'm': v *= 1024 * 1024; break;
    case 'G': case 'g': v *= 1024.0 * 1024 * 1024; break;
    default: break;
    }
    return (size_t)v;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    size_t minb = 8, maxb = 64 << 20;
    int factor = 2, iters = 20, warmup = 5, c;
    while ((c = getopt(argc, argv, "b:e:f:n:w:")) != -1) {
        switch (c) {
        case 'b': minb = parse_size(optarg); break;
        case 'e': maxb = parse_size(optarg); break;
        case 'f': factor = atoi(optarg); break;
        case 'n': iters = atoi(optarg); break;
        case 'w': warmup = atoi(optarg); break;
        default: MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    float *s = malloc(maxb + 4), *r = malloc(maxb + 4);
    memset(s, 0, maxb + 4);
    if (rank == 0)
        printf("# mpi_allreduce: %d ranks\n# %10s %12s %10s %8s %8s\n", size, "size(B)", "count",
               "time(us)", "algbw", "busbw");
    for (size_t bytes = minb; bytes <= maxb; bytes *= (size_t)factor) {
        int count = (int)(bytes / 4);
        for (int i = 0; i < warmup; i++)
            MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++)
            MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double us = (MPI_Wtime() - t0) * 1e6 / iters, max;
        MPI_Allreduce(&us, &max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        double algbw = (double)count * 4 / max / 1e3;
        if (rank == 0)
            printf("  %10zu %12d %10.2f %8.2f %8.2f\n", (size_t)count * 4, count, max, algbw,
                   algbw * 2.0 * (size - 1) / size);
    }
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
