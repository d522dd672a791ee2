/* The pure checks of what an InfiniBand peer writes: immediate words (credits, FIN, messages in
 * the expected slot with a length that fits) and ring-slot message headers (eager, rendezvous),
 * and the handshake's checks (ib_hs.c): a hello, the initiator's proof, the acceptor's
 * challenge. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/transport/auth.h"
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

static void hs_put(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* The MAC of @p role for hello @p hello and nonce @p na, laid out as ib_internal.h says. */
static void hs_mac(const tc_auth_key_t *key, tc_auth_role_t role, const unsigned char *hello,
                   const unsigned char *na, unsigned char *mac)
{
    tc_auth_transcript_t t;
    memset(&t, 0, sizeof(t));
    t.purpose = "ib";
    t.initiator_id = 7;
    t.acceptor_id = 9;
    memcpy(t.nonce_i, hello + TC_IB_HS_LEN, TC_AUTH_NONCE_LEN);
    memcpy(t.nonce_a, na, TC_AUTH_NONCE_LEN);
    t.extra = hello;
    t.extra_len = TC_IB_HS_LEN;
    tc_auth_mac(key, role, &t, mac);
}

static void test_handshake(void **state)
{
    (void)state;
    tc_auth_key_t key;
    unsigned char hello[TC_IB_HELLO_LEN], chal[TC_IB_CHAL_LEN], proof[TC_AUTH_MAC_LEN];
    unsigned char want[TC_AUTH_MAC_LEN];
    const char *why;
    assert_int_equal(tc_auth_key_init(&key, "secret", 6), TC_OK);
    memset(hello, 0, sizeof(hello));
    hs_put(hello, TC_IB_HS_MAGIC, 4);
    hs_put(hello + 4, TC_IB_HS_VERSION, 2);
    hs_put(hello + 8, 7, 8);
    hs_put(hello + 16, 9, 8);
    hs_put(hello + 56, TC_IB_HS_F_KEYED, 2);
    hs_put(hello + 76, TC_IB_NRECV, 2);
    hs_put(hello + 78, TC_IB_SLOT, 2);
    for (int i = 0; i < TC_AUTH_NONCE_LEN; i++)
        hello[TC_IB_HS_LEN + i] = (unsigned char)i;
    assert_int_equal(tc_ib_hello_check(hello, 7, 9, 1, &why), TC_IB_HS_MORE);
    assert_int_equal(tc_ib_hello_check(hello, sizeof(hello) - 1, 9, 1, &why), TC_IB_HS_MORE);
    assert_int_equal(tc_ib_hello_check(hello, sizeof(hello), 9, 1, &why), 0);
    assert_null(why);
    assert_int_equal(tc_ib_hello_check(hello, sizeof(hello), 9, 0, &why), TC_IB_HS_R_WRONG_SECRET);
    assert_int_equal(tc_ib_hello_check(hello, sizeof(hello), 8, 1, &why), TC_IB_HS_R_REFUSED);
    assert_non_null(why);

    /* the challenge: header, Na, the acceptor's MAC */
    memset(chal, 0, sizeof(chal));
    hs_put(chal, TC_IB_HS_MAGIC, 4);
    hs_put(chal + 4, TC_IB_HS_VERSION, 2);
    hs_put(chal + 8, 9, 8);
    hs_put(chal + 16, 7, 8);
    memset(chal + TC_IB_HDR_LEN, 0x5a, TC_AUTH_NONCE_LEN);
    hs_mac(&key, TC_AUTH_ACCEPTOR, hello, chal + TC_IB_HDR_LEN,
           chal + TC_IB_HDR_LEN + TC_AUTH_NONCE_LEN);
    assert_int_equal(tc_ib_challenge_answer(&key, hello, chal, proof), 1);
    hs_mac(&key, TC_AUTH_INITIATOR, hello, chal + TC_IB_HDR_LEN, want);
    assert_memory_equal(proof, want, sizeof(want));
    assert_int_equal(tc_ib_proof_check(&key, hello, chal + TC_IB_HDR_LEN, proof), 1);
    proof[5] ^= 1;
    assert_int_equal(tc_ib_proof_check(&key, hello, chal + TC_IB_HDR_LEN, proof), 0);

    /* a wrong MAC (or another nonce) is refused and no proof is written */
    memset(proof, 0xee, sizeof(proof));
    chal[TC_IB_CHAL_LEN - 1] ^= 0x80;
    assert_int_equal(tc_ib_challenge_answer(&key, hello, chal, proof), 0);
    chal[TC_IB_CHAL_LEN - 1] ^= 0x80;
    chal[TC_IB_HDR_LEN] ^= 1;
    assert_int_equal(tc_ib_challenge_answer(&key, hello, chal, proof), 0);
    for (size_t i = 0; i < sizeof(proof); i++)
        assert_int_equal(proof[i], 0xee);
    tc_auth_key_wipe(&key);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_imm),
        cmocka_unit_test(test_msg),
        cmocka_unit_test(test_handshake),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
