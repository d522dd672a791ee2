/* Open MPI's point-to-point measured the way tc-tpbench measures a transport backend: ping-pong
 * latency (half a round trip, first round trip discarded) and streaming bandwidth with a window
 * of messages in flight, same sizes and iteration budget. Output: "size lat_us bw_MBps".
 *   mpirun -np 2 mpi_pingpong [-b min] [-e max] [-f factor] [-n iters] [-w window] */
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

static size_t iters_for(size_t size, size_t n)
{
    size_t budget = (size_t)256 << 20;
    size_t k = size ? budget / size : n;
    return k < 3 ? 3 : k > n ? n : k;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    size_t minb = 1, maxb = 64 << 20, factor = 2, n = 1000;
    int window = 16, c;
    while ((c = getopt(argc, argv, "b:e:f:n:w:")) != -1) {
        switch (c) {
        case 'b': minb = parse_size(optarg); break;
        case 'e': maxb = parse_size(optarg); break;
        case 'f': factor = parse_size(optarg); break;
        case 'n': n = parse_size(optarg); break;
        case 'w': window = atoi(optarg); break;
        default: MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "mpi_pingpong: run with -np 2\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char *buf = malloc(maxb);
    MPI_Request *reqs = malloc(sizeof(*reqs) * (size_t)window);
    memset(buf, rank + 1, maxb);
    int peer = 1 - rank;
    if (rank == 0)
        printf("# Open MPI point-to-point, 2 ranks\n# %10s %10s %10s\n", "size", "lat_us",
               "bw_MBps");
    for (size_t sz = minb; sz <= maxb; sz *= factor) {
        size_t it = iters_for(sz, n);
        double lat = 0, lat_t0 = 0;
        for (size_t i = 0; i <= it; i++) {
            if (i == 1)
                lat_t0 = MPI_Wtime(); /* timed as a whole after one warm-up, as tc-tpbench */
            if (rank == 0) {
                MPI_Send(buf, (int)sz, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                MPI_Recv(buf, (int)sz, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(buf, (int)sz, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, (int)sz, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
            }
        }
        if (it > 0)
            lat = MPI_Wtime() - lat_t0;
        size_t sit = it < (size_t)window ? (size_t)window : it;
        double t0 = MPI_Wtime();
        for (size_t i = 0; i < sit; i += (size_t)window) {
            int w = (int)(sit - i < (size_t)window ? sit - i : (size_t)window);
            for (int k = 0; k < w; k++) {
                if (rank == 0)
                    MPI_Isend(buf, (int)sz, MPI_BYTE, peer, 3, MPI_COMM_WORLD, &reqs[k]);
                else
                    MPI_Irecv(buf, (int)sz, MPI_BYTE, peer, 3, MPI_COMM_WORLD, &reqs[k]);
            }
            MPI_Waitall(w, reqs, MPI_STATUSES_IGNORE);
        }
        char ack = 0;
        if (rank == 0)
            MPI_Recv(&ack, 1, MPI_BYTE, peer, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else
            MPI_Send(&ack, 1, MPI_BYTE, peer, 4, MPI_COMM_WORLD);
        double secs = MPI_Wtime() - t0;
        if (rank == 0)
            printf("  %10zu %10.2f %10.1f\n", sz, lat / (double)it / 2 * 1e6,
                   (double)sz * (double)sit / secs / 1e6);
        fflush(stdout);
    }
    free(reqs);
    free(buf);
    MPI_Finalize();
    return 0;
}
