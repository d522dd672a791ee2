/* The small-message path's set-up (small.h), of the work module: at the first call the path
 * would take, every rank connects every peer, votes whether it can use the path, reserves its
 * lanes and votes again; the path is on for every rank of the communicator or for none. The
 * set-up is a state machine advanced by steps that never wait, so that an asynchronous call
 * that begins it returns at once (its work goes on with it, small_work.c); a blocking call
 * steps it until it ends.
 *
 * A vote is an all-gather of every rank's record on the general path (Bruck), an internal
 * exchange with the tag kind of TC_CHECK (which communicators on this path never use) and the
 * sequence number of the operation that began the set-up, which it does not consume (the second
 * vote with that field's top bit set), so every rank votes at the same operation. */
#include <stdio.h>
#include <stdlib.h>

#include "ft.h"
#include "obs.h"
#include "progress.h"
#include "small.h"
#include "work.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"

enum { SETUP_CONNECT = 0, SETUP_PAUSE, SETUP_VOTE1, SETUP_VOTE2 };

/* Begun by an asynchronous call, the votes time out this much after the call's deadline: the
 * call's work, which waits for them, times out first and says so in its own words (its
 * timeout, the ranks the vote waits for), and breaking the communicator ends them. */
#define SETUP_GRACE_MS 1000

void tc_rt_small_setup_begin(tc_rt_comm_t *comm, tc_rt_small_t *s, uint64_t seq, uint64_t deadline,
                             int async)
{
    (void)comm;
    __atomic_store_n(&s->state, TC_RT_SMALL_SETUP, __ATOMIC_RELEASE);
    s->phase = SETUP_CONNECT;
    s->vote_seq = seq;
    s->deadline = deadline;
    s->pause_until = 0;
    s->grace_ms = async ? SETUP_GRACE_MS : 0;
}

/* Start vote @p phase of this rank's record s->mine into s->votes: an internal work, driven by
 * whoever progresses (the progress thread too when an asynchronous call began the set-up). */
static tc_status_t vote_start(tc_rt_comm_t *comm, tc_rt_small_t *s, int phase)
{
    tc_rt_work_t *w = calloc(1, sizeof(*w));
    if (!w)
        return tc_error_set(TC_ERR_NO_MEMORY, "comm '%s': the small-message path's vote",
                            comm->name);
    w->comm = comm;
    w->call = (tc_rt_coll_t){.coll = TC_COLL_ALL_GATHER,
                             .sendbuf = &s->mine,
                             .recvbuf = s->votes,
                             .count = sizeof(s->mine),
                             .dtype = TC_UINT8,
                             .op = TC_SUM,
                             .root = -1};
    w->op = (tc_rt_op_t){TC_COLL_COUNT, s->vote_seq, comm->name, "small-message path vote"};
    uint64_t seq = s->vote_seq | (phase == 2 ? UINT64_C(1) << (TC_RT_TAG_SEQ_BITS - 1) : 0);
    w->tag = tc_rt_tag(comm->comm_id, TC_RT_TAG_CHECK, seq);
    int64_t left = (int64_t)tc_deadline_left_ms(s->deadline);
    w->timeout_ms = (left > 0 ? left : 1) + s->grace_ms;
    tc_algo_args_t args = {.coll = TC_COLL_ALL_GATHER,
                           .nranks = comm->size,
                           .rank = comm->rank,
                           .root = -1,
                           .count = sizeof(s->mine)};
    tc_status_t st = tc_algo_build(&args, "bruck", &w->own);
    if (st == TC_OK) {
        w->sched = &w->own;
        st = tc_rt_exec_begin(w);
    }
    if (st != TC_OK) {
        tc_sched_free(&w->own);
        tc_rt_exec_free(&w->ex);
        free(w);
        return st;
    }
    w->async = s->grace_ms > 0; /* begun asynchronously: the progress thread drives it too */
    w->deadline = tc_deadline_after_ms((uint64_t)w->timeout_ms);
    w->failed_peer = -1;
    w->result = TC_INPROGRESS;
    tc_rt_work_set_state(w, TC_RT_WORK_RUNNING);
    /* in the flight recorder (as "small-message path vote", the seq of the operation that
     * began it): a rank that never comes shows there, awaited; a dump showed nothing while the
     * first small operation of a communicator waited in its set-up */
    tc_rt_fr_begin(w, tc_time_ns());
    tc_rt_fr_algo(w, "bruck");
    s->vote = w;
    tc_rt_work_link(w); /* a communicator broken already ends it at once */
    return TC_OK;
}

/* The ended vote's outcome: *go_p, or why it failed. The vote is let go. */
static tc_status_t vote_end(tc_rt_comm_t *comm, tc_rt_small_t *s, int phase, int *go_p)
{
    tc_rt_work_t *w = s->vote;
    tc_status_t st = w->result;
    if (st != TC_OK)
        tc_error_set(st, "%s", w->error);
    tc_sched_free(&w->own);
    tc_rt_exec_free(&w->ex);
    free(w);
    s->vote = NULL;
    uint64_t need = 0, avail = 0;
    if (st == TC_OK)
        st = tc_rt_small_tally(s->votes, comm->size, go_p, &need, &avail);
    if (st != TC_OK) {
        tc_error_prefix("comm '%s': voting on the small-message path: ", comm->name);
        return st;
    }
    if (phase == 1 && !*go_p && need > avail)
        tc_log_info(TC_SUBSYS_RUNTIME,
                    "comm '%s': its lanes need %.1f MiB more of /dev/shm, %.1f MiB are free: no "
                    "small-message path",
                    comm->name, (double)need / 1048576.0, (double)avail / 1048576.0);
    return TC_OK;
}

static void setup_done(tc_rt_comm_t *comm, tc_rt_small_t *s, int go)
{
    /* an endpoint closed during the set-up left its pointer: the first operation looks (a new
     * endpoint may even have its address: tc_rt_small_lanes_open compares counts) */
    s->ep_drops = UINT64_MAX;
    /* release: a thread that sees ON without the world's lock sees the lanes too */
    __atomic_store_n(&s->state, go ? TC_RT_SMALL_ON : TC_RT_SMALL_OFF, __ATOMIC_RELEASE);
    tc_log_info(TC_SUBSYS_RUNTIME, "comm '%s': the small-message path is %s", comm->name,
                go ? "on" : "off");
}

/* Connect every peer; TC_OK with s->phase moved on once all are up (or one is over another
 * backend), else still connecting, or the error. A peer found failed is reported by
 * tc_rt_small_peer_failed(). */
static tc_status_t setup_connect(tc_rt_comm_t *comm, tc_rt_small_t *s)
{
    int missing;
    tc_status_t st = tc_rt_small_connect(comm, s, s->deadline, &missing, &s->mine);
    if (st == TC_ERR_PEER_FAILED && missing >= 0) {
        char why[256];
        snprintf(why, sizeof(why), "%s", tc_last_error());
        st = tc_rt_small_peer_failed(comm, missing, st, why);
        tc_log_error(TC_SUBSYS_RUNTIME, "comm '%s': %s", comm->name, tc_last_error());
    }
    if (st != TC_OK)
        return st;
    if (s->mine.ok && missing >= 0) {
        if (comm->broken != TC_OK) /* revoked, aborted or a failure learnt meanwhile */
            return tc_error_set(comm->broken, "%s", comm->broken_why);
        if (tc_time_ns() >= s->deadline)
            return tc_error_set(TC_ERR_TIMEOUT,
                                "comm '%s': the shm connection to rank %d did not come up in time",
                                comm->name, missing);
        return TC_OK;
    }
    int64_t pause_ms = tc_rt_fault_vote(comm->world); /* TC_FAULT_INJECT's vote point */
    s->pause_until = pause_ms > 0 ? tc_deadline_after_ms((uint64_t)pause_ms) : 0;
    s->phase = SETUP_PAUSE;
    return TC_OK;
}

tc_status_t tc_rt_small_setup_step(tc_rt_comm_t *comm, tc_rt_small_t *s)
{
    tc_status_t st = TC_OK;
    int go = 0;
    if (s->phase == SETUP_CONNECT && (st = setup_connect(comm, s)) != TC_OK)
        goto fail;
    if (s->phase == SETUP_PAUSE) {
        if (s->pause_until && tc_time_ns() < s->pause_until)
            return TC_OK;
        if ((st = vote_start(comm, s, 1)) != TC_OK)
            goto fail;
        s->phase = SETUP_VOTE1;
    }
    if (s->phase < SETUP_VOTE1 || tc_rt_work_get_state(s->vote) == TC_RT_WORK_RUNNING)
        return TC_OK;
    if (s->phase == SETUP_VOTE1) {
        if ((st = vote_end(comm, s, 1, &go)) != TC_OK)
            goto fail;
        if (!go) {
            setup_done(comm, s, 0);
            return TC_OK;
        }
        /* /dev/shm may have filled meanwhile (other communicators, other jobs) */
        s->mine = (tc_rt_small_vote_t){.free = UINT64_MAX, .ok = 1};
        if (tc_rt_small_lanes(comm, s) != TC_OK) {
            tc_log_info(TC_SUBSYS_RUNTIME, "%s: this rank votes against the small-message path",
                        tc_last_error());
            s->mine.ok = 0;
        }
        if ((st = vote_start(comm, s, 2)) != TC_OK)
            goto fail;
        s->phase = SETUP_VOTE2;
        return TC_OK;
    }
    if ((st = vote_end(comm, s, 2, &go)) != TC_OK)
        goto fail;
    setup_done(comm, s, go);
    return TC_OK;
fail:
    /* the ranks are out of step: whoever called breaks the communicator (tc_rt_small_fail) */
    __atomic_store_n(&s->state, TC_RT_SMALL_OFF, __ATOMIC_RELEASE);
    return st;
}

tc_status_t tc_rt_small_setup_wait(tc_rt_comm_t *comm, tc_rt_small_t *s)
{
    tc_rt_world_t *world = comm->world;
    tc_status_t st = TC_OK;
    tc_rt_progress_driving(world, 1);
    /* the state is looked at before each step: a pass of the world may end the set-up (the
     * asynchronous work of an earlier call steps it too), and a step after its end would read
     * the vote that end let go */
    while (s->state == TC_RT_SMALL_SETUP && (st = tc_rt_small_setup_step(comm, s)) == TC_OK &&
           s->state == TC_RT_SMALL_SETUP) {
        tc_rt_world_handoff(world); /* another thread's call gets in between passes */
        if (tc_rt_world_progress(world) == 0)
            tc_rt_world_wait(world, 1, 0);
    }
    tc_rt_progress_driving(world, -1);
    return st;
}

void tc_rt_small_setup_free(tc_rt_small_t *s)
{
    tc_rt_work_t *w = s->vote;
    if (!w)
        return; /* its communicator's end ended it first (tc_rt_comm_cancel_works) */
    tc_sched_free(&w->own);
    tc_rt_exec_free(&w->ex);
    free(w);
    s->vote = NULL;
}
