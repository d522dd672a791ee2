/* The rank threads over the emulated HCA (ib_ranks.h). */
#include "ib_ranks.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/transport/ib/ib_emu.h"
#include "mem_store.h"
#include "tcomms/transport/builtin.h"
#include "tcomms/transport/ib.h"

#define IBR_BARRIER_S 120
#define IBR_TIMEOUT_MS 60000 /* every operation's (sanitizers are slow) */

struct ibr_job {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int size, arrived, generation, failed;
    const char *name;
    mem_store_t *store;
    ibr_fn fn;
    ibr_expect_t want;
    ibr_rank_t ranks[IBR_MAX_RANKS];
};

/* ---- the "ib" backend over the emulation ---- */

static tc_tp_ops_t ibr_ib_ops; /* tc_tp_ib_ops with the emulated HCA's query and contexts */

static tc_status_t ibr_ib_query(tc_tp_caps_t *caps_p)
{
    return tc_tp_ib_query_verbs(tc_ibemu_verbs(), caps_p);
}

static tc_status_t ibr_ib_ctx_create(const tc_tp_ctx_params_t *params, tc_tp_ctx_t **ctx_p)
{
    return tc_tp_ib_ctx_create_verbs(tc_ibemu_verbs(), params, ctx_p);
}

int ibr_setup(void)
{
    ibr_ib_ops = tc_tp_ib_ops;
    ibr_ib_ops.query = ibr_ib_query;
    ibr_ib_ops.ctx_create = ibr_ib_ctx_create;
    /* all ranks are on this node: the emulated ib reaches every peer; the built-in shm and tcp
     * are off, so a window can only go over it (or the self path to the own rank) */
    if (tc_tp_register_reach(&ibr_ib_ops, TC_TP_REACH_ANY) != TC_OK ||
        tc_tp_register_builtin() != TC_OK || tc_tp_lookup("ib") != &ibr_ib_ops) {
        fprintf(stderr, "registering the emulated ib: %s\n", tc_last_error());
        return -1;
    }
    if (setenv("TC_SHM", "0", 1) != 0 || setenv("TC_TCP", "0", 1) != 0)
        return -1;
    return 0;
}

/* ---- failures, barrier, expectations ---- */

int ibr_fail(ibr_rank_t *r, int line, const char *fmt, ...)
{
    ibr_job_t *job = r->job;
    if (!r->error[0]) {
        int n = snprintf(r->error, sizeof(r->error), "line %d: ", line);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->error + n, sizeof(r->error) - (size_t)n, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_lock(&job->mu);
    job->failed = 1;
    pthread_cond_broadcast(&job->cv);
    pthread_mutex_unlock(&job->mu);
    return -1;
}

int ibr_barrier(ibr_rank_t *r)
{
    ibr_job_t *job = r->job;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += IBR_BARRIER_S;
    int rc = 0;
    pthread_mutex_lock(&job->mu);
    int gen = job->generation;
    if (++job->arrived == job->size) {
        job->arrived = 0;
        job->generation++;
        pthread_cond_broadcast(&job->cv);
    }
    while (job->generation == gen && !job->failed && rc == 0)
        if (pthread_cond_timedwait(&job->cv, &job->mu, &until) == ETIMEDOUT)
            rc = -1;
    int failed = job->failed && job->generation == gen;
    pthread_mutex_unlock(&job->mu);
    if (rc != 0)
        return ibr_fail(r, __LINE__, "test barrier: the other ranks did not come in %d s",
                        IBR_BARRIER_S);
    return failed ? -1 : 0;
}

void ibr_expect_add(ibr_rank_t *r, const ibr_expect_t *e)
{
    ibr_expect_t *w = &r->job->want;
    __atomic_fetch_add(&w->writes, e->writes, __ATOMIC_RELAXED);
    __atomic_fetch_add(&w->write_bytes, e->write_bytes, __ATOMIC_RELAXED);
    __atomic_fetch_add(&w->reads, e->reads, __ATOMIC_RELAXED);
    __atomic_fetch_add(&w->read_bytes, e->read_bytes, __ATOMIC_RELAXED);
    __atomic_fetch_add(&w->fetch_adds, e->fetch_adds, __ATOMIC_RELAXED);
    __atomic_fetch_add(&w->cmp_swaps, e->cmp_swaps, __ATOMIC_RELAXED);
}

uint64_t ibr_rand(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545f4914f6cdd1dull;
}

/* ---- the rank threads ---- */

/* The communicator reaches its peers over ib only (none over shm or tcp). */
static int ibr_check_paths(ibr_rank_t *r)
{
    tc_comm_info_t info;
    IBR_OK(r, tc_comm_info(r->comm, &info));
    IBR_CHECK(r, info.peers_shm == 0 && info.peers_tcp == 0,
              "rank %d reached %d peers over shm and %d over tcp: not the emulated ib", r->rank,
              info.peers_shm, info.peers_tcp);
    return 0;
}

static void *ibr_thread(void *arg)
{
    ibr_rank_t *r = arg;
    ibr_job_t *job = r->job;
    tc_store_t store = mem_store_table(job->store);
    tc_comm_opts_t opts = TC_COMM_OPTS_INIT;
    opts.name = job->name;
    opts.timeout_ms = IBR_TIMEOUT_MS;
    tc_status_t st =
        tc_comm_create_from_store(&store, r->rank, r->size, job->name, &opts, &r->comm);
    if (st != TC_OK) {
        ibr_fail(r, __LINE__, "tc_comm_create_from_store: %s: %s", tc_status_string(st),
                 tc_last_error());
        return NULL;
    }
    if (job->fn(r) == 0 && r->comm)
        (void)ibr_check_paths(r);
    if (r->comm && (st = tc_comm_destroy(r->comm)) != TC_OK)
        ibr_fail(r, __LINE__, "tc_comm_destroy: %s: %s", tc_status_string(st), tc_last_error());
    r->comm = NULL;
    return NULL;
}

int ibr_run(const char *name, int size, ibr_fn fn, void *arg, ibr_expect_t *want_p)
{
    if (size < 1 || size > IBR_MAX_RANKS)
        return -1;
    ibr_job_t *job = calloc(1, sizeof(*job));
    if (!job || !(job->store = mem_store_new())) {
        free(job);
        return -1;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&job->mu, NULL);
    pthread_cond_init(&job->cv, &ca);
    pthread_condattr_destroy(&ca);
    job->size = size;
    job->name = name;
    job->fn = fn;
    pthread_t th[IBR_MAX_RANKS];
    int started = 0, rc = 0;
    for (int i = 0; i < size; i++) {
        job->ranks[i] = (ibr_rank_t){.job = job, .rank = i, .size = size, .arg = arg};
        if (pthread_create(&th[i], NULL, ibr_thread, &job->ranks[i]) != 0) {
            ibr_fail(&job->ranks[i], __LINE__, "pthread_create failed");
            break;
        }
        started++;
    }
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < size; i++)
        if (job->ranks[i].error[0]) {
            fprintf(stderr, "%s, %d ranks: rank %d: %s\n", name, size, i, job->ranks[i].error);
            rc = -1;
        }
    if (want_p)
        *want_p = job->want;
    mem_store_free(job->store);
    pthread_cond_destroy(&job->cv);
    pthread_mutex_destroy(&job->mu);
    free(job);
    return rc;
}
