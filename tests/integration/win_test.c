/* Multi-process test of windows (tc_win_*, docs/windows.md), run by run_win.sh under tcrun:
 *
 *   win_test [--quick] [--seed S] [--only PART | --skip PART]
 *            [--kill | --large | --abort | --timeout]
 *
 * PART: model, counts, order, split, fr, passive, revoke (the parts below, in that order).
 *
 * - model: random puts (blocking and asynchronous, zero bytes too) into every rank's window,
 *   whose sizes differ per rank, then random gets; every rank keeps a model of every window,
 *   computed alike from the shared seed, and checks its own window and every get element by
 *   element;
 * - counts: every rank ADD-signals one target many times at once; the target's slot equals the
 *   sum exactly; in a created window (through the transports) and in an allocated one (on one
 *   node the direct path: atomics on the mapped slots, put_signal among them; with TC_SHM=0
 *   this rank's own direct signals beside tcp's);
 * - order: put_signal around a ring, sizes up to several MiB: the target, once its slot shows
 *   the iteration, checks every byte of the data (the signal never overtakes the data); then
 *   fire-and-forget puts into a created window, its flush, and a signal on an allocated one;
 * - misuse: peers, offsets, lengths, slots, comparisons, NULLs, a wait that times out, a stale
 *   handle, a window of a destroyed communicator: each status and the words of its message;
 * - split: a window on a split communicator in reversed order, peers by its ranks;
 * - shared: tc_win_allocate and tc_win_shared_query (loads through the pointer of every
 *   same-node rank), and UNSUPPORTED for a created window;
 * - the flight recorder lists the window's operations.
 * --large: windows of 1 GiB + 2 MiB + 5 (sparse shared memory): pieces across the 1 GiB mark
 * and at the very end, one byte past it refused.
 * --abort (2 ranks, TC_SHM=0): rank 1 stops itself (SIGSTOP); rank 0's 64 MiB put to it stays
 * pending until tc_comm_abort ends it with TC_ERR_ABORTED, promptly; then rank 1 continues.
 * --timeout (2 ranks, TC_SHM=0): the same stopped rank; rank 0's fire-and-forget 64 MiB put with
 * a 300 ms timeout ends with TC_ERR_TIMEOUT, which tc_win_flush reports within 5 s.
 * --kill: the last rank dies after the window is made; the others' puts to it end with
 * TC_ERR_PEER_FAILED naming it, within the timeout.
 *
 * Prints "rank R of N: C checks, F failures" and exits 0 only when F is 0. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "win_test.h"

int rank, size;
long checks, failures;

/* A call that must fail with @p want and a message holding @p words. */
void expect(tc_status_t got, tc_status_t want, const char *words, const char *what)
{
    checks++;
    if (got != want) {
        FAIL("%s: got %s (%s), want %s", what, tc_status_string(got), tc_last_error(),
             tc_status_string(want));
        return;
    }
    if (words && !strstr(tc_last_error(), words))
        FAIL("%s: message \"%s\" does not say \"%s\"", what, tc_last_error(), words);
}

uint64_t rng_state;
uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

unsigned char byte_of(uint64_t a, uint64_t b, uint64_t i)
{
    uint64_t x = a * 0x9E3779B97F4A7C15ull ^ b * 0xC2B2AE3D27D4EB4Full ^ i * 0x165667B19E3779F9ull;
    return (unsigned char)(x >> 29 ^ x >> 47);
}

size_t win_bytes(int r)
{
    return 6000 + 333 * (size_t)r;
}

/* --only NAME: that part only; --skip NAME: all but that part */
static const char *skip;
static int want(const char *only, const char *name)
{
    return (!only || strcmp(only, name) == 0) && !(skip && strcmp(skip, name) == 0);
}

int main(int argc, char **argv)
{
    const char *only = NULL;
    int quick = 0, kill = 0, large = 0, abort_mode = 0, timeout_mode = 0;
    uint64_t seed = 12345;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--kill"))
            kill = 1;
        else if (!strcmp(argv[i], "--large"))
            large = 1;
        else if (!strcmp(argv[i], "--abort"))
            abort_mode = 1;
        else if (!strcmp(argv[i], "--timeout"))
            timeout_mode = 1;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "--skip") && i + 1 < argc)
            skip = argv[++i];
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
    }
    tc_comm_opts_t copts = TC_COMM_OPTS_INIT;
    copts.timeout_ms = TIMEOUT_MS;
    tc_comm_t *world = NULL;
    if (tc_comm_create(&copts, &world) != TC_OK) {
        fprintf(stderr, "win_test: tc_comm_create: %s\n", tc_last_error());
        return 2;
    }
    OK(tc_comm_rank(world, &rank));
    OK(tc_comm_size(world, &size));
    if (kill) {
        test_kill(world);
    } else if (large) {
        test_large(world);
    } else if (abort_mode || timeout_mode) {
        test_abort(world, timeout_mode);
    } else {
        if (want(only, "model"))
            test_model(world, seed, quick ? 3 : 8);
        if (want(only, "counts"))
            test_counts(world, quick ? 20 : 100, 0), test_counts(world, quick ? 20 : 100, 1);
        if (want(only, "order"))
            test_order(world, quick ? 12 : 40, quick ? (size_t)1 << 20 : (size_t)6 << 20),
                test_cross(world, quick ? 10 : 40, (size_t)256 << 10);
        if (want(only, "split"))
            test_split_shared(world);
        if (want(only, "fr"))
            test_fr(world);
        if (want(only, "passive"))
            test_passive(world);
        if (want(only, "revoke"))
            test_revoke(world);

        OK(tc_barrier(world, NULL, NULL));
        tc_comm_info_t info;
        memset(&info, 0, sizeof(info));
        OK(tc_comm_info(world, &info));
        printf("rank %d: peers over shm %d, tcp %d, self %d\n", rank, info.peers_shm,
               info.peers_tcp, info.peers_self);
    }
    OK(tc_comm_destroy(world));
    printf("rank %d of %d: %ld checks, %ld failures\n", rank, size, checks, failures);
    return failures ? 1 : 0;
}
