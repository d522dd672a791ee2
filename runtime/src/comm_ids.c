/* Communicator ids: which are free here, how the members of a new communicator agree on one
 * that is free on all of them, and when a destroyed communicator's id may serve again.
 *
 * An id is free here when no live communicator of this process has it, no creation in
 * progress on another thread has reserved it, and it was not spoilt. Agreement reserves
 * before it exchanges: each member proposes its lowest free id and reserves it; when every
 * member proposed the same, that is the id (one exchange, the usual case). Otherwise rounds
 * over the parent: each member reserves the candidate if it is free here and says whether
 * it could, with which of the next IDS_WINDOW ids are taken here; when one member could not,
 * all release and try the lowest id of the window free on every member (when none is, the
 * largest of the members' lowest never-used ids, free on all of them). Members whose free ids
 * interleave (each spoilt the ids of the communicators it alone broke) so find a common one in one
 * round, where stepping to the largest next free id took a round per hole. Two creations that run
 * at once on other threads never get the same id, since a member reserves an id for one creation at
 * a time; from the third round a random one of the first few common free ids keeps two such
 * creations from colliding round after round.
 *
 * A shrink cannot run that agreement over its broken parent: it takes its id from the top of the
 * range down, where splits and dups (which settle on low ids) do not look. Every id below
 * comm_id_top (the lowest a shrink reserved here) down to comm_id_high is free. Each member
 * reserves the highest id free here (a retired shrink's, else the one below comm_id_top) and the
 * shrink's agreement carries how far below the top it lies, keeping the deepest. Then
 * agreements again until one confirms: each member holds the deepest of the last or, when it
 * cannot, one of the first IDS_SHRINK_SPAN below its comm_id_top at random, and proposes what
 * it holds; when the deepest proposal is the last one's, every member holds it. Usually 2
 * agreements; 3 or 4 when a member could not hold the first; one more per member whose
 * comm_id_top lies lower than the others' and below the id, or while shrinks on other threads
 * take the same ids. Creations on other threads, shrinks begun in another order on different
 * members, and ids spoilt on some members only so find a common id. The ids a move skips are
 * used by shrinks only once they come back among the top IDS_WINDOW (tc_rt_ids_shrink_hold):
 * shrinks that compete use up about two ids each, where shrinks one after the other reuse one.
 *
 * A destroyed communicator's id is free again only if nothing of it can still arrive: no
 * operation on it ended in an error, it was never broken (a failure, a revoke, an abort) and
 * it had no windows. Otherwise the id is spoilt for the life of the world, the
 * small-message path drops lane messages that carry it, and the unexpected messages of spoilt
 * ids that the transports keep are freed whenever an id is spoilt
 * (tc_tp_discard): those of this communicator, and those of earlier ones that arrived since; and
 * for a while after, on the progress passes that look (comm_world.c), those still on their way then
 * (a sender over shm waits for that to complete). A revoke that arrives for an id this process
 * already retired spoils the id too; one for an id reserved here or never used is kept for the
 * communicator a slower member is still making (the others may revoke the new communicator at
 * once). A revoke names its communicator by (revoker, id): the revoker never reuses a revoked
 * id. */
#include <stdlib.h>
#include <string.h>

#include "comms.h"
#include "progress.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"

#define IDS_NONE (TC_RT_COMM_ID_MAX + 1) /* a member with no free id proposes this */
#define IDS_ROUNDS 64
#define IDS_WINDOW 1024    /* ids above a candidate whose state one round of agreement exchanges */
#define IDS_SHRINK_NONE (TC_RT_COMM_ID_MAX + 1) /* a shrink's depth when it holds no id */
#define IDS_SHRINK_SPAN 32 /* a shrink's move picks one of this many ids at random */
/* after an id is spoilt, the ticks free late messages of spoilt ids this long (a tick goes over
 * every endpoint: only while such messages may still come) */
#define IDS_LEFTOVERS_MS 3000
#define IDS_EARLY_MAX 4096 /* revokes kept for communicators to come; beyond, the oldest go */

struct tc_rt_early_revoke {
    uint32_t id;
    int by; /* world rank */
};

/* Reserve @p id here (lock held): TC_OK, or an error (not set) when it is not free. Every id
 * ever reserved is below comm_id_high or at or above comm_id_top: one between was never used
 * here. */
static tc_status_t ids_reserve(tc_rt_world_t *world, uint32_t id)
{
    tc_status_t st = tc_idset_take(&world->comm_ids, id);
    if (st == TC_OK && id >= world->comm_id_high && id < world->comm_id_top)
        world->comm_id_high = id + 1;
    return st;
}

tc_status_t tc_rt_ids_init(tc_rt_world_t *world)
{
    world->comm_id_top = TC_RT_COMM_ID_MAX + 1;
    world->comm_rng = tc_time_ns() ^ ((uint64_t)world->boot->rank << 32) ^ 0x9e3779b97f4a7c15ull;
    tc_idset_init(&world->comm_spoilt, 1, 0); /* empty, allocates nothing */
    tc_status_t st = tc_idset_init(&world->comm_ids, 1, TC_RT_COMM_ID_MAX); /* 0: the world */
    if (st != TC_OK)
        tc_error_prefix("communicator ids: ");
    return st;
}

void tc_rt_ids_free(tc_rt_world_t *world)
{
    free(world->early_revokes);
    world->early_revokes = NULL;
    world->nearly_revokes = world->early_revokes_cap = 0;
    tc_idset_free(&world->comm_ids);
    tc_idset_free(&world->comm_spoilt);
}

int64_t tc_rt_ids_propose(tc_rt_world_t *world)
{
    uint32_t id = IDS_NONE;
    tc_rt_world_lock(world);
    if (!tc_idset_first(&world->comm_ids, 0, &id) || ids_reserve(world, id) != TC_OK)
        id = IDS_NONE;
    tc_rt_world_unlock(world);
    return id;
}

/* tc_rt_ids_release() with the lock held. */
static void ids_release_locked(tc_rt_world_t *world, int64_t id)
{
    if (id > 0 && id <= TC_RT_COMM_ID_MAX)
        (void)tc_idset_give(&world->comm_ids, (uint32_t)id); /* it was taken: the range has room */
}

void tc_rt_ids_release(tc_rt_world_t *world, int64_t id)
{
    tc_rt_world_lock(world);
    ids_release_locked(world, id);
    tc_rt_world_unlock(world);
}

/* Reserve @p id here if it is free (lock not held): 1, or 0 when it is not. */
static int ids_take(tc_rt_world_t *world, int64_t id)
{
    if (id <= 0 || id > TC_RT_COMM_ID_MAX)
        return 0;
    tc_rt_world_lock(world);
    int ok = ids_reserve(world, (uint32_t)id) == TC_OK;
    tc_rt_world_unlock(world);
    if (!ok)
        tc_error_clear();
    return ok;
}

/* The lowest free id above @p id (lock not held); IDS_NONE. */
static int64_t ids_next(tc_rt_world_t *world, int64_t id)
{
    uint32_t next = IDS_NONE;
    tc_rt_world_lock(world);
    if (id + 1 > TC_RT_COMM_ID_MAX || !tc_idset_first(&world->comm_ids, (uint32_t)(id + 1), &next))
        next = IDS_NONE;
    tc_rt_world_unlock(world);
    return next;
}

/* Into @p map (IDS_WINDOW bits): which ids of (cand, cand + IDS_WINDOW] are not free here. */
static void ids_taken_map(tc_rt_world_t *world, int64_t cand, uint64_t *map)
{
    memset(map, 0, IDS_WINDOW / 8);
    tc_rt_world_lock(world);
    for (uint32_t i = 0; i < IDS_WINDOW; i++) {
        int64_t id = cand + 1 + i;
        if (id > TC_RT_COMM_ID_MAX || !tc_idset_has(&world->comm_ids, (uint32_t)id))
            map[i / 64] |= 1ull << (i % 64);
    }
    tc_rt_world_unlock(world);
}

static uint64_t ids_random_locked(tc_rt_world_t *world)
{
    uint64_t x = world->comm_rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    world->comm_rng = x;
    return x * 0x2545f4914f6cdd1dull;
}

static uint64_t ids_random(tc_rt_world_t *world)
{
    tc_rt_world_lock(world);
    uint64_t x = ids_random_locked(world);
    tc_rt_world_unlock(world);
    return x;
}

/* One all-reduce of @p n (at most 2 + IDS_WINDOW / 64) words over the parent, into @p words
 * (lock not held). */
static tc_status_t ids_reduce(tc_rt_comm_t *parent, int64_t *words, int n, tc_redop_t op)
{
    int64_t all[2 + IDS_WINDOW / 64] = {0}; /* (cppcheck cannot see the collective write it) */
    tc_rt_coll_t call = {.coll = TC_COLL_ALL_REDUCE,
                         .sendbuf = words,
                         .recvbuf = all,
                         .count = (size_t)n,
                         .dtype = TC_INT64,
                         .op = op,
                         .root = -1};
    tc_status_t st = tc_rt_coll_run(parent, &call);
    if (st == TC_OK)
        memcpy(words, all, (size_t)n * sizeof(*words));
    return st;
}

/* The lowest id a split or dup never used here (lock held), or IDS_NONE: never used, not only
 * free: a retired id merges back into the free ids, and a late revoke of it spoils it
 * (tc_rt_ids_revoked), where one of a never used id waits for it. */
static uint32_t ids_fresh(const tc_rt_world_t *world)
{
    uint32_t id = world->comm_id_high;
    return id < world->comm_id_top && tc_idset_has(&world->comm_ids, id) ? id : IDS_NONE;
}

/* The next candidate after a round in which not every member could hold @p cand: a free id of
 * the window that no member has taken (a random one of the first few from the third round on,
 * by @p rnd, the same on every member: two creations over the same ranks on other threads then
 * part), else the largest of the members' next free ids above the window (one more exchange). */
static tc_status_t ids_next_cand(tc_rt_comm_t *parent, int member, int round, const int64_t *w,
                                 int64_t *cand_p)
{
    const uint64_t *taken = (const uint64_t *)(w + 2);
    uint64_t rnd = (uint64_t)w[1];
    int nfree = 0, pick = -1;
    for (int i = 0; i < IDS_WINDOW; i++)
        nfree += !(taken[i / 64] >> (i % 64) & 1);
    if (nfree > 0) {
        int span = round < 2 ? 1 : round < 8 ? round + 1 : 9;
        int k = (int)(rnd % (uint64_t)(nfree < span ? nfree : span));
        for (int i = 0; i < IDS_WINDOW && pick < 0; i++)
            if (!(taken[i / 64] >> (i % 64) & 1) && k-- == 0)
                pick = i;
        *cand_p += 1 + pick;
        return TC_OK;
    }
    /* an id never used on any member is free on all (a creation on another thread that
     * reserved one raised its member's mark past it), unless a member's shrinks came down to it
     * (another round then); when those ran out, the next free ones */
    int64_t next = 0;
    if (member) {
        tc_rt_world_lock(parent->world);
        next = ids_fresh(parent->world);
        tc_rt_world_unlock(parent->world);
        if (next >= IDS_NONE)
            next = ids_next(parent->world, *cand_p + IDS_WINDOW);
    }
    tc_status_t st = ids_reduce(parent, &next, 1, TC_MAX);
    *cand_p = next;
    return st;
}

tc_status_t tc_rt_ids_settle(tc_rt_comm_t *parent, int member, int64_t held, int64_t cand,
                             int uniform, int64_t *id_p)
{
    tc_rt_world_t *world = parent->world;
    *id_p = -1;
    if (uniform) { /* every member proposed cand and holds it */
        if (member && cand >= IDS_NONE)
            return tc_error_set(TC_ERR_NO_RESOURCE,
                                "every communicator id is in use here (%u in all)",
                                TC_RT_COMM_ID_MAX);
        *id_p = member ? cand : -1;
        return TC_OK;
    }
    if (!member)
        held = -1;
    int64_t first = cand;
    for (int round = 0; round < IDS_ROUNDS; round++) {
        int none = member && cand >= IDS_NONE;
        if (member && held != cand) {
            tc_rt_ids_release(world, held);
            held = !none && ids_take(world, cand) ? cand : -1;
        }
        /* OR over the parent: whether a member could not hold cand (1) or has no id left (2),
         * a random word (rank 0's alone: an OR of many would be all ones), and which ids of
         * the window above cand are taken on some member. Every rank decides from these alone,
         * so all leave the loop together. */
        int64_t w[2 + IDS_WINDOW / 64] = {(member && held != cand) | (none << 1),
                                          parent->rank == 0 ? (int64_t)ids_random(world) : 0};
        if (member && !none)
            ids_taken_map(world, cand, (uint64_t *)(w + 2));
        tc_status_t st = ids_reduce(parent, w, 2 + IDS_WINDOW / 64, TC_BOR);
        if (st == TC_OK && (w[0] & 2)) {
            if (member)
                tc_rt_ids_release(world, held);
            return tc_error_set(TC_ERR_NO_RESOURCE,
                                "no communicator id is free on every member (%u in all)",
                                TC_RT_COMM_ID_MAX);
        }
        if (st == TC_OK && !w[0]) { /* every member holds cand */
            *id_p = member ? cand : -1;
            return TC_OK;
        }
        int64_t was = cand;
        if (st == TC_OK)
            st = ids_next_cand(parent, member, round, w, &cand);
        if (st != TC_OK) {
            if (member)
                tc_rt_ids_release(world, held);
            return st;
        }
        tc_log_debug(TC_SUBSYS_RUNTIME,
                     "comm '%s': id %lld is not free on every member; trying %lld", parent->name,
                     (long long)was, (long long)cand);
    }
    if (member)
        tc_rt_ids_release(world, held);
    return tc_error_set(TC_ERR_NO_RESOURCE,
                        "no communicator id free on every member was found in %d rounds (ids "
                        "%lld to %lld looked at; other threads creating communicators over the "
                        "same ranks take ids meanwhile)",
                        IDS_ROUNDS, (long long)first, (long long)cand);
}

/* A shrink's id and its depth below the top (what its agreements carry): 0 for none. */
static uint32_t ids_shrink_id(uint32_t depth)
{
    return depth >= 1 && depth <= TC_RT_COMM_ID_MAX ? TC_RT_COMM_ID_MAX + 1 - depth : 0;
}

/* Reserve @p id for a shrink (lock held): its depth, or IDS_SHRINK_NONE. */
static uint32_t ids_shrink_reserve(tc_rt_world_t *world, uint32_t id)
{
    if (id == 0 || id < world->comm_id_high || tc_idset_take(&world->comm_ids, id) != TC_OK) {
        tc_error_clear();
        return IDS_SHRINK_NONE;
    }
    if (id < world->comm_id_top)
        world->comm_id_top = id;
    return TC_RT_COMM_ID_MAX + 1 - id;
}

/* The (@p skip + 1)th id free here from @p id down, or 0. Retired shrinks' ids are looked for
 * among the first IDS_WINDOW; below comm_id_top every id down to comm_id_high is free. */
static uint32_t ids_shrink_free(const tc_rt_world_t *world, uint32_t id, uint32_t skip)
{
    for (int look = 0; look < IDS_WINDOW && id >= world->comm_id_top; look++, id--)
        if (tc_idset_has(&world->comm_ids, id) && skip-- == 0)
            return id;
    if (id >= world->comm_id_top)
        id = world->comm_id_top - 1;
    return id > skip && id - skip >= world->comm_id_high ? id - skip : 0;
}

uint32_t tc_rt_ids_shrink_hold(tc_rt_world_t *world)
{
    return ids_shrink_reserve(world, ids_shrink_free(world, TC_RT_COMM_ID_MAX, 0));
}

uint32_t tc_rt_ids_shrink_move(tc_rt_world_t *world, uint32_t held, uint32_t depth)
{
    if (depth == held)
        return held;
    tc_rt_ids_shrink_drop(world, held);
    uint32_t id = ids_shrink_id(depth);
    if (id == 0)
        return IDS_SHRINK_NONE;
    uint32_t got = ids_shrink_reserve(world, id);
    if (got != IDS_SHRINK_NONE)
        return got;
    /* one of the first few below comm_id_top, at random, so that shrinks on other threads
     * chasing each other part; it must lie deeper than the agreed one (not so only when that
     * one is among the splits' ids, when the ids are nearly all used). The deepest of these is
     * below the comm_id_top of every member that moved; one that held a free id above its own,
     * lower, comm_id_top may find it taken and move in the next agreement. */
    uint32_t skip = (uint32_t)(ids_random_locked(world) % IDS_SHRINK_SPAN);
    uint32_t below = ids_shrink_free(world, world->comm_id_top - 1, skip);
    return below && below < id ? ids_shrink_reserve(world, below) : IDS_SHRINK_NONE;
}

void tc_rt_ids_shrink_drop(tc_rt_world_t *world, uint32_t held)
{
    ids_release_locked(world, ids_shrink_id(held));
}

tc_status_t tc_rt_ids_shrink_id(uint32_t held, uint32_t *id_p)
{
    *id_p = ids_shrink_id(held);
    if (*id_p == 0)
        return tc_error_set(TC_ERR_NO_RESOURCE,
                            "no communicator id is free for it on every member (%u in all)",
                            TC_RT_COMM_ID_MAX);
    return TC_OK;
}

/* A message whose tag names a spoilt id: no receive will ever take it. */
static int ids_tag_spoilt(void *arg, uint64_t tag)
{
    uint64_t id = tag >> TC_RT_TAG_ID_SHIFT;
    return id != 0 && id <= TC_RT_COMM_ID_MAX && tc_rt_ids_spoilt(arg, (uint32_t)id);
}

/* Free what the transports keep of messages to communicators whose ids are spoilt (lock held):
 * those of the one just retired, and those of earlier ones that arrived since. */
static void ids_drop_leftovers(tc_rt_world_t *world)
{
    int n = 0;
    for (int r = 0; r < world->boot->size; r++)
        if (world->eps[r])
            n += tc_tp_discard(world->eps[r], ids_tag_spoilt, world);
    if (n > 0)
        tc_log_debug(TC_SUBSYS_RUNTIME, "dropped %d unexpected messages of destroyed communicators",
                     n);
}

void tc_rt_ids_tick(tc_rt_world_t *world, uint64_t now)
{
    if (now < world->leftovers_until)
        ids_drop_leftovers(world);
    else
        world->leftovers_until = 0; /* the passes stop looking */
}

void tc_rt_ids_retire(tc_rt_comm_t *comm)
{
    tc_rt_world_t *world = comm->world;
    uint32_t id = comm->comm_id;
    if (id == 0 || id > TC_RT_COMM_ID_MAX)
        return; /* the world communicator's: never another's */
    int clean = comm->broken == TC_OK && !comm->spoilt && comm->nwins == 0;
    if (clean && tc_idset_give(&world->comm_ids, id) == TC_OK)
        return;
    if (tc_idset_give(&world->comm_spoilt, id) != TC_OK) {
        tc_error_clear(); /* out of memory: the id is lost, its lane messages kept */
    } else {
        ids_drop_leftovers(world);
        world->leftovers_until = tc_deadline_after_ms(IDS_LEFTOVERS_MS);
    }
    tc_log_debug(TC_SUBSYS_RUNTIME, "comm '%s': id %u is not reused (%s)", comm->name, id,
                 comm->broken != TC_OK ? "it was broken"
                 : comm->spoilt        ? "an operation on it failed"
                                       : "it had windows");
}

int tc_rt_ids_spoilt(const tc_rt_world_t *world, uint32_t id)
{
    return tc_idset_has(&world->comm_spoilt, id);
}

/* Keep the revoke for a communicator still to come: 1, or 0 when out of memory. Full, the
 * oldest record goes (a notice for a communicator this rank is not in stays here until then). */
static int ids_keep_early(tc_rt_world_t *world, uint32_t id, int by)
{
    for (int i = 0; i < world->nearly_revokes; i++)
        if (world->early_revokes[i].id == id && world->early_revokes[i].by == by)
            return 1; /* a second notice of one revoke */
    if (world->nearly_revokes == IDS_EARLY_MAX) {
        memmove(world->early_revokes, world->early_revokes + 1,
                (size_t)(IDS_EARLY_MAX - 1) * sizeof(*world->early_revokes));
        world->nearly_revokes--;
    }
    if (world->nearly_revokes == world->early_revokes_cap) {
        int cap = world->early_revokes_cap ? 2 * world->early_revokes_cap : 4;
        struct tc_rt_early_revoke *e = realloc(world->early_revokes, (size_t)cap * sizeof(*e));
        if (!e)
            return 0;
        world->early_revokes = e;
        world->early_revokes_cap = cap;
    }
    world->early_revokes[world->nearly_revokes++] = (struct tc_rt_early_revoke){id, by};
    return 1;
}

void tc_rt_ids_revoked(tc_rt_world_t *world, uint32_t id, int by)
{
    if (id == 0 || id > TC_RT_COMM_ID_MAX || tc_rt_ids_spoilt(world, id))
        return;
    int never_used = id >= world->comm_id_high && id < world->comm_id_top;
    int reserved = !tc_idset_has(&world->comm_ids, id);
    if ((never_used || reserved) && ids_keep_early(world, id, by))
        return;
    if (reserved || tc_idset_take(&world->comm_ids, id) != TC_OK) {
        tc_error_clear(); /* reserved, and out of memory to keep it: its creation decides */
        return;
    }
    if (tc_idset_give(&world->comm_spoilt, id) != TC_OK) /* retired here: never again */
        tc_error_clear();
}

int tc_rt_ids_revoked_early(tc_rt_comm_t *comm)
{
    /* every record of this id goes: one by a member names this communicator, and no later
     * one can match another (a revoker never reuses a revoked id) */
    tc_rt_world_t *world = comm->world;
    int by = -1, kept = 0;
    for (int i = 0; i < world->nearly_revokes; i++) {
        struct tc_rt_early_revoke e = world->early_revokes[i];
        if (e.id != comm->comm_id)
            world->early_revokes[kept++] = e;
        else if (by < 0 && tc_rt_comm_rank_of(comm, e.by) >= 0)
            by = e.by;
    }
    world->nearly_revokes = kept;
    return by;
}
