/* Multi-process test of windows (tc_win_*, docs/windows.md), run by run_win.sh under tcrun:
 *
 *   win_test [--quick] [--seed S] [--only PART | --skip PART] [--kill | --large | --abort]
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
 *   the iteration, checks every byte of the data (the signal never overtakes the data);
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
 * --kill: the last rank dies after the window is made; the others' puts to it end with
 * TC_ERR_PEER_FAILED naming it, within the timeout.
 *
 * Prints "rank R of N: C checks, F failures" and exits 0 only when F is 0. */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tcomms/tcomms.h"

#define TIMEOUT_MS 30000

static int rank, size;
static long checks, failures;

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        if (failures++ < 50) {                                                                     \
            fprintf(stderr, "rank %d: FAIL: ", rank);                                              \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
    } while (0)

/* A call that must succeed. */
#define OK(call)                                                                                   \
    do {                                                                                           \
        tc_status_t s_ = (call);                                                                   \
        checks++;                                                                                  \
        if (s_ != TC_OK)                                                                           \
            FAIL("%s:%d: %s: %s: %s", __FILE__, __LINE__, #call, tc_status_string(s_),             \
                 tc_last_error());                                                                 \
    } while (0)

/* A call that must fail with @p want and a message holding @p words. */
static void expect(tc_status_t got, tc_status_t want, const char *words, const char *what)
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

static uint64_t rng_state;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static unsigned char byte_of(uint64_t a, uint64_t b, uint64_t i)
{
    uint64_t x = a * 0x9E3779B97F4A7C15ull ^ b * 0xC2B2AE3D27D4EB4Full ^ i * 0x165667B19E3779F9ull;
    return (unsigned char)(x >> 29 ^ x >> 47);
}

static size_t win_bytes(int r)
{
    return 6000 + 333 * (size_t)r;
}

/* ---- random puts and gets against a model ---- */

static void test_model(tc_comm_t *comm, uint64_t seed, int rounds)
{
    unsigned char *mine = malloc(win_bytes(rank));
    unsigned char **model = calloc((size_t)size, sizeof(*model));
    for (int r = 0; r < size; r++) {
        model[r] = malloc(win_bytes(r));
        for (size_t i = 0; i < win_bytes(r); i++)
            model[r][i] = byte_of(r, 7, i);
    }
    memcpy(mine, model[rank], win_bytes(rank));
    tc_win_t *win = NULL;
    OK(tc_win_create(comm, mine, win_bytes(rank), NULL, &win));
    if (!win)
        return;
    for (int r = 0; r < size; r++) {
        size_t b = 0;
        OK(tc_win_size(win, r, &b));
        checks++;
        if (b != win_bytes(r))
            FAIL("tc_win_size of rank %d: %zu, want %zu", r, b, win_bytes(r));
    }
    enum { K = 6 };
    unsigned char *src = malloc((size_t)size * K * 1024);
    tc_op_opts_t aopts = TC_OP_OPTS_INIT;
    aopts.async = 1;
    aopts.timeout_ms = TIMEOUT_MS;
    for (int round = 0; round < rounds; round++) {
        rng_state = seed * 1000003 + (uint64_t)round + 1;
        /* every origin writes K disjoint pieces inside its own part of each target's window */
        tc_work_t *works[64];
        int nworks = 0;
        for (int o = 0; o < size; o++) {
            for (int k = 0; k < K; k++) {
                int t = (int)(rnd() % (uint64_t)size);
                size_t part = win_bytes(t) / (size_t)size, piece = part / K;
                size_t len = rnd() % (piece + 1);
                if (rnd() % 8 == 0)
                    len = 0;
                size_t off = (size_t)o * part + (size_t)k * piece + rnd() % (piece - len + 1);
                int async = (int)(rnd() % 2);
                unsigned char *s = src + ((size_t)o * K + k) * 1024;
                for (size_t i = 0; i < len; i++)
                    s[i] = byte_of((uint64_t)round * 64 + (uint64_t)o, (uint64_t)k, i);
                memcpy(model[t] + off, s, len);
                if (o != rank)
                    continue;
                if (async && nworks < 64)
                    OK(tc_win_put(win, len ? s : NULL, len, t, off, &aopts, &works[nworks++]));
                else
                    OK(tc_win_put(win, s, len, t, off, NULL, NULL));
            }
        }
        for (int i = 0; i < nworks; i++) {
            OK(tc_work_wait(works[i], TIMEOUT_MS));
            OK(tc_work_free(works[i]));
        }
        OK(tc_win_flush(win, TC_WIN_ALL_PEERS, TIMEOUT_MS));
        OK(tc_barrier(comm, NULL, NULL));
        /* my window is the model's, byte for byte */
        for (size_t i = 0; i < win_bytes(rank); i++) {
            checks++;
            if (mine[i] != model[rank][i]) {
                FAIL("round %d: my window [%zu] = %u, model %u", round, i, mine[i], model[rank][i]);
                break;
            }
        }
        /* gets of random ranges of every window, blocking and asynchronous */
        uint64_t g = seed * 7 + (uint64_t)round * 131 + (uint64_t)rank;
        for (int k = 0; k < 2 * size; k++) {
            rng_state = g * 31 + (uint64_t)k + 1;
            int t = k % size;
            size_t len = rnd() % (win_bytes(t) + 1), off = rnd() % (win_bytes(t) - len + 1);
            unsigned char *dst = malloc(len + 1);
            if (k % 2) {
                tc_work_t *w = NULL;
                OK(tc_win_get(win, dst, len, t, off, &aopts, &w));
                if (w) {
                    OK(tc_work_wait(w, TIMEOUT_MS));
                    OK(tc_work_free(w));
                }
            } else {
                OK(tc_win_get(win, dst, len, t, off, NULL, NULL));
            }
            for (size_t i = 0; i < len; i++) {
                checks++;
                if (dst[i] != model[t][off + i]) {
                    FAIL("round %d: get of %zu bytes at %zu of rank %d: [%zu] = %u, model %u",
                         round, len, off, t, i, dst[i], model[t][off + i]);
                    break;
                }
            }
            free(dst);
        }
        OK(tc_barrier(comm, NULL, NULL)); /* no put of the next round before every get */
    }
    /* out of range and misuse on a live window: nothing is written */
    int t = (rank + 1) % size;
    size_t tb = win_bytes(t);
    unsigned char x[16] = {0};
    expect(tc_win_put(win, x, 8, t, tb - 3, NULL, NULL), TC_ERR_INVALID_ARG, "beyond rank",
           "put past the end");
    char words[96];
    snprintf(words, sizeof(words), "8 bytes at offset %zu are beyond rank %d's window of %zu",
             tb - 3, t, tb);
    expect(tc_win_put(win, x, 8, t, tb - 3, NULL, NULL), TC_ERR_INVALID_ARG, words,
           "put past the end names offset, length and size");
    expect(tc_win_get(win, x, 1, t, UINT64_MAX, NULL, NULL), TC_ERR_INVALID_ARG, "beyond",
           "get at offset 2^64-1");
    expect(tc_win_put(win, x, SIZE_MAX, t, 1, NULL, NULL), TC_ERR_INVALID_ARG, "beyond",
           "put of SIZE_MAX bytes");
    expect(tc_win_put(win, x, 1, size, 0, NULL, NULL), TC_ERR_INVALID_ARG, "is not a rank",
           "put to rank size");
    expect(tc_win_get(win, x, 1, -1, 0, NULL, NULL), TC_ERR_INVALID_ARG, "peer -1",
           "get from rank -1");
    expect(tc_win_put(win, NULL, 4, t, 0, NULL, NULL), TC_ERR_INVALID_ARG, "NULL", "put from NULL");
    expect(tc_win_signal(win, t, TC_WIN_SIGNAL_SLOTS, 1, TC_WIN_SIGNAL_ADD, NULL, NULL),
           TC_ERR_INVALID_ARG, "slot 64", "signal to slot 64");
    expect(tc_win_put_signal(win, x, 1, t, 0, -1, 1, TC_WIN_SIGNAL_ADD, NULL, NULL),
           TC_ERR_INVALID_ARG, "slot -1", "put_signal to slot -1");
    expect(tc_win_signal(win, t, 0, 1, (tc_win_signal_op_t)7, NULL, NULL), TC_ERR_INVALID_ARG,
           "signal op 7", "signal op 7");
    expect(tc_win_wait_signal(win, 0, (tc_win_cmp_t)9, 0, 10, NULL), TC_ERR_INVALID_ARG,
           "comparison 9", "wait with comparison 9");
    expect(tc_win_put(NULL, x, 1, t, 0, NULL, NULL), TC_ERR_INVALID_ARG, "win is NULL",
           "put on a NULL window");
    expect(tc_win_put(win, NULL, 0, t, tb, NULL, NULL), TC_OK, NULL, "zero bytes at the end");
    uint64_t seen = 1;
    expect(tc_win_wait_signal(win, 63, TC_WIN_CMP_EQ, 12345, 50, &seen), TC_ERR_TIMEOUT,
           "slot 63 is 0", "a wait that times out");
    OK(tc_barrier(comm, NULL, NULL));
    for (size_t i = 0; i < win_bytes(rank); i++) {
        checks++;
        if (mine[i] != model[rank][i]) {
            FAIL("after the refused calls: my window [%zu] = %u, model %u", i, mine[i],
                 model[rank][i]);
            break;
        }
    }
    void *p = NULL;
    if (size > 1)
        expect(tc_win_shared_query(win, t, &p), TC_ERR_UNSUPPORTED, "not allocated",
               "shared_query of a created window");
    OK(tc_win_shared_query(win, rank, &p));
    checks++;
    if (p != mine)
        FAIL("shared_query of my own window: %p, want %p", p, (void *)mine);
    OK(tc_win_destroy(win));
    expect(tc_win_put(win, x, 1, t, 0, NULL, NULL), TC_ERR_INVALID_STATE, "was destroyed",
           "put on a destroyed window");
    free(src);
    for (int r = 0; r < size; r++)
        free(model[r]);
    free(model);
    free(mine);
}

/* ---- signal counts: everyone ADDs into one target at once ---- */

static void test_counts(tc_comm_t *comm, int iters, int allocate)
{
    tc_win_t *win = NULL;
    uint64_t *words = NULL; /* allocated: word r is rank r's last put_signal */
    if (allocate)
        OK(tc_win_allocate(comm, 8 * (size_t)size, NULL, (void **)&words, &win));
    else
        OK(tc_win_create(comm, NULL, 0, NULL, &win));
    if (!win)
        return;
    tc_op_opts_t aopts = TC_OP_OPTS_INIT;
    aopts.async = 1;
    for (int round = 0; round < size && round < 8; round++) {
        int target = round, slot = 1 + round;
        tc_work_t *works[16];
        int nw = 0;
        for (int i = 0; i < iters; i++) {
            if (i % 4 == 0 && nw < 16)
                OK(tc_win_signal(win, target, slot, (uint64_t)rank + 1, TC_WIN_SIGNAL_ADD, &aopts,
                                 &works[nw++]));
            else if (i % 4 == 2) /* fire-and-forget: the flush below completes it */
                OK(tc_win_signal(win, target, slot, (uint64_t)rank + 1, TC_WIN_SIGNAL_ADD, &aopts,
                                 NULL));
            else if (allocate && i % 4 == 1) {
                uint64_t word = (uint64_t)round << 32 | (uint64_t)i;
                OK(tc_win_put_signal(win, &word, 8, target, 8 * (uint64_t)rank, slot,
                                     (uint64_t)rank + 1, TC_WIN_SIGNAL_ADD, NULL, NULL));
            } else
                OK(tc_win_signal(win, target, slot, (uint64_t)rank + 1, TC_WIN_SIGNAL_ADD, NULL,
                                 NULL));
        }
        for (int i = 0; i < nw; i++) {
            OK(tc_work_wait(works[i], TIMEOUT_MS));
            OK(tc_work_free(works[i]));
        }
        OK(tc_win_flush(win, target, TIMEOUT_MS));
        if (rank == target) {
            uint64_t want = (uint64_t)iters * (uint64_t)size * (uint64_t)(size + 1) / 2, seen = 0;
            OK(tc_win_wait_signal(win, slot, TC_WIN_CMP_GE, want, TIMEOUT_MS, &seen));
            checks++;
            if (seen != want)
                FAIL("counts: slot %d is %llu, want %llu", slot, (unsigned long long)seen,
                     (unsigned long long)want);
            /* every rank's last put_signal (i = the last i % 4 == 1) is in, seen by the slot */
            int last = iters - 1 - (iters - 1 + 3) % 4;
            for (int r = 0; allocate && last >= 0 && r < size; r++) {
                checks++;
                uint64_t got = __atomic_load_n(&words[r], __ATOMIC_RELAXED);
                if (got != ((uint64_t)round << 32 | (uint64_t)last))
                    FAIL("counts: rank %d's word is %#llx after the signals, want %#llx", r,
                         (unsigned long long)got,
                         (unsigned long long)((uint64_t)round << 32 | (uint64_t)last));
            }
        }
        OK(tc_barrier(comm, NULL, NULL));
        if (rank == target) { /* nothing more arrived after the barrier */
            uint64_t v = 0;
            OK(tc_win_read_signal(win, slot, &v));
            checks++;
            if (v != (uint64_t)iters * (uint64_t)size * (uint64_t)(size + 1) / 2)
                FAIL("counts: slot %d is %llu after the barrier", slot, (unsigned long long)v);
        }
    }
    /* SET, and a signal to oneself */
    OK(tc_win_signal(win, rank, 40, 77, TC_WIN_SIGNAL_SET, NULL, NULL));
    uint64_t v = 0;
    OK(tc_win_wait_signal(win, 40, TC_WIN_CMP_EQ, 77, TIMEOUT_MS, &v));
    OK(tc_win_destroy(win));
}

/* ---- put_signal: the signal never overtakes the data ---- */

static void test_order(tc_comm_t *comm, int iters, size_t max_bytes)
{
    void *base = NULL;
    tc_win_t *win = NULL;
    OK(tc_win_allocate(comm, max_bytes, NULL, &base, &win));
    if (!win)
        return;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    unsigned char *src = malloc(max_bytes);
    const size_t sizes[] = {1, 8, 4093, 65539, max_bytes / 3, max_bytes};
    tc_op_opts_t aopts = TC_OP_OPTS_INIT;
    aopts.async = 1;
    for (int it = 0; it < iters; it++) {
        size_t len = sizes[it % 6];
        for (size_t i = 0; i < len; i++)
            src[i] = byte_of((uint64_t)it, (uint64_t)rank, i);
        /* the target has checked the previous iteration: its ack is in my slot 2 */
        uint64_t seen;
        OK(tc_win_wait_signal(win, 2, TC_WIN_CMP_GE, (uint64_t)it, TIMEOUT_MS, &seen));
        if (it % 2) {
            tc_work_t *w = NULL;
            OK(tc_win_put_signal(win, src, len, next, 0, 1, (uint64_t)it + 1, TC_WIN_SIGNAL_SET,
                                 &aopts, &w));
            if (w) {
                OK(tc_work_wait(w, TIMEOUT_MS));
                OK(tc_work_free(w));
            }
        } else {
            OK(tc_win_put_signal(win, src, len, next, 0, 1, 1, TC_WIN_SIGNAL_ADD, NULL, NULL));
        }
        /* from prev: wait for iteration it, check every byte at once */
        OK(tc_win_wait_signal(win, 1, TC_WIN_CMP_GE, (uint64_t)it + 1, TIMEOUT_MS, &seen));
        const unsigned char *d = base;
        for (size_t i = 0; i < len; i++) {
            checks++;
            if (d[i] != byte_of((uint64_t)it, (uint64_t)prev, i)) {
                FAIL("order: iteration %d, %zu bytes from rank %d: [%zu] = %u, want %u (the "
                     "signal came before the data)",
                     it, len, prev, i, d[i], byte_of((uint64_t)it, (uint64_t)prev, i));
                break;
            }
        }
        OK(tc_win_signal(win, prev, 2, (uint64_t)it + 1, TC_WIN_SIGNAL_SET, NULL, NULL));
    }
    OK(tc_win_flush(win, next, TIMEOUT_MS));
    OK(tc_win_flush(win, prev, TIMEOUT_MS));
    free(src);
    OK(tc_win_destroy(win));
}

/* ---- windows on a split communicator; allocate and shared_query ---- */

static void test_split_shared(tc_comm_t *world)
{
    tc_comm_t *sub = NULL;
    OK(tc_comm_split(world, rank % 2, size - rank, NULL, &sub)); /* reversed order */
    if (!sub)
        return;
    int sr = -1, ss = 0;
    OK(tc_comm_rank(sub, &sr));
    OK(tc_comm_size(sub, &ss));
    void *base = NULL;
    tc_win_t *win = NULL;
    OK(tc_win_allocate(sub, 8 * (size_t)ss + 8, NULL, &base, &win));
    if (!win) {
        tc_comm_destroy(sub);
        return;
    }
    uint64_t *mem = base;
    mem[ss] = 1000 + (uint64_t)rank; /* my own word, for the others' loads */
    uint64_t me = (uint64_t)rank * 1000 + 1;
    OK(tc_win_put(win, &me, 8, (sr + 1) % ss, 8 * (uint64_t)sr, NULL, NULL));
    OK(tc_win_put_signal(win, NULL, 0, (sr + 1) % ss, 0, 0, 1, TC_WIN_SIGNAL_ADD, NULL, NULL));
    uint64_t seen = 0;
    OK(tc_win_wait_signal(win, 0, TC_WIN_CMP_EQ, 1, TIMEOUT_MS, &seen));
    int from = (sr + ss - 1) % ss; /* sub rank from (reversed): world rank */
    int from_world = ss == 1 ? rank : -1;
    for (int w = 0; w < size; w++) /* sub rank r is world rank of parity, descending */
        if (w % 2 == rank % 2) {
            int pos = 0;
            for (int v = size - 1; v > w; v--)
                pos += v % 2 == rank % 2;
            if (pos == from)
                from_world = w;
        }
    checks++;
    if (mem[from] != (uint64_t)from_world * 1000 + 1)
        FAIL("split: word %d is %llu, want %llu (sub rank %d is world rank %d)", from,
             (unsigned long long)mem[from], (unsigned long long)from_world * 1000 + 1, from,
             from_world);
    OK(tc_barrier(sub, NULL, NULL));
    /* every same-node rank's memory by load; tcrun runs every rank on this node */
    for (int p = 0; p < ss; p++) {
        void *ptr = NULL;
        tc_status_t st = tc_win_shared_query(win, p, &ptr);
        checks++;
        if (st != TC_OK) {
            FAIL("shared_query of sub rank %d: %s: %s", p, tc_status_string(st), tc_last_error());
            continue;
        }
        uint64_t got = ((volatile uint64_t *)ptr)[ss], want = 0;
        OK(tc_win_get(win, &want, 8, p, 8 * (uint64_t)ss, NULL, NULL));
        checks++;
        if (got != want || got < 1000)
            FAIL("shared_query of sub rank %d: loaded %llu, get says %llu", p,
                 (unsigned long long)got, (unsigned long long)want);
    }
    expect(tc_win_shared_query(win, ss, &base), TC_ERR_INVALID_ARG, "is not a rank",
           "shared_query out of range");
    OK(tc_barrier(sub, NULL, NULL));
    OK(tc_win_destroy(win));
    /* a window whose communicator is destroyed first */
    OK(tc_win_create(sub, NULL, 0, NULL, &win));
    OK(tc_comm_destroy(sub));
    uint64_t x = 0;
    expect(tc_win_put(win, &x, 0, 0, 0, NULL, NULL), TC_ERR_INVALID_STATE,
           "communicator was destroyed", "put after tc_comm_destroy");
    expect(tc_win_wait_signal(win, 0, TC_WIN_CMP_EQ, 0, 10, NULL), TC_ERR_INVALID_STATE,
           "communicator was destroyed", "wait_signal after tc_comm_destroy");
    OK(tc_win_destroy(win));
}

/* ---- the target calls nothing that progresses: the data lands by the progress thread ---- */

static void test_passive(tc_comm_t *comm)
{
    size_t bytes = (size_t)1 << 20;
    unsigned char *mem = calloc(1, bytes), *src = malloc(bytes);
    tc_win_t *win = NULL;
    OK(tc_win_create(comm, mem, bytes, NULL, &win));
    if (!win)
        return;
    OK(tc_barrier(comm, NULL, NULL));
    if (rank == 0) {
        for (int t = 1; t < size; t++) {
            for (size_t i = 0; i < bytes; i++)
                src[i] = byte_of(99, (uint64_t)t, i);
            OK(tc_win_put_signal(win, src, bytes, t, 0, 5, 1, TC_WIN_SIGNAL_SET, NULL, NULL));
        }
    } else {
        /* only tc_win_read_signal (an atomic load, no progress) until the signal is there */
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        uint64_t v = 0;
        for (;;) {
            OK(tc_win_read_signal(win, 5, &v));
            clock_gettime(CLOCK_MONOTONIC, &t1);
            if (v == 1 || t1.tv_sec - t0.tv_sec > 20)
                break;
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        checks++;
        if (v != 1)
            FAIL("passive target: slot 5 is %llu after 20 s without a progressing call",
                 (unsigned long long)v);
        for (size_t i = 0; v == 1 && i < bytes; i++) {
            checks++;
            if (mem[i] != byte_of(99, (uint64_t)rank, i)) {
                FAIL("passive target: byte %zu is %u after the signal", i, mem[i]);
                break;
            }
        }
    }
    OK(tc_barrier(comm, NULL, NULL));
    OK(tc_win_destroy(win));
    free(mem);
    free(src);
}

/* ---- a revoke ends a wait for a signal that will never come ---- */

static void *revoke_later(void *arg)
{
    struct timespec ts = {0, 200000000};
    nanosleep(&ts, NULL);
    /* from any thread at any time; TC_ERR_UNSUPPORTED: revoked here only (mpirun) */
    tc_status_t st = tc_comm_revoke((tc_comm_t *)arg);
    return (void *)(intptr_t)(st == TC_OK || st == TC_ERR_UNSUPPORTED);
}

static void test_revoke(tc_comm_t *world)
{
    tc_comm_t *comm = NULL;
    OK(tc_comm_dup(world, NULL, &comm));
    tc_win_t *win = NULL;
    if (comm)
        OK(tc_win_create(comm, NULL, 0, NULL, &win));
    if (!win)
        return;
    pthread_t th;
    checks++;
    if (pthread_create(&th, NULL, revoke_later, comm) != 0) {
        FAIL("pthread_create");
        return;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t seen = 0;
    tc_status_t st = tc_win_wait_signal(win, 0, TC_WIN_CMP_GE, 1, 20000, &seen);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    void *ok = NULL;
    pthread_join(th, &ok);
    checks++;
    if (!ok)
        FAIL("tc_comm_revoke from another thread failed: %s", tc_last_error());
    expect(st, TC_ERR_REVOKED, "revoked", "wait_signal on a revoked communicator");
    checks++;
    if (ms > 10000)
        FAIL("wait_signal took %.0f ms to see the revoke", ms);
    expect(tc_win_put(win, NULL, 0, 0, 0, NULL, NULL), TC_ERR_REVOKED, "revoked",
           "put on a revoked communicator");
    tc_win_destroy(win); /* no barrier on a revoked communicator: frees locally */
    OK(tc_comm_destroy(comm));
}

/* ---- the flight recorder lists the window's operations ---- */

static void test_fr(tc_comm_t *comm)
{
    char dir[] = "/tmp/win_test_fr.XXXXXX";
    if (!mkdtemp(dir)) {
        FAIL("mkdtemp: cannot make a directory for the flight recorder");
        return;
    }
    setenv("TC_FR_DIR", dir, 1);
    tc_win_t *win = NULL;
    uint64_t word = 5;
    OK(tc_win_create(comm, &word, 8, NULL, &win));
    if (!win)
        return;
    OK(tc_win_put_signal(win, &word, 8, rank, 0, 3, 1, TC_WIN_SIGNAL_ADD, NULL, NULL));
    OK(tc_comm_dump_fr(comm));
    OK(tc_barrier(comm, NULL, NULL));
    OK(tc_win_destroy(win));
    unsetenv("TC_FR_DIR");
    char path[512], buf[65536];
    DIR *d = opendir(dir);
    struct dirent *e;
    int found = 0;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
        buf[n] = '\0';
        if (f)
            fclose(f);
        found |= strstr(buf, "\"win_put_signal\"") != NULL;
        unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
    checks++;
    if (!found)
        FAIL("the flight recorder's dump in %s has no win_put_signal", dir);
}

/* ---- a window over 1 GiB: 64-bit offsets, pieces across the 1 GiB mark and at the end ---- */

static void test_large(tc_comm_t *comm)
{
    size_t bytes = ((size_t)1 << 30) + ((size_t)2 << 20) + 5; /* sparse: touched pages only */
    void *base = NULL;
    tc_win_t *win = NULL;
    OK(tc_win_allocate(comm, bytes, NULL, &base, &win));
    if (!win)
        return;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    size_t n1 = ((size_t)1 << 20) + 7, off1 = ((size_t)1 << 30) - 300001, n2 = 64,
           off2 = bytes - n2;
    unsigned char *src = malloc(n1), *back = malloc(n1);
    for (size_t i = 0; i < n1; i++)
        src[i] = byte_of(5, (uint64_t)rank, i);
    OK(tc_win_put(win, src, n1, next, off1, NULL, NULL));
    OK(tc_win_put_signal(win, src, n2, next, off2, 0, 1, TC_WIN_SIGNAL_ADD, NULL, NULL));
    char words[96];
    snprintf(words, sizeof(words), "1 bytes at offset %zu are beyond rank %d's window of %zu",
             bytes, next, bytes);
    expect(tc_win_put(win, src, 1, next, bytes, NULL, NULL), TC_ERR_INVALID_ARG, words,
           "put one byte past a window of 1 GiB");
    uint64_t seen;
    OK(tc_win_wait_signal(win, 0, TC_WIN_CMP_EQ, 1, TIMEOUT_MS, &seen));
    const unsigned char *mem = base;
    for (size_t i = 0; i < n1; i++) {
        checks++;
        if (mem[off1 + i] != byte_of(5, (uint64_t)prev, i)) {
            FAIL("large: byte %zu of the piece at %zu is %u", i, off1, mem[off1 + i]);
            break;
        }
    }
    for (size_t i = 0; i < n2; i++) {
        checks++;
        if (mem[off2 + i] != byte_of(5, (uint64_t)prev, i)) {
            FAIL("large: byte %zu of the piece at the end is %u", i, mem[off2 + i]);
            break;
        }
    }
    checks++;
    if (mem[off1 - 1] != 0 || mem[off1 + n1] != 0 || mem[off2 - 1] != 0)
        FAIL("large: bytes around the pieces were written");
    OK(tc_barrier(comm, NULL, NULL));
    OK(tc_win_get(win, back, n1, next, off1, NULL, NULL));
    checks++;
    if (memcmp(back, src, n1) != 0)
        FAIL("large: the get of my piece from rank %d differs", next);
    OK(tc_barrier(comm, NULL, NULL));
    OK(tc_win_destroy(win));
    free(src);
    free(back);
}

/* ---- abort ends a put that cannot complete: its TCP target is stopped (SIGSTOP) ---- */

static void test_abort(tc_comm_t *comm)
{
    size_t bytes = (size_t)64 << 20; /* far more than the sockets' buffers */
    unsigned char *mem = calloc(1, bytes);
    tc_win_t *win = NULL;
    OK(tc_win_create(comm, mem, bytes, NULL, &win));
    int pids[2] = {0, 0}, me = (int)getpid();
    OK(tc_all_gather(comm, &me, pids, 1, TC_INT32, NULL, NULL));
    if (!win || size != 2) {
        FAIL("--abort runs at 2 ranks with a window");
        return;
    }
    if (rank == 1) {
        raise(SIGSTOP);      /* rank 0 continues it once its put was aborted */
        tc_win_destroy(win); /* its communicator may know rank 0 closed the connection */
        tc_comm_abort(comm);
        free(mem);
        return;
    }
    /* wait until rank 1 is stopped */
    char path[64], st_buf[256];
    snprintf(path, sizeof(path), "/proc/%d/stat", pids[1]);
    int stopped = 0;
    for (int i = 0; i < 500 && !stopped; i++) {
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(st_buf, 1, sizeof(st_buf) - 1, f) : 0;
        if (f)
            fclose(f);
        st_buf[n] = '\0';
        const char *paren = strrchr(st_buf, ')');
        stopped = paren && paren[1] == ' ' && paren[2] == 'T';
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    checks++;
    if (!stopped) {
        FAIL("rank 1 (pid %d) did not stop", pids[1]);
        kill(pids[1], SIGCONT);
        return;
    }
    tc_op_opts_t aopts = TC_OP_OPTS_INIT;
    aopts.async = 1;
    tc_work_t *w = NULL;
    unsigned char *src = malloc(bytes);
    memset(src, 0x5a, bytes);
    OK(tc_win_put(win, src, bytes, 1, 0, &aopts, &w));
    struct timespec ts = {0, 200000000};
    nanosleep(&ts, NULL);
    int done = 1;
    tc_status_t st = w ? tc_work_test(w, &done) : TC_OK;
    checks++;
    if (done)
        FAIL("a put of 64 MiB to a stopped rank completed (%s): the test proves nothing",
             tc_status_string(st));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    OK(tc_comm_abort(comm));
    if (w) {
        expect(tc_work_wait(w, 5000), TC_ERR_ABORTED, "aborted", "the pending put after abort");
        tc_work_free(w);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    checks++;
    if (ms > 2000)
        FAIL("the aborted put ended %.0f ms after tc_comm_abort", ms);
    printf("rank 0: the put pending on a stopped rank ended %.1f ms after abort: %s\n", ms,
           tc_last_error());
    expect(tc_win_put(win, src, 8, 1, 0, NULL, NULL), TC_ERR_ABORTED, "aborted", "put after abort");
    kill(pids[1], SIGCONT);
    tc_win_destroy(win);
    free(src);
    free(mem);
}

/* ---- a target dies ---- */

static void test_kill(tc_comm_t *comm)
{
    int victim = size - 1;
    uint64_t buf[512] = {0};
    tc_win_t *win = NULL;
    OK(tc_win_create(comm, buf, sizeof(buf), NULL, &win));
    if (!win)
        return;
    OK(tc_barrier(comm, NULL, NULL));
    if (rank == victim)
        raise(SIGKILL);
    tc_op_opts_t opts = TC_OP_OPTS_INIT;
    opts.timeout_ms = 20000;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tc_status_t st = TC_OK;
    for (int i = 0; i < 100000 && st == TC_OK; i++) {
        st = tc_win_put(win, buf, sizeof(buf), victim, 0, &opts, NULL);
        if (st == TC_OK && i % 16 == 0)
            st = tc_win_signal(win, victim, 0, 1, TC_WIN_SIGNAL_ADD, &opts, NULL);
        if (st == TC_OK) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    char words[32];
    snprintf(words, sizeof(words), "rank %d", victim);
    expect(st, TC_ERR_PEER_FAILED, words, "put to a killed target");
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    printf("rank %d: put to the killed rank %d failed after %.0f ms: %s\n", rank, victim, ms,
           tc_last_error());
    /* the communicator is broken now: the window says so, and is freed all the same */
    expect(tc_win_signal(win, 0, 0, 1, TC_WIN_SIGNAL_ADD, NULL, NULL), TC_ERR_PEER_FAILED, words,
           "signal after the failure");
    st = tc_win_destroy(win);
    checks++;
    if (st != TC_OK && st != TC_ERR_PEER_FAILED)
        FAIL("destroy after the failure: %s: %s", tc_status_string(st), tc_last_error());
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
    int quick = 0, kill = 0, large = 0, abort_mode = 0;
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
    } else if (abort_mode) {
        test_abort(world);
    } else {
        if (want(only, "model"))
            test_model(world, seed, quick ? 3 : 8);
        if (want(only, "counts"))
            test_counts(world, quick ? 20 : 100, 0), test_counts(world, quick ? 20 : 100, 1);
        if (want(only, "order"))
            test_order(world, quick ? 12 : 40, quick ? (size_t)1 << 20 : (size_t)6 << 20);
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
