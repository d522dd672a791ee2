/* Receives from any source (the work module): a work that looks, in each progress pass, for
 * the next message of every rank of its communicator with the transport's probe
 * (tc_tp_probe), takes the first one it finds with a receive of that rank's next tag, and
 * completes when that receive does.
 *
 * Order. Messages between two ranks match in issue order, and receives from any source
 * match among themselves in issue order too: only the oldest one not matched yet looks
 * (comm->any_head). A receive from a given rank issued earlier took that rank's next tag at
 * its issue, so it gets that rank's message first. A receive from a given rank issued while
 * one from any source is not matched is refused (tc_rt_any_check): which message each would
 * take would depend on when they arrive.
 *
 * Cost. A pass probes every rank of the communicator (p probes, no system call), and the
 * first one connects to every rank: a rank's messages wait in its transport until this
 * process has an endpoint to it. Each receive from any source is a heap work. */
#include <stdio.h>
#include <string.h>

#include "comms.h"
#include "obs.h"
#include "progress.h"
#include "tcomms/base/time.h"

static const tc_rt_work_ops_t any_ops;

/* Off the communicator's list of receives not matched yet (if on it). */
static void any_unlink(tc_rt_work_t *w)
{
    tc_rt_comm_t *comm = w->comm;
    tc_rt_work_t *prev = NULL;
    for (tc_rt_work_t *x = comm->any_head; x; prev = x, x = x->one.next) {
        if (x != w)
            continue;
        if (prev)
            prev->one.next = w->one.next;
        else
            comm->any_head = w->one.next;
        if (comm->any_tail == w)
            comm->any_tail = prev;
        w->one.next = NULL;
        return;
    }
}

static void any_describe(const tc_rt_work_t *w, char *buf, size_t cap)
{
    const tc_rt_comm_t *comm = w->comm;
    if (w->one.peer >= 0)
        snprintf(buf, cap, "(%zu bytes, rank %d of %d, from rank %d)", w->one.cap, comm->rank,
                 comm->size, w->one.peer);
    else
        snprintf(buf, cap, "(%zu bytes, rank %d of %d, from any rank)", w->one.cap, comm->rank,
                 comm->size);
}

/* The rank matched, or every rank of the communicator (as many as fit). */
static void any_awaited(const tc_rt_work_t *w, char *buf, size_t cap)
{
    if (w->one.peer >= 0) {
        snprintf(buf, cap, "%d", w->one.peer);
        return;
    }
    size_t used = 0;
    buf[0] = '\0';
    for (int q = 0; q < w->comm->size && used + 16 < cap; q++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%d", q ? "," : "", q);
}

/* An error of the operation, its text naming it. */
static int any_error(tc_rt_work_t *w, tc_status_t st, const char *why)
{
    char what[128], desc[96];
    any_describe(w, desc, sizeof(desc));
    return (int)tc_error_set(st, "%s %s: %s", tc_rt_op_what(&w->op, what, sizeof(what)), desc, why);
}

/* The receive posted for the matched message ended: its result. */
static int any_received(tc_rt_work_t *w, tc_status_t st)
{
    char why[192];
    const tc_rt_work_one_t *a = &w->one;
    if (st == TC_OK && a->req.bytes == a->cap)
        return 0;
    if (st == TC_ERR_TRUNCATED || st == TC_OK) {
        snprintf(why, sizeof(why),
                 "rank %d sent %s bytes than the %zu this receive expects (the ranks passed "
                 "different counts)",
                 a->peer, st == TC_OK ? "fewer" : "more", a->cap);
        return any_error(w, TC_ERR_MISMATCH, why);
    }
    const tc_tp_ep_t *ep = tc_rt_world_ep_get(w->comm->world, tc_rt_world_rank(w->comm, a->peer));
    if (st == TC_ERR_PEER_FAILED || (ep && ep->failed == TC_ERR_PEER_FAILED)) {
        st = TC_ERR_PEER_FAILED;
        w->failed_peer = tc_rt_world_rank(w->comm, a->peer); /* named by the failure path */
    }
    return any_error(w, st, ep && ep->failed != TC_OK ? tc_tp_ep_error(ep) : tc_status_string(st));
}

/* Take the message found on @p ep from rank @p q: its tag is consumed, the receive posted. */
static int any_take(tc_rt_work_t *w, int q, tc_tp_ep_t *ep)
{
    tc_rt_work_one_t *a = &w->one;
    uint64_t tag;
    tc_status_t st = tc_rt_p2p_tag(w->comm, q, 0, 1, &tag);
    if (st != TC_OK)
        return any_error(w, st, tc_last_error());
    a->peer = q;
    a->look = (q + 1) % w->comm->size;
    any_unlink(w);
    w->call.root = q; /* the flight recorder's peer from now on */
    a->req = (tc_tp_req_t)TC_TP_REQ_INIT;
    st = tc_tp_recv(ep, tag, a->buf, a->cap, &a->req);
    if (st != TC_OK && st != TC_INPROGRESS)
        return any_received(w, st);
    a->posted = 1;
    /* a message already here may complete the receive at once: its length is checked now, as
     * a later pass would (the work ends as soon as its request is done) */
    st = __atomic_load_n(&a->req.status, __ATOMIC_ACQUIRE);
    int c = st == TC_INPROGRESS ? 0 : any_received(w, st);
    return c < 0 ? c : 1;
}

static int any_pass(tc_rt_work_t *w)
{
    tc_rt_work_one_t *a = &w->one;
    tc_rt_comm_t *comm = w->comm;
    if (a->peer >= 0) {
        tc_status_t st = __atomic_load_n(&a->req.status, __ATOMIC_ACQUIRE);
        return st == TC_INPROGRESS ? 0 : any_received(w, st);
    }
    if (comm->any_head != w)
        return 0; /* an older receive from any source looks first */
    tc_rt_world_t *world = comm->world;
    for (int k = 0; k < comm->size; k++) {
        int q = (a->look + k) % comm->size, wq = tc_rt_world_rank(comm, q);
        tc_tp_ep_t *ep = world->eps[wq];
        tc_status_t st;
        if (!ep && (st = tc_rt_world_ep(world, wq, w->deadline, &ep)) != TC_OK) {
            char why[320];
            snprintf(why, sizeof(why), "connecting to rank %d: %s", q, tc_last_error());
            return any_error(w, st, why);
        }
        uint64_t tag, len;
        int found;
        if ((st = tc_rt_p2p_tag(comm, q, 0, 0, &tag)) != TC_OK)
            return any_error(w, st, tc_last_error());
        /* a closed endpoint still holds what arrived before it closed (a rank that sent, then
         * left): a receive takes it as one from that rank would */
        if (tc_tp_probe(ep, tag, &found, &len) != TC_OK) { /* TC_ERR_UNSUPPORTED */
            char why[192];
            snprintf(why, sizeof(why),
                     "rank %d is reached over %s, which cannot look for a message before "
                     "receiving it",
                     q, ep->ops->name);
            return any_error(w, TC_ERR_UNSUPPORTED, why);
        }
        if (found)
            return any_take(w, q, ep);
        /* else nothing more comes from a closed one: the failure path ends this work if the
         * rank is a member that failed */
    }
    a->look = (a->look + 1) % comm->size; /* no rank is always looked at first */
    return 0;
}

static int any_done(const tc_rt_work_t *w)
{
    return w->one.peer >= 0 &&
           __atomic_load_n(&w->one.req.status, __ATOMIC_ACQUIRE) != TC_INPROGRESS;
}

static void any_end(tc_rt_work_t *w, tc_status_t st)
{
    (void)st;
    any_unlink(w);
    tc_rt_one_take_back(w);
}

static const tc_rt_work_ops_t any_ops = {any_pass,     any_done,    any_end,
                                         any_describe, any_awaited, "any_source"};

tc_status_t tc_rt_any_check(tc_rt_comm_t *comm, const tc_rt_p2p_t *ops, int n)
{
    for (int i = 0; i < n; i++) {
        if (ops[i].is_send)
            continue;
        if (ops[i].peer == TC_RT_ANY_SOURCE && n > 1)
            return tc_error_set(TC_ERR_UNSUPPORTED,
                                "send/recv on comm '%s': a receive from any source (operation %d "
                                "of a batch of %d) must be issued alone, outside a batch",
                                comm->name, i, n);
        if (ops[i].peer != TC_RT_ANY_SOURCE && comm->any_head)
            return tc_error_set(TC_ERR_INVALID_STATE,
                                "recv from rank %d on comm '%s': a receive from any source issued "
                                "before has no message yet, and which message each would take "
                                "would depend on when they arrive: wait for it first",
                                ops[i].peer, comm->name);
    }
    return TC_OK;
}

tc_status_t tc_rt_any_issue(tc_rt_comm_t *comm, const tc_rt_p2p_t *op, int64_t timeout_ms,
                            int flags, tc_rt_work_t **work_p)
{
    tc_rt_work_t *w = tc_rt_work_alloc(comm);
    if (!w)
        return tc_error_set(TC_ERR_NO_MEMORY, "recv from any source on comm '%s': work object",
                            comm->name);
    size_t bytes = op->count * tc_dtype_size(op->dtype);
    w->ops = &any_ops;
    w->one = (tc_rt_work_one_t){.buf = op->buf,
                                .cap = bytes,
                                .peer = -1,
                                .look = (comm->rank + 1) % comm->size,
                                .req = TC_TP_REQ_INIT};
    w->op = (tc_rt_op_t){TC_COLL_COUNT, ++comm->p2p_ops, comm->name, "recv_any"};
    w->call = (tc_rt_coll_t){
        .coll = TC_COLL_COUNT, .count = bytes, .dtype = TC_UINT8, .op = TC_SUM, .root = -1};
    w->sched = w->main_sched = NULL;
    w->async = (flags & TC_RT_ASYNC) != 0;
    w->timeout_ms = timeout_ms > 0 ? timeout_ms : comm->timeout_ms;
    uint64_t now = tc_time_ns();
    w->deadline = tc_deadline_add_ms(now, (uint64_t)w->timeout_ms);
    w->failed_peer = -1;
    w->start_ns = now; /* in the statistics, as send/recv of algorithm "any_source" */
    w->error[0] = '\0';
    w->result = TC_INPROGRESS;
    tc_rt_fr_begin(w, now);
    tc_rt_stats_hook_before(w);
    if (comm->any_tail)
        comm->any_tail->one.next = w;
    else
        comm->any_head = w;
    comm->any_tail = w;
    tc_rt_work_set_state(w, TC_RT_WORK_RUNNING);
    if (tc_rt_work_link(w)) {
        int c = any_pass(w);
        if (c < 0)
            tc_rt_work_fail(w, (tc_status_t)c);
        else if (any_done(w))
            tc_rt_work_end(w, TC_OK);
    }
    if (!w->async && tc_rt_work_get_state(w) == TC_RT_WORK_RUNNING) {
        tc_status_t ignored = tc_rt_work_wait_locked(w, 0); /* bounded by its deadline */
        (void)ignored;                                      /* the result is the work's */
    }
    tc_status_t st = tc_rt_work_get_state(w) == TC_RT_WORK_RUNNING ? TC_OK : w->result;
    if (st != TC_OK)
        tc_error_set(st, "%s", w->error);
    if (work_p)
        *work_p = w;
    else
        tc_rt_work_release(w);
    return st;
}

tc_status_t tc_rt_work_source(const tc_rt_work_t *w, int *src_p)
{
    char what[128];
    if (w->ops != &any_ops)
        return tc_error_set(TC_ERR_INVALID_ARG, "the work of %s is no receive from any source",
                            tc_rt_op_what(&w->op, what, sizeof(what)));
    if (tc_rt_work_get_state(w) == TC_RT_WORK_RUNNING)
        return tc_error_set(TC_ERR_INVALID_STATE, "%s is still running: its source is not known",
                            tc_rt_op_what(&w->op, what, sizeof(what)));
    if (w->result != TC_OK)
        return tc_error_set(TC_ERR_INVALID_STATE, "%s ended without a message: %s",
                            tc_rt_op_what(&w->op, what, sizeof(what)), w->error);
    *src_p = w->one.peer;
    return TC_OK;
}
