/* Hostile bytes written into a shared segment: the test plays a peer that breaks the layout
 * (spelled out in shm_layout.h) and checks that the victim fails its endpoint with
 * TC_ERR_PROTOCOL, a precise text, and that its pending receive fails the same way. */
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

/* Ring @p r (0: creator -> opener) of the segment of @p ep. */
typedef struct ring {
    uint64_t *head, *tail;
    unsigned char *cells;
    uint32_t ncells, cell_size;
} ring_t;

static ring_t ring_of(tc_tp_ep_t *ep, int r)
{
    void *base;
    size_t len;
    assert_int_equal(tc_tp_shm_ep_segment(ep, &base, &len), TC_OK);
    tc_shm_seg_hdr_t *h = base;
    ring_t g;
    g.ncells = h->ncells;
    g.cell_size = h->cell_size;
    size_t ring_bytes = 2 * TC_SHM_LINE + (size_t)g.ncells * (TC_SHM_CELL_HDR + g.cell_size);
    assert_true(TC_SHM_HDR_SIZE + 2 * ring_bytes <= len);
    unsigned char *rb = (unsigned char *)base + TC_SHM_HDR_SIZE + (size_t)r * ring_bytes;
    g.head = (uint64_t *)(void *)rb;
    g.tail = (uint64_t *)(void *)(rb + TC_SHM_LINE);
    g.cells = rb + 2 * TC_SHM_LINE;
    return g;
}

/* Write one cell into ring 0 (ctx 0 -> ctx 1) as its producer would. */
static void inject(tp_pair_t *p, tc_shm_cell_hdr_t cell)
{
    ring_t g = ring_of(p->ep[0], 0);
    uint64_t pos = __atomic_load_n(g.tail, __ATOMIC_ACQUIRE);
    unsigned char *c = g.cells + (size_t)(pos % g.ncells) * (TC_SHM_CELL_HDR + g.cell_size);
    memcpy(c, &cell, sizeof(cell));
    __atomic_store_n(g.tail, pos + 1, __ATOMIC_RELEASE);
}

/* The victim (ctx 1) fails with TC_ERR_PROTOCOL naming @p text; so does its pending receive. */
static void expect_protocol(tp_pair_t *p, tc_tp_req_t *pending, const char *text)
{
    tc_tp_ctx_t *victim[] = {p->ctx[1]};
    assert_int_equal(tc_tpt_wait_failed(victim, 1, p->ep[1], SU_WAIT_MS), TC_ERR_PROTOCOL);
    if (strstr(tc_tp_ep_error(p->ep[1]), text) == NULL)
        fail_msg("error '%s' does not say '%s'", tc_tp_ep_error(p->ep[1]), text);
    assert_non_null(strstr(tc_tp_ep_error(p->ep[1]), "shm: peer 0 (pid "));
    assert_int_equal(pending->status, TC_ERR_PROTOCOL);
    /* the honest side learns that the victim gave up */
    tc_tp_ctx_t *honest[] = {p->ctx[0]};
    assert_int_equal(tc_tpt_wait_failed(honest, 1, p->ep[0], SU_WAIT_MS), TC_ERR_PEER_FAILED);
}

typedef struct hostile_case {
    const char *hints;
    tc_shm_cell_hdr_t cell;
    const char *text;
} hostile_case_t;

static void run_case(void **state)
{
    const hostile_case_t *hc = *state;
    tp_pair_t p;
    tc_shmt_pair_open(&p, hc->hints);
    /* a registration on the victim, for the one-sided cases */
    static uint64_t words[4];
    tc_tp_mem_t *mem;
    assert_int_equal(tc_tp_mem_reg(p.ctx[1], words, sizeof(words), &mem), TC_OK);
    unsigned char buf[64];
    memset(buf, 0xA5, sizeof(buf));
    tc_tp_req_t r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(p.ep[1], 1, buf, 16, &r), TC_OK);
    inject(&p, hc->cell);
    expect_protocol(&p, &r, hc->text);
    for (size_t i = 0; i < sizeof(buf); i++)
        assert_int_equal(buf[i], 0xA5); /* nothing was written */
    for (int i = 0; i < 4; i++)
        assert_int_equal(words[i], 0);
    tc_tp_mem_dereg(mem);
    tc_tpt_pair_close(&p);
}

/* The tail moved beyond the ring's capacity. */
static void test_tail_beyond(void **state)
{
    tp_pair_t p;
    tc_shmt_pair_open(&p, NULL);
    tc_tp_req_t r = TC_TP_REQ_INIT;
    char buf[16];
    assert_int_equal(tc_tp_recv(p.ep[1], 1, buf, sizeof(buf), &r), TC_OK);
    ring_t g = ring_of(p.ep[0], 0);
    __atomic_store_n(g.tail, *g.tail + g.ncells + 1, __ATOMIC_RELEASE);
    expect_protocol(&p, &r, "broke the ring");
    tc_tpt_pair_close(&p);
}

/* The consumer of the victim's tx ring claims more than was produced. */
static void test_head_beyond(void **state)
{
    tp_pair_t p;
    tc_shmt_pair_open(&p, "shm_cells=4");
    tc_tp_req_t r = TC_TP_REQ_INIT;
    char buf[16];
    assert_int_equal(tc_tp_recv(p.ep[1], 1, buf, sizeof(buf), &r), TC_OK);
    ring_t g = ring_of(p.ep[0], 1); /* ring 1: victim (opener) -> ctx 0 */
    __atomic_store_n(g.head, 1ULL << 60, __ATOMIC_RELEASE);
    tc_tp_req_t s[6];
    for (int i = 0; i < 6; i++) {
        s[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
        tc_tp_send(p.ep[1], 2, "x", 1, &s[i]); /* the fifth finds the ring "full" */
    }
    expect_protocol(&p, &r, "broke the ring: head");
    tc_tpt_pair_close(&p);
}

#define CELL(...) ((tc_shm_cell_hdr_t){__VA_ARGS__})
static const hostile_case_t cases[] = {
    {NULL, CELL(TC_SHM_T_EAGER, 0, 8193, 1, 8193, 0, 0, 0, 0), "cells hold 8192"},
    {NULL, CELL(TC_SHM_T_EAGER, 0, 1ULL << 62, 1, 0, 0, 0, 0, 0), "cells hold 8192"},
    {NULL, CELL(77, 0, 0, 0, 0, 0, 0, 0, 0), "unknown type 77"},
    {NULL, CELL(TC_SHM_T_MORE, 0, 16, 1, 0, 0, 0, 0, 0), "no message is in progress"},
    {NULL, CELL(TC_SHM_T_FIRST, 0, 100, 1, 1ULL << 50, 0, 0, 0, 0), "announced a message"},
    {NULL, CELL(TC_SHM_T_FIRST, 0, 100, 1, 50, 0, 0, 0, 0), "announced a message"},
    {"shm_cma=0", CELL(TC_SHM_T_RTS, 0, 0, 1, 1u << 20, 0, 1, 0x1000, 0), "cannot read"},
    {NULL, CELL(TC_SHM_T_ACK, 0, 0, 0, 0, 0, 12345, 0, 0), "acknowledged request 12345"},
    {NULL, CELL(TC_SHM_T_PUT, 1, 8, 0, 8, 32, 1, 0, 1), "outside every registration"},
    {NULL, CELL(TC_SHM_T_PUT, 1, 8, 0, 8, 0, 1, 0, 999), "outside every registration"},
    {NULL, CELL(TC_SHM_T_PUT, 1, 8, 0, 8, UINT64_MAX - 3, 1, 0, 1), "outside every"},
    {NULL, CELL(TC_SHM_T_SIGNAL, TC_TP_SIGNAL_ADD, 0, 0, 0, 4, 1, 1, 1), "not an aligned word"},
    {NULL, CELL(TC_SHM_T_SIGNAL, 9, 0, 0, 0, 0, 1, 1, 1), "unknown op"},
    {NULL, CELL(TC_SHM_T_SIGNAL, TC_TP_SIGNAL_SET, 0, 0, 0, 32, 1, 1, 1), "not an aligned"},
    {NULL, CELL(TC_SHM_T_GET_REQ, 0, 0, 0, 64, 0, 1, 0, 1), "outside every registration"},
    {NULL, CELL(TC_SHM_T_GET_DATA, 1, 8, 0, 8, 0, 4242, 0, 0), "answered get 4242"},
};

int main(void)
{
    struct CMUnitTest tests[sizeof(cases) / sizeof(cases[0]) + 2];
    size_t n = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        tests[n++] = (struct CMUnitTest)cmocka_unit_test_prestate(run_case, (void *)&cases[i]);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_tail_beyond);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_head_beyond);
    return _cmocka_run_group_tests("shm_hostile", tests, n, NULL, NULL);
}
