/* Several rails (TC_SOCKET_IFNAME lists): list parsing, striping over every rail, failover of a
 * lost data socket, and the peer failing when every socket is gone.
 *
 * The test runs in a private network namespace (unshare) where lo carries 127.0.0.1 and three
 * labelled addresses lo:r1 .. lo:r3 (127.0.0.2 .. 4), each an interface name of its own for
 * getifaddrs(); without the privilege for that, every test skips. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>
#include "tcomms/base/status.h"
#include "tcomms/base/time.h"
#include "tcomms/transport/tcp.h"
#include "tcomms/transport/transport.h"
#include "tcp_util.h"
#include "tp_util.h"

#define RAIL1_IP "127.0.0.2"
#define BIG (16u << 20)

static int g_netns;    /* the private namespace with the rails is set up */
static int g_has_noip; /* interface "tcnoip" (no IPv4) and "tcdown" (IPv4, down) exist */

static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Enter a private network namespace with the rails; 0 when not possible. */
static int rails_netns(void)
{
    if (geteuid() == 0) {
        if (unshare(CLONE_NEWNET) != 0)
            return 0;
    } else {
        uid_t uid = geteuid();
        gid_t gid = getegid();
        char map[64];
        if (unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0)
            return 0;
        snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
        if (write_file("/proc/self/uid_map", map) != 0 ||
            write_file("/proc/self/setgroups", "deny") != 0)
            return 0;
        snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
        if (write_file("/proc/self/gid_map", map) != 0)
            return 0;
    }
    if (system("ip link set lo up && ip addr add 127.0.0.2/8 dev lo label lo:r1 && "
               "ip addr add 127.0.0.3/8 dev lo label lo:r2 && "
               "ip addr add 127.0.0.4/8 dev lo label lo:r3") != 0)
        return 0;
    g_has_noip = system("ip link add tcnoip type dummy 2>/dev/null && ip link set tcnoip up && "
                        "ip link add tcdown type dummy && "
                        "ip addr add 10.255.0.1/32 dev tcdown") == 0;
    return 1;
}

/* ---- stderr capture, to check warnings ---- */

static int g_saved_stderr = -1;
static FILE *g_capture;

static void capture_start(void)
{
    fflush(stderr);
    g_capture = tmpfile();
    assert_non_null(g_capture);
    g_saved_stderr = dup(2);
    assert_true(g_saved_stderr >= 0);
    assert_int_equal(dup2(fileno(g_capture), 2), 2);
}

/* Stop capturing; returns what was written (static buffer), echoed to the real stderr. */
static const char *capture_stop(void)
{
    static char text[16384];
    fflush(stderr);
    assert_int_equal(dup2(g_saved_stderr, 2), 2);
    close(g_saved_stderr);
    rewind(g_capture);
    size_t n = fread(text, 1, sizeof(text) - 1, g_capture);
    text[n] = '\0';
    fclose(g_capture);
    fputs(text, stderr);
    return text;
}

/* ---- helpers ---- */

static void expect_ifname_error(const char *value, const char *what)
{
    setenv("TC_SOCKET_IFNAME", value, 1);
    tc_tp_ctx_params_t params = TC_TP_CTX_PARAMS_INIT;
    tc_tp_ctx_t *ctx = NULL;
    assert_int_equal(tc_tp_ctx_create(&tc_tp_tcp_ops, &params, &ctx), TC_ERR_CONFIG);
    assert_null(ctx);
    const char *err = tc_last_error();
    if (strstr(err, "TC_SOCKET_IFNAME") == NULL || strstr(err, value) == NULL ||
        strstr(err, what) == NULL)
        fail_msg("TC_SOCKET_IFNAME='%s': error '%s' does not say '%s'", value, err, what);
}

/* Established TCP sockets of this process: fds, local and peer IPv4 addresses. */
typedef struct sock_info {
    int fd;
    struct sockaddr_in local, peer;
} sock_info_t;

static int list_sockets(sock_info_t *out, int max)
{
    int n = 0;
    for (int fd = 3; fd < 4096 && n < max; fd++) {
        socklen_t l1 = sizeof(out[n].local), l2 = sizeof(out[n].peer);
        if (getsockname(fd, (struct sockaddr *)&out[n].local, &l1) != 0 ||
            out[n].local.sin_family != AF_INET ||
            getpeername(fd, (struct sockaddr *)&out[n].peer, &l2) != 0)
            continue;
        out[n].fd = fd;
        n++;
    }
    return n;
}

/* Wait (bounded) until @p want established sockets exist; returns the count. */
static int wait_sockets(tp_pair_t *p, sock_info_t *s, int want)
{
    uint64_t deadline = tc_deadline_after_ms(5000);
    int n = list_sockets(s, 64);
    while (n < want && !tc_deadline_passed(deadline)) {
        tc_tpt_spin(p->ctx, 2, 5);
        n = list_sockets(s, 64);
    }
    return n;
}

static uint64_t bytes_received(int fd)
{
    struct tcp_info ti;
    socklen_t len = sizeof(ti);
    memset(&ti, 0, sizeof(ti));
    assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len), 0);
    return ti.tcpi_bytes_received;
}

static int is_ip(const struct sockaddr_in *sa, const char *ip)
{
    struct in_addr a;
    inet_pton(AF_INET, ip, &a);
    return sa->sin_addr.s_addr == a.s_addr;
}

/* A pair over rails @p ifname with @p nsocks sockets (NULL: the default), up: every socket
 * established and through its handshake (a striped message went each way). */
static void pair_open_rails(tp_pair_t *p, const char *ifname, const char *nsocks)
{
    setenv("TC_SOCKET_IFNAME", ifname, 1);
    if (nsocks != NULL)
        setenv("TC_SOCKET_NSOCKS", nsocks, 1);
    tc_tcpt_pair_open(p, NULL);
    unsetenv("TC_SOCKET_NSOCKS");
    tc_tpt_pair_up(p, TP_WAIT_MS);
    int want = 2 * (nsocks != NULL ? atoi(nsocks) : 2);
    sock_info_t s[64];
    assert_int_equal(wait_sockets(p, s, want), want);
    size_t len = 1u << 20;
    unsigned char *buf = malloc(len);
    assert_non_null(buf);
    tc_tpt_fill(buf, len, 1);
    tc_tpt_transfer(p, 0, 998, buf, len, 1, 1);
    tc_tpt_transfer(p, 1, 998, buf, len, 1, 1);
    free(buf);
}

/* ---- list parsing ---- */

static void test_list_bad(void **state)
{
    (void)state;
    if (!g_netns)
        skip();
    expect_ifname_error("nosuch0", "entry 1 'nosuch0': no interface of that name");
    expect_ifname_error("lo,nosuch0", "entry 2 'nosuch0': no interface of that name");
    expect_ifname_error("lo,lo", "entry 2 'lo' repeats entry 1");
    expect_ifname_error("lo,,lo:r1", "entry 2 is empty");
    expect_ifname_error("lo,", "entry 2 is empty");
    expect_ifname_error(",lo", "entry 1 is empty");
    expect_ifname_error("", "entry 1 is empty");
    expect_ifname_error("lo,averyveryverylongname0", "entry 2 'averyveryverylongname0' is longer");
    expect_ifname_error("lo,lo:r1,lo:r2,lo:r3,lo:r1", "entry 5 'lo:r1': more than 4 interfaces");
    if (g_has_noip) {
        expect_ifname_error("lo,tcnoip", "entry 2 'tcnoip': the interface has no IPv4 address");
        expect_ifname_error("tcdown", "entry 1 'tcdown': the interface is down");
    }
    unsetenv("TC_SOCKET_IFNAME");
}

/* TC_SOCKET_RAIL_TIMEOUT_MS outside [100, 600000] or malformed: TC_ERR_CONFIG naming it. */
static void test_rail_timeout_bad(void **state)
{
    (void)state;
    static const char *bad[] = {"99", "600001", "-1", "2s", ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setenv("TC_SOCKET_RAIL_TIMEOUT_MS", bad[i], 1);
        tc_tp_ctx_params_t params = TC_TP_CTX_PARAMS_INIT;
        tc_tp_ctx_t *ctx = NULL;
        assert_int_equal(tc_tp_ctx_create(&tc_tp_tcp_ops, &params, &ctx), TC_ERR_CONFIG);
        assert_null(ctx);
        assert_non_null(strstr(tc_last_error(), "TC_SOCKET_RAIL_TIMEOUT_MS"));
    }
    setenv("TC_SOCKET_RAIL_TIMEOUT_MS", "1000", 1);
}

static void test_list_good(void **state)
{
    (void)state;
    if (!g_netns)
        skip();
    /* one name: today's 8-byte address */
    setenv("TC_SOCKET_IFNAME", "lo:r1", 1);
    tc_tp_ctx_t *ctx = tc_tcpt_ctx_new(0, NULL);
    unsigned char addr[TP_ADDR_MAX];
    assert_int_equal(tc_tpt_addr(ctx, addr), 8);
    assert_memory_equal(addr + 4, "\x7f\x00\x00\x02", 4);
    tc_tp_ctx_destroy(ctx);
    /* four: one address each, in list order, one port */
    setenv("TC_SOCKET_IFNAME", "lo:r2,lo,lo:r3,lo:r1", 1);
    ctx = tc_tcpt_ctx_new(0, NULL);
    assert_int_equal(tc_tpt_addr(ctx, addr), 20);
    assert_memory_equal(addr + 4,
                        "\x7f\x00\x00\x03\x7f\x00\x00\x01\x7f\x00\x00\x04\x7f\x00\x00\x02", 16);
    tc_tp_ctx_destroy(ctx);
    unsetenv("TC_SOCKET_IFNAME");
}

/* A rail address of a bad length is refused, naming the peer. */
static void test_addr_bad(void **state)
{
    (void)state;
    if (!g_netns)
        skip();
    setenv("TC_SOCKET_IFNAME", "lo,lo:r1", 1);
    tc_tp_ctx_t *ctx = tc_tcpt_ctx_new(0, NULL);
    unsigned char addr[TP_ADDR_MAX];
    size_t len = tc_tpt_addr(ctx, addr);
    tc_tp_ep_t *ep = NULL;
    static const size_t bad[] = {7, 10, 13, 24};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(tc_tp_ep_connect(ctx, 5, addr, bad[i], &ep), TC_ERR_INVALID_ARG);
        assert_non_null(strstr(tc_last_error(), "peer 5"));
    }
    assert_null(ep);
    (void)len;
    tc_tp_ctx_destroy(ctx);
    unsetenv("TC_SOCKET_IFNAME");
}

/* ---- striping ---- */

/* Every rail carries a fair share, and rail i pairs with the peer's rail i. */
static void check_rails_share(const char *nsocks, int want_socks)
{
    tp_pair_t p;
    pair_open_rails(&p, "lo,lo:r1", nsocks);
    unsigned char *src = malloc(BIG);
    assert_non_null(src);
    tc_tpt_fill(src, BIG, 11);
    tc_tpt_transfer(&p, 0, 1, src, BIG, 11, 1);
    tc_tpt_fill(src, BIG, 12);
    tc_tpt_transfer(&p, 1, 2, src, BIG, 12, 0);
    sock_info_t s[64];
    int n = wait_sockets(&p, s, 2 * want_socks);
    assert_int_equal(n, 2 * want_socks); /* both ends of every socket */
    uint64_t rail[2] = {0, 0};
    for (int i = 0; i < n; i++) {
        int r1 = is_ip(&s[i].local, RAIL1_IP);
        assert_int_equal(r1, is_ip(&s[i].peer, RAIL1_IP)); /* rail 1 <-> rail 1 */
        rail[r1] += bytes_received(s[i].fd);
    }
    uint64_t total = rail[0] + rail[1];
    printf("rails, %s sockets: rail 0 %llu bytes, rail 1 %llu bytes (%.1f%%)\n",
           nsocks ? nsocks : "default", (unsigned long long)rail[0], (unsigned long long)rail[1],
           100.0 * (double)rail[1] / (double)total);
    assert_true(total >= 2ull * BIG); /* both ways */
    assert_true(rail[0] >= total / 5 && rail[1] >= total / 5);
    free(src);
    tc_tpt_pair_close(&p);
}

static void test_stripe_every_rail(void **state)
{
    (void)state;
    if (!g_netns)
        skip();
    check_rails_share(NULL, 2); /* raised to one socket per rail */
    check_rails_share("4", 4);
    unsetenv("TC_SOCKET_IFNAME");
}

/* ---- failover ---- */

/* The first socket of this process on rail 1 whose local end belongs to ctx[side] (the
 * connecting side binds its rail-1 sockets to 127.0.0.2 with an ephemeral port, the accepting
 * side's local port is its listening one). */
static int rail1_fd(tp_pair_t *p, int side)
{
    struct sockaddr_in lst = tc_tcpt_listen_addr(p->ctx[1]);
    sock_info_t s[64];
    int n = list_sockets(s, 64);
    for (int i = 0; i < n; i++) {
        if (!is_ip(&s[i].local, RAIL1_IP))
            continue;
        int accepted = s[i].local.sin_port == lst.sin_port;
        if (accepted == (side == 1))
            return s[i].fd;
    }
    for (int i = 0; i < n; i++) /* say what there is */
        fprintf(stderr, "socket %d: %s:%u -> %s:%u (listening port %u)\n", s[i].fd,
                inet_ntoa(s[i].local.sin_addr), ntohs(s[i].local.sin_port),
                inet_ntoa(s[i].peer.sin_addr), ntohs(s[i].peer.sin_port), ntohs(lst.sin_port));
    return -1;
}

/* A consumer (tc_tp_recv_sink) that copies its pieces to a buffer; pieces out of order or off
 * the unit of 8 (but the last) are counted in bad. */
typedef struct copy_sink {
    unsigned char *dst;
    size_t next, len;
    int bad;
} copy_sink_t;

static tc_status_t copy_fn(void *arg, size_t off, const void *data, size_t len)
{
    copy_sink_t *k = arg;
    if (off != k->next || off % 8 != 0 || (off + len != k->len && len % 8 != 0) ||
        len > k->len - off || (uintptr_t)data % 8 != 0) {
        k->bad = 1;
        return TC_OK;
    }
    memcpy(k->dst + off, data, len);
    k->next = off + len;
    return TC_OK;
}

/* Shut down a rail-1 socket on @p side (of @p nsocks per peer) while NMSG large messages go
 * both ways (the second one each way into a sink); everything arrives intact, a warning names
 * the interface and the peer, and nothing fails. */
static void check_failover(int side, size_t len, int nsocks)
{
    tp_pair_t p;
    char ns[8];
    snprintf(ns, sizeof(ns), "%d", nsocks);
    pair_open_rails(&p, "lo,lo:r1", ns);
    enum { NMSG = 3 };
    unsigned char *src[2][NMSG], *dst[2][NMSG];
    tc_tp_req_t s[2][NMSG], r[2][NMSG];
    copy_sink_t ks[2];
    tc_tp_sink_t sinks[2];
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < NMSG; i++) {
            src[d][i] = malloc(len);
            dst[d][i] = tc_tpt_guarded_alloc(len);
            assert_non_null(src[d][i]);
            tc_tpt_fill(src[d][i], len, 100 + 10 * d + i);
            s[d][i] = (tc_tp_req_t)TC_TP_REQ_INIT;
            r[d][i] = (tc_tp_req_t)TC_TP_REQ_INIT;
            if (i == 1) { /* chunks sent again reach the sink once, in order */
                ks[d] = (copy_sink_t){dst[d][i], 0, len, 0};
                sinks[d] = (tc_tp_sink_t){copy_fn, &ks[d], 8};
                assert_int_equal(tc_tp_recv_sink(p.ep[1 - d], 7, &sinks[d], len, &r[d][i]), TC_OK);
            } else {
                assert_int_equal(tc_tp_recv(p.ep[1 - d], 7, dst[d][i], len, &r[d][i]), TC_OK);
            }
            assert_int_equal(tc_tp_send(p.ep[d], 7, src[d][i], len, &s[d][i]), TC_OK);
        }
    int fd = rail1_fd(&p, side);
    assert_true(fd >= 0);
    /* Only side 0 moves: its chunks fill the sockets of both rails, and no send can complete
     * (side 1 acknowledges nothing), so the loss of rail 1 always hits bytes in flight. */
    tc_tpt_spin(p.ctx, 1, 50);
    for (int d = 0; d < 2; d++)
        assert_int_equal(s[d][NMSG - 1].status, TC_INPROGRESS);
    capture_start();
    assert_int_equal(shutdown(fd, SHUT_RDWR), 0);
    tc_status_t st[2][NMSG][2];
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < NMSG; i++) {
            st[d][i][0] = tc_tpt_wait_req(p.ctx, 2, &r[d][i], TP_WAIT_MS);
            st[d][i][1] = tc_tpt_wait_req(p.ctx, 2, &s[d][i], TP_WAIT_MS);
        }
    const char *log = capture_stop();
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < NMSG; i++) {
            assert_int_equal(st[d][i][0], TC_OK);
            assert_int_equal(st[d][i][1], TC_OK);
            assert_int_equal(r[d][i].bytes, len);
            assert_int_equal(tc_tpt_check(dst[d][i], len, 100 + 10 * d + i), len);
            tc_tpt_guarded_check_free(dst[d][i], len);
            if (i == 1) {
                assert_int_equal(ks[d].bad, 0);
                assert_int_equal(ks[d].next, len);
            }
            free(src[d][i]);
        }
    assert_int_equal(p.ep[0]->failed, TC_OK);
    assert_int_equal(p.ep[1]->failed, TC_OK);
    char want[96];
    snprintf(want, sizeof(want), "tcp: peer %d (", 1 - side);
    const char *w = strstr(log, want);
    assert_non_null(w);
    /* the first rail-1 socket found: data socket 1 or (4 sockets) 3, the others left */
    snprintf(want, sizeof(want), "lost data socket 1 of %d on rail 1 (interface lo:r1)", nsocks);
    const char *lost = strstr(w, want);
    if (lost == NULL && nsocks == 4)
        lost = strstr(w, "lost data socket 3 of 4 on rail 1 (interface lo:r1)");
    assert_non_null(lost);
    snprintf(want, sizeof(want), "again on the %d socket%s left", nsocks - 1,
             nsocks - 1 == 1 ? "" : "s");
    assert_non_null(strstr(log, want));

    /* the pair goes on over the primary, both ways, striped or not */
    unsigned char *buf = malloc(len);
    assert_non_null(buf);
    tc_tpt_fill(buf, len, 77);
    tc_tpt_transfer(&p, 0, 3, buf, len, 77, 1);
    tc_tpt_transfer(&p, 1, 4, buf, 1000, 77, 0);
    tc_tpt_transfer(&p, 1, 5, buf, len, 77, 0);
    free(buf);
    assert_int_equal(p.ep[0]->failed, TC_OK);
    assert_int_equal(p.ep[1]->failed, TC_OK);
    tc_tpt_pair_close(&p);
}

static void test_failover_connecting_side(void **state)
{
    (void)state;
    if (!g_netns)
        skip();
    check_failover(0, BIG, 2);
    check_failover(0, BIG, 4); /* rail 1 keeps its other socket */
}

static void test_failover_accepting_side(void **state)
{
    (void)state;
    if (!g_netns)
        skip();
    check_failover(1, BIG, 2);
    check_failover(1, (3u << 20) + 7, 2); /* a few chunks, not on the grid's multiples */
    check_failover(1, BIG, 4);
    unsetenv("TC_SOCKET_IFNAME");
}

/* Every socket of the pair shut down: the peer fails, named, with its pending requests. */
static void test_all_rails_lost(void **state)
{
    (void)state;
    if (!g_netns)
        skip();
    tp_pair_t p;
    pair_open_rails(&p, "lo,lo:r1", NULL);
    unsigned char *buf = tc_tpt_guarded_alloc(BIG);
    unsigned char *src = malloc(BIG);
    assert_non_null(src);
    tc_tpt_fill(src, BIG, 5);
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(p.ep[1], 9, buf, BIG, &r), TC_OK);
    assert_int_equal(tc_tp_send(p.ep[0], 9, src, BIG, &s), TC_OK);
    tc_tpt_spin(p.ctx, 1, 20); /* side 1 does not read: nothing can complete */
    sock_info_t si[64];
    int n = list_sockets(si, 64);
    assert_int_equal(n, 4);
    for (int i = 0; i < n; i++)
        assert_int_equal(shutdown(si[i].fd, SHUT_RDWR), 0);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &r, TP_WAIT_MS), TC_ERR_PEER_FAILED);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &s, TP_WAIT_MS), TC_ERR_PEER_FAILED);
    assert_int_equal(tc_tpt_wait_failed(p.ctx, 2, p.ep[0], TP_WAIT_MS), TC_ERR_PEER_FAILED);
    assert_int_equal(tc_tpt_wait_failed(p.ctx, 2, p.ep[1], TP_WAIT_MS), TC_ERR_PEER_FAILED);
    assert_non_null(strstr(tc_tp_ep_error(p.ep[0]), "tcp: peer 1 ("));
    assert_non_null(strstr(tc_tp_ep_error(p.ep[1]), "tcp: peer 0 ("));
    tc_tpt_guarded_check_free(buf, BIG);
    free(src);
    tc_tpt_pair_close(&p);
    unsetenv("TC_SOCKET_IFNAME");
}

/* Peers with different rail counts use the smaller one (here one: no failover protocol). */
static void test_mixed_rail_counts(void **state)
{
    (void)state;
    if (!g_netns)
        skip();
    unsigned char addr[2][TP_ADDR_MAX];
    size_t len[2];
    tp_pair_t p;
    setenv("TC_SOCKET_IFNAME", "lo,lo:r1", 1);
    p.ctx[0] = tc_tcpt_ctx_new(0, NULL);
    setenv("TC_SOCKET_IFNAME", "lo", 1);
    p.ctx[1] = tc_tcpt_ctx_new(1, NULL);
    for (int i = 0; i < 2; i++)
        len[i] = tc_tpt_addr(p.ctx[i], addr[i]);
    assert_int_equal(len[0], 12);
    assert_int_equal(len[1], 8);
    tc_tpt_pair_connect(&p, addr, len);
    unsigned char *src = malloc(BIG);
    assert_non_null(src);
    tc_tpt_fill(src, BIG, 21);
    tc_tpt_transfer(&p, 0, 1, src, BIG, 21, 1);
    tc_tpt_transfer(&p, 1, 2, src, BIG, 21, 0);
    sock_info_t s[64];
    int n = list_sockets(s, 64);
    for (int i = 0; i < n; i++)
        assert_false(is_ip(&s[i].local, RAIL1_IP));
    free(src);
    tc_tpt_pair_close(&p);
    unsetenv("TC_SOCKET_IFNAME");
}

/* ---- hostile bytes on a pair with two rails (a raw socket as the connecting peer) ---- */

#define K_LMSG 0xB1
#define K_CHUNK 0xB2
#define K_LACK 0xB3
#define K_LDOWN 0xB4
#define RESENT 1

/* Context 1 over @p ifname, its endpoint to id 0 (from its own address: as many rails) and a
 * raw primary from id 0 with one socket. */
static tc_tp_ctx_t *raw_pair(const char *ifname, tc_tp_ep_t **ep_p, int *fd_p)
{
    setenv("TC_SOCKET_IFNAME", ifname, 1);
    tc_tp_ctx_t *ctx = tc_tcpt_ctx_new(1, NULL);
    *ep_p = tc_tcpt_loop_ep(ctx, 0);
    *fd_p = tc_tcpt_raw_hello(ctx, 0, 0, 1, 0, 0);
    return ctx;
}

/* @p hdr (32 bytes), then @p payload bytes of 0x5c. */
static void raw_send_chunk(int fd, const unsigned char *hdr, size_t payload)
{
    tc_tcpt_raw_send(fd, hdr, 32);
    unsigned char *p = malloc(payload);
    assert_non_null(p);
    memset(p, 0x5c, payload);
    tc_tcpt_raw_send(fd, p, payload);
    free(p);
}

static void expect_protocol(tc_tp_ctx_t *ctx, tc_tp_ep_t *ep, const char *what)
{
    assert_int_equal(tc_tpt_wait_failed(&ctx, 1, ep, TP_WAIT_MS), TC_ERR_PROTOCOL);
    if (strstr(tc_tp_ep_error(ep), "peer 0 (") == NULL || strstr(tc_tp_ep_error(ep), what) == NULL)
        fail_msg("error '%s' does not say '%s'", tc_tp_ep_error(ep), what);
}

/* A chunk off the grid, an ack of a message not sent, a lane down for a socket that is not
 * there: TC_ERR_PROTOCOL naming the peer and the numbers. */
static void test_hostile_two_rails(void **state)
{
    (void)state;
    if (!g_netns)
        skip();
    const size_t len = 300000; /* one socket: one chunk of 303104 bytes on the grid */
    unsigned char h[32];
    tc_tp_ep_t *ep;
    int fd;
    tc_tp_ctx_t *ctx = raw_pair("lo,lo:r1", &ep, &fd);
    tc_tcpt_make_hdr32(h, 4, K_LMSG, len, 1, 0);
    tc_tcpt_raw_send(fd, h, 32);
    tc_tcpt_make_hdr32(h, 1, K_CHUNK, 4096, 4096, 0);
    raw_send_chunk(fd, h, 4096);
    expect_protocol(ctx, ep, "at offset 4096 for striped message 1 of 300000 bytes, off its grid");
    close(fd);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);

    ctx = raw_pair("lo,lo:r1", &ep, &fd);
    tc_tcpt_make_hdr32(h, 77, K_LACK, 0, 0, 0);
    tc_tcpt_raw_send(fd, h, 32);
    expect_protocol(ctx, ep, "acknowledged striped message 77, which is not being sent");
    close(fd);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);

    ctx = raw_pair("lo,lo:r1", &ep, &fd);
    tc_tcpt_make_hdr32(h, 5, K_LDOWN, 0, 0, 0);
    tc_tcpt_raw_send(fd, h, 32);
    expect_protocol(ctx, ep, "lane down for data socket 5 of 1");
    close(fd);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);

    ctx = raw_pair("lo,lo:r1", &ep, &fd);
    tc_tcpt_make_hdr32(h, 1, K_LACK, 0, 9, 0);
    tc_tcpt_raw_send(fd, h, 32);
    expect_protocol(ctx, ep, "chunk ack (1, length 0) with non-zero fields");
    close(fd);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);

    /* one rail: neither acks nor re-sent chunks belong on the wire */
    ctx = raw_pair("lo", &ep, &fd);
    tc_tcpt_make_hdr32(h, 1, K_LACK, 0, 0, 0);
    tc_tcpt_raw_send(fd, h, 32);
    expect_protocol(ctx, ep, "chunk ack (1, length 0) to a pair with one rail");
    close(fd);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);

    ctx = raw_pair("lo", &ep, &fd);
    tc_tcpt_make_hdr32(h, 4, K_LMSG, len, 1, 0);
    tc_tcpt_raw_send(fd, h, 32);
    tc_tcpt_make_hdr32(h, 1, K_CHUNK, len, 0, RESENT);
    raw_send_chunk(fd, h, len);
    expect_protocol(ctx, ep, "flags 0x1");
    close(fd);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);
    unsetenv("TC_SOCKET_IFNAME");
}

/* A chunk sent again after its message completed is dropped; the same without the re-sent
 * flag is a protocol error. The receiver acknowledges the message once. */
static void test_resent_copy_dropped(void **state)
{
    (void)state;
    if (!g_netns)
        skip();
    const size_t len = 300000;
    unsigned char h[32];
    tc_tp_ep_t *ep;
    int fd;
    tc_tp_ctx_t *ctx = raw_pair("lo,lo:r1", &ep, &fd);
    unsigned char *dst = tc_tpt_guarded_alloc(len);
    tc_tp_req_t r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(ep, 4, dst, len, &r), TC_OK);
    tc_tcpt_make_hdr32(h, 4, K_LMSG, len, 1, 0);
    tc_tcpt_raw_send(fd, h, 32);
    tc_tcpt_make_hdr32(h, 1, K_CHUNK, len, 0, 0);
    raw_send_chunk(fd, h, len);
    assert_int_equal(tc_tpt_wait_req(&ctx, 1, &r, TP_WAIT_MS), TC_OK);
    assert_int_equal(r.bytes, len);
    for (size_t i = 0; i < len; i++)
        if (dst[i] != 0x5c)
            fail_msg("byte %zu is 0x%02x", i, dst[i]);
    tc_tpt_guarded_check_free(dst, len);
    unsigned char ack[32], want[32];
    assert_int_equal(tc_tcpt_raw_read(ctx, fd, ack, 32, NULL), 32);
    tc_tcpt_make_hdr32(want, 1, K_LACK, 0, 0, 0);
    assert_memory_equal(ack, want, 32);

    tc_tcpt_make_hdr32(h, 1, K_CHUNK, len, 0, RESENT); /* a copy: dropped */
    raw_send_chunk(fd, h, len);
    tc_tpt_spin(&ctx, 1, 50);
    assert_int_equal(ep->failed, TC_OK);
    unsigned char msg[16 + 3];
    tc_tcpt_le(msg, 6, 8);
    tc_tcpt_le(msg + 8, 3, 8);
    memcpy(msg + 16, "abc", 3);
    tc_tcpt_raw_send(fd, msg, sizeof(msg));
    unsigned char in[3];
    tc_tp_req_t rs = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(ep, 6, in, 3, &rs), TC_OK);
    assert_int_equal(tc_tpt_wait_req(&ctx, 1, &rs, TP_WAIT_MS), TC_OK);
    assert_memory_equal(in, "abc", 3);

    tc_tcpt_make_hdr32(h, 1, K_CHUNK, len, 0, 0); /* not a copy: hostile */
    raw_send_chunk(fd, h, len);
    expect_protocol(ctx, ep, "striped message 1, which is not being received");
    close(fd);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);
    unsetenv("TC_SOCKET_IFNAME");
}

int main(void)
{
    g_netns = rails_netns();
    if (!g_netns)
        fprintf(stderr, "tcp_rails_test: no private network namespace (unshare: %m); skipping\n");
    setenv("TC_SOCKET_RAIL_TIMEOUT_MS", "1000", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_bad),
        cmocka_unit_test(test_rail_timeout_bad),
        cmocka_unit_test(test_list_good),
        cmocka_unit_test(test_addr_bad),
        cmocka_unit_test(test_stripe_every_rail),
        cmocka_unit_test(test_failover_connecting_side),
        cmocka_unit_test(test_failover_accepting_side),
        cmocka_unit_test(test_all_rails_lost),
        cmocka_unit_test(test_mixed_rail_counts),
        cmocka_unit_test(test_hostile_two_rails),
        cmocka_unit_test(test_resent_copy_dropped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
