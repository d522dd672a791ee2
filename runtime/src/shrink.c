/* Shrink: the survivors of a communicator agree on which ranks failed and
 * form a new communicator of the others.
 *
 * The agreement itself is agree.c (a state machine without I/O); here each
 * of its rounds is one tolerant exchange over the transports: a message to
 * and from each neighbour it names, where a neighbour lost during the round
 * ends only its own steps and its receive counts as nothing received. Failures learnt from the
 * world (transports, launcher, notices) feed it before and during each round. After it,
 * agreements on the new communicator's id until one confirms that every member holds it
 * (shrink_confirm_id). The rounds are tagged (number of the shrink << 24 | agreement << 20 |
 * round), so a late message of one shrink or agreement never matches another. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comms.h"
#include "ft.h"
#include "progress.h"
#include "tcomms/base/config.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"
#include "tcomms/runtime/agree.h"

#define ROUND_BITS 20 /* a tag: number of the shrink << 24 | agreement << 20 | round */
#define AGREEMENT_SHIFT ROUND_BITS
#define EPOCH_SHIFT 24
#define SHRINK_DENSE_MAX 256 /* all-to-all up to this size (TC_SHRINK_DENSE_MAX) */
#define SHRINK_ID_AGREEMENTS 14 /* agreements confirming the id, at most (comm_ids.c) */
_Static_assert(SHRINK_ID_AGREEMENTS < 1 << (EPOCH_SHIFT - AGREEMENT_SHIFT),
               "an agreement's number fits its bits of the tag");

/* The failures this process knows of among the communicator's ranks. */
static void shrink_learn(tc_rt_comm_t *comm, tc_rt_agree_t *a)
{
    tc_rt_world_t *world = comm->world;
    tc_rt_world_poll_events(world);
    for (int i = 0; i < world->nfailed; i++)
        tc_rt_agree_learn(a, tc_rt_comm_rank_of(comm, world->failed[i].rank));
}

/* Receive room for the neighbours' messages of a round. */
typedef struct shrink_room {
    uint8_t *slots;         /* npeers slots of msg_cap bytes */
    const uint8_t **theirs; /* per neighbour: its message or NULL */
    size_t *lens;           /* per neighbour: its length */
    int32_t *recv_step;     /* per neighbour: the step receiving from it, or -1 */
    size_t *got;            /* per step: the bytes its receive got (0: none came) */
} shrink_room_t;

/* One round: send a->msg to each neighbour with a->to set and receive one
 * from each into its slot. A failure point of TC_FAULT_INJECT may cut the
 * sends short and end this process. */
static tc_status_t shrink_round(tc_rt_comm_t *comm, tc_rt_agree_t *a, uint64_t epoch,
                                shrink_room_t *room, uint64_t deadline)
{
    tc_rt_world_t *world = comm->world;
    size_t cap = a->msg_cap;
    tc_rt_work_t w = {0};
    w.comm = comm;
    w.tolerant = 1;
    w.recv_bytes = room->got;
    w.call = (tc_rt_coll_t){.coll = TC_COLL_BARRIER,
                            .sendbuf = a->msg,
                            .recvbuf = room->slots,
                            .dtype = TC_UINT8,
                            .op = TC_SUM,
                            .root = -1};
    /* its errors say "shrink agreement round #N on comm ...", not "send/recv #N" */
    w.op = (tc_rt_op_t){TC_COLL_COUNT, a->round, comm->name, "shrink agreement round"};
    w.tag =
        tc_rt_tag(comm->comm_id, TC_RT_TAG_SHRINK, epoch | (a->round & ((1u << ROUND_BITS) - 1)));
    int64_t left = (int64_t)tc_deadline_left_ms(deadline);
    w.timeout_ms = left > 0 ? left : 1;
    tc_algo_args_t args = {
        .coll = TC_COLL_BARRIER, .nranks = comm->size, .rank = comm->rank, .root = -1};
    tc_sched_init(&w.own, &args, "shrink");
    w.own.buf_count[TC_BUF_SEND] = a->msg_len;
    w.own.buf_count[TC_BUF_RECV] = cap * (size_t)a->npeers;
    w.sched = &w.own;
    /* -1: no failure point here */
    int cut = tc_rt_fault_shrink_sends(world, epoch >> AGREEMENT_SHIFT & 0xf, a->round);
    int sent = 0;
    tc_status_t st = TC_OK;
    for (int i = 0; i < a->npeers; i++)
        room->recv_step[i] = -1;
    for (int i = 0; i < a->npeers && st == TC_OK; i++) {
        if (!a->to[i])
            continue;
        tc_step_t send = {.kind = TC_STEP_SEND,
                          .buf = TC_BUF_SEND,
                          .peer = a->peers[i],
                          .count = a->msg_len,
                          .dep = {TC_STEP_NO_DEP, TC_STEP_NO_DEP}};
        tc_step_t recv = {.kind = TC_STEP_RECV,
                          .dst_buf = TC_BUF_RECV,
                          .peer = a->peers[i],
                          .dst_off = (uint64_t)i * cap,
                          .count = cap, /* a message says its length: it may be shorter */
                          .dep = {TC_STEP_NO_DEP, TC_STEP_NO_DEP}};
        if (cut < 0 || sent < cut)
            st = tc_sched_add(&w.own, &send, NULL), sent++;
        if (st == TC_OK && cut < 0) {
            room->recv_step[i] = (int32_t)w.own.nsteps;
            room->got[w.own.nsteps] = 0;
            st = tc_sched_add(&w.own, &recv, NULL);
        }
    }
    if (st == TC_OK)
        st = tc_rt_work_run_internal(&w);
    tc_sched_free(&w.own);
    tc_rt_exec_free(&w.ex);
    if (st == TC_OK && cut >= 0) {
        char where[160];
        snprintf(where, sizeof(where), "shrink of comm '%s', round %u, after %d send(s)",
                 comm->name, a->round, sent);
        tc_rt_fault_die(world, where);
    }
    /* a receive that failed (its sender died) got nothing, whatever part of
     * a message it may have written */
    for (int i = 0; i < a->npeers; i++) {
        int k = room->recv_step[i];
        room->lens[i] = k >= 0 ? room->got[k] : 0;
        room->theirs[i] = room->lens[i] ? room->slots + (size_t)i * cap : NULL;
    }
    return st;
}

/* Run the agreement to its end, by @p deadline (world lock held); @p epoch: the number of the
 * shrink and of the agreement, in the tags. */
static tc_status_t shrink_agree(tc_rt_comm_t *comm, tc_rt_agree_t *a, shrink_room_t *room,
                                uint64_t epoch, uint64_t deadline)
{
    shrink_learn(comm, a);
    while (a->phase != TC_RT_AGREE_DONE) {
        /* tc_comm_abort ends the round running (tc_rt_comm_cancel_works), and every later */
        if (__atomic_load_n(&comm->broken, __ATOMIC_ACQUIRE) == TC_ERR_ABORTED)
            return tc_error_set(TC_ERR_ABORTED, "%s", comm->broken_why);
        if (a->round + 1 >= (1u << ROUND_BITS) || tc_deadline_passed(deadline))
            return tc_error_set(TC_ERR_TIMEOUT, "no agreement after %u rounds", a->round);
        tc_status_t st = tc_rt_agree_begin(a);
        if (st == TC_OK)
            st = shrink_round(comm, a, epoch, room, deadline);
        if (st != TC_OK)
            return st;
        shrink_learn(comm, a); /* failures learnt during the round */
        if ((st = tc_rt_agree_end(a, room->theirs, room->lens)) != TC_OK)
            return st;
        if (a->phase == TC_RT_AGREE_DONE)
            break;
        shrink_learn(comm, a);
    }
    if (a->adopted_from >= 0)
        tc_log_debug(TC_SUBSYS_RUNTIME, "comm '%s' shrink: adopted the decision of rank %d",
                     comm->name, a->adopted_from);
    return TC_OK;
}

/* The exchange graph (its diameter is a search over the ranks: done before
 * the world lock is taken). */
tc_status_t tc_rt_shrink_config(int64_t *dense_max_p)
{
    return tc_config_int("TC_SHRINK_DENSE_MAX", SHRINK_DENSE_MAX, 1, INT32_MAX, dense_max_p);
}

static tc_status_t shrink_graph(const tc_rt_comm_t *comm, tc_rt_agree_graph_t *g)
{
    int64_t dense_max;
    tc_status_t st = tc_rt_shrink_config(&dense_max);
    return st == TC_OK ? tc_rt_agree_graph(comm->size, (int)dense_max, g) : st;
}

/* The agreement's state, with this rank's id proposal @p held, and room for its messages (world
 * lock held). */
static tc_status_t shrink_setup(tc_rt_comm_t *comm, const tc_rt_agree_graph_t *g, uint32_t held,
                                tc_rt_agree_t *a, shrink_room_t *room)
{
    tc_status_t st = tc_rt_agree_init(a, g, comm->rank, held);
    if (st != TC_OK)
        return st;
    size_t n = (size_t)a->npeers;
    room->slots = malloc(n * a->msg_cap + 1);
    room->theirs = malloc(n * sizeof(*room->theirs) + 1);
    room->lens = malloc(n * sizeof(*room->lens) + 1);
    room->recv_step = malloc(n * sizeof(*room->recv_step) + 1);
    room->got = malloc(2 * n * sizeof(*room->got) + 1);
    if (!room->slots || !room->theirs || !room->lens || !room->recv_step || !room->got)
        return tc_error_set(TC_ERR_NO_MEMORY, "agreement room for %d neighbours", a->npeers);
    return TC_OK;
}

/* Agreements on the id after the first until one confirms the last one's (world lock held):
 * each member holds the id of the last agreement (or another, comm_ids.c) and proposes it; when
 * the deepest proposal is the last one's, every member holds it. Ranks an agreement found
 * failed count as failed from the next one's start. @p epoch: the shrink's in the tags. @p held_p:
 * the id this rank holds (a depth), the agreed one at the end; @p a: the last agreement; @p
 * rounds_p, @p agreements_p: rounds and agreements added. */
static tc_status_t shrink_confirm_id(tc_rt_comm_t *comm, const tc_rt_agree_graph_t *g,
                                     tc_rt_agree_t *a, shrink_room_t *room, uint64_t epoch,
                                     uint64_t deadline, uint32_t *held_p, uint32_t *rounds_p,
                                     int *agreements_p)
{
    for (int k = 0; k < SHRINK_ID_AGREEMENTS; k++) {
        uint32_t depth = a->next_id, id;
        if (tc_rt_agree_failed(a, comm->rank))
            return TC_OK; /* not a member: the caller says so */
        tc_status_t st = tc_rt_ids_shrink_id(depth, &id); /* a member had none: all fail */
        if (st != TC_OK)
            return st;
        *held_p = tc_rt_ids_shrink_move(comm->world, *held_p, depth);
        tc_rt_agree_t next;
        memset(&next, 0, sizeof(next));
        st = tc_rt_agree_init(&next, g, comm->rank, *held_p);
        for (int q = 0; q < comm->size && st == TC_OK; q++)
            if (tc_rt_agree_failed(a, q))
                (void)tc_rt_agree_learn(&next, q);
        if (st == TC_OK)
            st = shrink_agree(comm, &next, room, epoch | (uint64_t)(k + 1) << AGREEMENT_SHIFT,
                              deadline);
        tc_rt_agree_free(a);
        *a = next;
        *rounds_p += a->round;
        ++*agreements_p;
        if (st != TC_OK || a->next_id == depth)
            return st;
        tc_log_debug(TC_SUBSYS_RUNTIME,
                     "comm '%s' shrink: id %u is not free on every member; agreeing again",
                     comm->name, id);
    }
    return tc_error_set(TC_ERR_NO_RESOURCE,
                        "no communicator id free on every member was confirmed by %d agreements "
                        "(shrinks on other threads took the ids each agreed on)",
                        SHRINK_ID_AGREEMENTS + 1);
}

/* This rank decided alone (@p n == 1 of more), leaving out a rank whose verdict named this one
 * failed: that rank lived after this one went quiet, so this rank was cut off (stopped, or its
 * links down) and the others shrink without it. Only alone: an agreement of several ranks is
 * theirs too, and one member backing out of it would leave the others a member that never
 * comes (an old accusation the others rejected, whose author died since, must not do that). */
static tc_status_t shrink_accused(const tc_rt_comm_t *comm, const tc_rt_agree_t *a, int n)
{
    int accuser = __atomic_load_n(&comm->world->accuser1, __ATOMIC_RELAXED) - 1;
    int q = accuser >= 0 ? tc_rt_comm_rank_of(comm, accuser) : -1;
    if (q < 0 || n != 1 || comm->size < 2 || !tc_rt_agree_failed(a, q))
        return TC_OK;
    return tc_error_set(TC_ERR_PEER_FAILED,
                        "this rank (%d) is the only one left here, and rank %d, left out, counted "
                        "it as failed: this rank was cut off from the others, who shrink without "
                        "it",
                        comm->rank, q);
}

tc_status_t tc_rt_comm_shrink(tc_rt_comm_t *comm, const tc_rt_comm_params_t *params,
                              tc_rt_comm_t **child_p)
{
    tc_rt_world_t *world = comm->world;
    int size = comm->size;
    tc_rt_agree_t a;
    shrink_room_t room = {0};
    int *wranks = NULL;
    uint64_t start = tc_time_ns();
    tc_rt_agree_graph_t g;
    memset(&a, 0, sizeof(a));
    tc_status_t st = tc_rt_comm_child_hints(comm, params);
    if (st != TC_OK) {
        tc_error_prefix("comm '%s' shrink: ", comm->name);
        return st;
    }
    st = shrink_graph(comm, &g);
    uint64_t deadline = tc_deadline_after_ms((uint64_t)comm->timeout_ms); /* for all agreements */
    uint32_t rounds = 0, id = 0;
    int agreements = 1;
    tc_rt_world_lock(world);
    uint64_t epoch = (uint64_t)++comm->shrinks << EPOCH_SHIFT;
    uint32_t held = tc_rt_ids_shrink_hold(world);
    if (st == TC_OK)
        st = shrink_setup(comm, &g, held, &a, &room);
    if (st == TC_OK) {
        wranks = malloc((size_t)size * sizeof(int));
        st = wranks ? shrink_agree(comm, &a, &room, epoch, deadline)
                    : tc_error_set(TC_ERR_NO_MEMORY, "state for %d ranks", size);
        rounds = a.round;
    }
    if (st == TC_OK)
        st = shrink_confirm_id(comm, &g, &a, &room, epoch, deadline, &held, &rounds, &agreements);
    tc_rt_world_unlock(world);
    int n = 0, me = -1, nfailed = 0;
    for (int q = 0; q < size && st == TC_OK; q++) {
        if (tc_rt_agree_failed(&a, q)) {
            nfailed++;
            continue;
        }
        if (q == comm->rank)
            me = n;
        wranks[n++] = tc_rt_world_rank(comm, q);
    }
    if (st == TC_OK && me < 0)
        st = tc_error_set(TC_ERR_PEER_FAILED,
                          "the other ranks count this rank (%d) as failed: it is not in the "
                          "shrunk communicator",
                          comm->rank);
    if (st == TC_OK)
        st = shrink_accused(comm, &a, n);
    if (st == TC_OK)
        st = tc_rt_ids_shrink_id(held, &id); /* held on every member */
    if (st != TC_OK) {
        tc_rt_world_lock(world);
        tc_rt_ids_shrink_drop(world, held);
        tc_rt_world_unlock(world);
    }
    if (st == TC_OK) {
        char name[64];
        snprintf(name, sizeof(name), "%.50s.shrunk", comm->name);
        st = tc_rt_comm_make(comm, params, name, wranks, n, me, id, child_p);
    }
    int npeers = a.npeers, window = a.g.window;
    tc_rt_agree_free(&a);
    free(room.slots);
    free(room.theirs);
    free(room.lens);
    free(room.recv_step);
    free(room.got);
    free(wranks);
    if (st != TC_OK) {
        tc_error_prefix("comm '%s' shrink: ", comm->name);
        return st;
    }
    tc_log_info(TC_SUBSYS_RUNTIME,
                "comm '%s' shrink: %d failed, %d survivors agreed in %u "
                "round(s) of %d agreement(s) with %d neighbours each (%d quiet rounds decide), "
                "%.1f ms; new comm '%s' id %u",
                comm->name, nfailed, n, rounds, agreements, npeers, window,
                (double)(tc_time_ns() - start) / 1e6, (*child_p)->name, (*child_p)->comm_id);
    return TC_OK;
}
