/*
 * Broadcast, reduce and all-reduce over two complementary pipelined binary
 * trees (tree.c), each carrying half the vector, as in NCCL: a rank is a
 * leaf in one tree iff it is interior in the other (with an odd number of
 * tree ranks one rank is a leaf in both), so every rank forwards about n
 * elements instead of 2n.
 *
 * Tree A labels its m ranks 1..m; tree B mirrors them (x -> m + 1 - x) when
 * m is even and shifts them by one when m is odd. Chunks of c elements
 * (chunk_count, or auto), C per tree, d = floor(lg m):
 *   broadcast / reduce: the root sits above both trees' roots (m = p - 1)
 *     and sends (receives) half to (from) each. Cost ~ (2(C-1) + 2(d+1))
 *     (alpha + c beta) [+ the same c gamma for reduce], 2 C c = n: n beta
 *     for large n, the lower bound.
 *   all_reduce: every rank in both trees (m = p); per tree a pipelined
 *     reduce to its root and broadcast back. Cost ~ (4(C-1) + 4d)(alpha +
 *     c beta) + (2(C-1) + 2d) c gamma: 2 n beta + n gamma for large n.
 */
#include "algo_internal.h"

TC_ALGO_DEFINE(ALL_REDUCE, double_binary_tree, all_reduce_double_binary_tree, NULL, 50);
TC_ALGO_DEFINE(REDUCE, double_binary_tree, reduce_double_binary_tree, NULL, 40);
TC_ALGO_DEFINE(BROADCAST, double_binary_tree, broadcast_double_binary_tree, NULL, 40);

/* Label of relative index v (1..m) in tree B, and back. */
static int tc_dbt_label_b(int v, int m)
{
    return (m % 2 == 0) ? m + 1 - v : (v % m) + 1;
}

static int tc_dbt_from_label_b(int y, int m)
{
    if (m % 2 == 0) {
        return m + 1 - y;
    }
    return y >= 2 ? y - 1 : m;
}

/* Tree h's part for the rank with 1-based index v (1..m) in a tree of m;
 * base maps indices to ranks: rank = (base + v) mod p; parent 0 -> top. */
static void tc_dbt_part(const tc_algo_args_t *a, int h, int v, int m, int base, int top,
                        tc_algo_tree_part_t *pt)
{
    const int p = a->nranks;
    int x = h == 0 ? v : tc_dbt_label_b(v, m), par, kids[2], k;

    tc_algo_btree(x, m, &par, kids, &pt->nkids);
    pt->parent = par == 0 ? top : (base + (h == 0 ? par : tc_dbt_from_label_b(par, m))) % p;
    for (k = 0; k < pt->nkids; k++) {
        pt->kids[k] = (base + (h == 0 ? kids[k] : tc_dbt_from_label_b(kids[k], m))) % p;
    }
}

static void tc_dbt_halves(const tc_algo_args_t *a, int depth, tc_algo_tree_part_t *parts)
{
    const uint64_t na = a->count - a->count / 2;
    const uint64_t c = tc_algo_tree_chunk(a, na, depth);

    parts[0].off = 0;
    parts[0].len = na;
    parts[1].off = na;
    parts[1].len = a->count / 2;
    parts[0].chunk = parts[1].chunk = c;
}

static void tc_dbt_rooted_role(const tc_algo_args_t *a, tc_algo_tree_part_t *parts)
{
    const int p = a->nranks, m = p - 1, v = tc_algo_mod(a->rank - a->root, p);
    int h;

    if (v == 0) {
        for (h = 0; h < 2; h++) {
            int R = m > 0 ? tc_algo_pow2_floor(m, NULL) : 0;
            parts[h].parent = -1;
            parts[h].nkids = m > 0 ? 1 : 0;
            parts[h].kids[0] =
                (a->root + (h == 0 ? R : (m > 0 ? tc_dbt_from_label_b(R, m) : 0))) % p;
        }
    } else {
        for (h = 0; h < 2; h++) {
            tc_dbt_part(a, h, v, m, a->root, a->root, &parts[h]);
        }
    }
    tc_dbt_halves(a, tc_algo_btree_depth(m) + 1, parts);
}

static void tc_dbt_all_role(const tc_algo_args_t *a, tc_algo_tree_part_t *parts)
{
    int h;

    for (h = 0; h < 2; h++) {
        tc_dbt_part(a, h, a->rank + 1, a->nranks, a->nranks - 1, -1, &parts[h]);
    }
    tc_dbt_halves(a, tc_algo_btree_depth(a->nranks), parts);
}

static tc_status_t tc_dbt_gen(const tc_algo_args_t *args, tc_sched_t *sched, int mode,
                              tc_algo_tree_role_fn role, const char *who)
{
    tc_algo_tree_part_t parts[2];

    TC_ALGO_TRY(tc_algo_args_check(args, who));
    sched->scratch_count = 0;
    if (args->count == 0) {
        return TC_OK;
    }
    role(args, parts);
    return tc_algo_tree_steps(sched, args, mode, parts, 2);
}

tc_status_t tc_algo_broadcast_double_binary_tree(const tc_algo_args_t *args, tc_sched_t *sched)
{
    return tc_dbt_gen(args, sched, TC_ALGO_TREE_BCAST, tc_dbt_rooted_role,
                      "broadcast double_binary_tree");
}

tc_status_t tc_algo_reduce_double_binary_tree(const tc_algo_args_t *args, tc_sched_t *sched)
{
    return tc_dbt_gen(args, sched, TC_ALGO_TREE_REDUCE, tc_dbt_rooted_role,
                      "reduce double_binary_tree");
}

tc_status_t tc_algo_all_reduce_double_binary_tree(const tc_algo_args_t *args, tc_sched_t *sched)
{
    return tc_dbt_gen(args, sched, TC_ALGO_TREE_ALL, tc_dbt_all_role,
                      "all_reduce double_binary_tree");
}

void tc_algo_broadcast_double_binary_tree_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    tc_algo_ptree_cost(args, TC_ALGO_TREE_BCAST, 2, tc_algo_btree_depth(args->nranks - 1) + 1,
                       tc_dbt_rooted_role, cost);
}

void tc_algo_reduce_double_binary_tree_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    tc_algo_ptree_cost(args, TC_ALGO_TREE_REDUCE, 2, tc_algo_btree_depth(args->nranks - 1) + 1,
                       tc_dbt_rooted_role, cost);
}

void tc_algo_all_reduce_double_binary_tree_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)
{
    tc_algo_ptree_cost(args, TC_ALGO_TREE_ALL, 2, tc_algo_btree_depth(args->nranks),
                       tc_dbt_all_role, cost);
}
