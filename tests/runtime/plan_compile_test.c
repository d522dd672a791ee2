/* Compiling a schedule into a plan (runtime/src/plan_compile.c): a valid
 * schedule gives, step by step, the byte offsets, sizes, world ranks, keys and
 * landing offsets worked out here independently; an invalid one is refused
 * when compiled, with an error naming the step and what is wrong with it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/src/plan.h"
#include "tcomms/algo/schedule.h"
#include "tcomms/base/status.h"

static void build_ring(tc_sched_t *sched, int rank)
{
    tc_algo_args_t args = {
        .coll = TC_COLL_ALL_REDUCE, .nranks = 4, .rank = rank, .root = -1, .count = 1000};
    assert_int_equal(tc_algo_build(&args, "ring", sched), TC_OK);
}

static void test_compile_ring(void **state)
{
    (void)state;
    const int wranks[4] = {7, 2, 5, 0};
    for (int rank = 0; rank < 4; rank++) {
        tc_sched_t sched = {0};
        tc_rt_plan_t plan = {0};
        build_ring(&sched, rank);
        assert_int_equal(tc_rt_plan_compile(&plan, &sched, wranks, 4), TC_OK);
        assert_int_equal(plan.nsteps, sched.nsteps);
        assert_true(plan.nsteps > 0);
        uint64_t tmp = 0;
        for (uint32_t i = 0; i < sched.nsteps; i++) {
            const tc_step_t *s = &sched.steps[i];
            const tc_rt_pstep_t *p = &plan.steps[i];
            int msg = s->kind == TC_STEP_SEND || s->kind == TC_STEP_RECV ||
                      s->kind == TC_STEP_RECV_REDUCE;
            assert_int_equal(p->kind, s->kind);
            assert_int_equal(p->src_off, s->off * 4);
            assert_int_equal(p->dst_off, s->dst_off * 4);
            assert_int_equal(p->bytes, s->count * 4);
            assert_int_equal(p->count, s->count);
            assert_int_equal(p->wpeer, msg ? wranks[s->peer] : -1);
            assert_int_equal(p->key, msg ? s->peer * 2 + (s->kind != TC_STEP_SEND) : -1);
            assert_int_equal(p->dep[0], s->dep[0]);
            assert_int_equal(p->dep[1], s->dep[1]);
            if (s->kind == TC_STEP_RECV_REDUCE) {
                assert_int_equal(p->tmp_off, tmp);
                tmp += s->count * 4;
            }
        }
        assert_int_equal(plan.tmp_bytes, tmp);
        assert_int_equal(plan.scratch_bytes, sched.scratch_count * 4);
        assert_int_equal(plan.send_bytes, sched.buf_count[TC_BUF_SEND] * 4);
        assert_int_equal(plan.recv_bytes, sched.buf_count[TC_BUF_RECV] * 4);
        /* without a rank list the world ranks are the communicator's */
        assert_int_equal(tc_rt_plan_compile(&plan, &sched, NULL, 8), TC_OK);
        for (uint32_t i = 0; i < sched.nsteps; i++)
            if (sched.steps[i].kind <= TC_STEP_RECV_REDUCE)
                assert_int_equal(plan.steps[i].wpeer, sched.steps[i].peer);
        tc_rt_plan_free(&plan);
        tc_sched_free(&sched);
    }
}

/* Break step @p at of a valid schedule with @p spoil; compiling must name it. */
static void expect_refused(void (*spoil)(tc_sched_t *, tc_step_t *), const char *why)
{
    tc_sched_t sched = {0};
    tc_rt_plan_t plan = {0};
    build_ring(&sched, 1);
    uint32_t at = sched.nsteps / 2;
    spoil(&sched, &sched.steps[at]);
    assert_int_equal(tc_rt_plan_compile(&plan, &sched, NULL, 4), TC_ERR_INTERNAL);
    char step[64];
    snprintf(step, sizeof(step), "at step %u of %u", at, sched.nsteps);
    assert_non_null(strstr(tc_last_error(), step));
    assert_non_null(strstr(tc_last_error(), "all_reduce"));
    assert_non_null(strstr(tc_last_error(), why));
    tc_rt_plan_free(&plan);
    tc_sched_free(&sched);
}

static void past_end(tc_sched_t *sched, tc_step_t *s)
{
    s->kind = TC_STEP_COPY;
    s->buf = TC_BUF_SEND;
    s->dst_buf = TC_BUF_RECV;
    s->off = sched->buf_count[TC_BUF_SEND] - 1;
    s->count = 2;
}

static void bad_peer(tc_sched_t *sched, tc_step_t *s)
{
    (void)sched;
    s->kind = TC_STEP_SEND;
    s->buf = TC_BUF_SEND;
    s->off = 0;
    s->count = 1;
    s->peer = 4;
}

static void writes_send(tc_sched_t *sched, tc_step_t *s)
{
    (void)sched;
    s->kind = TC_STEP_RECV;
    s->dst_buf = TC_BUF_SEND;
    s->dst_off = 0;
    s->count = 1;
}

static void forward_dep(tc_sched_t *sched, tc_step_t *s)
{
    s->dep[1] = sched->nsteps - 1;
}

static void bad_kind(tc_sched_t *sched, tc_step_t *s)
{
    (void)sched;
    s->kind = 9;
}

static void test_refused(void **state)
{
    (void)state;
    expect_refused(past_end, "past the end of its buffer");
    expect_refused(bad_peer, "its peer is not a rank of the communicator");
    expect_refused(writes_send, "a buffer it may not use");
    expect_refused(forward_dep, "not an earlier one");
    expect_refused(bad_kind, "kind is unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_compile_ring),
                                       cmocka_unit_test(test_refused)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
