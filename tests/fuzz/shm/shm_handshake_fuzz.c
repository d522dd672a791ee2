/* Fuzz the shm handshake (transport/shm/src/shm_ep.c; shm_layout.h): the creator's and the
 * opener's side of the challenge-response through the segment header, with the harness playing
 * the other side and writing arbitrary header contents at each step.
 *
 * The segment is harness memory (an anonymous mapping) of the endpoint's own: the creator's
 * header is written by tc_shm_ep_seg_init, the opener attaches with tc_shm_ep_attach (what
 * follows shm_open and mmap), and each later step is tc_shm_ep_connecting. Until the endpoint
 * is up, the rings (everything after the 2304-byte header) are poisoned for ASan: reading or
 * writing them before the peer's proof checked out is a finding. The geometry is
 * 4 cells of 64 bytes (ctx values set by the harness).
 *
 * Input: s[0] bit 0: 0 the creator's side (self 1000, peer 2000), 1 the opener's (peer 7);
 * bit 1: this side has the fixed test secret (else the public key); bits 2-3 (opener): the
 * segment's size: 1536 (the geometry's), 4096, 1024 or 1537 bytes. Then, for the opener, the
 * creator's 2304-byte header and a control byte: bit 0 magic set, bit 1 version, ids and pid
 * set, bit 2 the harness's geometry set (4 cells of 64 bytes, the segment's size); then steps, each
 * a control byte c and a 2304-byte image (TC_SHM_HDR_SIZE): c bit 0: the whole image is written
 * over the header (else only the other side's own fields: state, cma, proved, verdict, nonce
 * (creator: none after the start), MAC); c bit 1: the other side's MAC is the right one (computed
 * here with auth.h from the transcript shm_layout.h describes), and c bit 2 flips one of its bits;
 *   c bit 3: the other side's proved = 1 and state UP.
 *
 * s[0] bit 7 instead: the second side's reading of the pair's file (tc_shm_seg_classify, what
 * the first side's decision is to the other): then u64 size, u64 links, u32 owner, u32 mode, u32
 * our uid (native order); the class must be the one the model below derives from the rules of
 * docs/transport_shm.md (private to us, then empty / 1 / 2 / a header or more).
 *
 * s[0] bit 6 (bit 7 clear) instead: a leftover segment's header as a new context's sweep reads
 * it (tc_shm_sweep_stale): then u64 our pid namespace, a byte whose bits 0 and 1 say whether the
 * header's pid[0] and pid[1] are alive, and the header's bytes (any length). Removed exactly when
 * a whole header has the magic, this version, our namespace (not 0) and two dead pids above 0;
 * liveness is never asked of a pid below 1 (kill() would take it for a process group).
 *
 * SHM_HANDSHAKE_FUZZ_VERBOSE set: the endpoint's last state on stderr.
 *
 * Properties, besides ASan's:
 * - the opener attaches exactly to a header an independent model accepts (version, geometry
 *   within the segment, ids, pid), takes that geometry and writes the acceptor's MAC so
 *   computed;
 * - either side is up only after a step whose header had proved = 1 and exactly the right MAC
 *   for its own nonce and the one it copied (and, opener, no refusal); with such a header it is
 *   up; refusing, it writes its verdict REFUSED; up, the creator has written the initiator's
 *   MAC and both write verdict OK;
 * - the creator's geometry (its private copies) never changes; the opener's, once taken,
 *   neither; rings are not touched before the endpoint is up. */
#include <sanitizer/asan_interface.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tcomms/base/log.h"
#include "tcomms/transport/auth.h"
#include "tcomms/transport/shm.h"
#include "tcomms/transport/shm_layout.h"
#include "tcomms/transport/transport.h"
#include "transport/shm/src/shm_internal.h"

#define SELF 1000
#define SECRET "shm-handshake-fuzz-secret"
#define CELL 64
#define NCELLS 4
#define GEOM_SIZE                                                                                  \
    (TC_SHM_HDR_SIZE + 2 * (2 * TC_SHM_LINE + NCELLS * (TC_SHM_CELL_HDR + CELL)) +                 \
     2 * TC_SHM_LANE_BYTES)
#define NAME_LEN 96
/* A failed property: where, then abort. */
#define FAIL() (fprintf(stderr, "shm_handshake_fuzz: property at line %d\n", __LINE__), abort())

static tc_tp_ctx_t *g_ctx;
static tc_auth_key_t g_key[2];

static void init_once(void)
{
    if (g_ctx != NULL)
        return;
    tc_log_configure("none");
    tc_tp_ctx_params_t p = TC_TP_CTX_PARAMS_INIT;
    p.self_id = SELF;
    if (tc_tp_ctx_create(&tc_tp_shm_ops, &p, &g_ctx) != TC_OK ||
        tc_auth_key_init(&g_key[0], NULL, 0) != TC_OK ||
        tc_auth_key_init(&g_key[1], SECRET, strlen(SECRET)) != TC_OK)
        FAIL();
    tc_shm_ctx_t *ctx = (tc_shm_ctx_t *)g_ctx;
    ctx->cell_size = CELL;
    ctx->ncells = NCELLS;
    ctx->seg_size = GEOM_SIZE;
}

/* The MAC of @p role: purpose "shm", both ids, both nonces, and as extra the name (96 bytes,
 * zero-padded), version, cell size, cells, segment size and both pids (shm_layout.h). */
static void want_mac(tc_auth_role_t role, const tc_auth_key_t *key, const char *name,
                     uint64_t creator, uint64_t opener, const uint8_t *ni, const uint8_t *na,
                     uint32_t cell, uint32_t ncells, uint64_t seg_size, int32_t pid0, int32_t pid1,
                     unsigned char *mac)
{
    uint8_t extra[NAME_LEN + 28];
    uint32_t version = TC_SHM_VERSION;
    memset(extra, 0, sizeof(extra));
    memcpy(extra, name, strnlen(name, NAME_LEN));
    memcpy(extra + NAME_LEN, &version, 4);
    memcpy(extra + NAME_LEN + 4, &cell, 4);
    memcpy(extra + NAME_LEN + 8, &ncells, 4);
    memcpy(extra + NAME_LEN + 12, &seg_size, 8);
    memcpy(extra + NAME_LEN + 20, &pid0, 4);
    memcpy(extra + NAME_LEN + 24, &pid1, 4);
    tc_auth_transcript_t t;
    memset(&t, 0, sizeof(t));
    t.purpose = "shm";
    t.initiator_id = creator;
    t.acceptor_id = opener;
    memcpy(t.nonce_i, ni, 32);
    memcpy(t.nonce_a, na, 32);
    t.extra = extra;
    t.extra_len = sizeof(extra);
    tc_auth_mac(key, role, &t, mac);
}

static tc_shm_ep_t *ep_new(uint64_t peer, int side)
{
    tc_shm_ep_t *ep = calloc(1, sizeof(*ep));
    if (ep == NULL)
        FAIL();
    ep->super.ops = &tc_tp_shm_ops;
    ep->super.ctx = g_ctx;
    ep->super.peer_id = peer;
    ep->super.failed = TC_OK;
    ep->peer_pid = getpid();
    ep->peer_nonce = 42;
    ep->side = side;
    ep->pidfd = -1;
    snprintf(ep->name, sizeof(ep->name), "/tcomms-fuzz-%d-none", (int)getpid());
    return ep;
}

static void poison(uint8_t *seg, size_t size, int on)
{
    if (size > TC_SHM_HDR_SIZE) {
        if (on)
            ASAN_POISON_MEMORY_REGION(seg + TC_SHM_HDR_SIZE, size - TC_SHM_HDR_SIZE);
        else
            ASAN_UNPOISON_MEMORY_REGION(seg + TC_SHM_HDR_SIZE, size - TC_SHM_HDR_SIZE);
    }
}

/* Write step @p img over header @p h as side @p other (the harness's) would, under @p c. */
static void peer_write(tc_shm_seg_hdr_t *h, uint8_t c, const uint8_t *img, int other,
                       const unsigned char *mac)
{
    const tc_shm_seg_hdr_t *g = (const tc_shm_seg_hdr_t *)(const void *)img;
    if (c & 1) {
        memcpy(h, img, sizeof(*h));
    } else {
        h->state[other] = g->state[other];
        h->cma[other] = g->cma[other];
        h->proved[other] = g->proved[other];
        h->verdict[other] = g->verdict[other];
        if (other == 1)
            memcpy(h->nonce[1], g->nonce[1], TC_SHM_NONCE_LEN);
        memcpy(h->mac[other], g->mac[other], TC_SHM_MAC_LEN);
    }
    if (c & 8) {
        h->proved[other] = 1;
        h->state[other] = TC_SHM_SIDE_UP;
    }
    if (c & 2) {
        memcpy(h->mac[other], mac, TC_SHM_MAC_LEN);
        if (c & 4)
            h->mac[other][(c >> 3) % 32] ^= (uint8_t)(1u << (c & 7));
    }
}

static void creator(uint8_t mode, const uint8_t *s, size_t n)
{
    tc_shm_ctx_t *ctx = (tc_shm_ctx_t *)g_ctx;
    const tc_auth_key_t *key = &g_key[(mode & 2) != 0];
    ctx->key = *key; /* the context's secret, for this input */
    tc_shm_ep_t *ep = ep_new(2000, 0);
    size_t size = GEOM_SIZE;
    uint8_t *seg = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (seg == MAP_FAILED)
        FAIL();
    tc_shm_ep_seg_init(ctx, ep, seg, size);
    tc_shm_seg_hdr_t *h = ep->hdr, start;
    memcpy(&start, h, sizeof(start));
    if (ep->state != TC_SHM_EP_CONNECTING || start.magic != TC_SHM_MAGIC ||
        start.version != TC_SHM_VERSION || start.cell_size != CELL || start.ncells != NCELLS ||
        start.seg_size != size || start.id[0] != SELF || start.id[1] != 2000 ||
        start.pid[0] != (int32_t)ctx->pid || start.pid[1] != (int32_t)ep->peer_pid ||
        start.state[0] != TC_SHM_SIDE_UP)
        FAIL();
    poison(seg, size, 1);
    int up = 0;
    for (size_t pos = 0;
         n - pos >= 1 + sizeof(tc_shm_seg_hdr_t) && !up && ep->state == TC_SHM_EP_CONNECTING;
         pos += 1 + sizeof(tc_shm_seg_hdr_t)) {
        uint8_t c = s[pos];
        const uint8_t *img = s + pos + 1;
        const tc_shm_seg_hdr_t *g = (const tc_shm_seg_hdr_t *)(const void *)img;
        unsigned char mac[32], imac[32];
        /* the right MAC: for our nonce (from the start) and the nonce the opener writes now */
        const uint8_t *na = g->nonce[1]; /* written by the peer either way */
        want_mac(TC_AUTH_ACCEPTOR, key, ep->name, SELF, 2000, start.nonce[0], na, CELL, NCELLS,
                 size, start.pid[0], start.pid[1], mac);
        peer_write(h, c, img, 1, mac);
        tc_shm_seg_hdr_t snap;
        memcpy(&snap, h, sizeof(snap));
        want_mac(TC_AUTH_ACCEPTOR, key, ep->name, SELF, 2000, start.nonce[0], snap.nonce[1], CELL,
                 NCELLS, size, start.pid[0], start.pid[1], mac);
        int attached = snap.state[1] != TC_SHM_SIDE_NONE;
        int right = attached && snap.proved[1] == 1 && memcmp(snap.mac[1], mac, 32) == 0;
        tc_shm_ep_connecting(ctx, ep);
        if (ep->cell_size != CELL || ep->ncells != NCELLS || ep->stride != TC_SHM_CELL_HDR + CELL ||
            ep->seg_len != size)
            FAIL(); /* its own geometry, whatever the header says */
        if ((ep->state == TC_SHM_EP_UP) != right)
            FAIL();
        if (!attached && ep->state != TC_SHM_EP_CONNECTING)
            FAIL();
        if (ep->state == TC_SHM_EP_UP) {
            want_mac(TC_AUTH_INITIATOR, key, ep->name, SELF, 2000, start.nonce[0], snap.nonce[1],
                     CELL, NCELLS, size, start.pid[0], start.pid[1], imac);
            if (memcmp(h->mac[0], imac, 32) != 0 || h->proved[0] != 1 ||
                h->verdict[0] != TC_SHM_VERDICT_OK)
                FAIL();
            up = 1;
        } else if (attached && snap.proved[1] == 1 && h->verdict[0] != TC_SHM_VERDICT_REFUSED) {
            FAIL(); /* refused without saying so */
        }
    }
    if (getenv("SHM_HANDSHAKE_FUZZ_VERBOSE") != NULL)
        fprintf(stderr, "creator: state %d\n", (int)ep->state);
    poison(seg, size, 0);
    tc_tp_ep_close(&ep->super); /* unmaps the segment */
}

static void opener(uint8_t mode, const uint8_t *s, size_t n)
{
    static const size_t sizes[4] = {GEOM_SIZE, 4096, 1024, GEOM_SIZE + 1};
    tc_shm_ctx_t *ctx = (tc_shm_ctx_t *)g_ctx;
    const tc_auth_key_t *key = &g_key[(mode & 2) != 0];
    if (n < sizeof(tc_shm_seg_hdr_t) + 1)
        return;
    ctx->key = *key; /* the context's secret, for this input */
    size_t size = sizes[(mode >> 2) & 3];
    tc_shm_ep_t *ep = ep_new(7, 1);
    ep->state = TC_SHM_EP_OPENING;
    uint8_t *seg = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (seg == MAP_FAILED)
        FAIL();
    tc_shm_seg_hdr_t *h = (tc_shm_seg_hdr_t *)(void *)seg;
    memcpy(h, s, sizeof(*h));
    uint8_t c0 = s[sizeof(*h)];
    if (c0 & 1)
        h->magic = TC_SHM_MAGIC;
    if (c0 & 2) {
        h->version = TC_SHM_VERSION;
        h->id[0] = 7;
        h->id[1] = SELF;
        h->pid[0] = (int32_t)ep->peer_pid;
    }
    if (c0 & 4) {
        h->cell_size = CELL;
        h->ncells = NCELLS;
        h->seg_size = size;
    }
    tc_shm_seg_hdr_t start;
    memcpy(&start, h, sizeof(start));
    uint64_t need = TC_SHM_HDR_SIZE +
                    2 * (2 * TC_SHM_LINE +
                         (uint64_t)start.ncells * (TC_SHM_CELL_HDR + (uint64_t)start.cell_size)) +
                    2ull * TC_SHM_LANE_BYTES;
    int magic = start.magic == TC_SHM_MAGIC;
    int valid = magic && start.version == TC_SHM_VERSION && start.cell_size >= 64 &&
                start.cell_size <= (1u << 20) && start.cell_size % 64 == 0 && start.ncells >= 2 &&
                start.ncells <= (1u << 24) && need <= size && start.seg_size == size &&
                start.id[0] == 7 && start.id[1] == SELF && start.pid[0] == (int32_t)ep->peer_pid;
    if (magic)
        poison(seg, size, 1); /* attach takes the mapping */
    tc_shm_ep_attach(ctx, ep, seg, size);
    if (!magic) {
        /* unmapped by attach; still waiting for the creator */
        if (ep->state != TC_SHM_EP_OPENING || ep->seg != NULL)
            FAIL();
        tc_tp_ep_close(&ep->super);
        return;
    }
    if ((ep->state == TC_SHM_EP_PROVING) != valid)
        FAIL();
    if (!valid) {
        if (ep->state != TC_SHM_EP_FAILED)
            FAIL();
        poison(seg, size, 0);
        tc_tp_ep_close(&ep->super);
        return;
    }
    /* attached: the creator's geometry, our nonce and MAC */
    unsigned char mac[32], na[32];
    memcpy(na, h->nonce[1], 32);
    want_mac(TC_AUTH_ACCEPTOR, key, ep->name, 7, SELF, start.nonce[0], na, start.cell_size,
             start.ncells, size, start.pid[0], (int32_t)ctx->pid, mac);
    if (ep->cell_size != start.cell_size || ep->ncells != start.ncells ||
        memcmp(h->mac[1], mac, 32) != 0 || h->proved[1] != 1 || h->state[1] != TC_SHM_SIDE_UP)
        FAIL();
    int up = 0;
    for (size_t pos = sizeof(*h) + 1;
         n - pos >= 1 + sizeof(tc_shm_seg_hdr_t) && !up && ep->state == TC_SHM_EP_PROVING;
         pos += 1 + sizeof(tc_shm_seg_hdr_t)) {
        uint8_t c = s[pos];
        const uint8_t *img = s + pos + 1;
        unsigned char imac[32];
        want_mac(TC_AUTH_INITIATOR, key, ep->name, 7, SELF, start.nonce[0], na, start.cell_size,
                 start.ncells, size, start.pid[0], (int32_t)ctx->pid, imac);
        peer_write(h, c, img, 0, imac);
        tc_shm_seg_hdr_t snap;
        memcpy(&snap, h, sizeof(snap));
        int right = snap.proved[0] == 1 && snap.verdict[0] != TC_SHM_VERDICT_REFUSED &&
                    memcmp(snap.mac[0], imac, 32) == 0;
        tc_shm_ep_connecting(ctx, ep);
        if (ep->cell_size != start.cell_size || ep->ncells != start.ncells ||
            ep->stride != TC_SHM_CELL_HDR + (size_t)start.cell_size || ep->seg_len != size)
            FAIL();
        if ((ep->state == TC_SHM_EP_UP) != right)
            FAIL();
        if (ep->state == TC_SHM_EP_UP) {
            if (h->verdict[1] != TC_SHM_VERDICT_OK)
                FAIL();
            up = 1;
        } else if (snap.proved[0] == 1 && snap.verdict[0] != TC_SHM_VERDICT_REFUSED &&
                   h->verdict[1] != TC_SHM_VERDICT_REFUSED) {
            FAIL(); /* a wrong proof refused without saying so */
        }
    }
    if (getenv("SHM_HANDSHAKE_FUZZ_VERBOSE") != NULL)
        fprintf(stderr, "opener: state %d\n", (int)ep->state);
    poison(seg, size, 0);
    tc_tp_ep_close(&ep->super);
}

/* The decision a pair's file carries, by the documented rules. */
static void classify(const uint8_t *s, size_t n)
{
    uint64_t size, links;
    uint32_t uid, mode, euid;
    if (n < 28)
        return;
    memcpy(&size, s, 8);
    memcpy(&links, s + 8, 8);
    memcpy(&uid, s + 16, 4);
    memcpy(&mode, s + 20, 4);
    memcpy(&euid, s + 24, 4);
    int want;
    if (uid != euid || (mode & 0077))
        want = TC_SHM_SEG_BAD;
    else if (size == 0)
        want = links ? TC_SHM_SEG_PENDING : TC_SHM_SEG_GONE;
    else if (size == 1)
        want = TC_SHM_SEG_NOFIT;
    else if (size == 2)
        want = TC_SHM_SEG_FAILED;
    else
        want = size >= TC_SHM_HDR_SIZE ? TC_SHM_SEG_READY : TC_SHM_SEG_BAD;
    if (tc_shm_seg_classify(size, links, uid, mode, euid) != want)
        FAIL();
}

static tc_shm_seg_hdr_t g_left;
static unsigned g_alive;

static int left_alive(int32_t pid)
{
    if (pid <= 0)
        FAIL();
    return ((g_alive & 1) && pid == g_left.pid[0]) || ((g_alive & 2) && pid == g_left.pid[1]);
}

/* Whether a new context removes a leftover with this header, by the documented rule. */
static void leftover(const uint8_t *s, size_t n)
{
    uint64_t pidns;
    if (n < 9)
        return;
    memcpy(&pidns, s, 8);
    g_alive = s[8];
    s += 9;
    n -= 9;
    memset(&g_left, 0, sizeof(g_left));
    memcpy(&g_left, s, n < sizeof(g_left) ? n : sizeof(g_left));
    int dead = g_left.pid[0] > 0 && g_left.pid[1] > 0 && !left_alive(g_left.pid[0]) &&
               !left_alive(g_left.pid[1]);
    int want = n >= sizeof(g_left) && pidns != 0 && g_left.magic == TC_SHM_MAGIC &&
               g_left.version == TC_SHM_VERSION && g_left.pidns == pidns && dead;
    if (tc_shm_sweep_stale(s, n, pidns, left_alive) != want)
        FAIL();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 4200)
        return 0;
    init_once();
    if (data[0] & 0x80)
        classify(data + 1, size - 1);
    else if (data[0] & 0x40)
        leftover(data + 1, size - 1);
    else if (data[0] & 1)
        opener(data[0], data + 1, size - 1);
    else
        creator(data[0], data + 1, size - 1);
    return 0;
}
