/* TC_FAULT_INJECT: failure points chosen in advance, for fault-injection tests
 * that need a failure at an exact place no timing can hit reliably (half way
 * through the sends of one round of a shrink).
 *
 * The variable holds points separated by ';', each KIND:key=value:...:
 *   shrink:rank=W:round=K[:sends=N][:agreement=A]
 *                                    world rank W, in round K of a shrink's
 *                                    agreement A (0, the default: the first, on
 *                                    the members; 1 up: those that confirm the
 *                                    id), sends its message to its first N peers
 *                                    (in rank order; default 0) and dies;
 *   step:rank=W:op=S[:step=I]        world rank W dies as it starts step I
 *                                    (default 0) of collective number S (from
 *                                    1) of any communicator;
 *   create:rank=W                    world rank W dies inside the creation of
 *                                    the world communicator, once joined to the
 *                                    launcher, before the bootstrap's fence;
 *   fence:rank=W:ms=N                world rank W pauses N ms after the PMIx
 *                                    bootstrap's fence of the world's creation
 *                                    completes, before it looks for ranks
 *                                    missing from it (a slow rank, reliably);
 *   vote:rank=W[:ms=N]               world rank W, at the small-message path's
 *                                    first vote with its lanes up: dies, or with
 *                                    ms goes on progressing N ms before voting
 *                                    (failures meanwhile are learnt first);
 *   close:rank=W:op=S                world rank W closes its endpoint to world rank
 *                                    W + 1 (mod the size) as a small-message path
 *                                    operation numbered S (from 1) of any
 *                                    communicator begins, as when a request on it
 *                                    could not be taken back: the lanes in its
 *                                    segment go with it;
 *   mute:rank=W                      world rank W sends no heartbeats (its other
 *                                    messages, and its goodbye, go as usual), as
 *                                    when they wait behind bulk data on a slow link.
 * Points naming other ranks are ignored, so one value serves every rank of a
 * job. "Dies" is SIGKILL to itself, as a crash would: that is what the variable
 * asks for, and nothing else in the library ends the process. A malformed
 * value fails communicator creation with TC_ERR_CONFIG. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap_impl.h"
#include "ft.h"
#include "tcomms/base/config.h"
#include "tcomms/base/log.h"

/* One "key=value" of a point into *value_p; the key must be one of @p keys. */
static tc_status_t point_field(const char *point, char *field, const char *const *keys,
                               int64_t *values)
{
    char *eq = strchr(field, '=');
    if (!eq)
        return tc_error_set(TC_ERR_CONFIG, "TC_FAULT_INJECT: '%s' in point '%s' is not key=value",
                            field, point);
    *eq = '\0';
    for (int k = 0; keys[k]; k++) {
        if (strcmp(field, keys[k]) != 0)
            continue;
        char what[192];
        snprintf(what, sizeof(what), "TC_FAULT_INJECT (%s of '%s')", keys[k], point);
        return tc_parse_int(what, eq + 1, 0, INT32_MAX, &values[k]);
    }
    return tc_error_set(TC_ERR_CONFIG, "TC_FAULT_INJECT: unknown key '%s' in point '%s'", field,
                        point);
}

/* Parse one point; store it when it names this rank. */
static tc_status_t point_parse(tc_rt_world_t *world, char *point)
{
    static const char *const shrink_keys[] = {"rank", "round", "sends", "agreement", NULL};
    static const char *const step_keys[] = {"rank", "op", "step", NULL};
    static const char *const create_keys[] = {"rank", NULL};
    static const char *const fence_keys[] = {"rank", "ms", NULL}; /* vote's too */
    static const char *const close_keys[] = {"rank", "op", NULL};
    char saved[128];
    snprintf(saved, sizeof(saved), "%s", point);
    char *save = NULL, *kind = strtok_r(point, ":", &save);
    int is_shrink = kind && strcmp(kind, "shrink") == 0;
    int is_create = kind && strcmp(kind, "create") == 0;
    int is_fence = kind && strcmp(kind, "fence") == 0;
    int is_vote = kind && strcmp(kind, "vote") == 0;
    int is_close = kind && strcmp(kind, "close") == 0;
    int is_mute = kind && strcmp(kind, "mute") == 0;
    if (!kind || (!is_shrink && !is_create && !is_fence && !is_vote && !is_close && !is_mute &&
                  strcmp(kind, "step") != 0))
        return tc_error_set(TC_ERR_CONFIG,
                            "TC_FAULT_INJECT: point '%s' is not shrink:..., step:..., "
                            "create:..., fence:..., vote:..., close:... or mute:...",
                            saved);
    const char *const *keys = is_shrink              ? shrink_keys
                              : is_create || is_mute ? create_keys
                              : is_fence || is_vote  ? fence_keys
                              : is_close             ? close_keys
                                                     : step_keys;
    /* the second value is required (from 1) but for create and vote (vote: 0 ms is a death) */
    int64_t values[4] = {-1, is_create || is_mute ? 1 : is_vote ? 0 : -1, 0, 0};
    tc_status_t st = TC_OK;
    for (char *f = strtok_r(NULL, ":", &save); f && st == TC_OK; f = strtok_r(NULL, ":", &save))
        st = point_field(saved, f, keys, values);
    if (st != TC_OK)
        return st;
    if ((is_create || is_vote || is_mute) && values[0] < 0)
        return tc_error_set(TC_ERR_CONFIG, "TC_FAULT_INJECT: point '%s' needs rank=N", saved);
    if (values[0] < 0 || (!is_vote && values[1] < 1))
        return tc_error_set(TC_ERR_CONFIG,
                            "TC_FAULT_INJECT: point '%s' needs %s=N and %s=N (from 1)", saved,
                            keys[0], keys[1]);
    if (is_fence && strcmp(world->boot->ops->name, "pmix") != 0)
        return tc_error_set(TC_ERR_CONFIG,
                            "TC_FAULT_INJECT: point '%s' needs the PMIx bootstrap (this job's "
                            "is '%s')",
                            saved, world->boot->ops->name);
    if (!is_create && !is_shrink && !is_fence && !is_vote && !is_close && !is_mute)
        world->fault.steps = 1; /* the same on every rank: TC_FAULT_INJECT is the job's */
    if (values[0] != world->boot->rank)
        return TC_OK;
    if (is_fence) {
        tc_boot_pmix_fence_pause(world->boot, (uint32_t)values[1]);
    } else if (is_create) {
        world->fault.create = 1;
    } else if (is_vote) {
        world->fault.vote = 1;
        world->fault.vote_ms = (uint32_t)values[1];
    } else if (is_close) {
        world->fault.close_op = (uint64_t)values[1];
    } else if (is_mute) {
        world->fault.mute = 1;
    } else if (is_shrink) {
        world->fault.shrink_round = (uint32_t)values[1];
        world->fault.shrink_sends = (int)values[2];
        world->fault.shrink_agreement = (uint32_t)values[3];
    } else {
        world->fault.step_op = (uint64_t)values[1];
        world->fault.step_idx = (uint32_t)values[2];
    }
    tc_log_warn(TC_SUBSYS_RUNTIME, "TC_FAULT_INJECT: this process will %s at '%s'",
                is_mute                                  ? "send no heartbeats"
                : is_close                               ? "close an endpoint"
                : is_fence || (is_vote && values[1] > 0) ? "pause"
                                                         : "die",
                saved);
    return TC_OK;
}

tc_status_t tc_rt_fault_init(tc_rt_world_t *world)
{
    const char *spec = tc_config_string("TC_FAULT_INJECT", NULL);
    memset(&world->fault, 0, sizeof(world->fault));
    if (!spec || !*spec)
        return TC_OK;
    char *copy = strdup(spec);
    if (!copy)
        return tc_error_set(TC_ERR_NO_MEMORY, "TC_FAULT_INJECT");
    tc_status_t st = TC_OK;
    char *save = NULL;
    for (char *p = strtok_r(copy, ";", &save); p && st == TC_OK; p = strtok_r(NULL, ";", &save))
        st = point_parse(world, p);
    free(copy);
    if (st == TC_OK && world->fault.create)
        tc_rt_fault_die(world, "the creation of the world communicator");
    return st;
}

int tc_rt_fault_shrink_sends(const tc_rt_world_t *world, uint32_t agreement, uint32_t round)
{
    return world->fault.shrink_round && world->fault.shrink_round == round &&
                   world->fault.shrink_agreement == agreement
               ? world->fault.shrink_sends
               : -1;
}

void tc_rt_fault_step(tc_rt_world_t *world, uint64_t op, uint32_t step)
{
    if (op == world->fault.step_op && step == world->fault.step_idx) {
        char where[64];
        snprintf(where, sizeof(where), "step %u of collective %llu", step, (unsigned long long)op);
        tc_rt_fault_die(world, where);
    }
}

void tc_rt_fault_close(tc_rt_world_t *world, uint64_t op)
{
    if (op != __atomic_load_n(&world->fault.close_op, __ATOMIC_RELAXED))
        return;
    __atomic_store_n(&world->fault.close_op, 0, __ATOMIC_RELAXED);
    int peer = (world->boot->rank + 1) % world->boot->size;
    tc_log_warn(TC_SUBSYS_RUNTIME,
                "TC_FAULT_INJECT: rank %d closes its endpoint to rank %d (operation %llu)",
                world->boot->rank, peer, (unsigned long long)op);
    tc_rt_world_ep_drop(world, peer);
}

int64_t tc_rt_fault_vote(tc_rt_world_t *world)
{
    if (!world->fault.vote)
        return -1;
    world->fault.vote = 0;
    if (world->fault.vote_ms == 0)
        tc_rt_fault_die(world, "the small-message path's vote");
    tc_log_warn(TC_SUBSYS_RUNTIME, "TC_FAULT_INJECT: rank %d waits %u ms before its vote",
                world->boot->rank, world->fault.vote_ms);
    return world->fault.vote_ms;
}

void tc_rt_fault_die(tc_rt_world_t *world, const char *where)
{
    tc_log_warn(TC_SUBSYS_RUNTIME, "TC_FAULT_INJECT: rank %d dies at %s", world->boot->rank, where);
    kill(getpid(), SIGKILL);
}
