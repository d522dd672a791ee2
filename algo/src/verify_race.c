/* The verifier's step 3: no race between two steps of one rank that touch overlapping elements
 * (one writing) without being ordered by dependencies; and the explanation of a step's wait. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verify_state.h"

/* ---- 3. races -------------------------------------------------------------- */

/* Per elementary interval of a buffer: the last write and the reads since. */
typedef struct tc_vacc {
    uint32_t lw;
    uint32_t rd; /* head of a list in the node pool, or TC_V_NOSTEP */
} tc_vacc_t;

typedef struct tc_vnode {
    uint32_t step, next;
} tc_vnode_t;

typedef struct tc_vrace {
    uint64_t *cut[3]; /* sorted distinct boundaries per buffer */
    size_t ncut[3];
    tc_vacc_t *acc[3];
    tc_vnode_t *pool;
    size_t npool, cappool;
} tc_vrace_t;

int tc_v_u64_cmp(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? -1 : a > b;
}

size_t tc_v_lower_bound(const uint64_t *v, size_t n, uint64_t x)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] < x) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

size_t tc_v_upper_bound(const uint64_t *v, size_t n, uint64_t x)
{
    return x == UINT64_MAX ? n : tc_v_lower_bound(v, n, x + 1);
}

int tc_v_reaches(const tc_sched_t *s, uint32_t a, uint32_t b, uint32_t *stamp, uint32_t *stamp_gen,
                 uint32_t stamp_cap, uint32_t *stack)
{
    size_t top = 0;
    int k;

    if (s->steps[b].dep[0] == a || s->steps[b].dep[1] == a) {
        return 1;
    }
    if (++*stamp_gen == 0) {
        memset(stamp, 0, (size_t)stamp_cap * sizeof(*stamp));
        *stamp_gen = 1;
    }
    stack[top++] = b;
    while (top > 0) {
        uint32_t x = stack[--top];
        for (k = 0; k < 2; k++) {
            uint32_t d = s->steps[x].dep[k];
            if (d == a) {
                return 1;
            }
            if (d == TC_STEP_NO_DEP || d < a || stamp[d] == *stamp_gen) {
                continue;
            }
            stamp[d] = *stamp_gen;
            stack[top++] = d;
        }
    }
    return 0;
}

/* Whether step a (< b) is a transitive dependency of step b. */
static int tc_v_before(tc_verify_t *v, const tc_sched_t *s, uint32_t a, uint32_t b)
{
    return tc_v_reaches(s, a, b, v->stamp, &v->stamp_gen, v->stamp_cap, v->stack);
}

static tc_status_t tc_v_race_fail(tc_verify_t *v, int r, uint32_t i, uint32_t j, unsigned b,
                                  uint64_t lo, uint64_t hi)
{
    const tc_sched_t *s = &v->ranks[r]->sched;
    char d1[200], d2[200];

    tc_v_describe(&s->steps[i], d1, sizeof(d1));
    tc_v_describe(&s->steps[j], d2, sizeof(d2));
    return tc_v_fail(v,
                     "race: rank %d steps %u (%s) and %u (%s) touch %s[%llu, %llu), one writing, "
                     "but step %u does not depend on step %u",
                     r, i, d1, j, d2, tc_v_bufname(b), (unsigned long long)lo,
                     (unsigned long long)hi, j, i);
}

static tc_status_t tc_v_access(tc_verify_t *v, tc_vrace_t *rc, int r, uint32_t j, unsigned b,
                               uint64_t off, uint64_t count, int write)
{
    const tc_sched_t *s = &v->ranks[r]->sched;
    size_t e0, e1, e;

    if (count == 0) {
        return TC_OK;
    }
    e0 = tc_v_lower_bound(rc->cut[b], rc->ncut[b], off);
    e1 = tc_v_lower_bound(rc->cut[b], rc->ncut[b], off + count);
    for (e = e0; e < e1; e++) {
        tc_vacc_t *a = &rc->acc[b][e];
        uint64_t lo = rc->cut[b][e], hi = rc->cut[b][e + 1];

        if (a->lw != TC_V_NOSTEP && a->lw != j && !tc_v_before(v, s, a->lw, j)) {
            return tc_v_race_fail(v, r, a->lw, j, b, lo, hi);
        }
        if (write) {
            uint32_t n;
            for (n = a->rd; n != TC_V_NOSTEP; n = rc->pool[n].next) {
                uint32_t x = rc->pool[n].step;
                if (x != j && !tc_v_before(v, s, x, j)) {
                    return tc_v_race_fail(v, r, x, j, b, lo, hi);
                }
            }
            a->lw = j;
            a->rd = TC_V_NOSTEP;
        } else if (a->rd == TC_V_NOSTEP || rc->pool[a->rd].step != j) {
            if (rc->npool == rc->cappool) {
                size_t cap = rc->cappool ? rc->cappool * 2 : 256;
                tc_vnode_t *p = realloc(rc->pool, cap * sizeof(*p));
                if (p == NULL) {
                    return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for race check");
                }
                rc->pool = p;
                rc->cappool = cap;
            }
            rc->pool[rc->npool] = (tc_vnode_t){j, a->rd};
            a->rd = (uint32_t)rc->npool++;
        }
    }
    return TC_OK;
}

tc_status_t tc_v_check_races(tc_verify_t *v, int r)
{
    const tc_vrank_t *vr = v->ranks[r];
    const tc_sched_t *s = &vr->sched;
    tc_vrace_t rc;
    tc_status_t status = TC_OK;
    uint32_t i;
    unsigned b;
    size_t k, n;

    memset(&rc, 0, sizeof(rc));
    if (s->nsteps < 2) {
        return TC_OK;
    }
    if (s->nsteps > v->stamp_cap) {
        free(v->stamp);
        free(v->stack);
        v->stamp = calloc(s->nsteps, sizeof(*v->stamp));
        v->stack = malloc((size_t)s->nsteps * 2 * sizeof(*v->stack) + 8);
        v->stamp_cap = v->stamp == NULL || v->stack == NULL ? 0 : s->nsteps;
        v->stamp_gen = 0;
        if (v->stamp_cap == 0) {
            return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for race check");
        }
    }
    /* Elementary intervals: every boundary of every access, per buffer. */
    for (b = 0; b < 3; b++) {
        rc.cut[b] = malloc(((size_t)s->nsteps * 4 + 2) * sizeof(uint64_t));
        if (rc.cut[b] == NULL) {
            status = tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for race check");
            goto out;
        }
    }
    for (i = 0; i < s->nsteps; i++) {
        const tc_step_t *st = &s->steps[i];
        if (st->count == 0) {
            continue;
        }
        if (tc_v_reads_src(st->kind)) {
            b = tc_v_resolve(v, st->buf);
            rc.cut[b][rc.ncut[b]++] = st->off;
            rc.cut[b][rc.ncut[b]++] = st->off + st->count;
        }
        if (tc_v_writes_dst(st->kind)) {
            b = tc_v_resolve(v, st->dst_buf);
            rc.cut[b][rc.ncut[b]++] = st->dst_off;
            rc.cut[b][rc.ncut[b]++] = st->dst_off + st->count;
        }
    }
    for (b = 0; b < 3; b++) {
        qsort(rc.cut[b], rc.ncut[b], sizeof(uint64_t), tc_v_u64_cmp);
        for (k = 0, n = 0; k < rc.ncut[b]; k++) {
            if (n == 0 || rc.cut[b][n - 1] != rc.cut[b][k]) {
                rc.cut[b][n++] = rc.cut[b][k];
            }
        }
        rc.ncut[b] = n;
        rc.acc[b] = malloc((n + 1) * sizeof(*rc.acc[b]));
        if (rc.acc[b] == NULL) {
            status = tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for race check");
            goto out;
        }
        for (k = 0; k <= n; k++) {
            rc.acc[b][k] = (tc_vacc_t){TC_V_NOSTEP, TC_V_NOSTEP};
        }
    }
    for (i = 0; i < s->nsteps && status == TC_OK; i++) {
        const tc_step_t *st = &s->steps[i];
        if (tc_v_reads_src(st->kind)) {
            status = tc_v_access(v, &rc, r, i, tc_v_resolve(v, st->buf), st->off, st->count, 0);
        }
        if (status == TC_OK && tc_v_writes_dst(st->kind)) {
            status =
                tc_v_access(v, &rc, r, i, tc_v_resolve(v, st->dst_buf), st->dst_off, st->count, 1);
        }
    }
out:
    for (b = 0; b < 3; b++) {
        free(rc.acc[b]);
        free(rc.cut[b]);
    }
    free(rc.pool);
    return status;
}

/* Append to out what (r, i) waits for, following the chain a few hops. */
void tc_v_explain(const tc_verify_t *v, int r, uint32_t i, char *out, size_t len)
{
    int seen_r[8];
    uint32_t seen_i[8];
    int hops = 0, h, k;
    size_t pos;
    char d[200];

    tc_v_describe(&v->ranks[r]->sched.steps[i], d, sizeof(d));
    pos = (size_t)snprintf(out, len, "rank %d step %u (%s)", r, i, d);
    while (hops < 8 && pos < len) {
        const tc_vrank_t *vr = v->ranks[r];
        const tc_step_t *st = &vr->sched.steps[i];
        int nr = -1;
        uint32_t ni = 0;
        const char *how = "";

        seen_r[hops] = r;
        seen_i[hops] = i;
        hops++;
        for (k = 0; k < 2 && nr < 0; k++) {
            if (st->dep[k] != TC_STEP_NO_DEP && !(vr->state[st->dep[k]] == 2)) {
                nr = r;
                ni = st->dep[k];
                how = "its step";
            }
        }
        if (nr < 0 && tc_v_is_comm(st->kind)) {
            nr = st->peer;
            ni = vr->match[i];
            how = "its match,";
        }
        if (nr < 0) {
            break;
        }
        tc_v_describe(&v->ranks[nr]->sched.steps[ni], d, sizeof(d));
        if (nr == r) {
            pos += (size_t)snprintf(out + pos, len - pos, " waits for %s %u (%s)", how, ni, d);
        } else {
            pos += (size_t)snprintf(out + pos, len - pos, " waits for %s rank %d step %u (%s)", how,
                                    nr, ni, d);
        }
        for (h = 0; h < hops; h++) {
            if (seen_r[h] == nr && seen_i[h] == ni) {
                if (pos < len) {
                    snprintf(out + pos, len - pos, ": a cycle");
                }
                return;
            }
        }
        r = nr;
        i = ni;
        if (pos < len) {
            pos += (size_t)snprintf(out + pos, len - pos, ", which");
        }
    }
}
