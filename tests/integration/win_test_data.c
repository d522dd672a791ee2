/* The data parts of win_test: random puts and gets against a model, signal counts,
 * put_signal ordering, split communicators and shared memory, a window over 1 GiB. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "win_test.h"

/* ---- random puts and gets against a model ---- */

void test_model(tc_comm_t *comm, uint64_t seed, int rounds)
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

void test_counts(tc_comm_t *comm, int iters, int allocate)
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

void test_order(tc_comm_t *comm, int iters, size_t max_bytes)
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

/* Two windows: nothing orders one window's signal after another's puts, but a flush of the
 * other window does (win.h, "Completion and ordering"). Fire-and-forget puts into the next
 * rank's created window, a flush of it, then a signal on an allocated window (the direct path
 * on one node): the target, once it sees the signal, checks every byte. */
void test_cross(tc_comm_t *comm, int iters, size_t bytes)
{
    void *base = NULL;
    unsigned char *data = calloc(bytes, 1), *src = malloc(bytes);
    tc_win_t *sig = NULL, *win = NULL;
    OK(tc_win_allocate(comm, 64, NULL, &base, &sig));
    OK(tc_win_create(comm, data, bytes, NULL, &win));
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    tc_op_opts_t ff = TC_OP_OPTS_INIT;
    ff.async = 1;
    for (int it = 0; sig && win && it < iters; it++) {
        uint64_t seen;
        OK(tc_win_wait_signal(sig, 2, TC_WIN_CMP_GE, (uint64_t)it, TIMEOUT_MS, &seen));
        for (size_t i = 0; i < bytes; i++)
            src[i] = byte_of((uint64_t)it + 1000, (uint64_t)rank, i);
        OK(tc_win_put(win, src, bytes / 2, next, 0, &ff, NULL));
        OK(tc_win_put(win, src + bytes / 2, bytes - bytes / 2, next, bytes / 2, &ff, NULL));
        OK(tc_win_flush(win, next, TIMEOUT_MS));
        OK(tc_win_signal(sig, next, 1, 1, TC_WIN_SIGNAL_ADD, NULL, NULL));
        OK(tc_win_wait_signal(sig, 1, TC_WIN_CMP_GE, (uint64_t)it + 1, TIMEOUT_MS, &seen));
        for (size_t i = 0; i < bytes; i++) {
            checks++;
            if (data[i] != byte_of((uint64_t)it + 1000, (uint64_t)prev, i)) {
                FAIL("cross: iteration %d from rank %d: [%zu] = %u, want %u (flushed, then "
                     "signalled on another window)",
                     it, prev, i, data[i], byte_of((uint64_t)it + 1000, (uint64_t)prev, i));
                break;
            }
        }
        OK(tc_win_signal(sig, prev, 2, (uint64_t)it + 1, TC_WIN_SIGNAL_SET, NULL, NULL));
    }
    if (win)
        OK(tc_win_destroy(win));
    if (sig)
        OK(tc_win_destroy(sig));
    free(src);
    free(data);
}

/* ---- windows on a split communicator; allocate and shared_query ---- */

void test_split_shared(tc_comm_t *world)
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

/* ---- a window over 1 GiB: 64-bit offsets, pieces across the 1 GiB mark and at the end ---- */

void test_large(tc_comm_t *comm)
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
