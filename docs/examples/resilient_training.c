/* A training-style loop that survives losing ranks: each step all-reduces a
 * "gradient"; when a rank fails, every survivor sees TC_ERR_PEER_FAILED
 * naming it, the survivors agree on who is gone with tc_comm_shrink(), and
 * the loop goes on with the smaller communicator.
 *
 * Run under tcrun with --keep-going (so that a dead rank does not stop the
 * job) and make one rank die, e.g.:
 *   tcrun --keep-going -n 4 resilient_training --die-rank 2 --die-step 50
 * Each survivor checks every step's result against the sum it expects from
 * the ranks still alive. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/tcomms.h"

#define STEPS 200
#define PARAMS 4096

int main(int argc, char **argv)
{
    int die_rank = -1, die_step = -1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--die-rank") == 0)
            die_rank = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--die-step") == 0)
            die_step = atoi(argv[i + 1]);
    }
    tc_comm_t *comm;
    if (tc_comm_create(NULL, &comm) != TC_OK) {
        fprintf(stderr, "tc_comm_create: %s\n", tc_last_error());
        return 1;
    }
    int world_rank, size;
    tc_comm_rank(comm, &world_rank);
    tc_comm_size(comm, &size);
    /* which of the original ranks are still here, to check the sums */
    int *alive = malloc((size_t)size * sizeof(int));
    for (int r = 0; r < size; r++)
        alive[r] = 1;

    float *grad = malloc(PARAMS * sizeof(float)), *sum = malloc(PARAMS * sizeof(float));
    int wrong = 0, recoveries = 0;
    for (int step = 0; step < STEPS; step++) {
        if (world_rank == die_rank && step == die_step)
            raise(SIGKILL); /* a node lost in the middle of training */
        for (int i = 0; i < PARAMS; i++)
            grad[i] = (float)(world_rank + (i + step) % 7);
        tc_status_t st = tc_all_reduce(comm, grad, sum, PARAMS, TC_FLOAT32, TC_SUM, NULL, NULL);
        if (st == TC_ERR_PEER_FAILED || st == TC_ERR_REVOKED) {
            /* 1. detect: the error names the failed rank, its host and pid */
            printf("rank %d: step %d: %s\n", world_rank, step, tc_last_error());
            /* 2. shrink: the survivors agree on who is gone */
            int failed[64], nfailed = 0;
            tc_comm_failed_ranks(comm, failed, 64, &nfailed);
            tc_comm_t *smaller;
            if (tc_comm_shrink(comm, NULL, &smaller) != TC_OK) {
                fprintf(stderr, "rank %d: shrink: %s\n", world_rank, tc_last_error());
                return 1;
            }
            /* the old communicator's ranks map to world ranks only here, where
             * the first one is the world itself */
            if (recoveries == 0)
                for (int k = 0; k < nfailed && k < 64; k++)
                    alive[failed[k]] = 0;
            tc_comm_destroy(comm);
            comm = smaller;
            recoveries++;
            int new_size;
            tc_comm_size(comm, &new_size);
            printf("rank %d: continuing with %d ranks\n", world_rank, new_size);
            step--; /* 3. redo the step with the survivors */
            continue;
        }
        if (st != TC_OK) {
            fprintf(stderr, "rank %d: step %d: %s\n", world_rank, step, tc_last_error());
            return 1;
        }
        for (int i = 0; i < PARAMS; i++) {
            float want = 0;
            for (int r = 0; r < size; r++)
                if (alive[r])
                    want += (float)(r + (i + step) % 7);
            if (sum[i] != want) {
                wrong++;
                break;
            }
        }
    }
    printf("rank %d: %d steps, %d recoveries, %d wrong sums\n", world_rank, STEPS, recoveries,
           wrong);
    tc_comm_destroy(comm);
    free(grad);
    free(sum);
    free(alive);
    return wrong != 0;
}
