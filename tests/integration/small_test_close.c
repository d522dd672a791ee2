/* The small-message path when an endpoint holding lanes closes (small_test.h): run with
 * TC_FAULT_INJECT=close:rank=0:op=10, rank 0 closes its endpoint to rank 1 (the lanes'
 * segment) as its 10th operation on the world begins. Every communicator whose lanes lay there
 * must then fail with TC_ERR_INVALID_STATE saying the endpoint was closed, never reading the
 * closed segment. */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "small_test.h"

/* close-thread: a blocking all-reduce on @p arg (a communicator) from another thread */
struct waiter {
    tc_comm_t *comm;
    int started;
    tc_status_t st;
    char why[512];
};

static void *waiter_main(void *arg)
{
    struct waiter *t = arg;
    double x = 1, y = 0;
    __atomic_store_n(&t->started, 1, __ATOMIC_RELEASE);
    t->st = tc_all_reduce(t->comm, &x, &y, 1, TC_FLOAT64, TC_SUM, NULL, NULL);
    snprintf(t->why, sizeof(t->why), "%s", tc_last_error());
    return NULL;
}

/* close: the blocking all-reduce that closes it fails (blocking: the path without the world's
 * lock once it is on) */
static void close_world(tc_comm_t *comm)
{
    double x = rank, y;
    tc_status_t st = TC_OK;
    int i = 0;
    for (; i < 1000; i++)
        if ((st = allreduce_as(comm, &x, &y, 0, BLOCKING)) != TC_OK)
            break;
    /* the world communicator's operations count from 1; the first one sets the path up */
    EXPECT(i == 9, "close: the all-reduce that failed was number %d, not 10", i + 1);
    if (rank == 0)
        EXPECT(st == TC_ERR_INVALID_STATE && strstr(why, "was closed"), "close: %s: %s",
               tc_status_string(st), why);
    else
        EXPECT(st != TC_OK, "close: rank %d's all-reduce succeeded", rank);
}

/* After the close, a general-path operation on @p other connects a new endpoint to rank 1,
 * which may get the closed one's address; the duplicate @p dup, whose lanes were in the closed
 * one, must still say it was closed (it waited on the closed segment's lane until its timeout). */
static void close_reopen(tc_comm_t *dup, tc_comm_t *other)
{
    double *big = calloc(4096, sizeof(double)), *bigout = calloc(4096, sizeof(double));
    double x = rank, y;
    tc_op_opts_t o = TC_OP_OPTS_INIT;
    o.timeout_ms = 2000;
    tc_status_t st = tc_all_reduce(other, big, bigout, 4096, TC_FLOAT64, TC_SUM, &o, NULL);
    EXPECT(st == TC_ERR_TIMEOUT && strstr(tc_last_error(), "ring"),
           "close-reopen: the large all-reduce rank 1 never calls (it connects again): %s: %s",
           tc_status_string(st), tc_last_error());
    free(big);
    free(bigout);
    st = allreduce_as(dup, &x, &y, 2000, BLOCKING);
    EXPECT(st == TC_ERR_INVALID_STATE && strstr(why, "was closed"),
           "close-reopen: the duplicate's all-reduce after a new endpoint: %s: %s",
           tc_status_string(st), why);
}

/* close-other, close-thread, close-reopen: the close comes from the world's operation while a
 * duplicate's lanes lie in the same segment: its asynchronous work waiting there (close-other),
 * another thread's blocking call waiting there (close-thread), or a call after the endpoint was
 * made again (close-reopen) */
static void close_dup(tc_comm_t *comm, const char *mode)
{
    int threaded = strcmp(mode, "close-thread") == 0, reopen = strcmp(mode, "close-reopen") == 0;
    double x = rank, y;
    tc_status_t st = TC_OK;
    tc_comm_t *dup = NULL, *other = NULL;
    ok(tc_comm_dup(comm, NULL, &dup), "tc_comm_dup");
    if (reopen)
        ok(tc_comm_dup(comm, NULL, &other), "tc_comm_dup");
    for (int i = 0; i < 3; i++) { /* both set their path up */
        ok(allreduce_as(comm, &x, &y, 0, BLOCKING), "all_reduce on the world");
        ok(allreduce_as(dup, &x, &y, 0, BLOCKING), "all_reduce on the duplicate");
    }
    tc_work_t *w = NULL;
    struct waiter t = {.comm = dup};
    pthread_t tid;
    if (rank == 0 && threaded) { /* waits for rank 1, which calls it only after the close */
        EXPECT(pthread_create(&tid, NULL, waiter_main, &t) == 0, "pthread_create");
        while (!__atomic_load_n(&t.started, __ATOMIC_ACQUIRE))
            sched_yield();
        usleep(50000); /* inside its wait by now */
    } else if (rank == 0 && !reopen) {
        tc_op_opts_t o = TC_OP_OPTS_INIT;
        o.async = 1;
        ok(tc_all_reduce(dup, &x, &y, 1, TC_FLOAT64, TC_SUM, &o, &w), "asynchronous issue");
    }
    int i = 0; /* the world's operations up to the 10th, which closes the endpoint */
    while (i++ < 20 && (st = allreduce_as(comm, &x, &y, 0, BLOCKING)) == TC_OK)
        ;
    EXPECT(st != TC_OK, "%s: rank %d's all-reduces on the world all succeeded", mode, rank);
    if (rank == 0) {
        EXPECT(st == TC_ERR_INVALID_STATE && strstr(why, "was closed"), "%s: %s: %s", mode,
               tc_status_string(st), why);
        if (threaded) {
            pthread_join(tid, NULL);
            EXPECT(t.st == TC_ERR_INVALID_STATE && strstr(t.why, "was closed"),
                   "the other thread's all-reduce on the duplicate: %s: %s",
                   tc_status_string(t.st), t.why);
        } else if (reopen) {
            close_reopen(dup, other);
        } else {
            st = w ? tc_work_wait(w, 10000) : TC_ERR_INVALID_ARG;
            snprintf(why, sizeof(why), "%s", tc_last_error());
            EXPECT(st == TC_ERR_INVALID_STATE && strstr(why, "was closed") &&
                       strstr(why, "shm_lanes"),
                   "the duplicate's asynchronous all-reduce: %s: %s", tc_status_string(st), why);
            tc_work_free(w);
        }
    } else if (reopen) {
        sleep(3); /* alive while rank 0 connects again and waits */
    } else {
        st = allreduce_as(dup, &x, &y, 0, BLOCKING);
        EXPECT(st != TC_OK, "%s: rank %d's all-reduce succeeded", mode, rank);
    }
    if (other)
        tc_comm_destroy(other);
    tc_comm_destroy(dup);
}

int close_mode(tc_comm_t *comm, const char *mode)
{
    if (strcmp(mode, "close") == 0)
        close_world(comm);
    else if (strcmp(mode, "close-other") == 0 || strcmp(mode, "close-thread") == 0 ||
             strcmp(mode, "close-reopen") == 0)
        close_dup(comm, mode);
    else
        return 0;
    return 1;
}
