/* Shrink: the survivors of a communicator agree on which ranks failed and
 * form a new communicator of the others.
 *
 * The agreement runs in rounds. In each round a rank sends one message to
 * every rank it believes alive and receives one from each; a message that
 * does not come means its sender failed (its connection ends, or a notice
 * says so; the timeout bounds the rest). That is the round model with crash
 * failures: a rank that dies during a round may have reached some peers and
 * not others. Over it runs early-deciding flooding:
 *   - a rank still deciding sends SET: the failed ranks it knows and the
 *     lowest communicator id it has not used;
 *   - it decides its set when every message of the round is a SET equal to
 *     its own and it learnt of no new failure during the round;
 *   - it adopts V when a message of the round is DECIDE(V);
 *   - otherwise it takes the union of the sets and goes on to the next round.
 * A rank that decided or adopted in round k does one last round, k+1: it
 * sends DECIDE to each rank it believes alive that has not sent it a DECIDE,
 * receives their round k+1 messages, and returns.
 *
 * Why the survivors return the same set: ranks deciding in the same round
 * received each other's SET, all equal. A rank deciding in round k sends
 * DECIDE in round k+1 to every rank still deciding, so each of them that
 * hears from it adopts instead of deciding; and a rank that adopts forwards
 * the value in its own last round, so the value lives on when the first to
 * decide dies half way through its sends. A rank that dies after deciding
 * may be left in the decided set's communicator: its next operation fails
 * and the survivors shrink again. The last round's peers are exactly those
 * that expect a message: a rank that sent this one a DECIDE has finished, or
 * finishes after a last round that does not wait for this one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_impl.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"

enum { MSG_NONE = 0, MSG_SET = 0x53455431u, MSG_DECIDE = 0x44454331u }; /* "SET1", "DEC1" */

/* A message: kind, round, next free communicator id, communicator size;
 * then one bit per rank (set: failed). */
#define MSG_HDR 16

/* Rounds of one shrink are tagged (shrink number << 24 | round). */
#define ROUND_BITS 24

typedef struct {
    tc_rt_comm_t *comm;
    size_t len;     /* bytes of one message */
    uint32_t epoch; /* which shrink of this communicator */
    uint64_t deadline;
    uint8_t *dead;       /* this rank's set: one byte per rank */
    uint8_t *got_decide; /* peers that sent this rank a DECIDE */
    uint8_t *mine;       /* the message sent this round */
    uint8_t *theirs;     /* received messages, one slot per rank */
} agree_t;

static int bit_get(const uint8_t *bits, int r)
{
    return (bits[r >> 3] >> (r & 7)) & 1;
}

/* Whether the bits of @p bits equal the bytes of @p set (n ranks). */
static int same_set(const uint8_t *bits, const uint8_t *set, int n)
{
    for (int r = 0; r < n; r++)
        if (bit_get(bits, r) != set[r])
            return 0;
    return 1;
}

/* The failures this process knows of among the communicator's ranks, into the
 * set; returns how many were new. */
static int agree_learn(agree_t *a)
{
    tc_rt_comm_t *comm = a->comm;
    tc_rt_world_t *world = comm->world;
    int added = 0;
    tc_rt_world_poll_events(world);
    for (int i = 0; i < world->nfailed; i++) {
        int r = tc_rt_comm_rank_of(comm, world->failed[i].rank);
        if (r >= 0 && r != comm->rank && !a->dead[r])
            a->dead[r] = 1, added++;
    }
    return added;
}

static void msg_write(agree_t *a, uint32_t kind, uint32_t round, uint32_t next_id,
                      const uint8_t *set)
{
    uint32_t hdr[4] = {kind, round, next_id, (uint32_t)a->comm->size};
    memset(a->mine, 0, a->len);
    memcpy(a->mine, hdr, MSG_HDR);
    for (int r = 0; r < a->comm->size; r++)
        if (set[r])
            a->mine[MSG_HDR + (r >> 3)] |= (uint8_t)(1u << (r & 7));
}

/* Check peer @p q's message of @p round: its kind (MSG_NONE: none came), or
 * an error naming the peer when it is malformed. */
static tc_status_t msg_check(agree_t *a, int q, uint32_t round, uint32_t *kind_p)
{
    const uint8_t *m = a->theirs + (size_t)q * a->len;
    uint32_t hdr[4];
    memcpy(hdr, m, MSG_HDR);
    *kind_p = hdr[0];
    if (hdr[0] == MSG_NONE)
        return TC_OK;
    int n = a->comm->size, pad_ok = 1;
    for (int r = n; r < ((n + 7) & ~7); r++)
        pad_ok &= !bit_get(m + MSG_HDR, r);
    if ((hdr[0] != MSG_SET && hdr[0] != MSG_DECIDE) || hdr[1] != round || hdr[3] != (uint32_t)n ||
        !pad_ok)
        return tc_error_set(TC_ERR_PROTOCOL,
                            "rank %d sent a malformed agreement message in round %u "
                            "(kind 0x%08x, round %u, size %u; want round %u, size %d)",
                            q, round, hdr[0], hdr[1], hdr[3], round, n);
    return TC_OK;
}

/* One round: send the message to each peer with to[q] set, receive one from
 * each; a peer lost in the round leaves its slot zero. Deliberate failure
 * points for tests may cut the sends short and end this process. */
static tc_status_t agree_round(agree_t *a, uint32_t round, const uint8_t *to)
{
    tc_rt_comm_t *comm = a->comm;
    tc_rt_world_t *world = comm->world;
    tc_rt_work_t w = {0};
    w.comm = comm;
    w.tolerant = 1;
    memset(a->theirs, 0, a->len * (size_t)comm->size);
    w.call = (tc_rt_coll_t){.coll = TC_COLL_BARRIER,
                            .sendbuf = a->mine,
                            .recvbuf = a->theirs,
                            .dtype = TC_UINT8,
                            .op = TC_SUM,
                            .root = -1};
    w.op = (tc_rt_op_t){TC_COLL_COUNT, round, comm->name};
    w.tag = tc_rt_tag(comm->comm_id, TC_RT_TAG_SHRINK,
                      ((uint64_t)a->epoch << ROUND_BITS) | (round & ((1u << ROUND_BITS) - 1)));
    int64_t left = (int64_t)tc_deadline_left_ms(a->deadline);
    w.timeout_ms = left > 0 ? left : 1;
    tc_algo_args_t args = {
        .coll = TC_COLL_BARRIER, .nranks = comm->size, .rank = comm->rank, .root = -1};
    tc_sched_init(&w.own, &args, "shrink");
    w.own.buf_count[TC_BUF_SEND] = a->len;
    w.own.buf_count[TC_BUF_RECV] = a->len * (size_t)comm->size;
    w.sched = &w.own;
    int cut = tc_rt_fault_shrink_sends(world, round); /* -1: no failure point here */
    int sent = 0;
    tc_status_t st = TC_OK;
    for (int q = 0; q < comm->size && st == TC_OK; q++) {
        if (q == comm->rank || !to[q])
            continue;
        tc_step_t send = {.kind = TC_STEP_SEND,
                          .buf = TC_BUF_SEND,
                          .peer = q,
                          .count = a->len,
                          .dep = {TC_STEP_NO_DEP, TC_STEP_NO_DEP}};
        tc_step_t recv = {.kind = TC_STEP_RECV,
                          .dst_buf = TC_BUF_RECV,
                          .peer = q,
                          .dst_off = (uint64_t)q * a->len,
                          .count = a->len,
                          .dep = {TC_STEP_NO_DEP, TC_STEP_NO_DEP}};
        if (cut < 0 || sent < cut)
            st = tc_sched_add(&w.own, &send, NULL), sent++;
        if (st == TC_OK && cut < 0)
            st = tc_sched_add(&w.own, &recv, NULL);
    }
    if (st == TC_OK)
        st = tc_rt_work_run_internal(&w);
    tc_sched_free(&w.own);
    tc_rt_exec_free(&w.ex);
    if (st == TC_OK && cut >= 0) {
        char where[160];
        snprintf(where, sizeof(where), "shrink of comm '%s', round %u, after %d send(s)",
                 comm->name, round, sent);
        tc_rt_fault_die(world, where);
    }
    return st;
}

/* The agreement; on success dead[] holds the decided set and *next_id_p the
 * id of the new communicator. */
static tc_status_t agree(agree_t *a, uint32_t *next_id_p, uint32_t *rounds_p)
{
    tc_rt_comm_t *comm = a->comm;
    int n = comm->size;
    uint8_t *to = calloc((size_t)n, 1), *decided = calloc((size_t)n, 1);
    if (!to || !decided) {
        free(to), free(decided);
        return tc_error_set(TC_ERR_NO_MEMORY, "agreement state for %d ranks", n);
    }
    uint32_t next_id = comm->world->next_comm_id, round = 0;
    int have_decision = 0;
    tc_status_t st = TC_OK;
    while (!have_decision) {
        round++;
        if (round >= (1u << ROUND_BITS) || tc_deadline_passed(a->deadline)) {
            st = tc_error_set(TC_ERR_TIMEOUT, "no agreement after %u rounds", round - 1);
            break;
        }
        agree_learn(a);
        for (int q = 0; q < n; q++)
            to[q] = !a->dead[q] && q != comm->rank;
        msg_write(a, MSG_SET, round, next_id, a->dead);
        if ((st = agree_round(a, round, to)) != TC_OK)
            break;
        /* the round's messages: a DECIDE ends it; otherwise compare and merge */
        int same = 1, decide_from = -1;
        uint32_t round_id = next_id;
        for (int q = 0; q < n && st == TC_OK; q++) {
            uint32_t kind;
            if (!to[q])
                continue;
            if ((st = msg_check(a, q, round, &kind)) != TC_OK)
                break;
            const uint8_t *m = a->theirs + (size_t)q * a->len;
            if (kind == MSG_NONE) { /* lost in the round */
                a->dead[q] = 1;
                same = 0;
                continue;
            }
            uint32_t id;
            memcpy(&id, m + 8, 4);
            if (kind == MSG_DECIDE) {
                a->got_decide[q] = 1;
                if (decide_from < 0) {
                    decide_from = q;
                    next_id = id;
                    for (int r = 0; r < n; r++)
                        decided[r] = (uint8_t)bit_get(m + MSG_HDR, r);
                } else if (id != next_id || !same_set(m + MSG_HDR, decided, n)) {
                    st = tc_error_set(TC_ERR_INTERNAL,
                                      "ranks %d and %d sent different decisions in round %u",
                                      decide_from, q, round);
                }
                continue;
            }
            if (id > round_id)
                round_id = id;
            /* compared with the set this rank sent; merged (this rank too, if
             * another counts it as failed: it then learns so in the end) */
            same &= memcmp(m + MSG_HDR, a->mine + MSG_HDR, a->len - MSG_HDR) == 0;
            for (int r = 0; r < n; r++)
                a->dead[r] |= (uint8_t)bit_get(m + MSG_HDR, r);
        }
        if (st != TC_OK)
            break;
        if (decide_from >= 0) {
            have_decision = 1;
            tc_log_debug(TC_SUBSYS_RUNTIME,
                         "comm '%s' shrink: round %u: adopted the decision of rank %d", comm->name,
                         round, decide_from);
        } else {
            /* a failure learnt during the round (a send that failed, a notice) also defers */
            same &= agree_learn(a) == 0;
            next_id = round_id;
            if (same) {
                have_decision = 1;
                memcpy(decided, a->dead, (size_t)n);
            }
        }
    }
    if (st == TC_OK) {
        /* the last round: tell the ranks still deciding, hear them once more */
        round++;
        agree_learn(a);
        for (int q = 0; q < n; q++)
            to[q] = q != comm->rank && !a->dead[q] && !decided[q] && !a->got_decide[q];
        msg_write(a, MSG_DECIDE, round, next_id, decided);
        st = agree_round(a, round, to);
        for (int q = 0; q < n && st == TC_OK; q++) {
            uint32_t kind, id;
            if (!to[q] || (st = msg_check(a, q, round, &kind)) != TC_OK || kind != MSG_DECIDE)
                continue;
            const uint8_t *m = a->theirs + (size_t)q * a->len;
            memcpy(&id, m + 8, 4);
            if (id != next_id || !same_set(m + MSG_HDR, decided, n))
                st = tc_error_set(TC_ERR_INTERNAL,
                                  "rank %d decided a different set from this rank's in round %u", q,
                                  round);
        }
        memcpy(a->dead, decided, (size_t)n);
    }
    *next_id_p = next_id;
    *rounds_p = round;
    free(to), free(decided);
    return st;
}

tc_status_t tc_rt_comm_shrink(tc_rt_comm_t *comm, const tc_rt_comm_params_t *params,
                              tc_rt_comm_t **child_p)
{
    tc_rt_world_t *world = comm->world;
    int size = comm->size;
    agree_t a = {.comm = comm, .len = MSG_HDR + ((size_t)size + 7) / 8};
    a.dead = calloc((size_t)size, 1);
    a.got_decide = calloc((size_t)size, 1);
    a.mine = malloc(a.len);
    a.theirs = malloc(a.len * (size_t)size);
    int *wranks = malloc((size_t)size * sizeof(int));
    tc_status_t st = TC_OK;
    if (!a.dead || !a.got_decide || !a.mine || !a.theirs || !wranks)
        st = tc_error_set(TC_ERR_NO_MEMORY, "state for %d ranks", size);
    uint64_t start = tc_time_ns();
    uint32_t next_id = 0, rounds = 0;
    if (st == TC_OK) {
        a.deadline = tc_deadline_after_ms((uint64_t)comm->timeout_ms);
        tc_rt_world_lock(world);
        a.epoch = ++comm->shrinks;
        st = agree(&a, &next_id, &rounds);
        tc_rt_world_unlock(world);
    }
    int n = 0, me = -1, nfailed = 0;
    for (int q = 0; q < size && st == TC_OK; q++) {
        if (a.dead[q]) {
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
    if (st == TC_OK) {
        char name[64];
        snprintf(name, sizeof(name), "%.50s.shrunk", comm->name);
        st = tc_rt_comm_make(comm, params, name, wranks, n, me, next_id, child_p);
    }
    free(a.dead), free(a.got_decide), free(a.mine), free(a.theirs), free(wranks);
    if (st != TC_OK) {
        tc_error_prefix("comm '%s' shrink: ", comm->name);
        return st;
    }
    tc_log_info(TC_SUBSYS_RUNTIME,
                "comm '%s' shrink: %d failed, %d survivors agreed in %u "
                "round(s), %.1f ms; new comm '%s' id %u",
                comm->name, nfailed, n, rounds, (double)(tc_time_ns() - start) / 1e6,
                (*child_p)->name, (*child_p)->comm_id);
    return TC_OK;
}
