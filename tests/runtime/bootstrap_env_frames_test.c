/*
 * The torchrun-environment bootstrap against hostile and failing peers: bytes on the store's
 * socket from a client that is no rank (bad frames, a wrong hello, oversize values), a peer
 * that leaves and the store's linger, and a wrong secret or a duplicate rank. Each gives its
 * precise status; every wait is bounded. The ordinary worlds: bootstrap_env_test.c.
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
#include "tests/runtime/bootstrap_env_job.h"
#include "tests/runtime/store_client.h"

/* ---- raw sockets: hand-built frames (little-endian, see runtime/src/boot_store.h) ---- */

#define le16 tc_sct_le16
#define le32 tc_sct_le32
#define get_le32 tc_sct_get_le32
#define frame tc_sct_frame
#define raw_connect tc_sct_connect

static void raw_send(int fd, const void *buf, size_t len)
{
    assert_int_equal(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* A HELLO of the current version with a fresh nonce (keyed 0: no secret). */
static size_t hello(uint8_t *out, uint32_t magic, uint32_t rank, uint32_t world)
{
    uint8_t ni[SCT_NONCE_LEN];
    tc_auth_nonce(ni);
    return tc_sct_hello(out, magic, SCT_VERSION, rank, world, 0, ni);
}

/* Join as @p rank of @p world without a secret; the store's verdict. */
static int32_t raw_join(int fd, uint32_t rank, uint32_t world, char *text, size_t cap)
{
    int32_t status = 1;
    assert_int_equal(tc_sct_join(fd, NULL, rank, world, &status, text, cap), 0);
    return status;
}

/* True when the store closes the connection within 5 s (data before that is skipped). */
static int raw_closed(int fd)
{
    uint8_t b[256];
    for (;;) {
        ssize_t n = recv(fd, b, sizeof(b), 0);
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            return 1;
        if (n < 0)
            return 0; /* SO_RCVTIMEO ran out */
    }
}

/* Read one REPLY: its status and text. */
static void raw_reply(int fd, int32_t *status_p, char *text, size_t cap)
{
    uint8_t b[8 + 16 + 1024];
    size_t got = 0;
    while (got < 8) {
        ssize_t n = recv(fd, b + got, 8 - got, 0);
        assert_true(n > 0);
        got += (size_t)n;
    }
    uint32_t len = get_le32(b);
    assert_int_equal(b[4], 16);
    assert_true(len >= 16 && len <= sizeof(b) - 8);
    while (got < 8 + len) {
        ssize_t n = recv(fd, b + got, 8 + len - got, 0);
        assert_true(n > 0);
        got += (size_t)n;
    }
    uint32_t tlen = get_le32(b + 8 + 12);
    assert_int_equal(tlen, len - 16);
    *status_p = (int32_t)get_le32(b + 8 + 8);
    snprintf(text, cap, "%.*s", (int)tlen, (const char *)b + 24);
}

static tc_boot_t *create_in_process(const job_t *j, int rank)
{
    tc_boot_t *boot = NULL;
    env_set_job(j, rank);
    tc_status_t st = tc_boot_create(TC_BOOT_ENV, tc_deadline_after_ms(10000), &boot);
    if (st != TC_OK)
        print_error("create: %s\n", tc_last_error());
    assert_int_equal(st, TC_OK);
    return boot;
}

static void check_store_value(tc_boot_t *boot, int peer, const char *key, const char *want)
{
    char buf[64];
    size_t len = 0;
    assert_int_equal(
        tc_boot_get(boot, peer, key, buf, sizeof(buf), &len, tc_deadline_after_ms(5000)), TC_OK);
    assert_int_equal(len, strlen(want));
    assert_memory_equal(buf, want, len);
}

typedef struct {
    const char *what;
    size_t len;
} hostile_t;

/* One rank in this process: the API's bad arguments, then hostile clients. */
static void test_world_1_bad_input_and_hostile_frames(void **state)
{
    job_t j = {.world = 1, .port = tc_sct_free_port(), .linger_s = "20"};
    tc_boot_t *boot = create_in_process(&j, 0);
    char buf[64], text[1100];
    size_t len = 12345;
    int32_t status;

    assert_int_equal(tc_boot_put(boot, "k", "hello", 5), TC_OK);
    /* Not visible before the fence. */
    assert_int_equal(tc_boot_get(boot, 0, "k", buf, sizeof(buf), &len, tc_deadline_after_ms(5000)),
                     TC_ERR_NOT_FOUND);
    assert_int_equal(len, 12345);
    assert_int_equal(tc_boot_fence(boot, tc_deadline_after_ms(5000)), TC_OK);
    check_store_value(boot, 0, "k", "hello");
    assert_int_equal(tc_boot_get(boot, 0, "k", buf, 4, &len, tc_deadline_after_ms(5000)),
                     TC_ERR_TRUNCATED);
    assert_int_equal(tc_boot_get(boot, 0, "nope", buf, 4, &len, tc_deadline_after_ms(5000)),
                     TC_ERR_NOT_FOUND);
    assert_non_null(strstr(tc_last_error(), "'nope'"));
    assert_int_equal(tc_boot_get(boot, 1, "k", buf, 4, &len, tc_deadline_after_ms(5000)),
                     TC_ERR_INVALID_ARG);
    char long_key[300];
    memset(long_key, 'a', sizeof(long_key) - 1);
    long_key[sizeof(long_key) - 1] = '\0';
    assert_int_equal(tc_boot_put(boot, long_key, "x", 1), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_boot_put(boot, "", "x", 1), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_boot_put(boot, "k", NULL, 5), TC_ERR_INVALID_ARG);
    static uint8_t huge[(4u << 20) + 1];
    assert_int_equal(tc_boot_put(boot, "huge", huge, sizeof(huge)), TC_ERR_INVALID_ARG);
    /* Empty values are values. */
    assert_int_equal(tc_boot_put(boot, "empty", "", 0), TC_OK);
    assert_int_equal(tc_boot_fence(boot, tc_deadline_after_ms(5000)), TC_OK);
    assert_int_equal(tc_boot_get(boot, 0, "empty", buf, 0, &len, tc_deadline_after_ms(5000)),
                     TC_OK);
    assert_int_equal(len, 0);

    /* A client that connects and says nothing must not hold anyone up. */
    int silent = raw_connect(j.port);

    uint8_t f[1024];
    uint8_t body[64];
    size_t n;
    hostile_t cases[16];
    int ncases = 0;
    uint8_t frames[16][512];
    /* 1: a 4 GiB frame */
    le32(frames[ncases], 0xffffffffu);
    frames[ncases][4] = 2;
    memset(frames[ncases] + 5, 0, 3);
    cases[ncases++] = (hostile_t){"4 GiB length", 8};
    /* 2: unknown type */
    cases[ncases] = (hostile_t){"unknown type", frame(frames[ncases], 99, "abcd", 4)};
    ncases++;
    /* 3: reserved bytes set */
    n = hello(frames[ncases], 0x53424354u, 0, 1);
    frames[ncases][6] = 7;
    cases[ncases++] = (hostile_t){"reserved bytes", n};
    /* 4: a PUT before the hello */
    le16(body, 1);
    body[2] = 'k';
    le32(body + 3, 1);
    body[7] = 'v';
    cases[ncases] = (hostile_t){"put before hello", frame(frames[ncases], 2, body, 8)};
    ncases++;
    /* 5: a hello with a wrong magic */
    cases[ncases] = (hostile_t){"bad magic", hello(frames[ncases], 0x12345678u, 0, 1)};
    ncases++;
    /* 6: a hello cut short (its nonce incomplete) */
    n = hello(frames[ncases], 0x53424354u, 0, 1);
    le32(frames[ncases], SCT_HELLO_LEN - 8);
    cases[ncases++] = (hostile_t){"short hello", n - 8};
    /* 7: a hello with trailing bytes (past the pre-join limit too) */
    n = hello(frames[ncases], 0x53424354u, 0, 1);
    le32(frames[ncases], SCT_HELLO_LEN + 5);
    memset(frames[ncases] + n, 0xee, 5);
    cases[ncases++] = (hostile_t){"hello with trailing bytes", n + 5};
    /* 8: a REPLY sent to the store */
    memset(body, 0, 16);
    cases[ncases] = (hostile_t){"reply to the store", frame(frames[ncases], 16, body, 16)};
    ncases++;
    /* 9: noise */
    for (int i = 0; i < 64; i++)
        frames[ncases][i] = (uint8_t)(i * 97 + 13);
    cases[ncases++] = (hostile_t){"noise", 64};
    /* 10: a large frame before the hello */
    le32(frames[ncases], 100000);
    frames[ncases][4] = 1;
    memset(frames[ncases] + 5, 0, 3);
    cases[ncases++] = (hostile_t){"large hello", 8};
    /* 11: a proof before any hello */
    memset(body, 0x5a, SCT_MAC_LEN);
    cases[ncases] = (hostile_t){"proof before hello", frame(frames[ncases], 7, body, SCT_MAC_LEN)};
    ncases++;
    /* 12: a hello whose keyed flag is neither 0 nor 1 */
    n = hello(frames[ncases], 0x53424354u, 0, 1);
    frames[ncases][8 + 14] = 2;
    cases[ncases++] = (hostile_t){"keyed 2", n};
    /* 13: a hello, then a second one instead of the proof */
    n = hello(frames[ncases], 0x53424354u, 0, 1);
    n += hello(frames[ncases] + n, 0x53424354u, 0, 1);
    cases[ncases++] = (hostile_t){"second hello", n};
    /* 14: a hello, then a proof of the wrong length */
    n = hello(frames[ncases], 0x53424354u, 0, 1);
    n += frame(frames[ncases] + n, 7, body, SCT_MAC_LEN - 1);
    cases[ncases++] = (hostile_t){"short proof", n};
    for (int i = 0; i < ncases; i++) {
        int fd = raw_connect(j.port);
        raw_send(fd, frames[i], cases[i].len);
        int closed = raw_closed(fd);
        if (!closed)
            print_error("the store kept a connection after: %s\n", cases[i].what);
        assert_true(closed);
        close(fd);
        check_store_value(boot, 0, "k", "hello"); /* the store still serves */
    }

    /* Half a header, then gone. */
    int fd = raw_connect(j.port);
    raw_send(fd, "\x10\x00", 2);
    close(fd);

    /* Refused joins are answered with the reason (after the proof: no secret here). */
    fd = raw_connect(j.port);
    status = raw_join(fd, 0, 1, text, sizeof(text));
    assert_int_equal(status, TC_ERR_BOOTSTRAP);
    assert_non_null(strstr(text, "already connected"));
    assert_true(raw_closed(fd));
    close(fd);

    fd = raw_connect(j.port);
    status = raw_join(fd, 0, 7, text, sizeof(text));
    assert_int_equal(status, TC_ERR_BOOTSTRAP);
    assert_non_null(strstr(text, "WORLD_SIZE=7"));
    close(fd);

    /* Another version is told so at once, without a challenge. */
    fd = raw_connect(j.port);
    uint8_t ni[SCT_NONCE_LEN] = {0};
    n = tc_sct_hello(f, 0x53424354u, 2, 0, 1, 0, ni);
    raw_send(fd, f, n);
    raw_reply(fd, &status, text, sizeof(text));
    assert_int_equal(status, TC_ERR_BOOTSTRAP);
    assert_non_null(strstr(text, "protocol version 2, the store speaks 3"));
    close(fd);

    check_store_value(boot, 0, "k", "hello");
    /* The silent client has not joined: destroy does not wait for it. */
    uint64_t t0 = tc_time_ns();
    tc_boot_destroy(boot);
    assert_true(since_s(t0) < 2.0);
    close(silent);
    env_clear();
}

/* Two ranks, rank 0 here, rank 1 a raw socket. */
static void test_peer_left_and_linger(void **state)
{
    job_t j = {.world = 2, .port = tc_sct_free_port(), .linger_s = "1"};
    uint8_t f[512], body[16];
    char text[1100];
    int32_t status;

    /* Rank 1 joins, then sends a PUT whose key is too long: the store drops it, and the
     * fence that rank 1 can no longer reach fails at once instead of at its deadline. */
    tc_boot_t *boot = create_in_process(&j, 0);
    int fd = raw_connect(j.port);
    status = raw_join(fd, 1, 2, text, sizeof(text));
    assert_int_equal(status, TC_OK);
    le16(body, 300);
    raw_send(fd, f, frame(f, 2, body, 2));
    assert_true(raw_closed(fd));
    close(fd);
    uint64_t t0 = tc_time_ns();
    tc_status_t st = tc_boot_fence(boot, tc_deadline_after_ms(10000));
    if (st != TC_ERR_PEER_FAILED)
        print_error("fence: %s: %s\n", tc_status_string(st), tc_last_error());
    assert_int_equal(st, TC_ERR_PEER_FAILED);
    assert_non_null(strstr(tc_last_error(), "rank 1 left"));
    assert_true(since_s(t0) < 3.0);
    tc_boot_destroy(boot);

    /* Rank 1 joins and stays without a word: rank 0's destroy lingers 1 s for it, and
     * says so (the log, on stderr, captured in a file): at once that it waits for rank 1,
     * and when it stops waiting. */
    j.port = tc_sct_free_port();
    boot = create_in_process(&j, 0);
    fd = raw_connect(j.port);
    status = raw_join(fd, 1, 2, text, sizeof(text));
    assert_int_equal(status, TC_OK);
    char log_path[] = "/tmp/tc-linger-log.XXXXXX";
    int log_fd = mkstemp(log_path), saved_err = dup(2);
    assert_true(log_fd >= 0 && saved_err >= 0);
    assert_int_equal(tc_log_configure("warn,runtime=info"), TC_OK);
    fflush(stderr);
    assert_int_equal(dup2(log_fd, 2), 2);
    t0 = tc_time_ns();
    tc_boot_destroy(boot);
    double dt = since_s(t0);
    fflush(stderr);
    dup2(saved_err, 2);
    close(saved_err);
    assert_int_equal(tc_log_configure("warn"), TC_OK);
    char logged[8192];
    ssize_t got = pread(log_fd, logged, sizeof(logged) - 1, 0);
    close(log_fd);
    unlink(log_path);
    logged[got > 0 ? got : 0] = '\0';
    if (dt < 0.9 || dt > 3.0)
        print_error("destroy with TC_BOOT_LINGER_S=1 took %.3f s\n", dt);
    assert_true(dt >= 0.9 && dt <= 3.0);
    if (!strstr(logged, "waits up to 1 s (TC_BOOT_LINGER_S) for 1 rank(s) that have not said "
                        "goodbye: 1\n") ||
        !strstr(logged, "rank 0 stopped waiting after 1.") ||
        !strstr(logged, "for 1 rank(s) that have not said goodbye: 1\n"))
        print_error("rank 0's wait for rank 1 not logged as expected:\n%s\n", logged);
    assert_non_null(strstr(logged, "waits up to 1 s (TC_BOOT_LINGER_S) for 1 rank(s)"));
    assert_non_null(strstr(logged, "rank 0 stopped waiting after 1."));
    assert_true(raw_closed(fd));
    close(fd);

    /* Rank 1 joins and stays without a word, but rank 0 reported it failed (a silence its
     * heartbeats found): rank 0 does not wait for it, even with a long linger. */
    j.port = tc_sct_free_port();
    j.linger_s = "30";
    boot = create_in_process(&j, 0);
    fd = raw_connect(j.port);
    status = raw_join(fd, 1, 2, text, sizeof(text));
    assert_int_equal(status, TC_OK);
    tc_boot_event_t failed = {.kind = TC_BOOT_EV_PROC_FAILED, .rank = 1, .silent = 1};
    assert_int_equal(tc_boot_notify(boot, &failed), TC_OK);
    t0 = tc_time_ns();
    tc_boot_destroy(boot);
    dt = since_s(t0);
    if (dt > 5.0)
        print_error("destroy waited %.3f s for rank 1, reported failed\n", dt);
    assert_true(dt <= 5.0);
    close(fd);

    /* Rank 1 joins and says goodbye: no lingering even with a long linger. */
    j.port = tc_sct_free_port();
    boot = create_in_process(&j, 0);
    fd = raw_connect(j.port);
    status = raw_join(fd, 1, 2, text, sizeof(text));
    assert_int_equal(status, TC_OK);
    raw_send(fd, f, frame(f, 5, body, 0));
    /* Rank 1 has left: joining again is refused with the status that makes a client try
     * again (the store of an earlier bootstrap). Until the store has read the goodbye it
     * is a duplicate instead. */
    int fd2 = -1;
    uint64_t until = tc_deadline_after_ms(5000);
    do {
        if (fd2 >= 0)
            close(fd2);
        tc_sleep_ns(10 * 1000000ull);
        fd2 = raw_connect(j.port);
        status = raw_join(fd2, 1, 2, text, sizeof(text));
    } while (status == TC_ERR_BOOTSTRAP && strstr(text, "already connected") &&
             !tc_deadline_passed(until));
    assert_int_equal(status, TC_ERR_INVALID_STATE);
    assert_non_null(strstr(text, "already joined and left"));
    close(fd2);
    t0 = tc_time_ns();
    tc_boot_destroy(boot);
    assert_true(since_s(t0) < 5.0);
    close(fd);
    env_clear();
}

/* ---- secrets and duplicate ranks ---- */

static int wait_byte(int fd, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char c;
    return poll(&p, 1, timeout_ms) == 1 && read(fd, &c, 1) == 1;
}

static int sync_in = -1, sync_out = -1; /* the child's ends, set before fork */

/* Rank 0 with the secret: tells the parent it is up, then fences with the real rank 1. */
static int child_secret_rank0(const job_t *j, int rank)
{
    tc_boot_t *boot = NULL;
    tc_status_t st = tc_boot_create(TC_BOOT_ENV, tc_deadline_after_ms(20000), &boot);
    CHILD_CHECK(st == TC_OK, 10, "create: %s", tc_status_string(st));
    CHILD_CHECK(write(sync_out, "r", 1) == 1, 11, "write");
    int rc = 0;
    if (tc_boot_put(boot, "k", "zero", 4) != TC_OK ||
        tc_boot_fence(boot, tc_deadline_after_ms(30000)) != TC_OK) {
        fprintf(stderr, "rank 0: put+fence: %s\n", tc_last_error());
        rc = 12;
    }
    tc_boot_destroy(boot);
    return rc;
}

/* The real rank 1: joins, tells the parent, waits for its go, then fences. */
static int child_secret_rank1(const job_t *j, int rank)
{
    tc_boot_t *boot = NULL;
    tc_status_t st = tc_boot_create(TC_BOOT_ENV, tc_deadline_after_ms(20000), &boot);
    CHILD_CHECK(st == TC_OK, 10, "create: %s", tc_status_string(st));
    int rc = 0;
    char buf[8];
    size_t len = 0;
    if (write(sync_out, "j", 1) != 1 || !wait_byte(sync_in, 20000)) {
        rc = 11;
    } else if (tc_boot_fence(boot, tc_deadline_after_ms(30000)) != TC_OK ||
               tc_boot_get(boot, 0, "k", buf, sizeof(buf), &len, tc_deadline_after_ms(5000)) !=
                   TC_OK ||
               len != 4 || memcmp(buf, "zero", 4) != 0) {
        fprintf(stderr, "rank 1: fence+get: %s\n", tc_last_error());
        rc = 12;
    }
    tc_boot_destroy(boot);
    return rc;
}

static void test_secret_world_and_duplicate(void **state)
{
    job_t j = {.world = 2, .port = tc_sct_free_port(), .secret = "s3cret-of-the-job"};
    int up[2], down[2], codes[2];
    pid_t pids[2];
    int r0 = 0, r1 = 1;
    assert_int_equal(pipe(up), 0);
    assert_int_equal(pipe(down), 0);
    sync_out = up[1];
    sync_in = down[0];
    spawn(&j, &r0, 1, child_secret_rank0, 0, &pids[0]);
    assert_true(wait_byte(up[0], 20000));

    env_set_job(&j, 1);
    setenv("TC_JOB_SECRET", "s3cret-of-the-jub", 1);
    expect_create_fails(TC_ERR_BOOTSTRAP, "TC_JOB_SECRET", "does not match");
    unsetenv("TC_JOB_SECRET");
    expect_create_fails(TC_ERR_BOOTSTRAP, "no TC_JOB_SECRET", NULL);
    env_set_job(&j, 1);
    setenv("WORLD_SIZE", "3", 1);
    setenv("LOCAL_WORLD_SIZE", "3", 1);
    expect_create_fails(TC_ERR_BOOTSTRAP, "WORLD_SIZE=3", "WORLD_SIZE=2");

    spawn(&j, &r1, 1, child_secret_rank1, 0, &pids[1]);
    assert_true(wait_byte(up[0], 20000));
    env_set_job(&j, 1);
    expect_create_fails(TC_ERR_BOOTSTRAP, "rank 1 is already connected", NULL);
    assert_int_equal(write(down[1], "g", 1), 1);

    reap(pids, 2, codes, CHILD_TIMEOUT_S);
    assert_int_equal(codes[0], 0);
    assert_int_equal(codes[1], 0);
    close(up[0]);
    close(up[1]);
    close(down[0]);
    close(down[1]);
    env_clear();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_world_1_bad_input_and_hostile_frames),
        cmocka_unit_test(test_peer_left_and_linger),
        cmocka_unit_test(test_secret_world_and_duplicate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
