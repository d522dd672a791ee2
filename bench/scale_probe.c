/* One rank of the scale benchmark (bench/run_scale.sh): creates the world, measures what the rank
 * holds (scale_stats.h), times a barrier and an 8-byte all-reduce (and checks its sum), then
 * creates and destroys K communicators by dup and by split for each K of -c, and prints one line
 * of key=value fields:
 *   scale_probe [-c "1 10 100 1000"] [-n iters]
 * Exit status 0 when every call succeeded and every all-reduce was right; fields ending in _left
 * are what stayed after the destroys (scale_report.awk checks them). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tcomms/tcomms.h>

#include "scale_stats.h"

#define MAX_COMMS 4096

static int fail(const char *what, tc_status_t st)
{
    fprintf(stderr, "scale_probe: %s: %s: %s\n", what, tc_status_string(st), tc_last_error());
    return 1;
}

/* K communicators made by dup (split = 0) or split by rank parity, then destroyed: what one
 * costs (RSS and heap KiB per communicator, descriptors in all) and what stays after. */
static int comm_round(tc_comm_t *world, int rank, int k, int split, char *out, size_t cap)
{
    static tc_comm_t *comms[MAX_COMMS];
    scale_stats_t before, made, after;
    tc_status_t st;
    scale_read(&before);
    for (int i = 0; i < k; i++) {
        st = split ? tc_comm_split(world, rank % 2, rank, NULL, &comms[i])
                   : tc_comm_dup(world, NULL, &comms[i]);
        if (st != TC_OK)
            return fail(split ? "tc_comm_split" : "tc_comm_dup", st);
    }
    scale_read(&made);
    for (int i = 0; i < k; i++)
        if ((st = tc_comm_destroy(comms[i])) != TC_OK)
            return fail("tc_comm_destroy", st);
    scale_read(&after);
    scale_comm_fields(out, cap, split ? "split" : "dup", k, &before, &made, &after);
    return 0;
}

static int connected(tc_comm_t *comm)
{
    tc_comm_info_t info;
    if (tc_comm_info(comm, &info) != TC_OK)
        return -1;
    return info.peers_shm + info.peers_tcp + info.peers_self;
}

int main(int argc, char **argv)
{
    const char *counts = "1 10 100 1000";
    int iters = 20, c;
    while ((c = getopt(argc, argv, "c:n:")) != -1) {
        if (c == 'c')
            counts = optarg;
        else if (c == 'n' && atoi(optarg) > 0)
            iters = atoi(optarg);
        else {
            fprintf(stderr, "usage: scale_probe [-c \"1 10 100 1000\"] [-n iters]\n");
            return 2;
        }
    }
    tc_comm_t *world;
    double t = scale_now_us();
    tc_status_t st = tc_comm_create(NULL, &world);
    double create_ms = (scale_now_us() - t) / 1e3, launch_ms = scale_ms_since_launch();
    if (st != TC_OK)
        return fail("tc_comm_create", st);
    scale_stats_t s;
    scale_read(&s);
    int rank, size, eps_create = connected(world);
    tc_comm_rank(world, &rank);
    tc_comm_size(world, &size);

    for (int i = 0; i < 2; i++)
        if ((st = tc_barrier(world, NULL, NULL)) != TC_OK)
            return fail("tc_barrier", st);
    t = scale_now_us();
    for (int i = 0; i < iters; i++)
        if ((st = tc_barrier(world, NULL, NULL)) != TC_OK)
            return fail("tc_barrier", st);
    double barrier_us = (scale_now_us() - t) / iters;
    /* Sum of rank + 1 + i over ranks: every iteration's value differs, so a stale result shows. */
    int ar_ok = 1;
    double allreduce_us = 0;
    for (int i = -2; i < iters; i++) {
        int64_t in = rank + 1 + (i < 0 ? 0 : i), outv = -1;
        t = scale_now_us();
        if ((st = tc_all_reduce(world, &in, &outv, 1, TC_INT64, TC_SUM, NULL, NULL)) != TC_OK)
            return fail("tc_all_reduce", st);
        if (i >= 0)
            allreduce_us += scale_now_us() - t;
        int64_t want = (int64_t)size * (size + 1) / 2 + (int64_t)size * (i < 0 ? 0 : i);
        if (outv != want) {
            fprintf(stderr, "scale_probe: rank %d: all_reduce %d gave %lld, want %lld\n", rank, i,
                    (long long)outv, (long long)want);
            ar_ok = 0;
        }
    }
    allreduce_us /= iters;
    int eps = connected(world);

    char line[8192];
    int n = snprintf(line, sizeof line,
                     "scale rank=%d size=%d launch_ms=%.1f create_ms=%.1f rss_kib=%ld hwm_kib=%ld"
                     " heap_kib=%ld threads=%ld fds=%ld socks=%ld shm_segs=%ld shm_kib=%ld"
                     " eps_create=%d eps=%d barrier_us=%.1f allreduce_us=%.1f ar_ok=%d",
                     rank, size, launch_ms, create_ms, s.rss_kib, s.hwm_kib, s.heap_b / 1024,
                     s.threads, s.fds, s.socks, s.shm_segs, s.shm_kib, eps_create, eps, barrier_us,
                     allreduce_us, ar_ok);
    /* One dup and one split made and destroyed before the measured rounds: the connections their
     * operations open (a split's all-gather reaches peers the barrier and all-reduce did not)
     * belong to the peers used, not to the communicators measured. */
    for (int split = 0; split < 2; split++) {
        tc_comm_t *warm;
        st = split ? tc_comm_split(world, rank % 2, rank, NULL, &warm)
                   : tc_comm_dup(world, NULL, &warm);
        if (st != TC_OK || (st = tc_comm_destroy(warm)) != TC_OK)
            return fail("warming up dup and split", st);
    }
    int eps_warm = connected(world);
    n += snprintf(line + n, sizeof line - (size_t)n, " eps_warm=%d", eps_warm);
    for (const char *p = counts; *p;) {
        char *end;
        long k = strtol(p, &end, 10);
        if (end == p)
            break;
        if (k < 1 || k > MAX_COMMS) {
            fprintf(stderr, "scale_probe: -c: %ld communicators: from 1 to %d\n", k, MAX_COMMS);
            return 2;
        }
        for (int split = 0; split < 2; split++)
            if (comm_round(world, rank, (int)k, split, line + n, sizeof line - (size_t)n))
                return 1;
            else
                n += (int)strlen(line + n);
        p = end + strspn(end, " ,");
    }
    scale_read(&s);
    printf("%s eps_end=%d end_rss_kib=%ld end_hwm_kib=%ld end_fds=%ld\n", line, connected(world),
           s.rss_kib, s.hwm_kib, s.fds);
    fflush(stdout);
    if ((st = tc_comm_destroy(world)) != TC_OK)
        return fail("tc_comm_destroy", st);
    return ar_ok ? 0 : 1;
}
