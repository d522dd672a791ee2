/*
 * Joining the torchrun-environment store is a challenge-response (runtime/src/boot_store.h):
 * - a forged client (a raw socket) that claims a rank without the secret is refused with the
 *   precise reason, cannot take the rank, and the real rank then joins and the job's values
 *   are right; a flood of them, and of connections sending malformed frames, is logged a few
 *   lines, not one per client;
 * - a real rank with a wrong secret fails with the precise reason;
 * - a client's captured bytes (through a proxy) hold no byte string of the secret, and
 *   replaying its captured HELLO and PROOF on a new connection is refused;
 * - without TC_JOB_SECRET the job works and each process warns exactly once.
 * Ranks are forked children reporting through their exit status; every wait is bounded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
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
#include "tests/runtime/store_client.h"

#define SECRET "the-job-secret-7f3a9c"
#define CHILD_TIMEOUT_S 60.0
#define FORGERS 20
#define WANT_REFUSAL                                                                               \
    "rank 1's proof does not match the store's secret (another job, or "                           \
    "TC_JOB_SECRET differs)"

/* ---- ranks ---- */

static void env_set(int port, int store_port, int rank, int world, const char *secret)
{
    char buf[32];
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    snprintf(buf, sizeof(buf), "%d", port);
    setenv("MASTER_PORT", buf, 1);
    if (store_port > 0) {
        snprintf(buf, sizeof(buf), "%d", store_port);
        setenv("TC_STORE_PORT", buf, 1);
    } else {
        unsetenv("TC_STORE_PORT");
    }
    snprintf(buf, sizeof(buf), "%d", rank);
    setenv("RANK", buf, 1);
    setenv("LOCAL_RANK", buf, 1);
    snprintf(buf, sizeof(buf), "%d", world);
    setenv("WORLD_SIZE", buf, 1);
    setenv("LOCAL_WORLD_SIZE", buf, 1);
    setenv("TC_BOOT_LINGER_S", "10", 1);
    if (secret)
        setenv("TC_JOB_SECRET", secret, 1);
    else
        unsetenv("TC_JOB_SECRET");
}

static int wait_byte(int fd, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char c;
    return poll(&p, 1, timeout_ms) == 1 && read(fd, &c, 1) == 1;
}

typedef struct {
    int port, store_port, rank, world;
    const char *secret;
    const char *log_path; /* stderr goes there, NULL: unchanged */
    int up_fd, go_fd;     /* write 'u' once joined; wait for a byte before the fence (-1: no) */
    int rounds;           /* bootstraps one after the other */
    int next_port;        /* > 0: MASTER_PORT of the rounds after the first */
} rank_t;

#define CHECK(cond, code, ...)                                                                     \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "rank %d: check %d failed: ", r->rank, (code));                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, " [last error: %s]\n", tc_last_error());                               \
            return (code);                                                                         \
        }                                                                                          \
    } while (0)

/* A rank: put its value, fence, check every rank's value; @p rounds times. */
static int rank_main(const rank_t *r)
{
    for (int round = 0; round < r->rounds; round++) {
        if (round > 0 && r->next_port > 0) {
            /* a store of its own: re-creating one on the port just left races with the old
             * store's linger (a rank that left first can reach it again: issue #21) */
            char buf[16];
            snprintf(buf, sizeof(buf), "%d", r->next_port);
            setenv("MASTER_PORT", buf, 1);
        }
        tc_boot_t *boot = NULL;
        char mine[64], got[64], want[64];
        size_t len = 0;
        tc_status_t st = tc_boot_create(TC_BOOT_ENV, tc_deadline_after_ms(30000), &boot);
        CHECK(st == TC_OK, 10, "create round %d: %s", round, tc_status_string(st));
        CHECK(boot->secret_len == (r->secret ? strlen(r->secret) : 0), 11, "secret of %zu bytes",
              boot->secret_len);
        if (r->up_fd >= 0 && round == 0)
            CHECK(write(r->up_fd, "u", 1) == 1, 12, "write");
        if (r->go_fd >= 0 && round == 0)
            CHECK(wait_byte(r->go_fd, 30000), 13, "no go");
        snprintf(mine, sizeof(mine), "value of %d in %d", r->rank, round);
        CHECK(tc_boot_put(boot, "v", mine, strlen(mine)) == TC_OK, 14, "put");
        CHECK(tc_boot_fence(boot, tc_deadline_after_ms(30000)) == TC_OK, 15, "fence");
        for (int q = 0; q < r->world; q++) {
            snprintf(want, sizeof(want), "value of %d in %d", q, round);
            st = tc_boot_get(boot, q, "v", got, sizeof(got), &len, tc_deadline_after_ms(10000));
            CHECK(st == TC_OK && len == strlen(want) && memcmp(got, want, len) == 0, 16,
                  "value of rank %d: %s, %zu bytes", q, tc_status_string(st), len);
        }
        tc_boot_destroy(boot);
    }
    return 0;
}

static pid_t spawn(const rank_t *r)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (r->log_path) {
            int fd = open(r->log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
            if (fd < 0 || dup2(fd, 2) < 0)
                _exit(3);
            close(fd);
        }
        env_set(r->port, r->store_port, r->rank, r->world, r->secret);
        if (tc_log_configure("warn") != TC_OK)
            _exit(4);
        _exit(rank_main(r));
    }
    return pid;
}

/* The child's exit status within the timeout (128 + signal; -1: killed for taking too long). */
static int reap(pid_t pid)
{
    uint64_t deadline = tc_time_ns() + (uint64_t)(CHILD_TIMEOUT_S * 1e9);
    int status;
    while (tc_time_ns() < deadline) {
        if (waitpid(pid, &status, WNOHANG) == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        tc_sleep_ns(10 * 1000000ull);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
}

/* The whole file (NUL-terminated, malloc'd). */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = calloc(1, 1 << 20);
    assert_non_null(buf);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* ---- raw clients ---- */

/* A HELLO claiming @p rank (keyed as said), then a PROOF computed with @p secret (NULL: the
 * public key) whatever the store's MAC: what a client without the job's secret can do. */
static void forge(int port, uint32_t rank, uint8_t keyed, const char *secret, int32_t *status_p,
                  char *text, size_t cap)
{
    uint8_t f[128], ni[SCT_NONCE_LEN], body[1100], type;
    int fd = tc_sct_connect(port);
    tc_auth_nonce(ni);
    size_t n = tc_sct_hello(f, SCT_MAGIC, SCT_VERSION, rank, 2, keyed, ni);
    assert_int_equal(send(fd, f, n, MSG_NOSIGNAL), (ssize_t)n);
    long len = tc_sct_read_frame(fd, &type, body, sizeof(body));
    assert_int_equal(type, SCT_T_CHALLENGE);
    assert_int_equal(len, SCT_CHALLENGE_LEN);
    assert_int_equal(body[0], 1); /* the store has a secret */
    /* Its MAC cannot be checked without the secret; the forger sends a proof anyway. */
    assert_false(tc_sct_proof(secret, rank, 2, keyed, ni, body, f));
    assert_int_equal(send(fd, f, 8 + SCT_MAC_LEN, MSG_NOSIGNAL), 8 + SCT_MAC_LEN);
    len = tc_sct_read_frame(fd, &type, body, sizeof(body));
    assert_int_equal(type, SCT_T_REPLY);
    assert_true(len >= 16);
    *status_p = (int32_t)tc_sct_get_le32(body + 8);
    snprintf(text, cap, "%.*s", (int)tc_sct_get_le32(body + 12), (const char *)body + 16);
    /* ... and the connection is closed */
    assert_int_equal(tc_sct_read_frame(fd, &type, body, sizeof(body)), -1);
    close(fd);
}

static void test_forged_clients_refused_real_rank_joins(void **state)
{
    int port = tc_sct_free_port(), up[2], go[2];
    char log0[] = "/tmp/tc-store-auth-r0.XXXXXX", log1[] = "/tmp/tc-store-auth-bad.XXXXXX";
    assert_int_equal(close(mkstemp(log0)), 0);
    assert_int_equal(close(mkstemp(log1)), 0);
    assert_int_equal(pipe(up), 0);
    assert_int_equal(pipe(go), 0);
    rank_t r0 = {.port = port,
                 .rank = 0,
                 .world = 2,
                 .secret = SECRET,
                 .log_path = log0,
                 .up_fd = up[1],
                 .go_fd = -1,
                 .rounds = 1};
    pid_t p0 = spawn(&r0);
    assert_true(wait_byte(up[0], 30000));

    /* Forgers claim rank 1: with a guessed secret, and with none. */
    int32_t status;
    char text[1100];
    for (int i = 0; i < FORGERS; i++) {
        forge(port, 1, 1, i % 2 ? "guessed" : "the-job-secret-7f3a9d", &status, text, sizeof(text));
        assert_int_equal(status, TC_ERR_BOOTSTRAP);
        assert_string_equal(text, WANT_REFUSAL);
    }
    forge(port, 1, 0, NULL, &status, text, sizeof(text));
    assert_int_equal(status, TC_ERR_BOOTSTRAP);
    assert_non_null(strstr(text, "rank 1 has no TC_JOB_SECRET but the store has one"));

    /* Others send a frame header of an unknown type: each is closed, and logged as a refusal
     * (once a line per connection, "closing the connection from ...": anyone could flood the
     * log). */
    for (int i = 0; i < FORGERS; i++) {
        uint8_t junk[8] = {0, 0, 0, 0, 0x7f, 0, 0, 0};
        int fd = tc_sct_connect(port);
        assert_int_equal(send(fd, junk, sizeof(junk), MSG_NOSIGNAL), (ssize_t)sizeof(junk));
        close(fd);
    }

    /* One says hello as rank 1 and then nothing: it holds no rank. */
    int silent = tc_sct_connect(port);
    uint8_t f[128], ni[SCT_NONCE_LEN] = {1};
    size_t n = tc_sct_hello(f, SCT_MAGIC, SCT_VERSION, 1, 2, 1, ni);
    assert_int_equal(send(silent, f, n, MSG_NOSIGNAL), (ssize_t)n);

    /* A real rank 1 with a wrong secret is told precisely why. */
    rank_t bad = {.port = port,
                  .rank = 1,
                  .world = 2,
                  .secret = "not-the-secret",
                  .log_path = log1,
                  .up_fd = -1,
                  .go_fd = -1,
                  .rounds = 1};
    assert_int_equal(reap(spawn(&bad)), 10);
    char *bad_log = slurp(log1);
    if (!strstr(bad_log, "does not prove it holds this rank's TC_JOB_SECRET: its proof does not "
                         "match (another job's store on this port, or TC_JOB_SECRET differs"))
        print_error("the wrong-secret rank said: %s\n", bad_log);
    assert_non_null(strstr(bad_log, "TC_JOB_SECRET differs between ranks"));
    free(bad_log);

    /* The real rank 1 joins; both see both values. */
    rank_t r1 = {.port = port,
                 .rank = 1,
                 .world = 2,
                 .secret = SECRET,
                 .up_fd = -1,
                 .go_fd = -1,
                 .rounds = 1};
    assert_int_equal(reap(spawn(&r1)), 0);
    assert_int_equal(reap(p0), 0);
    close(silent);

    /* The store logged the refusals a few lines at a time, never the secret. */
    char *log = slurp(log0);
    int lines = count(log, "bootstrap store: refused");
    if (lines < 1 || lines > 4 || strstr(log, "closing the connection"))
        print_error("%d refusal lines for %d refused clients:\n%s\n", lines, FORGERS + 1, log);
    assert_true(lines >= 1 && lines <= 4);
    assert_null(strstr(log, "closing the connection"));
    assert_non_null(strstr(log, WANT_REFUSAL));
    assert_null(strstr(log, SECRET));
    free(log);
    unlink(log0);
    unlink(log1);
    for (int i = 0; i < 2; i++) {
        close(up[i]);
        close(go[i]);
    }
}

/* ---- a proxy that records what a client sends ---- */

typedef struct {
    int listen_fd, upstream_port;
    pthread_mutex_t mu;
    uint8_t *cap; /* every byte clients sent, connection after connection */
    size_t len, max;
    size_t last; /* where the latest connection's bytes start in cap */
    int conns;   /* connections accepted */
    atomic_int stop;
} proxy_t;

/* Connect to the store on loopback, trying until it listens (-1 at the deadline or stop). */
static int proxy_upstream(proxy_t *p, uint64_t deadline)
{
    while (tc_time_ns() < deadline && !atomic_load(&p->stop)) {
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)p->upstream_port),
                                .sin_addr = {htonl(INADDR_LOOPBACK)}};
        int s = socket(AF_INET, SOCK_STREAM, 0);
        if (s >= 0 && connect(s, (struct sockaddr *)&a, sizeof(a)) == 0)
            return s;
        if (s >= 0)
            close(s);
        tc_sleep_ns(20 * 1000000ull);
    }
    return -1;
}

/* Relay one client @p c to the store until either side closes, recording what the client
 * sends. */
static void proxy_relay(proxy_t *p, int c, uint64_t deadline)
{
    int s = proxy_upstream(p, deadline);
    uint8_t buf[65536];
    while (s >= 0 && !atomic_load(&p->stop) && tc_time_ns() < deadline) {
        struct pollfd fds[2] = {{.fd = c, .events = POLLIN}, {.fd = s, .events = POLLIN}};
        if (poll(fds, 2, 100) <= 0)
            continue;
        for (int i = 0; i < 2; i++) {
            if (!fds[i].revents)
                continue;
            ssize_t n = recv(fds[i].fd, buf, sizeof(buf), 0);
            if (n <= 0)
                goto out;
            if (i == 0) {
                pthread_mutex_lock(&p->mu);
                size_t k = (size_t)n < p->max - p->len ? (size_t)n : p->max - p->len;
                memcpy(p->cap + p->len, buf, k);
                p->len += k;
                pthread_mutex_unlock(&p->mu);
            }
            if (send(fds[1 - i].fd, buf, (size_t)n, MSG_NOSIGNAL) != n)
                goto out;
        }
    }
out:
    if (s >= 0)
        close(s);
}

/* Serve clients one after the other: a client that lost its connection before the store's
 * verdict connects again (bootstrap_env_hello.c), and must reach the store again. */
static void *proxy_main(void *arg)
{
    proxy_t *p = arg;
    uint64_t deadline = tc_time_ns() + 60ull * 1000000000ull;
    while (!atomic_load(&p->stop) && tc_time_ns() < deadline) {
        struct pollfd lp = {.fd = p->listen_fd, .events = POLLIN};
        if (poll(&lp, 1, 100) <= 0)
            continue;
        int c = accept(p->listen_fd, NULL, NULL);
        if (c < 0)
            continue;
        pthread_mutex_lock(&p->mu);
        p->last = p->len;
        p->conns++;
        pthread_mutex_unlock(&p->mu);
        proxy_relay(p, c, deadline);
        close(c);
    }
    return NULL;
}

static void test_secret_not_sent_and_replay_refused(void **state)
{
    int port = tc_sct_free_port(), up[2], go[2];
    proxy_t px = {.upstream_port = port, .max = 1 << 20};
    pthread_t th;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr = {htonl(INADDR_LOOPBACK)}};
    socklen_t alen = sizeof(a);
    static uint8_t cap[1 << 20]; /* not on the heap: a failed assert leaks nothing */
    px.cap = cap;
    pthread_mutex_init(&px.mu, NULL);
    px.listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(bind(px.listen_fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(px.listen_fd, 4), 0);
    assert_int_equal(getsockname(px.listen_fd, (struct sockaddr *)&a, &alen), 0);
    atomic_init(&px.stop, 0);

    assert_int_equal(pipe(up), 0);
    assert_int_equal(pipe(go), 0);
    rank_t r0 = {.port = port,
                 .rank = 0,
                 .world = 2,
                 .secret = SECRET,
                 .up_fd = -1,
                 .go_fd = -1,
                 .rounds = 1};
    rank_t r1 = {.port = port,
                 .store_port = ntohs(a.sin_port),
                 .rank = 1,
                 .world = 2,
                 .secret = SECRET,
                 .up_fd = up[1],
                 .go_fd = go[0],
                 .rounds = 1};
    char logs[2][32] = {"/tmp/tc-store-proxy0.XXXXXX", "/tmp/tc-store-proxy1.XXXXXX"};
    for (int i = 0; i < 2; i++)
        assert_int_equal(close(mkstemp(logs[i])), 0);
    r0.log_path = logs[0];
    r1.log_path = logs[1];
    pid_t p0 = spawn(&r0), p1 = spawn(&r1);
    /* The proxy's thread starts after the forks: a child forked while another thread holds a
     * lock (ASan's allocator's, for one) would wait for it forever. Rank 1's connection waits
     * in the listening socket's backlog meanwhile. */
    assert_int_equal(pthread_create(&th, NULL, proxy_main, &px), 0);
    if (!wait_byte(up[0], 30000)) { /* rank 1 joined through the proxy */
        for (int i = 0; i < 2; i++) {
            char *log = slurp(logs[i]);
            print_error("rank %d has not joined after 30 s; its log:\n%s\n", i, log);
            free(log);
        }
        print_error("%d connections through the proxy\n", px.conns);
        fail();
    }

    /* Its HELLO, then its PROOF: replayed on a new connection, the proof is refused. */
    uint8_t captured[8 + SCT_HELLO_LEN + 8 + SCT_MAC_LEN];
    pthread_mutex_lock(&px.mu);
    if (px.conns != 1)
        print_message("rank 1 connected %d times through the proxy\n", px.conns);
    assert_true(px.len - px.last >= sizeof(captured));
    memcpy(captured, px.cap + px.last, sizeof(captured));
    pthread_mutex_unlock(&px.mu);
    assert_int_equal(captured[4], SCT_T_HELLO);
    assert_int_equal(tc_sct_get_le32(captured), SCT_HELLO_LEN);
    assert_int_equal(captured[8 + 14], 1); /* keyed */
    assert_int_equal(captured[8 + SCT_HELLO_LEN + 4], SCT_T_PROOF);
    int fd = tc_sct_connect(port);
    uint8_t body[1100], type;
    assert_int_equal(send(fd, captured, 8 + SCT_HELLO_LEN, MSG_NOSIGNAL), 8 + SCT_HELLO_LEN);
    assert_int_equal(tc_sct_read_frame(fd, &type, body, sizeof(body)), SCT_CHALLENGE_LEN);
    assert_int_equal(type, SCT_T_CHALLENGE);
    assert_int_equal(send(fd, captured + 8 + SCT_HELLO_LEN, 8 + SCT_MAC_LEN, MSG_NOSIGNAL),
                     8 + SCT_MAC_LEN);
    long len = tc_sct_read_frame(fd, &type, body, sizeof(body));
    assert_int_equal(type, SCT_T_REPLY);
    assert_true(len >= 16);
    assert_int_equal((int32_t)tc_sct_get_le32(body + 8), TC_ERR_BOOTSTRAP);
    assert_int_equal(tc_sct_get_le32(body + 12), strlen(WANT_REFUSAL));
    assert_memory_equal(body + 16, WANT_REFUSAL, strlen(WANT_REFUSAL));
    close(fd);

    /* The job goes on and ends right. */
    assert_int_equal(write(go[1], "g", 1), 1);
    assert_int_equal(reap(p1), 0);
    assert_int_equal(reap(p0), 0);
    atomic_store(&px.stop, 1);
    pthread_join(th, NULL);

    /* Nothing rank 1 sent, from its hello to its goodbye, holds the secret. */
    assert_true(px.len > sizeof(captured)); /* puts, fences, gets, goodbye too */
    assert_null(memmem(px.cap, px.len, SECRET, strlen(SECRET)));
    /* nor a long part of it */
    assert_null(memmem(px.cap, px.len, &SECRET[4], 8));
    close(px.listen_fd);
    pthread_mutex_destroy(&px.mu);
    for (int i = 0; i < 2; i++) {
        char *log = slurp(logs[i]); /* nor what either rank logged */
        assert_null(strstr(log, SECRET));
        free(log);
        unlink(logs[i]);
        close(up[i]);
        close(go[i]);
    }
}

/* ---- no secret ---- */

/* The tests' store port: a port held on [::1] only, or on 127.0.0.1 only, is not free for the
 * store (which binds both families); a port tc_sct_free_port gives is below the ephemeral range
 * and free. The old helper looked at 127.0.0.1 alone and gave a port a Bazel server held on [::1]
 * (CI: "rank 0 cannot serve the store on port 40785: Address already in use"). */
static void test_store_port(void **state)
{
    (void)state;
    for (int fam = 0; fam < 2; fam++) {
        int fd = socket(fam ? AF_INET : AF_INET6, SOCK_STREAM, 0), one = 1;
        struct sockaddr_storage ss = {0};
        socklen_t len = sizeof(ss);
        if (fd < 0)
            continue; /* no IPv6 here */
        if (!fam) {
            struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
            a6->sin6_family = AF_INET6;
            a6->sin6_addr = in6addr_loopback;
            assert_int_equal(setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)), 0);
        } else {
            struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
            a4->sin_family = AF_INET;
            a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        }
        if (bind(fd, (struct sockaddr *)&ss,
                 fam ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6)) != 0) {
            close(fd);
            continue;
        }
        assert_int_equal(listen(fd, 1), 0);
        assert_int_equal(getsockname(fd, (struct sockaddr *)&ss, &len), 0);
        int port = ntohs(fam ? ((struct sockaddr_in *)&ss)->sin_port
                             : ((struct sockaddr_in6 *)&ss)->sin6_port);
        if (tc_sct_port_free(port))
            fail_msg("port %d held on %s counted free", port, fam ? "127.0.0.1" : "[::1]");
        close(fd);
    }
    int lo = 32768, hi = 60999;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f) {
        assert_int_equal(fscanf(f, "%d %d", &lo, &hi), 2);
        fclose(f);
    }
    for (int i = 0; i < 20; i++) {
        int port = tc_sct_free_port();
        assert_true(port > 1024 && tc_sct_port_free(port));
        if (lo > 11000)
            assert_true(port < lo);
    }
}

static void test_no_secret_warns_once_and_works(void **state)
{
    int port = tc_sct_free_port(), port2 = tc_sct_free_port();
    while (port2 == port)
        port2 = tc_sct_free_port();
    char logs[2][32] = {"/tmp/tc-store-nosec0.XXXXXX", "/tmp/tc-store-nosec1.XXXXXX"};
    pid_t pids[2];
    for (int i = 0; i < 2; i++) {
        assert_int_equal(close(mkstemp(logs[i])), 0);
        rank_t r = {.port = port,
                    .rank = i,
                    .world = 2,
                    .secret = NULL,
                    .log_path = logs[i],
                    .up_fd = -1,
                    .go_fd = -1,
                    .rounds = 2,
                    .next_port = port2};
        pids[i] = spawn(&r);
    }
    for (int i = 0; i < 2; i++) {
        int code = reap(pids[i]);
        char *log = slurp(logs[i]);
        if (code != 0 || count(log, "TC_JOB_SECRET is not set") != 1)
            print_error("rank %d: exit %d, log:\n%s\n", i, code, log);
        assert_int_equal(code, 0);
        /* two bootstraps, one warning, naming the risk and the fix */
        assert_int_equal(count(log, "TC_JOB_SECRET is not set"), 1);
        assert_non_null(strstr(log, "NOT authenticated"));
        assert_non_null(strstr(log, "Set TC_JOB_SECRET"));
        free(log);
        unlink(logs[i]);
    }
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forged_clients_refused_real_rank_joins),
        cmocka_unit_test(test_secret_not_sent_and_replay_refused),
        cmocka_unit_test(test_no_secret_warns_once_and_works),
        cmocka_unit_test(test_store_port),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
