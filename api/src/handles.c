/* Handles with a generation.
 *
 * What the application holds as a tc_comm_t *, tc_work_t * or tc_win_t * is not the
 * address of anything: it is an opaque value encoding a slot index and a
 * generation,
 *
 *     bits 63..24  generation (40 bits, starting at 1)
 *     bits 23..2   slot index (22 bits: up to 4,194,304 handles of one kind alive)
 *     bits  1..0   kind (1: communicator, 2: work object, 3: window)
 *
 * decoded at every entry point (tc_api_comm_get, tc_api_work_get,
 * tc_api_win_get: inline, handles.h). A slot points at the live object;
 * destroying a communicator or freeing a work
 * frees the object at once and raises the slot's generation, so the old
 * handle value never addresses anything again: the next communicator created
 * in that slot gets a different value, and a call with the old one fails with
 * TC_ERR_INVALID_STATE ("was destroyed" / "was freed"). A value that was never
 * issued (garbage, a work passed as a communicator) is refused without being
 * dereferenced.
 *
 * Why this design rather than never reusing an address: keeping every
 * retired object (or its address) forever grows without bound with the
 * number of communicators or work objects ever created; reusing them (as
 * before) made a stale handle silently address the next object. Here memory
 * is bounded by the most handles alive at once: the objects are freed (a
 * work object stays in its free slot for the next one), and the slot table
 * (32 bytes a slot, in chunks of 1024 that never move, so lookups take no
 * lock) only grows when every slot is in use. A slot whose generation would
 * wrap (2^40 reuses) is retired for good, one slot per 2^40 cycles. Chunks
 * stay reachable from a static table, so leak checkers see no leak. Issuing
 * and retiring take no lock (a lock-free free list); only making new slots
 * does. Concurrent use of a handle while another thread destroys it is the
 * application's race, as with any free(). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "api_impl.h"

#define GEN_MAX ((UINT64_C(1) << (64 - TC_API_H_GEN_SHIFT)) - 1)

_Static_assert(sizeof(uintptr_t) == 8, "handles encode 64-bit values");

static pthread_mutex_t grow_mu = PTHREAD_MUTEX_INITIALIZER; /* making slots, nothing else */
/* [TC_API_H_COMM], [TC_API_H_WORK], [TC_API_H_WIN]; read by the inline lookup (handles.h) */
tc_api_handle_table_t tc_api_handle_tables[4];

/* The free list is a lock-free stack of slot indices: an asynchronous operation issues and
 * retires a work handle, and threads on different communicators must not meet on a lock there.
 * The count in the top's high half changes with every push and pop, so a top that was popped and
 * pushed back while a thread read it compares different (no ABA). Slots never move or go away,
 * so reading a slot's next_free that another thread just took is harmless: the exchange fails. */
static tc_api_slot_t *free_pop(tc_api_handle_table_t *t, uint32_t *index_p)
{
    uint64_t top = atomic_load_explicit(&t->free_top, memory_order_acquire);
    while ((uint32_t)top) {
        uint32_t index = (uint32_t)top - 1;
        tc_api_slot_t *s = tc_api_slot_at(t, index);
        uint64_t next =
            (((top >> 32) + 1) << 32) | atomic_load_explicit(&s->next_free, memory_order_relaxed);
        if (atomic_compare_exchange_weak_explicit(&t->free_top, &top, next, memory_order_acquire,
                                                  memory_order_acquire)) {
            *index_p = index;
            return s;
        }
    }
    return NULL;
}

static void free_push(tc_api_handle_table_t *t, tc_api_slot_t *s, uint32_t index)
{
    uint64_t top = atomic_load_explicit(&t->free_top, memory_order_relaxed), want;
    do {
        atomic_store_explicit(&s->next_free, (uint32_t)top, memory_order_relaxed);
        want = (((top >> 32) + 1) << 32) | (index + 1);
    } while (!atomic_compare_exchange_weak_explicit(&t->free_top, &top, want, memory_order_release,
                                                    memory_order_relaxed));
}

/* A slot not yet used, or NULL when all 2^22 are (or memory ran out). */
static tc_api_slot_t *slot_new(tc_api_handle_table_t *t, uint32_t *index_p)
{
    tc_api_slot_t *s = NULL;
    pthread_mutex_lock(&grow_mu);
    uint32_t index = atomic_load(&t->nslots);
    if (index < (1u << TC_API_H_SLOT_BITS)) {
        uint32_t c = index >> TC_API_H_CHUNK_BITS;
        if (!atomic_load(&t->chunks[c])) {
            tc_api_slot_t *chunk = calloc(TC_API_H_CHUNK_SLOTS, sizeof(*chunk));
            if (chunk) {
                for (uint32_t i = 0; i < TC_API_H_CHUNK_SLOTS; i++)
                    atomic_init(&chunk[i].gen, 1);
                atomic_store_explicit(&t->chunks[c], chunk, memory_order_release);
            }
        }
        if ((s = tc_api_slot_at(t, index)) != NULL)
            atomic_store(&t->nslots, index + 1);
    }
    pthread_mutex_unlock(&grow_mu);
    *index_p = index;
    return s;
}

/* A free slot (the free list first), or NULL when none is left. */
static tc_api_slot_t *slot_take(tc_api_handle_table_t *t, uint32_t *index_p)
{
    tc_api_slot_t *s = free_pop(t, index_p);
    return s ? s : slot_new(t, index_p);
}

/* Points the slot taken at @p obj: returns the handle value. */
static uintptr_t slot_publish(tc_api_slot_t *s, uint32_t index, unsigned kind, void *obj)
{
    atomic_store_explicit(&s->obj, obj, memory_order_release);
    return (uintptr_t)(atomic_load_explicit(&s->gen, memory_order_relaxed) << TC_API_H_GEN_SHIFT) |
           ((uintptr_t)index << TC_API_H_KIND_BITS) | kind;
}

/* A handle for @p obj, or 0 when none is left. */
static uintptr_t handle_issue(unsigned kind, void *obj)
{
    uint32_t index;
    tc_api_slot_t *s = slot_take(&tc_api_handle_tables[kind], &index);
    return s ? slot_publish(s, index, kind, obj) : 0;
}

/* Makes @p h stale and frees its slot, keeping @p kept there for the slot's next user; returns 0
 * when the slot is retired for good instead (its generation would wrap): @p kept is not kept. */
static int handle_retire(unsigned kind, uintptr_t h, void *kept)
{
    tc_api_handle_table_t *t = &tc_api_handle_tables[kind];
    uint32_t index = (uint32_t)((h >> TC_API_H_KIND_BITS) & ((1u << TC_API_H_SLOT_BITS) - 1));
    tc_api_slot_t *s = tc_api_slot_at(t, index);
    atomic_store_explicit(&s->obj, NULL, memory_order_release);
    uint64_t gen = atomic_load_explicit(&s->gen, memory_order_relaxed) + 1;
    atomic_store_explicit(&s->gen, gen, memory_order_release);
    if (gen >= GEN_MAX)
        return 0;
    s->kept = kept;
    free_push(t, s, index);
    return 1;
}

/* What a refusal says of each kind of handle. */
static const struct {
    const char *arg;   /* the argument's name */
    const char *ended; /* what happened to a stale one, and by which call */
    const char *ender;
    const char *other; /* what a handle of another kind is, and what was wanted */
    const char *wanted;
    const char *handle; /* "not a ... handle", and what returns them */
    const char *makers;
} kind_text[4] = {
    [TC_API_H_COMM] = {"comm", "destroyed", "tc_comm_destroy", "a work handle", "a communicator",
                       "communicator", "tc_comm_create, split, dup or shrink"},
    [TC_API_H_WORK] = {"work", "freed", "tc_work_free", "a communicator handle", "a work object",
                       "work", "an operation"},
    [TC_API_H_WIN] = {"win", "destroyed", "tc_win_destroy", "a communicator or work handle",
                      "a window", "window", "tc_win_create or tc_win_allocate"},
};

void tc_api_handle_refused(unsigned kind, const void *h, const char *fn, tc_api_lookup_t why)
{
    /* a value whose kind bits name another kind is that kind's handle only if it was issued */
    void *obj;
    unsigned own = (unsigned)((uintptr_t)h & ((1u << TC_API_H_KIND_BITS) - 1));
    if (why == TC_API_H_OTHER_KIND && tc_api_handle_lookup(own, h, &obj) == TC_API_H_FOREIGN)
        why = TC_API_H_FOREIGN;
    if (!h)
        tc_error_set(TC_ERR_INVALID_ARG, "%s: %s is NULL", fn, kind_text[kind].arg);
    else if (why == TC_API_H_STALE)
        tc_error_set(TC_ERR_INVALID_STATE, "%s: %s %p was %s (%s); the handle is stale", fn,
                     kind_text[kind].arg, h, kind_text[kind].ended, kind_text[kind].ender);
    else if (why == TC_API_H_OTHER_KIND)
        tc_error_set(TC_ERR_INVALID_STATE, "%s: %s %p is %s, not %s", fn, kind_text[kind].arg, h,
                     kind_text[kind].other, kind_text[kind].wanted);
    else
        tc_error_set(TC_ERR_INVALID_STATE, "%s: %s %p is not a %s handle (never returned by %s)",
                     fn, kind_text[kind].arg, h, kind_text[kind].handle, kind_text[kind].makers);
}

tc_status_t tc_api_comm_new(const char *fn, tc_api_comm_t **c_p)
{
    tc_api_comm_t *c = calloc(1, sizeof(*c));
    if (!c)
        return tc_error_set(TC_ERR_NO_MEMORY, "%s: allocating the communicator handle", fn);
    uintptr_t h = handle_issue(TC_API_H_COMM, c);
    if (!h) {
        free(c);
        return tc_error_set(TC_ERR_NO_RESOURCE,
                            "%s: %u communicators are alive: no handle is left (destroy some)", fn,
                            1u << TC_API_H_SLOT_BITS);
    }
    c->handle = (tc_comm_t *)h;
    *c_p = c;
    return TC_OK;
}

void tc_api_comm_retire(tc_api_comm_t *c)
{
    (void)handle_retire(TC_API_H_COMM, (uintptr_t)c->handle, NULL);
    free(c->batch);
    free(c);
}

/* A freed work object stays in its slot (tc_api_slot_t.kept) for the next handle the slot gives: an
 * asynchronous operation allocates nothing here once as many works were alive as it needs, and
 * the objects kept are bounded by the most alive at once (16 bytes each, beside the slot's 32). */
tc_status_t tc_api_work_new(const char *fn, tc_api_work_t **w_p)
{
    tc_api_handle_table_t *t = &tc_api_handle_tables[TC_API_H_WORK];
    uint32_t index;
    tc_api_slot_t *s = slot_take(t, &index);
    if (!s)
        return tc_error_set(TC_ERR_NO_RESOURCE,
                            "%s: %u work objects are alive: no handle is left (free some with "
                            "tc_work_free)",
                            fn, 1u << TC_API_H_SLOT_BITS);
    tc_api_work_t *w = s->kept;
    s->kept = NULL;
    if (w) {
        *w = (tc_api_work_t){0};
    } else if (!(w = calloc(1, sizeof(*w)))) {
        free_push(t, s, index); /* never issued: its generation stands */
        return tc_error_set(TC_ERR_NO_MEMORY, "%s: allocating the work handle", fn);
    }
    w->handle = (tc_work_t *)slot_publish(s, index, TC_API_H_WORK, w);
    *w_p = w;
    return TC_OK;
}

void tc_api_work_drop(tc_api_work_t *w)
{
    if (w && !handle_retire(TC_API_H_WORK, (uintptr_t)w->handle, w))
        free(w);
}

tc_status_t tc_api_win_new(const char *fn, tc_api_win_t **w_p)
{
    tc_api_win_t *w = calloc(1, sizeof(*w));
    if (!w)
        return tc_error_set(TC_ERR_NO_MEMORY, "%s: allocating the window handle", fn);
    uintptr_t h = handle_issue(TC_API_H_WIN, w);
    if (!h) {
        free(w);
        return tc_error_set(TC_ERR_NO_RESOURCE,
                            "%s: %u windows are alive: no handle is left (destroy some)", fn,
                            1u << TC_API_H_SLOT_BITS);
    }
    w->handle = (tc_win_t *)h;
    *w_p = w;
    return TC_OK;
}

void tc_api_win_retire(tc_api_win_t *w)
{
    if (!w)
        return;
    (void)handle_retire(TC_API_H_WIN, (uintptr_t)w->handle, NULL);
    free(w);
}
