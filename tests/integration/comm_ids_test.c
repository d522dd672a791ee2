/* Communicator ids (runtime/src/comm_ids.c) through the public API:
 *
 *   comm_ids_test cycles N     N creations and destructions one after the other, in turn a
 *                              dup, a split in reversed order and a split by rank list of the
 *                              world, each checked by an all-reduce: more than the 2^20 - 2
 *                              ids a process has, so it passes only when ids are reused
 *   comm_ids_test shrinks N    N shrinks of the world one after the other (no rank failed: every
 *                              rank), each checked by an all-reduce and destroyed; with
 *                              TC_LOG=runtime=info the log names each one's id, which must be
 *                              the same every time (comm_ids_test.sh): a shrink took an id below
 *                              every one it had taken, so ids ran out after about a million
 *   comm_ids_test shrink-aborts N [B]
 *                              as aborts, with shrinks of the world: a shrink whose id was
 *                              spoilt on one member stepped one id down per agreement, and with
 *                              the members' spoilt ids interleaved failed after about 30
 *                              (TC_ERR_NO_RESOURCE after its bound of agreements)
 *   comm_ids_test stale        a receive that timed out leaves its sender's message to come;
 *                              the next communicator must not take its id and so that message
 *   comm_ids_test aborts N [B] N dups of the world, each checked, then aborted by one rank in
 *                              turn (a local abort spoils the id on that rank only): the ranks'
 *                              free ids interleave, and agreeing on one took a round per hole
 *                              until the dup failed after about 430 (TC_ERR_NO_RESOURCE). With
 *                              B, each rank in turn aborts B dups in a row: with B above the
 *                              1024 ids one round of agreement looks at, a rank's spoilt ids
 *                              then cover the whole window above the other's lowest free one,
 *                              and only the fallback (the members' lowest never-used id) finds
 *                              a common id
 *
 * Prints "rank R: C checks, F failures" and exits 0 only when F is 0. Every wait is bounded. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/tcomms.h"

#define TIMEOUT_MS 30000

static int rank, size, failures, checks;

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        if (failures++ < 20) {                                                                     \
            fprintf(stderr, "rank %d: FAIL: ", rank);                                              \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
    } while (0)

static int ok(const char *what, long i, tc_status_t s)
{
    if (s == TC_OK)
        return 1;
    FAIL("%s %ld: %s: %s", what, i, tc_status_string(s), tc_last_error());
    return 0;
}

/* An all-reduce of i + rank on @p c, checked. */
static void check_sum(tc_comm_t *c, long i, const tc_op_opts_t *opts)
{
    int64_t x = i + rank, sum = 0;
    if (ok("all_reduce", i, tc_all_reduce(c, &x, &sum, 1, TC_INT64, TC_SUM, opts, NULL))) {
        checks++;
        if (sum != (int64_t)i * size + (int64_t)size * (size - 1) / 2)
            FAIL("all_reduce %ld: got %lld", i, (long long)sum);
    }
}

static void shrinks(tc_comm_t *world, long n)
{
    tc_op_opts_t opts = TC_OP_OPTS_INIT;
    opts.timeout_ms = TIMEOUT_MS;
    for (long i = 0; i < n && failures == 0; i++) {
        tc_comm_t *c = NULL;
        if (!ok("shrink", i, tc_comm_shrink(world, NULL, &c)))
            return;
        check_sum(c, i, &opts);
        ok("destroy", i, tc_comm_destroy(c));
    }
}

static void cycles(tc_comm_t *world, long n)
{
    tc_op_opts_t opts = TC_OP_OPTS_INIT;
    opts.timeout_ms = TIMEOUT_MS;
    int ranks[64];
    for (long i = 0; i < n && failures == 0; i++) {
        tc_comm_t *c = NULL;
        tc_status_t s;
        if (i % 3 == 0) {
            s = tc_comm_dup(world, NULL, &c);
        } else if (i % 3 == 1) {
            s = tc_comm_split(world, 0, size - rank, NULL, &c);
        } else {
            for (int q = 0; q < size; q++)
                ranks[q] = (q + (int)i) % size;
            s = tc_comm_split_ranks(world, ranks, size, NULL, &c);
        }
        if (!ok("create", i, s))
            return;
        check_sum(c, i, &opts);
        ok("destroy", i, tc_comm_destroy(c));
    }
}

static void aborts(tc_comm_t *world, long n, long block, int shrink)
{
    tc_op_opts_t opts = TC_OP_OPTS_INIT;
    opts.timeout_ms = TIMEOUT_MS;
    for (long i = 0; i < n && failures == 0; i++) {
        tc_comm_t *c = NULL;
        if (!ok(shrink ? "shrink" : "dup", i,
                shrink ? tc_comm_shrink(world, NULL, &c) : tc_comm_dup(world, NULL, &c)))
            return;
        check_sum(c, i, &opts);
        ok("barrier", i, tc_barrier(world, &opts, NULL)); /* nothing in flight on c */
        if (rank == (int)(i / block % size))
            ok("abort", i, tc_comm_abort(c));
        ok("destroy", i, tc_comm_destroy(c));
    }
}

/* Rank 1's receive from rank 0 times out; only then (a barrier of the world later) does rank 0
 * send it, and its send completes. Rank 0's communicator ended clean, rank 1's did not: the
 * next dup of the world must not take its id, or rank 1's first receive on it would be handed
 * the late message (same id, same kind, same sequence) instead of the new one. */
static void stale(tc_comm_t *world)
{
    enum { N = 16 };
    int64_t buf[N];
    tc_op_opts_t opts = TC_OP_OPTS_INIT;
    opts.timeout_ms = TIMEOUT_MS;
    tc_comm_t *x = NULL, *y = NULL;
    if (!ok("dup", 0, tc_comm_dup(world, NULL, &x)))
        return;
    if (rank == 1) {
        tc_op_opts_t brief = TC_OP_OPTS_INIT;
        brief.timeout_ms = 100;
        tc_status_t s = tc_recv(x, buf, N, TC_INT64, 0, &brief, NULL);
        checks++;
        if (s != TC_ERR_TIMEOUT)
            FAIL("receive with nothing sent: got %s, want TC_ERR_TIMEOUT", tc_status_string(s));
    }
    ok("barrier", 1, tc_barrier(world, &opts, NULL));
    if (rank == 0) {
        for (int i = 0; i < N; i++)
            buf[i] = -1 - i; /* the late message */
        ok("late send", 0, tc_send(x, buf, N, TC_INT64, 1, &opts, NULL));
    }
    ok("destroy", 0, tc_comm_destroy(x));
    ok("barrier", 2, tc_barrier(world, &opts, NULL));
    if (!ok("second dup", 0, tc_comm_dup(world, NULL, &y)))
        return;
    if (rank == 0) {
        for (int i = 0; i < N; i++)
            buf[i] = 1000 + i;
        ok("send", 1, tc_send(y, buf, N, TC_INT64, 1, &opts, NULL));
    } else if (rank == 1) {
        memset(buf, 0, sizeof(buf));
        if (ok("receive", 1, tc_recv(y, buf, N, TC_INT64, 0, &opts, NULL)))
            for (int i = 0; i < N; i++) {
                checks++;
                if (buf[i] != 1000 + i)
                    FAIL("receive on the new communicator [%d]: got %lld, want %d%s", i,
                         (long long)buf[i], 1000 + i,
                         buf[i] == -1 - i ? " (the late message of the destroyed one)" : "");
            }
    }
    /* and it works as a whole */
    int64_t one = 1, sum = 0;
    if (ok("all_reduce", 1, tc_all_reduce(y, &one, &sum, 1, TC_INT64, TC_SUM, &opts, NULL))) {
        checks++;
        if (sum != size)
            FAIL("all_reduce on the new communicator: got %lld, want %d", (long long)sum, size);
    }
    ok("destroy", 1, tc_comm_destroy(y));
}

int main(int argc, char **argv)
{
    int counted = argc >= 2 && (!strcmp(argv[1], "cycles") || !strcmp(argv[1], "aborts") ||
                                !strcmp(argv[1], "shrinks") || !strcmp(argv[1], "shrink-aborts"));
    if (argc < 2 || (!counted && strcmp(argv[1], "stale") != 0) || (counted && argc < 3)) {
        fprintf(stderr, "usage: comm_ids_test cycles N | aborts N [BLOCK] | shrinks N | "
                        "shrink-aborts N [BLOCK] | stale\n");
        return 2;
    }
    tc_comm_t *world;
    if (tc_comm_create(NULL, &world) != TC_OK) {
        fprintf(stderr, "comm_ids_test: create: %s\n", tc_last_error());
        return 1;
    }
    tc_comm_rank(world, &rank);
    tc_comm_size(world, &size);
    if (size > 64) {
        fprintf(stderr, "comm_ids_test: at most 64 ranks\n");
        return 2;
    }
    if (!strcmp(argv[1], "cycles"))
        cycles(world, atol(argv[2]));
    else if (!strcmp(argv[1], "shrinks"))
        shrinks(world, atol(argv[2]));
    else if (!strcmp(argv[1], "aborts") || !strcmp(argv[1], "shrink-aborts"))
        aborts(world, atol(argv[2]), argc > 3 && atol(argv[3]) > 0 ? atol(argv[3]) : 1,
               argv[1][0] == 's');
    else if (size < 2)
        FAIL("stale needs 2 ranks or more");
    else
        stale(world);
    ok("destroy", 0, tc_comm_destroy(world));
    printf("rank %d: %d checks, %d failures\n", rank, checks, failures);
    return failures == 0 ? 0 : 1;
}
