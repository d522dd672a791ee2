/*
 * A rank the others counted as failed and shrank away, that comes back: its own
 * tc_comm_shrink must fail (TC_ERR_PEER_FAILED saying it was cut off), not hand it a
 * communicator of itself alone while the others hold theirs without it. Run under tcrun
 * --keep-going by run_fault.sh:
 *
 *   stop_resume_test VICTIM DIR
 *
 * Rank VICTIM stops itself (SIGSTOP) before an all-reduce; the others find it by heartbeat,
 * fail the all-reduce and each leave an empty file in DIR, and rank (VICTIM + 1) % n wakes it
 * (SIGCONT) once all of them did, before every rank shrinks. The others must get
 * a communicator of n - 1 ranks whose all-reduce is right; the victim TC_ERR_PEER_FAILED. Each
 * prints "stop_resume: OK ..." or "stop_resume: FAIL ...".
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tcomms/tcomms.h"

/* A survivor says it saw the failure: an empty file DIR/seen.RANK. */
static void mark(const char *dir, int rank)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/seen.%d", dir, rank);
    FILE *f = fopen(path, "w");
    if (f)
        fclose(f);
}

/* Every rank but the victim has marked, within 30 s. */
static int all_marked(const char *dir, int n, int victim)
{
    for (int tries = 0; tries < 3000; tries++) {
        int seen = 0;
        for (int q = 0; q < n; q++) {
            char path[512];
            snprintf(path, sizeof(path), "%s/seen.%d", dir, q);
            seen += q != victim && access(path, F_OK) == 0;
        }
        if (seen == n - 1)
            return 1;
        usleep(10000);
    }
    return 0;
}

static int fail(int rank, const char *what, tc_status_t st)
{
    printf("stop_resume: FAIL rank %d: %s: %s %s\n", rank, what, tc_status_string(st),
           st != TC_OK ? tc_last_error() : "");
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: stop_resume_test VICTIM DIR\n");
        return 2;
    }
    int victim = atoi(argv[1]), rank, n;
    tc_comm_t *comm, *shrunk = NULL;
    tc_comm_opts_t opts = TC_COMM_OPTS_INIT;
    opts.timeout_ms = 20000;
    tc_status_t st = tc_comm_create(&opts, &comm);
    if (st != TC_OK)
        return fail(-1, "create", st);
    if ((st = tc_comm_rank(comm, &rank)) != TC_OK || (st = tc_comm_size(comm, &n)) != TC_OK)
        return fail(-1, "rank", st);
    int32_t pid = (int32_t)getpid(), pids[64];
    if (n > 64 || (st = tc_all_gather(comm, &pid, pids, 1, TC_INT32, NULL, NULL)) != TC_OK)
        return fail(rank, "all_gather of the pids", st);
    int64_t x = rank + 1, sum = 0;
    if (rank == victim)
        raise(SIGSTOP);
    st = tc_all_reduce(comm, &x, &sum, 1, TC_INT64, TC_SUM, NULL, NULL);
    if (rank != victim && st != TC_ERR_PEER_FAILED)
        return fail(rank, "the all-reduce with the stopped rank", st);
    if (rank != victim)
        mark(argv[2], rank);
    if (rank == (victim + 1) % n) { /* once every other rank has seen the failure too */
        if (!all_marked(argv[2], n, victim))
            return fail(rank, "waiting 30 s for the others to see the failure", TC_OK);
        kill(pids[victim], SIGCONT);
    }
    st = tc_comm_shrink(comm, NULL, &shrunk);
    if (rank == victim) {
        if (st != TC_ERR_PEER_FAILED || !strstr(tc_last_error(), "cut off"))
            return fail(rank, "the shrink of the rank the others left out", st);
        printf("stop_resume: OK rank %d: %s\n", rank, tc_last_error());
        tc_comm_destroy(comm);
        return 0;
    }
    int size = 0;
    if (st != TC_OK || (st = tc_comm_size(shrunk, &size)) != TC_OK || size != n - 1)
        return fail(rank, "the survivors' shrink", st);
    int64_t want = (int64_t)n * (n + 1) / 2 - (victim + 1);
    x = rank + 1;
    if ((st = tc_all_reduce(shrunk, &x, &sum, 1, TC_INT64, TC_SUM, NULL, NULL)) != TC_OK ||
        sum != want)
        return fail(rank, "the all-reduce after the shrink", st);
    printf("stop_resume: OK rank %d: %d ranks, sum %lld\n", rank, size, (long long)sum);
    tc_comm_destroy(shrunk);
    tc_comm_destroy(comm);
    return 0;
}
