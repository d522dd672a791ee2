/* Pure checks of immediate words and ring-slot message headers (see ib_parse.h). */
#include "ib_parse.h"

#include "ib_internal.h"

tc_ib_imm_verdict_t tc_ib_imm_parse(uint32_t imm, uint32_t n, uint32_t outstanding,
                                    uint32_t want_slot, tc_ib_imm_info_t *info)
{
    info->kind = imm >> 30;
    info->credits = (imm >> 22) & 0xffu;
    info->low = imm & 0x3fffffu;
    info->slot = info->low >> 14;
    info->len = info->low & 0x3fffu;
    if (info->credits > outstanding)
        return TC_IB_IMM_BAD_CREDITS;
    if (info->kind == TC_IB_IMM_CREDIT && info->low == 0 && n == 0)
        return TC_IB_IMM_IS_CREDIT;
    if (info->kind == TC_IB_IMM_FIN && n == 0)
        return TC_IB_IMM_IS_FIN;
    if (info->kind != TC_IB_IMM_MSG)
        return TC_IB_IMM_BAD_KIND;
    if (info->slot != want_slot)
        return TC_IB_IMM_BAD_SLOT;
    if (info->len < TC_IB_MSG_HDR || info->len > TC_IB_SLOT || info->len != n)
        return TC_IB_IMM_BAD_LEN;
    return TC_IB_IMM_IS_MSG;
}

int tc_ib_msg_parse(const unsigned char *b, uint32_t n, tc_ib_msg_info_t *info)
{
    int type = b[0];
    info->tag = tc_ib_get_u64(b + 8);
    info->len = tc_ib_get_u64(b + 16);
    info->addr = tc_ib_get_u64(b + 24);
    info->rkey = tc_ib_get_u32(b + 32);
    info->cookie = tc_ib_get_u64(b + 40);
    int eager_ok = type == TC_IB_MSG_EAGER && info->len == n - (uint64_t)TC_IB_MSG_HDR &&
                   info->len <= TC_TP_IB_EAGER_MAX;
    int rts_ok = type == TC_IB_MSG_RTS && n == TC_IB_MSG_HDR && info->len > TC_TP_IB_EAGER_MAX &&
                 info->len <= UINT32_MAX && info->cookie <= TC_IB_RNDV_ID_MASK;
    info->rts = eager_ok ? 0 : rts_ok ? 1 : -1;
    return eager_ok || rts_ok;
}
