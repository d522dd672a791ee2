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
tc_status_t tc_vbuf_init(tc_vbuf_t *b, uint64_t size);
void tc_vbuf_free(tc_vbuf_t *b);

/* [off, off+len) := set's contributions to idx.. */
tc_status_t tc_vbuf_fill(tc_vbuf_t *b, uint64_t off, uint64_t len, uint64_t idx,
                         const tc_vset_t *set);

/* [off, off+len) := rank's whole input block (a block run of blk = len). */
tc_status_t tc_vbuf_fill_block(tc_vbuf_t *b, uint64_t off, uint64_t len, int rank);

/* dst[doff..+n) = src[soff..+n) (reduce == 0) or op= (reduce == 1). src may
 * be dst with disjoint ranges. */
tc_status_t tc_vbuf_move(tc_varena_t *a, tc_vbuf_t *dst, uint64_t doff, const tc_vbuf_t *src,
                         uint64_t soff, uint64_t n, int reduce);

/* Index of the segment holding element e (e < size). */
uint32_t tc_vbuf_find(const tc_vbuf_t *b, uint64_t e);

#endif /* TCOMMS_ALGO_SRC_VERIFY_INTERNAL_H */
