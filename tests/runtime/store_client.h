/*
 * A raw client of the torchrun-environment store for tests: the frames of
 * runtime/src/boot_store.h written out here byte by byte (so the tests check
 * the documented protocol, not the library's encoder), and the join's
 * challenge-response computed with tcomms/transport/auth.h.
 */
#ifndef TCOMMS_TESTS_RUNTIME_STORE_CLIENT_H
#define TCOMMS_TESTS_RUNTIME_STORE_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#define SCT_MAGIC 0x53424354u
#define SCT_VERSION 3
#define SCT_T_HELLO 1
#define SCT_T_PUT 2
#define SCT_T_BYE 5
#define SCT_T_NOTIFY 6
#define SCT_T_PROOF 7
#define SCT_T_REPLY 16
#define SCT_T_EVENT 17
#define SCT_T_CHALLENGE 18
#define SCT_HELLO_LEN 47
#define SCT_CHALLENGE_LEN 65
#define SCT_NONCE_LEN 32
#define SCT_MAC_LEN 32

void tc_sct_le16(uint8_t *p, uint16_t v);
void tc_sct_le32(uint8_t *p, uint32_t v);
uint32_t tc_sct_get_le32(const uint8_t *p);

/* A frame: header (length, type, reserved) then @p len bytes of body; returns its length. */
size_t tc_sct_frame(uint8_t *out, uint8_t type, const void *body, uint32_t len);

/* A HELLO frame (SCT_HELLO_LEN bytes of body) with the given fields. */
size_t tc_sct_hello(uint8_t *out, uint32_t magic, uint16_t version, uint32_t rank, uint32_t world,
                    uint8_t keyed, const uint8_t nonce_i[SCT_NONCE_LEN]);

/* Read one whole frame within 5 s: its type and body (at most @p cap bytes kept); returns the
 * body length, or -1 when the connection closed or nothing came. */
long tc_sct_read_frame(int fd, uint8_t *type_p, uint8_t *body, size_t cap);

/* Given the store's CHALLENGE body, check the store's MAC with @p secret (NULL: no secret, the
 * public key) and write the PROOF frame (8 + SCT_MAC_LEN bytes) into @p proof. Returns 1 when
 * the store's MAC checked out. */
int tc_sct_proof(const char *secret, uint32_t rank, uint32_t world, uint8_t keyed,
                 const uint8_t nonce_i[SCT_NONCE_LEN], const uint8_t *challenge, uint8_t *proof);

/* Join as @p rank of @p world with @p secret (NULL: none): HELLO, CHALLENGE, PROOF, then the
 * REPLY's status (its text in @p text). Returns -1000 when the store did not challenge
 * (its REPLY's status and text are then in *status_p / text), -1001 when the store's MAC did
 * not check out, else 0 with the verdict in *status_p. Uses cmocka asserts. */
int tc_sct_join(int fd, const char *secret, uint32_t rank, uint32_t world, int32_t *status_p,
                char *text, size_t cap);

/* Connect to 127.0.0.1:@p port (asserts), with a 5 s receive timeout. */
int tc_sct_connect(int port);

/* A port for a test's store that nothing listens on now, on any address of either family (CI's
 * TSan run once got a port that a Bazel server held on [::1], free on 127.0.0.1 where the probe
 * looked), chosen below the kernel's ephemeral range (net.ipv4.ip_local_port_range) so that no
 * socket bound to port 0, and no connection, takes it before the test's store binds it. */
int tc_sct_free_port(void);

/* Whether the store could bind @p port now: bound as boot_store_life.c binds it (IPv6 any with
 * IPv4-mapped addresses and SO_REUSEADDR; IPv4 any where IPv6 is off), so that a listener on any
 * address of either family counts. */
int tc_sct_port_free(int port);

#endif
