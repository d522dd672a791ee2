/* The CPUs a node's ranks may use: cgroup quotas and cpusets on fake cgroup
 * trees, and this machine's count. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcomms/topo/topo.h"

static char root[PATH_MAX / 2];

/* Writes text to root/rel, making the directories on the way. */
static void put(const char *rel, const char *text)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')) != NULL; p++) {
        *p = '\0';
        mkdir(path, 0700);
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    const char *tmp = getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp";
    snprintf(root, sizeof(root), "%s/cpus_test.XXXXXX", tmp);
    return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_v2(void **state)
{
    (void)state;
    put("job/step/cpu.max", "150000 100000\n");
    assert_int_equal(tc_topo_cgroup_cpus(root, "0::/job/step\n"), 2); /* 1.5 rounds up */
    put("job/cpu.max", "50000 100000\n");
    assert_int_equal(tc_topo_cgroup_cpus(root, "0::/job/step\n"), 1); /* the parent binds */
    put("job/cpu.max", "max 100000\n");
    assert_int_equal(tc_topo_cgroup_cpus(root, "0::/job/step\n"), 2);
    put("job/step/cpu.max", "max 100000\n");
    assert_int_equal(tc_topo_cgroup_cpus(root, "0::/job/step\n"), 0); /* no limit anywhere */
    put("cpu.max", "9223372036854775807 100000\n"); /* the largest quota: no overflow */
    assert_int_equal(tc_topo_cgroup_cpus(root, "0::/\n"), INT_MAX);
    put("cpu.max", "400000 100000\n");
    assert_int_equal(tc_topo_cgroup_cpus(root, "0::/\n"), 4); /* the group is the top */
    /* a container without its own cgroup namespace: its path is not under the
     * mount, whose top is the container's group */
    assert_int_equal(tc_topo_cgroup_cpus(root, "0::/docker/0123abcd\n"), 4);
    const char *bad[] = {"junk\n", "150000\n", "150000 x\n", "150000x 100000\n", "-1 100000\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        put("cpu.max", bad[i]);
        assert_int_equal(tc_topo_cgroup_cpus(root, "0::/\n"), 0);
    }
}

static void test_v1(void **state)
{
    (void)state;
    const char *cg = "12:memory:/slurm/job7\n4:cpu,cpuacct:/slurm/job7\n0::/\n";
    put("memory/slurm/job7/cpu.cfs_quota_us", "100000\n"); /* not the cpu controller */
    put("memory/slurm/job7/cpu.cfs_period_us", "100000\n");
    assert_int_equal(tc_topo_cgroup_cpus(root, cg), 0);
    put("cpu,cpuacct/slurm/job7/cpu.cfs_quota_us", "-1\n");
    put("cpu,cpuacct/slurm/job7/cpu.cfs_period_us", "100000\n");
    assert_int_equal(tc_topo_cgroup_cpus(root, cg), 0);
    put("cpu,cpuacct/slurm/job7/cpu.cfs_quota_us", "250000\n");
    assert_int_equal(tc_topo_cgroup_cpus(root, cg), 3);
    put("cpu,cpuacct/slurm/cpu.cfs_quota_us", "200000\n"); /* no period beside it: ignored */
    assert_int_equal(tc_topo_cgroup_cpus(root, cg), 3);
    put("cpu,cpuacct/slurm/cpu.cfs_period_us", "100000\n");
    assert_int_equal(tc_topo_cgroup_cpus(root, cg), 2);
    put("cpu.max", "100000 100000\n"); /* a v2 line too: the smaller wins */
    assert_int_equal(tc_topo_cgroup_cpus(root, cg), 1);
}

static void test_nothing_readable(void **state)
{
    (void)state;
    assert_int_equal(tc_topo_cgroup_cpus(root, ""), 0);
    assert_int_equal(tc_topo_cgroup_cpus(root, "no colons here\n"), 0);
    assert_int_equal(tc_topo_cgroup_cpus(root, "0::/absent\n1:cpu:/absent"), 0);
    assert_int_equal(tc_topo_cgroup_cpus("/nonexistent-cgroup-root", "0::/\n"), 0);
}

static void test_cpuset(void **state)
{
    (void)state;
    put("ctr/cpuset.cpus.effective", "0-3,8,10-11\n");
    assert_int_equal(tc_topo_cgroup_cpus(root, "0::/ctr\n"), 7);
    put("ctr/cpu.max", "300000 100000\n"); /* the quota is smaller */
    assert_int_equal(tc_topo_cgroup_cpus(root, "0::/ctr\n"), 3);
    put("ctr/cpuset.cpus.effective", "5\n");
    assert_int_equal(tc_topo_cgroup_cpus(root, "0::/ctr\n"), 1);
    const char *bad[] = {"\n", "3-1\n", "a\n", "1,x\n", "-2\n", "0-\n"};
    put("ctr/cpu.max", "max 100000\n");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        put("ctr/cpuset.cpus.effective", bad[i]);
        assert_int_equal(tc_topo_cgroup_cpus(root, "0::/ctr\n"), 0);
    }
    /* v1: effective_cpus first, else cpus */
    put("cpuset/job/cpuset.cpus", "0-1\n");
    assert_int_equal(tc_topo_cgroup_cpus(root, "3:cpuset:/job\n"), 2);
    put("cpuset/job/cpuset.effective_cpus", "1\n");
    assert_int_equal(tc_topo_cgroup_cpus(root, "3:cpuset:/job\n"), 1);
}

static void test_this_machine(void **state)
{
    (void)state;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int n = tc_topo_cpus_usable();
    assert_true(n >= 1 && n <= online);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nothing_readable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cpuset, setup, teardown),
        cmocka_unit_test(test_this_machine),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
