/*
 * The verifier: builds the ranks' schedules and executes them symbolically
 * (see verify_internal.h for what an element holds).
 *
 * Checks, in order, each reported with the first offending step:
 *  1. every step is well formed: known kind and buffers, a peer that is
 *     another rank, dependencies on earlier steps, ranges inside their
 *     buffers (tc_algo_layout() and the scratch size), no write to the
 *     caller's send buffer, no local copy/reduce between overlapping ranges;
 *  2. every send has its receive and every receive its send (k-th send from
 *     r to q <-> k-th receive of q from r), with equal counts;
 *  3. no race: two steps of one rank touching overlapping elements, one
 *     writing, must be ordered by (transitive) dependencies. Checked exactly
 *     and in near-linear time: per element run, every access must come after
 *     the run's last write, and a write after every read since that write
 *     (steps visited in index order, a topological order); ordering is
 *     tested by a search back along dependencies bounded below by the
 *     earlier step's index;
 *  4. execution, event-driven in modelled time: a local step runs when its
 *     dependencies are done; a send and its receive run together once both
 *     have their dependencies done (the strictest, rendezvous, transport).
 *     Steps left over are a deadlock, explained by the chain they wait on;
 *  5. the collective's rule on every rank's output; barrier: every rank
 *     completes only after every rank has started (happens-before sets);
 *  6. messages and elements each rank sends against the cost formula.
 * Sampled mode builds only a random sample of ranks (plus 0, p-1, the root)
 * and their direct peers (up to 16 per sampled rank, chosen at random where
 * there are more, as in all-to-all), and does 1-3 and 6 for the sampled
 * ranks: every message a sampled rank exchanges with a built peer is matched
 * against that peer's real schedule. It does not execute every rank; instead
 * sampled output elements of the sampled ranks are traced back through the
 * schedules they depend on, within a budget of generated steps
 * (verify_flow.c); full mode executes everything.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo_internal.h"
#include "verify_internal.h"

#define TC_V_NOSTEP UINT32_MAX

/* Sampled mode: peers built per sampled rank, at most. */
#define TC_V_MAX_PEERS 16u


typedef struct tc_vrank {
    int rank;
    int sampled;
    tc_sched_t sched;
    tc_algo_layout_t lay;
    tc_vbuf_t buf[3];  /* indexed by tc_buf_t; buf[SEND] unused in place */
    uint64_t size[3];  /* elements of each buffer */
    uint8_t *state;    /* per step: 0 waiting, 1 ready (comm), 2 done */
    uint8_t *npend;    /* per step: dependencies not done */
    uint32_t *match;   /* per communication step: the matching step on its peer */
    uint32_t *ordinal; /* per communication step: its message number on the pair */
    uint32_t *dstart;  /* dependents of step i: dlist[dstart[i] .. dstart[i+1]) */
    uint32_t *dlist;
    double *t;              /* per step: ready time, then completion time */
    const tc_vset_t **know; /* barrier: per step, the ranks known to have started */
    const tc_vset_t *know_all;
    tc_vcomm_t *comm;
    size_t ncomm;
    double send_free, recv_free;
    uint64_t send_msgs, send_elems, recv_elems, red_elems;
} tc_vrank_t;

typedef struct tc_vevent {
    double t;
    int32_t r;
    uint32_t i;
} tc_vevent_t;

typedef struct tc_verify {
    const tc_algo_args_t *args;
    const char *name;
    const tc_algo_verify_opts_t *opts;
    int p;
    tc_vrank_t **ranks; /* [p]; NULL where not built */
    int *built;         /* the built ranks, ascending */
    int nbuilt;
    tc_varena_t arena;
    tc_algo_model_t model;
    size_t esize;
    /* the event heap */
    tc_vevent_t *heap;
    size_t nheap, capheap;
    /* race check scratch */
    uint32_t *stamp;
    uint32_t stamp_cap, stamp_gen;
    uint32_t *stack;
    /* all_to_all_v: [p * p], row r: rank r's send offsets (block to q) and
     * receive offsets (block from q); NULL otherwise */
    uint64_t *a2a_soff, *a2a_roff;
} tc_verify_t;

static const char *tc_v_bufname(unsigned b)
{
    return b == TC_BUF_SEND ? "send" : b == TC_BUF_RECV ? "recv" : "scratch";
}

static int tc_v_is_comm(unsigned kind)
{
    return kind == TC_STEP_SEND || kind == TC_STEP_RECV || kind == TC_STEP_RECV_REDUCE;
}

static int tc_v_reads_src(unsigned kind)
{
    return kind == TC_STEP_SEND || kind == TC_STEP_COPY || kind == TC_STEP_REDUCE;
}

static int tc_v_writes_dst(unsigned kind)
{
    return kind != TC_STEP_SEND;
}

static void tc_v_describe(const tc_step_t *st, char *out, size_t len)
{
    unsigned long long n = (unsigned long long)st->count;
    unsigned long long off = (unsigned long long)st->off, doff = (unsigned long long)st->dst_off;

    switch (st->kind) {
    case TC_STEP_SEND:
        snprintf(out, len, "send %llu elements of %s[%llu] to rank %d", n, tc_v_bufname(st->buf),
                 off, (int)st->peer);
        break;
    case TC_STEP_RECV:
    case TC_STEP_RECV_REDUCE:
        snprintf(out, len, "%s %llu elements from rank %d into %s[%llu]",
                 st->kind == TC_STEP_RECV ? "recv" : "recv-reduce", n, (int)st->peer,
                 tc_v_bufname(st->dst_buf), doff);
        break;
    case TC_STEP_COPY:
    case TC_STEP_REDUCE:
        snprintf(out, len, "%s %llu elements %s[%llu] -> %s[%llu]",
                 st->kind == TC_STEP_COPY ? "copy" : "reduce", n, tc_v_bufname(st->buf), off,
                 tc_v_bufname(st->dst_buf), doff);
        break;
    default:
        snprintf(out, len, "kind %u", (unsigned)st->kind);
        break;
    }
}

static tc_status_t tc_v_fail(const tc_verify_t *v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static tc_status_t tc_v_fail(const tc_verify_t *v, const char *fmt, ...)
{
    char msg[900];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return tc_error_set(TC_ERR_INTERNAL, "verify %s %s (%d ranks, count %llu%s): %s",
                        tc_coll_name(v->args->coll), v->name, v->p,
                        (unsigned long long)v->args->count, v->args->in_place ? ", in place" : "",
                        msg);
}

/* The buffer a step's name refers to: in place, send is recv. */
static unsigned tc_v_resolve(const tc_verify_t *v, unsigned b)
{
    return (v->args->in_place && b == TC_BUF_SEND) ? TC_BUF_RECV : b;
}

/* ---- 1. well-formed steps ------------------------------------------------ */

static tc_status_t tc_v_check_range(const tc_verify_t *v, int r, uint32_t i, unsigned b,
                                    uint64_t off, uint64_t count)
{
    const tc_vrank_t *vr = v->ranks[r];
    uint64_t size = vr->size[tc_v_resolve(v, b)];
    char d[200];

    if (off > size || count > size - off) {
        tc_v_describe(&vr->sched.steps[i], d, sizeof(d));
        return tc_v_fail(v,
                         "out of bounds: rank %d step %u (%s) reaches %s[%llu, %llu) but the "
                         "buffer has %llu elements",
                         r, i, d, tc_v_bufname(b), (unsigned long long)off,
                         (unsigned long long)off + (unsigned long long)count,
                         (unsigned long long)size);
    }
    return TC_OK;
}

/* Whether a step passes every check of tc_v_check_steps (fast path). */
static int tc_v_step_ok(const tc_verify_t *v, int r, const tc_step_t *st, uint32_t i)
{
    const tc_vrank_t *vr = v->ranks[r];
    int k;

    if ((tc_v_reads_src(st->kind) && st->buf > TC_BUF_SCRATCH) ||
        (tc_v_writes_dst(st->kind) && st->dst_buf > TC_BUF_SCRATCH)) {
        return 0;
    }
    if (tc_v_is_comm(st->kind) && (st->peer < 0 || st->peer >= v->p || st->peer == r)) {
        return 0;
    }
    for (k = 0; k < 2; k++) {
        if (st->dep[k] != TC_STEP_NO_DEP && st->dep[k] >= i) {
            return 0;
        }
    }
    if (tc_v_reads_src(st->kind)) {
        uint64_t size = vr->size[tc_v_resolve(v, st->buf)];
        if (st->off > size || st->count > size - st->off) {
            return 0;
        }
    }
    if (tc_v_writes_dst(st->kind)) {
        uint64_t size = vr->size[tc_v_resolve(v, st->dst_buf)];
        if (st->dst_off > size || st->count > size - st->dst_off ||
            (st->dst_buf == TC_BUF_SEND && st->count > 0)) {
            return 0;
        }
    }
    if ((st->kind == TC_STEP_COPY || st->kind == TC_STEP_REDUCE) && st->count > 0 &&
        tc_v_resolve(v, st->buf) == tc_v_resolve(v, st->dst_buf) &&
        st->off < st->dst_off + st->count && st->dst_off < st->off + st->count) {
        return 0;
    }
    return 1;
}

static tc_status_t tc_v_check_steps(const tc_verify_t *v, int r)
{
    const tc_sched_t *s = &v->ranks[r]->sched;
    tc_status_t status;
    char d[200];
    uint32_t i;
    int k;

    /* NOLINTNEXTLINE(clang-analyzer-core.NullDereference): r is built, v->ranks[r] is set */
    for (i = 0; i < s->nsteps; i++) {
        const tc_step_t *st = &s->steps[i];

        if (st->kind > TC_STEP_REDUCE) {
            return tc_v_fail(v, "rank %d step %u has unknown kind %u", r, i, (unsigned)st->kind);
        }
        if (tc_v_step_ok(v, r, st, i)) {
            continue; /* the common case, without formatting */
        }
        tc_v_describe(st, d, sizeof(d));
        if ((tc_v_reads_src(st->kind) && st->buf > TC_BUF_SCRATCH) ||
            (tc_v_writes_dst(st->kind) && st->dst_buf > TC_BUF_SCRATCH)) {
            return tc_v_fail(v, "rank %d step %u (%s) names an unknown buffer", r, i, d);
        }
        if (tc_v_is_comm(st->kind) && (st->peer < 0 || st->peer >= v->p || st->peer == r)) {
            return tc_v_fail(v, "rank %d step %u (%s): peer %d is not another rank of [0, %d)", r,
                             i, d, (int)st->peer, v->p);
        }
        for (k = 0; k < 2; k++) {
            if (st->dep[k] != TC_STEP_NO_DEP && st->dep[k] >= i) {
                return tc_v_fail(v,
                                 "rank %d step %u (%s) depends on step %u, not an earlier "
                                 "step",
                                 r, i, d, st->dep[k]);
            }
        }
        if (tc_v_reads_src(st->kind)) {
            status = tc_v_check_range(v, r, i, st->buf, st->off, st->count);
            if (status != TC_OK) {
                return status;
            }
        }
        if (tc_v_writes_dst(st->kind)) {
            status = tc_v_check_range(v, r, i, st->dst_buf, st->dst_off, st->count);
            if (status != TC_OK) {
                return status;
            }
            if (st->dst_buf == TC_BUF_SEND && st->count > 0) {
                return tc_v_fail(v,
                                 "rank %d step %u (%s) writes the send buffer, the "
                                 "caller's input",
                                 r, i, d);
            }
        }
        if ((st->kind == TC_STEP_COPY || st->kind == TC_STEP_REDUCE) && st->count > 0 &&
            tc_v_resolve(v, st->buf) == tc_v_resolve(v, st->dst_buf) &&
            st->off < st->dst_off + st->count && st->dst_off < st->off + st->count) {
            return tc_v_fail(v, "rank %d step %u (%s) has overlapping source and destination", r, i,
                             d);
        }
    }
    return TC_OK;
}

/* ---- 2. matching ----------------------------------------------------------- */

int tc_v_comm_cmp(const void *pa, const void *pb)
{
    const tc_vcomm_t *a = pa, *b = pb;

    if (a->peer != b->peer) {
        return a->peer < b->peer ? -1 : 1;
    }
    if (a->dir != b->dir) {
        return a->dir < b->dir ? -1 : 1;
    }
    return a->step < b->step ? -1 : (a->step > b->step);
}

/* First index of (peer, dir) in a sorted array, and the length of that group. */
static size_t tc_v_group(const tc_vcomm_t *c, size_t n, int32_t peer, uint32_t dir, size_t *len_p)
{
    size_t lo = 0, hi = n, first;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c[mid].peer < peer || (c[mid].peer == peer && c[mid].dir < dir)) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    first = lo;
    hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c[mid].peer < peer || (c[mid].peer == peer && c[mid].dir <= dir)) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *len_p = lo - first;
    return first;
}

static tc_status_t tc_v_match(tc_verify_t *v)
{
    size_t k, start = 0, len;
    char d[200], d2[200];
    uint32_t i;
    int b;

    for (b = 0; b < v->nbuilt; b++) {
        tc_vrank_t *vr = v->ranks[v->built[b]];
        const tc_sched_t *s = &vr->sched;

        vr->comm = malloc(((size_t)s->nsteps + 1) * sizeof(*vr->comm));
        if (vr->comm == NULL) {
            return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for message tables");
        }
        vr->ncomm = 0;
        for (i = 0; i < s->nsteps; i++) {
            vr->match[i] = TC_V_NOSTEP;
            if (tc_v_is_comm(s->steps[i].kind)) {
                vr->comm[vr->ncomm].peer = s->steps[i].peer;
                vr->comm[vr->ncomm].dir = s->steps[i].kind == TC_STEP_SEND ? 0 : 1;
                vr->comm[vr->ncomm].step = i;
                vr->ncomm++;
            }
        }
        qsort(vr->comm, vr->ncomm, sizeof(*vr->comm), tc_v_comm_cmp);
        for (k = 0; k < vr->ncomm; k++) {
            start = (k > 0 && vr->comm[k - 1].peer == vr->comm[k].peer &&
                     vr->comm[k - 1].dir == vr->comm[k].dir)
                        ? start
                        : k;
            vr->ordinal[vr->comm[k].step] = (uint32_t)(k - start);
        }
    }
    for (b = 0; b < v->nbuilt; b++) {
        const int r = v->built[b];
        tc_vrank_t *vr = v->ranks[r];
        const tc_sched_t *s = &vr->sched;

        for (k = 0; k < vr->ncomm; k++) {
            const tc_vcomm_t *e = &vr->comm[k];
            const tc_step_t *st = &s->steps[e->step];
            uint32_t ord = vr->ordinal[e->step];
            int q = e->peer;
            const tc_vrank_t *vq = v->ranks[q];
            const tc_step_t *other;

            if (vq == NULL) {
                continue; /* sampled mode: a peer's peer, not built */
            }
            start = tc_v_group(vq->comm, vq->ncomm, r, 1 - e->dir, &len);
            if (ord >= len) {
                tc_v_describe(st, d, sizeof(d));
                return tc_v_fail(v,
                                 e->dir == 0 ? "unmatched send: rank %d step %u (%s) is message "
                                               "%u from rank %d to rank %d, but rank %d "
                                               "posts only %zu receives from rank %d"
                                             : "unmatched receive: rank %d step %u (%s) is "
                                               "message %u to rank %d from rank %d, but rank "
                                               "%d sends only %zu messages to rank %d",
                                 r, e->step, d, ord + 1, r, q, q, len, r);
            }
            vr->match[e->step] = vq->comm[start + ord].step;
            other = &vq->sched.steps[vq->comm[start + ord].step];
            if (other->count != st->count) {
                tc_v_describe(st, d, sizeof(d));
                tc_v_describe(other, d2, sizeof(d2));
                return tc_v_fail(v,
                                 "size mismatch: message %u between ranks %d and %d: rank %d "
                                 "step %u (%s) but rank %d step %u (%s)",
                                 ord + 1, r, q, r, e->step, d, q, vq->comm[start + ord].step, d2);
            }
        }
    }
    return TC_OK;
}

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

int tc_v_reaches(const tc_sched_t *s, uint32_t a, uint32_t b, uint32_t *stamp,
                 uint32_t *stamp_gen, uint32_t stamp_cap, uint32_t *stack)
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

static tc_status_t tc_v_check_races(tc_verify_t *v, int r)
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
static void tc_v_explain(const tc_verify_t *v, int r, uint32_t i, char *out, size_t len)
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

/* ---- 4. execution ---------------------------------------------------------- */

/* Event order: time, then step index (a rank's ready steps go in step order,
 * as the executor posts them). */
static int tc_v_ev_less(double t, uint32_t i, const tc_vevent_t *e)
{
    return t < e->t || (t == e->t && i < e->i);
}

static tc_status_t tc_v_push(tc_verify_t *v, double t, int r, uint32_t i)
{
    size_t k;

    if (v->nheap == v->capheap) {
        size_t cap = v->capheap ? v->capheap * 2 : 1024;
        tc_vevent_t *h = realloc(v->heap, cap * sizeof(*h));
        if (h == NULL) {
            return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for %zu events", cap);
        }
        v->heap = h;
        v->capheap = cap;
    }
    k = v->nheap++;
    while (k > 0 && tc_v_ev_less(t, i, &v->heap[(k - 1) / 2])) {
        v->heap[k] = v->heap[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    v->heap[k] = (tc_vevent_t){t, r, i};
    return TC_OK;
}

static tc_vevent_t tc_v_pop(tc_verify_t *v)
{
    tc_vevent_t top = v->heap[0], last = v->heap[--v->nheap];
    size_t k = 0, c;

    while ((c = 2 * k + 1) < v->nheap) {
        if (c + 1 < v->nheap && tc_v_ev_less(v->heap[c + 1].t, v->heap[c + 1].i, &v->heap[c])) {
            c++;
        }
        if (!tc_v_ev_less(v->heap[c].t, v->heap[c].i, &last)) {
            break;
        }
        v->heap[k] = v->heap[c];
        k = c;
    }
    if (v->nheap > 0) {
        v->heap[k] = last;
    }
    return top;
}

static tc_vbuf_t *tc_v_buf(tc_verify_t *v, int r, unsigned b)
{
    return &v->ranks[r]->buf[tc_v_resolve(v, b)];
}

/* Link class of a message between ranks a and b: 0 same node, 1 across. */
static int tc_v_link(const tc_verify_t *v, int a, int b)
{
    int rpn = v->args->ranks_per_node;
    return (rpn > 0 && rpn < v->p && a / rpn != b / rpn) ? 1 : 0;
}

/* Step i of rank r is done at time t: release its dependents. */
static tc_status_t tc_v_finish(tc_verify_t *v, int r, uint32_t i, double t)
{
    tc_vrank_t *vr = v->ranks[r];
    tc_status_t status;
    uint32_t k;

    vr->state[i] = 2;
    vr->t[i] = t;
    if (vr->know != NULL) {
        const tc_vset_t *u = tc_vset_union(&v->arena, vr->know_all, vr->know[i], 0);
        if (u == NULL) {
            return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for rank sets");
        }
        vr->know_all = u;
    }
    for (k = vr->dstart[i]; k < vr->dstart[i + 1]; k++) {
        uint32_t d = vr->dlist[k];
        if (vr->t[d] < t) {
            vr->t[d] = t;
        }
        if (vr->know != NULL) {
            const tc_vset_t *u = tc_vset_union(&v->arena, vr->know[d], vr->know[i], 0);
            if (u == NULL) {
                return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for rank sets");
            }
            vr->know[d] = u;
        }
        if (--vr->npend[d] == 0 && (status = tc_v_push(v, vr->t[d], r, d)) != TC_OK) {
            return status;
        }
    }
    return TC_OK;
}

static tc_status_t tc_v_run_step(tc_verify_t *v, int r, uint32_t i, double t)
{
    tc_vrank_t *vr = v->ranks[r];
    const tc_step_t *st = &vr->sched.steps[i];
    const double bytes = (double)st->count * (double)v->esize;
    tc_status_t status;

    if (st->kind == TC_STEP_COPY || st->kind == TC_STEP_REDUCE) {
        status =
            tc_vbuf_move(&v->arena, tc_v_buf(v, r, st->dst_buf), st->dst_off,
                         tc_v_buf(v, r, st->buf), st->off, st->count, st->kind == TC_STEP_REDUCE);
        if (status != TC_OK) {
            return status;
        }
        if (st->kind == TC_STEP_REDUCE) {
            t += bytes * v->model.gamma_us * 1e-6;
        }
        return tc_v_finish(v, r, i, t);
    }
    vr->state[i] = 1;
    {
        int q = st->peer;
        uint32_t j = vr->match[i];
        tc_vrank_t *vq = v->ranks[q];
        const tc_step_t *snd = st, *rcv = &vq->sched.steps[j];
        int sr = r, rr = q, link;
        double start, end;

        if (vq->state[j] != 1) {
            return TC_OK; /* the peer's step is not ready yet: it will run us */
        }
        if (st->kind != TC_STEP_SEND) {
            snd = rcv;
            rcv = st;
            sr = q;
            rr = r;
        }
        status = tc_vbuf_move(&v->arena, tc_v_buf(v, rr, rcv->dst_buf), rcv->dst_off,
                              tc_v_buf(v, sr, snd->buf), snd->off, snd->count,
                              rcv->kind == TC_STEP_RECV_REDUCE);
        if (status != TC_OK) {
            return status;
        }
        link = tc_v_link(v, sr, rr);
        start = vr->t[i] > vq->t[j] ? vr->t[i] : vq->t[j];
        if (v->ranks[sr]->send_free > start) {
            start = v->ranks[sr]->send_free;
        }
        if (v->ranks[rr]->recv_free > start) {
            start = v->ranks[rr]->recv_free;
        }
        end = start + (v->model.alpha_us[link] + bytes * v->model.beta_us[link]) * 1e-6;
        v->ranks[sr]->send_free = end;
        v->ranks[rr]->recv_free = end;
        if (rcv->kind == TC_STEP_RECV_REDUCE) {
            end += bytes * v->model.gamma_us * 1e-6;
        }
        if (v->ranks[rr]->know != NULL) {
            uint32_t ri = rr == r ? i : j, si = sr == r ? i : j;
            const tc_vset_t *u =
                tc_vset_union(&v->arena, v->ranks[rr]->know[ri], v->ranks[sr]->know[si], 0);
            if (u == NULL) {
                return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for rank sets");
            }
            v->ranks[rr]->know[ri] = u;
        }
        if ((status = tc_v_finish(v, r, i, end)) != TC_OK) {
            return status;
        }
        return tc_v_finish(v, q, j, end);
    }
}

static tc_status_t tc_v_execute(tc_verify_t *v, double *t_end)
{
    uint64_t total = 0, done = 0;
    tc_status_t status = TC_OK;
    double tmax = 0;
    char why[700];
    int r;

    for (r = 0; r < v->p; r++) {
        tc_vrank_t *vr = v->ranks[r];
        uint32_t i;

        total += vr->sched.nsteps;
        for (i = 0; i < vr->sched.nsteps && status == TC_OK; i++) {
            if (vr->npend[i] == 0) {
                status = tc_v_push(v, 0.0, r, i);
            }
        }
    }
    while (status == TC_OK && v->nheap > 0) {
        tc_vevent_t e = tc_v_pop(v);
        status = tc_v_run_step(v, e.r, e.i, e.t);
    }
    if (status != TC_OK) {
        return status;
    }
    for (r = 0; r < v->p; r++) {
        tc_vrank_t *vr = v->ranks[r];
        uint32_t i;
        for (i = 0; i < vr->sched.nsteps; i++) {
            if (vr->state[i] == 2) {
                done++;
                if (vr->t[i] > tmax) {
                    tmax = vr->t[i];
                }
            }
        }
    }
    if (done < total) {
        for (r = 0; r < v->p; r++) {
            tc_vrank_t *vr = v->ranks[r];
            uint32_t i;
            for (i = 0; i < vr->sched.nsteps && vr->state[i] == 2; i++) {
            }
            if (i < vr->sched.nsteps) {
                tc_v_explain(v, r, i, why, sizeof(why));
                break;
            }
        }
        return tc_v_fail(v, "deadlock: %llu of %llu steps cannot run; %s",
                         (unsigned long long)(total - done), (unsigned long long)total, why);
    }
    *t_end = tmax;
    return TC_OK;
}

/* ---- 5. the collective's rule ------------------------------------------- */

static int tc_v_is_reduction(tc_coll_t c)
{
    return c == TC_COLL_ALL_REDUCE || c == TC_COLL_REDUCE || c == TC_COLL_REDUCE_SCATTER;
}

/* Sorted block order (v-variants with displacements), for "which block holds x". */
typedef struct tc_vblocks {
    int *order; /* ranks sorted by block offset; NULL: uniform blocks */
} tc_vblocks_t;

typedef struct tc_vboff {
    uint64_t off;
    int q;
} tc_vboff_t;

static int tc_v_boff_cmp(const void *pa, const void *pb)
{
    const tc_vboff_t *a = pa, *b = pb;
    return a->off < b->off ? -1 : a->off > b->off ? 1 : (a->q > b->q) - (a->q < b->q);
}

/* What output position x of rank r must hold: the input element idx of rank
 * src; *end: the end of the run over which both grow by one. src = -1: x is
 * no output (a gap between v-blocks), up to *end. */
static void tc_v_expect(const tc_verify_t *v, const tc_vblocks_t *bl, int r, uint64_t x, int *src,
                        uint64_t *idx, uint64_t *end)
{
    const tc_algo_args_t *a = v->args;
    const tc_algo_layout_t *lay = &v->ranks[r]->lay;
    uint64_t out_end = lay->out_off + lay->out_count;
    int q;

    switch (a->coll) {
    case TC_COLL_BROADCAST:
        *src = a->root;
        *idx = x - lay->out_off;
        *end = out_end;
        return;
    case TC_COLL_SCATTER:
        *src = a->root;
        *idx = tc_algo_block_off(a, r) + (x - lay->out_off);
        *end = out_end;
        return;
    default:
        break;
    }
    /* all_gather, gather, all_to_all: block q of the output */
    if (bl->order == NULL) {
        q = (int)(x / a->count);
    } else {
        size_t lo = 0, hi = (size_t)v->p;
        while (hi - lo > 1) {
            size_t mid = lo + (hi - lo) / 2;
            if (tc_algo_block_off(a, bl->order[mid]) <= x) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        q = bl->order[lo];
        if (tc_algo_block_off(a, q) > x) {
            *src = -1; /* before the first block */
            *end = tc_algo_block_off(a, q);
            return;
        }
        if (tc_algo_block_off(a, q) + tc_algo_block_len(a, q) <= x) {
            *src = -1;
            *end = lo + 1 < (size_t)v->p ? tc_algo_block_off(a, bl->order[lo + 1]) : out_end;
            return;
        }
    }
    *src = q;
    *idx = x - tc_algo_block_off(a, q);
    if (a->coll == TC_COLL_ALL_TO_ALL) {
        *idx += tc_algo_block_off(a, r);
    }
    *end = tc_algo_block_off(a, q) + tc_algo_block_len(a, q);
}

static tc_status_t tc_v_check_rank_output(const tc_verify_t *v, const tc_vblocks_t *bl, int r)
{
    const tc_vrank_t *vr = v->ranks[r];
    const tc_vbuf_t *out = &vr->buf[TC_BUF_RECV];
    const uint64_t lo = vr->lay.out_off, hi = vr->lay.out_off + vr->lay.out_count;
    const int red = tc_v_is_reduction(v->args->coll);
    uint64_t x = lo,
             base = v->args->coll == TC_COLL_REDUCE_SCATTER ? tc_algo_block_off(v->args, r) : 0;
    uint32_t k;

    if (lo >= hi) {
        return TC_OK;
    }
    for (k = tc_vbuf_find(out, lo); k < out->n && x < hi; k++) {
        const tc_vseg_t *sg = &out->seg[k];
        uint64_t send = sg->off + sg->len < hi ? sg->off + sg->len : hi;

        while (x < send) {
            uint64_t d = x - sg->off, aidx = sg->idx + d, eidx = 0, eend = send, len;
            int arank = -1, src = -1;
            const tc_vset_t *set = sg->set;

            if (sg->blk > 0) {
                arank = sg->r0 + (int)(aidx / sg->blk);
                aidx %= sg->blk;
            }
            if (red) {
                eidx = base + (x - lo);
                if (sg->blk == 0 && set == NULL) {
                    return tc_v_fail(v,
                                     "wrong result: rank %d recv[%llu] holds uninitialised data "
                                     "(never written, or reduced with unwritten memory)",
                                     r, (unsigned long long)x);
                }
                if (sg->blk > 0) {
                    if (v->p == 1 && arank == 0 && aidx == eidx) {
                        x = send < x + (sg->blk - aidx) ? send : x + (sg->blk - aidx);
                        continue;
                    }
                    return tc_v_fail(v,
                                     "wrong result: rank %d recv[%llu] holds only rank %d's "
                                     "element %llu",
                                     r, (unsigned long long)x, arank, (unsigned long long)aidx);
                }
                if (set->mixed) {
                    return tc_v_fail(v,
                                     "wrong result: rank %d recv[%llu] mixes contributions of "
                                     "different element indices",
                                     r, (unsigned long long)x);
                }
                if (aidx != eidx) {
                    return tc_v_fail(v,
                                     "wrong result: rank %d recv[%llu] holds contributions to "
                                     "element %llu instead of element %llu",
                                     r, (unsigned long long)x, (unsigned long long)aidx,
                                     (unsigned long long)eidx);
                }
                if (set->dup >= 0) {
                    return tc_v_fail(v,
                                     "wrong result: rank %d recv[%llu] holds the contribution "
                                     "of rank %d more than once",
                                     r, (unsigned long long)x, set->dup);
                }
                if (tc_vset_first_missing(set, v->p) >= 0) {
                    return tc_v_fail(v,
                                     "wrong result: rank %d recv[%llu] is missing the "
                                     "contribution of rank %d (holds %llu of %d ranks)",
                                     r, (unsigned long long)x, tc_vset_first_missing(set, v->p),
                                     (unsigned long long)tc_vset_size(set), v->p);
                }
                x = send;
                continue;
            }
            /* data movement */
            if (sg->blk > 0 && bl->order == NULL && v->args->coll != TC_COLL_ALL_TO_ALL &&
                v->args->coll != TC_COLL_BROADCAST && v->args->coll != TC_COLL_SCATTER &&
                sg->blk == v->args->count && x == (uint64_t)arank * sg->blk + aidx) {
                x = send; /* whole blocks, each in its place */
                continue;
            }
            tc_v_expect(v, bl, r, x, &src, &eidx, &eend);
            if (src < 0) {
                x = eend < send ? eend : send;
                continue;
            }
            if (sg->blk == 0 && set == NULL) {
                return tc_v_fail(v,
                                 "wrong result: rank %d recv[%llu] holds uninitialised data "
                                 "(never written), not rank %d's element %llu",
                                 r, (unsigned long long)x, src, (unsigned long long)eidx);
            }
            if (sg->blk == 0) {
                if (set->n != 1 || set->iv[1] - set->iv[0] != 1 || set->mixed || set->dup >= 0) {
                    return tc_v_fail(v,
                                     "wrong result: rank %d recv[%llu] holds a combination of "
                                     "%llu ranks' data, not rank %d's element %llu",
                                     r, (unsigned long long)x,
                                     (unsigned long long)tc_vset_size(set), src,
                                     (unsigned long long)eidx);
                }
                arank = set->iv[0];
            }
            if (arank != src || aidx != eidx) {
                return tc_v_fail(v,
                                 "wrong result: rank %d recv[%llu] holds rank %d's element "
                                 "%llu instead of rank %d's element %llu",
                                 r, (unsigned long long)x, arank, (unsigned long long)aidx, src,
                                 (unsigned long long)eidx);
            }
            len = (eend < send ? eend : send) - x;
            if (sg->blk > 0 && sg->blk - aidx < len) {
                len = sg->blk - aidx;
            }
            x += len;
        }
    }
    return TC_OK;
}

/* all_to_all_v: rank r's receive block from q holds rank q's send elements
 * of its block to r, in order; gaps between blocks have no rule. */
static tc_status_t tc_v_check_a2av_output(const tc_verify_t *v, int r)
{
    const tc_vbuf_t *out = &v->ranks[r]->buf[TC_BUF_RECV];
    const size_t p = (size_t)v->p;
    int q;

    for (q = 0; q < v->p; q++) {
        const uint64_t c = tc_algo_a2av_count(v->args, q, r);
        const uint64_t ro = v->a2a_roff[(size_t)r * p + (size_t)q];
        const uint64_t so = v->a2a_soff[(size_t)q * p + (size_t)r];
        uint64_t x = ro;
        uint32_t k = c > 0 ? tc_vbuf_find(out, ro) : 0;

        while (x < ro + c) {
            const tc_vseg_t *sg = &out->seg[k];
            const uint64_t seg_end = sg->off + sg->len, end = seg_end < ro + c ? seg_end : ro + c;
            uint64_t aidx = sg->idx + (x - sg->off), eidx = so + (x - ro), run = end - x;
            int arank;

            if (sg->blk > 0) {
                arank = sg->r0 + (int)(aidx / sg->blk);
                aidx %= sg->blk;
                run = run < sg->blk - aidx ? run : sg->blk - aidx;
            } else if (sg->set == NULL) {
                return tc_v_fail(v,
                                 "wrong result: rank %d recv[%llu] holds uninitialised data "
                                 "(never written), not rank %d's element %llu",
                                 r, (unsigned long long)x, q, (unsigned long long)eidx);
            } else if (sg->set->n != 1 || sg->set->iv[1] - sg->set->iv[0] != 1 || sg->set->mixed ||
                       sg->set->dup >= 0) {
                return tc_v_fail(v,
                                 "wrong result: rank %d recv[%llu] holds a combination of "
                                 "%llu ranks' data, not rank %d's element %llu",
                                 r, (unsigned long long)x,
                                 (unsigned long long)tc_vset_size(sg->set), q,
                                 (unsigned long long)eidx);
            } else {
                arank = sg->set->iv[0];
            }
            if (arank != q || aidx != eidx) {
                return tc_v_fail(v,
                                 "wrong result: rank %d recv[%llu] holds rank %d's element "
                                 "%llu instead of rank %d's element %llu",
                                 r, (unsigned long long)x, arank, (unsigned long long)aidx, q,
                                 (unsigned long long)eidx);
            }
            x += run;
            if (x == seg_end) {
                k++;
            }
        }
    }
    return TC_OK;
}

static tc_status_t tc_v_check_result(tc_verify_t *v)
{
    tc_vblocks_t bl = {NULL};
    tc_status_t status = TC_OK;
    int r;

    if (v->args->coll == TC_COLL_BARRIER) {
        for (r = 0; r < v->p; r++) {
            int miss = tc_vset_first_missing(v->ranks[r]->know_all, v->p);
            if (miss >= 0) {
                return tc_v_fail(v,
                                 "wrong result: rank %d can leave the barrier before rank %d "
                                 "has entered it",
                                 r, miss);
            }
        }
        return TC_OK;
    }
    if (v->args->a2a_counts != NULL) {
        for (r = 0; r < v->p && status == TC_OK; r++) {
            status = tc_v_check_a2av_output(v, r);
        }
        return status;
    }
    if (v->args->counts != NULL) {
        tc_vboff_t *srt = malloc((size_t)v->p * sizeof(*srt));
        bl.order = malloc((size_t)v->p * sizeof(int));
        if (bl.order == NULL || srt == NULL) {
            free(srt);
            free(bl.order);
            return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory");
        }
        for (r = 0; r < v->p; r++) {
            srt[r] = (tc_vboff_t){tc_algo_block_off(v->args, r), r};
        }
        qsort(srt, (size_t)v->p, sizeof(*srt), tc_v_boff_cmp);
        for (r = 0; r < v->p; r++) {
            bl.order[r] = srt[r].q;
        }
        free(srt);
    }
    for (r = 0; r < v->p && status == TC_OK; r++) {
        status = tc_v_check_rank_output(v, &bl, r);
    }
    free(bl.order);
    return status;
}

/* all_to_all_v: every rank's offsets (an overflow is the caller's error, so
 * reported before any generator runs), and no rank's receive blocks may
 * overlap (the result would be undefined). O(p^2 log p). */
static tc_status_t tc_v_a2av_prepare(tc_verify_t *v)
{
    const size_t p = (size_t)v->p;
    tc_vboff_t *srt = NULL;
    tc_status_t status = TC_OK;
    size_t n, i;
    int r, q;

    v->a2a_soff = malloc(p * p * sizeof(uint64_t));
    v->a2a_roff = malloc(p * p * sizeof(uint64_t));
    srt = malloc(p * sizeof(*srt));
    if (v->a2a_soff == NULL || v->a2a_roff == NULL || srt == NULL) {
        status = tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for %zu x %zu offsets", p, p);
        goto out;
    }
    for (r = 0; r < v->p && status == TC_OK; r++) {
        status = tc_algo_a2av_offsets(v->args, r, v->a2a_soff + (size_t)r * p,
                                      v->a2a_roff + (size_t)r * p, NULL, NULL);
        for (q = 0, n = 0; q < v->p && status == TC_OK; q++) {
            if (tc_algo_a2av_count(v->args, q, r) > 0) {
                srt[n++] = (tc_vboff_t){v->a2a_roff[(size_t)r * p + (size_t)q], q};
            }
        }
        if (status != TC_OK) {
            break;
        }
        qsort(srt, n, sizeof(*srt), tc_v_boff_cmp);
        for (i = 1; i < n; i++) {
            uint64_t prev_end = srt[i - 1].off + tc_algo_a2av_count(v->args, srt[i - 1].q, r);
            if (prev_end > srt[i].off) {
                status = tc_error_set(
                    TC_ERR_INVALID_ARG,
                    "all_to_all_v: rank %d's receive blocks from rank %d [%llu, %llu) and from "
                    "rank %d (at %llu) overlap",
                    r, srt[i - 1].q, (unsigned long long)srt[i - 1].off,
                    (unsigned long long)prev_end, srt[i].q, (unsigned long long)srt[i].off);
                break;
            }
        }
    }
out:
    free(srt);
    return status;
}

/* ---- driver ---------------------------------------------------------------- */

static tc_status_t tc_v_build_rank(tc_verify_t *v, tc_algo_gen_fn gen, int r, int sampled)
{
    tc_vrank_t *vr;
    tc_algo_args_t a = *v->args;
    tc_sched_t *s;
    tc_status_t status;

    if (v->ranks[r] != NULL) {
        v->ranks[r]->sampled |= sampled;
        return TC_OK;
    }
    vr = calloc(1, sizeof(*vr));
    if (vr == NULL) {
        return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for rank %d", r);
    }
    v->ranks[r] = vr;
    v->built[v->nbuilt++] = r;
    vr->rank = r;
    vr->sampled = sampled;
    s = &vr->sched;
    a.rank = r;
    tc_sched_init(s, &a, v->name);
    status = gen(&a, s);
    if (status != TC_OK) {
        tc_error_prefix("verify %s %s: generator failed for rank %d of %d: ", tc_coll_name(a.coll),
                        v->name, r, v->p);
        return status;
    }
    if (s->coll != a.coll || s->nranks != a.nranks || s->rank != r || s->count != a.count ||
        s->in_place != a.in_place || (s->nsteps > 0 && s->steps == NULL) || s->nsteps > s->cap) {
        return tc_v_fail(v,
                         "rank %d's schedule header disagrees with its arguments "
                         "(coll %d, nranks %d, rank %d, count %llu, in_place %d, %u/%u steps)",
                         r, (int)s->coll, s->nranks, s->rank, (unsigned long long)s->count,
                         s->in_place, s->nsteps, s->cap);
    }
    if ((status = tc_algo_layout(&a, &vr->lay)) != TC_OK) {
        return status;
    }
    vr->size[TC_BUF_SEND] = vr->lay.buf_count[0];
    vr->size[TC_BUF_RECV] = vr->lay.buf_count[1];
    vr->size[TC_BUF_SCRATCH] = s->scratch_count;
    vr->match = malloc(((size_t)s->nsteps + 1) * sizeof(uint32_t));
    vr->ordinal = malloc(((size_t)s->nsteps + 1) * sizeof(uint32_t));
    if (vr->match == NULL || vr->ordinal == NULL) {
        return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for %u steps of rank %d",
                            s->nsteps, r);
    }
    return TC_OK;
}

/* Execution state and symbolic buffers (full mode). */
static tc_status_t tc_v_prepare_exec(tc_verify_t *v, int r)
{
    tc_vrank_t *vr = v->ranks[r];
    const tc_sched_t *s = &vr->sched;
    const size_t n = (size_t)s->nsteps + 1;
    const tc_coll_t c = v->args->coll;
    tc_status_t status;
    uint32_t i, *fill;
    int b, k;

    vr->state = calloc(n, 1);
    vr->npend = calloc(n, 1);
    vr->dstart = calloc(n + 1, sizeof(uint32_t));
    vr->dlist = malloc(2 * n * sizeof(uint32_t));
    vr->t = calloc(n, sizeof(double));
    if (vr->state == NULL || vr->npend == NULL || vr->dstart == NULL || vr->dlist == NULL ||
        vr->t == NULL) {
        return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for %u steps of rank %d",
                            s->nsteps, r);
    }
    for (i = 0; i < s->nsteps; i++) {
        for (k = 0; k < 2; k++) {
            uint32_t d = s->steps[i].dep[k];
            if (d != TC_STEP_NO_DEP && (k == 0 || d != s->steps[i].dep[0])) {
                vr->npend[i]++;
                vr->dstart[d + 1]++;
            }
        }
    }
    for (i = 0; i < s->nsteps; i++) {
        vr->dstart[i + 1] += vr->dstart[i];
    }
    fill = vr->state == NULL ? NULL : malloc(n * sizeof(uint32_t));
    if (fill == NULL) {
        return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory");
    }
    memcpy(fill, vr->dstart, n * sizeof(uint32_t));
    for (i = 0; i < s->nsteps; i++) {
        for (k = 0; k < 2; k++) {
            uint32_t d = s->steps[i].dep[k];
            if (d != TC_STEP_NO_DEP && (k == 0 || d != s->steps[i].dep[0])) {
                vr->dlist[fill[d]++] = i;
            }
        }
    }
    free(fill);
    for (b = 0; b < 3; b++) {
        if ((status = tc_vbuf_init(&vr->buf[b], vr->size[b])) != TC_OK) {
            return status;
        }
    }
    if (vr->lay.in_count > 0) {
        tc_vbuf_t *in = &vr->buf[vr->lay.in_buf];
        if ((c == TC_COLL_ALL_GATHER || c == TC_COLL_GATHER) && v->args->counts == NULL) {
            status = tc_vbuf_fill_block(in, vr->lay.in_off, vr->lay.in_count, r);
        } else {
            const tc_vset_t *me = tc_vset_single(&v->arena, r);
            status = me == NULL ? tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory")
                                : tc_vbuf_fill(in, vr->lay.in_off, vr->lay.in_count, 0, me);
        }
        if (status != TC_OK) {
            return status;
        }
    }
    if (c == TC_COLL_BARRIER) {
        const tc_vset_t *me = tc_vset_single(&v->arena, r);
        /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
        vr->know = malloc(n * sizeof(*vr->know));
        if (vr->know == NULL || me == NULL) {
            return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory");
        }
        for (i = 0; i < n; i++) {
            vr->know[i] = me;
        }
        vr->know_all = me;
    }
    return TC_OK;
}

static void tc_v_count(tc_vrank_t *vr)
{
    const tc_sched_t *s = &vr->sched;
    uint32_t i;

    for (i = 0; i < s->nsteps; i++) {
        const tc_step_t *st = &s->steps[i];
        if (st->kind == TC_STEP_SEND) {
            vr->send_msgs++;
            vr->send_elems += st->count;
        } else if (st->kind == TC_STEP_RECV || st->kind == TC_STEP_RECV_REDUCE) {
            vr->recv_elems += st->count;
        }
        if (st->kind == TC_STEP_RECV_REDUCE || st->kind == TC_STEP_REDUCE) {
            vr->red_elems += st->count;
        }
    }
}

static uint64_t tc_v_splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static tc_status_t tc_v_build_all(tc_verify_t *v, tc_algo_gen_fn gen)
{
    uint64_t seed = v->opts->seed;
    tc_status_t status = TC_OK;
    int r, k, nsampled;

    if (v->opts->mode == TC_ALGO_VERIFY_FULL) {
        for (r = 0; r < v->p && status == TC_OK; r++) {
            status = tc_v_build_rank(v, gen, r, 1);
        }
        return status;
    }
    {
        int want = v->opts->nsample > 0 ? v->opts->nsample : 8;
        status = tc_v_build_rank(v, gen, 0, 1);
        if (status == TC_OK) {
            status = tc_v_build_rank(v, gen, v->p - 1, 1);
        }
        if (status == TC_OK && v->args->root >= 0) {
            status = tc_v_build_rank(v, gen, v->args->root, 1);
        }
        for (k = 0; k < want && status == TC_OK; k++) {
            status = tc_v_build_rank(v, gen, (int)(tc_v_splitmix(&seed) % (uint64_t)v->p), 1);
        }
    }
    /* The peers of every sampled rank, at most TC_V_MAX_PEERS per sampled
     * rank (all-to-all talks to everyone): a random subset beyond that, whose
     * messages with the sampled rank are matched; the rest are not. */
    nsampled = v->nbuilt;
    for (k = 0; k < nsampled && status == TC_OK; k++) {
        const tc_sched_t *s = &v->ranks[v->built[k]]->sched;
        uint32_t i, start = 0, added = 0;
        if (s->nsteps > 0) {
            start = (uint32_t)(tc_v_splitmix(&seed) % s->nsteps);
        }
        for (i = 0; i < s->nsteps && status == TC_OK && added < TC_V_MAX_PEERS; i++) {
            const tc_step_t *st = &s->steps[(start + i) % s->nsteps];
            if (tc_v_is_comm(st->kind) && st->peer >= 0 && st->peer < v->p &&
                v->ranks[st->peer] == NULL) {
                status = tc_v_build_rank(v, gen, st->peer, 0);
                added++;
            }
        }
    }
    return status;
}

static tc_status_t tc_v_check_cost(tc_verify_t *v, const tc_algo_desc_t *desc,
                                   tc_algo_verify_report_t *rep)
{
    int b, busiest_m = -1, busiest_e = -1;
    uint64_t mm = 0, me = 0;

    for (b = 0; b < v->nbuilt; b++) {
        const tc_vrank_t *vr = v->ranks[v->built[b]];
        if (!vr->sampled) {
            continue;
        }
        rep->ranks_checked++;
        rep->total_steps += vr->sched.nsteps;
        if (vr->sched.nsteps > rep->max_steps) {
            rep->max_steps = vr->sched.nsteps;
        }
        if (busiest_m < 0 || vr->send_msgs > mm) {
            mm = vr->send_msgs;
            busiest_m = vr->rank;
        }
        if (busiest_e < 0 || vr->send_elems > me) {
            me = vr->send_elems;
            busiest_e = vr->rank;
        }
        if (vr->recv_elems > rep->max_recv_elems) {
            rep->max_recv_elems = vr->recv_elems;
        }
        if (vr->red_elems > rep->max_red_elems) {
            rep->max_red_elems = vr->red_elems;
        }
    }
    rep->max_send_msgs = mm;
    rep->max_send_elems = me;
    if (desc == NULL || desc->cost == NULL) {
        return TC_OK;
    }
    desc->cost(v->args, &rep->formula);
    if (v->opts->skip_cost_check) {
        return TC_OK;
    }
    if (mm > rep->formula.max_send_msgs ||
        (v->opts->mode == TC_ALGO_VERIFY_FULL && mm != rep->formula.max_send_msgs)) {
        return tc_v_fail(
            v, "cost: the busiest rank (%d) sends %llu messages, the formula says %llu", busiest_m,
            (unsigned long long)mm, (unsigned long long)rep->formula.max_send_msgs);
    }
    if (me > rep->formula.max_send_elems ||
        (v->opts->mode == TC_ALGO_VERIFY_FULL && me != rep->formula.max_send_elems)) {
        return tc_v_fail(
            v, "cost: the busiest rank (%d) sends %llu elements, the formula says %llu", busiest_e,
            (unsigned long long)me, (unsigned long long)rep->formula.max_send_elems);
    }
    return TC_OK;
}

/* Sampled mode: the sampled ranks' output elements traced back (verify_flow.c). */
static tc_status_t tc_v_flow(tc_verify_t *v, tc_algo_gen_fn gen, const tc_algo_verify_opts_t *opts,
                             tc_algo_verify_report_t *rep)
{
    tc_vflow_in_t in;
    tc_status_t status;
    int *sampled = malloc(((size_t)v->nbuilt + 1) * sizeof(int)), b, n = 0;

    if (sampled == NULL) {
        return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory");
    }
    for (b = 0; b < v->nbuilt; b++) {
        if (v->ranks[v->built[b]]->sampled) {
            sampled[n++] = v->built[b];
        }
    }
    memset(&in, 0, sizeof(in));
    in.args = v->args;
    in.gen = gen;
    in.name = v->name;
    in.sampled = sampled;
    in.nsampled = n;
    in.elems = opts->flow_elems > 0 ? opts->flow_elems : 8;
    in.seed = opts->seed;
    in.budget = opts->flow_budget > 0 ? opts->flow_budget : (1ull << 24);
    in.symmetry = opts->flow_symmetry;
    in.a2a_soff = v->a2a_soff;
    in.a2a_roff = v->a2a_roff;
    status = tc_vflow_run(&in, rep);
    free(sampled);
    return status;
}

static void tc_v_free_rank(tc_vrank_t *vr)
{
    int b;

    if (vr == NULL) {
        return;
    }
    for (b = 2; b >= 0; b--) {
        tc_vbuf_free(&vr->buf[b]);
    }
    free(vr->know);
    free(vr->comm);
    free(vr->t);
    free(vr->dlist);
    free(vr->dstart);
    free(vr->npend);
    free(vr->state);
    free(vr->ordinal);
    free(vr->match);
    tc_sched_free(&vr->sched);
    free(vr);
}

static tc_status_t tc_algo_verify_core(const tc_algo_args_t *args, tc_algo_gen_fn gen,
                                       const char *name, const tc_algo_desc_t *desc,
                                       const tc_algo_verify_opts_t *opts,
                                       tc_algo_verify_report_t *report)
{
    tc_verify_t v;
    tc_algo_verify_report_t rep;
    tc_status_t status;
    double t_end = 0;
    int b;

    memset(&v, 0, sizeof(v));
    memset(&rep, 0, sizeof(rep));
    v.args = args;
    v.name = name;
    v.opts = opts;
    v.esize = opts->elem_size > 0 ? opts->elem_size : 1;
    status = tc_algo_args_check(args, "tc_algo_verify");
    if (status == TC_OK && opts->mode != TC_ALGO_VERIFY_FULL &&
        opts->mode != TC_ALGO_VERIFY_SAMPLE) {
        status =
            tc_error_set(TC_ERR_INVALID_ARG, "tc_algo_verify: unknown mode %d", (int)opts->mode);
    }
    if (status == TC_OK) {
        status = tc_algo_model_get(&v.model);
    }
    if (status != TC_OK) {
        return status;
    }
    v.p = args->nranks;
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
    v.ranks = calloc((size_t)v.p, sizeof(*v.ranks));
    v.built = calloc((size_t)v.p, sizeof(*v.built));
    if (v.ranks == NULL || v.built == NULL) {
        status = tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for %d ranks", v.p);
        goto out;
    }
    if (args->a2a_counts != NULL && (status = tc_v_a2av_prepare(&v)) != TC_OK) {
        goto out;
    }
    status = tc_v_build_all(&v, gen);
    for (b = 0; b < v.nbuilt && status == TC_OK; b++) {
        status = tc_v_check_steps(&v, v.built[b]);
    }
    if (status == TC_OK) {
        status = tc_v_match(&v);
    }
    for (b = 0; b < v.nbuilt && status == TC_OK; b++) {
        if (v.ranks[v.built[b]]->sampled) {
            status = tc_v_check_races(&v, v.built[b]);
        }
    }
    for (b = 0; b < v.nbuilt && status == TC_OK; b++) {
        tc_v_count(v.ranks[v.built[b]]);
    }
    if (status == TC_OK && opts->mode == TC_ALGO_VERIFY_FULL) {
        for (b = 0; b < v.nbuilt && status == TC_OK; b++) {
            status = tc_v_prepare_exec(&v, v.built[b]);
        }
        if (status == TC_OK) {
            status = tc_v_execute(&v, &t_end);
        }
        if (status == TC_OK) {
            status = tc_v_check_result(&v);
        }
        rep.executed = status == TC_OK;
        rep.model_time_s = t_end;
    }
    if (status == TC_OK) {
        status = tc_v_check_cost(&v, desc, &rep);
    }
    if (status == TC_OK && opts->mode == TC_ALGO_VERIFY_SAMPLE && opts->flow_elems >= 0) {
        status = tc_v_flow(&v, gen, opts, &rep);
    }
    if (report != NULL && (status == TC_OK || status == TC_ERR_INTERNAL)) {
        *report = rep;
    }
out:
    if (v.ranks != NULL && v.built != NULL) {
        for (b = v.nbuilt - 1; b >= 0; b--) {
            tc_v_free_rank(v.ranks[v.built[b]]);
        }
    }
    free(v.a2a_roff);
    free(v.a2a_soff);
    free(v.stack);
    free(v.stamp);
    free(v.heap);
    tc_varena_free(&v.arena);
    free(v.built);
    free(v.ranks);
    return status;
}

tc_status_t tc_algo_verify_ex(const tc_algo_args_t *args, const char *algo, tc_algo_gen_fn gen,
                              const tc_algo_verify_opts_t *opts, tc_algo_verify_report_t *report)
{
    const tc_algo_verify_opts_t defaults = {TC_ALGO_VERIFY_FULL, 0, 0, 0, 0, 0, 0, 0};
    const tc_algo_desc_t *desc = NULL;
    tc_status_t status;

    status = tc_algo_args_check(args, "tc_algo_verify");
    if (status != TC_OK) {
        return status;
    }
    if (opts == NULL) {
        opts = &defaults;
    }
    if (gen != NULL) {
        return tc_algo_verify_core(args, gen, algo != NULL ? algo : "(custom)", NULL, opts, report);
    }
    status = tc_algo_find(args->coll, algo, &desc);
    if (status != TC_OK) {
        return status;
    }
    return tc_algo_verify_core(args, desc->gen, desc->name, desc, opts, report);
}

tc_status_t tc_algo_verify(const tc_algo_args_t *args, const char *algo)
{
    return tc_algo_verify_ex(args, algo, NULL, NULL, NULL);
}

tc_status_t tc_algo_verify_with(const tc_algo_args_t *args, tc_algo_gen_fn gen)
{
    if (gen == NULL) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_algo_verify_with: gen is NULL");
    }
    return tc_algo_verify_ex(args, NULL, gen, NULL, NULL);
}
