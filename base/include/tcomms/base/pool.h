/**
 * @file pool.h
 * @brief A pool of fixed-size objects: O(1) get/put, no malloc once warm.
 *
 * Objects are carved from chunks allocated on demand, up to an optional
 * maximum; a put object goes on a free list and is reused by the next get.
 * Memory goes back to the system only in tc_pool_destroy(). Not thread-safe.
 */
#ifndef TCOMMS_BASE_POOL_H
#define TCOMMS_BASE_POOL_H

#include <stddef.h>

#include "tcomms/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief A pool; the fields are private. */
typedef struct tc_pool {
    char name[32];         /**< for error messages */
    size_t obj_size;       /**< bytes per object, rounded up to the alignment */
    size_t objs_per_chunk; /**< objects per chunk */
    size_t max_objs;       /**< most objects, 0 for no limit */
    size_t total_objs;     /**< objects in allocated chunks */
    size_t in_use;         /**< objects handed out */
    void *free_list;       /**< objects put back (or never handed out) */
    void *chunks;          /**< allocated chunks, linked */
} tc_pool_t;

/**
 * @brief Set up a pool; allocates nothing yet.
 * @param pool the pool.
 * @param name short name for error messages.
 * @param obj_size bytes per object (> 0); objects are aligned to 16 bytes.
 * @param objs_per_chunk objects allocated at a time (> 0).
 * @param max_objs most objects handed out at once, 0 for no limit.
 * @return TC_OK, or TC_ERR_INVALID_ARG for a zero or overflowing size.
 */
tc_status_t tc_pool_init(tc_pool_t *pool, const char *name, size_t obj_size, size_t objs_per_chunk,
                         size_t max_objs);

/**
 * @brief Take an object (O(1); allocates a chunk only when the free list is empty).
 * @param pool the pool.
 * @return the object, or NULL with a TC_ERR_NO_MEMORY detail (exhausted, or malloc failed).
 */
void *tc_pool_get(tc_pool_t *pool);

/**
 * @brief Give back an object obtained from this pool.
 * @param pool the pool.
 * @param obj the object; NULL is ignored.
 */
void tc_pool_put(tc_pool_t *pool, void *obj);

/**
 * @brief Objects handed out and not yet put back.
 * @param pool the pool.
 * @return the count.
 */
size_t tc_pool_in_use(const tc_pool_t *pool);

/**
 * @brief Free every chunk; objects still handed out become invalid.
 * @param pool the pool.
 */
void tc_pool_destroy(tc_pool_t *pool);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_BASE_POOL_H */
