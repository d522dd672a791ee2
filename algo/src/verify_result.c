/* The verifier's step 5 (verify.c runs it after the execution): every built rank's output
 * against the collective's rule, element by element, and all_to_all_v's offsets. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verify_state.h"

/* ---- 5. the collective's rule ------------------------------------------- */

/* Sorted block order (v-variants with displacements), for "which block holds x". */
typedef struct tc_vblocks {
    int *order; /* ranks sorted by block offset; NULL: uniform blocks */
} tc_vblocks_t;

typedef struct tc_vboff {
    uint64_t off;
    int q;
} tc_vboff_t;

static int tc_v_boff_cmp(const void *pa, const void *pb)
{
    const tc_vboff_t *a = pa, *b = pb;
    return a->off < b->off ? -1 : a->off > b->off ? 1 : (a->q > b->q) - (a->q < b->q);
}

/* What output position x of rank r must hold: the input element idx of rank
 * src; *end: the end of the run over which both grow by one. src = -1: x is
 * no output (a gap between v-blocks), up to *end. */
static void tc_v_expect(const tc_verify_t *v, const tc_vblocks_t *bl, int r, uint64_t x, int *src,
                        uint64_t *idx, uint64_t *end)
{
    const tc_algo_args_t *a = v->args;
    const tc_algo_layout_t *lay = &v->ranks[r]->lay;
    uint64_t out_end = lay->out_off + lay->out_count;
    int q;

    switch (a->coll) {
    case TC_COLL_BROADCAST:
        *src = a->root;
        *idx = x - lay->out_off;
        *end = out_end;
        return;
    case TC_COLL_SCATTER:
        *src = a->root;
        *idx = tc_algo_block_off(a, r) + (x - lay->out_off);
        *end = out_end;
        return;
    default:
        break;
    }
    /* all_gather, gather, all_to_all: block q of the output */
    if (bl->order == NULL) {
        q = (int)(x / a->count);
    } else {
        size_t lo = 0, hi = (size_t)v->p;
        while (hi - lo > 1) {
            size_t mid = lo + (hi - lo) / 2;
            if (tc_algo_block_off(a, bl->order[mid]) <= x) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        q = bl->order[lo];
        if (tc_algo_block_off(a, q) > x) {
            *src = -1; /* before the first block */
            *end = tc_algo_block_off(a, q);
            return;
        }
        if (tc_algo_block_off(a, q) + tc_algo_block_len(a, q) <= x) {
            *src = -1;
            *end = lo + 1 < (size_t)v->p ? tc_algo_block_off(a, bl->order[lo + 1]) : out_end;
            return;
        }
    }
    *src = q;
    *idx = x - tc_algo_block_off(a, q);
    if (a->coll == TC_COLL_ALL_TO_ALL) {
        *idx += tc_algo_block_off(a, r);
    }
    *end = tc_algo_block_off(a, q) + tc_algo_block_len(a, q);
}

static tc_status_t tc_v_check_rank_output(const tc_verify_t *v, const tc_vblocks_t *bl, int r)
{
    const tc_vrank_t *vr = v->ranks[r];
    const tc_vbuf_t *out = &vr->buf[TC_BUF_RECV];
    const uint64_t lo = vr->lay.out_off, hi = vr->lay.out_off + vr->lay.out_count;
    const int red = tc_v_is_reduction(v->args->coll);
    uint64_t x = lo,
             base = v->args->coll == TC_COLL_REDUCE_SCATTER ? tc_algo_block_off(v->args, r) : 0;
    uint32_t k;

    if (lo >= hi) {
        return TC_OK;
    }
    for (k = tc_vbuf_find(out, lo); k < out->n && x < hi; k++) {
        const tc_vseg_t *sg = &out->seg[k];
        uint64_t send = sg->off + sg->len < hi ? sg->off + sg->len : hi;

        while (x < send) {
            uint64_t d = x - sg->off, aidx = sg->idx + d, eidx = 0, eend = send, len;
            int arank = -1, src = -1;
            const tc_vset_t *set = sg->set;

            if (sg->blk > 0) {
                arank = sg->r0 + (int)(aidx / sg->blk);
                aidx %= sg->blk;
            }
            if (red) {
                eidx = base + (x - lo);
                if (sg->blk == 0 && set == NULL) {
                    return tc_v_fail(v,
                                     "wrong result: rank %d recv[%llu] holds uninitialised data "
                                     "(never written, or reduced with unwritten memory)",
                                     r, (unsigned long long)x);
                }
                if (sg->blk > 0) {
                    if (v->p == 1 && arank == 0 && aidx == eidx) {
                        x = send < x + (sg->blk - aidx) ? send : x + (sg->blk - aidx);
                        continue;
                    }
                    return tc_v_fail(v,
                                     "wrong result: rank %d recv[%llu] holds only rank %d's "
                                     "element %llu",
                                     r, (unsigned long long)x, arank, (unsigned long long)aidx);
                }
                if (set->mixed) {
                    return tc_v_fail(v,
                                     "wrong result: rank %d recv[%llu] mixes contributions of "
                                     "different element indices",
                                     r, (unsigned long long)x);
                }
                if (aidx != eidx) {
                    return tc_v_fail(v,
                                     "wrong result: rank %d recv[%llu] holds contributions to "
                                     "element %llu instead of element %llu",
                                     r, (unsigned long long)x, (unsigned long long)aidx,
                                     (unsigned long long)eidx);
                }
                if (set->dup >= 0) {
                    return tc_v_fail(v,
                                     "wrong result: rank %d recv[%llu] holds the contribution "
                                     "of rank %d more than once",
                                     r, (unsigned long long)x, set->dup);
                }
                if (tc_vset_first_missing(set, v->p) >= 0) {
                    return tc_v_fail(v,
                                     "wrong result: rank %d recv[%llu] is missing the "
                                     "contribution of rank %d (holds %llu of %d ranks)",
                                     r, (unsigned long long)x, tc_vset_first_missing(set, v->p),
                                     (unsigned long long)tc_vset_size(set), v->p);
                }
                x = send;
                continue;
            }
            /* data movement */
            if (sg->blk > 0 && bl->order == NULL && v->args->coll != TC_COLL_ALL_TO_ALL &&
                v->args->coll != TC_COLL_BROADCAST && v->args->coll != TC_COLL_SCATTER &&
                sg->blk == v->args->count && x == (uint64_t)arank * sg->blk + aidx) {
                x = send; /* whole blocks, each in its place */
                continue;
            }
            tc_v_expect(v, bl, r, x, &src, &eidx, &eend);
            if (src < 0) {
                x = eend < send ? eend : send;
                continue;
            }
            if (sg->blk == 0 && set == NULL) {
                return tc_v_fail(v,
                                 "wrong result: rank %d recv[%llu] holds uninitialised data "
                                 "(never written), not rank %d's element %llu",
                                 r, (unsigned long long)x, src, (unsigned long long)eidx);
            }
            if (sg->blk == 0) {
                if (set->n != 1 || set->iv[1] - set->iv[0] != 1 || set->mixed || set->dup >= 0) {
                    return tc_v_fail(v,
                                     "wrong result: rank %d recv[%llu] holds a combination of "
                                     "%llu ranks' data, not rank %d's element %llu",
                                     r, (unsigned long long)x,
                                     (unsigned long long)tc_vset_size(set), src,
                                     (unsigned long long)eidx);
                }
                arank = set->iv[0];
            }
            if (arank != src || aidx != eidx) {
                return tc_v_fail(v,
                                 "wrong result: rank %d recv[%llu] holds rank %d's element "
                                 "%llu instead of rank %d's element %llu",
                                 r, (unsigned long long)x, arank, (unsigned long long)aidx, src,
                                 (unsigned long long)eidx);
            }
            len = (eend < send ? eend : send) - x;
            if (sg->blk > 0 && sg->blk - aidx < len) {
                len = sg->blk - aidx;
            }
            x += len;
        }
    }
    return TC_OK;
}

/* all_to_all_v: rank r's receive block from q holds rank q's send elements
 * of its block to r, in order; gaps between blocks have no rule. */
static tc_status_t tc_v_check_a2av_output(const tc_verify_t *v, int r)
{
    const tc_vbuf_t *out = &v->ranks[r]->buf[TC_BUF_RECV];
    const size_t p = (size_t)v->p;
    int q;

    for (q = 0; q < v->p; q++) {
        const uint64_t c = tc_algo_a2av_count(v->args, q, r);
        const uint64_t ro = v->a2a_roff[(size_t)r * p + (size_t)q];
        const uint64_t so = v->a2a_soff[(size_t)q * p + (size_t)r];
        uint64_t x = ro;
        uint32_t k = c > 0 ? tc_vbuf_find(out, ro) : 0;

        while (x < ro + c) {
            const tc_vseg_t *sg = &out->seg[k];
            const uint64_t seg_end = sg->off + sg->len, end = seg_end < ro + c ? seg_end : ro + c;
            uint64_t aidx = sg->idx + (x - sg->off), eidx = so + (x - ro), run = end - x;
            int arank;

            if (sg->blk > 0) {
                arank = sg->r0 + (int)(aidx / sg->blk);
                aidx %= sg->blk;
                run = run < sg->blk - aidx ? run : sg->blk - aidx;
            } else if (sg->set == NULL) {
                return tc_v_fail(v,
                                 "wrong result: rank %d recv[%llu] holds uninitialised data "
                                 "(never written), not rank %d's element %llu",
                                 r, (unsigned long long)x, q, (unsigned long long)eidx);
            } else if (sg->set->n != 1 || sg->set->iv[1] - sg->set->iv[0] != 1 || sg->set->mixed ||
                       sg->set->dup >= 0) {
                return tc_v_fail(v,
                                 "wrong result: rank %d recv[%llu] holds a combination of "
                                 "%llu ranks' data, not rank %d's element %llu",
                                 r, (unsigned long long)x,
                                 (unsigned long long)tc_vset_size(sg->set), q,
                                 (unsigned long long)eidx);
            } else {
                arank = sg->set->iv[0];
            }
            if (arank != q || aidx != eidx) {
                return tc_v_fail(v,
                                 "wrong result: rank %d recv[%llu] holds rank %d's element "
                                 "%llu instead of rank %d's element %llu",
                                 r, (unsigned long long)x, arank, (unsigned long long)aidx, q,
                                 (unsigned long long)eidx);
            }
            x += run;
            if (x == seg_end) {
                k++;
            }
        }
    }
    return TC_OK;
}

tc_status_t tc_v_check_result(tc_verify_t *v)
{
    tc_vblocks_t bl = {NULL};
    tc_status_t status = TC_OK;
    int r;

    if (v->args->coll == TC_COLL_BARRIER) {
        for (r = 0; r < v->p; r++) {
            int miss = tc_vset_first_missing(v->ranks[r]->know_all, v->p);
            if (miss >= 0) {
                return tc_v_fail(v,
                                 "wrong result: rank %d can leave the barrier before rank %d "
                                 "has entered it",
                                 r, miss);
            }
        }
        return TC_OK;
    }
    if (v->args->a2a_counts != NULL) {
        for (r = 0; r < v->p && status == TC_OK; r++) {
            status = tc_v_check_a2av_output(v, r);
        }
        return status;
    }
    if (v->args->counts != NULL) {
        tc_vboff_t *srt = malloc((size_t)v->p * sizeof(*srt));
        bl.order = malloc((size_t)v->p * sizeof(int));
        if (bl.order == NULL || srt == NULL) {
            free(srt);
            free(bl.order);
            return tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory");
        }
        for (r = 0; r < v->p; r++) {
            srt[r] = (tc_vboff_t){tc_algo_block_off(v->args, r), r};
        }
        qsort(srt, (size_t)v->p, sizeof(*srt), tc_v_boff_cmp);
        for (r = 0; r < v->p; r++) {
            bl.order[r] = srt[r].q;
        }
        free(srt);
    }
    for (r = 0; r < v->p && status == TC_OK; r++) {
        status = tc_v_check_rank_output(v, &bl, r);
    }
    free(bl.order);
    return status;
}

/* all_to_all_v: every rank's offsets (an overflow is the caller's error, so
 * reported before any generator runs), and no rank's receive blocks may
 * overlap (the result would be undefined). O(p^2 log p). */
tc_status_t tc_v_a2av_prepare(tc_verify_t *v)
{
    const size_t p = (size_t)v->p;
    tc_vboff_t *srt = NULL;
    tc_status_t status = TC_OK;
    size_t n, i;
    int r, q;

    v->a2a_soff = malloc(p * p * sizeof(uint64_t));
    v->a2a_roff = malloc(p * p * sizeof(uint64_t));
    srt = malloc(p * sizeof(*srt));
    if (v->a2a_soff == NULL || v->a2a_roff == NULL || srt == NULL) {
        status = tc_error_set(TC_ERR_NO_MEMORY, "verifier: no memory for %zu x %zu offsets", p, p);
        goto out;
    }
    for (r = 0; r < v->p && status == TC_OK; r++) {
        status = tc_algo_a2av_offsets(v->args, r, v->a2a_soff + (size_t)r * p,
                                      v->a2a_roff + (size_t)r * p, NULL, NULL);
        for (q = 0, n = 0; q < v->p && status == TC_OK; q++) {
            if (tc_algo_a2av_count(v->args, q, r) > 0) {
                srt[n++] = (tc_vboff_t){v->a2a_roff[(size_t)r * p + (size_t)q], q};
            }
        }
        if (status != TC_OK) {
            break;
        }
        qsort(srt, n, sizeof(*srt), tc_v_boff_cmp);
        for (i = 1; i < n; i++) {
            uint64_t prev_end = srt[i - 1].off + tc_algo_a2av_count(v->args, srt[i - 1].q, r);
            if (prev_end > srt[i].off) {
                status = tc_error_set(
                    TC_ERR_INVALID_ARG,
                    "all_to_all_v: rank %d's receive blocks from rank %d [%llu, %llu) and from "
                    "rank %d (at %llu) overlap",
                    r, srt[i - 1].q, (unsigned long long)srt[i - 1].off,
                    (unsigned long long)prev_end, srt[i].q, (unsigned long long)srt[i].off);
                break;
            }
        }
    }
out:
    free(srt);
    return status;
}
