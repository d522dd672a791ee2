/* Node probe and job layout. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcomms/base/status.h"
#include "tcomms/topo/topo.h"

static void expect_ints(const int *got, const int *want, int n, const char *what)
{
    int i;
    for (i = 0; i < n; i++) {
        if (got[i] != want[i]) {
            fail_msg("%s[%d] = %d, expected %d", what, i, got[i], want[i]);
        }
    }
}

static void test_job_interleaved(void **state)
{
    /* 8 ranks round-robin over 3 nodes whose ids sort differently from rank order */
    const uint64_t A = 300, B = 100, C = 200;
    const uint64_t ids[8] = {A, B, C, A, B, C, A, B};
    const int rank_node[8] = {0, 1, 2, 0, 1, 2, 0, 1};
    const int local_rank[8] = {0, 0, 0, 1, 1, 1, 2, 2};
    const int local_size[8] = {3, 3, 2, 3, 3, 2, 3, 3};
    const int leader[3] = {0, 1, 2}, size[3] = {3, 3, 2};
    tc_topo_job_t job;

    (void)state;
    assert_int_equal(tc_topo_job_build(ids, 8, &job), TC_OK);
    assert_int_equal(job.nranks, 8);
    assert_int_equal(job.nnodes, 3);
    expect_ints(job.rank_node, rank_node, 8, "rank_node");
    expect_ints(job.local_rank, local_rank, 8, "local_rank");
    expect_ints(job.local_size, local_size, 8, "local_size");
    expect_ints(job.node_leader, leader, 3, "node_leader");
    expect_ints(job.node_size, size, 3, "node_size");
    assert_int_equal(job.node_ids[0], A);
    assert_int_equal(job.node_ids[1], B);
    assert_int_equal(job.node_ids[2], C);
    tc_topo_job_free(&job);
    assert_null(job.rank_node);
    tc_topo_job_free(&job); /* twice is harmless */
    tc_topo_job_free(NULL);
}

static void test_job_blocked_and_trivial(void **state)
{
    const uint64_t blocked[7] = {9, 9, 9, 5, 5, 5, 5};
    const int rank_node[7] = {0, 0, 0, 1, 1, 1, 1};
    const int local_rank[7] = {0, 1, 2, 0, 1, 2, 3};
    const int local_size[7] = {3, 3, 3, 4, 4, 4, 4};
    const uint64_t one = 42, distinct[5] = {5, 4, 3, 2, 1};
    const int iota[5] = {0, 1, 2, 3, 4}, zeros[5] = {0}, ones[5] = {1, 1, 1, 1, 1};
    tc_topo_job_t job;

    (void)state;
    assert_int_equal(tc_topo_job_build(blocked, 7, &job), TC_OK);
    assert_int_equal(job.nnodes, 2);
    expect_ints(job.rank_node, rank_node, 7, "rank_node");
    expect_ints(job.local_rank, local_rank, 7, "local_rank");
    expect_ints(job.local_size, local_size, 7, "local_size");
    assert_int_equal(job.node_leader[0], 0);
    assert_int_equal(job.node_leader[1], 3);
    tc_topo_job_free(&job);

    assert_int_equal(tc_topo_job_build(&one, 1, &job), TC_OK);
    assert_int_equal(job.nnodes, 1);
    assert_int_equal(job.rank_node[0], 0);
    assert_int_equal(job.local_rank[0], 0);
    assert_int_equal(job.local_size[0], 1);
    assert_int_equal(job.node_leader[0], 0);
    assert_int_equal(job.node_ids[0], 42);
    tc_topo_job_free(&job);

    assert_int_equal(tc_topo_job_build(distinct, 5, &job), TC_OK);
    assert_int_equal(job.nnodes, 5);
    expect_ints(job.rank_node, iota, 5, "rank_node");
    expect_ints(job.local_rank, zeros, 5, "local_rank");
    expect_ints(job.local_size, ones, 5, "local_size");
    expect_ints(job.node_leader, iota, 5, "node_leader");
    tc_topo_job_free(&job);
}

/* Random layouts against a quadratic reference written from the definitions. */
static void test_job_random_against_reference(void **state)
{
    enum { N = 1000 };
    static uint64_t ids[N];
    uint64_t s = 12345;
    tc_topo_job_t job;
    int trial, i, j;

    (void)state;
    for (trial = 0; trial < 5; trial++) {
        int nodes_seen = 0;
        for (i = 0; i < N; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            ids[i] = (s >> 33) % (uint64_t)(1 + trial * 20) * 0x9e3779b97f4a7c15ull;
        }
        assert_int_equal(tc_topo_job_build(ids, N, &job), TC_OK);
        for (i = 0; i < N; i++) {
            int first = -1, before = 0, same = 0, node_index = 0;
            for (j = 0; j < N; j++) {
                if (ids[j] == ids[i]) {
                    same++;
                    if (first < 0) {
                        first = j;
                    }
                    if (j < i) {
                        before++;
                    }
                }
            }
            /* node index = number of distinct ids whose first rank precedes `first` */
            for (j = 0; j < first; j++) {
                int k, is_first = 1;
                for (k = 0; k < j; k++) {
                    if (ids[k] == ids[j]) {
                        is_first = 0;
                        break;
                    }
                }
                node_index += is_first;
            }
            if (first == i) {
                nodes_seen++;
            }
            assert_int_equal(job.rank_node[i], node_index);
            assert_int_equal(job.local_rank[i], before);
            assert_int_equal(job.local_size[i], same);
            assert_int_equal(job.node_leader[node_index], first);
            assert_int_equal(job.node_size[node_index], same);
            assert_true(job.node_ids[node_index] == ids[i]);
        }
        assert_int_equal(job.nnodes, nodes_seen);
        tc_topo_job_free(&job);
    }
}

static void test_job_errors(void **state)
{
    const uint64_t ids[2] = {1, 2};
    tc_topo_job_t job, before;

    (void)state;
    memset(&job, 0x3c, sizeof(job));
    before = job;
    assert_int_equal(tc_topo_job_build(NULL, 2, &job), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "node_ids is NULL"));
    assert_int_equal(tc_topo_job_build(ids, 2, NULL), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "job_p is NULL"));
    assert_int_equal(tc_topo_job_build(ids, 0, &job), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "nranks 0"));
    assert_int_equal(tc_topo_job_build(ids, -3, &job), TC_ERR_INVALID_ARG);
    assert_memory_equal(&job, &before, sizeof(job));
}

static void test_node_id(void **state)
{
    uint64_t a = tc_topo_node_id("node1", "b0d1");

    (void)state;
    assert_true(a != 0);
    assert_true(a == tc_topo_node_id("node1", "b0d1"));
    assert_true(a != tc_topo_node_id("node2", "b0d1"));
    assert_true(a != tc_topo_node_id("node1", "b0d2"));
    assert_true(a != tc_topo_node_id("node1", NULL));
    assert_true(tc_topo_node_id("ab", "c") != tc_topo_node_id("a", "bc"));
    assert_true(tc_topo_node_id("x", NULL) == tc_topo_node_id("x", ""));
}

static void test_probe_this_machine(void **state)
{
    char host[TC_TOPO_HOSTNAME_MAX], boot[128];
    tc_topo_node_t node;
    FILE *f;

    (void)state;
    assert_int_equal(tc_topo_node_probe(&node), TC_OK);
    assert_int_equal(gethostname(host, sizeof(host)), 0);
    assert_string_equal(node.hostname, host);
    f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f != NULL && fgets(boot, sizeof(boot), f) != NULL) {
        boot[strcspn(boot, "\n")] = '\0';
        assert_int_equal(node.has_boot_id, 1);
        assert_true(node.node_id == tc_topo_node_id(host, boot));
    } else {
        assert_int_equal(node.has_boot_id, 0);
        assert_true(node.node_id == tc_topo_node_id(host, NULL));
    }
    if (f != NULL) {
        fclose(f);
    }
    assert_int_equal(node.hwloc_ok, 1);
    assert_true(node.npackages >= 1);
    assert_true(node.nnuma >= 1);
    assert_true(node.ncores >= node.npackages);
    assert_true(node.npus >= node.ncores);
    assert_true(node.npus <= sysconf(_SC_NPROCESSORS_CONF));
    assert_int_equal(tc_topo_node_probe(NULL), TC_ERR_INVALID_ARG);
}

static void test_probe_synthetic_counts(void **state)
{
    tc_topo_node_t node;

    (void)state;
    assert_int_equal(setenv("HWLOC_SYNTHETIC", "pack:2 numa:2 core:3 pu:2", 1), 0);
    assert_int_equal(tc_topo_node_probe(&node), TC_OK);
    unsetenv("HWLOC_SYNTHETIC");
    assert_int_equal(node.hwloc_ok, 1);
    assert_int_equal(node.npackages, 2);
    assert_int_equal(node.nnuma, 4);
    assert_int_equal(node.ncores, 12);
    assert_int_equal(node.npus, 24);
}

static void test_probe_without_hwloc(void **state)
{
    tc_topo_node_t node;

    (void)state;
    /* "stop" leaves hwloc no discovery component: its load fails */
    assert_int_equal(setenv("HWLOC_COMPONENTS", "stop", 1), 0);
    assert_int_equal(tc_topo_node_probe(&node), TC_OK);
    unsetenv("HWLOC_COMPONENTS");
    assert_int_equal(node.hwloc_ok, 0);
    assert_int_equal(node.npackages, 0);
    assert_int_equal(node.ncores, 0);
    assert_int_equal(node.npus, (int)sysconf(_SC_NPROCESSORS_ONLN));
    assert_true(node.hostname[0] != '\0');
    assert_true(node.node_id != 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_job_interleaved),
        cmocka_unit_test(test_job_blocked_and_trivial),
        cmocka_unit_test(test_job_random_against_reference),
        cmocka_unit_test(test_job_errors),
        cmocka_unit_test(test_node_id),
        cmocka_unit_test(test_probe_this_machine),
        cmocka_unit_test(test_probe_synthetic_counts),
        cmocka_unit_test(test_probe_without_hwloc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
