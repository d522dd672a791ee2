/* tc_comm_create_from_store() over an in-process fake store, ranks as threads:
 * the warnings of a missing or short TC_JOB_SECRET, communicators that work (an all-reduce checked
 * element by element), two prefixes on one store at once, a callback failing (TC_ERR_BOOTSTRAP
 * naming the key), a rank that never comes (TC_ERR_TIMEOUT naming it, in time), an abort during the
 * wait, an abort and the deadline seen between a slow store's callbacks, a garbled process record,
 * a world of one and a dup in it, a revoke that reaches the other rank through the store, and the
 * store failing while notices are looked for (a warning, once). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcomms/tcomms.h"

#define FAKE_MAX 512

/* ---- the fake store: a locked table; wait sleeps on a condition ---- */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n;
    char *keys[FAKE_MAX];
    unsigned char *vals[FAKE_MAX];
    size_t lens[FAKE_MAX];
    const char *fail_on; /* a callback on a key containing this fails */
    int calls;
    const char *fail_set;  /* a set of this key fails */
    const char *count_get; /* gets of this key are counted in gets */
    int gets;
    int64_t add_extra;   /* added to what add returns (a store that counts twice) */
    useconds_t delay_us; /* a slow store: set, get and add take this long each */
    const char *garble;  /* a set of this key stores 0xff bytes instead */
} fake_t;

static void fake_init(fake_t *f)
{
    memset(f, 0, sizeof(*f));
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
}

static void fake_free(fake_t *f)
{
    for (int i = 0; i < f->n; i++) {
        free(f->keys[i]);
        free(f->vals[i]);
    }
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cv);
}

static int fake_find(fake_t *f, const char *key)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->keys[i], key) == 0)
            return i;
    return -1;
}

/* Locked: replaces or adds; 0, or -1 when full. */
static int fake_put(fake_t *f, const char *key, const void *val, size_t len)
{
    int i = fake_find(f, key);
    if (i < 0) {
        if (f->n == FAKE_MAX)
            return -1;
        i = f->n++;
        f->keys[i] = strdup(key);
        f->vals[i] = NULL;
    }
    free(f->vals[i]);
    f->vals[i] = malloc(len ? len : 1);
    if (f->garble && strcmp(key, f->garble) == 0)
        memset(f->vals[i], 0xff, len);
    else
        memcpy(f->vals[i], val, len);
    f->lens[i] = len;
    pthread_cond_broadcast(&f->cv);
    return 0;
}

/* Outside the lock, so that ranks' callbacks overlap as on a real store. */
static void fake_slow(const fake_t *f)
{
    if (f->delay_us)
        usleep(f->delay_us);
}

static int fake_fails(fake_t *f, const char *key)
{
    f->calls++;
    return f->fail_on && strstr(key, f->fail_on);
}

static int fake_set(void *ctx, const char *key, const void *val, size_t len)
{
    fake_t *f = ctx;
    fake_slow(f);
    pthread_mutex_lock(&f->mu);
    int rc = fake_fails(f, key) || (f->fail_set && strcmp(key, f->fail_set) == 0) ||
                     fake_put(f, key, val, len)
                 ? TC_STORE_FAILED
                 : TC_STORE_OK;
    pthread_mutex_unlock(&f->mu);
    return rc;
}

static int fake_get(void *ctx, const char *key, void *buf, size_t cap, size_t *len_p)
{
    fake_t *f = ctx;
    fake_slow(f);
    pthread_mutex_lock(&f->mu);
    int rc = TC_STORE_FAILED;
    f->gets += f->count_get && strcmp(key, f->count_get) == 0;
    if (!fake_fails(f, key)) {
        int i = fake_find(f, key);
        rc = i < 0 ? TC_STORE_ABSENT : TC_STORE_OK;
        if (i >= 0) {
            memcpy(buf, f->vals[i], f->lens[i] < cap ? f->lens[i] : cap);
            *len_p = f->lens[i];
        }
    }
    pthread_mutex_unlock(&f->mu);
    return rc;
}

static int fake_wait(void *ctx, const char *key, int64_t timeout_ms)
{
    fake_t *f = ctx;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&f->mu);
    int rc = TC_STORE_OK;
    if (fake_fails(f, key))
        rc = TC_STORE_FAILED;
    while (rc == TC_STORE_OK && fake_find(f, key) < 0)
        if (pthread_cond_timedwait(&f->cv, &f->mu, &until) != 0)
            rc = TC_STORE_TIMEOUT;
    pthread_mutex_unlock(&f->mu);
    return rc;
}

static int fake_add(void *ctx, const char *key, int64_t delta, int64_t *value_p)
{
    fake_t *f = ctx;
    fake_slow(f);
    pthread_mutex_lock(&f->mu);
    int rc = TC_STORE_FAILED;
    if (!fake_fails(f, key)) {
        int i = fake_find(f, key);
        int64_t v = delta;
        if (i >= 0)
            v += *(int64_t *)f->vals[i];
        rc = fake_put(f, key, &v, sizeof(v)) ? TC_STORE_FAILED : TC_STORE_OK;
        *value_p = v + (strstr(key, "fence") ? f->add_extra : 0);
    }
    pthread_mutex_unlock(&f->mu);
    return rc;
}

static tc_store_t fake_store(fake_t *f)
{
    tc_store_t s = TC_STORE_INIT;
    s.set = fake_set;
    s.get = fake_get;
    s.wait = fake_wait;
    s.add = fake_add;
    s.ctx = f;
    return s;
}

/* ---- ranks as threads ---- */
typedef struct {
    fake_t *store;
    const char *prefix;
    int rank, size;
    int64_t timeout_ms;
    tc_status_t create_st;
    struct timespec created; /* when tc_comm_create_from_store returned */
    char detail[512];
    tc_status_t reduce_st;
    int64_t out[16];
} rank_t;

static void *rank_main(void *arg)
{
    rank_t *r = arg;
    tc_store_t s = fake_store(r->store);
    tc_comm_opts_t o = TC_COMM_OPTS_INIT;
    o.timeout_ms = r->timeout_ms;
    o.name = r->prefix;
    tc_comm_t *comm = NULL;
    r->create_st = tc_comm_create_from_store(&s, r->rank, r->size, r->prefix, &o, &comm);
    clock_gettime(CLOCK_MONOTONIC, &r->created);
    snprintf(r->detail, sizeof(r->detail), "%s", r->create_st == TC_OK ? "" : tc_last_error());
    if (r->create_st != TC_OK)
        return NULL;
    int64_t in[16];
    for (int i = 0; i < 16; i++)
        in[i] = (int64_t)(r->rank + 1) * 1000 + i;
    r->reduce_st = tc_all_reduce(comm, in, r->out, 16, TC_INT64, TC_SUM, NULL, NULL);
    assert_int_equal(tc_comm_destroy(comm), TC_OK);
    return NULL;
}

/* Runs ranks [0, n) of @p size on the store (n < size: the others never come). */
static void run_ranks(rank_t *rs, int n, int size, fake_t *f, const char *prefix, int64_t tmo)
{
    pthread_t t[8];
    for (int i = 0; i < n; i++) {
        rs[i] = (rank_t){.store = f, .prefix = prefix, .rank = i, .size = size, .timeout_ms = tmo};
        assert_int_equal(pthread_create(&t[i], NULL, rank_main, &rs[i]), 0);
    }
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
}

static void check_sums(const rank_t *rs, int size)
{
    for (int r = 0; r < size; r++) {
        assert_int_equal(rs[r].create_st, TC_OK);
        assert_int_equal(rs[r].reduce_st, TC_OK);
        for (int i = 0; i < 16; i++) {
            int64_t want = 0;
            for (int q = 0; q < size; q++)
                want += (int64_t)(q + 1) * 1000 + i;
            assert_int_equal(rs[r].out[i], want);
        }
    }
}

static void test_create_and_reduce(void **state)
{
    (void)state;
    for (int size = 1; size <= 4; size += 3) {
        fake_t f;
        fake_init(&f);
        rank_t rs[4];
        run_ranks(rs, size, size, &f, "pg0", 20000);
        check_sums(rs, size);
        fake_free(&f);
    }
}

/* The log of running @p size ranks on a new store twice, TC_JOB_SECRET set to @p secret (NULL:
 * unset), stderr caught in a file meanwhile (malloc'd). */
static char *run_logged(int size, const char *secret)
{
    char path[] = "/tmp/tc_store_test_secret.XXXXXX";
    int fd = mkstemp(path), saved = dup(2);
    assert_true(fd >= 0 && saved >= 0);
    fflush(stderr);
    assert_int_equal(dup2(fd, 2), 2);
    if (secret)
        setenv("TC_JOB_SECRET", secret, 1);
    else
        unsetenv("TC_JOB_SECRET");
    for (int i = 0; i < 2; i++) {
        fake_t f;
        fake_init(&f);
        rank_t rs[4];
        run_ranks(rs, size, size, &f, "sec", 20000);
        check_sums(rs, size);
        fake_free(&f);
    }
    unsetenv("TC_JOB_SECRET");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char *log = calloc(1, 65536);
    assert_non_null(log);
    ssize_t n = pread(fd, log, 65535, 0);
    close(fd);
    unlink(path);
    log[n > 0 ? n : 0] = '\0';
    return log;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* Without TC_JOB_SECRET the connections between the ranks are not authenticated: said once per
 * process, as the torchrun environment's bootstrap says it (this bootstrap said nothing); a
 * world of one has no peer and says nothing. A secret of fewer than 16 bytes is said to be
 * guessable, once. Runs first: the warnings are once per process. */
static void test_secret_warnings(void **state)
{
    (void)state;
    char *log = run_logged(1, NULL);
    assert_int_equal(count(log, "TC_JOB_SECRET is not set"), 0);
    free(log);
    log = run_logged(2, NULL);
    if (count(log, "bootstrap(store): TC_JOB_SECRET is not set: the connections between this "
                   "job's ranks are NOT authenticated") != 1)
        fail_msg("want one warning that TC_JOB_SECRET is not set, the log says:\n%s", log);
    free(log);
    log = run_logged(2, "short-secret");
    if (count(log, "bootstrap(store): TC_JOB_SECRET has only 12 bytes") != 1 ||
        strstr(log, "short-secret"))
        fail_msg("want one warning that the secret is short, without it; the log says:\n%s", log);
    free(log);
    log = run_logged(2, "a-secret-of-twenty-bytes");
    assert_int_equal(count(log, "TC_JOB_SECRET"), 0);
    free(log);
}

typedef struct {
    rank_t *rs;
    int size;
    fake_t *f;
    const char *prefix;
} group_t;

static void *group_main(void *arg)
{
    group_t *g = arg;
    run_ranks(g->rs, g->size, g->size, g->f, g->prefix, 20000);
    return NULL;
}

/* Two communicators on one store at once, told apart by their prefixes. */
static void test_two_prefixes(void **state)
{
    (void)state;
    fake_t f;
    fake_init(&f);
    rank_t a[3], b[2];
    group_t ga = {a, 3, &f, "groupA"}, gb = {b, 2, &f, "groupB"};
    pthread_t ta, tb;
    assert_int_equal(pthread_create(&ta, NULL, group_main, &ga), 0);
    assert_int_equal(pthread_create(&tb, NULL, group_main, &gb), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    check_sums(a, 3);
    check_sums(b, 2);
    pthread_mutex_lock(&f.mu);
    for (int i = 0; i < f.n; i++)
        assert_true(strncmp(f.keys[i], "groupA/", 7) == 0 || strncmp(f.keys[i], "groupB/", 7) == 0);
    pthread_mutex_unlock(&f.mu);
    fake_free(&f);
}

static void test_callback_fails(void **state)
{
    (void)state;
    fake_t f;
    fake_init(&f);
    f.fail_on = "/count";
    rank_t rs[2];
    run_ranks(rs, 2, 2, &f, "bad", 5000);
    for (int r = 0; r < 2; r++) {
        assert_int_equal(rs[r].create_st, TC_ERR_BOOTSTRAP);
        assert_non_null(strstr(rs[r].detail, "the add callback failed on key 'bad/fence0/count'"));
    }
    fake_free(&f);
}

/* A store whose add counts twice (or a prefix another creation uses): a count beyond the
 * ranks is an error naming the key, at once; the fence passed early before (one rank got a
 * communicator whose first operation timed out), and a count of -5 waited for the timeout. */
static void test_add_out_of_range(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) {
        fake_t f;
        fake_init(&f);
        f.add_extra = k == 0 ? 2 : -7;
        rank_t rs[2];
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        run_ranks(rs, 2, 2, &f, "dbl", 20000);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        for (int r = 0; r < 2; r++) {
            assert_int_equal(rs[r].create_st, TC_ERR_BOOTSTRAP);
            assert_non_null(strstr(rs[r].detail, "the store's add on 'dbl/fence0/count' returned"));
            assert_non_null(strstr(rs[r].detail, "not a count of 1 to 2 ranks"));
        }
        assert_true(t1.tv_sec - t0.tv_sec < 10); /* not the 20 s timeout */
        fake_free(&f);
    }
}

/* Ranks 0 and 2 of 4 come; 1 and 3 never do: a timeout naming them, in time. */
static void test_timeout_names_missing(void **state)
{
    (void)state;
    fake_t f;
    fake_init(&f);
    rank_t rs[4];
    pthread_t t[2];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 2; i++) {
        rs[i] =
            (rank_t){.store = &f, .prefix = "late", .rank = 2 * i, .size = 4, .timeout_ms = 300};
        assert_int_equal(pthread_create(&t[i], NULL, rank_main, &rs[i]), 0);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_true(s < 3.0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(rs[i].create_st, TC_ERR_TIMEOUT);
        assert_non_null(strstr(rs[i].detail, "2 of 4 ranks reached the fence"));
        assert_non_null(strstr(rs[i].detail, "missing: 1, 3"));
    }
    fake_free(&f);
}

static void *abort_later(void *arg)
{
    (void)arg;
    struct timespec d = {0, 200000000L};
    nanosleep(&d, NULL);
    tc_comm_create_abort();
    return NULL;
}

static void test_abort(void **state)
{
    (void)state;
    fake_t f;
    fake_init(&f);
    rank_t r;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, abort_later, NULL), 0);
    run_ranks(&r, 1, 2, &f, "abrt", 60000);
    pthread_join(t, NULL);
    assert_int_equal(r.create_st, TC_ERR_ABORTED);
    assert_non_null(strstr(r.detail, "abrt/fence0/done"));
    fake_free(&f);
}

static double seconds_between(const struct timespec *t0, const struct timespec *t1)
{
    return (double)(t1->tv_sec - t0->tv_sec) + (double)(t1->tv_nsec - t0->tv_nsec) * 1e-9;
}

typedef struct {
    long after_ms;
    struct timespec at;
} abort_at_t;

static void *abort_at(void *arg)
{
    abort_at_t *a = arg;
    struct timespec d = {a->after_ms / 1000, (a->after_ms % 1000) * 1000000L};
    nanosleep(&d, NULL);
    clock_gettime(CLOCK_MONOTONIC, &a->at);
    tc_comm_create_abort();
    return NULL;
}

/* A slow store (100 ms per set, get and add): an abort, wherever the creation is (between the
 * fences too, where it puts and gets), and the deadline end it within about one callback. An
 * abort was seen only at the fences' waits (0.7 s late with 50 ms callbacks), and a 400 ms
 * timeout not at all (the creation succeeded after its deadline). Each rank's return is timed
 * apart; a rank that finished before the abort, or failed because the other one left, is not
 * an abort's to time. */
static void test_slow_store(void **state)
{
    (void)state;
    int aborted = 0;
    for (long after = 150; after <= 2150; after += 500) {
        fake_t f;
        fake_init(&f);
        f.delay_us = 100000;
        rank_t rs[2];
        abort_at_t a = {.after_ms = after};
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, abort_at, &a), 0);
        run_ranks(rs, 2, 2, &f, "slow", 60000);
        pthread_join(t, NULL);
        for (int r = 0; r < 2; r++) {
            if (rs[r].create_st != TC_ERR_ABORTED)
                continue;
            aborted++;
            double late = seconds_between(&a.at, &rs[r].created);
            if (late > 0.6)
                fail_msg("abort %ld ms after the start: seen %.3f s later (%s)", after, late,
                         rs[r].detail);
        }
        fake_free(&f);
    }
    assert_true(aborted >= 4);
    fake_t f;
    fake_init(&f);
    f.delay_us = 100000;
    rank_t rs[2];
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    run_ranks(rs, 2, 2, &f, "slowt", 400);
    for (int r = 0; r < 2; r++) {
        assert_int_equal(rs[r].create_st, TC_ERR_TIMEOUT);
        double took = seconds_between(&t0, &rs[r].created);
        if (took > 1.2)
            fail_msg("a 400 ms timeout took %.3f s (%s)", took, rs[r].detail);
    }
    fake_free(&f);
}

/* Another program wrote 0xff over rank 1's process record: rank 0 refuses it at creation,
 * naming the rank and the key (its 63 bytes were printed raw as the host in failure reports). */
static void test_garbled_process_record(void **state)
{
    (void)state;
    fake_t f;
    fake_init(&f);
    f.garble = "garb/1/tc.proc";
    rank_t rs[2];
    run_ranks(rs, 2, 2, &f, "garb", 3000);
    assert_int_equal(rs[0].create_st, TC_ERR_PROTOCOL);
    if (!strstr(rs[0].detail, "rank 1's 'tc.proc' is not a process record"))
        fail_msg("%s", rs[0].detail);
    fake_free(&f);
}

/* A world of one through the store: its launcher says "store", and dup works in it. */
static void test_one_rank_and_dup(void **state)
{
    (void)state;
    fake_t f;
    fake_init(&f);
    tc_store_t s = fake_store(&f);
    tc_comm_t *comm;
    assert_int_equal(tc_comm_create_from_store(&s, 0, 1, "one", NULL, &comm), TC_OK);
    tc_comm_info_t info;
    assert_int_equal(tc_comm_info(comm, &info), TC_OK);
    assert_string_equal(info.launcher, "store");
    assert_int_equal(info.size, 1);
    assert_string_equal(info.name, "one"); /* unnamed: its prefix (two stores' were "world") */
    tc_comm_t *two;
    assert_int_equal(tc_comm_dup(comm, NULL, &two), TC_OK);
    assert_int_equal(tc_comm_destroy(two), TC_OK);
    assert_int_equal(tc_comm_destroy(comm), TC_OK);
    fake_free(&f);
}

static void *revoke_main(void *arg)
{
    rank_t *r = arg;
    tc_store_t s = fake_store(r->store);
    tc_comm_opts_t o = TC_COMM_OPTS_INIT;
    o.timeout_ms = r->timeout_ms;
    tc_comm_t *comm = NULL;
    r->create_st = tc_comm_create_from_store(&s, r->rank, r->size, r->prefix, &o, &comm);
    if (r->create_st != TC_OK)
        return NULL;
    int64_t x = 1;
    /* rank 0 revokes; rank 1 waits in an all-reduce rank 0 never joins */
    r->reduce_st = r->rank == 0 ? tc_comm_revoke(comm)
                                : tc_all_reduce(comm, &x, &x, 1, TC_INT64, TC_SUM, NULL, NULL);
    snprintf(r->detail, sizeof(r->detail), "%s", tc_last_error());
    assert_int_equal(tc_comm_destroy(comm), TC_OK);
    return NULL;
}

static void test_revoke_through_store(void **state)
{
    (void)state;
    fake_t f;
    fake_init(&f);
    rank_t rs[2];
    pthread_t t[2];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 2; i++) {
        rs[i] = (rank_t){.store = &f, .prefix = "rv", .rank = i, .size = 2, .timeout_ms = 20000};
        assert_int_equal(pthread_create(&t[i], NULL, revoke_main, &rs[i]), 0);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_int_equal(rs[0].create_st, TC_OK);
    assert_int_equal(rs[0].reduce_st, TC_OK);
    assert_int_equal(rs[1].reduce_st, TC_ERR_REVOKED);
    assert_true(t1.tv_sec - t0.tv_sec < 5); /* the notice, not the 20 s timeout */
    fake_free(&f);
}

/* A notice counted but never written (rank 1's set of it fails, as when a rank dies between
 * the two): rank 2's later revoke still reaches rank 0, and rank 0 looks for the missing one
 * once per period. Every later notice waited behind it for good, and the ranks called get on
 * it in a loop (1.6 million times in 3 s). */
typedef struct {
    fake_t *store;
    int rank;
    pthread_barrier_t *made, *first;
    tc_status_t st;
} hole_rank_t;

static void *hole_main(void *arg)
{
    hole_rank_t *r = arg;
    tc_store_t s = fake_store(r->store);
    tc_comm_opts_t o = TC_COMM_OPTS_INIT;
    o.timeout_ms = 20000;
    tc_comm_t *comm = NULL;
    r->st = tc_comm_create_from_store(&s, r->rank, 3, "ho", &o, &comm);
    pthread_barrier_wait(r->made);
    if (r->st != TC_OK)
        return NULL;
    int64_t x = 1;
    if (r->rank == 0) { /* waits in an all-reduce the others never join */
        r->st = tc_all_reduce(comm, &x, &x, 1, TC_INT64, TC_SUM, NULL, NULL);
        pthread_barrier_wait(r->first);
    } else if (r->rank == 1) { /* its notice is counted, never written */
        (void)tc_comm_revoke(comm);
        pthread_barrier_wait(r->first);
    } else {
        usleep(200000); /* after rank 1's */
        (void)tc_comm_revoke(comm);
        pthread_barrier_wait(r->first);
    }
    assert_int_equal(tc_comm_destroy(comm), TC_OK);
    return NULL;
}

static void test_notice_hole(void **state)
{
    (void)state;
    fake_t f;
    fake_init(&f);
    f.fail_set = "ho/event/1";
    f.count_get = "ho/event/1";
    pthread_barrier_t made, first;
    pthread_barrier_init(&made, NULL, 3);
    pthread_barrier_init(&first, NULL, 3);
    hole_rank_t rs[3];
    pthread_t t[3];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 3; i++) {
        rs[i] = (hole_rank_t){.store = &f, .rank = i, .made = &made, .first = &first};
        assert_int_equal(pthread_create(&t[i], NULL, hole_main, &rs[i]), 0);
    }
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    assert_int_equal(rs[0].st, TC_ERR_REVOKED); /* rank 2's notice, past the hole */
    assert_true(s < 10);                        /* not the 20 s timeout */
    /* one look per 50 ms period per rank, not a loop */
    assert_true(f.gets <= (int)(3 * s * 1000 / 50) + 10);
    pthread_barrier_destroy(&made);
    pthread_barrier_destroy(&first);
    fake_free(&f);
}

/* The store fails while notices are looked for, after creation: said once as a warning naming
 * the callback and the key (it was ignored without a word: a revoke never arrived), said again
 * when the store answers again; the communicator still works. Ranks as threads; stderr, where
 * the log goes, caught in a file meanwhile. */
typedef struct {
    fake_t *store;
    int rank;
    pthread_barrier_t *phase;
    tc_status_t st;
} poll_rank_t;

/* 15 all-reduces of 16 KiB (the general path, which looks for notices) 30 ms apart: several
 * looks (at most one every 50 ms). */
static tc_status_t poll_ops(tc_comm_t *comm, int rank)
{
    static _Thread_local int64_t x[2048], y[2048];
    struct timespec d = {0, 30000000L};
    for (int i = 0; i < 15; i++) {
        for (int k = 0; k < 2048; k++)
            x[k] = rank + k;
        tc_status_t st = tc_all_reduce(comm, x, y, 2048, TC_INT64, TC_SUM, NULL, NULL);
        for (int k = 0; k < 2048 && st == TC_OK; k++)
            if (y[k] != 1 + 2 * k)
                st = TC_ERR_INTERNAL;
        if (st != TC_OK)
            return st;
        nanosleep(&d, NULL);
    }
    return TC_OK;
}

static void *poll_main(void *arg)
{
    poll_rank_t *r = arg;
    tc_store_t s = fake_store(r->store);
    tc_comm_t *comm = NULL;
    r->st = tc_comm_create_from_store(&s, r->rank, 2, "pf", NULL, &comm);
    for (int phase = 0; phase < 2; phase++) { /* the store fails, then answers again */
        pthread_barrier_wait(r->phase);
        pthread_barrier_wait(r->phase);
        if (r->st == TC_OK)
            r->st = poll_ops(comm, r->rank);
    }
    pthread_barrier_wait(r->phase);
    if (comm)
        assert_int_equal(tc_comm_destroy(comm), TC_OK);
    return NULL;
}

static void test_notice_poll_fails(void **state)
{
    (void)state;
    fake_t f;
    fake_init(&f);
    char path[] = "/tmp/tc_store_test_log.XXXXXX";
    int fd = mkstemp(path), saved = dup(2);
    assert_true(fd >= 0 && saved >= 0);
    fflush(stderr);
    assert_int_equal(dup2(fd, 2), 2);
    pthread_barrier_t phase;
    pthread_barrier_init(&phase, NULL, 3);
    poll_rank_t rs[2];
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        rs[i] = (poll_rank_t){.store = &f, .rank = i, .phase = &phase};
        assert_int_equal(pthread_create(&t[i], NULL, poll_main, &rs[i]), 0);
    }
    for (int p = 0; p < 2; p++) {
        pthread_barrier_wait(&phase); /* created, or the first phase's operations done */
        pthread_mutex_lock(&f.mu);
        f.fail_on = p == 0 ? "pf/event/count" : NULL;
        pthread_mutex_unlock(&f.mu);
        pthread_barrier_wait(&phase);
    }
    pthread_barrier_wait(&phase);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char log[16384] = "";
    ssize_t n = pread(fd, log, sizeof(log) - 1, 0);
    close(fd);
    unlink(path);
    log[n > 0 ? n : 0] = '\0';
    for (int i = 0; i < 2; i++)
        assert_int_equal(rs[i].st, TC_OK);
    if (!strstr(log, "the add callback failed on key 'pf/event/count'; other ranks' notices") ||
        !strstr(log, "the store answers again"))
        fail_msg("the log does not say the store failed, then answered again:\n%s", log);
    pthread_barrier_destroy(&phase);
    fake_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_secret_warnings),
        cmocka_unit_test(test_create_and_reduce),
        cmocka_unit_test(test_two_prefixes),
        cmocka_unit_test(test_callback_fails),
        cmocka_unit_test(test_timeout_names_missing),
        cmocka_unit_test(test_abort),
        cmocka_unit_test(test_slow_store),
        cmocka_unit_test(test_garbled_process_record),
        cmocka_unit_test(test_one_rank_and_dup),
        cmocka_unit_test(test_revoke_through_store),
        cmocka_unit_test(test_notice_poll_fails),
        cmocka_unit_test(test_notice_hole),
        cmocka_unit_test(test_add_out_of_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
