/*
 * One rank of a job that creates the world communicator, runs one barrier and destroys it.
 * Run by boot_requests_test.sh with TC_LOG=runtime=debug, which reads the bootstrap's count of
 * PMIx_Get calls from the log. Prints "boot_requests: ok" and exits 0 when all went well.
 */
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
    st = tc_barrier(comm, NULL, NULL);
    if (st != TC_OK)
        fprintf(stderr, "boot_requests: barrier: %s: %s\n", tc_status_string(st), tc_last_error());
    else
        printf("boot_requests: ok\n");
    tc_comm_destroy(comm);
    return st == TC_OK ? 0 : 1;
}
