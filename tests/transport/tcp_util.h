/* TCP-specific helpers for the transport tests: contexts and pairs on the TCP backend, and a
 * raw socket that speaks its wire format, spelled out here independently of the backend's
 * sources:
 * - hello: u32 magic "TCTP", u16 version 2, u16 flags (0x0100: the initiator has a secret),
 *   u64 sender, u64 receiver, 32-byte nonce Ni, u64 token (64 bytes);
 * - challenge: u32 magic, u16 version 2, u16 result 0, u64 acceptor, u64 initiator, 32-byte
 *   nonce Na, 32-byte MAC of the acceptor (88 bytes); a refusal is an ack instead;
 * - proof: the 32-byte MAC of the initiator. Both MACs (tc_auth_mac) over purpose
 *   "tcp/primary" or "tcp/data" (flag 0x8000), the ids, Ni, Na and the 12 bytes u16 version,
 *   u16 flags, u64 token of the hello, with the key of the secret (none: the public key);
 * - ack: u32 magic, u16 version 2, u16 result, u64 sender, u64 receiver;
 * - message header: u64 tag, u64 length; 32-byte headers (large messages, chunks, one-sided):
 *   u64, u8 kind << 56 | length, u64, u64. All little-endian. */
#ifndef TCOMMS_TESTS_TRANSPORT_TCP_UTIL_H
#define TCOMMS_TESTS_TRANSPORT_TCP_UTIL_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "tcomms/transport/tcp.h"
#include "tcomms/transport/transport.h"
#include "tp_util.h"

#define TCP_MAGIC 0x50544354u /* "TCTP" */
#define TCP_VERSION 3 /* since counted one-sided acks */
#define TCP_HELLO_LEN 64
#define TCP_CHALLENGE_LEN 88
#define TCP_PROOF_LEN 32
#define TCP_F_KEYED 0x0100u

/* A TCP context with id @p id and @p secret (NULL: none); asserts success. */
tc_tp_ctx_t *tc_tcpt_ctx_new(uint64_t id, const char *secret);
/* Two TCP contexts, ids 0 and 1, with the same @p secret, connected both ways. */
void tc_tcpt_pair_open(tp_pair_t *pair, const char *secret);
/* An endpoint of @p ctx to id @p peer at @p ctx's own address: a raw socket plays the peer. */
tc_tp_ep_t *tc_tcpt_loop_ep(tc_tp_ctx_t *ctx, uint64_t peer);

/* Store @p v in @p n bytes, little-endian. */
void tc_tcpt_le(unsigned char *p, uint64_t v, int n);
/* A hello with a fresh random nonce; returns its length (TCP_HELLO_LEN). */
size_t tc_tcpt_make_hello(unsigned char h[64], uint32_t magic, uint16_t flags, uint64_t sender,
                          uint64_t receiver, uint64_t token);
/* The MAC of @p role (1 initiator, 2 acceptor) for the exchange of @p hello and challenge
 * @p chal, with the key of @p secret (NULL: none), purpose @p purpose (NULL: from the hello's
 * flags) and acceptor id @p acceptor (the hello's receiver unless forged). */
void tc_tcpt_mac(const char *secret, int role, const char *purpose, uint64_t acceptor,
                 const unsigned char hello[64], const unsigned char chal[88],
                 unsigned char mac[32]);
/* Read the answer to a hello: 0 and the whole challenge in @p chal, or the refusal's result
 * (its ack checked: from @p acceptor to @p initiator). */
unsigned tc_tcpt_read_challenge(tc_tp_ctx_t *ctx, int fd, unsigned char chal[88],
                                uint64_t acceptor, uint64_t initiator);
/* A 32-byte header: @p w0, @p kind << 56 | @p len, @p w2, @p w3. */
void tc_tcpt_make_hdr32(unsigned char h[32], uint64_t w0, int kind, uint64_t len, uint64_t w2,
                        uint64_t w3);

/* The IPv4 address @p ctx listens on (from its packed address). */
struct sockaddr_in tc_tcpt_listen_addr(tc_tp_ctx_t *ctx);
/* A raw socket connected to @p ctx's listening address. */
int tc_tcpt_raw_connect(tc_tp_ctx_t *ctx);
void tc_tcpt_raw_send(int fd, const void *buf, size_t len);
/* Read up to @p want bytes from the raw socket while progressing @p ctx, until they arrived,
 * EOF or 5 s passed; returns the bytes read, and *eof_p (when not NULL) says if EOF was seen. */
size_t tc_tcpt_raw_read(tc_tp_ctx_t *ctx, int fd, unsigned char *buf, size_t want, int *eof_p);
/* Assert that the next bytes on @p fd are an ack with @p result from @p sender to @p receiver. */
void tc_tcpt_expect_ack(tc_tp_ctx_t *ctx, int fd, unsigned result, uint64_t sender,
                        uint64_t receiver);
/* Assert that the next bytes on @p fd are a small message: tag @p tag, @p len (at most 64)
 * bytes of @p data. */
void tc_tcpt_expect_msg(tc_tp_ctx_t *ctx, int fd, uint64_t tag, const void *data, size_t len);
/* Assert that @p fd reaches EOF with no more bytes. */
void tc_tcpt_expect_eof(tc_tp_ctx_t *ctx, int fd);
/* Connect and run the exchange without a secret: hello, challenge (its MAC checked), proof;
 * expect @p result (from the refusal of the hello or the ack of the proof); after a refusal
 * (result != 0) also EOF, then close and return -1; else return the fd. */
int tc_tcpt_raw_hello(tc_tp_ctx_t *ctx, uint16_t flags, uint64_t sender, uint64_t receiver,
                      uint64_t token, unsigned result);
/* The same with @p secret (NULL: none; else the hello carries TCP_F_KEYED). */
int tc_tcpt_raw_hello_secret(tc_tp_ctx_t *ctx, const char *secret, uint16_t flags,
                             uint64_t sender, uint64_t receiver, uint64_t token, unsigned result);

#endif
