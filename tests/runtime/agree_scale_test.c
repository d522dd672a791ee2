/* The shrink agreement at scale: every rank's state machine over a simulated
 * network with crashes (tools/tc-sim/agree_sim.h), on the sparse graph.
 *
 *   agree_scale_test [--full]
 *
 * 131072 ranks with 1 dead before the start and with 16 failures (8 before,
 * 8 during); then random scenarios at 300 and 4096 ranks, and at 4096 the
 * failures packed around rank 0 (all its neighbours but one; all, so that it
 * is cut off; and the next ring). --full adds
 * 131072 ranks without failures and with 64 crashes during the agreement,
 * and 10 times the random scenarios (about a minute). Each is checked
 * (agree_sim_run: same set and id everywhere, only ranks that died, no wait
 * for a live rank that does not send, bounded rounds) and its figures
 * printed: rounds, neighbours, messages and bytes per rank. Exit 1 on a
 * violation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/tc-sim/agree_sim.h"

static int failed;

static void run(int ranks, int predead, int crashes, uint64_t seed, int print, int cluster)
{
    agree_sim_params_t p = {.ranks = ranks,
                            .dense_max = 1,
                            .predead = predead,
                            .crashes = crashes,
                            .seed = seed,
                            .cluster = cluster};
    agree_sim_result_t r;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = agree_sim_run(&p, &r);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (rc != 0 || r.violation[0]) {
        printf("FAIL: %d ranks, %d dead before, %d crashes%s, seed %llu: %s\n", ranks, predead,
               crashes, cluster ? " around rank 0" : "", (unsigned long long)seed, r.violation);
        failed = 1;
        return;
    }
    if (print)
        printf("%d ranks, %d dead before, %d crashing: %d rounds (diameter %d, window %d), %d "
               "neighbours; per rank %.1f messages (at most %llu, %llu in a round), %.0f B (at "
               "most %llu); %d survivors agreed on %d failed (%d died after the decision), %d "
               "cut off (simulated in %.1f s)\n",
               ranks, predead, crashes, r.rounds, r.diameter, r.window, r.peers_max, r.msgs_mean,
               (unsigned long long)r.msgs_max, (unsigned long long)r.rounds_msgs_max, r.bytes_mean,
               (unsigned long long)r.bytes_max, r.survivors, r.decided, r.dead_left_in, r.cut_off,
               (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
}

int main(int argc, char **argv)
{
    int full = argc > 1 && strcmp(argv[1], "--full") == 0;
    if (full)
        run(131072, 0, 0, 1, 1, 0);
    run(131072, 1, 0, 2, 1, 0);
    run(131072, 8, 8, 3, 1, 0);
    if (full)
        run(131072, 0, 64, 4, 1, 0);
    int small = full ? 2000 : 200, mid = full ? 100 : 10;
    for (int t = 0; t < small && !failed; t++)
        run(300, t % 3, t % 9, 100 + (uint64_t)t, 0, 0);
    printf("300 ranks: %d random scenarios (0-2 dead before, 0-8 crashing)%s\n", small,
           failed ? "" : ", no violation");
    for (int t = 0; t < mid && !failed; t++)
        run(4096, t % 5, t % 33, 10000 + (uint64_t)t, 0, 0);
    printf("4096 ranks: %d random scenarios (0-4 dead before, 0-32 crashing)%s\n", mid,
           failed ? "" : ", no violation");
    /* the failures nearest rank 0 (breadth first): 22 of its 23 neighbours, all 23 (rank 0
     * must say it is cut off), and the next ring too; half of them during the agreement */
    int rings[] = {22, 23, 40}, nrings = full ? 30 : 3;
    for (int k = 0; k < 3 && !failed; k++)
        for (int t = 0; t < nrings && !failed; t++)
            run(4096, rings[k] / 2, rings[k] - rings[k] / 2, 20000 + (uint64_t)t, t == 0, 1);
    printf("4096 ranks: %d scenarios with 22, 23 and 40 failures around rank 0%s\n", 3 * nrings,
           failed ? "" : ", no violation");
    return failed;
}
