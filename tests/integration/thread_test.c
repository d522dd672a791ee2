/* Multi-process, multi-threaded test of the thread model (docs/runtime.md, "Threads"):
 *
 *   thread_test [--threads T] [--iters K] [--same-comm | --create | --shrinks | --burst]
 *
 * The main thread creates one communicator per worker thread (dups of the world and splits
 * that reverse or rotate the rank order, so communicators differ from the world), then T
 * threads each run K rounds of every collective (the v-forms too), a send/recv ring as a
 * batch, a persistent all-gather started again, a put with a signal into a window and a get
 * back, and a send with a receive from any source on their own communicator, alternating blocking
 * and asynchronous calls and sizes, and check every element against a reference computed here. A
 * thread's inputs depend on (thread, round, rank, index), so a message delivered to the wrong
 * communicator or round is caught.
 *
 * --same-comm checks what two threads using one communicator at once get: while one thread
 * is inside a blocking barrier that cannot finish yet (rank 0 enters it late), another
 * thread's operation on the same communicator is refused with TC_ERR_INVALID_STATE, the
 * barrier still completes and the communicator stays usable.
 *
 * --create: the T threads create communicators at the same time, each from its own: every
 * round a thread makes a child of its communicator (a dup, a split in reversed order, a split
 * by rank list, a shrink, in turn), runs an all-reduce and a send/recv ring on it, checks them
 * and destroys it. Two children that took the same id on a rank would exchange each other's
 * messages (the inputs name the thread), so the checks catch it. A shrink took the id its
 * agreement found free when it began: another thread's creation took it first on some ranks
 * (TC_ERR_INVALID_STATE there), and two shrinks at once delivered each other's messages (at
 * 2 and 3 ranks with 4 threads, every run). --shrinks: the same with every child a shrink, so
 * that every thread's shrinks compete for ids at once.
 *
 * --burst: each round a thread issues six asynchronous collectives of 800 bytes at once (an
 * all-reduce, a broadcast, a reduce, an all-gather, a reduce-scatter, an all-to-all in place: on
 * the small-message path, whose lanes hold 4 such messages per direction, shared by the threads'
 * communicators), then waits for them in order and checks them. An operation waited for a free
 * slot, or its turn to post, before taking its peers' messages, and a fold took them in rank
 * order only, so each rank's slots could all hold messages its peer read only after posting its
 * own: every rank timed out (3 threads at 2 ranks: 3 runs of 6). At 3 ranks, 4 threads timed out
 * in about 1 run of 6 until a reader moved messages of operations it had not issued out of its
 * slots (docs/runtime.md).
 *
 * Meanwhile an observer thread reads what the workers' operations record (tc_comm_stats, and
 * tc_comm_dump_fr when TC_FR_DIR is set): blocking small collectives record without the
 * world's lock, so under TSan a record written unsynchronised shows; at the end every
 * worker's communicator must count exactly K all-reduces, none failed.
 *
 * Prints "rank R of N: C checks, F failures" and exits 0 only when F is 0. Every operation
 * is bounded by a 60 s timeout. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tcomms/tcomms.h"

#define TIMEOUT_MS 60000
#define MAX_THREADS 8
#define MAX_RANKS 64
/* a worker's window creation agrees with an all-reduce on its communicator, which counts */
#define WIN_ALL_REDUCES 1
#define MAX_COUNT 1500 /* elements per rank; past the small-message path's limits */

static int world_rank, world_size;
static atomic_int failures, checks;

#define FAIL(...)                                                                                 \
    do {                                                                                          \
        if (atomic_fetch_add(&failures, 1) < 100) {                                               \
            fprintf(stderr, "rank %d: FAIL: ", world_rank);                                       \
            fprintf(stderr, __VA_ARGS__);                                                         \
            fprintf(stderr, "\n");                                                                \
        }                                                                                         \
    } while (0)

typedef struct {
    int id;
    tc_comm_t *comm;
    int rank, size, iters;
} worker_t;

/* A thread's input on comm rank r: distinct per (thread, round, rank, index); small enough
 * that sums over 8 ranks stay exact in int64. */
static int64_t input(int t, int k, int r, size_t i) {
    return (int64_t)((t + 1) * 1000003 + k * 7919 + r * 104729 + (int64_t)i * 13) % 1000000007;
}

static size_t count_for(int t, int k) {
    static const size_t counts[] = {1, 2, 7, 64, 333, MAX_COUNT};
    return counts[(t + k) % (sizeof counts / sizeof counts[0])];
}

/* Run one operation into s: blocking, or async then wait. */
#define RUN(s, fn, ...)                                                                           \
    do {                                                                                          \
        tc_work_t *w_ = NULL;                                                                     \
        (s) = fn(__VA_ARGS__, async ? &aopts : &opts, async ? &w_ : NULL);                        \
        if ((s) == TC_OK && async) {                                                              \
            (s) = tc_work_wait(w_, TIMEOUT_MS);                                                   \
            tc_work_free(w_);                                                                     \
        }                                                                                         \
    } while (0)

static void check(const worker_t *w, const char *what, int k, size_t i, int64_t got,
                  int64_t want) {
    atomic_fetch_add(&checks, 1);
    if (got != want)
        FAIL("thread %d round %d %s [%zu]: got %lld, want %lld", w->id, k, what, i,
             (long long)got, (long long)want);
}

static int status_ok(const worker_t *w, const char *what, int k, tc_status_t s) {
    if (s == TC_OK)
        return 1;
    FAIL("thread %d round %d %s: %s: %s", w->id, k, what, tc_status_string(s), tc_last_error());
    return 0;
}

/* A thread's persistent all-gather: prepared once, started every round with that round's
 * input. */
typedef struct {
    tc_work_t *work;
    int64_t *send, *recv;
    size_t count;
} persistent_t;

static persistent_t *persistent_make(worker_t *w)
{
    persistent_t *pg = calloc(1, sizeof(*pg));
    pg->count = 3 + (size_t)w->id * 37;
    pg->send = calloc(pg->count, sizeof(int64_t));
    pg->recv = malloc(sizeof(int64_t) * pg->count * (size_t)w->size);
    tc_op_opts_t opts = TC_OP_OPTS_INIT;
    opts.timeout_ms = TIMEOUT_MS;
    status_ok(
        w, "persistent all_gather init", 0,
        tc_all_gather_init(w->comm, pg->send, pg->recv, pg->count, TC_INT64, &opts, &pg->work));
    return pg;
}

/* Elements rank a sends to rank b in round k of thread t's v-forms: 1 to c. */
static size_t vcount(int t, int k, int a, int b, size_t c)
{
    return 1 + (size_t)(3 * a + b + k + t) % c;
}

/* The rest of a round: the v-forms, the persistent all-gather, a window's put with a signal
 * and get, a receive from any source. */
static void worker_more(worker_t *w, int k, int async, size_t c, int64_t *sbuf, int64_t *rbuf,
                        persistent_t *pg, tc_win_t *win, const int64_t *win_base)
{
    int n = w->size, r = w->rank, t = w->id;
    tc_op_opts_t opts = TC_OP_OPTS_INIT, aopts = TC_OP_OPTS_INIT;
    opts.timeout_ms = aopts.timeout_ms = TIMEOUT_MS;
    aopts.async = 1;
    size_t cnt[MAX_RANKS], scnt[MAX_RANKS], rcnt[MAX_RANKS], off[MAX_RANKS + 1];
    tc_status_t s;

    /* all-gather-v: rank q contributes vcount(q, q) elements, packed in rank order */
    off[0] = 0;
    for (int q = 0; q < n; q++) {
        cnt[q] = vcount(t, k, q, q, c);
        off[q + 1] = off[q] + cnt[q];
    }
    for (size_t i = 0; i < cnt[r]; i++)
        sbuf[i] = input(t, k, r, i);
    RUN(s, tc_all_gather_v, w->comm, sbuf, cnt[r], rbuf, cnt, NULL, TC_INT64);
    if (status_ok(w, "all_gather_v", k, s))
        for (int q = 0; q < n; q++)
            for (size_t i = 0; i < cnt[q]; i++)
                check(w, "all_gather_v", k, off[q] + i, rbuf[off[q] + i], input(t, k, q, i));

    /* reduce-scatter-v: block q (cnt[q] elements at off[q]) of the sum goes to rank q */
    for (size_t i = 0; i < off[n]; i++)
        sbuf[i] = input(t, k, r, i);
    RUN(s, tc_reduce_scatter_v, w->comm, sbuf, rbuf, cnt, NULL, TC_INT64, TC_SUM);
    if (status_ok(w, "reduce_scatter_v", k, s))
        for (size_t i = 0; i < cnt[r]; i++) {
            int64_t want = 0;
            for (int q = 0; q < n; q++)
                want += input(t, k, q, off[r] + i);
            check(w, "reduce_scatter_v", k, i, rbuf[i], want);
        }

    /* all-to-all-v: vcount(r, q) elements from rank r to rank q, packed */
    size_t sent = 0, got = 0;
    for (int q = 0; q < n; q++) {
        scnt[q] = vcount(t, k, r, q, c);
        rcnt[q] = vcount(t, k, q, r, c);
        for (size_t i = 0; i < scnt[q]; i++)
            sbuf[sent + i] = input(t, k, r, (size_t)q * MAX_COUNT + i);
        sent += scnt[q];
    }
    RUN(s, tc_all_to_all_v, w->comm, sbuf, scnt, NULL, rbuf, rcnt, NULL, TC_INT64);
    if (status_ok(w, "all_to_all_v", k, s))
        for (int q = 0; q < n; q++) {
            for (size_t i = 0; i < rcnt[q]; i++)
                check(w, "all_to_all_v", k, got + i, rbuf[got + i],
                      input(t, k, q, (size_t)r * MAX_COUNT + i));
            got += rcnt[q];
        }

    /* the persistent all-gather, started again */
    if (pg->work) {
        for (size_t i = 0; i < pg->count; i++)
            pg->send[i] = input(t, k, r, i);
        s = tc_work_start(pg->work);
        if (s == TC_OK)
            s = tc_work_wait(pg->work, TIMEOUT_MS);
        if (status_ok(w, "persistent all_gather", k, s))
            for (int q = 0; q < n; q++)
                for (size_t i = 0; i < pg->count; i++)
                    check(w, "persistent all_gather", k, q * pg->count + i,
                          pg->recv[q * pg->count + i], input(t, k, q, i));
    }

    /* a put with a signal into the next rank's window, seen by it once the signal counts this
     * round; then a get of it back (the previous rank puts the next round only after this
     * rank's check: this rank's all-reduce of that round comes after it) */
    if (win) {
        for (size_t i = 0; i < c; i++)
            sbuf[i] = input(t, k, r, i + 11);
        uint64_t seen = 0;
        s = tc_win_put_signal(win, sbuf, c * sizeof(int64_t), (r + 1) % n, 0, 0, 1,
                              TC_WIN_SIGNAL_ADD, &opts, NULL);
        if (status_ok(w, "win put_signal", k, s))
            s = tc_win_wait_signal(win, 0, TC_WIN_CMP_GE, (uint64_t)k + 1, TIMEOUT_MS, &seen);
        if (status_ok(w, "win wait_signal", k, s)) {
            check(w, "win wait_signal: count", k, 0, (int64_t)seen, k + 1);
            for (size_t i = 0; i < c; i++)
                check(w, "win put_signal", k, i, win_base[i], input(t, k, (r + n - 1) % n, i + 11));
        }
        s = tc_win_get(win, rbuf, c * sizeof(int64_t), (r + 1) % n, 0, &opts, NULL);
        if (status_ok(w, "win get", k, s))
            for (size_t i = 0; i < c; i++)
                check(w, "win get", k, i, rbuf[i], input(t, k, r, i + 11));
    }

    /* a send to the next rank, a receive from any source: the previous rank's */
    if (n < 2)
        return;
    tc_work_t *sw = NULL, *rw = NULL;
    for (size_t i = 0; i < c; i++)
        sbuf[i] = input(t, k, r, i + 5);
    s = tc_send(w->comm, sbuf, c, TC_INT64, (r + 1) % n, &aopts, &sw);
    if (status_ok(w, "send", k, s)) {
        s = tc_recv(w->comm, rbuf, c, TC_INT64, TC_ANY_SOURCE, async ? &aopts : &opts, &rw);
        if (s == TC_OK && async)
            s = tc_work_wait(rw, TIMEOUT_MS);
        int src = -1;
        if (s == TC_OK)
            s = tc_work_source(rw, &src);
        if (status_ok(w, "recv from any source", k, s)) {
            check(w, "recv from any source: source", k, 0, src, (r + n - 1) % n);
            for (size_t i = 0; i < c; i++)
                check(w, "recv from any source", k, i, rbuf[i],
                      input(t, k, (r + n - 1) % n, i + 5));
        }
        tc_work_free(rw);
        status_ok(w, "send", k, tc_work_wait(sw, TIMEOUT_MS));
        tc_work_free(sw);
    }
}

static void *worker_main(void *arg) {
    worker_t *w = arg;
    int n = w->size, r = w->rank, t = w->id;
    int64_t *sbuf = malloc(sizeof(int64_t) * MAX_COUNT * n);
    int64_t *rbuf = malloc(sizeof(int64_t) * MAX_COUNT * n);
    tc_op_opts_t opts = TC_OP_OPTS_INIT, aopts = TC_OP_OPTS_INIT;
    opts.timeout_ms = aopts.timeout_ms = TIMEOUT_MS;
    aopts.async = 1;
    persistent_t *pg = persistent_make(w);
    tc_win_t *win = NULL;
    void *win_base = NULL;
    status_ok(w, "win_allocate", 0,
              tc_win_allocate(w->comm, sizeof(int64_t) * MAX_COUNT, &opts, &win_base, &win));
    for (int k = 0; k < w->iters && atomic_load(&failures) == 0; k++) {
        int async = (k + t) % 2;
        size_t c = count_for(t, k);
        int root = (k + t) % n;
        tc_status_t s;

        /* all-reduce */
        for (size_t i = 0; i < c; i++)
            sbuf[i] = input(t, k, r, i);
        RUN(s, tc_all_reduce, w->comm, sbuf, rbuf, c, TC_INT64, TC_SUM);
        if (status_ok(w, "all_reduce", k, s))
            for (size_t i = 0; i < c; i++) {
                int64_t want = 0;
                for (int q = 0; q < n; q++)
                    want += input(t, k, q, i);
                check(w, "all_reduce", k, i, rbuf[i], want);
            }

        /* reduce (max) to a rotating root */
        for (size_t i = 0; i < c; i++)
            sbuf[i] = input(t, k, r, i);
        RUN(s, tc_reduce, w->comm, sbuf, rbuf, c, TC_INT64, TC_MAX, root);
        if (status_ok(w, "reduce", k, s) && r == root)
            for (size_t i = 0; i < c; i++) {
                int64_t want = input(t, k, 0, i);
                for (int q = 1; q < n; q++)
                    want = input(t, k, q, i) > want ? input(t, k, q, i) : want;
                check(w, "reduce", k, i, rbuf[i], want);
            }

        /* broadcast */
        for (size_t i = 0; i < c; i++)
            rbuf[i] = r == root ? input(t, k, root, i) : -1;
        RUN(s, tc_broadcast, w->comm, rbuf, c, TC_INT64, root);
        if (status_ok(w, "broadcast", k, s))
            for (size_t i = 0; i < c; i++)
                check(w, "broadcast", k, i, rbuf[i], input(t, k, root, i));

        /* all-gather */
        for (size_t i = 0; i < c; i++)
            sbuf[i] = input(t, k, r, i);
        RUN(s, tc_all_gather, w->comm, sbuf, rbuf, c, TC_INT64);
        if (status_ok(w, "all_gather", k, s))
            for (int q = 0; q < n; q++)
                for (size_t i = 0; i < c; i++)
                    check(w, "all_gather", k, q * c + i, rbuf[q * c + i], input(t, k, q, i));

        /* reduce-scatter: block q of the sum goes to rank q */
        for (size_t i = 0; i < c * n; i++)
            sbuf[i] = input(t, k, r, i);
        RUN(s, tc_reduce_scatter, w->comm, sbuf, rbuf, c, TC_INT64, TC_SUM);
        if (status_ok(w, "reduce_scatter", k, s))
            for (size_t i = 0; i < c; i++) {
                int64_t want = 0;
                for (int q = 0; q < n; q++)
                    want += input(t, k, q, r * c + i);
                check(w, "reduce_scatter", k, i, rbuf[i], want);
            }

        /* all-to-all: block q of rank r's input goes to rank q */
        for (size_t i = 0; i < c * n; i++)
            sbuf[i] = input(t, k, r, i);
        RUN(s, tc_all_to_all, w->comm, sbuf, rbuf, c, TC_INT64);
        if (status_ok(w, "all_to_all", k, s))
            for (int q = 0; q < n; q++)
                for (size_t i = 0; i < c; i++)
                    check(w, "all_to_all", k, q * c + i, rbuf[q * c + i],
                          input(t, k, q, r * c + i));

        /* gather and scatter at the root */
        for (size_t i = 0; i < c; i++)
            sbuf[i] = input(t, k, r, i);
        RUN(s, tc_gather, w->comm, sbuf, rbuf, c, TC_INT64, root);
        if (status_ok(w, "gather", k, s) && r == root)
            for (int q = 0; q < n; q++)
                for (size_t i = 0; i < c; i++)
                    check(w, "gather", k, q * c + i, rbuf[q * c + i], input(t, k, q, i));
        for (size_t i = 0; i < c * n; i++)
            sbuf[i] = input(t, k, root, i);
        RUN(s, tc_scatter, w->comm, sbuf, rbuf, c, TC_INT64, root);
        if (status_ok(w, "scatter", k, s))
            for (size_t i = 0; i < c; i++)
                check(w, "scatter", k, i, rbuf[i], input(t, k, root, r * c + i));

        /* a send/recv ring as one batch */
        for (size_t i = 0; i < c; i++)
            sbuf[i] = input(t, k, r, i);
        s = tc_batch_begin(w->comm);
        if (s == TC_OK)
            s = tc_send(w->comm, sbuf, c, TC_INT64, (r + 1) % n, NULL, NULL);
        if (s == TC_OK)
            s = tc_recv(w->comm, rbuf, c, TC_INT64, (r + n - 1) % n, NULL, NULL);
        if (s == TC_OK) {
            tc_work_t *bw = NULL;
            s = tc_batch_end(w->comm, async ? &aopts : &opts, async ? &bw : NULL);
            if (s == TC_OK && async) {
                s = tc_work_wait(bw, TIMEOUT_MS);
                tc_work_free(bw);
            }
        }
        if (status_ok(w, "send_recv", k, s))
            for (size_t i = 0; i < c; i++)
                check(w, "send_recv", k, i, rbuf[i], input(t, k, (r + n - 1) % n, i));

        RUN(s, tc_barrier, w->comm);
        status_ok(w, "barrier", k, s);
        worker_more(w, k, async, c, sbuf, rbuf, pg, win, win_base);
    }
    if (win)
        status_ok(w, "win_destroy", 0, tc_win_destroy(win));
    if (pg) {
        if (pg->work)
            status_ok(w, "persistent all_gather free", 0, tc_work_free(pg->work));
        free(pg->send);
        free(pg->recv);
        free(pg);
    }
    free(sbuf);
    free(rbuf);
    return NULL;
}

#define BURST_OPS 6
#define BURST_COUNT 100 /* int64: 800 bytes, above the lanes' medium slots */

static void *burst_main(void *arg)
{
    worker_t *w = arg;
    int n = w->size, r = w->rank, t = w->id;
    static const char *what[BURST_OPS] = {"all_reduce", "broadcast",      "reduce",
                                          "all_gather", "reduce_scatter", "all_to_all"};
    int64_t *in = malloc(sizeof(int64_t) * BURST_OPS * BURST_COUNT * n);
    int64_t *out = malloc(sizeof(int64_t) * BURST_OPS * BURST_COUNT * n);
    tc_op_opts_t o = TC_OP_OPTS_INIT;
    o.timeout_ms = 10000;
    o.async = 1;
    for (int k = 0; k < w->iters && atomic_load(&failures) == 0; k++) {
        const size_t c = BURST_COUNT, span = c * n;
        int root = (k + t) % n;
        int64_t *ib[BURST_OPS], *ob[BURST_OPS];
        for (int j = 0; j < BURST_OPS; j++) {
            ib[j] = in + (size_t)j * span;
            ob[j] = out + (size_t)j * span;
            for (size_t i = 0; i < span; i++)
                ib[j][i] = input(t, k * BURST_OPS + j, r, i);
        }
        memcpy(ob[1], ib[1], c * sizeof(int64_t)); /* broadcast in place: the root's input */
        memcpy(ob[5], ib[5], span * sizeof(int64_t)); /* all-to-all in place */
        tc_work_t *wk[BURST_OPS] = {NULL};
        tc_status_t st[BURST_OPS];
        st[0] = tc_all_reduce(w->comm, ib[0], ob[0], c, TC_INT64, TC_SUM, &o, &wk[0]);
        st[1] = tc_broadcast(w->comm, ob[1], c, TC_INT64, root, &o, &wk[1]);
        st[2] = tc_reduce(w->comm, ib[2], ob[2], c, TC_INT64, TC_SUM, root, &o, &wk[2]);
        st[3] = tc_all_gather(w->comm, ib[3], ob[3], c, TC_INT64, &o, &wk[3]);
        st[4] = tc_reduce_scatter(w->comm, ib[4], ob[4], c, TC_INT64, TC_SUM, &o, &wk[4]);
        st[5] = tc_all_to_all(w->comm, ob[5], ob[5], c, TC_INT64, &o, &wk[5]);
        for (int j = 0; j < BURST_OPS; j++) {
            if (st[j] == TC_OK)
                st[j] = tc_work_wait(wk[j], 20000);
            status_ok(w, what[j], k, st[j]);
            tc_work_free(wk[j]);
        }
        for (size_t i = 0; i < c; i++) {
            int64_t sum[BURST_OPS] = {0};
            for (int q = 0; q < n; q++)
                for (int j = 0; j < BURST_OPS; j++)
                    sum[j] += input(t, k * BURST_OPS + j, q, j == 4 ? r * c + i : i);
            if (st[0] == TC_OK)
                check(w, what[0], k, i, ob[0][i], sum[0]);
            if (st[1] == TC_OK)
                check(w, what[1], k, i, ob[1][i], input(t, k * BURST_OPS + 1, root, i));
            if (st[2] == TC_OK && r == root)
                check(w, what[2], k, i, ob[2][i], sum[2]);
            for (int q = 0; st[3] == TC_OK && q < n; q++)
                check(w, what[3], k, q * c + i, ob[3][q * c + i],
                      input(t, k * BURST_OPS + 3, q, i));
            if (st[4] == TC_OK)
                check(w, what[4], k, i, ob[4][i], sum[4]);
            for (int q = 0; st[5] == TC_OK && q < n; q++) /* block r of rank q's input */
                check(w, what[5], k, q * c + i, ob[5][q * c + i],
                      input(t, k * BURST_OPS + 5, q, r * c + i));
        }
    }
    free(in);
    free(out);
    return NULL;
}

static atomic_int workers_running;

typedef struct {
    worker_t *w;
    int n;
} observer_t;

/* The all-reduces counted on @p comm and how many of them failed. */
static void count_all_reduces(tc_comm_t *comm, uint64_t *ops, uint64_t *failed)
{
    tc_comm_stat_t st[64];
    int n = 0;
    *ops = *failed = 0;
    if (tc_comm_stats(comm, st, 64, &n) != TC_OK)
        return;
    for (int i = 0; i < n && i < 64; i++)
        if (!strcmp(st[i].coll, "all_reduce")) {
            *ops += st[i].ops;
            *failed += st[i].failed;
        }
}

static void *observer_main(void *arg)
{
    observer_t *o = arg;
    const char *dir = getenv("TC_FR_DIR");
    int dump = dir && *dir;
    for (unsigned pass = 0; atomic_load(&workers_running) > 0; pass++) {
        for (int t = 0; t < o->n; t++) {
            uint64_t ops, failed;
            count_all_reduces(o->w[t].comm, &ops, &failed);
            if (ops > (uint64_t)o->w[t].iters + WIN_ALL_REDUCES)
                FAIL("thread %d: %llu all-reduces counted of %d", t, (unsigned long long)ops,
                     o->w[t].iters);
            if (dump && pass % 64 == 0 && tc_comm_dump_fr(o->w[t].comm) != TC_OK)
                FAIL("thread %d: dump_fr: %s", t, tc_last_error());
        }
        usleep(200);
    }
    return NULL;
}

static int only_shrinks; /* --shrinks: every child a shrink */

/* A child of @p parent made by thread @p t in round @p k (the --create mode). */
static tc_status_t make_child(tc_comm_t *parent, int t, int k, tc_comm_t **child) {
    int rank, size;
    tc_comm_rank(parent, &rank);
    tc_comm_size(parent, &size);
    switch (only_shrinks ? 3 : (t + k) % 4) {
    case 0:
        return tc_comm_dup(parent, NULL, child);
    case 3: /* no rank failed: every rank, in the parent's order */
        return tc_comm_shrink(parent, NULL, child);
    case 1: /* reversed order */
        return tc_comm_split(parent, 0, size - rank, NULL, child);
    default: { /* rotated by k */
        int ranks[64];
        int n = size < 64 ? size : 64;
        for (int i = 0; i < n; i++)
            ranks[i] = (i + k) % size;
        return tc_comm_split_ranks(parent, ranks, n, NULL, child);
    }
    }
}

static pthread_barrier_t create_start; /* the --create threads begin together */

static void *create_main(void *arg) {
    worker_t *w = arg;
    int t = w->id;
    pthread_barrier_wait(&create_start);
    tc_op_opts_t opts = TC_OP_OPTS_INIT;
    opts.timeout_ms = TIMEOUT_MS;
    int64_t sbuf[64], rbuf[64];
    for (int k = 0; k < w->iters && atomic_load(&failures) == 0; k++) {
        tc_comm_t *child = NULL;
        if (!status_ok(w, "create", k, make_child(w->comm, t, k, &child)))
            break;
        int r, n;
        tc_comm_rank(child, &r);
        tc_comm_size(child, &n);
        size_t c = 1 + (size_t)(t + k) % 64;
        for (size_t i = 0; i < c; i++)
            sbuf[i] = input(t, k, r, i);
        tc_status_t s = tc_all_reduce(child, sbuf, rbuf, c, TC_INT64, TC_SUM, &opts, NULL);
        if (status_ok(w, "all_reduce on a new communicator", k, s))
            for (size_t i = 0; i < c; i++) {
                int64_t want = 0;
                for (int q = 0; q < n; q++)
                    want += input(t, k, q, i);
                check(w, "all_reduce on a new communicator", k, i, rbuf[i], want);
            }
        s = tc_batch_begin(child);
        if (s == TC_OK)
            s = tc_send(child, sbuf, c, TC_INT64, (r + 1) % n, NULL, NULL);
        if (s == TC_OK)
            s = tc_recv(child, rbuf, c, TC_INT64, (r + n - 1) % n, NULL, NULL);
        if (s == TC_OK)
            s = tc_batch_end(child, &opts, NULL);
        if (status_ok(w, "send_recv on a new communicator", k, s))
            for (size_t i = 0; i < c; i++)
                check(w, "send_recv on a new communicator", k, i, rbuf[i],
                      input(t, k, (r + n - 1) % n, i));
        status_ok(w, "destroy", k, tc_comm_destroy(child));
    }
    return NULL;
}

/* Rank 0 enters late, so every other rank's first thread sits in the barrier while its
 * second thread calls on the same communicator and must be refused. */
static void *barrier_main(void *arg) {
    worker_t *w = arg;
    if (w->rank == 0)
        usleep(300 * 1000);
    tc_op_opts_t opts = TC_OP_OPTS_INIT;
    opts.timeout_ms = TIMEOUT_MS;
    tc_status_t s = tc_barrier(w->comm, &opts, NULL);
    status_ok(w, "barrier (first thread)", 0, s);
    return NULL;
}

/* A refusal with TC_ERR_INVALID_STATE whose message says @p why. */
static void expect_refused(const char *what, tc_status_t s, const char *why)
{
    atomic_fetch_add(&checks, 1);
    if (s != TC_ERR_INVALID_STATE)
        FAIL("%s: got %s, want TC_ERR_INVALID_STATE", what, tc_status_string(s));
    else if (!strstr(tc_last_error(), why))
        FAIL("%s: the refusal does not say \"%s\": %s", what, why, tc_last_error());
}

/* Record a ring exchange in the calling thread's open batch: send @p *out to the next rank,
 * receive @p *in from the previous one. */
static void record_ring(tc_comm_t *comm, int64_t *out, int64_t *in)
{
    int next = (world_rank + 1) % world_size, prev = (world_rank + world_size - 1) % world_size;
    tc_status_t s1 = tc_send(comm, out, 1, TC_INT64, next, NULL, NULL);
    tc_status_t s2 = tc_recv(comm, in, 1, TC_INT64, prev, NULL, NULL);
    if (s1 != TC_OK || s2 != TC_OK)
        FAIL("recording a batch: %s", tc_last_error());
}

static void check_ring(const char *what, int64_t got, int64_t salt)
{
    int prev = (world_rank + world_size - 1) % world_size;
    atomic_fetch_add(&checks, 1);
    if (got != prev * 100 + salt)
        FAIL("%s: received %lld, want %lld", what, (long long)got, (long long)(prev * 100 + salt));
}

/* Another thread's calls while this rank's main thread records a batch: each refused, the
 * batch untouched (they were taken into it, or ended it, before). */
static void *batch_intruder(void *arg)
{
    tc_comm_t *comm = arg;
    const char *why = "another thread is recording a batch";
    int64_t v = -1, r = -1;
    expect_refused("tc_send during another thread's batch",
                   tc_send(comm, &v, 1, TC_INT64, (world_rank + 1) % world_size, NULL, NULL), why);
    expect_refused("tc_recv during another thread's batch",
                   tc_recv(comm, &r, 1, TC_INT64, 0, NULL, NULL), why);
    expect_refused("tc_batch_begin during another thread's batch", tc_batch_begin(comm), why);
    expect_refused("tc_batch_end of another thread's batch", tc_batch_end(comm, NULL, NULL), why);
    expect_refused("tc_batch_cancel of another thread's batch", tc_batch_cancel(comm), why);
    expect_refused("tc_all_reduce during another thread's batch",
                   tc_all_reduce(comm, &v, &r, 1, TC_INT64, TC_SUM, NULL, NULL), why);
    return NULL;
}

static void same_comm(tc_comm_t *comm) {
    worker_t w = {.id = 0, .comm = comm, .rank = world_rank, .size = world_size, .iters = 1};
    pthread_t th;
    int64_t out = world_rank * 100 + 1, in = -1;
    pthread_create(&th, NULL, barrier_main, &w);
    if (world_rank != 0) {
        usleep(100 * 1000); /* the first thread is now waiting in its barrier */
        int64_t x = 1, y = 0;
        expect_refused("same communicator from a second thread",
                       tc_all_reduce(comm, &x, &y, 1, TC_INT64, TC_SUM, NULL, NULL),
                       "another thread");
        /* a batch ended while the other thread is inside a call: refused, and left open */
        status_ok(&w, "batch_begin", 0, tc_batch_begin(comm));
        record_ring(comm, &out, &in);
        expect_refused("tc_batch_end while another thread is inside a call",
                       tc_batch_end(comm, NULL, NULL), "another thread is inside a call");
        expect_refused("all_reduce with the refused batch still open",
                       tc_all_reduce(comm, &x, &y, 1, TC_INT64, TC_SUM, NULL, NULL),
                       "is recording a batch");
        /* cancelled, then recorded again: the cancelled one sent nothing (the ring below
         * receives exactly one message per rank) */
        status_ok(&w, "batch_cancel", 0, tc_batch_cancel(comm));
        expect_refused("batch_cancel with no batch", tc_batch_cancel(comm), "no tc_batch_begin");
        status_ok(&w, "batch_begin", 0, tc_batch_begin(comm));
        record_ring(comm, &out, &in);
    }
    pthread_join(th, NULL);
    if (world_rank == 0) {
        status_ok(&w, "batch_begin", 0, tc_batch_begin(comm));
        record_ring(comm, &out, &in);
    }
    if (status_ok(&w, "batch_end (retried)", 0, tc_batch_end(comm, NULL, NULL)))
        check_ring("the batch ended after a refusal", in, 1);
    /* a batch belongs to the thread that began it */
    out = world_rank * 100 + 2;
    status_ok(&w, "batch_begin", 0, tc_batch_begin(comm));
    record_ring(comm, &out, &in);
    pthread_create(&th, NULL, batch_intruder, comm);
    pthread_join(th, NULL);
    if (status_ok(&w, "batch_end (own thread)", 0, tc_batch_end(comm, NULL, NULL)))
        check_ring("the batch other threads called during", in, 2);
    /* still usable */
    int64_t x = world_rank + 1, y = 0;
    tc_status_t s = tc_all_reduce(comm, &x, &y, 1, TC_INT64, TC_SUM, NULL, NULL);
    if (status_ok(&w, "all_reduce after the refusal", 0, s))
        check(&w, "all_reduce after the refusal", 0, 0, y,
              (int64_t)world_size * (world_size + 1) / 2);
}

int main(int argc, char **argv) {
    int nthreads = 4, iters = 20, samecomm = 0, create = 0, burst = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            nthreads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--same-comm"))
            samecomm = 1;
        else if (!strcmp(argv[i], "--create"))
            create = 1;
        else if (!strcmp(argv[i], "--shrinks"))
            create = only_shrinks = 1;
        else if (!strcmp(argv[i], "--burst"))
            burst = 1;
        else {
            fprintf(stderr,
                    "usage: thread_test [--threads 1..%d] [--iters K] [--same-comm | --create | "
                    "--shrinks | --burst]\n",
                    MAX_THREADS);
            return 2;
        }
    }
    if (nthreads < 1 || nthreads > MAX_THREADS || iters < 1) {
        fprintf(stderr, "thread_test: --threads must be 1..%d and --iters positive\n",
                MAX_THREADS);
        return 2;
    }
    tc_comm_t *world;
    if (tc_comm_create(NULL, &world) != TC_OK) {
        fprintf(stderr, "thread_test: create: %s\n", tc_last_error());
        return 1;
    }
    tc_comm_rank(world, &world_rank);
    tc_comm_size(world, &world_size);
    if (world_size > MAX_RANKS) {
        fprintf(stderr, "thread_test: at most %d ranks\n", MAX_RANKS);
        return 2;
    }
    if (samecomm) {
        same_comm(world);
    } else {
        worker_t w[MAX_THREADS];
        pthread_t th[MAX_THREADS];
        /* Communicators are created collectively, in the same order on every rank: here. */
        for (int t = 0; t < nthreads; t++) {
            tc_status_t s;
            w[t] = (worker_t){.id = t, .iters = iters};
            if (t % 3 == 0)
                s = tc_comm_dup(world, NULL, &w[t].comm);
            else if (t % 3 == 1) /* reversed order */
                s = tc_comm_split(world, 0, world_size - world_rank, NULL, &w[t].comm);
            else { /* rotated by t */
                int ranks[64];
                int n = world_size < 64 ? world_size : 64;
                for (int i = 0; i < n; i++)
                    ranks[i] = (i + t) % world_size;
                s = tc_comm_split_ranks(world, ranks, n, NULL, &w[t].comm);
            }
            if (s != TC_OK) {
                fprintf(stderr, "thread_test: communicator %d: %s\n", t, tc_last_error());
                return 1;
            }
            tc_comm_rank(w[t].comm, &w[t].rank);
            tc_comm_size(w[t].comm, &w[t].size);
        }
        pthread_barrier_init(&create_start, NULL, (unsigned)nthreads);
        atomic_store(&workers_running, nthreads);
        for (int t = 0; t < nthreads; t++)
            pthread_create(&th[t], NULL,
                           create  ? create_main
                           : burst ? burst_main
                                   : worker_main,
                           &w[t]);
        observer_t obs = {w, nthreads};
        pthread_t oth;
        create |= burst; /* neither counts all-reduces as the observer expects */
        if (!create)
            pthread_create(&oth, NULL, observer_main, &obs);
        for (int t = 0; t < nthreads; t++) {
            pthread_join(th[t], NULL);
            atomic_fetch_sub(&workers_running, 1);
        }
        if (!create) {
            pthread_join(oth, NULL);
            for (int t = 0; t < nthreads && atomic_load(&failures) == 0; t++) {
                uint64_t ops, failed;
                count_all_reduces(w[t].comm, &ops, &failed);
                if (ops != (uint64_t)iters + WIN_ALL_REDUCES || failed != 0)
                    FAIL("thread %d: %llu all-reduces counted (%llu failed), %d ran", t,
                         (unsigned long long)ops, (unsigned long long)failed, iters);
            }
        }
        for (int t = 0; t < nthreads; t++)
            tc_comm_destroy(w[t].comm);
        pthread_barrier_destroy(&create_start);
    }
    tc_status_t s = tc_comm_destroy(world);
    if (s != TC_OK)
        FAIL("destroy: %s", tc_last_error());
    printf("rank %d of %d: %d checks, %d failures\n", world_rank, world_size,
           atomic_load(&checks), atomic_load(&failures));
    return atomic_load(&failures) == 0 ? 0 : 1;
}
