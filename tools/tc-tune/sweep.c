/* tc-tune's sweep: for every collective and size, time every algorithm that
 * applies (forced with the "algo=" hint, as tcperf -a does) and, when asked,
 * the operation without a hint, then hand each cell to a callback (--validate
 * prints it beside the selection's choice, --rules keeps the fastest).
 *
 * Sizes are total bytes as tcperf (nccl-tests) counts them: the vector for
 * all_reduce, reduce, broadcast; the gathered buffer for all_gather and
 * gather; the input of reduce_scatter and scatter; all that is sent for
 * all_to_all (tc_algo_args_bytes). float32, sum, root 0, out of place. A
 * measurement is the mean of its timed iterations, the largest over the
 * ranks; an algorithm's time is the median of its --rounds measurements. The
 * choice without a hint is the algorithm a hook sees run; its time is its
 * forced measurement (the same numbers as the others), or, for a path that
 * no hint forces (the small-message path, shm_lanes), the measurement
 * without a hint. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/base/time.h"
#include "tune.h"

typedef struct {
    const tune_job_t *job;
    const tune_vopts_t *o;
    void *sbuf, *rbuf;
    char seen[64]; /* the algorithm the hook saw last */
} vctx_t;

static void tune_hook(tc_comm_t *comm, const tc_op_info_t *info, int after, void *arg)
{
    vctx_t *v = arg;
    (void)comm;
    if (after && info->algo != NULL)
        snprintf(v->seen, sizeof(v->seen), "%s", info->algo);
}

static int per_rank(tc_coll_t c)
{
    return c == TC_COLL_ALL_GATHER || c == TC_COLL_REDUCE_SCATTER || c == TC_COLL_ALL_TO_ALL ||
           c == TC_COLL_GATHER || c == TC_COLL_SCATTER;
}

static tc_status_t run_op(vctx_t *v, tc_coll_t c, size_t count, const tc_op_opts_t *o)
{
    tc_comm_t *comm = v->job->comm;
    void *s = v->sbuf, *r = v->rbuf;
    switch (c) {
    case TC_COLL_ALL_REDUCE:
        return tc_all_reduce(comm, s, r, count, TC_FLOAT32, TC_SUM, o, NULL);
    case TC_COLL_REDUCE:
        return tc_reduce(comm, s, r, count, TC_FLOAT32, TC_SUM, 0, o, NULL);
    case TC_COLL_BROADCAST:
        return tc_broadcast(comm, r, count, TC_FLOAT32, 0, o, NULL);
    case TC_COLL_ALL_GATHER:
        return tc_all_gather(comm, s, r, count, TC_FLOAT32, o, NULL);
    case TC_COLL_REDUCE_SCATTER:
        return tc_reduce_scatter(comm, s, r, count, TC_FLOAT32, TC_SUM, o, NULL);
    case TC_COLL_ALL_TO_ALL:
        return tc_all_to_all(comm, s, r, count, TC_FLOAT32, o, NULL);
    case TC_COLL_GATHER:
        return tc_gather(comm, s, r, count, TC_FLOAT32, 0, o, NULL);
    case TC_COLL_SCATTER:
        return tc_scatter(comm, s, r, count, TC_FLOAT32, 0, o, NULL);
    case TC_COLL_BARRIER:
        return tc_barrier(comm, o, NULL);
    default:
        return tc_error_set(TC_ERR_INVALID_ARG, "collective %d", (int)c);
    }
}

/* Barrier, then @p iters operations: the mean microseconds per operation,
 * the largest over the ranks. @p o NULL: no hint. */
static tc_status_t time_iters(vctx_t *v, tc_coll_t c, size_t count, const tc_op_opts_t *o,
                              int iters, double *us_p)
{
    tc_status_t st = tc_barrier(v->job->comm, NULL, NULL);
    double t0 = tc_time_s();
    for (int i = 0; i < iters && st == TC_OK; i++)
        st = run_op(v, c, count, o);
    double us = (tc_time_s() - t0) * 1e6 / iters;
    if (st == TC_OK)
        st = tc_all_reduce(v->job->comm, &us, us_p, 1, TC_FLOAT64, TC_MAX, NULL, NULL);
    return st;
}

/* One algorithm of a cell (@p algo NULL: no hint), measured in rounds. */
typedef struct {
    tc_op_opts_t opts;
    char hints[96];
    int iters;                  /* per measurement, the same on every rank */
    double us[TUNE_MAX_ROUNDS]; /* one per round */
} meas_t;

/* Warm up, then find how many iterations take about --target-ms (timing 1,
 * 4, 16, ... operations until a quarter of it passes, the largest over the
 * ranks so that all agree), at most -n. Refusals (the algorithm does not
 * apply) come back as they are. */
static tc_status_t calibrate(vctx_t *v, tc_coll_t c, size_t count, const char *algo, meas_t *m)
{
    const double target_us = v->o->target_ms * 1e3;
    tc_status_t st = TC_OK;
    double us = 0;
    int k = 1;

    m->opts = (tc_op_opts_t)TC_OP_OPTS_INIT;
    if (algo != NULL) {
        snprintf(m->hints, sizeof(m->hints), "algo=%s", algo);
        m->opts.hints = m->hints;
    }
    for (int i = 0; i < v->o->warmup && st == TC_OK; i++)
        st = run_op(v, c, count, &m->opts);
    for (; st == TC_OK; k *= 4) {
        if ((st = time_iters(v, c, count, &m->opts, k, &us)) != TC_OK)
            return st;
        if (us * k >= target_us / 4 || k >= v->o->iters)
            break;
    }
    double n = us > 0 ? target_us / us : v->o->iters;
    m->iters = n < 1 ? 1 : n > v->o->iters ? v->o->iters : (int)(n + 0.5);
    return st;
}

/* One (collective, size) cell: every algorithm that applies and, when the
 * choice is asked for and is a path no hint forces, the call without a hint,
 * each calibrated then timed --rounds times, the rounds interleaved (each
 * round in another order), so that a disturbance of the machine lasting less
 * than a round moves one sample of each, not the median. */
static tc_status_t sweep_cell(vctx_t *v, int with_choice, tune_cell_t *cell)
{
    size_t n;
    const tc_algo_desc_t *t = tc_algo_table(&n);
    static meas_t m[TUNE_MAX_ALGOS + 1]; /* the hints are pointed at, in place */
    const int rounds = v->o->rounds;
    const tc_coll_t c = cell->coll;
    const size_t count = cell->count;
    tc_status_t st;

    cell->n = 0;
    cell->chosen = cell->fastest = -1;
    for (size_t i = 0; i < n && cell->n < TUNE_MAX_ALGOS; i++) {
        if (t[i].coll != c)
            continue;
        st = calibrate(v, c, count, t[i].name, &m[cell->n]);
        if (st == TC_ERR_UNSUPPORTED || st == TC_ERR_NOT_FOUND)
            continue; /* does not apply here: the same on every rank */
        if (st != TC_OK)
            return st;
        cell->name[cell->n++] = t[i].name;
    }
    if (with_choice) { /* the choice without a hint, seen by the hook */
        v->seen[0] = '\0';
        if ((st = run_op(v, c, count, NULL)) != TC_OK)
            return st;
        for (int i = 0; i < cell->n; i++)
            if (strcmp(cell->name[i], v->seen) == 0)
                cell->chosen = i;
    }
    if (with_choice && cell->chosen < 0) { /* a path no hint forces */
        static char names[64][64];
        static int nnames;
        int k;
        for (k = 0; k < nnames && strcmp(names[k], v->seen) != 0; k++)
            ;
        if (k == nnames && nnames < 64)
            snprintf(names[nnames++], sizeof(names[0]), "%s", v->seen[0] ? v->seen : "?");
        if ((st = calibrate(v, c, count, NULL, &m[cell->n])) != TC_OK)
            return st;
        cell->chosen = cell->n;
        cell->name[cell->n++] = names[k < 64 ? k : 63];
    }
    for (int r = 0; r < rounds; r++)
        for (int j = 0; j < cell->n; j++) {
            meas_t *a = &m[(j + r) % cell->n];
            if ((st = time_iters(v, c, count, &a->opts, a->iters, &a->us[r])) != TC_OK)
                return st;
        }
    for (int i = 0; i < cell->n; i++) {
        cell->us[i] = tune_median(m[i].us, rounds); /* the samples are not needed after */
        if (cell->fastest < 0 || cell->us[i] < cell->us[cell->fastest])
            cell->fastest = i;
    }
    return TC_OK;
}

tc_status_t tune_sweep(const tune_job_t *job, const tune_vopts_t *o, int with_choice,
                       tune_cell_fn fn, void *arg)
{
    static vctx_t v; /* the hook keeps its address after the return */
    static int hooked;
    const size_t p = (size_t)job->size;
    double start = tc_time_s();
    tc_status_t st = TC_OK;
    int cells = 0, stopped = 0;

    v.job = job;
    v.o = o;
    /* every collective's buffers fit in max_bytes (a total), plus slack */
    v.sbuf = calloc(1, o->max_bytes + 64 * p);
    v.rbuf = calloc(1, o->max_bytes + 64 * p);
    if (v.sbuf == NULL || v.rbuf == NULL) {
        st = tc_error_set(TC_ERR_NO_MEMORY, "2 x %llu bytes", (unsigned long long)o->max_bytes);
        goto out;
    }
    if (with_choice && !hooked && (st = tc_comm_add_hook(job->comm, tune_hook, &v)) != TC_OK)
        goto out;
    hooked |= with_choice;
    for (int ci = 0; ci < TC_COLL_COUNT && st == TC_OK && !stopped; ci++) {
        tc_coll_t c = (tc_coll_t)ci;
        size_t last = (size_t)-1;
        if (o->coll >= 0 && o->coll != ci)
            continue;
        for (uint64_t bytes = o->min_bytes; bytes <= o->max_bytes && st == TC_OK && !stopped;) {
            size_t count = c == TC_COLL_BARRIER ? 0 : bytes / 4 / (per_rank(c) ? p : 1);
            if (count != last && (count > 0 || c == TC_COLL_BARRIER)) {
                tune_cell_t cell = {.coll = c, .count = count};
                tc_algo_args_t args = {.coll = c, .nranks = job->size, .count = count};
                cell.bytes = tc_algo_args_bytes(&args, 4); /* what the rules are keyed on */
                last = count;
                if ((st = sweep_cell(&v, with_choice, &cell)) != TC_OK ||
                    (st = fn(arg, &cell)) != TC_OK)
                    break;
                cells++;
                double el = tc_time_s() - start, max_el;
                if ((st = tc_all_reduce(job->comm, &el, &max_el, 1, TC_FLOAT64, TC_MAX, NULL,
                                        NULL)) != TC_OK)
                    break;
                if (o->max_seconds > 0 && max_el > o->max_seconds) {
                    stopped = 1;
                    if (job->rank == 0)
                        printf("# stopped: --max-seconds %g passed after %d cells\n",
                               o->max_seconds, cells);
                }
            }
            if (c == TC_COLL_BARRIER)
                break;
            uint64_t next = bytes * (uint64_t)o->factor;
            if (bytes < o->max_bytes && next > o->max_bytes)
                next = o->max_bytes; /* the largest size is always measured */
            if (next <= bytes)
                break;
            bytes = next;
        }
    }
out:
    free(v.sbuf);
    free(v.rbuf);
    v.sbuf = v.rbuf = NULL;
    return st;
}
