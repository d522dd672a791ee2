/* The flow trace's cache of built ranks (verify_flow.h): building a rank's schedule on demand,
 * checking its steps, indexing its writes per buffer, and evicting the least recently used. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verify_flow.h"

/* ---- the rank cache ---------------------------------------------------------- */

void tc_f_free_rank(tc_frank_t *fr)
{
    int b;

    for (b = 2; b >= 0; b--) {
        free(fr->chained[b]);
        free(fr->wlist[b]);
        free(fr->wstart[b]);
        free(fr->cut[b]);
    }
    free(fr->ordinal);
    free(fr->comm);
    tc_sched_free(&fr->sched);
    free(fr);
}

void tc_f_unlink(tc_flow_t *f, tc_frank_t *fr)
{
    if (fr->prev != NULL) {
        fr->prev->next = fr->next;
    } else {
        f->head = fr->next;
    }
    if (fr->next != NULL) {
        fr->next->prev = fr->prev;
    } else {
        f->tail = fr->prev;
    }
    fr->prev = fr->next = NULL;
}

static void tc_f_push_front(tc_flow_t *f, tc_frank_t *fr)
{
    fr->prev = NULL;
    fr->next = f->head;
    if (f->head != NULL) {
        f->head->prev = fr;
    }
    f->head = fr;
    if (f->tail == NULL) {
        f->tail = fr;
    }
}

/* Every step well formed (the checks of verify.c, with a shorter detail). */
static tc_status_t tc_f_check_steps(const tc_flow_t *f, const tc_frank_t *fr)
{
    const tc_sched_t *s = &fr->sched;
    uint32_t i;
    int k;

    for (i = 0; i < s->nsteps; i++) {
        const tc_step_t *st = &s->steps[i];
        int rd = tc_v_reads_src(st->kind);
        int wr = st->kind != TC_STEP_SEND;

        if (st->kind > TC_STEP_KIND_LAST || (rd && st->buf > TC_BUF_SCRATCH) ||
            (wr && st->dst_buf > TC_BUF_SCRATCH)) {
            return tc_f_fail(f, "rank %d step %u has an unknown kind or buffer", fr->rank, i);
        }
        if (tc_v_is_comm(st->kind) && (st->peer < 0 || st->peer >= f->p || st->peer == fr->rank)) {
            return tc_f_fail(f, "rank %d step %u: peer %d is not another rank of [0, %d)", fr->rank,
                             i, (int)st->peer, f->p);
        }
        for (k = 0; k < 2; k++) {
            if (st->dep[k] != TC_STEP_NO_DEP && st->dep[k] >= i) {
                return tc_f_fail(f, "rank %d step %u depends on step %u, not an earlier step",
                                 fr->rank, i, st->dep[k]);
            }
        }
        if (rd) {
            uint64_t size = fr->size[tc_f_resolve(f, st->buf)];
            if (st->off > size || st->count > size - st->off) {
                return tc_f_fail(f, "out of bounds: rank %d step %u reads %s[%llu, %llu) of %llu",
                                 fr->rank, i, tc_v_bufname(st->buf), (unsigned long long)st->off,
                                 (unsigned long long)st->off + st->count, (unsigned long long)size);
            }
        }
        if (wr) {
            uint64_t size = fr->size[tc_f_resolve(f, st->dst_buf)];
            if (st->dst_off > size || st->count > size - st->dst_off ||
                (st->dst_buf == TC_BUF_SEND && st->count > 0)) {
                return tc_f_fail(
                    f,
                    "out of bounds: rank %d step %u writes %s[%llu, %llu) of %llu "
                    "elements (or the send buffer)",
                    fr->rank, i, tc_v_bufname(st->dst_buf), (unsigned long long)st->dst_off,
                    (unsigned long long)st->dst_off + st->count, (unsigned long long)size);
            }
        }
    }
    return TC_OK;
}

/* The writer index of buffer b (NULL lists when it would be too large). */
static tc_status_t tc_f_index_writes(const tc_flow_t *f, tc_frank_t *fr, unsigned b)
{
    const tc_sched_t *s = &fr->sched;
    uint64_t total = 0;
    size_t n = 0, k;
    uint32_t i, *fill;

    fr->cut[b] = malloc(((size_t)s->nsteps * 2 + 1) * sizeof(uint64_t));
    if (fr->cut[b] == NULL) {
        return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for the flow trace");
    }
    for (i = 0; i < s->nsteps; i++) {
        const tc_step_t *st = &s->steps[i];
        if (st->kind != TC_STEP_SEND && st->count > 0 && tc_f_resolve(f, st->dst_buf) == b) {
            fr->cut[b][n++] = st->dst_off;
            fr->cut[b][n++] = st->dst_off + st->count;
        }
    }
    qsort(fr->cut[b], n, sizeof(uint64_t), tc_v_u64_cmp);
    for (k = 0, fr->ncut[b] = 0; k < n; k++) {
        if (fr->ncut[b] == 0 || fr->cut[b][fr->ncut[b] - 1] != fr->cut[b][k]) {
            fr->cut[b][fr->ncut[b]++] = fr->cut[b][k];
        }
    }
    if (fr->ncut[b] < 2) {
        return TC_OK;
    }
    fr->wstart[b] = calloc(fr->ncut[b] + 1, sizeof(uint32_t));
    if (fr->wstart[b] == NULL) {
        return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for the flow trace");
    }
    for (i = 0; i < s->nsteps; i++) {
        const tc_step_t *st = &s->steps[i];
        if (st->kind != TC_STEP_SEND && st->count > 0 && tc_f_resolve(f, st->dst_buf) == b) {
            size_t e0 = tc_v_upper_bound(fr->cut[b], fr->ncut[b], st->dst_off) - 1;
            size_t e1 = tc_v_upper_bound(fr->cut[b], fr->ncut[b], st->dst_off + st->count - 1);
            total += e1 - e0;
            for (k = e0; k < e1 && total <= 8ull * s->nsteps + (1u << 20); k++) {
                fr->wstart[b][k + 1]++;
            }
        }
    }
    if (total > 8ull * s->nsteps + (1u << 20)) {
        free(fr->wstart[b]); /* wide overlapping writes: scan instead */
        fr->wstart[b] = NULL;
        return TC_OK;
    }
    for (k = 0; k < fr->ncut[b]; k++) {
        fr->wstart[b][k + 1] += fr->wstart[b][k];
    }
    fr->wlist[b] = malloc((total + 1) * sizeof(uint32_t));
    fr->chained[b] = calloc(fr->ncut[b], 1);
    fill = malloc((fr->ncut[b] + 1) * sizeof(uint32_t));
    if (fr->wlist[b] == NULL || fr->chained[b] == NULL || fill == NULL) {
        free(fill);
        return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for the flow trace");
    }
    memcpy(fill, fr->wstart[b], (fr->ncut[b] + 1) * sizeof(uint32_t));
    for (i = 0; i < s->nsteps; i++) {
        const tc_step_t *st = &s->steps[i];
        if (st->kind != TC_STEP_SEND && st->count > 0 && tc_f_resolve(f, st->dst_buf) == b) {
            size_t e0 = tc_v_upper_bound(fr->cut[b], fr->ncut[b], st->dst_off) - 1;
            size_t e1 = tc_v_upper_bound(fr->cut[b], fr->ncut[b], st->dst_off + st->count - 1);
            for (k = e0; k < e1; k++) {
                fr->wlist[b][fill[k]++] = i;
            }
        }
    }
    free(fill);
    return TC_OK;
}

tc_status_t tc_f_build(tc_flow_t *f, int r, tc_frank_t **out)
{
    tc_algo_args_t a = *f->a;
    tc_frank_t *fr;
    tc_sched_t *s;
    tc_status_t status;
    size_t k, start = 0;
    uint32_t i;
    unsigned b;

    fr = calloc(1, sizeof(*fr));
    if (fr == NULL) {
        return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for rank %d", r);
    }
    fr->rank = r;
    s = &fr->sched;
    a.rank = r;
    tc_sched_init(s, &a, f->in->name);
    status = f->in->gen(&a, s);
    if (status != TC_OK) {
        tc_error_prefix("verify %s %s: generator failed for rank %d of %d: ", tc_coll_name(a.coll),
                        f->in->name, r, f->p);
        goto fail;
    }
    f->nbuilt++;
    f->built_steps += s->nsteps;
    if (s->coll != a.coll || s->nranks != a.nranks || s->rank != r || s->count != a.count ||
        s->in_place != a.in_place || (s->nsteps > 0 && s->steps == NULL) || s->nsteps > s->cap) {
        status = tc_f_fail(f, "rank %d's schedule header disagrees with its arguments", r);
        goto fail;
    }
    if ((status = tc_algo_layout(&a, &fr->lay)) != TC_OK) {
        goto fail;
    }
    fr->size[TC_BUF_SEND] = fr->lay.buf_count[0];
    fr->size[TC_BUF_RECV] = fr->lay.buf_count[1];
    fr->size[TC_BUF_SCRATCH] = s->scratch_count;
    if ((status = tc_f_check_steps(f, fr)) != TC_OK) {
        goto fail;
    }
    fr->comm = malloc(((size_t)s->nsteps + 1) * sizeof(*fr->comm));
    fr->ordinal = malloc(((size_t)s->nsteps + 1) * sizeof(uint32_t));
    if (fr->comm == NULL || fr->ordinal == NULL) {
        status = tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for the flow trace");
        goto fail;
    }
    for (i = 0; i < s->nsteps; i++) {
        if (tc_v_is_comm(s->steps[i].kind)) {
            fr->comm[fr->ncomm++] =
                (tc_vcomm_t){s->steps[i].peer, s->steps[i].kind == TC_STEP_SEND ? 0u : 1u, i};
        }
    }
    qsort(fr->comm, fr->ncomm, sizeof(*fr->comm), tc_v_comm_cmp);
    for (k = 0; k < fr->ncomm; k++) {
        if (k == 0 || fr->comm[k - 1].peer != fr->comm[k].peer ||
            fr->comm[k - 1].dir != fr->comm[k].dir) {
            start = k;
        }
        fr->ordinal[fr->comm[k].step] = (uint32_t)(k - start);
    }
    for (b = 0; b < 3; b++) {
        if ((status = tc_f_index_writes(f, fr, b)) != TC_OK) {
            goto fail;
        }
    }
    *out = fr;
    return TC_OK;
fail:
    tc_f_free_rank(fr);
    return status;
}

/* The scratch of tc_f_before() for schedules of n steps. */
tc_status_t tc_f_stamp_fit(tc_flow_t *f, uint32_t n)
{
    if (n > f->max_nsteps) {
        f->max_nsteps = n;
    }
    if (n <= f->stamp_cap) {
        return TC_OK;
    }
    free(f->stamp);
    free(f->stack);
    f->stamp = calloc(n, sizeof(uint32_t));
    f->stack = malloc(((size_t)n * 2 + 2) * sizeof(uint32_t));
    f->stamp_cap = (f->stamp == NULL || f->stack == NULL) ? 0 : n;
    f->stamp_gen = 0;
    if (f->stamp_cap == 0) {
        return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for the flow trace");
    }
    return TC_OK;
}

/* Rank r's schedule, built if needed; *fr_p = NULL when the budget is spent. */
static tc_status_t tc_f_get(tc_flow_t *f, int r, tc_frank_t **fr_p)
{
    tc_frank_t *fr = f->slot[r];
    tc_status_t status;

    if (fr != NULL) {
        if (f->head != fr) {
            tc_f_unlink(f, fr);
            tc_f_push_front(f, fr);
        }
        *fr_p = fr;
        return TC_OK;
    }
    if (f->built_steps >= f->in->budget) {
        f->exhausted = 1;
        *fr_p = NULL;
        return TC_OK;
    }
    if ((status = tc_f_build(f, r, &fr)) != TC_OK) {
        return status;
    }
    /* fr is set: tc_f_build fails only through tc_f_fail or tc_error_set, which return an
     * error; the analyzer does not follow the variadic tc_f_fail and reports the three
     * lines marked below (a null fr, and fr freed). */
    /* Evict the least recently used, keeping at least this one. */
    /* NOLINTNEXTLINE(clang-analyzer-core.NullDereference): see above */
    while (f->tail != NULL && f->cached_steps + fr->sched.nsteps > TC_F_CACHE_STEPS) {
        tc_frank_t *old = f->tail;
        tc_f_unlink(f, old); // NOLINT(clang-analyzer-unix.Malloc): see above
        f->slot[old->rank] = NULL;
        f->cached_steps -= old->sched.nsteps;
        tc_f_free_rank(old);
    }
    f->slot[r] = fr;
    f->cached_steps += fr->sched.nsteps; // NOLINT(clang-analyzer-core.NullDereference): see above
    tc_f_push_front(f, fr);
    if ((status = tc_f_stamp_fit(f, fr->sched.nsteps)) != TC_OK) {
        return status;
    }
    *fr_p = fr;
    return TC_OK;
}

/* Rank q as the trace sees it: its own schedule (*rot_p = 0), or in a
 * symmetric trace rank 0's, rotated by q (*rot_p = q). NULL: budget spent. */
tc_status_t tc_f_view(tc_flow_t *f, int q, tc_frank_t **fr_p, int *rot_p)
{
    if (f->sym) {
        *fr_p = f->tmpl;
        *rot_p = q;
        return TC_OK;
    }
    *rot_p = 0;
    return tc_f_get(f, q, fr_p);
}

/* Position y of buffer b (resolved) of the rank a view rotated by rot shows,
 * in the viewed schedule's terms (in), and back (out). */
uint64_t tc_f_in(const tc_flow_t *f, unsigned b, uint64_t y, int rot)
{
    return rot == 0 ? y : tc_vsym_from(&f->vs, b, y, rot);
}

uint64_t tc_f_out(const tc_flow_t *f, unsigned b, uint64_t y, int rot)
{
    return rot == 0 ? y : tc_vsym_to(&f->vs, b, y, rot);
}
