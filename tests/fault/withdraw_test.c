/*
 * A send taken back by a local abort after its receiver was told of it. Rank 0 sends 4 MiB
 * to rank 1 on a dup of the world, asynchronously, aborts the dup before rank 1 posts its
 * receive, and writes other bytes into its buffer (its own again, as tc_comm_abort()
 * promises). Over shared memory the message was only announced (rank 1 reads rank 0's
 * memory): rank 1's receive completed with TC_OK and rank 0's new bytes. Now it ends with
 * TC_ERR_ABORTED naming rank 0, or (over TCP, which sends the rest from a copy) with TC_OK and
 * the bytes as sent; the world goes on either way. Run under tcrun by run_fault.sh:
 *
 *   withdraw_test ROUNDS        2 ranks
 *   withdraw_test late-root     3 ranks or more
 *   withdraw_test leftovers N   2 ranks
 *   withdraw_test cause         4 ranks or more
 *   withdraw_test cause-p2p     4 ranks or more
 *
 * late-root: a 16 MiB broadcast (double binary tree) on a dup whose root is 200 ms late; the others
 * give up after 50 ms, taking back the many pieces they had announced to each other (a tree's
 * pipeline); with more than 16 of them to one peer the 17th could not be withdrawn, the endpoint
 * was closed under its reader, and the world failed with a live rank named dead.
 * leftovers: N rounds of a dup, two 1 MiB messages each way in flight, an abort by one rank in
 * turn, and the destroy. The messages the aborting rank no longer receives arrive whole and
 * stayed in the transports for good (over TCP 200 kB more heap per round); now they are freed
 * with the destroyed communicator: the heap in use may not grow by 8 MiB from round 20 on.
 * cause: the last rank dies 1 ms into an asynchronous batch in which every rank sends and
 * receives 16 MiB with every other. A survivor whose sender had withdrawn its message on learning
 * of the death reported TC_ERR_ABORTED naming that live sender, while the others named the dead
 * rank (9 of 12 runs); every survivor must now fail with TC_ERR_PEER_FAILED naming the dead rank
 * and count it among the failed ranks, or succeed when its part ended before the death (under
 * ASan, sometimes). cause-p2p: the same with every send and receive an asynchronous operation of
 * its own (runtime/src/p2p_one.c's receive that waits to learn why its message was withdrawn);
 * each must end so.
 * Each rank prints "withdraw: OK ..." or "withdraw: FAIL ..." (in the cause case the dying rank
 * prints nothing).
 */
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tcomms/tcomms.h"

#define BYTES (4u << 20)

static int fail(int rank, int round, const char *what, tc_status_t st)
{
    printf("withdraw: FAIL rank %d round %d: %s: %s %s\n", rank, round, what, tc_status_string(st),
           st != TC_OK ? tc_last_error() : "");
    return 1;
}

static unsigned char pattern(int round, size_t i)
{
    return (unsigned char)((i * 131u + (size_t)round * 7u) >> 3);
}

/* Rank 0's side of a round: announce, abort, overwrite. */
static tc_status_t sender(tc_comm_t *dup, unsigned char *buf, int round, const char **what)
{
    for (size_t i = 0; i < BYTES; i++)
        buf[i] = pattern(round, i);
    tc_op_opts_t o = TC_OP_OPTS_INIT;
    o.async = 1;
    tc_work_t *w = NULL;
    tc_status_t st = tc_send(dup, buf, BYTES, TC_UINT8, 1, &o, &w);
    if (st != TC_OK)
        return *what = "async send", st;
    usleep(50000); /* announced: the rest waits for rank 1's receive */
    if ((st = tc_comm_abort(dup)) != TC_OK)
        return *what = "abort", st;
    st = tc_work_wait(w, 5000);
    (void)tc_work_free(w);
    if (st != TC_ERR_ABORTED && st != TC_OK) /* TC_OK: all of it left before the abort */
        return *what = "the aborted send's end (want TC_ERR_ABORTED or TC_OK)", st;
    memset(buf, 0x5a, BYTES); /* the caller's again */
    return TC_OK;
}

/* Rank 1's side: the receive after the abort. */
static tc_status_t receiver(tc_comm_t *dup, unsigned char *buf, int round, const char **what)
{
    tc_op_opts_t o = TC_OP_OPTS_INIT;
    o.timeout_ms = 10000;
    memset(buf, 0, BYTES);
    tc_status_t st = tc_recv(dup, buf, BYTES, TC_UINT8, 0, &o, NULL);
    if (st == TC_ERR_ABORTED) {
        if (strstr(tc_last_error(), "rank 0 withdrew") == NULL)
            return *what = "the withdrawn receive's detail does not name rank 0", st;
        return TC_OK;
    }
    if (st != TC_OK)
        return *what = "receive (want TC_ERR_ABORTED, or TC_OK with the bytes sent)", st;
    for (size_t i = 0; i < BYTES; i++)
        if (buf[i] != pattern(round, i)) {
            printf("withdraw: rank 1 round %d: byte %zu is 0x%02x, sent 0x%02x\n", round, i, buf[i],
                   pattern(round, i));
            return *what = "received bytes rank 0 wrote after its abort", TC_ERR_INTERNAL;
        }
    return TC_OK;
}

/* A large all-reduce on the world, checked: the pair's connection still works. */
static tc_status_t world_works(tc_comm_t *world, int rank, float *v, size_t n)
{
    int size;
    tc_status_t st = tc_comm_size(world, &size);
    if (st != TC_OK)
        return st;
    for (size_t i = 0; i < n; i++)
        v[i] = (float)(rank + 1) * (float)(i % 97);
    if ((st = tc_all_reduce(world, v, v, n, TC_FLOAT32, TC_SUM, NULL, NULL)) != TC_OK)
        return st;
    for (size_t i = 0; i < n; i++) /* sum of rank + 1 over the ranks */
        if (v[i] != (float)(size * (size + 1) / 2) * (float)(i % 97))
            return TC_ERR_INTERNAL;
    return TC_OK;
}

/* Whether @p st is what a survivor may see in the cause cases: TC_OK (its part ended before the
 * death) or TC_ERR_PEER_FAILED naming the dead rank @p victim. */
static int cause_ok(tc_status_t st, int victim)
{
    char want[32];
    snprintf(want, sizeof(want), "rank %d (host", victim);
    return st == TC_OK || (st == TC_ERR_PEER_FAILED && strstr(tc_last_error(), want));
}

/* The cause cases: one batch (@p batch), or every send and receive a work of its own (the
 * single-operation path, runtime/src/p2p_one.c). */
static int cause(tc_comm_t *world, int rank, int n, int batch)
{
    const size_t count = (size_t)1 << 21; /* int64: 16 MiB to each peer, in flight at the death */
    int victim = n - 1, failed[8], nfailed = 0, nw = 0, peer_failed = 0;
    int64_t *in = malloc(count * 8), *out = malloc(count * 8 * (size_t)n);
    tc_work_t *works[16] = {NULL};
    if (!in || !out || n < 4 || n > 8)
        return fail(rank, 0, "4 to 8 ranks", TC_ERR_INVALID_ARG);
    for (size_t i = 0; i < count; i++)
        in[i] = rank;
    tc_status_t st = tc_barrier(world, NULL, NULL);
    if (st != TC_OK)
        return fail(rank, 0, "barrier", st);
    tc_op_opts_t async = TC_OP_OPTS_INIT;
    async.async = 1;
    const tc_op_opts_t *each = batch ? NULL : &async;
    if (batch)
        st = tc_batch_begin(world);
    for (int q = 0; q < n && st == TC_OK; q++) {
        if (q == rank)
            continue;
        st = tc_send(world, in, count, TC_INT64, q, each, batch ? NULL : &works[nw]);
        nw += !batch && st == TC_OK;
        if (st == TC_OK)
            st = tc_recv(world, out + (size_t)q * count, count, TC_INT64, q, each,
                         batch ? NULL : &works[nw]);
        nw += !batch && st == TC_OK;
    }
    if (st == TC_OK && batch)
        st = tc_batch_end(world, &async, &works[nw++]);
    if (st == TC_OK && rank == victim) {
        usleep(1000);
        raise(SIGKILL);
    }
    /* an error at issue: this rank learnt of the death first */
    if (!cause_ok(st, victim))
        return fail(rank, 0, "an issue failed without naming the dead rank", st);
    peer_failed = st != TC_OK;
    for (int i = 0; i < nw; i++) {
        tc_status_t wst = tc_work_wait(works[i], -1);
        if (!cause_ok(wst, victim))
            return fail(rank, i, "an operation failed without naming the dead rank", wst);
        peer_failed |= wst != TC_OK;
        tc_work_free(works[i]);
    }
    tc_status_t fst = TC_OK;
    if (peer_failed && ((fst = tc_comm_failed_ranks(world, failed, 8, &nfailed)) != TC_OK ||
                        nfailed != 1 || failed[0] != victim))
        return fail(rank, 0, "the failed ranks are not the dead one", fst);
    printf("withdraw: OK rank %d: the %s %s\n", rank, batch ? "batch" : "operations",
           peer_failed ? "failed naming the dead rank" : "ended before the death");
    free(in);
    free(out);
    return 0;
}

/* The late-root case: every rank's broadcast ends in an error, and the world goes on. */
static int late_root(tc_comm_t *world, int rank, float *v)
{
    tc_comm_t *dup;
    tc_status_t st = tc_comm_dup(world, NULL, &dup);
    if (st != TC_OK)
        return fail(rank, 0, "dup", st);
    tc_op_opts_t o = TC_OP_OPTS_INIT;
    o.timeout_ms = rank == 0 ? 1000 : 50;
    o.hints = "algo=double_binary_tree"; /* pipelined: many pieces to each peer in flight */
    size_t count = (16u << 20) / sizeof(float);
    float *big = calloc(count, sizeof(float));
    if (big == NULL)
        return fail(rank, 0, "malloc", TC_ERR_NO_MEMORY);
    if (rank == 0)
        usleep(200000);
    st = tc_broadcast(dup, big, count, TC_FLOAT32, 0, &o, NULL);
    free(big);
    /* the others give up; the root's sends may complete (the others, having destroyed the
     * dup, drop what arrives for it, as over TCP once the bytes are out) */
    if (st != TC_ERR_TIMEOUT && st != TC_ERR_ABORTED && !(rank == 0 && st == TC_OK))
        return fail(rank, 0, "the broadcast (want a timeout: the others gave up)",
                    st == TC_OK ? TC_ERR_INTERNAL : st);
    if ((st = tc_comm_destroy(dup)) != TC_OK)
        return fail(rank, 0, "destroy of the dup", st);
    usleep(300000); /* the notices of the broken dup, if any, are in */
    if ((st = world_works(world, rank, v, BYTES / sizeof(float))) != TC_OK)
        return fail(rank, 0, "all-reduce on the world after it", st);
    printf("withdraw: OK rank %d, late root\n", rank);
    return 0;
}

/* The leftovers case. */
static int leftovers(tc_comm_t *world, int rank, long rounds)
{
    enum { MSG = 1 << 20, NMSG = 2 };
    unsigned char *out = malloc(NMSG * MSG), *in = malloc(NMSG * MSG);
    if (out == NULL || in == NULL)
        return fail(rank, 0, "malloc", TC_ERR_NO_MEMORY);
    memset(out, rank + 1, NMSG * MSG);
    size_t base = 0, top = 0;
    for (long i = 0; i < rounds; i++) {
        tc_comm_t *dup;
        tc_status_t st = tc_comm_dup(world, NULL, &dup);
        if (st != TC_OK)
            return fail(rank, (int)i, "dup", st);
        tc_op_opts_t o = TC_OP_OPTS_INIT;
        o.async = 1;
        tc_work_t *w[2 * NMSG] = {0};
        for (int k = 0; k < NMSG && st == TC_OK; k++)
            if ((st = tc_send(dup, out + k * MSG, MSG, TC_UINT8, 1 - rank, &o, &w[k])) == TC_OK)
                st = tc_recv(dup, in + k * MSG, MSG, TC_UINT8, 1 - rank, &o, &w[NMSG + k]);
        if (st != TC_OK)
            return fail(rank, (int)i, "async send or receive", st);
        int aborter = rank == i % 2;
        if (aborter) {
            usleep(200);
            (void)tc_comm_abort(dup);
        }
        /* the other rank's sends are taken as done once the aborter has destroyed the dup, and
         * a receive of what the aborter never sent ends when the dup is destroyed */
        if (aborter && (st = tc_comm_destroy(dup)) != TC_OK)
            return fail(rank, (int)i, "destroy", st);
        for (int k = 0; k < NMSG && !aborter; k++)
            if ((st = tc_work_wait(w[k], 10000)) == TC_ERR_TIMEOUT)
                return fail(rank, (int)i, "a send to the aborting rank", st);
        if ((st = tc_barrier(world, NULL, NULL)) != TC_OK ||
            (!aborter && (st = tc_comm_destroy(dup)) != TC_OK))
            return fail(rank, (int)i, "barrier and destroy", st);
        for (int k = 0; k < 2 * NMSG; k++) {
            (void)tc_work_wait(w[k], 10000);
            (void)tc_work_free(w[k]);
        }
        size_t used = mallinfo2().uordblks;
        if (i == 20)
            base = used;
        if (i > 20 && used > top)
            top = used;
    }
    free(out);
    free(in);
    if (top > base + (8u << 20)) {
        printf(
            "withdraw: FAIL rank %d: heap in use %zu kB at round 20, up to %zu kB by round %ld\n",
            rank, base >> 10, top >> 10, rounds);
        return 1;
    }
    printf("withdraw: OK rank %d, %ld rounds of leftovers, heap %zu kB at round 20, at most %zu kB "
           "after\n",
           rank, rounds, base >> 10, top >> 10);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "leftovers") == 0 && argc < 3)) {
        fprintf(stderr,
                "usage: withdraw_test ROUNDS | late-root | leftovers N | cause | cause-p2p\n");
        return 2;
    }
    int rounds = atoi(argv[1]), rank, n;
    tc_comm_t *world;
    tc_comm_opts_t opts = TC_COMM_OPTS_INIT;
    opts.timeout_ms = 20000;
    tc_status_t st = tc_comm_create(&opts, &world);
    if (st != TC_OK)
        return fail(-1, 0, "create", st);
    if ((st = tc_comm_rank(world, &rank)) != TC_OK || (st = tc_comm_size(world, &n)) != TC_OK)
        return fail(-1, 0, "rank", st);
    unsigned char *buf = malloc(BYTES);
    float *v = malloc(BYTES);
    if (buf == NULL || v == NULL)
        return fail(rank, 0, "malloc", TC_ERR_NO_MEMORY);
    if (strcmp(argv[1], "late-root") == 0) {
        int rc = late_root(world, rank, v);
        free(buf);
        free(v);
        return tc_comm_destroy(world) == TC_OK ? rc : 1;
    }
    if (strncmp(argv[1], "cause", 5) == 0) { /* the communicator keeps the dead rank: no destroy */
        free(buf);
        free(v);
        return cause(world, rank, n, strcmp(argv[1], "cause") == 0);
    }
    if (n != 2)
        return fail(rank, 0, "this test runs at 2 ranks", TC_ERR_INVALID_ARG);
    if (strcmp(argv[1], "leftovers") == 0) {
        int rc = leftovers(world, rank, atol(argv[2]));
        free(buf);
        free(v);
        return tc_comm_destroy(world) == TC_OK ? rc : 1;
    }
    for (int round = 0; round < rounds; round++) {
        tc_comm_t *dup;
        const char *what = "";
        if ((st = tc_comm_dup(world, NULL, &dup)) != TC_OK)
            return fail(rank, round, "dup", st);
        if (rank == 0 && (st = sender(dup, buf, round, &what)) != TC_OK)
            return fail(rank, round, what, st);
        if ((st = tc_barrier(world, NULL, NULL)) != TC_OK) /* rank 0 has aborted */
            return fail(rank, round, "barrier after the abort", st);
        if (rank == 1 && (st = receiver(dup, buf, round, &what)) != TC_OK)
            return fail(rank, round, what, st);
        if ((st = world_works(world, rank, v, BYTES / sizeof(float))) != TC_OK)
            return fail(rank, round, "all-reduce on the world after it", st);
        if ((st = tc_comm_destroy(dup)) != TC_OK)
            return fail(rank, round, "destroy of the dup", st);
    }
    printf("withdraw: OK rank %d, %d rounds\n", rank, rounds);
    free(buf);
    free(v);
    return tc_comm_destroy(world) == TC_OK ? 0 : 1;
}
