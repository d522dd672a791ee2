/* Receives from any source (tc_recv with TC_ANY_SOURCE): a root takes one message from every
 * rank, itself included, in whatever order they come, blocking and all at once asynchronously,
 * small and large; a receive from a given rank issued first takes that rank's first message;
 * receives from any source posted at once match in issue order; the refusals (a given-rank
 * receive while one from any source waits, inside a batch, a send to TC_ANY_SOURCE,
 * tc_work_source of other works); a message of another count than the receive's; a timeout
 * that names what it waited for.
 * Every message is checked element by element against the payload of the rank the receive
 * says it came from. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_test.h"

/* @p got holds @p count payloads from @p src to @p dst (message @p k of the pair). */
static void check_from(const unsigned char *got, size_t count, int src, int dst, int k,
                       const char *what)
{
    tally_t w = {0, 0, NULL};
    for (size_t i = 0; i < count; i++)
        tally(&w, has_payload(got, i, 4, payload(src, dst * 4 + k, i)), i, "message");
    if (guard_broken(got, count * 4))
        tally(&w, 0, count, "guard");
    checks++;
    if (w.wrong)
        FAIL("%s: from rank %d: %zu wrong, first at %zu (%s)", what, src, w.wrong, w.first,
             w.where);
}

static unsigned char *message(size_t count, int src, int dst, int k)
{
    unsigned char *b = buf_new(count * 4, 0);
    for (size_t i = 0; i < count; i++)
        put_payload(b, i, 4, payload(src, dst * 4 + k, i));
    return b;
}

/* The source of completed work @p w (freed), or -1 after a failure. */
static int source_of(tc_work_t *w, const char *what)
{
    int src = -1;
    tc_status_t st = tc_work_source(w, &src);
    if (st != TC_OK)
        status_fail(what, st, tc_last_error());
    tc_work_free(w);
    return src;
}

/* Every rank sends @p count elements to @p root (itself too); the root takes them with
 * receives from any source, one after another (@p async 0) or all posted at once. */
static void gather_any(tc_comm_t *comm, int root, size_t count, int async)
{
    char what[96];
    snprintf(what, sizeof(what), "recv from any source at rank %d, count %zu, %s", root, count,
             async ? "all posted at once" : "one after another");
    salt = mix(salt + 1);
    tc_op_opts_t oa = {sizeof(tc_op_opts_t), TIMEOUT_MS, NULL, 1};
    tc_work_t *sw = NULL;
    unsigned char *s = message(count, rank, root, 0);
    tc_status_t st = tc_send(comm, s, count, TC_UINT32, root, &oa, &sw);
    if (st != TC_OK)
        status_fail(what, st, tc_last_error());
    if (rank == root) {
        unsigned char **r = calloc((size_t)nranks, sizeof(*r));
        tc_work_t **w = calloc((size_t)nranks, sizeof(*w));
        int *seen = calloc((size_t)nranks, sizeof(*seen));
        tc_op_opts_t o = {sizeof(tc_op_opts_t), TIMEOUT_MS, NULL, async};
        for (int k = 0; k < nranks; k++) {
            r[k] = buf_new(count * 4, FILL_BYTE);
            if ((st = tc_recv(comm, r[k], count, TC_UINT32, TC_ANY_SOURCE, &o, &w[k])) != TC_OK)
                status_fail(what, st, tc_last_error());
        }
        for (int k = 0; k < nranks; k++) {
            if (!w[k])
                continue;
            if (async && (st = tc_work_wait(w[k], TIMEOUT_MS)) != TC_OK)
                status_fail(what, st, tc_last_error());
            int src = source_of(w[k], what);
            checks++;
            if (src < 0 || src >= nranks || seen[src]++)
                FAIL("%s: receive %d says its message came from rank %d (%s)", what, k, src,
                     src >= 0 && src < nranks ? "twice" : "no rank");
            else
                check_from(r[k], count, src, root, 0, what);
        }
        for (int k = 0; k < nranks; k++)
            free(r[k]);
        free(r);
        free(w);
        free(seen);
    }
    if (sw && (st = finish(TC_OK, sw, what)) != TC_OK)
        status_fail(what, st, tc_last_error());
    free(s);
    /* a rank whose send completed may run ahead to the next case, whose root may be this
     * one: its next message would be as good as any for a receive from any source */
    if ((st = tc_barrier(comm, NULL, NULL)) != TC_OK)
        status_fail(what, st, tc_last_error());
}

/* Rank 1 sends two messages to rank 0, which first issues a receive from rank 1, then one
 * from any source: the first takes message 0, the second message 1. */
static void given_rank_first(tc_comm_t *comm)
{
    const char *what = "recv from rank 1, then from any source";
    salt = mix(salt + 1);
    size_t count = 33;
    if (rank == 1) {
        unsigned char *m0 = message(count, 1, 0, 0), *m1 = message(count, 1, 0, 1);
        tc_status_t st = tc_send(comm, m0, count, TC_UINT32, 0, NULL, NULL);
        if (st == TC_OK)
            st = tc_send(comm, m1, count, TC_UINT32, 0, NULL, NULL);
        if (st != TC_OK)
            status_fail(what, st, tc_last_error());
        free(m0);
        free(m1);
    } else if (rank == 0) {
        unsigned char *a = buf_new(count * 4, FILL_BYTE), *b = buf_new(count * 4, FILL_BYTE);
        tc_op_opts_t oa = {sizeof(tc_op_opts_t), TIMEOUT_MS, NULL, 1};
        tc_work_t *wa = NULL, *wb = NULL;
        tc_status_t st = tc_recv(comm, a, count, TC_UINT32, 1, &oa, &wa);
        if (st == TC_OK)
            st = tc_recv(comm, b, count, TC_UINT32, TC_ANY_SOURCE, NULL, &wb);
        if (st == TC_OK)
            st = finish(TC_OK, wa, what);
        if (st != TC_OK) {
            status_fail(what, st, tc_last_error());
        } else {
            int src = source_of(wb, what);
            checks++;
            if (src != 1)
                FAIL("%s: the receive from any source says rank %d, want 1", what, src);
            check_from(a, count, 1, 0, 0, what);
            check_from(b, count, 1, 0, 1, what);
        }
        free(a);
        free(b);
    }
}

/* Rank 0 posts two receives from any source at once, then rank 1 sends it two messages: the
 * receive issued first takes the first message (they match in issue order, whichever looks
 * first in a progress pass). */
static void in_issue_order(tc_comm_t *comm)
{
    const char *what = "two receives from any source, then two messages of rank 1";
    salt = mix(salt + 1);
    size_t count = 5;
    unsigned char *a = buf_new(count * 4, FILL_BYTE), *b = buf_new(count * 4, FILL_BYTE);
    unsigned char *m0 = message(count, 1, 0, 0), *m1 = message(count, 1, 0, 1);
    tc_op_opts_t oa = {sizeof(tc_op_opts_t), TIMEOUT_MS, NULL, 1};
    tc_work_t *wa = NULL, *wb = NULL;
    if (rank == 0) {
        expect(tc_recv(comm, a, count, TC_UINT32, TC_ANY_SOURCE, &oa, &wa), TC_OK, what);
        expect(tc_recv(comm, b, count, TC_UINT32, TC_ANY_SOURCE, &oa, &wb), TC_OK, what);
    }
    expect(tc_barrier(comm, NULL, NULL), TC_OK, "barrier before the two messages");
    if (rank == 1) {
        expect(tc_send(comm, m0, count, TC_UINT32, 0, NULL, NULL), TC_OK, what);
        expect(tc_send(comm, m1, count, TC_UINT32, 0, NULL, NULL), TC_OK, what);
    }
    if (rank == 0 && wa && wb) {
        expect(tc_work_wait(wa, TIMEOUT_MS), TC_OK, what);
        expect(tc_work_wait(wb, TIMEOUT_MS), TC_OK, what);
        int sa = source_of(wa, what), sb = source_of(wb, what);
        checks++;
        if (sa != 1 || sb != 1)
            FAIL("%s: sources %d and %d, want 1 and 1", what, sa, sb);
        check_from(a, count, 1, 0, 0, what);
        check_from(b, count, 1, 0, 1, what);
    }
    free(a);
    free(b);
    free(m0);
    free(m1);
}

/* Rank 0 posts a receive from any source that waits (nothing is sent before the barrier) and
 * makes the calls that are refused meanwhile; then the last rank sends it its message. */
static void refusals(tc_comm_t *comm)
{
    const char *what = "recv from any source waiting";
    salt = mix(salt + 1);
    int32_t x[4];
    int last = nranks - 1;
    unsigned char *r = buf_new(16, FILL_BYTE), *m = message(4, last, 0, 2);
    tc_work_t *w = NULL, *sw = NULL;
    tc_op_opts_t oa = {sizeof(tc_op_opts_t), TIMEOUT_MS, NULL, 1};
    expect(tc_send(comm, x, 1, TC_INT32, TC_ANY_SOURCE, NULL, NULL), TC_ERR_INVALID_ARG,
           "send to TC_ANY_SOURCE");
    expect(tc_batch_begin(comm), TC_OK, "batch begin");
    expect(tc_recv(comm, x, 1, TC_INT32, TC_ANY_SOURCE, NULL, NULL), TC_ERR_UNSUPPORTED,
           "recv from any source inside a batch");
    expect(tc_batch_end(comm, NULL, NULL), TC_OK, "empty batch end");
    if (rank == 0) {
        expect(tc_recv(comm, r, 4, TC_UINT32, TC_ANY_SOURCE, &oa, &w), TC_OK, what);
        int src = -1;
        if (w) {
            expect(tc_work_source(w, &src), TC_ERR_INVALID_STATE, "tc_work_source while it runs");
            expect(tc_work_source(w, NULL), TC_ERR_INVALID_ARG, "tc_work_source into NULL");
        }
        expect(tc_recv(comm, x, 1, TC_INT32, last, &oa, &sw), TC_ERR_INVALID_STATE,
               "recv from a given rank while one from any source waits");
    }
    tc_work_t *bw = NULL;
    expect(tc_barrier(comm, &oa, &bw), TC_OK, "barrier beside a waiting receive");
    if (bw) {
        expect(tc_work_wait(bw, TIMEOUT_MS), TC_OK, "barrier beside a waiting receive");
        int src = 0;
        expect(tc_work_source(bw, &src), TC_ERR_INVALID_ARG, "tc_work_source of a barrier");
        tc_work_free(bw);
    }
    if (rank == last)
        expect(tc_send(comm, m, 4, TC_UINT32, 0, &oa, &sw), TC_OK, "the awaited send");
    if (rank == 0 && w) {
        expect(tc_work_wait(w, TIMEOUT_MS), TC_OK, what);
        int src = source_of(w, what);
        checks++;
        if (src != last)
            FAIL("%s: source %d, want %d", what, src, last);
        else
            check_from(r, 4, last, 0, 2, what);
    }
    if (sw)
        finish(TC_OK, sw, "the awaited send");
    free(r);
    free(m);
}

/* The last rank's message, already here when rank 0's receive from any source takes it,
 * holds more elements than the receive expects, then fewer: TC_ERR_MISMATCH naming the sender
 * (it ended well, the message cut short or the buffer's tail never written). Each on a dup of
 * its own: a failed receive leaves its communicator unusable. */
static void mismatched(tc_comm_t *world)
{
    const size_t sent[2] = {8, 4}, want[2] = {4, 8};
    const char *const how[2] = {"more", "fewer"};
    int last = nranks - 1;
    for (int k = 0; k < 2; k++) {
        tc_comm_t *comm = NULL;
        tc_status_t st = tc_comm_dup(world, NULL, &comm);
        if (st != TC_OK) {
            status_fail("dup for the mismatched receive", st, tc_last_error());
            return;
        }
        int32_t x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8] = {0};
        if (rank == last)
            expect(tc_send(comm, x, sent[k], TC_INT32, 0, NULL, NULL), TC_OK, "mismatched send");
        expect(tc_barrier(world, NULL, NULL), TC_OK, "barrier after the mismatched send");
        if (rank == 0) {
            tc_op_opts_t o = {sizeof(tc_op_opts_t), TIMEOUT_MS, NULL, 0};
            st = tc_recv(comm, y, want[k], TC_INT32, TC_ANY_SOURCE, &o, NULL);
            char words[64];
            snprintf(words, sizeof(words), "rank %d sent %s", last, how[k]);
            expect(st, TC_ERR_MISMATCH, "recv from any source of another count");
            checks++;
            if (st == TC_ERR_MISMATCH && !strstr(tc_last_error(), words))
                FAIL("mismatched receive from any source: \"%s\" does not say \"%s\"",
                     tc_last_error(), words);
        }
        tc_comm_destroy(comm);
    }
}

/* Alone in a communicator, nothing comes: the timeout says what it waited for. */
static void times_out(tc_comm_t *comm)
{
    tc_comm_t *solo = NULL;
    tc_status_t st = tc_comm_split(comm, rank, 0, NULL, &solo);
    if (st != TC_OK) {
        status_fail("split for the timeout case", st, tc_last_error());
        return;
    }
    int32_t x = 0;
    tc_op_opts_t o = {sizeof(tc_op_opts_t), 300, NULL, 0};
    st = tc_recv(solo, &x, 1, TC_INT32, TC_ANY_SOURCE, &o, NULL);
    expect(st, TC_ERR_TIMEOUT, "recv from any source with nothing sent");
    checks++;
    if (st == TC_ERR_TIMEOUT && (!strstr(tc_last_error(), "from any rank") ||
                                 !strstr(tc_last_error(), "waiting for rank(s) 0")))
        FAIL("recv from any source timed out without saying what it waited for: %s",
             tc_last_error());
    tc_comm_destroy(solo);
}

/* Rank 0's statistics count its receives from any source (at least @p want). */
static void counted(tc_comm_t *comm, uint64_t want)
{
    tc_comm_stat_t st[32];
    int n = 0;
    expect(tc_comm_stats(comm, st, 32, &n), TC_OK, "tc_comm_stats");
    uint64_t ops = 0;
    for (int i = 0; i < n && i < 32; i++)
        if (strcmp(st[i].coll, "send_recv") == 0 && strcmp(st[i].algo, "any_source") == 0)
            ops += st[i].ops;
    checks++;
    if (ops < want)
        FAIL("statistics: %llu receives from any source (send_recv, any_source), want %llu",
             (unsigned long long)ops, (unsigned long long)want);
}

void any_source(tc_comm_t *world)
{
    size_t counts[] = {7, 300001};
    /* on a dup: the matrix filled the world's statistics (32 collective-algorithm entries) */
    tc_comm_t *comm = NULL;
    tc_status_t st = tc_comm_dup(world, NULL, &comm);
    if (st != TC_OK) {
        status_fail("dup for the receives from any source", st, tc_last_error());
        return;
    }
    for (int c = 0; c < 2; c++)
        for (int async = 0; async < 2; async++)
            gather_any(comm, (c * 2 + async) % nranks, counts[c], async);
    if (rank == 0)
        counted(comm, (uint64_t)nranks); /* the first case's, at least */
    if (nranks > 1) {
        given_rank_first(comm);
        in_issue_order(comm);
        mismatched(comm);
    }
    refusals(comm);
    times_out(comm);
    tc_comm_destroy(comm);
}
