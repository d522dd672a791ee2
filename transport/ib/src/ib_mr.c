/* The memory-registration cache: page-aligned registrations in a sorted array, looked up by
 * interval (binary search), refcounted.
 * TC_IB_REG_CACHE=1: every registration goes in the array; unused ones are kept up to
 * TC_IB_REG_CACHE_MAX, least recently used released first; tc_tp_ib_mem_invalidate() drops
 * entries over freed memory.
 * TC_IB_REG_CACHE=0 (default): the array holds only explicit registrations (tc_tp_mem_reg), one
 * entry each, from reg to dereg; a transfer inside one uses it, any other transfer registers its
 * buffer for itself and releases it when it completes (the cache cannot see free/munmap). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tcomms/base/config.h"
#include "tcomms/base/log.h"
#include "ib_internal.h"

#define TC_IB_PAGE 4096u

#define TC_IB_ACCESS                                                                          \
    (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |                \
     IBV_ACCESS_REMOTE_ATOMIC)

tc_status_t tc_ib_mr_cache_init(tc_ib_ctx_t *ctx)
{
    bool on = false;
    int64_t max = TC_IB_REG_CACHE_MAX_DEFAULT;
    tc_status_t st = tc_config_bool("TC_IB_REG_CACHE", false, &on);
    if (st == TC_OK)
        st = tc_config_int("TC_IB_REG_CACHE_MAX", TC_IB_REG_CACHE_MAX_DEFAULT, 0, 1 << 20, &max);
    if (st != TC_OK)
        return st;
    ctx->cache.enabled = on;
    ctx->cache.max_unused = (size_t)max;
    return TC_OK;
}

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

/* Index of entry @p e in the array, or c->n when it is not there. */
static size_t tc_ib_mr_find(const tc_ib_mr_cache_t *c, const tc_ib_mr_entry_t *e)
{
    for (size_t i = tc_ib_mr_upper(c, e->start); i-- > 0 && c->v[i]->start == e->start;)
        if (c->v[i] == e)
            return i;
    return c->n;
}

static void tc_ib_mr_release(tc_ib_ctx_t *ctx, tc_ib_mr_entry_t *e)
{
    ctx->v->dereg_mr(e->mr);
    free(e);
}

/* Take entry @p i out of the array (it is no longer found by lookups). */
static tc_ib_mr_entry_t *tc_ib_mr_unlink(tc_ib_mr_cache_t *c, size_t i)
{
    tc_ib_mr_entry_t *e = c->v[i];
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): array of pointers */
    memmove(c->v + i, c->v + i + 1, (c->n - i - 1) * sizeof(c->v[0]));
    c->n--;
    if (e->refs == 0)
        c->nunused--;
    return e;
}

/* Release the least recently used unused entries beyond the bound. O(n) per eviction, and an
 * eviction happens only when an entry becomes unused beyond the bound. */
static void tc_ib_mr_trim(tc_ib_ctx_t *ctx)
{
    tc_ib_mr_cache_t *c = &ctx->cache;
    while (c->nunused > c->max_unused) {
        size_t lru = c->n;
        for (size_t i = 0; i < c->n; i++)
            if (c->v[i]->refs == 0 && (lru == c->n || c->v[i]->last_use < c->v[lru]->last_use))
                lru = i;
        if (lru == c->n)
            break; /* cannot happen: nunused > 0 */
        tc_ib_mr_release(ctx, tc_ib_mr_unlink(c, lru));
    }
}

static tc_status_t tc_ib_mr_register(tc_ib_ctx_t *ctx, uintptr_t a, uintptr_t end,
                                     tc_ib_mr_entry_t **e_p)
{
    uintptr_t s = a & ~(uintptr_t)(TC_IB_PAGE - 1);
    uintptr_t e = (end + TC_IB_PAGE - 1) & ~(uintptr_t)(TC_IB_PAGE - 1);
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
    *e_p = ent;
    return TC_OK;
}

tc_status_t tc_ib_mr_get(tc_ib_ctx_t *ctx, const void *addr, size_t len, int explicit_reg,
                         tc_ib_mr_entry_t **e_p)
{
    tc_ib_mr_cache_t *c = &ctx->cache;
    uintptr_t a = (uintptr_t)addr, end = a + (len ? len : 1);
    tc_ib_mr_entry_t *ent = NULL;
    /* Uncached, an explicit registration gets an entry of its own: it must not outlive its
     * dereg by being shared with one covering more (whose memory may be unmapped first).
     * Entries may overlap; any of those starting at or before a may cover the range. */
    for (size_t i = c->enabled || !explicit_reg ? tc_ib_mr_upper(c, a) : 0; i-- > 0;) {
        if (c->v[i]->end >= end) {
            ent = c->v[i];
            if (ent->refs++ == 0)
                c->nunused--;
            ent->last_use = ++c->clock;
            c->hits++;
            *e_p = ent;
            return TC_OK;
        }
        if (a - c->v[i]->start > ((uintptr_t)1 << 40))
            break; /* far below: nothing further left can cover it */
    }
    c->misses++;
    if (!c->enabled && !explicit_reg) { /* not cached: registered for this transfer only */
        tc_status_t st = tc_ib_mr_register(ctx, a, end, &ent);
        if (st != TC_OK)
            return st;
        ent->detached = 1;
        *e_p = ent;
        return TC_OK;
    }
    if (c->n == c->cap) {
        size_t ncap = c->cap ? 2 * c->cap : 32;
        /* NOLINTNEXTLINE(bugprone-sizeof-expression): array of pointers */
        tc_ib_mr_entry_t **v = realloc(c->v, ncap * sizeof(*v));
        if (v == NULL)
            return tc_error_set(TC_ERR_NO_MEMORY, "ib: registration cache of %zu entries", ncap);
        c->v = v;
        c->cap = ncap;
    }
    tc_status_t st = tc_ib_mr_register(ctx, a, end, &ent);
    if (st != TC_OK)
        return st;
    ent->last_use = ++c->clock;
    size_t at = tc_ib_mr_upper(c, ent->start);
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): array of pointers */
    memmove(c->v + at + 1, c->v + at, (c->n - at) * sizeof(c->v[0]));
    c->v[at] = ent;
    c->n++;
    *e_p = ent;
    return TC_OK;
}

void tc_ib_mr_put(tc_ib_ctx_t *ctx, tc_ib_mr_entry_t *e, int explicit_dereg)
{
    tc_ib_mr_cache_t *c = &ctx->cache;
    if (e == NULL || e->refs <= 0)
        return;
    if (explicit_dereg && !c->enabled && !e->detached) {
        /* uncached: the user's promise about this memory ends here, so later transfers must no
         * longer find it; one still in flight keeps it registered until it completes */
        size_t i = tc_ib_mr_find(c, e);
        if (i < c->n)
            tc_ib_mr_unlink(c, i);
        e->detached = 1;
    }
    if (--e->refs > 0)
        return;
    if (e->detached) {
        tc_ib_mr_release(ctx, e);
        return;
    }
    c->nunused++;
    if (explicit_dereg) { /* the memory may be freed next: do not keep it cached */
        size_t i = tc_ib_mr_find(c, e);
        if (i < c->n) {
            tc_ib_mr_release(ctx, tc_ib_mr_unlink(c, i));
            return;
        }
    }
    tc_ib_mr_trim(ctx);
}

tc_status_t tc_tp_ib_mem_invalidate(tc_tp_ctx_t *super, const void *addr, size_t len)
{
    if (super == NULL || super->ops != &tc_tp_ib_ops)
        return tc_error_set(TC_ERR_INVALID_ARG, "ib mem_invalidate: ctx is NULL or not an ib "
                            "context");
    uintptr_t a = (uintptr_t)addr;
    if (len == 0)
        return TC_OK;
    if (a + len < a)
        return tc_error_set(TC_ERR_INVALID_ARG, "ib mem_invalidate: %zu bytes at %p wrap", len,
                            addr);
    tc_ib_ctx_t *ctx = (tc_ib_ctx_t *)super;
    tc_ib_mr_cache_t *c = &ctx->cache;
    size_t dropped = 0, busy = 0;
    for (size_t i = 0; i < c->n;) {
        tc_ib_mr_entry_t *e = c->v[i];
        if (e->start >= a + len || e->end <= a) {
            i++;
            continue;
        }
        tc_ib_mr_unlink(c, i);
        dropped++;
        if (e->refs == 0) {
            tc_ib_mr_release(ctx, e);
        } else {
            e->detached = 1; /* a request in flight still uses it: released after it */
            busy++;
        }
    }
    if (dropped > 0)
        tc_log_debug(TC_SUBSYS_TRANSPORT, "ib: invalidated %zu cached registrations over %zu "
                     "bytes at %p (%zu still in use)", dropped, len, addr, busy);
    return TC_OK;
}

void tc_ib_mr_cache_free(tc_ib_ctx_t *ctx)
{
    tc_ib_mr_cache_t *c = &ctx->cache;
    for (size_t i = 0; i < c->n; i++)
        tc_ib_mr_release(ctx, c->v[i]);
    free(c->v);
    size_t max = c->max_unused;
    int on = c->enabled;
    memset(c, 0, sizeof(*c));
    c->max_unused = max;
    c->enabled = on;
}
