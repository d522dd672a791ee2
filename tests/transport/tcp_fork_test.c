/* TCP between fork()ed processes over loopback: echo of every size, and a peer killed. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcomms/base/status.h"
#include "tcomms/base/time.h"
#include "tcomms/transport/tcp.h"
#include "tcomms/transport/transport.h"
#include "tp_util.h"

#define WAIT_MS 30000

static const size_t sizes[] = {0, 1, 7, 4096, 1u << 20, 64u << 20};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* Child side helpers: no cmocka in the child (a failed assert would run the rest of the
 * suite there); failures become the exit status. */
static tc_status_t child_wait(tc_tp_ctx_t *ctx, tc_tp_req_t *req)
{
    uint64_t deadline = tc_deadline_after_ms(WAIT_MS);
    while (req->status == TC_INPROGRESS && !tc_deadline_passed(deadline))
        if (tc_tp_progress(ctx) == 0)
            tc_tp_wait(ctx, 10);
    return req->status;
}

static int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Create a context, send its address on @p out, read the peer's from @p in, connect. */
static int exchange(uint64_t self, uint64_t peer, int in, int out, tc_tp_ctx_t **ctx_p,
                    tc_tp_ep_t **ep_p)
{
    tc_tp_ctx_params_t params = TC_TP_CTX_PARAMS_INIT;
    params.self_id = self;
    params.secret = "fork-job";
    params.secret_len = 8;
    unsigned char addr[64], peer_addr[64];
    size_t len = 0;
    uint64_t peer_len = 0;
    if (tc_tp_ctx_create(&tc_tp_tcp_ops, &params, ctx_p) != TC_OK)
        return -1;
    if (tc_tp_addr_pack(*ctx_p, addr, sizeof(addr), &len) != TC_OK)
        return -1;
    uint64_t len64 = len;
    if (write_all(out, &len64, 8) || write_all(out, addr, len))
        return -1;
    if (read_all(in, &peer_len, 8) || peer_len > sizeof(peer_addr) ||
        read_all(in, peer_addr, (size_t)peer_len))
        return -1;
    return tc_tp_ep_connect(*ctx_p, peer, peer_addr, (size_t)peer_len, ep_p) == TC_OK ? 0 : -1;
}

/* The child echoes each size back with another pattern after checking it. */
static int echo_child(int in, int out)
{
    tc_tp_ctx_t *ctx;
    tc_tp_ep_t *ep;
    if (exchange(0, 1, in, out, &ctx, &ep) != 0)
        return 10;
    for (size_t i = 0; i < NSIZES; i++) {
        size_t len = sizes[i];
        unsigned char *buf = malloc(len + 1);
        if (buf == NULL)
            return 11;
        buf[len] = 0x5A;
        tc_tp_req_t r = TC_TP_REQ_INIT, s = TC_TP_REQ_INIT;
        tc_tp_recv(ep, i, buf, len, &r);
        if (child_wait(ctx, &r) != TC_OK || r.bytes != len)
            return 20 + (int)i;
        if (tp_check(buf, len, 10 + i) != len || buf[len] != 0x5A)
            return 30 + (int)i;
        tp_fill(buf, len, 100 + i);
        tc_tp_send(ep, 1000 + i, buf, len, &s);
        if (child_wait(ctx, &s) != TC_OK)
            return 40 + (int)i;
        free(buf);
    }
    /* wait until the parent says it has everything, then leave */
    char done;
    if (read_all(in, &done, 1))
        return 50;
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);
    return 0;
}

static pid_t spawn(int (*body)(int, int), int *in_p, int *out_p)
{
    int to_child[2], from_child[2];
    assert_int_equal(pipe(to_child), 0);
    assert_int_equal(pipe(from_child), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(to_child[1]);
        close(from_child[0]);
        alarm(120); /* a stuck child never outlives the test */
        _exit(body(to_child[0], from_child[1]));
    }
    close(to_child[0]);
    close(from_child[1]);
    *in_p = from_child[0];
    *out_p = to_child[1];
    return pid;
}

static int wait_child(pid_t pid)
{
    uint64_t deadline = tc_deadline_after_ms(WAIT_MS);
    int st = 0;
    while (!tc_deadline_passed(deadline)) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return st;
        tc_sleep_ns(1000000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return -1;
}

static void test_fork_echo(void **state)
{
    (void)state;
    int in, out;
    pid_t pid = spawn(echo_child, &in, &out);
    tc_tp_ctx_t *ctx;
    tc_tp_ep_t *ep;
    assert_int_equal(exchange(1, 0, in, out, &ctx, &ep), 0);
    for (size_t i = 0; i < NSIZES; i++) {
        size_t len = sizes[i];
        unsigned char *src = malloc(len + 1), *dst = malloc(len + 1);
        tp_fill(src, len, 10 + i);
        dst[len] = 0xC3;
        tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
        /* the echo's receive is posted after our send: it may arrive as unexpected */
        assert_int_equal(tc_tp_send(ep, i, src, len, &s), TC_OK);
        assert_int_equal(tp_wait_req(&ctx, 1, &s, WAIT_MS), TC_OK);
        assert_int_equal(tc_tp_recv(ep, 1000 + i, dst, len, &r), TC_OK);
        assert_int_equal(tp_wait_req(&ctx, 1, &r, WAIT_MS), TC_OK);
        assert_int_equal(r.bytes, len);
        assert_int_equal(tp_check(dst, len, 100 + i), len);
        assert_int_equal(dst[len], 0xC3);
        free(src);
        free(dst);
    }
    assert_int_equal(write(out, "x", 1), 1);
    int st = wait_child(pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    close(in);
    close(out);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);
}

/* The child connects, says hello over the transport, then waits to be killed. */
static int sleeper_child(int in, int out)
{
    tc_tp_ctx_t *ctx;
    tc_tp_ep_t *ep;
    if (exchange(1, 0, in, out, &ctx, &ep) != 0)
        return 10;
    tc_tp_req_t s = TC_TP_REQ_INIT;
    tc_tp_send(ep, 1, "ready", 5, &s);
    if (child_wait(ctx, &s) != TC_OK)
        return 11;
    uint64_t deadline = tc_deadline_after_ms(60000);
    while (!tc_deadline_passed(deadline)) { /* keep progressing: the socket stays healthy */
        tc_tp_progress(ctx);
        tc_tp_wait(ctx, 50);
    }
    return 12;
}

static void test_fork_peer_killed(void **state)
{
    (void)state;
    int in, out;
    pid_t pid = spawn(sleeper_child, &in, &out);
    tc_tp_ctx_t *ctx;
    tc_tp_ep_t *ep;
    assert_int_equal(exchange(0, 1, in, out, &ctx, &ep), 0);
    unsigned char ready[5], never[8];
    tc_tp_req_t r = TC_TP_REQ_INIT, pending = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(ep, 2, never, sizeof(never), &pending), TC_OK);
    assert_int_equal(tc_tp_recv(ep, 1, ready, sizeof(ready), &r), TC_OK);
    assert_int_equal(tp_wait_req(&ctx, 1, &r, WAIT_MS), TC_OK);
    assert_memory_equal(ready, "ready", 5);

    uint64_t t0 = tc_time_ns();
    assert_int_equal(kill(pid, SIGKILL), 0);
    assert_int_equal(tp_wait_req(&ctx, 1, &pending, 5000), TC_ERR_PEER_FAILED);
    assert_true(tc_time_ns() - t0 < 5000000000ULL);
    assert_int_equal(ep->failed, TC_ERR_PEER_FAILED);
    const char *err = tc_tp_ep_error(ep);
    assert_non_null(strstr(err, "tcp: peer 1 (127.0.0.1:"));
    assert_non_null(strstr(err, "(0 sends, 1 receive pending)"));
    tc_tp_req_t late = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(ep, 3, "x", 1, &late), TC_ERR_PEER_FAILED);

    int st = wait_child(pid);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGKILL);
    close(in);
    close(out);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);
}

int main(void)
{
    setenv("TC_SOCKET_IFNAME", "lo", 1);
    signal(SIGPIPE, SIG_IGN); /* the pipes to a killed child */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fork_echo),
        cmocka_unit_test(test_fork_peer_killed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
