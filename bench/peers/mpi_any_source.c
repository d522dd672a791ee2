/* Open MPI's MPI_ANY_SOURCE measured as bench/any_source.c measures tcomms': rounds of "every
 * other rank sends 8 bytes to rank 0, which takes them all (from any source, or from each rank in
 * turn), then answers each with 8 bytes", every message checked. Prints "mode us_per_round".
 *   mpirun -np N mpi_any_source [-n rounds] [-w warmup] */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int round_once(int rank, int size, int any, int64_t round)
{
    if (rank != 0) {
        int64_t mine = round * 1000 + rank, back = -1;
        MPI_Send(&mine, 1, MPI_INT64_T, 0, 0, MPI_COMM_WORLD);
        MPI_Recv(&back, 1, MPI_INT64_T, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        return back != round;
    }
    uint64_t seen = 0;
    for (int k = 1; k < size; k++) {
        int64_t got = -1;
        MPI_Status s;
        MPI_Recv(&got, 1, MPI_INT64_T, any ? MPI_ANY_SOURCE : k, 0, MPI_COMM_WORLD, &s);
        int src = s.MPI_SOURCE;
        if (got != round * 1000 + src || src < 1 || src >= size || (seen >> src & 1)) {
            fprintf(stderr, "mpi_any_source: round %lld: %lld from rank %d\n", (long long)round,
                    (long long)got, src);
            return 1;
        }
        seen |= UINT64_C(1) << src;
    }
    for (int q = 1; q < size; q++)
        MPI_Send(&round, 1, MPI_INT64_T, q, 0, MPI_COMM_WORLD);
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rounds = 20000, warmup = 1000, c, rank, size;
    while ((c = getopt(argc, argv, "n:w:")) != -1) {
        if (c == 'n')
            rounds = atoi(optarg);
        else if (c == 'w')
            warmup = atoi(optarg);
        else
            MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2 || size > 64)
        MPI_Abort(MPI_COMM_WORLD, 2);
    int bad = 0;
    for (int any = 0; any < 2 && !bad; any++) {
        int64_t r = 0;
        for (int i = 0; i < warmup && !bad; i++)
            bad = round_once(rank, size, any, r++);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < rounds && !bad; i++)
            bad = round_once(rank, size, any, r++);
        double us = (MPI_Wtime() - t0) * 1e6 / rounds;
        if (rank == 0 && !bad)
            printf("%s %.2f\n", any ? "any" : "given", us);
    }
    if (bad)
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Finalize();
    return 0;
}
