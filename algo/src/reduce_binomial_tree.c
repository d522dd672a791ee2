/*
 * Reduce, binomial tree: the mirror of the binomial broadcast. In relative
 * ranks v = (r - root) mod p, rank v reduces the vectors of its children
 * v + m (m a power of two below lowbit(v), smallest first) into its
 * accumulator, then sends it to v - lowbit(v).
 * Cost = ceil(lg p) (alpha + n beta + n gamma).
 * The accumulator is recv (every rank has a count-element recv buffer; only
 * the root's is output). Steps: one receive-reduce per child, chained, then
 * the SEND to the parent. Out of place the first child's is RECV_REDUCE_SRC
 * (recv = input op message), so the input is never copied first; a leaf
 * sends its input as it is.
 */
#include <string.h>

#include "algo_internal.h"

TC_ALGO_DEFINE(REDUCE, binomial_tree, reduce_binomial_tree, NULL, 10);

tc_status_t tc_algo_reduce_binomial_tree(const tc_algo_args_t *args, tc_sched_t *sched)
{
    const int p = args->nranks, r = args->rank, root = args->root;
    const int v = tc_algo_mod(r - root, p);
    const uint64_t n = args->count;
    uint32_t last = TC_STEP_NO_DEP;
    int m, top;

    const tc_buf_t in = args->in_place ? TC_BUF_RECV : TC_BUF_SEND;
    int first = 1;

    TC_ALGO_TRY(tc_algo_args_check(args, "reduce binomial_tree"));
    if (n == 0) {
        return TC_OK;
    }
    if (v == 0) {
        top = 1;
        while (top < p) {
            top <<= 1;
        }
    } else {
        top = v & -v;
    }
    for (m = 1; m < top; m <<= 1) {
        if (v + m < p) {
            const tc_step_kind_t kind =
                first && !args->in_place ? TC_STEP_RECV_REDUCE_SRC : TC_STEP_RECV_REDUCE;
            TC_ALGO_TRY(tc_algo_step(sched, kind, (root + v + m) % p, in, 0, TC_BUF_RECV, 0, n,
                                     last, TC_STEP_NO_DEP, &last));
            first = 0;
        }
    }
    if (v == 0 && first && !args->in_place) { /* a root without children (one rank) */
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV, 0, n,
                                 TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL));
    }
    if (v != 0) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, (root + v - top) % p,
                                 first ? in : TC_BUF_RECV, 0, TC_BUF_RECV, 0, n, last,
                                 TC_STEP_NO_DEP, NULL));
    }
    return TC_OK;
}

void tc_algo_reduce_binomial_tree_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    const int lg = tc_algo_ceil_log2(args->nranks);

    memset(cost, 0, sizeof(*cost));
    if (args->count == 0 || args->nranks == 1) {
        return;
    }
    cost->rounds = lg;
    cost->elems = (double)lg * (double)args->count;
    cost->red_elems = cost->elems;
    cost->max_send_msgs = 1;
    cost->max_send_elems = args->count;
}
