/* The executor: runs one rank's plan (a schedule compiled for the
 * communicator, plan_compile.c) over the transport with the kernels.
 *
 * Steps are posted as soon as their dependencies are done, but communication
 * steps with the same peer and direction are posted in step order: that is the
 * matching rule schedules are written to (the k-th send to a peer meets the
 * k-th receive from us). Local steps run inline, once the ready messages are
 * posted (tc_rt_exec_pass). A receive-reduce is posted to
 * a transport sink where the backend has one: each piece of the message is
 * reduced into the destination as it lands (with a local operand of its own
 * for RECV_REDUCE_SRC: out of place, the send buffer), while it is in cache;
 * elsewhere it lands in its slot's landing area (grown to the message when
 * posted, reused by the slot's next receive-reduce). Landing areas, scratch
 * and stand-ins stay for the work's next plan while small or while the plan
 * that ends needed at least half of them (exec_trim), and go when the work has
 * run nothing for a second (tc_rt_exec_idle). Every wait is bounded by the
 * operation's deadline. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comms.h"
#include "ft.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"
#include "tcomms/kernels/reduce.h"

enum { STEP_NEW = 0, STEP_POSTED, STEP_DONE };

/* How far past the first unfinished step the executor looks for work. Steps
 * posted at once are fewer than this apart, so step i's request is slot
 * i % EXEC_WINDOW of a pool of at most this many. */
#define EXEC_WINDOW 256
#define EXEC_SLOT(i) ((i) & (EXEC_WINDOW - 1))
#define EXEC_REQ(ex, i) (&(ex)->reqs[EXEC_SLOT(i)])

/* Landing, scratch and stand-in bytes a work keeps between operations whatever they need; more
 * is kept only for operations that need it (a communicator's works live as long as it). */
#define TC_RT_EXEC_KEEP (256u << 10)

/* The landing areas (none may be posted into). */
static void exec_areas_free(tc_rt_exec_t *ex)
{
    for (uint32_t k = 0; ex->areas && k < ex->nslots; k++) {
        free(ex->areas[k].p);
        ex->areas[k] = (tc_rt_exec_area_t){0};
    }
}

/* Whether a buffer of @p cap bytes, @p need of which the ending plan used, stays for the next:
 * while at most @p keep, or while the plan needed at least half of it. So back-to-back large
 * operations reuse their memory (glibc maps 32 MiB and more afresh on every malloc, and each
 * page faults in again: about 20 ms for 32 MiB on the AMD VM,
 * bench/results/2026-12-05-copies.txt), and a work holds at most twice what its last
 * operation needed: one smaller operation gives the rest back. */
static int exec_keeps(size_t cap, size_t need, size_t keep)
{
    return cap <= keep || need >= cap / 2;
}

/* Give back landing areas, scratch and stand-ins the next plan may not need (as a plan ends:
 * keep TC_RT_EXEC_KEEP and what it needed; as its work becomes a spare: EXEC_SPARE_KEEP and no
 * more, @p scratch_need 0). */
static void exec_trim(tc_rt_exec_t *ex, size_t keep, size_t scratch_need)
{
    size_t landing = 0;
    for (uint32_t k = 0; ex->areas && k < ex->nslots; k++)
        landing += ex->areas[k].cap;
    if (!exec_keeps(landing, ex->landing_need, keep))
        exec_areas_free(ex);
    if (!exec_keeps(ex->scratch_cap, scratch_need, keep)) {
        free(ex->scratch);
        ex->scratch = NULL;
        ex->scratch_cap = 0;
    }
    if (!exec_keeps(ex->stand_cap, ex->stand_need, keep)) {
        free(ex->stand);
        ex->stand = NULL;
        ex->stand_cap = 0;
    }
}

void tc_rt_exec_free(tc_rt_exec_t *ex)
{
    exec_areas_free(ex);
    free(ex->state);
    free(ex->reqs);
    free(ex->sinks);
    free(ex->areas);
    free(ex->scratch);
    free(ex->stand);
    tc_rt_plan_free(&ex->own);
    memset(ex, 0, sizeof(*ex));
}

/* How long a work runs nothing before it gives back what it keeps above TC_RT_EXEC_KEEP: longer
 * than the gap between a training loop's steps, so their collectives find their memory. */
#define TC_RT_EXEC_IDLE_NS 1000000000ull

static size_t exec_held(const tc_rt_exec_t *ex)
{
    size_t n = ex->scratch_cap + ex->stand_cap;
    for (uint32_t k = 0; ex->areas && k < ex->nslots; k++)
        n += ex->areas[k].cap;
    return n;
}

size_t tc_rt_exec_idle(tc_rt_exec_t *ex, uint64_t now)
{
    if (ex->runs != ex->idle_runs || ex->idle_ns == 0) {
        ex->idle_runs = ex->runs;
        ex->idle_ns = now;
        return 0;
    }
    size_t held = exec_held(ex);
    if (now - ex->idle_ns < TC_RT_EXEC_IDLE_NS || held <= TC_RT_EXEC_KEEP)
        return 0;
    ex->landing_need = ex->stand_need = 0;
    exec_trim(ex, TC_RT_EXEC_KEEP, 0);
    return held - exec_held(ex);
}

/* What a spare work keeps of its buffers: small ones serve the small operations that reuse
 * it; larger ones would hold memory for every spare. */
#define EXEC_SPARE_KEEP 4096u

void tc_rt_exec_keep(tc_rt_exec_t *ex)
{
    ex->landing_need = ex->stand_need = 0;
    exec_trim(ex, EXEC_SPARE_KEEP, 0);
    tc_rt_plan_free(&ex->own);
    *ex = (tc_rt_exec_t){.cap = ex->cap,
                         .state = ex->state,
                         .nslots = ex->nslots,
                         .reqs = ex->reqs,
                         .sinks = ex->sinks,
                         .areas = ex->areas,
                         .scratch = ex->scratch,
                         .scratch_cap = ex->scratch_cap,
                         .stand = ex->stand,
                         .stand_cap = ex->stand_cap};
}

static tc_status_t exec_reserve(tc_rt_exec_t *ex, uint32_t nsteps, size_t scratch_bytes)
{
    if (nsteps > ex->cap) {
        uint8_t *state = realloc(ex->state, nsteps);
        if (state)
            ex->state = state;
        uint32_t nslots = nsteps < EXEC_WINDOW ? nsteps : EXEC_WINDOW;
        tc_tp_req_t *reqs = realloc(ex->reqs, nslots * sizeof(*reqs));
        if (reqs)
            ex->reqs = reqs;
        tc_rt_exec_sink_t *sinks = realloc(ex->sinks, nslots * sizeof(*sinks));
        if (sinks)
            ex->sinks = sinks;
        tc_rt_exec_area_t *areas = realloc(ex->areas, nslots * sizeof(*areas));
        if (areas) {
            memset(areas + ex->nslots, 0, (nslots - ex->nslots) * sizeof(*areas));
            ex->areas = areas;
        }
        if (!state || !reqs || !sinks || !areas)
            return tc_error_set(TC_ERR_NO_MEMORY, "executor: state for %u steps", nsteps);
        ex->cap = nsteps;
        ex->nslots = nslots;
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

static const char *step_kind_name(uint8_t kind)
{
    static const char *const names[] = {"send", "recv", "recv_reduce", "copy", "reduce",
                                        "recv_reduce_src"};
    return kind <= TC_STEP_KIND_LAST ? names[kind] : "invalid";
}

static tc_status_t step_fail(tc_rt_work_t *w, uint32_t i, tc_status_t st, const char *why)
{
    const tc_rt_pstep_t *s = &w->ex.plan->steps[i];
    if (st == TC_ERR_PEER_FAILED && s->wpeer >= 0)
        w->failed_peer = s->wpeer;
    char what[128];
    return tc_error_set(st, "%s (%s, rank %d of %d): step %u of %u (%s %s rank %d): %s",
                        tc_rt_op_what(&w->op, what, sizeof(what)), w->sched->algo, w->comm->rank,
                        w->comm->size, i, w->ex.plan->nsteps, step_kind_name(s->kind),
                        s->kind == TC_STEP_SEND ? "to" : "from", s->peer, why);
}

static tc_status_t step_reduce(tc_rt_work_t *w, void *dst, const void *src, uint64_t count)
{
    return tc_kern_reduce(w->call.dtype, w->call.op, dst, dst, src, count);
}

/* Bytes [off, off+len) of a receive-reduce's message: dst = local op message,
 * where local is dst itself or, for RECV_REDUCE_SRC, the step's source. */
static tc_status_t step_reduce_piece(tc_rt_work_t *w, const tc_rt_pstep_t *s, size_t off,
                                     const void *data, size_t len)
{
    char *dst = w->ex.bufs[s->dst_buf] + s->dst_off + off;
    const char *a =
        s->kind == TC_STEP_RECV_REDUCE_SRC ? w->ex.bufs[s->buf] + s->src_off + off : dst;
    return tc_kern_reduce(w->call.dtype, w->call.op, dst, a, data, len / w->ex.esize);
}

static tc_status_t exec_sink_piece(void *arg, size_t off, const void *data, size_t len)
{
    const tc_rt_exec_sink_t *k = arg;
    return step_reduce_piece(k->work, &k->work->ex.plan->steps[k->step], off, data, len);
}

/* Post receive-reduce step i: into a sink, or into a landing area of its own. */
static tc_status_t step_post_reduce(tc_rt_work_t *w, uint32_t i, tc_tp_ep_t *ep, uint64_t tag)
{
    tc_rt_exec_t *ex = &w->ex;
    const tc_rt_pstep_t *s = &ex->plan->steps[i];
    const size_t e = ex->esize;
    if (tc_tp_has_recv_sink(ep) && e > 0 && e <= 64 && (e & (e - 1)) == 0) {
        tc_rt_exec_sink_t *k = &ex->sinks[EXEC_SLOT(i)];
        k->sink = (tc_tp_sink_t){exec_sink_piece, k, e};
        k->work = w;
        k->step = i;
        return tc_tp_recv_sink(ep, tag, &k->sink, s->bytes, EXEC_REQ(ex, i));
    }
    tc_rt_exec_area_t *a = &ex->areas[EXEC_SLOT(i)];
    if (s->bytes > a->cap) {
        void *p = realloc(a->p, s->bytes);
        if (!p)
            return tc_error_set(TC_ERR_NO_MEMORY, "%llu bytes to receive into",
                                (unsigned long long)s->bytes);
        a->p = p;
        a->cap = s->bytes;
    }
    a->used = 1;
    ex->landing_need += s->bytes;
    return tc_tp_recv(ep, tag, a->p, s->bytes, EXEC_REQ(ex, i));
}

/* Post or run step i. */
static tc_status_t step_start(tc_rt_work_t *w, uint32_t i)
{
    tc_rt_exec_t *ex = &w->ex;
    const tc_rt_pstep_t *s = &w->ex.plan->steps[i];
    tc_status_t st;
    if (w->comm->world->fault.step_op && w->op.coll != TC_COLL_COUNT)
        tc_rt_fault_step(w->comm->world, w->op.seq, i);
    char *src = ex->bufs[s->buf] + s->src_off;
    char *dst = ex->bufs[s->dst_buf] + s->dst_off;
    if (s->kind == TC_STEP_COPY || s->kind == TC_STEP_REDUCE) {
        if (s->kind == TC_STEP_COPY)
            tc_kern_copy(dst, src, s->bytes);
        else if ((st = step_reduce(w, dst, src, s->count)) != TC_OK)
            return st;
        ex->state[i] = STEP_DONE;
        ex->ndone++;
        return TC_OK;
    }
    tc_rt_world_t *world = w->comm->world;
    tc_tp_ep_t *ep = world->eps[s->wpeer];
    if (!ep && (st = tc_rt_world_ep(world, s->wpeer, w->deadline, &ep)) != TC_OK) {
        char what[128];
        if (w->tolerant) /* a rank that cannot be reached counts as failed here */
            w->failed_peer = s->wpeer, st = TC_ERR_PEER_FAILED;
        tc_error_prefix("%s: connecting to rank %d: ", tc_rt_op_what(&w->op, what, sizeof(what)),
                        s->peer);
        return st;
    }
    tc_tp_req_t *req = EXEC_REQ(ex, i);
    *req = (tc_tp_req_t)TC_TP_REQ_INIT;
    tc_error_clear(); /* a failed post's detail is the transport's, not an older one */
    uint64_t tag = w->step_tags ? w->step_tags[i] : w->tag;
    if (s->kind == TC_STEP_SEND)
        st = tc_tp_send(ep, tag, src, s->bytes, req);
    else if (s->kind == TC_STEP_RECV)
        st = tc_tp_recv(ep, tag, dst, s->bytes, req);
    else
        st = step_post_reduce(w, i, ep, tag);
    if (st != TC_OK && st != TC_INPROGRESS)
        return step_fail(w, i, st,
                         tc_tp_ep_error(ep)[0] ? tc_tp_ep_error(ep)
                         : tc_last_error()[0] ? tc_last_error()
                                              : tc_status_string(st));
    ex->state[i] = STEP_POSTED;
    return TC_OK;
}

/* A receive whose sender withdrew its message (the sender's own operation ended in error):
 * whether to wait before failing. The sender's error is most often another rank's failure,
 * which reaches this rank a little later: failing at once named the live sender with
 * TC_ERR_ABORTED here while the other ranks named the failed one. So the receive stays
 * posted until the failure arrives (it breaks the communicator and ends this work with
 * TC_ERR_PEER_FAILED naming it) or TC_RT_WITHDRAWN_WAIT_MS pass. */
int tc_rt_work_withdrawn_wait(tc_rt_work_t *w, int wpeer)
{
    const tc_tp_ep_t *ep = tc_rt_world_ep_get(w->comm->world, wpeer);
    if (!ep || tc_tp_ep_error(ep)[0])
        return 0; /* the endpoint failed: its error says why */
    uint64_t now = tc_time_ns();
    if (!w->ex.withdrawn_ns)
        w->ex.withdrawn_ns = now;
    return now - w->ex.withdrawn_ns < TC_RT_WITHDRAWN_WAIT_MS * 1000000ull;
}

/* A posted step whose request has finished: TC_OK, an error, or TC_INPROGRESS for a receive
 * that waits to learn why its message was withdrawn (tc_rt_work_withdrawn_wait). */
static tc_status_t step_finish(tc_rt_work_t *w, uint32_t i)
{
    tc_rt_exec_t *ex = &w->ex;
    const tc_rt_pstep_t *s = &w->ex.plan->steps[i];
    tc_tp_req_t *req = EXEC_REQ(ex, i);
    tc_rt_exec_area_t *a = &ex->areas[EXEC_SLOT(i)];
    int landed = a->used; /* a receive-reduce without a sink: its message is in a->p */
    a->used = 0;
    /* a work that records what its receives got (the shrink agreement's)
     * takes shorter messages: its caller reads the lengths */
    if (req->status == TC_OK && (s->kind == TC_STEP_SEND || req->bytes == s->bytes ||
                                 (w->recv_bytes && req->bytes < s->bytes))) {
        tc_status_t st;
        if (w->recv_bytes && s->kind == TC_STEP_RECV)
            w->recv_bytes[i] = req->bytes;
        if (landed && (st = step_reduce_piece(w, s, 0, a->p, s->bytes)) != TC_OK)
            return st;
        ex->state[i] = STEP_DONE;
        ex->ndone++;
        return TC_OK;
    }
    unsigned long long want = (unsigned long long)s->bytes;
    char why[TC_TP_ERROR_LEN + 64];
    if (req->status == TC_ERR_TRUNCATED && s->kind != TC_STEP_SEND) {
        /* the sender's count is larger: a mismatch, as tcomms.h promises (the
         * transport's TC_ERR_TRUNCATED only means nothing was written past it) */
        snprintf(why, sizeof(why),
                 "rank %d sent more than the %llu bytes this receive expects (the ranks "
                 "passed different counts)",
                 s->peer, want);
        return step_fail(w, i, TC_ERR_MISMATCH, why);
    }
    if (req->status == TC_ERR_ABORTED && s->kind != TC_STEP_SEND &&
        tc_rt_work_withdrawn_wait(w, s->wpeer))
        return TC_INPROGRESS;
    if (req->status != TC_OK) /* never tc_last_error(): the request completed in progress */
        return step_fail(w, i, req->status,
                         tc_rt_world_req_why(w->comm->world, s->wpeer, s->peer,
                                             s->kind != TC_STEP_SEND, (size_t)s->bytes, req->status,
                                             why, sizeof(why)));
    snprintf(why, sizeof(why),
             "received %zu bytes from rank %d, expected %llu (the ranks passed "
             "different counts)",
             req->bytes, s->peer, want);
    return step_fail(w, i, TC_ERR_MISMATCH, why);
}

static int deps_done(const tc_rt_exec_t *ex, const tc_rt_pstep_t *s)
{
    return (s->dep[0] == TC_STEP_NO_DEP || ex->state[s->dep[0]] == STEP_DONE) &&
           (s->dep[1] == TC_STEP_NO_DEP || ex->state[s->dep[1]] == STEP_DONE);
}

/* The plan of @p w's schedule (the cache entry's, compiled when it entered
 * the cache, or the work's own, compiled now), its step states and areas. */
static tc_status_t exec_prepare(tc_rt_work_t *w)
{
    tc_rt_exec_t *ex = &w->ex;
    tc_status_t st;
    if (w->entry && w->sched == &w->entry->sched && w->entry->plan.esize == ex->esize) {
        w->ex.plan = &w->entry->plan;
    } else {
        if ((st = tc_rt_plan_compile(&w->ex.own, w->sched, w->comm->ranks, ex->esize)) !=
            TC_OK)
            return st;
        w->ex.plan = &w->ex.own;
    }
    const tc_rt_plan_t *plan = w->ex.plan;
    for (uint32_t k = 0; k < ex->nslots; k++)
        ex->areas[k].used = 0; /* left by an abandoned run */
    ex->landing_need = ex->stand_need = 0;
    ex->runs++;
    if ((st = exec_reserve(ex, plan->nsteps, plan->scratch_bytes)) != TC_OK)
        return st;
    if (plan->nsteps) /* a world of one has none, and no state array */
        memset(ex->state, STEP_NEW, plan->nsteps);
    ex->bufs[TC_BUF_SCRATCH] = ex->scratch;
    ex->first = 0;
    ex->ndone = 0;
    ex->withdrawn_ns = 0;
    return TC_OK;
}

tc_status_t tc_rt_exec_begin_raw(tc_rt_work_t *w, const void *send, void *recv, size_t esize)
{
    w->ex.esize = esize;
    tc_status_t st = exec_prepare(w);
    w->ex.bufs[TC_BUF_SEND] = (char *)send;
    w->ex.bufs[TC_BUF_RECV] = recv;
    return st;
}

tc_status_t tc_rt_exec_begin(tc_rt_work_t *w)
{
    tc_rt_exec_t *ex = &w->ex;
    ex->esize = w->call.coll == TC_COLL_BARRIER ? 1 : tc_dtype_size(w->call.dtype);
    tc_status_t st = exec_prepare(w);
    if (st != TC_OK)
        return st;
    /* Stand-ins: a buffer the caller need not give (a non-root's receive
     * buffer of reduce, which the trees use on the way) and the staged input
     * of an all-to-all in place (the schedule runs out of place from a copy). */
    const char *send = w->call.sendbuf;
    char *recv = w->call.recvbuf;
    size_t stand_send = (w->stage_send || !send) ? w->ex.plan->send_bytes : 0;
    size_t stand_recv = !recv ? w->ex.plan->recv_bytes : 0;
    if (stand_send + stand_recv > ex->stand_cap) {
        void *p = realloc(ex->stand, stand_send + stand_recv);
        if (!p)
            return tc_error_set(TC_ERR_NO_MEMORY, "executor: %zu bytes of stand-in buffers",
                                stand_send + stand_recv);
        ex->stand = p;
        ex->stand_cap = stand_send + stand_recv;
    }
    ex->stand_need = stand_send + stand_recv;
    if (w->stage_send && stand_send) {
        tc_kern_copy(ex->stand, recv, stand_send);
        send = ex->stand;
    } else if (!send && stand_send) {
        send = ex->stand;
    }
    if (stand_recv)
        recv = (char *)ex->stand + stand_send;
    ex->bufs[TC_BUF_SEND] = (char *)send;
    ex->bufs[TC_BUF_RECV] = recv;
    return TC_OK;
}

int tc_rt_exec_done(const tc_rt_work_t *w)
{
    return w->ex.ndone == w->ex.plan->nsteps;
}

/* A tolerant work (the shrink agreement) records a failed peer and goes on
 * without that step; the caller sees the missing message. */
static int exec_tolerate(tc_rt_work_t *w, uint32_t i, tc_status_t st)
{
    if (!w->tolerant || st != TC_ERR_PEER_FAILED || w->failed_peer < 0)
        return 0;
    tc_rt_world_note_failure(w->comm->world, w->failed_peer, tc_last_error(), 1);
    w->failed_peer = -1;
    w->ex.state[i] = STEP_DONE;
    w->ex.ndone++;
    return 1;
}

/* Start step @p i, and finish it when it completed as it was posted (self, eager). */
static tc_status_t exec_start(tc_rt_work_t *w, uint32_t i)
{
    tc_rt_exec_t *ex = &w->ex;
    tc_status_t st;
    if ((st = step_start(w, i)) != TC_OK && !exec_tolerate(w, i, st))
        return st;
    if (ex->state[i] == STEP_POSTED && EXEC_REQ(ex, i)->status != TC_INPROGRESS &&
        (st = step_finish(w, i)) != TC_OK && st != TC_INPROGRESS && !exec_tolerate(w, i, st))
        return st;
    return TC_OK;
}

int tc_rt_exec_pass(tc_rt_work_t *w)
{
    tc_rt_exec_t *ex = &w->ex;
    const tc_rt_plan_t *plan = w->ex.plan;
    /* (peer, direction) pairs with an earlier communication step still unposted */
    int64_t blocked[EXEC_WINDOW];
    int changed = 0, local;
    tc_status_t st;
    uint32_t end = ex->first + EXEC_WINDOW;
    if (end > plan->nsteps)
        end = plan->nsteps;
    do {
        int nblocked = 0;
        local = 0;
        for (uint32_t i = ex->first; i < end; i++) {
            const tc_rt_pstep_t *s = &plan->steps[i];
            uint8_t state = ex->state[i];
            if (state == STEP_POSTED && EXEC_REQ(ex, i)->status != TC_INPROGRESS) {
                if ((st = step_finish(w, i)) == TC_INPROGRESS)
                    continue;
                if (st != TC_OK && !exec_tolerate(w, i, st))
                    return st;
                changed++;
                continue;
            }
            if (state != STEP_NEW)
                continue;
            int64_t key = s->key;
            int is_blocked = 0;
            for (int b = 0; b < nblocked && key >= 0; b++)
                is_blocked |= blocked[b] == key;
            if (!is_blocked && deps_done(ex, s)) {
                if (key < 0) {
                    local = 1; /* below, once the messages are on their way */
                    continue;
                }
                if ((st = exec_start(w, i)) != TC_OK)
                    return st;
                changed++;
            } else if (key >= 0 && !is_blocked) {
                blocked[nblocked++] = key;
            }
        }
        /* Local steps (copies, reductions) run after every message that can go is posted, so
         * a copy overlaps the transfers it does not feed (out of place, the input's copy into
         * the output while a peer reads the input); then the scan posts what they enabled. */
        for (uint32_t i = ex->first; local && i < end; i++) {
            const tc_rt_pstep_t *s = &plan->steps[i];
            if (ex->state[i] != STEP_NEW || s->key >= 0 || !deps_done(ex, s))
                continue;
            if ((st = exec_start(w, i)) != TC_OK)
                return st;
            changed++;
        }
    } while (local);
    while (ex->first < plan->nsteps && ex->state[ex->first] == STEP_DONE)
        ex->first++;
    if (changed && ex->ndone == plan->nsteps)
        exec_trim(ex, TC_RT_EXEC_KEEP, plan->scratch_bytes);
    return changed;
}

/* The peers of the posted steps that are sends (@p sends) or not, each once, written to @p buf;
 * returns how many were listed. */
static int exec_posted_peers(const tc_rt_work_t *w, int sends, char *buf, size_t cap)
{
    const tc_rt_exec_t *ex = &w->ex;
    const tc_sched_t *sched = w->sched;
    size_t used = 0;
    int listed = 0;
    buf[0] = '\0';
    for (uint32_t i = ex->first; i < sched->nsteps && listed < 16; i++) {
        const tc_step_t *s = &sched->steps[i];
        if (ex->state[i] != STEP_POSTED || (s->kind == TC_STEP_SEND) != sends)
            continue;
        int dup = 0;
        for (uint32_t j = ex->first; j < i; j++)
            dup |= ex->state[j] == STEP_POSTED &&
                   (sched->steps[j].kind == TC_STEP_SEND) == sends &&
                   sched->steps[j].peer == s->peer;
        if (dup)
            continue;
        int n = snprintf(buf + used, cap - used, "%s%d", listed ? ", " : "", s->peer);
        if (n < 0 || (size_t)n >= cap - used)
            break;
        used += (size_t)n;
        listed++;
    }
    return listed;
}

void tc_rt_exec_awaited(const tc_rt_work_t *w, char *buf, size_t cap)
{
    if (exec_posted_peers(w, 0, buf, cap) > 0)
        return;
    /* only sends are left: name the ranks that have not taken them */
    if (exec_posted_peers(w, 1, buf, cap) > 0) {
        size_t used = strlen(buf);
        snprintf(buf + used, cap - used, " (to accept our sends)");
    } else {
        snprintf(buf, cap, "none (no step is posted)");
    }
}

void tc_rt_exec_abandon(tc_rt_work_t *w)
{
    tc_rt_exec_t *ex = &w->ex;
    tc_rt_world_t *world = w->comm->world;
    if (!w->ex.plan)
        return; /* it never started */
    for (uint32_t i = ex->first; i < w->ex.plan->nsteps; i++) {
        if (ex->state[i] != STEP_POSTED || EXEC_REQ(ex, i)->status != TC_INPROGRESS)
            continue;
        int peer = w->ex.plan->steps[i].wpeer;
        tc_tp_ep_t *ep = tc_rt_world_ep_get(world, peer);
        /* cannot take the request back: close the endpoint, which does */
        if (ep && (!ep->ops->cancel || ep->ops->cancel(ep, EXEC_REQ(ex, i)) != TC_OK))
            tc_rt_world_ep_drop(world, peer);
    }
    exec_areas_free(ex); /* no request points into them now */
}
