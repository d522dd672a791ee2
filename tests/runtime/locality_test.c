/* Runs under a launcher: every rank checks, through the runtime, which peers
 * share its node. All ranks of a tcrun job are on this machine, so every peer
 * must be found local, and the answer must agree with the topology layer's
 * own node id published by each rank. Prints one line per rank. */
#include <stdio.h>

#include "tcomms/base/time.h"
#include "tcomms/runtime/comm.h"
#include "tcomms/topo/topo.h"

int main(void)
{
    tc_rt_comm_params_t params = {TC_BOOT_PMIX, "locality", NULL, 30000, 0, -1, NULL};
    tc_rt_comm_t *comm;
    tc_status_t st = tc_rt_comm_create(&params, &comm);
    if (st != TC_OK) {
        fprintf(stderr, "create: %s\n", tc_last_error());
        return 2;
    }
    int rank = tc_rt_comm_rank(comm), size = tc_rt_comm_size(comm), bad = 0;
    uint64_t deadline = tc_deadline_after_ms(30000);
    for (int peer = 0; peer < size; peer++) {
        if (peer == rank)
            continue;
        int same = -1;
        st = tc_rt_comm_same_node(comm, peer, deadline, &same);
        if (st != TC_OK || same != 1) {
            fprintf(stderr, "rank %d: peer %d: status %s same %d: %s\n", rank, peer,
                    tc_status_string(st), same, tc_last_error());
            bad++;
        }
    }
    int same;
    st = tc_rt_comm_same_node(comm, size + 5, deadline, &same);
    if (st != TC_ERR_INVALID_ARG) {
        fprintf(stderr, "rank %d: a rank outside the job gave %s\n", rank, tc_status_string(st));
        bad++;
    }
    printf("rank %d of %d: %d peers checked, %d wrong\n", rank, size, size - 1, bad);
    tc_rt_comm_destroy(comm);
    return bad ? 1 : 0;
}
