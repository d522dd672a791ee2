/* The pool of fire-and-forget operation records of a window (runtime/src/win_pool.c), end to end
 * over TCP: ranks are threads of this process, each with its own world from
 * tc_rt_comm_create over an in-memory store, TC_SHM=0 (so no direct path) and TC_WIN_POOL=2.
 * - "burst": rank 0 puts 48 pieces per round into ranks 1 and 2 (more in flight than the pool
 *   holds: records are allocated beyond it, counted), flushes rank 1 while rank 2's records are
 *   outstanding, then every rank; each target compares its whole window with a model after each
 *   flush, and rank 0 gets 48 random ranges back and compares them; the pool is empty after
 *   every full flush, never held more than its size, and an operation refused at the origin
 *   takes no record;
 * - "batch": rank 0 issues a burst of 8-byte puts, then one of put_signals, to rank 1, each 8
 *   more than the pool's records hold: a record carries BATCH requests of operations of one
 *   kind to one peer (a put_signal takes two), so at most 8 of each burst take a record of
 *   their own (one each; without batches nearly all of them did); rank 1 compares every word
 *   and the signal count after each round;
 * - "failure": rank 1 destroys its communicator; rank 0's puts to it end with
 *   TC_ERR_PEER_FAILED naming rank 1, every record comes back to the pool, and later calls take
 *   none.
 * Waits between threads are the library's (bounded by the communicators' timeout). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "mem_store.h"
#include "tcomms/runtime/comm.h"
#include "tcomms/runtime/win.h"

#define RANKS_MAX 3
#define POOL 2
#define WIN_BYTES ((size_t)1 << 20)
#define NOPS 48
#define SLOT_BYTES (WIN_BYTES / 64) /* each put of a round in its own slot: no overlap */
#define ROUNDS 4
#define TIMEOUT_MS 30000

typedef struct rank rank_t;
typedef int (*rank_fn)(rank_t *r);

typedef struct {
    mem_store_t *store;
    const char *name;
    int size;
    rank_fn fn;
} job_t;

struct rank {
    job_t *job;
    int rank;
    tc_rt_comm_t *comm;
    char error[768];
};

static int fail_at(rank_t *r, int line, const char *fmt, ...)
{
    if (r->error[0])
        return -1;
    int n = snprintf(r->error, sizeof(r->error), "rank %d, line %d: ", r->rank, line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->error + n, sizeof(r->error) - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

#define CHECK(r, cond, ...)                                                                        \
    do {                                                                                           \
        if (!(cond))                                                                               \
            return fail_at((r), __LINE__, __VA_ARGS__);                                            \
    } while (0)
#define OK(r, call)                                                                                \
    do {                                                                                           \
        tc_status_t st_ = (call);                                                                  \
        CHECK(r, st_ == TC_OK, "%s: %s: %s", #call, tc_status_string(st_), tc_last_error());       \
    } while (0)

static uint64_t mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The k-th put of round @p round: its target, offset and length (every rank computes it). */
typedef struct {
    int peer;
    uint64_t off;
    size_t len;
} piece_t;

static piece_t piece(int round, int k)
{
    uint64_t s = (uint64_t)round * 1000003u + (uint64_t)k;
    piece_t p = {1 + k % 2, 0, 0};
    p.off = (uint64_t)k * SLOT_BYTES + mix(&s) % (SLOT_BYTES / 2);
    p.len = 1 + (size_t)(mix(&s) % (SLOT_BYTES / 2));
    return p;
}

static unsigned char byte_of(int round, int k, size_t i)
{
    return (unsigned char)(round * 131 + k * 17 + (int)(i * 7) + (int)(i >> 9) + 1);
}

/* What @p peer's window holds after rounds 0..@p round. */
static void model(unsigned char *m, int peer, int round)
{
    memset(m, 0, WIN_BYTES);
    for (int r = 0; r <= round; r++)
        for (int k = 0; k < NOPS; k++) {
            piece_t p = piece(r, k);
            if (p.peer == peer)
                for (size_t i = 0; i < p.len; i++)
                    m[p.off + i] = byte_of(r, k, i);
        }
}

static tc_status_t ff(tc_rt_win_t *win, int kind, void *buf, size_t len, int peer, uint64_t off)
{
    tc_rt_win_op_t op = {.kind = kind, .buf = buf, .bytes = len, .peer = peer, .offset = off};
    return tc_rt_win_issue(win, &op, TC_RT_ASYNC, NULL);
}

static tc_status_t signal_add(tc_rt_win_t *win, int peer, int slot)
{
    tc_rt_win_op_t op = {.kind = TC_RT_WIN_SIGNAL, .peer = peer, .slot = slot, .value = 1};
    return tc_rt_win_issue(win, &op, 0, NULL);
}

static int compare(rank_t *r, const char *what, const unsigned char *got, const unsigned char *want,
                   size_t n)
{
    for (size_t i = 0; i < n; i++)
        CHECK(r, got[i] == want[i], "%s: byte %zu is %u, the model says %u", what, i, got[i],
              want[i]);
    return 0;
}

static int pool_is(rank_t *r, tc_rt_win_t *win, int line, int used)
{
    tc_rt_win_pool_info_t info;
    OK(r, tc_rt_win_pool_query(win, &info));
    if (info.cap != POOL || info.used_max > POOL || (used >= 0 && info.used != used))
        return fail_at(r, line, "pool: cap %d used %d (want %d) used_max %d", info.cap, info.used,
                       used, info.used_max);
    return 0;
}

/* Rank 0: the rounds of puts and gets, then a refused operation. */
static int burst_origin(rank_t *r, tc_rt_win_t *win, unsigned char *src, unsigned char *dst,
                        unsigned char *m)
{
    for (int round = 0; round < ROUNDS; round++) {
        for (int k = 0; k < NOPS; k++) {
            piece_t p = piece(round, k);
            for (size_t i = 0; i < p.len; i++)
                src[(size_t)k * SLOT_BYTES + i] = byte_of(round, k, i);
            OK(r, ff(win, TC_RT_WIN_PUT, src + (size_t)k * SLOT_BYTES, p.len, p.peer, p.off));
            if (pool_is(r, win, __LINE__, -1))
                return -1;
        }
        /* rank 2's records may still be outstanding: only rank 1's must be done */
        OK(r, tc_rt_win_flush(win, 1, TIMEOUT_MS));
        OK(r, signal_add(win, 1, 0));
        OK(r, tc_rt_win_flush(win, -1, TIMEOUT_MS));
        if (pool_is(r, win, __LINE__, 0))
            return -1;
        OK(r, signal_add(win, 2, 0));
        uint64_t seen;
        for (int t = 1; t <= 2; t++) /* the target compared its window: it is ours to read */
            OK(r,
               tc_rt_win_wait_signal(win, t, TC_RT_WIN_GE, (uint64_t)round + 1, TIMEOUT_MS, &seen));
        uint64_t s = 77 + (uint64_t)round;
        piece_t got[NOPS];
        for (int k = 0; k < NOPS; k++) {
            got[k].peer = 1 + (int)(mix(&s) % 2);
            got[k].len = (size_t)(mix(&s) % SLOT_BYTES);
            got[k].off = mix(&s) % (WIN_BYTES - got[k].len + 1);
            OK(r, ff(win, TC_RT_WIN_GET, dst + (size_t)k * SLOT_BYTES, got[k].len, got[k].peer,
                     got[k].off));
        }
        OK(r, tc_rt_win_flush(win, -1, TIMEOUT_MS));
        if (pool_is(r, win, __LINE__, 0))
            return -1;
        for (int t = 1; t <= 2; t++) {
            model(m, t, round);
            for (int k = 0; k < NOPS; k++) {
                char what[96];
                snprintf(what, sizeof(what), "round %d, get %d from rank %d at %llu", round, k, t,
                         (unsigned long long)got[k].off);
                if (got[k].peer == t &&
                    compare(r, what, dst + (size_t)k * SLOT_BYTES, m + got[k].off, got[k].len))
                    return -1;
            }
        }
    }
    tc_rt_win_pool_info_t info;
    OK(r, tc_rt_win_pool_query(win, &info));
    CHECK(r, info.allocated > 0 && info.used_max == POOL,
          "never more operations in flight than the pool's %d (allocated %llu, used_max %d)", POOL,
          (unsigned long long)info.allocated, info.used_max);
    /* refused at the origin: no record taken; the pool serves the next one */
    tc_status_t st = ff(win, TC_RT_WIN_PUT, src, 1, 1, WIN_BYTES);
    CHECK(r, st == TC_ERR_INVALID_ARG, "a put past the window: %s", tc_status_string(st));
    if (pool_is(r, win, __LINE__, 0))
        return -1;
    src[0] = 0xA5;
    OK(r, ff(win, TC_RT_WIN_PUT, src, 1, 1, WIN_BYTES - 1));
    OK(r, tc_rt_win_flush(win, -1, TIMEOUT_MS));
    OK(r, signal_add(win, 1, 0));
    return pool_is(r, win, __LINE__, 0);
}

/* Ranks 1 and 2: compare the window with the model after each round. */
static int burst_target(rank_t *r, tc_rt_win_t *win, const unsigned char *base, unsigned char *m)
{
    uint64_t seen;
    for (int round = 0; round < ROUNDS; round++) {
        OK(r, tc_rt_win_wait_signal(win, 0, TC_RT_WIN_GE, (uint64_t)round + 1, TIMEOUT_MS, &seen));
        model(m, r->rank, round);
        char what[64];
        snprintf(what, sizeof(what), "round %d, rank %d's window", round, r->rank);
        int bad = compare(r, what, base, m, WIN_BYTES);
        OK(r, signal_add(win, 0, r->rank)); /* also after a mismatch: rank 0 must not wait */
        if (bad)
            return -1;
    }
    if (r->rank == 1) {
        OK(r, tc_rt_win_wait_signal(win, 0, TC_RT_WIN_GE, ROUNDS + 1, TIMEOUT_MS, &seen));
        CHECK(r, base[WIN_BYTES - 1] == 0xA5, "the last put: byte %u", base[WIN_BYTES - 1]);
    }
    return 0;
}

static int run_burst(rank_t *r)
{
    unsigned char *base = calloc(1, WIN_BYTES);
    unsigned char *src = malloc((size_t)NOPS * SLOT_BYTES);
    unsigned char *dst = malloc((size_t)NOPS * SLOT_BYTES);
    unsigned char *m = malloc(WIN_BYTES);
    tc_rt_win_t *win = NULL;
    int rc = -1;
    if (!base || !src || !dst || !m)
        fail_at(r, __LINE__, "out of memory");
    else if (tc_rt_win_create(r->comm, base, WIN_BYTES, 0, TIMEOUT_MS, NULL, &win) != TC_OK)
        fail_at(r, __LINE__, "tc_rt_win_create: %s", tc_last_error());
    else
        rc = r->rank == 0 ? burst_origin(r, win, src, dst, m) : burst_target(r, win, base, m);
    if (win && tc_rt_win_destroy(win) != TC_OK && rc == 0)
        rc = fail_at(r, __LINE__, "tc_rt_win_destroy: %s", tc_last_error());
    free(base);
    free(src);
    free(dst);
    free(m);
    return rc;
}

static int barrier(rank_t *r)
{
    tc_rt_coll_t call = {.coll = TC_COLL_BARRIER, .dtype = TC_UINT8, .root = -1};
    OK(r, tc_rt_coll_run(r->comm, &call));
    return 0;
}

/* What a pool record batches (TC_RT_WIN_BATCH in runtime/src/win.h), restated. */
#define BATCH 16
#define BEYOND 8 /* operations of a burst beyond what the pool's records hold */
#define BATCH_OPS (POOL * BATCH + BEYOND) /* the most of one burst */
#define SIG_SLOT 2

/* Operations of a burst of @p kind, and the records they would fill. */
static int batch_ops(int kind)
{
    return POOL * (kind == TC_RT_WIN_PUT ? BATCH : BATCH / 2) + BEYOND;
}

static uint64_t batch_word(int round, int k)
{
    return ((uint64_t)(round + 1) << 32) | (uint64_t)(k * 2654435761u);
}

/* A burst of @p kind: at most BEYOND of its operations were given a record of their own. */
static int batch_burst(rank_t *r, tc_rt_win_t *win, uint64_t *src, int kind, int round)
{
    tc_rt_win_pool_info_t before, after;
    OK(r, tc_rt_win_pool_query(win, &before));
    for (int k = 0; k < batch_ops(kind); k++) {
        int i = kind == TC_RT_WIN_PUT ? k : BATCH_OPS + k; /* the second half of the window */
        src[i] = batch_word(round, i);
        tc_rt_win_op_t op = {.kind = kind,
                             .buf = &src[i],
                             .bytes = 8,
                             .peer = 1,
                             .offset = (uint64_t)i * 8,
                             .slot = SIG_SLOT,
                             .value = 1};
        OK(r, tc_rt_win_issue(win, &op, TC_RT_ASYNC, NULL));
    }
    OK(r, tc_rt_win_pool_query(win, &after));
    CHECK(r, after.allocated - before.allocated <= BEYOND,
          "round %d, kind %d: %llu records allocated for %d operations to one peer (a pool of "
          "%d records of %d requests each)",
          round, kind, (unsigned long long)(after.allocated - before.allocated), batch_ops(kind),
          POOL, BATCH);
    return 0;
}

static int batch_origin(rank_t *r, tc_rt_win_t *win)
{
    uint64_t src[2 * BATCH_OPS], seen;
    for (int round = 0; round < ROUNDS; round++) {
        /* each burst starts with the pool free */
        if (batch_burst(r, win, src, TC_RT_WIN_PUT, round))
            return -1;
        OK(r, tc_rt_win_flush(win, 1, TIMEOUT_MS));
        if (batch_burst(r, win, src, TC_RT_WIN_PUT_SIGNAL, round))
            return -1;
        OK(r, tc_rt_win_flush(win, -1, TIMEOUT_MS));
        if (pool_is(r, win, __LINE__, 0))
            return -1;
        OK(r, signal_add(win, 1, 0));
        OK(r, tc_rt_win_wait_signal(win, 0, TC_RT_WIN_GE, (uint64_t)round + 1, TIMEOUT_MS, &seen));
    }
    return 0;
}

/* Word @p i of rank 1's window after round @p round: the puts fill the first half's start,
 * the put_signals the second half's. */
static uint64_t batch_want(int round, int i)
{
    int k = i < BATCH_OPS ? i : i - BATCH_OPS;
    return k < batch_ops(i < BATCH_OPS ? TC_RT_WIN_PUT : TC_RT_WIN_PUT_SIGNAL)
               ? batch_word(round, i)
               : 0;
}

static int batch_target(rank_t *r, tc_rt_win_t *win, const uint64_t *base)
{
    uint64_t seen;
    const uint64_t per_round = (uint64_t)batch_ops(TC_RT_WIN_PUT_SIGNAL);
    for (int round = 0; round < ROUNDS; round++) {
        OK(r, tc_rt_win_wait_signal(win, 0, TC_RT_WIN_GE, (uint64_t)round + 1, TIMEOUT_MS, &seen));
        uint64_t sigs;
        OK(r, tc_rt_win_read_signal(win, SIG_SLOT, &sigs));
        int bad = 0; /* the first wrong word + 1: read before rank 0 may write again */
        uint64_t got = 0;
        for (int i = 0; i < 2 * BATCH_OPS && !bad; i++)
            if ((got = base[i]) != batch_want(round, i))
                bad = i + 1;
        OK(r, signal_add(win, 0, 0)); /* also after a mismatch: rank 0 must not wait */
        CHECK(r, sigs == (uint64_t)(round + 1) * per_round, "round %d: %llu signals, want %llu",
              round, (unsigned long long)sigs, (unsigned long long)((round + 1) * per_round));
        CHECK(r, !bad, "round %d: word %d is %#llx, want %#llx", round, bad - 1,
              (unsigned long long)got, (unsigned long long)batch_want(round, bad - 1));
    }
    return 0;
}

static int run_batch(rank_t *r)
{
    uint64_t *base = calloc(2 * BATCH_OPS, sizeof(uint64_t));
    tc_rt_win_t *win = NULL;
    int rc = -1;
    if (!base)
        fail_at(r, __LINE__, "out of memory");
    else if (tc_rt_win_create(r->comm, base, 2 * BATCH_OPS * sizeof(uint64_t), 0, TIMEOUT_MS, NULL,
                              &win) != TC_OK)
        fail_at(r, __LINE__, "tc_rt_win_create: %s", tc_last_error());
    else
        rc = r->rank == 0 ? batch_origin(r, win) : batch_target(r, win, base);
    if (win && tc_rt_win_destroy(win) != TC_OK && rc == 0)
        rc = fail_at(r, __LINE__, "tc_rt_win_destroy: %s", tc_last_error());
    free(base);
    return rc;
}

/* Rank 0 puts into rank 1 until rank 1's communicator is gone. */
static int failure_origin(rank_t *r, tc_rt_win_t *win, unsigned char *src)
{
    memset(src, 7, SLOT_BYTES);
    for (int k = 0; k < 8; k++)
        OK(r, ff(win, TC_RT_WIN_PUT, src, SLOT_BYTES, 1, (uint64_t)k * SLOT_BYTES));
    OK(r, tc_rt_win_flush(win, -1, TIMEOUT_MS));
    if (barrier(r))
        return -1;
    tc_status_t st = TC_OK;
    struct timespec nap = {0, 1000000};
    for (int i = 0; i < 20000 && st == TC_OK; i++) { /* about 20 s at most */
        for (int k = 0; k < 8 && st == TC_OK; k++)
            st = ff(win, TC_RT_WIN_PUT, src, SLOT_BYTES, 1, (uint64_t)k * SLOT_BYTES);
        if (st == TC_OK)
            st = tc_rt_win_flush(win, 1, TIMEOUT_MS);
        if (st == TC_OK)
            nanosleep(&nap, NULL);
    }
    CHECK(r, st == TC_ERR_PEER_FAILED && strstr(tc_last_error(), "rank 1"),
          "puts to a target that left: %s: %s", tc_status_string(st), tc_last_error());
    st = tc_rt_win_flush(win, -1, TIMEOUT_MS); /* releases what is left; reports the failure */
    CHECK(r, st == TC_ERR_PEER_FAILED, "flush after the failure: %s", tc_status_string(st));
    if (pool_is(r, win, __LINE__, 0))
        return -1;
    st = ff(win, TC_RT_WIN_PUT, src, 8, 1, 0);
    CHECK(r, st == TC_ERR_PEER_FAILED, "a put on the broken communicator: %s",
          tc_status_string(st));
    return pool_is(r, win, __LINE__, 0);
}

static int run_failure(rank_t *r)
{
    unsigned char *base = calloc(1, WIN_BYTES);
    unsigned char *src = malloc(SLOT_BYTES);
    tc_rt_win_t *win = NULL;
    int rc = -1;
    if (!base || !src)
        fail_at(r, __LINE__, "out of memory");
    else if (tc_rt_win_create(r->comm, base, WIN_BYTES, 0, TIMEOUT_MS, NULL, &win) != TC_OK)
        fail_at(r, __LINE__, "tc_rt_win_create: %s", tc_last_error());
    else if (r->rank == 0)
        rc = failure_origin(r, win, src);
    else if ((rc = barrier(r)) == 0) {
        tc_rt_comm_destroy(r->comm); /* the window stays, unusable, until destroyed */
        r->comm = NULL;
    }
    if (win)
        (void)tc_rt_win_destroy(win); /* broken or without its communicator: frees locally */
    free(base);
    free(src);
    return rc;
}

static void *rank_thread(void *arg)
{
    rank_t *r = arg;
    tc_store_t store = mem_store_table(r->job->store);
    tc_boot_kv_params_t kv = {store.set, store.get, store.wait,   store.add,
                              store.ctx, r->rank,   r->job->size, r->job->name};
    tc_rt_comm_params_t params = {TC_BOOT_AUTO, r->job->name, NULL, TIMEOUT_MS, 0, 0, &kv};
    if (tc_rt_comm_create(&params, &r->comm) != TC_OK) {
        fail_at(r, __LINE__, "tc_rt_comm_create: %s", tc_last_error());
        return NULL;
    }
    (void)r->job->fn(r);
    if (r->comm)
        tc_rt_comm_destroy(r->comm);
    return NULL;
}

static void run(const char *name, int size, rank_fn fn)
{
    job_t job = {mem_store_new(), name, size, fn};
    assert_non_null(job.store);
    rank_t ranks[RANKS_MAX];
    pthread_t th[RANKS_MAX];
    memset(ranks, 0, sizeof(ranks));
    for (int i = 0; i < size; i++) {
        ranks[i].job = &job;
        ranks[i].rank = i;
        assert_int_equal(pthread_create(&th[i], NULL, rank_thread, &ranks[i]), 0);
    }
    int failed = 0;
    for (int i = 0; i < size; i++) {
        pthread_join(th[i], NULL);
        if (ranks[i].error[0]) {
            print_error("%s: %s\n", name, ranks[i].error);
            failed++;
        }
    }
    mem_store_free(job.store);
    assert_int_equal(failed, 0);
}

static void test_burst(void **state)
{
    (void)state;
    run("pool_burst", 3, run_burst);
}

static void test_batch(void **state)
{
    (void)state;
    run("pool_batch", 2, run_batch);
}

static void test_failure(void **state)
{
    (void)state;
    run("pool_failure", 2, run_failure);
}

int main(void)
{
    setenv("TC_SHM", "0", 1); /* TCP between the ranks: no direct path */
    setenv("TC_WIN_POOL", "2", 1);
    setenv("TC_LOG", "none", 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burst),
        cmocka_unit_test(test_batch),
        cmocka_unit_test(test_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
