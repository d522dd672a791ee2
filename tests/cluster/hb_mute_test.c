/* Heartbeats against data: one rank of a 2-rank job across two nodes of
 * tests/cluster/vcluster.sh sends no heartbeats (TC_FAULT_INJECT=mute:rank=1,
 * as when they wait behind bulk data on a slow link), with the default
 * heartbeat settings (run_hb_mute.sh).
 *
 *   hb_mute_test stream SECONDS   all-reduce 1 MiB (int32, sum, checked element
 *                                 by element) for SECONDS: rank 1's data flows
 *                                 all along, so nobody may be failed;
 *   hb_mute_test quiet            each rank waits for a message the other never
 *                                 sends (10 s timeout): rank 1 is silent, and rank 0
 *                                 must fail it ("sent no heartbeat") within 5 s.
 *
 * Prints "rank R: ... 0 failures" (or "rank R: FAIL: ..."); exit status 1 on
 * a failure. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tcomms/tcomms.h"
#include "tests/fault/ft_fail.h"

#define HM_COUNT (256 * 1024) /* int32: 1 MiB */
#define HM_QUIET_TIMEOUT_MS 10000
#define HM_QUIET_BOUND_MS 5000

static int rank = -1, fails;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* All-reduce for @p seconds (rank 0's clock decides, carried in the last
 * element), each result checked against the sum computed here. */
static void stream(tc_comm_t *comm, int size, double seconds)
{
    int32_t *in = malloc(HM_COUNT * sizeof(int32_t)), *out = malloc(HM_COUNT * sizeof(int32_t));
    double t0 = now_ms();
    int it = 0, done = 0;
    if (!in || !out) {
        FAIL("no memory");
        goto out;
    }
    while (!done) {
        for (int i = 0; i < HM_COUNT - 1; i++)
            in[i] = (rank + 1) * (i % 1000 + it);
        in[HM_COUNT - 1] = rank == 0 && now_ms() - t0 >= seconds * 1e3;
        tc_status_t st = tc_all_reduce(comm, in, out, HM_COUNT, TC_INT32, TC_SUM, NULL, NULL);
        if (st != TC_OK) {
            FAIL("all_reduce #%d after %.0f ms: %s: %s", it, now_ms() - t0, tc_status_string(st),
                 tc_last_error());
            goto out;
        }
        const int32_t ranks = size * (size + 1) / 2;
        for (int i = 0; i < HM_COUNT - 1; i++)
            if (out[i] != ranks * (i % 1000 + it)) {
                FAIL("all_reduce #%d: [%d] = %d, want %d", it, i, out[i], ranks * (i % 1000 + it));
                goto out;
            }
        done = out[HM_COUNT - 1] != 0;
        it++;
    }
    int nfailed = -1;
    if (tc_comm_failed_ranks(comm, NULL, 0, &nfailed) != TC_OK || nfailed != 0)
        FAIL("%d ranks known failed after the stream", nfailed);
    printf("rank %d: stream: %d all-reduces of 1 MiB in %.0f ms\n", rank, it, now_ms() - t0);
out:
    free(in);
    free(out);
}

static void quiet(tc_comm_t *comm)
{
    tc_op_opts_t o = TC_OP_OPTS_INIT;
    int32_t v = 0;
    double t0 = now_ms();
    o.timeout_ms = HM_QUIET_TIMEOUT_MS;
    tc_status_t st = tc_recv(comm, &v, 1, TC_INT32, 1 - rank, &o, NULL);
    double ms = now_ms() - t0;
    printf("rank %d: quiet: recv from rank %d after %.0f ms: %s: %s\n", rank, 1 - rank, ms,
           tc_status_string(st), st == TC_OK ? "" : tc_last_error());
    if (rank != 0)
        return; /* the silent one: whatever it learns, it learns in bounded time */
    if (st != TC_ERR_PEER_FAILED || strstr(tc_last_error(), "sent no heartbeat") == NULL)
        FAIL("rank 1, silent, was not failed for its heartbeats");
    else if (ms > HM_QUIET_BOUND_MS)
        FAIL("rank 1 failed after %.0f ms (bound %d)", ms, HM_QUIET_BOUND_MS);
}

int main(int argc, char **argv)
{
    int size = 0;
    tc_comm_t *comm;
    if (argc < 2 || (strcmp(argv[1], "stream") == 0) != (argc == 3) ||
        (strcmp(argv[1], "stream") != 0 && strcmp(argv[1], "quiet") != 0)) {
        fprintf(stderr, "usage: hb_mute_test stream SECONDS | quiet\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (tc_comm_create(NULL, &comm) != TC_OK) {
        fprintf(stderr, "create: %s\n", tc_last_error());
        return 1;
    }
    tc_comm_rank(comm, &rank);
    tc_comm_size(comm, &size);
    if (size != 2)
        FAIL("%d ranks: run 2", size);
    else if (argc == 3)
        stream(comm, size, atof(argv[2]));
    else
        quiet(comm);
    tc_comm_destroy(comm);
    printf("rank %d: %d failures\n", rank, fails);
    return fails ? 1 : 0;
}
