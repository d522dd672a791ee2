/*
 * The flow trace of sampled verification: proves what sampled output
 * elements of the sampled ranks hold, without executing every rank.
 *
 * For an output element (rank r, recv[x]) it goes back in time: the last
 * step of r that wrote x before the point of interest decides the content
 * (a copy or a receive: one source; a reduction: the element's earlier
 * content plus one source), and a receive continues at the matching send of
 * the peer (the k-th send of the peer to r for the k-th receive of r from
 * it), reading the peer's buffer before that send. A position no earlier step
 * wrote is a leaf: the rank's input element there, or uninitialised memory.
 * The leaves of an element are its contributions; the collective's rule is
 * checked on them (every rank once, the right input index; or the one right
 * source element).
 *
 * "Last step by index" is the value only if the accesses are ordered; each
 * read the trace relies on is checked like the race check of verify.c: the
 * writers of the element are ordered by (transitive) dependencies, each after
 * the one before (checked once per element run), the writer is a dependency
 * of the reader, and the next writer depends on the reader. Every step of a
 * rank the trace builds is checked for well-formedness, and every message it
 * follows is matched, with equal counts.
 *
 * Only the ranks the sampled elements depend on are generated, lazily, and
 * kept in an LRU cache bounded in steps. Reductions depend on every rank, so
 * the cost is the generation of every rank's schedule: fine for logarithmic
 * schedules, too much for linear-depth ones at 131072 ranks (a ring
 * schedule there has 524285 steps and takes milliseconds to generate); the
 * budget bounds the steps generated, and elements whose trace would need more
 * are reported as cut rather than proven.
 *
 * Rotational symmetry (opts flow_symmetry, verify_sym.c): for ring-type
 * schedules, where that chain runs through every rank, an element the exact
 * trace would cut (or every element, TC_ALGO_FLOW_SYM_ALL) may be traced
 * through rank 0's schedule rotated by r in place of rank r's, so a chain of
 * p ranks costs p lookups in one schedule instead of p generations. It is
 * used only when the layout has p equal blocks and the schedule of every
 * checked rank (the sampled ranks, 1, 2, p/2, p/2+1 and TC_F_SYM_RANDOM
 * random ranks) is exactly rank 0's rotated; when one differs, nothing is
 * traced so (those elements stay cut). Its limit, plainly: a rank that is
 * neither checked nor on an exact trace is assumed to be a rotation of rank
 * 0, not proven to be one; a schedule broken on such a rank alone, keeping
 * its messages in step with its neighbours', is not seen. Elements proven so
 * are counted apart (flow_elems_sym), with the number of ranks checked, and
 * a failure found so names the assumption in its detail. A break on rank 0
 * (the template) or on any checked rank shows as a mismatch; a generator bug
 * that breaks every rank alike keeps the symmetry and is found by the trace.
 *
 * A trace that goes back through more than 2 p S + 2^20 steps (S: the
 * longest schedule seen) can only be going round a cycle of messages (a
 * deadlock off the sampled ranks); it is reported as cut, not looped on.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo_internal.h"
#include "verify_internal.h"

#define TC_F_NOSTEP UINT32_MAX
#define TC_F_END UINT32_MAX           /* "before": after the last step */
#define TC_F_CACHE_STEPS (1ull << 24) /* about 1.3 GB at most */
#define TC_F_SYM_RANDOM 16            /* random ranks checked for symmetry */


typedef struct tc_frank {
    int rank;
    tc_sched_t sched;
    tc_algo_layout_t lay;
    uint64_t size[3];
    tc_vcomm_t *comm; /* sorted by (peer, dir, step) */
    size_t ncomm;
    uint32_t *ordinal; /* per step: its message number with its peer, per direction */
    /* writers per elementary interval of each buffer: [cut[e], cut[e+1]) is
     * written by wlist[wstart[e] .. wstart[e+1]), ascending; NULL: scan */
    uint64_t *cut[3];
    size_t ncut[3];
    uint32_t *wstart[3];
    uint32_t *wlist[3];
    uint8_t *chained[3]; /* per elementary interval: its writers proven in order */
    struct tc_frank *prev, *next; /* LRU: head is the most recent */
} tc_frank_t;

typedef struct tc_fq {
    int32_t r;
    uint32_t before;
    uint64_t y;
    uint8_t b;
} tc_fq_t;

typedef struct tc_flow {
    const tc_vflow_in_t *in;
    const tc_algo_args_t *a;
    int p;
    tc_frank_t **slot; /* [p] cached ranks */
    tc_frank_t *head, *tail;
    uint64_t cached_steps;
    uint64_t built_steps, nbuilt, hops;
    int exhausted; /* the budget is spent */
    uint32_t *stamp, *stack;
    uint32_t stamp_cap, stamp_gen;
    tc_fq_t *work;
    size_t nwork, capwork;
    uint8_t *seen;                       /* [p] per element: contributions seen */
    uint32_t max_nsteps;                 /* longest schedule seen (the cycle bound) */
    uint64_t sym_built, sym_built_steps; /* the check's builds: outside the budget */
    /* rotational symmetry: tmpl is rank 0, vs its rotation; sym: the element
     * being traced goes through tmpl only */
    int sym;
    int sym_state; /* as tc_algo_verify_report_t.flow_sym_state */
    int sym_checked, sym_rank;
    uint32_t sym_step;
    tc_frank_t *tmpl;
    tc_vsym_t vs;
} tc_flow_t;

static tc_status_t tc_f_fail(const tc_flow_t *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static tc_status_t tc_f_fail(const tc_flow_t *f, const char *fmt, ...)
{
    char msg[700];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (f->sym) {
        return tc_error_set(TC_ERR_INTERNAL,
                            "verify %s %s (%d ranks, count %llu%s): flow (traced through rank "
                            "0's schedule rotated, assuming the rotational symmetry checked on %d "
                            "ranks; step numbers are rank 0's): %s",
                            tc_coll_name(f->a->coll), f->in->name, f->p,
                            (unsigned long long)f->a->count, f->a->in_place ? ", in place" : "",
                            f->sym_checked, msg);
    }
    return tc_error_set(TC_ERR_INTERNAL, "verify %s %s (%d ranks, count %llu%s): flow: %s",
                        tc_coll_name(f->a->coll), f->in->name, f->p,
                        (unsigned long long)f->a->count, f->a->in_place ? ", in place" : "", msg);
}

static const char *tc_f_bufname(unsigned b)
{
    return b == TC_BUF_SEND ? "send" : b == TC_BUF_RECV ? "recv" : "scratch";
}

static unsigned tc_f_resolve(const tc_flow_t *f, unsigned b)
{
    return (f->a->in_place && b == TC_BUF_SEND) ? TC_BUF_RECV : b;
}

static int tc_f_is_comm(unsigned k)
{
    return k == TC_STEP_SEND || k == TC_STEP_RECV || k == TC_STEP_RECV_REDUCE;
}

/* ---- the rank cache ---------------------------------------------------------- */

static void tc_f_free_rank(tc_frank_t *fr)
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

static void tc_f_unlink(tc_flow_t *f, tc_frank_t *fr)
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
        int rd = st->kind == TC_STEP_SEND || st->kind == TC_STEP_COPY || st->kind == TC_STEP_REDUCE;
        int wr = st->kind != TC_STEP_SEND;

        if (st->kind > TC_STEP_REDUCE || (rd && st->buf > TC_BUF_SCRATCH) ||
            (wr && st->dst_buf > TC_BUF_SCRATCH)) {
            return tc_f_fail(f, "rank %d step %u has an unknown kind or buffer", fr->rank, i);
        }
        if (tc_f_is_comm(st->kind) && (st->peer < 0 || st->peer >= f->p || st->peer == fr->rank)) {
            return tc_f_fail(f, "rank %d step %u: peer %d is not another rank of [0, %d)",
                             fr->rank, i, (int)st->peer, f->p);
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
                                 fr->rank, i, tc_f_bufname(st->buf), (unsigned long long)st->off,
                                 (unsigned long long)st->off + st->count,
                                 (unsigned long long)size);
            }
        }
        if (wr) {
            uint64_t size = fr->size[tc_f_resolve(f, st->dst_buf)];
            if (st->dst_off > size || st->count > size - st->dst_off ||
                (st->dst_buf == TC_BUF_SEND && st->count > 0)) {
                return tc_f_fail(f,
                                 "out of bounds: rank %d step %u writes %s[%llu, %llu) of %llu "
                                 "elements (or the send buffer)",
                                 fr->rank, i, tc_f_bufname(st->dst_buf),
                                 (unsigned long long)st->dst_off,
                                 (unsigned long long)st->dst_off + st->count,
                                 (unsigned long long)size);
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

static tc_status_t tc_f_build(tc_flow_t *f, int r, tc_frank_t **out)
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
        if (tc_f_is_comm(s->steps[i].kind)) {
            fr->comm[fr->ncomm++] = (tc_vcomm_t){s->steps[i].peer,
                                                 s->steps[i].kind == TC_STEP_SEND ? 0u : 1u, i};
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
static tc_status_t tc_f_stamp_fit(tc_flow_t *f, uint32_t n)
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
static tc_status_t tc_f_view(tc_flow_t *f, int q, tc_frank_t **fr_p, int *rot_p)
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
static uint64_t tc_f_in(const tc_flow_t *f, unsigned b, uint64_t y, int rot)
{
    return rot == 0 ? y : tc_vsym_from(&f->vs, b, y, rot);
}

static uint64_t tc_f_out(const tc_flow_t *f, unsigned b, uint64_t y, int rot)
{
    return rot == 0 ? y : tc_vsym_to(&f->vs, b, y, rot);
}

/* ---- ordering of the reads the trace relies on ------------------------------ */

/* Whether step a (< b) is a transitive dependency of step b. */
static int tc_f_before(tc_flow_t *f, const tc_sched_t *s, uint32_t a, uint32_t b)
{
    return tc_v_reaches(s, a, b, f->stamp, &f->stamp_gen, f->stamp_cap, f->stack);
}

static tc_status_t tc_f_race(const tc_flow_t *f, const tc_frank_t *fr, uint32_t x, uint32_t y,
                             unsigned b, uint64_t e)
{
    return tc_f_fail(f,
                     "race: rank %d steps %u and %u both touch %s[%llu], one writing, but "
                     "step %u does not depend on step %u",
                     fr->rank, x, y, tc_f_bufname(b), (unsigned long long)e, y, x);
}

/* The last step before `before` writing element y of buffer b (resolved), and
 * the checks that its value is what `before` reads. */
static tc_status_t tc_f_writer(tc_flow_t *f, const tc_frank_t *fr, unsigned b, uint64_t y,
                               uint32_t before, uint32_t *w_p)
{
    const tc_sched_t *s = &fr->sched;
    uint32_t w = TC_F_NOSTEP, k;

    (void)k;
    if (fr->ncut[b] < 2 || y < fr->cut[b][0] || y >= fr->cut[b][fr->ncut[b] - 1]) {
        *w_p = TC_F_NOSTEP;
        return TC_OK;
    }
    if (fr->wstart[b] == NULL) {
        uint32_t i;
        for (i = before; i-- > 0;) {
            const tc_step_t *st = &s->steps[i];
            if (st->kind != TC_STEP_SEND && tc_f_resolve(f, st->dst_buf) == b &&
                st->dst_off <= y && y - st->dst_off < st->count) {
                w = i;
                break;
            }
        }
        if (w != TC_F_NOSTEP && before != s->nsteps && !tc_f_before(f, s, w, before)) {
            return tc_f_race(f, fr, w, before, b, y);
        }
    } else {
        size_t e = tc_v_upper_bound(fr->cut[b], fr->ncut[b], y) - 1;
        const uint32_t *l = fr->wlist[b] + fr->wstart[b][e];
        uint32_t n = fr->wstart[b][e + 1] - fr->wstart[b][e], lo = 0, hi = n;

        while (lo < hi) { /* first writer >= before */
            uint32_t mid = lo + (hi - lo) / 2;
            if (l[mid] < before) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        w = lo > 0 ? l[lo - 1] : TC_F_NOSTEP;
        if (w != TC_F_NOSTEP && before != s->nsteps && !tc_f_before(f, s, w, before)) {
            return tc_f_race(f, fr, w, before, b, y);
        }
        if (!fr->chained[b][e]) { /* the writers are in order: each after the previous */
            for (k = 1; k < n; k++) {
                if (!tc_f_before(f, s, l[k - 1], l[k])) {
                    return tc_f_race(f, fr, l[k - 1], l[k], b, y);
                }
            }
            fr->chained[b][e] = 1;
        }
        /* so the next writer after the read must wait for it (the reader may
         * itself be the next writer: a reduction reads what it updates) */
        if (lo < n && l[lo] == before) {
            lo++;
        }
        if (lo < n && before != s->nsteps && !tc_f_before(f, s, before, l[lo])) {
            return tc_f_race(f, fr, before, l[lo], b, y);
        }
    }
    *w_p = w;
    return TC_OK;
}

/* ---- one element -------------------------------------------------------------- */

static int tc_f_is_reduction(tc_coll_t c)
{
    return c == TC_COLL_ALL_REDUCE || c == TC_COLL_REDUCE || c == TC_COLL_REDUCE_SCATTER;
}

/* What output position x of rank r must hold: rank *src's input element *idx
 * (*src = -1 for any rank, reductions; -2: x is no output, a v-gap). */
static void tc_f_expect(const tc_flow_t *f, int r, const tc_algo_layout_t *lay, uint64_t x,
                        int *src, uint64_t *idx)
{
    const tc_algo_args_t *a = f->a;
    int q;

    switch (a->coll) {
    case TC_COLL_ALL_REDUCE:
    case TC_COLL_REDUCE:
        *src = -1;
        *idx = x - lay->out_off;
        return;
    case TC_COLL_REDUCE_SCATTER:
        *src = -1;
        *idx = tc_algo_block_off(a, r) + (x - lay->out_off);
        return;
    case TC_COLL_BROADCAST:
        *src = a->root;
        *idx = x - lay->out_off;
        return;
    case TC_COLL_SCATTER:
        *src = a->root;
        *idx = tc_algo_block_off(a, r) + (x - lay->out_off);
        return;
    default:
        break;
    }
    *src = -2;
    if (a->a2a_counts != NULL) { /* all_to_all_v: the block from q */
        const size_t p = (size_t)f->p;
        for (q = 0; q < f->p; q++) {
            uint64_t o = f->in->a2a_roff[(size_t)r * p + (size_t)q];
            if (x >= o && x - o < tc_algo_a2av_count(a, q, r)) {
                *src = q;
                *idx = f->in->a2a_soff[(size_t)q * p + (size_t)r] + (x - o);
                return;
            }
        }
        return;
    }
    for (q = 0; q < f->p; q++) { /* few elements: a scan is fine */
        uint64_t o = tc_algo_block_off(a, q);
        if (x >= o && x - o < tc_algo_block_len(a, q)) {
            *src = q;
            *idx = x - o;
            if (a->coll == TC_COLL_ALL_TO_ALL) {
                *idx += tc_algo_block_off(a, r);
            }
            return;
        }
    }
}

static tc_status_t tc_f_push(tc_flow_t *f, int r, unsigned b, uint64_t y, uint32_t before)
{
    if (f->nwork == f->capwork) {
        size_t cap = f->capwork ? f->capwork * 2 : 1024;
        tc_fq_t *w = realloc(f->work, cap * sizeof(*w));
        if (w == NULL) {
            return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for the flow trace");
        }
        f->work = w;
        f->capwork = cap;
    }
    f->work[f->nwork++] = (tc_fq_t){r, before, y, (uint8_t)b};
    return TC_OK;
}

/* Trace rank r's recv[x]; *cut = 1 when the budget ran out. Positions in the
 * work list are the real ranks'; a view rotated by rot (symmetric trace) is
 * asked in its own terms. */
static tc_status_t tc_f_element(tc_flow_t *f, int r, uint64_t x, int *cut)
{
    const int red = tc_f_is_reduction(f->a->coll);
    tc_frank_t *fr;
    tc_algo_layout_t lay;
    uint64_t idx = 0, nleaf = 0, hops = 0;
    int src = -1, rot;
    tc_status_t status;

    *cut = 0;
    if ((status = tc_f_view(f, r, &fr, &rot)) != TC_OK) {
        return status;
    }
    if (fr == NULL) {
        *cut = 1;
        return TC_OK;
    }
    if (rot == 0) {
        lay = fr->lay;
    } else {
        tc_algo_args_t a = *f->a;
        a.rank = r;
        if ((status = tc_algo_layout(&a, &lay)) != TC_OK) {
            return status;
        }
    }
    tc_f_expect(f, r, &lay, x, &src, &idx);
    if (src == -2) {
        return TC_OK; /* a gap between v-blocks: no rule */
    }
    memset(f->seen, 0, (size_t)f->p);
    f->nwork = 0;
    if ((status = tc_f_push(f, r, TC_BUF_RECV, x, TC_F_END)) != TC_OK) {
        return status;
    }
    while (f->nwork > 0) {
        tc_fq_t q = f->work[--f->nwork];
        unsigned b;
        uint32_t before, w = TC_F_NOSTEP;
        tc_step_t st;
        uint64_t k, yv;

        if ((status = tc_f_view(f, q.r, &fr, &rot)) != TC_OK) {
            return status;
        }
        if (fr == NULL) {
            *cut = 1;
            return TC_OK;
        }
        b = tc_f_resolve(f, q.b);
        yv = tc_f_in(f, b, q.y, rot);
        before = q.before == TC_F_END ? fr->sched.nsteps : q.before;
        if ((status = tc_f_writer(f, fr, b, yv, before, &w)) != TC_OK) {
            return status;
        }
        if (w == TC_F_NOSTEP) { /* a leaf */
            int lr = q.r;
            tc_algo_layout_t ll = fr->lay;
            uint64_t li;
            if (rot != 0) {
                tc_algo_args_t a = *f->a;
                a.rank = q.r;
                if ((status = tc_algo_layout(&a, &ll)) != TC_OK) {
                    return status;
                }
            }
            li = q.y - ll.in_off;
            if (ll.in_count == 0 || b != (unsigned)ll.in_buf || q.y < ll.in_off ||
                li >= ll.in_count) {
                return tc_f_fail(f,
                                 "wrong result: rank %d recv[%llu] holds uninitialised data: it "
                                 "comes from rank %d's %s[%llu], never written before %s%u",
                                 r, (unsigned long long)x, q.r, tc_f_bufname(b),
                                 (unsigned long long)q.y,
                                 before == fr->sched.nsteps ? "the end, step " : "step ", before);
            }
            nleaf++;
            if (red) {
                if (li != idx) {
                    return tc_f_fail(f,
                                     "wrong result: rank %d recv[%llu] holds rank %d's "
                                     "contribution to element %llu instead of element %llu",
                                     r, (unsigned long long)x, lr, (unsigned long long)li,
                                     (unsigned long long)idx);
                }
                if (f->seen[lr]) {
                    return tc_f_fail(f,
                                     "wrong result: rank %d recv[%llu] holds the contribution "
                                     "of rank %d more than once",
                                     r, (unsigned long long)x, lr);
                }
                f->seen[lr] = 1;
            } else if (nleaf > 1) {
                return tc_f_fail(f,
                                 "wrong result: rank %d recv[%llu] holds a combination of "
                                 "several ranks' data, not rank %d's element %llu",
                                 r, (unsigned long long)x, src, (unsigned long long)idx);
            } else if (lr != src || li != idx) {
                return tc_f_fail(f,
                                 "wrong result: rank %d recv[%llu] holds rank %d's element %llu "
                                 "instead of rank %d's element %llu",
                                 r, (unsigned long long)x, lr, (unsigned long long)li, src,
                                 (unsigned long long)idx);
            }
            continue;
        }
        f->hops++;
        if (++hops > 2 * (uint64_t)f->p * f->max_nsteps + (1u << 20)) {
            *cut = 1; /* going round a cycle of messages (see the top) */
            return TC_OK;
        }
        st = fr->sched.steps[w];
        k = yv - st.dst_off;
        if (st.kind == TC_STEP_REDUCE || st.kind == TC_STEP_RECV_REDUCE) {
            if ((status = tc_f_push(f, q.r, b, q.y, w)) != TC_OK) { /* the earlier content */
                return status;
            }
        }
        if (st.kind == TC_STEP_COPY || st.kind == TC_STEP_REDUCE) {
            const unsigned sb = tc_f_resolve(f, st.buf);
            status = tc_f_push(f, q.r, sb, tc_f_out(f, sb, st.off + k, rot), w);
        } else { /* a receive: continue at the matching send */
            uint32_t ord = fr->ordinal[w];
            int me = q.r, peer = rot == 0 ? st.peer : (int)(((int64_t)st.peer + rot) % f->p);
            int prot, me_v;
            tc_frank_t *fs;
            size_t lo = 0, hi, first;
            const tc_step_t *snd;
            unsigned sb;

            if ((status = tc_f_view(f, peer, &fs, &prot)) != TC_OK) {
                return status;
            }
            if (fs == NULL) {
                *cut = 1;
                return TC_OK;
            }
            me_v = prot == 0 ? me : (int)(((int64_t)me - prot + f->p) % f->p); /* in its terms */
            hi = fs->ncomm; /* first (me, send) entry of the peer */
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (fs->comm[mid].peer < me_v) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            first = lo; /* sends (dir 0) sort before receives */
            if (first + ord >= fs->ncomm || fs->comm[first + ord].peer != me_v ||
                fs->comm[first + ord].dir != 0) {
                return tc_f_fail(f,
                                 "unmatched receive: rank %d step %u is message %u to rank %d "
                                 "from rank %d, which sends fewer messages to rank %d",
                                 me, w, ord + 1, me, peer, me);
            }
            snd = &fs->sched.steps[fs->comm[first + ord].step];
            if (snd->count != st.count) {
                return tc_f_fail(f,
                                 "size mismatch: message %u from rank %d to rank %d: the send "
                                 "(step %u) has %llu elements, the receive (step %u) %llu",
                                 ord + 1, peer, me, fs->comm[first + ord].step,
                                 (unsigned long long)snd->count, w, (unsigned long long)st.count);
            }
            sb = tc_f_resolve(f, snd->buf);
            status = tc_f_push(f, peer, sb, tc_f_out(f, sb, snd->off + k, prot),
                               fs->comm[first + ord].step);
        }
        if (status != TC_OK) {
            return status;
        }
    }
    if (red && nleaf != (uint64_t)f->p) {
        int m;
        for (m = 0; m < f->p && f->seen[m]; m++) {
        }
        return tc_f_fail(f,
                         "wrong result: rank %d recv[%llu] is missing the contribution of rank %d "
                         "(holds %llu of %d ranks)",
                         r, (unsigned long long)x, m, (unsigned long long)nleaf, f->p);
    }
    if (!red && nleaf == 0) {
        return tc_f_fail(f, "wrong result: rank %d recv[%llu] holds nothing", r,
                         (unsigned long long)x);
    }
    return TC_OK;
}

static uint64_t tc_f_splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ---- rotational symmetry -------------------------------------------------------- */

/* Decide once whether the symmetric trace may be used: rank 0 built as the
 * template (its steps checked like any rank's), and every checked rank's
 * real schedule compared with it rotated. Sets f->sym_state. */
static tc_status_t tc_f_sym_decide(tc_flow_t *f)
{
    const uint64_t blk = tc_vsym_block(f->a);
    uint64_t seed = f->in->seed ^ 0x5e77e7a1ull, size[3];
    int *chk = NULL, n = 0, i, j;
    tc_status_t status = TC_OK;

    f->sym_state = -1;
    if (blk == 0) {
        return TC_OK; /* no rotation maps this layout onto itself */
    }
    if ((status = tc_f_build(f, 0, &f->tmpl)) != TC_OK) {
        return status;
    }
    f->nbuilt--; /* counted with the check's builds, outside the budget */
    f->built_steps -= f->tmpl->sched.nsteps;
    f->sym_built++;
    f->sym_built_steps += f->tmpl->sched.nsteps;
    if ((status = tc_f_stamp_fit(f, f->tmpl->sched.nsteps)) != TC_OK) {
        return status;
    }
    size[TC_BUF_SEND] = f->tmpl->size[TC_BUF_SEND];
    size[TC_BUF_RECV] = f->tmpl->size[TC_BUF_RECV];
    size[TC_BUF_SCRATCH] = f->tmpl->size[TC_BUF_SCRATCH];
    tc_vsym_init(&f->vs, f->a, blk, size);
    chk = malloc(((size_t)f->in->nsampled + 5 + TC_F_SYM_RANDOM) * sizeof(int));
    if (chk == NULL) {
        return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for the flow trace");
    }
    for (i = 0; i < f->in->nsampled + 5 + TC_F_SYM_RANDOM; i++) {
        int q = i < f->in->nsampled        ? f->in->sampled[i]
                : i == f->in->nsampled     ? 1 /* a rotation by one rank */
                : i == f->in->nsampled + 1 ? 2
                : i == f->in->nsampled + 2 ? f->p / 2
                : i == f->in->nsampled + 3 ? f->p / 2 + 1
                : i == f->in->nsampled + 4 ? f->p - 1
                                           : (int)(tc_f_splitmix(&seed) % (uint64_t)f->p);
        for (j = 0; j < n && chk[j] != q; j++) {
        }
        if (q > 0 && q < f->p && j == n) {
            chk[n++] = q;
        }
    }
    for (i = 0; i < n; i++) {
        tc_algo_args_t a = *f->a;
        tc_algo_layout_t lay;
        tc_sched_t s;
        uint32_t step = 0;
        int same;

        a.rank = chk[i];
        tc_sched_init(&s, &a, f->in->name);
        if ((status = f->in->gen(&a, &s)) != TC_OK) {
            tc_sched_free(&s);
            tc_error_prefix("verify %s %s: generator failed for rank %d of %d: ",
                            tc_coll_name(a.coll), f->in->name, chk[i], f->p);
            goto out;
        }
        f->sym_built++;
        f->sym_built_steps += s.nsteps;
        status = tc_algo_layout(&a, &lay);
        same = status == TC_OK && s.nsteps <= s.cap && (s.nsteps == 0 || s.steps != NULL) &&
               lay.buf_count[0] == f->tmpl->lay.buf_count[0] &&
               lay.buf_count[1] == f->tmpl->lay.buf_count[1] &&
               tc_vsym_match(&f->vs, &f->tmpl->sched, &s, chk[i], &step);
        tc_sched_free(&s);
        if (status != TC_OK) {
            goto out;
        }
        f->sym_checked++;
        if (!same) {
            f->sym_state = -2;
            f->sym_rank = chk[i];
            f->sym_step = step;
            goto out;
        }
    }
    f->sym_state = 1;
out:
    free(chk);
    return status;
}

/* Trace rank r's recv[x] through the template, when the symmetry holds; *cut
 * stays 1 when it does not. */
static tc_status_t tc_f_element_sym(tc_flow_t *f, int r, uint64_t x, int *cut)
{
    tc_status_t status = TC_OK;

    *cut = 1;
    if (f->sym_state == 0 && (status = tc_f_sym_decide(f)) != TC_OK) {
        return status;
    }
    if (f->sym_state != 1) {
        return TC_OK;
    }
    f->sym = 1;
    status = tc_f_element(f, r, x, cut);
    f->sym = 0;
    return status;
}

tc_status_t tc_vflow_run(const tc_vflow_in_t *in, tc_algo_verify_report_t *rep)
{
    tc_flow_t f;
    tc_status_t status = TC_OK;
    uint64_t seed = in->seed ^ 0x5eedf10aull;
    int s, e;

    memset(&f, 0, sizeof(f));
    f.in = in;
    f.a = in->args;
    f.p = in->args->nranks;
    if (f.a->coll == TC_COLL_BARRIER || in->elems <= 0) {
        return TC_OK; /* no data: the barrier's rule is happens-before (full mode) */
    }
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
    f.slot = calloc((size_t)f.p, sizeof(*f.slot));
    f.seen = malloc((size_t)f.p);
    if (f.slot == NULL || f.seen == NULL) {
        status = tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for the flow trace");
        goto out;
    }
    for (s = 0; s < in->nsampled && status == TC_OK; s++) {
        const int r = in->sampled[s];
        tc_algo_args_t a = *f.a;
        tc_algo_layout_t lay;

        a.rank = r;
        if ((status = tc_algo_layout(&a, &lay)) != TC_OK || lay.out_count == 0) {
            continue;
        }
        /* first, last, middle, then random positions of the output */
        for (e = 0; e < in->elems && status == TC_OK; e++) {
            uint64_t x = e == 0   ? 0
                         : e == 1 ? lay.out_count - 1
                         : e == 2 ? lay.out_count / 2
                                  : tc_f_splitmix(&seed) % lay.out_count;
            int cut = 1, by_sym = 0;
            if (in->symmetry == TC_ALGO_FLOW_SYM_ALL) {
                status = tc_f_element_sym(&f, r, lay.out_off + x, &cut);
                by_sym = !cut;
                if (status == TC_OK && f.sym_state != 1) {
                    status = tc_f_element(&f, r, lay.out_off + x, &cut); /* no symmetry */
                }
            } else {
                status = tc_f_element(&f, r, lay.out_off + x, &cut);
                if (status == TC_OK && cut && in->symmetry == TC_ALGO_FLOW_SYM_CUT) {
                    status = tc_f_element_sym(&f, r, lay.out_off + x, &cut);
                    by_sym = !cut;
                }
            }
            if (status == TC_OK) {
                if (cut) {
                    rep->flow_elems_cut++;
                } else if (by_sym) {
                    rep->flow_elems_sym++;
                } else {
                    rep->flow_elems_proven++;
                }
            }
        }
    }
out:
    rep->flow_ranks_built = f.nbuilt + f.sym_built;
    rep->flow_steps_built = f.built_steps + f.sym_built_steps;
    rep->flow_hops = f.hops;
    rep->flow_sym_state = f.sym_state;
    rep->flow_sym_checked = f.sym_checked;
    rep->flow_sym_rank = f.sym_rank;
    rep->flow_sym_step = f.sym_step;
    while (f.head != NULL) {
        tc_frank_t *fr = f.head;
        tc_f_unlink(&f, fr);
        tc_f_free_rank(fr);
    }
    if (f.tmpl != NULL) {
        tc_f_free_rank(f.tmpl);
    }
    free(f.work);
    free(f.stack);
    free(f.stamp);
    free(f.seen);
    free(f.slot);
    return status;
}
