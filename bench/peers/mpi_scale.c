/* Open MPI's side of the scale benchmark (bench/run_scale.sh): scale_probe.c's measurements with
 * MPI_Init in place of tc_comm_create, MPI_Comm_dup/split in place of tc_comm_dup/split, and the
 * same line of key=value fields (eps: -1, MPI does not say how many peers it connected), all
 * printed by rank 0.
 *   mpirun -np N mpi_scale [-c "1 10 100 1000"] [-n iters] */
#include <mpi.h>
#include <stdint.h>

#include "../scale_stats.h"

#define MAX_COMMS 4096

static int comm_round(int rank, int k, int split, char *out, size_t cap)
{
    static MPI_Comm comms[MAX_COMMS];
    scale_stats_t before, made, after;
    scale_read(&before);
    for (int i = 0; i < k; i++)
        if ((split ? MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &comms[i])
                   : MPI_Comm_dup(MPI_COMM_WORLD, &comms[i])) != MPI_SUCCESS)
            return 1;
    scale_read(&made);
    for (int i = 0; i < k; i++)
        MPI_Comm_free(&comms[i]);
    scale_read(&after);
    scale_comm_fields(out, cap, split ? "split" : "dup", k, &before, &made, &after);
    return 0;
}

int main(int argc, char **argv)
{
    const char *counts = "1 10 100 1000";
    int iters = 20, c;
    double t = scale_now_us();
    MPI_Init(&argc, &argv);
    double create_ms = (scale_now_us() - t) / 1e3, launch_ms = scale_ms_since_launch();
    while ((c = getopt(argc, argv, "c:n:")) != -1) {
        if (c == 'c')
            counts = optarg;
        else if (c == 'n' && atoi(optarg) > 0)
            iters = atoi(optarg);
        else
            MPI_Abort(MPI_COMM_WORLD, 2);
    }
    scale_stats_t s;
    scale_read(&s);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 0; i < 2; i++)
        MPI_Barrier(MPI_COMM_WORLD);
    t = scale_now_us();
    for (int i = 0; i < iters; i++)
        MPI_Barrier(MPI_COMM_WORLD);
    double barrier_us = (scale_now_us() - t) / iters, allreduce_us = 0;
    int ar_ok = 1;
    for (int i = -2; i < iters; i++) {
        int64_t in = rank + 1 + (i < 0 ? 0 : i), outv = -1;
        t = scale_now_us();
        MPI_Allreduce(&in, &outv, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        if (i >= 0)
            allreduce_us += scale_now_us() - t;
        ar_ok &= outv == (int64_t)size * (size + 1) / 2 + (int64_t)size * (i < 0 ? 0 : i);
    }
    allreduce_us /= iters;
    char line[8192];
    int n =
        snprintf(line, sizeof line,
                 "scale rank=%d size=%d launch_ms=%.1f create_ms=%.1f rss_kib=%ld hwm_kib=%ld"
                 " heap_kib=%ld threads=%ld fds=%ld socks=%ld shm_segs=%ld shm_kib=%ld"
                 " eps_create=-1 eps=-1 barrier_us=%.1f allreduce_us=%.1f ar_ok=%d",
                 rank, size, launch_ms, create_ms, s.rss_kib, s.hwm_kib, s.heap_b / 1024, s.threads,
                 s.fds, s.socks, s.shm_segs, s.shm_kib, barrier_us, allreduce_us, ar_ok);
    for (const char *p = counts; *p;) {
        char *end;
        long k = strtol(p, &end, 10);
        if (end == p || k < 1 || k > MAX_COMMS)
            break;
        for (int split = 0; split < 2; split++) {
            if (comm_round(rank, (int)k, split, line + n, sizeof line - (size_t)n))
                MPI_Abort(MPI_COMM_WORLD, 1);
            n += (int)strlen(line + n);
        }
        p = end + strspn(end, " ,");
    }
    scale_read(&s);
    snprintf(line + n, sizeof line - (size_t)n, " end_rss_kib=%ld end_hwm_kib=%ld end_fds=%ld",
             s.rss_kib, s.hwm_kib, s.fds);
    /* Rank 0 prints every line: mpirun forwards output in chunks, and long lines of different
     * ranks came out interleaved. */
    char *all = rank == 0 ? malloc((size_t)size * sizeof line) : NULL;
    if (rank == 0 && !all)
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Gather(line, (int)sizeof line, MPI_CHAR, all, (int)sizeof line, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    for (int r = 0; rank == 0 && r < size; r++)
        printf("%s\n", all + (size_t)r * sizeof line);
    fflush(stdout);
    free(all);
    MPI_Finalize();
    return ar_ok ? 0 : 1;
}
