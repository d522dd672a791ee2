/* Fuzz joining the bootstrap store (runtime/src/boot_store.h): the store's side
 * (boot_store.c, boot_store_auth.c) fed arbitrary client frames, and the client's side
 * (bootstrap_env.c) fed arbitrary store frames. Both are the library's own code reading one end
 * of a socketpair; the harness plays the other side.
 *
 * Input: s[0] bit 0: 0 the store's side, 1 the client's; bit 1: the side under test has the
 * fixed test secret (else the public key); then
 *
 * store (a store of WORLD = 3 ranks, two connections): records, each a control byte c then
 *   c bits 1-2 = 0: u8 length, then that many raw bytes;
 *              = 1: a HELLO frame: u8 rank, u8 world (u32 fields), keyed = c bit 3, a nonce of
 *                   the connection's;
 *              = 2: a PROOF frame with the right MAC for the connection's first HELLO and the
 *                   store's CHALLENGE (c bit 3: one bit of it flipped);
 *              = 3: the harness closes its end;
 *   c bit 0: the connection. After each record the store reads what is there (tc_bs_read) and
 *   the harness reads every answer.
 * client (rank s[2] % world of world s[1] % 8 + 1): records written to the client's socket
 *   before it joins (then the harness's end is shut for writing):
 *   c bits 0-1 = 0: u8 length, then that many raw bytes;
 *              = 1: a CHALLENGE: store keyed = c bit 2, Na the next 32 bytes, the right MAC
 *                   (c bit 3: one bit of it flipped);
 *              = 2: a REPLY: u8 request, u8 status index, u8 length, that many bytes of text;
 *              = 3: an EVENT: u8 kind, u8 rank, u8 comm id, u8 from.
 *   After joining the client puts, fences, gets and polls events on what is left of it.
 *   The client's nonces come from a fixed randombytes implementation, so the harness knows Ni.
 *
 * Properties, besides ASan's (and no wait: every input runs to its end at once):
 * - store: a connection has a rank only after it sent a PROOF equal to the initiator's MAC
 *   computed here with auth.h for its first HELLO and the store's CHALLENGE, and then the rank
 *   and world of that HELLO; a REPLY to the hello (request 0) says OK only then; the store's
 *   CHALLENGE carries the acceptor's MAC so computed and its keyed flag; ranks marked joined
 *   are exactly the connections holding them; a connection's unsent output stays bounded;
 * - client: it sends its HELLO (its rank, world, keyed flag and Ni); it sends a PROOF only
 *   after a CHALLENGE whose MAC is the acceptor's so computed, and that PROOF is the initiator's
 *   MAC; it joins only after such a CHALLENGE and its PROOF, and only when no EVENT came
 *   before the store's verdict (the store sends events to ranks it let in). */
#include <fcntl.h>
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/src/boot_store.h"
#include "runtime/src/boot_store_impl.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"
#include "tcomms/runtime/bootstrap.h"
#include "tcomms/transport/auth.h"

#define SECRET "store-auth-fuzz-secret"
#define WORLD 3
#define NCONN 2
#define STREAM_MAX 8192

static tc_auth_key_t g_key[2]; /* [0]: the public key, [1]: keyed */

/* libsodium's randomness, fixed: every nonce the client draws is 32 bytes of 0x5c. */
static const char *fixed_name(void)
{
    return "tcomms-fuzz-fixed";
}
static uint32_t fixed_random(void)
{
    return 0x5c5c5c5cu;
}
static void fixed_buf(void *const buf, const size_t size)
{
    memset(buf, 0x5c, size);
}
static randombytes_implementation g_fixed = {
    .implementation_name = fixed_name, .random = fixed_random, .buf = fixed_buf};

static int g_verbose; /* STORE_AUTH_FUZZ_VERBOSE set: one line per input on stderr */

static void init_once(void)
{
    static int done;
    if (done)
        return;
    if (randombytes_set_implementation(&g_fixed) != 0)
        abort();
    g_verbose = getenv("STORE_AUTH_FUZZ_VERBOSE") != NULL;
    tc_log_configure("none");
    if (tc_auth_key_init(&g_key[0], NULL, 0) != TC_OK ||
        tc_auth_key_init(&g_key[1], SECRET, strlen(SECRET)) != TC_OK)
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

static size_t put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
    return (size_t)n;
}

static size_t frame(uint8_t *out, uint8_t type, const uint8_t *body, uint32_t len)
{
    put_le(out, len, 4);
    out[4] = type;
    out[5] = out[6] = out[7] = 0;
    if (len)
        memcpy(out + 8, body, len);
    return 8 + (size_t)len;
}

/* The MAC of @p role for a join, laid out from boot_store.h (not from the library). */
static void join_mac(const tc_auth_key_t *key, tc_auth_role_t role, uint32_t rank, uint32_t world,
                     uint8_t client_keyed, uint8_t store_keyed, const uint8_t *ni,
                     const uint8_t *na, unsigned char *mac)
{
    tc_auth_transcript_t t;
    uint8_t extra[8];
    put_le(extra, world, 4);
    extra[4] = client_keyed;
    extra[5] = store_keyed;
    put_le(extra + 6, 3, 2);
    memset(&t, 0, sizeof(t));
    t.purpose = "store";
    t.initiator_id = rank;
    t.acceptor_id = UINT64_MAX;
    memcpy(t.nonce_i, ni, 32);
    memcpy(t.nonce_a, na, 32);
    t.extra = extra;
    t.extra_len = sizeof(extra);
    tc_auth_mac(key, role, &t, mac);
}

/* Frames of a byte stream, from its start, up to the first bad header or cut frame. */
typedef struct {
    const uint8_t *b;
    size_t len, off;
} frames_t;

static int next_frame(frames_t *f, uint8_t *type, const uint8_t **body, uint32_t *blen)
{
    if (f->len - f->off < 8)
        return 0;
    const uint8_t *h = f->b + f->off;
    uint32_t n = (uint32_t)le(h, 4);
    if (h[5] || h[6] || h[7] || f->len - f->off - 8 < n)
        return 0;
    *type = h[4];
    *body = h + 8;
    *blen = n;
    f->off += 8 + (size_t)n;
    return 1;
}

/* ---- the store's side ---- */

typedef struct {
    int fd;        /* the harness's end */
    bs_conn_t *c;  /* the store's connection */
    uint8_t sent[STREAM_MAX], got[1 << 16];
    size_t nsent, ngot;
    int closed;
} sconn_t;

static int hello_fields(const uint8_t *b, uint32_t n, uint32_t *rank, uint32_t *world,
                        uint8_t *keyed, const uint8_t **ni)
{
    if (n != TC_BS_HELLO_LEN || le(b, 4) != TC_BS_MAGIC || le(b + 4, 2) != TC_BS_VERSION ||
        b[14] > 1)
        return 0;
    *rank = (uint32_t)le(b + 6, 4);
    *world = (uint32_t)le(b + 10, 4);
    *keyed = b[14];
    *ni = b + 15;
    return 1;
}

/* What the harness can tell of connection @p s: its first HELLO (if well formed), the store's
 * CHALLENGE (checked), whether a PROOF it sent is right, whether the store said OK to it. */
static void store_check(const tc_boot_store_t *st, const tc_auth_key_t *key, sconn_t *s)
{
    uint8_t type, skeyed = key->keyed ? 1 : 0;
    const uint8_t *body, *ni = NULL, *na = NULL;
    uint32_t n, rank = 0, world = 0;
    uint8_t ckeyed = 0;
    int have_hello = 0, right_proof = 0, said_ok = 0;
    frames_t out = {s->got, s->ngot, 0};
    while (next_frame(&out, &type, &body, &n)) {
        if (type == TC_BS_CHALLENGE) {
            if (n != TC_BS_CHALLENGE_LEN || na != NULL || body[0] != skeyed)
                abort(); /* one CHALLENGE, of its length, with the store's keyed flag */
            na = body + 1;
        } else if (type == TC_BS_REPLY) {
            if (n < 16 || le(body + 12, 4) != n - 16)
                abort();
            if (le(body, 8) == 0 && le(body + 8, 4) == 0)
                said_ok = 1;
        } else if (type != TC_BS_EVENT) {
            abort();
        }
    }
    frames_t in = {s->sent, s->nsent, 0};
    int first = 1;
    while (next_frame(&in, &type, &body, &n)) {
        if (type == TC_BS_HELLO && first)
            have_hello = hello_fields(body, n, &rank, &world, &ckeyed, &ni);
        if (type == TC_BS_HELLO)
            first = 0;
        if (type == TC_BS_PROOF && have_hello && na != NULL && n == TC_BS_MAC_LEN) {
            unsigned char mac[TC_AUTH_MAC_LEN];
            join_mac(key, TC_AUTH_INITIATOR, rank, world, ckeyed, skeyed, ni, na, mac);
            right_proof |= memcmp(body, mac, sizeof(mac)) == 0;
        }
    }
    if (na != NULL) {
        unsigned char mac[TC_AUTH_MAC_LEN];
        if (!have_hello)
            abort(); /* challenged without a hello */
        join_mac(key, TC_AUTH_ACCEPTOR, rank, world, ckeyed, skeyed, ni, na, mac);
        if (memcmp(na + 32, mac, sizeof(mac)) != 0)
            abort();
    }
    bs_conn_t *c = s->c;
    if (c->rank >= 0 &&
        (!right_proof || (uint32_t)c->rank != rank || world != WORLD || rank >= WORLD))
        abort(); /* a rank taken without its proof */
    if (said_ok && !right_proof)
        abort();
    if (c->out_len - c->out_off > BS_MAX_OUT || c->out_len > c->out_cap)
        abort();
    (void)st;
}

static void store_side(uint8_t mode, const uint8_t *s, size_t n)
{
    const tc_auth_key_t *key = &g_key[(mode & 2) != 0];
    tc_boot_store_t *st;
    static sconn_t conn[NCONN];
    if (tc_bs_create(WORLD, (mode & 2) ? SECRET : NULL, (mode & 2) ? strlen(SECRET) : 0, &st) !=
        TC_OK)
        abort();
    for (int i = 0; i < NCONN; i++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
            abort();
        conn[i].fd = sv[1];
        conn[i].nsent = conn[i].ngot = 0;
        conn[i].closed = 0;
        conn[i].c = tc_bs_conn_add(st, sv[0], "fuzz");
        if (conn[i].c == NULL)
            abort();
    }
    size_t pos = 0;
    while (pos < n) {
        uint8_t c = s[pos++];
        sconn_t *sc = &conn[c & 1];
        uint8_t buf[300];
        size_t len = 0;
        switch ((c >> 1) & 3) {
        case 0:
            if (pos >= n)
                break;
            len = s[pos++];
            if (len > n - pos)
                len = n - pos;
            memcpy(buf, s + pos, len);
            pos += len;
            break;
        case 1: {
            uint8_t body[TC_BS_HELLO_LEN];
            if (n - pos < 2) {
                pos = n;
                break;
            }
            put_le(body, TC_BS_MAGIC, 4);
            put_le(body + 4, TC_BS_VERSION, 2);
            put_le(body + 6, s[pos], 4);
            put_le(body + 10, s[pos + 1], 4);
            body[14] = (c >> 3) & 1;
            memset(body + 15, 0x30 + (c & 1), 32);
            pos += 2;
            len = frame(buf, TC_BS_HELLO, body, sizeof(body));
            break;
        }
        case 2: {
            /* the right proof for the first HELLO sent and the CHALLENGE received */
            uint8_t type, *na = NULL;
            const uint8_t *body, *ni = NULL;
            uint32_t bl, rank = 0, world = 0;
            uint8_t ckeyed = 0, mac[32];
            int have = 0;
            frames_t out = {sc->got, sc->ngot, 0}, in = {sc->sent, sc->nsent, 0};
            while (next_frame(&out, &type, &body, &bl))
                if (type == TC_BS_CHALLENGE && bl == TC_BS_CHALLENGE_LEN && na == NULL)
                    na = (uint8_t *)body + 1;
            while (!have && next_frame(&in, &type, &body, &bl))
                if (type == TC_BS_HELLO)
                    have = hello_fields(body, bl, &rank, &world, &ckeyed, &ni) ? 1 : -1;
            memset(mac, 0, sizeof(mac));
            if (have == 1 && na != NULL)
                join_mac(key, TC_AUTH_INITIATOR, rank, world, ckeyed, key->keyed ? 1 : 0, ni, na,
                         mac);
            if (c & 8)
                mac[(c >> 4) % 32] ^= 1;
            len = frame(buf, TC_BS_PROOF, mac, sizeof(mac));
            break;
        }
        default:
            if (!sc->closed)
                shutdown(sc->fd, SHUT_WR);
            sc->closed = 1;
            break;
        }
        if (len > 0 && !sc->closed && sc->nsent + len <= sizeof(sc->sent)) {
            if (send(sc->fd, buf, len, MSG_NOSIGNAL) != (ssize_t)len)
                abort();
            memcpy(sc->sent + sc->nsent, buf, len);
            sc->nsent += len;
        }
        if (!sc->c->dead && !sc->c->closing)
            tc_bs_read(st, sc->c);
        for (int i = 0; i < NCONN; i++) {
            ssize_t r;
            while (conn[i].ngot < sizeof(conn[i].got) &&
                   (r = recv(conn[i].fd, conn[i].got + conn[i].ngot,
                             sizeof(conn[i].got) - conn[i].ngot, MSG_DONTWAIT)) > 0)
                conn[i].ngot += (size_t)r;
        }
        int joined = 0;
        for (int i = 0; i < NCONN; i++) {
            store_check(st, key, &conn[i]);
            joined += conn[i].c->rank >= 0 && !conn[i].c->dead && !conn[i].c->said_bye;
        }
        int marked = 0;
        for (int r = 0; r < WORLD; r++)
            marked += st->rank_state[r] == BS_RANK_JOINED;
        if (marked != joined)
            abort();
    }
    if (g_verbose)
        fprintf(stderr, "store: connection ranks %d %d, %zu keys\n", conn[0].c->rank,
                conn[1].c->rank, st->nkeys);
    for (size_t i = 0; i < st->nconns; i++)
        tc_bs_conn_free(st->conns[i]);
    st->nconns = 0;
    for (int i = 0; i < NCONN; i++)
        close(conn[i].fd);
    tc_bs_free(st);
}

/* ---- the client's side ---- */

static const int32_t statuses[] = {TC_OK, TC_ERR_BOOTSTRAP, TC_ERR_INVALID_STATE,
                                   TC_ERR_NOT_FOUND, TC_ERR_TIMEOUT, TC_ERR_PEER_FAILED,
                                   TC_ERR_INVALID_ARG, -12345};

static void client_side(uint8_t mode, const uint8_t *s, size_t n)
{
    static uint8_t stream[STREAM_MAX], out[1 << 16];
    const tc_auth_key_t *key = &g_key[(mode & 2) != 0];
    uint8_t keyed = key->keyed ? 1 : 0, ni[32];
    if (n < 2)
        return;
    uint32_t world = s[0] % 8u + 1, rank = s[1] % world;
    size_t pos = 2, len = 0;
    int valid_challenge = 0;
    uint8_t valid_na[32];
    fixed_buf(ni, sizeof(ni));
    while (pos < n && len + 400 < sizeof(stream)) {
        uint8_t c = s[pos++];
        uint8_t body[300];
        switch (c & 3) {
        case 0: {
            size_t k = pos < n ? s[pos++] : 0;
            if (k > n - pos)
                k = n - pos;
            memcpy(stream + len, s + pos, k);
            len += k;
            pos += k;
            break;
        }
        case 1: {
            if (n - pos < 32) {
                pos = n;
                break;
            }
            uint8_t skeyed = (c >> 2) & 1;
            body[0] = skeyed;
            memcpy(body + 1, s + pos, 32);
            pos += 32;
            join_mac(key, TC_AUTH_ACCEPTOR, rank, world, keyed, skeyed, ni, body + 1, body + 33);
            if (c & 8)
                body[33 + (c >> 4) % 32] ^= 1;
            len += frame(stream + len, TC_BS_CHALLENGE, body, TC_BS_CHALLENGE_LEN);
            break;
        }
        case 2: {
            if (n - pos < 3) {
                pos = n;
                break;
            }
            size_t k = s[pos + 2];
            put_le(body, s[pos], 8);
            put_le(body, s[pos], 8);
            put_le(body + 8, (uint32_t)statuses[s[pos + 1] % 8], 4);
            pos += 3;
            if (k > n - pos)
                k = n - pos;
            if (k > sizeof(body) - 16)
                k = sizeof(body) - 16;
            put_le(body + 12, k, 4);
            memcpy(body + 16, s + pos, k);
            pos += k;
            len += frame(stream + len, TC_BS_REPLY, body, (uint32_t)(16 + k));
            break;
        }
        default:
            if (n - pos < 4) {
                pos = n;
                break;
            }
            put_le(body, s[pos], 4);
            put_le(body + 4, s[pos + 1], 4);
            put_le(body + 8, s[pos + 2], 4);
            put_le(body + 12, s[pos + 3], 4);
            pos += 4;
            len += frame(stream + len, TC_BS_EVENT, body, TC_BS_EVENT_LEN);
            break;
        }
    }
    /* the CHALLENGE the client would check: the first frame of type CHALLENGE, if whole */
    {
        frames_t f = {stream, len, 0};
        uint8_t type;
        const uint8_t *body;
        uint32_t bl;
        while (next_frame(&f, &type, &body, &bl)) {
            if (type != TC_BS_CHALLENGE)
                continue;
            unsigned char mac[32];
            if (bl == TC_BS_CHALLENGE_LEN && body[0] == keyed) {
                join_mac(key, TC_AUTH_ACCEPTOR, rank, world, keyed, body[0], ni, body + 1, mac);
                if (memcmp(body + 33, mac, 32) == 0) {
                    valid_challenge = 1;
                    memcpy(valid_na, body + 1, 32);
                }
            }
            break;
        }
    }

    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
        abort();
    if (len > 0 && send(sv[1], stream, len, MSG_NOSIGNAL) != (ssize_t)len)
        abort();
    shutdown(sv[1], SHUT_WR);
    tc_boot_t *boot = NULL;
    tc_status_t rc = tc_boot_env_join_fd(sv[0], (int)rank, (int)world, keyed ? SECRET : NULL,
                                         keyed ? strlen(SECRET) : 0, tc_deadline_after_ms(5000),
                                         &boot);
    if (rc == TC_OK) {
        uint8_t buf[64];
        size_t got = 0;
        tc_boot_event_t ev;
        (void)tc_boot_put(boot, "key", "value", 5);
        (void)tc_boot_fence(boot, tc_deadline_after_ms(5000));
        if (tc_boot_get(boot, 0, "key", buf, sizeof(buf), &got, tc_deadline_after_ms(5000)) ==
                TC_OK &&
            got > sizeof(buf))
            abort();
        for (int i = 0; i < 4 && tc_boot_poll_event(boot, &ev); i++)
            if (ev.rank < 0 || ev.rank >= (int)world ||
                (ev.kind != TC_BOOT_EV_PROC_FAILED && ev.kind != TC_BOOT_EV_REVOKE))
                abort();
        tc_boot_destroy(boot);
    }
    /* what the client sent */
    size_t nout = 0;
    ssize_t r;
    while (nout < sizeof(out) && (r = recv(sv[1], out + nout, sizeof(out) - nout, 0)) > 0)
        nout += (size_t)r;
    close(sv[1]);
    frames_t f = {out, nout, 0};
    uint8_t type;
    const uint8_t *body;
    uint32_t bl;
    if (!next_frame(&f, &type, &body, &bl) || type != TC_BS_HELLO || bl != TC_BS_HELLO_LEN ||
        le(body, 4) != TC_BS_MAGIC || le(body + 4, 2) != TC_BS_VERSION ||
        le(body + 6, 4) != rank || le(body + 10, 4) != world || body[14] != keyed ||
        memcmp(body + 15, ni, 32) != 0)
        abort();
    int proved = 0;
    if (next_frame(&f, &type, &body, &bl) && type == TC_BS_PROOF) {
        unsigned char mac[32];
        if (!valid_challenge || bl != TC_BS_MAC_LEN)
            abort(); /* a proof to a store that did not prove itself */
        join_mac(key, TC_AUTH_INITIATOR, rank, world, keyed, keyed, ni, valid_na, mac);
        if (memcmp(body, mac, 32) != 0)
            abort();
        proved = 1;
    }
    if (g_verbose)
        fprintf(stderr, "client: join %d (%s), proof sent %d\n", (int)rc,
                rc == TC_OK ? "" : tc_last_error(), proved);
    if (rc == TC_OK && !proved)
        abort(); /* joined without the store's proof and ours */
    /* joined: no EVENT came before the verdict (the first REPLY to request 0) */
    frames_t v = {stream, len, 0};
    while (rc == TC_OK && next_frame(&v, &type, &body, &bl)) {
        if (type == TC_BS_EVENT)
            abort(); /* a notice from a store that had not let this rank in */
        if (type == TC_BS_REPLY && bl >= 16 && le(body, 8) == 0)
            break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 4200)
        return 0;
    init_once();
    if (data[0] & 1)
        client_side(data[0], data + 1, size - 1);
    else
        store_side(data[0], data + 1, size - 1);
    return 0;
}
