/* Symbolic buffer elements of the verifier: sets of contributions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verify_internal.h"

tc_status_t tc_algo_vbuf_alloc(tc_algo_vbuf_t *buf, uint64_t n, int words)
{
    tc_algo_vbuf_t b = {.n = n};
    size_t cells;

    if (n > SIZE_MAX / 2 / sizeof(uint64_t) / (size_t)words) {
        return tc_error_set(TC_ERR_NO_MEMORY, "verifier: %llu elements of %d ranks overflow",
                            (unsigned long long)n, words * 64);
    }
    cells = (size_t)n * (size_t)words;
    /* calloc(0) may return NULL: allocate at least one cell. */
    b.mask = calloc(cells ? cells : 1, sizeof(uint64_t));
    b.dup = calloc(cells ? cells : 1, sizeof(uint64_t));
    b.idx = calloc(n ? n : 1, sizeof(uint64_t));
    b.flags = malloc(n ? n : 1);
    if (b.mask == NULL || b.dup == NULL || b.idx == NULL || b.flags == NULL) {
        tc_algo_vbuf_free(&b);
        return tc_error_set(TC_ERR_NO_MEMORY, "verifier: cannot allocate %llu elements",
                            (unsigned long long)n);
    }
    memset(b.flags, TC_VELEM_UNINIT, n ? n : 1);
    *buf = b;
    return TC_OK;
}

void tc_algo_vbuf_free(tc_algo_vbuf_t *buf)
{
    free(buf->mask);
    free(buf->dup);
    free(buf->idx);
    free(buf->flags);
    memset(buf, 0, sizeof(*buf));
}

void tc_algo_vbuf_set_input(tc_algo_vbuf_t *buf, int rank, int words)
{
    uint64_t e;

    memset(buf->mask, 0, (size_t)buf->n * (size_t)words * sizeof(uint64_t));
    memset(buf->dup, 0, (size_t)buf->n * (size_t)words * sizeof(uint64_t));
    for (e = 0; e < buf->n; e++) {
        buf->mask[e * (uint64_t)words + (uint64_t)rank / 64] = 1ull << (rank % 64);
        buf->idx[e] = e;
        buf->flags[e] = 0;
    }
}

void tc_algo_vbuf_move(tc_algo_vbuf_t *dst, uint64_t doff, const tc_algo_vbuf_t *src, uint64_t soff,
                       uint64_t n, int words, int reduce)
{
    const size_t w = (size_t)words;
    uint64_t k;
    size_t j;

    if (!reduce) {
        memcpy(dst->mask + doff * w, src->mask + soff * w, (size_t)n * w * sizeof(uint64_t));
        memcpy(dst->dup + doff * w, src->dup + soff * w, (size_t)n * w * sizeof(uint64_t));
        memcpy(dst->idx + doff, src->idx + soff, (size_t)n * sizeof(uint64_t));
        memcpy(dst->flags + doff, src->flags + soff, (size_t)n);
        return;
    }
    for (k = 0; k < n; k++) {
        uint64_t de = doff + k, se = soff + k;
        uint64_t *dm = dst->mask + de * w, *dd = dst->dup + de * w;
        const uint64_t *sm = src->mask + se * w, *sd = src->dup + se * w;

        if ((dst->flags[de] | src->flags[se]) & TC_VELEM_UNINIT) {
            dst->flags[de] |= TC_VELEM_UNINIT; /* garbage in, garbage out */
            continue;
        }
        if (dst->idx[de] != src->idx[se]) {
            dst->flags[de] |= TC_VELEM_MIXED;
        }
        dst->flags[de] |= src->flags[se];
        for (j = 0; j < w; j++) {
            dd[j] |= sd[j] | (dm[j] & sm[j]);
            dm[j] |= sm[j];
        }
    }
}

int tc_algo_vbuf_is_full_reduction(const tc_algo_vbuf_t *buf, uint64_t e, uint64_t want, int nranks,
                                   int words, char *why, size_t why_len)
{
    const uint64_t *m = buf->mask + e * (uint64_t)words, *d = buf->dup + e * (uint64_t)words;
    int q, have = 0, missing = -1;

    if (buf->flags[e] & TC_VELEM_UNINIT) {
        snprintf(why, why_len,
                 "holds uninitialised data (never written, or reduced with "
                 "unwritten memory)");
        return 0;
    }
    if (buf->flags[e] & TC_VELEM_MIXED) {
        snprintf(why, why_len, "mixes contributions of different element indices");
        return 0;
    }
    if (buf->idx[e] != want) {
        snprintf(why, why_len, "holds contributions to element %llu instead of element %llu",
                 (unsigned long long)buf->idx[e], (unsigned long long)want);
        return 0;
    }
    for (q = 0; q < nranks; q++) {
        if (d[q / 64] & (1ull << (q % 64))) {
            snprintf(why, why_len, "holds the contribution of rank %d more than once", q);
            return 0;
        }
        if (m[q / 64] & (1ull << (q % 64))) {
            have++;
        } else if (missing < 0) {
            missing = q;
        }
    }
    if (missing >= 0) {
        snprintf(why, why_len, "is missing the contribution of rank %d (holds %d of %d ranks)",
                 missing, have, nranks);
        return 0;
    }
    return 1;
}
