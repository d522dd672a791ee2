/*
 * The flow trace of sampled verification: proves what sampled output
 * elements of the sampled ranks hold, without executing every rank. (The
 * cache of built ranks it reads is verify_flow_rank.c; the state, verify_flow.h.)
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
#include "verify_flow.h"
#include "verify_internal.h"

tc_status_t tc_f_fail(const tc_flow_t *f, const char *fmt, ...)
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

unsigned tc_f_resolve(const tc_flow_t *f, unsigned b)
{
    return (f->a->in_place && b == TC_BUF_SEND) ? TC_BUF_RECV : b;
}

/* ---- ordering of the reads the trace relies on ------------------------------ */

/* Whether step a (< b) is a transitive dependency of step b. */
int tc_f_before(tc_flow_t *f, const tc_sched_t *s, uint32_t a, uint32_t b)
{
    return tc_v_reaches(s, a, b, f->stamp, &f->stamp_gen, f->stamp_cap, f->stack);
}

static tc_status_t tc_f_race(const tc_flow_t *f, const tc_frank_t *fr, uint32_t x, uint32_t y,
                             unsigned b, uint64_t e)
{
    return tc_f_fail(f,
                     "race: rank %d steps %u and %u both touch %s[%llu], one writing, but "
                     "step %u does not depend on step %u",
                     fr->rank, x, y, tc_v_bufname(b), (unsigned long long)e, y, x);
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
            if (st->kind != TC_STEP_SEND && tc_f_resolve(f, st->dst_buf) == b && st->dst_off <= y &&
                y - st->dst_off < st->count) {
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
    const int red = tc_v_is_reduction(f->a->coll);
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
                                 r, (unsigned long long)x, q.r, tc_v_bufname(b),
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
        } else if (st.kind == TC_STEP_RECV_REDUCE_SRC) { /* the local operand */
            const unsigned lb = tc_f_resolve(f, st.buf);
            status = tc_f_push(f, q.r, lb, tc_f_out(f, lb, st.off + k, rot), w);
            if (status != TC_OK) {
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
