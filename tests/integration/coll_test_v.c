/* coll_test's v-variants (uneven and zero counts, gapped displacements) and point-to-point
 * (rings of send/recv, batches), checked element by element (coll_test.h). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/integration/coll_test.h"

/* ------------------------------------------------------------------------ */
/* v-variants. */

/* Uneven counts with zeros: block q holds vcount(q) * scale elements. */
static size_t vcount(int q, size_t scale)
{
    return q % 3 == 1 ? 0 : (size_t)(1 + (q * 7 + 3) % 11) * scale;
}

/* Packed (gaps 0) or with gaps before every block; returns the extent. */
static size_t vdispls(const size_t *counts, int gaps, size_t *displs)
{
    size_t off = 0;
    for (int q = 0; q < nranks; q++) {
        off += gaps ? (size_t)(q % 2 + 1) * 3 : 0;
        displs[q] = off;
        off += counts[q];
    }
    return off;
}

static void all_gather_v_case(tc_comm_t *comm, const char *algo, tc_dtype_t t, size_t scale,
                              int gaps, int in_place)
{
    size_t es = tc_dtype_size(t), *counts = calloc((size_t)nranks, sizeof(size_t)),
           *displs = calloc((size_t)nranks, sizeof(size_t));
    char hints[64], name[160];
    snprintf(name, sizeof(name), "all_gather_v algo=%s %s scale %zu displs %s %s", algo,
             tc_dtype_name(t), scale, gaps ? "gapped" : "NULL", in_place ? "in-place" : "out");
    salt = mix(salt + 1);
    for (int q = 0; q < nranks; q++)
        counts[q] = vcount(q, scale);
    size_t extent = vdispls(counts, gaps, displs), mine = counts[rank];
    unsigned char *r = buf_new(extent * es, FILL_BYTE), *s = buf_new(mine * es, 0);
    unsigned char *send = in_place ? r + displs[rank] * es : s;
    for (size_t i = 0; i < mine; i++)
        put_payload(send, i, es, payload(rank, 0, i));
    tc_op_opts_t o = op_opts(algo, hints, sizeof(hints), 0);
    tc_status_t st =
        tc_all_gather_v(comm, send, mine, r, counts, gaps ? displs : NULL, t, &o, NULL);
    int skip = refused("all_gather_v", algo, st, name);
    checks += !skip;
    if (skip) {
        /* counted among the refusals */
    } else if (st != TC_OK) {
        status_fail(name, st, tc_last_error());
    } else {
        tally_t w = {0, 0, NULL};
        for (int q = 0; q < nranks; q++) {
            size_t gap_from = q ? displs[q - 1] + counts[q - 1] : 0;
            for (size_t i = gap_from; i < displs[q]; i++)
                tally(&w, r[i * es] == FILL_BYTE, i, "gap (must not be written)");
            for (size_t i = 0; i < counts[q]; i++)
                tally(&w, has_payload(r, displs[q] + i, es, payload(q, 0, i)), displs[q] + i,
                      "block");
        }
        if (guard_broken(r, extent * es))
            tally(&w, 0, extent, "guard");
        if (w.wrong)
            FAIL("%s: %zu wrong elements, first at %zu (%s)", name, w.wrong, w.first, w.where);
    }
    free(r);
    free(s);
    free(counts);
    free(displs);
}

static void reduce_scatter_v_case(tc_comm_t *comm, const char *algo, tc_dtype_t t, tc_redop_t op,
                                  size_t scale, int gaps, int in_place, int64_t *tab)
{
    size_t es = tc_dtype_size(t), *counts = calloc((size_t)nranks, sizeof(size_t)),
           *displs = calloc((size_t)nranks, sizeof(size_t));
    char hints[64], name[160];
    snprintf(name, sizeof(name), "reduce_scatter_v algo=%s %s %s scale %zu displs %s %s", algo,
             tc_dtype_name(t), tc_redop_name(op), scale, gaps ? "gapped" : "NULL",
             in_place ? "in-place" : "out");
    for (int q = 0; q < nranks; q++)
        counts[q] = vcount(nranks - 1 - q, scale);
    size_t extent = vdispls(counts, gaps, displs), mine = counts[rank];
    unsigned char *s = buf_new(extent * es, 0),
                  *r = buf_new((in_place ? extent : mine) * es, FILL_BYTE);
    unsigned char *src = in_place ? r : s;
    for (size_t i = 0; i < extent; i++)
        put_int(src, i, t, red_input(rank, i, t, op));
    red_table(t, op, nranks, tab);
    tc_op_opts_t o = op_opts(algo, hints, sizeof(hints), 0);
    /* in place with gaps: NCCL's form (recvbuf at this rank's block), else tcomms' */
    tc_status_t st = tc_reduce_scatter_v(comm, src, in_place && gaps ? r + displs[rank] * es : r,
                                         counts, gaps ? displs : NULL, t, op, &o, NULL);
    int skip = refused("reduce_scatter_v", algo, st, name);
    checks += !skip;
    if (skip) {
        /* counted among the refusals */
    } else if (st != TC_OK) {
        status_fail(name, st, tc_last_error());
    } else {
        tally_t w = {0, 0, NULL};
        size_t off = in_place ? displs[rank] : 0; /* in place: left at my block */
        for (size_t i = 0; i < mine; i++)
            tally(&w, red_matches(r, off + i, t, op, tab[(displs[rank] + i) % PERIOD], nranks),
                  off + i, "result");
        if (guard_broken(r, (in_place ? extent : mine) * es))
            tally(&w, 0, mine, "guard");
        if (w.wrong)
            FAIL("%s: %zu wrong elements, first at %zu (%s)", name, w.wrong, w.first, w.where);
    }
    free(r);
    free(s);
    free(counts);
    free(displs);
}

/* Elements rank s sends to rank d: uneven, zero for some pairs (and for self sometimes). */
static size_t a2a_count(int s, int d, size_t scale)
{
    return (size_t)((s * 3 + d * 5 + 1) % 6) * scale;
}

static void all_to_all_v_case(tc_comm_t *comm, tc_dtype_t t, size_t scale, int gaps)
{
    size_t p = (size_t)nranks, es = tc_dtype_size(t);
    size_t *sc = calloc(p, sizeof(size_t)), *sd = calloc(p, sizeof(size_t)),
           *rc = calloc(p, sizeof(size_t)), *rd = calloc(p, sizeof(size_t));
    char name[128];
    snprintf(name, sizeof(name), "all_to_all_v %s scale %zu displs %s", tc_dtype_name(t), scale,
             gaps ? "gapped" : "NULL");
    salt = mix(salt + 1);
    size_t soff = 0, roff = 0;
    for (int q = 0; q < nranks; q++) {
        sc[q] = a2a_count(rank, q, scale);
        rc[q] = a2a_count(q, rank, scale);
        soff += gaps ? (size_t)(q % 3) : 0; /* different gaps on each side, in reverse order */
        sd[q] = soff;
        soff += sc[q];
    }
    for (int q = gaps ? nranks - 1 : 0; gaps ? q >= 0 : q < nranks; q += gaps ? -1 : 1) {
        roff += gaps ? (size_t)(q % 2) * 2 + 1 : 0; /* gapped: blocks in reverse rank order */
        rd[q] = roff;
        roff += rc[q];
    }
    unsigned char *s = buf_new(soff * es, 0), *r = buf_new(roff * es, FILL_BYTE);
    for (int q = 0; q < nranks; q++)
        for (size_t i = 0; i < sc[q]; i++)
            put_payload(s, sd[q] + i, es, payload(rank, q, i));
    tc_op_opts_t o = {sizeof(tc_op_opts_t), TIMEOUT_MS, NULL, 0};
    tc_status_t st =
        tc_all_to_all_v(comm, s, sc, gaps ? sd : NULL, r, rc, gaps ? rd : NULL, t, &o, NULL);
    checks++;
    if (st != TC_OK) {
        status_fail(name, st, tc_last_error());
    } else {
        tally_t w = {0, 0, NULL};
        unsigned char *covered = calloc(roff + 1, 1);
        for (int q = 0; q < nranks; q++)
            for (size_t i = 0; i < rc[q]; i++) {
                covered[rd[q] + i] = 1;
                tally(&w, has_payload(r, rd[q] + i, es, payload(q, rank, i)), rd[q] + i, "block");
            }
        for (size_t i = 0; i < roff; i++)
            if (!covered[i])
                tally(&w, r[i * es] == FILL_BYTE, i, "gap (must not be written)");
        if (guard_broken(r, roff * es))
            tally(&w, 0, roff, "guard");
        if (w.wrong)
            FAIL("%s: %zu wrong elements, first at %zu (%s)", name, w.wrong, w.first, w.where);
        free(covered);
    }
    free(s);
    free(r);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
}

void v_variants(tc_comm_t *comm)
{
    static const char *const ag[] = {"ring",   "recursive_doubling", "bruck",
                                     "linear", "hierarchical",       "auto"};
    static const char *const rs[] = {"ring", "pairwise", "linear", "hierarchical", "auto"};
    size_t scales[] = {1, 997};
    int64_t *tab = malloc(PERIOD * sizeof(int64_t));
    for (int si = 0; si < 2; si++)
        for (int gaps = 0; gaps < 2; gaps++)
            for (int ip = 0; ip < 2; ip++) {
                for (size_t a = 0; a < sizeof(ag) / sizeof(ag[0]); a++)
                    for (int t = 0; t < TC_DTYPE_COUNT; t++)
                        if (!quick || t % 3 == 0)
                            all_gather_v_case(comm, ag[a], (tc_dtype_t)t, scales[si], gaps, ip);
                for (size_t a = 0; a < sizeof(rs) / sizeof(rs[0]); a++) {
                    for (int t = 0; t < TC_DTYPE_COUNT; t++)
                        if (!quick || t % 3 == 0)
                            reduce_scatter_v_case(comm, rs[a], (tc_dtype_t)t, TC_SUM, scales[si],
                                                  gaps, ip, tab);
                    for (int op = 1; op < TC_REDOP_COUNT; op++) {
                        reduce_scatter_v_case(comm, rs[a], TC_INT32, (tc_redop_t)op, scales[si],
                                              gaps, ip, tab);
                        if (op < TC_BAND)
                            reduce_scatter_v_case(comm, rs[a], TC_FLOAT32, (tc_redop_t)op,
                                                  scales[si], gaps, ip, tab);
                    }
                }
            }
    for (int si = 0; si < 2; si++)
        for (int gaps = 0; gaps < 2; gaps++)
            for (int t = 0; t < TC_DTYPE_COUNT; t++)
                all_to_all_v_case(comm, (tc_dtype_t)t, scales[si], gaps);
    free(tab);
}

/* ------------------------------------------------------------------------ */
/* Point to point. */

static void check_payload(const unsigned char *b, size_t count, size_t es, int src, int dst,
                          const char *what)
{
    tally_t w = {0, 0, NULL};
    for (size_t i = 0; i < count; i++)
        tally(&w, has_payload(b, i, es, payload(src, dst, i)), i, "message");
    if (guard_broken(b, count * es))
        tally(&w, 0, count, "guard");
    checks++;
    if (w.wrong)
        FAIL("%s: %zu wrong elements from rank %d, first at %zu (%s)", what, w.wrong, src, w.first,
             w.where);
}

/* Ring: send to the next rank, receive from the previous. */
static void p2p_ring(tc_comm_t *comm, size_t count, tc_dtype_t t, int blocking)
{
    int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
    size_t es = tc_dtype_size(t);
    char what[96];
    snprintf(what, sizeof(what), "send/recv ring %s count %zu %s", tc_dtype_name(t), count,
             blocking ? "blocking (even ranks send first)" : "async send, blocking recv");
    salt = mix(salt + 1);
    unsigned char *s = buf_new(count * es, 0), *r = buf_new(count * es, FILL_BYTE);
    for (size_t i = 0; i < count; i++)
        put_payload(s, i, es, payload(rank, next, i));
    tc_op_opts_t o = {sizeof(tc_op_opts_t), TIMEOUT_MS, NULL, 0};
    tc_status_t st;
    if (blocking) {
        if (rank % 2 == 0) {
            if ((st = tc_send(comm, s, count, t, next, &o, NULL)) == TC_OK)
                st = tc_recv(comm, r, count, t, prev, &o, NULL);
        } else if ((st = tc_recv(comm, r, count, t, prev, &o, NULL)) == TC_OK) {
            st = tc_send(comm, s, count, t, next, &o, NULL);
        }
    } else {
        tc_op_opts_t oa = o;
        oa.async = 1;
        tc_work_t *w = NULL;
        st = tc_send(comm, s, count, t, next, &oa, &w);
        tc_status_t rst = st == TC_OK ? tc_recv(comm, r, count, t, prev, &o, NULL) : st;
        st = finish(st, w, what);
        if (st == TC_OK)
            st = rst;
    }
    if (st != TC_OK)
        status_fail(what, st, tc_last_error());
    else
        check_payload(r, count, es, prev, rank, what);
    free(s);
    free(r);
}

/* A batch: two messages to every rank (self included) and two from every
 * rank; they match in order, so the second message of each pair must land in
 * the second receive buffer. */
static void p2p_batch(tc_comm_t *comm, size_t scale, int async)
{
    size_t p = (size_t)nranks, es = 4;
    char what[96];
    snprintf(what, sizeof(what), "batch to/from every rank, scale %zu, %s", scale,
             async ? "async" : "blocking");
    salt = mix(salt + 1);
    unsigned char **sb = calloc(2 * p, sizeof(*sb)), **rb = calloc(2 * p, sizeof(*rb));
    tc_status_t st = tc_batch_begin(comm);
    for (int q = 0; q < nranks && st == TC_OK; q++)
        for (int k = 0; k < 2 && st == TC_OK; k++) {
            size_t sc = a2a_count(rank, q, scale) + (size_t)k * 3;
            size_t rc = a2a_count(q, rank, scale) + (size_t)k * 3;
            unsigned char *s = sb[2 * q + k] = buf_new(sc * es, 0);
            rb[2 * q + k] = buf_new(rc * es, FILL_BYTE);
            for (size_t i = 0; i < sc; i++)
                put_payload(s, i, es, payload(rank, q * 2 + k, i));
            if ((st = tc_send(comm, s, sc, TC_UINT32, q, NULL, NULL)) == TC_OK)
                st = tc_recv(comm, rb[2 * q + k], rc, TC_UINT32, q, NULL, NULL);
        }
    if (st == TC_OK) {
        tc_op_opts_t o = {sizeof(tc_op_opts_t), TIMEOUT_MS, NULL, async};
        tc_work_t *w = NULL;
        st = tc_batch_end(comm, &o, async ? &w : NULL);
        st = finish(st, w, what); /* after the call: it sets w */
    } else {
        tc_batch_end(comm, NULL, NULL);
    }
    if (st != TC_OK) {
        status_fail(what, st, tc_last_error());
    } else {
        for (int q = 0; q < nranks; q++)
            for (int k = 0; k < 2; k++) {
                size_t rc = a2a_count(q, rank, scale) + (size_t)k * 3;
                tally_t w = {0, 0, NULL};
                for (size_t i = 0; i < rc; i++)
                    tally(&w, has_payload(rb[2 * q + k], i, es, payload(q, rank * 2 + k, i)), i,
                          "message");
                if (guard_broken(rb[2 * q + k], rc * es))
                    tally(&w, 0, rc, "guard");
                checks++;
                if (w.wrong)
                    FAIL("%s: message %d from rank %d: %zu wrong, first at %zu (%s)", what, k, q,
                         w.wrong, w.first, w.where);
            }
    }
    for (size_t i = 0; i < 2 * p; i++) {
        free(sb[i]);
        free(rb[i]);
    }
    free(sb);
    free(rb);
}

void point_to_point(tc_comm_t *comm)
{
    size_t counts[] = {0, 5, 100003};
    for (int c = 0; c < 3; c++) {
        p2p_ring(comm, counts[c], c == 1 ? TC_BFLOAT16 : TC_FLOAT64, 0);
        if (nranks > 1)
            p2p_ring(comm, counts[c], TC_INT8, 1);
    }
    p2p_batch(comm, 1, 0);
    p2p_batch(comm, 1, 1);
    p2p_batch(comm, 5000, 0);
}
