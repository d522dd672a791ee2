/*
 * All-gather(v), hierarchical (two levels), driven by ranks_per_node = L
 * (nodes hold consecutive ranks; the last may hold fewer; 0: one node of p
 * ranks); N = ceil(p / L) nodes, each led by its local rank 0. b: largest
 * block, B: all blocks.
 *   1. inside each node, a linear gather of the node's blocks to the leader:
 *      (L-1) (alpha_0 + b beta_0);
 *   2. across the N leaders, a ring all-gather of node-blocks (the blocks
 *      of a node's ranks): (N-1) (alpha_1 + L b beta_1);
 *   3. inside each node, a binomial-tree broadcast of the whole result from
 *      the leader: ceil(lg L) (alpha_0 + B beta_0).
 * (_0 same node, _1 across nodes.) Only leaders cross the network, with the
 * ring's bandwidth-optimal volume. A node-block (phase 2) and the whole
 * result (phase 3) travel as one message when the blocks are packed
 * (displs NULL), else as one message per non-empty block (blocks may lie
 * apart or out of order, and the gaps between them are not written).
 * Out of place the leader copies its input into place; a non-leader gets
 * its own block back in phase 3. Phase 2 starts after phase 1 (a join of its
 * steps), phase 3 after both; in place, a non-leader's receive of phase 3
 * waits for its send of phase 1 (both touch its block).
 */
#include <string.h>

#include "algo_internal.h"

TC_ALGO_DEFINE(ALL_GATHER, hierarchical, all_gather_hierarchical, NULL, 50);

tc_status_t tc_algo_all_gather_hierarchical(const tc_algo_args_t *args, tc_sched_t *sched)
{
    const int p = args->nranks, r = args->rank;
    const uint64_t myoff = tc_algo_block_off(args, r), mylen = tc_algo_block_len(args, r);
    uint32_t mine = TC_STEP_NO_DEP, done = TC_STEP_NO_DEP, rstart = 0, dep;
    uint64_t off, len, j, nseg;
    tc_algo_layout_t lay;
    tc_algo_segs_t it;
    tc_algo_hier_t g;
    int v, m, top;

    TC_ALGO_TRY(tc_algo_layout(args, &lay));
    tc_algo_hier_geom(args, &g);
    v = r - g.base;
    /* 1. gather to the leader */
    if (v != 0 && mylen > 0) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, g.base, (tc_buf_t)lay.in_buf, lay.in_off,
                                 TC_BUF_RECV, 0, mylen, TC_STEP_NO_DEP, TC_STEP_NO_DEP, &mine));
    }
    if (v == 0) {
        if (!args->in_place && mylen > 0) {
            TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV, myoff,
                                     mylen, TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL));
        }
        for (m = 1; m < g.nl; m++) {
            len = tc_algo_block_len(args, g.base + m);
            if (len > 0) {
                TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_RECV, g.base + m, TC_BUF_RECV, 0,
                                         TC_BUF_RECV, tc_algo_block_off(args, g.base + m), len,
                                         TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL));
            }
        }
        /* 2. across the leaders */
        TC_ALGO_TRY(tc_algo_hier_join(sched, 0, &done));
        if (g.N > 1) {
            TC_ALGO_TRY(tc_algo_hier_ring(sched, args, &g, TC_BUF_RECV, TC_STEP_RECV, 0, done,
                                          TC_STEP_NO_DEP));
            TC_ALGO_TRY(tc_algo_hier_join(sched, 0, &done));
        }
    }
    /* 3. broadcast the whole result in the node: binomial, from local rank 0 */
    nseg = tc_algo_segs_count(args, 0, p);
    if (v != 0) {
        top = v & -v;
        rstart = sched->nsteps;
        tc_algo_segs_init(&it, args, 0, p);
        while (tc_algo_segs_next(&it, &off, &len)) {
            TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_RECV, g.base + v - top, TC_BUF_RECV, 0,
                                     TC_BUF_RECV, off, len, mine, TC_STEP_NO_DEP, NULL));
        }
    } else {
        for (top = 1; top < g.nl; top <<= 1) {
        }
    }
    for (m = top >> 1; m >= 1; m >>= 1) {
        if (v + m >= g.nl) {
            continue;
        }
        tc_algo_segs_init(&it, args, 0, p);
        for (j = 0; j < nseg && tc_algo_segs_next(&it, &off, &len); j++) {
            dep = v == 0 ? done : rstart + (uint32_t)j;
            TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, g.base + v + m, TC_BUF_RECV, off,
                                     TC_BUF_RECV, 0, len, dep, TC_STEP_NO_DEP, NULL));
        }
    }
    return TC_OK;
}

void tc_algo_all_gather_hierarchical_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    const int p = args->nranks;
    const uint64_t total = tc_algo_blocks_sum(args, 0, p), nseg = tc_algo_segs_count(args, 0, p);
    uint64_t node_segs = 0, b = 0, msgs, elems, k;
    tc_algo_hier_t g;
    double wa, wb;
    int q, v, nl, nx;

    memset(cost, 0, sizeof(*cost));
    if (p == 1) {
        return;
    }
    tc_algo_hier_geom(args, &g);
    tc_algo_hier_weights(args, &wa, &wb);
    for (q = 0; q < p; q++) {
        b = tc_algo_block_len(args, q) > b ? tc_algo_block_len(args, q) : b;
        if (args->counts == NULL) {
            break;
        }
    }
    for (q = 0; q < g.N; q++) {
        node_segs += tc_algo_segs_count(args, q * g.L, tc_algo_hier_node_size(&g, p, q));
    }
    /* NOLINTNEXTLINE(bugprone-integer-division): a node's segments on average, whole */
    cost->rounds = (double)(g.L - 1) * wa + (double)(g.N - 1) * (double)(node_segs / g.N) +
                   tc_algo_ceil_log2(g.L) * (double)nseg * wa;
    cost->elems = (double)(g.L - 1) * (double)b * wb + (double)(g.N - 1) * (double)g.L * (double)b +
                  tc_algo_ceil_log2(g.L) * (double)total * wb;
    /* busiest rank, exactly (O(p)): a leader sends every node-block but the
     * next node's, plus the whole result to its children; a non-leader its
     * block, plus the whole result to its children */
    for (q = 0; q < g.N; q++) {
        nl = tc_algo_hier_node_size(&g, p, q);
        nx = (q + 1) % g.N;
        for (v = 0; v < nl; v++) {
            k = (uint64_t)tc_algo_binomial_kids(v, nl);
            msgs = k * nseg;
            elems = k * total;
            if (v == 0 && g.N > 1) {
                msgs += node_segs -
                        tc_algo_segs_count(args, nx * g.L, tc_algo_hier_node_size(&g, p, nx));
                elems +=
                    total - tc_algo_blocks_sum(args, nx * g.L, tc_algo_hier_node_size(&g, p, nx));
            } else if (v > 0) {
                msgs += tc_algo_block_len(args, q * g.L + v) > 0;
                elems += tc_algo_block_len(args, q * g.L + v);
            }
            cost->max_send_msgs = msgs > cost->max_send_msgs ? msgs : cost->max_send_msgs;
            cost->max_send_elems = elems > cost->max_send_elems ? elems : cost->max_send_elems;
        }
    }
}
