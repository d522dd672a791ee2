/* Symbolic buffer contents of the verifier: rank sets and runs of elements. */
#include <stdlib.h>
#include <string.h>

#include "verify_internal.h"

#define TC_VARENA_BLK (1u << 20)

struct tc_varena_blk {
    struct tc_varena_blk *next;
    size_t used, cap;
    uint64_t data[];
};

void tc_varena_free(tc_varena_t *a)
{
    struct tc_varena_blk *b = a->head, *n;
    int i;

    while (b != NULL) {
        n = b->next;
        free(b);
        b = n;
    }
    for (i = 0; i < 3; i++) {
        free(a->tmp[i]);
    }
    memset(a, 0, sizeof(*a));
}

static tc_vset_t *tc_vset_alloc(tc_varena_t *a, uint32_t n)
{
    size_t words = (sizeof(tc_vset_t) + 2 * sizeof(int32_t) * (size_t)n + 7) / 8;
    struct tc_varena_blk *b = a->head;
    tc_vset_t *s;

    if (b == NULL || b->cap - b->used < words) {
        size_t cap = words > TC_VARENA_BLK ? words : TC_VARENA_BLK;
        b = malloc(sizeof(*b) + cap * 8);
        if (b == NULL) {
            return NULL;
        }
        b->next = a->head;
        b->used = 0;
        b->cap = cap;
        a->head = b;
    }
    s = (tc_vset_t *)(void *)(b->data + b->used);
    b->used += words;
    s->n = n;
    s->dup = -1;
    s->mixed = 0;
    return s;
}

const tc_vset_t *tc_vset_single(tc_varena_t *a, int rank)
{
    tc_vset_t *s = tc_vset_alloc(a, 1);

    if (s != NULL) {
        s->iv[0] = rank;
        s->iv[1] = rank + 1;
    }
    return s;
}

const tc_vset_t *tc_vset_union(tc_varena_t *a, const tc_vset_t *x, const tc_vset_t *y, int mixed)
{
    tc_vset_t *s = tc_vset_alloc(a, x->n + y->n);
    size_t i = 0, j = 0, n = 0; /* size_t: 2 * i indexes iv without wrapping */
    int32_t dup = x->dup >= 0 ? x->dup : y->dup;

    if (s == NULL) {
        return NULL;
    }
    while (i < x->n || j < y->n) {
        int32_t lo, hi;
        if (j >= y->n || (i < x->n && x->iv[2 * i] <= y->iv[2 * j])) {
            lo = x->iv[2 * i];
            hi = x->iv[2 * i + 1];
            i++;
        } else {
            lo = y->iv[2 * j];
            hi = y->iv[2 * j + 1];
            j++;
        }
        if (n > 0 && lo <= s->iv[2 * n - 1]) {
            if (lo < s->iv[2 * n - 1] && dup < 0) {
                dup = lo; /* overlap: rank lo is in both */
            }
            if (hi > s->iv[2 * n - 1]) {
                s->iv[2 * n - 1] = hi;
            }
        } else {
            s->iv[2 * n] = lo;
            s->iv[2 * n + 1] = hi;
            n++;
        }
    }
    s->n = (uint32_t)n; /* at most x->n + y->n */
    s->dup = dup;
    s->mixed = (uint8_t)(mixed || x->mixed || y->mixed);
    return s;
}

int tc_vset_equal(const tc_vset_t *x, const tc_vset_t *y)
{
    if (x == y) {
        return 1;
    }
    if (x == NULL || y == NULL || x->n != y->n || x->dup != y->dup || x->mixed != y->mixed) {
        return 0;
    }
    return memcmp(x->iv, y->iv, 2 * sizeof(int32_t) * x->n) == 0;
}

uint64_t tc_vset_size(const tc_vset_t *x)
{
    uint64_t n = 0;
    size_t i;

    for (i = 0; i < x->n; i++) {
        n += (uint64_t)(x->iv[2 * i + 1] - x->iv[2 * i]);
    }
    return n;
}

int tc_vset_first_missing(const tc_vset_t *x, int p)
{
    int32_t next = 0;
    size_t i;

    for (i = 0; i < x->n; i++) {
        if (x->iv[2 * i] > next) {
            return next;
        }
        next = x->iv[2 * i + 1];
    }
    return next < p ? next : -1;
}

/* ---- buffers ---------------------------------------------------------------- */

tc_status_t tc_vbuf_init(tc_vbuf_t *b, uint64_t size)
{
    b->size = size;
    b->cap = 4;
    b->seg = malloc(b->cap * sizeof(*b->seg));
    if (b->seg == NULL) {
        return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for a buffer");
    }
    b->n = size > 0 ? 1 : 0;
    b->seg[0] = (tc_vseg_t){0, size, 0, NULL, 0, 0};
    return TC_OK;
}

void tc_vbuf_free(tc_vbuf_t *b)
{
    free(b->seg);
    memset(b, 0, sizeof(*b));
}

uint32_t tc_vbuf_find(const tc_vbuf_t *b, uint64_t e)
{
    uint32_t lo = 0, hi = b->n;

    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (b->seg[mid].off <= e) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

static int tc_vseg_joinable(const tc_vseg_t *a, const tc_vseg_t *b)
{
    if (a->off + a->len != b->off || a->blk != b->blk) {
        return 0;
    }
    if (a->blk > 0) {
        uint64_t end = a->idx + a->len;
        return a->r0 + (int64_t)(end / a->blk) == b->r0 && end % a->blk == b->idx;
    }
    return tc_vset_equal(a->set, b->set) && (a->set == NULL || a->idx + a->len == b->idx);
}

/* s advanced by k elements, canonical. */
static tc_vseg_t tc_vseg_skip(const tc_vseg_t *s, uint64_t k)
{
    tc_vseg_t t = *s;

    t.off += k;
    t.len -= k;
    t.idx += k;
    if (t.blk > 0) {
        t.r0 += (int32_t)(t.idx / t.blk);
        t.idx %= t.blk;
    }
    return t;
}

static tc_status_t tc_vtmp_reserve(tc_varena_t *a, int which, uint32_t n)
{
    if (n > a->tmpcap[which]) {
        uint32_t cap = n * 2;
        tc_vseg_t *t = realloc(a->tmp[which], cap * sizeof(*t));
        if (t == NULL) {
            return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for %u segments", cap);
        }
        a->tmp[which] = t;
        a->tmpcap[which] = cap;
    }
    return TC_OK;
}

/* Copy the pieces of [off, off+len) into a->tmp[which], offsets relative to off. */
static tc_status_t tc_vbuf_read(tc_varena_t *a, int which, const tc_vbuf_t *b, uint64_t off,
                                uint64_t len, uint32_t *np)
{
    uint32_t i = tc_vbuf_find(b, off), n = 0, j;
    tc_status_t status;

    for (j = i; j < b->n && b->seg[j].off < off + len; j++) {
    }
    if ((status = tc_vtmp_reserve(a, which, j - i + 1)) != TC_OK) {
        return status;
    }
    for (; i < j; i++) {
        const tc_vseg_t *s = &b->seg[i];
        uint64_t lo = s->off > off ? s->off : off;
        uint64_t hi = s->off + s->len < off + len ? s->off + s->len : off + len;
        tc_vseg_t t = tc_vseg_skip(s, lo - s->off);
        t.off = lo - off;
        t.len = hi - lo;
        a->tmp[which][n++] = t;
    }
    *np = n;
    return TC_OK;
}

/* Replace [off, off+len) of b by pieces (offsets relative to off, covering it). */
static tc_status_t tc_vbuf_write(tc_vbuf_t *b, uint64_t off, uint64_t len, const tc_vseg_t *pc,
                                 uint32_t np)
{
    uint32_t i0 = tc_vbuf_find(b, off), i1 = tc_vbuf_find(b, off + len - 1), k, nn, lo, hi, w;
    tc_vseg_t left = b->seg[i0], right = b->seg[i1];
    int has_l = left.off<off, has_r = right.off + right.len> off + len;
    uint32_t add = np + (uint32_t)has_l + (uint32_t)has_r, old = i1 - i0 + 1;

    if (b->n - old + add > b->cap) {
        uint32_t cap = (b->n - old + add) * 2;
        tc_vseg_t *s = realloc(b->seg, cap * sizeof(*s));
        if (s == NULL) {
            return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for %u segments", cap);
        }
        b->seg = s;
        b->cap = cap;
    }
    memmove(b->seg + i0 + add, b->seg + i1 + 1, (b->n - i1 - 1) * sizeof(*b->seg));
    nn = b->n - old + add;
    k = i0;
    if (has_l) {
        left.len = off - left.off;
        b->seg[k++] = left;
    }
    for (w = 0; w < np; w++) {
        b->seg[k] = pc[w];
        b->seg[k].off += off;
        k++;
    }
    if (has_r) {
        b->seg[k++] = tc_vseg_skip(&right, off + len - right.off);
    }
    b->n = nn;
    /* Join runs around the written range. */
    lo = i0 > 0 ? i0 - 1 : 0;
    hi = k < nn ? k : nn - 1;
    w = lo;
    for (k = lo + 1; k <= hi; k++) {
        if (tc_vseg_joinable(&b->seg[w], &b->seg[k])) {
            b->seg[w].len += b->seg[k].len;
        } else {
            b->seg[++w] = b->seg[k];
        }
    }
    if (w < hi) {
        memmove(b->seg + w + 1, b->seg + hi + 1, (b->n - hi - 1) * sizeof(*b->seg));
        b->n -= hi - w;
    }
    return TC_OK;
}

tc_status_t tc_vbuf_fill(tc_vbuf_t *b, uint64_t off, uint64_t len, uint64_t idx,
                         const tc_vset_t *set)
{
    tc_vseg_t s = {0, len, idx, set, 0, 0};

    if (len == 0) {
        return TC_OK;
    }
    return tc_vbuf_write(b, off, len, &s, 1);
}

tc_status_t tc_vbuf_fill_block(tc_vbuf_t *b, uint64_t off, uint64_t len, int rank)
{
    tc_vseg_t s = {0, len, 0, NULL, len, rank};

    if (len == 0) {
        return TC_OK;
    }
    return tc_vbuf_write(b, off, len, &s, 1);
}

tc_status_t tc_vbuf_move(tc_varena_t *a, tc_vbuf_t *dst, uint64_t doff, const tc_vbuf_t *src,
                         uint64_t soff, uint64_t n, int reduce)
{
    uint32_t ns, nd, i = 0, j = 0, k = 0;
    uint64_t pos = 0;
    tc_status_t status;

    if (n == 0) {
        return TC_OK;
    }
    if ((status = tc_vbuf_read(a, 0, src, soff, n, &ns)) != TC_OK) {
        return status;
    }
    if (!reduce) {
        return tc_vbuf_write(dst, doff, n, a->tmp[0], ns);
    }
    if ((status = tc_vbuf_read(a, 1, dst, doff, n, &nd)) != TC_OK ||
        (status = tc_vtmp_reserve(a, 2, ns + nd)) != TC_OK) {
        return status;
    }
    /* Walk both piece lists together; each output piece is uniform in both
     * (block runs are cut at block ends and turned into one-rank sets). */
    while (pos < n) {
        const tc_vseg_t *s0 = &a->tmp[0][i], *d0 = &a->tmp[1][j];
        tc_vseg_t s = tc_vseg_skip(s0, pos - s0->off), d = tc_vseg_skip(d0, pos - d0->off);
        uint64_t s_end = s0->off + s0->len, d_end = d0->off + d0->len;
        uint64_t end = s_end < d_end ? s_end : d_end;
        tc_vseg_t out = {pos, 0, d.idx, NULL, 0, 0};

        if (s.blk > 0 && pos + (s.blk - s.idx) < end) {
            end = pos + (s.blk - s.idx);
        }
        if (d.blk > 0 && pos + (d.blk - d.idx) < end) {
            end = pos + (d.blk - d.idx);
        }
        out.len = end - pos;
        if (s.blk > 0) {
            s.set = tc_vset_single(a, s.r0);
        }
        if (d.blk > 0) {
            d.set = tc_vset_single(a, d.r0);
        }
        if ((s.blk > 0 && s.set == NULL) || (d.blk > 0 && d.set == NULL)) {
            return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for rank sets");
        }
        if (s.set != NULL && d.set != NULL) {
            out.set = tc_vset_union(a, d.set, s.set, s.idx != d.idx);
            if (out.set == NULL) {
                return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for rank sets");
            }
        }
        if (k > 0 && tc_vseg_joinable(&a->tmp[2][k - 1], &out)) {
            a->tmp[2][k - 1].len += out.len;
        } else {
            a->tmp[2][k++] = out;
        }
        pos = end;
        if (pos == s_end) {
            i++;
        }
        if (pos == d_end) {
            j++;
        }
    }
    return tc_vbuf_write(dst, doff, n, a->tmp[2], k);
}
