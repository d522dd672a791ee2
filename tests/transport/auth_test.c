/* The challenge-response primitive (auth.h): MACs equal to an independent HMAC-SHA-256 (Python's
 * hmac module, computed when this test was written, over the encoding auth.c documents); every
 * field of the transcript, the role and the key change the MAC; nonces are fresh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/transport/auth.h"

static void hex(const unsigned char *b, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", b[i]);
}

static tc_auth_transcript_t sample(void)
{
    static const unsigned char extra[2] = {1, 2};
    tc_auth_transcript_t t = {.purpose = "tcp/primary", .initiator_id = 3, .acceptor_id = 7,
                              .extra = extra, .extra_len = sizeof(extra)};
    for (int i = 0; i < TC_AUTH_NONCE_LEN; i++) {
        t.nonce_i[i] = (unsigned char)i;
        t.nonce_a[i] = (unsigned char)(32 + i);
    }
    return t;
}

static void test_reference_vectors(void **state)
{
    (void)state;
    tc_auth_key_t key, none;
    char h[2 * TC_AUTH_MAC_LEN + 1];
    unsigned char mac[TC_AUTH_MAC_LEN];
    tc_auth_transcript_t t = sample();

    assert_int_equal(tc_auth_key_init(&key, "s3cret", 6), TC_OK);
    assert_int_equal(key.keyed, 1);
    hex(key.k, 32, h);
    assert_string_equal(h, "83b7038d9dcba1b7199f895f08fa328686b51856117933d23b08671e7fe80694");
    tc_auth_mac(&key, TC_AUTH_ACCEPTOR, &t, mac);
    hex(mac, sizeof(mac), h);
    assert_string_equal(h, "4543f6440c853e8c333c00a0e28809583b9db9f307cd9c54064ff7edde1fe9a0");
    tc_auth_mac(&key, TC_AUTH_INITIATOR, &t, mac);
    hex(mac, sizeof(mac), h);
    assert_string_equal(h, "fd12bf6166390417790560c2901fc520f220534d9b3440663c92d1035b0f55b3");
    assert_int_equal(tc_auth_key_init(&none, NULL, 0), TC_OK);
    assert_int_equal(none.keyed, 0);
    hex(none.k, 32, h);
    assert_string_equal(h, "d84a0379a1c8ca7f490476f2a9ceee085655e7a55622f15e5b8f255662125641");
}

static void test_everything_bound(void **state)
{
    (void)state;
    tc_auth_key_t key, other;
    unsigned char mac[TC_AUTH_MAC_LEN];
    assert_int_equal(tc_auth_key_init(&key, "s3cret", 6), TC_OK);
    assert_int_equal(tc_auth_key_init(&other, "s3creT", 6), TC_OK);
    tc_auth_transcript_t t = sample();
    tc_auth_mac(&key, TC_AUTH_INITIATOR, &t, mac);
    assert_int_equal(tc_auth_check(&key, TC_AUTH_INITIATOR, &t, mac), 1);
    /* the other role, the other key */
    assert_int_equal(tc_auth_check(&key, TC_AUTH_ACCEPTOR, &t, mac), 0);
    assert_int_equal(tc_auth_check(&other, TC_AUTH_INITIATOR, &t, mac), 0);
    /* each field of the transcript */
    tc_auth_transcript_t u = t;
    u.purpose = "tcp/data";
    assert_int_equal(tc_auth_check(&key, TC_AUTH_INITIATOR, &u, mac), 0);
    u = t;
    u.initiator_id = 4;
    assert_int_equal(tc_auth_check(&key, TC_AUTH_INITIATOR, &u, mac), 0);
    u = t;
    u.acceptor_id = 8;
    assert_int_equal(tc_auth_check(&key, TC_AUTH_INITIATOR, &u, mac), 0);
    u = t;
    u.nonce_i[31] ^= 1;
    assert_int_equal(tc_auth_check(&key, TC_AUTH_INITIATOR, &u, mac), 0);
    u = t;
    u.nonce_a[0] ^= 0x80;
    assert_int_equal(tc_auth_check(&key, TC_AUTH_INITIATOR, &u, mac), 0);
    u = t;
    u.extra_len = 1;
    assert_int_equal(tc_auth_check(&key, TC_AUTH_INITIATOR, &u, mac), 0);
    u = t;
    u.extra = NULL;
    assert_int_equal(tc_auth_check(&key, TC_AUTH_INITIATOR, &u, mac), 0);
    /* lengths prefix the variable fields: moving a byte between purpose and extra changes it */
    static const unsigned char e1[1] = {'y'}, e2[2] = {'x', 'y'};
    tc_auth_transcript_t a = t, b = t;
    a.purpose = "px";
    a.extra = e1;
    a.extra_len = 1;
    b.purpose = "p";
    b.extra = e2;
    b.extra_len = 2;
    unsigned char ma[TC_AUTH_MAC_LEN];
    tc_auth_mac(&key, TC_AUTH_INITIATOR, &a, ma);
    assert_int_equal(tc_auth_check(&key, TC_AUTH_INITIATOR, &b, ma), 0);
    /* a flipped MAC byte */
    mac[17] ^= 4;
    assert_int_equal(tc_auth_check(&key, TC_AUTH_INITIATOR, &t, mac), 0);
    tc_auth_key_wipe(&key);
    for (size_t i = 0; i < sizeof(key.k); i++)
        assert_int_equal(key.k[i], 0);
}

static void test_fresh_nonces(void **state)
{
    (void)state;
    unsigned char n[64][TC_AUTH_NONCE_LEN];
    for (int i = 0; i < 64; i++)
        tc_auth_nonce(n[i]);
    for (int i = 0; i < 64; i++)
        for (int j = 0; j < i; j++)
            assert_memory_not_equal(n[i], n[j], TC_AUTH_NONCE_LEN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_vectors),
        cmocka_unit_test(test_everything_bound),
        cmocka_unit_test(test_fresh_nonces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
