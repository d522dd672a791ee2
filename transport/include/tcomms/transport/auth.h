/**
 * @file auth.h
 * @brief Authentication of connections: a challenge-response with fresh
 *        nonces from both sides and HMAC-SHA-256 (libsodium) keyed by the
 *        job secret.
 *
 * Every backend that accepts connections (tcp sockets, the shm handshake, the
 * ib handshake) and the runtime's key/value store run the same exchange:
 *
 *   initiator -> acceptor : its nonce Ni (with the ids it claims)
 *   acceptor -> initiator : its nonce Na, MAC(acceptor role, transcript)
 *   initiator -> acceptor : MAC(initiator role, transcript)
 *
 * The transcript binds the purpose of the connection (e.g. "tcp/primary"),
 * both ids, both nonces and purpose-specific bytes (a socket index, a session
 * token). Each side checks the other's MAC in constant time, so a recorded
 * exchange replayed into another connection fails against the new nonce, and
 * the secret itself is never sent. The key is derived from the secret once;
 * neither is ever logged.
 */
#ifndef TCOMMS_TRANSPORT_AUTH_H
#define TCOMMS_TRANSPORT_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "tcomms/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief Bytes of a nonce. */
#define TC_AUTH_NONCE_LEN 32
/** @brief Bytes of a MAC. */
#define TC_AUTH_MAC_LEN 32

/** @brief Which side of the exchange a MAC proves. */
typedef enum tc_auth_role {
    TC_AUTH_INITIATOR = 1, /**< the side that connected */
    TC_AUTH_ACCEPTOR = 2,  /**< the side that accepted */
} tc_auth_role_t;

/** @brief A key derived from the job secret. */
typedef struct tc_auth_key {
    unsigned char k[32]; /**< HMAC-SHA-256 key */
    int keyed;           /**< 0: derived from an empty secret (anyone can compute it) */
} tc_auth_key_t;

/** @brief What one exchange binds; both sides fill it alike. */
typedef struct tc_auth_transcript {
    const char *purpose;                          /**< e.g. "tcp/primary", "store" */
    uint64_t initiator_id;                        /**< the id the initiator claims */
    uint64_t acceptor_id;                         /**< the id it wants to reach */
    unsigned char nonce_i[TC_AUTH_NONCE_LEN];     /**< the initiator's nonce */
    unsigned char nonce_a[TC_AUTH_NONCE_LEN];     /**< the acceptor's nonce */
    const void *extra;                            /**< purpose-specific bytes, or NULL */
    size_t extra_len;                             /**< bytes of @p extra */
} tc_auth_transcript_t;

/**
 * @brief Derive @p key from @p secret (@p len bytes; 0: no secret, and the
 *        key is one anyone can compute: key->keyed is 0).
 * @return TC_OK, or TC_ERR_SYSTEM when libsodium cannot start.
 */
tc_status_t tc_auth_key_init(tc_auth_key_t *key, const void *secret, size_t len);

/** @brief Erase @p key. */
void tc_auth_key_wipe(tc_auth_key_t *key);

/** @brief Fill @p nonce with fresh random bytes (libsodium's randombytes). */
void tc_auth_nonce(unsigned char nonce[TC_AUTH_NONCE_LEN]);

/** @brief The MAC by which @p role proves it holds @p key in exchange @p t. */
void tc_auth_mac(const tc_auth_key_t *key, tc_auth_role_t role, const tc_auth_transcript_t *t,
                 unsigned char mac[TC_AUTH_MAC_LEN]);

/**
 * @brief Whether @p mac is the one @p role would compute for @p t
 *        (compared in constant time). 1: yes, 0: no.
 */
int tc_auth_check(const tc_auth_key_t *key, tc_auth_role_t role, const tc_auth_transcript_t *t,
                  const unsigned char mac[TC_AUTH_MAC_LEN]);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_TRANSPORT_AUTH_H */
