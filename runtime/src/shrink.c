/* Shrink: the survivors of a communicator agree on which ranks failed and
 * form a new communicator of the others.
 *
 * Each round, every survivor sends its set of failed ranks (and the lowest
 * communicator id it has not used) to every rank it believes alive, and
 * receives theirs. A rank found dead during the round (its connection drops)
 * sends nothing; it joins the set and the round is repeated; so is a round in
 * which any set received differs from this rank's own (after the union). A round where every set
 * received equals this rank's own ends the agreement: every rank that ends in that round received
 * the same set from every other, so they all hold it. Each round has its own tags, so a stale
 * message of an earlier round never matches. Bounded by the timeout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_impl.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"

#define SHRINK_HDR 8 /* u32 next free id, u32 round; then one byte per rank: failed */

/* The failures this process knows of among @p comm's ranks, into @p dead. */
static void shrink_known(tc_rt_comm_t *comm, uint8_t *dead)
{
    tc_rt_world_t *world = comm->world;
    tc_rt_world_poll_events(world);
    for (int i = 0; i < world->nfailed; i++) {
        int r = tc_rt_comm_rank_of(comm, world->failed[i].rank);
        if (r >= 0)
            dead[r] = 1;
    }
}

/* One round: exchange the sets with every rank believed alive. */
static tc_status_t shrink_round(tc_rt_comm_t *comm, uint32_t round, const uint8_t *mine,
                                uint8_t *theirs, const uint8_t *dead, uint64_t deadline)
{
    size_t len = SHRINK_HDR + (size_t)comm->size;
    tc_rt_work_t w = {0};
    w.comm = comm;
    w.tolerant = 1;
    memset(theirs, 0, len * (size_t)comm->size); /* a rank lost in the round leaves zeros */
    w.call = (tc_rt_coll_t){.coll = TC_COLL_BARRIER,
                            .sendbuf = mine,
                            .recvbuf = theirs,
                            .dtype = TC_UINT8,
                            .op = TC_SUM,
                            .root = -1};
    w.op = (tc_rt_op_t){TC_COLL_COUNT, round, comm->name};
    w.tag = tc_rt_tag(comm->comm_id, TC_RT_TAG_SHRINK, round);
    int64_t left = (int64_t)tc_deadline_left_ms(deadline);
    w.timeout_ms = left > 0 ? left : 1;
    tc_algo_args_t args = {
        .coll = TC_COLL_BARRIER, .nranks = comm->size, .rank = comm->rank, .root = -1};
    tc_sched_init(&w.own, &args, "shrink");
    w.own.buf_count[TC_BUF_SEND] = len;
    w.own.buf_count[TC_BUF_RECV] = len * (size_t)comm->size;
    w.sched = &w.own;
    tc_status_t st = TC_OK;
    for (int q = 0; q < comm->size && st == TC_OK; q++) {
        if (q == comm->rank || dead[q])
            continue;
        tc_step_t send = {.kind = TC_STEP_SEND,
                          .buf = TC_BUF_SEND,
                          .peer = q,
                          .count = len,
                          .dep = {TC_STEP_NO_DEP, TC_STEP_NO_DEP}};
        tc_step_t recv = {.kind = TC_STEP_RECV,
                          .dst_buf = TC_BUF_RECV,
                          .peer = q,
                          .dst_off = (uint64_t)q * len,
                          .count = len,
                          .dep = {TC_STEP_NO_DEP, TC_STEP_NO_DEP}};
        if ((st = tc_sched_add(&w.own, &send, NULL)) == TC_OK)
            st = tc_sched_add(&w.own, &recv, NULL);
    }
    if (st == TC_OK)
        st = tc_rt_work_run_internal(&w);
    tc_sched_free(&w.own);
    tc_rt_exec_free(&w.ex);
    return st;
}

tc_status_t tc_rt_comm_shrink(tc_rt_comm_t *comm, const tc_rt_comm_params_t *params,
                              tc_rt_comm_t **child_p)
{
    tc_rt_world_t *world = comm->world;
    size_t len = SHRINK_HDR + (size_t)comm->size;
    uint8_t *mine = malloc(len), *theirs = malloc(len * (size_t)comm->size);
    uint8_t *dead = calloc((size_t)comm->size, 1);
    int *wranks = malloc((size_t)comm->size * sizeof(int));
    if (!mine || !theirs || !dead || !wranks) {
        free(mine), free(theirs), free(dead), free(wranks);
        return tc_error_set(TC_ERR_NO_MEMORY, "comm '%s' shrink: state for %d ranks", comm->name,
                            comm->size);
    }
    uint64_t deadline = tc_deadline_after_ms((uint64_t)comm->timeout_ms);
    uint64_t start = tc_time_ns();
    tc_status_t st;
    uint32_t round = 0, next_id = 0;
    tc_rt_world_lock(world);
    for (;;) {
        round++;
        shrink_known(comm, dead);
        next_id = world->next_comm_id;
        memcpy(mine, &next_id, 4);
        memcpy(mine + 4, &round, 4);
        memcpy(mine + SHRINK_HDR, dead, (size_t)comm->size);
        st = shrink_round(comm, round, mine, theirs, dead, deadline);
        if (st != TC_OK)
            break;
        /* A rank lost during the round sent nothing (its slot is zeros): it
         * joins the set, which differs now, so everyone repeats. Every rank
         * finishes every round (a lost peer ends only its own steps), so the
         * survivors stay in step. */
        int agree = 1;
        for (int q = 0; q < comm->size; q++) {
            if (q == comm->rank || dead[q])
                continue;
            const uint8_t *m = theirs + (size_t)q * len;
            uint32_t id, their_round;
            memcpy(&id, m, 4);
            memcpy(&their_round, m + 4, 4);
            if (their_round != round) {
                dead[q] = 1;
                agree = 0;
                continue;
            }
            if (id > next_id)
                next_id = id;
            for (int r = 0; r < comm->size; r++) {
                if (m[SHRINK_HDR + r] != dead[r])
                    agree = 0;
                dead[r] |= m[SHRINK_HDR + r];
            }
        }
        if (agree)
            break;
        if (tc_deadline_passed(deadline)) {
            st = tc_error_set(TC_ERR_TIMEOUT, "no agreement after %u rounds", round);
            break;
        }
    }
    tc_rt_world_unlock(world);
    int n = 0, me = -1, nfailed = 0;
    for (int q = 0; q < comm->size; q++) {
        if (dead[q]) {
            nfailed++;
            continue;
        }
        if (q == comm->rank)
            me = n;
        wranks[n++] = tc_rt_world_rank(comm, q);
    }
    free(mine), free(theirs), free(dead);
    if (st == TC_OK) {
        char name[64];
        snprintf(name, sizeof(name), "%.50s.shrunk", comm->name);
        st = tc_rt_comm_make(comm, params, name, wranks, n, me, next_id, child_p);
    }
    free(wranks);
    if (st != TC_OK) {
        tc_error_prefix("comm '%s' shrink: ", comm->name);
        return st;
    }
    tc_log_info(TC_SUBSYS_RUNTIME,
                "comm '%s' shrink: %d failed, %d survivors agreed in %u "
                "round(s), %.1f ms; new comm '%s' id %u",
                comm->name, nfailed, n, round, (double)(tc_time_ns() - start) / 1e6,
                (*child_p)->name, (*child_p)->comm_id);
    return TC_OK;
}
