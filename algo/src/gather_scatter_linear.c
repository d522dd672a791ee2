/*
 * Gather and scatter, linear: the root receives (sends) every other rank's
 * block directly.
 * Cost = (p-1) alpha + (p-1) n beta at the root.
 */
#include <string.h>

#include "algo_internal.h"

TC_ALGO_DEFINE(GATHER, linear, gather_linear, NULL, 20);
TC_ALGO_DEFINE(SCATTER, linear, scatter_linear, NULL, 20);

tc_status_t tc_algo_gather_linear(const tc_algo_args_t *args, tc_sched_t *sched)
{
    const int p = args->nranks, r = args->rank, root = args->root;
    const uint64_t n = args->count;
    tc_algo_layout_t lay;
    int k, q;

    TC_ALGO_TRY(tc_algo_layout(args, &lay));
    if (n == 0) {
        return TC_OK;
    }
    if (r != root) {
        return tc_algo_step(sched, TC_STEP_SEND, root, lay.in_buf, lay.in_off, TC_BUF_RECV, 0, n,
                            TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL);
    }
    if (!args->in_place) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV,
                                 (uint64_t)r * n, n, TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL));
    }
    for (k = 1; k < p; k++) {
        q = (root + k) % p;
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_RECV, q, TC_BUF_RECV, 0, TC_BUF_RECV,
                                 (uint64_t)q * n, n, TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL));
    }
    return TC_OK;
}

tc_status_t tc_algo_scatter_linear(const tc_algo_args_t *args, tc_sched_t *sched)
{
    const int p = args->nranks, r = args->rank, root = args->root;
    const uint64_t n = args->count;
    tc_algo_layout_t lay;
    int k, q;

    TC_ALGO_TRY(tc_algo_layout(args, &lay));
    if (n == 0) {
        return TC_OK;
    }
    if (r != root) {
        return tc_algo_step(sched, TC_STEP_RECV, root, TC_BUF_RECV, 0, TC_BUF_RECV, 0, n,
                            TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL);
    }
    if (!args->in_place) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SEND, (uint64_t)r * n, TC_BUF_RECV,
                                 0, n, TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL));
    }
    for (k = 1; k < p; k++) {
        q = (root + k) % p;
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, q, lay.in_buf, (uint64_t)q * n, TC_BUF_RECV,
                                 0, n, TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL));
    }
    return TC_OK;
}

void tc_algo_gather_linear_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    memset(cost, 0, sizeof(*cost));
    if (args->count == 0 || args->nranks == 1) {
        return;
    }
    cost->rounds = args->nranks - 1;
    cost->overlap = args->nranks - 2; /* the root's messages are posted at once */
    cost->elems = (double)(args->nranks - 1) * (double)args->count;
    cost->max_send_msgs = 1;
    cost->max_send_elems = args->count;
}

void tc_algo_scatter_linear_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    tc_algo_gather_linear_cost(args, cost);
    if (cost->rounds > 0) {
        cost->max_send_msgs = (uint64_t)(args->nranks - 1);
        cost->max_send_elems = cost->max_send_msgs * args->count;
    }
}
