/* shm between fork()ed processes: echo of every size (single copy and pipelined), one-sided
 * put + signal, and a peer killed with SIGKILL in the middle of a transfer. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "shm_util.h"
#include "tcomms/base/status.h"
#include "tcomms/base/time.h"
#include "tcomms/transport/shm.h"
#include "tcomms/transport/transport.h"

static const size_t sizes[] = {0, 1, 8191, 8192, 8193, 100000, 1u << 20, 64u << 20};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define MAXSZ (64u << 20)

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

/* Child side: no cmocka (a failed assert would run the rest of the suite there). */
static tc_status_t child_wait(tc_tp_ctx_t *ctx, tc_tp_req_t *req)
{
    uint64_t deadline = tc_deadline_after_ms(SU_WAIT_MS);
    while (req->status == TC_INPROGRESS && !tc_deadline_passed(deadline))
        if (tc_tp_progress(ctx) == 0)
            tc_tp_wait(ctx, 10);
    return req->status;
}

typedef struct peer {
    pid_t pid;
    int to_child, from_child;
} peer_t;

/* Fork a child running @p body(ctx, ep, in, out) with id 1; the parent gets id 0 and the ep. */
static void fork_pair(peer_t *pc, const char *hints,
                      int (*body)(tc_tp_ctx_t *, tc_tp_ep_t *, int, int), tc_tp_ctx_t **ctx_p,
                      tc_tp_ep_t **ep_p)
{
    int down[2], up[2];
    assert_int_equal(pipe(down), 0);
    assert_int_equal(pipe(up), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(down[1]);
        close(up[0]);
        tc_tp_ctx_t *ctx = NULL;
        tc_tp_ep_t *ep = NULL;
        unsigned char mine[TC_TP_SHM_ADDR_LEN], theirs[TC_TP_SHM_ADDR_LEN];
        size_t len;
        int rc = 10;
        if (su_ctx_try(1, "s3cret", hints, &ctx) == TC_OK &&
            tc_tp_addr_pack(ctx, mine, sizeof(mine), &len) == TC_OK &&
            write_all(up[1], mine, sizeof(mine)) == 0 &&
            read_all(down[0], theirs, sizeof(theirs)) == 0 &&
            tc_tp_ep_connect(ctx, 0, theirs, sizeof(theirs), &ep) == TC_OK)
            rc = body(ctx, ep, down[0], up[1]);
        if (ep != NULL)
            tc_tp_ep_close(ep);
        tc_tp_ctx_destroy(ctx);
        _exit(rc);
    }
    close(down[0]);
    close(up[1]);
    pc->pid = pid;
    pc->to_child = down[1];
    pc->from_child = up[0];
    *ctx_p = su_ctx_new(0, "s3cret", hints);
    unsigned char mine[TC_TP_SHM_ADDR_LEN], theirs[TC_TP_SHM_ADDR_LEN];
    su_addr(*ctx_p, mine);
    assert_int_equal(write_all(pc->to_child, mine, sizeof(mine)), 0);
    assert_int_equal(read_all(pc->from_child, theirs, sizeof(theirs)), 0);
    assert_int_equal(tc_tp_ep_connect(*ctx_p, 1, theirs, sizeof(theirs), ep_p), TC_OK);
}

static int reap(peer_t *pc, int timeout_ms)
{
    uint64_t deadline = tc_deadline_after_ms((uint64_t)timeout_ms);
    int st = 0;
    pid_t r;
    while ((r = waitpid(pc->pid, &st, WNOHANG)) == 0 && !tc_deadline_passed(deadline))
        tc_sleep_ns(1000000);
    if (r == 0) {
        kill(pc->pid, SIGKILL);
        waitpid(pc->pid, &st, 0);
        close(pc->to_child);
        close(pc->from_child);
        return -1;
    }
    close(pc->to_child);
    close(pc->from_child);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

/* Child: receive each size and send it back. */
static int echo_body(tc_tp_ctx_t *ctx, tc_tp_ep_t *ep, int in, int out)
{
    unsigned char *buf = malloc(MAXSZ);
    if (buf == NULL)
        return 11;
    for (size_t i = 0; i < NSIZES; i++) {
        tc_tp_req_t r = TC_TP_REQ_INIT, s = TC_TP_REQ_INIT;
        if (tc_tp_recv(ep, i, buf, MAXSZ, &r) != TC_OK || child_wait(ctx, &r) != TC_OK ||
            r.bytes != sizes[i])
            return 20 + (int)i;
        if (tc_tp_send(ep, i + 100, buf, r.bytes, &s) != TC_OK || child_wait(ctx, &s) != TC_OK)
            return 40 + (int)i;
    }
    /* one-sided: the parent puts into our buffer and signals; we check and answer */
    memset(buf, 0, 1u << 20);
    tc_tp_mem_t *mem;
    unsigned char key[TC_TP_SHM_RKEY_LEN];
    size_t klen;
    if (tc_tp_mem_reg(ctx, buf, 1u << 20, &mem) != TC_OK ||
        tc_tp_rkey_pack(mem, key, sizeof(key), &klen) != TC_OK || write_all(out, key, klen) != 0)
        return 60;
    uint64_t deadline = tc_deadline_after_ms(SU_WAIT_MS);
    while (tc_tp_signal_read(mem, 0) != 1 && !tc_deadline_passed(deadline))
        if (tc_tp_progress(ctx) == 0)
            tc_tp_wait(ctx, 1);
    if (tc_tp_signal_read(mem, 0) != 1)
        return 61;
    if (su_check(buf + 64, (1u << 20) - 64, 9) != (1u << 20) - 64)
        return 62;
    tc_tp_req_t s = TC_TP_REQ_INIT;
    if (tc_tp_send(ep, 555, NULL, 0, &s) != TC_OK || child_wait(ctx, &s) != TC_OK)
        return 63;
    /* wait for the parent to be done with our memory */
    tc_tp_req_t r = TC_TP_REQ_INIT;
    if (tc_tp_recv(ep, 556, NULL, 0, &r) != TC_OK || child_wait(ctx, &r) != TC_OK)
        return 64;
    tc_tp_mem_dereg(mem);
    free(buf);
    (void)in;
    return 0;
}

static void test_echo(void **state)
{
    const char *hints = *state;
    peer_t pc;
    tc_tp_ctx_t *ctx;
    tc_tp_ep_t *ep;
    fork_pair(&pc, hints, echo_body, &ctx, &ep);
    tc_tp_ctx_t *c[] = {ctx};
    unsigned char *src = malloc(MAXSZ), *dst = malloc(MAXSZ + 64);
    for (size_t i = 0; i < NSIZES; i++) {
        tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
        su_fill(src, sizes[i], i);
        memset(dst, 0xA5, sizes[i] + 64);
        assert_int_equal(tc_tp_recv(ep, i + 100, dst, sizes[i] + 64, &r), TC_OK);
        assert_int_equal(tc_tp_send(ep, i, src, sizes[i], &s), TC_OK);
        assert_int_equal(su_wait_req(c, 1, &s, SU_WAIT_MS), TC_OK);
        assert_int_equal(su_wait_req(c, 1, &r, SU_WAIT_MS), TC_OK);
        assert_int_equal(r.bytes, sizes[i]);
        assert_int_equal(su_check(dst, sizes[i], i), sizes[i]);
        for (size_t g = 0; g < 64; g++)
            assert_int_equal(dst[sizes[i] + g], 0xA5);
    }
    assert_int_equal(tc_tp_shm_ep_single_copy(ep), strstr(hints, "shm_cma=0") == NULL);
    /* one-sided into the child: put, then signal without waiting */
    unsigned char key[TC_TP_SHM_RKEY_LEN];
    assert_int_equal(read_all(pc.from_child, key, sizeof(key)), 0);
    tc_tp_rkey_t *rk;
    assert_int_equal(tc_tp_rkey_unpack(ep, key, sizeof(key), &rk), TC_OK);
    su_fill(src, (1u << 20) - 64, 9);
    tc_tp_req_t put = TC_TP_REQ_INIT, sig = TC_TP_REQ_INIT, ok = TC_TP_REQ_INIT,
                get = TC_TP_REQ_INIT, done = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_put(ep, src, (1u << 20) - 64, rk, 64, &put), TC_OK);
    assert_int_equal(tc_tp_signal(ep, rk, 0, TC_TP_SIGNAL_ADD, 1, &sig), TC_OK);
    assert_int_equal(tc_tp_recv(ep, 555, NULL, 0, &ok), TC_OK);
    assert_int_equal(su_wait_req(c, 1, &ok, SU_WAIT_MS), TC_OK); /* the child checked */
    assert_int_equal(su_wait_req(c, 1, &put, SU_WAIT_MS), TC_OK);
    assert_int_equal(su_wait_req(c, 1, &sig, SU_WAIT_MS), TC_OK);
    memset(dst, 0, 4096);
    assert_int_equal(tc_tp_get(ep, dst, 4096, rk, 64, &get), TC_OK);
    assert_int_equal(su_wait_req(c, 1, &get, SU_WAIT_MS), TC_OK);
    assert_int_equal(su_check(dst, 4096, 9), 4096);
    assert_int_equal(tc_tp_send(ep, 556, NULL, 0, &done), TC_OK);
    assert_int_equal(su_wait_req(c, 1, &done, SU_WAIT_MS), TC_OK);
    tc_tp_rkey_release(rk);
    /* the child closes after the last message: we see it as a closed endpoint */
    assert_int_equal(reap(&pc, SU_WAIT_MS), 0);
    free(src);
    free(dst);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);
}

/* Child: start sending 64 MiB, tell the parent, then keep pushing until killed. */
static int sender_body(tc_tp_ctx_t *ctx, tc_tp_ep_t *ep, int in, int out)
{
    unsigned char *buf = malloc(MAXSZ);
    if (buf == NULL)
        return 11;
    su_fill(buf, 1 << 16, 1);
    tc_tp_req_t s = TC_TP_REQ_INIT;
    if (tc_tp_send(ep, 1, buf, MAXSZ, &s) != TC_OK)
        return 12;
    uint64_t deadline = tc_deadline_after_ms(50);
    while (!tc_deadline_passed(deadline))
        tc_tp_progress(ctx);
    char go = 'g';
    if (write_all(out, &go, 1) != 0)
        return 13;
    child_wait(ctx, &s);
    return 14; /* should have been killed */
}

/* Child: connect, then wait to be killed without receiving. */
static int idle_body(tc_tp_ctx_t *ctx, tc_tp_ep_t *ep, int in, int out)
{
    char go = 'g';
    tc_tp_req_t r = TC_TP_REQ_INIT;
    tc_tp_recv(ep, 12345, NULL, 0, &r);
    uint64_t deadline = tc_deadline_after_ms(100);
    while (!tc_deadline_passed(deadline))
        tc_tp_progress(ctx);
    if (write_all(out, &go, 1) != 0)
        return 13;
    child_wait(ctx, &r);
    return 14;
}

/* A peer killed mid-transfer: the parent's pending request fails within a bound, naming the pid. */
static void test_killed(void **state)
{
    const char *hints = *state;
    int pipelined = strstr(hints, "shm_cma=0") != NULL;
    peer_t pc;
    tc_tp_ctx_t *ctx;
    tc_tp_ep_t *ep;
    fork_pair(&pc, hints, pipelined ? sender_body : idle_body, &ctx, &ep);
    tc_tp_ctx_t *c[] = {ctx};
    unsigned char *buf = malloc(MAXSZ);
    tc_tp_req_t req = TC_TP_REQ_INIT;
    if (pipelined) {
        /* the child fills the ring with the first cells of 64 MiB while we do not read */
        su_spin(c, 1, 5); /* attach */
        char go;
        assert_int_equal(read_all(pc.from_child, &go, 1), 0);
        assert_int_equal(tc_tp_recv(ep, 1, buf, MAXSZ, &req), TC_OK);
        su_spin(c, 1, 5); /* some cells arrive */
    } else {
        /* our 64 MiB single-copy send waits for the child, which never reads it */
        char go;
        assert_int_equal(read_all(pc.from_child, &go, 1), 0);
        assert_int_equal(tc_tp_send(ep, 1, buf, MAXSZ, &req), TC_OK);
        su_spin(c, 1, 5);
    }
    assert_int_equal(req.status, TC_INPROGRESS);
    assert_int_equal(kill(pc.pid, SIGKILL), 0);
    uint64_t t0 = tc_time_ns();
    assert_int_equal(su_wait_req(c, 1, &req, 5000), TC_ERR_PEER_FAILED);
    double ms = (double)(tc_time_ns() - t0) / 1e6;
    assert_true(ms < 2000);
    char want[64];
    snprintf(want, sizeof(want), "shm: peer 1 (pid %d) exited", (int)pc.pid);
    if (strstr(tc_tp_ep_error(ep), want) == NULL)
        fail_msg("error '%s' does not say '%s'", tc_tp_ep_error(ep), want);
    assert_int_equal(ep->failed, TC_ERR_PEER_FAILED);
    assert_int_equal(reap(&pc, 5000), 100 + SIGKILL);
    free(buf);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(test_echo, ""),
        cmocka_unit_test_prestate(test_echo, "shm_cma=0"),
        cmocka_unit_test_prestate(test_killed, ""),
        cmocka_unit_test_prestate(test_killed, "shm_cma=0"),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
