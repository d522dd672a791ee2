/* A job that must fit a small /dev/shm (tests/integration/run_shm_small.sh): barriers and
 * all-reduces of 1, 1000 and 20000 int64 elements (eager cells, pipelined or single copy),
 * every element checked against the sum worked out from every rank's inputs; then, with an
 * argument, it waits that many milliseconds before leaving (so that a sampler sees the peak).
 * Prints "rank R of N: C checks, F failures"; exit 0 only when F is 0. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tcomms/tcomms.h"

/* Rank r's element i. */
static int64_t input(int r, size_t i)
{
    return (int64_t)(r + 1) * (int64_t)(i % 1000 + 1) + (int64_t)i;
}

int main(int argc, char **argv)
{
    long hold_ms = argc > 1 ? strtol(argv[1], NULL, 10) : 0;
    tc_comm_t *comm;
    tc_status_t st = tc_comm_create(NULL, &comm);
    if (st != TC_OK) {
        fprintf(stderr, "tc_comm_create: %s: %s\n", tc_status_string(st), tc_last_error());
        return 2;
    }
    int rank, n, checks = 0, failures = 0;
    tc_comm_rank(comm, &rank);
    tc_comm_size(comm, &n);
    static const size_t counts[] = {1, 1000, 20000};
    int64_t *buf = malloc(20000 * sizeof(*buf)), *out = malloc(20000 * sizeof(*out));
    if (!buf || !out)
        return 2;
    for (int round = 0; round < 2; round++) {
        checks++;
        if ((st = tc_barrier(comm, NULL, NULL)) != TC_OK) {
            fprintf(stderr, "rank %d: barrier: %s: %s\n", rank, tc_status_string(st),
                    tc_last_error());
            failures++;
        }
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
            for (size_t i = 0; i < counts[c]; i++)
                buf[i] = input(rank, i);
            st = tc_all_reduce(comm, buf, out, counts[c], TC_INT64, TC_SUM, NULL, NULL);
            checks++;
            if (st != TC_OK) {
                fprintf(stderr, "rank %d: all_reduce of %zu: %s: %s\n", rank, counts[c],
                        tc_status_string(st), tc_last_error());
                failures++;
                continue;
            }
            size_t bad = 0, first = 0;
            for (size_t i = 0; i < counts[c]; i++) {
                int64_t want = 0;
                for (int r = 0; r < n; r++)
                    want += input(r, i);
                if (out[i] != want && bad++ == 0)
                    first = i;
            }
            checks++;
            if (bad) {
                fprintf(stderr, "rank %d: all_reduce of %zu: %zu wrong elements, first at %zu\n",
                        rank, counts[c], bad, first);
                failures++;
            }
        }
    }
    printf("rank %d of %d: %d checks, %d failures\n", rank, n, checks, failures);
    fflush(stdout);
    if (hold_ms > 0) {
        struct timespec ts = {hold_ms / 1000, (hold_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    free(buf);
    free(out);
    tc_comm_destroy(comm);
    return failures ? 1 : 0;
}
