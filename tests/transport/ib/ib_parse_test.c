/* The pure checks of what an InfiniBand peer writes: immediate words (credits, FIN, messages in
 * the expected slot with a length that fits) and ring-slot message headers (eager, rendezvous). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "transport/ib/src/ib_internal.h"
#include "transport/ib/src/ib_parse.h"

static void test_imm(void **state)
{
    (void)state;
    tc_ib_imm_info_t f;
    /* a message of 48 + 5 bytes in slot 3, returning 2 credits */
    uint32_t imm = TC_IB_IMM(TC_IB_IMM_MSG, 2, TC_IB_IMM_SLOT_LEN(3, 53));
    assert_int_equal(tc_ib_imm_parse(imm, 53, 10, 3, &f), TC_IB_IMM_IS_MSG);
    assert_int_equal(f.credits, 2);
    assert_int_equal(f.slot, 3);
    assert_int_equal(f.len, 53);
    assert_int_equal(tc_ib_imm_parse(imm, 53, 1, 3, &f), TC_IB_IMM_BAD_CREDITS);
    assert_int_equal(tc_ib_imm_parse(imm, 53, 10, 4, &f), TC_IB_IMM_BAD_SLOT);
    assert_int_equal(tc_ib_imm_parse(imm, 54, 10, 3, &f), TC_IB_IMM_BAD_LEN);
    imm = TC_IB_IMM(TC_IB_IMM_MSG, 0, TC_IB_IMM_SLOT_LEN(0, 47)); /* shorter than a header */
    assert_int_equal(tc_ib_imm_parse(imm, 47, 0, 0, &f), TC_IB_IMM_BAD_LEN);
    imm = TC_IB_IMM(TC_IB_IMM_MSG, 0, TC_IB_IMM_SLOT_LEN(0, TC_IB_SLOT + 1)); /* longer */
    assert_int_equal(tc_ib_imm_parse(imm, TC_IB_SLOT + 1, 0, 0, &f), TC_IB_IMM_BAD_LEN);
    /* credits only; a FIN; bytes with either, and the fourth kind, are refused */
    assert_int_equal(tc_ib_imm_parse(TC_IB_IMM(TC_IB_IMM_CREDIT, 5, 0), 0, 5, 0, &f),
                     TC_IB_IMM_IS_CREDIT);
    assert_int_equal(tc_ib_imm_parse(TC_IB_IMM(TC_IB_IMM_CREDIT, 5, 1), 0, 5, 0, &f),
                     TC_IB_IMM_BAD_KIND);
    assert_int_equal(tc_ib_imm_parse(TC_IB_IMM(TC_IB_IMM_FIN, 0, 77), 0, 0, 9, &f),
                     TC_IB_IMM_IS_FIN);
    assert_int_equal(f.low, 77);
    assert_int_equal(tc_ib_imm_parse(TC_IB_IMM(TC_IB_IMM_FIN, 0, 77), 8, 0, 9, &f),
                     TC_IB_IMM_BAD_KIND);
    assert_int_equal(tc_ib_imm_parse(TC_IB_IMM(3, 0, 0), 0, 0, 0, &f), TC_IB_IMM_BAD_KIND);
}

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void test_msg(void **state)
{
    (void)state;
    static unsigned char b[TC_IB_SLOT];
    tc_ib_msg_info_t m;
    memset(b, 0, sizeof(b));
    b[0] = TC_IB_MSG_EAGER;
    put64(b + 8, 9);  /* tag */
    put64(b + 16, 5); /* length */
    assert_int_equal(tc_ib_msg_parse(b, TC_IB_MSG_HDR + 5, &m), 1);
    assert_int_equal(m.rts, 0);
    assert_int_equal(m.tag, 9);
    assert_int_equal(m.len, 5);
    assert_int_equal(tc_ib_msg_parse(b, TC_IB_MSG_HDR + 6, &m), 0); /* length != bytes */
    assert_int_equal(m.rts, -1);
    b[0] = TC_IB_MSG_RTS;
    put64(b + 16, TC_TP_IB_EAGER_MAX + 1);
    put64(b + 40, TC_IB_RNDV_ID_MASK);
    assert_int_equal(tc_ib_msg_parse(b, TC_IB_MSG_HDR, &m), 1);
    assert_int_equal(m.rts, 1);
    assert_int_equal(m.cookie, TC_IB_RNDV_ID_MASK);
    put64(b + 40, TC_IB_RNDV_ID_MASK + 1ull); /* an id beyond the mask */
    assert_int_equal(tc_ib_msg_parse(b, TC_IB_MSG_HDR, &m), 0);
    put64(b + 40, 1);
    put64(b + 16, TC_TP_IB_EAGER_MAX); /* small enough to be eager */
    assert_int_equal(tc_ib_msg_parse(b, TC_IB_MSG_HDR, &m), 0);
    b[0] = 3; /* unknown type */
    assert_int_equal(tc_ib_msg_parse(b, TC_IB_MSG_HDR, &m), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_imm),
        cmocka_unit_test(test_msg),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
