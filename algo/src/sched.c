/* The schedule builder: a growable array of steps with checked dependencies. */
#include <stdlib.h>
#include <string.h>

#include "tcomms/algo/schedule.h"

/* First allocation; then the capacity doubles (amortised O(1) per step). */
#define TC_SCHED_INITIAL_CAP 16u

void tc_sched_init(tc_sched_t *sched, const tc_algo_args_t *args, const char *algo)
{
    memset(sched, 0, sizeof(*sched));
    sched->algo = algo;
    sched->root = -1;
    if (args != NULL) {
        sched->coll = args->coll;
        sched->nranks = args->nranks;
        sched->rank = args->rank;
        sched->root = args->root;
        sched->count = args->count;
        sched->in_place = args->in_place;
    }
}

static tc_status_t tc_sched_grow(tc_sched_t *sched)
{
    uint32_t cap;
    tc_step_t *steps;

    if (sched->cap == 0) {
        cap = TC_SCHED_INITIAL_CAP;
    } else if (sched->cap > UINT32_MAX / 2) {
        return tc_error_set(TC_ERR_NO_MEMORY, "schedule %s of rank %d: more than %u steps",
                            sched->algo ? sched->algo : "?", sched->rank, sched->cap);
    } else {
        cap = sched->cap * 2;
    }
    steps = realloc(sched->steps, (size_t)cap * sizeof(*steps));
    if (steps == NULL) {
        return tc_error_set(TC_ERR_NO_MEMORY, "schedule %s of rank %d: cannot grow to %u steps",
                            sched->algo ? sched->algo : "?", sched->rank, cap);
    }
    sched->steps = steps;
    sched->cap = cap;
    return TC_OK;
}

tc_status_t tc_sched_add(tc_sched_t *sched, const tc_step_t *step, uint32_t *index_p)
{
    tc_status_t status;
    int i;

    if (sched == NULL || step == NULL) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_sched_add: %s is NULL",
                            sched == NULL ? "sched" : "step");
    }
    if (step->kind > TC_STEP_KIND_LAST) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_sched_add: step %u has unknown kind %u",
                            sched->nsteps, (unsigned)step->kind);
    }
    if (step->buf > TC_BUF_SCRATCH || step->dst_buf > TC_BUF_SCRATCH) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_sched_add: step %u names unknown buffer %u",
                            sched->nsteps,
                            (unsigned)(step->buf > TC_BUF_SCRATCH ? step->buf : step->dst_buf));
    }
    for (i = 0; i < 2; i++) {
        if (step->dep[i] != TC_STEP_NO_DEP && step->dep[i] >= sched->nsteps) {
            return tc_error_set(TC_ERR_INVALID_ARG,
                                "tc_sched_add: step %u depends on step %u, which does not exist "
                                "yet (dependencies must name earlier steps)",
                                sched->nsteps, step->dep[i]);
        }
    }
    if (sched->nsteps == sched->cap) {
        status = tc_sched_grow(sched);
        if (status != TC_OK) {
            return status;
        }
    }
    sched->steps[sched->nsteps] = *step;
    if (index_p != NULL) {
        *index_p = sched->nsteps;
    }
    sched->nsteps++;
    return TC_OK;
}

void tc_sched_free(tc_sched_t *sched)
{
    if (sched == NULL) {
        return;
    }
    free(sched->steps);
    sched->steps = NULL;
    sched->nsteps = 0;
    sched->cap = 0;
}
