/* shm between fork()ed processes: echo of every size (single copy and pipelined), one-sided
 * put + signal, and a peer killed with SIGKILL in the middle of a transfer. */
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
#include "tests/transport/tp_util.h"

static const size_t sizes[] = {0, 1, 8191, 8192, 8193, 100000, 1u << 20, 64u << 20};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define MAXSZ (64u << 20)

/* Child side: no cmocka (a failed assert would run the rest of the suite there). */
static tc_status_t child_wait(tc_tp_ctx_t *ctx, tc_tp_req_t *req)
{
    return tc_tpt_wait_bare(ctx, req, SU_WAIT_MS, 10);
}

typedef struct peer {
    pid_t pid;
    int to_child, from_child;
} peer_t;

typedef struct child_arg {
    const char *hints;
    int (*body)(tc_tp_ctx_t *, tc_tp_ep_t *, int, int);
} child_arg_t;

/* The child: id 1, connected to the parent (id 0), runs the body. */
static int child_main(void *argp, int in, int out)
{
    const child_arg_t *a = argp;
    tc_tp_ctx_t *ctx;
    tc_tp_ep_t *ep;
    if (tc_tpt_exchange(&tc_tp_shm_ops, 1, 0, "s3cret", a->hints, in, out, &ctx, &ep) != 0)
        return 10;
    int rc = a->body(ctx, ep, in, out);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);
    return rc;
}

/* Fork a child running @p body(ctx, ep, in, out) with id 1; the parent gets id 0 and the ep. */
static void fork_pair(peer_t *pc, const char *hints,
                      int (*body)(tc_tp_ctx_t *, tc_tp_ep_t *, int, int), tc_tp_ctx_t **ctx_p,
                      tc_tp_ep_t **ep_p)
{
    child_arg_t arg = {hints, body};
    pc->pid = tc_tpt_fork(child_main, &arg, &pc->from_child, &pc->to_child);
    *ctx_p = tc_shmt_ctx_new(0, "s3cret", hints);
    unsigned char mine[TC_TP_SHM_ADDR_LEN], theirs[TP_ADDR_MAX];
    size_t len;
    tc_shmt_addr(*ctx_p, mine);
    assert_int_equal(
        tc_tpt_swap_addr(pc->from_child, pc->to_child, mine, sizeof(mine), theirs, &len), 0);
    assert_int_equal(tc_tp_ep_connect(*ctx_p, 1, theirs, len, ep_p), TC_OK);
}

static int reap(peer_t *pc, int timeout_ms)
{
    int st = tc_tpt_reap(pc->pid, timeout_ms);
    close(pc->to_child);
    close(pc->from_child);
    if (st == -1)
        return -1;
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
        tc_tp_rkey_pack(mem, key, sizeof(key), &klen) != TC_OK ||
        tc_tpt_write_all(out, key, klen) != 0)
        return 60;
    uint64_t deadline = tc_deadline_after_ms(SU_WAIT_MS);
    while (tc_tp_signal_read(mem, 0) != 1 && !tc_deadline_passed(deadline))
        if (tc_tp_progress(ctx) == 0)
            tc_tp_wait(ctx, 1);
    if (tc_tp_signal_read(mem, 0) != 1)
        return 61;
    if (tc_tpt_check(buf + 64, (1u << 20) - 64, 9) != (1u << 20) - 64)
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
        tc_tpt_fill(src, sizes[i], i);
        memset(dst, 0xA5, sizes[i] + 64);
        assert_int_equal(tc_tp_recv(ep, i + 100, dst, sizes[i] + 64, &r), TC_OK);
        assert_int_equal(tc_tp_send(ep, i, src, sizes[i], &s), TC_OK);
        assert_int_equal(tc_tpt_wait_req(c, 1, &s, SU_WAIT_MS), TC_OK);
        assert_int_equal(tc_tpt_wait_req(c, 1, &r, SU_WAIT_MS), TC_OK);
        assert_int_equal(r.bytes, sizes[i]);
        assert_int_equal(tc_tpt_check(dst, sizes[i], i), sizes[i]);
        for (size_t g = 0; g < 64; g++)
            assert_int_equal(dst[sizes[i] + g], 0xA5);
    }
    assert_int_equal(tc_tp_shm_ep_single_copy(ep), strstr(hints, "shm_cma=0") == NULL);
    /* one-sided into the child: put, then signal without waiting */
    unsigned char key[TC_TP_SHM_RKEY_LEN];
    assert_int_equal(tc_tpt_read_all(pc.from_child, key, sizeof(key)), 0);
    tc_tp_rkey_t *rk;
    assert_int_equal(tc_tp_rkey_unpack(ep, key, sizeof(key), &rk), TC_OK);
    tc_tpt_fill(src, (1u << 20) - 64, 9);
    tc_tp_req_t put = TC_TP_REQ_INIT, sig = TC_TP_REQ_INIT, ok = TC_TP_REQ_INIT,
                get = TC_TP_REQ_INIT, done = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_put(ep, src, (1u << 20) - 64, rk, 64, &put), TC_OK);
    assert_int_equal(tc_tp_signal(ep, rk, 0, TC_TP_SIGNAL_ADD, 1, &sig), TC_OK);
    assert_int_equal(tc_tp_recv(ep, 555, NULL, 0, &ok), TC_OK);
    assert_int_equal(tc_tpt_wait_req(c, 1, &ok, SU_WAIT_MS), TC_OK); /* the child checked */
    assert_int_equal(tc_tpt_wait_req(c, 1, &put, SU_WAIT_MS), TC_OK);
    assert_int_equal(tc_tpt_wait_req(c, 1, &sig, SU_WAIT_MS), TC_OK);
    memset(dst, 0, 4096);
    assert_int_equal(tc_tp_get(ep, dst, 4096, rk, 64, &get), TC_OK);
    assert_int_equal(tc_tpt_wait_req(c, 1, &get, SU_WAIT_MS), TC_OK);
    assert_int_equal(tc_tpt_check(dst, 4096, 9), 4096);
    assert_int_equal(tc_tp_send(ep, 556, NULL, 0, &done), TC_OK);
    assert_int_equal(tc_tpt_wait_req(c, 1, &done, SU_WAIT_MS), TC_OK);
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
    tc_tpt_fill(buf, 1 << 16, 1);
    tc_tp_req_t s = TC_TP_REQ_INIT;
    if (tc_tp_send(ep, 1, buf, MAXSZ, &s) != TC_OK)
        return 12;
    uint64_t deadline = tc_deadline_after_ms(50);
    while (!tc_deadline_passed(deadline))
        tc_tp_progress(ctx);
    char go = 'g';
    if (tc_tpt_write_all(out, &go, 1) != 0)
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
    if (tc_tpt_write_all(out, &go, 1) != 0)
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
        tc_tpt_spin(c, 1, 5); /* attach */
        char go;
        assert_int_equal(tc_tpt_read_all(pc.from_child, &go, 1), 0);
        assert_int_equal(tc_tp_recv(ep, 1, buf, MAXSZ, &req), TC_OK);
        tc_tpt_spin(c, 1, 5); /* some cells arrive */
    } else {
        /* our 64 MiB single-copy send waits for the child, which never reads it */
        char go;
        assert_int_equal(tc_tpt_read_all(pc.from_child, &go, 1), 0);
        assert_int_equal(tc_tp_send(ep, 1, buf, MAXSZ, &req), TC_OK);
        tc_tpt_spin(c, 1, 5);
    }
    assert_int_equal(req.status, TC_INPROGRESS);
    assert_int_equal(kill(pc.pid, SIGKILL), 0);
    uint64_t t0 = tc_time_ns();
    assert_int_equal(tc_tpt_wait_req(c, 1, &req, 5000), TC_ERR_PEER_FAILED);
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
