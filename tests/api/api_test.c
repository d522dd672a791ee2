/* The public API as a world of one: every rejected argument has its status
 * and a detail; configuration and bootstrap errors are precise; the results
 * of a one-rank all-reduce are the inputs (avg included). */
#include <dirent.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcomms/tcomms.h"
#include "tests/proc_threads.h"

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

/* The library's version is the header's, and the three parts make the whole. */
static void test_version(void **state)
{
    (void)state;
    assert_int_equal(tc_version(), TC_VERSION);
    assert_int_equal(TC_VERSION,
                     TC_VERSION_MAJOR * 10000 + TC_VERSION_MINOR * 100 + TC_VERSION_PATCH);
    assert_true(TC_VERSION_MINOR < 100 && TC_VERSION_PATCH < 100);
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

/* The progress thread goes by its name (top -H, perf, gdb), and ends with the world. */
static void test_progress_thread_named(void **state)
{
    no_pmix_env();
    assert_int_equal(tc_test_threads_named("tc-progress"), 0);
    tc_comm_t *comm = NULL;
    assert_int_equal(tc_comm_create(NULL, &comm), TC_OK);
    float in[4] = {1, 2, 3, 4}, out[4] = {0};
    tc_op_opts_t o = TC_OP_OPTS_INIT;
    o.async = 1;
    tc_work_t *w = NULL;
    assert_int_equal(tc_all_reduce(comm, in, out, 4, TC_FLOAT32, TC_SUM, &o, &w), TC_OK);
    assert_int_equal(tc_work_wait(w, -1), TC_OK);
    assert_int_equal(tc_work_free(w), TC_OK);
    assert_memory_equal(in, out, sizeof(in));
    assert_int_equal(tc_test_threads_named("tc-progress"), 1);
    assert_int_equal(tc_comm_destroy(comm), TC_OK);
    assert_int_equal(tc_test_threads_named("tc-progress"), 0);
}

/* An abort with no creation in progress must not touch the creations after it. */
static void test_create_abort_is_not_sticky(void **state)
{
    (void)state;
    no_pmix_env();
    tc_comm_create_abort();
    tc_comm_create_abort();
    tc_comm_t *comm = NULL;
    assert_int_equal(tc_comm_create(NULL, &comm), TC_OK);
    assert_int_equal(tc_comm_destroy(comm), TC_OK);
}

static void expect(tc_status_t got, tc_status_t want, const char *needle)
{
    assert_int_equal(got, want);
    const char *detail = tc_last_error();
    if (strstr(detail, needle) == NULL)
        fail_msg("detail '%s' does not mention '%s'", detail, needle);
}

/* A communicator's hint algo=<name> applies to the collectives that have an algorithm of that
 * name; the others choose as usual (every one failed with TC_ERR_NOT_FOUND); a name no
 * collective has is refused at creation (it was accepted, and then every collective failed). */
static void test_comm_algo_hint(void **state)
{
    (void)state;
    no_pmix_env();
    tc_comm_opts_t co = TC_COMM_OPTS_INIT;
    co.hints = "algo=rabenseifner"; /* all-reduce and reduce-scatter only */
    tc_comm_t *comm;
    assert_int_equal(tc_comm_create(&co, &comm), TC_OK);
    double x[4] = {1, 2, 3, 4}, y[4];
    assert_int_equal(tc_all_reduce(comm, x, y, 4, TC_FLOAT64, TC_SUM, NULL, NULL), TC_OK);
    assert_memory_equal(x, y, sizeof(x));
    assert_int_equal(tc_barrier(comm, NULL, NULL), TC_OK);
    assert_int_equal(tc_broadcast(comm, x, 4, TC_FLOAT64, 0, NULL, NULL), TC_OK);
    assert_int_equal(tc_all_gather(comm, x, y, 4, TC_FLOAT64, NULL, NULL), TC_OK);
    assert_int_equal(tc_comm_destroy(comm), TC_OK);
    /* all_to_all has linear, all_to_all_v only pairwise: the communicator's linear leaves it
     * alone (every all_to_all_v failed "no all_to_all_v algorithm named 'linear'") */
    co.hints = "algo=linear";
    assert_int_equal(tc_comm_create(&co, &comm), TC_OK);
    size_t one = 4, zero = 0;
    memset(y, 0, sizeof(y));
    assert_int_equal(tc_all_to_all_v(comm, x, &one, &zero, y, &one, &zero, TC_FLOAT64, NULL, NULL),
                     TC_OK);
    assert_memory_equal(x, y, sizeof(x));
    tc_op_opts_t oo = TC_OP_OPTS_INIT;
    oo.hints = "algo=pairwise";
    assert_int_equal(tc_all_to_all_v(comm, x, &one, &zero, y, &one, &zero, TC_FLOAT64, &oo, NULL),
                     TC_OK);
    oo.hints = "algo=linear";
    expect(tc_all_to_all_v(comm, x, &one, &zero, y, &one, &zero, TC_FLOAT64, &oo, NULL),
           TC_ERR_NOT_FOUND,
           "all_to_all_v #3 on comm 'world': no all_to_all_v algorithm named "
           "'linear'; valid names: pairwise");
    assert_int_equal(tc_comm_destroy(comm), TC_OK);
    /* all_gather's bruck has no v-form: the communicator's bruck leaves all_gather_v alone
     * (it failed "has no v-variant") */
    co.hints = "algo=bruck";
    assert_int_equal(tc_comm_create(&co, &comm), TC_OK);
    memset(y, 0, sizeof(y));
    assert_int_equal(tc_all_gather_v(comm, x, 4, y, &one, NULL, TC_FLOAT64, NULL, NULL), TC_OK);
    assert_memory_equal(x, y, sizeof(x));
    assert_int_equal(tc_comm_destroy(comm), TC_OK);
    co.hints = "algo=bogus";
    expect(tc_comm_create(&co, &comm), TC_ERR_INVALID_ARG,
           "hint algo=bogus: no collective has an algorithm of that name (known: ");
    /* a key nothing reads is refused, not ignored (a misspelt one was); a transport's applies
     * at the creation, which opens the transports: a communicator made from another shares
     * them, and takes only the value they were opened with (one set of options for both) */
    co.hints = "alg=ring";
    expect(tc_comm_create(&co, &comm), TC_ERR_INVALID_ARG,
           "unknown hint alg (known: algo, shm_cells, shm_cell_size, ");
    co.hints = "algo=ring,shm_cels=64";
    expect(tc_comm_create(&co, &comm), TC_ERR_INVALID_ARG, "unknown hint shm_cels (known: algo");
    /* the ib backend's hints are checked on every machine: this one has no RDMA device, where
     * they were accepted unread */
    co.hints = "ib.port=abc";
    expect(tc_comm_create(&co, &comm), TC_ERR_CONFIG, "ib.port");
    co.hints = "ib.port=70000";
    expect(tc_comm_create(&co, &comm), TC_ERR_CONFIG, "ib.port");
    co.hints = "ib.gid_index=-1";
    expect(tc_comm_create(&co, &comm), TC_ERR_CONFIG, "ib.gid_index");
    co.hints = "ib.device=";
    expect(tc_comm_create(&co, &comm), TC_ERR_CONFIG, "hint ib.device=\"\": not a device name");
    /* a key twice: which was meant is not known (the last one was taken) */
    co.hints = "shm_cells=4,shm_cells=8";
    expect(tc_comm_create(&co, &comm), TC_ERR_CONFIG, "key \"shm_cells\" is given twice");
    co.hints = "tcp_nsocks=2,ib.port=1,shm_cells=64";
    assert_int_equal(tc_comm_create(&co, &comm), TC_OK);
    tc_comm_t *child;
    co.hints = "algo=ring,tcp_nsocks=4";
    expect(tc_comm_dup(comm, &co, &child), TC_ERR_INVALID_ARG,
           "hint tcp_nsocks=4 configures the tcp transport, which a communicator shares with the "
           "one it is made from (there 2): it applies only to tc_comm_create");
    co.hints = "algo=ring,shm_cell_size=4096";
    expect(tc_comm_split(comm, 0, 0, &co, &child), TC_ERR_INVALID_ARG,
           "(unset there): it applies only to tc_comm_create");
    co.hints = "algo=ring,nosuch=1";
    expect(tc_comm_dup(comm, &co, &child), TC_ERR_INVALID_ARG,
           "unknown hint nosuch (known: algo, shm_cells, ");
    co.hints = "algo=bogus";
    expect(tc_comm_dup(comm, &co, &child), TC_ERR_INVALID_ARG, "hint algo=bogus");
    co.hints = "tcp_nsocks=2,ib.port=1,shm_cells=64"; /* the creation's options again */
    co.name = ""; /* logs, errors and dump files would name "" */
    expect(tc_comm_dup(comm, &co, &child), TC_ERR_INVALID_ARG,
           "tc_comm_dup: opts->name is empty (NULL gives the default name)");
    expect(tc_comm_split(comm, 0, 0, &co, &child), TC_ERR_INVALID_ARG,
           "tc_comm_split: opts->name is empty");
    co.name = NULL;
    assert_int_equal(tc_comm_dup(comm, &co, &child), TC_OK);
    assert_int_equal(tc_comm_destroy(child), TC_OK);
    co.hints = "algo=ring";
    assert_int_equal(tc_comm_dup(comm, &co, &child), TC_OK); /* inherits nothing to refuse */
    assert_int_equal(tc_all_reduce(child, x, y, 4, TC_FLOAT64, TC_SUM, NULL, NULL), TC_OK);
    assert_int_equal(tc_comm_destroy(child), TC_OK);
    assert_int_equal(tc_comm_dup(comm, NULL, &child), TC_OK); /* the parent's transport hints */
    assert_int_equal(tc_comm_destroy(child), TC_OK);
    assert_int_equal(tc_comm_destroy(comm), TC_OK);
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
    expect(tc_all_reduce(comm, a, b, 8, TC_FLOAT32, (tc_redop_t)9, NULL, NULL), TC_ERR_INVALID_ARG,
           "op 9");
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
    /* a 10 KB name: echoed by its head and "...", the valid names kept (they were cut off) */
    static char longhint[10000] = "algo=";
    memset(longhint + 5, 'q', sizeof(longhint) - 6);
    o.hints = longhint;
    expect(tc_all_reduce(comm, a, b, 8, TC_FLOAT32, TC_SUM, &o, NULL), TC_ERR_NOT_FOUND,
           "qqq...'; valid names: ring, recursive_doubling");
    assert_true(strlen(tc_last_error()) < 600);
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
    /* a malformed value is an error naming the variable, not a crash (comm_alloc failed and
     * create freed an uninitialised pointer) */
    setenv("TC_CHECK", "garbage", 1);
    expect(tc_comm_create(NULL, &comm), TC_ERR_CONFIG, "TC_CHECK");
    unsetenv("TC_CHECK");
    setenv("TC_FR_SIZE", "garbage", 1);
    expect(tc_comm_create(NULL, &comm), TC_ERR_CONFIG, "TC_FR_SIZE");
    unsetenv("TC_FR_SIZE");
    /* TC_IB_* are checked on a machine without RDMA too (TC_IB_PORT=abc was ignored),
     * and with TC_IB=0 */
    static const char *const ib[][3] = {
        {"TC_IB_PORT", "abc",
         "TC_IB_PORT=\"abc\": not an integer (accepted: integers in [1, 255])"},
        {"TC_IB_PORT", "0", "TC_IB_PORT=\"0\": out of range"},
        {"TC_IB_DEVICE", "", "TC_IB_DEVICE=\"\": not a device name (accepted: an RDMA device"},
        {"TC_IB_DEVICE", "mlx5 0", "TC_IB_DEVICE=\"mlx5 0\""},
        {"TC_IB_KEEPALIVE_MS", "-1", "TC_IB_KEEPALIVE_MS=\"-1\": out of range"},
        {"TC_IB_REG_CACHE", "maybe", "TC_IB_REG_CACHE=\"maybe\": not a boolean"},
        {"TC_IB_REG_CACHE_MAX", "lots", "TC_IB_REG_CACHE_MAX=\"lots\""},
    };
    for (size_t i = 0; i < sizeof(ib) / sizeof(ib[0]); i++) {
        setenv(ib[i][0], ib[i][1], 1);
        expect(tc_comm_create(NULL, &comm), TC_ERR_CONFIG, ib[i][2]);
        setenv("TC_IB", "0", 1);
        expect(tc_comm_create(NULL, &comm), TC_ERR_CONFIG, ib[i][2]);
        unsetenv("TC_IB");
        unsetenv(ib[i][0]);
    }
    /* a malformed TC_* variable is TC_ERR_CONFIG at creation, as tcomms.h says (an
     * unknown TC_ALGO_<COLL> name was TC_ERR_NOT_FOUND at the first operation) */
    setenv("TC_ALGO_ALL_REDUCE", "nope", 1);
    expect(tc_comm_create(NULL, &comm), TC_ERR_CONFIG,
           "TC_ALGO_ALL_REDUCE=\"nope\": unknown algorithm (accepted: ring, recursive_doubling");
    unsetenv("TC_ALGO_ALL_REDUCE");
}

/* Timeouts too large for the clock mean "no timeout": the deadline saturates instead of
 * wrapping into the past (INT64_MAX and 2^62 ms used to time out at once). */
static void test_huge_timeouts(void **state)
{
    no_pmix_env();
    tc_comm_t *comm;
    assert_int_equal(tc_comm_create(NULL, &comm), TC_OK);
    const int64_t huge[] = {INT64_MAX, (int64_t)1 << 62, (int64_t)1 << 53};
    for (size_t i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
        tc_op_opts_t o = TC_OP_OPTS_INIT;
        o.timeout_ms = huge[i];
        o.async = 1;
        int32_t in[4] = {1, 2, 3, (int32_t)i}, out[4] = {0};
        tc_work_t *rw = NULL;
        assert_int_equal(tc_recv(comm, out, 4, TC_INT32, 0, &o, &rw), TC_OK);
        for (int k = 0; k < 20; k++) { /* the progress thread and tests see it pending */
            int done = -1;
            assert_int_equal(tc_work_test(rw, &done), TC_INPROGRESS);
            assert_int_equal(done, 0);
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        assert_int_equal(tc_send(comm, in, 4, TC_INT32, 0, NULL, NULL), TC_OK);
        assert_int_equal(tc_work_wait(rw, 10000), TC_OK);
        assert_memory_equal(out, in, sizeof(in));
        assert_int_equal(tc_work_free(rw), TC_OK);
    }
    assert_int_equal(tc_comm_destroy(comm), TC_OK);
}

/* Every operation in a world of one: results equal the inputs (block 0 is
 * this rank's), and work objects, batches, persistent work, split, dup,
 * shrink and the fault-tolerance calls behave. */
static void test_every_call_alone(void **state)
{
    no_pmix_env();
    tc_comm_t *comm;
    assert_int_equal(tc_comm_create(NULL, &comm), TC_OK);
    int32_t in[6] = {3, -1, 4, 1, -5, 9}, out[6];
    memset(out, 0, sizeof(out));
    assert_int_equal(tc_reduce(comm, in, out, 6, TC_INT32, TC_MAX, 0, NULL, NULL), TC_OK);
    assert_memory_equal(in, out, sizeof(in));
    memcpy(out, in, sizeof(in));
    assert_int_equal(tc_broadcast(comm, out, 6, TC_INT32, 0, NULL, NULL), TC_OK);
    assert_memory_equal(in, out, sizeof(in));
    memset(out, 0, sizeof(out));
    assert_int_equal(tc_all_gather(comm, in, out, 6, TC_INT32, NULL, NULL), TC_OK);
    assert_memory_equal(in, out, sizeof(in));
    memset(out, 0, sizeof(out));
    assert_int_equal(tc_reduce_scatter(comm, in, out, 6, TC_INT32, TC_SUM, NULL, NULL), TC_OK);
    assert_memory_equal(in, out, sizeof(in));
    memset(out, 0, sizeof(out));
    assert_int_equal(tc_all_to_all(comm, in, out, 6, TC_INT32, NULL, NULL), TC_OK);
    assert_memory_equal(in, out, sizeof(in));
    memset(out, 0, sizeof(out));
    assert_int_equal(tc_gather(comm, in, out, 6, TC_INT32, 0, NULL, NULL), TC_OK);
    assert_memory_equal(in, out, sizeof(in));
    memset(out, 0, sizeof(out));
    assert_int_equal(tc_scatter(comm, in, out, 6, TC_INT32, 0, NULL, NULL), TC_OK);
    assert_memory_equal(in, out, sizeof(in));
    size_t c6[1] = {6}, d2[1] = {2};
    int32_t wide[8];
    memset(wide, 0, sizeof(wide));
    assert_int_equal(tc_all_gather_v(comm, in, 6, wide, c6, d2, TC_INT32, NULL, NULL), TC_OK);
    assert_memory_equal(in, wide + 2, sizeof(in));
    memset(out, 0, sizeof(out));
    assert_int_equal(tc_all_to_all_v(comm, in, c6, NULL, out, c6, NULL, TC_INT32, NULL, NULL),
                     TC_OK);
    assert_memory_equal(in, out, sizeof(in));
    assert_int_equal(tc_barrier(comm, NULL, NULL), TC_OK);

    /* send to itself inside a batch */
    memset(out, 0, sizeof(out));
    assert_int_equal(tc_batch_begin(comm), TC_OK);
    assert_int_equal(tc_send(comm, in, 6, TC_INT32, 0, NULL, NULL), TC_OK);
    assert_int_equal(tc_recv(comm, out, 6, TC_INT32, 0, NULL, NULL), TC_OK);
    assert_int_equal(tc_batch_end(comm, NULL, NULL), TC_OK);
    assert_memory_equal(in, out, sizeof(in));

    /* asynchronous, then waited for; test; status */
    tc_op_opts_t o = TC_OP_OPTS_INIT;
    o.async = 1;
    tc_work_t *w = NULL;
    memset(out, 0, sizeof(out));
    assert_int_equal(tc_all_reduce(comm, in, out, 6, TC_INT32, TC_SUM, &o, &w), TC_OK);
    assert_int_equal(tc_work_wait(w, 5000), TC_OK);
    assert_memory_equal(in, out, sizeof(in));
    int done = 0;
    assert_int_equal(tc_work_test(w, &done), TC_OK);
    assert_int_equal(done, 1);
    tc_work_state_t ws;
    tc_status_t res;
    assert_int_equal(tc_work_status(w, &ws, &res), TC_OK);
    assert_int_equal(ws, TC_WORK_COMPLETED);
    assert_int_equal(res, TC_OK);
    assert_string_equal(tc_work_error(w), "");
    expect(tc_work_start(w), TC_ERR_INVALID_STATE, "not persistent");
    assert_int_equal(tc_work_free(w), TC_OK);

    /* persistent: started three times with new data */
    int32_t mine = 0, all = -1;
    tc_work_t *pw;
    assert_int_equal(tc_all_gather_init(comm, &mine, &all, 1, TC_INT32, NULL, &pw), TC_OK);
    assert_int_equal(tc_work_status(pw, &ws, NULL), TC_OK);
    assert_int_equal(ws, TC_WORK_NOT_STARTED);
    expect(tc_work_wait(pw, 0), TC_ERR_INVALID_STATE, "never started");
    for (int i = 1; i <= 3; i++) {
        mine = 10 * i;
        assert_int_equal(tc_work_start(pw), TC_OK);
        assert_int_equal(tc_work_wait(pw, -1), TC_OK);
        assert_int_equal(all, 10 * i);
    }
    assert_int_equal(tc_work_free(pw), TC_OK);

    /* split, split by list, dup, shrink: each a working world of one */
    tc_comm_t *c2 = NULL, *c3 = NULL, *c4 = NULL, *c5 = NULL, *none = (tc_comm_t *)1;
    assert_int_equal(tc_comm_split(comm, 7, 0, NULL, &c2), TC_OK);
    assert_int_equal(tc_comm_split(comm, TC_SPLIT_NONE, 0, NULL, &none), TC_OK);
    assert_null(none);
    int zero = 0;
    assert_int_equal(tc_comm_split_ranks(comm, &zero, 1, NULL, &c3), TC_OK);
    tc_comm_opts_t co = TC_COMM_OPTS_INIT;
    co.name = "copy";
    assert_int_equal(tc_comm_dup(comm, &co, &c4), TC_OK);
    const char *name;
    assert_int_equal(tc_comm_name(c4, &name), TC_OK);
    assert_string_equal(name, "copy");
    /* default names: the parent's and the count of its children (the NONE split counts) */
    const char *pname;
    char want[96];
    assert_int_equal(tc_comm_name(comm, &pname), TC_OK);
    assert_int_equal(tc_comm_name(c2, &name), TC_OK);
    snprintf(want, sizeof(want), "%s.1.7", pname); /* its color */
    assert_string_equal(name, want);
    assert_int_equal(tc_comm_name(c3, &name), TC_OK);
    snprintf(want, sizeof(want), "%s.3", pname);
    assert_string_equal(name, want);
    assert_int_equal(tc_comm_shrink(comm, NULL, &c5), TC_OK);
    assert_int_equal(tc_comm_name(c5, &name), TC_OK);
    snprintf(want, sizeof(want), "%s.shrunk", pname);
    assert_string_equal(name, want);
    tc_comm_t *cs[] = {c2, c3, c4, c5};
    for (int i = 0; i < 4; i++) {
        int32_t v = 5 + i, r = 0;
        assert_int_equal(tc_all_reduce(cs[i], &v, &r, 1, TC_INT32, TC_SUM, NULL, NULL), TC_OK);
        assert_int_equal(r, 5 + i);
        assert_int_equal(tc_comm_destroy(cs[i]), TC_OK);
    }
    tc_comm_info_t info;
    assert_int_equal(tc_comm_info(comm, &info), TC_OK);
    assert_int_equal(info.size, 1);
    assert_string_equal(info.launcher, "self");
    int failed[4], nfailed = -1;
    assert_int_equal(tc_comm_failed_ranks(comm, failed, 4, &nfailed), TC_OK);
    assert_int_equal(nfailed, 0);
    unsetenv("TC_FR_DIR");
    expect(tc_comm_dump_fr(comm), TC_ERR_CONFIG, "TC_FR_DIR");

    /* abort: later operations fail at once, naming why */
    assert_int_equal(tc_comm_abort(comm), TC_OK);
    expect(tc_barrier(comm, NULL, NULL), TC_ERR_ABORTED, "aborted");
    assert_int_equal(tc_comm_destroy(comm), TC_OK);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* A name with '/' (or other characters a file name should not hold) dumps to a file whose name
 * has '_' for them: it named a missing directory, and the dump was lost (TC_ERR_SYSTEM). */
static void test_fr_name_with_slash(void **state)
{
    (void)state;
    no_pmix_env();
    const char *t = getenv("TEST_TMPDIR");
    char dir[256], path[512];
    snprintf(dir, sizeof(dir), "%s/tc_fr_XXXXXX", t && *t ? t : "/tmp");
    assert_non_null(mkdtemp(dir));
    setenv("TC_FR_DIR", dir, 1);
    tc_comm_opts_t o = TC_COMM_OPTS_INIT;
    o.name = "../a/b c";
    tc_comm_t *comm;
    assert_int_equal(tc_comm_create(&o, &comm), TC_OK);
    assert_int_equal(tc_comm_dump_fr(comm), TC_OK);
    snprintf(path, sizeof(path), "%s/tc_fr..._a_b_c.0.json", dir);
    assert_int_equal(access(path, R_OK), 0);
    assert_int_equal(remove(path), 0);
    assert_int_equal(tc_comm_destroy(comm), TC_OK);
    unsetenv("TC_FR_DIR");
    assert_int_equal(rmdir(dir), 0);
}

/* A TC_FR_DIR too long for the dump's path (512 bytes) is refused. The path
 * used to be cut short silently: the dump went to a file named by the part
 * that fit, here "<base>/<200 d>/<200 d>/ddd..." beside the directory. */
static void test_fr_dir_too_long(void **state)
{
    (void)state;
    no_pmix_env();
    const char *t = getenv("TEST_TMPDIR");
    char base[256], dir[1024], part[201];
    snprintf(base, sizeof(base), "%s/tc_fr_XXXXXX", t && *t ? t : "/tmp");
    assert_non_null(mkdtemp(base));
    memset(part, 'd', 200);
    part[200] = '\0';
    snprintf(dir, sizeof(dir), "%s", base);
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(dir);
        snprintf(dir + n, sizeof(dir) - n, "/%s", part);
        assert_int_equal(mkdir(dir, 0700), 0);
    }
    assert_true(strlen(dir) > 512);
    /* refused at the creation (the dumps would be lost), and at a dump when set after it */
    setenv("TC_FR_DIR", dir, 1);
    tc_comm_t *comm;
    expect(tc_comm_create(NULL, &comm), TC_ERR_CONFIG, "bytes, more than 400: the flight");
    setenv("TC_FR_SIZE", "0", 1); /* no recorder: nothing to dump, the directory does not matter */
    assert_int_equal(tc_comm_create(NULL, &comm), TC_OK);
    assert_int_equal(tc_comm_destroy(comm), TC_OK);
    unsetenv("TC_FR_SIZE");
    unsetenv("TC_FR_DIR");
    assert_int_equal(tc_comm_create(NULL, &comm), TC_OK);
    setenv("TC_FR_DIR", dir, 1);
    expect(tc_comm_dump_fr(comm), TC_ERR_CONFIG, "TC_FR_DIR is too long");
    unsetenv("TC_FR_DIR");
    assert_int_equal(tc_comm_destroy(comm), TC_OK);
    /* nothing written beside the last directory */
    int entries = 0;
    char second[1024];
    snprintf(second, sizeof(second), "%.*s", (int)(strlen(dir) - 201), dir);
    DIR *d = opendir(second);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        entries += e->d_name[0] != '.';
    closedir(d);
    assert_int_equal(entries, 1);
    assert_int_equal(nftw(base, remove_entry, 8, FTW_DEPTH | FTW_PHYS), 0);
}

static int hook_calls[2];
static void count_hook(tc_comm_t *comm, const tc_op_info_t *info, int after, void *arg)
{
    (void)comm;
    if (strcmp(info->coll, "all_reduce") == 0 && arg == (void *)hook_calls)
        hook_calls[after ? 1 : 0]++;
}

/* Statistics count what ran, per collective and algorithm; hooks see each
 * operation before and after. */
static void test_stats_and_hooks(void **state)
{
    no_pmix_env();
    tc_comm_t *comm;
    assert_int_equal(tc_comm_create(NULL, &comm), TC_OK);
    assert_int_equal(tc_comm_add_hook(comm, count_hook, hook_calls), TC_OK);
    float a[16] = {0}, b[16];
    for (int i = 0; i < 3; i++)
        assert_int_equal(tc_all_reduce(comm, a, b, 16, TC_FLOAT32, TC_SUM, NULL, NULL), TC_OK);
    assert_int_equal(tc_barrier(comm, NULL, NULL), TC_OK);
    assert_int_equal(hook_calls[0], 3);
    assert_int_equal(hook_calls[1], 3);
    tc_comm_stat_t st[8];
    int n = 0;
    assert_int_equal(tc_comm_stats(comm, st, 8, &n), TC_OK);
    assert_int_equal(n, 2);
    uint64_t ar_ops = 0, ar_bytes = 0, bar_ops = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(st[i].coll, "all_reduce") == 0)
            ar_ops += st[i].ops, ar_bytes += st[i].bytes;
        if (strcmp(st[i].coll, "barrier") == 0)
            bar_ops += st[i].ops;
        assert_true(st[i].time_s >= 0);
    }
    assert_int_equal(ar_ops, 3);
    assert_int_equal(ar_bytes, 3 * 16 * sizeof(float));
    assert_int_equal(bar_ops, 1);
    /* an all_to_all_v counts what this rank sends, a batch its bytes (both counted 0 before) */
    size_t cnt = 5, zero = 0;
    assert_int_equal(tc_all_to_all_v(comm, a, &cnt, &zero, b, &cnt, &zero, TC_FLOAT32, NULL, NULL),
                     TC_OK);
    assert_int_equal(tc_batch_begin(comm), TC_OK);
    assert_int_equal(tc_send(comm, a, 6, TC_FLOAT32, 0, NULL, NULL), TC_OK);
    assert_int_equal(tc_recv(comm, b, 6, TC_FLOAT32, 0, NULL, NULL), TC_OK);
    assert_int_equal(tc_batch_end(comm, NULL, NULL), TC_OK);
    assert_int_equal(tc_comm_stats(comm, st, 8, &n), TC_OK);
    uint64_t a2a_bytes = 0, p2p_bytes = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(st[i].coll, "all_to_all") == 0)
            a2a_bytes += st[i].bytes;
        if (strcmp(st[i].coll, "send_recv") == 0)
            p2p_bytes += st[i].bytes;
    }
    assert_int_equal(a2a_bytes, 5 * sizeof(float));
    assert_int_equal(p2p_bytes, 2 * 6 * sizeof(float));
    expect(tc_comm_add_hook(comm, NULL, NULL), TC_ERR_INVALID_ARG, "fn is NULL");
    for (int i = 0; i < 3; i++)
        assert_int_equal(tc_comm_add_hook(comm, count_hook, NULL), TC_OK);
    expect(tc_comm_add_hook(comm, count_hook, NULL), TC_ERR_NO_RESOURCE, "4 hooks");
    expect(tc_comm_stats(comm, NULL, 1, &n), TC_ERR_INVALID_ARG, "stats is NULL");
    assert_int_equal(tc_comm_destroy(comm), TC_OK);
}

/* Every new call rejects bad arguments with its status and a detail. */
static void test_bad_arguments_everywhere(void **state)
{
    no_pmix_env();
    tc_comm_t *comm;
    assert_int_equal(tc_comm_create(NULL, &comm), TC_OK);
    int32_t a[4] = {0}, b[4];
    size_t c1[1] = {4}, c2[1] = {3};
    expect(tc_reduce(comm, a, b, 4, TC_INT32, TC_SUM, 1, NULL, NULL), TC_ERR_INVALID_ARG, "root 1");
    expect(tc_broadcast(comm, NULL, 4, TC_INT32, 0, NULL, NULL), TC_ERR_INVALID_ARG, "buf is NULL");
    expect(tc_gather(comm, a, b, 4, TC_INT32, -1, NULL, NULL), TC_ERR_INVALID_ARG, "root -1");
    expect(tc_scatter(comm, a, b, 4, (tc_dtype_t)99, 0, NULL, NULL), TC_ERR_INVALID_ARG,
           "dtype 99");
    expect(tc_reduce_scatter(comm, a, b, 4, TC_FLOAT32, TC_BOR, NULL, NULL), TC_ERR_UNSUPPORTED,
           "bor");
    expect(tc_all_gather(comm, a, a + 1, 2, TC_INT32, NULL, NULL), TC_ERR_INVALID_ARG, "overlap");
    expect(tc_all_gather_v(comm, a, 4, b, NULL, NULL, TC_INT32, NULL, NULL), TC_ERR_INVALID_ARG,
           "recvcounts is NULL");
    expect(tc_all_gather_v(comm, a, 4, b, c2, NULL, TC_INT32, NULL, NULL), TC_ERR_INVALID_ARG,
           "sendcount 4 differs");
    expect(tc_reduce_scatter_v(comm, a, b, NULL, NULL, TC_INT32, TC_SUM, NULL, NULL),
           TC_ERR_INVALID_ARG, "recvcounts is NULL");
    expect(tc_all_to_all_v(comm, a, c1, NULL, b, c2, NULL, TC_INT32, NULL, NULL),
           TC_ERR_INVALID_ARG, "this rank's block to itself");
    expect(tc_all_to_all_v(comm, a, c1, NULL, a, c1, NULL, TC_INT32, NULL, NULL),
           TC_ERR_INVALID_ARG, "never in place");
    expect(tc_send(comm, a, 4, TC_INT32, 1, NULL, NULL), TC_ERR_INVALID_ARG, "peer 1");
    expect(tc_recv(comm, NULL, 4, TC_INT32, 0, NULL, NULL), TC_ERR_INVALID_ARG, "buf is NULL");
    expect(tc_batch_end(comm, NULL, NULL), TC_ERR_INVALID_STATE, "no tc_batch_begin");
    assert_int_equal(tc_batch_begin(comm), TC_OK);
    expect(tc_batch_begin(comm), TC_ERR_INVALID_STATE, "recording a batch");
    expect(tc_all_reduce(comm, a, b, 4, TC_INT32, TC_SUM, NULL, NULL), TC_ERR_INVALID_STATE,
           "recording a batch");
    tc_work_t *w;
    tc_comm_t *nc;
    expect(tc_send(comm, a, 4, TC_INT32, 0, NULL, &w), TC_ERR_INVALID_ARG, "inside a batch");
    assert_int_equal(tc_batch_end(comm, NULL, NULL), TC_OK); /* empty batch */
    /* refused for its options, a batch stays open (it was dropped, its peers left waiting):
     * ended again it moves its data, or it is cancelled */
    int32_t in[4] = {1, 2, 3, 4}, out[4] = {0};
    tc_op_opts_t ao = TC_OP_OPTS_INIT;
    ao.async = 1;
    assert_int_equal(tc_batch_begin(comm), TC_OK);
    assert_int_equal(tc_send(comm, in, 4, TC_INT32, 0, NULL, NULL), TC_OK);
    assert_int_equal(tc_recv(comm, out, 4, TC_INT32, 0, NULL, NULL), TC_OK);
    expect(tc_batch_end(comm, &ao, NULL), TC_ERR_INVALID_ARG, "work_p is NULL");
    ao = (tc_op_opts_t)TC_OP_OPTS_INIT;
    ao.hints = "algo=ring";
    expect(tc_batch_end(comm, &ao, NULL), TC_ERR_INVALID_ARG, "algo");
    assert_int_equal(tc_batch_end(comm, NULL, NULL), TC_OK);
    assert_memory_equal(in, out, sizeof(in));
    assert_int_equal(tc_batch_begin(comm), TC_OK);
    assert_int_equal(tc_send(comm, in, 4, TC_INT32, 0, NULL, NULL), TC_OK);
    expect(tc_batch_end(comm, &ao, NULL), TC_ERR_INVALID_ARG, "algo");
    assert_int_equal(tc_batch_cancel(comm), TC_OK);
    expect(tc_all_gather_init(comm, a, b, 4, TC_INT32, NULL, NULL), TC_ERR_INVALID_ARG,
           "work_p is NULL");
    expect(tc_work_wait(NULL, 0), TC_ERR_INVALID_ARG, "work is NULL");
    expect(tc_work_test(NULL, NULL), TC_ERR_INVALID_ARG, "work is NULL");
    expect(tc_comm_split(comm, -2, 0, NULL, &nc), TC_ERR_INVALID_ARG, "negative");
    int dup2[2] = {0, 0};
    expect(tc_comm_split_ranks(comm, dup2, 1, NULL, NULL), TC_ERR_INVALID_ARG, "newcomm_p");
    expect(tc_comm_split_ranks(comm, dup2, 2, NULL, &nc), TC_ERR_INVALID_ARG, "1 to size");
    int bad = 3;
    expect(tc_comm_split_ranks(comm, &bad, 1, NULL, &nc), TC_ERR_INVALID_ARG, "out of range");
    tc_comm_opts_t co = TC_COMM_OPTS_INIT;
    co.device = 0;
    /* no GPU here (or no toolkit): refused, naming CUDA */
    expect(tc_comm_create(&co, &nc), TC_ERR_UNSUPPORTED, "CUDA");
    co.device = -2;
    expect(tc_comm_create(&co, &nc), TC_ERR_INVALID_ARG, "opts->device is -2");
    expect(tc_comm_failed_ranks(comm, NULL, 2, &bad), TC_ERR_INVALID_ARG, "ranks is NULL");
    expect(tc_comm_shrink(comm, NULL, NULL), TC_ERR_INVALID_ARG, "newcomm_p");
    tc_work_t *done = NULL;
    assert_int_equal(tc_barrier(comm, NULL, &done), TC_OK);
    assert_int_equal(tc_work_free(done), TC_OK);
    /* after free and destroy: refused, and no freed memory is read (ASan) */
    expect(tc_work_wait(done, 0), TC_ERR_INVALID_STATE, "was freed");
    assert_int_equal(tc_comm_destroy(comm), TC_OK);
    expect(tc_barrier(comm, NULL, NULL), TC_ERR_INVALID_STATE, "was destroyed");
    expect(tc_comm_destroy(comm), TC_ERR_INVALID_STATE, "was destroyed");
    int r;
    expect(tc_comm_rank(comm, &r), TC_ERR_INVALID_STATE, "was destroyed");
}

/* A receive smaller than the message is TC_ERR_MISMATCH as tcomms.h promises (it was
 * TC_ERR_TRUNCATED), naming the sizes and the peer, and a receive that fails on a live
 * endpoint reports its own cause, not the application's last error ("comm is NULL"). */
static void test_recv_count_mismatch(void **state)
{
    no_pmix_env();
    tc_comm_t *comm;
    int32_t in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8] = {0};
    int x;
    assert_int_equal(tc_comm_create(NULL, &comm), TC_OK);
    expect(tc_comm_rank(NULL, &x), TC_ERR_INVALID_ARG, "comm is NULL"); /* left behind */
    assert_int_equal(tc_batch_begin(comm), TC_OK);
    assert_int_equal(tc_send(comm, in, 8, TC_INT32, 0, NULL, NULL), TC_OK);
    assert_int_equal(tc_recv(comm, out, 4, TC_INT32, 0, NULL, NULL), TC_OK);
    expect(tc_batch_end(comm, NULL, NULL), TC_ERR_MISMATCH,
           "rank 0 sent more than the 16 bytes this receive expects");
    assert_null(strstr(tc_last_error(), "comm is NULL"));
    assert_int_equal(out[4], 0); /* nothing written past the receive */
    assert_int_equal(tc_comm_destroy(comm), TC_OK);

    /* and the other way: fewer bytes than expected */
    assert_int_equal(tc_comm_create(NULL, &comm), TC_OK);
    expect(tc_comm_rank(NULL, &x), TC_ERR_INVALID_ARG, "comm is NULL");
    assert_int_equal(tc_batch_begin(comm), TC_OK);
    assert_int_equal(tc_send(comm, in, 2, TC_INT32, 0, NULL, NULL), TC_OK);
    assert_int_equal(tc_recv(comm, out, 4, TC_INT32, 0, NULL, NULL), TC_OK);
    expect(tc_batch_end(comm, NULL, NULL), TC_ERR_MISMATCH,
           "received 8 bytes from rank 0, expected 16");
    assert_int_equal(tc_comm_destroy(comm), TC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_world_of_one),
        cmocka_unit_test(test_progress_thread_named),
        cmocka_unit_test(test_huge_timeouts),
        cmocka_unit_test(test_create_abort_is_not_sticky),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_configuration_errors),
        cmocka_unit_test(test_every_call_alone),
        cmocka_unit_test(test_bad_arguments_everywhere),
        cmocka_unit_test(test_stats_and_hooks),
        cmocka_unit_test(test_recv_count_mismatch),
        cmocka_unit_test(test_fr_dir_too_long),
        cmocka_unit_test(test_comm_algo_hint),
        cmocka_unit_test(test_fr_name_with_slash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
