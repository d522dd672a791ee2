/* Manual (tag "manual"): fork ping-pong latency at 8 B, streaming bandwidth at 4 MiB, 64 MiB and
 * one 1 GiB message, next to single-core memcpy. Prints numbers; asserts only correctness. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "shm_util.h"
#include "tcomms/base/time.h"
#include "tcomms/transport/shm.h"
#include "tcomms/transport/transport.h"

static void run(tc_tp_ctx_t *ctx, tc_tp_req_t *req)
{
    uint64_t deadline = tc_deadline_after_ms(60000);
    while (req->status == TC_INPROGRESS && !tc_deadline_passed(deadline))
        tc_tp_progress(ctx);
}

/* role 0 sends/pings, role 1 echoes / receives */
static void body(int role, tc_tp_ctx_t *ctx, tc_tp_ep_t *ep, unsigned char *buf)
{
    const int iters = 20000;
    char b8[8] = {0};
    double t0 = tc_time_s();
    for (int i = 0; i < iters; i++) {
        tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
        if (role == 0) {
            tc_tp_send(ep, 1, b8, 8, &s);
            tc_tp_recv(ep, 1, b8, 8, &r);
        } else {
            tc_tp_recv(ep, 1, b8, 8, &r);
            run(ctx, &r);
            tc_tp_send(ep, 1, b8, 8, &s);
        }
        run(ctx, &r);
        run(ctx, &s);
    }
    if (role == 0)
        printf("shm 8 B ping-pong: %.2f us one way\n", (tc_time_s() - t0) / iters / 2 * 1e6);
    size_t sizes[] = {4u << 20, 64u << 20, 1u << 30};
    int reps[] = {50, 10, 1};
    for (int k = 0; k < 3; k++) {
        t0 = tc_time_s();
        for (int i = 0; i < reps[k]; i++) {
            tc_tp_req_t q = TC_TP_REQ_INIT;
            if (role == 0)
                tc_tp_send(ep, 2, buf, sizes[k], &q);
            else
                tc_tp_recv(ep, 2, buf, sizes[k], &q);
            run(ctx, &q);
            assert_int_equal(q.status, TC_OK);
        }
        tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT; /* ack */
        if (role == 1) {
            tc_tp_send(ep, 3, NULL, 0, &s);
            run(ctx, &s);
        } else {
            tc_tp_recv(ep, 3, NULL, 0, &r);
            run(ctx, &r);
            double dt = tc_time_s() - t0;
            printf("shm %zu MiB: %.2f GB/s (%d x in %.3f s)\n", sizes[k] >> 20,
                   (double)sizes[k] * reps[k] / dt / 1e9, reps[k], dt);
        }
    }
}

static void bench(void **state)
{
    const char *hints = *state;
    unsigned char *buf = malloc(1u << 30);
    memset(buf, 1, 1u << 30);
    if (hints[0] == '\0') {
        unsigned char *b2 = malloc(64u << 20);
        memset(b2, 0, 64u << 20);
        double t0 = tc_time_s();
        for (int i = 0; i < 10; i++)
            memcpy(b2, buf + (i % 2) * 4096, 64u << 20);
        printf("memcpy 64 MiB single core: %.2f GB/s\n",
               10.0 * (64u << 20) / (tc_time_s() - t0) / 1e9);
        free(b2);
    }
    printf("-- mode '%s'\n", hints);
    int p2c[2], c2p[2];
    assert_int_equal(pipe(p2c), 0);
    assert_int_equal(pipe(c2p), 0);
    pid_t pid = fork();
    int role = pid == 0;
    tc_tp_ctx_t *ctx = tc_shmt_ctx_new((uint64_t)role, "k", hints);
    unsigned char mine[TC_TP_SHM_ADDR_LEN], theirs[TC_TP_SHM_ADDR_LEN];
    tc_shmt_addr(ctx, mine);
    assert_int_equal(write(role ? c2p[1] : p2c[1], mine, sizeof(mine)), (ssize_t)sizeof(mine));
    assert_int_equal(read(role ? p2c[0] : c2p[0], theirs, sizeof(theirs)), (ssize_t)sizeof(theirs));
    tc_tp_ep_t *ep;
    assert_int_equal(tc_tp_ep_connect(ctx, (uint64_t)(1 - role), theirs, sizeof(theirs), &ep),
                     TC_OK);
    body(role, ctx, ep, buf);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);
    free(buf);
    if (role)
        _exit(0);
    int st;
    waitpid(pid, &st, 0);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(bench, ""),
        cmocka_unit_test_prestate(bench, "shm_cma=0"),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
