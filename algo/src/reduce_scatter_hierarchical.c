/*
 * Reduce-scatter(v), hierarchical (two levels), driven by ranks_per_node = L
 * (nodes hold consecutive ranks; the last may hold fewer; 0: one node of p
 * ranks); N = ceil(p / L) nodes, each led by its local rank 0. b: largest
 * block, B: all blocks.
 *   1. inside each node, a binomial-tree reduce of the whole input to the
 *      leader: ceil(lg L) (alpha_0 + B beta_0 + B gamma);
 *   2. across the N leaders, a ring reduce-scatter of node-blocks (the blocks
 *      of a node's ranks): (N-1) (alpha_1 + L b beta_1 + L b gamma);
 *   3. inside each node, a linear scatter of the node's blocks from the
 *      leader: (L-1) (alpha_0 + b beta_0).
 * (_0 same node, _1 across nodes.) Only leaders cross the network, with the
 * ring's bandwidth-optimal volume. The whole input (phase 1) and a
 * node-block (phase 2) travel as one message when the blocks are packed
 * (displs NULL), else as one message per non-empty block.
 * The work buffer is recv in place (it holds the whole input), else scratch
 * (the input copied in first). Phase 2 starts after phase 1 (a join of its
 * steps), phase 3 after both; in place, a non-leader's receive of phase 3
 * waits for its phase 1 (its send read the same elements).
 */
#include <string.h>

#include "algo_internal.h"

TC_ALGO_DEFINE(REDUCE_SCATTER, hierarchical, reduce_scatter_hierarchical, NULL, 40);

tc_status_t tc_algo_reduce_scatter_hierarchical(const tc_algo_args_t *args, tc_sched_t *sched)
{
    const int p = args->nranks, r = args->rank;
    const tc_buf_t w = args->in_place ? TC_BUF_RECV : TC_BUF_SCRATCH;
    const uint64_t myoff = tc_algo_block_off(args, r), mylen = tc_algo_block_len(args, r);
    uint32_t copy = TC_STEP_NO_DEP, done = TC_STEP_NO_DEP, kid = TC_STEP_NO_DEP, dep;
    uint64_t off, len, j, nseg;
    tc_algo_layout_t lay;
    tc_algo_segs_t it;
    tc_algo_hier_t g;
    int v, m, top;

    TC_ALGO_TRY(tc_algo_layout(args, &lay));
    tc_algo_hier_geom(args, &g);
    v = r - g.base;
    if (lay.in_count == 0) {
        return TC_OK;
    }
    if (!args->in_place) {
        sched->scratch_count = lay.in_count;
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_SCRATCH, 0,
                                 lay.in_count, TC_STEP_NO_DEP, TC_STEP_NO_DEP, &copy));
    }
    /* 1. binomial reduce to the leader, children smallest first; run j of a
     * child reduces after run j of the child before */
    nseg = tc_algo_segs_count(args, 0, p);
    if (v == 0) {
        for (top = 1; top < g.nl; top <<= 1) {
        }
    } else {
        top = v & -v;
    }
    for (m = 1; m < top; m <<= 1) {
        const uint32_t before = kid;
        if (v + m >= g.nl) {
            continue;
        }
        kid = sched->nsteps;
        tc_algo_segs_init(&it, args, 0, p);
        for (j = 0; tc_algo_segs_next(&it, &off, &len); j++) {
            dep = before == TC_STEP_NO_DEP ? copy : before + (uint32_t)j;
            TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_RECV_REDUCE, g.base + v + m, w, 0, w, off, len,
                                     dep, TC_STEP_NO_DEP, NULL));
        }
    }
    if (v != 0) {
        tc_algo_segs_init(&it, args, 0, p);
        for (j = 0; j < nseg && tc_algo_segs_next(&it, &off, &len); j++) {
            dep = kid == TC_STEP_NO_DEP ? copy : kid + (uint32_t)j;
            TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, g.base + v - top, w, off, w, 0, len, dep,
                                     TC_STEP_NO_DEP, NULL));
        }
    }
    TC_ALGO_TRY(tc_algo_hier_join(sched, 0, &done));
    if (v != 0) {
        /* 3. (non-leader) my block from the leader */
        if (mylen > 0) {
            TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_RECV, g.base, TC_BUF_RECV, 0, TC_BUF_RECV,
                                     lay.out_off, mylen, done, TC_STEP_NO_DEP, NULL));
        }
        return TC_OK;
    }
    /* 2. across the leaders */
    if (g.N > 1) {
        TC_ALGO_TRY(tc_algo_hier_ring(sched, args, &g, w, TC_STEP_RECV_REDUCE, 1, done, done));
        TC_ALGO_TRY(tc_algo_hier_join(sched, 0, &done));
    }
    /* 3. (leader) scatter the node's blocks */
    for (m = 1; m < g.nl; m++) {
        len = tc_algo_block_len(args, g.base + m);
        if (len > 0) {
            TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, g.base + m, w,
                                     tc_algo_block_off(args, g.base + m), TC_BUF_RECV, 0, len, done,
                                     TC_STEP_NO_DEP, NULL));
        }
    }
    if (!args->in_place && mylen > 0) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, w, myoff, TC_BUF_RECV, 0, mylen, done,
                                 TC_STEP_NO_DEP, NULL));
    }
    return TC_OK;
}

void tc_algo_reduce_scatter_hierarchical_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    const int p = args->nranks;
    const uint64_t total = tc_algo_blocks_sum(args, 0, p), nseg = tc_algo_segs_count(args, 0, p);
    uint64_t node_segs = 0, b = 0, msgs, elems, sum;
    tc_algo_hier_t g;
    double wa, wb;
    int q, v, nl, lgl;

    memset(cost, 0, sizeof(*cost));
    if (p == 1) {
        return;
    }
    tc_algo_hier_geom(args, &g);
    tc_algo_hier_weights(args, &wa, &wb);
    lgl = tc_algo_ceil_log2(g.L);
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
    cost->rounds = lgl * (double)nseg * wa + (double)(g.N - 1) * (double)(node_segs / g.N) +
                   (double)(g.L - 1) * wa;
    cost->elems = lgl * (double)total * wb + (double)(g.N - 1) * (double)g.L * (double)b +
                  (double)(g.L - 1) * (double)b * wb;
    cost->red_elems = lgl * (double)total + (double)(g.N - 1) * (double)g.L * (double)b;
    /* busiest rank, exactly: a non-leader sends the whole input once; a
     * leader every node-block but its own, then its node's other blocks */
    if (g.L > 1) {
        cost->max_send_msgs = nseg;
        cost->max_send_elems = total;
    }
    for (q = 0; q < g.N; q++) {
        nl = tc_algo_hier_node_size(&g, p, q);
        msgs = elems = 0;
        if (g.N > 1) {
            msgs = node_segs - tc_algo_segs_count(args, q * g.L, nl);
            elems = total - tc_algo_blocks_sum(args, q * g.L, nl);
        }
        for (v = 1, sum = 0; v < nl; v++) {
            msgs += tc_algo_block_len(args, q * g.L + v) > 0;
            sum += tc_algo_block_len(args, q * g.L + v);
        }
        elems += sum;
        cost->max_send_msgs = msgs > cost->max_send_msgs ? msgs : cost->max_send_msgs;
        cost->max_send_elems = elems > cost->max_send_elems ? elems : cost->max_send_elems;
    }
}
