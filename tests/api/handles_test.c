/* Handles carry a generation: a destroyed communicator's handle or a freed
 * work's never addresses the next one created, over many cycles, and values
 * that are no handle at all are refused without being read. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/tcomms.h"

static void expect(tc_status_t got, tc_status_t want, const char *needle)
{
    const char *detail = tc_last_error();
    if (got != want)
        fail_msg("status %s, expected %s (detail '%s')", tc_status_string(got),
                 tc_status_string(want), detail);
    if (strstr(detail, needle) == NULL)
        fail_msg("detail '%s' does not mention '%s'", detail, needle);
}

static tc_comm_t *world(void)
{
    tc_comm_opts_t o = TC_COMM_OPTS_INIT;
    o.bootstrap = TC_BOOTSTRAP_SELF;
    tc_comm_t *comm = NULL;
    assert_int_equal(tc_comm_create(&o, &comm), TC_OK);
    return comm;
}

static void sum_one(tc_comm_t *comm, int32_t v)
{
    int32_t r = 0;
    assert_int_equal(tc_all_reduce(comm, &v, &r, 1, TC_INT32, TC_SUM, NULL, NULL), TC_OK);
    assert_int_equal(r, v);
}

/* Destroy, create another, use the old handle: refused, and the new one is
 * untouched (it used to be the same address, so the old handle worked on the
 * new communicator and destroying it destroyed the new one). */
static void test_stale_comm(void **state)
{
    (void)state;
    enum { CYCLES = 120 };
    tc_comm_t *old[CYCLES];
    for (int i = 0; i < CYCLES; i++) {
        old[i] = world();
        for (int j = 0; j < i; j++)
            assert_true(old[j] != old[i]);
        sum_one(old[i], i);
        assert_int_equal(tc_comm_destroy(old[i]), TC_OK);
        tc_comm_t *fresh = world();
        int rank = -1;
        expect(tc_comm_rank(old[i], &rank), TC_ERR_INVALID_STATE, "was destroyed");
        assert_int_equal(rank, -1);
        expect(tc_barrier(old[i], NULL, NULL), TC_ERR_INVALID_STATE, "tc_barrier: comm");
        expect(tc_comm_destroy(old[i]), TC_ERR_INVALID_STATE, "was destroyed");
        /* every older handle too */
        for (int j = 0; j < i; j += 37)
            expect(tc_comm_size(old[j], &rank), TC_ERR_INVALID_STATE, "was destroyed");
        sum_one(fresh, 1000 + i);
        assert_int_equal(tc_comm_destroy(fresh), TC_OK);
    }
}

/* The same for work objects, many more cycles (they are cheap). */
static void test_stale_work(void **state)
{
    (void)state;
    tc_comm_t *comm = world();
    enum { CYCLES = 5000 };
    tc_work_t *prev = NULL;
    for (int i = 0; i < CYCLES; i++) {
        tc_work_t *w = NULL;
        assert_int_equal(tc_barrier(comm, NULL, &w), TC_OK);
        assert_non_null(w);
        assert_true(w != prev);
        assert_int_equal(tc_work_free(w), TC_OK);
        tc_work_t *next = NULL;
        int32_t in = i, out = -1;
        tc_op_opts_t o = TC_OP_OPTS_INIT;
        o.async = 1;
        assert_int_equal(tc_all_reduce(comm, &in, &out, 1, TC_INT32, TC_SUM, &o, &next), TC_OK);
        expect(tc_work_wait(w, 1000), TC_ERR_INVALID_STATE, "was freed");
        expect(tc_work_free(w), TC_ERR_INVALID_STATE, "was freed");
        int done = -1;
        expect(tc_work_test(w, &done), TC_ERR_INVALID_STATE, "was freed");
        assert_int_equal(done, -1);
        tc_work_state_t ws;
        expect(tc_work_status(w, &ws, NULL), TC_ERR_INVALID_STATE, "was freed");
        expect(tc_work_start(w), TC_ERR_INVALID_STATE, "was freed");
        assert_non_null(strstr(tc_work_error(w), "was freed"));
        if (prev)
            expect(tc_work_wait(prev, 0), TC_ERR_INVALID_STATE, "was freed");
        /* the new work is untouched by all that */
        assert_int_equal(tc_work_wait(next, 5000), TC_OK);
        assert_int_equal(out, i);
        assert_int_equal(tc_work_free(next), TC_OK);
        prev = next;
    }
    assert_int_equal(tc_comm_destroy(comm), TC_OK);
}

/* Values that were never handles: refused without being dereferenced. */
static void test_not_handles(void **state)
{
    (void)state;
    tc_comm_t *comm = world();
    tc_work_t *w = NULL;
    assert_int_equal(tc_barrier(comm, NULL, &w), TC_OK);
    int local = 0, r;
    expect(tc_comm_rank((tc_comm_t *)&local, &r), TC_ERR_INVALID_STATE,
           "not a communicator handle");
    expect(tc_comm_rank((tc_comm_t *)w, &r), TC_ERR_INVALID_STATE,
           "is a work handle, not a communicator");
    expect(tc_work_wait((tc_work_t *)comm, 0), TC_ERR_INVALID_STATE,
           "is a communicator handle, not a work object");
    expect(tc_work_wait((tc_work_t *)&local, 0), TC_ERR_INVALID_STATE, "not a work handle");
    /* a generation never issued for a slot in use */
    tc_comm_t *ahead = (tc_comm_t *)((uintptr_t)comm + ((uintptr_t)1 << 40));
    expect(tc_comm_rank(ahead, &r), TC_ERR_INVALID_STATE, "not a communicator handle");
    tc_comm_t *far = (tc_comm_t *)(((uintptr_t)1 << 24) | ((uintptr_t)4000000 << 2) | 1);
    expect(tc_comm_rank(far, &r), TC_ERR_INVALID_STATE, "not a communicator handle");
    /* a value with a communicator's kind bits that no call returned is no communicator handle
     * to a work call either (it said "is a communicator handle, not a work object") */
    expect(tc_work_free((tc_work_t *)far), TC_ERR_INVALID_STATE, "not a work handle");
    expect(tc_work_free((tc_work_t *)ahead), TC_ERR_INVALID_STATE, "not a work handle");
    assert_int_equal(tc_work_free(w), TC_OK);
    assert_int_equal(tc_comm_rank(comm, &r), TC_OK);
    assert_int_equal(tc_comm_destroy(comm), TC_OK);
}

/* Hooks see the handle the application holds. */
static tc_comm_t *hook_saw;
static void hook(tc_comm_t *comm, const tc_op_info_t *info, int after, void *arg)
{
    (void)info, (void)after, (void)arg;
    hook_saw = comm;
}

static void test_hook_gets_the_handle(void **state)
{
    (void)state;
    tc_comm_t *comm = world();
    assert_int_equal(tc_comm_add_hook(comm, hook, NULL), TC_OK);
    sum_one(comm, 3);
    assert_ptr_equal(hook_saw, comm);
    assert_int_equal(tc_comm_destroy(comm), TC_OK);
}

/* Threads issuing and freeing work handles at once, each on its own communicator (the free list
 * of slots is lock-free): every live handle names its own work to the end, and every freed one is
 * refused. Two threads handed one slot would see their work freed under them. */
#define THREADS 4
#define ROUNDS 5000
#define INFLIGHT 4

typedef struct {
    tc_comm_t *comm;
    int failures;
} churn_t;

static void *churn(void *arg)
{
    churn_t *c = arg;
    tc_op_opts_t ao = TC_OP_OPTS_INIT;
    ao.async = 1;
    tc_work_t *live[INFLIGHT] = {NULL};
    int32_t in[INFLIGHT], out[INFLIGHT];
    for (int i = 0; i < ROUNDS * INFLIGHT; i++) {
        int k = i % INFLIGHT;
        if (live[k]) {
            tc_work_t *old = live[k];
            c->failures += tc_work_wait(old, 10000) != TC_OK || out[k] != in[k];
            c->failures += tc_work_free(old) != TC_OK;
            c->failures += tc_work_wait(old, 0) != TC_ERR_INVALID_STATE; /* stale now */
        }
        in[k] = i;
        out[k] = -1;
        live[k] = NULL;
        c->failures +=
            tc_all_reduce(c->comm, &in[k], &out[k], 1, TC_INT32, TC_SUM, &ao, &live[k]) != TC_OK;
    }
    for (int k = 0; k < INFLIGHT; k++)
        if (live[k]) {
            c->failures += tc_work_wait(live[k], 10000) != TC_OK || out[k] != in[k];
            c->failures += tc_work_free(live[k]) != TC_OK;
        }
    return NULL;
}

static void test_threads_churn_work_handles(void **state)
{
    (void)state;
    tc_comm_t *comm = world();
    churn_t c[THREADS];
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++) {
        c[t].failures = 0;
        assert_int_equal(tc_comm_dup(comm, NULL, &c[t].comm), TC_OK);
    }
    for (int t = 0; t < THREADS; t++)
        assert_int_equal(pthread_create(&th[t], NULL, churn, &c[t]), 0);
    for (int t = 0; t < THREADS; t++) {
        assert_int_equal(pthread_join(th[t], NULL), 0);
        assert_int_equal(c[t].failures, 0);
        assert_int_equal(tc_comm_destroy(c[t].comm), TC_OK);
    }
    assert_int_equal(tc_comm_destroy(comm), TC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stale_comm),
        cmocka_unit_test(test_stale_work),
        cmocka_unit_test(test_not_handles),
        cmocka_unit_test(test_hook_gets_the_handle),
        cmocka_unit_test(test_threads_churn_work_handles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
