/* A single send or receive of a given rank (the work module): no schedule, plan or executor,
 * but one transport request on a work of its own kind, waited for like any work, so the flight
 * recorder, the statistics (send_recv, "p2p"), timeouts, failures and cancellation behave as
 * on the general path. Its tag is the rank's next one, as a batch's would be. Blocking without
 * a work object it runs on the communicator's own work (comm->p2p_one, made once); otherwise
 * on a heap work (a spare of the communicator when there is one). Batches of several take the
 * general path (a schedule of SEND/RECV steps). */
#include <stdio.h>
#include <stdlib.h>

#include "comms.h"

static void one_describe(const tc_rt_work_t *w, char *buf, size_t cap)
{
    snprintf(buf, cap, "(p2p, rank %d of %d, %s rank %d)", w->comm->rank, w->comm->size,
             w->one.send ? "send to" : "recv from", w->one.peer);
}

static void one_awaited(const tc_rt_work_t *w, char *buf, size_t cap)
{
    snprintf(buf, cap, "%d%s", w->one.peer, w->one.send ? " (to accept our sends)" : "");
}

/* An error of the operation, its text naming it and the peer. */
static int one_error(tc_rt_work_t *w, tc_status_t st, const char *why)
{
    char what[128], desc[96];
    one_describe(w, desc, sizeof(desc));
    return (int)tc_error_set(st, "%s %s: %s", tc_rt_op_what(&w->op, what, sizeof(what)), desc, why);
}

/* The request ended with @p st: 0 when it moved the bytes expected, else the error. */
static int one_result(tc_rt_work_t *w, tc_status_t st)
{
    const tc_rt_work_one_t *o = &w->one;
    char why[TC_TP_ERROR_LEN + 64];
    if (st == TC_OK && (o->send || o->req.bytes == o->cap))
        return 0;
    if (st == TC_ERR_TRUNCATED && !o->send) {
        snprintf(why, sizeof(why),
                 "rank %d sent more than the %zu bytes this receive expects (the ranks passed "
                 "different counts)",
                 o->peer, o->cap);
        return one_error(w, TC_ERR_MISMATCH, why);
    }
    if (st == TC_OK) {
        snprintf(why, sizeof(why),
                 "received %zu bytes from rank %d, expected %zu (the ranks passed different "
                 "counts)",
                 o->req.bytes, o->peer, o->cap);
        return one_error(w, TC_ERR_MISMATCH, why);
    }
    int wpeer = tc_rt_world_rank(w->comm, o->peer);
    const tc_tp_ep_t *ep = tc_rt_world_ep_get(w->comm->world, wpeer);
    if (st == TC_ERR_PEER_FAILED || (ep && ep->failed == TC_ERR_PEER_FAILED)) {
        st = TC_ERR_PEER_FAILED;
        w->failed_peer = wpeer; /* named by the failure path */
    }
    return one_error(w, st,
                     tc_rt_world_req_why(w->comm->world, wpeer, o->peer, !o->send, o->cap, st, why,
                                         sizeof(why)));
}

static int one_pass(tc_rt_work_t *w)
{
    tc_status_t st = __atomic_load_n(&w->one.req.status, __ATOMIC_ACQUIRE);
    if (st == TC_INPROGRESS ||
        (st == TC_ERR_ABORTED && !w->one.send &&
         tc_rt_work_withdrawn_wait(w, tc_rt_world_rank(w->comm, w->one.peer))))
        return 0;
    return one_result(w, st);
}

/* Asked after a pass that found no error: the request moved its bytes (a receive whose message
 * was withdrawn is not done while it waits in one_pass). */
static int one_done(const tc_rt_work_t *w)
{
    return __atomic_load_n(&w->one.req.status, __ATOMIC_ACQUIRE) == TC_OK;
}

void tc_rt_one_take_back(tc_rt_work_t *w)
{
    if (!w->one.posted || __atomic_load_n(&w->one.req.status, __ATOMIC_ACQUIRE) != TC_INPROGRESS)
        return;
    tc_rt_world_t *world = w->comm->world;
    int wpeer = tc_rt_world_rank(w->comm, w->one.peer);
    tc_tp_ep_t *ep = tc_rt_world_ep_get(world, wpeer);
    if (ep && (!ep->ops->cancel || ep->ops->cancel(ep, &w->one.req) != TC_OK))
        tc_rt_world_ep_drop(world, wpeer); /* closing the endpoint ends the request */
}

static void one_end(tc_rt_work_t *w, tc_status_t st)
{
    (void)st;
    tc_rt_one_take_back(w);
}

static const tc_rt_work_ops_t one_ops = {one_pass,     one_done,    one_end,
                                         one_describe, one_awaited, "p2p"};

/* Post the request of the started work @p w; TC_OK or the error (set). */
static tc_status_t one_post(tc_rt_work_t *w, uint64_t tag)
{
    tc_rt_world_t *world = w->comm->world;
    tc_rt_work_one_t *o = &w->one;
    int wpeer = tc_rt_world_rank(w->comm, o->peer);
    tc_tp_ep_t *ep = world->eps[wpeer];
    tc_status_t st;
    if (!ep && (st = tc_rt_world_ep(world, wpeer, w->deadline, &ep)) != TC_OK) {
        char why[320];
        snprintf(why, sizeof(why), "connecting to rank %d: %s", o->peer, tc_last_error());
        return (tc_status_t)one_error(w, st, why);
    }
    o->req = (tc_tp_req_t)TC_TP_REQ_INIT;
    w->ex.withdrawn_ns = 0;
    tc_error_clear(); /* a failed post's detail is the transport's, not an older one */
    st = o->send ? tc_tp_send(ep, tag, o->buf, o->cap, &o->req)
                 : tc_tp_recv(ep, tag, o->buf, o->cap, &o->req);
    if (st == TC_OK || st == TC_INPROGRESS) {
        o->posted = 1;
        return TC_OK;
    }
    return (tc_status_t)one_error(w, st,
                                  tc_tp_ep_error(ep)[0] ? tc_tp_ep_error(ep)
                                  : tc_last_error()[0]  ? tc_last_error()
                                                        : tc_status_string(st));
}

/* The work that runs @p op (lock held): the communicator's own, or a heap work when the caller
 * wants one or does not wait (@p heap). */
static tc_status_t one_work(tc_rt_comm_t *comm, int heap, tc_rt_work_t **w_p)
{
    tc_rt_work_t *w = heap ? tc_rt_work_alloc(comm) : comm->p2p_one;
    if (!w && !heap && (w = calloc(1, sizeof(*w))) != NULL) {
        w->comm = comm;
        comm->p2p_one = w;
    }
    if (!w)
        return tc_error_set(TC_ERR_NO_MEMORY, "send/recv on comm '%s': work object", comm->name);
    if (!heap && tc_rt_work_get_state(w) == TC_RT_WORK_RUNNING)
        return tc_error_set(TC_ERR_INVALID_STATE,
                            "send/recv on comm '%s': another blocking send/recv is running "
                            "(calls on one communicator must not be concurrent)",
                            comm->name);
    *w_p = w;
    return TC_OK;
}

tc_status_t tc_rt_one_run(tc_rt_comm_t *comm, const tc_rt_p2p_t *op, int64_t timeout_ms, int flags,
                          tc_rt_work_t **work_p)
{
    int async = (flags & TC_RT_ASYNC) != 0;
    tc_rt_work_t *w = NULL;
    tc_status_t st = one_work(comm, async || work_p, &w);
    if (st != TC_OK)
        return st;
    uint64_t tag;
    if ((st = tc_rt_p2p_tag(comm, op->peer, op->is_send, 1, &tag)) != TC_OK) {
        if (w->heap)
            tc_rt_work_release(w);
        return st;
    }
    size_t bytes = op->count * tc_dtype_size(op->dtype);
    w->ops = &one_ops;
    w->one = (tc_rt_work_one_t){
        .buf = op->buf, .cap = bytes, .peer = op->peer, .send = op->is_send, .req = TC_TP_REQ_INIT};
    w->op = (tc_rt_op_t){TC_COLL_COUNT, ++comm->p2p_ops, comm->name, NULL};
    w->call = (tc_rt_coll_t){
        .coll = TC_COLL_COUNT, .count = bytes, .dtype = TC_UINT8, .op = TC_SUM, .root = -1};
    tc_rt_work_begin(w, async, timeout_ms);
    if (tc_rt_work_link(w)) {
        tc_status_t posted = one_post(w, tag);
        tc_rt_work_after_first(w, posted != TC_OK ? (int)posted : one_pass(w));
    }
    st = tc_rt_work_get_state(w) == TC_RT_WORK_RUNNING ? TC_OK : w->result;
    if (st != TC_OK)
        tc_error_set(st, "%s", w->error);
    if (work_p)
        *work_p = w;
    else if (w->heap)
        tc_rt_work_release(w);
    return st;
}
