#include "tp_util.h"

#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/base/status.h"
#include "tcomms/base/time.h"

tc_tp_ctx_t *tp_ctx_new(uint64_t id, const char *secret)
{
    tc_tp_ctx_params_t params = TC_TP_CTX_PARAMS_INIT;
    params.self_id = id;
    params.secret = secret;
    params.secret_len = secret ? strlen(secret) : 0;
    tc_tp_ctx_t *ctx = NULL;
    tc_status_t st = tc_tp_ctx_create(&tc_tp_tcp_ops, &params, &ctx);
    if (st != TC_OK)
        print_error("ctx_create: %s: %s\n", tc_status_string(st), tc_last_error());
    assert_int_equal(st, TC_OK);
    assert_non_null(ctx);
    return ctx;
}

size_t tp_addr(tc_tp_ctx_t *ctx, unsigned char addr[64])
{
    size_t len = 0;
    assert_int_equal(tc_tp_addr_pack(ctx, addr, 64, &len), TC_OK);
    assert_true(len > 0 && len <= 64);
    return len;
}

void tp_pair_open(tp_pair_t *pair, const char *secret)
{
    unsigned char addr[2][64];
    size_t len[2];
    for (int i = 0; i < 2; i++) {
        pair->ctx[i] = tp_ctx_new((uint64_t)i, secret);
        len[i] = tp_addr(pair->ctx[i], addr[i]);
    }
    for (int i = 0; i < 2; i++)
        assert_int_equal(tc_tp_ep_connect(pair->ctx[i], (uint64_t)(1 - i), addr[1 - i], len[1 - i],
                                          &pair->ep[i]),
                         TC_OK);
}

void tp_pair_close(tp_pair_t *pair)
{
    for (int i = 0; i < 2; i++) {
        tc_tp_ep_close(pair->ep[i]);
        tc_tp_ctx_destroy(pair->ctx[i]);
    }
}

static void tp_round(tc_tp_ctx_t *const *ctxs, int n, int left_ms)
{
    int total = 0;
    for (int i = 0; i < n; i++) {
        int c = tc_tp_progress(ctxs[i]);
        assert_true(c >= 0);
        total += c;
    }
    /* one context: sleep in wait(); several: just yield so none starves */
    if (total == 0 && n == 1)
        assert_int_equal(tc_tp_wait(ctxs[0], left_ms < 10 ? left_ms : 10), TC_OK);
    else if (total == 0)
        sched_yield();
}

tc_status_t tp_wait_req(tc_tp_ctx_t *const *ctxs, int n, tc_tp_req_t *req, int timeout_ms)
{
    uint64_t deadline = tc_deadline_after_ms((uint64_t)timeout_ms);
    while (req->status == TC_INPROGRESS && !tc_deadline_passed(deadline))
        tp_round(ctxs, n, tc_deadline_left_ms(deadline));
    return req->status;
}

tc_status_t tp_wait_failed(tc_tp_ctx_t *const *ctxs, int n, tc_tp_ep_t *ep, int timeout_ms)
{
    uint64_t deadline = tc_deadline_after_ms((uint64_t)timeout_ms);
    while (ep->failed == TC_OK && !tc_deadline_passed(deadline))
        tp_round(ctxs, n, tc_deadline_left_ms(deadline));
    return ep->failed;
}

void tp_spin(tc_tp_ctx_t *const *ctxs, int n, int ms)
{
    uint64_t deadline = tc_deadline_after_ms((uint64_t)ms);
    while (!tc_deadline_passed(deadline))
        tp_round(ctxs, n, tc_deadline_left_ms(deadline));
}

void tp_fill(unsigned char *buf, size_t len, uint64_t seed)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = tp_pattern(seed, i);
}

size_t tp_check(const unsigned char *buf, size_t len, uint64_t seed)
{
    for (size_t i = 0; i < len; i++)
        if (buf[i] != tp_pattern(seed, i))
            return i;
    return len;
}
