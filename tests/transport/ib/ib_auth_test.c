/* The ib handshake socket against raw sockets: forged and replayed proofs, a fake passive side,
 * the cap on connections in their exchange and its deadline. The exchange, spelled out here
 * independently of the backend (all little-endian):
 * - handshake (80): u32 magic "TCIB", u16 version 3, u16 result, u64 sender, u64 receiver,
 *   u32 qpn, u32 psn, u16 lid, 6 zero, 16-byte gid, u16 flags (0x0100: a secret), 6 zero,
 *   u64 ring address, u32 ring rkey, u16 slots 64, u16 slot bytes 8240;
 * - hello: the active side's handshake, then a 32-byte nonce Ni (112);
 * - challenge: u32 magic, u16 version, u16 result 0, u64 sender, u64 receiver, 32-byte Na,
 *   32-byte MAC (88); a refusal: those 24 bytes with result 1 (refused), 2 (wrong secret),
 *   3 (bad proof), 4 (duplicate);
 * - proof: 32-byte MAC. MACs (tc_auth_mac): purpose "ib", both ids, Ni, Na, the 80-byte
 *   handshake of the hello as extra. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "ib_emu.h"
#include "ib_pair.h"
#include "tcomms/base/status.h"
#include "tcomms/base/time.h"
#include "tcomms/transport/auth.h"
#include "tcomms/transport/ib.h"
#include "tcomms/transport/transport.h"

#define MAGIC 0x42494354u
#define VERSION 3

static void le(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static struct sockaddr_in hs_addr(tc_tp_ctx_t *ctx)
{
    unsigned char a[64];
    size_t len;
    assert_int_equal(tc_tp_addr_pack(ctx, a, sizeof(a), &len), TC_OK);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    memcpy(&sa.sin_addr.s_addr, a + 20, 4);
    memcpy(&sa.sin_port, a + 24, 2);
    return sa;
}

static int raw_connect(tc_tp_ctx_t *ctx)
{
    struct sockaddr_in sa = hs_addr(ctx);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

/* Read up to @p want bytes while progressing @p ctx (5 s at most); *eof_p: EOF seen. */
static size_t raw_read(tc_tp_ctx_t *ctx, int fd, unsigned char *buf, size_t want, int *eof_p)
{
    size_t got = 0;
    int eof = 0;
    uint64_t deadline = tc_deadline_after_ms(5000);
    while (got < want && !tc_deadline_passed(deadline)) {
        tc_tp_progress(ctx);
        ssize_t n = recv(fd, buf + got, want - got, MSG_DONTWAIT);
        if (n > 0)
            got += (size_t)n;
        else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            eof = 1;
            break;
        }
    }
    if (eof_p != NULL)
        *eof_p = eof;
    return got;
}

/* A hello from @p sender to @p receiver (keyed: the secret flag). */
static void make_hello(unsigned char m[112], uint64_t sender, uint64_t receiver, int keyed)
{
    memset(m, 0, 112);
    le(m, MAGIC, 4);
    le(m + 4, VERSION, 2);
    le(m + 8, sender, 8);
    le(m + 16, receiver, 8);
    le(m + 24, 0x1234, 4); /* a QP number nobody has */
    le(m + 56, keyed ? 0x0100 : 0, 2);
    le(m + 76, 64, 2);
    le(m + 78, 8240, 2);
    tc_auth_nonce(m + 80);
}

static void mac(const char *secret, tc_auth_role_t role, const char *purpose, uint64_t acceptor,
                const unsigned char m[112], const unsigned char chal[88], unsigned char out[32])
{
    tc_auth_key_t key;
    assert_int_equal(tc_auth_key_init(&key, secret, secret ? strlen(secret) : 0), TC_OK);
    tc_auth_transcript_t t = {.purpose = purpose,
                              .initiator_id = get(m + 8, 8),
                              .acceptor_id = acceptor,
                              .extra = m,
                              .extra_len = 80};
    memcpy(t.nonce_i, m + 80, 32);
    memcpy(t.nonce_a, chal + 24, 32);
    tc_auth_mac(&key, role, &t, out);
}

/* Send hello @p m to @p ctx (id @p self) and read the answer: 0 and the challenge, whose MAC
 * is checked against @p secret when @p check, or the refusal's result (then EOF). */
static unsigned hello(tc_tp_ctx_t *ctx, int fd, const unsigned char m[112], uint64_t self,
                      unsigned char chal[88], const char *secret, int check)
{
    assert_int_equal(send(fd, m, 112, MSG_NOSIGNAL), 112);
    assert_int_equal(raw_read(ctx, fd, chal, 24, NULL), 24);
    assert_int_equal(get(chal, 4), MAGIC);
    assert_int_equal(get(chal + 4, 2), VERSION);
    assert_int_equal(get(chal + 8, 8), self);
    assert_int_equal(get(chal + 16, 8), get(m + 8, 8));
    unsigned result = (unsigned)get(chal + 6, 2);
    if (result != 0)
        return result;
    assert_int_equal(raw_read(ctx, fd, chal + 24, 64, NULL), 64);
    if (check) {
        unsigned char want[32];
        mac(secret, TC_AUTH_ACCEPTOR, "ib", self, m, chal, want);
        assert_memory_equal(chal + 56, want, 32);
    }
    return 0;
}

static int closed_by_peer(int fd)
{
    unsigned char b;
    ssize_t n = recv(fd, &b, 1, MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* After a proof: a refusal with @p result, then EOF; or (result 0) nothing, the socket open. */
static void expect_after_proof(tc_tp_ctx_t *ctx, int fd, unsigned result, uint64_t self,
                               uint64_t sender)
{
    unsigned char a[24];
    int eof = 0;
    if (result == 0) {
        for (int i = 0; i < 1000; i++)
            tc_tp_progress(ctx);
        assert_false(closed_by_peer(fd));
        return;
    }
    assert_int_equal(raw_read(ctx, fd, a, 24, NULL), 24);
    assert_int_equal(get(a, 4), MAGIC);
    assert_int_equal(get(a + 6, 2), result);
    assert_int_equal(get(a + 8, 8), self);
    assert_int_equal(get(a + 16, 8), sender);
    assert_int_equal(raw_read(ctx, fd, a, 1, &eof), 0);
    assert_true(eof);
}

/* Forged proofs (wrong secret, none, another acceptor id or purpose) and a replayed hello and
 * proof are refused as bad proofs (3); a hello without the secret flag to a context with a
 * secret with 2. A proof made right is accepted (the connection waits for its endpoint). */
static void test_forged_and_replayed(void **state)
{
    (void)state;
    tc_ibemu_reset();
    tc_tp_ctx_t *ctx = ctx_new(7, "job-7");
    /* a waiting endpoint (to id 3), so that the listener accepts */
    unsigned char other[32] = {1, 1};
    tc_tp_ep_t *ep3;
    assert_int_equal(tc_tp_ep_connect(ctx, 3, other, sizeof(other), &ep3), TC_OK);

    static const struct {
        const char *secret, *purpose;
        uint64_t acceptor;
    } forged[] = {
        {"job-8", "ib", 7},
        {NULL, "ib", 7},
        {"job-7", "ib", 8},
        {"job-7", "tcp/primary", 7},
    };
    unsigned char m[112], chal[88], proof[32];
    for (size_t i = 0; i < sizeof(forged) / sizeof(forged[0]); i++) {
        int fd = raw_connect(ctx);
        make_hello(m, 1, 7, 1);
        assert_int_equal(hello(ctx, fd, m, 7, chal, "job-7", 1), 0);
        mac(forged[i].secret, TC_AUTH_INITIATOR, forged[i].purpose, forged[i].acceptor, m, chal,
            proof);
        assert_int_equal(send(fd, proof, 32, MSG_NOSIGNAL), 32);
        expect_after_proof(ctx, fd, 3, 7, 1);
        close(fd);
    }
    /* without the secret flag: refused at once */
    int fd = raw_connect(ctx);
    make_hello(m, 1, 7, 0);
    assert_int_equal(hello(ctx, fd, m, 7, chal, NULL, 0), 2);
    close(fd);

    /* a right exchange (recorded), then its hello and proof replayed on new connections, read
     * challenge or not: bad proofs */
    int good = raw_connect(ctx);
    make_hello(m, 1, 7, 1);
    assert_int_equal(hello(ctx, good, m, 7, chal, "job-7", 1), 0);
    mac("job-7", TC_AUTH_INITIATOR, "ib", 7, m, chal, proof);
    assert_int_equal(send(good, proof, 32, MSG_NOSIGNAL), 32);
    expect_after_proof(ctx, good, 0, 7, 1); /* proved: waits for an endpoint to id 1 */
    for (int blind = 0; blind < 2; blind++) {
        fd = raw_connect(ctx);
        unsigned char both[144];
        memcpy(both, m, 112);
        memcpy(both + 112, proof, 32);
        if (blind)
            assert_int_equal(send(fd, both, sizeof(both), MSG_NOSIGNAL), (ssize_t)sizeof(both));
        unsigned char c2[88];
        if (blind) {
            assert_int_equal(raw_read(ctx, fd, c2, 88, NULL), 88);
        } else {
            assert_int_equal(hello(ctx, fd, m, 7, c2, "job-7", 1), 0);
            assert_int_equal(send(fd, proof, 32, MSG_NOSIGNAL), 32);
        }
        assert_memory_not_equal(c2 + 24, chal + 24, 32); /* a fresh nonce */
        expect_after_proof(ctx, fd, 3, 7, 1);
        close(fd);
    }
    close(good);
    assert_int_equal(ep3->failed, TC_OK);
    tc_tp_ep_close(ep3);
    tc_tp_ctx_destroy(ctx);
}

/* A passive side that does not hold the secret is found out by the active side: its endpoint
 * fails with a precise error, and no proof is sent. */
static void test_fake_passive(void **state)
{
    (void)state;
    tc_ibemu_reset();
    tc_tp_ctx_t *ctx = ctx_new(0, "job-7");
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &sl), 0);
    assert_int_equal(listen(lfd, 4), 0);
    unsigned char addr[32] = {1, 1};
    memcpy(addr + 20, &sa.sin_addr.s_addr, 4);
    memcpy(addr + 24, &sa.sin_port, 2);
    tc_tp_ep_t *ep;
    assert_int_equal(tc_tp_ep_connect(ctx, 1, addr, sizeof(addr), &ep), TC_OK);
    tc_tp_req_t s = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(ep, 1, "x", 1, &s), TC_OK);
    int fd = -1;
    uint64_t deadline = tc_deadline_after_ms(5000);
    while (fd < 0 && !tc_deadline_passed(deadline)) {
        tc_tp_progress(ctx);
        fd = accept(lfd, NULL, NULL);
    }
    assert_true(fd >= 0);
    unsigned char m[112], chal[88];
    assert_int_equal(raw_read(ctx, fd, m, 112, NULL), 112);
    assert_int_equal(get(m + 56, 2) & 0x0100, 0x0100);
    le(chal, MAGIC, 4);
    le(chal + 4, VERSION, 2);
    le(chal + 6, 0, 2);
    le(chal + 8, 1, 8);
    le(chal + 16, 0, 8);
    memset(chal + 24, 0x5a, 32);
    mac("job-8", TC_AUTH_ACCEPTOR, "ib", 1, m, chal, chal + 56);
    assert_int_equal(send(fd, chal, 88, MSG_NOSIGNAL), 88);
    deadline = tc_deadline_after_ms(5000);
    while (s.status == TC_INPROGRESS && !tc_deadline_passed(deadline))
        tc_tp_progress(ctx);
    assert_int_equal(s.status, TC_ERR_PEER_FAILED);
    assert_non_null(strstr(tc_tp_ep_error(ep), "failed the challenge: its MAC does not prove the "
                                               "job secret"));
    unsigned char more[32];
    int eof = 0;
    assert_int_equal(raw_read(ctx, fd, more, sizeof(more), &eof), 0); /* no proof */
    assert_true(eof);
    close(fd);
    close(lfd);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);
}

/* 70 idle connections: 6 beyond the cap of 64 are closed at once, the rest once the deadline
 * (here 1500 ms) passes. */
static void test_cap_and_deadline(void **state)
{
    (void)state;
    tc_ibemu_reset();
    setenv("TC_SOCKET_HANDSHAKE_TIMEOUT_MS", "1500", 1);
    tc_tp_ctx_t *ctx = ctx_new(7, NULL);
    unsetenv("TC_SOCKET_HANDSHAKE_TIMEOUT_MS");
    unsigned char other[32] = {1, 1};
    tc_tp_ep_t *ep3;
    assert_int_equal(tc_tp_ep_connect(ctx, 3, other, sizeof(other), &ep3), TC_OK); /* waits */
    int fds[70];
    uint64_t t0 = tc_time_ns();
    for (int i = 0; i < 70; i++)
        fds[i] = raw_connect(ctx);
    for (int i = 0; i < 200; i++)
        tc_tp_progress(ctx);
    int closed = 0;
    for (int i = 0; i < 70; i++)
        closed += closed_by_peer(fds[i]);
    if (tc_time_ns() - t0 < 1400000000ull)
        assert_int_equal(closed, 6);
    uint64_t deadline = tc_deadline_after_ms(10000);
    while (closed < 70 && !tc_deadline_passed(deadline)) {
        tc_tp_progress(ctx);
        tc_tp_wait(ctx, 1);
        closed = 0;
        for (int i = 0; i < 70; i++)
            closed += closed_by_peer(fds[i]);
    }
    assert_int_equal(closed, 70);
    assert_true((tc_time_ns() - t0) / 1000000 >= 1500);
    for (int i = 0; i < 70; i++)
        close(fds[i]);
    /* and the listener still takes a proper exchange */
    int fd = raw_connect(ctx);
    unsigned char m[112], chal[88], proof[32];
    make_hello(m, 1, 7, 0);
    assert_int_equal(hello(ctx, fd, m, 7, chal, NULL, 1), 0);
    mac(NULL, TC_AUTH_INITIATOR, "ib", 7, m, chal, proof);
    assert_int_equal(send(fd, proof, 32, MSG_NOSIGNAL), 32);
    expect_after_proof(ctx, fd, 0, 7, 1);
    close(fd);
    tc_tp_ep_close(ep3);
    tc_tp_ctx_destroy(ctx);
}

/* accept() out of descriptors: the handshake listener pauses (10 ms, doubling to 1 s) and logs
 * at most a line a second instead of spinning, and accepts again once descriptors are back. */
static void test_emfile_backoff(void **state)
{
    (void)state;
    tc_ibemu_reset();
    tc_tp_ctx_t *ctx = ctx_new(7, NULL);
    unsigned char other[32] = {1, 1};
    tc_tp_ep_t *ep3;
    assert_int_equal(tc_tp_ep_connect(ctx, 3, other, sizeof(other), &ep3), TC_OK); /* waits */
    int fds[5];
    for (int i = 0; i < 5; i++)
        fds[i] = raw_connect(ctx); /* queued in the listener's backlog */
    /* the log (stderr) into a file, to count its lines */
    const char *dir = getenv("TEST_TMPDIR");
    char path[256];
    snprintf(path, sizeof(path), "%s/ib_emfile_log.%d", dir ? dir : "/tmp", (int)getpid());
    int lfd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600), saved = dup(2);
    assert_true(lfd >= 0 && saved >= 0);
    assert_int_equal(dup2(lfd, 2), 2);
    /* no descriptor left: every number below the limit is taken */
    struct rlimit old, low;
    int lowest = dup(0);
    assert_true(lowest >= 0);
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    close(lowest);
    low = old;
    low.rlim_cur = (rlim_t)lowest;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    int none = dup(0), err = errno;
    uint64_t until = tc_deadline_after_ms(2000);
    while (!tc_deadline_passed(until)) {
        tc_tp_progress(ctx);
        tc_tp_wait(ctx, 1);
    }
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    fflush(stderr);
    assert_int_equal(dup2(saved, 2), 2);
    close(saved);
    assert_int_equal(none, -1);
    assert_int_equal(err, EMFILE);
    off_t end = lseek(lfd, 0, SEEK_END);
    char *text = calloc(1, (size_t)end + 1);
    assert_non_null(text);
    assert_int_equal(pread(lfd, text, (size_t)end, 0), end);
    close(lfd);
    unlink(path);
    /* the lines, and the refusals each line says it left out (rate limit): together, how many
     * times accept() failed */
    int lines = 0, failures = 0;
    for (const char *q = text; (q = strstr(q, "cannot accept handshake connections: accept: "));
         q++) {
        lines++;
        failures++;
        const char *eol = strchr(q, '\n'), *more = strstr(q, "(and ");
        if (more != NULL && (eol == NULL || more < eol))
            failures += atoi(more + 5);
    }
    int named = strstr(text, "Too many open files; not accepting for") != NULL;
    free(text);
    print_message("accept() out of descriptors for 2 s: %d log lines, %d failed accepts\n", lines,
                  failures);
    assert_true(lines >= 1); /* it said why */
    assert_true(lines < 10);
    /* paused 10, 20, 40 ... 1000 ms: about 9 tries in 2 s (without the pause: one per call) */
    assert_true(failures < 20);
    assert_int_equal(named, 1);
    /* descriptors again: a proper exchange is accepted */
    int fd = raw_connect(ctx);
    unsigned char m[112], chal[88], proof[32];
    make_hello(m, 1, 7, 0);
    assert_int_equal(hello(ctx, fd, m, 7, chal, NULL, 1), 0);
    mac(NULL, TC_AUTH_INITIATOR, "ib", 7, m, chal, proof);
    assert_int_equal(send(fd, proof, 32, MSG_NOSIGNAL), 32);
    expect_after_proof(ctx, fd, 0, 7, 1);
    close(fd);
    for (int i = 0; i < 5; i++)
        close(fds[i]);
    tc_tp_ep_close(ep3);
    tc_tp_ctx_destroy(ctx);
}

int main(void)
{
    setenv("TC_SOCKET_IFNAME", "lo", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forged_and_replayed),
        cmocka_unit_test(test_fake_passive),
        cmocka_unit_test(test_cap_and_deadline),
        cmocka_unit_test(test_emfile_backoff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
