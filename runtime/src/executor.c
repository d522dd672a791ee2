/* The executor: runs one rank's schedule over the transport with the kernels.
 *
 * Steps are posted as soon as their dependencies are done, but communication
 * steps with the same peer and direction are posted in step order: that is the
 * matching rule schedules are written to (the k-th send to a peer meets the
 * k-th receive from us). Local steps run inline. Receive-and-reduce steps land
 * in a temporary area and are reduced when they arrive. Every wait is bounded
 * by the operation's deadline. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_impl.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"
#include "tcomms/kernels/reduce.h"

enum { STEP_NEW = 0, STEP_POSTED, STEP_DONE };

/* How far past the first unfinished step the executor looks for work. */
#define EXEC_WINDOW 256

typedef struct {
    tc_rt_comm_t *comm;
    const tc_sched_t *sched;
    const tc_rt_coll_t *call;
    tc_rt_exec_state_t *ex;
    char *bufs[3];
    size_t esize;
    uint64_t tag;
    uint64_t deadline;
    const tc_rt_op_t *op;
    char what[128];   /* the operation's name, formatted on the first error */
    uint32_t first;   /* lowest step not done */
    uint32_t ndone;
} exec_t;

void tc_rt_exec_free(tc_rt_exec_state_t *ex)
{
    free(ex->state);
    free(ex->reqs);
    free(ex->tmp_off);
    free(ex->tmp);
    free(ex->scratch);
    memset(ex, 0, sizeof(*ex));
}

static tc_status_t exec_reserve(tc_rt_exec_state_t *ex, uint32_t nsteps, size_t tmp_bytes,
                                size_t scratch_bytes)
{
    if (nsteps > ex->cap) {
        uint8_t *state = realloc(ex->state, nsteps);
        if (state)
            ex->state = state;
        tc_tp_req_t *reqs = realloc(ex->reqs, nsteps * sizeof(*reqs));
        if (reqs)
            ex->reqs = reqs;
        uint64_t *off = realloc(ex->tmp_off, nsteps * sizeof(*off));
        if (off)
            ex->tmp_off = off;
        if (!state || !reqs || !off)
            return tc_error_set(TC_ERR_NO_MEMORY, "executor: state for %u steps", nsteps);
        ex->cap = nsteps;
    }
    if (tmp_bytes > ex->tmp_cap) {
        void *p = realloc(ex->tmp, tmp_bytes);
        if (!p)
            return tc_error_set(TC_ERR_NO_MEMORY, "executor: %zu bytes of receive area", tmp_bytes);
        ex->tmp = p;
        ex->tmp_cap = tmp_bytes;
    }
    if (scratch_bytes > ex->scratch_cap) {
        void *p = realloc(ex->scratch, scratch_bytes);
        if (!p)
            return tc_error_set(TC_ERR_NO_MEMORY, "executor: %zu bytes of scratch", scratch_bytes);
        ex->scratch = p;
        ex->scratch_cap = scratch_bytes;
    }
    return TC_OK;
}

static int step_is_comm(const tc_step_t *s)
{
    return s->kind == TC_STEP_SEND || s->kind == TC_STEP_RECV || s->kind == TC_STEP_RECV_REDUCE;
}

static const char *step_kind_name(uint8_t kind)
{
    static const char *const names[] = {"send", "recv", "recv_reduce", "copy", "reduce"};
    return kind < 5 ? names[kind] : "invalid";
}

static const char *exec_what(exec_t *x)
{
    return x->what[0] ? x->what : tc_rt_op_what(x->op, x->what, sizeof(x->what));
}

static tc_status_t step_fail(exec_t *x, uint32_t i, tc_status_t st, const char *why)
{
    const tc_step_t *s = &x->sched->steps[i];
    return tc_error_set(st, "%s (%s, rank %d of %d): step %u of %u (%s %s rank %d): %s", exec_what(x),
                        x->sched->algo, x->comm->rank, x->comm->size, i, x->sched->nsteps,
                        step_kind_name(s->kind), s->kind == TC_STEP_SEND ? "to" : "from", s->peer,
                        why);
}

/* Bounds of a step against its buffers; a bad schedule is an internal error. */
static tc_status_t step_check(exec_t *x, uint32_t i)
{
    const tc_step_t *s = &x->sched->steps[i];
    const uint64_t *sizes = x->sched->buf_count;
    int reads = s->kind == TC_STEP_SEND || s->kind == TC_STEP_COPY || s->kind == TC_STEP_REDUCE;
    int writes = s->kind != TC_STEP_SEND;
    if (s->kind > TC_STEP_REDUCE || (reads && s->buf > TC_BUF_SCRATCH) ||
        (writes && (s->dst_buf > TC_BUF_SCRATCH || s->dst_buf == TC_BUF_SEND)) ||
        (reads && (s->off > sizes[s->buf] || s->count > sizes[s->buf] - s->off)) ||
        (writes && (s->dst_off > sizes[s->dst_buf] || s->count > sizes[s->dst_buf] - s->dst_off)))
        return step_fail(x, i, TC_ERR_INTERNAL, "the schedule's step is out of its buffers");
    return TC_OK;
}

static tc_status_t step_reduce(exec_t *x, void *dst, const void *src, uint64_t count)
{
    return tc_kern_reduce(x->call->dtype, x->call->op, dst, dst, src, count);
}

/* Post or run step i. */
static tc_status_t step_start(exec_t *x, uint32_t i)
{
    const tc_step_t *s = &x->sched->steps[i];
    tc_status_t st = step_check(x, i);
    if (st != TC_OK)
        return st;
    size_t bytes = s->count * x->esize;
    char *src = x->bufs[s->buf] + s->off * x->esize;
    char *dst = x->bufs[s->dst_buf] + s->dst_off * x->esize;
    if (s->kind == TC_STEP_COPY || s->kind == TC_STEP_REDUCE) {
        if (s->kind == TC_STEP_COPY)
            tc_kern_copy(dst, src, bytes);
        else if ((st = step_reduce(x, dst, src, s->count)) != TC_OK)
            return st;
        x->ex->state[i] = STEP_DONE;
        x->ndone++;
        return TC_OK;
    }
    tc_tp_ep_t *ep;
    if ((st = tc_rt_comm_ep(x->comm, s->peer, x->deadline, &ep)) != TC_OK) {
        tc_error_prefix("%s: connecting to rank %d: ", exec_what(x), s->peer);
        return st;
    }
    tc_tp_req_t *req = &x->ex->reqs[i];
    *req = (tc_tp_req_t)TC_TP_REQ_INIT;
    if (s->kind == TC_STEP_SEND)
        st = tc_tp_send(ep, x->tag, src, bytes, req);
    else if (s->kind == TC_STEP_RECV)
        st = tc_tp_recv(ep, x->tag, dst, bytes, req);
    else
        st = tc_tp_recv(ep, x->tag, (char *)x->ex->tmp + x->ex->tmp_off[i], bytes, req);
    if (st != TC_OK && st != TC_INPROGRESS)
        return step_fail(x, i, st, tc_tp_ep_error(ep)[0] ? tc_tp_ep_error(ep) : tc_last_error());
    x->ex->state[i] = STEP_POSTED;
    return TC_OK;
}

/* A posted step whose request has finished. */
static tc_status_t step_finish(exec_t *x, uint32_t i)
{
    const tc_step_t *s = &x->sched->steps[i];
    tc_tp_req_t *req = &x->ex->reqs[i];
    if (req->status != TC_OK) {
        tc_tp_ep_t *ep = tc_hmap_get(&x->comm->eps, (uint64_t)s->peer);
        const char *why = ep && tc_tp_ep_error(ep)[0] ? tc_tp_ep_error(ep) : tc_last_error();
        return step_fail(x, i, req->status, why[0] ? why : tc_status_string(req->status));
    }
    if (s->kind != TC_STEP_SEND && req->bytes != s->count * x->esize) {
        char why[128];
        snprintf(why, sizeof(why), "received %zu bytes, expected %llu", req->bytes,
                 (unsigned long long)(s->count * x->esize));
        return step_fail(x, i, TC_ERR_MISMATCH, why);
    }
    if (s->kind == TC_STEP_RECV_REDUCE) {
        tc_status_t st = step_reduce(x, x->bufs[s->dst_buf] + s->dst_off * x->esize,
                                     (char *)x->ex->tmp + x->ex->tmp_off[i], s->count);
        if (st != TC_OK)
            return st;
    }
    x->ex->state[i] = STEP_DONE;
    x->ndone++;
    return TC_OK;
}

static int deps_done(const exec_t *x, const tc_step_t *s)
{
    for (int d = 0; d < 2; d++)
        if (s->dep[d] != TC_STEP_NO_DEP && x->ex->state[s->dep[d]] != STEP_DONE)
            return 0;
    return 1;
}

/* One pass over the window: finish what completed, start what is ready.
 * Returns the number of steps that changed state, or a negative status. */
static int exec_pass(exec_t *x, tc_status_t *st_p)
{
    /* (peer, direction) pairs with an earlier communication step still unposted */
    int64_t blocked[EXEC_WINDOW];
    int nblocked = 0, changed = 0;
    uint32_t end = x->first + EXEC_WINDOW;
    if (end > x->sched->nsteps)
        end = x->sched->nsteps;
    for (uint32_t i = x->first; i < end; i++) {
        const tc_step_t *s = &x->sched->steps[i];
        uint8_t state = x->ex->state[i];
        if (state == STEP_POSTED && x->ex->reqs[i].status != TC_INPROGRESS) {
            if ((*st_p = step_finish(x, i)) != TC_OK)
                return -1;
            changed++;
            continue;
        }
        if (state != STEP_NEW)
            continue;
        int64_t key = step_is_comm(s) ? ((int64_t)s->peer << 1) | (s->kind != TC_STEP_SEND) : -1;
        int is_blocked = 0;
        for (int b = 0; b < nblocked && key >= 0; b++)
            is_blocked |= blocked[b] == key;
        if (!is_blocked && deps_done(x, s)) {
            if ((*st_p = step_start(x, i)) != TC_OK)
                return -1;
            changed++;
        } else if (key >= 0 && !is_blocked) {
            blocked[nblocked++] = key;
        }
    }
    while (x->first < x->sched->nsteps && x->ex->state[x->first] == STEP_DONE)
        x->first++;
    return changed;
}

/* The ranks that posted steps are still waiting on, for a timeout message. */
static void exec_awaited(const exec_t *x, char *buf, size_t cap)
{
    size_t used = 0;
    int listed = 0;
    buf[0] = '\0';
    for (uint32_t i = x->first; i < x->sched->nsteps && listed < 16; i++) {
        const tc_step_t *s = &x->sched->steps[i];
        if (x->ex->state[i] != STEP_POSTED || s->kind == TC_STEP_SEND)
            continue;
        int dup = 0;
        for (uint32_t j = x->first; j < i; j++)
            dup |= x->ex->state[j] == STEP_POSTED && x->sched->steps[j].kind != TC_STEP_SEND &&
                   x->sched->steps[j].peer == s->peer;
        if (dup)
            continue;
        int n = snprintf(buf + used, cap - used, "%s%d", listed ? ", " : "", s->peer);
        if (n < 0 || (size_t)n >= cap - used)
            break;
        used += (size_t)n;
        listed++;
    }
    if (!listed)
        snprintf(buf, cap, "none (sends not yet accepted)");
}

/* Leave no request pointing into the caller's buffers after an error. */
static void exec_abandon(exec_t *x, tc_status_t st)
{
    for (uint32_t i = x->first; i < x->sched->nsteps; i++) {
        if (x->ex->state[i] != STEP_POSTED || x->ex->reqs[i].status != TC_INPROGRESS)
            continue;
        tc_tp_ep_t *ep = tc_hmap_get(&x->comm->eps, (uint64_t)x->sched->steps[i].peer);
        if (ep && (!ep->ops->cancel || ep->ops->cancel(ep, &x->ex->reqs[i]) != TC_OK)) {
            tc_hmap_remove(&x->comm->eps, (uint64_t)x->sched->steps[i].peer, NULL);
            tc_tp_ep_close(ep);
        }
    }
    x->comm->broken = st;
    snprintf(x->comm->broken_why, sizeof(x->comm->broken_why), "%s", tc_last_error());
}

tc_status_t tc_rt_exec_run(tc_rt_comm_t *comm, const tc_sched_t *sched, const tc_rt_coll_t *call,
                           uint64_t tag, uint64_t deadline_ns, const tc_rt_op_t *op)
{
    exec_t x = {comm, sched, call, &comm->exec, {NULL, NULL, NULL}, tc_dtype_size(call->dtype),
                tag, deadline_ns, op, "", 0, 0};
    size_t tmp_bytes = 0;
    tc_status_t st = exec_reserve(x.ex, sched->nsteps, 0, 0);
    if (st != TC_OK)
        return st;
    for (uint32_t i = 0; i < sched->nsteps; i++) {
        x.ex->state[i] = STEP_NEW;
        if (sched->steps[i].kind == TC_STEP_RECV_REDUCE) {
            x.ex->tmp_off[i] = tmp_bytes;
            tmp_bytes += sched->steps[i].count * x.esize;
        }
    }
    if ((st = exec_reserve(x.ex, sched->nsteps, tmp_bytes, sched->scratch_count * x.esize)) !=
        TC_OK)
        return st;
    x.bufs[TC_BUF_SEND] = (char *)call->sendbuf;
    x.bufs[TC_BUF_RECV] = call->recvbuf;
    x.bufs[TC_BUF_SCRATCH] = x.ex->scratch;

    uint64_t idle_since = 0; /* when the current stretch without progress began */
    while (x.ndone < sched->nsteps) {
        int changed = exec_pass(&x, &st);
        if (changed < 0)
            goto fail;
        int n = tc_rt_comm_progress(comm);
        if (n < 0) {
            st = (tc_status_t)n;
            tc_error_prefix("%s: transport progress: ", exec_what(&x));
            goto fail;
        }
        if (changed || n) {
            idle_since = 0;
            continue;
        }
        if (tc_deadline_passed(deadline_ns)) {
            char awaited[160];
            exec_awaited(&x, awaited, sizeof(awaited));
            st = tc_error_set(TC_ERR_TIMEOUT, "%s (%s, rank %d of %d): timed out at step %u of %u;"
                              " waiting for rank(s) %s", exec_what(&x), sched->algo, comm->rank, comm->size,
                              x.first, sched->nsteps, awaited);
            goto fail;
        }
        uint64_t now = tc_time_ns();
        if (idle_since == 0)
            idle_since = now;
        if (now - idle_since >= comm->spin_ns) {
            int left = tc_deadline_left_ms(deadline_ns);
            tc_rt_comm_wait(comm, left, now - idle_since);
        }
    }
    if (call->op == TC_AVG && call->coll == TC_COLL_ALL_REDUCE)
        st = tc_kern_scale_div(call->dtype, call->recvbuf, call->count, comm->size);
    return st;

fail:
    tc_log_error(TC_SUBSYS_RUNTIME, "%s", tc_last_error());
    exec_abandon(&x, st);
    return st;
}
