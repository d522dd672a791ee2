/* Fuzz the ib connection handshake (transport/ib/src/ib_hs.c; wire format in ib_internal.h):
 * the passive side's checks of a hello and of the active side's proof, and the active side's
 * check of the passive side's challenge, which ib_hs.c applies to the bytes of the handshake
 * socket before anything of this side's queue pair is given out.
 *
 * Input: s[0] bit 0: 0 the passive (accepting) side, 1 the active side; bit 1: this side has a
 * secret (the fixed test key) or runs with the public key; bit 2: the MAC under test (the proof,
 * or the challenge's MAC) is replaced by the right one, and bit 3 then flips one of its bits
 * (byte (s[0] >> 4) % 32, bit s[0] & 7: a near miss); then
 *   passive: the hello (its first 112 bytes, or fewer: a prefix), then the proof (32 bytes);
 *            this side's id is SELF (1000), its nonce fixed
 *   active : its own hello (112 bytes), then the passive side's challenge (88 bytes)
 *
 * Properties, besides ASan's:
 * - a hello (or a prefix of one) gets exactly the verdict of an independent model of the
 *   format (magic, version, result, receiver, keyed flag, direction, ring geometry), with a
 *   reason exactly when it is refused;
 * - a proof is accepted exactly when it equals the initiator's MAC computed here with auth.h
 *   from the transcript laid out as ib_internal.h says;
 * - a challenge is accepted exactly when its MAC is the acceptor's MAC so computed, and the
 *   proof then written is the initiator's MAC; a refused one leaves the proof untouched. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/base/log.h"
#include "tcomms/transport/auth.h"
#include "transport/ib/src/ib_internal.h"

#define SELF 1000
#define SECRET "ib-handshake-fuzz-secret"

static tc_auth_key_t g_key[2]; /* [0]: the public key, [1]: keyed */

static void init_once(void)
{
    static int done;
    if (done)
        return;
    tc_log_configure("none");
    if (tc_auth_key_init(&g_key[0], NULL, 0) != TC_OK ||
        tc_auth_key_init(&g_key[1], SECRET, strlen(SECRET)) != TC_OK || g_key[0].keyed ||
        !g_key[1].keyed)
        abort();
    done = 1;
}

static uint64_t le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* The MAC of @p role for hello @p h (112 bytes) and nonce @p na, from ib_internal.h. */
static void want_mac(const tc_auth_key_t *key, tc_auth_role_t role, const uint8_t *h,
                     const uint8_t *na, unsigned char mac[TC_AUTH_MAC_LEN])
{
    tc_auth_transcript_t t;
    memset(&t, 0, sizeof(t));
    t.purpose = "ib";
    t.initiator_id = le(h + 8, 8);
    t.acceptor_id = le(h + 16, 8);
    memcpy(t.nonce_i, h + 80, 32);
    memcpy(t.nonce_a, na, 32);
    t.extra = h;
    t.extra_len = 80;
    tc_auth_mac(key, role, &t, mac);
}

static int model_hello(const uint8_t *b, size_t len, int keyed)
{
    if (len < 8)
        return TC_IB_HS_MORE;
    if (le(b, 4) != 0x42494354u)
        return TC_IB_HS_FOREIGN;
    if (le(b + 4, 2) != 3)
        return TC_IB_HS_R_REFUSED;
    if (len < 112)
        return TC_IB_HS_MORE;
    if (le(b + 6, 2) != 0 || le(b + 16, 8) != SELF)
        return TC_IB_HS_R_REFUSED;
    if (((le(b + 56, 2) & 0x0100) != 0) != keyed)
        return TC_IB_HS_R_WRONG_SECRET;
    if (le(b + 8, 8) >= SELF || le(b + 76, 2) != TC_IB_NRECV || le(b + 78, 2) != TC_IB_SLOT)
        return TC_IB_HS_R_REFUSED;
    return 0;
}

static void passive(uint8_t mode, const uint8_t *s, size_t n)
{
    int keyed = (mode & 2) != 0;
    const tc_auth_key_t *key = &g_key[keyed];
    size_t hlen = n < TC_IB_HELLO_LEN ? n : TC_IB_HELLO_LEN;
    const char *why = "unset";
    int r = tc_ib_hello_check(s, hlen, SELF, keyed, &why);
    if (r != model_hello(s, hlen, keyed) || (r > 0) != (why != NULL))
        abort();
    if (r != 0 || n - hlen < TC_AUTH_MAC_LEN)
        return;
    uint8_t na[TC_AUTH_NONCE_LEN], proof[TC_AUTH_MAC_LEN];
    unsigned char mac[TC_AUTH_MAC_LEN];
    for (int i = 0; i < TC_AUTH_NONCE_LEN; i++)
        na[i] = (uint8_t)(0x40 + i);
    memcpy(proof, s + hlen, sizeof(proof));
    want_mac(key, TC_AUTH_INITIATOR, s, na, mac);
    if (mode & 4) {
        memcpy(proof, mac, sizeof(mac));
        if (mode & 8)
            proof[(mode >> 4) % 32] ^= (uint8_t)(1u << (mode & 7));
    }
    if (tc_ib_proof_check(key, s, na, proof) != (memcmp(proof, mac, sizeof(mac)) == 0))
        abort();
}

static void active(uint8_t mode, const uint8_t *s, size_t n)
{
    if (n < TC_IB_HELLO_LEN + TC_IB_CHAL_LEN)
        return;
    const tc_auth_key_t *key = &g_key[(mode & 2) != 0];
    uint8_t chal[TC_IB_CHAL_LEN], proof[TC_AUTH_MAC_LEN];
    unsigned char mac[TC_AUTH_MAC_LEN];
    const uint8_t *hello = s;
    memcpy(chal, s + TC_IB_HELLO_LEN, sizeof(chal));
    want_mac(key, TC_AUTH_ACCEPTOR, hello, chal + 24, mac);
    if (mode & 4) {
        memcpy(chal + 56, mac, sizeof(mac));
        if (mode & 8)
            chal[56 + (mode >> 4) % 32] ^= (uint8_t)(1u << (mode & 7));
    }
    memset(proof, 0xee, sizeof(proof));
    int ok = tc_ib_challenge_answer(key, hello, chal, proof);
    if (ok != (memcmp(chal + 56, mac, sizeof(mac)) == 0))
        abort();
    if (ok) {
        want_mac(key, TC_AUTH_INITIATOR, hello, chal + 24, mac);
        if (memcmp(proof, mac, sizeof(mac)) != 0)
            abort();
    } else {
        for (size_t i = 0; i < sizeof(proof); i++)
            if (proof[i] != 0xee)
                abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 4200)
        return 0;
    init_once();
    if (data[0] & 1)
        active(data[0], data + 1, size - 1);
    else
        passive(data[0], data + 1, size - 1);
    return 0;
}
