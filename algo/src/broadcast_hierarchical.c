/*
 * Broadcast, hierarchical (two levels), driven by ranks_per_node = L (nodes
 * hold consecutive ranks; the last may hold fewer; 0: one node of p ranks);
 * N = ceil(p / L) nodes. The root leads its node; every other node is led by
 * its local rank 0.
 *   1. inside each node: nothing (the data starts at the root);
 *   2. across the N leaders, a binomial-tree broadcast from the root:
 *      ceil(lg N) (alpha_1 + n beta_1);
 *   3. inside each node, a binomial-tree broadcast from its leader:
 *      ceil(lg L) (alpha_0 + n beta_0).
 * (_0 same node, _1 across nodes.) Each message crosses the network at most
 * once per node. Phases are the registered binomial generators run on the
 * sub-group (tc_algo_hier_phase), phase 3 after phase 2. Out of place, the
 * root first copies its input into recv; both phases then work in recv.
 */
#include <string.h>

#include "algo_internal.h"

TC_ALGO_DEFINE(BROADCAST, hierarchical, broadcast_hierarchical, NULL, 50);

tc_status_t tc_algo_broadcast_hierarchical(const tc_algo_args_t *args, tc_sched_t *sched)
{
    const int r = args->rank, root = args->root;
    const uint64_t n = args->count;
    uint32_t last = TC_STEP_NO_DEP;
    tc_algo_hier_t g;
    tc_algo_hier_map_t in_node = {0, 1, -1, 0}, leaders = {0, 0, -1, 0};
    tc_algo_args_t sub = {.coll = TC_COLL_BROADCAST, .count = n, .in_place = 1};

    TC_ALGO_TRY(tc_algo_args_check(args, "broadcast hierarchical"));
    tc_algo_hier_geom(args, &g);
    sched->scratch_count = 0;
    if (n == 0) {
        return TC_OK;
    }
    if (r == root && !args->in_place) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV, 0, n,
                                 TC_STEP_NO_DEP, TC_STEP_NO_DEP, &last));
    }
    if (r == tc_algo_hier_leader(&g, root, g.node) && g.N > 1) {
        tc_algo_args_t inter = sub;
        inter.nranks = g.N;
        inter.rank = g.node;
        inter.root = root / g.L;
        leaders.stride = g.L;
        leaders.special_q = root / g.L;
        leaders.special_rank = root;
        TC_ALGO_TRY(
            tc_algo_hier_phase(sched, &inter, tc_algo_broadcast_binomial_tree, &leaders, &last));
    }
    sub.nranks = g.nl;
    sub.rank = r - g.base;
    sub.root = tc_algo_hier_leader(&g, root, g.node) - g.base;
    in_node.base = g.base;
    return tc_algo_hier_phase(sched, &sub, tc_algo_broadcast_binomial_tree, &in_node, &last);
}

void tc_algo_broadcast_hierarchical_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    const int p = args->nranks, root = args->root;
    const uint64_t n = args->count;
    uint64_t k, most = 0;
    tc_algo_hier_t g;
    double wa, wb;
    int q, v, nl, lr;

    memset(cost, 0, sizeof(*cost));
    if (n == 0 || p == 1) {
        return;
    }
    tc_algo_hier_geom(args, &g);
    tc_algo_hier_weights(args, &wa, &wb);
    cost->rounds = tc_algo_ceil_log2(g.N) + wa * tc_algo_ceil_log2(g.L);
    cost->elems = (double)n * (tc_algo_ceil_log2(g.N) + wb * tc_algo_ceil_log2(g.L));
    /* busiest rank, exactly: children across nodes (leaders) plus children
     * in the node, for every rank (O(p)) */
    for (q = 0; q < g.N; q++) {
        nl = tc_algo_hier_node_size(&g, p, q);
        lr = tc_algo_hier_leader(&g, root, q) - q * g.L;
        for (v = 0; v < nl; v++) {
            k = (uint64_t)tc_algo_binomial_kids(tc_algo_mod(v - lr, nl), nl);
            if (v == lr) {
                k += (uint64_t)tc_algo_binomial_kids(tc_algo_mod(q - root / g.L, g.N), g.N);
            }
            most = k > most ? k : most;
        }
    }
    cost->max_send_msgs = most;
    cost->max_send_elems = most * n;
}
