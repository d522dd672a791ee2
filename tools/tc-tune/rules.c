/* tc-tune -o FILE --rules: the sweep (sweep.c) without the call without a
 * hint, and the fastest algorithm of every cell written as the tuning file's
 * rules (docs/tuning.md). For each collective, sizes ascending: a cell keeps
 * the previous cell's algorithm while that one is within TUNE_RULE_KEEP of
 * the cell's fastest (so that two algorithms a few per cent apart, which
 * trade places between runs, do not make a rule each), otherwise takes the
 * fastest; where the algorithm changes, the rule starts halfway (geometric
 * mean) between the two sizes measured. The first rule of a collective
 * starts at 0 bytes, so every size is covered. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tune.h"

#define TUNE_RULE_KEEP 1.03

typedef struct {
    const tune_job_t *job;
    tc_algo_tuning_t *t;
    tc_coll_t coll;                   /* of the last cell */
    uint64_t bytes;                   /* of the last cell */
    char algo[TC_ALGO_RULE_NAME_MAX]; /* chosen for the last cell, "" before the first */
} rstate_t;

static tc_status_t rule_cell(void *arg, const tune_cell_t *cell)
{
    rstate_t *r = arg;
    const char *pick = cell->name[cell->fastest];
    uint64_t from = 0;

    if (r->job->rank == 0) {
        printf("# %-14s %10llu  fastest %-20s %10.2f us", tc_coll_name(cell->coll),
               (unsigned long long)cell->bytes, pick, cell->us[cell->fastest]);
        for (int i = 0; i < cell->n; i++)
            printf(" %s=%.2f", cell->name[i], cell->us[i]);
        printf("\n");
        fflush(stdout);
    }
    if (r->algo[0] != '\0' && cell->coll == r->coll) {
        for (int i = 0; i < cell->n; i++)
            if (strcmp(cell->name[i], r->algo) == 0 &&
                cell->us[i] <= TUNE_RULE_KEEP * cell->us[cell->fastest])
                pick = cell->name[i];
        if (strcmp(pick, r->algo) == 0) {
            r->bytes = cell->bytes;
            return TC_OK;
        }
        from = (uint64_t)ceil(sqrt((double)r->bytes * (double)cell->bytes));
    }
    if (r->t->nrules == TC_ALGO_TUNING_RULES_MAX)
        return tc_error_set(TC_ERR_NO_RESOURCE, "more than %d rules: measure fewer sizes (-f)",
                            TC_ALGO_TUNING_RULES_MAX);
    tc_algo_rule_t *rule = &r->t->rule[r->t->nrules++];
    rule->coll = cell->coll;
    rule->from_bytes = from;
    snprintf(rule->algo, sizeof(rule->algo), "%s", pick);
    snprintf(r->algo, sizeof(r->algo), "%s", pick);
    r->coll = cell->coll;
    r->bytes = cell->bytes;
    return TC_OK;
}

tc_status_t tune_rules(const tune_job_t *job, const tune_vopts_t *o, tc_algo_tuning_t *tuning)
{
    rstate_t r = {.job = job, .t = tuning};

    tuning->nrules = 0;
    if (job->rank == 0)
        printf("# rules: every algorithm of every collective, %llu to %llu bytes (x %d)\n",
               (unsigned long long)o->min_bytes, (unsigned long long)o->max_bytes, o->factor);
    return tune_sweep(job, o, 0, rule_cell, &r);
}
