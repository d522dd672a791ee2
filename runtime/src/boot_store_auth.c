/*
 * Joining the store: the challenge-response of boot_store.h, the store's side.
 *
 *   HELLO      the client's claim (rank, world size, keyed) and its nonce Ni
 *   CHALLENGE  the store's nonce Na and its MAC over the transcript (acceptor role)
 *   PROOF      the client's MAC (initiator role), sent once the store's checked out
 *   REPLY      request 0: the rank is taken, or why not; a refused client is closed
 *
 * Nothing the client claims is acted on before its PROOF checks out: a client
 * without the job's secret cannot take a rank, nor learn whether a rank has
 * joined. Refusals are logged at most once a second (with how many since the
 * last line), so a flood of clients cannot flood the log.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "boot_store_impl.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"

#define BS_REFUSED_LOG_MS 1000

_Static_assert(TC_BS_NONCE_LEN == TC_AUTH_NONCE_LEN, "store nonces are auth nonces");
_Static_assert(TC_BS_MAC_LEN == TC_AUTH_MAC_LEN, "store MACs are auth MACs");

void tc_boot_store_transcript(tc_auth_transcript_t *t, uint8_t extra[TC_BS_AUTH_EXTRA_LEN],
                              uint32_t rank, uint32_t world, uint8_t client_keyed,
                              uint8_t store_keyed, const uint8_t nonce_i[TC_BS_NONCE_LEN],
                              const uint8_t nonce_a[TC_BS_NONCE_LEN])
{
    tc_wire_writer_t w;
    tc_wire_writer_init(&w, extra, TC_BS_AUTH_EXTRA_LEN);
    /* Cannot fail: the fields fill the buffer exactly. */
    (void)tc_wire_put_u32(&w, world);
    (void)tc_wire_put_u8(&w, client_keyed);
    (void)tc_wire_put_u8(&w, store_keyed);
    (void)tc_wire_put_u16(&w, TC_BS_VERSION);
    memset(t, 0, sizeof(*t));
    t->purpose = "store";
    t->initiator_id = rank;
    t->acceptor_id = TC_BS_STORE_ID;
    memcpy(t->nonce_i, nonce_i, TC_BS_NONCE_LEN);
    memcpy(t->nonce_a, nonce_a, TC_BS_NONCE_LEN);
    t->extra = extra;
    t->extra_len = TC_BS_AUTH_EXTRA_LEN;
}

void tc_bs_refused(tc_boot_store_t *st, const char *who, const char *fmt, ...)
{
    uint64_t unlogged;
    if (!tc_tp_loglimit_take(&st->refused_log, BS_REFUSED_LOG_MS, &unlogged))
        return;
    char text[TC_BS_MAX_TEXT], more[96] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (unlogged > 0)
        snprintf(more, sizeof(more), " (and %llu more refused since the last report)",
                 (unsigned long long)unlogged);
    tc_log_warn(TC_SUBSYS_RUNTIME, "bootstrap store: refused %s: %s%s", who, text, more);
}

static void bs_reject(tc_boot_store_t *st, bs_conn_t *c, tc_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Tell a client why it was refused (logged, rate-limited), then close once that is sent. A
 * refusal with TC_ERR_INVALID_STATE, which the client retries, is the normal course of a job
 * that re-creates its world (a rank knocking at the previous bootstrap's store): logged at info
 * level only; the client's error names it should the retries run out. */
static void bs_reject(tc_boot_store_t *st, bs_conn_t *c, tc_status_t status, const char *fmt, ...)
{
    char text[TC_BS_MAX_TEXT];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (status == TC_ERR_INVALID_STATE)
        tc_log_info(TC_SUBSYS_RUNTIME, "bootstrap store: refused %s for now: %s", c->name, text);
    else
        tc_bs_refused(st, c->name, "%s", text);
    tc_bs_reply(st, c, 0, status, text, (uint32_t)strlen(text));
    c->auth = BS_AUTH_DONE; /* closing: no more frames are read */
    c->closing = true;
    c->deadline_ns = tc_time_ns() + BS_CLOSE_FLUSH_NS;
}

tc_status_t tc_bs_on_hello(tc_boot_store_t *st, bs_conn_t *c, tc_wire_reader_t *r)
{
    uint32_t magic;
    uint16_t version;
    const void *nonce;
    if (tc_wire_get_u32(r, &magic) != TC_OK || tc_wire_get_u16(r, &version) != TC_OK)
        return tc_error_set(TC_ERR_PROTOCOL, "HELLO body of %zu bytes is too short", r->len);
    if (magic != TC_BS_MAGIC)
        return tc_error_set(TC_ERR_PROTOCOL,
                            "HELLO with magic 0x%08x, expected 0x%08x: not a "
                            "tcomms client",
                            magic, TC_BS_MAGIC);
    if (version != TC_BS_VERSION) {
        bs_reject(st, c, TC_ERR_BOOTSTRAP,
                  "protocol version %u, the store speaks %u (mixed tcomms versions?)", version,
                  TC_BS_VERSION);
        return TC_OK;
    }
    if (tc_wire_get_u32(r, &c->claimed_rank) != TC_OK ||
        tc_wire_get_u32(r, &c->claimed_world) != TC_OK ||
        tc_wire_get_u8(r, &c->client_keyed) != TC_OK || c->client_keyed > 1 ||
        tc_wire_get_view(r, TC_BS_NONCE_LEN, &nonce) != TC_OK || tc_wire_reader_left(r) != 0)
        return tc_error_set(TC_ERR_PROTOCOL,
                            "malformed HELLO body of %zu bytes (expected %d, keyed 0 or 1)", r->len,
                            TC_BS_HELLO_LEN);
    memcpy(c->nonce_i, nonce, TC_BS_NONCE_LEN);
    tc_auth_nonce(c->nonce_a);

    tc_auth_transcript_t t;
    uint8_t extra[TC_BS_AUTH_EXTRA_LEN];
    uint8_t store_keyed = st->key.keyed ? 1 : 0;
    tc_boot_store_transcript(&t, extra, c->claimed_rank, c->claimed_world, c->client_keyed,
                             store_keyed, c->nonce_i, c->nonce_a);
    uint8_t *p = tc_bs_out_reserve(st, c, TC_BS_HDR_LEN + TC_BS_CHALLENGE_LEN);
    if (!p)
        return TC_OK; /* dropped, and logged */
    tc_boot_store_hdr_write(p, TC_BS_CHALLENGE, TC_BS_CHALLENGE_LEN);
    p[TC_BS_HDR_LEN] = store_keyed;
    memcpy(p + TC_BS_HDR_LEN + 1, c->nonce_a, TC_BS_NONCE_LEN);
    tc_auth_mac(&st->key, TC_AUTH_ACCEPTOR, &t, p + TC_BS_HDR_LEN + 1 + TC_BS_NONCE_LEN);
    c->out_len += TC_BS_HDR_LEN + TC_BS_CHALLENGE_LEN;
    c->auth = BS_AUTH_PROOF;
    tc_bs_flush(st, c);
    return TC_OK;
}

/* The client proved it holds the secret: now its claim counts. */
static void bs_join(tc_boot_store_t *st, bs_conn_t *c)
{
    uint32_t rank = c->claimed_rank, world = c->claimed_world;
    if (world != (uint32_t)st->world) {
        bs_reject(st, c, TC_ERR_BOOTSTRAP,
                  "rank %u has WORLD_SIZE=%u but the store (rank 0) has WORLD_SIZE=%d", rank, world,
                  st->world);
    } else if (rank >= world) {
        bs_reject(st, c, TC_ERR_BOOTSTRAP, "RANK=%u is not below WORLD_SIZE=%u", rank, world);
    } else if (st->rank_state[rank] == BS_RANK_JOINED) {
        bs_reject(st, c, TC_ERR_BOOTSTRAP,
                  "rank %u is already connected to the store (duplicate RANK?)", rank);
    } else if (st->rank_state[rank] == BS_RANK_LEFT) {
        /* Most likely the store of this job's previous bootstrap, still lingering: the
         * distinct status tells the client to try again until the next store is up. */
        bs_reject(st, c, TC_ERR_INVALID_STATE,
                  "rank %u already joined and left this store "
                  "(the store of an earlier bootstrap?)",
                  rank);
    } else {
        c->rank = (int)rank;
        c->auth = BS_AUTH_DONE;
        c->deadline_ns = UINT64_MAX;
        st->rank_state[rank] = BS_RANK_JOINED;
        tc_log_debug(TC_SUBSYS_RUNTIME, "bootstrap store: rank %u joined from %s", rank, c->name);
        tc_bs_reply(st, c, 0, TC_OK, NULL, 0);
    }
}

tc_status_t tc_bs_on_proof(tc_boot_store_t *st, bs_conn_t *c, tc_wire_reader_t *r)
{
    const void *mac;
    if (c->auth != BS_AUTH_PROOF)
        return tc_error_set(TC_ERR_PROTOCOL, "PROOF before the HELLO");
    if (tc_wire_get_view(r, TC_BS_MAC_LEN, &mac) != TC_OK || tc_wire_reader_left(r) != 0)
        return tc_error_set(TC_ERR_PROTOCOL, "PROOF body of %zu bytes, expected %d", r->len,
                            TC_BS_PROOF_LEN);
    tc_auth_transcript_t t;
    uint8_t extra[TC_BS_AUTH_EXTRA_LEN];
    uint8_t store_keyed = st->key.keyed ? 1 : 0;
    tc_boot_store_transcript(&t, extra, c->claimed_rank, c->claimed_world, c->client_keyed,
                             store_keyed, c->nonce_i, c->nonce_a);
    if (tc_auth_check(&st->key, TC_AUTH_INITIATOR, &t, mac)) {
        bs_join(st, c);
        return TC_OK;
    }
    uint32_t rank = c->claimed_rank;
    if (!c->client_keyed && store_keyed)
        bs_reject(st, c, TC_ERR_BOOTSTRAP,
                  "rank %u has no TC_JOB_SECRET but the store has one, and its proof does not "
                  "match the store's secret",
                  rank);
    else if (c->client_keyed && !store_keyed)
        bs_reject(st, c, TC_ERR_BOOTSTRAP,
                  "rank %u has a TC_JOB_SECRET but the store (rank 0) has none, and its proof "
                  "does not match",
                  rank);
    else
        bs_reject(st, c, TC_ERR_BOOTSTRAP,
                  "rank %u's proof does not match the store's secret (another job, or "
                  "TC_JOB_SECRET differs)",
                  rank);
    return TC_OK;
}
