/* Fixed-size object pool: chunks on demand, a free list for O(1) get/put. */
#include "tcomms/base/pool.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define TC_POOL_ALIGN 16

/* A chunk: this header, padded to the alignment, then the objects. */
typedef union tc_pool_chunk {
    union tc_pool_chunk *next;
    max_align_t pad;
} tc_pool_chunk_t;

typedef struct tc_pool_free {
    struct tc_pool_free *next;
} tc_pool_free_t;

tc_status_t tc_pool_init(tc_pool_t *pool, const char *name, size_t obj_size, size_t objs_per_chunk,
                         size_t max_objs)
{
    size_t size;

    if (pool == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_pool_init: NULL pool");
    if (obj_size == 0 || objs_per_chunk == 0)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "tc_pool_init(%s): object size %zu and objects per chunk %zu must be "
                            "positive",
                            name != NULL ? name : "pool", obj_size, objs_per_chunk);
    if (obj_size > SIZE_MAX / 2)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_pool_init(%s): object size %zu too large",
                            name != NULL ? name : "pool", obj_size);
    size = (obj_size + TC_POOL_ALIGN - 1) & ~(size_t)(TC_POOL_ALIGN - 1);
    if (objs_per_chunk > (SIZE_MAX - sizeof(tc_pool_chunk_t)) / size)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "tc_pool_init(%s): %zu objects of %zu bytes overflow a chunk",
                            name != NULL ? name : "pool", objs_per_chunk, size);
    snprintf(pool->name, sizeof(pool->name), "%s", name != NULL ? name : "pool");
    pool->obj_size = size;
    pool->objs_per_chunk = objs_per_chunk;
    pool->max_objs = max_objs;
    pool->total_objs = 0;
    pool->in_use = 0;
    pool->free_list = NULL;
    pool->chunks = NULL;
    return TC_OK;
}

/* Allocate one more chunk and put its objects on the free list. */
static tc_status_t tc_pool_grow(tc_pool_t *pool)
{
    size_t n = pool->objs_per_chunk;
    tc_pool_chunk_t *chunk;
    char *objs;

    if (pool->max_objs != 0) {
        if (pool->total_objs >= pool->max_objs)
            return tc_error_set(TC_ERR_NO_MEMORY,
                                "pool '%s' exhausted: all %zu objects of %zu bytes in use",
                                pool->name, pool->max_objs, pool->obj_size);
        if (n > pool->max_objs - pool->total_objs)
            n = pool->max_objs - pool->total_objs;
    }
    chunk = malloc(sizeof(*chunk) + n * pool->obj_size);
    if (chunk == NULL)
        return tc_error_set(TC_ERR_NO_MEMORY,
                            "pool '%s': malloc of a chunk of %zu objects of %zu bytes failed",
                            pool->name, n, pool->obj_size);
    chunk->next = pool->chunks;
    pool->chunks = chunk;
    objs = (char *)(chunk + 1);
    /* Link in reverse so objects come out in address order. */
    for (size_t i = n; i-- > 0;) {
        tc_pool_free_t *f = (tc_pool_free_t *)(void *)(objs + i * pool->obj_size);
        f->next = pool->free_list;
        pool->free_list = f;
    }
    pool->total_objs += n;
    return TC_OK;
}

void *tc_pool_get(tc_pool_t *pool)
{
    tc_pool_free_t *f;

    if (pool->free_list == NULL && tc_pool_grow(pool) != TC_OK)
        return NULL;
    f = pool->free_list;
    /* NOLINTNEXTLINE(clang-analyzer-core.NullDereference): a grow adds objs_per_chunk > 0 */
    pool->free_list = f->next;
    pool->in_use++;
    return f;
}

void tc_pool_put(tc_pool_t *pool, void *obj)
{
    tc_pool_free_t *f = obj;

    if (obj == NULL)
        return;
    f->next = pool->free_list;
    pool->free_list = f;
    pool->in_use--;
}

size_t tc_pool_in_use(const tc_pool_t *pool)
{
    return pool->in_use;
}

void tc_pool_destroy(tc_pool_t *pool)
{
    tc_pool_chunk_t *chunk = pool->chunks;

    while (chunk != NULL) {
        tc_pool_chunk_t *next = chunk->next;
        free(chunk);
        chunk = next;
    }
    pool->chunks = NULL;
    pool->free_list = NULL;
    pool->total_objs = 0;
    pool->in_use = 0;
}
