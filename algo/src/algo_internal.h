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

/* Rings: a block of len elements travels in pieces of chunk elements
 * (args->chunk_count; 0: the whole block in one piece). The number of pieces
 * (0 for an empty block) and the length of piece j (at offset j * chunk). */
static inline uint64_t tc_algo_pieces(uint64_t len, uint64_t chunk)
{
    if (len == 0) {
        return 0;
    }
    /* Not (len + chunk - 1) / chunk: that wraps for chunk near UINT64_MAX. */
    return chunk == 0 ? 1 : (len - 1) / chunk + 1;
}

static inline uint64_t tc_algo_piece_len(uint64_t len, uint64_t chunk, uint64_t j)
{
    if (chunk == 0) {
        return len;
    }
    return len - j * chunk < chunk ? len - j * chunk : chunk;
}

/* A ring step emits its ns sends and nr receives alternately from index
 * start: send 0, receive 0, send 1, ... (the rest of the longer list last).
 * The index of send j (is_recv 0) or receive j (1). */
static inline uint32_t tc_algo_ring_pos(uint32_t start, uint64_t j, uint64_t ns, uint64_t nr,
                                        int is_recv)
{
    const uint64_t other = is_recv ? (j + 1 < ns ? j + 1 : ns) : (j < nr ? j : nr);
    return start + (uint32_t)(j + other);
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
TC_MUST_USE tc_status_t tc_algo_args_check(const tc_algo_args_t *args, const char *who);

/* The registered algorithm of args->coll named algo (NULL: the default, the
 * first in the table). TC_ERR_NOT_FOUND lists the valid names;
 * TC_ERR_UNSUPPORTED when the collective has no algorithm at all. */
TC_MUST_USE tc_status_t tc_algo_find(tc_coll_t coll, const char *algo,
                                     const tc_algo_desc_t **desc_p);

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

/*
 * Registers an algorithm. Written at the start of a line in its source file:
 *   TC_ALGO_DEFINE(ALL_REDUCE, ring, all_reduce_ring, NULL, 10);
 * registers tc_algo_all_reduce_ring() and tc_algo_all_reduce_ring_cost() as
 * the all_reduce algorithm "ring", applicable where applies (NULL: always; else
 * a non-static tc_ function) says so, ordered among its collective's
 * algorithms by priority (lowest first; the first is the default). The table
 * is generated at build time from these lines (algo/registry_gen.sh, see
 * algo/BUILD.bazel): no constructor, no linker section. In C the line only
 * declares the two functions and checks its arguments' types.
 */
#define TC_ALGO_DEFINE(coll, name, fn, applies, priority)                                          \
    TC_ALGO_DECLARE(fn);                                                                           \
    __attribute__((unused)) static inline tc_status_t (*tc_algo_##fn##_applies_check_(void))(      \
        const tc_algo_args_t *)                                                                    \
    {                                                                                              \
        return applies;                                                                            \
    }                                                                                              \
    _Static_assert(TC_COLL_##coll < TC_COLL_COUNT && (priority) >= 0,                              \
                   "TC_ALGO_DEFINE(" #coll ", " #name ")")

/* Generators other files call (the hierarchical forms run them on sub-groups). */
TC_ALGO_DECLARE(all_reduce_ring);
TC_ALGO_DECLARE(broadcast_binomial_tree);
TC_ALGO_DECLARE(reduce_binomial_tree);

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
TC_MUST_USE tc_status_t tc_algo_tree_steps(tc_sched_t *sched, const tc_algo_args_t *args, int mode,
                                           const tc_algo_tree_part_t *parts, int nparts);
/* The cost of a tree algorithm whose roles role() gives (exact busiest rank). */
void tc_algo_ptree_cost(const tc_algo_args_t *args, int mode, int ntrees, int depth,
                        tc_algo_tree_role_fn role, tc_algo_cost_t *cost);

/* ---- hierarchical (two-level) forms (hierarchical.c) ----------------------- */

/* Nodes hold L consecutive ranks (ranks_per_node; 0 or >= p: one node), the
 * last node may hold fewer; N nodes. This rank's node, its first rank (the
 * node leader, local rank 0) and its size. */
typedef struct tc_algo_hier {
    int L, N;
    int node, base, nl;
} tc_algo_hier_t;

void tc_algo_hier_geom(const tc_algo_args_t *args, tc_algo_hier_t *g);

static inline int tc_algo_hier_node_size(const tc_algo_hier_t *g, int p, int q)
{
    return p - q * g->L < g->L ? p - q * g->L : g->L;
}

/* The leader of node q in a job rooted at root (-1: not rooted): the root
 * leads its own node, local rank 0 every other. */
static inline int tc_algo_hier_leader(const tc_algo_hier_t *g, int root, int q)
{
    return root >= 0 && q == root / g->L ? root : q * g->L;
}

/* Rank q of a sub-group is base + q * stride, except special_q (when >= 0),
 * which is special_rank (the root's node leads with the root itself). */
typedef struct tc_algo_hier_map {
    int base, stride, special_q, special_rank;
} tc_algo_hier_map_t;

/* Runs gen on sub_args (a sub-group) and appends its steps, peers mapped;
 * steps with a free dependency slot wait for *last_p (the previous phase);
 * *last_p then receives one step after every step of the phase (unchanged if
 * the phase has none). */
TC_MUST_USE tc_status_t tc_algo_hier_phase(tc_sched_t *sched, const tc_algo_args_t *sub_args,
                                           tc_algo_gen_fn gen, const tc_algo_hier_map_t *map,
                                           uint32_t *last_p);
/* One step after every step of [from, nsteps) (its sinks, joined pairwise by
 * empty local copies) into *last_p; unchanged when the range is empty. */
TC_MUST_USE tc_status_t tc_algo_hier_join(tc_sched_t *sched, uint32_t from, uint32_t *last_p);
/* Children of relative rank v in a binomial tree over n ranks rooted at 0. */
int tc_algo_binomial_kids(int v, int n);
/* Weights of the same-node class relative to the across-node class (alpha
 * and beta ratios of the model; 1 when the job is one node). */
void tc_algo_hier_weights(const tc_algo_args_t *args, double *wa, double *wb);

/* The runs of elements ranks [first, first + cnt) own in a gathered or
 * scattered buffer: one run when the blocks are packed (displs NULL), else
 * one per non-empty block (blocks may lie apart, in any order). next()
 * returns 0 at the end. */
typedef struct tc_algo_segs {
    const tc_algo_args_t *args;
    int q, end;
} tc_algo_segs_t;

void tc_algo_segs_init(tc_algo_segs_t *it, const tc_algo_args_t *args, int first, int cnt);
int tc_algo_segs_next(tc_algo_segs_t *it, uint64_t *off, uint64_t *len);
/* How many runs; and the elements of blocks [first, first + cnt). */
uint64_t tc_algo_segs_count(const tc_algo_args_t *args, int first, int cnt);
uint64_t tc_algo_blocks_sum(const tc_algo_args_t *args, int first, int cnt);

/* A ring among the node leaders (this rank must lead its node) over
 * node-blocks (the runs of a node's ranks, tc_algo_segs_*), in buf: step s
 * sends node-block (node - s - shift) and receives (kind: RECV or
 * RECV_REDUCE) node-block (node - s - shift - 1), run j after run j of the
 * step before (step 0 after first_dep); receives wait for recv_dep.
 * shift 0: all-gather, 1: reduce-scatter. */
TC_MUST_USE tc_status_t tc_algo_hier_ring(tc_sched_t *sched, const tc_algo_args_t *args,
                                          const tc_algo_hier_t *g, tc_buf_t buf,
                                          tc_step_kind_t kind, int shift, uint32_t first_dep,
                                          uint32_t recv_dep);

/* ---- all_to_all_v (a2a_counts set; layout.c) -------------------------------- */

/* Elements rank q sends to rank r. */
static inline uint64_t tc_algo_a2av_count(const tc_algo_args_t *args, int q, int r)
{
    return args->a2a_counts[(size_t)q * (size_t)args->nranks + (size_t)r];
}

/* Rank r's offsets of its send block to q (soff[q]) and of its receive block
 * from q (roff[q]), each array [nranks] or NULL, and the spans of its send
 * and recv (largest block end; may be NULL). Reads row r and column r only.
 * TC_ERR_INVALID_ARG naming the block whose end (or packed offset) overflows. */
TC_MUST_USE tc_status_t tc_algo_a2av_offsets(const tc_algo_args_t *args, int r, uint64_t *soff,
                                             uint64_t *roff, uint64_t *sspan, uint64_t *rspan);

/* v-variants (counts and displs set): blocks with elements must not overlap
 * (an element of the gathered or scattered buffer would belong to two ranks);
 * TC_ERR_INVALID_ARG naming the two. O(p log p): once per call, not per rank
 * of a verification. */
TC_MUST_USE tc_status_t tc_algo_blocks_check(const tc_algo_args_t *args);

TC_MUST_USE tc_status_t tc_algo_applies_pow2(const tc_algo_args_t *args);
TC_MUST_USE tc_status_t tc_algo_applies_uniform(const tc_algo_args_t *args);
TC_MUST_USE tc_status_t tc_algo_applies_not_in_place(const tc_algo_args_t *args);

/* Whether desc builds for args (valid args): what the collective supports
 * (a v-variant), then desc->applies. The one test that build and every
 * selection path use, so that what is selected builds. TC_ERR_UNSUPPORTED
 * with the reason. */
TC_MUST_USE tc_status_t tc_algo_applies(const tc_algo_desc_t *desc, const tc_algo_args_t *args);

#endif /* TCOMMS_ALGO_SRC_ALGO_INTERNAL_H */
