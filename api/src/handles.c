/* Handles with a generation.
 *
 * What the application holds as a tc_comm_t * or tc_work_t * is not the
 * address of anything: it is an opaque value encoding a slot index and a
 * generation,
 *
 *     bits 63..24  generation (40 bits, starting at 1)
 *     bits 23..2   slot index (22 bits: up to 4,194,304 handles of one kind alive)
 *     bits  1..0   kind (1: communicator, 2: work object)
 *
 * decoded at every entry point (tc_api_comm_get, tc_api_work_get). A slot
 * points at the live object; destroying a communicator or freeing a work
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

#define KIND_BITS 2
#define SLOT_BITS 22
#define GEN_SHIFT (KIND_BITS + SLOT_BITS)
#define GEN_MAX ((UINT64_C(1) << (64 - GEN_SHIFT)) - 1)
#define CHUNK_BITS 10
#define CHUNK_SLOTS (1u << CHUNK_BITS)
#define NCHUNKS (1u << (SLOT_BITS - CHUNK_BITS))
#define KIND_COMM 1u
#define KIND_WORK 2u
#define KIND_WIN 3u

_Static_assert(sizeof(uintptr_t) == 8, "handles encode 64-bit values");

typedef struct {
    _Atomic uint64_t gen; /* of the handle now issued, or the next one once retired */
    void *_Atomic obj;    /* the live object, NULL when free */
    void *kept;           /* a free slot of the work table: the object its last handle named */
    _Atomic uint32_t next_free; /* free list: index + 1, 0 for none */
} slot_t;

typedef struct {
    slot_t *_Atomic chunks[NCHUNKS];
    _Atomic uint32_t nslots;   /* slots ever made */
    _Atomic uint64_t free_top; /* the free list's top: (pushes and pops) << 32 | (index + 1) */
} table_t;

static pthread_mutex_t grow_mu = PTHREAD_MUTEX_INITIALIZER; /* making slots, nothing else */
static table_t tables[4]; /* [KIND_COMM], [KIND_WORK], [KIND_WIN] */

static slot_t *slot_at(table_t *t, uint32_t index)
{
    slot_t *chunk = atomic_load_explicit(&t->chunks[index >> CHUNK_BITS], memory_order_acquire);
    return chunk ? &chunk[index & (CHUNK_SLOTS - 1)] : NULL;
}

/* The free list is a lock-free stack of slot indices: an asynchronous operation issues and
 * retires a work handle, and threads on different communicators must not meet on a lock there.
 * The count in the top's high half changes with every push and pop, so a top that was popped and
 * pushed back while a thread read it compares different (no ABA). Slots never move or go away,
 * so reading a slot's next_free that another thread just took is harmless: the exchange fails. */
static slot_t *free_pop(table_t *t, uint32_t *index_p)
{
    uint64_t top = atomic_load_explicit(&t->free_top, memory_order_acquire);
    while ((uint32_t)top) {
        uint32_t index = (uint32_t)top - 1;
        slot_t *s = slot_at(t, index);
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

static void free_push(table_t *t, slot_t *s, uint32_t index)
{
    uint64_t top = atomic_load_explicit(&t->free_top, memory_order_relaxed), want;
    do {
        atomic_store_explicit(&s->next_free, (uint32_t)top, memory_order_relaxed);
        want = (((top >> 32) + 1) << 32) | (index + 1);
    } while (!atomic_compare_exchange_weak_explicit(&t->free_top, &top, want, memory_order_release,
                                                    memory_order_relaxed));
}

/* A slot not yet used, or NULL when all 2^22 are (or memory ran out). */
static slot_t *slot_new(table_t *t, uint32_t *index_p)
{
    slot_t *s = NULL;
    pthread_mutex_lock(&grow_mu);
    uint32_t index = atomic_load(&t->nslots);
    if (index < (1u << SLOT_BITS)) {
        uint32_t c = index >> CHUNK_BITS;
        if (!atomic_load(&t->chunks[c])) {
            slot_t *chunk = calloc(CHUNK_SLOTS, sizeof(*chunk));
            if (chunk) {
                for (uint32_t i = 0; i < CHUNK_SLOTS; i++)
                    atomic_init(&chunk[i].gen, 1);
                atomic_store_explicit(&t->chunks[c], chunk, memory_order_release);
            }
        }
        if ((s = slot_at(t, index)) != NULL)
            atomic_store(&t->nslots, index + 1);
    }
    pthread_mutex_unlock(&grow_mu);
    *index_p = index;
    return s;
}

/* A free slot (the free list first), or NULL when none is left. */
static slot_t *slot_take(table_t *t, uint32_t *index_p)
{
    slot_t *s = free_pop(t, index_p);
    return s ? s : slot_new(t, index_p);
}

/* Points the slot taken at @p obj: returns the handle value. */
static uintptr_t slot_publish(slot_t *s, uint32_t index, unsigned kind, void *obj)
{
    atomic_store_explicit(&s->obj, obj, memory_order_release);
    return (uintptr_t)(atomic_load_explicit(&s->gen, memory_order_relaxed) << GEN_SHIFT) |
           ((uintptr_t)index << KIND_BITS) | kind;
}

/* A handle for @p obj, or 0 when none is left. */
static uintptr_t handle_issue(unsigned kind, void *obj)
{
    uint32_t index;
    slot_t *s = slot_take(&tables[kind], &index);
    return s ? slot_publish(s, index, kind, obj) : 0;
}

/* Makes @p h stale and frees its slot, keeping @p kept there for the slot's next user; returns 0
 * when the slot is retired for good instead (its generation would wrap): @p kept is not kept. */
static int handle_retire(unsigned kind, uintptr_t h, void *kept)
{
    table_t *t = &tables[kind];
    uint32_t index = (uint32_t)((h >> KIND_BITS) & ((1u << SLOT_BITS) - 1));
    slot_t *s = slot_at(t, index);
    atomic_store_explicit(&s->obj, NULL, memory_order_release);
    uint64_t gen = atomic_load_explicit(&s->gen, memory_order_relaxed) + 1;
    atomic_store_explicit(&s->gen, gen, memory_order_release);
    if (gen >= GEN_MAX)
        return 0;
    s->kept = kept;
    free_push(t, s, index);
    return 1;
}

typedef enum { H_LIVE, H_STALE, H_FOREIGN, H_OTHER_KIND } lookup_t;

/* Inlined into each getter: a live handle costs a few loads and compares, no call. */
static inline __attribute__((always_inline)) lookup_t
handle_lookup(unsigned kind, const void *handle, void **obj_p)
{
    uintptr_t h = (uintptr_t)handle;
    if ((h & ((1u << KIND_BITS) - 1)) != kind)
        return (h & 3u) != 0 && (kind == KIND_WIN || (h & 3u) == (KIND_COMM ^ KIND_WORK ^ kind))
                   ? H_OTHER_KIND
                   : H_FOREIGN;
    table_t *t = &tables[kind];
    uint32_t index = (uint32_t)((h >> KIND_BITS) & ((1u << SLOT_BITS) - 1));
    uint64_t gen = (uint64_t)h >> GEN_SHIFT;
    if (gen == 0 || index >= atomic_load_explicit(&t->nslots, memory_order_acquire))
        return H_FOREIGN;
    slot_t *s = slot_at(t, index);
    if (!s)
        return H_FOREIGN;
    uint64_t now = atomic_load_explicit(&s->gen, memory_order_acquire);
    void *obj = atomic_load_explicit(&s->obj, memory_order_acquire);
    if (gen > now)
        return H_FOREIGN; /* never issued */
    if (gen < now || !obj)
        return H_STALE; /* every generation below the slot's was issued, then retired */
    *obj_p = obj;
    return H_LIVE;
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
    [KIND_COMM] = {"comm", "destroyed", "tc_comm_destroy", "a work handle", "a communicator",
                   "communicator", "tc_comm_create, split, dup or shrink"},
    [KIND_WORK] = {"work", "freed", "tc_work_free", "a communicator handle", "a work object",
                   "work", "an operation"},
    [KIND_WIN] = {"win", "destroyed", "tc_win_destroy", "a communicator or work handle", "a window",
                  "window", "tc_win_create or tc_win_allocate"},
};

/* Why a handle was refused (out of line: the getters' fast path stays small). */
static __attribute__((noinline, cold)) tc_status_t handle_refused(unsigned kind, const void *h,
                                                                  const char *fn, lookup_t why)
{
    if (!h)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: %s is NULL", fn, kind_text[kind].arg);
    if (why == H_STALE)
        return tc_error_set(TC_ERR_INVALID_STATE, "%s: %s %p was %s (%s); the handle is stale", fn,
                            kind_text[kind].arg, h, kind_text[kind].ended, kind_text[kind].ender);
    if (why == H_OTHER_KIND)
        return tc_error_set(TC_ERR_INVALID_STATE, "%s: %s %p is %s, not %s", fn,
                            kind_text[kind].arg, h, kind_text[kind].other, kind_text[kind].wanted);
    return tc_error_set(TC_ERR_INVALID_STATE, "%s: %s %p is not a %s handle (never returned by %s)",
                        fn, kind_text[kind].arg, h, kind_text[kind].handle, kind_text[kind].makers);
}

/* The live object of handle @p h of @p kind, or the refusal (the getters' whole body). */
static inline __attribute__((always_inline)) tc_status_t handle_get(unsigned kind, const void *h,
                                                                    const char *fn, void **obj_p)
{
    void *obj = NULL;
    lookup_t r = h ? handle_lookup(kind, h, &obj) : H_FOREIGN;
    if (__builtin_expect(r != H_LIVE, 0))
        return handle_refused(kind, h, fn, r);
    *obj_p = obj;
    return TC_OK;
}

tc_status_t tc_api_comm_new(const char *fn, tc_api_comm_t **c_p)
{
    tc_api_comm_t *c = calloc(1, sizeof(*c));
    if (!c)
        return tc_error_set(TC_ERR_NO_MEMORY, "%s: allocating the communicator handle", fn);
    uintptr_t h = handle_issue(KIND_COMM, c);
    if (!h) {
        free(c);
        return tc_error_set(TC_ERR_NO_RESOURCE,
                            "%s: %u communicators are alive: no handle is left (destroy some)", fn,
                            1u << SLOT_BITS);
    }
    c->handle = (tc_comm_t *)h;
    *c_p = c;
    return TC_OK;
}

void tc_api_comm_retire(tc_api_comm_t *c)
{
    (void)handle_retire(KIND_COMM, (uintptr_t)c->handle, NULL);
    free(c->batch);
    free(c);
}

/* A freed work object stays in its slot (slot_t.kept) for the next handle the slot gives: an
 * asynchronous operation allocates nothing here once as many works were alive as it needs, and
 * the objects kept are bounded by the most alive at once (16 bytes each, beside the slot's 32). */
tc_status_t tc_api_work_new(const char *fn, tc_api_work_t **w_p)
{
    table_t *t = &tables[KIND_WORK];
    uint32_t index;
    slot_t *s = slot_take(t, &index);
    if (!s)
        return tc_error_set(TC_ERR_NO_RESOURCE,
                            "%s: %u work objects are alive: no handle is left (free some with "
                            "tc_work_free)",
                            fn, 1u << SLOT_BITS);
    tc_api_work_t *w = s->kept;
    s->kept = NULL;
    if (w) {
        *w = (tc_api_work_t){0};
    } else if (!(w = calloc(1, sizeof(*w)))) {
        free_push(t, s, index); /* never issued: its generation stands */
        return tc_error_set(TC_ERR_NO_MEMORY, "%s: allocating the work handle", fn);
    }
    w->handle = (tc_work_t *)slot_publish(s, index, KIND_WORK, w);
    *w_p = w;
    return TC_OK;
}

void tc_api_work_drop(tc_api_work_t *w)
{
    if (w && !handle_retire(KIND_WORK, (uintptr_t)w->handle, w))
        free(w);
}

tc_status_t tc_api_comm_get(const tc_comm_t *comm, const char *fn, tc_api_comm_t **c_p)
{
    void *obj = NULL;
    tc_status_t st = handle_get(KIND_COMM, comm, fn, &obj);
    if (st == TC_OK)
        *c_p = obj;
    return st;
}

tc_status_t tc_api_work_get(const tc_work_t *work, const char *fn, tc_api_work_t **w_p)
{
    void *obj = NULL;
    tc_status_t st = handle_get(KIND_WORK, work, fn, &obj);
    if (st == TC_OK)
        *w_p = obj;
    return st;
}

tc_status_t tc_api_win_new(const char *fn, tc_api_win_t **w_p)
{
    tc_api_win_t *w = calloc(1, sizeof(*w));
    if (!w)
        return tc_error_set(TC_ERR_NO_MEMORY, "%s: allocating the window handle", fn);
    uintptr_t h = handle_issue(KIND_WIN, w);
    if (!h) {
        free(w);
        return tc_error_set(TC_ERR_NO_RESOURCE,
                            "%s: %u windows are alive: no handle is left (destroy some)", fn,
                            1u << SLOT_BITS);
    }
    w->handle = (tc_win_t *)h;
    *w_p = w;
    return TC_OK;
}

void tc_api_win_retire(tc_api_win_t *w)
{
    if (!w)
        return;
    (void)handle_retire(KIND_WIN, (uintptr_t)w->handle, NULL);
    free(w);
}

tc_status_t tc_api_win_get(const tc_win_t *win, const char *fn, tc_api_win_t **w_p)
{
    void *obj = NULL;
    tc_status_t st = handle_get(KIND_WIN, win, fn, &obj);
    if (st == TC_OK)
        *w_p = obj;
    return st;
}
