/* The verbs backend against the emulated HCA (two contexts in one process, one thread or two),
 * and against the real libibverbs of this machine (which has no RDMA device): two-sided and
 * one-sided transfers, the eager ring, keepalives. Registrations: ib_reg_test.c. */
#include <arpa/inet.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ib_pair.h"
#include "tcomms/base/time.h"
#include "tcomms/transport/ib.h"
#include "tests/transport/tp_util.h"

/* ---- the real library: opened with dlopen, found here (libibverbs-dev brings it) ---- */
static void test_real_library_loaded(void **state)
{
    (void)state;
    const char *where = NULL;
    assert_int_equal(tc_tp_ib_verbs_library(&where), 1);
    assert_non_null(where);
    assert_non_null(strstr(where, "libibverbs"));
    assert_non_null(tc_ib_verbs_real());
}

/* ---- the real library: no device on this machine ---- */
static void test_real_no_device(void **state)
{
    (void)state;
    tc_tp_caps_t caps = {.size = sizeof(caps)};
    assert_int_equal(tc_tp_ib_ops.query(&caps), TC_OK);
    if (caps.available) {
        print_message("an RDMA device is present: the no-device checks do not apply\n");
        return;
    }
    assert_non_null(strstr(tc_last_error(), "no InfiniBand/RoCE device"));
    assert_int_equal(caps.one_sided, 1);
    tc_tp_ctx_params_t p = TC_TP_CTX_PARAMS_INIT;
    tc_tp_ctx_t *ctx = NULL;
    assert_int_equal(tc_tp_ctx_create(&tc_tp_ib_ops, &p, &ctx), TC_ERR_UNSUPPORTED);
    assert_null(ctx);
    assert_non_null(strstr(tc_last_error(), "no InfiniBand/RoCE device: "));
}

static void test_emu_no_device_port_down(void **state)
{
    (void)state;
    tc_ibemu_reset();
    tc_ibemu_set_no_device(1);
    tc_tp_caps_t caps = {.size = sizeof(caps)};
    assert_int_equal(tc_tp_ib_query_verbs(tc_ibemu_verbs(), &caps), TC_OK);
    assert_int_equal(caps.available, 0);
    assert_non_null(strstr(tc_last_error(), "Function not implemented"));
    tc_tp_ctx_params_t p = TC_TP_CTX_PARAMS_INIT;
    tc_tp_ctx_t *ctx = NULL;
    assert_int_equal(tc_tp_ib_ctx_create_verbs(tc_ibemu_verbs(), &p, &ctx), TC_ERR_UNSUPPORTED);
    assert_non_null(strstr(tc_last_error(), "no InfiniBand/RoCE device: "));
    tc_ibemu_set_no_device(0);
    tc_ibemu_set_port_down(1);
    assert_int_equal(tc_tp_ib_ctx_create_verbs(tc_ibemu_verbs(), &p, &ctx), TC_ERR_UNSUPPORTED);
    assert_non_null(strstr(tc_last_error(), "not active"));
    tc_ibemu_set_port_down(0);
    assert_int_equal(tc_tp_ib_query_verbs(tc_ibemu_verbs(), &caps), TC_OK);
    assert_int_equal(caps.available, 1);
    ib_emu_stats_t s = tc_ibemu_stats();
    assert_int_equal(s.live_mrs, 0);
}

static void test_send_recv_sizes(void **state)
{
    (void)state;
    pair_t p;
    pair_open(&p, "s", "s");
    static const size_t sizes[] = {
        0,     1,       8, TC_TP_IB_EAGER_MAX - 1, TC_TP_IB_EAGER_MAX, TC_TP_IB_EAGER_MAX + 1,
        65536, 4u << 20};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        for (int rf = 0; rf < 2; rf++) {
            xfer(&p, (int)(i % 2), 100 + i, sizes[i], sizes[i], rf, TC_OK);
            xfer(&p, 1 - (int)(i % 2), 200 + i, sizes[i], sizes[i] + 5, rf, TC_OK);
        }
    /* truncation, eager and rendezvous */
    xfer(&p, 0, 7, 100, 10, 1, TC_ERR_TRUNCATED);
    xfer(&p, 0, 8, 100000, 5000, 1, TC_ERR_TRUNCATED);
    xfer(&p, 1, 9, 100000, 5000, 0, TC_ERR_TRUNCATED);
    xfer(&p, 1, 10, 100000, 0, 1, TC_ERR_TRUNCATED);
    pair_close(&p);
}

/* Messages before their receive, eager and rendezvous (its data still at the sender): the probe
 * finds them, the second of a tag after the first is received; those of tags no receive will
 * take are freed on request, a rendezvous's sender then released by a FIN. */
static void test_unexpected(void **state)
{
    (void)state;
    pair_t p;
    pair_open(&p, "s", "s");
    tp_pair_t tp = {{p.ctx[0], p.ctx[1]}, {p.ep[0], p.ep[1]}};
    tc_tpt_probe_check(&tp, 100, 0, 1);
    tc_tpt_probe_check(&tp, TC_TP_IB_EAGER_MAX + 1, 4u << 20, 2);
    tc_tpt_discard_check(&tp, 100, WAIT_MS);
    tc_tpt_discard_check(&tp, TC_TP_IB_EAGER_MAX + 1, WAIT_MS);
    pair_close(&p);
}

/* Many messages in flight (more than the bounce buffers and the send queue), in order. */
static void test_many_messages(void **state)
{
    (void)state;
    pair_t p;
    pair_open(&p, NULL, NULL);
    enum { N = 700 };
    static tc_tp_req_t s[N], r[N];
    static uint32_t out[N], in[N];
    static unsigned char big[4][20000], bigin[4][20000];
    for (int i = 0; i < N; i++) {
        out[i] = (uint32_t)i * 2654435761u;
        in[i] = 0;
        s[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        r[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
    }
    for (int i = 0; i < N; i++) /* same tag: matched in posting order */
        assert_int_equal(tc_tp_send(p.ep[0], 5, &out[i], 4, &s[i]), TC_OK);
    for (int k = 0; k < 4; k++) {
        fill(big[k], sizeof(big[k]), (uint64_t)k);
        tc_tp_req_t bs = TC_TP_REQ_INIT, br = TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_send(p.ep[1], 6, big[k], sizeof(big[k]), &bs), TC_OK);
        assert_int_equal(tc_tp_recv(p.ep[0], 6, bigin[k], sizeof(bigin[k]), &br), TC_OK);
        spin_until(&p, &br.status, WAIT_MS);
        spin_until(&p, &bs.status, WAIT_MS);
        assert_int_equal(br.status, TC_OK);
        assert_int_equal(check(bigin[k], sizeof(bigin[k]), (uint64_t)k), sizeof(bigin[k]));
    }
    for (int i = 0; i < N; i++)
        assert_int_equal(tc_tp_recv(p.ep[1], 5, &in[i], 4, &r[i]), TC_OK);
    spin_until(&p, &r[N - 1].status, WAIT_MS);
    for (int i = 0; i < N; i++) {
        assert_int_equal(r[i].status, TC_OK);
        assert_int_equal(s[i].status, TC_OK);
        assert_int_equal(in[i], out[i]);
    }
    pair_close(&p);
}

static void test_put_get_signal(void **state)
{
    (void)state;
    pair_t p;
    pair_open(&p, NULL, NULL);
    region_t r;
    region_open(&p, 1, 1 << 20, &r);
    unsigned char *src = malloc(1 << 20), *back = malloc(1 << 20);
    assert_non_null(src);
    assert_non_null(back);
    static const size_t sizes[] = {0, 1, 7, 4096, 100000, (1 << 20) - 64};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t len = sizes[i], off = i * 8;
        fill(src, len, i);
        tc_tp_req_t q = TC_TP_REQ_INIT, g = TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_put(p.ep[0], src, len, r.rkey, off, &q), TC_OK);
        spin_until(&p, &q.status, WAIT_MS);
        assert_int_equal(q.status, TC_OK);
        assert_int_equal(check(r.buf + off, len, i), len);
        memset(back, 0, len + 1);
        assert_int_equal(tc_tp_get(p.ep[0], back, len, r.rkey, off, &g), TC_OK);
        spin_until(&p, &g.status, WAIT_MS);
        assert_int_equal(g.status, TC_OK);
        assert_int_equal(check(back, len, i), len);
    }
    /* signals: add accumulates, set overwrites (compare-and-swap loop) */
    uint64_t *w = (uint64_t *)(void *)(r.buf + 4096);
    memset(r.buf + 4096, 0, 16);
    *w = 5;
    for (int k = 0; k < 3; k++) {
        tc_tp_req_t q = TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_signal(p.ep[0], r.rkey, 4096, TC_TP_SIGNAL_ADD, 10, &q), TC_OK);
        spin_until(&p, &q.status, WAIT_MS);
        assert_int_equal(q.status, TC_OK);
    }
    assert_int_equal(tc_tp_signal_read(r.mem, 4096), 35);
    tc_tp_req_t q = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_signal(p.ep[0], r.rkey, 4096, TC_TP_SIGNAL_SET, 0xabcdef0123ULL, &q),
                     TC_OK);
    spin_until(&p, &q.status, WAIT_MS);
    assert_int_equal(q.status, TC_OK);
    assert_int_equal(tc_tp_signal_read(r.mem, 4096), 0xabcdef0123ULL);
    assert_int_equal(tc_tp_signal_read(r.mem, 4104), 0);

    /* 600 puts (more than the send queue) then a signal: in order, all data before it */
    enum { N = 600 };
    static tc_tp_req_t puts[N];
    fill(src, N * 1000, 77);
    for (int i = 0; i < N; i++) {
        puts[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        assert_int_equal(
            tc_tp_put(p.ep[0], src + i * 1000, 1000, r.rkey, (uint64_t)i * 1000, &puts[i]), TC_OK);
    }
    tc_tp_req_t sig = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_signal(p.ep[0], r.rkey, 800000, TC_TP_SIGNAL_ADD, 1, &sig),
                     TC_OK); /* after the data */
    spin_until(&p, &sig.status, WAIT_MS);
    assert_int_equal(sig.status, TC_OK);
    for (int i = 0; i < N; i++)
        assert_int_equal(puts[i].status, TC_OK);
    assert_int_equal(check(r.buf, 600 * 1000, 77), 600 * 1000);
    free(src);
    free(back);
    region_close(&r);
    pair_close(&p);
}

/* A SET whose compare-and-swap lost (the word is not 0) retries from its completion; without
 * the SET's order (test_signal_set_in_order), behind the send queue full of ADDs posted after
 * it, and later signals started while that retry was in flight. Each signal's old value lands in a
 * scratch word of the endpoint: a scratch word given to a later signal while the retry still uses
 * it would take two HCA writes in any order, and the retry could read the other's value (a lost or
 * misapplied SET). The emulation counts such overlaps; there must be none. */
static void test_signal_scratch_reuse(void **state)
{
    (void)state;
    pair_t p;
    pair_open(&p, NULL, NULL);
    region_t r;
    region_open(&p, 1, 64, &r);
    uint64_t *w = (uint64_t *)(void *)r.buf;
    *w = 5;
    enum { ADDS = 600 };
    static tc_tp_req_t reqs[ADDS + 1];
    reqs[0] = (tc_tp_req_t)TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_signal(p.ep[0], r.rkey, 0, TC_TP_SIGNAL_SET, 100, &reqs[0]), TC_OK);
    for (int i = 1; i <= ADDS; i++) {
        reqs[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_signal(p.ep[0], r.rkey, 0, TC_TP_SIGNAL_ADD, 1, &reqs[i]), TC_OK);
    }
    spin_until(&p, &reqs[ADDS].status, WAIT_MS);
    spin_until(&p, &reqs[0].status, WAIT_MS);
    for (int i = 0; i <= ADDS; i++)
        assert_int_equal(reqs[i].status, TC_OK);
    ib_emu_stats_t s = tc_ibemu_stats();
    assert_int_equal(s.local_overlaps, 0);
    assert_int_equal(s.fetch_adds, ADDS);
    assert_true(s.cmp_swaps >= 2); /* guessed 0, then retried */
    /* in order: the SET, then every ADD */
    assert_int_equal(tc_tp_signal_read(r.mem, 0), 100 + ADDS);
    region_close(&r);
    pair_close(&p);
}

/* Signals of one endpoint apply in the order posted, as over tcp and shm: a SET whose first
 * compare-and-swap guessed wrong (the word was not 0) retries, and the signals posted after it
 * must not land before its retry. */
static void test_signal_set_in_order(void **state)
{
    (void)state;
    pair_t p;
    pair_open(&p, NULL, NULL);
    region_t r;
    region_open(&p, 1, 64, &r);
    *(uint64_t *)(void *)r.buf = 5;
    static const struct {
        tc_tp_signal_op_t op;
        uint64_t v;
    } seq[] = {{TC_TP_SIGNAL_SET, 100}, {TC_TP_SIGNAL_ADD, 1}, {TC_TP_SIGNAL_ADD, 2},
               {TC_TP_SIGNAL_SET, 7},   {TC_TP_SIGNAL_SET, 9}, {TC_TP_SIGNAL_ADD, 1}};
    enum { NSEQ = sizeof(seq) / sizeof(seq[0]) };
    tc_tp_req_t q[NSEQ];
    for (int i = 0; i < NSEQ; i++) {
        q[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_signal(p.ep[0], r.rkey, 8 * (i >= 3), seq[i].op, seq[i].v, &q[i]),
                         TC_OK);
    }
    for (int i = 0; i < NSEQ; i++) {
        spin_until(&p, &q[i].status, WAIT_MS);
        assert_int_equal(q[i].status, TC_OK);
    }
    assert_int_equal(tc_tp_signal_read(r.mem, 0), 103); /* 5, SET 100, +1, +2 */
    assert_int_equal(tc_tp_signal_read(r.mem, 8), 10);  /* 0, SET 7, SET 9, +1 */
    region_close(&r);
    pair_close(&p);
}

/* A forged remote key: the HCA answers with a remote access error -> TC_ERR_PROTOCOL. */
static void test_bad_rkey(void **state)
{
    (void)state;
    pair_t p;
    pair_open(&p, NULL, NULL);
    region_t r;
    region_open(&p, 1, 4096, &r);
    unsigned char blob[64];
    size_t n;
    assert_int_equal(tc_tp_rkey_pack(r.mem, blob, sizeof(blob), &n), TC_OK);
    blob[32] ^= 0x55; /* the rkey */
    tc_tp_rkey_t *bad;
    assert_int_equal(tc_tp_rkey_unpack(p.ep[0], blob, n, &bad), TC_OK);
    assert_int_equal(tc_tp_rkey_unpack(p.ep[1], blob, n, &bad), TC_ERR_INVALID_ARG);
    unsigned char x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    tc_tp_req_t q = TC_TP_REQ_INIT, rr = TC_TP_REQ_INIT;
    unsigned char in[4];
    assert_int_equal(tc_tp_recv(p.ep[0], 3, in, 4, &rr), TC_OK);
    assert_int_equal(tc_tp_put(p.ep[0], x, 8, bad, 0, &q), TC_OK);
    spin_until(&p, &q.status, WAIT_MS);
    assert_int_equal(q.status, TC_ERR_PROTOCOL);
    assert_int_equal(p.ep[0]->failed, TC_ERR_PROTOCOL);
    assert_non_null(strstr(tc_tp_ep_error(p.ep[0]), "remote access error"));
    assert_int_equal(rr.status, TC_ERR_PROTOCOL); /* the pending receive fails with it */
    for (int i = 0; i < 8; i++)
        assert_int_equal(r.buf[i], 0);
    /* the target's QP went to the error state: its endpoint fails too */
    uint64_t deadline = tc_deadline_after_ms(WAIT_MS);
    while (p.ep[1]->failed == TC_OK && !tc_deadline_passed(deadline))
        tc_tp_progress(p.ctx[1]);
    assert_int_equal(p.ep[1]->failed, TC_ERR_PEER_FAILED);
    tc_tp_req_t q2 = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_put(p.ep[0], x, 8, r.rkey, 0, &q2), TC_ERR_PROTOCOL);
    tc_tp_rkey_release(bad);
    region_close(&r);
    pair_close(&p);
}

/* The peer's context is destroyed: the next operation fails with retries exceeded, and a
 * rendezvous send waiting for its FIN fails too. */
static void test_peer_gone(void **state)
{
    (void)state;
    pair_t p;
    pair_open(&p, NULL, NULL);
    region_t r;
    region_open(&p, 1, 4096, &r);
    static unsigned char big[50000];
    tc_tp_req_t rs = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(p.ep[0], 1, big, sizeof(big), &rs), TC_OK);
    tc_tp_progress(p.ctx[0]);
    tc_tp_rkey_t *k = r.rkey;
    tc_tp_mem_dereg(r.mem);
    free(r.buf);
    tc_tp_ep_close(p.ep[1]);
    tc_tp_ctx_destroy(p.ctx[1]);
    unsigned char x[8] = {0};
    tc_tp_req_t q = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_put(p.ep[0], x, 8, k, 0, &q), TC_OK);
    uint64_t deadline = tc_deadline_after_ms(WAIT_MS);
    while (q.status == TC_INPROGRESS && !tc_deadline_passed(deadline))
        tc_tp_progress(p.ctx[0]);
    assert_int_equal(q.status, TC_ERR_PEER_FAILED);
    assert_int_equal(rs.status, TC_ERR_PEER_FAILED);
    assert_non_null(strstr(tc_tp_ep_error(p.ep[0]), "transport retries exceeded"));
    tc_tp_rkey_release(k);
    tc_tp_ep_close(p.ep[0]);
    tc_tp_ctx_destroy(p.ctx[0]);
    ib_emu_stats_t s = tc_ibemu_stats();
    assert_int_equal(s.live_qps, 0);
    assert_int_equal(s.live_mrs, 0);
}

/* A wrong secret: the active side finds that the passive side's challenge does not prove its
 * secret. */
static void test_wrong_secret(void **state)
{
    (void)state;
    pair_t p;
    pair_open(&p, "a", "b");
    tc_tp_req_t s = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(p.ep[0], 1, "x", 1, &s), TC_OK);
    spin_until(&p, &s.status, WAIT_MS);
    assert_int_equal(s.status, TC_ERR_PEER_FAILED);
    assert_non_null(strstr(tc_tp_ep_error(p.ep[0]), "failed the challenge: its MAC does not "
                                                    "prove the job secret"));
    pair_close(&p);
}

/* Two threads, each driving its own context: ping-pong of mixed sizes. */
typedef struct targ {
    pair_t *p;
    int side, errors;
} targ_t;

static void *thread_main(void *a_)
{
    targ_t *a = a_;
    tc_tp_ep_t *ep = a->p->ep[a->side];
    tc_tp_ctx_t *ctx = a->p->ctx[a->side];
    static const size_t sizes[] = {1, 8192, 8193, 300000};
    unsigned char *buf = malloc(300000);
    for (int it = 0; it < 40 && buf; it++) {
        size_t len = sizes[it % 4];
        tc_tp_req_t q = TC_TP_REQ_INIT;
        if ((it % 2) == a->side) {
            fill(buf, len, (uint64_t)it);
            tc_tp_send(ep, (uint64_t)it, buf, len, &q);
        } else {
            tc_tp_recv(ep, (uint64_t)it, buf, 300000, &q);
        }
        uint64_t deadline = tc_deadline_after_ms(WAIT_MS);
        while (q.status == TC_INPROGRESS && !tc_deadline_passed(deadline))
            tc_tp_progress(ctx);
        if (q.status != TC_OK || ((it % 2) != a->side && check(buf, len, (uint64_t)it) != len))
            a->errors++;
    }
    free(buf);
    return NULL;
}

static void test_two_threads(void **state)
{
    (void)state;
    pair_t p;
    pair_open(&p, NULL, NULL);
    targ_t a[2] = {{&p, 0, 0}, {&p, 1, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, thread_main, &a[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(a[0].errors, 0);
    assert_int_equal(a[1].errors, 0);
    pair_close(&p);
}

/* ---- eager ring: RDMA write with immediate data and credits ---- */

#define RING_SLOTS 64 /* TC_IB_NRECV: ring slots, i.e. credits, per endpoint (ib_internal.h) */

static size_t ring_size(int i)
{
    static const size_t sizes[] = {0, 1, 7, TC_TP_IB_EAGER_MAX - 1, TC_TP_IB_EAGER_MAX, 100};
    return sizes[i % 6];
}

/* More sends than ring slots while the receiver does not progress: exactly RING_SLOTS are
 * written (then the sender waits for credits, never overwriting an unconsumed slot and never
 * finding no receive posted), and all arrive in order and intact once the receiver runs. */
static void test_ring_credits(void **state)
{
    (void)state;
    pair_t p;
    pair_open(&p, NULL, NULL);
    enum { N = 3 * RING_SLOTS + 5 };
    static unsigned char out[N][TC_TP_IB_EAGER_MAX], in[N][TC_TP_IB_EAGER_MAX + 8];
    static tc_tp_req_t s[N], r[N];
    /* bring the QPs up first (handshake), so that the count below is about credits only */
    xfer(&p, 0, 1, 1, 1, 1, TC_OK);
    int w0 = tc_ibemu_stats().writes_imm;
    for (int i = 0; i < N; i++) {
        fill(out[i], ring_size(i), (uint64_t)i);
        s[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        r[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_send(p.ep[0], 9, out[i], ring_size(i), &s[i]), TC_OK);
    }
    for (int k = 0; k < 2000; k++) /* the slow receiver: only the sender progresses */
        tc_tp_progress(p.ctx[0]);
    /* the first message's credit is still owed by the receiver (credits go back in batches of
     * half the ring, or with the receiver's own messages) */
    int done = 0;
    for (int i = 0; i < N; i++)
        done += s[i].status == TC_OK;
    assert_int_equal(done, RING_SLOTS - 1);
    for (int i = 0; i < RING_SLOTS - 1; i++)
        assert_int_equal(s[i].status, TC_OK); /* in posting order */
    ib_emu_stats_t st = tc_ibemu_stats();
    assert_int_equal(st.writes_imm - w0, RING_SLOTS - 1);
    assert_int_equal(st.rnr_errors, 0);
    assert_int_equal(p.ep[0]->failed, TC_OK);
    /* now the receiver consumes (unexpected queue), credits flow back, the rest is written */
    spin_until(&p, &s[N - 1].status, WAIT_MS);
    for (int i = 0; i < N; i++)
        assert_int_equal(s[i].status, TC_OK);
    for (int i = 0; i < N; i++) {
        memset(in[i], 0xEE, sizeof(in[i]));
        assert_int_equal(tc_tp_recv(p.ep[1], 9, in[i], TC_TP_IB_EAGER_MAX + 8, &r[i]), TC_OK);
    }
    spin_until(&p, &r[N - 1].status, WAIT_MS);
    for (int i = 0; i < N; i++) {
        assert_int_equal(r[i].status, TC_OK);
        assert_int_equal(r[i].bytes, ring_size(i));
        assert_int_equal(check(in[i], ring_size(i), (uint64_t)i), ring_size(i));
        assert_int_equal(in[i][ring_size(i)], 0xEE);
    }
    /* both directions at once, with receives posted first: credits also return piggybacked */
    for (int i = 0; i < N; i++) {
        int from = i % 2;
        r[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_recv(p.ep[1 - from], 10, in[i], sizeof(in[i]), &r[i]), TC_OK);
    }
    for (int i = 0; i < N; i++) {
        s[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_send(p.ep[i % 2], 10, out[i], ring_size(i), &s[i]), TC_OK);
    }
    spin_until(&p, &r[N - 1].status, WAIT_MS);
    spin_until(&p, &r[N - 2].status, WAIT_MS);
    for (int i = 0; i < N; i++) {
        assert_int_equal(r[i].status, TC_OK);
        assert_int_equal(check(in[i], ring_size(i), (uint64_t)i), ring_size(i));
    }
    assert_int_equal(tc_ibemu_stats().rnr_errors, 0);
    pair_close(&p);
}

/* A corrupt or hostile peer: the emulation rewrites its next write with immediate data. */
typedef struct tamper {
    int mode, fired;
} tamper_t;

enum {
    T_SLOT_OUT,  /* slot index beyond the ring */
    T_SLOT_SKIP, /* a valid slot, not the next one */
    T_LEN_BIG,   /* length beyond the slot */
    T_LEN_SHORT, /* shorter than a header */
    T_LEN_WRONG, /* immediate length differs from the bytes written */
    T_HDR_LEN,   /* header length disagrees with the payload */
    T_KIND,      /* unknown kind */
    T_CREDITS,   /* returns more credits than it could owe */
    T_SEND,      /* a zero-length SEND instead of a write with immediate data */
    T_FIN,       /* FIN for a rendezvous that does not exist */
    T_RTS_ID,    /* RTS with a rendezvous id beyond 22 bits */
};

static void tamper_fn(struct ibv_send_wr *wr, void *arg)
{
    tamper_t *t = arg;
    if (t->fired || wr->opcode != IBV_WR_RDMA_WRITE_WITH_IMM)
        return;
    uint32_t imm = ntohl(wr->imm_data), kind = imm >> 30;
    unsigned char *b = wr->num_sge ? (unsigned char *)(uintptr_t)wr->sg_list[0].addr : NULL;
    if (t->mode == T_FIN ? kind != 2 : kind != 0)
        return;
    t->fired = 1;
    switch (t->mode) {
    case T_SLOT_OUT:
        imm = (imm & ~(0xffu << 14)) | (200u << 14);
        break;
    case T_SLOT_SKIP:
        imm = (imm & ~(0xffu << 14)) | ((((imm >> 14) & 0xff) + 5) << 14);
        break;
    case T_LEN_BIG:
        imm |= 0x3fff;
        break;
    case T_LEN_SHORT:
        imm = (imm & ~0x3fffu) | 10;
        break;
    case T_LEN_WRONG:
        imm = (imm & ~0x3fffu) | ((imm & 0x3fff) - 1);
        break;
    case T_HDR_LEN:
        b[16] ^= 0x40; /* the u64 length in the header */
        break;
    case T_KIND:
        imm |= 3u << 30;
        break;
    case T_CREDITS:
        imm = (imm & ~(0xffu << 22)) | (200u << 22);
        break;
    case T_SEND:
        wr->opcode = IBV_WR_SEND;
        wr->num_sge = 0;
        break;
    case T_FIN:
        imm ^= 0x155555;
        break;
    case T_RTS_ID:
        b[44] = 0x7f; /* the u64 rendezvous id */
        break;
    }
    wr->imm_data = htonl(imm);
}

static void test_hostile_immediate(void **state)
{
    (void)state;
    static const struct {
        int mode;
        const char *text;
    } cases[] = {
        {T_SLOT_OUT, "wrote ring slot 200 where slot"},
        {T_SLOT_SKIP, "where slot"},
        {T_LEN_BIG, "announced 16383 bytes"},
        {T_LEN_SHORT, "announced 10 bytes"},
        {T_LEN_WRONG, "bytes in ring slot"},
        {T_HDR_LEN, "malformed message"},
        {T_KIND, "unknown kind"},
        {T_CREDITS, "returned 200 credits"},
        {T_SEND, "not an RDMA write with immediate data"},
        {T_FIN, "FIN for an unknown rendezvous"},
        {T_RTS_ID, "malformed message"},
    };
    static unsigned char big[20000], in[20000];
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        pair_t p;
        pair_open(&p, NULL, NULL);
        xfer(&p, 0, 1, 10, 10, 1, TC_OK); /* up, and one message through the ring first */
        tamper_t t = {cases[c].mode, 0};
        tc_ibemu_set_tamper(tamper_fn, &t);
        tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
        int victim = 1; /* the receiver of the tampered write */
        int big_msg = cases[c].mode == T_FIN || cases[c].mode == T_RTS_ID;
        assert_int_equal(tc_tp_recv(p.ep[1], 2, in, sizeof(in), &r), TC_OK);
        assert_int_equal(tc_tp_send(p.ep[0], 2, big, big_msg ? sizeof(big) : 5, &s), TC_OK);
        tc_tp_req_t *watch = &r;
        if (cases[c].mode == T_FIN) { /* the FIN goes from 1 to 0: the sender is the victim */
            victim = 0;
            watch = &s;
        }
        spin_until(&p, &watch->status, WAIT_MS);
        assert_int_equal(t.fired, 1);
        assert_int_equal(watch->status, TC_ERR_PROTOCOL);
        assert_int_equal(p.ep[victim]->failed, TC_ERR_PROTOCOL);
        if (strstr(tc_tp_ep_error(p.ep[victim]), cases[c].text) == NULL)
            print_error("case %zu: %s\n", c, tc_tp_ep_error(p.ep[victim]));
        assert_non_null(strstr(tc_tp_ep_error(p.ep[victim]), cases[c].text));
        assert_non_null(strstr(tc_tp_ep_error(p.ep[victim]), victim ? "peer 0" : "peer 1"));
        tc_ibemu_set_tamper(NULL, NULL);
        pair_close(&p);
    }
}

/* ---- keepalive: a dead peer noticed on an idle endpoint ---- */

static void pair_open_ka(pair_t *p, const char *ka_ms)
{
    setenv("TC_IB_KEEPALIVE_MS", ka_ms, 1);
    pair_open(p, NULL, NULL);
    unsetenv("TC_IB_KEEPALIVE_MS");
    xfer(p, 0, 1, 1, 1, 1, TC_OK); /* up */
}

/* A receive pending on an endpoint whose peer's QP is destroyed completes with PEER_FAILED
 * within a bounded time although nothing is sent by the test. */
static void test_keepalive_dead_peer(void **state)
{
    (void)state;
    pair_t p;
    pair_open_ka(&p, "100");
    unsigned char buf[16];
    tc_tp_req_t r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(p.ep[1], 5, buf, sizeof(buf), &r), TC_OK);
    tc_tp_ep_close(p.ep[0]); /* the peer dies: its QP is destroyed */
    tc_tp_ctx_destroy(p.ctx[0]);
    uint64_t t0 = tc_time_ns(), deadline = tc_deadline_after_ms(WAIT_MS);
    while (r.status == TC_INPROGRESS && !tc_deadline_passed(deadline)) {
        tc_tp_progress(p.ctx[1]);
        tc_tp_wait(p.ctx[1], 1);
    }
    uint64_t ms = (tc_time_ns() - t0) / 1000000u;
    assert_int_equal(r.status, TC_ERR_PEER_FAILED);
    assert_true(ms >= 90);  /* after an idle interval, not at once */
    assert_true(ms < 1500); /* and soon after it */
    assert_int_equal(p.ep[1]->failed, TC_ERR_PEER_FAILED);
    assert_non_null(strstr(tc_tp_ep_error(p.ep[1]), "peer 0"));
    assert_non_null(strstr(tc_tp_ep_error(p.ep[1]), "keepalive"));
    assert_int_equal(tc_ibemu_stats().zero_writes, 0); /* it failed: the peer was gone */
    tc_tp_ep_close(p.ep[1]);
    tc_tp_ctx_destroy(p.ctx[1]);
    ib_emu_stats_t s = tc_ibemu_stats();
    assert_int_equal(s.live_qps, 0);
    assert_int_equal(s.live_mrs, 0);
}

/* A live peer: keepalives only while something waits, they succeed, the endpoint stays up; and
 * TC_IB_KEEPALIVE_MS=0 turns them off (then a dead peer is not noticed by a receive). */
static void test_keepalive_live_and_off(void **state)
{
    (void)state;
    pair_t p;
    pair_open_ka(&p, "50");
    progress_for(&p, 300); /* nothing pending: no keepalive */
    assert_int_equal(tc_ibemu_stats().zero_writes, 0);
    unsigned char buf[16] = {0};
    tc_tp_req_t r = TC_TP_REQ_INIT, s = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(p.ep[1], 5, buf, sizeof(buf), &r), TC_OK);
    progress_for(&p, 400);
    int ka = tc_ibemu_stats().zero_writes;
    assert_true(ka >= 2);
    assert_true(ka <= 9); /* one per idle interval, not one per progress call */
    assert_int_equal(r.status, TC_INPROGRESS);
    assert_int_equal(p.ep[1]->failed, TC_OK);
    assert_int_equal(tc_tp_send(p.ep[0], 5, "alive", 5, &s), TC_OK);
    spin_until(&p, &r.status, WAIT_MS);
    assert_int_equal(r.status, TC_OK);
    assert_memory_equal(buf, "alive", 5);
    pair_close(&p);

    pair_open_ka(&p, "0");
    r = (tc_tp_req_t)TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(p.ep[1], 5, buf, sizeof(buf), &r), TC_OK);
    tc_tp_ep_close(p.ep[0]);
    tc_tp_ctx_destroy(p.ctx[0]);
    uint64_t deadline = tc_deadline_after_ms(300);
    while (!tc_deadline_passed(deadline))
        tc_tp_progress(p.ctx[1]);
    assert_int_equal(r.status, TC_INPROGRESS);
    assert_int_equal(tc_ibemu_stats().zero_writes, 0);
    tc_tp_ep_close(p.ep[1]);
    assert_int_equal(r.status, TC_ERR_ABORTED);
    tc_tp_ctx_destroy(p.ctx[1]);
    assert_int_equal(tc_ibemu_stats().live_qps, 0);
}

/* TC_SOCKET_IFNAME listing the tcp transport's rails: the handshake listener takes the first
 * entry; a first entry that is no interface is refused, naming it. */
static void test_ifname_list(void **state)
{
    (void)state;
    tc_tp_ctx_params_t p = TC_TP_CTX_PARAMS_INIT;
    tc_tp_ctx_t *ctx = NULL;
    setenv("TC_SOCKET_IFNAME", "lo,nosuch0", 1);
    ctx = ctx_new(0, NULL);
    tc_tp_ctx_destroy(ctx);
    ctx = NULL;
    setenv("TC_SOCKET_IFNAME", "nosuch0,lo", 1);
    assert_int_equal(tc_tp_ib_ctx_create_verbs(tc_ibemu_verbs(), &p, &ctx), TC_ERR_CONFIG);
    assert_null(ctx);
    assert_non_null(strstr(tc_last_error(), "no IPv4 interface named 'nosuch0' is up"));
    setenv("TC_SOCKET_IFNAME", "lo", 1);
}

int main(void)
{
    setenv("TC_SOCKET_IFNAME", "lo", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_library_loaded),
        cmocka_unit_test(test_real_no_device),
        cmocka_unit_test(test_emu_no_device_port_down),
        cmocka_unit_test(test_send_recv_sizes),
        cmocka_unit_test(test_unexpected),
        cmocka_unit_test(test_many_messages),
        cmocka_unit_test(test_put_get_signal),
        cmocka_unit_test(test_signal_scratch_reuse),
        cmocka_unit_test(test_signal_set_in_order),
        cmocka_unit_test(test_bad_rkey),
        cmocka_unit_test(test_peer_gone),
        cmocka_unit_test(test_wrong_secret),
        cmocka_unit_test(test_two_threads),
        cmocka_unit_test(test_ring_credits),
        cmocka_unit_test(test_hostile_immediate),
        cmocka_unit_test(test_keepalive_dead_peer),
        cmocka_unit_test(test_keepalive_live_and_off),
        cmocka_unit_test(test_ifname_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
