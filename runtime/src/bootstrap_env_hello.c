/* The torchrun-environment bootstrap's join (see bootstrap_env.c): the hello
 * to the store, and the answer to its challenge that proves TC_JOB_SECRET. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "boot_store.h"
#include "bootstrap_env_impl.h"
#include "bootstrap_impl.h"
#include "tcomms/base/config.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"
#include "tcomms/base/wire.h"

/* The store's CHALLENGE (in @p reply): check its MAC, then send this rank's PROOF. The
 * transcript is kept in @p t (filled here). */
static tc_status_t env_answer_challenge(tc_boot_env_t *e, const env_config_t *cfg,
                                        const tc_auth_key_t *key, const uint8_t *nonce_i,
                                        const env_reply_t *reply, uint64_t deadline_ns)
{
    uint8_t keyed = key->keyed ? 1 : 0, store_keyed = reply->data[0];
    const uint8_t *nonce_a = reply->data + 1, *mac_a = reply->data + 1 + TC_BS_NONCE_LEN;
    if (store_keyed > 1) {
        e->broken = true;
        return tc_error_set(TC_ERR_PROTOCOL,
                            "bootstrap(env): rank %d: the store at %s sent a CHALLENGE with "
                            "keyed=%u",
                            cfg->rank, e->master, store_keyed);
    }
    /* The proof is sent only to a store that has proved it holds this rank's secret. */
    e->broken = true; /* until the PROOF is on its way */
    if (store_keyed && !keyed)
        return tc_error_set(TC_ERR_BOOTSTRAP,
                            "bootstrap(env): rank %d has no TC_JOB_SECRET but the store at %s "
                            "(rank 0) has one: set the same TC_JOB_SECRET for every rank",
                            cfg->rank, e->master);
    if (!store_keyed && keyed)
        return tc_error_set(TC_ERR_BOOTSTRAP,
                            "bootstrap(env): rank %d has a TC_JOB_SECRET but the store at %s "
                            "(rank 0) has none: set the same TC_JOB_SECRET for every rank",
                            cfg->rank, e->master);
    tc_auth_transcript_t t;
    uint8_t extra[TC_BS_AUTH_EXTRA_LEN];
    tc_boot_store_transcript(&t, extra, (uint32_t)cfg->rank, (uint32_t)cfg->world, keyed,
                             store_keyed, nonce_i, nonce_a);
    if (!tc_auth_check(key, TC_AUTH_ACCEPTOR, &t, mac_a))
        return tc_error_set(TC_ERR_BOOTSTRAP,
                            "bootstrap(env): rank %d: the store at %s does not prove it holds "
                            "this rank's TC_JOB_SECRET: its proof does not match (another job's "
                            "store on this port, or TC_JOB_SECRET differs between ranks)",
                            cfg->rank, e->master);
    e->broken = false;
    uint8_t frame[TC_BS_HDR_LEN + TC_BS_PROOF_LEN];
    tc_boot_store_hdr_write(frame, TC_BS_PROOF, TC_BS_PROOF_LEN);
    tc_auth_mac(key, TC_AUTH_INITIATOR, &t, frame + TC_BS_HDR_LEN);
    return tc_benv_send(e, frame, sizeof(frame), deadline_ns, "proof");
}

/* Join the store: HELLO, the store's CHALLENGE, PROOF, the verdict (boot_store.h). */
tc_status_t tc_benv_hello(tc_boot_env_t *e, const env_config_t *cfg, const tc_auth_key_t *key,
                          uint64_t deadline_ns)
{
    uint8_t buf[TC_BS_HDR_LEN + TC_BS_HELLO_LEN], nonce_i[TC_BS_NONCE_LEN];
    tc_wire_writer_t w;
    tc_auth_nonce(nonce_i);
    tc_boot_store_hdr_write(buf, TC_BS_HELLO, TC_BS_HELLO_LEN);
    tc_wire_writer_init(&w, buf + TC_BS_HDR_LEN, TC_BS_HELLO_LEN);
    (void)tc_wire_put_u32(&w, TC_BS_MAGIC);
    (void)tc_wire_put_u16(&w, TC_BS_VERSION);
    (void)tc_wire_put_u32(&w, (uint32_t)cfg->rank);
    (void)tc_wire_put_u32(&w, (uint32_t)cfg->world);
    (void)tc_wire_put_u8(&w, key->keyed ? 1 : 0);
    (void)tc_wire_put_bytes(&w, nonce_i, TC_BS_NONCE_LEN);
    env_reply_t reply = {0};
    e->lost = false;
    tc_status_t rc = tc_benv_send(e, buf, sizeof(buf), deadline_ns, "hello");
    if (rc == TC_OK)
        rc = tc_benv_wait_reply(e, 0, deadline_ns, "hello", &reply);
    if (rc == TC_OK && !reply.challenge && reply.status == TC_OK) {
        /* Only a refusal may come without a challenge: a store that lets this rank in without
         * proving it holds the secret is not this job's (it would get the rank's keys). */
        free(reply.body);
        e->broken = true;
        return tc_error_set(TC_ERR_PROTOCOL,
                            "bootstrap(env): rank %d: the store at %s accepted the hello without "
                            "a challenge: it does not prove it holds this rank's TC_JOB_SECRET "
                            "(not a tcomms store of this version, or not this job's)",
                            cfg->rank, e->master);
    }
    if (rc == TC_OK && reply.challenge) {
        rc = env_answer_challenge(e, cfg, key, nonce_i, &reply, deadline_ns);
        free(reply.body);
        if (rc == TC_OK)
            rc = tc_benv_wait_reply(e, 0, deadline_ns, "proof", &reply);
        if (rc == TC_OK && reply.challenge) {
            free(reply.body);
            e->broken = true;
            return tc_error_set(TC_ERR_PROTOCOL,
                                "bootstrap(env): rank %d: the store at %s sent a second "
                                "CHALLENGE",
                                cfg->rank, e->master);
        }
    }
    if (rc == TC_ERR_BOOTSTRAP && e->lost) {
        /* The connection ended before the verdict: most likely the store of this job's
         * previous bootstrap closing while this hello sat in its backlog (rank 0 serves the
         * new one on the same port next). The caller retries until its deadline. */
        char why[TC_BS_MAX_TEXT + 128];
        snprintf(why, sizeof(why), "%s", tc_last_error());
        return tc_error_set(TC_ERR_INVALID_STATE, "%s (before the store's verdict)", why);
    }
    if (rc != TC_OK)
        return rc;
    /* TC_ERR_INVALID_STATE: a lingering store of an earlier bootstrap; the caller retries. The
     * text comes from a store that has not proved anything yet: only its printable bytes. */
    if (reply.status != TC_OK) {
        char text[TC_BS_MAX_TEXT + 1];
        size_t n = reply.len < TC_BS_MAX_TEXT ? reply.len : TC_BS_MAX_TEXT;
        for (size_t i = 0; i < n; i++) {
            uint8_t b = reply.data[i];
            text[i] = '?';
            if (b >= 0x20 && b < 0x7f)
                text[i] = (char)b;
        }
        text[n] = '\0';
        rc = tc_error_set(
            reply.status == TC_ERR_INVALID_STATE ? TC_ERR_INVALID_STATE : TC_ERR_BOOTSTRAP,
            "bootstrap(env): the store at %s refused rank %d: %s", e->master, cfg->rank, text);
    }
    free(reply.body);
    return rc;
}
