/*
 * The torchrun-environment bootstrap: forked ranks exchange keys through the
 * store that rank 0 serves; configuration errors, a missing rank and a master
 * that never starts each give their precise status. Hostile bytes, a peer that
 * leaves, a wrong secret and a duplicate rank: bootstrap_env_frames_test.c.
 *
 * Children report through their exit status (0 = every check passed; the
 * failing check is printed on stderr). Every wait is bounded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tcomms/base/log.h"
#include "tcomms/base/status.h"
#include "tcomms/base/time.h"
#include "tcomms/runtime/bootstrap.h"
#include "tcomms/transport/auth.h"
#include "tests/proc_threads.h"
#include "tests/runtime/bootstrap_env_job.h"
#include "tests/runtime/store_client.h"

#define MAX_RANKS 8
#define BIG_LEN ((1u << 20) + 3)

/* ---- the values each rank puts: a reference both sides compute on their own ---- */

static size_t value_len(int rank, int round)
{
    return 1 + (size_t)((rank * 37 + round * 11) % 200);
}

static uint8_t value_byte(int rank, int round, size_t i)
{
    return (uint8_t)(rank * 131 + round * 17 + (int)(i * 7) + 1);
}

static void value_fill(uint8_t *buf, int rank, int round, size_t len)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = value_byte(rank, round, i);
}

/* 0 when @p buf holds rank's value of round (of @p want bytes), else the first wrong index + 1. */
static size_t value_check(const uint8_t *buf, size_t len, int rank, int round, size_t want)
{
    if (len != want)
        return (size_t)-1;
    for (size_t i = 0; i < len; i++)
        if (buf[i] != value_byte(rank, round, i))
            return i + 1;
    return 0;
}

/* ---- children ---- */

/* Get @p key of every rank and compare it with that rank's value of @p round. */
static int child_get_all(tc_boot_t *boot, int rank, int world, const char *key, int round,
                         uint8_t *buf)
{
    for (int q = 0; q < world; q++) {
        size_t len = 0;
        tc_status_t st = tc_boot_get(boot, q, key, buf, BIG_LEN, &len, tc_deadline_after_ms(20000));
        CHILD_CHECK(st == TC_OK, 20, "get '%s' of rank %d: %s", key, q, tc_status_string(st));
        size_t bad = value_check(buf, len, q, round, value_len(q, round));
        CHILD_CHECK(bad == 0, 21, "'%s' of rank %d: %zu bytes, wrong at %zu", key, q, len, bad);
    }
    return 0;
}

/* create, put, fence, get every peer's value, a second round, destroy. */
static int child_roundtrip(const job_t *j, int rank)
{
    uint8_t *buf = malloc(BIG_LEN), *mine = malloc(BIG_LEN);
    tc_boot_t *boot = NULL;
    int rc = 0, world = j->world;
    size_t len;
    if (!buf || !mine)
        return 2;
    tc_status_t st = tc_boot_create(TC_BOOT_ENV, tc_deadline_after_ms(30000), &boot);
    if (st != TC_OK) {
        fprintf(stderr, "rank %d: create: %s: %s\n", rank, tc_status_string(st), tc_last_error());
        rc = 10;
        goto out;
    }
#define CHECK_OUT(cond, code, ...)                                                                 \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "rank %d: check %d failed: ", rank, (code));                           \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, " [last error: %s]\n", tc_last_error());                               \
            rc = (code);                                                                           \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)
    CHECK_OUT(boot->rank == rank && boot->size == world && boot->local_size == world &&
                  strcmp(boot->launcher, "env") == 0,
              11, "head: rank %d size %d local %d launcher %s", boot->rank, boot->size,
              boot->local_size, boot->launcher);
    /* rank 0 serves the store from a thread that goes by its name (top -H, perf, gdb) */
    CHECK_OUT(tc_test_threads_named("tc-store") == (rank == 0), 18, "threads named tc-store: %d",
              tc_test_threads_named("tc-store"));
    for (int round = 1; round <= 2; round++) {
        len = value_len(rank, round);
        value_fill(mine, rank, round, len);
        /* A key per round: a peer's next put may reach the store before this rank has
         * read the round before. */
        char key[16];
        snprintf(key, sizeof(key), "val%d", round);
        st = tc_boot_put(boot, key, mine, len);
        CHECK_OUT(st == TC_OK, 12, "put round %d: %s", round, tc_status_string(st));
        if (round == 1 && rank == 1 && world >= 3) {
            value_fill(mine, 1, 9, BIG_LEN);
            st = tc_boot_put(boot, "big", mine, BIG_LEN);
            CHECK_OUT(st == TC_OK, 13, "put big: %s", tc_status_string(st));
        }
        st = tc_boot_fence(boot, tc_deadline_after_ms(30000));
        CHECK_OUT(st == TC_OK, 14, "fence %d: %s", round, tc_status_string(st));
        if ((rc = child_get_all(boot, rank, world, key, round, buf)) != 0)
            goto out;
    }
    if (world >= 3) {
        st = tc_boot_get(boot, 1, "big", buf, BIG_LEN, &len, tc_deadline_after_ms(20000));
        CHECK_OUT(st == TC_OK && value_check(buf, len, 1, 9, BIG_LEN) == 0, 15,
                  "big value of rank 1: %s, %zu bytes", tc_status_string(st), len);
    }
    int peer = (rank + 1) % world;
    st = tc_boot_get(boot, peer, "never-put", buf, BIG_LEN, &len, tc_deadline_after_ms(20000));
    CHECK_OUT(st == TC_ERR_NOT_FOUND && strstr(tc_last_error(), "never-put"), 16,
              "get of a key never put: %s", tc_status_string(st));
    size_t want = value_len(peer, 2);
    st = tc_boot_get(boot, peer, "val2", buf, want - 1, &len, tc_deadline_after_ms(20000));
    CHECK_OUT(st == TC_ERR_TRUNCATED, 17, "get into %zu bytes of a %zu-byte value: %s", want - 1,
              want, tc_status_string(st));
    if (rank != 0) {
        /* Rank 0 has most likely destroyed its bootstrap by now: its store must still serve
         * ranks that fetch lazily until they leave. */
        tc_sleep_ns(300 * 1000000ull);
        if ((rc = child_get_all(boot, rank, world, "val2", 2, buf)) != 0)
            goto out;
    }
out:
    tc_boot_destroy(boot);
    free(buf);
    free(mine);
    return rc;
}

/* Two bootstraps one after the other on the same port. Rank 0 keeps the first a
 * while, so the others reach its lingering store first and must wait for the next. */
static int child_twice(const job_t *j, int rank)
{
    for (int it = 0; it < 2; it++) {
        tc_boot_t *boot = NULL;
        char key[16], buf[64];
        size_t len = 0;
        snprintf(key, sizeof(key), "it%d", it);
        tc_status_t st = tc_boot_create(TC_BOOT_ENV, tc_deadline_after_ms(20000), &boot);
        CHILD_CHECK(st == TC_OK, 10 + it, "create %d: %s", it, tc_status_string(st));
        int rc = 0;
        uint8_t v = (uint8_t)(rank * 10 + it);
        if (tc_boot_put(boot, key, &v, 1) != TC_OK ||
            tc_boot_fence(boot, tc_deadline_after_ms(20000)) != TC_OK)
            rc = 20 + it;
        for (int q = 0; rc == 0 && q < j->world; q++) {
            st = tc_boot_get(boot, q, key, buf, sizeof(buf), &len, tc_deadline_after_ms(20000));
            if (st != TC_OK || len != 1 || (uint8_t)buf[0] != (uint8_t)(q * 10 + it))
                rc = 30 + it;
        }
        if (rc)
            fprintf(stderr, "rank %d: bootstrap %d: check %d: %s\n", rank, it, rc, tc_last_error());
        if (rank == 0 && it == 0)
            tc_sleep_ns(300 * 1000000ull);
        tc_boot_destroy(boot);
        if (rc)
            return rc;
    }
    return 0;
}

/* Create, then fence with a short deadline while one rank never starts. */
static int child_missing_rank(const job_t *j, int rank)
{
    tc_boot_t *boot = NULL;
    tc_status_t st = tc_boot_create(TC_BOOT_ENV, tc_deadline_after_ms(20000), &boot);
    CHILD_CHECK(st == TC_OK, 10, "create: %s", tc_status_string(st));
    uint64_t t0 = tc_time_ns();
    st = tc_boot_fence(boot, tc_deadline_after_ms(1500));
    double dt = since_s(t0);
    int rc = 0;
    char expect[64];
    snprintf(expect, sizeof(expect), "%d of %d ranks arrived", j->world - 1, j->world);
    if (st != TC_ERR_TIMEOUT || !strstr(tc_last_error(), "missing 2") ||
        !strstr(tc_last_error(), expect) || !strstr(tc_last_error(), "fence 1")) {
        fprintf(stderr, "rank %d: fence without rank 2: %s: %s\n", rank, tc_status_string(st),
                tc_last_error());
        rc = 11;
    } else if (dt > 1.5 + 0.05 || dt < 1.0) {
        fprintf(stderr, "rank %d: the fence with a 1.5 s deadline ended after %.3f s\n", rank, dt);
        rc = 12;
    }
    tc_boot_destroy(boot);
    return rc;
}

static void run_world(int world, const char *addr)
{
    job_t j = {.world = world, .port = tc_sct_free_port(), .addr = addr};
    int ranks[MAX_RANKS], codes[MAX_RANKS];
    pid_t pids[MAX_RANKS];
    for (int i = 0; i < world; i++)
        ranks[i] = world - 1 - i; /* rank 0 last */
    spawn(&j, ranks, world, child_roundtrip, 1, pids);
    reap(pids, world, codes, CHILD_TIMEOUT_S);
    for (int i = 0; i < world; i++) {
        if (codes[i] != 0)
            print_error("rank %d of %d exited with %d\n", ranks[i], world, codes[i]);
        assert_int_equal(codes[i], 0);
    }
}

static void test_world_1(void **state)
{
    run_world(1, NULL);
}

static void test_world_3_by_name(void **state)
{
    run_world(3, "localhost");
}

static void test_world_4(void **state)
{
    run_world(4, NULL);
}

static void test_world_2_ipv6(void **state)
{
    int fd = socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    int ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
    if (fd >= 0)
        close(fd);
    if (!ok)
        skip(); /* no IPv6 loopback here */
    run_world(2, "::1");
}

static void test_world_3_twice(void **state)
{
    job_t j = {.world = 3, .port = tc_sct_free_port()};
    int ranks[3] = {0, 1, 2}, codes[3];
    pid_t pids[3];
    spawn(&j, ranks, 3, child_twice, 0, pids);
    reap(pids, 3, codes, CHILD_TIMEOUT_S);
    for (int i = 0; i < 3; i++)
        assert_int_equal(codes[i], 0);
}

static void test_missing_rank_times_out(void **state)
{
    job_t j = {.world = 3, .port = tc_sct_free_port()};
    int ranks[2] = {0, 1}, codes[2];
    pid_t pids[2];
    spawn(&j, ranks, 2, child_missing_rank, 0, pids);
    reap(pids, 2, codes, CHILD_TIMEOUT_S);
    assert_int_equal(codes[0], 0);
    assert_int_equal(codes[1], 0);
}

/* ---- in-process error cases ---- */

static void test_config_errors(void **state)
{
    job_t j = {.world = 4, .port = tc_sct_free_port()};
    env_set_job(&j, 1);
    unsetenv("RANK");
    expect_create_fails(TC_ERR_CONFIG, "RANK", "not set");

    env_set_job(&j, 1);
    setenv("WORLD_SIZE", "abc", 1);
    expect_create_fails(TC_ERR_CONFIG, "WORLD_SIZE", "abc");
    setenv("WORLD_SIZE", "0", 1);
    expect_create_fails(TC_ERR_CONFIG, "WORLD_SIZE", "\"0\"");
    unsetenv("WORLD_SIZE");
    expect_create_fails(TC_ERR_CONFIG, "WORLD_SIZE", "not set");

    env_set_job(&j, 1);
    setenv("RANK", "4", 1);
    expect_create_fails(TC_ERR_CONFIG, "RANK=\"4\"", "WORLD_SIZE=\"4\"");
    setenv("RANK", "-1", 1);
    expect_create_fails(TC_ERR_CONFIG, "RANK", "-1");
    setenv("RANK", " 1", 1);
    expect_create_fails(TC_ERR_CONFIG, "RANK", "not an integer");

    env_set_job(&j, 1);
    setenv("MASTER_PORT", "70000", 1);
    expect_create_fails(TC_ERR_CONFIG, "MASTER_PORT", "70000");
    setenv("MASTER_PORT", "http", 1);
    expect_create_fails(TC_ERR_CONFIG, "MASTER_PORT", "http");

    env_set_job(&j, 1);
    setenv("LOCAL_RANK", "4", 1);
    setenv("LOCAL_WORLD_SIZE", "4", 1);
    expect_create_fails(TC_ERR_CONFIG, "LOCAL_RANK", "4");
    setenv("LOCAL_RANK", "1", 1);
    setenv("LOCAL_WORLD_SIZE", "5", 1);
    expect_create_fails(TC_ERR_CONFIG, "LOCAL_WORLD_SIZE", "5");

    env_set_job(&j, 1);
    setenv("TC_BOOT_LINGER_S", "-1", 1);
    expect_create_fails(TC_ERR_CONFIG, "TC_BOOT_LINGER_S", "-1");

    env_set_job(&j, 1);
    unsetenv("MASTER_ADDR");
    expect_create_fails(TC_ERR_CONFIG, "MASTER_ADDR", "not set");
    setenv("MASTER_ADDR", "", 1);
    expect_create_fails(TC_ERR_CONFIG, "MASTER_ADDR", "empty");

    /* AUTO chooses the environment when MASTER_ADDR is set (and no PMIx server is). */
    env_set_job(&j, 1);
    setenv("RANK", "x", 1);
    tc_boot_t *boot = NULL;
    if (!getenv("PMIX_NAMESPACE")) {
        assert_int_equal(tc_boot_create(TC_BOOT_AUTO, tc_deadline_after_ms(5000), &boot),
                         TC_ERR_CONFIG);
        assert_null(boot);
    }
    env_clear();
}

static void test_master_never_starts(void **state)
{
    job_t j = {.world = 2, .port = tc_sct_free_port()};
    char where[64];
    env_set_job(&j, 1);
    snprintf(where, sizeof(where), "127.0.0.1:%d", j.port);
    uint64_t t0 = tc_time_ns();
    expect_create_fails_ms(1500, TC_ERR_TIMEOUT, where, "MASTER_PORT");
    double dt = since_s(t0);
    if (dt < 1.45 || dt > 2.0)
        print_error("create with a 1.5 s deadline took %.3f s\n", dt);
    assert_true(dt >= 1.45 && dt <= 2.0);
    env_clear();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_errors),          cmocka_unit_test(test_world_1),
        cmocka_unit_test(test_world_3_by_name),        cmocka_unit_test(test_world_4),
        cmocka_unit_test(test_world_2_ipv6),           cmocka_unit_test(test_world_3_twice),
        cmocka_unit_test(test_missing_rank_times_out), cmocka_unit_test(test_master_never_starts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
