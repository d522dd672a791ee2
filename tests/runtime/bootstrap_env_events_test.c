/*
 * Failure and revoke notices through the torchrun-environment store: every
 * rank's notify reaches every other rank exactly once and in order, whether
 * it arrives while a get or a fence waits for its reply or while nothing is
 * in flight (read by a polling thread, as the progress thread does); the
 * store refuses malformed NOTIFY frames and forwards nothing of them; a
 * client's bad arguments and a store's bad EVENT frames give their precise
 * status; a client that never reads is disconnected instead of growing the
 * store's memory.
 *
 * The ranks are bootstraps in this process (created one after the other, then
 * run as threads), so the store's thread, the requests and the pollers all
 * run under one sanitizer. Every wait is bounded.
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
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tcomms/base/log.h"
#include "tcomms/base/status.h"
#include "tcomms/base/time.h"
#include "tcomms/runtime/bootstrap.h"
#include "tcomms/transport/auth.h"
#include "tests/runtime/store_client.h"

#define WORLD 4
#define ROUNDS 8       /* revoke notices per rank, each followed by a put, fence, gets */
#define MAX_EVENTS 256 /* collected per rank */
#define WAIT_MS 10000  /* for anything that should come at once */
#define T_NOTIFY 6
#define T_REPLY 16
#define T_EVENT 17

/* ---- environment and raw sockets (frames as in runtime/src/boot_store.h) ---- */

static void env_set(int port, int rank, int world)
{
    char buf[32];
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    snprintf(buf, sizeof(buf), "%d", port);
    setenv("MASTER_PORT", buf, 1);
    snprintf(buf, sizeof(buf), "%d", rank);
    setenv("RANK", buf, 1);
    setenv("LOCAL_RANK", buf, 1);
    snprintf(buf, sizeof(buf), "%d", world);
    setenv("WORLD_SIZE", buf, 1);
    setenv("LOCAL_WORLD_SIZE", buf, 1);
    setenv("TC_BOOT_LINGER_S", "5", 1);
    unsetenv("TC_JOB_SECRET");
    unsetenv("TC_STORE_PORT");
}

static void env_clear(void)
{
    static const char *const names[] = {"MASTER_ADDR",      "MASTER_PORT", "RANK",
                                        "LOCAL_RANK",       "WORLD_SIZE",  "LOCAL_WORLD_SIZE",
                                        "TC_BOOT_LINGER_S", NULL};
    for (int i = 0; names[i]; i++)
        unsetenv(names[i]);
}

static tc_boot_t *create_rank(int port, int rank, int world)
{
    tc_boot_t *boot = NULL;
    env_set(port, rank, world);
    tc_status_t st = tc_boot_create(TC_BOOT_ENV, tc_deadline_after_ms(WAIT_MS), &boot);
    if (st != TC_OK)
        print_error("create rank %d: %s\n", rank, tc_last_error());
    assert_int_equal(st, TC_OK);
    return boot;
}

static void le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static size_t frame(uint8_t *out, uint8_t type, const void *body, uint32_t len)
{
    le32(out, len);
    out[4] = type;
    out[5] = out[6] = out[7] = 0;
    memcpy(out + 8, body, len);
    return 8 + len;
}

static size_t notify_frame(uint8_t *out, uint32_t kind, uint32_t rank, uint32_t comm)
{
    uint8_t b[12];
    le32(b, kind);
    le32(b + 4, rank);
    le32(b + 8, comm);
    return frame(out, T_NOTIFY, b, 12);
}

static void raw_send(int fd, const void *buf, size_t len)
{
    assert_int_equal(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* Exactly @p len bytes, or 0 when the connection ends or 5 s pass first. */
static int raw_recv(int fd, void *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = recv(fd, (uint8_t *)buf + got, len - got, 0);
        if (n <= 0)
            return 0;
        got += (size_t)n;
    }
    return 1;
}

/* Connect (with a receive buffer of @p rcvbuf bytes when > 0), say hello as
 * @p rank, and check the store's OK. */
static int raw_join(int port, int rank, int world, int rcvbuf)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr = {htonl(INADDR_LOOPBACK)}};
    struct timeval tv = {.tv_sec = 5};
    assert_true(fd >= 0);
    if (rcvbuf > 0)
        assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)), 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
    if (rank < 0)
        return fd; /* no hello */
    int32_t status = 1;
    char text[1100];
    assert_int_equal(
        tc_sct_join(fd, NULL, (uint32_t)rank, (uint32_t)world, &status, text, sizeof(text)), 0);
    assert_int_equal(status, 0); /* TC_OK */
    return fd;
}

/* True when the store closes the connection within 5 s (data before that is skipped). */
static int raw_closed(int fd)
{
    uint8_t b[4096];
    for (;;) {
        ssize_t n = recv(fd, b, sizeof(b), 0);
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            return 1;
        if (n < 0)
            return 0;
    }
}

/* ---- the store's log, captured from stderr ---- */

static int log_fd = -1, saved_stderr = -1;

static void log_capture_begin(void)
{
    char path[] = "/tmp/tc-events-log.XXXXXX";
    log_fd = mkstemp(path);
    assert_true(log_fd >= 0);
    unlink(path);
    fflush(stderr);
    saved_stderr = dup(STDERR_FILENO);
    assert_true(saved_stderr >= 0);
    assert_int_equal(dup2(log_fd, STDERR_FILENO), STDERR_FILENO);
}

static int log_has(const char *needle)
{
    static char text[1 << 16];
    ssize_t n = pread(log_fd, text, sizeof(text) - 1, 0);
    text[n > 0 ? n : 0] = '\0';
    return strstr(text, needle) != NULL;
}

/* Wait (bounded) until the captured log holds @p needle. */
static int log_wait_for(const char *needle)
{
    uint64_t deadline = tc_deadline_after_ms(WAIT_MS);
    while (!log_has(needle)) {
        if (tc_deadline_passed(deadline))
            return 0;
        tc_sleep_ns(5 * 1000000ull);
    }
    return 1;
}

static void log_capture_end(void)
{
    fflush(stderr);
    dup2(saved_stderr, STDERR_FILENO);
    close(saved_stderr);
    close(log_fd);
    log_fd = saved_stderr = -1;
}

/* ---- every rank tells every other rank, between gets and fences ---- */

typedef struct {
    tc_boot_t *boot;
    int rank;
    pthread_t main, poller;
    atomic_bool stop;
    pthread_mutex_t lock;
    tc_boot_event_t got[MAX_EVENTS];
    int ngot;
    int fail; /* the first failed check's code, 0 when all passed */
    char why[512];
} rank_t;

static rank_t ranks[WORLD];
static pthread_barrier_t barrier;

#define RANK_CHECK(r, cond, code, ...)                                                             \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            int n_ = snprintf((r)->why, sizeof((r)->why), "rank %d check %d: ", (r)->rank, code);  \
            snprintf((r)->why + n_, sizeof((r)->why) - (size_t)n_, __VA_ARGS__);                   \
            (r)->fail = (code);                                                                    \
            return NULL;                                                                           \
        }                                                                                          \
    } while (0)

/* What the progress thread does: poll all the time, never waiting. */
static void *poller_main(void *arg)
{
    rank_t *r = arg;
    while (!atomic_load(&r->stop)) {
        tc_boot_event_t ev;
        if (!tc_boot_poll_event(r->boot, &ev)) {
            tc_sleep_ns(20000);
            continue;
        }
        pthread_mutex_lock(&r->lock);
        if (r->ngot < MAX_EVENTS)
            r->got[r->ngot] = ev;
        r->ngot++;
        pthread_mutex_unlock(&r->lock);
    }
    return NULL;
}

static int ngot(rank_t *r)
{
    pthread_mutex_lock(&r->lock);
    int n = r->ngot;
    pthread_mutex_unlock(&r->lock);
    return n;
}

/* Wait (bounded) until @p r has collected @p n events. */
static int wait_events(rank_t *r, int n)
{
    uint64_t deadline = tc_deadline_after_ms(WAIT_MS);
    while (ngot(r) < n && !tc_deadline_passed(deadline))
        tc_sleep_ns(1000000);
    return ngot(r) >= n;
}

static uint8_t value_of(int rank, int round)
{
    return (uint8_t)(rank * 31 + round * 7 + 1);
}

static void *rank_main(void *arg)
{
    rank_t *r = arg;
    tc_boot_t *boot = r->boot;
    tc_status_t st;

    /* Phase 1: nothing in flight anywhere; rank 0 revokes, the others' pollers read it. */
    if (r->rank == 0) {
        tc_boot_event_t ev = {TC_BOOT_EV_REVOKE, 0, 4242, 0, 0, 0};
        st = tc_boot_notify(boot, &ev);
        RANK_CHECK(r, st == TC_OK, 1, "notify while idle: %s", tc_last_error());
    } else {
        uint64_t t0 = tc_time_ns();
        RANK_CHECK(r, wait_events(r, 1), 2, "no event within %d ms with nothing in flight",
                   WAIT_MS);
        double ms = (double)(tc_time_ns() - t0) * 1e-6;
        RANK_CHECK(r, ms < 1000, 3, "the idle event took %.1f ms", ms);
    }
    pthread_barrier_wait(&barrier);

    /* Phase 2: revoke notices between puts, fences and gets of every peer. */
    for (int k = 0; k < ROUNDS; k++) {
        tc_boot_event_t ev = {TC_BOOT_EV_REVOKE, r->rank, (uint32_t)(r->rank * 1000 + k), 0, 0, 0};
        st = tc_boot_notify(boot, &ev);
        RANK_CHECK(r, st == TC_OK, 10, "notify round %d: %s", k, tc_last_error());
        char key[16];
        snprintf(key, sizeof(key), "r%d", k);
        uint8_t v = value_of(r->rank, k);
        st = tc_boot_put(boot, key, &v, 1);
        RANK_CHECK(r, st == TC_OK, 11, "put round %d: %s", k, tc_last_error());
        st = tc_boot_fence(boot, tc_deadline_after_ms(WAIT_MS));
        RANK_CHECK(r, st == TC_OK, 12, "fence round %d: %s", k, tc_last_error());
        for (int q = 0; q < WORLD; q++) {
            uint8_t got = 0;
            size_t len = 0;
            st = tc_boot_get(boot, q, key, &got, 1, &len, tc_deadline_after_ms(WAIT_MS));
            RANK_CHECK(r, st == TC_OK && len == 1 && got == value_of(q, k), 13,
                       "get '%s' of rank %d: %s, %zu bytes, %u (want %u)", key, q,
                       tc_status_string(st), len, got, value_of(q, k));
        }
    }
    /* Each rank reports the next one failed, then all fence once more. */
    tc_boot_event_t fail = {TC_BOOT_EV_PROC_FAILED, (r->rank + 1) % WORLD, 0, 0, 0, 0};
    st = tc_boot_notify(boot, &fail);
    RANK_CHECK(r, st == TC_OK, 20, "notify failure: %s", tc_last_error());
    st = tc_boot_fence(boot, tc_deadline_after_ms(WAIT_MS));
    RANK_CHECK(r, st == TC_OK, 21, "last fence: %s", tc_last_error());

    /* Every notice of the others preceded their last fence: all are here or in the ring. */
    int want = 1 + (WORLD - 1) * (ROUNDS + 1) - (r->rank == 0);
    RANK_CHECK(r, wait_events(r, want), 22, "%d of %d events", ngot(r), want);
    tc_sleep_ns(20 * 1000000ull); /* no duplicates come late */
    RANK_CHECK(r, ngot(r) == want, 23, "%d events, want %d", ngot(r), want);
    return NULL;
}

/* The events of @p r: each other rank's notices once, in its order; none of its own. */
static void check_events(rank_t *r)
{
    int next[WORLD] = {0}, failed_seen[WORLD] = {0}, idle = 0;
    for (int i = 0; i < r->ngot; i++) {
        const tc_boot_event_t *ev = &r->got[i];
        assert_int_equal(ev->from_launcher, 0);
        if (ev->kind == TC_BOOT_EV_REVOKE && ev->comm_id == 4242) {
            assert_int_equal(ev->rank, 0);
            assert_int_not_equal(r->rank, 0);
            idle++;
        } else if (ev->kind == TC_BOOT_EV_REVOKE) {
            int s = ev->rank;
            assert_true(s >= 0 && s < WORLD && s != r->rank);
            /* per sender, in the order sent, before its failure notice */
            assert_int_equal(ev->comm_id, (uint32_t)(s * 1000 + next[s]));
            assert_int_equal(failed_seen[s], 0);
            next[s]++;
        } else {
            assert_int_equal(ev->kind, TC_BOOT_EV_PROC_FAILED);
            assert_int_equal(ev->comm_id, 0);
            int s = (ev->rank + WORLD - 1) % WORLD; /* its sender */
            assert_true(s != r->rank);
            assert_int_equal(ev->reporter, s + 1); /* the store says who reported it */
            assert_int_equal(next[s], ROUNDS);
            failed_seen[s]++;
        }
    }
    assert_int_equal(idle, r->rank != 0);
    for (int s = 0; s < WORLD; s++) {
        assert_int_equal(next[s], s == r->rank ? 0 : ROUNDS);
        assert_int_equal(failed_seen[s], s == r->rank ? 0 : 1);
    }
}

static void test_notify_reaches_every_other_rank(void **state)
{
    int port = tc_sct_free_port();
    for (int i = 0; i < WORLD; i++) {
        rank_t *r = &ranks[i];
        memset(r, 0, sizeof(*r));
        r->rank = i;
        atomic_init(&r->stop, false);
        pthread_mutex_init(&r->lock, NULL);
        r->boot = create_rank(port, i, WORLD);
    }
    env_clear();
    pthread_barrier_init(&barrier, NULL, WORLD);
    for (int i = 0; i < WORLD; i++) {
        assert_int_equal(pthread_create(&ranks[i].poller, NULL, poller_main, &ranks[i]), 0);
        assert_int_equal(pthread_create(&ranks[i].main, NULL, rank_main, &ranks[i]), 0);
    }
    for (int i = 0; i < WORLD; i++) {
        pthread_join(ranks[i].main, NULL);
        atomic_store(&ranks[i].stop, true);
        pthread_join(ranks[i].poller, NULL);
    }
    for (int i = 0; i < WORLD; i++)
        if (ranks[i].fail)
            print_error("%s [%d events]\n", ranks[i].why, ranks[i].ngot);
    for (int i = 0; i < WORLD; i++)
        assert_int_equal(ranks[i].fail, 0);
    for (int i = 0; i < WORLD; i++)
        check_events(&ranks[i]);
    for (int i = WORLD - 1; i >= 0; i--) { /* rank 0, the store, last */
        tc_boot_destroy(ranks[i].boot);
        pthread_mutex_destroy(&ranks[i].lock);
    }
    pthread_barrier_destroy(&barrier);
}

/* ---- the cost of a poll ---- */

/* Every clock read of this process goes through here; counted while counting is set, on the
 * thread that set it only: the store's own threads read the clock too, more often on a loaded
 * machine (CI counted 101 of 100 so). */
static atomic_int clock_reads;
static _Thread_local bool counting;

int clock_gettime(clockid_t id, struct timespec *ts)
{
    if (counting)
        atomic_fetch_add(&clock_reads, 1);
    return (int)syscall(SYS_clock_gettime, id, ts);
}

/* The runtime polls the events at every operation it issues: a poll that finds nothing reads
 * the clock at most once per 16 calls (it read it at every call), and an event sent still
 * comes out. */
static void test_poll_reads_the_clock_rarely(void **state)
{
    int port = tc_sct_free_port();
    tc_boot_t *boot = create_rank(port, 0, 2);
    env_clear();
    tc_boot_event_t ev;
    atomic_store(&clock_reads, 0);
    counting = true;
    for (int i = 0; i < 1600; i++)
        assert_int_equal(tc_boot_poll_event(boot, &ev), 0);
    counting = false;
    int reads = atomic_load(&clock_reads);
    if (reads > 100)
        print_error("%d clock reads in 1600 polls that found nothing\n", reads);
    assert_true(reads <= 100);
    /* a notice from another rank still arrives through polling alone */
    int fd = raw_join(port, 1, 2, 0);
    uint8_t f[32];
    raw_send(fd, f, notify_frame(f, TC_BOOT_EV_REVOKE, 1, 42));
    uint64_t deadline = tc_deadline_after_ms(WAIT_MS);
    int got = 0;
    while (!got && !tc_deadline_passed(deadline))
        got = tc_boot_poll_event(boot, &ev);
    assert_int_equal(got, 1);
    assert_int_equal(ev.kind, TC_BOOT_EV_REVOKE);
    assert_int_equal(ev.comm_id, 42);
    close(fd);
    tc_boot_destroy(boot);
}

/* ---- bad notices ---- */

static void test_notify_bad_arguments(void **state)
{
    tc_boot_t *boot = create_rank(tc_sct_free_port(), 0, 2);
    env_clear();
    const tc_boot_event_t bad[] = {
        {7, 1, 0, 0, 0, 0},                       /* unknown kind */
        {TC_BOOT_EV_PROC_FAILED, -1, 0, 0, 0, 0}, /* rank out of range */
        {TC_BOOT_EV_PROC_FAILED, 2, 0, 0, 0, 0},
        {TC_BOOT_EV_PROC_FAILED, 0, 0, 0, 0, 0}, /* itself failed */
        {TC_BOOT_EV_REVOKE, 1, 3, 0, 0, 0},      /* another rank's revoke */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(tc_boot_notify(boot, &bad[i]), TC_ERR_INVALID_ARG);
        assert_non_null(strstr(tc_last_error(), "notify of kind"));
    }
    assert_int_equal(tc_boot_notify(boot, NULL), TC_ERR_INVALID_ARG);
    /* Still usable: a good notice to a world where the other rank never came. */
    tc_boot_event_t ok = {TC_BOOT_EV_REVOKE, 0, 1, 0, 0, 0};
    assert_int_equal(tc_boot_notify(boot, &ok), TC_OK);
    tc_boot_destroy(boot);
}

typedef struct {
    const char *what;
    uint8_t frame[64];
    size_t len;
    const char *logged; /* the store's reason */
} bad_frame_t;

static void test_malformed_notify_refused(void **state)
{
    enum { NWORLD = 16 };
    int port = tc_sct_free_port();
    tc_boot_t *boot = create_rank(port, 0, NWORLD);
    env_clear();
    bad_frame_t cases[12];
    int n = 0;
    uint8_t body[16] = {0};
    cases[n] = (bad_frame_t){"short body", {0}, 0, "NOTIFY frame of 11 bytes, expected 12"};
    cases[n].len = frame(cases[n].frame, T_NOTIFY, body, 11);
    n++;
    cases[n] = (bad_frame_t){"long body", {0}, 0, "NOTIFY frame of 13 bytes, expected 12"};
    cases[n].len = frame(cases[n].frame, T_NOTIFY, body, 13);
    n++;
    cases[n] = (bad_frame_t){"kind 0", {0}, 0, "NOTIFY of unknown kind 0"};
    cases[n].len = notify_frame(cases[n].frame, 0, 1, 0);
    n++;
    cases[n] = (bad_frame_t){"kind 3", {0}, 0, "NOTIFY of unknown kind 3"};
    cases[n].len = notify_frame(cases[n].frame, 3, 1, 0);
    n++;
    cases[n] = (bad_frame_t){"rank past the world", {0}, 0, "NOTIFY about rank 16 of 16"};
    cases[n].len = notify_frame(cases[n].frame, TC_BOOT_EV_PROC_FAILED, 16, 0);
    n++;
    cases[n] =
        (bad_frame_t){"revoke for another rank", {0}, 0, "NOTIFY: a revoke on behalf of rank 0"};
    cases[n].len = notify_frame(cases[n].frame, TC_BOOT_EV_REVOKE, 0, 9);
    n++;
    cases[n] =
        (bad_frame_t){"failure with a comm id", {0}, 0, "NOTIFY: rank 0 failed, with comm id 5"};
    cases[n].len = notify_frame(cases[n].frame, TC_BOOT_EV_PROC_FAILED, 0, 5);
    n++;
    cases[n] = (bad_frame_t){"itself failed", {0}, 0, "failed, with comm id 0 (another rank"};
    cases[n].len = 0; /* filled in with the sender's rank below */
    n++;
    cases[n] = (bad_frame_t){"event from a client", {0}, 0, "EVENT frame from a client"};
    cases[n].len = frame(cases[n].frame, T_EVENT, body, 16);
    n++;
    cases[n] = (bad_frame_t){"before the hello", {0}, 0, "frame of type 6 before the hello"};
    cases[n].len = notify_frame(cases[n].frame, TC_BOOT_EV_PROC_FAILED, 0, 0);
    n++;

    log_capture_begin();
    for (int i = 0; i < n; i++) {
        int rank = i + 1, hello = strcmp(cases[i].what, "before the hello") != 0;
        int fd = raw_join(port, hello ? rank : -1, NWORLD, 0);
        if (cases[i].len == 0)
            cases[i].len = notify_frame(cases[i].frame, TC_BOOT_EV_PROC_FAILED, (uint32_t)rank, 0);
        raw_send(fd, cases[i].frame, cases[i].len);
        int closed = raw_closed(fd), logged = log_wait_for(cases[i].logged);
        close(fd);
        if (!closed || !logged) {
            log_capture_end();
            print_error("%s: closed %d, logged '%s' %d\n", cases[i].what, closed, cases[i].logged,
                        logged);
            fail();
        }
    }
    log_capture_end();

    /* Nothing of those reached rank 0; a good notice does, and its EVENT has every field. */
    int good = raw_join(port, 14, NWORLD, 0), other = raw_join(port, 15, NWORLD, 0);
    uint8_t f[32], ev[24];
    raw_send(good, f, notify_frame(f, TC_BOOT_EV_PROC_FAILED, 3, 0));
    raw_send(good, f, notify_frame(f, TC_BOOT_EV_REVOKE, 14, 77));
    for (int k = 0; k < 2; k++) {
        assert_true(raw_recv(other, ev, sizeof(ev)));
        assert_int_equal(get_le32(ev), 16);
        assert_int_equal(ev[4], T_EVENT);
        assert_int_equal(ev[5] | ev[6] | ev[7], 0);
        assert_int_equal(get_le32(ev + 8), k == 0 ? TC_BOOT_EV_PROC_FAILED : TC_BOOT_EV_REVOKE);
        assert_int_equal(get_le32(ev + 12), k == 0 ? 3 : 14);
        assert_int_equal(get_le32(ev + 16), k == 0 ? 0 : 77);
        assert_int_equal(get_le32(ev + 20), 14); /* from */
    }
    tc_boot_event_t e[2];
    uint64_t deadline = tc_deadline_after_ms(WAIT_MS);
    int got = 0;
    while (got < 2 && !tc_deadline_passed(deadline))
        got += tc_boot_poll_event(boot, &e[got]);
    assert_int_equal(got, 2);
    assert_int_equal(e[0].kind, TC_BOOT_EV_PROC_FAILED);
    assert_int_equal(e[0].rank, 3);
    assert_int_equal(e[1].kind, TC_BOOT_EV_REVOKE);
    assert_int_equal(e[1].rank, 14);
    assert_int_equal(e[1].comm_id, 77);
    /* The sender hears nothing of its own notices, and nothing more comes. */
    struct timeval tv = {.tv_usec = 200000};
    assert_int_equal(setsockopt(good, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
    assert_int_equal(recv(good, ev, sizeof(ev), 0), -1);
    tc_sleep_ns(5 * 1000000ull);
    assert_int_equal(tc_boot_poll_event(boot, &e[0]), 0);
    close(good);
    close(other);
    tc_boot_destroy(boot);
}

/* A store that sends a good EVENT, a late reply, then an EVENT of an unknown kind:
 * the client queues the first, skips the reply and stops trusting the stream. */
static void test_bad_event_from_the_store(void **state)
{
    int port = tc_sct_free_port();
    int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr = {htonl(INADDR_LOOPBACK)}};
    assert_true(lfd >= 0);
    assert_int_equal(setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), 0);
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(lfd, 4), 0);
    /* The fake store is a child process; rank 1 (this process) joins it. */
    env_set(port, 1, 2);
    int fds[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(30); /* whatever the parent does */
        int c = accept(lfd, NULL, NULL);
        uint8_t h[8], b[512], f[96];
        if (c < 0 || !raw_recv(c, h, 8) || get_le32(h) > sizeof(b) || !raw_recv(c, b, get_le32(h)))
            _exit(1);
        /* the challenge-response with the public key (no TC_JOB_SECRET), then the verdict */
        if (get_le32(h) != SCT_HELLO_LEN)
            _exit(1);
        tc_auth_key_t key;
        tc_auth_transcript_t t;
        uint8_t extra[8] = {2, 0, 0, 0, 0, 0, SCT_VERSION, 0}; /* world 2, keyed 0 0, version */
        uint8_t chal[SCT_CHALLENGE_LEN] = {0};
        if (tc_auth_key_init(&key, NULL, 0) != TC_OK)
            _exit(1);
        memset(&t, 0, sizeof(t));
        t.purpose = "store";
        t.initiator_id = 1;
        t.acceptor_id = UINT64_MAX;
        memcpy(t.nonce_i, b + 15, SCT_NONCE_LEN);
        memset(chal + 1, 0x3c, SCT_NONCE_LEN);
        memcpy(t.nonce_a, chal + 1, SCT_NONCE_LEN);
        t.extra = extra;
        t.extra_len = sizeof(extra);
        tc_auth_mac(&key, TC_AUTH_ACCEPTOR, &t, chal + 1 + SCT_NONCE_LEN);
        size_t n = frame(f, SCT_T_CHALLENGE, chal, SCT_CHALLENGE_LEN);
        if (send(c, f, n, MSG_NOSIGNAL) != (ssize_t)n || !raw_recv(c, h, 8) ||
            get_le32(h) != SCT_MAC_LEN || !raw_recv(c, b, SCT_MAC_LEN))
            _exit(2);
        uint8_t reply[16] = {0}; /* request 0, TC_OK, no data */
        n = frame(f, T_REPLY, reply, 16);
        if (send(c, f, n, MSG_NOSIGNAL) != (ssize_t)n)
            _exit(2);
        char go;
        if (read(fds[1], &go, 1) != 1)
            _exit(3);
        uint8_t ev[16];
        le32(ev, TC_BOOT_EV_REVOKE);
        le32(ev + 4, 0);
        le32(ev + 8, 99);
        le32(ev + 12, 0);
        n = frame(f, T_EVENT, ev, 16);
        uint8_t late[16] = {0};
        le32(late, 1234); /* a reply to request 1234, never made */
        n += frame(f + n, T_REPLY, late, 16);
        le32(ev, 9);
        n += frame(f + n, T_EVENT, ev, 16);
        if (send(c, f, n, MSG_NOSIGNAL) != (ssize_t)n)
            _exit(4);
        (void)!read(fds[1], &go, 1); /* until the parent is done */
        _exit(0);
    }
    tc_boot_t *boot = NULL;
    tc_status_t st = tc_boot_create(TC_BOOT_ENV, tc_deadline_after_ms(WAIT_MS), &boot);
    env_clear();
    assert_int_equal(st, TC_OK);
    /* The bad EVENT breaks the stream (the caller's error detail stays): the good one
     * before it comes out, nothing after it. */
    tc_error_set(TC_ERR_TIMEOUT, "the caller's own error");
    log_capture_begin();
    assert_int_equal(write(fds[0], "g", 1), 1);
    tc_boot_event_t ev, first = {0};
    uint64_t deadline = tc_deadline_after_ms(WAIT_MS);
    int got = 0;
    while (!got && !tc_deadline_passed(deadline))
        got = tc_boot_poll_event(boot, &first);
    int polled_more = 0;
    deadline = tc_deadline_after_ms(100);
    while (!tc_deadline_passed(deadline))
        polled_more += tc_boot_poll_event(boot, &ev);
    int logged = log_wait_for("malformed EVENT from the store");
    log_capture_end();
    assert_int_equal(got, 1);
    assert_int_equal(polled_more, 0);
    assert_int_equal(first.kind, TC_BOOT_EV_REVOKE);
    assert_int_equal(first.comm_id, 99);
    assert_true(logged);
    assert_string_equal(tc_last_error(), "the caller's own error");
    char buf[8];
    size_t len;
    assert_int_equal(tc_boot_get(boot, 0, "k", buf, sizeof(buf), &len, tc_deadline_after_ms(1000)),
                     TC_ERR_BOOTSTRAP);
    assert_non_null(strstr(tc_last_error(), "failed earlier"));
    assert_int_equal(tc_boot_notify(boot, &(tc_boot_event_t){TC_BOOT_EV_REVOKE, 1, 1, 0, 0, 0}),
                     TC_ERR_BOOTSTRAP);
    tc_boot_destroy(boot);
    assert_int_equal(write(fds[0], "x", 1), 1);
    int status = -1;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(fds[0]);
    close(fds[1]);
    close(lfd);
}

/* ---- a client that never reads ---- */

static void test_client_that_never_reads_is_dropped(void **state)
{
    int port = tc_sct_free_port();
    tc_boot_t *boot = create_rank(port, 0, 2);
    env_clear();
    int deaf = raw_join(port, 1, 2, 4096);
    /* The kernel's buffers take about 125000 events here before the store's queue grows;
     * the store reads the notices a little behind, so stop once it has logged the drop. */
    enum { NOTICES = 1000000 };
    log_capture_begin();
    uint64_t t0 = tc_time_ns();
    int sent = 0, logged = 0;
    for (; sent < NOTICES; sent++) {
        tc_boot_event_t ev = {TC_BOOT_EV_REVOKE, 0, (uint32_t)sent, 0, 0, 0};
        tc_status_t st = tc_boot_notify(boot, &ev);
        if (st != TC_OK) {
            log_capture_end();
            print_error("notify %d: %s\n", sent, tc_last_error());
            fail();
        }
        if (sent % 5000 == 4999 && (logged = log_has("more than 4096 events unread")))
            break;
    }
    if (!logged)
        logged = log_wait_for("more than 4096 events unread");

    log_capture_end();
    double s = (double)(tc_time_ns() - t0) * 1e-9;
    print_message("%d notices sent in %.2f s; the store dropped the deaf client\n", sent + 1, s);
    assert_true(logged);
    /* What it was sent is every notice from the first, in order, then the end. */
    uint8_t ev[24];
    uint32_t k = 0;
    for (;; k++) {
        if (!raw_recv(deaf, ev, sizeof(ev)))
            break;
        assert_int_equal(ev[4], T_EVENT);
        assert_int_equal(get_le32(ev + 16), k);
    }
    print_message("the deaf client had %u of them\n", k);
    assert_true(k > 0 && k < (uint32_t)sent + 1);
    /* The store counts the dropped rank as gone: a fence fails at once. */
    tc_status_t st = tc_boot_fence(boot, tc_deadline_after_ms(WAIT_MS));
    assert_int_equal(st, TC_ERR_PEER_FAILED);
    assert_non_null(strstr(tc_last_error(), "rank 1 left"));
    close(deaf);
    tc_boot_destroy(boot);
}

int main(void)
{
    /* The store's and the client's reasons are checked in the log (warn and above). */
    if (tc_log_configure("warn") != TC_OK)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_notify_reaches_every_other_rank),
        cmocka_unit_test(test_poll_reads_the_clock_rarely),
        cmocka_unit_test(test_notify_bad_arguments),
        cmocka_unit_test(test_malformed_notify_refused),
        cmocka_unit_test(test_bad_event_from_the_store),
        cmocka_unit_test(test_client_that_never_reads_is_dropped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
