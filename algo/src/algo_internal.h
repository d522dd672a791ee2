/* Helpers shared by the generators, the registry and the verifier (not public). */
#ifndef TCOMMS_ALGO_SRC_ALGO_INTERNAL_H
#define TCOMMS_ALGO_SRC_ALGO_INTERNAL_H

#include <stdint.h>

#include "tcomms/algo/schedule.h"

/* Chunk c of an even split of count elements into n chunks: the first
 * count % n chunks have one element more than the others. */
static inline uint64_t tc_algo_chunk_len(uint64_t count, int n, int c)
{
    return count / (uint64_t)n + ((uint64_t)c < count % (uint64_t)n ? 1 : 0);
}

static inline uint64_t tc_algo_chunk_off(uint64_t count, int n, int c)
{
    uint64_t base = count / (uint64_t)n, extra = count % (uint64_t)n;
    return base * (uint64_t)c + ((uint64_t)c < extra ? (uint64_t)c : extra);
}

/* (a mod n) in [0, n) for any sign of a. */
static inline int tc_algo_mod(int a, int n)
{
    int m = a % n;
    return m < 0 ? m + n : m;
}

/* Append one step; idx_p may be NULL. */
static inline tc_status_t tc_algo_step(tc_sched_t *sched, tc_step_kind_t kind, int peer,
                                       tc_buf_t buf, uint64_t off, tc_buf_t dst_buf,
                                       uint64_t dst_off, uint64_t count, uint32_t dep0,
                                       uint32_t dep1, uint32_t *idx_p)
{
    tc_step_t step = {
        .kind = (uint8_t)kind,
        .buf = (uint8_t)buf,
        .dst_buf = (uint8_t)dst_buf,
        .peer = peer,
        .off = off,
        .dst_off = dst_off,
        .count = count,
        .dep = {dep0, dep1},
    };
    return tc_sched_add(sched, &step, idx_p);
}

/* Check the fields of args every generator relies on; the detail names who. */
tc_status_t tc_algo_args_check(const tc_algo_args_t *args, const char *who);

/* The registered algorithm of args->coll named algo (NULL: the default, the
 * first in the table). TC_ERR_NOT_FOUND lists the valid names;
 * TC_ERR_UNSUPPORTED when the collective has no algorithm at all. */
tc_status_t tc_algo_find(tc_coll_t coll, const char *algo, const tc_algo_desc_t **desc_p);

/* 0: same node, 1: across nodes (see cost.c). */
int tc_algo_link_class(const tc_algo_args_t *args);

/* Largest power of two <= p (p >= 1), and its log2. */
static inline int tc_algo_pow2_floor(int p, int *lg)
{
    int p2 = 1, l = 0;
    while (p2 * 2 <= p) {
        p2 *= 2;
        l++;
    }
    if (lg != NULL) {
        *lg = l;
    }
    return p2;
}

/* ceil(log2(p)) for p >= 1. */
static inline int tc_algo_ceil_log2(int p)
{
    int l = 0;
    while ((1 << l) < p) {
        l++;
    }
    return l;
}

#define TC_ALGO_TRY(expr)                                                                          \
    do {                                                                                           \
        tc_status_t tc_algo_try_ = (expr);                                                         \
        if (tc_algo_try_ != TC_OK)                                                                 \
            return tc_algo_try_;                                                                   \
    } while (0)

/* Generators and cost formulas: one file per algorithm (and collective). */
#define TC_ALGO_DECLARE(fn)                                                                        \
    tc_status_t tc_algo_##fn(const tc_algo_args_t *args, tc_sched_t *sched);                       \
    void tc_algo_##fn##_cost(const tc_algo_args_t *args, tc_algo_cost_t *cost)

TC_ALGO_DECLARE(all_reduce_ring);
TC_ALGO_DECLARE(all_reduce_recursive_doubling);
TC_ALGO_DECLARE(all_reduce_rabenseifner);
TC_ALGO_DECLARE(broadcast_binomial_tree);
TC_ALGO_DECLARE(broadcast_linear);
TC_ALGO_DECLARE(reduce_binomial_tree);
TC_ALGO_DECLARE(reduce_linear);
TC_ALGO_DECLARE(all_gather_ring);
TC_ALGO_DECLARE(all_gather_recursive_doubling);
TC_ALGO_DECLARE(all_gather_bruck);
TC_ALGO_DECLARE(all_gather_linear);
TC_ALGO_DECLARE(reduce_scatter_ring);
TC_ALGO_DECLARE(reduce_scatter_pairwise);
TC_ALGO_DECLARE(reduce_scatter_linear);
TC_ALGO_DECLARE(all_to_all_pairwise);
TC_ALGO_DECLARE(all_to_all_linear);
TC_ALGO_DECLARE(gather_binomial_tree);
TC_ALGO_DECLARE(gather_linear);
TC_ALGO_DECLARE(scatter_binomial_tree);
TC_ALGO_DECLARE(scatter_linear);
TC_ALGO_DECLARE(barrier_bruck);
TC_ALGO_DECLARE(barrier_linear);

/* ---- pipelined trees (tree.c) ---------------------------------------------- */

/* Auto pipelining: alpha/beta of the model in elements, and a cap on chunks. */
#define TC_ALGO_PIPE_ALPHA_ELEMS 8192.0
#define TC_ALGO_PIPE_MAX_CHUNKS 1024.0

enum { TC_ALGO_TREE_BCAST, TC_ALGO_TREE_REDUCE, TC_ALGO_TREE_ALL };

/* A rank's place in one tree and the elements that tree carries. */
typedef struct tc_algo_tree_part {
    int parent;  /* rank, or -1 */
    int kids[2]; /* ranks */
    int nkids;
    uint64_t off, len, chunk; /* range [off, off+len) in chunks of chunk (>= 1) elements */
} tc_algo_tree_part_t;

/* Fills the parts (one per tree) of args->rank. */
typedef void (*tc_algo_tree_role_fn)(const tc_algo_args_t *args, tc_algo_tree_part_t *parts);

/* Labels 1..m: parent label (0: root) and children labels of x. */
void tc_algo_btree(int x, int m, int *parent, int kids[2], int *nkids);
/* Depth of that tree: floor(lg m). */
int tc_algo_btree_depth(int m);
/* Elements per chunk for a tree carrying len elements (args->chunk_count, or auto). */
uint64_t tc_algo_tree_chunk(const tc_algo_args_t *args, uint64_t len, int depth);
/* The steps of a rank in its trees (mode TC_ALGO_TREE_*). */
tc_status_t tc_algo_tree_steps(tc_sched_t *sched, const tc_algo_args_t *args, int mode,
                               const tc_algo_tree_part_t *parts, int nparts);
/* The cost of a tree algorithm whose roles role() gives (exact busiest rank). */
void tc_algo_ptree_cost(const tc_algo_args_t *args, int mode, int ntrees, int depth,
                        tc_algo_tree_role_fn role, tc_algo_cost_t *cost);

TC_ALGO_DECLARE(broadcast_binary_tree);
TC_ALGO_DECLARE(reduce_binary_tree);
TC_ALGO_DECLARE(all_reduce_binary_tree);
TC_ALGO_DECLARE(broadcast_double_binary_tree);
TC_ALGO_DECLARE(reduce_double_binary_tree);
TC_ALGO_DECLARE(all_reduce_double_binary_tree);
TC_ALGO_DECLARE(all_reduce_hierarchical);

tc_status_t tc_algo_applies_pow2(const tc_algo_args_t *args);
tc_status_t tc_algo_applies_uniform(const tc_algo_args_t *args);

#endif /* TCOMMS_ALGO_SRC_ALGO_INTERNAL_H */
