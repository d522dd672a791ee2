/* Two shm contexts in one process, driven by one thread: every size around the thresholds,
 * ordering with many operations in flight, truncation, one-sided operations, refusals, close,
 * cancel and the /dev/shm pre-flight. Each test runs with single copy (process_vm_readv) and
 * with pipelined copies through the cells (shm_cma=0), and with tiny rings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shm_util.h"
#include "tcomms/base/status.h"
#include "tcomms/transport/shm.h"
#include "tcomms/transport/shm_layout.h"
#include "tcomms/transport/transport.h"
#include "tests/transport/tp_util.h"

#define GUARD 0xA5
#define CELL 8192 /* the default cell size = eager limit */

static const char *mode(void **state)
{
    return *state;
}

static size_t cell_of(void **state)
{
    return strstr(mode(state), "shm_cell_size=64") ? 64 : CELL;
}

static void check_guard(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != GUARD)
            fail_msg("guard byte %zu overwritten (0x%02x)", i, p[i]);
}

/* One message of @p len bytes 0 -> 1 into a receive of @p cap bytes (+64 guard bytes);
 * @p unexpected posts the send first. */
static void one_message(tp_pair_t *p, size_t len, size_t cap, int unexpected, uint64_t seed)
{
    unsigned char *src = malloc(len + 1);
    unsigned char *dst = malloc(cap + 64);
    assert_non_null(src);
    assert_non_null(dst);
    tc_tpt_fill(src, len, seed);
    memset(dst, GUARD, cap + 64);
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
    if (unexpected) {
        assert_int_equal(tc_tp_send(p->ep[0], 7, src, len, &s), TC_OK);
        tc_tpt_spin(p->ctx, 2, 1); /* let it arrive before the receive */
        assert_int_equal(tc_tp_recv(p->ep[1], 7, dst, cap, &r), TC_OK);
    } else {
        assert_int_equal(tc_tp_recv(p->ep[1], 7, dst, cap, &r), TC_OK);
        assert_int_equal(tc_tp_send(p->ep[0], 7, src, len, &s), TC_OK);
    }
    tc_status_t want = len <= cap ? TC_OK : TC_ERR_TRUNCATED;
    size_t n = len <= cap ? len : cap;
    assert_int_equal(tc_tpt_wait_req(p->ctx, 2, &r, SU_WAIT_MS), want);
    assert_int_equal(tc_tpt_wait_req(p->ctx, 2, &s, SU_WAIT_MS), TC_OK);
    assert_int_equal(r.bytes, n);
    assert_int_equal(s.bytes, len);
    assert_int_equal(tc_tpt_check(dst, n, seed), n);
    check_guard(dst + n, cap + 64 - n);
    free(src);
    free(dst);
}

static void test_sizes(void **state)
{
    tp_pair_t p;
    tc_shmt_pair_open(&p, mode(state));
    size_t c = cell_of(state);
    int cma = strstr(mode(state), "shm_cma=0") == NULL;
    assert_int_equal(tc_tp_shm_ep_single_copy(p.ep[0]), cma);
    assert_int_equal(tc_tp_shm_ep_single_copy(p.ep[1]), cma);
    size_t sizes[] = {0,         1,     2,         63,        c - 1,  c,        c + 1,
                      2 * c - 1, 2 * c, 2 * c + 1, 3 * c + 5, 100000, 1u << 20, 64u << 20};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        for (int unexp = 0; unexp < 2; unexp++) {
            if (c == 64 && sizes[i] > (1u << 20))
                continue; /* a million 64-byte cells: slow under tsan, nothing new */
            one_message(&p, sizes[i], sizes[i], unexp, sizes[i] * 2 + (size_t)unexp);
        }
    tc_tpt_pair_close(&p);
}

static void test_truncation(void **state)
{
    tp_pair_t p;
    tc_shmt_pair_open(&p, mode(state));
    size_t c = cell_of(state);
    size_t sizes[] = {1, c, c + 1, 4 * c + 3, 1u << 20};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        for (int unexp = 0; unexp < 2; unexp++) {
            one_message(&p, sizes[i], sizes[i] / 2, unexp, i);
            one_message(&p, sizes[i], 0, unexp, i + 100);
        }
    one_message(&p, 3 * c, 3 * c, 0, 77); /* the stream is intact afterwards */
    tc_tpt_pair_close(&p);
}

/* Many sends in flight on three tags, receives posted in another tag order: per tag FIFO. */
static void test_ordering(void **state)
{
    enum { N = 300 };
    tp_pair_t p;
    tc_shmt_pair_open(&p, mode(state));
    size_t c = cell_of(state);
    static tc_tp_req_t s[N], r[N];
    static unsigned char *src[N], *dst[N];
    size_t len[N];
    for (int i = 0; i < N; i++) {
        len[i] = (size_t)(i * 37) % (3 * c + 7);
        src[i] = malloc(len[i] + 1);
        dst[i] = malloc(len[i] + 1);
        tc_tpt_fill(src[i], len[i], (uint64_t)i);
        memset(dst[i], 0, len[i] + 1);
        s[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        r[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
    }
    /* tag of message i is i % 3; receives of tag 0 first, then sends, then tags 2 and 1 */
    for (int i = 0; i < N; i += 3)
        assert_int_equal(tc_tp_recv(p.ep[1], 0, dst[i], len[i], &r[i]), TC_OK);
    for (int i = 0; i < N; i++)
        assert_int_equal(tc_tp_send(p.ep[0], (uint64_t)(i % 3), src[i], len[i], &s[i]), TC_OK);
    tc_tpt_spin(p.ctx, 2, 2);
    for (int t = 2; t >= 1; t--)
        for (int i = t; i < N; i += 3)
            assert_int_equal(tc_tp_recv(p.ep[1], (uint64_t)t, dst[i], len[i], &r[i]), TC_OK);
    for (int i = 0; i < N; i++) {
        assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &r[i], SU_WAIT_MS), TC_OK);
        assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &s[i], SU_WAIT_MS), TC_OK);
        assert_int_equal(r[i].bytes, len[i]);
        assert_int_equal(tc_tpt_check(dst[i], len[i], (uint64_t)i), len[i]);
    }
    for (int i = 0; i < N; i++) {
        free(src[i]);
        free(dst[i]);
    }
    tc_tpt_pair_close(&p);
}

/* Both directions at once, with large messages crossing. */
static void test_both_ways(void **state)
{
    tp_pair_t p;
    tc_shmt_pair_open(&p, mode(state));
    size_t len = 3u << 20;
    unsigned char *a = malloc(len), *b = malloc(len), *ra = malloc(len), *rb = malloc(len);
    tc_tpt_fill(a, len, 1);
    tc_tpt_fill(b, len, 2);
    tc_tp_req_t sa = TC_TP_REQ_INIT, sb = TC_TP_REQ_INIT, qa = TC_TP_REQ_INIT, qb = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(p.ep[0], 1, a, len, &sa), TC_OK);
    assert_int_equal(tc_tp_send(p.ep[1], 1, b, len, &sb), TC_OK);
    assert_int_equal(tc_tp_recv(p.ep[0], 1, rb, len, &qb), TC_OK);
    assert_int_equal(tc_tp_recv(p.ep[1], 1, ra, len, &qa), TC_OK);
    tc_tp_req_t *all[] = {&sa, &sb, &qa, &qb};
    for (int i = 0; i < 4; i++)
        assert_int_equal(tc_tpt_wait_req(p.ctx, 2, all[i], SU_WAIT_MS), TC_OK);
    assert_int_equal(tc_tpt_check(ra, len, 1), len);
    assert_int_equal(tc_tpt_check(rb, len, 2), len);
    free(a);
    free(b);
    free(ra);
    free(rb);
    tc_tpt_pair_close(&p);
}

static void test_one_sided(void **state)
{
    tp_pair_t p;
    tc_shmt_pair_open(&p, mode(state));
    size_t len = 1u << 20;
    unsigned char *target = calloc(1, len), *src = malloc(len), *back = malloc(len);
    tc_tpt_fill(src, len, 5);
    tc_tp_mem_t *mem;
    assert_int_equal(tc_tp_mem_reg(p.ctx[1], target, len, &mem), TC_OK);
    unsigned char key[64];
    size_t klen;
    assert_int_equal(tc_tp_rkey_pack(mem, key, sizeof(key), &klen), TC_OK);
    assert_int_equal(klen, TC_TP_SHM_RKEY_LEN);
    tc_tp_rkey_t *rk;
    assert_int_equal(tc_tp_rkey_unpack(p.ep[0], key, klen, &rk), TC_OK);
    assert_int_equal(rk->len, len);

    /* put then signal, without waiting for the put: the data is there once the signal is */
    size_t plen = 512 * 1024, poff = 4096;
    tc_tp_req_t put = TC_TP_REQ_INIT, sig = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_put(p.ep[0], src, plen, rk, poff, &put), TC_OK);
    assert_int_equal(tc_tp_signal(p.ep[0], rk, 0, TC_TP_SIGNAL_ADD, 5, &sig), TC_OK);
    int seen = 0;
    for (int round = 0; round < 2000000 && !seen; round++) {
        tc_tp_progress(p.ctx[1]);
        if (tc_tp_signal_read(mem, 0) == 5) {
            seen = 1;
            assert_int_equal(tc_tpt_check(target + poff, plen, 5),
                             plen); /* before the put completes */
        }
        tc_tp_progress(p.ctx[0]);
    }
    assert_true(seen);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &put, SU_WAIT_MS), TC_OK);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &sig, SU_WAIT_MS), TC_OK);
    assert_int_equal(put.bytes, plen);
    for (size_t i = 8; i < poff; i++)
        assert_int_equal(target[i], 0);

    /* add, set, then add */
    tc_tp_req_t s2 = TC_TP_REQ_INIT, s3 = TC_TP_REQ_INIT, s4 = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_signal(p.ep[0], rk, 8, TC_TP_SIGNAL_ADD, 3, &s2), TC_OK);
    assert_int_equal(tc_tp_signal(p.ep[0], rk, 0, TC_TP_SIGNAL_SET, 42, &s3), TC_OK);
    assert_int_equal(tc_tp_signal(p.ep[0], rk, 0, TC_TP_SIGNAL_ADD, 1, &s4), TC_OK);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &s4, SU_WAIT_MS), TC_OK);
    assert_int_equal(s2.status, TC_OK);
    assert_int_equal(s3.status, TC_OK);
    assert_int_equal(tc_tp_signal_read(mem, 0), 43);
    assert_int_equal(tc_tp_signal_read(mem, 8), 3);

    /* get back what was put, 1 byte at the very end, zero bytes */
    tc_tp_req_t g = TC_TP_REQ_INIT, g1 = TC_TP_REQ_INIT, g0 = TC_TP_REQ_INIT, p1 = TC_TP_REQ_INIT;
    memset(back, 0, len);
    assert_int_equal(tc_tp_get(p.ep[0], back, plen, rk, poff, &g), TC_OK);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &g, SU_WAIT_MS), TC_OK);
    assert_int_equal(g.bytes, plen);
    assert_int_equal(tc_tpt_check(back, plen, 5), plen);
    unsigned char one = 0x3c, got = 0;
    assert_int_equal(tc_tp_put(p.ep[0], &one, 1, rk, len - 1, &p1), TC_OK);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &p1, SU_WAIT_MS), TC_OK);
    assert_int_equal(tc_tp_get(p.ep[0], &got, 1, rk, len - 1, &g1), TC_OK);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &g1, SU_WAIT_MS), TC_OK);
    assert_int_equal(got, 0x3c);
    assert_int_equal(target[len - 1], 0x3c);
    assert_int_equal(tc_tp_get(p.ep[0], &got, 0, rk, len, &g0), TC_OK);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &g0, SU_WAIT_MS), TC_OK);

    /* bad inputs */
    tc_tp_req_t bad = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_put(p.ep[0], src, 2, rk, len - 1, &bad), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_tp_signal(p.ep[0], rk, 4, TC_TP_SIGNAL_ADD, 1, &bad), TC_ERR_INVALID_ARG);
    tc_tp_rkey_t *rk2;
    assert_int_equal(tc_tp_rkey_unpack(p.ep[0], key, klen - 1, &rk2), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_tp_rkey_unpack(p.ep[1], key, klen, &rk2), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "not by peer"));
    unsigned char junk[TC_TP_SHM_RKEY_LEN];
    memset(junk, 0x41, sizeof(junk));
    assert_int_equal(tc_tp_rkey_unpack(p.ep[0], junk, sizeof(junk), &rk2), TC_ERR_INVALID_ARG);

    tc_tp_rkey_release(rk);
    tc_tp_mem_dereg(mem);
    free(target);
    free(src);
    free(back);
    tc_tpt_pair_close(&p);
}

static void test_refusals(void **state)
{
    tc_tp_ctx_t *a = tc_shmt_ctx_new(0, "one", mode(state));
    tc_tp_ctx_t *b = tc_shmt_ctx_new(1, "two", mode(state));
    unsigned char aa[TC_TP_SHM_ADDR_LEN], ab[TC_TP_SHM_ADDR_LEN];
    tc_shmt_addr(a, aa);
    tc_shmt_addr(b, ab);
    tc_tp_ep_t *ea, *eb, *x;
    assert_int_equal(tc_tp_ep_connect(a, 0, aa, sizeof(aa), &x), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "itself"));
    assert_int_equal(tc_tp_ep_connect(a, 2, ab, sizeof(ab), &x), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_tp_ep_connect(a, 1, ab, sizeof(ab) - 1, &x), TC_ERR_INVALID_ARG);
    unsigned char old[TC_TP_SHM_ADDR_LEN];
    memcpy(old, ab, sizeof(old));
    old[4] = 9; /* address version */
    assert_int_equal(tc_tp_ep_connect(a, 1, old, sizeof(old), &x), TC_ERR_UNSUPPORTED);

    /* different secrets: both sides refuse */
    assert_int_equal(tc_tp_ep_connect(a, 1, ab, sizeof(ab), &ea), TC_OK);
    assert_int_equal(tc_tp_ep_connect(a, 1, ab, sizeof(ab), &x), TC_ERR_INVALID_STATE);
    assert_int_equal(tc_tp_ep_connect(b, 0, aa, sizeof(aa), &eb), TC_OK);
    tc_tp_ctx_t *both[] = {a, b};
    assert_int_equal(tc_tpt_wait_failed(both, 2, eb, SU_WAIT_MS), TC_ERR_PEER_FAILED);
    assert_int_equal(tc_tpt_wait_failed(both, 2, ea, SU_WAIT_MS), TC_ERR_PEER_FAILED);
    assert_non_null(strstr(tc_tp_ep_error(ea), "secrets differ"));
    assert_non_null(strstr(tc_tp_ep_error(eb), "secrets differ"));
    tc_tp_req_t s = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(ea, 1, "x", 1, &s), TC_ERR_PEER_FAILED);
    assert_int_equal(s.status, TC_ERR_PEER_FAILED);
    tc_tp_ep_close(ea);
    tc_tp_ep_close(eb);
    tc_tp_ctx_destroy(a);
    tc_tp_ctx_destroy(b);
}

/* A peer that closes: what it sent before is still received, pending requests fail. */
static void test_close(void **state)
{
    tp_pair_t p;
    tc_shmt_pair_open(&p, mode(state));
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT, pend = TC_TP_REQ_INIT;
    unsigned char msg[100], got[100];
    tc_tpt_fill(msg, sizeof(msg), 3);
    assert_int_equal(tc_tp_send(p.ep[1], 4, msg, sizeof(msg), &s), TC_OK);
    assert_int_equal(s.status, TC_OK); /* eager: copied into the ring */
    assert_int_equal(tc_tp_recv(p.ep[0], 5, got, sizeof(got), &pend), TC_OK);
    tc_tp_ep_close(p.ep[1]);
    tc_tp_ctx_t *c0[] = {p.ctx[0]};
    assert_int_equal(tc_tpt_wait_req(c0, 1, &pend, SU_WAIT_MS), TC_ERR_PEER_FAILED);
    assert_int_equal(p.ep[0]->failed, TC_ERR_PEER_FAILED);
    assert_non_null(strstr(tc_tp_ep_error(p.ep[0]), "closed its endpoint"));
    assert_int_equal(tc_tp_recv(p.ep[0], 4, got, sizeof(got), &r), TC_OK);
    assert_int_equal(r.status, TC_OK);
    assert_int_equal(tc_tpt_check(got, sizeof(got), 3), sizeof(got));
    tc_tp_ep_close(p.ep[0]);
    tc_tp_ctx_destroy(p.ctx[0]);
    tc_tp_ctx_destroy(p.ctx[1]);
}

static void test_cancel(void **state)
{
    tc_tp_ctx_t *a = tc_shmt_ctx_new(0, NULL, mode(state));
    tc_tp_ctx_t *b = tc_shmt_ctx_new(1, NULL, mode(state));
    unsigned char ab[TC_TP_SHM_ADDR_LEN], aa[TC_TP_SHM_ADDR_LEN];
    tc_shmt_addr(a, aa);
    tc_shmt_addr(b, ab);
    tc_tp_ep_t *ea, *eb;
    assert_int_equal(tc_tp_ep_connect(a, 1, ab, sizeof(ab), &ea), TC_OK);
    /* not up yet (b has not connected): the send waits and can be cancelled */
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT, s2 = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(ea, 1, "abc", 3, &s), TC_OK);
    assert_int_equal(tc_tp_send(ea, 2, "de", 2, &s2), TC_OK);
    assert_int_equal(tc_tp_progress(a), 0);
    assert_int_equal(s.status, TC_INPROGRESS);
    assert_int_equal(ea->ops->cancel(ea, &s), TC_OK);
    assert_int_equal(s.status, TC_ERR_ABORTED);
    assert_int_equal(ea->ops->cancel(ea, &s), TC_ERR_INVALID_STATE);
    /* a request never posted is not pending, as tcp and self say */
    tc_tp_req_t never = TC_TP_REQ_INIT;
    assert_int_equal(ea->ops->cancel(ea, &never), TC_ERR_NOT_FOUND);
    assert_non_null(strstr(tc_last_error(), "not pending on peer 1"));
    assert_int_equal(never.status, TC_INPROGRESS);
    assert_int_equal(tc_tp_ep_connect(b, 0, aa, sizeof(aa), &eb), TC_OK);
    char buf[8] = {0};
    assert_int_equal(tc_tp_recv(eb, 1, buf, sizeof(buf), &r), TC_OK);
    tc_tp_ctx_t *both[] = {a, b};
    assert_int_equal(tc_tpt_wait_req(both, 2, &s2, SU_WAIT_MS), TC_OK);
    tc_tpt_spin(both, 2, 20);
    assert_int_equal(r.status, TC_INPROGRESS); /* the cancelled send never arrived */
    assert_int_equal(eb->ops->cancel(eb, &r), TC_OK);
    assert_int_equal(r.status, TC_ERR_ABORTED);
    tc_tp_req_t r2 = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(eb, 2, buf, sizeof(buf), &r2), TC_OK);
    assert_int_equal(tc_tpt_wait_req(both, 2, &r2, SU_WAIT_MS), TC_OK);
    assert_memory_equal(buf, "de", 2);
    tc_tp_ep_close(ea);
    tc_tp_ep_close(eb);
    tc_tp_ctx_destroy(a);
    tc_tp_ctx_destroy(b);
}

/* A request posted again while pending is refused (it looped progress forever before). */
static void test_repost_pending(void **state)
{
    tp_pair_t p;
    tc_shmt_pair_open(&p, mode(state));
    tc_tpt_repost_check(p.ctx, 2, p.ep[0], p.ep[1]);
    tc_tpt_pair_close(&p);
}

/* Cancel in flight: a send half pushed through the cells goes on from a
 * private copy (the caller's buffer is free at once); a receive being filled
 * drops the rest of its message and writes nothing more; the next message
 * arrives intact. With single copy a send is only announced, so the reader
 * copies from the caller's memory: there only the receive side is checked. */
static void test_cancel_in_flight(void **state)
{
    tp_pair_t p;
    tc_shmt_pair_open(&p, mode(state));
    int cma = strstr(mode(state), "shm_cma=0") == NULL;
    size_t len = 4u << 20;
    unsigned char *src = malloc(len), *dst = malloc(len);
    assert_non_null(src);
    assert_non_null(dst);
    tc_tpt_fill(src, len, 5);

    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(p.ep[1], 1, dst, len, &r), TC_OK);
    assert_int_equal(tc_tp_send(p.ep[0], 1, src, len, &s), TC_OK);
    tc_tp_progress(p.ctx[0]);
    if (!cma) /* 4 MiB do not fit the rings: the send is half pushed */
        assert_int_equal(s.status, TC_INPROGRESS);
    if (!cma) {
        assert_int_equal(p.ep[0]->ops->cancel(p.ep[0], &s), TC_OK);
        assert_int_equal(s.status, TC_ERR_ABORTED);
        memset(src, 0x5a, len); /* no longer read */
        assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &r, SU_WAIT_MS), TC_OK);
        assert_int_equal(tc_tpt_check(dst, len, 5), len);
        tc_tpt_fill(src, len, 5);
    } else {
        assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &r, SU_WAIT_MS), TC_OK);
        assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &s, SU_WAIT_MS), TC_OK);
    }

    tc_tp_req_t s2 = TC_TP_REQ_INIT, r2 = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(p.ep[1], 2, dst, len, &r2), TC_OK);
    assert_int_equal(tc_tp_send(p.ep[0], 2, src, len, &s2), TC_OK);
    for (int i = 0; i < 2; i++) {
        tc_tp_progress(p.ctx[0]);
        tc_tp_progress(p.ctx[1]);
    }
    if (!cma)
        assert_int_equal(r2.status, TC_INPROGRESS);
    if (r2.status == TC_INPROGRESS)
        tc_tpt_cancel_filling(&p, &r2, &s2, dst, len, SU_WAIT_MS, 20, 4096);
    else
        assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &s2, SU_WAIT_MS), TC_OK);
    one_message(&p, 3000, 3000, 0, 9);
    free(src);
    free(dst);
    tc_tpt_pair_close(&p);
}

/* A progress call reads no further single-copy message once it has read 1 MiB of them (its
 * caller holds the world's lock meanwhile): four messages of 1 MiB announced at once take
 * one call each, and arrive intact. */
static void test_copy_budget(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_shmt_pair_open(&p, "");
    enum { K = 4 };
    size_t len = 1u << 20;
    unsigned char *src = malloc(K * len), *dst = calloc(K, len);
    assert_true(src && dst);
    tc_tpt_fill(src, K * len, 11);
    tc_tp_req_t s[K], r[K];
    for (int i = 0; i < K; i++) {
        r[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        s[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_recv(p.ep[1], 20 + (uint64_t)i, dst + i * len, len, &r[i]), TC_OK);
    }
    for (int i = 0; i < K; i++)
        assert_int_equal(tc_tp_send(p.ep[0], 20 + (uint64_t)i, src + i * len, len, &s[i]), TC_OK);
    for (int i = 0; i < 8; i++) /* every announcement written */
        assert_true(tc_tp_progress(p.ctx[0]) >= 0);
    for (int call = 1; call <= K; call++) {
        assert_true(tc_tp_progress(p.ctx[1]) >= 0);
        int done = 0;
        for (int i = 0; i < K; i++)
            done += r[i].status != TC_INPROGRESS;
        assert_int_equal(done, call);
    }
    for (int i = 0; i < K; i++) {
        assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &r[i], SU_WAIT_MS), TC_OK);
        assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &s[i], SU_WAIT_MS), TC_OK);
    }
    assert_memory_equal(dst, src, K * len);
    free(src);
    free(dst);
    tc_tpt_pair_close(&p);
}

/* One single-copy message is read over several progress calls, at most about 1 MiB each:
 * expected into a buffer, unexpected into a sink, cancelled half read (the sender still
 * completes, nothing more is written), and a receive side closed half read. A small message
 * behind a large one waits for it (cells are read in order). */
static int calls_until_done(tp_pair_t *p, tc_tp_req_t *r)
{
    for (int call = 1; call <= 64; call++) {
        /* every call moved a piece: a caller that saw 0 would nap in the middle */
        assert_true(tc_tp_progress(p->ctx[1]) > 0);
        if (r->status != TC_INPROGRESS)
            return call;
    }
    fail_msg("a 4 MiB receive did not complete in 64 progress calls");
    return -1;
}

static void test_large_in_pieces(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_shmt_pair_open(&p, "");
    size_t len = 4u << 20;
    unsigned char *src = malloc(len), *dst = malloc(len), *local = malloc(len);
    assert_true(src && dst && local);
    tc_tpt_fill(src, len, 21);
    tc_tpt_fill(local, len, 22);

    /* expected, into a buffer, with an eager message behind it */
    memset(dst, GUARD, len);
    char small[16] = {0};
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT, s2 = TC_TP_REQ_INIT, r2 = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(p.ep[1], 1, dst, len, &r), TC_OK);
    assert_int_equal(tc_tp_recv(p.ep[1], 2, small, sizeof(small), &r2), TC_OK);
    assert_int_equal(tc_tp_send(p.ep[0], 1, src, len, &s), TC_OK);
    assert_int_equal(tc_tp_send(p.ep[0], 2, "behind", 7, &s2), TC_OK);
    for (int i = 0; i < 4; i++)
        assert_true(tc_tp_progress(p.ctx[0]) >= 0);
    assert_int_equal(calls_until_done(&p, &r), 4);
    assert_int_equal(r.status, TC_OK);
    assert_int_equal(r.bytes, len);
    assert_memory_equal(dst, src, len);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &r2, SU_WAIT_MS), TC_OK);
    assert_string_equal(small, "behind");
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &s, SU_WAIT_MS), TC_OK);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &s2, SU_WAIT_MS), TC_OK);

    /* unexpected, into a sink: every piece checked, the sum element by element */
    memset(dst, 0, len);
    tc_tpt_sum_sink_t k = {local, dst, 4, 0, 0, SIZE_MAX, 0, len};
    tc_tp_sink_t sink = {tc_tpt_sum_fn, &k, 4};
    s = (tc_tp_req_t)TC_TP_REQ_INIT;
    r = (tc_tp_req_t)TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(p.ep[0], 3, src, len, &s), TC_OK);
    tc_tpt_spin(p.ctx, 2, 1);
    assert_int_equal(tc_tp_recv_sink(p.ep[1], 3, &sink, len, &r), TC_OK);
    assert_int_equal(r.status, TC_INPROGRESS); /* read by progress, not by the post */
    assert_int_equal(calls_until_done(&p, &r), 4);
    assert_int_equal(r.status, TC_OK);
    assert_int_equal(k.bad, 0);
    assert_int_equal(k.next, len);
    for (size_t i = 0; i < len; i++)
        if (dst[i] != (unsigned char)(local[i] + src[i]))
            fail_msg("sink byte %zu: %u, expected %u", i, dst[i], (local[i] + src[i]) & 0xff);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &s, SU_WAIT_MS), TC_OK);

    /* cancelled after the first MiB: the sender completes, nothing more is written */
    s = (tc_tp_req_t)TC_TP_REQ_INIT;
    r = (tc_tp_req_t)TC_TP_REQ_INIT;
    memset(dst, GUARD, len);
    assert_int_equal(tc_tp_recv(p.ep[1], 4, dst, len, &r), TC_OK);
    assert_int_equal(tc_tp_send(p.ep[0], 4, src, len, &s), TC_OK);
    assert_true(tc_tp_progress(p.ctx[0]) >= 0);
    assert_true(tc_tp_progress(p.ctx[1]) >= 0);
    assert_int_equal(r.status, TC_INPROGRESS);
    assert_memory_equal(dst, src, 1u << 20);
    tc_tpt_cancel_filling(&p, &r, &s, dst, len, SU_WAIT_MS, 20, 4096);
    one_message(&p, 3u << 20, 3u << 20, 0, 23);

    /* the receiving side closes half way: the receive ends ABORTED */
    s = (tc_tp_req_t)TC_TP_REQ_INIT;
    r = (tc_tp_req_t)TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(p.ep[1], 5, dst, len, &r), TC_OK);
    assert_int_equal(tc_tp_send(p.ep[0], 5, src, len, &s), TC_OK);
    assert_true(tc_tp_progress(p.ctx[0]) >= 0);
    assert_true(tc_tp_progress(p.ctx[1]) >= 0);
    assert_int_equal(r.status, TC_INPROGRESS);
    tc_tp_ep_close(p.ep[1]);
    p.ep[1] = NULL;
    assert_int_equal(r.status, TC_ERR_ABORTED);
    free(src);
    free(dst);
    free(local);
    tc_tpt_pair_close(&p);
}

/* Three single-copy messages arrive before their receives; the middle receive is cancelled
 * while it waits behind the first in the read queue: it ends ABORTED, its buffer is never
 * written, its sender still completes (acknowledged), and the receives around it get their
 * messages whole. */
static void test_cancel_queued_read(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_shmt_pair_open(&p, "");
    size_t len = 2u << 20;
    unsigned char *src[3], *dst[3];
    tc_tp_req_t s[3], r[3];
    for (int i = 0; i < 3; i++) {
        src[i] = malloc(len);
        dst[i] = malloc(len);
        assert_true(src[i] && dst[i]);
        tc_tpt_fill(src[i], len, 31 + (uint64_t)i);
        memset(dst[i], GUARD, len);
        s[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        r[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_send(p.ep[0], 10 + (uint64_t)i, src[i], len, &s[i]), TC_OK);
    }
    tc_tpt_spin(p.ctx, 2, 1); /* the three announcements wait as unexpected */
    for (int i = 0; i < 3; i++)
        assert_int_equal(tc_tp_recv(p.ep[1], 10 + (uint64_t)i, dst[i], len, &r[i]), TC_OK);
    assert_int_equal(r[1].status, TC_INPROGRESS);
    assert_int_equal(p.ep[1]->ops->cancel(p.ep[1], &r[1]), TC_OK);
    assert_int_equal(r[1].status, TC_ERR_ABORTED);
    check_guard(dst[1], len);
    for (int i = 0; i < 3; i++)
        assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &s[i], SU_WAIT_MS), TC_OK);
    for (int i = 0; i < 3; i += 2) {
        assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &r[i], SU_WAIT_MS), TC_OK);
        assert_int_equal(r[i].bytes, len);
        assert_memory_equal(dst[i], src[i], len);
    }
    check_guard(dst[1], len);
    one_message(&p, len, len, 1, 34); /* the queue is empty and in order again */
    for (int i = 0; i < 3; i++) {
        free(src[i]);
        free(dst[i]);
    }
    tc_tpt_pair_close(&p);
}

/* A message pipelined through cells (single copy off) counts in progress() as its cells are
 * read, before it completes: a caller that saw 0 would nap in the middle of it. */
static void test_pipelined_progress(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_shmt_pair_open(&p, "shm_cma=0,shm_cells=4");
    size_t len = 64u << 10; /* 8 cells of 8 KiB through a ring of 4 */
    unsigned char *src = malloc(len), *dst = malloc(len);
    assert_true(src && dst);
    tc_tpt_fill(src, len, 41);
    memset(dst, GUARD, len);
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(p.ep[1], 1, dst, len, &r), TC_OK);
    assert_int_equal(tc_tp_send(p.ep[0], 1, src, len, &s), TC_OK);
    int counted_before_done = 0;
    for (int call = 0; call < 10000 && r.status == TC_INPROGRESS; call++) {
        assert_true(tc_tp_progress(p.ctx[0]) >= 0);
        int n = tc_tp_progress(p.ctx[1]);
        assert_true(n >= 0);
        if (n > 0 && r.status == TC_INPROGRESS)
            counted_before_done = 1;
    }
    assert_int_equal(r.status, TC_OK);
    assert_true(counted_before_done);
    assert_memory_equal(dst, src, len);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &s, SU_WAIT_MS), TC_OK);
    free(src);
    free(dst);
    tc_tpt_pair_close(&p);
}

static void test_preflight(void **state)
{
    tc_tp_ctx_t *ctx = NULL;
    /* 2 x 2^24 cells of 1 MiB (32 TiB) is more than any /dev/shm: the context still opens (its
     * pre-flight asks for the smallest segment) and a pair gets the largest smaller geometry
     * that fits its share, here 8 cells of 8192 */
    tp_pair_t p;
    tc_shmt_pair_open(&p, "shm_cells=16777216,shm_cell_size=1M");
    void *base;
    size_t len;
    assert_int_equal(tc_tp_shm_ep_segment(p.ep[1], &base, &len), TC_OK);
    const tc_shm_seg_hdr_t *h = base;
    assert_int_equal(h->cell_size, 8192);
    assert_int_equal(h->ncells, 8);
    one_message(&p, 3000, 3000, 0, 9);
    tc_tpt_pair_close(&p);
    assert_int_equal(tc_shmt_ctx_try(0, NULL, "shm_cell_size=100", &ctx), TC_ERR_CONFIG);
    assert_int_equal(tc_shmt_ctx_try(0, NULL, "shm_cells=1", &ctx), TC_ERR_CONFIG);
    assert_int_equal(tc_shmt_ctx_try(0, NULL, "shm_cma=maybe", &ctx), TC_ERR_CONFIG);
    tc_tp_caps_t caps = {sizeof(caps), 0, 0, 0, 0};
    assert_int_equal(tc_tp_shm_ops.query(&caps), TC_OK);
    assert_int_equal(caps.available, 1);
    assert_int_equal(caps.same_node_only, 1);
    assert_int_equal(caps.one_sided, 1);
    assert_int_equal(caps.max_addr_len, TC_TP_SHM_ADDR_LEN);
}

#define MODES(f)                                                                                   \
    cmocka_unit_test_prestate(f, ""), cmocka_unit_test_prestate(f, "shm_cma=0"),                   \
        cmocka_unit_test_prestate(f, "shm_cell_size=64,shm_cells=2,shm_cma=0")

int main(void)
{
    const struct CMUnitTest tests[] = {
        MODES(test_sizes),
        MODES(test_truncation),
        MODES(test_ordering),
        MODES(test_both_ways),
        MODES(test_one_sided),
        cmocka_unit_test_prestate(test_refusals, ""),
        MODES(test_close),
        MODES(test_cancel),
        MODES(test_repost_pending),
        MODES(test_cancel_in_flight),
        cmocka_unit_test(test_preflight),
        cmocka_unit_test(test_copy_budget),
        cmocka_unit_test(test_large_in_pieces),
        cmocka_unit_test(test_cancel_queued_read),
        cmocka_unit_test(test_pipelined_progress),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
