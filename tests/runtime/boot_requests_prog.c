/*
 * One rank of a job that creates the world communicator, runs one barrier, duplicates it, checks
 * an all-reduce on the duplicate (the sum of rank + 1) and destroys both. Run by
 * boot_requests_test.sh with TC_LOG=runtime=debug, which reads from the log the bootstrap's count
 * of PMIx_Get calls and the bytes the dup exchanged. Prints "boot_requests: ok" and exits 0 when
 * all went well.
 */
#include <stdint.h>
#include <stdio.h>

#include "tcomms/tcomms.h"

int main(void)
{
    tc_comm_opts_t opts = TC_COMM_OPTS_INIT;
    opts.timeout_ms = 60000;
    tc_comm_t *comm = NULL;
    tc_status_t st = tc_comm_create(&opts, &comm);
    if (st != TC_OK) {
        fprintf(stderr, "boot_requests: create: %s: %s\n", tc_status_string(st), tc_last_error());
        return 1;
    }
    tc_comm_t *dup = NULL;
    tc_comm_info_t info = {0};
    int64_t mine = 0, sum = -1;
    const char *what = "barrier";
    if ((st = tc_barrier(comm, NULL, NULL)) == TC_OK && (what = "dup") &&
        (st = tc_comm_dup(comm, NULL, &dup)) == TC_OK && (what = "info") &&
        (st = tc_comm_info(dup, &info)) == TC_OK && (what = "all_reduce")) {
        mine = info.rank + 1;
        st = tc_all_reduce(dup, &mine, &sum, 1, TC_INT64, TC_SUM, NULL, NULL);
    }
    int64_t want = (int64_t)info.size * (info.size + 1) / 2;
    if (st != TC_OK)
        fprintf(stderr, "boot_requests: %s: %s: %s\n", what, tc_status_string(st), tc_last_error());
    else if (sum != want)
        fprintf(stderr, "boot_requests: all_reduce on the dup: %lld, want %lld\n", (long long)sum,
                (long long)want);
    else
        printf("boot_requests: ok\n");
    tc_comm_destroy(dup);
    tc_comm_destroy(comm);
    return st == TC_OK && sum == want ? 0 : 1;
}
