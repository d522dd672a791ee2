/* tcperf --threads T: T threads of each rank run all-reduces at once, each on
 * its own duplicate of the world (the thread model of tcomms.h: different
 * communicators, any threads, at once). Per size: the threads start together
 * (a pthread barrier after an all-reduce that aligns the ranks), each runs
 * -n all-reduces; the row gives the mean latency of one thread's operations
 * (max over threads and ranks) and the aggregate rate: T * n operations over
 * the window from the first thread's start to the last one's end (the widest
 * over ranks), which also counts threads the cores ran one after another. With
 * -c 1 each thread checks one more operation element by element, its inputs
 * offset by the thread so that a result delivered to the wrong communicator
 * is caught. */
#include "threads.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pattern.h"
#include "tcomms/base/time.h"

typedef struct bench bench_t;

typedef struct {
    bench_t *b;
    int index;
    tc_comm_t *comm;
    unsigned char *sbuf, *rbuf;
    double begin, end;  /* the timed loop (tc_time_s: one clock for the node) */
    size_t wrong;       /* elements of the checked operation */
    tc_status_t status; /* the first failure */
    char error[256];
} worker_t;

struct bench {
    const tcperf_threads_opts_t *o;
    int rank, size;
    size_t count;
    pthread_barrier_t start, done;
    int stop; /* set before the start barrier: the threads leave */
    worker_t *w;
};

static tc_status_t one(worker_t *w, void *s, void *r, size_t count)
{
    const tcperf_threads_opts_t *o = w->b->o;
    tc_op_opts_t opts = TC_OP_OPTS_INIT;
    opts.async = o->async;
    tc_work_t *work = NULL;
    tc_status_t st =
        tc_all_reduce(w->comm, s, r, count, o->dtype, o->op, &opts, o->async ? &work : NULL);
    if (st == TC_OK && work)
        st = tc_work_wait(work, -1);
    if (work)
        tc_work_free(work);
    return st;
}

static void failed(worker_t *w, tc_status_t st)
{
    if (w->status != TC_OK)
        return;
    w->status = st;
    snprintf(w->error, sizeof(w->error), "%s", tc_last_error());
}

/* One size: warm-up, the timed loop, the checked operation. */
static void run_size(worker_t *w)
{
    const tcperf_threads_opts_t *o = w->b->o;
    size_t count = w->b->count;
    tc_status_t st = TC_OK;
    for (int i = 0; i < o->warmup && st == TC_OK; i++)
        st = one(w, w->sbuf, w->rbuf, count);
    pthread_barrier_wait(&w->b->start);
    w->begin = tc_time_s();
    for (int i = 0; i < o->iters && st == TC_OK; i++)
        st = one(w, w->sbuf, w->rbuf, count);
    w->end = tc_time_s();
    w->wrong = 0;
    if (st == TC_OK && o->check) {
        /* every rank's thread k reduces the inputs of global indices k * count + i */
        size_t first = (size_t)w->index * count;
        tcperf_fill(w->sbuf, count, o->dtype, o->op, w->b->rank, first);
        memset(w->rbuf, 0xa5, count * tc_dtype_size(o->dtype));
        st = one(w, w->sbuf, w->rbuf, count);
        if (st == TC_OK)
            w->wrong = tcperf_check(w->rbuf, count, o->dtype, o->op, w->b->size, first);
    }
    if (st != TC_OK)
        failed(w, st);
}

static void *thread_main(void *arg)
{
    worker_t *w = arg;
    for (;;) {
        pthread_barrier_wait(&w->b->start); /* the main thread has set the size */
        if (w->b->stop)
            return NULL;
        if (w->status == TC_OK)
            run_size(w);
        else
            pthread_barrier_wait(&w->b->start); /* keep the others' barrier whole */
        pthread_barrier_wait(&w->b->done);
    }
}

static int report(bench_t *b, tc_comm_t *comm, uint64_t bytes, double *wrong_total_p)
{
    const tcperf_threads_opts_t *o = b->o;
    int t = o->threads;
    /* [0] the window from the first thread's start to the last one's end (max
     * over ranks: threads the cores run one after another do not overlap), [1]
     * mean latency of a thread (max),
     * [2] wrong elements (sum), [3] failed threads (sum) */
    double v[4] = {0, 0, 0, 0}, first = b->w[0].begin, last = b->w[0].end;
    for (int k = 0; k < t; k++) {
        worker_t *w = &b->w[k];
        first = w->begin < first ? w->begin : first;
        last = w->end > last ? w->end : last;
        double us = (w->end - w->begin) * 1e6 / o->iters;
        v[1] = us > v[1] ? us : v[1];
        v[2] += (double)w->wrong;
        if (w->status != TC_OK) {
            v[3] += 1;
            fprintf(stderr, "tcperf: rank %d thread %d: all_reduce: %s: %s\n", b->rank, k,
                    tc_status_string(w->status), w->error);
        }
    }
    v[0] = last - first;
    double maxed[2] = {v[0], v[1]}, summed[2] = {v[2], v[3]};
    tc_status_t st = tc_all_reduce(comm, maxed, maxed, 2, TC_FLOAT64, TC_MAX, NULL, NULL);
    if (st == TC_OK)
        st = tc_all_reduce(comm, summed, summed, 2, TC_FLOAT64, TC_SUM, NULL, NULL);
    if (st != TC_OK) {
        fprintf(stderr, "tcperf: %s: %s\n", tc_status_string(st), tc_last_error());
        return 2;
    }
    *wrong_total_p += summed[0];
    if (b->rank == 0) {
        double ops = maxed[0] > 0 ? (double)t * o->iters / maxed[0] : 0;
        printf("%12llu %12zu %8d %10.2f %12.0f %10.3f %8s\n", (unsigned long long)bytes, b->count,
               t, maxed[1], ops, ops * (double)bytes / 1e9,
               o->check ? (summed[0] == 0 ? "0" : "WRONG") : "-");
        fflush(stdout);
    }
    return summed[1] > 0 ? 2 : 0;
}

int tcperf_threads(tc_comm_t *comm, const tcperf_threads_opts_t *o, double *wrong_total_p)
{
    bench_t b = {.o = o};
    tc_comm_rank(comm, &b.rank);
    tc_comm_size(comm, &b.size);
    int t = o->threads, rc = 0, started = 0;
    size_t es = tc_dtype_size(o->dtype), cap = o->max_bytes / es * es + es;
    b.w = calloc((size_t)t, sizeof(*b.w));
    if (!b.w)
        return 2;
    for (int k = 0; k < t && rc == 0; k++) { /* dups: collective, in the same order everywhere */
        worker_t *w = &b.w[k];
        w->b = &b;
        w->index = k;
        w->sbuf = calloc(1, cap);
        w->rbuf = calloc(1, cap);
        tc_status_t st = tc_comm_dup(comm, NULL, &w->comm);
        if (st != TC_OK || !w->sbuf || !w->rbuf) {
            fprintf(stderr, "tcperf: thread %d: %s\n", k,
                    st != TC_OK ? tc_last_error() : "out of memory");
            rc = 2;
        }
    }
    if (rc == 0) {
        pthread_barrier_init(&b.start, NULL, (unsigned)t + 1);
        pthread_barrier_init(&b.done, NULL, (unsigned)t + 1);
    }
    pthread_t *tid = rc == 0 ? calloc((size_t)t, sizeof(*tid)) : NULL;
    for (int k = 0; rc == 0 && tid && k < t; k++) {
        if (pthread_create(&tid[k], NULL, thread_main, &b.w[k]) != 0) {
            rc = 2;
            break;
        }
        started++;
    }
    if (rc == 0 && tid && b.rank == 0)
        printf("# all_reduce, %d threads per rank, each on its own communicator; %s %s\n"
               "# %10s %12s %8s %10s %12s %10s %8s\n",
               t, tc_dtype_name(o->dtype), tc_redop_name(o->op), "size", "count", "threads",
               "lat(us)", "agg ops/s", "agg GB/s", "#wrong");
    for (uint64_t bytes = o->min_bytes; rc == 0 && tid && started == t && bytes <= o->max_bytes;
         bytes = o->factor ? (bytes ? bytes * (uint64_t)o->factor : 1) : bytes + o->step_bytes) {
        b.count = bytes / es;
        double sync = 0; /* align the ranks before the threads start */
        if (tc_all_reduce(comm, &sync, &sync, 1, TC_FLOAT64, TC_SUM, NULL, NULL) != TC_OK) {
            rc = 2;
            break;
        }
        pthread_barrier_wait(&b.start); /* go: warm-up */
        pthread_barrier_wait(&b.start); /* the timed loops start together */
        pthread_barrier_wait(&b.done);
        rc = report(&b, comm, bytes, wrong_total_p);
    }
    if (started < t && tid) {
        /* pthread_create failed part-way: the threads started wait at a barrier that
         * cannot fill; they touch no communicator and end with the process */
        fprintf(stderr, "tcperf: could not start %d threads\n", t);
        rc = 2;
    } else if (tid) {
        b.stop = 1;
        pthread_barrier_wait(&b.start);
        for (int k = 0; k < t; k++)
            pthread_join(tid[k], NULL);
        pthread_barrier_destroy(&b.start);
        pthread_barrier_destroy(&b.done);
    }
    free(tid);
    for (int k = 0; k < t; k++) {
        if (b.w[k].comm)
            tc_comm_destroy(b.w[k].comm);
        free(b.w[k].sbuf);
        free(b.w[k].rbuf);
    }
    free(b.w);
    return rc;
}
