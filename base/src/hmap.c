/* Open-addressing hash map with linear probing and backward-shift removal. */
#include "tcomms/base/hmap.h"

#include <stdlib.h>

#define TC_HMAP_MIN_CAPACITY 16

struct tc_hmap_slot {
    uint64_t key;
    void *value;
    bool used;
};

/* splitmix64's finaliser: consecutive keys (ranks, ids) spread over the table. */
static size_t tc_hmap_hash(uint64_t key)
{
    key ^= key >> 30;
    key *= 0xbf58476d1ce4e5b9ull;
    key ^= key >> 27;
    key *= 0x94d049bb133111ebull;
    key ^= key >> 31;
    return (size_t)key;
}

void tc_hmap_init(tc_hmap_t *map)
{
    map->slots = NULL;
    map->capacity = 0;
    map->count = 0;
}

/* The slot holding @p key, or the empty slot where it would go. */
static size_t tc_hmap_probe(const tc_hmap_t *map, uint64_t key)
{
    size_t mask = map->capacity - 1;
    size_t i = tc_hmap_hash(key) & mask;

    while (map->slots[i].used && map->slots[i].key != key)
        i = (i + 1) & mask;
    return i;
}

static tc_status_t tc_hmap_resize(tc_hmap_t *map, size_t capacity)
{
    struct tc_hmap_slot *old = map->slots;
    size_t old_capacity = map->capacity;
    struct tc_hmap_slot *slots = calloc(capacity, sizeof(*slots));

    if (slots == NULL)
        return tc_error_set(TC_ERR_NO_MEMORY, "tc_hmap: calloc of %zu slots failed", capacity);
    map->slots = slots;
    map->capacity = capacity;
    for (size_t i = 0; i < old_capacity; i++) {
        if (old[i].used)
            map->slots[tc_hmap_probe(map, old[i].key)] = old[i];
    }
    free(old);
    return TC_OK;
}

tc_status_t tc_hmap_put(tc_hmap_t *map, uint64_t key, void *value)
{
    size_t i;

    /* Keep the load at most 3/4 so probes stay short and one slot is always empty. */
    if ((map->count + 1) * 4 > map->capacity * 3) {
        size_t capacity = map->capacity == 0 ? TC_HMAP_MIN_CAPACITY : map->capacity * 2;
        tc_status_t st;

        if (capacity < map->capacity || capacity > SIZE_MAX / sizeof(struct tc_hmap_slot))
            return tc_error_set(TC_ERR_NO_MEMORY, "tc_hmap: cannot grow past %zu slots",
                                map->capacity);
        st = tc_hmap_resize(map, capacity);
        if (st != TC_OK)
            return st;
    }
    i = tc_hmap_probe(map, key);
    if (!map->slots[i].used) {
        map->slots[i].used = true;
        map->slots[i].key = key;
        map->count++;
    }
    map->slots[i].value = value;
    return TC_OK;
}

bool tc_hmap_find(const tc_hmap_t *map, uint64_t key, void **value_p)
{
    size_t i;

    if (map->count == 0)
        return false;
    i = tc_hmap_probe(map, key);
    if (!map->slots[i].used)
        return false;
    if (value_p != NULL)
        *value_p = map->slots[i].value;
    return true;
}

void *tc_hmap_get(const tc_hmap_t *map, uint64_t key)
{
    void *value = NULL;

    return tc_hmap_find(map, key, &value) ? value : NULL;
}

bool tc_hmap_remove(tc_hmap_t *map, uint64_t key, void **value_p)
{
    size_t mask, i, j;

    if (map->count == 0)
        return false;
    mask = map->capacity - 1;
    i = tc_hmap_probe(map, key);
    if (!map->slots[i].used)
        return false;
    if (value_p != NULL)
        *value_p = map->slots[i].value;
    /* Backward shift: move later entries of the cluster into the hole unless
     * their home slot lies cyclically in (hole, their slot]. */
    j = i;
    for (;;) {
        size_t home;

        j = (j + 1) & mask;
        if (!map->slots[j].used)
            break;
        home = tc_hmap_hash(map->slots[j].key) & mask;
        if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
            continue;
        map->slots[i] = map->slots[j];
        i = j;
    }
    map->slots[i].used = false;
    map->slots[i].value = NULL;
    map->count--;
    return true;
}

size_t tc_hmap_count(const tc_hmap_t *map)
{
    return map->count;
}

bool tc_hmap_next(const tc_hmap_t *map, size_t *iter_p, uint64_t *key_p, void **value_p)
{
    for (size_t i = *iter_p; i < map->capacity; i++) {
        if (map->slots[i].used) {
            if (key_p != NULL)
                *key_p = map->slots[i].key;
            if (value_p != NULL)
                *value_p = map->slots[i].value;
            *iter_p = i + 1;
            return true;
        }
    }
    *iter_p = map->capacity;
    return false;
}

void tc_hmap_free(tc_hmap_t *map)
{
    free(map->slots);
    tc_hmap_init(map);
}
