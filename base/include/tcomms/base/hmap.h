/**
 * @file hmap.h
 * @brief Open-addressing hash map from uint64_t keys to pointers (not thread-safe).
 *
 * Linear probing; removal shifts later entries back, so there are no
 * tombstones and lookups stay short after many removals. Grows at 3/4 load.
 */
#ifndef TCOMMS_BASE_HMAP_H
#define TCOMMS_BASE_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tcomms/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct tc_hmap_slot;

/** @brief A hash map; zero-initialised by tc_hmap_init(). */
typedef struct tc_hmap {
    struct tc_hmap_slot *slots; /**< capacity slots (NULL until the first put) */
    size_t capacity;            /**< a power of two, or 0 */
    size_t count;               /**< keys present */
} tc_hmap_t;

/**
 * @brief An empty map; allocates nothing.
 * @param map the map.
 */
void tc_hmap_init(tc_hmap_t *map);

/**
 * @brief Insert a key or replace its value.
 * @param map the map.
 * @param key any 64-bit value.
 * @param value stored as is; may be NULL.
 * @return TC_OK, or TC_ERR_NO_MEMORY when growing failed (the map unchanged).
 */
tc_status_t tc_hmap_put(tc_hmap_t *map, uint64_t key, void *value);

/**
 * @brief Look a key up.
 * @param map the map.
 * @param key the key.
 * @param value_p receives its value when present; may be NULL.
 * @return whether the key is present.
 */
bool tc_hmap_find(const tc_hmap_t *map, uint64_t key, void **value_p);

/**
 * @brief The value of a key.
 * @param map the map.
 * @param key the key.
 * @return its value, or NULL when absent (use tc_hmap_find() for NULL values).
 */
void *tc_hmap_get(const tc_hmap_t *map, uint64_t key);

/**
 * @brief Remove a key.
 * @param map the map.
 * @param key the key.
 * @param value_p receives its value when it was present; may be NULL.
 * @return whether it was present.
 */
bool tc_hmap_remove(tc_hmap_t *map, uint64_t key, void **value_p);

/**
 * @brief Number of keys.
 * @param map the map.
 * @return the count.
 */
size_t tc_hmap_count(const tc_hmap_t *map);

/**
 * @brief Iterate: start with `*iter_p = 0`; each call gives the next entry.
 * The map must not change during an iteration.
 * @param map the map.
 * @param iter_p the position, 0 to start.
 * @param key_p receives the key; may be NULL.
 * @param value_p receives the value; may be NULL.
 * @return false when there are no more entries.
 */
bool tc_hmap_next(const tc_hmap_t *map, size_t *iter_p, uint64_t *key_p, void **value_p);

/**
 * @brief Free the table; the map is empty and reusable afterwards.
 * @param map the map.
 */
void tc_hmap_free(tc_hmap_t *map);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_BASE_HMAP_H */
