/*
 * Rotational symmetry of schedules, for the flow trace of sampled mode
 * (verify_flow.c).
 *
 * A ring-type schedule of p ranks is often rank 0's schedule with every peer
 * moved by r (peer + r mod p) and every block moved by r blocks: step i of
 * rank r is step i of rank 0 "rotated by r". When the layout is uniform (p
 * blocks of B elements each: all-reduce with count % p == 0, all-gather,
 * reduce-scatter and all-to-all with equal blocks), a rotation by r is a
 * bijection of element positions: in a buffer of p * B elements, position y
 * of rank 0 is position (y + r B) mod pB of rank r; a buffer of another size
 * (an all-gather's send buffer, a reduce-scatter's receive buffer) stays
 * where it is.
 *
 * tc_vsym_match() checks that a rank's real schedule is exactly rank 0's
 * rotated, step by step, on the fields the executor uses (kind, buffers,
 * count, dependencies, peer of a message, the offsets a step reads and
 * writes). A range rotates to one contiguous range unless it wraps; a whole
 * rotated buffer is accepted only for a local copy/reduction from one whole
 * buffer of the same size to another (its element pairs (k, k) are invariant
 * under the rotation); every other wrapping range, and a message of a whole
 * buffer (its element order would change), is a mismatch. So when a rank
 * matches, the trace may follow any element of it through rank 0's steps
 * with positions mapped elementwise, and get what the rank's own schedule
 * gives.
 *
 * What the check cannot give: a rank that is neither checked nor built is
 * only assumed to match. The trace reports the elements it proves so as
 * proven "assuming rotational symmetry checked on K ranks".
 */
#include <string.h>

#include "algo_internal.h"
#include "verify_internal.h"

uint64_t tc_vsym_block(const tc_algo_args_t *a)
{
    const uint64_t p = (uint64_t)a->nranks;
    uint64_t b;
    int q;

    if (a->nranks < 2) {
        return 0;
    }
    switch (a->coll) {
    case TC_COLL_ALL_REDUCE:
        return a->count % p == 0 ? a->count / p : 0;
    case TC_COLL_ALL_GATHER:
    case TC_COLL_REDUCE_SCATTER:
    case TC_COLL_ALL_TO_ALL:
        if (a->a2a_counts != NULL) {
            return 0; /* per-pair blocks: no rotation in general */
        }
        if (a->counts == NULL) {
            return a->count;
        }
        b = a->counts[0];
        for (q = 0; q < a->nranks; q++) { /* equal and packed */
            if (a->counts[q] != b || (a->displs != NULL && a->displs[q] != (uint64_t)q * b)) {
                return 0;
            }
        }
        return b;
    default:
        return 0; /* rooted collectives and the barrier have no rotation */
    }
}

void tc_vsym_init(tc_vsym_t *s, const tc_algo_args_t *a, uint64_t blk, const uint64_t size[3])
{
    int b;

    memset(s, 0, sizeof(*s));
    s->p = a->nranks;
    s->blk = blk;
    s->in_place = a->in_place;
    for (b = 0; b < 3; b++) {
        s->size[b] = size[b];
        s->rot[b] = blk > 0 && size[b] / (uint64_t)s->p == blk && size[b] % (uint64_t)s->p == 0;
    }
}

/* The shift of buffer b (resolved) for rank v in [0, p). */
static uint64_t tc_vsym_shift(const tc_vsym_t *s, unsigned b, int v)
{
    return s->rot[b] ? (uint64_t)v * s->blk : 0; /* v B < p B = size: no overflow, no mod */
}

uint64_t tc_vsym_to(const tc_vsym_t *s, unsigned b, uint64_t y, int v)
{
    const uint64_t sh = tc_vsym_shift(s, b, v), n = s->size[b];

    if (sh == 0 || y >= n) {
        return y;
    }
    return y >= n - sh ? y - (n - sh) : y + sh;
}

uint64_t tc_vsym_from(const tc_vsym_t *s, unsigned b, uint64_t y, int v)
{
    const uint64_t sh = tc_vsym_shift(s, b, v), n = s->size[b];

    if (sh == 0 || y >= n) {
        return y;
    }
    return y >= sh ? y - sh : y + (n - sh);
}

enum { TC_VSYM_RANGE, TC_VSYM_WHOLE, TC_VSYM_BAD };

/* Where rank 0's range [o, o + c) of buffer b goes in rank v: *o2, and the
 * class: a contiguous range, a whole buffer (order changed), or neither. */
static int tc_vsym_range(const tc_vsym_t *s, unsigned b, uint64_t o, uint64_t c, int v,
                         uint64_t *o2)
{
    const uint64_t sh = tc_vsym_shift(s, b, v), n = s->size[b];

    *o2 = o;
    if (c == 0 || sh == 0) {
        return TC_VSYM_RANGE;
    }
    if (o > n || c > n - o) {
        return TC_VSYM_BAD; /* out of bounds in rank 0: its own check reports it */
    }
    if (o == 0 && c == n) {
        return TC_VSYM_WHOLE;
    }
    *o2 = tc_vsym_to(s, b, o, v);
    return *o2 + c <= n ? TC_VSYM_RANGE : TC_VSYM_BAD;
}

static unsigned tc_vsym_resolve(const tc_vsym_t *s, unsigned b)
{
    return (s->in_place && b == TC_BUF_SEND) ? TC_BUF_RECV : b;
}

int tc_vsym_match(const tc_vsym_t *s, const tc_sched_t *t, const tc_sched_t *x, int v,
                  uint32_t *step_p)
{
    uint32_t i;

    *step_p = 0;
    if (x->nsteps != t->nsteps || x->scratch_count != t->scratch_count) {
        *step_p = x->nsteps < t->nsteps ? x->nsteps : t->nsteps;
        return 0;
    }
    for (i = 0; i < t->nsteps; i++) {
        const tc_step_t *a = &t->steps[i], *y = &x->steps[i];
        const int comm = tc_v_is_comm(a->kind);
        const int rd = tc_v_reads_src(a->kind);
        const int wr = a->kind != TC_STEP_SEND;
        int cs = TC_VSYM_RANGE, cd = TC_VSYM_RANGE;
        uint64_t off = a->off, dst_off = a->dst_off;

        *step_p = i;
        if (a->kind != y->kind || a->buf != y->buf || a->dst_buf != y->dst_buf ||
            a->count != y->count || a->dep[0] != y->dep[0] || a->dep[1] != y->dep[1] ||
            a->buf > TC_BUF_SCRATCH || a->dst_buf > TC_BUF_SCRATCH) {
            return 0;
        }
        if (comm ? (a->peer < 0 || a->peer >= s->p ||
                    y->peer != tc_algo_mod((int)(((int64_t)a->peer + v) % s->p), s->p))
                 : a->peer != y->peer) {
            return 0;
        }
        if (rd) {
            cs = tc_vsym_range(s, tc_vsym_resolve(s, a->buf), a->off, a->count, v, &off);
        }
        if (wr) {
            cd =
                tc_vsym_range(s, tc_vsym_resolve(s, a->dst_buf), a->dst_off, a->count, v, &dst_off);
        }
        if (cs == TC_VSYM_BAD || cd == TC_VSYM_BAD) {
            return 0;
        }
        if (cs == TC_VSYM_WHOLE || cd == TC_VSYM_WHOLE) {
            /* only a local step from a whole buffer to a whole buffer of the
             * same size: it keeps every element where it is */
            if (comm || cs != cd ||
                s->size[tc_vsym_resolve(s, a->buf)] != s->size[tc_vsym_resolve(s, a->dst_buf)]) {
                return 0;
            }
        }
        if (off != y->off || dst_off != y->dst_off) {
            return 0;
        }
    }
    return 1;
}
