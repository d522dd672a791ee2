/*
 * The verifier: builds every rank's schedule and executes all of them
 * symbolically (see verify_internal.h for what an element holds).
 *
 * Checks, in order, each reported with the first offending step:
 *  1. every step is well formed: known kind and buffers, a peer that is
 *     another rank, dependencies on earlier steps, ranges inside their
 *     buffers, no write to the caller's send buffer (out of place), no local
 *     copy/reduce between overlapping ranges;
 *  2. every send has its receive and every receive its send (k-th send from
 *     r to q <-> k-th receive of q from r), with equal counts;
 *  3. no race: two steps of one rank that touch overlapping elements, one of
 *     them writing, must be ordered by (transitive) dependencies, since the
 *     executor runs every step whose dependencies are done;
 *  4. execution: a local step runs when its dependencies are done; a send and
 *     its receive run together once both have their dependencies done (the
 *     strictest, rendezvous, transport). No progress while steps remain is a
 *     deadlock, explained by following what the first stuck step waits for;
 *  5. the result: the collective's rule on every rank's output.
 * Cost: the race check is O(steps^2) per rank; the execution scans pending
 * steps in rounds. Fine for the few thousand steps per rank of tests.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo_internal.h"
#include "verify_internal.h"

#define TC_V_NOSTEP UINT32_MAX

typedef struct tc_vrank {
    tc_sched_t sched;
    tc_algo_vbuf_t buf[3]; /* indexed by tc_buf_t; buf[SEND] unused in place */
    uint64_t size[3];      /* elements of each buffer */
    uint8_t *done;         /* per step */
    uint32_t *match;       /* per communication step: the matching step on its peer */
    uint32_t *ordinal;     /* per communication step: its message number on the pair */
} tc_vrank_t;

typedef struct tc_verify {
    const tc_algo_args_t *args;
    const char *name;
    int p;
    int words;
    tc_vrank_t *ranks;
} tc_verify_t;

/* A communication entry of one rank, sorted by (peer, direction, step). */
typedef struct tc_vcomm {
    int32_t peer;
    uint32_t dir; /* 0: send, 1: receive */
    uint32_t step;
} tc_vcomm_t;

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

static int tc_v_reads_dst(unsigned kind)
{
    return kind == TC_STEP_RECV_REDUCE || kind == TC_STEP_REDUCE;
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
    const tc_vrank_t *vr = &v->ranks[r];
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

static tc_status_t tc_v_check_steps(const tc_verify_t *v, int r)
{
    const tc_sched_t *s = &v->ranks[r].sched;
    tc_status_t status;
    char d[200];
    uint32_t i;
    int k;

    for (i = 0; i < s->nsteps; i++) {
        const tc_step_t *st = &s->steps[i];

        if (st->kind > TC_STEP_REDUCE) {
            return tc_v_fail(v, "rank %d step %u has unknown kind %u", r, i, (unsigned)st->kind);
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
            if (!v->args->in_place && st->dst_buf == TC_BUF_SEND && st->count > 0) {
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

static int tc_v_comm_cmp(const void *pa, const void *pb)
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
    size_t lo = 0, hi = n, end;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c[mid].peer < peer || (c[mid].peer == peer && c[mid].dir < dir)) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    end = lo;
    while (end < n && c[end].peer == peer && c[end].dir == dir) {
        end++;
    }
    *len_p = end - lo;
    return lo;
}

static tc_status_t tc_v_match(tc_verify_t *v)
{
    tc_vcomm_t **comm = NULL;
    size_t *ncomm = NULL, k, start = 0, len;
    tc_status_t status = TC_OK;
    char d[200], d2[200];
    uint32_t i;
    int r;

    comm = calloc((size_t)v->p, sizeof(*comm));
    ncomm = calloc((size_t)v->p, sizeof(*ncomm));
    if (comm == NULL || ncomm == NULL) {
        status = tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for message tables");
        goto out;
    }
    for (r = 0; r < v->p; r++) {
        const tc_sched_t *s = &v->ranks[r].sched;

        comm[r] = malloc(((size_t)s->nsteps + 1) * sizeof(**comm));
        if (comm[r] == NULL) {
            status = tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for message tables");
            goto out;
        }
        for (i = 0; i < s->nsteps; i++) {
            if (tc_v_is_comm(s->steps[i].kind)) {
                comm[r][ncomm[r]].peer = s->steps[i].peer;
                comm[r][ncomm[r]].dir = s->steps[i].kind == TC_STEP_SEND ? 0 : 1;
                comm[r][ncomm[r]].step = i;
                ncomm[r]++;
            }
        }
        qsort(comm[r], ncomm[r], sizeof(**comm), tc_v_comm_cmp);
        for (k = 0; k < ncomm[r]; k++) {
            start = (k > 0 && comm[r][k - 1].peer == comm[r][k].peer &&
                     comm[r][k - 1].dir == comm[r][k].dir)
                        ? start
                        : k;
            v->ranks[r].ordinal[comm[r][k].step] = (uint32_t)(k - start);
        }
    }
    for (r = 0; r < v->p; r++) {
        const tc_sched_t *s = &v->ranks[r].sched;

        for (k = 0; k < ncomm[r]; k++) {
            const tc_vcomm_t *e = &comm[r][k];
            const tc_step_t *st = &s->steps[e->step];
            uint32_t ord = v->ranks[r].ordinal[e->step];
            int q = e->peer;
            const tc_step_t *other;

            start = tc_v_group(comm[q], ncomm[q], r, 1 - e->dir, &len);
            tc_v_describe(st, d, sizeof(d));
            if (ord >= len) {
                status = tc_v_fail(v,
                                   e->dir == 0 ? "unmatched send: rank %d step %u (%s) is message "
                                                 "%u from rank %d to rank %d, but rank %d "
                                                 "posts only %zu receives from rank %d"
                                               : "unmatched receive: rank %d step %u (%s) is "
                                                 "message %u to rank %d from rank %d, but rank "
                                                 "%d sends only %zu messages to rank %d",
                                   r, e->step, d, ord + 1, r, q, q, len, r);
                goto out;
            }
            v->ranks[r].match[e->step] = comm[q][start + ord].step;
            other = &v->ranks[q].sched.steps[comm[q][start + ord].step];
            if (other->count != st->count) {
                tc_v_describe(other, d2, sizeof(d2));
                status = tc_v_fail(v,
                                   "size mismatch: message %u between ranks %d and %d: rank %d "
                                   "step %u (%s) but rank %d step %u (%s)",
                                   ord + 1, r, q, r, e->step, d, q, comm[q][start + ord].step, d2);
                goto out;
            }
        }
    }
out:
    if (comm != NULL) {
        for (r = 0; r < v->p; r++) {
            free(comm[r]);
        }
    }
    free(ncomm);
    free(comm);
    return status;
}

/* ---- 3. races -------------------------------------------------------------- */

typedef struct tc_vregion {
    unsigned buf;
    uint64_t off, count;
} tc_vregion_t;

static int tc_v_overlap(const tc_vregion_t *a, const tc_vregion_t *b)
{
    return a->count > 0 && b->count > 0 && a->buf == b->buf && a->off < b->off + b->count &&
           b->off < a->off + a->count;
}

/* Reads (up to 2) and the write (0 or 1) of a step. */
static void tc_v_regions(const tc_verify_t *v, const tc_step_t *st, tc_vregion_t *rd, int *nrd,
                         tc_vregion_t *wr, int *nwr)
{
    tc_vregion_t src = {tc_v_resolve(v, st->buf), st->off, st->count};
    tc_vregion_t dst = {tc_v_resolve(v, st->dst_buf), st->dst_off, st->count};

    *nrd = 0;
    *nwr = 0;
    if (tc_v_reads_src(st->kind)) {
        rd[(*nrd)++] = src;
    }
    if (tc_v_reads_dst(st->kind)) {
        rd[(*nrd)++] = dst;
    }
    if (tc_v_writes_dst(st->kind)) {
        wr[(*nwr)++] = dst;
    }
}

/* Whether steps a and b conflict; *where receives the contested region. */
static int tc_v_conflict(const tc_verify_t *v, const tc_step_t *a, const tc_step_t *b,
                         tc_vregion_t *where)
{
    tc_vregion_t ra[2], wa[1], rb[2], wb[1];
    int nra, nwa, nrb, nwb, k;

    tc_v_regions(v, a, ra, &nra, wa, &nwa);
    tc_v_regions(v, b, rb, &nrb, wb, &nwb);
    if (nwa && nwb && tc_v_overlap(&wa[0], &wb[0])) {
        *where = wa[0];
        return 1;
    }
    for (k = 0; nwa && k < nrb; k++) {
        if (tc_v_overlap(&wa[0], &rb[k])) {
            *where = wa[0];
            return 1;
        }
    }
    for (k = 0; nwb && k < nra; k++) {
        if (tc_v_overlap(&wb[0], &ra[k])) {
            *where = wb[0];
            return 1;
        }
    }
    return 0;
}

static tc_status_t tc_v_check_races(const tc_verify_t *v, int r)
{
    const tc_sched_t *s = &v->ranks[r].sched;
    const size_t w = ((size_t)s->nsteps + 63) / 64;
    tc_status_t status = TC_OK;
    uint64_t *anc; /* row j: the steps step j transitively depends on */
    char d1[200], d2[200];
    tc_vregion_t where;
    uint32_t i, j;
    size_t k;
    int q;

    if (s->nsteps < 2) {
        return TC_OK;
    }
    anc = calloc((size_t)s->nsteps * w, sizeof(uint64_t));
    if (anc == NULL) {
        return tc_error_set(TC_ERR_NO_MEMORY,
                            "verifier: no memory for the dependencies of %u "
                            "steps",
                            s->nsteps);
    }
    for (j = 0; j < s->nsteps; j++) {
        uint64_t *row = anc + (size_t)j * w;

        for (q = 0; q < 2; q++) {
            uint32_t dep = s->steps[j].dep[q];
            if (dep == TC_STEP_NO_DEP) {
                continue;
            }
            for (k = 0; k < w; k++) {
                row[k] |= anc[(size_t)dep * w + k];
            }
            row[dep / 64] |= 1ull << (dep % 64);
        }
    }
    for (j = 1; j < s->nsteps && status == TC_OK; j++) {
        const uint64_t *row = anc + (size_t)j * w;

        for (i = 0; i < j; i++) {
            if ((row[i / 64] >> (i % 64)) & 1) {
                continue;
            }
            if (tc_v_conflict(v, &s->steps[i], &s->steps[j], &where)) {
                tc_v_describe(&s->steps[i], d1, sizeof(d1));
                tc_v_describe(&s->steps[j], d2, sizeof(d2));
                status = tc_v_fail(v,
                                   "race: rank %d steps %u (%s) and %u (%s) touch %s[%llu, %llu), "
                                   "one writing, but step %u does not depend on step %u",
                                   r, i, d1, j, d2, tc_v_bufname(where.buf),
                                   (unsigned long long)where.off,
                                   (unsigned long long)(where.off + where.count), j, i);
                break;
            }
        }
    }
    free(anc);
    return status;
}

/* ---- 4. execution ---------------------------------------------------------- */

static int tc_v_deps_done(const tc_vrank_t *vr, uint32_t i)
{
    const tc_step_t *st = &vr->sched.steps[i];

    return (st->dep[0] == TC_STEP_NO_DEP || vr->done[st->dep[0]]) &&
           (st->dep[1] == TC_STEP_NO_DEP || vr->done[st->dep[1]]);
}

static tc_algo_vbuf_t *tc_v_buf(tc_verify_t *v, int r, unsigned b)
{
    return &v->ranks[r].buf[tc_v_resolve(v, b)];
}

/* Append to out what (r, i) waits for, following the chain a few hops. */
static void tc_v_explain(const tc_verify_t *v, int r, uint32_t i, char *out, size_t len)
{
    int seen_r[8];
    uint32_t seen_i[8];
    int hops = 0, h, k;
    size_t pos;
    char d[200];

    tc_v_describe(&v->ranks[r].sched.steps[i], d, sizeof(d));
    pos = (size_t)snprintf(out, len, "rank %d step %u (%s)", r, i, d);
    while (hops < 8 && pos < len) {
        const tc_vrank_t *vr = &v->ranks[r];
        const tc_step_t *st = &vr->sched.steps[i];
        int nr = -1;
        uint32_t ni = 0;
        const char *how = "";

        seen_r[hops] = r;
        seen_i[hops] = i;
        hops++;
        for (k = 0; k < 2 && nr < 0; k++) {
            if (st->dep[k] != TC_STEP_NO_DEP && !vr->done[st->dep[k]]) {
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
        tc_v_describe(&v->ranks[nr].sched.steps[ni], d, sizeof(d));
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

static tc_status_t tc_v_execute(tc_verify_t *v)
{
    uint64_t total = 0, remaining = 0;
    uint32_t *first;
    int progress = 1, r;
    char why[700];

    first = calloc((size_t)v->p, sizeof(*first));
    if (first == NULL) {
        return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory");
    }
    for (r = 0; r < v->p; r++) {
        total += v->ranks[r].sched.nsteps;
    }
    remaining = total;
    while (remaining > 0 && progress) {
        progress = 0;
        for (r = 0; r < v->p; r++) {
            tc_vrank_t *vr = &v->ranks[r];
            uint32_t i;

            for (i = first[r]; i < vr->sched.nsteps; i++) {
                const tc_step_t *st = &vr->sched.steps[i];

                if (vr->done[i] || !tc_v_deps_done(vr, i)) {
                    continue;
                }
                if (st->kind == TC_STEP_COPY || st->kind == TC_STEP_REDUCE) {
                    tc_algo_vbuf_move(tc_v_buf(v, r, st->dst_buf), st->dst_off,
                                      tc_v_buf(v, r, st->buf), st->off, st->count, v->words,
                                      st->kind == TC_STEP_REDUCE);
                    vr->done[i] = 1;
                    remaining--;
                } else {
                    int q = st->peer;
                    uint32_t j = vr->match[i];
                    tc_vrank_t *vq = &v->ranks[q];
                    const tc_step_t *snd = st, *rcv = &vq->sched.steps[j];
                    int sr = r, rr = q;

                    if (!tc_v_deps_done(vq, j)) {
                        continue;
                    }
                    if (st->kind != TC_STEP_SEND) {
                        snd = rcv;
                        rcv = st;
                        sr = q;
                        rr = r;
                    }
                    tc_algo_vbuf_move(tc_v_buf(v, rr, rcv->dst_buf), rcv->dst_off,
                                      tc_v_buf(v, sr, snd->buf), snd->off, snd->count, v->words,
                                      rcv->kind == TC_STEP_RECV_REDUCE);
                    vr->done[i] = 1;
                    vq->done[j] = 1;
                    remaining -= 2;
                }
                progress = 1;
            }
            while (first[r] < vr->sched.nsteps && vr->done[first[r]]) {
                first[r]++;
            }
        }
    }
    if (remaining > 0) {
        for (r = 0; r < v->p && first[r] == v->ranks[r].sched.nsteps; r++) {
        }
        tc_v_explain(v, r, first[r], why, sizeof(why));
        free(first);
        return tc_v_fail(v, "deadlock: %llu of %llu steps cannot run; %s",
                         (unsigned long long)remaining, (unsigned long long)total, why);
    }
    free(first);
    return TC_OK;
}

/* ---- 5. the collective's rule ------------------------------------------- */

static int tc_v_supported(tc_coll_t coll)
{
    return coll == TC_COLL_ALL_REDUCE;
}

/* Elements of the send and receive buffers of every rank. */
static void tc_v_sizes(const tc_algo_args_t *args, uint64_t *send_n, uint64_t *recv_n)
{
    /* all_reduce: count in, count out. */
    *send_n = args->count;
    *recv_n = args->count;
}

static tc_status_t tc_v_check_result(const tc_verify_t *v)
{
    char why[300];
    uint64_t e;
    int r;

    for (r = 0; r < v->p; r++) {
        const tc_algo_vbuf_t *out = &v->ranks[r].buf[TC_BUF_RECV];

        for (e = 0; e < v->args->count; e++) {
            if (!tc_algo_vbuf_is_full_reduction(out, e, e, v->p, v->words, why, sizeof(why))) {
                return tc_v_fail(v, "wrong result: rank %d recv[%llu] %s", r, (unsigned long long)e,
                                 why);
            }
        }
    }
    return TC_OK;
}

/* ---- driver ---------------------------------------------------------------- */

static tc_status_t tc_v_setup_rank(tc_verify_t *v, tc_algo_gen_fn gen, int r)
{
    tc_vrank_t *vr = &v->ranks[r];
    tc_algo_args_t a = *v->args;
    tc_sched_t *s = &vr->sched;
    tc_status_t status;
    size_t n;
    int b;

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
    tc_v_sizes(&a, &vr->size[TC_BUF_SEND], &vr->size[TC_BUF_RECV]);
    vr->size[TC_BUF_SCRATCH] = s->scratch_count;
    n = (size_t)s->nsteps + 1;
    vr->done = calloc(n, 1);
    vr->match = malloc(n * sizeof(uint32_t));
    vr->ordinal = malloc(n * sizeof(uint32_t));
    if (vr->done == NULL || vr->match == NULL || vr->ordinal == NULL) {
        return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for %u steps of rank %d",
                            s->nsteps, r);
    }
    for (b = 0; b < 3; b++) {
        if (b == TC_BUF_SEND && a.in_place) {
            continue;
        }
        status = tc_algo_vbuf_alloc(&vr->buf[b], vr->size[b], v->words);
        if (status != TC_OK) {
            return status;
        }
    }
    tc_algo_vbuf_set_input(&vr->buf[a.in_place ? TC_BUF_RECV : TC_BUF_SEND], r, v->words);
    return TC_OK;
}

static tc_status_t tc_algo_verify_core(const tc_algo_args_t *args, tc_algo_gen_fn gen,
                                       const char *name)
{
    tc_verify_t v = {.args = args, .name = name};
    tc_status_t status;
    int r, b;

    status = tc_algo_args_check(args, "tc_algo_verify");
    if (status != TC_OK) {
        return status;
    }
    if (!tc_v_supported(args->coll)) {
        return tc_error_set(TC_ERR_UNSUPPORTED, "the verifier has no rule for %s yet",
                            tc_coll_name(args->coll));
    }
    v.p = args->nranks;
    v.words = (args->nranks + 63) / 64;
    v.ranks = calloc((size_t)v.p, sizeof(*v.ranks));
    if (v.ranks == NULL) {
        return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for %d ranks", v.p);
    }
    for (r = 0; r < v.p && status == TC_OK; r++) {
        status = tc_v_setup_rank(&v, gen, r);
    }
    for (r = 0; r < v.p && status == TC_OK; r++) {
        status = tc_v_check_steps(&v, r);
    }
    if (status == TC_OK) {
        status = tc_v_match(&v);
    }
    for (r = 0; r < v.p && status == TC_OK; r++) {
        status = tc_v_check_races(&v, r);
    }
    if (status == TC_OK) {
        status = tc_v_execute(&v);
    }
    if (status == TC_OK) {
        status = tc_v_check_result(&v);
    }

    for (r = v.p - 1; r >= 0; r--) {
        for (b = 2; b >= 0; b--) {
            tc_algo_vbuf_free(&v.ranks[r].buf[b]);
        }
        free(v.ranks[r].ordinal);
        free(v.ranks[r].match);
        free(v.ranks[r].done);
        tc_sched_free(&v.ranks[r].sched);
    }
    free(v.ranks);
    return status;
}

tc_status_t tc_algo_verify(const tc_algo_args_t *args, const char *algo)
{
    const tc_algo_desc_t *desc;
    tc_status_t status;

    status = tc_algo_args_check(args, "tc_algo_verify");
    if (status != TC_OK) {
        return status;
    }
    status = tc_algo_find(args->coll, algo, &desc);
    if (status != TC_OK) {
        return status;
    }
    return tc_algo_verify_core(args, desc->gen, desc->name);
}

tc_status_t tc_algo_verify_with(const tc_algo_args_t *args, tc_algo_gen_fn gen)
{
    if (gen == NULL) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_algo_verify_with: gen is NULL");
    }
    return tc_algo_verify_core(args, gen, "(custom)");
}
