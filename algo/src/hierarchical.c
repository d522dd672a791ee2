/*
 * What the hierarchical (two-level) algorithms share: the node geometry,
 * running a generator on a sub-group (the ranks of one node, or the node
 * leaders) and appending its steps after the previous phase, and the
 * weighting of their cost formulas across the two link classes.
 */
#include <stdlib.h>
#include <string.h>

#include "algo_internal.h"

void tc_algo_hier_geom(const tc_algo_args_t *args, tc_algo_hier_t *g)
{
    const int p = args->nranks;

    g->L = args->ranks_per_node > 0 && args->ranks_per_node < p ? args->ranks_per_node : p;
    g->N = (p + g->L - 1) / g->L;
    g->node = args->rank / g->L;
    g->base = g->node * g->L;
    g->nl = tc_algo_hier_node_size(g, p, g->node);
}

tc_status_t tc_algo_hier_join(tc_sched_t *sched, uint32_t from, uint32_t *last_p)
{
    uint32_t i, j = TC_STEP_NO_DEP, end = sched->nsteps;
    uint8_t *used;
    int k;

    if (end == from) {
        return TC_OK;
    }
    used = calloc(end - from, 1);
    if (used == NULL) {
        return tc_error_set(TC_ERR_NO_MEMORY, "hierarchical: %u step flags", end - from);
    }
    for (i = from; i < end; i++) {
        for (k = 0; k < 2; k++) {
            if (sched->steps[i].dep[k] != TC_STEP_NO_DEP && sched->steps[i].dep[k] >= from) {
                used[sched->steps[i].dep[k] - from] = 1;
            }
        }
    }
    for (i = from; i < end; i++) {
        tc_status_t st = TC_OK;
        if (used[i - from]) {
            continue;
        }
        if (j == TC_STEP_NO_DEP) {
            j = i;
        } else {
            st = tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_RECV, 0, TC_BUF_RECV, 0, 0, j, i, &j);
        }
        if (st != TC_OK) {
            free(used);
            return st;
        }
    }
    free(used);
    *last_p = j;
    return TC_OK;
}

static int tc_hier_peer(const tc_algo_hier_map_t *map, int q)
{
    return q == map->special_q ? map->special_rank : map->base + q * map->stride;
}

/* Append sub's steps: peers mapped, deps shifted, a free slot -> after. */
static tc_status_t tc_hier_embed(tc_sched_t *sched, const tc_sched_t *sub,
                                 const tc_algo_hier_map_t *map, uint32_t after, uint32_t *last_p)
{
    const uint32_t shift = sched->nsteps;
    uint32_t i, idx;
    int k;

    for (i = 0; i < sub->nsteps; i++) {
        tc_step_t st = sub->steps[i];
        int used = 0;
        if (st.kind == TC_STEP_SEND || st.kind == TC_STEP_RECV || st.kind == TC_STEP_RECV_REDUCE) {
            st.peer = tc_hier_peer(map, st.peer);
        }
        for (k = 0; k < 2; k++) {
            if (st.dep[k] != TC_STEP_NO_DEP) {
                st.dep[k] += shift;
                used++;
            }
        }
        if (used < 2 && after != TC_STEP_NO_DEP) {
            st.dep[st.dep[0] == TC_STEP_NO_DEP ? 0 : 1] = after;
        }
        TC_ALGO_TRY(tc_sched_add(sched, &st, &idx));
    }
    return tc_algo_hier_join(sched, shift, last_p);
}

tc_status_t tc_algo_hier_phase(tc_sched_t *sched, const tc_algo_args_t *sub_args,
                               tc_algo_gen_fn gen, const tc_algo_hier_map_t *map, uint32_t *last_p)
{
    tc_sched_t sub;
    tc_status_t st;
    const uint32_t after = *last_p;

    tc_sched_init(&sub, sub_args, sched->algo);
    st = gen(sub_args, &sub);
    if (st == TC_OK) {
        st = tc_hier_embed(sched, &sub, map, after, last_p);
    }
    if (sub.scratch_count > sched->scratch_count) {
        sched->scratch_count = sub.scratch_count;
    }
    tc_sched_free(&sub);
    return st;
}

int tc_algo_binomial_kids(int v, int n)
{
    int top = 1, m, k = 0;

    if (v == 0) {
        while (top < n) {
            top <<= 1;
        }
    } else {
        top = v & -v;
    }
    for (m = top >> 1; m >= 1; m >>= 1) {
        k += v + m < n;
    }
    return k;
}

void tc_algo_hier_weights(const tc_algo_args_t *args, double *wa, double *wb)
{
    tc_algo_hier_t g;
    tc_algo_model_t m;

    tc_algo_hier_geom(args, &g);
    if (g.N == 1 || tc_algo_model_get(&m) != TC_OK || m.alpha_us[1] <= 0 || m.beta_us[1] <= 0) {
        *wa = *wb = 1.0;
        return;
    }
    *wa = m.alpha_us[0] / m.alpha_us[1];
    *wb = m.beta_us[0] / m.beta_us[1];
}

void tc_algo_segs_init(tc_algo_segs_t *it, const tc_algo_args_t *args, int first, int cnt)
{
    it->args = args;
    it->q = first;
    it->end = first + cnt;
}

int tc_algo_segs_next(tc_algo_segs_t *it, uint64_t *off, uint64_t *len)
{
    const tc_algo_args_t *a = it->args;
    uint64_t sum;

    if (a->displs == NULL) { /* packed: the blocks of the range are one run */
        if (it->q >= it->end) {
            return 0;
        }
        sum = tc_algo_blocks_sum(a, it->q, it->end - it->q);
        *off = tc_algo_block_off(a, it->q);
        *len = sum;
        it->q = it->end;
        return sum > 0;
    }
    while (it->q < it->end && tc_algo_block_len(a, it->q) == 0) {
        it->q++;
    }
    if (it->q >= it->end) {
        return 0;
    }
    *off = tc_algo_block_off(a, it->q);
    *len = tc_algo_block_len(a, it->q);
    it->q++;
    return 1;
}

uint64_t tc_algo_segs_count(const tc_algo_args_t *args, int first, int cnt)
{
    tc_algo_segs_t it;
    uint64_t off, len, k = 0;

    tc_algo_segs_init(&it, args, first, cnt);
    while (tc_algo_segs_next(&it, &off, &len)) {
        k++;
    }
    return k;
}

uint64_t tc_algo_blocks_sum(const tc_algo_args_t *args, int first, int cnt)
{
    uint64_t sum = 0;
    int q;

    if (args->counts == NULL) {
        return (uint64_t)cnt * args->count;
    }
    for (q = first; q < first + cnt; q++) {
        sum += args->counts[q];
    }
    return sum;
}

tc_status_t tc_algo_hier_ring(tc_sched_t *sched, const tc_algo_args_t *args,
                              const tc_algo_hier_t *g, tc_buf_t buf, tc_step_kind_t kind, int shift,
                              uint32_t first_dep, uint32_t recv_dep)
{
    const int p = args->nranks, N = g->N;
    const int next = ((g->node + 1) % N) * g->L, prev = ((g->node + N - 1) % N) * g->L;
    uint64_t ns = 0, nr = 0, pns, pnr, j, off, len;
    uint32_t start = 0, pstart;
    tc_algo_segs_t si, ri;
    int s, sx, rx, more_s, more_r;

    for (s = 0; s < N - 1; s++) {
        sx = tc_algo_mod(g->node - s - shift, N);
        rx = tc_algo_mod(g->node - s - shift - 1, N);
        pstart = start;
        pns = ns;
        pnr = nr;
        ns = tc_algo_segs_count(args, sx * g->L, tc_algo_hier_node_size(g, p, sx));
        nr = tc_algo_segs_count(args, rx * g->L, tc_algo_hier_node_size(g, p, rx));
        start = sched->nsteps;
        tc_algo_segs_init(&si, args, sx * g->L, tc_algo_hier_node_size(g, p, sx));
        tc_algo_segs_init(&ri, args, rx * g->L, tc_algo_hier_node_size(g, p, rx));
        for (j = 0, more_s = more_r = 1; more_s || more_r; j++) {
            if (more_s && (more_s = tc_algo_segs_next(&si, &off, &len)) != 0) {
                /* run j of this node-block arrived in run j of the step before */
                const uint32_t dep = s == 0 ? first_dep : tc_algo_ring_pos(pstart, j, pns, pnr, 1);
                TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, next, buf, off, buf, 0, len, dep,
                                         TC_STEP_NO_DEP, NULL));
            }
            if (more_r && (more_r = tc_algo_segs_next(&ri, &off, &len)) != 0) {
                TC_ALGO_TRY(tc_algo_step(sched, kind, prev, buf, 0, buf, off, len, recv_dep,
                                         TC_STEP_NO_DEP, NULL));
            }
        }
    }
    return TC_OK;
}
