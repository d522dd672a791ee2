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
#include <string.h>

#include "algo_internal.h"

TC_ALGO_DEFINE(ALL_REDUCE, hierarchical, all_reduce_hierarchical, NULL, 60);

tc_status_t tc_algo_all_reduce_hierarchical(const tc_algo_args_t *args, tc_sched_t *sched)
{
    const int r = args->rank;
    const uint64_t n = args->count;
    uint32_t last = TC_STEP_NO_DEP;
    tc_algo_hier_t g;
    tc_algo_hier_map_t in_node = {0, 1, -1, 0}, leaders = {0, 0, -1, 0};
    tc_algo_args_t sub = {.coll = TC_COLL_REDUCE, .root = 0, .count = n, .in_place = 1};

    TC_ALGO_TRY(tc_algo_args_check(args, "all_reduce hierarchical"));
    tc_algo_hier_geom(args, &g);
    sched->scratch_count = 0;
    if (n == 0) {
        return TC_OK;
    }
    if (!args->in_place) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV, 0, n,
                                 TC_STEP_NO_DEP, TC_STEP_NO_DEP, &last));
    }
    sub.nranks = g.nl;
    sub.rank = r - g.base;
    in_node.base = g.base;
    leaders.stride = g.L;
    TC_ALGO_TRY(tc_algo_hier_phase(sched, &sub, tc_algo_reduce_binomial_tree, &in_node, &last));
    if (r == g.base && g.N > 1) {
        tc_algo_args_t inter = {.coll = TC_COLL_ALL_REDUCE,
                                .nranks = g.N,
                                .rank = g.node,
                                .root = -1,
                                .count = n,
                                .in_place = 1};
        TC_ALGO_TRY(tc_algo_hier_phase(sched, &inter, tc_algo_all_reduce_ring, &leaders, &last));
    }
    sub.coll = TC_COLL_BROADCAST;
    return tc_algo_hier_phase(sched, &sub, tc_algo_broadcast_binomial_tree, &in_node, &last);
}

void tc_algo_all_reduce_hierarchical_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    const int p = args->nranks;
    const int L = args->ranks_per_node > 0 && args->ranks_per_node < p ? args->ranks_per_node : p;
    const int N = (p + L - 1) / L, lgl = tc_algo_ceil_log2(L);
    const uint64_t n = args->count;
    double wa, wb;
    int q, v, nl;

    memset(cost, 0, sizeof(*cost));
    if (n == 0 || p == 1) {
        return;
    }
    /* The formula is in the across-node class when N > 1; intra-node terms
     * are weighted by the ratios of the two classes. */
    tc_algo_hier_weights(args, &wa, &wb);
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
        msgs += (uint64_t)tc_algo_binomial_kids(0, nl);
        elems += (uint64_t)tc_algo_binomial_kids(0, nl) * n;
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
            uint64_t k = 1 + (uint64_t)tc_algo_binomial_kids(v, nl);
            if (k > cost->max_send_msgs) {
                cost->max_send_msgs = k;
            }
            if (k * n > cost->max_send_elems) {
                cost->max_send_elems = k * n;
            }
        }
    }
}
