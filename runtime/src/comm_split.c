/* Children of a communicator: split by color and key, duplicated, or made from a rank list;
 * the members agree on the child's ranks and id, then tc_rt_comm_make (comm.c) makes it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comms.h"
#include "tcomms/base/log.h"

typedef struct {
    int64_t color, key, id; /* id: the lowest free id the rank reserved (comm_ids.c) */
} split_entry_t;

typedef struct {
    int64_t key;
    int rank;
} split_member_t;

static int member_cmp(const void *a, const void *b)
{
    const split_member_t *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Runs a communicator-making exchange over @p parent and logs the bytes it
 * gathered into this rank (tests/runtime/boot_requests_test.sh reads them). */
static tc_status_t comm_exchange(tc_rt_comm_t *parent, tc_rt_coll_t *call, const char *what)
{
    tc_status_t st = tc_rt_coll_run(parent, call);
    size_t bytes = call->count * tc_dtype_size(call->dtype) *
                   (call->coll == TC_COLL_ALL_GATHER ? (size_t)parent->size : 1);
    tc_log_debug(TC_SUBSYS_RUNTIME, "comm '%s': %s exchanged %zu bytes into rank %d", parent->name,
                 what, bytes, parent->rank);
    return st;
}

/* Everyone's (color, key, proposed id), gathered over the parent; this rank's proposal,
 * reserved, in @p *held_p (the caller gives it back). */
static tc_status_t split_gather(tc_rt_comm_t *parent, int color, int key, split_entry_t **all_p,
                                int64_t *held_p)
{
    split_entry_t *all = calloc((size_t)parent->size, sizeof(*all));
    if (!all)
        return tc_error_set(TC_ERR_NO_MEMORY, "split: %d entries", parent->size);
    split_entry_t mine = {color, key, color >= 0 ? tc_rt_ids_propose(parent->world) : 0};
    *held_p = mine.id;
    tc_rt_coll_t call = {.coll = TC_COLL_ALL_GATHER,
                         .sendbuf = &mine,
                         .recvbuf = all,
                         .count = 3,
                         .dtype = TC_INT64,
                         .op = TC_SUM,
                         .root = -1};
    tc_status_t st = comm_exchange(parent, &call, "split");
    if (st != TC_OK) {
        free(all);
        return st;
    }
    *all_p = all;
    return TC_OK;
}

static int entry_cmp(const void *a, const void *b)
{
    const split_entry_t *x = a, *y = b;
    if (x->color != y->color)
        return x->color < y->color ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Whether the members of every colour proposed one id (the same on every rank: all
 * entries are known). Sorts @p all. */
static int split_uniform(split_entry_t *all, int n)
{
    qsort(all, (size_t)n, sizeof(*all), entry_cmp);
    for (int i = 1; i < n; i++)
        if (all[i].color >= 0 && all[i].color == all[i - 1].color && all[i].id != all[i - 1].id)
            return 0;
    return 1;
}

tc_status_t tc_rt_comm_split(tc_rt_comm_t *parent, int color, int key,
                             const tc_rt_comm_params_t *params, tc_rt_comm_t **child_p)
{
    split_entry_t *all = NULL;
    int64_t held = 0, id = -1;
    *child_p = NULL;
    tc_status_t hst = tc_rt_comm_child_hints(parent, params);
    if (hst != TC_OK) {
        tc_error_prefix("comm '%s' split: ", parent->name);
        return hst;
    }
    unsigned k = ++parent->children; /* every rank of the parent counts it, joining or not */
    tc_status_t st = split_gather(parent, color, key, &all, &held);
    split_member_t *members = NULL;
    int n = 0;
    if (st == TC_OK && color >= 0 && !(members = malloc((size_t)parent->size * sizeof(*members))))
        st = tc_error_set(TC_ERR_NO_MEMORY, "members");
    if (st != TC_OK) { /* every rank learns of it in the exchanges that follow, or has */
        tc_rt_ids_release(parent->world, held);
        held = -1;
        color = -1;
    }
    if (all) {
        int64_t cand = 0;
        for (int q = 0; q < parent->size; q++) {
            if (all[q].color != color || color < 0)
                continue;
            members[n++] = (split_member_t){all[q].key, q};
            if (all[q].id > cand)
                cand = all[q].id;
        }
        int uniform = split_uniform(all, parent->size);
        free(all);
        tc_status_t sst = tc_rt_ids_settle(parent, color >= 0, held, cand, uniform, &id);
        if (st == TC_OK)
            st = sst;
    }
    if (st != TC_OK || color < 0) {
        free(members);
        if (st != TC_OK)
            tc_error_prefix("comm '%s' split: ", parent->name);
        return st;
    }
    qsort(members, (size_t)n, sizeof(*members), member_cmp);

    /* NOLINTNEXTLINE(clang-analyzer-optin.portability.UnixAPI): n >= 1, this rank has this color */
    int *wranks = malloc((size_t)n * sizeof(int));
    int me = -1;
    for (int i = 0; wranks && i < n; i++) {
        wranks[i] = tc_rt_world_rank(parent, members[i].rank);
        if (members[i].rank == parent->rank)
            me = i;
    }
    free(members);
    char name[64]; /* one child per color: the color tells them apart */
    snprintf(name, sizeof(name), "%.40s.%u.%d", parent->name, k, color);
    tc_rt_comm_t *child = NULL;
    st = wranks ? tc_rt_comm_make(parent, params, name, wranks, n, me, id, &child)
                : tc_error_set(TC_ERR_NO_MEMORY, "%d ranks", n);
    free(wranks);
    if (st != TC_OK) {
        tc_error_prefix("comm '%s' split: ", parent->name);
        return st;
    }
    tc_log_info(TC_SUBSYS_RUNTIME, "comm '%s': rank %d of %d, split from '%s' (color %d), id %u",
                child->name, child->rank, child->size, parent->name, color, child->comm_id);
    *child_p = child;
    return TC_OK;
}

/* A communicator of @p parent's ranks @p ranks (n of them, this rank at
 * @p me or absent: -1) in that order, after an all-reduce (maximum) of the
 * members' proposed ids and their negations (the largest and the smallest) and of
 * @p list_hash and its complement (the largest and the smallest hash: equal on
 * every rank or TC_ERR_MISMATCH). O(1) bytes per rank. */
static tc_status_t comm_from_list(tc_rt_comm_t *parent, const int *ranks, int n, int me,
                                  uint64_t list_hash, const tc_rt_comm_params_t *params,
                                  const char *what, tc_rt_comm_t **child_p)
{
    *child_p = NULL;
    tc_status_t hst = tc_rt_comm_child_hints(parent, params);
    if (hst != TC_OK)
        return hst;
    unsigned k = ++parent->children; /* every rank of the parent counts it, joining or not */
    int64_t held = me >= 0 ? tc_rt_ids_propose(parent->world) : 0;
    int64_t mine[4] = {held, me >= 0 ? -held : INT64_MIN, (int64_t)list_hash, ~(int64_t)list_hash};
    int64_t max[4] = {0, 0, 0, 0};
    tc_rt_coll_t call = {.coll = TC_COLL_ALL_REDUCE,
                         .sendbuf = mine,
                         .recvbuf = max,
                         .count = 4,
                         .dtype = TC_INT64,
                         .op = TC_MAX,
                         .root = -1};
    tc_status_t st = comm_exchange(parent, &call, what);
    int64_t id = -1;
    if (st == TC_OK && (max[2] != mine[2] || max[3] != mine[3]))
        st = tc_error_set(TC_ERR_MISMATCH,
                          "some rank passed a different rank list (this rank's has %d ranks)", n);
    if (st == TC_OK) /* every member proposed one id when the largest is the smallest */
        st = tc_rt_ids_settle(parent, me >= 0, held, max[0], max[0] == -max[1], &id);
    else
        tc_rt_ids_release(parent->world, held);
    if (st != TC_OK || me < 0)
        return st;
    int *wranks = malloc((size_t)n * sizeof(int));
    if (!wranks) {
        tc_rt_ids_release(parent->world, id);
        return tc_error_set(TC_ERR_NO_MEMORY, "%d ranks", n);
    }
    for (int i = 0; i < n; i++)
        wranks[i] = tc_rt_world_rank(parent, ranks ? ranks[i] : i);
    char name[64];
    snprintf(name, sizeof(name), "%.40s.%u", parent->name, k);
    st = tc_rt_comm_make(parent, params, name, wranks, n, me, id, child_p);
    free(wranks);
    if (st == TC_OK)
        tc_log_info(TC_SUBSYS_RUNTIME, "comm '%s': rank %d of %d, %s of '%s', id %u",
                    (*child_p)->name, me, n, what, parent->name, (*child_p)->comm_id);
    return st;
}

tc_status_t tc_rt_comm_dup(tc_rt_comm_t *parent, const tc_rt_comm_params_t *params,
                           tc_rt_comm_t **child_p)
{
    tc_status_t st =
        comm_from_list(parent, NULL, parent->size, parent->rank, 0, params, "dup", child_p);
    if (st != TC_OK)
        tc_error_prefix("comm '%s' dup: ", parent->name);
    return st;
}

tc_status_t tc_rt_comm_split_list(tc_rt_comm_t *parent, const int *ranks, int n, uint64_t list_hash,
                                  const tc_rt_comm_params_t *params, tc_rt_comm_t **child_p)
{
    int me = -1;
    for (int i = 0; i < n; i++)
        if (ranks[i] == parent->rank)
            me = i;
    tc_status_t st =
        comm_from_list(parent, ranks, n, me, list_hash, params, "split_ranks", child_p);
    if (st != TC_OK)
        tc_error_prefix("comm '%s' split: ", parent->name);
    return st;
}
