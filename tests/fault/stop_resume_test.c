/*
 * A rank the others counted as failed and shrank away, that comes back: its own
 * tc_comm_shrink must fail (TC_ERR_PEER_FAILED saying it was cut off), not hand it a
 * communicator of itself alone while the others hold theirs without it. Run under tcrun
 * --keep-going by run_fault.sh:
 *
 *   stop_resume_test VICTIM
 *
 * Rank VICTIM stops itself (SIGSTOP) before an all-reduce; the others find it by heartbeat,
 * fail the all-reduce, and rank (VICTIM + 1) % n wakes it (SIGCONT) before every rank
 * shrinks (2 s after it saw the failure, so that every other rank saw it too). The others must get
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

static int fail(int rank, const char *what, tc_status_t st)
{
    printf("stop_resume: FAIL rank %d: %s: %s %s\n", rank, what, tc_status_string(st),
           st != TC_OK ? tc_last_error() : "");
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: stop_resume_test VICTIM\n");
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
    if (rank == (victim + 1) % n) { /* once every other rank has seen the failure too */
        sleep(2);
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
