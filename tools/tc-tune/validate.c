/* tc-tune --validate: the sweep (sweep.c) with the call without a hint, and
 * the selection's choice printed beside the fastest algorithm of every cell.
 * The column "model" is what tc_algo_select picks (the tuning file's rules,
 * else the cost model), which is what runs whenever the small-message path
 * does not take the call. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "tcomms/base/config.h"
#include "tune.h"

typedef struct {
    const tune_job_t *job;
    const tune_vopts_t *o;
    int within, cells;
} vstate_t;

static void print_header(const vstate_t *v)
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
        if (in.tuning.nrules > 0)
            printf("# rules: %d, for %d ranks on %d node(s) of %d (TC_ALGO_RULES=0: the model "
                   "alone)\n",
                   in.tuning.nrules, in.tuning.ranks, in.tuning.nodes, in.tuning.ranks_per_node);
    }
    if (v->o->csv)
        printf("coll,bytes,chosen,chosen_us,fastest,fastest_us,ratio,within_10pct,model,algos\n");
    else
        printf("# %-14s %10s  %-20s %10s  %-20s %10s  %6s  %-3s  %-20s  %s\n", "coll", "bytes",
               "chosen", "chosen_us", "fastest", "fastest_us", "ratio", "ok", "model",
               "algos (us)");
    fflush(stdout);
}

/* What the selection picks for the call (the tuning file's rule, else the
 * cost model; the runtime may take the small-message path before it): "-"
 * when the selection fails. */
static const char *model_pick(const vstate_t *v, tc_coll_t c, size_t count)
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

static void print_cell(const vstate_t *v, const tune_cell_t *cell, double ratio, int ok)
{
    const int chosen = cell->chosen, fastest = cell->fastest;
    if (v->job->rank != 0)
        return;
    if (v->o->csv)
        printf("%s,%llu,%s,%.3f,%s,%.3f,%.4f,%s,%s,", tc_coll_name(cell->coll),
               (unsigned long long)cell->bytes, cell->name[chosen], cell->us[chosen],
               cell->name[fastest], cell->us[fastest], ratio, ok ? "yes" : "no",
               model_pick(v, cell->coll, cell->count));
    else
        printf("  %-14s %10llu  %-20s %10.2f  %-20s %10.2f  %6.3f  %-3s  %-20s ",
               tc_coll_name(cell->coll), (unsigned long long)cell->bytes, cell->name[chosen],
               cell->us[chosen], cell->name[fastest], cell->us[fastest], ratio, ok ? "yes" : "no",
               model_pick(v, cell->coll, cell->count));
    for (int i = 0; i < cell->n; i++)
        printf("%s%s=%.2f", v->o->csv ? (i ? ";" : "") : " ", cell->name[i], cell->us[i]);
    printf("\n");
    fflush(stdout);
}

static tc_status_t validate_cell(void *arg, const tune_cell_t *cell)
{
    vstate_t *v = arg;
    double ratio =
        cell->us[cell->fastest] > 0 ? cell->us[cell->chosen] / cell->us[cell->fastest] : 1.0;
    int ok = ratio <= 1.10;
    v->cells++;
    v->within += ok;
    print_cell(v, cell, ratio, ok);
    return TC_OK;
}

/* A digest of the rules in effect (none, or TC_ALGO_RULES=0: 0), exact in a
 * double: FNV-1a of every rule, 52 bits. */
static double rules_digest(const tc_algo_tuning_t *t)
{
    uint64_t h = 14695981039346656037ull;
    bool on = true;
    if (t->nrules == 0 || tc_config_bool("TC_ALGO_RULES", true, &on) != TC_OK || !on)
        return 0;
    for (int i = 0; i < t->nrules; i++) {
        char line[96];
        int n = snprintf(line, sizeof(line), "%d %llu %s;", (int)t->rule[i].coll,
                         (unsigned long long)t->rule[i].from_bytes, t->rule[i].algo);
        for (int k = 0; k < n && k < (int)sizeof(line); k++)
            h = (h ^ (unsigned char)line[k]) * 1099511628211ull;
    }
    return (double)(h >> 12);
}

/* Every rank must select with the same model and rules, or ranks pick
 * different algorithms for one call: compare the parameters in effect, the
 * rules, and whether each rank could read them, before any timed call. */
static tc_status_t same_model(const tune_job_t *job)
{
    enum { RULES = TC_ALGO_PARAM_COUNT, OK, N };
    tc_algo_model_info_t in;
    double lo[N] = {0}, hi[N];
    char why[300] = "";
    tc_status_t st, mine = tc_algo_model_info(&in);

    if (mine != TC_OK)
        snprintf(why, sizeof(why), "%s", tc_last_error());
    else {
        for (int k = 0; k < TC_ALGO_PARAM_COUNT; k++)
            lo[k] = tc_algo_model_param(&in.model, (tc_algo_param_t)k);
        lo[RULES] = rules_digest(&in.tuning);
    }
    lo[OK] = mine == TC_OK; /* 0 on a rank that could not read it */
    memcpy(hi, lo, sizeof(hi));
    if ((st = tc_all_reduce(job->comm, lo, lo, N, TC_FLOAT64, TC_MIN, NULL, NULL)) != TC_OK ||
        (st = tc_all_reduce(job->comm, hi, hi, N, TC_FLOAT64, TC_MAX, NULL, NULL)) != TC_OK)
        return st;
    if (mine != TC_OK)
        return tc_error_set(mine, "%s", why);
    if (lo[OK] == 0)
        return tc_error_set(TC_ERR_CONFIG, "another rank cannot read the cost model (its "
                                           "TC_TUNING_FILE or TC_ALGO_*_US): see its error");
    for (int k = 0; k < TC_ALGO_PARAM_COUNT; k++)
        if (lo[k] != hi[k])
            return tc_error_set(TC_ERR_CONFIG,
                                "the ranks select with different cost models: %s from %g to %g "
                                "(give every rank the same TC_TUNING_FILE and TC_ALGO_*_US)",
                                tc_algo_param_key((tc_algo_param_t)k), lo[k], hi[k]);
    if (lo[RULES] != hi[RULES])
        return tc_error_set(TC_ERR_CONFIG, "the ranks select with different rules (give every "
                                           "rank the same TC_TUNING_FILE and TC_ALGO_RULES)");
    return TC_OK;
}

tc_status_t tune_validate(const tune_job_t *job, const tune_vopts_t *o, int *within_p, int *cells_p)
{
    vstate_t v = {.job = job, .o = o};
    tc_status_t st;

    if ((st = same_model(job)) != TC_OK)
        return st;
    print_header(&v);
    if ((st = tune_sweep(job, o, 1, validate_cell, &v)) != TC_OK)
        return st;
    if (job->rank == 0) {
        printf("# summary: %d of %d cells within 10%% of the fastest (%.1f%%)\n", v.within, v.cells,
               v.cells ? 100.0 * v.within / v.cells : 0.0);
        fflush(stdout);
    }
    *within_p = v.within;
    *cells_p = v.cells;
    return TC_OK;
}
