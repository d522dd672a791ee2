/* The small-message path's set-up under a launcher (small_test.h): the first small call of a
 * communicator begins it (connections, two votes), whatever the call's style. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "small_test.h"

/* The first small call of a communicator sets the path up (a vote): rank 0 calls it
 * asynchronously while rank 1 is away for 500 ms; the call returns at once, the work
 * waits for the set-up, and every rank gets the sum. 20 more calls, the styles mixed.
 * With --off (TC_SHM_FULL_PAIRS: a pair over tcp) the vote turns the path off and rank
 * 0's work goes to the general path. */
void first_mode(tc_comm_t *comm, int off)
{
    for (int i = 0; i < 21; i++) {
        int st_i = i == 0 ? (rank == 0 ? ASYNC : BLOCKING) : (rank + i) % STYLES;
        double v = rank + i, sum = -1;
        tc_op_opts_t o = TC_OP_OPTS_INIT;
        o.async = st_i == ASYNC;
        tc_work_t *w = NULL;
        if (i == 0 && rank == 1)
            usleep(500000);
        int64_t t0 = now_ms();
        tc_status_t st =
            tc_all_reduce(comm, &v, &sum, 1, TC_FLOAT64, TC_SUM, &o, st_i == BLOCKING ? NULL : &w);
        if (i == 0 && rank == 0) {
            int done = 1;
            tc_status_t tst = tc_work_test(w, &done);
            EXPECT(now_ms() - t0 < 250 && tst == TC_INPROGRESS && !done,
                   "first: the asynchronous call took %lld ms, test %s done %d",
                   (long long)(now_ms() - t0), tc_status_string(tst), done);
        }
        if (st == TC_OK && st_i == ASYNC)
            st = tc_work_wait(w, 30000);
        ok(st, "first: all_reduce");
        if (w)
            ok(tc_work_free(w), "first: free");
        EXPECT(sum == (double)nranks * i + (double)nranks * (nranks - 1) / 2,
               "first: all_reduce %d: got %g", i, sum);
    }
    int n = 0;
    tc_comm_stat_t sts[64];
    ok(tc_comm_stats(comm, sts, 64, &n), "tc_comm_stats");
    uint64_t lanes = 0, all = 0;
    for (int i = 0; i < n && i < 64; i++) {
        all += sts[i].ops;
        lanes += strcmp(sts[i].algo, "shm_lanes") == 0 ? sts[i].ops : 0;
    }
    EXPECT(all == 21 && lanes == (off ? 0 : 21), "first: %llu of %llu on the lanes",
           (unsigned long long)lanes, (unsigned long long)all);
}

/* A communicator's first small call, asynchronous, is not waited for before the next one,
 * blocking, which waits for the set-up the first began: on the world every rank's first call is
 * asynchronous, on a duplicate rank 0's only, and on a second duplicate the blocking call is a
 * window's allocation (a collective on the lanes). Both calls' results checked. (The blocking
 * call's wait stepped the set-up once more after the asynchronous work had ended it there, and
 * read the vote that ending had let go: a segmentation fault, on every rank that called
 * asynchronously.) */
void first_blocking_mode(tc_comm_t *world)
{
    for (int round = 0; round < 3; round++) {
        tc_comm_t *comm = world;
        if (round > 0)
            ok(tc_comm_dup(world, NULL, &comm), "first-blocking: tc_comm_dup");
        int async = round == 0 || rank == 0;
        double x = rank + 1, y = -1, x2 = 2 * rank, y2 = -1;
        tc_op_opts_t o = TC_OP_OPTS_INIT;
        o.async = async;
        tc_work_t *w = NULL;
        ok(tc_all_reduce(comm, &x, &y, 1, TC_FLOAT64, TC_SUM, &o, async ? &w : NULL),
           "first-blocking: the first all_reduce");
        if (round < 2) {
            ok(tc_all_reduce(comm, &x2, &y2, 1, TC_FLOAT64, TC_SUM, NULL, NULL),
               "first-blocking: the blocking all_reduce");
            EXPECT(y2 == (double)nranks * (nranks - 1),
                   "first-blocking %d: the blocking one got %g", round, y2);
        } else {
            tc_win_t *win = NULL;
            void *base = NULL;
            ok(tc_win_allocate(comm, 64, NULL, &base, &win), "first-blocking: tc_win_allocate");
            if (win)
                ok(tc_win_destroy(win), "first-blocking: tc_win_destroy");
        }
        if (w) {
            ok(tc_work_wait(w, 30000), "first-blocking: the first one's wait");
            ok(tc_work_free(w), "first-blocking: free");
        }
        EXPECT(y == (double)nranks * (nranks + 1) / 2, "first-blocking %d: the first one got %g",
               round, y);
        if (comm != world)
            tc_comm_destroy(comm);
    }
}

/* Rank 0's first small call, asynchronous, waits for the set-up's vote, which waits for
 * rank 1, away; rank 0 aborts: the work ends in TC_ERR_ABORTED (the abort once read
 * the vote it had just ended for the work's record: a crash). */
void abort_mode(tc_comm_t *comm)
{
    double x = rank, y;
    tc_status_t st;
    if (rank == 0) {
        tc_op_opts_t o = TC_OP_OPTS_INIT;
        o.async = 1;
        tc_work_t *w = NULL;
        ok(tc_all_reduce(comm, &x, &y, 1, TC_FLOAT64, TC_SUM, &o, &w), "abort: all_reduce");
        usleep(200000);
        int done = 1;
        EXPECT(tc_work_test(w, &done) == TC_INPROGRESS && !done, "abort: done before");
        ok(tc_comm_abort(comm), "tc_comm_abort");
        st = tc_work_wait(w, 5000);
        EXPECT(st == TC_ERR_ABORTED, "abort: %s: %s", tc_status_string(st), tc_last_error());
        ok(tc_work_free(w), "abort: free");
    } else {
        usleep(1000000);
    }
}
