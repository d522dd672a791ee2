/*
 * The shm handshake (shm_layout.h): a challenge-response through the segment header.
 * The test plays the other side by hand, with a made-up peer address (this process's pid,
 * a chosen nonce) and the transcript computed here from the documented layout:
 * - a genuine acceptor proof is accepted, and the creator's own proof then checks out here;
 * - that same proof replayed into the next segment of the same pair (same name, geometry,
 *   ids and pids: only the creator's fresh nonce differs) is refused;
 * - an opener without the secret is refused, and the creator writes no proof of its own;
 * - a creator without the secret is refused by the opener, which says so in the header;
 * - no secret on either side: the handshake runs with the public key and comes up.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm_util.h"
#include "tcomms/base/status.h"
#include "tcomms/base/time.h"
#include "tcomms/transport/auth.h"
#include "tcomms/transport/shm_lane.h"
#include "tcomms/transport/shm_layout.h"

#define SECRET "shm-job-secret"
#define FAKE_NONCE 0x1234abcd5678ef01ULL

static volatile uint64_t fake_probe = FAKE_NONCE;

/* An shm address (tcomms/transport/shm.h: magic, version, pid, id, nonce, probe, pid ns) of a
 * peer @p id that is this process, with nonce @p nonce. */
static void fake_addr(unsigned char a[TC_TP_SHM_ADDR_LEN], uint64_t id, uint64_t nonce)
{
    uint32_t magic = 0x4d534354u, zero = 0;
    uint16_t version = 2, z16 = 0;
    int32_t pid = (int32_t)getpid();
    uint64_t probe = (uint64_t)(uintptr_t)&fake_probe, pidns = 0;
    memcpy(a, &magic, 4);
    memcpy(a + 4, &version, 2);
    memcpy(a + 6, &z16, 2);
    memcpy(a + 8, &pid, 4);
    memcpy(a + 12, &zero, 4);
    memcpy(a + 16, &id, 8);
    memcpy(a + 24, &nonce, 8);
    memcpy(a + 32, &probe, 8);
    memcpy(a + 40, &pidns, 8);
}

/* The transcript of the handshake on segment @p name, as shm_layout.h lays it out. */
static void transcript(tc_auth_transcript_t *t, unsigned char extra[124], const char *name,
                       const tc_shm_seg_hdr_t *h, const unsigned char *ni, const unsigned char *na)
{
    uint32_t version = TC_SHM_VERSION;
    memset(extra, 0, 124);
    memcpy(extra, name, strlen(name)); /* 96 bytes, zero-padded */
    memcpy(extra + 96, &version, 4);
    memcpy(extra + 100, &h->cell_size, 4);
    memcpy(extra + 104, &h->ncells, 4);
    memcpy(extra + 108, &h->seg_size, 8);
    memcpy(extra + 116, h->pid, 8);
    memset(t, 0, sizeof(*t));
    t->purpose = "shm";
    t->initiator_id = h->id[0];
    t->acceptor_id = h->id[1];
    memcpy(t->nonce_i, ni, TC_AUTH_NONCE_LEN);
    memcpy(t->nonce_a, na, TC_AUTH_NONCE_LEN);
    t->extra = extra;
    t->extra_len = 124;
}

static tc_shm_seg_hdr_t *segment_of(tc_tp_ep_t *ep)
{
    void *base = NULL;
    size_t len = 0;
    assert_int_equal(tc_tp_shm_ep_segment(ep, &base, &len), TC_OK);
    assert_true(len >= TC_SHM_HDR_SIZE);
    return base;
}

/* The creator's segment name for creator @p pid/@p cnonce and opener nonce @p ononce. */
static void seg_name(char *out, size_t cap, int pid, uint64_t cnonce, uint64_t ononce)
{
    snprintf(out, cap, "/tcomms-%d-%016llx-%016llx", pid, (unsigned long long)cnonce,
             (unsigned long long)ononce);
}

/* Answer as the opener: nonce @p na and a MAC keyed with @p secret (NULL: the public key). */
static void answer(tc_shm_seg_hdr_t *h, const char *name, const char *secret,
                   const unsigned char na[TC_AUTH_NONCE_LEN])
{
    tc_auth_key_t key;
    tc_auth_transcript_t t;
    unsigned char extra[124];
    assert_int_equal(tc_auth_key_init(&key, secret, secret ? strlen(secret) : 0), TC_OK);
    transcript(&t, extra, name, h, h->nonce[0], na);
    memcpy(h->nonce[1], na, TC_AUTH_NONCE_LEN);
    tc_auth_mac(&key, TC_AUTH_ACCEPTOR, &t, h->mac[1]);
    __atomic_store_n(&h->proved[1], 1, __ATOMIC_RELEASE);
    __atomic_store_n(&h->state[1], TC_SHM_SIDE_UP, __ATOMIC_RELEASE);
}

/* Progress @p ctx until the creator's verdict is in (bounded). */
static uint32_t await_verdict(tc_tp_ctx_t *ctx, tc_shm_seg_hdr_t *h, int side)
{
    uint64_t deadline = tc_deadline_after_ms(SU_WAIT_MS);
    uint32_t v;
    while ((v = __atomic_load_n(&h->verdict[side], __ATOMIC_ACQUIRE)) == TC_SHM_VERDICT_NONE &&
           !tc_deadline_passed(deadline))
        (void)tc_tp_progress(ctx);
    return v;
}

static void test_genuine_then_replayed_acceptor(void **state)
{
    tc_tp_ctx_t *a = tc_shmt_ctx_new(0, SECRET, NULL);
    unsigned char peer[TC_TP_SHM_ADDR_LEN], own[TC_TP_SHM_ADDR_LEN], na[TC_AUTH_NONCE_LEN];
    unsigned char old_na[TC_AUTH_NONCE_LEN], old_mac[TC_AUTH_MAC_LEN], old_ni[TC_AUTH_NONCE_LEN];
    uint64_t a_nonce;
    char name[96];
    tc_shmt_addr(a, own);
    memcpy(&a_nonce, own + 24, 8);
    fake_addr(peer, 1, FAKE_NONCE);
    seg_name(name, sizeof(name), (int)getpid(), a_nonce, FAKE_NONCE);

    /* 1: a genuine acceptor (it holds the secret) is accepted */
    tc_tp_ep_t *ep;
    assert_int_equal(tc_tp_ep_connect(a, 1, peer, sizeof(peer), &ep), TC_OK);
    tc_shm_seg_hdr_t *h = segment_of(ep);
    tc_auth_nonce(na);
    answer(h, name, SECRET, na);
    assert_int_equal(await_verdict(a, h, 0), TC_SHM_VERDICT_OK);
    assert_int_equal(__atomic_load_n(&h->proved[0], __ATOMIC_ACQUIRE), 1);
    /* ... and the creator's proof checks out against the transcript computed here */
    tc_auth_key_t key;
    tc_auth_transcript_t t;
    unsigned char extra[124];
    assert_int_equal(tc_auth_key_init(&key, SECRET, strlen(SECRET)), TC_OK);
    transcript(&t, extra, name, h, h->nonce[0], na);
    assert_true(tc_auth_check(&key, TC_AUTH_INITIATOR, &t, h->mac[0]));
    memcpy(old_ni, h->nonce[0], sizeof(old_ni));
    memcpy(old_na, h->nonce[1], sizeof(old_na));
    memcpy(old_mac, h->mac[1], sizeof(old_mac));
    tc_tp_ep_close(ep);

    /* 2: the same answer replayed into the next segment (same name): refused */
    assert_int_equal(tc_tp_ep_connect(a, 1, peer, sizeof(peer), &ep), TC_OK);
    h = segment_of(ep);
    assert_memory_not_equal(h->nonce[0], old_ni, TC_AUTH_NONCE_LEN); /* a fresh Ni */
    memcpy(h->nonce[1], old_na, TC_AUTH_NONCE_LEN);
    memcpy(h->mac[1], old_mac, TC_AUTH_MAC_LEN);
    __atomic_store_n(&h->proved[1], 1, __ATOMIC_RELEASE);
    __atomic_store_n(&h->state[1], TC_SHM_SIDE_UP, __ATOMIC_RELEASE);
    assert_int_equal(await_verdict(a, h, 0), TC_SHM_VERDICT_REFUSED);
    tc_tp_ctx_t *only[] = {a};
    assert_int_equal(tc_tpt_wait_failed(only, 1, ep, SU_WAIT_MS), TC_ERR_PEER_FAILED);
    assert_non_null(strstr(tc_tp_ep_error(ep), "did not prove it holds this job's secret"));
    /* the creator gave no proof of its own to the replayer */
    assert_int_equal(__atomic_load_n(&h->proved[0], __ATOMIC_ACQUIRE), 0);
    unsigned char zero[TC_AUTH_MAC_LEN] = {0};
    assert_memory_equal(h->mac[0], zero, TC_AUTH_MAC_LEN);
    tc_tp_ep_close(ep);
    tc_auth_key_wipe(&key);
    tc_tp_ctx_destroy(a);
}

static void test_forged_acceptor(void **state)
{
    tc_tp_ctx_t *a = tc_shmt_ctx_new(0, SECRET, NULL);
    unsigned char peer[TC_TP_SHM_ADDR_LEN], own[TC_TP_SHM_ADDR_LEN], na[TC_AUTH_NONCE_LEN];
    uint64_t a_nonce;
    char name[96];
    tc_shmt_addr(a, own);
    memcpy(&a_nonce, own + 24, 8);
    fake_addr(peer, 1, FAKE_NONCE + 1);
    seg_name(name, sizeof(name), (int)getpid(), a_nonce, FAKE_NONCE + 1);
    tc_tp_ep_t *ep;
    assert_int_equal(tc_tp_ep_connect(a, 1, peer, sizeof(peer), &ep), TC_OK);
    tc_shm_seg_hdr_t *h = segment_of(ep);
    /* without the secret: the public key, then a guess */
    tc_auth_nonce(na);
    answer(h, name, NULL, na);
    assert_int_equal(await_verdict(a, h, 0), TC_SHM_VERDICT_REFUSED);
    tc_tp_ctx_t *only[] = {a};
    assert_int_equal(tc_tpt_wait_failed(only, 1, ep, SU_WAIT_MS), TC_ERR_PEER_FAILED);
    assert_non_null(strstr(tc_tp_ep_error(ep), "its proof does not match (another job, or the "
                                               "secrets differ)"));
    assert_int_equal(__atomic_load_n(&h->proved[0], __ATOMIC_ACQUIRE), 0);
    tc_tp_req_t s = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(ep, 1, "x", 1, &s), TC_ERR_PEER_FAILED);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(a);
}

/* The opener's side: a segment made here, as a creator without the secret would. */
static void test_forged_initiator(void **state)
{
    tc_tp_ctx_t *b = tc_shmt_ctx_new(1, SECRET, NULL);
    unsigned char peer[TC_TP_SHM_ADDR_LEN], own[TC_TP_SHM_ADDR_LEN];
    uint64_t b_nonce;
    char name[96];
    tc_shmt_addr(b, own);
    memcpy(&b_nonce, own + 24, 8);
    fake_addr(peer, 0, FAKE_NONCE + 2);
    seg_name(name, sizeof(name), (int)getpid(), FAKE_NONCE + 2, b_nonce);
    uint32_t cell = 64, ncells = 2;
    size_t size = TC_SHM_HDR_SIZE + 2 * (2 * TC_SHM_LINE + ncells * (TC_SHM_CELL_HDR + cell)) +
                  2 * TC_SHM_LANE_BYTES;
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)size), 0);
    tc_shm_seg_hdr_t *h = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    assert_true(h != MAP_FAILED);
    close(fd);
    h->version = TC_SHM_VERSION;
    h->cell_size = cell;
    h->ncells = ncells;
    h->seg_size = size;
    h->id[0] = 0;
    h->id[1] = 1;
    h->pid[0] = h->pid[1] = (int32_t)getpid();
    tc_auth_nonce(h->nonce[0]);
    h->state[0] = TC_SHM_SIDE_UP;
    __atomic_store_n(&h->magic, TC_SHM_MAGIC, __ATOMIC_RELEASE);

    tc_tp_ep_t *ep;
    assert_int_equal(tc_tp_ep_connect(b, 0, peer, sizeof(peer), &ep), TC_OK);
    uint64_t deadline = tc_deadline_after_ms(SU_WAIT_MS);
    while (__atomic_load_n(&h->proved[1], __ATOMIC_ACQUIRE) == 0 && !tc_deadline_passed(deadline))
        (void)tc_tp_progress(b);
    assert_int_equal(__atomic_load_n(&h->proved[1], __ATOMIC_ACQUIRE), 1);
    /* the opener's proof checks out here; the forger answers with a guess */
    tc_auth_key_t key;
    tc_auth_transcript_t t;
    unsigned char extra[124];
    assert_int_equal(tc_auth_key_init(&key, SECRET, strlen(SECRET)), TC_OK);
    transcript(&t, extra, name, h, h->nonce[0], h->nonce[1]);
    assert_true(tc_auth_check(&key, TC_AUTH_ACCEPTOR, &t, h->mac[1]));
    tc_auth_key_wipe(&key);
    assert_int_equal(tc_auth_key_init(&key, "guess", 5), TC_OK);
    tc_auth_mac(&key, TC_AUTH_INITIATOR, &t, h->mac[0]);
    __atomic_store_n(&h->proved[0], 1, __ATOMIC_RELEASE);
    assert_int_equal(await_verdict(b, h, 1), TC_SHM_VERDICT_REFUSED);
    tc_tp_ctx_t *only[] = {b};
    assert_int_equal(tc_tpt_wait_failed(only, 1, ep, SU_WAIT_MS), TC_ERR_PEER_FAILED);
    assert_non_null(strstr(tc_tp_ep_error(ep), "did not prove it holds this job's secret"));
    tc_auth_key_wipe(&key);
    tc_tp_ep_close(ep);
    munmap(h, size);
    shm_unlink(name); /* gone already: the opener unlinks what it attached */
    tc_tp_ctx_destroy(b);
}

/* No secret on either side: the public key, and the pair works. */
static void test_no_secret_pair_works(void **state)
{
    tp_pair_t p;
    unsigned char addr[2][TP_ADDR_MAX];
    size_t len[2];
    for (int i = 0; i < 2; i++) {
        p.ctx[i] = tc_shmt_ctx_new((uint64_t)i, NULL, NULL);
        len[i] = tc_shmt_addr(p.ctx[i], addr[i]);
    }
    tc_tpt_pair_connect(&p, addr, len);
    tc_tpt_pair_up(&p, SU_WAIT_MS);
    unsigned char msg[100];
    tc_tpt_fill(msg, sizeof(msg), 7);
    tc_tpt_transfer(&p, 0, 5, msg, sizeof(msg), 7, 1);
    tc_tpt_pair_close(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_genuine_then_replayed_acceptor),
        cmocka_unit_test(test_forged_acceptor),
        cmocka_unit_test(test_forged_initiator),
        cmocka_unit_test(test_no_secret_pair_works),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
