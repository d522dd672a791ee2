/*
 * Reduce, hierarchical (two levels), driven by ranks_per_node = L (nodes
 * hold consecutive ranks; the last may hold fewer; 0: one node of p ranks);
 * N = ceil(p / L) nodes. The root leads its node; every other node is led by
 * its local rank 0.
 *   1. inside each node, a binomial-tree reduce to its leader:
 *      ceil(lg L) (alpha_0 + n beta_0 + n gamma);
 *   2. across the N leaders, a binomial-tree reduce to the root:
 *      ceil(lg N) (alpha_1 + n beta_1 + n gamma);
 *   3. inside each node: nothing (the result ends at the root).
 * (_0 same node, _1 across nodes.) Every rank sends once, one vector of n.
 * Phases are the registered binomial generators run on the sub-group
 * (tc_algo_hier_phase), phase 2 after phase 1. Out of place every rank first
 * copies its input into recv (its accumulator, as in reduce_binomial_tree).
 */
#include <string.h>

#include "algo_internal.h"

TC_ALGO_DEFINE(REDUCE, hierarchical, reduce_hierarchical, NULL, 50);

tc_status_t tc_algo_reduce_hierarchical(const tc_algo_args_t *args, tc_sched_t *sched)
{
    const int r = args->rank, root = args->root;
    const uint64_t n = args->count;
    uint32_t last = TC_STEP_NO_DEP;
    tc_algo_hier_t g;
    tc_algo_hier_map_t in_node = {0, 1, -1, 0}, leaders = {0, 0, -1, 0};
    tc_algo_args_t sub = {.coll = TC_COLL_REDUCE, .count = n, .in_place = 1};

    TC_ALGO_TRY(tc_algo_args_check(args, "reduce hierarchical"));
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
    sub.root = tc_algo_hier_leader(&g, root, g.node) - g.base;
    in_node.base = g.base;
    TC_ALGO_TRY(tc_algo_hier_phase(sched, &sub, tc_algo_reduce_binomial_tree, &in_node, &last));
    if (r == tc_algo_hier_leader(&g, root, g.node) && g.N > 1) {
        tc_algo_args_t inter = sub;
        inter.nranks = g.N;
        inter.rank = g.node;
        inter.root = root / g.L;
        leaders.stride = g.L;
        leaders.special_q = root / g.L;
        leaders.special_rank = root;
        TC_ALGO_TRY(
            tc_algo_hier_phase(sched, &inter, tc_algo_reduce_binomial_tree, &leaders, &last));
    }
    return TC_OK;
}

void tc_algo_reduce_hierarchical_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    const int p = args->nranks;
    const uint64_t n = args->count;
    tc_algo_hier_t g;
    double wa, wb;

    memset(cost, 0, sizeof(*cost));
    if (n == 0 || p == 1) {
        return;
    }
    tc_algo_hier_geom(args, &g);
    tc_algo_hier_weights(args, &wa, &wb);
    cost->rounds = tc_algo_ceil_log2(g.N) + wa * tc_algo_ceil_log2(g.L);
    cost->elems = (double)n * (tc_algo_ceil_log2(g.N) + wb * tc_algo_ceil_log2(g.L));
    cost->red_elems = (double)n * (tc_algo_ceil_log2(g.N) + tc_algo_ceil_log2(g.L));
    /* every rank but the root sends its partial sum once */
    cost->max_send_msgs = 1;
    cost->max_send_elems = n;
}
