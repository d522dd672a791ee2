/* The case matrix of the CUDA kernel tests (see matrix.h). */
#include "matrix.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cref.h"

#define MX_SMALL_MAX 70
#define MX_MAX_OFFSET 16 /* elements; every layout's offsets are below it */

/* Which buffer the destination is. */
typedef enum mx_alias { MX_NONE, MX_DST_A, MX_DST_B, MX_DST_AB } mx_alias_t;

typedef struct mx_layout {
    size_t oa, ob, od; /* offsets in elements from a 256-byte aligned base */
    mx_alias_t alias;  /* MX_DST_AB: a == b == dst (ob, od unused) */
} mx_layout_t;

static const char *const mx_alias_names[] = {"dst apart", "dst == a", "dst == b", "dst == a == b"};

/* Same misalignment (vector loop with a head), different (element loop), in place. */
static const mx_layout_t mx_small_layouts[] = {
    {0, 0, 0, MX_NONE},  {1, 1, 1, MX_NONE},   {3, 1, 2, MX_NONE},
    {5, 9, 13, MX_NONE}, {0, 0, 0, MX_DST_A},  {1, 1, 0, MX_DST_B},
    {2, 5, 0, MX_DST_A}, {1, 0, 0, MX_DST_AB}, {0, 0, 0, MX_DST_AB},
};

static const mx_layout_t mx_large_layouts[] = {
    {0, 0, 0, MX_NONE},
    {1, 1, 0, MX_DST_B},
    {3, 1, 2, MX_NONE},
};

/* Target buffers and host staging, sized for `cap` elements of 8 bytes. */
typedef struct mx_bufs {
    size_t bytes;
    char *ta, *tb, *td;        /* on the target */
    char *ha, *hb, *hd, *hout; /* host images of the regions */
    char *want;                /* the reference result */
} mx_bufs_t;

static void *mx_host_alloc(size_t bytes)
{
    void *p = aligned_alloc(256, (bytes + 255) / 256 * 256);

    assert_non_null(p);
    return p;
}

static void mx_bufs_init(const mx_target_t *tg, mx_bufs_t *bf, size_t max_n)
{
    bf->bytes = (max_n + MX_MAX_OFFSET) * 8;
    bf->ta = tg->alloc(bf->bytes);
    bf->tb = tg->alloc(bf->bytes);
    bf->td = tg->alloc(bf->bytes);
    bf->ha = mx_host_alloc(bf->bytes);
    bf->hb = mx_host_alloc(bf->bytes);
    bf->hd = mx_host_alloc(bf->bytes);
    bf->hout = mx_host_alloc(bf->bytes);
    bf->want = mx_host_alloc(bf->bytes);
}

static void mx_bufs_fini(const mx_target_t *tg, mx_bufs_t *bf)
{
    tg->release(bf->ta);
    tg->release(bf->tb);
    tg->release(bf->td);
    free(bf->ha);
    free(bf->hb);
    free(bf->hd);
    free(bf->hout);
    free(bf->want);
}

static void mx_sentinel(char *p, size_t bytes, unsigned salt)
{
    for (size_t i = 0; i < bytes; i++) {
        p[i] = (char)(salt + 37 * i);
    }
}

/* The first difference between the region read back and what was put there
 * outside [lo, hi) (bytes), failing the test with `what`. */
static void mx_check_guard(const char *got, const char *put, size_t region, size_t lo, size_t hi,
                           const char *what)
{
    if (lo == hi) {
        lo = hi = region;
    }
    if (memcmp(got, put, lo) == 0 && memcmp(got + hi, put + hi, region - hi) == 0) {
        return;
    }
    for (size_t i = 0; i < region; i++) {
        if ((i < lo || i >= hi) && got[i] != put[i]) {
            fail_msg("%s: byte %zu (the result spans bytes %zu..%zu) changed from 0x%02x to "
                     "0x%02x",
                     what, i, lo, hi, (unsigned char)put[i], (unsigned char)got[i]);
        }
    }
}

static void mx_case(const mx_target_t *tg, mx_bufs_t *bf, tc_dtype_t t, tc_redop_t op, size_t n,
                    const mx_layout_t *L, uint64_t seed)
{
    const size_t es = cref_size(t), region = (n + MX_MAX_OFFSET) * es;
    const int divisor = 1 + (int)(n % 7);
    char *a_here, *b_here, *a_there, *b_there, *d_there, *out_base;
    const char *out_put;
    size_t doff;
    char what[200];
    tc_status_t st;

    snprintf(what, sizeof(what), "%s: %s %s n=%zu offsets a+%zu b+%zu d+%zu (%s)%s", tg->name,
             tc_dtype_name(t), tc_redop_name(op), n, L->oa, L->ob, L->od, mx_alias_names[L->alias],
             op == TC_AVG ? ", then scale_div" : "");

    mx_sentinel(bf->ha, region, 0x11);
    mx_sentinel(bf->hb, region, 0x5a);
    mx_sentinel(bf->hd, region, 0xc3);
    a_here = bf->ha + L->oa * es;
    cref_fill(t, a_here, n, &seed);
    if (L->alias == MX_DST_AB) {
        b_here = a_here;
    } else {
        b_here = bf->hb + L->ob * es;
        cref_fill(t, b_here, n, &seed);
        cref_pair_up(t, a_here, b_here, n, &seed);
    }
    cref_reduce(t, op, bf->want, a_here, b_here, n, divisor);

    tg->put(bf->ta, bf->ha, region);
    a_there = bf->ta + L->oa * es;
    b_there = a_there;
    if (L->alias != MX_DST_AB) {
        tg->put(bf->tb, bf->hb, region);
        b_there = bf->tb + L->ob * es;
    }
    switch (L->alias) {
    case MX_NONE:
        tg->put(bf->td, bf->hd, region);
        d_there = bf->td + L->od * es;
        out_base = bf->td;
        out_put = bf->hd;
        doff = L->od * es;
        break;
    case MX_DST_B:
        d_there = b_there;
        out_base = bf->tb;
        out_put = bf->hb;
        doff = L->ob * es;
        break;
    default:
        d_there = a_there;
        out_base = bf->ta;
        out_put = bf->ha;
        doff = L->oa * es;
        break;
    }

    st = tg->reduce(t, op, d_there, a_there, b_there, n);
    if (st != TC_OK) {
        fail_msg("%s: reduce returned %s: %s", what, tc_status_string(st), tc_last_error());
    }
    if (op == TC_AVG) {
        st = tg->scale(t, d_there, n, divisor);
        if (st != TC_OK) {
            fail_msg("%s: scale_div by %d returned %s: %s", what, divisor, tc_status_string(st),
                     tc_last_error());
        }
    }
    tg->sync();

    tg->get(bf->hout, out_base, region);
    mx_check_guard(bf->hout, out_put, region, doff, doff + n * es, what);
    for (size_t i = 0; i < n; i++) {
        if (!cref_same(t, op, bf->hout + doff, bf->want, i)) {
            fail_msg("%s: element %zu: %#llx op %#llx gave %#llx, expected %#llx", what, i,
                     (unsigned long long)cref_bits(t, a_here, i),
                     (unsigned long long)cref_bits(t, b_here, i),
                     (unsigned long long)cref_bits(t, bf->hout + doff, i),
                     (unsigned long long)cref_bits(t, bf->want, i));
        }
    }
    if (L->alias == MX_NONE) { /* the operands are read only */
        tg->get(bf->hout, bf->ta, region);
        mx_check_guard(bf->hout, bf->ha, region, 0, 0, what);
        tg->get(bf->hout, bf->tb, region);
        mx_check_guard(bf->hout, bf->hb, region, 0, 0, what);
    }
}

static uint64_t mx_seed(tc_dtype_t t, tc_redop_t op, size_t n, size_t layout)
{
    return ((uint64_t)t << 48) ^ ((uint64_t)op << 40) ^ ((uint64_t)layout << 32) ^ n;
}

void mx_run_small(const mx_target_t *tg)
{
    mx_bufs_t bf;
    size_t cases = 0;

    mx_bufs_init(tg, &bf, MX_SMALL_MAX);
    for (int t = 0; t < TC_DTYPE_COUNT; t++) {
        for (int op = 0; op < TC_REDOP_COUNT; op++) {
            if (!cref_applies((tc_redop_t)op, (tc_dtype_t)t)) {
                continue;
            }
            for (size_t n = 0; n <= MX_SMALL_MAX; n++) {
                for (size_t l = 0; l < sizeof(mx_small_layouts) / sizeof(mx_small_layouts[0]);
                     l++) {
                    mx_case(tg, &bf, (tc_dtype_t)t, (tc_redop_t)op, n, &mx_small_layouts[l],
                            mx_seed((tc_dtype_t)t, (tc_redop_t)op, n, l));
                    cases++;
                }
            }
        }
    }
    mx_bufs_fini(tg, &bf);
    print_message("%s: %zu small cases passed\n", tg->name, cases);
}

void mx_run_large(const mx_target_t *tg, size_t n)
{
    mx_bufs_t bf;
    size_t cases = 0;

    mx_bufs_init(tg, &bf, n);
    for (int t = 0; t < TC_DTYPE_COUNT; t++) {
        for (int op = 0; op < TC_REDOP_COUNT; op++) {
            if (!cref_applies((tc_redop_t)op, (tc_dtype_t)t)) {
                continue;
            }
            /* one layout per pair, in turn: each type meets each layout for some op */
            size_t l = cases % (sizeof(mx_large_layouts) / sizeof(mx_large_layouts[0]));

            mx_case(tg, &bf, (tc_dtype_t)t, (tc_redop_t)op, n, &mx_large_layouts[l],
                    mx_seed((tc_dtype_t)t, (tc_redop_t)op, n, l));
            cases++;
        }
    }
    mx_bufs_fini(tg, &bf);
    print_message("%s: %zu cases of %zu elements passed\n", tg->name, cases, n);
}

void mx_run_one(const mx_target_t *tg, tc_dtype_t t, tc_redop_t op, size_t n)
{
    mx_bufs_t bf;

    mx_bufs_init(tg, &bf, n);
    mx_case(tg, &bf, t, op, n, &mx_large_layouts[0], mx_seed(t, op, n, 99));
    mx_bufs_fini(tg, &bf);
    print_message("%s: %s %s of %zu elements passed\n", tg->name, tc_dtype_name(t),
                  tc_redop_name(op), n);
}

static void mx_scale_case(const mx_target_t *tg, mx_bufs_t *bf, tc_dtype_t t, size_t n, size_t off,
                          int divisor)
{
    const size_t es = cref_size(t), region = (n + MX_MAX_OFFSET) * es;
    uint64_t seed = mx_seed(t, TC_AVG, n, off) ^ (uint64_t)divisor << 56;
    char *here = bf->hd + off * es;
    char what[160];
    tc_status_t st;

    snprintf(what, sizeof(what), "%s: scale_div %s n=%zu offset +%zu by %d", tg->name,
             tc_dtype_name(t), n, off, divisor);
    mx_sentinel(bf->hd, region, 0x77);
    cref_fill(t, here, n, &seed);
    memcpy(bf->want, here, n * es);
    cref_scale(t, bf->want, n, divisor);

    tg->put(bf->td, bf->hd, region);
    st = tg->scale(t, bf->td + off * es, n, divisor);
    if (st != TC_OK) {
        fail_msg("%s: returned %s: %s", what, tc_status_string(st), tc_last_error());
    }
    tg->sync();
    tg->get(bf->hout, bf->td, region);
    mx_check_guard(bf->hout, bf->hd, region, off * es, (off + n) * es, what);
    for (size_t i = 0; i < n; i++) {
        if (!cref_same(t, TC_AVG, bf->hout + off * es, bf->want, i)) {
            fail_msg("%s: element %zu: %#llx gave %#llx, expected %#llx", what, i,
                     (unsigned long long)cref_bits(t, here, i),
                     (unsigned long long)cref_bits(t, bf->hout + off * es, i),
                     (unsigned long long)cref_bits(t, bf->want, i));
        }
    }
}

void mx_run_scale(const mx_target_t *tg, size_t n_large)
{
    static const int divisors[] = {1, 2, 3, 7, 64};
    static const size_t offsets[] = {0, 1, 3};
    mx_bufs_t bf;
    size_t cases = 0;

    mx_bufs_init(tg, &bf, n_large);
    for (int t = 0; t < TC_DTYPE_COUNT; t++) {
        for (size_t d = 0; d < sizeof(divisors) / sizeof(divisors[0]); d++) {
            for (size_t o = 0; o < sizeof(offsets) / sizeof(offsets[0]); o++) {
                for (size_t n = 0; n <= MX_SMALL_MAX; n++) {
                    mx_scale_case(tg, &bf, (tc_dtype_t)t, n, offsets[o], divisors[d]);
                    cases++;
                }
            }
        }
        for (size_t o = 0; o < 2; o++) { /* aligned (vectors) and not (head and tail) */
            mx_scale_case(tg, &bf, (tc_dtype_t)t, n_large, offsets[o], 3);
            cases++;
        }
    }
    mx_bufs_fini(tg, &bf);
    print_message("%s: %zu scale_div cases passed\n", tg->name, cases);
}
