/* The symbolic state of the verifier: what each buffer element holds.
 *
 * An element holds "the contributions of a set of ranks to input element
 * idx": a rank set (sorted disjoint intervals, immutable, shared, allocated
 * from an arena) and the index. Data movement keeps one-rank sets; reductions
 * unite them. A buffer is a sorted list of segments covering it, each a run
 * of elements whose index grows by one per element and whose set is the
 * same, so memory follows the number of distinct runs, not the element count
 * or the rank count: a whole reduced vector is one segment of one interval.
 */
#ifndef TCOMMS_ALGO_SRC_VERIFY_INTERNAL_H
#define TCOMMS_ALGO_SRC_VERIFY_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tcomms/algo/schedule.h"

/* A set of ranks: n intervals [iv[2k], iv[2k+1]), sorted, disjoint, not touching. */
typedef struct tc_vset {
    uint32_t n;
    int32_t dup;   /* a rank that contributed more than once, or -1 */
    uint8_t mixed; /* combines contributions to different element indices */
    int32_t iv[];
} tc_vset_t;

/* A run of elements: [off, off + len) holds set's contributions to idx, idx+1, ... */
typedef struct tc_vseg {
    uint64_t off, len, idx;
    const struct tc_vset *set; /* NULL: uninitialised (unless blk) */
    /* blk > 0: a run of whole-rank blocks, as all-gathers produce: element k
     * holds rank r0 + (idx + k) / blk's input element (idx + k) % blk (set is
     * NULL; r0 and idx are kept canonical: idx < blk). */
    uint64_t blk;
    int32_t r0;
} tc_vseg_t;

/* Bump allocator for sets: freed all at once. */
typedef struct tc_varena {
    struct tc_varena_blk *head;
    tc_vseg_t *tmp[3]; /* scratch piece lists of tc_vbuf_move */
    uint32_t tmpcap[3];
} tc_varena_t;

void tc_varena_free(tc_varena_t *a);

/* {rank}; NULL when out of memory. */
const tc_vset_t *tc_vset_single(tc_varena_t *a, int rank);

/* x united with y (dup records a rank in both, or either's dup). NULL: no memory. */
const tc_vset_t *tc_vset_union(tc_varena_t *a, const tc_vset_t *x, const tc_vset_t *y, int mixed);

int tc_vset_equal(const tc_vset_t *x, const tc_vset_t *y);

/* Number of ranks in the set. */
uint64_t tc_vset_size(const tc_vset_t *x);

/* The smallest rank of [0, p) not in x, or -1. */
int tc_vset_first_missing(const tc_vset_t *x, int p);

typedef struct tc_vbuf {
    uint64_t size;
    uint32_t n, cap;
    tc_vseg_t *seg;
} tc_vbuf_t;

/* All uninitialised. */
TC_MUST_USE tc_status_t tc_vbuf_init(tc_vbuf_t *b, uint64_t size);
void tc_vbuf_free(tc_vbuf_t *b);

/* [off, off+len) := set's contributions to idx.. */
TC_MUST_USE tc_status_t tc_vbuf_fill(tc_vbuf_t *b, uint64_t off, uint64_t len, uint64_t idx,
                                     const tc_vset_t *set);

/* [off, off+len) := rank's whole input block (a block run of blk = len). */
TC_MUST_USE tc_status_t tc_vbuf_fill_block(tc_vbuf_t *b, uint64_t off, uint64_t len, int rank);

/* dst[doff..+n) = src[soff..+n) (reduce == 0) or op= (reduce == 1). src may
 * be dst with disjoint ranges. */
TC_MUST_USE tc_status_t tc_vbuf_move(tc_varena_t *a, tc_vbuf_t *dst, uint64_t doff,
                                     const tc_vbuf_t *src, uint64_t soff, uint64_t n, int reduce);

/* Index of the segment holding element e (e < size). */
uint32_t tc_vbuf_find(const tc_vbuf_t *b, uint64_t e);

/* ---- the flow trace of sampled mode (verify_flow.c) ------------------------ */

typedef struct tc_vflow_in {
    const tc_algo_args_t *args;
    tc_algo_gen_fn gen;
    const char *name;   /* for messages */
    const int *sampled; /* the sampled ranks */
    int nsampled;
    int elems;       /* output elements traced per sampled rank */
    uint64_t seed;   /* for the random elements */
    uint64_t budget; /* steps the trace may generate */
    int symmetry;    /* tc_algo_verify_opts_t.flow_symmetry */
    /* all_to_all_v: [p * p] send and receive offsets, row r for rank r */
    const uint64_t *a2a_soff, *a2a_roff;
} tc_vflow_in_t;

/* Trace sampled output elements back to the inputs; fills the flow_* fields
 * of rep. TC_ERR_INTERNAL with the first problem in the detail. */
TC_MUST_USE tc_status_t tc_vflow_run(const tc_vflow_in_t *in, tc_algo_verify_report_t *rep);

/* ---- rotational symmetry of schedules (verify_sym.c) ------------------------ */

/* The rotation of rank v: buffers of p * blk elements (rot) move by v blocks,
 * the others stay (see verify_sym.c). size: rank 0's buffers, resolved. */
typedef struct tc_vsym {
    int p;
    int in_place;
    uint64_t blk;
    uint64_t size[3];
    uint8_t rot[3];
} tc_vsym_t;

/* The block size B of a layout of p equal blocks of a collective a rotation
 * can apply to (all_reduce: count / p; all_gather, reduce_scatter,
 * all_to_all: equal packed blocks); 0: none. */
uint64_t tc_vsym_block(const tc_algo_args_t *a);

void tc_vsym_init(tc_vsym_t *s, const tc_algo_args_t *a, uint64_t blk, const uint64_t size[3]);

/* Position y of (resolved) buffer b of rank 0 as a position of rank v (to),
 * and back (from). */
uint64_t tc_vsym_to(const tc_vsym_t *s, unsigned b, uint64_t y, int v);
uint64_t tc_vsym_from(const tc_vsym_t *s, unsigned b, uint64_t y, int v);

/* Whether x (rank v's schedule) is t (rank 0's) rotated by v, step by step;
 * else *step_p is the first step that differs. */
int tc_vsym_match(const tc_vsym_t *s, const tc_sched_t *t, const tc_sched_t *x, int v,
                  uint32_t *step_p);

/* Whether step a (< b) of @p s is a transitive dependency of step b: a walk
 * over the dependencies with a visit stamp per step (stamp_cap of them, reset
 * when *stamp_gen wraps) and a stack of stamp_cap entries. */
int tc_v_reaches(const tc_sched_t *s, uint32_t a, uint32_t b, uint32_t *stamp,
                 uint32_t *stamp_gen, uint32_t stamp_cap, uint32_t *stack);

/* A communication step of one rank, sorted by (peer, direction, step): how
 * the verifier and the flow trace match sends with receives. */
typedef struct tc_vcomm {
    int32_t peer;
    uint32_t dir; /* 0: send, 1: receive */
    uint32_t step;
} tc_vcomm_t;

/* qsort comparators: tc_vcomm_t by (peer, dir, step); uint64_t. */
int tc_v_comm_cmp(const void *pa, const void *pb);
int tc_v_u64_cmp(const void *pa, const void *pb);

/* In sorted v[0, n): the first index with v[k] >= x (lower) or > x (upper). */
size_t tc_v_lower_bound(const uint64_t *v, size_t n, uint64_t x);
size_t tc_v_upper_bound(const uint64_t *v, size_t n, uint64_t x);

/* The steps' vocabulary, shared by the verifier and the flow trace. */
static inline const char *tc_v_bufname(unsigned b)
{
    return b == TC_BUF_SEND ? "send" : b == TC_BUF_RECV ? "recv" : "scratch";
}

static inline int tc_v_is_comm(unsigned kind)
{
    return kind == TC_STEP_SEND || kind == TC_STEP_RECV || kind == TC_STEP_RECV_REDUCE ||
           kind == TC_STEP_RECV_REDUCE_SRC;
}

/* Whether a step reads buf[off...] (its local source). */
static inline int tc_v_reads_src(unsigned kind)
{
    return kind == TC_STEP_SEND || kind == TC_STEP_COPY || kind == TC_STEP_REDUCE ||
           kind == TC_STEP_RECV_REDUCE_SRC;
}

static inline int tc_v_is_reduction(tc_coll_t c)
{
    return c == TC_COLL_ALL_REDUCE || c == TC_COLL_REDUCE || c == TC_COLL_REDUCE_SCATTER;
}

#endif /* TCOMMS_ALGO_SRC_VERIFY_INTERNAL_H */
