/* The small-message path's operations that are works post in issue order (small.h): many
 * asynchronous all-reduces in flight at once, of 4 KiB (on the lanes, which hold 4 such
 * messages per direction) between ones of 16 KiB (the general path), then each waited for and
 * checked element by element; again with a blocking small one every fifth issue. (Posted in any
 * order, later ones filled a peer's slots while an earlier one waited for one: every rank
 * waited for another's earlier message until the timeout, 2 of 3 runs at 3 ranks.)
 * And messages of operations their reader has not issued yet (unissued_mode,
 * unissued_threads_mode, unissued_pairs_mode). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "small_test.h"

#define ORDER_OPS 40

/* One round; @p blocking: with the blocking ones. */
static void order_round(tc_comm_t *comm, int blocking)
{
    static float buf[ORDER_OPS][4001];
    tc_work_t *w[ORDER_OPS] = {NULL};
    tc_op_opts_t o = TC_OP_OPTS_INIT;
    o.async = 1;
    for (int k = 0; k < ORDER_OPS; k++) {
        size_t m = k % 2 ? 4001 : 1001; /* 16 KiB on the general path, 4 KiB on the lanes */
        for (size_t i = 0; i < m; i++)
            buf[k][i] = (float)(rank + k + (int)(i % 7));
        if (blocking && k % 5 == 0) {
            float x = (float)rank, y = -1;
            ok(tc_all_reduce(comm, &x, &y, 1, TC_FLOAT32, TC_SUM, NULL, NULL), "order: blocking");
            EXPECT(y == (float)(nranks * (nranks - 1) / 2), "order: blocking %d got %g", k, y);
        }
        ok(tc_all_reduce(comm, buf[k], buf[k], m, TC_FLOAT32, TC_SUM, &o, &w[k]), "order: issue");
    }
    for (int k = 0; k < ORDER_OPS; k++) {
        if (!w[k])
            continue;
        ok(tc_work_wait(w[k], 60000), "order: wait");
        ok(tc_work_free(w[k]), "order: free");
        size_t m = k % 2 ? 4001 : 1001, wrong = 0;
        for (size_t i = 0; i < m; i++) {
            float want = (float)(nranks * (k + (int)(i % 7)) + nranks * (nranks - 1) / 2);
            wrong += buf[k][i] != want;
        }
        EXPECT(wrong == 0, "order: all-reduce %d: %zu of %zu elements wrong", k, wrong, m);
    }
}

void order_mode(tc_comm_t *comm)
{
    order_round(comm, 0);
    order_round(comm, 1);
}

#define UNISSUED_OPS 8
#define UNISSUED_COUNT 100 /* int64: 800 bytes, the lanes' big slots (4 per direction) */

/* An all-reduce of 800 bytes on @p comm (@p w: asynchronous, else blocking), input @p seed. */
static tc_status_t unissued_call(tc_comm_t *comm, int64_t *buf, int seed, tc_work_t **w)
{
    tc_op_opts_t o = TC_OP_OPTS_INIT;
    o.async = w != NULL;
    o.timeout_ms = 10000;
    for (int i = 0; i < UNISSUED_COUNT; i++)
        buf[i] = (int64_t)seed * 1000 + rank * 10 + i;
    return tc_all_reduce(comm, buf, buf, UNISSUED_COUNT, TC_INT64, TC_SUM, &o, w);
}

static void unissued_issue(tc_comm_t *comm, int64_t *buf, int seed, tc_work_t **w)
{
    ok(unissued_call(comm, buf, seed, w), "unissued: issue");
}

/* An all-reduce by @p n ranks whose ranks add up to @p rank_sum, of inputs as unissued_call's. */
static void sum_check(const int64_t *buf, int seed, int n, int rank_sum, const char *what)
{
    size_t wrong = 0;
    for (int i = 0; i < UNISSUED_COUNT; i++)
        wrong += buf[i] != (int64_t)n * (seed * 1000 + i) + 10 * rank_sum;
    EXPECT(wrong == 0, "unissued: %s: %zu of %d elements wrong", what, wrong, UNISSUED_COUNT);
}

static void unissued_check(const int64_t *buf, int seed, const char *what)
{
    sum_check(buf, seed, nranks, nranks * (nranks - 1) / 2, what);
}

/* Rank 0 issues UNISSUED_OPS asynchronous all-reduces on one duplicate, then a blocking one on
 * another; the other ranks make the blocking one first, then the asynchronous ones. Rank 0's
 * messages of the asynchronous ones fill the others' slots from it, so its blocking call finds
 * no free slot until its readers move what they have not issued out of the slots. (They did
 * not: both sides waited until the timeout, every run.) */
void unissued_mode(tc_comm_t *comm)
{
    static int64_t bufs[UNISSUED_OPS][UNISSUED_COUNT];
    int64_t one[UNISSUED_COUNT];
    tc_comm_t *a = NULL, *b = NULL;
    ok(tc_comm_dup(comm, NULL, &a), "unissued: dup");
    ok(tc_comm_dup(comm, NULL, &b), "unissued: dup");
    if (!a || !b)
        return;
    unissued_issue(a, one, 1, NULL); /* both duplicates' paths set up */
    unissued_issue(b, one, 1, NULL);
    tc_work_t *w[UNISSUED_OPS] = {NULL};
    for (int round = 0; round < 2; round++) {
        for (int k = 0; rank == 0 && k < UNISSUED_OPS; k++)
            unissued_issue(b, bufs[k], k, &w[k]);
        unissued_issue(a, one, 99, NULL);
        unissued_check(one, 99, "the blocking one");
        for (int k = 0; rank != 0 && k < UNISSUED_OPS; k++)
            unissued_issue(b, bufs[k], k, &w[k]);
        for (int k = 0; k < UNISSUED_OPS; k++) {
            if (!w[k])
                continue;
            ok(tc_work_wait(w[k], 20000), "unissued: wait");
            ok(tc_work_free(w[k]), "unissued: free");
            w[k] = NULL;
            unissued_check(bufs[k], k, "an asynchronous one");
        }
    }
    ok(tc_comm_destroy(a), "unissued: destroy");
    ok(tc_comm_destroy(b), "unissued: destroy");
}

#define UNISSUED_THREADS 8

struct unissued_thread {
    tc_comm_t *comm;
    int idx, late;
    tc_status_t st; /* checked by the main thread (the counters are not atomic) */
    char why[512];
    int64_t buf[UNISSUED_COUNT];
};

static void *unissued_thread_main(void *arg)
{
    struct unissued_thread *t = arg;
    if (t->late)
        usleep(200000);
    t->st = unissued_call(t->comm, t->buf, t->idx, NULL);
    snprintf(t->why, sizeof(t->why), "%s", t->st == TC_OK ? "" : tc_last_error());
    return NULL;
}

/* Blocking calls only: 8 threads, each a blocking all-reduce of 800 bytes on its own duplicate.
 * On rank 0 threads 0-3 call first and threads 4-7 200 ms later, on the others the other way
 * round: each side's early calls fill the 4 big slots towards the other with messages its
 * readers issue only later, and the late calls find no slot. (Both sides waited until the
 * timeout, every run.) */
void unissued_threads_mode(tc_comm_t *comm)
{
    struct unissued_thread t[UNISSUED_THREADS];
    pthread_t th[UNISSUED_THREADS];
    for (int i = 0; i < UNISSUED_THREADS; i++) {
        t[i] = (struct unissued_thread){.idx = i, .late = (i >= 4) == (rank == 0)};
        ok(tc_comm_dup(comm, NULL, &t[i].comm), "unissued-threads: dup");
        if (!t[i].comm)
            return;
        unissued_issue(t[i].comm, t[i].buf, 1, NULL); /* the path set up */
    }
    for (int i = 0; i < UNISSUED_THREADS; i++)
        if (pthread_create(&th[i], NULL, unissued_thread_main, &t[i]) != 0)
            EXPECT(0, "unissued-threads: no thread");
    for (int i = 0; i < UNISSUED_THREADS; i++) {
        pthread_join(th[i], NULL);
        EXPECT(t[i].st == TC_OK, "unissued-threads: thread %d: %s: %s", i,
               tc_status_string(t[i].st), t[i].why);
        unissued_check(t[i].buf, i, "a blocking one on a thread");
        ok(tc_comm_destroy(t[i].comm), "unissued-threads: destroy");
    }
}

/* unissued_check for an all-reduce of the pair {a, b} */
static void pair_check(const int64_t *buf, int seed, int a, int b, const char *what)
{
    sum_check(buf, seed, 2, a + b, what);
}

/* --busy: 8-byte all-reduces on another communicator of ranks 0 and 1, on a thread each, until
 * both mains are done (an all-reduce of the flag decides, so both stop at the same call): tiny
 * messages keep flowing on the pair whose big slots the cycle fills. */
struct busy {
    tc_comm_t *comm;
    int done; /* atomic: the main thread finished */
    tc_status_t st;
    long calls;
};

static void *busy_main(void *arg)
{
    struct busy *b = arg;
    int64_t all = 0;
    while (b->st == TC_OK && all == 0) {
        int64_t mine = __atomic_load_n(&b->done, __ATOMIC_ACQUIRE);
        b->st = tc_all_reduce(b->comm, &mine, &all, 1, TC_INT64, TC_MAX, NULL, NULL);
        __atomic_add_fetch(&b->calls, 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

/* A pair's communicator, made by the split of @p comm for the pair {a, b} (every rank calls it;
 * the others get none). */
static tc_comm_t *unissued_pair(tc_comm_t *comm, int a, int b)
{
    tc_comm_t *pair = NULL;
    int in = rank == a || rank == b;
    ok(tc_comm_split(comm, in ? 1 : TC_SPLIT_NONE, rank, NULL, &pair), "unissued: split");
    return pair;
}

/* 3 ranks, three pairs A = {0, 1}, C = {0, 2}, V = {1, 2}: rank 1 makes 4 asynchronous
 * all-reduces on A, which fill rank 0's big slots from it, then a blocking broadcast from it on
 * A, which finds no slot, then an all-reduce on V; rank 2 the all-reduce on V, then one on C;
 * rank 0 the one on C, then the operations on A. Rank 0 waits on C for rank 2, which waits on V
 * for rank 1, which waits for a slot towards rank 0 that only rank 0 can free: a wait on one
 * communicator must empty the lanes another one fills. */
void unissued_pairs_mode(tc_comm_t *comm, int busy)
{
    static int64_t bufs[4][UNISSUED_COUNT];
    int64_t one[UNISSUED_COUNT], bc[UNISSUED_COUNT];
    if (nranks != 3) {
        EXPECT(0, "unissued-pairs: run it at 3 ranks, not %d", nranks);
        return;
    }
    tc_comm_t *a = unissued_pair(comm, 0, 1), *c = unissued_pair(comm, 0, 2),
              *v = unissued_pair(comm, 1, 2);
    struct busy b = {.comm = busy ? unissued_pair(comm, 0, 1) : NULL};
    tc_comm_t *mine[4] = {a, c, v, b.comm};
    for (int i = 0; i < 4; i++) /* the paths set up, each pair on its own */
        if (mine[i])
            unissued_issue(mine[i], one, 1, NULL);
    pthread_t bt;
    if (b.comm && pthread_create(&bt, NULL, busy_main, &b) != 0)
        EXPECT(0, "unissued-pairs: no thread");
    /* the tiny messages flow before the rest begins: on a loaded machine the rest could end
     * before the thread's second call (the check below failed with "1 all-reduces") */
    for (int i = 0; b.comm && i < 10000 && __atomic_load_n(&b.calls, __ATOMIC_ACQUIRE) < 2; i++)
        usleep(1000);
    tc_work_t *w[4] = {NULL};
    tc_op_opts_t o = TC_OP_OPTS_INIT;
    o.timeout_ms = 10000;
    if (rank == 1) {
        for (int k = 0; k < 4; k++)
            unissued_issue(a, bufs[k], k, &w[k]);
        for (int i = 0; i < UNISSUED_COUNT; i++)
            bc[i] = 7 * i;
        ok(tc_broadcast(a, bc, UNISSUED_COUNT, TC_INT64, 1, &o, NULL), "unissued-pairs: bcast");
        unissued_issue(v, one, 5, NULL);
        pair_check(one, 5, 1, 2, "V's all-reduce");
    } else if (rank == 2) {
        unissued_issue(v, one, 5, NULL);
        pair_check(one, 5, 1, 2, "V's all-reduce");
        unissued_issue(c, one, 6, NULL);
        pair_check(one, 6, 0, 2, "C's all-reduce");
    } else {
        unissued_issue(c, one, 6, NULL);
        pair_check(one, 6, 0, 2, "C's all-reduce");
        for (int k = 0; k < 4; k++)
            unissued_issue(a, bufs[k], k, &w[k]);
        ok(tc_broadcast(a, bc, UNISSUED_COUNT, TC_INT64, 1, &o, NULL), "unissued-pairs: bcast");
        size_t wrong = 0;
        for (int i = 0; i < UNISSUED_COUNT; i++)
            wrong += bc[i] != 7 * i;
        EXPECT(wrong == 0, "unissued-pairs: broadcast: %zu elements wrong", wrong);
    }
    for (int k = 0; k < 4; k++) {
        if (!w[k])
            continue;
        ok(tc_work_wait(w[k], 20000), "unissued-pairs: wait");
        ok(tc_work_free(w[k]), "unissued-pairs: free");
        pair_check(bufs[k], k, 0, 1, "A's asynchronous all-reduce");
    }
    if (b.comm) {
        __atomic_store_n(&b.done, 1, __ATOMIC_RELEASE);
        pthread_join(bt, NULL);
        EXPECT(b.st == TC_OK && b.calls > 1, "unissued-pairs --busy: %ld all-reduces, %s", b.calls,
               tc_status_string(b.st));
    }
    for (int i = 0; i < 4; i++)
        if (mine[i])
            ok(tc_comm_destroy(mine[i]), "unissued-pairs: destroy");
}

#define CAP_OPS 400 /* 8-byte gathers: more than the 256 messages a lane may move out */

/* 3 ranks, A = {0, 1}, B = {0, 2}: rank 1 makes CAP_OPS blocking gathers on A with root 0
 * (each returns once posted) while rank 0 waits 300 ms on B for rank 2. Rank 0 moves rank 1's
 * messages out of its slots until the bound (256), warns once, and then rank 1 waits for slots
 * until rank 0 reads; every gather's result is checked. */
void unissued_cap_mode(tc_comm_t *comm)
{
    if (nranks != 3) {
        EXPECT(0, "unissued-cap: run it at 3 ranks, not %d", nranks);
        return;
    }
    tc_comm_t *a = unissued_pair(comm, 0, 1), *b = unissued_pair(comm, 0, 2);
    int64_t one[UNISSUED_COUNT], x[2], mine;
    if (a)
        unissued_issue(a, one, 1, NULL); /* the paths set up */
    if (b)
        unissued_issue(b, one, 1, NULL);
    if (rank == 2)
        usleep(300000);
    if (b) {
        unissued_issue(b, one, 2, NULL);
        pair_check(one, 2, 0, 2, "B's all-reduce");
    }
    for (int k = 0; a && k < CAP_OPS; k++) {
        mine = 1000 * k + rank;
        x[0] = x[1] = -1;
        ok(tc_gather(a, &mine, x, 1, TC_INT64, 0, NULL, NULL), "unissued-cap: gather");
        if (rank == 0)
            EXPECT(x[0] == 1000 * k && x[1] == 1000 * k + 1,
                   "unissued-cap: gather %d got %lld, %lld", k, (long long)x[0], (long long)x[1]);
    }
    for (int i = 0; i < 2; i++)
        if ((i ? b : a) && tc_comm_destroy(i ? b : a) != TC_OK)
            EXPECT(0, "unissued-cap: destroy");
}
