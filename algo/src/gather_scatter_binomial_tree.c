/*
 * Gather and scatter, binomial tree. In relative ranks v = (r - root) mod p,
 * rank v's subtree is [v, v + min(lowbit(v), p - v)). A non-root keeps its
 * subtree's blocks in scratch in relative order; a leaf (a subtree of one)
 * sends its input or receives its output in place, with no scratch and no
 * copy. The root uses recv (send for scatter) in real rank order, where a
 * subtree's blocks may wrap past rank p-1: the root then exchanges with that
 * child in two messages.
 * Cost = ceil(lg p) alpha + (p-1)/p N beta at the root + N/p gamma (a
 * non-leaf's copy of its own block).
 */
#include <string.h>

#include "algo_internal.h"

TC_ALGO_DEFINE(GATHER, binomial_tree, gather_binomial_tree, NULL, 10);
TC_ALGO_DEFINE(SCATTER, binomial_tree, scatter_binomial_tree, NULL, 10);

/* Blocks of the subtree of relative rank v. */
static int tc_algo_subtree(int v, int p, int top)
{
    int m = v == 0 ? top : (v & -v);
    return m < p - v ? m : p - v;
}

/* The root's side of a subtree message: relative blocks [v, v + k) live at
 * real blocks (root + v ...) mod p: one or two pieces. */
static tc_status_t tc_algo_root_xfer(tc_sched_t *sched, int kind, int buf, int root, int p, int v,
                                     int k, uint64_t n, uint32_t dep, uint32_t *last)
{
    int first = (root + v) % p, len1 = k < p - first ? k : p - first;
    uint64_t o1 = (uint64_t)first * n;

    if (kind == TC_STEP_SEND) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, first, buf, o1, TC_BUF_RECV, 0,
                                 (uint64_t)len1 * n, dep, TC_STEP_NO_DEP, last));
        if (len1 < k) {
            TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, first, buf, 0, TC_BUF_RECV, 0,
                                     (uint64_t)(k - len1) * n, dep, TC_STEP_NO_DEP, last));
        }
        return TC_OK;
    }
    TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_RECV, first, TC_BUF_RECV, 0, TC_BUF_RECV, o1,
                             (uint64_t)len1 * n, dep, TC_STEP_NO_DEP, last));
    if (len1 < k) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_RECV, first, TC_BUF_RECV, 0, TC_BUF_RECV, 0,
                                 (uint64_t)(k - len1) * n, dep, TC_STEP_NO_DEP, last));
    }
    return TC_OK;
}

/* Whether relative rank v's subtree wraps in real order (then it exchanges
 * with the root in two messages: the first real block up to p-1, the rest). */
static int tc_algo_wraps(int root, int p, int v, int k, int *len1)
{
    int first = (root + v) % p;
    *len1 = k < p - first ? k : p - first;
    return *len1 < k;
}

tc_status_t tc_algo_gather_binomial_tree(const tc_algo_args_t *args, tc_sched_t *sched)
{
    const int p = args->nranks, r = args->rank, root = args->root;
    const int v = tc_algo_mod(r - root, p), top = 1 << tc_algo_ceil_log2(p);
    const uint64_t n = args->count;
    const int k = tc_algo_subtree(v, p, top);
    tc_algo_layout_t lay;
    uint32_t last = TC_STEP_NO_DEP;
    int m, len1;

    TC_ALGO_TRY(tc_algo_layout(args, &lay));
    TC_ALGO_TRY(tc_algo_applies_uniform(args));
    if (n == 0) {
        return TC_OK;
    }
    if (v == 0) {
        if (!args->in_place) {
            TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV,
                                     (uint64_t)r * n, n, TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL));
        }
        for (m = 1; m < top; m <<= 1) {
            if (m < p) {
                TC_ALGO_TRY(tc_algo_root_xfer(sched, TC_STEP_RECV, TC_BUF_RECV, root, p, m,
                                              tc_algo_subtree(m, p, top), n, TC_STEP_NO_DEP, NULL));
            }
        }
        return TC_OK;
    }
    if (k == 1) { /* a leaf sends its input as it is */
        return tc_algo_step(sched, TC_STEP_SEND, (root + v - (v & -v)) % p, lay.in_buf, lay.in_off,
                            TC_BUF_RECV, 0, n, TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL);
    }
    sched->scratch_count = (uint64_t)k * n;
    TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, lay.in_buf, lay.in_off, TC_BUF_SCRATCH, 0, n,
                             TC_STEP_NO_DEP, TC_STEP_NO_DEP, &last));
    for (m = 1; m < (v & -v) && v + m < p; m <<= 1) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_RECV, (root + v + m) % p, TC_BUF_RECV, 0,
                                 TC_BUF_SCRATCH, (uint64_t)m * n,
                                 (uint64_t)tc_algo_subtree(v + m, p, top) * n, last, TC_STEP_NO_DEP,
                                 &last));
    }
    m = v & -v;
    if (v - m == 0 && tc_algo_wraps(root, p, v, k, &len1)) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, root, TC_BUF_SCRATCH, 0, TC_BUF_RECV, 0,
                                 (uint64_t)len1 * n, last, TC_STEP_NO_DEP, NULL));
        return tc_algo_step(sched, TC_STEP_SEND, root, TC_BUF_SCRATCH, (uint64_t)len1 * n,
                            TC_BUF_RECV, 0, (uint64_t)(k - len1) * n, last, TC_STEP_NO_DEP, NULL);
    }
    return tc_algo_step(sched, TC_STEP_SEND, (root + v - m) % p, TC_BUF_SCRATCH, 0, TC_BUF_RECV, 0,
                        (uint64_t)k * n, last, TC_STEP_NO_DEP, NULL);
}

tc_status_t tc_algo_scatter_binomial_tree(const tc_algo_args_t *args, tc_sched_t *sched)
{
    const int p = args->nranks, r = args->rank, root = args->root;
    const int v = tc_algo_mod(r - root, p), top = 1 << tc_algo_ceil_log2(p);
    const uint64_t n = args->count;
    const int k = tc_algo_subtree(v, p, top);
    tc_algo_layout_t lay;
    uint32_t got = TC_STEP_NO_DEP;
    int m, len1;

    TC_ALGO_TRY(tc_algo_layout(args, &lay));
    TC_ALGO_TRY(tc_algo_applies_uniform(args));
    if (n == 0) {
        return TC_OK;
    }
    if (v == 0) {
        for (m = top >> 1; m >= 1; m >>= 1) {
            if (m < p) {
                TC_ALGO_TRY(tc_algo_root_xfer(sched, TC_STEP_SEND, lay.in_buf, root, p, m,
                                              tc_algo_subtree(m, p, top), n, TC_STEP_NO_DEP, NULL));
            }
        }
        if (!args->in_place) {
            TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SEND, (uint64_t)r * n,
                                     TC_BUF_RECV, 0, n, TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL));
        }
        return TC_OK;
    }
    m = v & -v;
    if (k == 1) { /* a leaf receives its block where it belongs */
        return tc_algo_step(sched, TC_STEP_RECV, (root + v - m) % p, TC_BUF_RECV, 0, TC_BUF_RECV, 0,
                            n, TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL);
    }
    sched->scratch_count = (uint64_t)k * n;
    if (v - m == 0 && tc_algo_wraps(root, p, v, k, &len1)) {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_RECV, root, TC_BUF_RECV, 0, TC_BUF_SCRATCH, 0,
                                 (uint64_t)len1 * n, TC_STEP_NO_DEP, TC_STEP_NO_DEP, &got));
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_RECV, root, TC_BUF_RECV, 0, TC_BUF_SCRATCH,
                                 (uint64_t)len1 * n, (uint64_t)(k - len1) * n, got, TC_STEP_NO_DEP,
                                 &got));
    } else {
        TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_RECV, (root + v - m) % p, TC_BUF_RECV, 0,
                                 TC_BUF_SCRATCH, 0, (uint64_t)k * n, TC_STEP_NO_DEP, TC_STEP_NO_DEP,
                                 &got));
    }
    for (m = (v & -v) >> 1; m >= 1; m >>= 1) {
        if (v + m < p) {
            TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, (root + v + m) % p, TC_BUF_SCRATCH,
                                     (uint64_t)m * n, TC_BUF_RECV, 0,
                                     (uint64_t)tc_algo_subtree(v + m, p, top) * n, got,
                                     TC_STEP_NO_DEP, NULL));
        }
    }
    return tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SCRATCH, 0, TC_BUF_RECV, 0, n, got,
                        TC_STEP_NO_DEP, NULL);
}

static void tc_algo_tree_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost, int scatter)
{
    const int p = args->nranks, lg = tc_algo_ceil_log2(p), top = 1 << lg;
    uint64_t msgs = 0;
    int m, len1;

    memset(cost, 0, sizeof(*cost));
    if (args->count == 0 || p == 1) {
        return;
    }
    cost->rounds = lg;
    cost->elems = (double)(p - 1) * (double)args->count;
    /* a non-leaf (there is one from 3 ranks) copies its own block between scratch and the
     * caller's buffer, a pass over memory like a reduction's: so large blocks go linear, where
     * the root's bytes are the same and nothing is copied or forwarded */
    cost->red_elems = p > 2 ? (double)args->count : 0;
    if (!scatter) {
        /* every rank sends its subtree once; the biggest is root's child p2/2,
         * in up to two messages */
        int kmax = 0;
        cost->max_send_msgs = 1;
        for (m = 1; m < top; m <<= 1) {
            if (m < p) {
                int km = tc_algo_subtree(m, p, top);
                kmax = km > kmax ? km : kmax;
                if (tc_algo_wraps(args->root, p, m, km, &len1)) {
                    cost->max_send_msgs = 2;
                }
            }
        }
        cost->max_send_elems = (uint64_t)kmax * args->count;
        return;
    }
    for (m = 1; m < top; m <<= 1) {
        if (m < p) {
            msgs +=
                1 + (uint64_t)tc_algo_wraps(args->root, p, m, tc_algo_subtree(m, p, top), &len1);
        }
    }
    cost->max_send_msgs = msgs;
    cost->max_send_elems = (uint64_t)(p - 1) * args->count;
}

void tc_algo_gather_binomial_tree_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    tc_algo_tree_cost(args, cost, 0);
}

void tc_algo_scatter_binomial_tree_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    tc_algo_tree_cost(args, cost, 1);
}
