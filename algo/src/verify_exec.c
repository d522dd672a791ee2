/* The verifier's step 4: the schedules executed together, event-driven in modelled time; steps
 * left over are a deadlock, explained by the chain they wait on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verify_state.h"

/* ---- 4. execution ---------------------------------------------------------- */

/* Event order: time, then step index (a rank's ready steps go in step order,
 * as the executor posts them). */
static int tc_v_ev_less(double t, uint32_t i, const tc_vevent_t *e)
{
    return t < e->t || (t == e->t && i < e->i);
}

static tc_status_t tc_v_push(tc_verify_t *v, double t, int r, uint32_t i)
{
    size_t k;

    if (v->nheap == v->capheap) {
        size_t cap = v->capheap ? v->capheap * 2 : 1024;
        tc_vevent_t *h = realloc(v->heap, cap * sizeof(*h));
        if (h == NULL) {
            return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for %zu events", cap);
        }
        v->heap = h;
        v->capheap = cap;
    }
    k = v->nheap++;
    while (k > 0 && tc_v_ev_less(t, i, &v->heap[(k - 1) / 2])) {
        v->heap[k] = v->heap[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    v->heap[k] = (tc_vevent_t){t, r, i};
    return TC_OK;
}

static tc_vevent_t tc_v_pop(tc_verify_t *v)
{
    tc_vevent_t top = v->heap[0], last = v->heap[--v->nheap];
    size_t k = 0, c;

    while ((c = 2 * k + 1) < v->nheap) {
        if (c + 1 < v->nheap && tc_v_ev_less(v->heap[c + 1].t, v->heap[c + 1].i, &v->heap[c])) {
            c++;
        }
        if (!tc_v_ev_less(v->heap[c].t, v->heap[c].i, &last)) {
            break;
        }
        v->heap[k] = v->heap[c];
        k = c;
    }
    if (v->nheap > 0) {
        v->heap[k] = last;
    }
    return top;
}

static tc_vbuf_t *tc_v_buf(tc_verify_t *v, int r, unsigned b)
{
    return &v->ranks[r]->buf[tc_v_resolve(v, b)];
}

/* Link class of a message between ranks a and b: 0 same node, 1 across. */
static int tc_v_link(const tc_verify_t *v, int a, int b)
{
    int rpn = v->args->ranks_per_node;
    return (rpn > 0 && rpn < v->p && a / rpn != b / rpn) ? 1 : 0;
}

/* Step i of rank r is done at time t: release its dependents. */
static tc_status_t tc_v_finish(tc_verify_t *v, int r, uint32_t i, double t)
{
    tc_vrank_t *vr = v->ranks[r];
    tc_status_t status;
    uint32_t k;

    vr->state[i] = 2;
    vr->t[i] = t;
    if (vr->know != NULL) {
        const tc_vset_t *u = tc_vset_union(&v->arena, vr->know_all, vr->know[i], 0);
        if (u == NULL) {
            return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for rank sets");
        }
        vr->know_all = u;
    }
    for (k = vr->dstart[i]; k < vr->dstart[i + 1]; k++) {
        uint32_t d = vr->dlist[k];
        if (vr->t[d] < t) {
            vr->t[d] = t;
        }
        if (vr->know != NULL) {
            const tc_vset_t *u = tc_vset_union(&v->arena, vr->know[d], vr->know[i], 0);
            if (u == NULL) {
                return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for rank sets");
            }
            vr->know[d] = u;
        }
        if (--vr->npend[d] == 0 && (status = tc_v_push(v, vr->t[d], r, d)) != TC_OK) {
            return status;
        }
    }
    return TC_OK;
}

static tc_status_t tc_v_run_step(tc_verify_t *v, int r, uint32_t i, double t)
{
    tc_vrank_t *vr = v->ranks[r];
    const tc_step_t *st = &vr->sched.steps[i];
    const double bytes = (double)st->count * (double)v->esize;
    tc_status_t status;

    if (st->kind == TC_STEP_COPY || st->kind == TC_STEP_REDUCE) {
        status =
            tc_vbuf_move(&v->arena, tc_v_buf(v, r, st->dst_buf), st->dst_off,
                         tc_v_buf(v, r, st->buf), st->off, st->count, st->kind == TC_STEP_REDUCE);
        if (status != TC_OK) {
            return status;
        }
        if (st->kind == TC_STEP_REDUCE) {
            t += bytes * v->model.gamma_us * 1e-6;
        }
        return tc_v_finish(v, r, i, t);
    }
    vr->state[i] = 1;
    {
        int q = st->peer;
        uint32_t j = vr->match[i];
        tc_vrank_t *vq = v->ranks[q];
        const tc_step_t *snd = st, *rcv = &vq->sched.steps[j];
        int sr = r, rr = q, link;
        double start, end;

        if (vq->state[j] != 1) {
            return TC_OK; /* the peer's step is not ready yet: it will run us */
        }
        if (st->kind != TC_STEP_SEND) {
            snd = rcv;
            rcv = st;
            sr = q;
            rr = r;
        }
        if (rcv->kind == TC_STEP_RECV_REDUCE_SRC &&
            (tc_v_resolve(v, rcv->buf) != tc_v_resolve(v, rcv->dst_buf) ||
             rcv->off != rcv->dst_off)) {
            /* dst = local source op message: the source's content first */
            status = tc_vbuf_move(&v->arena, tc_v_buf(v, rr, rcv->dst_buf), rcv->dst_off,
                                  tc_v_buf(v, rr, rcv->buf), rcv->off, rcv->count, 0);
            if (status != TC_OK) {
                return status;
            }
        }
        status = tc_vbuf_move(&v->arena, tc_v_buf(v, rr, rcv->dst_buf), rcv->dst_off,
                              tc_v_buf(v, sr, snd->buf), snd->off, snd->count,
                              rcv->kind != TC_STEP_RECV);
        if (status != TC_OK) {
            return status;
        }
        link = tc_v_link(v, sr, rr);
        start = vr->t[i] > vq->t[j] ? vr->t[i] : vq->t[j];
        if (v->ranks[sr]->send_free > start) {
            start = v->ranks[sr]->send_free;
        }
        if (v->ranks[rr]->recv_free > start) {
            start = v->ranks[rr]->recv_free;
        }
        end = start + (v->model.alpha_us[link] + bytes * v->model.beta_us[link]) * 1e-6;
        v->ranks[sr]->send_free = end;
        v->ranks[rr]->recv_free = end;
        if (rcv->kind != TC_STEP_RECV) {
            end += bytes * v->model.gamma_us * 1e-6;
        }
        if (v->ranks[rr]->know != NULL) {
            uint32_t ri = rr == r ? i : j, si = sr == r ? i : j;
            const tc_vset_t *u =
                tc_vset_union(&v->arena, v->ranks[rr]->know[ri], v->ranks[sr]->know[si], 0);
            if (u == NULL) {
                return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for rank sets");
            }
            v->ranks[rr]->know[ri] = u;
        }
        if ((status = tc_v_finish(v, r, i, end)) != TC_OK) {
            return status;
        }
        return tc_v_finish(v, q, j, end);
    }
}

tc_status_t tc_v_execute(tc_verify_t *v, double *t_end)
{
    uint64_t total = 0, done = 0;
    tc_status_t status = TC_OK;
    double tmax = 0;
    char why[700];
    int r;

    for (r = 0; r < v->p; r++) {
        tc_vrank_t *vr = v->ranks[r];
        uint32_t i;

        total += vr->sched.nsteps;
        for (i = 0; i < vr->sched.nsteps && status == TC_OK; i++) {
            if (vr->npend[i] == 0) {
                status = tc_v_push(v, 0.0, r, i);
            }
        }
    }
    while (status == TC_OK && v->nheap > 0) {
        tc_vevent_t e = tc_v_pop(v);
        status = tc_v_run_step(v, e.r, e.i, e.t);
    }
    if (status != TC_OK) {
        return status;
    }
    for (r = 0; r < v->p; r++) {
        tc_vrank_t *vr = v->ranks[r];
        uint32_t i;
        for (i = 0; i < vr->sched.nsteps; i++) {
            if (vr->state[i] == 2) {
                done++;
                if (vr->t[i] > tmax) {
                    tmax = vr->t[i];
                }
            }
        }
    }
    if (done < total) {
        for (r = 0; r < v->p; r++) {
            tc_vrank_t *vr = v->ranks[r];
            uint32_t i;
            for (i = 0; i < vr->sched.nsteps && vr->state[i] == 2; i++) {
            }
            if (i < vr->sched.nsteps) {
                tc_v_explain(v, r, i, why, sizeof(why));
                break;
            }
        }
        return tc_v_fail(v, "deadlock: %llu of %llu steps cannot run; %s",
                         (unsigned long long)(total - done), (unsigned long long)total, why);
    }
    *t_end = tmax;
    return TC_OK;
}
