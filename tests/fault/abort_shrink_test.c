/*
 * tc_comm_abort() of a communicator while another thread is inside its tc_comm_shrink(): the
 * shrink ends with TC_ERR_ABORTED promptly, as every pending operation of an aborted
 * communicator does. Rank 0 shrinks on a thread while the other ranks never join (so its
 * agreement waits for them); its main thread aborts 300 ms later. The shrink's agreement is a
 * work that outlives failures, and the abort passed it by: the shrink went on until the others
 * joined or its timeout (600 s by default). A shrink begun after the abort fails at once.
 *
 *   abort_shrink_test           2 ranks or more, under tcrun
 *
 * Each rank prints "abort_shrink: OK ..." or "abort_shrink: FAIL ...".
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tcomms/tcomms.h"

static tc_comm_t *world;
static tc_status_t shrink_st;
static double shrink_end_ms;
static char shrink_why[512];

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void *shrinker(void *arg)
{
    (void)arg;
    tc_comm_t *small = NULL;
    shrink_st = tc_comm_shrink(world, NULL, &small);
    shrink_end_ms = now_ms();
    snprintf(shrink_why, sizeof(shrink_why), "%s", shrink_st == TC_OK ? "" : tc_last_error());
    if (small)
        tc_comm_destroy(small);
    return NULL;
}

int main(void)
{
    int rank;
    tc_comm_opts_t opts = TC_COMM_OPTS_INIT;
    opts.timeout_ms = 20000; /* the shrink's bound without the fix */
    if (tc_comm_create(&opts, &world) != TC_OK || tc_comm_rank(world, &rank) != TC_OK ||
        tc_barrier(world, NULL, NULL) != TC_OK) {
        printf("abort_shrink: FAIL setup: %s\n", tc_last_error());
        return 1;
    }
    if (rank != 0) { /* never joins the shrink; leaves once rank 0 is done */
        sleep(2);
        printf("abort_shrink: OK rank %d\n", rank);
        tc_comm_destroy(world);
        return 0;
    }
    pthread_t t;
    pthread_create(&t, NULL, shrinker, NULL);
    usleep(300000);
    double t0 = now_ms();
    tc_status_t st = tc_comm_abort(world);
    pthread_join(t, NULL);
    double waited = shrink_end_ms - t0;
    /* the shrink's error names it (it said "send/recv #1 on comm 'world'") */
    int ok = st == TC_OK && shrink_st == TC_ERR_ABORTED && waited < 1000 &&
             strstr(shrink_why, "shrink") && !strstr(shrink_why, "send/recv");
    tc_comm_t *again = NULL;
    tc_status_t st2 = tc_comm_shrink(world, NULL, &again);
    ok = ok && st2 == TC_ERR_ABORTED;
    printf("abort_shrink: %s rank 0: abort %s; the shrink ended %.0f ms after it with %s (%s); a "
           "shrink after it: %s\n",
           ok ? "OK" : "FAIL", tc_status_string(st), waited, tc_status_string(shrink_st),
           shrink_why, tc_status_string(st2));
    if (again)
        tc_comm_destroy(again);
    tc_comm_destroy(world);
    return ok ? 0 : 1;
}
