/*
 * Revokes that race a shrink's end: every rank revokes the communicator a shrink gave it the
 * moment it has it, and shrinks it again, ROUNDS times; then an all-reduce on the last one,
 * checked. A quicker rank's revoke of the new communicator reached a slower one before its
 * shrink had made it: the slower one spoilt the id, its shrink failed ("communicator id 1 is
 * reserved here by a creation on another thread"), and the others went on with a member that
 * had no communicator. Run under tcrun by run_fault.sh:
 *
 *   revoke_chain_test ROUNDS
 *
 * Each rank prints "revoke_chain: OK ..." or "revoke_chain: FAIL ...".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tcomms/tcomms.h"

static int fail(int rank, int round, const char *what, tc_status_t st)
{
    printf("revoke_chain: FAIL rank %d round %d: %s: %s %s\n", rank, round, what,
           tc_status_string(st), st != TC_OK ? tc_last_error() : "");
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: revoke_chain_test ROUNDS\n");
        return 2;
    }
    int rounds = atoi(argv[1]), rank, n;
    tc_comm_t *world, *comm;
    tc_comm_opts_t opts = TC_COMM_OPTS_INIT;
    opts.timeout_ms = 20000;
    tc_status_t st = tc_comm_create(&opts, &world);
    if (st != TC_OK)
        return fail(-1, 0, "create", st);
    if ((st = tc_comm_rank(world, &rank)) != TC_OK || (st = tc_comm_size(world, &n)) != TC_OK)
        return fail(-1, 0, "rank", st);
    /* a dup destroyed cleanly first: its id goes back to the free tail, and a shrink that took
     * it would have it spoilt under it by a quicker rank's early revoke */
    tc_comm_t *dup;
    if ((st = tc_comm_dup(world, NULL, &dup)) != TC_OK || (st = tc_comm_destroy(dup)) != TC_OK)
        return fail(rank, 0, "dup", st);
    comm = world;
    if (rank == 0)
        (void)tc_comm_revoke(comm);
    for (int round = 0; round <= rounds; round++) {
        tc_comm_t *next = NULL;
        int size = 0;
        usleep(300000); /* every rank has the notice: they shrink together, and end together */
        if ((st = tc_comm_shrink(comm, NULL, &next)) != TC_OK ||
            (st = tc_comm_size(next, &size)) != TC_OK || size != n)
            return fail(rank, round, "shrink of the revoked communicator", st);
        if (comm != world)
            (void)tc_comm_destroy(comm);
        comm = next;
        if (round < rounds)
            (void)tc_comm_revoke(comm); /* at once: a slower rank may still be in its shrink */
    }
    int64_t x = rank + 1, sum = 0;
    if ((st = tc_all_reduce(comm, &x, &sum, 1, TC_INT64, TC_SUM, NULL, NULL)) != TC_OK ||
        sum != (int64_t)n * (n + 1) / 2)
        return fail(rank, rounds, "all-reduce on the last communicator", st);
    printf("revoke_chain: OK rank %d: %d rounds\n", rank, rounds);
    tc_comm_destroy(comm);
    tc_comm_destroy(world);
    return 0;
}
