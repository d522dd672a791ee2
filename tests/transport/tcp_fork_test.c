/* TCP between fork()ed processes over loopback: echo of every size, and a peer killed. */
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

static const size_t sizes[] = {0, 1, 7, 4096, 1u << 20, 64u << 20};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* Child side: no cmocka in the child (a failed assert would run the rest of the suite
 * there); failures become the exit status. */
static tc_status_t child_wait(tc_tp_ctx_t *ctx, tc_tp_req_t *req)
{
    return tc_tpt_wait_bare(ctx, req, TP_WAIT_MS, 10);
}

/* Create a context, send its address on @p out, read the peer's from @p in, connect. */
static int exchange(uint64_t self, uint64_t peer, int in, int out, tc_tp_ctx_t **ctx_p,
                    tc_tp_ep_t **ep_p)
{
    return tc_tpt_exchange(&tc_tp_tcp_ops, self, peer, "fork-job", NULL, in, out, ctx_p, ep_p);
}

/* The child echoes each size back with another pattern after checking it. */
static int echo_child(void *arg, int in, int out)
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
        if (tc_tpt_check(buf, len, 10 + i) != len || buf[len] != 0x5A)
            return 30 + (int)i;
        tc_tpt_fill(buf, len, 100 + i);
        tc_tp_send(ep, 1000 + i, buf, len, &s);
        if (child_wait(ctx, &s) != TC_OK)
            return 40 + (int)i;
        free(buf);
    }
    /* wait until the parent says it has everything, then leave */
    char done;
    if (tc_tpt_read_all(in, &done, 1))
        return 50;
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);
    return 0;
}

static void test_fork_echo(void **state)
{
    (void)state;
    int in, out;
    pid_t pid = tc_tpt_fork(echo_child, NULL, &in, &out);
    tc_tp_ctx_t *ctx;
    tc_tp_ep_t *ep;
    assert_int_equal(exchange(1, 0, in, out, &ctx, &ep), 0);
    for (size_t i = 0; i < NSIZES; i++) {
        size_t len = sizes[i];
        unsigned char *src = malloc(len + 1), *dst = malloc(len + 1);
        tc_tpt_fill(src, len, 10 + i);
        dst[len] = 0xC3;
        tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
        /* the echo's receive is posted after our send: it may arrive as unexpected */
        assert_int_equal(tc_tp_send(ep, i, src, len, &s), TC_OK);
        assert_int_equal(tc_tpt_wait_req(&ctx, 1, &s, TP_WAIT_MS), TC_OK);
        assert_int_equal(tc_tp_recv(ep, 1000 + i, dst, len, &r), TC_OK);
        assert_int_equal(tc_tpt_wait_req(&ctx, 1, &r, TP_WAIT_MS), TC_OK);
        assert_int_equal(r.bytes, len);
        assert_int_equal(tc_tpt_check(dst, len, 100 + i), len);
        assert_int_equal(dst[len], 0xC3);
        free(src);
        free(dst);
    }
    assert_int_equal(write(out, "x", 1), 1);
    int st = tc_tpt_reap(pid, TP_WAIT_MS);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    close(in);
    close(out);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);
}

/* The child connects, says hello over the transport, then waits to be killed. */
static int sleeper_child(void *arg, int in, int out)
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
    pid_t pid = tc_tpt_fork(sleeper_child, NULL, &in, &out);
    tc_tp_ctx_t *ctx;
    tc_tp_ep_t *ep;
    assert_int_equal(exchange(0, 1, in, out, &ctx, &ep), 0);
    unsigned char ready[5], never[8];
    tc_tp_req_t r = TC_TP_REQ_INIT, pending = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(ep, 2, never, sizeof(never), &pending), TC_OK);
    assert_int_equal(tc_tp_recv(ep, 1, ready, sizeof(ready), &r), TC_OK);
    assert_int_equal(tc_tpt_wait_req(&ctx, 1, &r, TP_WAIT_MS), TC_OK);
    assert_memory_equal(ready, "ready", 5);

    uint64_t t0 = tc_time_ns();
    assert_int_equal(kill(pid, SIGKILL), 0);
    assert_int_equal(tc_tpt_wait_req(&ctx, 1, &pending, 5000), TC_ERR_PEER_FAILED);
    assert_true(tc_time_ns() - t0 < 5000000000ULL);
    assert_int_equal(ep->failed, TC_ERR_PEER_FAILED);
    const char *err = tc_tp_ep_error(ep);
    assert_non_null(strstr(err, "tcp: peer 1 (127.0.0.1:"));
    assert_non_null(strstr(err, "(0 sends, 1 receive pending)"));
    tc_tp_req_t late = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(ep, 3, "x", 1, &late), TC_ERR_PEER_FAILED);

    int st = tc_tpt_reap(pid, TP_WAIT_MS);
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
