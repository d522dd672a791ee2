/* The receive blocks of the v-variants (all_gather_v, all_to_all_v) must not
 * overlap: two ranks writing the same elements would leave either's data,
 * silently. Checked in O(n log n) for any n (a million ranks is a few
 * milliseconds), O(n) for the usual layout of rising offsets. */
#include <stdlib.h>

#include "api_impl.h"

typedef struct {
    size_t off, count;
    int rank;
} vblock_t;

static int vblock_cmp(const void *a, const void *b)
{
    const vblock_t *x = a, *y = b;
    if (x->off != y->off)
        return x->off < y->off ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static tc_status_t vblock_overlap(const char *fn, const char *dname, const char *bufname,
                                  vblock_t a, vblock_t b)
{
    if (a.rank > b.rank) {
        vblock_t t = a;
        a = b;
        b = t;
    }
    return tc_error_set(TC_ERR_INVALID_ARG,
                        "%s: %s: the blocks of rank %d (elements [%zu, %zu)) and rank %d "
                        "([%zu, %zu)) overlap in %s",
                        fn, dname, a.rank, a.off, a.off + a.count, b.rank, b.off,
                        b.off + b.count, bufname);
}

/* The non-empty blocks (displs[q], counts[q]) written into @p bufname do not
 * overlap: one pass when the offsets rise with the rank (the usual layout),
 * else sorted by offset, O(n log n). Counts and displacements are in range. */
tc_status_t tc_api_v_disjoint(const char *fn, int size, const size_t *counts, const char *dname,
                              const size_t *displs, const char *bufname)
{
    int prev = -1, n = 0;
    for (int q = 0; q < size; q++) {
        if (!counts[q])
            continue;
        n++;
        if (prev >= 0 && displs[q] < displs[prev])
            prev = -2; /* not in order: sort below (keep counting) */
        if (prev >= 0 && displs[prev] + counts[prev] > displs[q])
            return vblock_overlap(fn, dname, bufname,
                                  (vblock_t){displs[prev], counts[prev], prev},
                                  (vblock_t){displs[q], counts[q], q});
        if (prev != -2)
            prev = q;
    }
    if (prev != -2)
        return TC_OK;
    vblock_t *v = malloc((size_t)n * sizeof(*v));
    if (!v)
        return tc_error_set(TC_ERR_NO_MEMORY, "%s: sorting %d blocks of %s", fn, n, dname);
    n = 0;
    for (int q = 0; q < size; q++)
        if (counts[q])
            v[n++] = (vblock_t){displs[q], counts[q], q};
    qsort(v, (size_t)n, sizeof(*v), vblock_cmp);
    tc_status_t st = TC_OK;
    int far = 0; /* the block reaching furthest so far */
    for (int i = 1; i < n && st == TC_OK; i++) {
        if (v[i].off < v[far].off + v[far].count)
            st = vblock_overlap(fn, dname, bufname, v[far], v[i]);
        else if (v[i].off + v[i].count > v[far].off + v[far].count)
            far = i;
    }
    free(v);
    return st;
}

