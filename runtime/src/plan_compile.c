/* Compiling a schedule into a plan for one communicator: every step is
 * checked once (kind, buffers, bounds, peer, dependencies), and what each run
 * would otherwise recompute is stored: byte offsets and sizes, the peer's
 * world rank, the (peer, direction) key of the in-order rule, the landing
 * offset of each receive-and-reduce. The executor then runs the plan with no
 * check, lookup or allocation per step. */
#include <stdio.h>
#include <stdlib.h>

#include "plan.h"

static const char *plan_kind_name(uint8_t kind)
{
    static const char *const names[] = {"send", "recv", "recv_reduce", "copy", "reduce"};
    return kind < 5 ? names[kind] : "invalid";
}

/* Why step @p s of a schedule over @p nranks ranks is wrong, or NULL. */
static const char *plan_step_fault(const tc_sched_t *sched, uint32_t i, int nranks)
{
    const tc_step_t *s = &sched->steps[i];
    const uint64_t *sizes = sched->buf_count;
    if (s->kind > TC_STEP_REDUCE)
        return "its kind is unknown";
    int reads = s->kind == TC_STEP_SEND || s->kind == TC_STEP_COPY || s->kind == TC_STEP_REDUCE;
    int writes = s->kind != TC_STEP_SEND;
    int comm = s->kind <= TC_STEP_RECV_REDUCE;
    if ((reads && s->buf > TC_BUF_SCRATCH) ||
        (writes && (s->dst_buf > TC_BUF_SCRATCH || s->dst_buf == TC_BUF_SEND)))
        return "it names a buffer it may not use";
    if ((reads && (s->off > sizes[s->buf] || s->count > sizes[s->buf] - s->off)) ||
        (writes && (s->dst_off > sizes[s->dst_buf] || s->count > sizes[s->dst_buf] - s->dst_off)))
        return "it reaches past the end of its buffer";
    if (comm && (s->peer < 0 || s->peer >= nranks))
        return "its peer is not a rank of the communicator";
    for (int d = 0; d < 2; d++)
        if (s->dep[d] != TC_STEP_NO_DEP && s->dep[d] >= i)
            return "it depends on a step that is not an earlier one";
    return NULL;
}

tc_status_t tc_rt_plan_validate(const tc_sched_t *sched, int nranks)
{
    for (uint32_t i = 0; i < sched->nsteps; i++) {
        const char *why = plan_step_fault(sched, i, nranks);
        if (!why)
            continue;
        const tc_step_t *s = &sched->steps[i];
        return tc_error_set(TC_ERR_INTERNAL,
                            "the %s schedule of %s is invalid at step %u of %u (%s, peer %d, "
                            "buffer %u offset %llu -> buffer %u offset %llu, %llu elements): %s",
                            sched->algo ? sched->algo : "?", tc_coll_name(sched->coll), i,
                            sched->nsteps, plan_kind_name(s->kind), s->peer, s->buf,
                            (unsigned long long)s->off, s->dst_buf, (unsigned long long)s->dst_off,
                            (unsigned long long)s->count, why);
    }
    return TC_OK;
}

tc_status_t tc_rt_plan_compile(tc_rt_plan_t *plan, const tc_sched_t *sched, const int *wranks,
                               size_t esize)
{
    tc_status_t st = tc_rt_plan_validate(sched, sched->nranks);
    if (st != TC_OK)
        return st;
    if (sched->nsteps > plan->cap) {
        tc_rt_pstep_t *steps = realloc(plan->steps, sched->nsteps * sizeof(*steps));
        if (!steps)
            return tc_error_set(TC_ERR_NO_MEMORY, "a plan of %u steps", sched->nsteps);
        plan->steps = steps;
        plan->cap = sched->nsteps;
    }
    uint64_t tmp = 0;
    for (uint32_t i = 0; i < sched->nsteps; i++) {
        const tc_step_t *s = &sched->steps[i];
        tc_rt_pstep_t *p = &plan->steps[i];
        int comm = s->kind <= TC_STEP_RECV_REDUCE;
        *p = (tc_rt_pstep_t){.kind = s->kind,
                             .buf = s->buf,
                             .dst_buf = s->dst_buf,
                             .peer = s->peer,
                             .wpeer = comm ? (wranks ? wranks[s->peer] : s->peer) : -1,
                             .key = comm ? ((int64_t)s->peer << 1) | (s->kind != TC_STEP_SEND) : -1,
                             .src_off = s->off * esize,
                             .dst_off = s->dst_off * esize,
                             .count = s->count,
                             .bytes = s->count * esize,
                             .dep = {s->dep[0], s->dep[1]}};
        if (s->kind == TC_STEP_RECV_REDUCE) {
            p->tmp_off = tmp;
            tmp += p->bytes;
        }
    }
    plan->sched = sched;
    plan->nsteps = sched->nsteps;
    plan->esize = esize;
    plan->tmp_bytes = tmp;
    plan->scratch_bytes = sched->scratch_count * esize;
    plan->send_bytes = sched->buf_count[TC_BUF_SEND] * esize;
    plan->recv_bytes = sched->buf_count[TC_BUF_RECV] * esize;
    return TC_OK;
}

void tc_rt_plan_free(tc_rt_plan_t *plan)
{
    free(plan->steps);
    *plan = (tc_rt_plan_t){0};
}
