/*
 * tc_comm_create_abort(): a creation waiting for a rank that never comes
 * returns TC_ERR_ABORTED promptly, whether the abort comes from another
 * thread or from a signal handler, under PMIx (tcrun) or the torchrun
 * environment. Run by run_fault.sh:
 *
 *   create_abort_test thread|signal ABSENT_RANK ABORT_MS
 *
 * The rank ABSENT_RANK (read from PMIX_RANK or RANK) never creates; the
 * others start tc_comm_create() with a 30 s timeout and abort it after
 * ABORT_MS. Each prints "create_abort: OK ..." or "create_abort: FAIL ..." and
 * exits 0 or 1.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "tcomms/tcomms.h"

/* Bound from the abort to the return: the waits poll every 10 ms. */
#define ABORT_BOUND_MS 200.0

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

typedef struct {
    tc_status_t st;
    double returned_ms;
    char msg[512];
} create_result_t;

static void *create_thread(void *arg)
{
    create_result_t *r = arg;
    tc_comm_opts_t opts = TC_COMM_OPTS_INIT;
    tc_comm_t *comm = NULL;
    opts.timeout_ms = 30000;
    r->st = tc_comm_create(&opts, &comm);
    r->returned_ms = now_ms();
    snprintf(r->msg, sizeof(r->msg), "%s", tc_last_error());
    if (r->st == TC_OK)
        tc_comm_destroy(comm);
    return NULL;
}

static volatile sig_atomic_t signal_at_set;
static double signal_at_ms;

static void on_alarm(int sig)
{
    (void)sig;
    tc_comm_create_abort();
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* async-signal-safe */
    signal_at_ms = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
    signal_at_set = 1;
}

int main(int argc, char **argv)
{
    if (argc != 4 || (strcmp(argv[1], "thread") != 0 && strcmp(argv[1], "signal") != 0)) {
        fprintf(stderr, "usage: create_abort_test thread|signal ABSENT_RANK ABORT_MS\n");
        return 2;
    }
    int absent = atoi(argv[2]), abort_ms = atoi(argv[3]);
    int rank = env_int("PMIX_RANK", env_int("RANK", -1));
    if (rank == absent) {
        /* never joins; stays long enough for the others to be stuck waiting for it */
        usleep((useconds_t)(abort_ms + 1500) * 1000u);
        printf("create_abort: OK rank %d stayed away\n", rank);
        return 0;
    }
    create_result_t r = {0};
    double start = now_ms(), abort_at;
    if (strcmp(argv[1], "thread") == 0) {
        pthread_t t;
        if (pthread_create(&t, NULL, create_thread, &r) != 0) {
            printf("create_abort: FAIL pthread_create\n");
            return 1;
        }
        usleep((useconds_t)abort_ms * 1000u);
        abort_at = now_ms();
        tc_comm_create_abort();
        pthread_join(t, NULL);
    } else {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_alarm;
        sigaction(SIGALRM, &sa, NULL);
        struct itimerval it = {{0, 0}, {abort_ms / 1000, (abort_ms % 1000) * 1000}};
        setitimer(ITIMER_REAL, &it, NULL);
        create_thread(&r);
        if (!signal_at_set) {
            printf("create_abort: FAIL rank %d: create returned %s before the signal (%.0f ms): "
                   "%s\n",
                   rank, tc_status_string(r.st), r.returned_ms - start, r.msg);
            return 1;
        }
        abort_at = signal_at_ms;
    }
    double lag = r.returned_ms - abort_at;
    if (r.st != TC_ERR_ABORTED || strstr(r.msg, "aborted") == NULL || lag > ABORT_BOUND_MS) {
        printf("create_abort: FAIL rank %d: %s %.1f ms after the abort (bound %.0f ms): %s\n", rank,
               tc_status_string(r.st), lag, ABORT_BOUND_MS, r.msg);
        return 1;
    }
    printf("create_abort: OK rank %d: TC_ERR_ABORTED %.1f ms after the abort (%s): %s\n", rank,
           lag, argv[1], r.msg);
    return 0;
}
