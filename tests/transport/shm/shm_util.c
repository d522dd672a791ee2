#include "shm_util.h"

#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/base/config.h"
#include "tcomms/base/status.h"
#include "tcomms/base/time.h"

tc_status_t su_ctx_try(uint64_t id, const char *secret, const char *hints, tc_tp_ctx_t **ctx_p)
{
    tc_hints_t h;
    tc_hints_init(&h);
    tc_status_t st = hints ? tc_hints_parse(&h, hints) : TC_OK;
    if (st == TC_OK) {
        tc_tp_ctx_params_t params = TC_TP_CTX_PARAMS_INIT;
        params.self_id = id;
        params.secret = secret;
        params.secret_len = secret ? strlen(secret) : 0;
        params.hints = &h;
        st = tc_tp_ctx_create(&tc_tp_shm_ops, &params, ctx_p);
    }
    tc_hints_free(&h);
    return st;
}

tc_tp_ctx_t *su_ctx_new(uint64_t id, const char *secret, const char *hints)
{
    tc_tp_ctx_t *ctx = NULL;
    tc_status_t st = su_ctx_try(id, secret, hints, &ctx);
    if (st != TC_OK)
        print_error("ctx_create: %s: %s\n", tc_status_string(st), tc_last_error());
    assert_int_equal(st, TC_OK);
    assert_non_null(ctx);
    return ctx;
}

size_t su_addr(tc_tp_ctx_t *ctx, unsigned char addr[TC_TP_SHM_ADDR_LEN])
{
    size_t len = 0;
    assert_int_equal(tc_tp_addr_pack(ctx, addr, TC_TP_SHM_ADDR_LEN, &len), TC_OK);
    assert_int_equal(len, TC_TP_SHM_ADDR_LEN);
    return len;
}

void su_pair_open(su_pair_t *pair, const char *hints)
{
    unsigned char addr[2][TC_TP_SHM_ADDR_LEN];
    for (int i = 0; i < 2; i++) {
        pair->ctx[i] = su_ctx_new((uint64_t)i, "secret", hints);
        su_addr(pair->ctx[i], addr[i]);
    }
    for (int i = 0; i < 2; i++)
        assert_int_equal(tc_tp_ep_connect(pair->ctx[i], (uint64_t)(1 - i), addr[1 - i],
                                          TC_TP_SHM_ADDR_LEN, &pair->ep[i]),
                         TC_OK);
    /* up: a zero-byte message each way */
    for (int i = 0; i < 2; i++) {
        tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_recv(pair->ep[1 - i], 999, NULL, 0, &r), TC_OK);
        assert_int_equal(tc_tp_send(pair->ep[i], 999, NULL, 0, &s), TC_OK);
        assert_int_equal(su_wait_req(pair->ctx, 2, &r, SU_WAIT_MS), TC_OK);
        assert_int_equal(su_wait_req(pair->ctx, 2, &s, SU_WAIT_MS), TC_OK);
    }
}

void su_pair_close(su_pair_t *pair)
{
    for (int i = 0; i < 2; i++) {
        tc_tp_ep_close(pair->ep[i]);
        tc_tp_ctx_destroy(pair->ctx[i]);
    }
}

static void su_round(tc_tp_ctx_t *const *ctxs, int n, int left_ms)
{
    int total = 0;
    for (int i = 0; i < n; i++) {
        int c = tc_tp_progress(ctxs[i]);
        assert_true(c >= 0);
        total += c;
    }
    if (total == 0 && n == 1)
        assert_int_equal(tc_tp_wait(ctxs[0], left_ms < 10 ? left_ms : 10), TC_OK);
    else if (total == 0)
        sched_yield();
}

tc_status_t su_wait_req(tc_tp_ctx_t *const *ctxs, int n, tc_tp_req_t *req, int timeout_ms)
{
    uint64_t deadline = tc_deadline_after_ms((uint64_t)timeout_ms);
    while (req->status == TC_INPROGRESS && !tc_deadline_passed(deadline))
        su_round(ctxs, n, tc_deadline_left_ms(deadline));
    return req->status;
}

tc_status_t su_wait_failed(tc_tp_ctx_t *const *ctxs, int n, tc_tp_ep_t *ep, int timeout_ms)
{
    uint64_t deadline = tc_deadline_after_ms((uint64_t)timeout_ms);
    while (ep->failed == TC_OK && !tc_deadline_passed(deadline))
        su_round(ctxs, n, tc_deadline_left_ms(deadline));
    return ep->failed;
}

void su_spin(tc_tp_ctx_t *const *ctxs, int n, int ms)
{
    uint64_t deadline = tc_deadline_after_ms((uint64_t)ms);
    while (!tc_deadline_passed(deadline))
        su_round(ctxs, n, tc_deadline_left_ms(deadline));
}

void su_fill(unsigned char *buf, size_t len, uint64_t seed)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = su_pattern(seed, i);
}

size_t su_check(const unsigned char *buf, size_t len, uint64_t seed)
{
    for (size_t i = 0; i < len; i++)
        if (buf[i] != su_pattern(seed, i))
            return i;
    return len;
}
