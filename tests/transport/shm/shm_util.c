#include "shm_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "tcomms/base/status.h"

tc_status_t tc_shmt_ctx_try(uint64_t id, const char *secret, const char *hints, tc_tp_ctx_t **ctx_p)
{
    return tc_tpt_ctx_try(&tc_tp_shm_ops, id, secret, hints, ctx_p);
}

tc_tp_ctx_t *tc_shmt_ctx_new(uint64_t id, const char *secret, const char *hints)
{
    return tc_tpt_ctx_new(&tc_tp_shm_ops, id, secret, hints);
}

size_t tc_shmt_addr(tc_tp_ctx_t *ctx, unsigned char addr[TC_TP_SHM_ADDR_LEN])
{
    size_t len = 0;
    assert_int_equal(tc_tp_addr_pack(ctx, addr, TC_TP_SHM_ADDR_LEN, &len), TC_OK);
    assert_int_equal(len, TC_TP_SHM_ADDR_LEN);
    return len;
}

void tc_shmt_pair_open(tp_pair_t *pair, const char *hints)
{
    unsigned char addr[2][TP_ADDR_MAX];
    size_t len[2];
    for (int i = 0; i < 2; i++) {
        pair->ctx[i] = tc_shmt_ctx_new((uint64_t)i, "secret", hints);
        len[i] = tc_shmt_addr(pair->ctx[i], addr[i]);
    }
    tc_tpt_pair_connect(pair, addr, len);
    tc_tpt_pair_up(pair, SU_WAIT_MS);
}

tc_tp_rkey_t *tc_shmt_rkey(tp_pair_t *pair, void *buf, size_t len, tc_tp_mem_t **mem_p)
{
    unsigned char key[64];
    size_t klen = 0;
    tc_tp_rkey_t *rk = NULL;
    assert_int_equal(tc_tp_mem_reg(pair->ctx[1], buf, len, mem_p), TC_OK);
    assert_int_equal(tc_tp_rkey_pack(*mem_p, key, sizeof(key), &klen), TC_OK);
    assert_int_equal(tc_tp_rkey_unpack(pair->ep[0], key, klen, &rk), TC_OK);
    return rk;
}
