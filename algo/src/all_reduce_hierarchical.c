/*
 * All-reduce, hierarchical (two levels), driven by ranks_per_node = L (nodes
 * hold consecutive ranks; the last may hold fewer; 0: one node of p ranks):
 *   1. inside each node, a binomial-tree reduce to the node leader (local
 *      rank 0): ceil(lg L) (alpha_0 + n beta_0 + n gamma);
 *   2. across the N = ceil(p / L) leaders, a ring all-reduce:
 *      2(N-1) alpha_1 + 2 n (N-1)/N beta_1 + n (N-1)/N gamma;
 *   3. inside each node, a binomial-tree broadcast from the leader:
 *      ceil(lg L) (alpha_0 + n beta_0).
 * (_0 same node, _1 across nodes.) Only one rank per node crosses the
 * network, with the ring's bandwidth-optimal volume; the intra-node phases
 * cost 2 lg L n beta_0, cheap where beta_0 << beta_1 and L is small.
 * Each phase is the registered generator run on the sub-group, its steps
 * appended with ranks mapped back and, where a dependency slot is free, a
 * dependency on the previous phase's last step, which orders every phase
 * after the previous one (a step with both slots used depends on earlier
 * steps of its phase that do).
 */
#include <stdlib.h>
#include <string.h>

#include "algo_internal.h"

/* One step after every step of [from, nsteps): the sinks (steps no later
 * step of the range depends on) joined pairwise by empty local copies. */
static tc_status_t tc_hier_join(tc_sched_t *sched, uint32_t from, uint32_t *last_p)
{
    uint32_t i, j = TC_STEP_NO_DEP, end = sched->nsteps;
    uint8_t *used;
    int k;

    if (end == from) {
        return TC_OK;
    }
    used = calloc(end - from, 1);
    if (used == NULL) {
        return tc_error_set(TC_ERR_NO_MEMORY, "all_reduce hierarchical: %u step flags", end - from);
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

/* Append sub's steps: peers q -> base + q * stride, deps shifted, free slot -> after. */
static tc_status_t tc_hier_embed(tc_sched_t *sched, const tc_sched_t *sub, int base, int stride,
                                 uint32_t after, uint32_t *last_p)
{
    const uint32_t shift = sched->nsteps;
    uint32_t i, idx;
    int k;

    for (i = 0; i < sub->nsteps; i++) {
        tc_step_t st = sub->steps[i];
        int used = 0;
        if (st.kind == TC_STEP_SEND || st.kind == TC_STEP_RECV || st.kind == TC_STEP_RECV_REDUCE) {
            st.peer = base + st.peer * stride;
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
    return tc_hier_join(sched, shift, last_p);
}

static tc_status_t tc_hier_phase(tc_sched_t *sched, const tc_algo_args_t *sub_args,
                                 tc_algo_gen_fn gen, int base, int stride, uint32_t *last_p)
{
    tc_sched_t sub;
    tc_status_t st;
    const uint32_t after = *last_p;

    tc_sched_init(&sub, sub_args, "hierarchical");
    st = gen(sub_args, &sub);
    if (st == TC_OK) {
        st = tc_hier_embed(sched, &sub, base, stride, after, last_p);
    }
    if (sub.scratch_count > sched->scratch_count) {
        sched->scratch_count = sub.scratch_count;
    }
    tc_sched_free(&sub);
    return st;
}

tc_status_t tc_algo_all_reduce_hierarchical(const tc_algo_args_t *args, tc_sched_t *sched)
{
    const int p = args->nranks, r = args->rank;
    const int L = args->ranks_per_node > 0 && args->ranks_per_node < p ? args->ranks_per_node : p;
    const int node = r / L, base = node * L, nl = p - base < L ? p - base : L;
    const int nnodes = (p + L - 1) / L;
    const uint64_t n = args->count;
    uint32_t last = TC_STEP_NO_DEP;
    tc_algo_args_t sub = {.coll = TC_COLL_REDUCE,
                          .nranks = nl,
                          .rank = r - base,
                          .root = 0,
                          .count = n,
                          .in_place = 1};

    TC_ALGO_TRY(tc_algo_args_check(args, "all_reduce hierarchical"));
    sched->scratch_count = 0;
    if (n == 0) {
        return TC_OK;
    }
    if (!args->in_place) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV, 0, n,
                                 TC_STEP_NO_DEP, TC_STEP_NO_DEP, &last));
    }
    TC_ALGO_TRY(tc_hier_phase(sched, &sub, tc_algo_reduce_binomial_tree, base, 1, &last));
    if (r == base && nnodes > 1) {
        tc_algo_args_t inter = {.coll = TC_COLL_ALL_REDUCE,
                                .nranks = nnodes,
                                .rank = node,
                                .root = -1,
                                .count = n,
                                .in_place = 1};
        TC_ALGO_TRY(tc_hier_phase(sched, &inter, tc_algo_all_reduce_ring, 0, L, &last));
    }
    sub.coll = TC_COLL_BROADCAST;
    return tc_hier_phase(sched, &sub, tc_algo_broadcast_binomial_tree, base, 1, &last);
}

/* Children of relative rank v in a binomial broadcast over nl ranks. */
static int tc_hier_kids(int v, int nl)
{
    int top = 1, m, k = 0;

    if (v == 0) {
        while (top < nl) {
            top <<= 1;
        }
    } else {
        top = v & -v;
    }
    for (m = top >> 1; m >= 1; m >>= 1) {
        k += v + m < nl;
    }
    return k;
}

void tc_algo_all_reduce_hierarchical_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    const int p = args->nranks;
    const int L = args->ranks_per_node > 0 && args->ranks_per_node < p ? args->ranks_per_node : p;
    const int N = (p + L - 1) / L, lgl = tc_algo_ceil_log2(L);
    const uint64_t n = args->count;
    tc_algo_model_t m;
    double wa, wb;
    int q, v, nl;

    memset(cost, 0, sizeof(*cost));
    if (n == 0 || p == 1) {
        return;
    }
    /* The formula is in the across-node class when N > 1; intra-node terms
     * are weighted by the ratios of the two classes. */
    if (tc_algo_model_get(&m) != TC_OK || N == 1 || m.alpha_us[1] <= 0 || m.beta_us[1] <= 0) {
        wa = wb = 1.0;
    } else {
        wa = m.alpha_us[0] / m.alpha_us[1];
        wb = m.beta_us[0] / m.beta_us[1];
    }
    cost->rounds = 2.0 * lgl * wa + 2.0 * (N - 1);
    cost->elems = 2.0 * lgl * (double)n * wb + 2.0 * (double)n * (N - 1) / N;
    cost->red_elems = (double)lgl * (double)n + (double)n * (N - 1) / N;
    /* busiest rank, exactly: leaders (ring + broadcast children), others
     * (one send up + broadcast children) in a full and in the last node */
    for (q = 0; q < N; q++) {
        uint64_t msgs = 0, elems = 0;
        nl = p - q * L < L ? p - q * L : L;
        if (N > 1) {
            msgs = 2u * (uint64_t)(N - 1);
            elems =
                2 * n - tc_algo_chunk_len(n, N, (q + 1) % N) - tc_algo_chunk_len(n, N, (q + 2) % N);
        }
        msgs += (uint64_t)tc_hier_kids(0, nl);
        elems += (uint64_t)tc_hier_kids(0, nl) * n;
        if (msgs > cost->max_send_msgs) {
            cost->max_send_msgs = msgs;
        }
        if (elems > cost->max_send_elems) {
            cost->max_send_elems = elems;
        }
        if (q != 0 && q != N - 1) {
            continue; /* the other full nodes look like node 0 */
        }
        for (v = 1; v < nl; v++) {
            uint64_t k = 1 + (uint64_t)tc_hier_kids(v, nl);
            if (k > cost->max_send_msgs) {
                cost->max_send_msgs = k;
            }
            if (k * n > cost->max_send_elems) {
                cost->max_send_elems = k * n;
            }
        }
    }
}
