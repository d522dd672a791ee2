/* Authentication of tcp connections and bounded listeners: replayed and forged handshakes, a
 * fake acceptor, the cap on connections in their handshake, its deadline, and accept() out of
 * descriptors. The wire format is spelled out in tcp_util.h, independently of the backend. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcomms/base/status.h"
#include "tcomms/base/time.h"
#include "tcomms/transport/tcp.h"
#include "tcomms/transport/transport.h"
#include "tcp_util.h"
#include "tp_util.h"

/* ---- what the library logs (stderr, redirected to a file) ---- */

static int saved_stderr = -1;
static char log_path[256];

static void log_capture_begin(void)
{
    const char *dir = getenv("TEST_TMPDIR");
    snprintf(log_path, sizeof(log_path), "%s/tcp_auth_log.%d", dir ? dir : "/tmp", (int)getpid());
    int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    saved_stderr = dup(2);
    assert_true(saved_stderr >= 0);
    assert_int_equal(dup2(fd, 2), 2);
    close(fd);
}

/* The captured text (to free), stderr restored. */
static char *log_capture_end(void)
{
    dup2(saved_stderr, 2);
    close(saved_stderr);
    saved_stderr = -1;
    FILE *f = fopen(log_path, "r");
    assert_non_null(f);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = 0;
    fclose(f);
    unlink(log_path);
    return strdup(buf);
}

static int count_lines(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* The sum of N over the "(and N more like it since the last such line)" in @p text. */
static long sum_left_out(const char *text)
{
    long sum = 0;
    for (const char *p = text; (p = strstr(p, "(and ")) != NULL; p++) {
        long n;
        if (sscanf(p, "(and %ld more like it since the last such line)", &n) == 1)
            sum += n;
    }
    return sum;
}

/* ---- contexts and data ---- */

/* Connect ctx[0] (id 0) and ctx[1] (id 1) both ways; ctx[0] dials @p addr1 (NULL: ctx[1]'s). */
static void connect_pair(tp_pair_t *p, const unsigned char *addr1)
{
    unsigned char addr[2][TP_ADDR_MAX];
    size_t len[2] = {tc_tpt_addr(p->ctx[0], addr[0]), tc_tpt_addr(p->ctx[1], addr[1])};
    if (addr1 != NULL)
        memcpy(addr[1], addr1, len[1]);
    tc_tpt_pair_connect(p, addr, len);
}

/* @p len bytes from ctx[0] to ctx[1], compared element by element. */
static void transfer_ok(tp_pair_t *p, size_t len, uint64_t seed)
{
    unsigned char *src = malloc(len);
    assert_non_null(src);
    tc_tpt_fill(src, len, seed);
    tc_tpt_transfer(p, 0, 100 + seed, src, len, seed, 1);
    free(src);
}

/* ---- a proxy between a real initiator and a real acceptor, recording what the initiator
 * sends ---- */

typedef struct proxy {
    int lfd;            /* where the initiator connects */
    int a, b;           /* to the initiator, to the acceptor */
    unsigned char rec[8192];
    size_t nrec;        /* bytes from the initiator, as they went by */
} proxy_t;

static void proxy_open(proxy_t *x, unsigned char addr[TP_ADDR_MAX])
{
    memset(x, 0, sizeof(*x));
    x->a = x->b = -1;
    x->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    assert_true(x->lfd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(x->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    socklen_t sl = sizeof(sa);
    assert_int_equal(getsockname(x->lfd, (struct sockaddr *)&sa, &sl), 0);
    assert_int_equal(listen(x->lfd, 4), 0);
    addr[0] = 1; /* the packed tcp address: version, family, port, IPv4 (big-endian) */
    addr[1] = 4;
    memcpy(addr + 2, &sa.sin_port, 2);
    memcpy(addr + 4, &sa.sin_addr.s_addr, 4);
}

static void proxy_move(int from, int to, unsigned char *rec, size_t *nrec)
{
    unsigned char buf[65536];
    ssize_t n;
    while ((n = recv(from, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
        if (rec != NULL) {
            size_t k = (size_t)n < 8192 - *nrec ? (size_t)n : 8192 - *nrec;
            memcpy(rec + *nrec, buf, k);
            *nrec += k;
        }
        for (ssize_t off = 0; off < n;) {
            ssize_t w = send(to, buf + off, (size_t)(n - off), MSG_NOSIGNAL);
            assert_true(w > 0);
            off += w;
        }
    }
}

static void proxy_pump(proxy_t *x, tc_tp_ctx_t *acceptor)
{
    if (x->a < 0) {
        x->a = accept(x->lfd, NULL, NULL);
        if (x->a < 0)
            return;
        x->b = tc_tcpt_raw_connect(acceptor);
    }
    proxy_move(x->a, x->b, x->rec, &x->nrec);
    proxy_move(x->b, x->a, NULL, NULL);
}

static void proxy_close(proxy_t *x)
{
    close(x->a);
    close(x->b);
    close(x->lfd);
}

/* Send the recorded hello and proof (@p blind: at once, without reading the challenge) to
 * @p ctx: refused with result 10 (bad proof), then EOF. */
static void replay(tc_tp_ctx_t *ctx, const unsigned char *rec, int blind)
{
    int fd = tc_tcpt_raw_connect(ctx);
    unsigned char chal[TCP_CHALLENGE_LEN];
    if (blind) {
        tc_tcpt_raw_send(fd, rec, TCP_HELLO_LEN + TCP_PROOF_LEN);
        assert_int_equal(tc_tcpt_read_challenge(ctx, fd, chal, 1, 0), 0);
    } else {
        tc_tcpt_raw_send(fd, rec, TCP_HELLO_LEN);
        assert_int_equal(tc_tcpt_read_challenge(ctx, fd, chal, 1, 0), 0);
        /* a fresh nonce: the recorded proof was for another */
        tc_tcpt_raw_send(fd, rec + TCP_HELLO_LEN, TCP_PROOF_LEN);
    }
    tc_tcpt_expect_ack(ctx, fd, 10, 1, 0);
    tc_tcpt_expect_eof(ctx, fd);
    close(fd);
}

/* A real initiator's bytes, captured by a proxy on a real connection, replayed into another
 * context of the same job and into the same one: refused as bad proofs and logged; the real
 * pair and a real peer of the other context still carry data intact. */
static void test_replay(void **state)
{
    (void)state;
    tp_pair_t p;
    p.ctx[0] = tc_tcpt_ctx_new(0, "job-7");
    p.ctx[1] = tc_tcpt_ctx_new(1, "job-7");
    proxy_t x;
    unsigned char via[TP_ADDR_MAX];
    proxy_open(&x, via);
    connect_pair(&p, via);
    /* bring the pair up through the proxy, one message from ctx 0 to ctx 1 */
    unsigned char msg[4096], in[4096];
    tc_tpt_fill(msg, sizeof(msg), 3);
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(p.ep[1], 5, in, sizeof(in), &r), TC_OK);
    assert_int_equal(tc_tp_send(p.ep[0], 5, msg, sizeof(msg), &s), TC_OK);
    uint64_t deadline = tc_deadline_after_ms(TP_WAIT_MS);
    while ((s.status == TC_INPROGRESS || r.status == TC_INPROGRESS) &&
           !tc_deadline_passed(deadline)) {
        tc_tpt_spin(p.ctx, 2, 1);
        proxy_pump(&x, p.ctx[1]);
    }
    assert_int_equal(s.status, TC_OK);
    assert_int_equal(r.status, TC_OK);
    assert_int_equal(r.bytes, sizeof(msg));
    assert_int_equal(tc_tpt_check(in, sizeof(in), 3), sizeof(in));
    /* what went by: hello, proof, then the message (16-byte header, payload) */
    assert_int_equal(x.nrec, TCP_HELLO_LEN + TCP_PROOF_LEN + 16 + sizeof(msg));
    assert_memory_equal(x.rec + TCP_HELLO_LEN + TCP_PROOF_LEN + 16, msg, sizeof(msg));

    tc_tp_ctx_t *other = tc_tcpt_ctx_new(1, "job-7");
    tc_tp_ep_t *oep = tc_tcpt_loop_ep(other, 0); /* a waiting endpoint to id 0 */
    log_capture_begin();
    replay(other, x.rec, 0);
    replay(other, x.rec, 1);
    replay(p.ctx[1], x.rec, 0);
    replay(p.ctx[1], x.rec, 1);
    char *log = log_capture_end();
    /* one line per context (the second of each within the second is counted, not logged) */
    assert_int_equal(count_lines(log, "refused the connection from 127.0.0.1:"), 2);
    assert_int_equal(count_lines(log, "(claiming id 0): bad proof (wrong secret, or a replayed "
                                      "hello)"),
                     2);
    free(log);
    assert_int_equal(oep->failed, TC_OK);
    assert_int_equal(p.ep[1]->failed, TC_OK);

    /* the real pair still works (through the proxy) */
    memset(in, 0, sizeof(in));
    tc_tpt_fill(msg, sizeof(msg), 4);
    s = (tc_tp_req_t)TC_TP_REQ_INIT;
    r = (tc_tp_req_t)TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(p.ep[1], 6, in, sizeof(in), &r), TC_OK);
    assert_int_equal(tc_tp_send(p.ep[0], 6, msg, sizeof(msg), &s), TC_OK);
    deadline = tc_deadline_after_ms(TP_WAIT_MS);
    while ((s.status == TC_INPROGRESS || r.status == TC_INPROGRESS) &&
           !tc_deadline_passed(deadline)) {
        tc_tpt_spin(p.ctx, 2, 1);
        proxy_pump(&x, p.ctx[1]);
    }
    assert_int_equal(r.status, TC_OK);
    assert_int_equal(tc_tpt_check(in, sizeof(in), 4), sizeof(in));
    tc_tpt_pair_close(&p);
    proxy_close(&x);

    /* and a real peer of the other context connects to it directly */
    tc_tp_ep_close(oep);
    tp_pair_t q;
    q.ctx[0] = tc_tcpt_ctx_new(0, "job-7");
    q.ctx[1] = other;
    connect_pair(&q, NULL);
    transfer_ok(&q, 100000, 9);
    tc_tpt_pair_close(&q);
}

/* Send a keyed hello (flags @p flags) from id 0 to @p ctx (id 1), then a proof made with
 * @p secret, @p purpose and acceptor id @p acceptor; expect result @p result and EOF. */
static void forge(tc_tp_ctx_t *ctx, uint16_t flags, const char *secret, const char *purpose,
                  uint64_t acceptor, unsigned result)
{
    int fd = tc_tcpt_raw_connect(ctx);
    unsigned char h[TCP_HELLO_LEN], chal[TCP_CHALLENGE_LEN], mac[TCP_PROOF_LEN];
    tc_tcpt_raw_send(fd, h, tc_tcpt_make_hello(h, TCP_MAGIC, flags, 0, 1, 0));
    assert_int_equal(tc_tcpt_read_challenge(ctx, fd, chal, 1, 0), 0);
    tc_tcpt_mac(secret, 1, purpose, acceptor, h, chal, mac);
    tc_tcpt_raw_send(fd, mac, sizeof(mac));
    tc_tcpt_expect_ack(ctx, fd, result, 1, 0);
    tc_tcpt_expect_eof(ctx, fd);
    close(fd);
}

/* Proofs made with a wrong secret, with none, or with the right secret but for another
 * acceptor id or another purpose are refused (result 10); a hello without the secret flag to a
 * context with a secret is refused at once (result 3). A real peer connects afterwards. */
static void test_forged(void **state)
{
    (void)state;
    tc_tp_ctx_t *ctx = tc_tcpt_ctx_new(1, "job-7");
    tc_tp_ep_t *ep = tc_tcpt_loop_ep(ctx, 0);
    log_capture_begin();
    forge(ctx, TCP_F_KEYED, "job-8", NULL, 1, 10);         /* wrong secret */
    forge(ctx, TCP_F_KEYED, NULL, NULL, 1, 10);            /* no secret, claiming one */
    forge(ctx, TCP_F_KEYED, "job-7", NULL, 2, 10);         /* for another acceptor */
    forge(ctx, TCP_F_KEYED, "job-7", "tcp/data", 1, 10);   /* for another purpose */
    forge(ctx, TCP_F_KEYED, "job-7", "ib", 1, 10);         /* for another backend */
    assert_int_equal(tc_tcpt_raw_hello(ctx, 0, 0, 1, 0, 3), -1); /* no secret, saying so */
    for (int i = 0; i < 20; i++) /* many more: mostly counted, not logged */
        forge(ctx, TCP_F_KEYED, "job-8", NULL, 1, 10);
    char *log = log_capture_end();
    int lines = count_lines(log, "bad proof (wrong secret, or a replayed hello)");
    long left_out = sum_left_out(log);
    assert_int_equal(count_lines(log, "wrong secret (one side has a job secret, the other none"),
                     1);
    free(log);
    /* the forger's proof with the right everything is accepted: the test's MACs are right */
    int fd = tc_tcpt_raw_hello_secret(ctx, "job-7", 0, 0, 1, 0, 0);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(tc_tpt_wait_failed(&ctx, 1, ep, 5000), TC_ERR_PEER_FAILED);
    tc_tp_ep_close(ep);

    /* a second later, the next refusal is logged with the count of those left out: every one
     * of the 26 bad proofs is either a line or counted in one */
    sleep(1);
    log_capture_begin();
    forge(ctx, TCP_F_KEYED, "job-8", NULL, 1, 10);
    log = log_capture_end();
    assert_int_equal(count_lines(log, "bad proof"), 1);
    lines += 1;
    left_out += sum_left_out(log);
    free(log);
    print_message("26 bad proofs: %d lines, %ld left out\n", lines, left_out);
    assert_true(lines <= 4); /* one per second: the 25 first take well under 3 s */
    assert_int_equal(lines + left_out, 26);

    tp_pair_t q;
    q.ctx[0] = tc_tcpt_ctx_new(0, "job-7");
    q.ctx[1] = ctx;
    connect_pair(&q, NULL);
    transfer_ok(&q, 70000, 11);
    tc_tpt_pair_close(&q);
}

/* A listener that answers the hello with a challenge made with @p secret. */
static void fake_acceptor(const char *ctx_secret, const char *fake_secret)
{
    tc_tp_ctx_t *ctx = tc_tcpt_ctx_new(0, ctx_secret);
    proxy_t x; /* only its listening socket */
    unsigned char addr[TP_ADDR_MAX];
    proxy_open(&x, addr);
    tc_tp_ep_t *ep = NULL;
    assert_int_equal(tc_tp_ep_connect(ctx, 1, addr, 8, &ep), TC_OK);
    tc_tp_req_t s = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(ep, 1, "secret data", 11, &s), TC_OK);
    int fd = -1;
    uint64_t deadline = tc_deadline_after_ms(5000);
    while (fd < 0 && !tc_deadline_passed(deadline)) {
        tc_tp_progress(ctx);
        fd = accept(x.lfd, NULL, NULL);
    }
    assert_true(fd >= 0);
    unsigned char h[TCP_HELLO_LEN], chal[TCP_CHALLENGE_LEN];
    assert_int_equal(tc_tcpt_raw_read(ctx, fd, h, sizeof(h), NULL), sizeof(h));
    tc_tcpt_le(chal, TCP_MAGIC, 4);
    tc_tcpt_le(chal + 4, TCP_VERSION, 2);
    tc_tcpt_le(chal + 6, 0, 2);
    tc_tcpt_le(chal + 8, 1, 8);
    tc_tcpt_le(chal + 16, 0, 8);
    memset(chal + 24, 0x5a, 32);
    tc_tcpt_mac(fake_secret, 2, NULL, 1, h, chal, chal + 56);
    tc_tcpt_raw_send(fd, chal, sizeof(chal));
    assert_int_equal(tc_tpt_wait_failed(&ctx, 1, ep, 5000), TC_ERR_PEER_FAILED);
    assert_int_equal(s.status, TC_ERR_PEER_FAILED);
    if (strstr(tc_tp_ep_error(ep), "failed the challenge") == NULL)
        print_error("%s\n", tc_tp_ep_error(ep));
    assert_non_null(strstr(tc_tp_ep_error(ep), "peer 1 (127.0.0.1:"));
    assert_non_null(strstr(tc_tp_ep_error(ep), "failed the challenge: its MAC does not prove the "
                                               "job secret"));
    /* nothing but the hello went out: no proof, not the message */
    unsigned char more[64];
    int eof = 0;
    assert_int_equal(tc_tcpt_raw_read(ctx, fd, more, sizeof(more), &eof), 0);
    assert_true(eof);
    close(fd);
    close(x.lfd);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);
}

/* An acceptor that does not hold the secret (another one, or none) is found out by the
 * initiator, which fails its endpoint with a precise error and sends nothing more. */
static void test_fake_acceptor(void **state)
{
    (void)state;
    fake_acceptor("job-7", "job-8");
    fake_acceptor("job-7", NULL);
    fake_acceptor(NULL, "job-7"); /* without a secret, a keyed fake fails the same way */
}

/* Whether @p fd was closed by the peer (EOF or reset), without blocking. */
static int closed_by_peer(int fd)
{
    unsigned char b;
    ssize_t n = recv(fd, &b, 1, MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* 70 idle connections: the 6 beyond the cap of 64 are closed at once, the rest when the
 * handshake deadline (here 1500 ms) passes; a real peer connects afterwards. */
static void test_cap_and_deadline(void **state)
{
    (void)state;
    setenv("TC_SOCKET_HANDSHAKE_TIMEOUT_MS", "1500", 1);
    tp_pair_t q;
    q.ctx[1] = tc_tcpt_ctx_new(1, "job-7");
    unsetenv("TC_SOCKET_HANDSHAKE_TIMEOUT_MS");
    int fds[70];
    log_capture_begin();
    uint64_t t0 = tc_time_ns();
    for (int i = 0; i < 70; i++)
        fds[i] = tc_tcpt_raw_connect(q.ctx[1]);
    tc_tpt_spin(&q.ctx[1], 1, 100);
    int closed = 0;
    for (int i = 0; i < 70; i++)
        closed += closed_by_peer(fds[i]);
    int early = tc_time_ns() - t0 < 1400000000ull; /* still before the deadline */
    if (early)
        assert_int_equal(closed, 6);
    /* the deadline: all are dropped soon after 1500 ms */
    uint64_t deadline = tc_deadline_after_ms(10000);
    while (closed < 70 && !tc_deadline_passed(deadline)) {
        tc_tpt_spin(&q.ctx[1], 1, 20);
        closed = 0;
        for (int i = 0; i < 70; i++)
            closed += closed_by_peer(fds[i]);
    }
    uint64_t took_ms = (tc_time_ns() - t0) / 1000000;
    char *log = log_capture_end();
    assert_int_equal(closed, 70);
    assert_true(took_ms >= 1500);
    assert_int_equal(count_lines(log, "connections are in their handshake already"), 1);
    assert_int_equal(count_lines(log, "no hello within 1500 ms"), 1);
    free(log);
    for (int i = 0; i < 70; i++)
        close(fds[i]);
    q.ctx[0] = tc_tcpt_ctx_new(0, "job-7");
    connect_pair(&q, NULL);
    transfer_ok(&q, 50000, 12);
    tc_tpt_pair_close(&q);
}

/* ---- accept() out of descriptors, in a child process ---- */

static int emfile_child(void *arg, int in, int out)
{
    (void)arg;
    (void)in;
    const char *dir = getenv("TEST_TMPDIR");
    char path[256];
    snprintf(path, sizeof(path), "%s/tcp_emfile_log.%d", dir ? dir : "/tmp", (int)getpid());
    int lfd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (lfd < 0 || dup2(lfd, 2) != 2)
        return 10;
    tc_tp_ctx_t *ctx[2];
    tc_tp_ep_t *ep[2];
    unsigned char addr[2][TP_ADDR_MAX];
    size_t alen[2];
    for (int i = 0; i < 2; i++)
        if (tc_tpt_ctx_try(&tc_tp_tcp_ops, (uint64_t)i, "job-7", NULL, &ctx[i]) != TC_OK ||
            tc_tp_addr_pack(ctx[i], addr[i], sizeof(addr[i]), &alen[i]) != TC_OK)
            return 11;
    /* both endpoints exist before the descriptors run out: the connect of id 0 waits in
     * the listener's queue of id 1, and so do 5 raw connections */
    for (int i = 0; i < 2; i++)
        if (tc_tp_ep_connect(ctx[i], (uint64_t)(1 - i), addr[1 - i], alen[1 - i], &ep[i]) != TC_OK)
            return 12;
    struct sockaddr_in sa = {.sin_family = AF_INET};
    memcpy(&sa.sin_port, addr[1] + 2, 2);
    memcpy(&sa.sin_addr.s_addr, addr[1] + 4, 4);
    for (int i = 0; i < 5; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
            return 13;
    }
    /* no descriptor left: every number below the limit is taken */
    struct rlimit old, low;
    int lowest = dup(2);
    if (lowest < 0 || getrlimit(RLIMIT_NOFILE, &old) != 0)
        return 14;
    close(lowest);
    low = old;
    low.rlim_cur = (rlim_t)lowest;
    if (setrlimit(RLIMIT_NOFILE, &low) != 0)
        return 15;
    if (dup(2) >= 0 || errno != EMFILE)
        return 16;
    off_t mark = lseek(2, 0, SEEK_END);
    uint64_t until = tc_deadline_after_ms(2000);
    while (!tc_deadline_passed(until)) {
        tc_tp_progress(ctx[0]);
        tc_tp_progress(ctx[1]);
        tc_tp_wait(ctx[1], 1);
    }
    if (setrlimit(RLIMIT_NOFILE, &old) != 0)
        return 17;
    /* count the lines of those 2 s */
    off_t end = lseek(2, 0, SEEK_END);
    char *text = calloc(1, (size_t)(end - mark) + 1);
    if (text == NULL || pread(2, text, (size_t)(end - mark), mark) != end - mark)
        return 18;
    int32_t lines = 0;
    for (const char *p = text; (p = strstr(p, "cannot accept connections: accept: ")) != NULL; p++)
        lines++;
    int emfile = strstr(text, "Too many open files; not accepting for") != NULL;
    free(text);
    /* descriptors again: the queued peer is accepted and carries a message intact */
    unsigned char msg[3000], got[3000];
    tc_tpt_fill(msg, sizeof(msg), 21);
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
    tc_tp_recv(ep[1], 8, got, sizeof(got), &r);
    tc_tp_send(ep[0], 8, msg, sizeof(msg), &s);
    uint64_t deadline = tc_deadline_after_ms(TP_WAIT_MS);
    while ((s.status == TC_INPROGRESS || r.status == TC_INPROGRESS) &&
           !tc_deadline_passed(deadline)) {
        tc_tp_progress(ctx[0]);
        tc_tp_progress(ctx[1]);
    }
    int32_t report[3] = {lines, emfile,
                         r.status == TC_OK && r.bytes == sizeof(msg) &&
                             tc_tpt_check(got, sizeof(got), 21) == sizeof(got)};
    if (tc_tpt_write_all(out, report, sizeof(report)) != 0)
        return 19;
    unlink(path);
    return 0;
}

/* accept() failing with EMFILE while connections queue: the listener backs off (a handful of
 * lines over 2 s, not one per try), and recovers once descriptors are available again. */
static void test_emfile(void **state)
{
    (void)state;
    int in, out;
    pid_t pid = tc_tpt_fork(emfile_child, NULL, &in, &out);
    int32_t report[3] = {-1, -1, -1};
    int rd = tc_tpt_read_all(in, report, sizeof(report));
    int status = tc_tpt_reap(pid, 30000);
    close(in);
    close(out);
    if (rd != 0 || status != 0)
        print_error("child status %d (exit %d)\n", status, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    assert_int_equal(rd, 0);
    assert_int_equal(status, 0);
    print_message("accept() out of descriptors for 2 s: %d log lines\n", report[0]);
    assert_true(report[0] >= 1);
    assert_true(report[0] < 10);
    assert_int_equal(report[1], 1); /* the line names the cause and the back-off */
    assert_int_equal(report[2], 1); /* and the peer connected afterwards, data intact */
}

int main(void)
{
    setenv("TC_SOCKET_IFNAME", "lo", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replay),         cmocka_unit_test(test_forged),
        cmocka_unit_test(test_fake_acceptor),  cmocka_unit_test(test_cap_and_deadline),
        cmocka_unit_test(test_emfile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
