/* The memory-registration cache: page-aligned registrations in a sorted array, looked up by
 * interval (binary search), so that buffers used again hit without a new ibv_reg_mr. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ib_internal.h"

#define TC_IB_PAGE 4096u
/* Unused entries kept at most; beyond, the oldest unused one is released. */
#define TC_IB_CACHE_KEEP 256

#define TC_IB_ACCESS                                                                          \
    (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |                \
     IBV_ACCESS_REMOTE_ATOMIC)

/* Index of the first entry whose start is > @p a. */
static size_t tc_ib_mr_upper(const tc_ib_mr_cache_t *c, uintptr_t a)
{
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->v[mid]->start <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void tc_ib_mr_trim(tc_ib_ctx_t *ctx)
{
    tc_ib_mr_cache_t *c = &ctx->cache;
    size_t unused = 0;
    for (size_t i = 0; i < c->n; i++)
        unused += c->v[i]->refs == 0;
    for (size_t i = 0; i < c->n && unused > TC_IB_CACHE_KEEP;) {
        if (c->v[i]->refs != 0) {
            i++;
            continue;
        }
        ctx->v->dereg_mr(c->v[i]->mr);
        free(c->v[i]);
        memmove(c->v + i, c->v + i + 1, (c->n - i - 1) * sizeof(c->v[0]));
        c->n--;
        unused--;
    }
}

tc_status_t tc_ib_mr_get(tc_ib_ctx_t *ctx, const void *addr, size_t len, tc_ib_mr_entry_t **e_p)
{
    tc_ib_mr_cache_t *c = &ctx->cache;
    uintptr_t a = (uintptr_t)addr, end = a + (len ? len : 1);
    /* Entries may overlap; any of those starting at or before a may cover the range. */
    for (size_t i = tc_ib_mr_upper(c, a); i-- > 0;) {
        if (c->v[i]->end >= end) {
            c->v[i]->refs++;
            c->hits++;
            *e_p = c->v[i];
            return TC_OK;
        }
        if (a - c->v[i]->start > ((uintptr_t)1 << 40))
            break; /* far below: nothing further left can cover it */
    }
    c->misses++;
    uintptr_t s = a & ~(uintptr_t)(TC_IB_PAGE - 1);
    uintptr_t e = (end + TC_IB_PAGE - 1) & ~(uintptr_t)(TC_IB_PAGE - 1);
    if (c->n == c->cap) {
        size_t ncap = c->cap ? 2 * c->cap : 32;
        tc_ib_mr_entry_t **v = realloc(c->v, ncap * sizeof(*v));
        if (v == NULL)
            return tc_error_set(TC_ERR_NO_MEMORY, "ib: registration cache of %zu entries", ncap);
        c->v = v;
        c->cap = ncap;
    }
    tc_ib_mr_entry_t *ent = calloc(1, sizeof(*ent));
    if (ent == NULL)
        return tc_error_set(TC_ERR_NO_MEMORY, "ib: registration cache entry");
    ent->mr = ctx->v->reg_mr(ctx->pd, (void *)s, e - s, TC_IB_ACCESS);
    if (ent->mr == NULL) {
        int err = errno;
        free(ent);
        return tc_error_set(err == ENOMEM ? TC_ERR_NO_RESOURCE : TC_ERR_SYSTEM,
                            "ib: ibv_reg_mr of %zu bytes at %p on %s failed: %s (locked-memory "
                            "limit? see ulimit -l)",
                            (size_t)(e - s), (void *)s, ctx->dev_name, strerror(err));
    }
    ent->start = s;
    ent->end = e;
    ent->refs = 1;
    size_t at = tc_ib_mr_upper(c, s);
    memmove(c->v + at + 1, c->v + at, (c->n - at) * sizeof(c->v[0]));
    c->v[at] = ent;
    c->n++;
    tc_ib_mr_trim(ctx);
    *e_p = ent;
    return TC_OK;
}

void tc_ib_mr_put(tc_ib_ctx_t *ctx, tc_ib_mr_entry_t *e)
{
    if (e != NULL && e->refs > 0)
        e->refs--;
    tc_ib_mr_trim(ctx);
}

void tc_ib_mr_cache_free(tc_ib_ctx_t *ctx)
{
    tc_ib_mr_cache_t *c = &ctx->cache;
    for (size_t i = 0; i < c->n; i++) {
        ctx->v->dereg_mr(c->v[i]->mr);
        free(c->v[i]);
    }
    free(c->v);
    memset(c, 0, sizeof(*c));
}
