/* A single-copy send cancelled after it was announced (a local abort of its communicator):
 * the receiver reads the sender's memory, which the sender's owner has back once cancel()
 * returns. The receiver must never complete with what the owner wrote there afterwards, nor
 * fail the endpoint when that memory is gone: the receive ends with TC_ERR_ABORTED, the
 * endpoint goes on, and the sender's withdrawal slot is freed once the receiver acknowledges,
 * even when no receive ever takes the message. Two contexts in one process, one thread. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "shm_util.h"
#include "tcomms/base/status.h"
#include "tcomms/transport/shm.h"
#include "tcomms/transport/shm_layout.h"
#include "tcomms/transport/transport.h"
#include "tests/transport/tp_util.h"

#define LEN (4u << 20) /* four progress calls' worth of single-copy reads */

/* Send @p len bytes of @p src 0 -> 1 with tag @p tag and let the announcement arrive. */
static void announce(tp_pair_t *p, uint64_t tag, const unsigned char *src, size_t len,
                     tc_tp_req_t *s)
{
    *s = (tc_tp_req_t)TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(p->ep[0], tag, src, len, s), TC_OK);
    assert_true(tc_tp_progress(p->ctx[0]) >= 0);
    assert_true(tc_tp_progress(p->ctx[1]) >= 0);
    assert_int_equal(s->status, TC_INPROGRESS); /* waits for the reader's acknowledgement */
}

static void cancel_send(tp_pair_t *p, tc_tp_req_t *s)
{
    assert_int_equal(p->ep[0]->ops->cancel(p->ep[0], s), TC_OK);
    assert_int_equal(s->status, TC_ERR_ABORTED);
}

/* The pair still carries messages both ways, and neither endpoint failed. */
static void still_works(tp_pair_t *p)
{
    unsigned char *src = malloc(LEN);
    assert_non_null(src);
    tc_tpt_fill(src, LEN, 77);
    tc_tpt_transfer(p, 0, 50, src, LEN, 77, 1);
    tc_tpt_transfer(p, 1, 51, src, LEN, 77, 1);
    tc_tpt_transfer(p, 0, 52, src, 500, 77, 0); /* eager: arrives before its receive */
    assert_int_equal(p->ep[0]->failed, TC_OK);
    assert_int_equal(p->ep[1]->failed, TC_OK);
    free(src);
}

/* A 4 MiB send withdrawn before its receive was posted (@p half_read 0) or once the receiver
 * had read its first MiB (1); the owner then writes its buffer. */
static void withdrawn_case(int half_read)
{
    tp_pair_t p;
    tc_shmt_pair_open(&p, "");
    unsigned char *src = malloc(LEN), *dst = malloc(LEN);
    assert_true(src && dst);
    tc_tpt_fill(src, LEN, 1);
    tc_tp_req_t s, r = TC_TP_REQ_INIT;
    if (half_read)
        assert_int_equal(tc_tp_recv(p.ep[1], 1, dst, LEN, &r), TC_OK);
    announce(&p, 1, src, LEN, &s); /* with a receive, its progress took a first piece */
    if (half_read)
        assert_int_equal(r.status, TC_INPROGRESS);
    cancel_send(&p, &s);
    memset(src, 0x5a, LEN); /* the owner's again */
    if (!half_read)
        assert_int_equal(tc_tp_recv(p.ep[1], 1, dst, LEN, &r), TC_OK);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &r, SU_WAIT_MS), TC_ERR_ABORTED);
    still_works(&p);
    free(src);
    free(dst);
    tc_tpt_pair_close(&p);
}

static void test_withdrawn_unread(void **state)
{
    (void)state;
    withdrawn_case(0);
}

static void test_withdrawn_half_read(void **state)
{
    (void)state;
    withdrawn_case(1);
}

/* The sender's endpoint closes while the receiver has read the first MiB (the runtime closes
 * one that cannot take a request back): the close hands the send's buffer back, so it withdraws
 * the send first. Before, the reader went on copying and could complete with TC_OK and the
 * bytes the owner wrote after the close. */
static void test_closed_half_read(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_shmt_pair_open(&p, "");
    unsigned char *src = malloc(LEN), *dst = malloc(LEN);
    assert_true(src && dst);
    tc_tpt_fill(src, LEN, 9);
    tc_tp_req_t s, r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(p.ep[1], 2, dst, LEN, &r), TC_OK);
    announce(&p, 2, src, LEN, &s); /* the reader's progress took a first piece */
    assert_int_equal(r.status, TC_INPROGRESS);
    tc_tp_ep_close(p.ep[0]);
    p.ep[0] = NULL;
    assert_int_equal(s.status, TC_ERR_ABORTED);
    memset(src, 0x5a, LEN);
    tc_status_t st = tc_tpt_wait_req(p.ctx + 1, 1, &r, SU_WAIT_MS);
    if (st == TC_OK)
        fail_msg("the receive completed TC_OK after its sender closed (%s)",
                 tc_tpt_check(dst, LEN, 9) == LEN ? "whole" : "with bytes written after the close");
    assert_true(st == TC_ERR_ABORTED || st == TC_ERR_PEER_FAILED);
    free(src);
    free(dst);
    tc_tpt_pair_close(&p);
}

typedef struct {
    uint64_t seed;
    size_t bad; /* pieces whose bytes are not the sender's */
    size_t seen;
} sink_check_t;

static tc_status_t check_piece(void *arg, size_t off, const void *data, size_t len)
{
    sink_check_t *c = arg;
    const unsigned char *b = data;
    for (size_t i = 0; i < len; i++)
        if (b[i] != tc_tpt_pattern(c->seed, off + i)) {
            c->bad++;
            break;
        }
    c->seen += len;
    return TC_OK;
}

/* A receive into a consumer, withdrawn half read: the consumer never sees a piece the owner
 * wrote after the cancel. */
static void test_withdrawn_sink(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_shmt_pair_open(&p, "");
    unsigned char *src = malloc(LEN);
    assert_non_null(src);
    tc_tpt_fill(src, LEN, 3);
    sink_check_t c = {3, 0, 0};
    tc_tp_sink_t sink = {check_piece, &c, 8};
    tc_tp_req_t s, r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv_sink(p.ep[1], 3, &sink, LEN, &r), TC_OK);
    announce(&p, 3, src, LEN, &s);
    assert_int_equal(r.status, TC_INPROGRESS);
    assert_true(c.seen > 0 && c.seen < LEN);
    cancel_send(&p, &s);
    memset(src, 0x5a, LEN);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &r, SU_WAIT_MS), TC_ERR_ABORTED);
    assert_int_equal(c.bad, 0);
    assert_true(c.seen < LEN);
    still_works(&p);
    free(src);
    tc_tpt_pair_close(&p);
}

/* The owner unmaps the buffer after the cancel: the reader's copy fails, and that is the
 * withdrawal, not a peer that broke the protocol. */
static void test_withdrawn_unmapped(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_shmt_pair_open(&p, "");
    unsigned char *src =
        mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned char *dst = malloc(LEN);
    assert_true(src != MAP_FAILED && dst != NULL);
    tc_tpt_fill(src, LEN, 4);
    tc_tp_req_t s, r = TC_TP_REQ_INIT;
    announce(&p, 4, src, LEN, &s);
    cancel_send(&p, &s);
    assert_int_equal(munmap(src, LEN), 0);
    assert_int_equal(tc_tp_recv(p.ep[1], 4, dst, LEN, &r), TC_OK);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &r, SU_WAIT_MS), TC_ERR_ABORTED);
    still_works(&p);
    free(dst);
    tc_tpt_pair_close(&p);
}

/* Whether no slot of either side's withdrawal row is taken. */
static int rows_free(tp_pair_t *p)
{
    void *base;
    size_t len;
    assert_int_equal(tc_tp_shm_ep_segment(p->ep[0], &base, &len), TC_OK);
    const tc_shm_seg_hdr_t *h = base;
    for (int side = 0; side < 2; side++)
        for (int i = 0; i < TC_SHM_WITHDRAW_SLOTS; i++)
            if (__atomic_load_n(&h->withdrawn[side][i], __ATOMIC_ACQUIRE) != 0)
                return 0;
    return 1;
}

/* Withdrawn sends no receive ever takes: the receiver's liveness sweep acknowledges them, so
 * many more than there are slots can be withdrawn one after another; a receive posted later
 * for one of them fails at once. */
static void test_withdrawn_never_taken(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_shmt_pair_open(&p, "shm_liveness_ms=1");
    enum { N = TC_SHM_WITHDRAW_SLOTS + 16 };
    size_t len = 64u << 10;
    unsigned char *src = malloc(len), *dst = malloc(len);
    assert_true(src && dst);
    tc_tpt_fill(src, len, 5);
    for (int i = 0; i < N; i++) {
        tc_tp_req_t s;
        announce(&p, 100 + (uint64_t)i, src, len, &s);
        cancel_send(&p, &s);
        for (int k = 0; k < 2000 && !rows_free(&p); k++)
            tc_tpt_spin(p.ctx, 2, 1);
        assert_true(rows_free(&p));
    }
    tc_tp_req_t r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(p.ep[1], 100, dst, len, &r), TC_OK);
    assert_int_equal(r.status, TC_ERR_ABORTED);
    still_works(&p);
    free(src);
    free(dst);
    tc_tpt_pair_close(&p);
}

/* At most TC_SHM_WITHDRAW_SLOTS single-copy sends are announced at a time, so that every one can
 * be withdrawn (with 16 slots and no bound, the 17th could not, and the endpoint was closed under
 * the peer, which went on reading it and failed every communicator over the pair); the ones
 * beyond go through the cells (waiting for an acknowledgement instead held up everything behind
 * them). Rings of 512 cells would take all 136 announcements. */
static void test_announced_bound(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_shmt_pair_open(&p, "shm_liveness_ms=60000,shm_cell_size=1024,shm_cells=512");
    enum { N = TC_SHM_WITHDRAW_SLOTS + 8 };
    size_t len = 2048; /* above the cell size: single copy while the bound allows */
    unsigned char *src = malloc(N * len), *dst = malloc(N * len);
    assert_true(src && dst);
    tc_tpt_fill(src, N * len, 6);
    static tc_tp_req_t s[N], r[N];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < N; i++) {
            s[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
            assert_int_equal(tc_tp_send(p.ep[0], 200 + (uint64_t)i, src + i * len, len, &s[i]),
                             TC_OK);
        }
        for (int k = 0; k < 8; k++) {
            assert_true(tc_tp_progress(p.ctx[0]) >= 0);
            assert_true(tc_tp_progress(p.ctx[1]) >= 0);
        }
        for (int i = 0; i < N; i++) /* announced and waiting; the rest pushed through cells */
            assert_int_equal(s[i].status, i < TC_SHM_WITHDRAW_SLOTS ? TC_INPROGRESS : TC_OK);
        if (round == 0) { /* the announced ones taken back and overwritten */
            for (int i = 0; i < TC_SHM_WITHDRAW_SLOTS; i++)
                cancel_send(&p, &s[i]);
            memset(src, 0x5a, N * len);
        }
        for (int i = 0; i < N; i++) {
            r[i] = (tc_tp_req_t)TC_TP_REQ_INIT;
            assert_int_equal(tc_tp_recv(p.ep[1], 200 + (uint64_t)i, dst + i * len, len, &r[i]),
                             TC_OK);
        }
        for (int i = 0; i < N; i++) {
            tc_status_t want = round == 0 && i < TC_SHM_WITHDRAW_SLOTS ? TC_ERR_ABORTED : TC_OK;
            assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &r[i], SU_WAIT_MS), want);
            for (size_t j = 0; want == TC_OK && j < len; j++) /* the bytes as sent */
                if (dst[i * len + j] != tc_tpt_pattern(6, i * len + j))
                    fail_msg("message %d, byte %zu: 0x%02x", i, j, dst[i * len + j]);
            if (round == 1)
                assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &s[i], SU_WAIT_MS), TC_OK);
        }
        if (round == 0) {
            for (int k = 0; k < 2000 && !rows_free(&p); k++)
                tc_tpt_spin(p.ctx, 2, 1);
            assert_true(rows_free(&p));
            tc_tpt_fill(src, N * len, 6);
        }
    }
    still_works(&p);
    free(src);
    free(dst);
    tc_tpt_pair_close(&p);
}

static int drop_all(void *arg, uint64_t tag)
{
    (void)arg;
    (void)tag;
    return 1;
}

/* Unexpected messages a receive will never take are freed: eager, withdrawn single-copy ones,
 * and announced ones, whose senders then complete (nothing will read their bytes). */
static void test_discard(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_shmt_pair_open(&p, "");
    tc_tpt_discard_check(&p, 100, SU_WAIT_MS);
    unsigned char *src = malloc(LEN), *dst = malloc(LEN);
    assert_true(src && dst);
    tc_tpt_fill(src, LEN, 8);
    tc_tp_req_t s1, s2, r = TC_TP_REQ_INIT;
    announce(&p, 8, src, LEN, &s1);
    announce(&p, 9, src, LEN, &s2);
    cancel_send(&p, &s1);
    assert_int_equal(tc_tp_discard(p.ep[1], drop_all, NULL), 2);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &s2, SU_WAIT_MS), TC_OK); /* told it is done */
    for (int k = 0; k < 2000 && !rows_free(&p); k++) /* and the withdrawn one's slot is free */
        tc_tpt_spin(p.ctx, 2, 1);
    assert_true(rows_free(&p));
    assert_int_equal(tc_tp_recv(p.ep[1], 9, dst, LEN, &r), TC_OK);
    tc_tpt_spin(p.ctx, 2, 5);
    assert_int_equal(r.status, TC_INPROGRESS); /* nothing left to take */
    assert_int_equal(p.ep[1]->ops->cancel(p.ep[1], &r), TC_OK);
    still_works(&p);
    free(src);
    free(dst);
    tc_tpt_pair_close(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_withdrawn_unread),
        cmocka_unit_test(test_withdrawn_half_read),
        cmocka_unit_test(test_withdrawn_sink),
        cmocka_unit_test(test_withdrawn_unmapped),
        cmocka_unit_test(test_withdrawn_never_taken),
        cmocka_unit_test(test_announced_bound),
        cmocka_unit_test(test_discard),
        cmocka_unit_test(test_closed_half_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
