/*
 * Broadcast, linear: the root sends the whole vector to every other rank.
 * Cost = (p-1) alpha + (p-1) n beta at the root (its sends serialise).
 * Steps: root: COPY send -> recv (out of place), then p-1 SENDs from its
 * input; others: one RECV into recv.
 */
#include <string.h>

#include "algo_internal.h"

TC_ALGO_DEFINE(BROADCAST, linear, broadcast_linear, NULL, 20);

tc_status_t tc_algo_broadcast_linear(const tc_algo_args_t *args, tc_sched_t *sched)
{
    const int p = args->nranks, r = args->rank, root = args->root;
    tc_algo_layout_t lay;
    int k;

    TC_ALGO_TRY(tc_algo_layout(args, &lay));
    if (args->count == 0) {
        return TC_OK;
    }
    if (r != root) {
        return tc_algo_step(sched, TC_STEP_RECV, root, TC_BUF_RECV, 0, TC_BUF_RECV, 0, args->count,
                            TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL);
    }
    if (!args->in_place) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV, 0,
                                 args->count, TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL));
    }
    for (k = 1; k < p; k++) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, (root + k) % p, lay.in_buf, 0, TC_BUF_RECV, 0,
                                 args->count, TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL));
    }
    return TC_OK;
}

void tc_algo_broadcast_linear_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    memset(cost, 0, sizeof(*cost));
    if (args->count == 0) {
        return;
    }
    cost->rounds = args->nranks - 1;
    /* the root's sends are posted at once */
    cost->overlap = args->nranks > 1 ? args->nranks - 2 : 0;
    cost->elems = (double)(args->nranks - 1) * (double)args->count;
    cost->max_send_msgs = (uint64_t)(args->nranks - 1);
    cost->max_send_elems = cost->max_send_msgs * args->count;
}
