/* The plans of a communicator: a schedule of the algorithm layer for a call,
 * found in the communicator's cache (the same shape again: training loops
 * build nothing) or built for it; all_to_all_v's pairwise schedule. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comms.h"
#include "tcomms/base/config.h"
#include "tcomms/base/log.h"

/* Ring schedules carry a block larger than this in pieces of this size: piece
 * j of the next step leaves as soon as piece j of this one is reduced, so a
 * peer copies one piece while this rank reduces the next. Large enough that a
 * piece's messages cost little beside its bytes. */
#define TC_RT_RING_PIECE_BYTES (2u << 20)

/* Elements per piece for ring algorithm @p name of @p args (0: one piece). */
static uint64_t comm_ring_piece(const tc_algo_args_t *args, const char *name, size_t elem_size)
{
    if (strcmp(name, "ring") != 0 || elem_size == 0 ||
        (args->coll != TC_COLL_ALL_REDUCE && args->coll != TC_COLL_REDUCE_SCATTER &&
         args->coll != TC_COLL_ALL_GATHER))
        return 0;
    /* all-reduce's count is the whole vector; the others' a block (v: the average) */
    uint64_t block =
        args->coll == TC_COLL_ALL_REDUCE ? args->count / (uint64_t)args->nranks : args->count;
    if (args->counts) {
        block = 0;
        for (int q = 0; q < args->nranks; q++)
            block += args->counts[q];
        block /= (uint64_t)args->nranks;
    }
    return block * elem_size > TC_RT_RING_PIECE_BYTES ? TC_RT_RING_PIECE_BYTES / elem_size : 0;
}

/* Build the schedule of a call the algorithm layer knows into @p sched. */
static tc_status_t comm_build(tc_rt_comm_t *comm, const tc_rt_work_t *work, const char *hint,
                              tc_sched_t *sched)
{
    const tc_rt_coll_t *call = &work->call;
    int in_place = call->sendbuf == call->recvbuf && !work->stage_send;
    size_t elem_size = tc_dtype_size(call->dtype);
    uint64_t *counts = NULL, *displs = NULL;
    if (call->counts) {
        counts = work->varr;
        displs = call->displs ? work->varr + comm->size : NULL;
    }
    tc_algo_args_t args = {.coll = call->coll,
                           .nranks = comm->size,
                           .rank = comm->rank,
                           .root = call->root,
                           .count = call->count,
                           .in_place = in_place,
                           .counts = counts,
                           .displs = displs,
                           .ranks_per_node = comm->ranks_per_node,
                           .oversub = comm->world->oversub};
    const char *name;
    tc_status_t st = tc_algo_select(&args, elem_size, hint, &name);
    if (st != TC_OK)
        return st;
    args.chunk_count = comm_ring_piece(&args, name, elem_size);
    return tc_algo_build(&args, name, sched);
}

/* all_to_all_v: pairwise exchange; step k sends to rank + k and receives from
 * rank - k, so no rank receives from two peers at once. Zero-length blocks
 * still send an empty message, which keeps matching trivial. */
static tc_status_t comm_build_a2av(tc_rt_comm_t *comm, const tc_rt_work_t *work, tc_sched_t *sched)
{
    int p = comm->size, me = comm->rank;
    const uint64_t *sc = work->varr, *sd = sc + p, *rc = sd + p, *rd = rc + p;
    tc_algo_args_t args = {.coll = TC_COLL_ALL_TO_ALL, .nranks = p, .rank = me, .root = -1};
    tc_sched_init(sched, &args, "pairwise");
    tc_status_t st = TC_OK;
    for (int q = 0; q < p; q++) {
        if (sd[q] + sc[q] > sched->buf_count[TC_BUF_SEND])
            sched->buf_count[TC_BUF_SEND] = sd[q] + sc[q];
        if (rd[q] + rc[q] > sched->buf_count[TC_BUF_RECV])
            sched->buf_count[TC_BUF_RECV] = rd[q] + rc[q];
    }
    tc_step_t copy = {.kind = TC_STEP_COPY,
                      .buf = TC_BUF_SEND,
                      .dst_buf = TC_BUF_RECV,
                      .off = sd[me],
                      .dst_off = rd[me],
                      .count = sc[me],
                      .dep = {TC_STEP_NO_DEP, TC_STEP_NO_DEP}};
    if (sc[me] != rc[me])
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "rank %d sends itself %llu elements but expects "
                            "%llu",
                            me, (unsigned long long)sc[me], (unsigned long long)rc[me]);
    if (sc[me] && (st = tc_sched_add(sched, &copy, NULL)) != TC_OK)
        goto fail;
    for (int k = 1; k < p && st == TC_OK; k++) {
        int to = (me + k) % p, from = (me - k + p) % p;
        tc_step_t send = {.kind = TC_STEP_SEND,
                          .buf = TC_BUF_SEND,
                          .peer = to,
                          .off = sd[to],
                          .count = sc[to],
                          .dep = {TC_STEP_NO_DEP, TC_STEP_NO_DEP}};
        tc_step_t recv = {.kind = TC_STEP_RECV,
                          .dst_buf = TC_BUF_RECV,
                          .peer = from,
                          .dst_off = rd[from],
                          .count = rc[from],
                          .dep = {TC_STEP_NO_DEP, TC_STEP_NO_DEP}};
        if ((st = tc_sched_add(sched, &send, NULL)) == TC_OK)
            st = tc_sched_add(sched, &recv, NULL);
    }
    if (st == TC_OK)
        return TC_OK;
fail:
    tc_sched_free(sched);
    return st;
}

tc_status_t tc_rt_plan_get(tc_rt_comm_t *comm, tc_rt_work_t *work, const char *hint)
{
    const tc_rt_coll_t *call = &work->call;
    tc_status_t st;
    if (call->sendcounts && hint && strcmp(hint, "pairwise") != 0)
        /* one algorithm: a hint naming another is refused, not ignored */
        return tc_error_set(TC_ERR_NOT_FOUND,
                            "no all_to_all_v algorithm named '" TC_ECHO_FMT
                            "'; valid names: pairwise",
                            TC_ECHO(hint));
    if (call->sendcounts || call->counts || work->persistent) {
        /* the shape is the call's own (or held for good): not cached */
        st = call->sendcounts ? comm_build_a2av(comm, work, &work->own)
                              : comm_build(comm, work, hint, &work->own);
        if (st == TC_OK)
            work->sched = work->main_sched = &work->own;
        return st;
    }
    int in_place = call->sendbuf == call->recvbuf;
    size_t elem_size = tc_dtype_size(call->dtype);
    const char *key = hint ? hint : "";
    tc_rt_sched_entry_t *victim = NULL;
    for (int i = 0; i < TC_RT_SCHED_CACHE; i++) {
        tc_rt_sched_entry_t *e = &comm->sched_cache[i];
        if (e->last_use && e->coll == call->coll && e->count == call->count &&
            e->elem_size == elem_size && e->root == call->root && e->in_place == in_place &&
            strcmp(e->algo, key) == 0) {
            e->last_use = ++comm->sched_uses;
            e->users++;
            work->entry = e;
            work->sched = work->main_sched = &e->sched;
            return TC_OK;
        }
        if (e->users == 0 && (!victim || e->last_use < victim->last_use))
            victim = e;
    }
    tc_sched_t sched = {0};
    if ((st = comm_build(comm, work, hint, &sched)) != TC_OK)
        return st;
    if (!victim || strlen(key) >= sizeof(victim->algo)) {
        /* every entry is running (many asynchronous shapes at once) */
        work->own = sched;
        work->sched = work->main_sched = &work->own;
        return TC_OK;
    }
    /* checked and compiled once, here: runs of the entry check nothing */
    tc_rt_plan_t plan = victim->plan;
    if (victim->last_use)
        tc_sched_free(&victim->sched);
    *victim = (tc_rt_sched_entry_t){.coll = call->coll,
                                    .count = call->count,
                                    .elem_size = elem_size,
                                    .root = call->root,
                                    .in_place = in_place,
                                    .sched = sched,
                                    .plan = plan,
                                    .stat = -1};
    size_t esize = call->coll == TC_COLL_BARRIER ? 1 : elem_size;
    if ((st = tc_rt_plan_compile(&victim->plan, &victim->sched, comm->ranks, esize)) != TC_OK) {
        tc_sched_free(&victim->sched); /* the entry stays empty (last_use 0) */
        return st;
    }
    victim->last_use = ++comm->sched_uses;
    victim->users = 1;
    /* NOLINTNEXTLINE(clang-analyzer-security.insecureAPI.strcpy): it fits, checked above */
    strcpy(victim->algo, key);
    tc_log_debug(TC_SUBSYS_RUNTIME, "comm '%s': %s schedule %s for %llu elements, %u steps",
                 comm->name, tc_coll_name(call->coll), sched.algo, (unsigned long long)call->count,
                 sched.nsteps);
    work->entry = victim;
    work->sched = work->main_sched = &victim->sched;
    return TC_OK;
}

void tc_rt_plan_cache_free(tc_rt_comm_t *comm)
{
    for (int i = 0; i < TC_RT_SCHED_CACHE; i++) {
        if (comm->sched_cache[i].last_use)
            tc_sched_free(&comm->sched_cache[i].sched);
        tc_rt_plan_free(&comm->sched_cache[i].plan);
    }
}
