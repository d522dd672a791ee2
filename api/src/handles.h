/* Internal: decoding a handle (handles.c says what a handle is and how its
 * slots live). Inline, so that every entry point of the API decodes its
 * handle with a few loads and compares and no call: on the 8-byte window put
 * and the small collectives the lookup was a fifth of the instructions. */
#ifndef TC_API_HANDLES_H
#define TC_API_HANDLES_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "tcomms/base/status.h"

#define TC_API_H_KIND_BITS 2
#define TC_API_H_SLOT_BITS 22
#define TC_API_H_GEN_SHIFT (TC_API_H_KIND_BITS + TC_API_H_SLOT_BITS)
#define TC_API_H_CHUNK_BITS 10
#define TC_API_H_CHUNK_SLOTS (1u << TC_API_H_CHUNK_BITS)
#define TC_API_H_NCHUNKS (1u << (TC_API_H_SLOT_BITS - TC_API_H_CHUNK_BITS))
#define TC_API_H_COMM 1u
#define TC_API_H_WORK 2u
#define TC_API_H_WIN 3u

typedef struct {
    _Atomic uint64_t gen; /* of the handle now issued, or the next one once retired */
    void *_Atomic obj;    /* the live object, NULL when free */
    void *kept;           /* a free slot of the work table: the object its last handle named */
    _Atomic uint32_t next_free; /* free list: index + 1, 0 for none */
} tc_api_slot_t;

typedef struct {
    tc_api_slot_t *_Atomic chunks[TC_API_H_NCHUNKS];
    _Atomic uint32_t nslots;   /* slots ever made */
    _Atomic uint64_t free_top; /* the free list's top: (pushes and pops) << 32 | (index + 1) */
} tc_api_handle_table_t;

/* [TC_API_H_COMM], [TC_API_H_WORK], [TC_API_H_WIN] (handles.c) */
extern tc_api_handle_table_t tc_api_handle_tables[4];

typedef enum {
    TC_API_H_LIVE,
    TC_API_H_STALE,
    TC_API_H_FOREIGN,
    TC_API_H_OTHER_KIND
} tc_api_lookup_t;

static inline tc_api_slot_t *tc_api_slot_at(tc_api_handle_table_t *t, uint32_t index)
{
    tc_api_slot_t *chunk =
        atomic_load_explicit(&t->chunks[index >> TC_API_H_CHUNK_BITS], memory_order_acquire);
    return chunk ? &chunk[index & (TC_API_H_CHUNK_SLOTS - 1)] : NULL;
}

static inline __attribute__((always_inline)) tc_api_lookup_t
tc_api_handle_lookup(unsigned kind, const void *handle, void **obj_p)
{
    uintptr_t h = (uintptr_t)handle;
    if ((h & ((1u << TC_API_H_KIND_BITS) - 1)) != kind)
        return (h & 3u) != 0 &&
                       (kind == TC_API_H_WIN || (h & 3u) == (TC_API_H_COMM ^ TC_API_H_WORK ^ kind))
                   ? TC_API_H_OTHER_KIND
                   : TC_API_H_FOREIGN;
    tc_api_handle_table_t *t = &tc_api_handle_tables[kind];
    uint32_t index = (uint32_t)((h >> TC_API_H_KIND_BITS) & ((1u << TC_API_H_SLOT_BITS) - 1));
    uint64_t gen = (uint64_t)h >> TC_API_H_GEN_SHIFT;
    if (gen == 0 || index >= atomic_load_explicit(&t->nslots, memory_order_acquire))
        return TC_API_H_FOREIGN;
    tc_api_slot_t *s = tc_api_slot_at(t, index);
    if (!s)
        return TC_API_H_FOREIGN;
    uint64_t now = atomic_load_explicit(&s->gen, memory_order_acquire);
    void *obj = atomic_load_explicit(&s->obj, memory_order_acquire);
    if (gen > now)
        return TC_API_H_FOREIGN; /* never issued */
    if (gen < now || !obj)
        return TC_API_H_STALE; /* every generation below the slot's was issued, then retired */
    *obj_p = obj;
    return TC_API_H_LIVE;
}

/* Sets the text of why a handle was refused (out of line and cold: the getters stay small). */
void tc_api_handle_refused(unsigned kind, const void *h, const char *fn, tc_api_lookup_t why)
    __attribute__((cold));

/* The live object of handle @p h of @p kind, with *@p st_p TC_OK; or NULL, with *@p st_p
 * TC_ERR_INVALID_ARG for NULL and TC_ERR_INVALID_STATE for a destroyed or freed handle or a value
 * that is no handle of that kind, and a text naming @p fn. */
static inline __attribute__((always_inline)) void *
tc_api_handle_obj(unsigned kind, const void *h, const char *fn, tc_status_t *st_p)
{
    void *obj = NULL;
    tc_api_lookup_t r = h ? tc_api_handle_lookup(kind, h, &obj) : TC_API_H_FOREIGN;
    if (__builtin_expect(r != TC_API_H_LIVE, 0)) {
        tc_api_handle_refused(kind, h, fn, r);
        *st_p = h ? TC_ERR_INVALID_STATE : TC_ERR_INVALID_ARG;
        return NULL;
    }
    *st_p = TC_OK;
    return obj;
}

#endif
