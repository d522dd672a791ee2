/*
 * Broadcast, reduce and all-reduce over one pipelined binary tree (tree.c).
 *
 * The vector travels in C chunks of c elements (chunk_count, or auto:
 * C ~ sqrt(n d / (alpha/beta)), tc_algo_tree_chunk); an interior rank
 * forwards chunk j while chunk j+1 arrives. Depth d = floor(lg p).
 *   broadcast: receive each chunk from the parent, send it to both children.
 *     Cost ~ (2(C-1) + 2d)(alpha + c beta): 2 n beta for large n (an interior
 *     rank sends everything twice; double_binary_tree halves that).
 *   reduce: receive-reduce each chunk from both children, send it up.
 *     Cost ~ (2(C-1) + 2d)(alpha + c beta + c gamma).
 *   all_reduce: tree reduce then tree broadcast, per chunk, so both pipelines
 *     run at once: ~ (3(C-1) + 4d)(alpha + c beta) + (2(C-1) + 2d) c gamma.
 * Rooted collectives rotate the labels so that the root is the tree's root
 * (label R, the largest power of two <= p); all_reduce uses label r + 1.
 */
#include "algo_internal.h"

TC_ALGO_DEFINE(ALL_REDUCE, binary_tree, all_reduce_binary_tree, NULL, 40);
TC_ALGO_DEFINE(REDUCE, binary_tree, reduce_binary_tree, NULL, 30);
TC_ALGO_DEFINE(BROADCAST, binary_tree, broadcast_binary_tree, NULL, 30);

/* Rooted: label x <-> relative rank v = (x - R) mod p. */
static int tc_bt_rank(const tc_algo_args_t *a, int R, int x)
{
    return (a->root + (x - R + a->nranks) % a->nranks) % a->nranks;
}

static void tc_bt_fill(const tc_algo_args_t *a, int x, int m,
                       int (*rank)(const tc_algo_args_t *, int, int), int R,
                       tc_algo_tree_part_t *pt)
{
    int par, kids[2], k;

    tc_algo_btree(x, m, &par, kids, &pt->nkids);
    pt->parent = par == 0 ? -1 : rank(a, R, par);
    for (k = 0; k < pt->nkids; k++) {
        pt->kids[k] = rank(a, R, kids[k]);
    }
    pt->off = 0;
    pt->len = a->count;
    pt->chunk = tc_algo_tree_chunk(a, a->count, tc_algo_btree_depth(m));
}

static void tc_bt_rooted_role(const tc_algo_args_t *a, tc_algo_tree_part_t *parts)
{
    const int p = a->nranks, R = tc_algo_pow2_floor(p, NULL);
    const int v = tc_algo_mod(a->rank - a->root, p);

    tc_bt_fill(a, (v + R - 1) % p + 1, p, tc_bt_rank, R, &parts[0]);
}

static int tc_bt_plain_rank(const tc_algo_args_t *a, int R, int x)
{
    (void)a;
    (void)R;
    return x - 1;
}

static void tc_bt_all_role(const tc_algo_args_t *a, tc_algo_tree_part_t *parts)
{
    tc_bt_fill(a, a->rank + 1, a->nranks, tc_bt_plain_rank, 0, &parts[0]);
}

static tc_status_t tc_bt_gen(const tc_algo_args_t *args, tc_sched_t *sched, int mode,
                             tc_algo_tree_role_fn role, const char *who)
{
    tc_algo_tree_part_t part;

    TC_ALGO_TRY(tc_algo_args_check(args, who));
    sched->scratch_count = 0;
    if (args->count == 0) {
        return TC_OK;
    }
    role(args, &part);
    return tc_algo_tree_steps(sched, args, mode, &part, 1);
}

tc_status_t tc_algo_broadcast_binary_tree(const tc_algo_args_t *args, tc_sched_t *sched)
{
    return tc_bt_gen(args, sched, TC_ALGO_TREE_BCAST, tc_bt_rooted_role, "broadcast binary_tree");
}

tc_status_t tc_algo_reduce_binary_tree(const tc_algo_args_t *args, tc_sched_t *sched)
{
    return tc_bt_gen(args, sched, TC_ALGO_TREE_REDUCE, tc_bt_rooted_role, "reduce binary_tree");
}

tc_status_t tc_algo_all_reduce_binary_tree(const tc_algo_args_t *args, tc_sched_t *sched)
{
    return tc_bt_gen(args, sched, TC_ALGO_TREE_ALL, tc_bt_all_role, "all_reduce binary_tree");
}

void tc_algo_broadcast_binary_tree_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    tc_algo_ptree_cost(args, TC_ALGO_TREE_BCAST, 1, tc_algo_btree_depth(args->nranks),
                       tc_bt_rooted_role, cost);
}

void tc_algo_reduce_binary_tree_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    tc_algo_ptree_cost(args, TC_ALGO_TREE_REDUCE, 1, tc_algo_btree_depth(args->nranks),
                       tc_bt_rooted_role, cost);
}

void tc_algo_all_reduce_binary_tree_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    tc_algo_ptree_cost(args, TC_ALGO_TREE_ALL, 1, tc_algo_btree_depth(args->nranks), tc_bt_all_role,
                       cost);
}
