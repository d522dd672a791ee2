/* The executor's order within a pass (runtime/src/executor.c, tc_rt_exec_pass): every message
 * that is ready is posted before the ready local steps (copies, reductions) run, and what those
 * steps enable is posted in the same pass. A transport of this test records, at each post, whether
 * the copy has already run (the copy's destination still holds its marks or not), so a pass that
 * ran the copy first (scanning steps in their order) fails here. Also: the second send to a peer
 * waits for the first (the matching rule), and the work ends once the receive completes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/src/comms.h"
#include "runtime/src/plan.h"
#include "runtime/src/work.h"
#include "runtime/src/world.h"
#include "tcomms/algo/schedule.h"
#include "tcomms/base/status.h"

#define N 4 /* elements per block */
#define MARK (-7)

typedef struct {
    int send;      /* 1: a send, 0: a receive */
    int copied;    /* the copy's destination held the input when it was posted */
    int32_t first; /* the first element posted (a send's) */
} post_t;

static post_t posts[8];
static int nposts;
static int32_t recvbuf[2 * N];
static tc_tp_req_t *pending_recv;

static tc_status_t rec_send(tc_tp_ep_t *ep, uint64_t tag, const void *buf, size_t len,
                            tc_tp_req_t *req)
{
    (void)ep, (void)tag;
    assert_true(nposts < 8);
    posts[nposts++] = (post_t){1, recvbuf[0] != MARK, *(const int32_t *)buf};
    req->status = TC_OK; /* sent at once, as an eager send may be */
    req->bytes = len;
    return TC_OK;
}

static tc_status_t rec_recv(tc_tp_ep_t *ep, uint64_t tag, void *buf, size_t cap, tc_tp_req_t *req)
{
    (void)ep, (void)tag, (void)buf, (void)cap;
    assert_true(nposts < 8);
    posts[nposts++] = (post_t){0, recvbuf[0] != MARK, 0};
    pending_recv = req;
    return TC_INPROGRESS;
}

static tc_status_t rec_cancel(tc_tp_ep_t *ep, tc_tp_req_t *req)
{
    (void)ep;
    req->status = TC_ERR_ABORTED;
    return TC_OK;
}

static const tc_tp_ops_t rec_ops = {
    .name = "recorder", .send = rec_send, .recv = rec_recv, .cancel = rec_cancel};

static tc_step_t step(uint8_t kind, uint8_t buf, uint8_t dst_buf, int32_t peer, uint64_t off,
                      uint64_t dst_off, uint32_t dep)
{
    return (tc_step_t){.kind = kind,
                       .buf = buf,
                       .dst_buf = dst_buf,
                       .peer = peer,
                       .off = off,
                       .dst_off = dst_off,
                       .count = N,
                       .dep = {dep, TC_STEP_NO_DEP}};
}

static void test_messages_before_local_steps(void **state)
{
    (void)state;
    tc_tp_ep_t ep = {.ops = &rec_ops};
    tc_tp_ep_t *eps[2] = {NULL, &ep};
    tc_rt_world_t world;
    tc_rt_comm_t comm;
    tc_rt_work_t w;
    memset(&world, 0, sizeof(world));
    memset(&comm, 0, sizeof(comm));
    memset(&w, 0, sizeof(w));
    world.eps = eps;
    comm.world = &world;
    comm.rank = 0;
    comm.size = 2;
    snprintf(comm.name, sizeof(comm.name), "%s", "order-test");
    w.comm = &comm;
    w.failed_peer = -1;
    w.call.coll = TC_COLL_ALL_GATHER;
    w.call.dtype = TC_INT32;

    /* rank 0 of an all-gather of N elements, out of place: the copy of its own block is step 0,
     * the sends and the receive do not wait for it but the last send does */
    tc_algo_args_t args = {
        .coll = TC_COLL_ALL_GATHER, .nranks = 2, .rank = 0, .root = -1, .count = N};
    tc_sched_t sched;
    tc_sched_init(&sched, &args, "order");
    sched.buf_count[TC_BUF_SEND] = N;
    sched.buf_count[TC_BUF_RECV] = 2 * N;
    const tc_step_t steps[] = {
        step(TC_STEP_COPY, TC_BUF_SEND, TC_BUF_RECV, -1, 0, 0, TC_STEP_NO_DEP),
        step(TC_STEP_SEND, TC_BUF_SEND, TC_BUF_SEND, 1, 0, 0, TC_STEP_NO_DEP),
        step(TC_STEP_RECV, TC_BUF_RECV, TC_BUF_RECV, 1, 0, N, TC_STEP_NO_DEP),
        step(TC_STEP_SEND, TC_BUF_RECV, TC_BUF_RECV, 1, 0, 0, 0),
    };
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
        assert_int_equal(tc_sched_add(&sched, &steps[i], NULL), TC_OK);
    w.sched = &sched;

    int32_t sendbuf[N];
    for (int i = 0; i < N; i++)
        sendbuf[i] = 100 + i;
    for (int i = 0; i < 2 * N; i++)
        recvbuf[i] = MARK;
    nposts = 0;
    pending_recv = NULL;
    tc_status_t st = tc_rt_exec_begin_raw(&w, sendbuf, recvbuf, sizeof(int32_t));
    if (st != TC_OK)
        fail_msg("begin: %s", tc_last_error());

    /* one pass: both messages that wait for nothing go out before the copy runs, then the copy,
     * then the send it enabled, in the same pass */
    assert_int_equal(tc_rt_exec_pass(&w), 4);
    assert_int_equal(nposts, 3);
    assert_int_equal(posts[0].send, 1);
    assert_false(posts[0].copied);
    assert_int_equal(posts[0].first, 100);
    assert_int_equal(posts[1].send, 0);
    assert_false(posts[1].copied);
    assert_int_equal(posts[2].send, 1);
    assert_true(posts[2].copied);
    assert_int_equal(posts[2].first, 100);
    for (int i = 0; i < N; i++)
        assert_int_equal(recvbuf[i], 100 + i);
    assert_false(tc_rt_exec_done(&w));

    /* the receive completes: the next pass finishes the work */
    assert_non_null(pending_recv);
    for (int i = 0; i < N; i++)
        recvbuf[N + i] = 200 + i;
    pending_recv->bytes = N * sizeof(int32_t);
    pending_recv->status = TC_OK;
    assert_int_equal(tc_rt_exec_pass(&w), 1);
    assert_true(tc_rt_exec_done(&w));
    assert_int_equal(nposts, 3);
    for (int i = 0; i < N; i++) {
        assert_int_equal(recvbuf[i], 100 + i);
        assert_int_equal(recvbuf[N + i], 200 + i);
    }
    tc_rt_exec_free(&w.ex);
    tc_sched_free(&sched);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_messages_before_local_steps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
