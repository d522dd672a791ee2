/* Shrink's agreement with failures placed inside it (TC_FAULT_INJECT).
 *
 *   agree_test VICTIM        (under tcrun --keep-going, TC_FAULT_INJECT set)
 *
 * Rank VICTIM dies before the first all-reduce. The others all-reduce; on a
 * failure they shrink and try again on the new communicator, at most 6
 * times. TC_FAULT_INJECT makes other ranks die at chosen points of the
 * shrinks (half way through the sends of a round). Each rank that finishes
 * all-reduces its world rank over the final communicator, gathers the world
 * ranks of its members, checks the sum against them and prints
 *   rank R: members A,B,C after S shrink(s), first shrink size N: 0 failures
 * run_fault.sh checks that every rank still alive printed the same members,
 * and that they are exactly the ranks still alive. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft_fail.h"
#include "tcomms/tcomms.h"

static int rank = -1, fails;

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: agree_test VICTIM\n");
        return 2;
    }
    int victim = atoi(argv[1]);
    tc_comm_t *comm;
    if (tc_comm_create(NULL, &comm) != TC_OK) {
        fprintf(stderr, "create: %s\n", tc_last_error());
        return 1;
    }
    int size;
    tc_comm_rank(comm, &rank);
    tc_comm_size(comm, &size);
    if (rank == victim) {
        fflush(stdout);
        raise(SIGKILL);
    }
    int64_t mine = rank, sum = -1;
    int shrinks = 0, first_size = -1;
    tc_status_t st;
    while ((st = tc_all_reduce(comm, &mine, &sum, 1, TC_INT64, TC_SUM, NULL, NULL)) != TC_OK) {
        if (st != TC_ERR_PEER_FAILED && st != TC_ERR_REVOKED)
            FAIL("all_reduce after %d shrink(s): %s (%s)", shrinks, tc_status_string(st),
                 tc_last_error());
        if (shrinks == 6) {
            FAIL("still failing after %d shrinks", shrinks);
            break;
        }
        tc_comm_t *small = NULL;
        if ((st = tc_comm_shrink(comm, NULL, &small)) != TC_OK) {
            FAIL("shrink %d: %s (%s)", shrinks + 1, tc_status_string(st), tc_last_error());
            break;
        }
        if (comm != NULL && shrinks > 0)
            tc_comm_destroy(comm);
        comm = small;
        shrinks++;
        if (first_size < 0)
            tc_comm_size(comm, &first_size);
    }
    if (st == TC_OK) {
        int n;
        tc_comm_size(comm, &n);
        int32_t me = rank, *members = calloc((size_t)n, sizeof(int32_t));
        st = tc_all_gather(comm, &me, members, 1, TC_INT32, NULL, NULL);
        if (st != TC_OK) {
            FAIL("all_gather of the members: %s (%s)", tc_status_string(st), tc_last_error());
        } else {
            int64_t want = 0;
            char list[512];
            size_t used = 0;
            list[0] = '\0';
            for (int i = 0; i < n; i++) {
                want += members[i];
                int k = snprintf(list + used, sizeof(list) - used, "%s%d", i ? "," : "",
                                 (int)members[i]);
                if (k > 0 && (size_t)k < sizeof(list) - used)
                    used += (size_t)k;
            }
            if (sum != want)
                FAIL("all_reduce of the world ranks gave %lld, the members sum to %lld",
                     (long long)sum, (long long)want);
            printf("rank %d: members %s after %d shrink(s), first shrink size %d\n", rank, list,
                   shrinks, first_size);
        }
        free(members);
    }
    printf("rank %d: agree victim %d: %d failures\n", rank, victim, fails);
    fflush(stdout);
    return fails != 0;
}
