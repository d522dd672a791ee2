/* coll_test's asynchronous and persistent work objects, split/split_ranks/dup with concurrent
 * operations, argument errors, and TC_CHECK mismatches (coll_test.h). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/integration/coll_test.h"

/* ------------------------------------------------------------------------ */
/* Work objects: several operations in flight, test loops, persistent all_gather. */

/* All-reduce sum of int32 over @p comm (rank r's input by its rank in comm). */
static void fill_sum(int32_t *b, size_t count, int r)
{
    for (size_t i = 0; i < count; i++)
        b[i] = (int32_t)red_input(r, i, TC_INT32, TC_SUM);
}

static void check_sum(const int32_t *b, size_t count, int n, const char *what)
{
    int64_t *tab = malloc(PERIOD * sizeof(int64_t));
    red_table(TC_INT32, TC_SUM, n, tab);
    tally_t w = {0, 0, NULL};
    for (size_t i = 0; i < count; i++)
        tally(&w, b[i] == tab[i % PERIOD], i, "result");
    checks++;
    if (w.wrong)
        FAIL("%s: %zu wrong elements, first at %zu: %d, want %lld", what, w.wrong, w.first,
             b[w.first], (long long)tab[w.first % PERIOD]);
    free(tab);
}

void async_works(tc_comm_t *comm)
{
    size_t ac = 1000, gc = 777, bc = 999, n = (size_t)nranks;
    int root = nranks - 1;
    salt = mix(salt + 1);
    int32_t *as = malloc(ac * 4), *ar = malloc(ac * 4);
    float *gs = malloc(gc * 4), *gr = malloc(gc * n * 4);
    int64_t *bb = malloc(bc * 8);
    fill_sum(as, ac, rank);
    for (size_t i = 0; i < gc; i++)
        gs[i] = (float)(rank * 1000 + (int)(i % 1000));
    for (size_t i = 0; i < bc; i++)
        bb[i] = rank == root ? (int64_t)payload(root, 0, i) : -1;
    tc_op_opts_t o = {sizeof(tc_op_opts_t), TIMEOUT_MS, NULL, 1};
    tc_work_t *w[3] = {NULL, NULL, NULL};
    const char *what[3] = {"async all_reduce", "async all_gather", "async broadcast"};
    tc_status_t st[3];
    st[0] = tc_all_reduce(comm, as, ar, ac, TC_INT32, TC_SUM, &o, &w[0]);
    st[1] = tc_all_gather(comm, gs, gr, gc, TC_FLOAT32, &o, &w[1]);
    st[2] = tc_broadcast(comm, bb, bc, TC_INT64, root, &o, &w[2]);
    for (int k = 2; k >= 0; k--) /* waited for in reverse order */
        if ((st[k] = finish(st[k], w[k], what[k])) != TC_OK)
            status_fail(what[k], st[k], tc_last_error());
    if (st[0] == TC_OK)
        check_sum(ar, ac, nranks, what[0]);
    if (st[1] == TC_OK) {
        size_t wrong = 0;
        for (size_t i = 0; i < gc * n; i++)
            wrong += gr[i] != (float)((int)(i / gc) * 1000 + (int)(i % gc % 1000));
        checks++;
        if (wrong)
            FAIL("%s: %zu wrong elements", what[1], wrong);
    }
    if (st[2] == TC_OK) {
        size_t wrong = 0;
        for (size_t i = 0; i < bc; i++)
            wrong += bb[i] != (int64_t)payload(root, 0, i);
        checks++;
        if (wrong)
            FAIL("%s: %zu wrong elements", what[2], wrong);
    }

    /* tc_work_test until done, bounded */
    size_t lc = 300000;
    int32_t *ls = malloc(lc * 4), *lr = malloc(lc * 4);
    fill_sum(ls, lc, rank);
    tc_work_t *lw = NULL;
    tc_status_t s = tc_all_reduce(comm, ls, lr, lc, TC_INT32, TC_SUM, &o, &lw);
    int done = 0;
    long polls = 0;
    double until = wall_s() + TIMEOUT_MS / 1000.0;
    while (s == TC_OK || s == TC_INPROGRESS) {
        s = tc_work_test(lw, &done);
        polls++;
        if (done || wall_s() > until)
            break;
        if (s != TC_INPROGRESS && s != TC_OK)
            break;
    }
    checks++;
    if (!done || s != TC_OK) {
        FAIL("tc_work_test loop: done %d after %ld polls: %s: %s", done, polls, tc_status_string(s),
             tc_last_error());
    } else {
        tc_work_state_t state;
        tc_status_t result;
        if (tc_work_status(lw, &state, &result) != TC_OK || state != TC_WORK_COMPLETED ||
            result != TC_OK)
            FAIL("tc_work_test loop: done, but status says state %d result %s", (int)state,
                 tc_status_string(result));
        check_sum(lr, lc, nranks, "tc_work_test loop all_reduce");
    }
    if (lw && tc_work_free(lw) != TC_OK)
        FAIL("tc_work_test loop: free: %s", tc_last_error());

    /* a blocking call with work_p gets a completed work object */
    tc_work_t *bw = NULL;
    tc_status_t bs = tc_all_reduce(comm, as, ar, ac, TC_INT32, TC_SUM, NULL, &bw);
    tc_work_state_t state = TC_WORK_FAILED;
    if (bs == TC_OK && bw)
        tc_work_status(bw, &state, NULL);
    checks++;
    if (bs != TC_OK || !bw || state != TC_WORK_COMPLETED)
        FAIL("blocking all_reduce with work_p: %s, work %p, state %d (want completed)",
             tc_status_string(bs), (void *)bw, (int)state);
    else
        check_sum(ar, ac, nranks, "blocking all_reduce with work_p");
    tc_work_free(bw);

    free(as), free(ar), free(gs), free(gr), free(bb), free(ls), free(lr);
}

void persistent(tc_comm_t *comm, int in_place)
{
    size_t count = 1001, n = (size_t)nranks, es = 8;
    const char *what = in_place ? "persistent all_gather in place" : "persistent all_gather";
    unsigned char *s = buf_new(count * es, 0), *r = buf_new(count * n * es, FILL_BYTE);
    unsigned char *send = in_place ? r + (size_t)rank * count * es : s;
    tc_op_opts_t o = {sizeof(tc_op_opts_t), TIMEOUT_MS, NULL, 0};
    tc_work_t *w = NULL;
    tc_status_t st = tc_all_gather_init(comm, send, r, count, TC_UINT64, &o, &w);
    if (st != TC_OK) {
        status_fail(what, st, tc_last_error());
        goto out;
    }
    tc_work_state_t state;
    checks++;
    if (tc_work_status(w, &state, NULL) != TC_OK || state != TC_WORK_NOT_STARTED)
        FAIL("%s: before the first start, state %d (want not started)", what, (int)state);
    for (int k = 0; k < 3; k++) {
        salt = mix(salt + 1); /* new data every start */
        for (size_t i = 0; i < count; i++)
            put_payload(send, i, es, payload(rank, k, i));
        if ((st = tc_work_start(w)) != TC_OK || (st = tc_work_wait(w, TIMEOUT_MS)) != TC_OK) {
            status_fail(what, st, tc_last_error());
            break;
        }
        tally_t tw = {0, 0, NULL};
        for (size_t i = 0; i < count * n; i++)
            tally(&tw, has_payload(r, i, es, payload((int)(i / count), k, i % count)), i, "result");
        if (guard_broken(r, count * n * es))
            tally(&tw, 0, count * n, "guard");
        checks++;
        if (tw.wrong)
            FAIL("%s: start %d: %zu wrong elements, first at %zu (%s)", what, k, tw.wrong, tw.first,
                 tw.where);
    }
    if ((st = tc_work_free(w)) != TC_OK)
        FAIL("%s: free: %s", what, tc_last_error());
out:
    free(s);
    free(r);
}

/* ------------------------------------------------------------------------ */
/* Communicators. */

/* Gather every member's world rank, in the new communicator's order. */
static void check_members(tc_comm_t *sub, const int *want, int n, const char *what)
{
    int sz = -1, rk = -1;
    tc_comm_size(sub, &sz);
    tc_comm_rank(sub, &rk);
    checks++;
    if (sz != n) {
        FAIL("%s: size %d, want %d", what, sz, n);
        return;
    }
    int32_t mine = rank, *all = calloc((size_t)n, sizeof(int32_t));
    tc_op_opts_t o = {sizeof(tc_op_opts_t), TIMEOUT_MS, NULL, 0};
    tc_status_t st = tc_all_gather(sub, &mine, all, 1, TC_INT32, &o, NULL);
    if (st != TC_OK) {
        status_fail(what, st, tc_last_error());
    } else {
        for (int i = 0; i < n; i++)
            if (all[i] != want[i]) {
                FAIL("%s: new rank %d is world rank %d, want %d", what, i, all[i], want[i]);
                break;
            }
        if (all[rk] != rank)
            FAIL("%s: my new rank %d holds world rank %d", what, rk, all[rk]);
    }
    free(all);
}

/* An async all_reduce on @p a and one on @p b, issued in an order that
 * depends on the rank, waited for together. */
static void concurrent_sums(tc_comm_t *a, tc_comm_t *b, const char *what)
{
    int ra, na, rb_, nb;
    tc_comm_rank(a, &ra), tc_comm_size(a, &na), tc_comm_rank(b, &rb_), tc_comm_size(b, &nb);
    size_t ca = 1001, cb = 4099 * 3 + 5;
    int32_t *as = malloc(ca * 4), *ar = malloc(ca * 4), *bs = malloc(cb * 4), *br = malloc(cb * 4);
    fill_sum(as, ca, ra);
    fill_sum(bs, cb, rb_);
    tc_op_opts_t o = {sizeof(tc_op_opts_t), TIMEOUT_MS, NULL, 1};
    tc_work_t *wa = NULL, *wb = NULL;
    tc_status_t sa, sb;
    if (rank % 2) {
        sa = tc_all_reduce(a, as, ar, ca, TC_INT32, TC_SUM, &o, &wa);
        sb = tc_all_reduce(b, bs, br, cb, TC_INT32, TC_SUM, &o, &wb);
    } else {
        sb = tc_all_reduce(b, bs, br, cb, TC_INT32, TC_SUM, &o, &wb);
        sa = tc_all_reduce(a, as, ar, ca, TC_INT32, TC_SUM, &o, &wa);
    }
    char wha[96], whb[96];
    snprintf(wha, sizeof(wha), "%s: first communicator", what);
    snprintf(whb, sizeof(whb), "%s: second communicator", what);
    if ((sa = finish(sa, wa, wha)) != TC_OK)
        status_fail(wha, sa, tc_last_error());
    else
        check_sum(ar, ca, na, wha);
    if ((sb = finish(sb, wb, whb)) != TC_OK)
        status_fail(whb, sb, tc_last_error());
    else
        check_sum(br, cb, nb, whb);
    free(as), free(ar), free(bs), free(br);
}

void communicators(tc_comm_t *world)
{
    int *want = calloc((size_t)nranks, sizeof(int));
    tc_comm_opts_t co = TC_COMM_OPTS_INIT;
    co.timeout_ms = TIMEOUT_MS;

    /* split by parity, then both halves (and the world) busy at once */
    tc_comm_t *half = NULL;
    tc_status_t st = tc_comm_split(world, rank % 2, rank, &co, &half);
    checks++;
    if (st != TC_OK || !half) {
        status_fail("split by parity", st, tc_last_error());
    } else {
        int n = 0;
        for (int q = rank % 2; q < nranks; q += 2)
            want[n++] = q;
        check_members(half, want, n, "split by parity");
        concurrent_sums(half, world, "split by parity, with the world");
        /* the halves alone, each at its own pace: a broadcast from the half's last rank */
        int64_t v[3] = {rank, rank, rank};
        tc_op_opts_t o = {sizeof(tc_op_opts_t), TIMEOUT_MS, NULL, 0};
        if ((st = tc_broadcast(half, v, 3, TC_INT64, n - 1, &o, NULL)) != TC_OK)
            status_fail("broadcast on a half", st, tc_last_error());
        checks++;
        if (st == TC_OK && (v[0] != want[n - 1] || v[2] != want[n - 1]))
            FAIL("broadcast on a half: got %lld, want %d", (long long)v[0], want[n - 1]);
        tc_comm_destroy(half);
    }

    /* split_ranks with the ranks reversed */
    int *rev = calloc((size_t)nranks, sizeof(int));
    for (int i = 0; i < nranks; i++)
        rev[i] = want[i] = nranks - 1 - i;
    tc_comm_t *r = NULL;
    st = tc_comm_split_ranks(world, rev, nranks, &co, &r);
    checks++;
    if (st != TC_OK || !r) {
        status_fail("split_ranks reversed", st, tc_last_error());
    } else {
        int rr = -1;
        tc_comm_rank(r, &rr);
        if (rr != nranks - 1 - rank)
            FAIL("split_ranks reversed: rank %d, want %d", rr, nranks - 1 - rank);
        check_members(r, want, nranks, "split_ranks reversed");
        concurrent_sums(r, world, "split_ranks reversed, with the world");
        tc_comm_destroy(r);
    }

    /* split_ranks of the even ranks only: odd ranks get NULL */
    int ne = 0;
    for (int q = 0; q < nranks; q += 2)
        rev[ne] = want[ne] = q, ne++;
    tc_comm_t *ev = (tc_comm_t *)1;
    st = tc_comm_split_ranks(world, rev, ne, &co, &ev);
    checks++;
    if (st != TC_OK)
        status_fail("split_ranks of the even ranks", st, tc_last_error());
    else if (rank % 2 && ev != NULL)
        FAIL("split_ranks of the even ranks: odd rank got a communicator");
    else if (rank % 2 == 0 && !ev)
        FAIL("split_ranks of the even ranks: even rank got NULL");
    else if (ev) {
        check_members(ev, want, ne, "split_ranks of the even ranks");
        tc_comm_destroy(ev);
    }

    /* TC_SPLIT_NONE on rank 0 */
    tc_comm_t *none = (tc_comm_t *)1;
    st = tc_comm_split(world, rank == 0 ? TC_SPLIT_NONE : 7, 0, NULL, &none);
    checks++;
    if (st != TC_OK) {
        status_fail("split with TC_SPLIT_NONE on rank 0", st, tc_last_error());
    } else if ((rank == 0) != (none == NULL)) {
        FAIL("split with TC_SPLIT_NONE on rank 0: got %p", (void *)none);
    } else if (none) {
        for (int q = 1; q < nranks; q++)
            want[q - 1] = q;
        check_members(none, want, nranks - 1, "split without rank 0");
        tc_comm_destroy(none);
    }

    /* dup: independent of the world; used concurrently with it */
    tc_comm_t *d = NULL;
    st = tc_comm_dup(world, &co, &d);
    checks++;
    if (st != TC_OK || !d) {
        status_fail("dup", st, tc_last_error());
    } else {
        for (int q = 0; q < nranks; q++)
            want[q] = q;
        check_members(d, want, nranks, "dup");
        concurrent_sums(d, world, "dup, with the world");
        tc_comm_destroy(d);
    }
    free(rev);
    free(want);
}

/* ------------------------------------------------------------------------ */
/* Errors. */

/* Calls rejected locally, before anything is sent (so every rank may make them). */
void bad_arguments(tc_comm_t *comm)
{
    int32_t a[64] = {0}, b[64] = {0};
    size_t counts[1024], displs[1024];
    tc_op_opts_t async = {sizeof(tc_op_opts_t), TIMEOUT_MS, NULL, 1};
    tc_op_opts_t bad_algo = {sizeof(tc_op_opts_t), TIMEOUT_MS, "algo=no_such_algorithm", 0};
    tc_work_t *w = NULL;
    expect(tc_all_reduce(comm, a, b, 4, TC_INT32, TC_SUM, &async, NULL), TC_ERR_INVALID_ARG,
           "async without work_p");
    expect(tc_reduce(comm, a, b, 4, TC_INT32, TC_SUM, nranks, NULL, NULL), TC_ERR_INVALID_ARG,
           "reduce: root == size");
    expect(tc_broadcast(comm, a, 4, TC_INT32, -1, NULL, NULL), TC_ERR_INVALID_ARG,
           "broadcast: root -1");
    expect(tc_gather(comm, a, NULL, 4, TC_INT32, rank, NULL, NULL), TC_ERR_INVALID_ARG,
           "gather: NULL recvbuf at the root");
    expect(tc_reduce_scatter(comm, a, b, 4, TC_FLOAT32, TC_BAND, NULL, NULL), TC_ERR_UNSUPPORTED,
           "reduce_scatter: band on float32");
    expect(tc_all_gather(comm, a, b, 4, TC_INT32, &bad_algo, NULL), TC_ERR_NOT_FOUND,
           "all_gather: unknown algorithm");
    for (int q = 0; q < nranks && q < 1024; q++)
        counts[q] = 1, displs[q] = (size_t)q;
    expect(tc_all_gather_v(comm, a, 2, b, counts, displs, TC_INT32, NULL, NULL), TC_ERR_INVALID_ARG,
           "all_gather_v: sendcount != recvcounts[rank]");
    expect(tc_all_gather_v(comm, a, 1, b, NULL, NULL, TC_INT32, NULL, NULL), TC_ERR_INVALID_ARG,
           "all_gather_v: NULL recvcounts");
    expect(tc_all_to_all_v(comm, a, counts, NULL, a, counts, NULL, TC_INT32, NULL, NULL),
           TC_ERR_INVALID_ARG, "all_to_all_v in place");
    expect(tc_all_gather_init(comm, a, b, 1, TC_INT32, NULL, NULL), TC_ERR_INVALID_ARG,
           "all_gather_init without work_p");
    expect(tc_batch_begin(comm), TC_OK, "batch_begin");
    expect(tc_all_reduce(comm, a, b, 4, TC_INT32, TC_SUM, NULL, NULL), TC_ERR_INVALID_STATE,
           "all_reduce inside a batch");
    expect(tc_batch_begin(comm), TC_ERR_INVALID_STATE, "batch_begin inside a batch");
    expect(tc_send(comm, a, 1, TC_INT32, 0, &async, &w), TC_ERR_INVALID_ARG,
           "send with opts inside a batch");
    expect(tc_batch_end(comm, NULL, NULL), TC_OK, "empty batch_end");
    expect(tc_batch_end(comm, NULL, NULL), TC_ERR_INVALID_STATE, "batch_end without begin");
    expect(tc_send(comm, a, 1, TC_INT32, nranks, NULL, NULL), TC_ERR_INVALID_ARG,
           "send to rank == size");
    expect(tc_recv(comm, NULL, 1, TC_INT32, 0, NULL, NULL), TC_ERR_INVALID_ARG, "recv into NULL");
    int dup_list[2] = {0, 0};
    tc_comm_t *nc = NULL;
    expect(tc_comm_split_ranks(comm, dup_list, 2, NULL, &nc), TC_ERR_INVALID_ARG,
           "split_ranks with a repeated rank");
    expect(tc_comm_split_ranks(comm, dup_list, 0, NULL, &nc), TC_ERR_INVALID_ARG,
           "split_ranks with an empty list");
    dup_list[0] = nranks;
    expect(tc_comm_split_ranks(comm, dup_list, 1, NULL, &nc), TC_ERR_INVALID_ARG,
           "split_ranks with an out-of-range rank");
    /* a completed, non-persistent work cannot be started; waiting again returns its result */
    if (tc_all_reduce(comm, a, b, 4, TC_INT32, TC_SUM, NULL, &w) == TC_OK && w) {
        expect(tc_work_start(w), TC_ERR_INVALID_STATE, "start of a non-persistent work");
        expect(tc_work_wait(w, 0), TC_OK, "second wait on a completed work");
        tc_work_free(w);
    } else {
        FAIL("all_reduce with work_p: %s", tc_last_error());
    }
    w = NULL;
    if (tc_all_gather_init(comm, a, b, 1, TC_INT32, NULL, &w) == TC_OK) {
        expect(tc_work_wait(w, 0), TC_ERR_INVALID_STATE, "wait on a never-started persistent");
        tc_work_free(w);
    } else {
        FAIL("all_gather_init: %s", tc_last_error());
    }
}

/* TC_CHECK=1: the last rank calls all_reduce with a different count, then a
 * broadcast with a different root: every rank gets TC_ERR_MISMATCH naming it;
 * then rank 0's all_to_all_v sends the last rank more than it expects: every
 * rank gets TC_ERR_MISMATCH; the communicator then still works. */
void mismatch(tc_comm_t *comm)
{
    const char *env = getenv("TC_CHECK");
    if (!env || strcmp(env, "1") != 0 || nranks < 2)
        return;
    int32_t a[16], b[16];
    char name[32];
    snprintf(name, sizeof(name), "rank %d", nranks - 1);
    tc_op_opts_t o = {sizeof(tc_op_opts_t), TIMEOUT_MS, NULL, 0};
    int odd = rank == nranks - 1;
    fill_sum(a, 16, rank);
    tc_status_t st = tc_all_reduce(comm, a, b, odd ? 9 : 8, TC_INT32, TC_SUM, &o, NULL);
    checks++;
    if (st != TC_ERR_MISMATCH || !strstr(tc_last_error(), name))
        FAIL("TC_CHECK all_reduce count mismatch: %s (%s); want TC_ERR_MISMATCH naming %s",
             tc_status_string(st), tc_last_error(), name);
    st = tc_broadcast(comm, a, 4, TC_INT32, odd ? 0 : nranks - 1, &o, NULL);
    checks++;
    if (st != TC_ERR_MISMATCH || !strstr(tc_last_error(), name))
        FAIL("TC_CHECK broadcast root mismatch: %s (%s); want TC_ERR_MISMATCH naming %s",
             tc_status_string(st), tc_last_error(), name);
    /* all_to_all_v: rank 0 sends the last rank 2 elements, which expects 1 from it (no TC_CHECK
     * error before: the ranks failed in the transport, or timed out) */
    size_t sc[8], rc[8], sd[8], rd[8];
    for (int q = 0; q < nranks && nranks <= 8; q++) {
        sc[q] = rc[q] = 1;
        sd[q] = rd[q] = (size_t)q;
    }
    if (nranks <= 8) {
        if (rank == 0)
            sc[nranks - 1] = 2;
        st = tc_all_to_all_v(comm, a, sc, sd, b, rc, rd, TC_INT32, &o, NULL);
        checks++;
        if (st != TC_ERR_MISMATCH || !strstr(tc_last_error(), "counts disagree"))
            FAIL("TC_CHECK all_to_all_v pair mismatch: %s (%s); want TC_ERR_MISMATCH",
                 tc_status_string(st), tc_last_error());
    }
    st = tc_all_reduce(comm, a, b, 16, TC_INT32, TC_SUM, &o, NULL);
    if (st != TC_OK)
        status_fail("all_reduce after the mismatches", st, tc_last_error());
    else
        check_sum(b, 16, nranks, "all_reduce after the mismatches");
}
