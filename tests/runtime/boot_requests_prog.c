/*
 * One rank of a job that creates the world communicator, runs one barrier, makes a duplicate and
 * a split by list (the even ranks, in descending order), checks an all-reduce on each (the sum of
 * the world rank + 1 over its members), checks that lists differing between ranks fail with
 * TC_ERR_MISMATCH on every rank (and leave the world usable), and destroys them. Run by
 * boot_requests_test.sh with TC_LOG=runtime=debug, which reads from the log the bootstrap's count
 * of PMIx_Get calls and the bytes the dup and the split exchanged. Prints "boot_requests: ok" and
 * exits 0 when all went well.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tcomms/tcomms.h"

/* The all-reduce of world rank + 1 over @p comm against @p want; 0 when right. */
static int check_sum(tc_comm_t *comm, const char *what, int64_t mine, int64_t want)
{
    int64_t sum = -1;
    tc_status_t st = tc_all_reduce(comm, &mine, &sum, 1, TC_INT64, TC_SUM, NULL, NULL);
    if (st != TC_OK) {
        fprintf(stderr, "boot_requests: all_reduce on the %s: %s: %s\n", what, tc_status_string(st),
                tc_last_error());
        return 1;
    }
    if (sum != want) {
        fprintf(stderr, "boot_requests: all_reduce on the %s: %lld, want %lld\n", what,
                (long long)sum, (long long)want);
        return 1;
    }
    return 0;
}

int main(void)
{
    tc_comm_opts_t opts = TC_COMM_OPTS_INIT;
    opts.timeout_ms = 60000;
    tc_comm_t *comm = NULL, *dup = NULL, *evens = NULL;
    tc_status_t st = tc_comm_create(&opts, &comm);
    if (st != TC_OK) {
        fprintf(stderr, "boot_requests: create: %s: %s\n", tc_status_string(st), tc_last_error());
        return 1;
    }
    tc_comm_info_t info = {0};
    int bad = 1, *list = NULL;
    const char *what = "barrier";
    if ((st = tc_barrier(comm, NULL, NULL)) != TC_OK || (what = "info") == NULL ||
        (st = tc_comm_info(comm, &info)) != TC_OK || (what = "dup") == NULL ||
        (st = tc_comm_dup(comm, NULL, &dup)) != TC_OK)
        goto out;
    int n = (info.size + 1) / 2;
    if (!(list = malloc((size_t)n * sizeof(int))))
        goto out;
    for (int i = 0; i < n; i++)
        list[i] = 2 * (n - 1 - i);
    what = "split_ranks";
    if ((st = tc_comm_split_ranks(comm, list, n, NULL, &evens)) != TC_OK)
        goto out;
    int64_t all = (int64_t)info.size * (info.size + 1) / 2, even = (int64_t)n * n;
    bad = check_sum(dup, "dup", info.rank + 1, all);
    if ((evens != NULL) != (info.rank % 2 == 0)) {
        fprintf(stderr, "boot_requests: rank %d %s the even ranks' communicator\n", info.rank,
                evens ? "is in" : "is not in");
        bad = 1;
    } else if (evens) {
        tc_comm_info_t ei;
        if (tc_comm_info(evens, &ei) != TC_OK || ei.size != n || ei.rank != n - 1 - info.rank / 2) {
            fprintf(stderr,
                    "boot_requests: rank %d is rank %d of %d among the evens, want %d of %d\n",
                    info.rank, ei.rank, ei.size, n - 1 - info.rank / 2, n);
            bad = 1;
        }
        bad |= check_sum(evens, "evens", info.rank + 1, even);
    }
    /* lists that differ (rank 0: {0}, the others: {size - 1}): TC_ERR_MISMATCH on every rank */
    tc_comm_t *odd = NULL;
    int one = info.rank == 0 ? 0 : info.size - 1;
    tc_status_t mst =
        info.size > 1 ? tc_comm_split_ranks(comm, &one, 1, NULL, &odd) : TC_ERR_MISMATCH;
    if (mst != TC_ERR_MISMATCH || odd) {
        fprintf(stderr, "boot_requests: differing lists: %s (%s), want TC_ERR_MISMATCH\n",
                tc_status_string(mst), tc_last_error());
        tc_comm_destroy(odd);
        bad = 1;
    }
    if (!bad)
        bad = check_sum(comm, "world after the mismatch", info.rank + 1, all);
out:
    if (st != TC_OK)
        fprintf(stderr, "boot_requests: %s: %s: %s\n", what, tc_status_string(st), tc_last_error());
    else if (!bad)
        printf("boot_requests: ok\n");
    free(list);
    tc_comm_destroy(evens);
    tc_comm_destroy(dup);
    tc_comm_destroy(comm);
    return st == TC_OK && !bad ? 0 : 1;
}
