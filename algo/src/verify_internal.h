/* The symbolic state of the verifier: what each buffer element holds. */
#ifndef TCOMMS_ALGO_SRC_VERIFY_INTERNAL_H
#define TCOMMS_ALGO_SRC_VERIFY_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tcomms/algo/schedule.h"

/* Element flags. */
#define TC_VELEM_UNINIT 0x1u /* never written, or derived from such an element */
#define TC_VELEM_MIXED 0x2u  /* combines contributions of different element indices */

/*
 * A buffer of n symbolic elements. Element e holds a set of contributions
 * "rank q's input element idx[e]": mask has bit q set when rank q
 * contributed, dup has bit q set when it contributed more than once (a
 * counted multiset, saturated at 2, which is all a proof needs). Each set
 * takes `words` = ceil(nranks / 64) words.
 */
typedef struct tc_algo_vbuf {
    uint64_t n;
    uint64_t *mask;
    uint64_t *dup;
    uint64_t *idx;
    uint8_t *flags;
} tc_algo_vbuf_t;

/* Allocate n elements, all uninitialised. */
tc_status_t tc_algo_vbuf_alloc(tc_algo_vbuf_t *buf, uint64_t n, int words);

void tc_algo_vbuf_free(tc_algo_vbuf_t *buf);

/* Element i becomes rank's input element i, for every i. */
void tc_algo_vbuf_set_input(tc_algo_vbuf_t *buf, int rank, int words);

/* dst[doff + k] = src[soff + k] (reduce == 0) or dst[doff + k] op= src[soff + k]
 * for k < n. dst and src may be the same buffer only with disjoint ranges. */
void tc_algo_vbuf_move(tc_algo_vbuf_t *dst, uint64_t doff, const tc_algo_vbuf_t *src, uint64_t soff,
                       uint64_t n, int words, int reduce);

/* Whether element e holds exactly one contribution of each of the nranks
 * ranks for element index want; if not, a description of the first problem
 * is written to why (e.g. "is missing the contribution of rank 3"). */
int tc_algo_vbuf_is_full_reduction(const tc_algo_vbuf_t *buf, uint64_t e, uint64_t want, int nranks,
                                   int words, char *why, size_t why_len);

#endif /* TCOMMS_ALGO_SRC_VERIFY_INTERNAL_H */
