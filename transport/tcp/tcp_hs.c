/* The bytes of the tcp handshake (wire format in tcp_internal.h): encoding and checking of the
 * hello, the challenge, the proof and the ack. Pure functions of bytes, keys and ids (no
 * sockets, no context), so that they can be fuzzed and tested alone. */
#include <string.h>

#include "tcp_internal.h"

static void tc_tcp_hs_transcript(tc_auth_transcript_t *t, unsigned char extra[TC_TCP_HS_EXTRA_LEN],
                                 const tc_tcp_hello_t *h, const unsigned char na[TC_AUTH_NONCE_LEN])
{
    tc_tcp_put_u16(extra, h->version);
    tc_tcp_put_u16(extra + 2, h->flags);
    tc_tcp_put_u64(extra + 4, h->token);
    t->purpose = h->is_data ? "tcp/data" : "tcp/primary";
    t->initiator_id = h->sender;
    t->acceptor_id = h->receiver;
    memcpy(t->nonce_i, h->nonce, TC_AUTH_NONCE_LEN);
    memcpy(t->nonce_a, na, TC_AUTH_NONCE_LEN);
    t->extra = extra;
    t->extra_len = TC_TCP_HS_EXTRA_LEN;
}

int tc_tcp_hello_parse(const unsigned char *buf, size_t len, uint64_t self_id, int self_keyed,
                       tc_tcp_hello_t *h)
{
    if (len < 8)
        return TC_TCP_HS_MORE;
    if (tc_tcp_get_u32(buf) != TC_TCP_MAGIC)
        return TC_TCP_HS_FOREIGN;
    /* another version may have another length: refuse it from the header alone */
    if (tc_tcp_get_u16(buf + 4) != TC_TCP_WIRE_VERSION)
        return TC_TCP_ACK_BAD_VERSION;
    if (len < TC_TCP_HELLO_LEN)
        return TC_TCP_HS_MORE;

    memset(h, 0, sizeof(*h));
    h->version = tc_tcp_get_u16(buf + 4);
    h->flags = tc_tcp_get_u16(buf + 6);
    h->sender = tc_tcp_get_u64(buf + 8);
    h->receiver = tc_tcp_get_u64(buf + 16);
    memcpy(h->nonce, buf + 24, TC_AUTH_NONCE_LEN);
    h->token = tc_tcp_get_u64(buf + 56);
    h->keyed = (h->flags & TC_TCP_HELLO_F_KEYED) != 0;
    h->is_data = (h->flags & TC_TCP_HELLO_F_DATA) != 0;
    h->index = h->is_data ? (int)(h->flags & TC_TCP_HELLO_F_INDEX) : 0;
    h->nsocks = h->is_data ? 0 : (int)(h->flags & TC_TCP_HELLO_F_INDEX) + 1;

    if (h->receiver != self_id)
        return TC_TCP_ACK_WRONG_RECEIVER;
    if (h->keyed != (self_keyed != 0))
        return TC_TCP_ACK_WRONG_SECRET; /* one side has a secret, the other none */
    if (h->sender >= self_id)
        return TC_TCP_ACK_WRONG_DIRECTION;
    if ((h->flags & ~(TC_TCP_HELLO_F_DATA | TC_TCP_HELLO_F_KEYED | TC_TCP_HELLO_F_INDEX)) != 0 ||
        (h->is_data && (h->index < 1 || h->index >= TC_TCP_NSOCKS_MAX)) ||
        (!h->is_data && h->nsocks > TC_TCP_NSOCKS_MAX))
        return TC_TCP_ACK_BAD_FLAGS;
    return TC_TCP_ACK_OK;
}

void tc_tcp_hello_make(unsigned char out[TC_TCP_HELLO_LEN], uint16_t flags, uint64_t sender,
                       uint64_t receiver, const unsigned char nonce[TC_AUTH_NONCE_LEN],
                       uint64_t token)
{
    tc_tcp_put_u32(out, TC_TCP_MAGIC);
    tc_tcp_put_u16(out + 4, TC_TCP_WIRE_VERSION);
    tc_tcp_put_u16(out + 6, flags);
    tc_tcp_put_u64(out + 8, sender);
    tc_tcp_put_u64(out + 16, receiver);
    memcpy(out + 24, nonce, TC_AUTH_NONCE_LEN);
    tc_tcp_put_u64(out + 56, token);
}

void tc_tcp_ack_make(unsigned char out[TC_TCP_ACK_LEN], unsigned result, uint64_t sender,
                     uint64_t receiver)
{
    tc_tcp_put_u32(out, TC_TCP_MAGIC);
    tc_tcp_put_u16(out + 4, TC_TCP_WIRE_VERSION);
    tc_tcp_put_u16(out + 6, (uint16_t)result);
    tc_tcp_put_u64(out + 8, sender);
    tc_tcp_put_u64(out + 16, receiver);
}

void tc_tcp_challenge_make(unsigned char out[TC_TCP_CHALLENGE_LEN], const tc_auth_key_t *key,
                           const tc_tcp_hello_t *h, const unsigned char na[TC_AUTH_NONCE_LEN])
{
    tc_auth_transcript_t t;
    unsigned char extra[TC_TCP_HS_EXTRA_LEN];
    tc_tcp_ack_make(out, TC_TCP_ACK_OK, h->receiver, h->sender);
    memcpy(out + TC_TCP_ACK_LEN, na, TC_AUTH_NONCE_LEN);
    tc_tcp_hs_transcript(&t, extra, h, na);
    tc_auth_mac(key, TC_AUTH_ACCEPTOR, &t, out + TC_TCP_ACK_LEN + TC_AUTH_NONCE_LEN);
}

unsigned tc_tcp_proof_check(const tc_auth_key_t *key, const tc_tcp_hello_t *h,
                            const unsigned char na[TC_AUTH_NONCE_LEN], const unsigned char *proof,
                            size_t len)
{
    tc_auth_transcript_t t;
    unsigned char extra[TC_TCP_HS_EXTRA_LEN];
    if (len != TC_TCP_PROOF_LEN)
        return TC_TCP_ACK_BAD_PROOF;
    tc_tcp_hs_transcript(&t, extra, h, na);
    return tc_auth_check(key, TC_AUTH_INITIATOR, &t, proof) ? TC_TCP_ACK_OK : TC_TCP_ACK_BAD_PROOF;
}

int tc_tcp_challenge_answer(const tc_auth_key_t *key, const unsigned char hello[TC_TCP_HELLO_LEN],
                            const unsigned char *chal, unsigned char proof[TC_TCP_PROOF_LEN])
{
    tc_tcp_hello_t h;
    tc_auth_transcript_t t;
    unsigned char extra[TC_TCP_HS_EXTRA_LEN];
    const unsigned char *na = chal + TC_TCP_ACK_LEN;

    /* our own hello: parsed as its acceptor would (receiver and direction are ours to know) */
    memset(&h, 0, sizeof(h));
    h.version = tc_tcp_get_u16(hello + 4);
    h.flags = tc_tcp_get_u16(hello + 6);
    h.sender = tc_tcp_get_u64(hello + 8);
    h.receiver = tc_tcp_get_u64(hello + 16);
    memcpy(h.nonce, hello + 24, TC_AUTH_NONCE_LEN);
    h.token = tc_tcp_get_u64(hello + 56);
    h.is_data = (h.flags & TC_TCP_HELLO_F_DATA) != 0;
    tc_tcp_hs_transcript(&t, extra, &h, na);
    if (!tc_auth_check(key, TC_AUTH_ACCEPTOR, &t, na + TC_AUTH_NONCE_LEN))
        return 0;
    tc_auth_mac(key, TC_AUTH_INITIATOR, &t, proof);
    return 1;
}

size_t tc_tcp_challenge_need(const unsigned char *a, size_t got)
{
    if (got < TC_TCP_ACK_LEN || tc_tcp_get_u32(a) != TC_TCP_MAGIC ||
        tc_tcp_get_u16(a + 4) != TC_TCP_WIRE_VERSION || tc_tcp_get_u16(a + 6) != TC_TCP_ACK_OK)
        return TC_TCP_ACK_LEN;
    return TC_TCP_CHALLENGE_LEN;
}
