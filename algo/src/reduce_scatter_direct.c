/*
 * Reduce-scatter, pairwise and linear (direct): every rank sends block q of
 * its input to rank q and reduces the p-1 blocks it receives into its
 * output. pairwise: at step k = 1..p-1 send to r+k and receive from r-k
 * (every rank has one partner per step); linear: in rank order.
 * Cost = (p-1) alpha + (p-1) n beta + (p-1) n gamma (n: the largest block).
 * Supports per-rank counts. The receives reduce into the output one after
 * the other (they write the same elements).
 */
#include <string.h>

#include "algo_internal.h"

TC_ALGO_DEFINE(REDUCE_SCATTER, pairwise, reduce_scatter_pairwise, NULL, 20);
TC_ALGO_DEFINE(REDUCE_SCATTER, linear, reduce_scatter_linear, NULL, 30);

static tc_status_t tc_algo_rs_direct(const tc_algo_args_t *args, tc_sched_t *sched, int pairwise)
{
    const int p = args->nranks, r = args->rank;
    const uint64_t mine = tc_algo_block_len(args, r);
    tc_algo_layout_t lay;
    uint32_t last = TC_STEP_NO_DEP;
    int k, q;

    TC_ALGO_TRY(tc_algo_layout(args, &lay));
    if (!args->in_place && mine > 0) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SEND, tc_algo_block_off(args, r),
                                 TC_BUF_RECV, 0, mine, TC_STEP_NO_DEP, TC_STEP_NO_DEP, &last));
    }
    for (k = 1; k < p; k++) {
        q = pairwise ? (r + k) % p : (k <= r ? k - 1 : k);
        if (tc_algo_block_len(args, q) > 0) {
            TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, q, lay.in_buf, tc_algo_block_off(args, q),
                                     TC_BUF_RECV, 0, tc_algo_block_len(args, q), TC_STEP_NO_DEP,
                                     TC_STEP_NO_DEP, NULL));
        }
        q = pairwise ? tc_algo_mod(r - k, p) : q;
        if (mine > 0) {
            TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_RECV_REDUCE, q, TC_BUF_RECV, 0, TC_BUF_RECV,
                                     lay.out_off, mine, last, TC_STEP_NO_DEP, &last));
        }
    }
    return TC_OK;
}

tc_status_t tc_algo_reduce_scatter_pairwise(const tc_algo_args_t *args, tc_sched_t *sched)
{
    return tc_algo_rs_direct(args, sched, 1);
}

tc_status_t tc_algo_reduce_scatter_linear(const tc_algo_args_t *args, tc_sched_t *sched)
{
    return tc_algo_rs_direct(args, sched, 0);
}

void tc_algo_reduce_scatter_pairwise_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    uint64_t total = 0, max_len = 0, len, msgs = 0, m, sent = 0;
    int q, r, p = args->nranks;

    memset(cost, 0, sizeof(*cost));
    for (q = 0; q < p; q++) {
        len = tc_algo_block_len(args, q);
        total += len;
        max_len = len > max_len ? len : max_len;
    }
    if (p == 1 || total == 0) {
        return;
    }
    for (r = 0; r < p; r++) {
        for (m = 0, q = 0; q < p; q++) {
            m += q != r && tc_algo_block_len(args, q) > 0;
        }
        msgs = m > msgs ? m : msgs;
        len = total - tc_algo_block_len(args, r);
        sent = len > sent ? len : sent;
        if (args->counts == NULL) {
            break;
        }
    }
    cost->rounds = p - 1;
    cost->overlap = p - 2; /* no message waits for another (the reductions do) */
    cost->link_share = tc_algo_node_share_all(args);
    cost->elems = (double)(p - 1) * (double)max_len;
    cost->red_elems = cost->elems;
    cost->max_send_msgs = msgs;
    cost->max_send_elems = sent;
}

void tc_algo_reduce_scatter_linear_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    tc_algo_reduce_scatter_pairwise_cost(args, cost);
}
