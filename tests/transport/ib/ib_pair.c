/* The ib tests' shared pair and helpers (ib_pair.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ib_pair.h"
#include "tcomms/base/time.h"
#include "tcomms/transport/ib.h"

unsigned char pat(uint64_t seed, size_t i)
{
    uint64_t x = (seed + 1) * 0x9e3779b97f4a7c15ULL + i * 0xbf58476d1ce4e5b9ULL;
    return (unsigned char)((x >> 29) ^ (x >> 47) ^ i);
}

void fill(unsigned char *b, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = pat(seed, i);
}

size_t check(const unsigned char *b, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != pat(seed, i))
            return i;
    return n;
}

tc_tp_ctx_t *ctx_new(uint64_t id, const char *secret)
{
    tc_tp_ctx_params_t p = TC_TP_CTX_PARAMS_INIT;
    p.self_id = id;
    p.secret = secret;
    p.secret_len = secret ? strlen(secret) : 0;
    tc_tp_ctx_t *ctx = NULL;
    tc_status_t st = tc_tp_ib_ctx_create_verbs(tc_ibemu_verbs(), &p, &ctx);
    if (st != TC_OK)
        print_error("%s\n", tc_last_error());
    assert_int_equal(st, TC_OK);
    return ctx;
}

void spin_until(pair_t *p, volatile tc_status_t *st, int ms)
{
    uint64_t deadline = tc_deadline_after_ms((uint64_t)ms);
    while (*st == TC_INPROGRESS && !tc_deadline_passed(deadline)) {
        tc_tp_progress(p->ctx[0]);
        tc_tp_progress(p->ctx[1]);
    }
}

void pair_open(pair_t *p, const char *s0, const char *s1)
{
    tc_ibemu_reset();
    unsigned char addr[2][64];
    size_t len[2];
    p->ctx[0] = ctx_new(0, s0);
    p->ctx[1] = ctx_new(1, s1);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(tc_tp_addr_pack(p->ctx[i], addr[i], sizeof(addr[i]), &len[i]), TC_OK);
        assert_int_equal(len[i], 32);
    }
    for (int i = 0; i < 2; i++)
        assert_int_equal(
            tc_tp_ep_connect(p->ctx[i], (uint64_t)(1 - i), addr[1 - i], len[1 - i], &p->ep[i]),
            TC_OK);
    /* Same secrets: run the handshake (hello, challenge, proof, reply, ready) until both
     * queue pairs are connected, so that tests start from connected endpoints. */
    if ((s0 == NULL && s1 == NULL) || (s0 != NULL && s1 != NULL && strcmp(s0, s1) == 0)) {
        uint64_t deadline = tc_deadline_after_ms(WAIT_MS);
        while (tc_ibemu_stats().rts_qps < 2 && !tc_deadline_passed(deadline)) {
            tc_tp_progress(p->ctx[0]);
            tc_tp_progress(p->ctx[1]);
        }
        assert_int_equal(tc_ibemu_stats().rts_qps, 2);
    }
}

/* A pair whose contexts cache registrations of transfers (TC_IB_REG_CACHE=1, not the default). */
void pair_open_cached(pair_t *p)
{
    setenv("TC_IB_REG_CACHE", "1", 1);
    pair_open(p, NULL, NULL);
    unsetenv("TC_IB_REG_CACHE");
}

void pair_close(pair_t *p)
{
    for (int i = 0; i < 2; i++) {
        tc_tp_ep_close(p->ep[i]);
        tc_tp_ctx_destroy(p->ctx[i]);
    }
    ib_emu_stats_t s = tc_ibemu_stats();
    assert_int_equal(s.live_qps, 0);
    assert_int_equal(s.live_mrs, 0);
    assert_int_equal(s.cq_overflow, 0);
}

void xfer(pair_t *p, int from, uint64_t tag, size_t len, size_t cap, int recv_first,
          tc_status_t want)
{
    int to = 1 - from;
    unsigned char *src = malloc(len + 1), *dst = malloc(cap + 16);
    assert_non_null(src);
    assert_non_null(dst);
    fill(src, len, tag);
    memset(dst, 0xEE, cap + 16);
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
    const uint64_t rx0 = p->ep[to]->rx_bytes;
    if (recv_first)
        assert_int_equal(tc_tp_recv(p->ep[to], tag, dst, cap, &r), TC_OK);
    assert_int_equal(tc_tp_send(p->ep[from], tag, src, len, &s), TC_OK);
    if (!recv_first) {
        spin_until(p, &s.status, 50); /* let it arrive unexpected */
        assert_int_equal(tc_tp_recv(p->ep[to], tag, dst, cap, &r), TC_OK);
    }
    spin_until(p, &r.status, WAIT_MS);
    spin_until(p, &s.status, WAIT_MS);
    assert_int_equal(r.status, want);
    assert_int_equal(s.status, TC_OK);
    size_t n = len < cap ? len : cap;
    assert_int_equal(r.bytes, n);
    assert_int_equal(check(dst, n, tag), n);
    for (size_t i = n; i < cap + 16; i++)
        assert_int_equal(dst[i], 0xEE);
    /* what arrived counts as the peer's sign of life (the runtime's heartbeats): at least the
     * bytes delivered, eager or read by rendezvous */
    assert_true(p->ep[to]->rx_bytes - rx0 >= n);
    free(src);
    free(dst);
}

void region_open(pair_t *p, int owner, size_t len, region_t *r)
{
    r->len = len;
    r->buf = aligned_alloc(64, (len + 63) / 64 * 64);
    assert_non_null(r->buf);
    memset(r->buf, 0, len);
    assert_int_equal(tc_tp_mem_reg(p->ctx[owner], r->buf, len, &r->mem), TC_OK);
    unsigned char blob[64];
    size_t n;
    assert_int_equal(tc_tp_rkey_pack(r->mem, blob, sizeof(blob), &n), TC_OK);
    assert_int_equal(n, 40);
    assert_int_equal(tc_tp_rkey_unpack(p->ep[1 - owner], blob, n, &r->rkey), TC_OK);
}

void region_close(region_t *r)
{
    tc_tp_rkey_release(r->rkey);
    tc_tp_mem_dereg(r->mem);
    free(r->buf);
}

void progress_for(pair_t *p, int ms)
{
    uint64_t deadline = tc_deadline_after_ms((uint64_t)ms);
    while (!tc_deadline_passed(deadline)) {
        tc_tp_progress(p->ctx[0]);
        tc_tp_progress(p->ctx[1]);
        tc_tp_wait(p->ctx[0], 1);
    }
}

void put_from(pair_t *p, region_t *r, const unsigned char *buf, size_t len, uint64_t seed)
{
    tc_tp_req_t q = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_put(p->ep[0], buf, len, r->rkey, 0, &q), TC_OK);
    spin_until(p, &q.status, WAIT_MS);
    assert_int_equal(q.status, TC_OK);
    assert_int_equal(check(r->buf, len, seed), len);
}

mrcount_t mr_delta(const ib_emu_stats_t *base)
{
    ib_emu_stats_t s = tc_ibemu_stats();
    return (mrcount_t){s.reg_mr - base->reg_mr, s.dereg_mr - base->dereg_mr};
}
