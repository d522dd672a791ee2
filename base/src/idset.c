/* Sorted disjoint ranges; every operation finds its place by binary search. */
#include "tcomms/base/idset.h"

#include <stdlib.h>
#include <string.h>

tc_status_t tc_idset_init(tc_idset_t *set, uint32_t lo, uint32_t hi)
{
    *set = (tc_idset_t){0};
    if (lo > hi)
        return TC_OK;
    if (!(set->r = malloc(4 * sizeof(*set->r))))
        return tc_error_set(TC_ERR_NO_MEMORY, "id set: 4 ranges");
    set->cap = 4;
    set->r[0] = (tc_idset_range_t){lo, hi};
    set->n = 1;
    return TC_OK;
}

void tc_idset_free(tc_idset_t *set)
{
    free(set->r);
    *set = (tc_idset_t){0};
}

/* The index of the first range whose hi is >= id (set->n when none). */
static size_t find(const tc_idset_t *set, uint32_t id)
{
    size_t lo = 0, hi = set->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (set->r[mid].hi < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int tc_idset_has(const tc_idset_t *set, uint32_t id)
{
    size_t i = find(set, id);
    return i < set->n && set->r[i].lo <= id;
}

int tc_idset_first(const tc_idset_t *set, uint32_t from, uint32_t *id_p)
{
    size_t i = find(set, from);
    if (i == set->n)
        return 0;
    *id_p = set->r[i].lo > from ? set->r[i].lo : from;
    return 1;
}

/* Room for one more range. */
static tc_status_t grow(tc_idset_t *set)
{
    if (set->n < set->cap)
        return TC_OK;
    size_t cap = set->cap ? 2 * set->cap : 4;
    tc_idset_range_t *r = realloc(set->r, cap * sizeof(*r));
    if (!r)
        return tc_error_set(TC_ERR_NO_MEMORY, "id set: %zu ranges", cap);
    set->r = r;
    set->cap = cap;
    return TC_OK;
}

/* Open a slot at index @p i (room is there). */
static void open_at(tc_idset_t *set, size_t i)
{
    memmove(&set->r[i + 1], &set->r[i], (set->n - i) * sizeof(*set->r));
    set->n++;
}

static void close_at(tc_idset_t *set, size_t i)
{
    memmove(&set->r[i], &set->r[i + 1], (set->n - i - 1) * sizeof(*set->r));
    set->n--;
}

tc_status_t tc_idset_take(tc_idset_t *set, uint32_t id)
{
    size_t i = find(set, id);
    if (i == set->n || set->r[i].lo > id)
        return tc_error_set(TC_ERR_INVALID_STATE, "id set: %u is not in it", id);
    tc_idset_range_t *r = &set->r[i];
    if (r->lo == id && r->hi == id) {
        close_at(set, i);
    } else if (r->lo == id) {
        r->lo++;
    } else if (r->hi == id) {
        r->hi--;
    } else { /* split in two */
        tc_status_t st = grow(set);
        if (st != TC_OK)
            return st;
        open_at(set, i);
        set->r[i] = (tc_idset_range_t){set->r[i + 1].lo, id - 1};
        set->r[i + 1].lo = id + 1;
    }
    return TC_OK;
}

tc_status_t tc_idset_give(tc_idset_t *set, uint32_t id)
{
    size_t i = find(set, id);
    if (i < set->n && set->r[i].lo <= id)
        return tc_error_set(TC_ERR_INVALID_STATE, "id set: %u is in it already", id);
    /* r[i - 1].hi < id < r[i].lo: join one side, both, or neither */
    int left = i > 0 && set->r[i - 1].hi + 1 == id;
    int right = i < set->n && id + 1 == set->r[i].lo;
    if (left && right) {
        set->r[i - 1].hi = set->r[i].hi;
        close_at(set, i);
    } else if (left) {
        set->r[i - 1].hi = id;
    } else if (right) {
        set->r[i].lo = id;
    } else {
        tc_status_t st = grow(set);
        if (st != TC_OK)
            return st;
        open_at(set, i);
        set->r[i] = (tc_idset_range_t){id, id};
    }
    return TC_OK;
}
