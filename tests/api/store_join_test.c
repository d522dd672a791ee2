/* Who joins a tc_comm_create_from_store() creation, ranks as threads on the in-memory store
 * (mem_store.c): ranks that pass different sizes, two processes that pass the same rank, and a
 * rank 0 that never comes. A rank that can tell fails at once (TC_ERR_BOOTSTRAP naming both
 * sizes, or the duplicated rank); a rank that cannot ends at its timeout with a detail that names
 * the cause. Before, sizes that differ and a rank given twice waited for the timeout saying only
 * which ranks were missing, or passed the first fence and failed later (a key not found). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "mem_store.h"
#include "tcomms/tcomms.h"

#define TIMEOUT_MS 3000
#define PROMPT_S 1.5 /* an error "at once": well before the timeout */

typedef struct {
    mem_store_t *store;
    int rank, size;
    tc_status_t create_st, reduce_st;
    double took_s; /* until tc_comm_create_from_store returned */
    char detail[1024];
    int64_t sum; /* of the ranks + 1, by an all-reduce */
} joiner_t;

static void *join_main(void *arg)
{
    joiner_t *j = arg;
    tc_store_t s = mem_store_table(j->store);
    tc_comm_opts_t o = TC_COMM_OPTS_INIT;
    o.timeout_ms = TIMEOUT_MS;
    tc_comm_t *comm = NULL;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    j->create_st = tc_comm_create_from_store(&s, j->rank, j->size, "join", &o, &comm);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    j->took_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    snprintf(j->detail, sizeof(j->detail), "%s", j->create_st == TC_OK ? "" : tc_last_error());
    if (j->create_st != TC_OK)
        return NULL;
    int64_t x = j->rank + 1;
    j->reduce_st = tc_all_reduce(comm, &x, &j->sum, 1, TC_INT64, TC_SUM, NULL, NULL);
    assert_int_equal(tc_comm_destroy(comm), TC_OK);
    return NULL;
}

/* Threads for @p n joiners given as (rank, size) pairs, on a fresh store. */
static void run_joiners(joiner_t *js, int n, const int (*rank_size)[2])
{
    mem_store_t *store = mem_store_new();
    assert_non_null(store);
    pthread_t t[4];
    for (int i = 0; i < n; i++) {
        js[i] = (joiner_t){.store = store, .rank = rank_size[i][0], .size = rank_size[i][1]};
        assert_int_equal(pthread_create(&t[i], NULL, join_main, &js[i]), 0);
    }
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    mem_store_free(store);
}

static void expect(const joiner_t *j, tc_status_t st, const char *text)
{
    if (j->create_st != st || !strstr(j->detail, text))
        fail_msg("rank %d of size %d: %s (%s), expected %s with \"%s\"", j->rank, j->size,
                 tc_status_string(j->create_st), j->detail, tc_status_string(st), text);
}

static void expect_prompt(const joiner_t *j)
{
    if (j->took_s > PROMPT_S)
        fail_msg("rank %d of size %d failed after %.2f s, not at once: %s", j->rank, j->size,
                 j->took_s, j->detail);
}

static void expect_sum(const joiner_t *j, int size)
{
    expect(j, TC_OK, "");
    assert_int_equal(j->reduce_st, TC_OK);
    assert_int_equal(j->sum, (int64_t)size * (size + 1) / 2);
}

/* Rank 0 says 2, rank 1 says 3 (and the other way round): rank 1 compares with rank 0's size
 * and fails at once; rank 0 cannot tell, and its timeout names rank 1's size. */
static void test_sizes_differ(void **state)
{
    (void)state;
    joiner_t js[2];
    run_joiners(js, 2, (const int[][2]){{0, 2}, {1, 3}});
    expect(&js[1], TC_ERR_BOOTSTRAP, "rank 1 was given size 3 but rank 0 size 2");
    expect_prompt(&js[1]);
    expect(&js[0], TC_ERR_TIMEOUT, "missing: 1; rank 1 was given size 3, this rank size 2");

    run_joiners(js, 2, (const int[][2]){{0, 3}, {1, 2}});
    expect(&js[1], TC_ERR_BOOTSTRAP, "rank 1 was given size 2 but rank 0 size 3");
    expect_prompt(&js[1]);
    expect(&js[0], TC_ERR_TIMEOUT, "missing: 1, 2; rank 1 was given size 2, this rank size 3");
}

/* A third process that thinks the world has 3 ranks beside a world of 2: it fails at once and
 * the world of 2 works (the extra one added nothing to the store's counters). */
static void test_extra_rank_of_another_size(void **state)
{
    (void)state;
    joiner_t js[3];
    run_joiners(js, 3, (const int[][2]){{0, 2}, {1, 2}, {2, 3}});
    expect(&js[2], TC_ERR_BOOTSTRAP, "rank 2 was given size 3 but rank 0 size 2");
    expect_prompt(&js[2]);
    expect_sum(&js[0], 2);
    expect_sum(&js[1], 2);
}

/* Two processes pass rank 1 of 2: the second to claim it fails at once naming rank 1; the first
 * and rank 0 make a working world. */
static void test_rank_twice(void **state)
{
    (void)state;
    joiner_t js[3];
    run_joiners(js, 3, (const int[][2]){{0, 2}, {1, 2}, {1, 2}});
    int dup = js[1].create_st == TC_OK ? 2 : 1;
    expect(&js[dup], TC_ERR_BOOTSTRAP, "rank 1 is taken: the store's add on 'join/claim/1'");
    expect_prompt(&js[dup]);
    expect_sum(&js[0], 2);
    expect_sum(&js[3 - dup], 2);
}

/* Two processes pass rank 0 of 2 and none rank 1: the second fails at once; the first ends at
 * its timeout naming rank 1 missing and its own rank claimed twice. */
static void test_rank_twice_one_missing(void **state)
{
    (void)state;
    joiner_t js[2];
    run_joiners(js, 2, (const int[][2]){{0, 2}, {0, 2}});
    int dup = js[0].create_st == TC_ERR_BOOTSTRAP ? 0 : 1;
    expect(&js[dup], TC_ERR_BOOTSTRAP, "rank 0 is taken");
    expect_prompt(&js[dup]);
    expect(&js[1 - dup], TC_ERR_TIMEOUT, "missing: 1; 2 processes were given rank 0");
}

/* Rank 1 of 2 alone: it waits for rank 0's size and ends at its timeout naming rank 0. */
static void test_rank0_absent(void **state)
{
    (void)state;
    joiner_t j;
    run_joiners(&j, 1, (const int[][2]){{1, 2}});
    expect(&j, TC_ERR_TIMEOUT, "rank 0 did not reach the fence before the deadline");
    assert_true(j.took_s < TIMEOUT_MS / 1000.0 + 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_differ), cmocka_unit_test(test_extra_rank_of_another_size),
        cmocka_unit_test(test_rank_twice),   cmocka_unit_test(test_rank_twice_one_missing),
        cmocka_unit_test(test_rank0_absent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
