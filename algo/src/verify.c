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
 *
 * Files: this one builds the ranks and checks 1, 2 and 6; verify_race.c checks 3,
 * verify_exec.c runs 4, verify_result.c checks 5; their shared state is verify_state.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo_internal.h"
#include "verify_internal.h"
#include "verify_state.h"

int tc_v_writes_dst(unsigned kind)
{
    return kind != TC_STEP_SEND;
}

void tc_v_describe(const tc_step_t *st, char *out, size_t len)
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
    case TC_STEP_RECV_REDUCE_SRC:
        snprintf(out, len, "recv-reduce %llu elements from rank %d with %s[%llu] into %s[%llu]", n,
                 (int)st->peer, tc_v_bufname(st->buf), off, tc_v_bufname(st->dst_buf), doff);
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

tc_status_t tc_v_fail(const tc_verify_t *v, const char *fmt, ...)
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
unsigned tc_v_resolve(const tc_verify_t *v, unsigned b)
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
    if (tc_v_src_overlaps(v, st)) {
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

        if (st->kind > TC_STEP_KIND_LAST) {
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
        if (tc_v_src_overlaps(v, st)) {
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
        } else if (tc_v_is_comm(st->kind)) {
            vr->recv_elems += st->count;
        }
        if (st->kind == TC_STEP_RECV_REDUCE || st->kind == TC_STEP_REDUCE ||
            st->kind == TC_STEP_RECV_REDUCE_SRC) {
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
    if ((args->a2a_counts != NULL && (status = tc_v_a2av_prepare(&v)) != TC_OK) ||
        (status = tc_algo_blocks_check(args)) != TC_OK) {
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
