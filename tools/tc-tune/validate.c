/* tc-tune --validate: for every collective and size, time every algorithm
 * that applies (forced with the "algo=" hint, as tcperf -a does) and the
 * operation without a hint, and print what the selection chose beside the
 * fastest.
 *
 * Sizes are total bytes as tcperf (nccl-tests) counts them: the vector for
 * all_reduce, reduce, broadcast; the gathered buffer for all_gather and
 * gather; the input of reduce_scatter and scatter; all that is sent for
 * all_to_all. float32, sum, root 0, out of place. A measurement is the mean
 * of its timed iterations, the largest over the ranks; an algorithm's time is
 * the median of its --rounds measurements. The chosen algorithm is the
 * one a hook sees run without a hint; its time is its forced measurement
 * (the same numbers as the others), or, for a path that no hint forces (the
 * small-message path, shm_lanes), the measurement without a hint. The
 * column "model" is what the cost model alone picks (tc_algo_select), which
 * is what runs whenever the small-message path does not take the call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/base/time.h"
#include "tune.h"

#define TUNE_MAX_ALGOS 16

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

typedef struct {
    const char *name[TUNE_MAX_ALGOS + 1];
    double us[TUNE_MAX_ALGOS + 1];
    int n;
} cell_t;

static void print_header(const vctx_t *v)
{
    tc_algo_model_info_t in;
    const tune_job_t *j = v->job;
    if (j->rank != 0)
        return;
    printf("# tc-tune --validate: %d ranks on %d node(s), at most %d per node; float32 sum, "
           "root 0, out of place\n",
           j->size, j->nnodes, j->ranks_per_node);
    if (tc_algo_model_info(&in) == TC_OK) {
        printf("# model:");
        for (int k = 0; k < TC_ALGO_PARAM_COUNT; k++)
            printf(" %s=%.4g(%s)", tc_algo_param_key((tc_algo_param_t)k),
                   tc_algo_model_param(&in.model, (tc_algo_param_t)k),
                   tc_algo_param_src_name(in.source[k]));
        printf("%s%s\n", in.file[0] ? " file=" : "", in.file);
    }
    if (v->o->csv)
        printf("coll,bytes,chosen,chosen_us,fastest,fastest_us,ratio,within_10pct,model,algos\n");
    else
        printf("# %-14s %10s  %-20s %10s  %-20s %10s  %6s  %-3s  %-20s  %s\n", "coll", "bytes",
               "chosen", "chosen_us", "fastest", "fastest_us", "ratio", "ok", "model",
               "algos (us)");
    fflush(stdout);
}

/* What the cost model alone picks for the call (the runtime may take the
 * small-message path before it): "-" when the selection fails. */
static const char *model_pick(const vctx_t *v, tc_coll_t c, size_t count)
{
    const int rooted = c == TC_COLL_REDUCE || c == TC_COLL_BROADCAST || c == TC_COLL_GATHER ||
                       c == TC_COLL_SCATTER;
    tc_algo_args_t args = {.coll = c,
                           .nranks = v->job->size,
                           .rank = 0,
                           .root = rooted ? 0 : -1,
                           .count = count,
                           .ranks_per_node = v->job->ranks_per_node};
    const char *name = NULL;
    return tc_algo_select(&args, 4, NULL, &name) == TC_OK ? name : "-";
}

static void print_cell(const vctx_t *v, tc_coll_t c, size_t count, uint64_t bytes,
                       const cell_t *cell, int chosen, int fastest, double ratio, int ok)
{
    if (v->job->rank != 0)
        return;
    if (v->o->csv)
        printf("%s,%llu,%s,%.3f,%s,%.3f,%.4f,%s,%s,", tc_coll_name(c), (unsigned long long)bytes,
               cell->name[chosen], cell->us[chosen], cell->name[fastest], cell->us[fastest], ratio,
               ok ? "yes" : "no", model_pick(v, c, count));
    else
        printf("  %-14s %10llu  %-20s %10.2f  %-20s %10.2f  %6.3f  %-3s  %-20s ", tc_coll_name(c),
               (unsigned long long)bytes, cell->name[chosen], cell->us[chosen], cell->name[fastest],
               cell->us[fastest], ratio, ok ? "yes" : "no", model_pick(v, c, count));
    for (int i = 0; i < cell->n; i++)
        printf("%s%s=%.2f", v->o->csv ? (i ? ";" : "") : " ", cell->name[i], cell->us[i]);
    printf("\n");
    fflush(stdout);
}

/* One (collective, size) cell: every algorithm that applies and, when the
 * choice is a path no hint forces, the call without a hint, each calibrated
 * then timed --rounds times, the rounds interleaved (each round in another
 * order), so that a disturbance of the machine lasting less than a round
 * moves one sample of each, not the median. *counted_p: 1 when measured. */
static tc_status_t tune_cell(vctx_t *v, tc_coll_t c, size_t count, uint64_t bytes, int *ok_p,
                             int *counted_p)
{
    size_t n;
    const tc_algo_desc_t *t = tc_algo_table(&n);
    static meas_t m[TUNE_MAX_ALGOS + 1]; /* the hints are pointed at, in place */
    const int rounds = v->o->rounds;
    cell_t cell;
    int chosen = -1, fastest = -1;
    tc_status_t st;

    *counted_p = 0;
    memset(&cell, 0, sizeof(cell));
    for (size_t i = 0; i < n && cell.n < TUNE_MAX_ALGOS; i++) {
        if (t[i].coll != c)
            continue;
        st = calibrate(v, c, count, t[i].name, &m[cell.n]);
        if (st == TC_ERR_UNSUPPORTED || st == TC_ERR_NOT_FOUND)
            continue; /* does not apply here: the same on every rank */
        if (st != TC_OK)
            return st;
        cell.name[cell.n++] = t[i].name;
    }
    /* the choice without a hint, seen by the hook */
    v->seen[0] = '\0';
    if ((st = run_op(v, c, count, NULL)) != TC_OK)
        return st;
    for (int i = 0; i < cell.n; i++)
        if (strcmp(cell.name[i], v->seen) == 0)
            chosen = i;
    if (chosen < 0) { /* a path no hint forces */
        static char names[64][64];
        static int nnames;
        int k;
        for (k = 0; k < nnames && strcmp(names[k], v->seen) != 0; k++)
            ;
        if (k == nnames && nnames < 64)
            snprintf(names[nnames++], sizeof(names[0]), "%s", v->seen[0] ? v->seen : "?");
        if ((st = calibrate(v, c, count, NULL, &m[cell.n])) != TC_OK)
            return st;
        chosen = cell.n;
        cell.name[cell.n++] = names[k < 64 ? k : 63];
    }
    for (int r = 0; r < rounds; r++)
        for (int j = 0; j < cell.n; j++) {
            meas_t *a = &m[(j + r) % cell.n];
            if ((st = time_iters(v, c, count, &a->opts, a->iters, &a->us[r])) != TC_OK)
                return st;
        }
    for (int i = 0; i < cell.n; i++) {
        cell.us[i] = tune_median(m[i].us, rounds); /* the samples are not needed after */
        if (fastest < 0 || cell.us[i] < cell.us[fastest])
            fastest = i;
    }
    double ratio = cell.us[fastest] > 0 ? cell.us[chosen] / cell.us[fastest] : 1.0;
    *ok_p = ratio <= 1.10;
    *counted_p = 1;
    print_cell(v, c, count, bytes, &cell, chosen, fastest, ratio, *ok_p);
    return TC_OK;
}

/* Every rank must select with the same model, or ranks pick different
 * algorithms for one call: compare the parameters in effect (and whether each
 * rank could read them) before any timed call. */
static tc_status_t same_model(const tune_job_t *job)
{
    tc_algo_model_info_t in;
    double lo[TC_ALGO_PARAM_COUNT + 1], hi[TC_ALGO_PARAM_COUNT + 1];
    char why[300] = "";
    tc_status_t st, mine = tc_algo_model_info(&in);

    if (mine != TC_OK)
        snprintf(why, sizeof(why), "%s", tc_last_error());
    else
        for (int k = 0; k < TC_ALGO_PARAM_COUNT; k++)
            lo[k] = tc_algo_model_param(&in.model, (tc_algo_param_t)k);
    lo[TC_ALGO_PARAM_COUNT] = mine == TC_OK; /* 0 on a rank that could not read it */
    if (mine != TC_OK)
        for (int k = 0; k < TC_ALGO_PARAM_COUNT; k++)
            lo[k] = 0;
    memcpy(hi, lo, sizeof(hi));
    if ((st = tc_all_reduce(job->comm, lo, lo, TC_ALGO_PARAM_COUNT + 1, TC_FLOAT64, TC_MIN, NULL,
                            NULL)) != TC_OK ||
        (st = tc_all_reduce(job->comm, hi, hi, TC_ALGO_PARAM_COUNT + 1, TC_FLOAT64, TC_MAX, NULL,
                            NULL)) != TC_OK)
        return st;
    if (mine != TC_OK)
        return tc_error_set(mine, "%s", why);
    if (lo[TC_ALGO_PARAM_COUNT] == 0)
        return tc_error_set(TC_ERR_CONFIG, "another rank cannot read the cost model (its "
                                           "TC_TUNING_FILE or TC_ALGO_*_US): see its error");
    for (int k = 0; k < TC_ALGO_PARAM_COUNT; k++)
        if (lo[k] != hi[k])
            return tc_error_set(TC_ERR_CONFIG,
                                "the ranks select with different cost models: %s from %g to %g "
                                "(give every rank the same TC_TUNING_FILE and TC_ALGO_*_US)",
                                tc_algo_param_key((tc_algo_param_t)k), lo[k], hi[k]);
    return TC_OK;
}

tc_status_t tune_validate(const tune_job_t *job, const tune_vopts_t *o, int *within_p, int *cells_p)
{
    static vctx_t v; /* the hook keeps its address after the return */
    const size_t p = (size_t)job->size;
    double start = tc_time_s();
    tc_status_t st;
    int within = 0, cells = 0, stopped = 0;
    static int hooked;

    v.job = job;
    v.o = o;
    /* every collective's buffers fit in max_bytes (a total), plus slack */
    v.sbuf = calloc(1, o->max_bytes + 64 * p);
    v.rbuf = calloc(1, o->max_bytes + 64 * p);
    if (v.sbuf == NULL || v.rbuf == NULL) {
        st = tc_error_set(TC_ERR_NO_MEMORY, "2 x %llu bytes", (unsigned long long)o->max_bytes);
        goto out;
    }
    if (!hooked && (st = tc_comm_add_hook(job->comm, tune_hook, &v)) != TC_OK)
        goto out;
    hooked = 1;
    if ((st = same_model(job)) != TC_OK)
        goto out;
    print_header(&v);
    for (int ci = 0; ci < TC_COLL_COUNT && st == TC_OK && !stopped; ci++) {
        tc_coll_t c = (tc_coll_t)ci;
        size_t last = (size_t)-1;
        if (o->coll >= 0 && o->coll != ci)
            continue;
        for (uint64_t bytes = o->min_bytes; bytes <= o->max_bytes && st == TC_OK && !stopped;) {
            size_t count = c == TC_COLL_BARRIER ? 0 : bytes / 4 / (per_rank(c) ? p : 1);
            int ok = 0, counted = 0;
            if (count != last && (count > 0 || c == TC_COLL_BARRIER)) {
                uint64_t total = c == TC_COLL_BARRIER ? 0 : count * 4 * (per_rank(c) ? p : 1);
                last = count;
                if ((st = tune_cell(&v, c, count, total, &ok, &counted)) != TC_OK)
                    break;
                cells += counted;
                within += ok;
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
    if (st == TC_OK && job->rank == 0) {
        printf("# summary: %d of %d cells within 10%% of the fastest (%.1f%%)\n", within, cells,
               cells ? 100.0 * within / cells : 0.0);
        fflush(stdout);
    }
    *within_p = within;
    *cells_p = cells;
out:
    free(v.sbuf);
    free(v.rbuf);
    v.sbuf = v.rbuf = NULL;
    return st;
}
