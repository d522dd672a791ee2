/*
 * All-gather, linear (direct): every rank sends its block to every other
 * rank and receives theirs, all at once.
 * Cost = (p-1) alpha + (p-1) n beta (the sends of a rank serialise).
 * Supports per-rank counts (all_gather_v). No dependencies between the
 * messages: they touch disjoint blocks.
 */
#include <string.h>

#include "algo_internal.h"

TC_ALGO_DEFINE(ALL_GATHER, linear, all_gather_linear, NULL, 40);

tc_status_t tc_algo_all_gather_linear(const tc_algo_args_t *args, tc_sched_t *sched)
{
    const int p = args->nranks, r = args->rank;
    tc_algo_layout_t lay;
    int k, q;

    TC_ALGO_TRY(tc_algo_layout(args, &lay));
    if (!args->in_place && lay.in_count > 0) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV,
                                 tc_algo_block_off(args, r), lay.in_count, TC_STEP_NO_DEP,
                                 TC_STEP_NO_DEP, NULL));
    }
    for (k = 1; k < p; k++) {
        q = (r + k) % p;
        if (lay.in_count > 0) {
            TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, q, lay.in_buf, lay.in_off, TC_BUF_RECV, 0,
                                     lay.in_count, TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL));
        }
        q = tc_algo_mod(r - k, p);
        if (tc_algo_block_len(args, q) > 0) {
            TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_RECV, q, TC_BUF_RECV, 0, TC_BUF_RECV,
                                     tc_algo_block_off(args, q), tc_algo_block_len(args, q),
                                     TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL));
        }
    }
    return TC_OK;
}

void tc_algo_all_gather_linear_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    uint64_t max_len = 0, len;
    int q;

    memset(cost, 0, sizeof(*cost));
    for (q = 0; q < args->nranks; q++) {
        len = tc_algo_block_len(args, q);
        max_len = len > max_len ? len : max_len;
        if (args->counts == NULL) {
            break;
        }
    }
    if (args->nranks == 1 || max_len == 0) {
        return;
    }
    cost->rounds = args->nranks - 1;
    cost->overlap = args->nranks - 2; /* every message is posted at once */
    cost->link_share = tc_algo_node_share_all(args);
    cost->elems = (double)(args->nranks - 1) * (double)max_len;
    cost->max_send_msgs = (uint64_t)(args->nranks - 1);
    cost->max_send_elems = cost->max_send_msgs * max_len;
}
