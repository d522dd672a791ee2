/* The public API as a world of one: every rejected argument has its status
 * and a detail; configuration and bootstrap errors are precise; the results
 * of a one-rank all-reduce are the inputs (avg included). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/tcomms.h"

static void no_pmix_env(void)
{
    unsetenv("PMIX_NAMESPACE");
    unsetenv("PMIX_SERVER_URI41");
    unsetenv("PMIX_SERVER_URI4");
    unsetenv("PMIX_SERVER_URI3");
    unsetenv("PMIX_SERVER_URI2");
    unsetenv("PMIX_SERVER_URI21");
    unsetenv("TC_BOOTSTRAP");
    unsetenv("TC_TIMEOUT_S");
}

static void test_world_of_one(void **state)
{
    no_pmix_env();
    tc_comm_t *comm = NULL;
    assert_int_equal(tc_comm_create(NULL, &comm), TC_OK);
    int rank = -1, size = -1;
    assert_int_equal(tc_comm_rank(comm, &rank), TC_OK);
    assert_int_equal(tc_comm_size(comm, &size), TC_OK);
    assert_int_equal(rank, 0);
    assert_int_equal(size, 1);

    double in[5] = {1.5, -2, 3, 0, 7}, out[5] = {0};
    assert_int_equal(tc_all_reduce(comm, in, out, 5, TC_FLOAT64, TC_SUM, NULL, NULL), TC_OK);
    assert_memory_equal(in, out, sizeof(in));
    assert_int_equal(tc_all_reduce(comm, in, in, 5, TC_FLOAT64, TC_AVG, NULL, NULL), TC_OK);
    assert_memory_equal(in, out, sizeof(in));
    int32_t v[3] = {7, -7, 9};
    tc_op_opts_t o = TC_OP_OPTS_INIT;
    o.hints = "algo=recursive_doubling";
    assert_int_equal(tc_all_reduce(comm, v, v, 3, TC_INT32, TC_BXOR, &o, NULL), TC_OK);
    assert_int_equal(v[0], 7);
    assert_int_equal(v[1], -7);
    assert_int_equal(v[2], 9);
    assert_int_equal(tc_comm_destroy(comm), TC_OK);
    assert_int_equal(tc_comm_destroy(NULL), TC_OK);
}

static void expect(tc_status_t got, tc_status_t want, const char *needle)
{
    assert_int_equal(got, want);
    const char *detail = tc_last_error();
    if (strstr(detail, needle) == NULL)
        fail_msg("detail '%s' does not mention '%s'", detail, needle);
}

static void test_bad_arguments(void **state)
{
    no_pmix_env();
    tc_comm_t *comm;
    assert_int_equal(tc_comm_create(NULL, &comm), TC_OK);
    float a[8] = {0}, b[8];
    expect(tc_all_reduce(NULL, a, b, 8, TC_FLOAT32, TC_SUM, NULL, NULL), TC_ERR_INVALID_ARG,
           "comm is NULL");
    expect(tc_all_reduce(comm, NULL, b, 8, TC_FLOAT32, TC_SUM, NULL, NULL), TC_ERR_INVALID_ARG,
           "sendbuf is NULL");
    expect(tc_all_reduce(comm, a, NULL, 8, TC_FLOAT32, TC_SUM, NULL, NULL), TC_ERR_INVALID_ARG,
           "recvbuf is NULL");
    expect(tc_all_reduce(comm, a, b, 8, (tc_dtype_t)42, TC_SUM, NULL, NULL), TC_ERR_INVALID_ARG,
           "dtype 42");
    expect(tc_all_reduce(comm, a, b, 8, TC_FLOAT32, (tc_redop_t)9, NULL, NULL),
           TC_ERR_INVALID_ARG, "op 9");
    expect(tc_all_reduce(comm, a, b, 8, TC_FLOAT32, TC_BAND, NULL, NULL), TC_ERR_UNSUPPORTED,
           "band");
    expect(tc_all_reduce(comm, a, a + 2, 4, TC_FLOAT32, TC_SUM, NULL, NULL), TC_ERR_INVALID_ARG,
           "overlap");
    expect(tc_all_reduce(comm, a, b, SIZE_MAX / 3, TC_FLOAT32, TC_SUM, NULL, NULL),
           TC_ERR_INVALID_ARG, "too large");
    /* count 0 with NULL buffers is allowed */
    assert_int_equal(tc_all_reduce(comm, NULL, NULL, 0, TC_FLOAT32, TC_SUM, NULL, NULL), TC_OK);
    tc_op_opts_t o = TC_OP_OPTS_INIT;
    o.hints = "algo=bogus";
    expect(tc_all_reduce(comm, a, b, 8, TC_FLOAT32, TC_SUM, &o, NULL), TC_ERR_NOT_FOUND,
           "valid names: ring, recursive_doubling");
    o.hints = "=x";
    expect(tc_all_reduce(comm, a, b, 8, TC_FLOAT32, TC_SUM, &o, NULL), TC_ERR_CONFIG, "hints");
    o = (tc_op_opts_t)TC_OP_OPTS_INIT;
    o.size = 4;
    expect(tc_all_reduce(comm, a, b, 8, TC_FLOAT32, TC_SUM, &o, NULL), TC_ERR_INVALID_ARG,
           "TC_OP_OPTS_INIT");
    o.size = sizeof(o);
    o.async = 1;
    expect(tc_all_reduce(comm, a, b, 8, TC_FLOAT32, TC_SUM, &o, NULL), TC_ERR_INVALID_ARG,
           "work_p is NULL");
    int x;
    expect(tc_comm_rank(NULL, &x), TC_ERR_INVALID_ARG, "comm is NULL");
    expect(tc_comm_rank(comm, NULL), TC_ERR_INVALID_ARG, "rank_p");
    expect(tc_comm_size(comm, NULL), TC_ERR_INVALID_ARG, "size_p");
    expect(tc_comm_create(NULL, NULL), TC_ERR_INVALID_ARG, "comm_p");
    tc_comm_opts_t co = TC_COMM_OPTS_INIT;
    co.bootstrap = (tc_bootstrap_t)17;
    tc_comm_t *c2;
    expect(tc_comm_create(&co, &c2), TC_ERR_INVALID_ARG, "bootstrap");
    co = (tc_comm_opts_t)TC_COMM_OPTS_INIT;
    co.size = 1;
    expect(tc_comm_create(&co, &c2), TC_ERR_INVALID_ARG, "TC_COMM_OPTS_INIT");
    co = (tc_comm_opts_t)TC_COMM_OPTS_INIT;
    co.hints = "novalue";
    expect(tc_comm_create(&co, &c2), TC_ERR_CONFIG, "novalue");
    /* still usable after all the rejected calls */
    assert_int_equal(tc_all_reduce(comm, a, b, 8, TC_FLOAT32, TC_SUM, NULL, NULL), TC_OK);
    assert_int_equal(tc_comm_destroy(comm), TC_OK);
}

static void test_configuration_errors(void **state)
{
    no_pmix_env();
    tc_comm_t *comm;
    setenv("TC_TIMEOUT_S", "soon", 1);
    expect(tc_comm_create(NULL, &comm), TC_ERR_CONFIG, "TC_TIMEOUT_S");
    unsetenv("TC_TIMEOUT_S");
    setenv("TC_BOOTSTRAP", "carrier-pigeon", 1);
    expect(tc_comm_create(NULL, &comm), TC_ERR_CONFIG, "auto, pmix, self");
    /* PMIx required, no server: an immediate, clear error rather than a hang */
    setenv("TC_BOOTSTRAP", "pmix", 1);
    expect(tc_comm_create(NULL, &comm), TC_ERR_BOOTSTRAP, "no PMIx server");
    tc_comm_opts_t co = TC_COMM_OPTS_INIT;
    co.bootstrap = TC_BOOTSTRAP_PMIX;
    unsetenv("TC_BOOTSTRAP");
    expect(tc_comm_create(&co, &comm), TC_ERR_BOOTSTRAP, "tcrun, mpirun or srun");
    setenv("TC_ALGO_ALL_REDUCE", "nope", 1);
    assert_int_equal(tc_comm_create(NULL, &comm), TC_OK);
    float a[2] = {1, 2}, b[2];
    expect(tc_all_reduce(comm, a, b, 2, TC_FLOAT32, TC_SUM, NULL, NULL), TC_ERR_NOT_FOUND,
           "nope");
    unsetenv("TC_ALGO_ALL_REDUCE");
    tc_comm_destroy(comm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_world_of_one),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_configuration_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
