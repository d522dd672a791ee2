/* Challenge-response authentication of connections (auth.h): HMAC-SHA-256 from libsodium over a
 * transcript encoded without ambiguity (every variable-length field is preceded by its length). */
#include <sodium.h>
#include <string.h>

#include "tcomms/transport/auth.h"

/* Domain separation of the key and of the MACs from any other use of the secret. */
static const char tc_auth_key_label[] = "tcomms auth key v1";
static const char tc_auth_mac_label[] = "tcomms auth mac v1";

tc_status_t tc_auth_key_init(tc_auth_key_t *key, const void *secret, size_t len)
{
    crypto_auth_hmacsha256_state st;

    if (sodium_init() < 0)
        return tc_error_set(TC_ERR_SYSTEM, "auth: libsodium could not be initialised");
    /* key = HMAC(label, secret): the label keys, so an empty secret still gives a fixed key */
    crypto_auth_hmacsha256_init(&st, (const unsigned char *)tc_auth_key_label,
                                sizeof(tc_auth_key_label) - 1);
    if (len > 0)
        crypto_auth_hmacsha256_update(&st, secret, len);
    crypto_auth_hmacsha256_final(&st, key->k);
    sodium_memzero(&st, sizeof(st));
    key->keyed = len > 0;
    return TC_OK;
}

void tc_auth_key_wipe(tc_auth_key_t *key)
{
    sodium_memzero(key, sizeof(*key));
}

void tc_auth_nonce(unsigned char nonce[TC_AUTH_NONCE_LEN])
{
    /* idempotent and thread-safe; randombytes needs it once. It cannot fail on Linux once
     * getrandom() works; if it did, randombytes_buf would still read /dev/urandom. */
    if (sodium_init() < 0)
        memset(nonce, 0, TC_AUTH_NONCE_LEN);
    randombytes_buf(nonce, TC_AUTH_NONCE_LEN);
}

static void tc_auth_put_u64(crypto_auth_hmacsha256_state *st, uint64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    crypto_auth_hmacsha256_update(st, b, sizeof(b));
}

void tc_auth_mac(const tc_auth_key_t *key, tc_auth_role_t role, const tc_auth_transcript_t *t,
                 unsigned char mac[TC_AUTH_MAC_LEN])
{
    crypto_auth_hmacsha256_state st;
    const char *purpose = t->purpose != NULL ? t->purpose : "";
    size_t plen = strlen(purpose);

    crypto_auth_hmacsha256_init(&st, key->k, sizeof(key->k));
    crypto_auth_hmacsha256_update(&st, (const unsigned char *)tc_auth_mac_label,
                                  sizeof(tc_auth_mac_label) - 1);
    tc_auth_put_u64(&st, (uint64_t)role);
    tc_auth_put_u64(&st, plen);
    crypto_auth_hmacsha256_update(&st, (const unsigned char *)purpose, plen);
    tc_auth_put_u64(&st, t->initiator_id);
    tc_auth_put_u64(&st, t->acceptor_id);
    crypto_auth_hmacsha256_update(&st, t->nonce_i, TC_AUTH_NONCE_LEN);
    crypto_auth_hmacsha256_update(&st, t->nonce_a, TC_AUTH_NONCE_LEN);
    tc_auth_put_u64(&st, t->extra != NULL ? t->extra_len : 0);
    if (t->extra != NULL && t->extra_len > 0)
        crypto_auth_hmacsha256_update(&st, t->extra, t->extra_len);
    crypto_auth_hmacsha256_final(&st, mac);
    sodium_memzero(&st, sizeof(st));
}

int tc_auth_check(const tc_auth_key_t *key, tc_auth_role_t role, const tc_auth_transcript_t *t,
                  const unsigned char mac[TC_AUTH_MAC_LEN])
{
    unsigned char want[TC_AUTH_MAC_LEN];
    int ok;

    tc_auth_mac(key, role, t, want);
    ok = sodium_memcmp(want, mac, TC_AUTH_MAC_LEN) == 0;
    sodium_memzero(want, sizeof(want));
    return ok;
}
