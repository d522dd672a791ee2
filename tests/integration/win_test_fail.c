/* The parts of win_test about progress and failure: a passive target, revoke, the
 * flight recorder, abort of a put to a stopped target, a killed target. */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "win_test.h"

/* ---- the target calls nothing that progresses: the data lands by the progress thread ---- */

void test_passive(tc_comm_t *comm)
{
    size_t bytes = (size_t)1 << 20;
    unsigned char *mem = calloc(1, bytes), *src = malloc(bytes);
    tc_win_t *win = NULL;
    OK(tc_win_create(comm, mem, bytes, NULL, &win));
    if (!win)
        return;
    OK(tc_barrier(comm, NULL, NULL));
    if (rank == 0) {
        for (int t = 1; t < size; t++) {
            for (size_t i = 0; i < bytes; i++)
                src[i] = byte_of(99, (uint64_t)t, i);
            OK(tc_win_put_signal(win, src, bytes, t, 0, 5, 1, TC_WIN_SIGNAL_SET, NULL, NULL));
        }
    } else {
        /* only tc_win_read_signal (an atomic load, no progress) until the signal is there */
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        uint64_t v = 0;
        for (;;) {
            OK(tc_win_read_signal(win, 5, &v));
            clock_gettime(CLOCK_MONOTONIC, &t1);
            if (v == 1 || t1.tv_sec - t0.tv_sec > 20)
                break;
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        checks++;
        if (v != 1)
            FAIL("passive target: slot 5 is %llu after 20 s without a progressing call",
                 (unsigned long long)v);
        for (size_t i = 0; v == 1 && i < bytes; i++) {
            checks++;
            if (mem[i] != byte_of(99, (uint64_t)rank, i)) {
                FAIL("passive target: byte %zu is %u after the signal", i, mem[i]);
                break;
            }
        }
    }
    OK(tc_barrier(comm, NULL, NULL));
    OK(tc_win_destroy(win));
    free(mem);
    free(src);
}

/* ---- a revoke ends a wait for a signal that will never come ---- */

static void *revoke_later(void *arg)
{
    struct timespec ts = {0, 200000000};
    nanosleep(&ts, NULL);
    /* from any thread at any time; TC_ERR_UNSUPPORTED: revoked here only (mpirun) */
    tc_status_t st = tc_comm_revoke((tc_comm_t *)arg);
    return (void *)(intptr_t)(st == TC_OK || st == TC_ERR_UNSUPPORTED);
}

void test_revoke(tc_comm_t *world)
{
    tc_comm_t *comm = NULL;
    OK(tc_comm_dup(world, NULL, &comm));
    tc_win_t *win = NULL;
    if (comm)
        OK(tc_win_create(comm, NULL, 0, NULL, &win));
    if (!win)
        return;
    pthread_t th;
    checks++;
    if (pthread_create(&th, NULL, revoke_later, comm) != 0) {
        FAIL("pthread_create");
        return;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t seen = 0;
    tc_status_t st = tc_win_wait_signal(win, 0, TC_WIN_CMP_GE, 1, 20000, &seen);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    void *ok = NULL;
    pthread_join(th, &ok);
    checks++;
    if (!ok)
        FAIL("tc_comm_revoke from another thread failed: %s", tc_last_error());
    expect(st, TC_ERR_REVOKED, "revoked", "wait_signal on a revoked communicator");
    checks++;
    if (ms > 10000)
        FAIL("wait_signal took %.0f ms to see the revoke", ms);
    expect(tc_win_put(win, NULL, 0, 0, 0, NULL, NULL), TC_ERR_REVOKED, "revoked",
           "put on a revoked communicator");
    tc_win_destroy(win); /* no barrier on a revoked communicator: frees locally */
    OK(tc_comm_destroy(comm));
}

/* ---- the flight recorder lists the window's operations ---- */

void test_fr(tc_comm_t *comm)
{
    char dir[] = "/tmp/win_test_fr.XXXXXX";
    if (!mkdtemp(dir)) {
        FAIL("mkdtemp: cannot make a directory for the flight recorder");
        return;
    }
    setenv("TC_FR_DIR", dir, 1);
    tc_win_t *win = NULL;
    uint64_t word = 5;
    OK(tc_win_create(comm, &word, 8, NULL, &win));
    if (!win)
        return;
    /* to the next rank: an operation to this rank itself takes the direct path, which the
     * recorder does not see (the part passed only on what the parts before it recorded) */
    OK(tc_win_put_signal(win, &word, 8, (rank + 1) % size, 0, 3, 1, TC_WIN_SIGNAL_ADD, NULL, NULL));
    OK(tc_comm_dump_fr(comm));
    OK(tc_barrier(comm, NULL, NULL));
    OK(tc_win_destroy(win));
    unsetenv("TC_FR_DIR");
    char path[512], buf[65536];
    DIR *d = opendir(dir);
    struct dirent *e;
    int found = 0;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
        buf[n] = '\0';
        if (f)
            fclose(f);
        found |= strstr(buf, "\"win_put_signal\"") != NULL;
        unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
    checks++;
    if (!found && size > 1)
        FAIL("the flight recorder's dump in %s has no win_put_signal", dir);
}

/* ---- abort ends a put that cannot complete: its TCP target is stopped (SIGSTOP) ---- */

/* --timeout: fire-and-forget puts to the stopped rank end by their own timeout (a batch's
 * deadline is set by the progress engine's first clock read after its latest operation
 * started: win_ops.c), which the flush reports long before the flush's own timeout. The second
 * put joins the first's batch 150 ms later, after an expiry pass gave the batch its deadline:
 * the batch still lasts its 300 ms from the second put's call, never less. */
static void ff_timeout(tc_win_t *win, const unsigned char *src, size_t bytes)
{
    tc_op_opts_t opts = TC_OP_OPTS_INIT;
    opts.async = 1;
    opts.timeout_ms = 300;
    struct timespec t0, t1, nap = {0, 150000000};
    OK(tc_win_put(win, src, bytes, 1, 0, &opts, NULL));
    nanosleep(&nap, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    OK(tc_win_put(win, src, bytes / 2, 1, 0, &opts, NULL));
    expect(tc_win_flush(win, 1, 20000), TC_ERR_TIMEOUT, "timed out after 300 ms",
           "the flush of fire-and-forget puts to a stopped rank");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    checks++;
    if (!strstr(tc_last_error(), "(2 operations, "))
        FAIL("the timed-out batch of two puts is not named as one: %s", tc_last_error());
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    checks++;
    if (ms < 300 || ms > 5000)
        FAIL("fire-and-forget puts with a 300 ms timeout ended %.0f ms after the last one", ms);
    printf("rank 0: fire-and-forget puts to a stopped rank timed out %.1f ms after the last: %s\n",
           ms, tc_last_error());
    expect(tc_win_put(win, src, 8, 1, 0, NULL, NULL), TC_ERR_TIMEOUT, "timed out",
           "a put after the timeout");
}

void test_abort(tc_comm_t *comm, int timeout_mode)
{
    size_t bytes = (size_t)64 << 20; /* far more than the sockets' buffers */
    unsigned char *mem = calloc(1, bytes);
    tc_win_t *win = NULL;
    OK(tc_win_create(comm, mem, bytes, NULL, &win));
    int pids[2] = {0, 0}, me = (int)getpid();
    OK(tc_all_gather(comm, &me, pids, 1, TC_INT32, NULL, NULL));
    if (!win || size != 2) {
        FAIL("--abort and --timeout run at 2 ranks with a window");
        return;
    }
    if (rank == 1) {
        raise(SIGSTOP);      /* rank 0 continues it once its put was aborted */
        tc_win_destroy(win); /* its communicator may know rank 0 closed the connection */
        tc_comm_abort(comm);
        free(mem);
        return;
    }
    /* wait until rank 1 is stopped */
    char path[64], st_buf[256];
    snprintf(path, sizeof(path), "/proc/%d/stat", pids[1]);
    int stopped = 0;
    for (int i = 0; i < 500 && !stopped; i++) {
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(st_buf, 1, sizeof(st_buf) - 1, f) : 0;
        if (f)
            fclose(f);
        st_buf[n] = '\0';
        const char *paren = strrchr(st_buf, ')');
        stopped = paren && paren[1] == ' ' && paren[2] == 'T';
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    checks++;
    if (!stopped) {
        FAIL("rank 1 (pid %d) did not stop", pids[1]);
        kill(pids[1], SIGCONT);
        return;
    }
    unsigned char *src = malloc(bytes);
    memset(src, 0x5a, bytes);
    if (timeout_mode) {
        ff_timeout(win, src, bytes);
        kill(pids[1], SIGCONT);
        tc_win_destroy(win);
        free(src);
        free(mem);
        return;
    }
    tc_op_opts_t aopts = TC_OP_OPTS_INIT;
    aopts.async = 1;
    tc_work_t *w = NULL;
    OK(tc_win_put(win, src, bytes, 1, 0, &aopts, &w));
    struct timespec ts = {0, 200000000};
    nanosleep(&ts, NULL);
    int done = 1;
    tc_status_t st = w ? tc_work_test(w, &done) : TC_OK;
    checks++;
    if (done)
        FAIL("a put of 64 MiB to a stopped rank completed (%s): the test proves nothing",
             tc_status_string(st));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    OK(tc_comm_abort(comm));
    if (w) {
        expect(tc_work_wait(w, 5000), TC_ERR_ABORTED, "aborted", "the pending put after abort");
        tc_work_free(w);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    checks++;
    if (ms > 2000)
        FAIL("the aborted put ended %.0f ms after tc_comm_abort", ms);
    printf("rank 0: the put pending on a stopped rank ended %.1f ms after abort: %s\n", ms,
           tc_last_error());
    expect(tc_win_put(win, src, 8, 1, 0, NULL, NULL), TC_ERR_ABORTED, "aborted", "put after abort");
    kill(pids[1], SIGCONT);
    tc_win_destroy(win);
    free(src);
    free(mem);
}

/* ---- a target dies ---- */

void test_kill(tc_comm_t *comm)
{
    int victim = size - 1;
    uint64_t buf[512] = {0};
    tc_win_t *win = NULL;
    OK(tc_win_create(comm, buf, sizeof(buf), NULL, &win));
    if (!win)
        return;
    OK(tc_barrier(comm, NULL, NULL));
    if (rank == victim)
        raise(SIGKILL);
    tc_op_opts_t opts = TC_OP_OPTS_INIT;
    opts.timeout_ms = 20000;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tc_status_t st = TC_OK;
    for (int i = 0; i < 100000 && st == TC_OK; i++) {
        st = tc_win_put(win, buf, sizeof(buf), victim, 0, &opts, NULL);
        if (st == TC_OK && i % 16 == 0)
            st = tc_win_signal(win, victim, 0, 1, TC_WIN_SIGNAL_ADD, &opts, NULL);
        if (st == TC_OK) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    char words[32];
    snprintf(words, sizeof(words), "rank %d", victim);
    expect(st, TC_ERR_PEER_FAILED, words, "put to a killed target");
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    printf("rank %d: put to the killed rank %d failed after %.0f ms: %s\n", rank, victim, ms,
           tc_last_error());
    /* the communicator is broken now: the window says so, and is freed all the same */
    expect(tc_win_signal(win, 0, 0, 1, TC_WIN_SIGNAL_ADD, NULL, NULL), TC_ERR_PEER_FAILED, words,
           "signal after the failure");
    st = tc_win_destroy(win);
    checks++;
    if (st != TC_OK && st != TC_ERR_PEER_FAILED)
        FAIL("destroy after the failure: %s: %s", tc_status_string(st), tc_last_error());
}
