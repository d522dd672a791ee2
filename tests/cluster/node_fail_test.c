/* Whole-node failures found with the default settings, one rank of a job
 * that spans the nodes of tests/cluster/vcluster.sh (run_node_failure.sh).
 *
 *   node_fail_test LOST SYNC_DIR
 *   LOST: the world ranks that the script will take away (a comma list):
 *         a node's link cut, a node's processes killed, a rank stopped
 *   SYNC_DIR: a directory every node sees: this rank writes ready.R (its
 *         pid) after its first checked all-reduce; the script writes event_at (ms since
 *         the epoch, CLOCK_REALTIME) when it strikes.
 *
 * Every rank all-reduces (int64, sum) every 10 ms and checks each element
 * against the sum computed here. A rank of LOST stops at its first error. A
 * survivor, at its first error, waits until tc_comm_failed_ranks() holds
 * every rank of LOST (30 s at most), and prints when each appeared after the
 * event ("rank R: lost rank X detect_ms D"); a rank outside LOST among the
 * failed is a FAIL (a false accusation). Then it shrinks, checks the new
 * size and an all-reduce over the survivors element by element, and prints
 * "rank R: ... 0 failures" (or the failures, "rank R: FAIL: ..."). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tcomms/tcomms.h"
#include "tests/fault/ft_fail.h"

#define NF_COUNT 64
#define NF_MAX_RANKS 64
#define NF_RUN_MS 60000    /* no failure seen within this: FAIL */
#define NF_DETECT_MS 30000 /* every lost rank known within this after the first error */

static int rank = -1, fails;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The all-reduce of the ranks marked alive in @p alive (old ranks), checked. */
static tc_status_t reduce_and_check(tc_comm_t *comm, const int *alive, int size, const char *what)
{
    int64_t in[NF_COUNT], out[NF_COUNT];
    for (int i = 0; i < NF_COUNT; i++)
        in[i] = (int64_t)rank * 1000 + i;
    tc_status_t st = tc_all_reduce(comm, in, out, NF_COUNT, TC_INT64, TC_SUM, NULL, NULL);
    if (st != TC_OK)
        return st;
    int64_t ranks = 0, n = 0;
    for (int q = 0; q < size; q++)
        if (alive[q])
            ranks += q, n++;
    for (int i = 0; i < NF_COUNT; i++)
        if (out[i] != ranks * 1000 + n * i) {
            FAIL("%s: [%d] = %lld, want %lld", what, i, (long long)out[i],
                 (long long)(ranks * 1000 + n * i));
            break;
        }
    return TC_OK;
}

static double event_at(const char *dir)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/event_at", dir);
    for (int i = 0; i < 500; i++) {
        FILE *f = fopen(path, "r");
        double t;
        if (f && fscanf(f, "%lf", &t) == 1) {
            fclose(f);
            return t;
        }
        if (f)
            fclose(f);
        usleep(10000);
    }
    return -1;
}

/* Wait until every rank of @p lost is among the failed; print when each came. */
static void await_lost(tc_comm_t *comm, const int *lost, int size, double t_event)
{
    double seen[NF_MAX_RANKS] = {0}, deadline = now_ms() + NF_DETECT_MS, worst = 0;
    int missing = 1;
    while (missing && now_ms() < deadline) {
        int failed[NF_MAX_RANKS], n = 0;
        if (tc_comm_failed_ranks(comm, failed, NF_MAX_RANKS, &n) != TC_OK) {
            FAIL("tc_comm_failed_ranks: %s", tc_last_error());
            return;
        }
        double t = now_ms();
        for (int k = 0; k < n && k < NF_MAX_RANKS; k++) {
            int q = failed[k];
            if (q < 0 || q >= size || !lost[q]) {
                FAIL("rank %d reported failed, but it lives", q);
                return;
            }
            if (seen[q] == 0)
                seen[q] = t;
        }
        missing = 0;
        for (int q = 0; q < size; q++)
            missing |= lost[q] && seen[q] == 0;
        if (missing)
            usleep(2000);
    }
    for (int q = 0; q < size; q++) {
        if (!lost[q])
            continue;
        if (seen[q] == 0) {
            FAIL("rank %d never reported failed (%d s after the first error)", q,
                 NF_DETECT_MS / 1000);
            continue;
        }
        double d = seen[q] - t_event;
        worst = d > worst ? d : worst;
        printf("rank %d: lost rank %d detect_ms %.0f\n", rank, q, d);
    }
    printf("rank %d: every lost rank known detect_ms %.0f\n", rank, worst);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: node_fail_test LOST SYNC_DIR\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    tc_comm_t *comm;
    if (tc_comm_create(NULL, &comm) != TC_OK) {
        fprintf(stderr, "create: %s\n", tc_last_error());
        return 1;
    }
    int size;
    tc_comm_rank(comm, &rank);
    tc_comm_size(comm, &size);
    if (size > NF_MAX_RANKS) {
        fprintf(stderr, "at most %d ranks\n", NF_MAX_RANKS);
        return 2;
    }
    int lost[NF_MAX_RANKS] = {0}, alive[NF_MAX_RANKS], nlost = 0;
    for (char *s = argv[1], *end; *s; s = *end ? end + 1 : end) {
        long q = strtol(s, &end, 10);
        if (end == s || q < 0 || q >= size || (*end && *end != ',')) {
            fprintf(stderr, "LOST '%s': world ranks below %d, comma-separated\n", argv[1], size);
            return 2;
        }
        nlost += !lost[q];
        lost[q] = 1;
    }
    for (int q = 0; q < size; q++)
        alive[q] = 1;
    tc_status_t st;
    double t_end = now_ms() + NF_RUN_MS;
    int it = 0;
    while ((st = reduce_and_check(comm, alive, size, "all_reduce")) == TC_OK && now_ms() < t_end) {
        if (it++ == 0) {
            char path[512];
            snprintf(path, sizeof(path), "%s/ready.%d", argv[2], rank);
            FILE *f = fopen(path, "w");
            if (f) {
                fprintf(f, "%d\n", (int)getpid()); /* the script stops a rank by its pid */
                fclose(f);
            }
        }
        usleep(10000);
    }
    if (st == TC_OK) {
        FAIL("no failure seen in %d s (%d all-reduces)", NF_RUN_MS / 1000, it);
    } else if (lost[rank]) {
        printf("rank %d: taken away, my all-reduce: %s: %s\n", rank, tc_status_string(st),
               tc_last_error());
        return 0; /* the script ends what is left of this process */
    } else {
        printf("rank %d: all_reduce #%d: %s: %s\n", rank, it, tc_status_string(st),
               tc_last_error());
        double t_event = event_at(argv[2]);
        if (t_event < 0)
            FAIL("no event_at from the script");
        else
            await_lost(comm, lost, size, t_event);
        tc_comm_t *small = NULL;
        double t0 = now_ms();
        st = tc_comm_shrink(comm, NULL, &small);
        if (st != TC_OK) {
            FAIL("shrink: %s: %s", tc_status_string(st), tc_last_error());
        } else {
            int nsize = -1;
            tc_comm_size(small, &nsize);
            if (nsize != size - nlost)
                FAIL("shrunk to %d ranks, want %d", nsize, size - nlost);
            for (int q = 0; q < size; q++)
                alive[q] = !lost[q];
            st = reduce_and_check(small, alive, size, "all_reduce after shrink");
            if (st != TC_OK)
                FAIL("all_reduce after shrink: %s: %s", tc_status_string(st), tc_last_error());
            printf("rank %d: shrunk to %d ranks in %.0f ms\n", rank, nsize, now_ms() - t0);
            tc_comm_destroy(small);
        }
    }
    tc_comm_destroy(comm);
    printf("rank %d: %d failures\n", rank, fails);
    return fails ? 1 : 0;
}
