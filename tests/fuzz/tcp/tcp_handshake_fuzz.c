/* Fuzz the tcp connection handshake (transport/tcp/tcp_hs.c; wire format in tcp_internal.h):
 * the acceptor's checks of a hello and of the initiator's proof, and the initiator's check of
 * the acceptor's challenge. These are the functions tcp_accept.c, tcp_rx.c and tcp_lane.c apply
 * to the bytes of a connection before anything else of it is trusted.
 *
 * Input: s[0] bit 0: 0 the acceptor's side, 1 the initiator's; bit 1: this side has a secret
 * (the fixed test key) or runs with the public key; bit 2: the MAC under test (the proof, or the
 * challenge's MAC) is replaced by the right one, and bit 3 then flips one of its bits (byte
 * (s[0] >> 4) % 32, bit s[0] & 7: a near miss); then
 *   acceptor : the hello (its first 64 bytes, or fewer: a prefix), then the proof (the rest,
 *              any length); the acceptor's id is SELF (1000), its nonce fixed
 *   initiator: u16 flags, u64 sender, u64 receiver, u64 token and 32 bytes of nonce of its own
 *              hello (made by tc_tcp_hello_make), then the acceptor's answer (the rest)
 *
 * Properties, besides ASan's:
 * - a hello (or a prefix of one) gets exactly the verdict of an independent model of the
 *   format (magic, version, receiver, keyed flag, direction, flags), and an accepted one is
 *   taken apart into exactly its bytes;
 * - the challenge made for an accepted hello carries the acceptor's MAC, computed here with
 *   auth.h from the transcript laid out as tcp_internal.h says;
 * - a proof is accepted exactly when it is 32 bytes equal to the initiator's MAC so computed;
 * - the initiator needs a whole challenge only after an accepting header, and accepts a
 *   challenge exactly when its MAC is the acceptor's MAC so computed; its proof is then the
 *   initiator's MAC. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/base/log.h"
#include "tcomms/transport/auth.h"
#include "transport/tcp/tcp_internal.h"

#define SELF 1000
#define SECRET "tcp-handshake-fuzz-secret"

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

/* The MAC of @p role for the exchange opened by hello @p h (64 bytes) and acceptor nonce @p na,
 * laid out from tcp_internal.h's description, not from tcp_hs.c. */
static void want_mac(const tc_auth_key_t *key, tc_auth_role_t role, const uint8_t *h,
                     const uint8_t *na, unsigned char mac[TC_AUTH_MAC_LEN])
{
    tc_auth_transcript_t t;
    uint8_t extra[12];
    memset(&t, 0, sizeof(t));
    memcpy(extra, h + 4, 4);      /* u16 version, u16 flags */
    memcpy(extra + 4, h + 56, 8); /* u64 token */
    t.purpose = (le(h + 6, 2) & 0x8000) ? "tcp/data" : "tcp/primary";
    t.initiator_id = le(h + 8, 8);
    t.acceptor_id = le(h + 16, 8);
    memcpy(t.nonce_i, h + 24, 32);
    memcpy(t.nonce_a, na, 32);
    t.extra = extra;
    t.extra_len = sizeof(extra);
    tc_auth_mac(key, role, &t, mac);
}

/* The verdict on a hello prefix of @p len bytes, from the format alone. */
static int model_hello(const uint8_t *b, size_t len, int keyed)
{
    if (len < 8)
        return TC_TCP_HS_MORE;
    if (le(b, 4) != 0x50544354u)
        return TC_TCP_HS_FOREIGN;
    if (le(b + 4, 2) != TC_TCP_WIRE_VERSION)
        return TC_TCP_ACK_BAD_VERSION;
    if (len < 64)
        return TC_TCP_HS_MORE;
    unsigned flags = (unsigned)le(b + 6, 2);
    if (le(b + 16, 8) != SELF)
        return TC_TCP_ACK_WRONG_RECEIVER;
    if (((flags & 0x0100) != 0) != keyed)
        return TC_TCP_ACK_WRONG_SECRET;
    if (le(b + 8, 8) >= SELF)
        return TC_TCP_ACK_WRONG_DIRECTION;
    unsigned index = flags & 0xff;
    if ((flags & ~0x81ffu) != 0 || ((flags & 0x8000) && (index < 1 || index >= 16)) ||
        (!(flags & 0x8000) && index + 1 > 16))
        return TC_TCP_ACK_BAD_FLAGS;
    return TC_TCP_ACK_OK;
}

static void acceptor(uint8_t mode, const uint8_t *s, size_t n)
{
    int keyed = (mode & 2) != 0;
    const tc_auth_key_t *key = &g_key[keyed];
    tc_tcp_hello_t h;
    memset(&h, 0xa5, sizeof(h));
    size_t hlen = n < TC_TCP_HELLO_LEN ? n : TC_TCP_HELLO_LEN;
    int r = tc_tcp_hello_parse(s, hlen, SELF, keyed, &h);
    if (r != model_hello(s, hlen, keyed))
        abort();
    if (r != TC_TCP_ACK_OK)
        return;
    unsigned flags = (unsigned)le(s + 6, 2);
    int is_data = (flags & 0x8000) != 0;
    if (h.version != TC_TCP_WIRE_VERSION || h.flags != flags || h.sender != le(s + 8, 8) ||
        h.receiver != SELF || memcmp(h.nonce, s + 24, 32) != 0 || h.token != le(s + 56, 8) ||
        h.keyed != keyed || h.is_data != is_data ||
        h.index != (is_data ? (int)(flags & 0xff) : 0) ||
        h.nsocks != (is_data ? 0 : (int)(flags & 0xff) + 1))
        abort();

    /* the challenge: our nonce, our MAC */
    uint8_t na[TC_AUTH_NONCE_LEN], chal[TC_TCP_CHALLENGE_LEN];
    unsigned char mac[TC_AUTH_MAC_LEN];
    for (int i = 0; i < TC_AUTH_NONCE_LEN; i++)
        na[i] = (uint8_t)(0x30 + i);
    tc_tcp_challenge_make(chal, key, &h, na);
    want_mac(key, TC_AUTH_ACCEPTOR, s, na, mac);
    if (le(chal, 4) != 0x50544354u || le(chal + 4, 2) != TC_TCP_WIRE_VERSION ||
        le(chal + 6, 2) != 0 || le(chal + 8, 8) != SELF || le(chal + 16, 8) != h.sender ||
        memcmp(chal + 24, na, 32) != 0 || memcmp(chal + 56, mac, 32) != 0)
        abort();

    /* the proof */
    uint8_t proof[4200];
    size_t plen = n - hlen;
    memcpy(proof, s + hlen, plen);
    want_mac(key, TC_AUTH_INITIATOR, s, na, mac);
    if (mode & 4) {
        plen = TC_TCP_PROOF_LEN;
        memcpy(proof, mac, sizeof(mac));
        if (mode & 8)
            proof[(mode >> 4) % 32] ^= (uint8_t)(1u << (mode & 7));
    }
    unsigned v = tc_tcp_proof_check(key, &h, na, proof, plen);
    int right = plen == TC_TCP_PROOF_LEN && memcmp(proof, mac, sizeof(mac)) == 0;
    if (v != (right ? TC_TCP_ACK_OK : TC_TCP_ACK_BAD_PROOF))
        abort();
}

static void initiator(uint8_t mode, const uint8_t *s, size_t n)
{
    if (n < 58)
        return;
    const tc_auth_key_t *key = &g_key[(mode & 2) != 0];
    uint8_t hello[TC_TCP_HELLO_LEN], chal[TC_TCP_CHALLENGE_LEN], proof[TC_TCP_PROOF_LEN];
    unsigned char mac[TC_AUTH_MAC_LEN];
    tc_tcp_hello_make(hello, (uint16_t)le(s, 2), le(s + 2, 8), le(s + 10, 8), s + 26,
                      le(s + 18, 8));
    if (le(hello, 4) != 0x50544354u || le(hello + 4, 2) != TC_TCP_WIRE_VERSION ||
        memcmp(hello + 6, s, 2) != 0 || memcmp(hello + 8, s + 2, 16) != 0 ||
        memcmp(hello + 24, s + 26, 32) != 0 || memcmp(hello + 56, s + 18, 8) != 0)
        abort();
    s += 58;
    n -= 58;
    size_t clen = n < sizeof(chal) ? n : sizeof(chal);
    memset(chal, 0, sizeof(chal));
    memcpy(chal, s, clen);
    want_mac(key, TC_AUTH_ACCEPTOR, hello, chal + 24, mac);
    if (mode & 4) {
        memcpy(chal + 56, mac, sizeof(mac));
        if (mode & 8)
            chal[56 + (mode >> 4) % 32] ^= (uint8_t)(1u << (mode & 7));
        clen = sizeof(chal);
    }
    /* how much of the answer is read: a refusal's header, or the whole challenge */
    int accepting = le(chal, 4) == 0x50544354u && le(chal + 4, 2) == TC_TCP_WIRE_VERSION &&
                    le(chal + 6, 2) == 0;
    for (size_t got = 0; got <= clen; got++) {
        size_t need = tc_tcp_challenge_need(chal, got);
        if (need != (got >= TC_TCP_ACK_LEN && accepting ? TC_TCP_CHALLENGE_LEN : TC_TCP_ACK_LEN))
            abort();
    }
    if (clen < sizeof(chal) || !accepting)
        return;
    memset(proof, 0xee, sizeof(proof));
    int ok = tc_tcp_challenge_answer(key, hello, chal, proof);
    if (ok != (memcmp(chal + 56, mac, sizeof(mac)) == 0))
        abort();
    if (!ok)
        return;
    want_mac(key, TC_AUTH_INITIATOR, hello, chal + 24, mac);
    if (memcmp(proof, mac, sizeof(mac)) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 4200)
        return 0;
    init_once();
    if (data[0] & 1)
        initiator(data[0], data + 1, size - 1);
    else
        acceptor(data[0], data + 1, size - 1);
    return 0;
}
