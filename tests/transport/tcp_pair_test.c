/* TCP between two contexts of one process: driven by one thread, and by two threads. */
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdio.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/base/status.h"
#include "tcomms/base/time.h"
#include "tcomms/transport/tcp.h"
#include "tcomms/transport/transport.h"
#include "tp_util.h"

#define GUARD 64
#define GUARD_BYTE 0xA5
#define WAIT_MS 30000

static const size_t sizes[] = {0, 1, 7, 4096, 1u << 20, 64u << 20};

/* A receive buffer of @p cap bytes between two guard zones. */
static unsigned char *guarded_alloc(size_t cap)
{
    unsigned char *raw = malloc(cap + 2 * GUARD);
    assert_non_null(raw);
    memset(raw, GUARD_BYTE, cap + 2 * GUARD);
    return raw + GUARD;
}

static void guarded_check_free(unsigned char *buf, size_t cap)
{
    unsigned char *raw = buf - GUARD;
    for (size_t i = 0; i < GUARD; i++) {
        assert_int_equal(raw[i], GUARD_BYTE);
        assert_int_equal(buf[cap + i], GUARD_BYTE);
    }
    free(raw);
}

/* Send @p len bytes of pattern @p seed from pair side @p from; receive and check them. */
static void transfer(tp_pair_t *p, int from, uint64_t tag, size_t len, uint64_t seed,
                     int recv_first)
{
    int to = 1 - from;
    unsigned char *src = malloc(len ? len : 1);
    assert_non_null(src);
    tp_fill(src, len, seed);
    unsigned char *dst = guarded_alloc(len);
    tc_tp_req_t sreq = TC_TP_REQ_INIT, rreq = TC_TP_REQ_INIT;

    if (recv_first)
        assert_int_equal(tc_tp_recv(p->ep[to], tag, dst, len, &rreq), TC_OK);
    assert_int_equal(tc_tp_send(p->ep[from], tag, src, len, &sreq), TC_OK);
    if (!recv_first) {
        assert_int_equal(tp_wait_req(p->ctx, 2, &sreq, WAIT_MS), TC_OK); /* buffered unexpected */
        assert_int_equal(tc_tp_recv(p->ep[to], tag, dst, len, &rreq), TC_OK);
    }
    assert_int_equal(tp_wait_req(p->ctx, 2, &rreq, WAIT_MS), TC_OK);
    assert_int_equal(tp_wait_req(p->ctx, 2, &sreq, WAIT_MS), TC_OK);
    assert_int_equal(rreq.bytes, len);
    assert_int_equal(sreq.bytes, len);
    assert_int_equal(tp_check(dst, len, seed), len);
    guarded_check_free(dst, len);
    free(src);
}

static void test_pingpong_sizes(void **state)
{
    (void)state;
    tp_pair_t p;
    tp_pair_open(&p, "s3cret");
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        transfer(&p, 0, 100 + i, sizes[i], 2 * i, 1);
        transfer(&p, 1, 100 + i, sizes[i], 2 * i + 1, 1);
    }
    tp_pair_close(&p);
}

static void test_unexpected(void **state)
{
    (void)state;
    tp_pair_t p;
    tp_pair_open(&p, NULL);
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        transfer(&p, 1, 7, sizes[i], 50 + i, 0);
        transfer(&p, 0, 7, sizes[i], 60 + i, 0);
    }
    tp_pair_close(&p);
}

/* A receive posted while its message is only partly buffered as unexpected. */
static void test_unexpected_partial(void **state)
{
    (void)state;
    tp_pair_t p;
    tp_pair_open(&p, NULL);
    for (int rounds = 1; rounds <= 64; rounds *= 4) {
        size_t len = 16u << 20;
        unsigned char *src = malloc(len);
        tp_fill(src, len, (uint64_t)rounds);
        unsigned char *dst = guarded_alloc(len);
        tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_send(p.ep[0], 3, src, len, &s), TC_OK);
        for (int k = 0; k < rounds; k++) {
            tc_tp_progress(p.ctx[0]);
            tc_tp_progress(p.ctx[1]);
        }
        assert_int_equal(tc_tp_recv(p.ep[1], 3, dst, len, &r), TC_OK);
        assert_int_equal(tp_wait_req(p.ctx, 2, &r, WAIT_MS), TC_OK);
        assert_int_equal(tp_wait_req(p.ctx, 2, &s, WAIT_MS), TC_OK);
        assert_int_equal(r.bytes, len);
        assert_int_equal(tp_check(dst, len, (uint64_t)rounds), len);
        guarded_check_free(dst, len);
        free(src);
    }
    tp_pair_close(&p);
}

/* Many messages, three tags, both directions: FIFO per tag, any order across tags. */
#define NMSG 300
static void test_ordering(void **state)
{
    (void)state;
    tp_pair_t p;
    tp_pair_open(&p, NULL);
    static tc_tp_req_t sreq[2][NMSG], rreq[2][NMSG];
    static unsigned char *sbuf[2][NMSG], *rbuf[2][NMSG];
    size_t len[NMSG];
    uint64_t tag[NMSG];
    int seq_of[NMSG]; /* k-th message of its tag */
    int count[3] = {0, 0, 0};
    for (int i = 0; i < NMSG; i++) {
        tag[i] = (uint64_t)((i * 7 + i / 5) % 3);
        seq_of[i] = count[tag[i]]++;
        len[i] = (size_t)((i * 131) % 3000) + (i % 17 == 0 ? 70000 : 0);
    }
    for (int d = 0; d < 2; d++) {
        for (int i = 0; i < NMSG; i++) {
            sbuf[d][i] = malloc(len[i] + 1);
            rbuf[d][i] = malloc(len[i] + 1);
            /* content identifies (direction, tag, index within the tag) */
            tp_fill(sbuf[d][i], len[i], (uint64_t)(d * 100000 + tag[i] * 1000 + seq_of[i]));
            tc_tp_req_t init = TC_TP_REQ_INIT;
            sreq[d][i] = rreq[d][i] = init;
        }
    }
    /* Receives: the first half posted before any send, in a tag-permuted order. */
    for (int d = 0; d < 2; d++) {
        for (int t = 2; t >= 0; t--)
            for (int i = 0; i < NMSG / 2; i++)
                if (tag[i] == (uint64_t)t)
                    assert_int_equal(
                        tc_tp_recv(p.ep[1 - d], tag[i], rbuf[d][i], len[i], &rreq[d][i]), TC_OK);
    }
    for (int i = 0; i < NMSG; i++)
        for (int d = 0; d < 2; d++)
            assert_int_equal(tc_tp_send(p.ep[d], tag[i], sbuf[d][i], len[i], &sreq[d][i]), TC_OK);
    tp_spin(p.ctx, 2, 50);
    /* the second half is (mostly) unexpected by now: claim it in another tag order */
    for (int d = 0; d < 2; d++)
        for (int t = 1; t < 4; t++)
            for (int i = NMSG / 2; i < NMSG; i++)
                if (tag[i] == (uint64_t)(t % 3))
                    assert_int_equal(
                        tc_tp_recv(p.ep[1 - d], tag[i], rbuf[d][i], len[i], &rreq[d][i]), TC_OK);
    for (int d = 0; d < 2; d++) {
        for (int i = 0; i < NMSG; i++) {
            assert_int_equal(tp_wait_req(p.ctx, 2, &rreq[d][i], WAIT_MS), TC_OK);
            assert_int_equal(tp_wait_req(p.ctx, 2, &sreq[d][i], WAIT_MS), TC_OK);
            assert_int_equal(rreq[d][i].bytes, len[i]);
            assert_int_equal(
                tp_check(rbuf[d][i], len[i], (uint64_t)(d * 100000 + tag[i] * 1000 + seq_of[i])),
                len[i]);
            free(sbuf[d][i]);
            free(rbuf[d][i]);
        }
    }
    tp_pair_close(&p);
}

/* A message longer than the receive: TC_ERR_TRUNCATED, nothing past cap, stream intact. */
static void truncate_case(tp_pair_t *p, size_t len, size_t cap, int recv_first)
{
    unsigned char *src = malloc(len);
    tp_fill(src, len, len);
    unsigned char *dst = guarded_alloc(cap);
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
    if (recv_first)
        assert_int_equal(tc_tp_recv(p->ep[1], 11, dst, cap, &r), TC_OK);
    assert_int_equal(tc_tp_send(p->ep[0], 11, src, len, &s), TC_OK);
    if (!recv_first) {
        assert_int_equal(tp_wait_req(p->ctx, 2, &s, WAIT_MS), TC_OK);
        assert_int_equal(tc_tp_recv(p->ep[1], 11, dst, cap, &r), TC_OK);
    }
    assert_int_equal(tp_wait_req(p->ctx, 2, &r, WAIT_MS), TC_ERR_TRUNCATED);
    assert_int_equal(tp_wait_req(p->ctx, 2, &s, WAIT_MS), TC_OK);
    assert_int_equal(r.bytes, cap);
    assert_int_equal(tp_check(dst, cap, len), cap);
    guarded_check_free(dst, cap);
    free(src);
    /* the next message on the same tag is whole: the rest was consumed */
    transfer(p, 0, 11, 100, 77, recv_first);
}

static void test_truncation(void **state)
{
    (void)state;
    tp_pair_t p;
    tp_pair_open(&p, NULL);
    truncate_case(&p, 100, 40, 1);
    truncate_case(&p, 100, 40, 0);
    truncate_case(&p, 100, 0, 1);
    truncate_case(&p, 4u << 20, 1000, 1);
    truncate_case(&p, 4u << 20, (4u << 20) - 1, 1);
    truncate_case(&p, 4u << 20, 1000, 0);
    assert_int_equal(p.ep[0]->failed, TC_OK);
    assert_int_equal(p.ep[1]->failed, TC_OK);
    tp_pair_close(&p);
}

/* The accepting side creates its endpoint late: the connection waits, nothing is lost. */
static void test_parked(void **state)
{
    (void)state;
    tc_tp_ctx_t *ctx[2] = {tp_ctx_new(0, "k"), tp_ctx_new(1, "k")};
    unsigned char addr[2][64];
    size_t alen[2] = {tp_addr(ctx[0], addr[0]), tp_addr(ctx[1], addr[1])};
    tc_tp_ep_t *ep0, *ep1;
    assert_int_equal(tc_tp_ep_connect(ctx[0], 1, addr[1], alen[1], &ep0), TC_OK);
    unsigned char msg[3][1000];
    tc_tp_req_t s[3] = {TC_TP_REQ_INIT, TC_TP_REQ_INIT, TC_TP_REQ_INIT};
    for (int i = 0; i < 3; i++) {
        tp_fill(msg[i], sizeof(msg[i]), 900 + i);
        assert_int_equal(tc_tp_send(ep0, 5, msg[i], sizeof(msg[i]), &s[i]), TC_OK);
    }
    tp_spin(ctx, 2, 200); /* accepted and parked by ctx[1] */
    assert_int_equal(tc_tp_ep_connect(ctx[1], 0, addr[0], alen[0], &ep1), TC_OK);
    for (int i = 0; i < 3; i++) {
        unsigned char in[1000];
        tc_tp_req_t r = TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_recv(ep1, 5, in, sizeof(in), &r), TC_OK);
        assert_int_equal(tp_wait_req(ctx, 2, &r, WAIT_MS), TC_OK);
        assert_int_equal(tp_check(in, sizeof(in), 900 + i), sizeof(in));
        assert_int_equal(tp_wait_req(ctx, 2, &s[i], WAIT_MS), TC_OK);
    }
    tc_tp_ep_close(ep0);
    tc_tp_ep_close(ep1);
    tc_tp_ctx_destroy(ctx[0]);
    tc_tp_ctx_destroy(ctx[1]);
}

/* Different secrets: the acceptor refuses (its endpoint never gets data), the connector's
 * endpoint fails within the bound with a text that names the peer and the reason. */
static void test_wrong_secret(void **state)
{
    (void)state;
    tc_tp_ctx_t *ctx[2] = {tp_ctx_new(0, "alpha"), tp_ctx_new(1, "beta")};
    unsigned char addr[2][64];
    size_t alen[2] = {tp_addr(ctx[0], addr[0]), tp_addr(ctx[1], addr[1])};
    tc_tp_ep_t *ep0, *ep1;
    assert_int_equal(tc_tp_ep_connect(ctx[0], 1, addr[1], alen[1], &ep0), TC_OK);
    assert_int_equal(tc_tp_ep_connect(ctx[1], 0, addr[0], alen[0], &ep1), TC_OK);
    unsigned char in0[8], in1[8];
    tc_tp_req_t r0 = TC_TP_REQ_INIT, r1 = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(ep0, 1, in0, sizeof(in0), &r0), TC_OK);
    assert_int_equal(tc_tp_recv(ep1, 1, in1, sizeof(in1), &r1), TC_OK);

    assert_int_equal(tp_wait_failed(ctx, 2, ep0, 5000), TC_ERR_PEER_FAILED);
    assert_int_equal(r0.status, TC_ERR_PEER_FAILED);
    assert_non_null(strstr(tc_tp_ep_error(ep0), "peer 1 (127.0.0.1:"));
    assert_non_null(strstr(tc_tp_ep_error(ep0), "refused the connection: wrong secret"));
    assert_non_null(strstr(tc_tp_ep_error(ep0), "1 receive pending"));

    tp_spin(ctx, 2, 100);
    assert_int_equal(ep1->failed, TC_OK);
    assert_int_equal(r1.status, TC_INPROGRESS);
    tc_tp_ep_close(ep0);
    tc_tp_ep_close(ep1);
    assert_int_equal(r1.status, TC_ERR_ABORTED);
    tc_tp_ctx_destroy(ctx[0]);
    tc_tp_ctx_destroy(ctx[1]);
}

/* One side closes: the other's pending requests fail and the text says what happened. */
static void test_peer_close(void **state)
{
    (void)state;
    for (int closer = 0; closer < 2; closer++) {
        tp_pair_t p;
        tp_pair_open(&p, NULL);
        transfer(&p, 0, 1, 10, 1, 1); /* connection is up */
        int other = 1 - closer;
        unsigned char in[16];
        tc_tp_req_t r = TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_recv(p.ep[other], 2, in, sizeof(in), &r), TC_OK);
        tc_tp_ep_close(p.ep[closer]);
        assert_int_equal(tp_wait_req(&p.ctx[other], 1, &r, 5000), TC_ERR_PEER_FAILED);
        char expect[32];
        snprintf(expect, sizeof(expect), "peer %d (127.0.0.1:", closer);
        assert_non_null(strstr(tc_tp_ep_error(p.ep[other]), expect));
        assert_non_null(strstr(tc_tp_ep_error(p.ep[other]), "closed the connection"));
        assert_non_null(strstr(tc_tp_ep_error(p.ep[other]), "(0 sends, 1 receive pending)"));
        tc_tp_ep_close(p.ep[other]);
        tc_tp_ctx_destroy(p.ctx[0]);
        tc_tp_ctx_destroy(p.ctx[1]);
    }
}

/* Cancel: a queued send or receive; a send partly on the wire continues from a
 * private copy (the caller's buffer is free at once); a receive being filled
 * drops the rest of its message; a finished one cannot be cancelled. */
static void test_cancel(void **state)
{
    (void)state;
    tp_pair_t p;
    tp_pair_open(&p, NULL);
    transfer(&p, 0, 1, 10, 1, 1);
    size_t len = 64u << 20; /* far more than the socket buffers: stays partly written */
    unsigned char *big = malloc(len);
    tp_fill(big, len, 3);
    tc_tp_req_t s1 = TC_TP_REQ_INIT, s2 = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
    tc_tp_req_t stranger = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(p.ep[0], 1, big, len, &s1), TC_OK);
    assert_int_equal(tc_tp_send(p.ep[0], 2, big, 100, &s2), TC_OK);
    tc_tp_progress(p.ctx[0]); /* the receiver does not progress: s1 stays partly written */
    assert_int_equal(s1.status, TC_INPROGRESS);
    assert_int_equal(p.ep[0]->ops->cancel(p.ep[0], &s1), TC_OK);
    assert_int_equal(s1.status, TC_ERR_ABORTED);
    unsigned char *copy = malloc(len);
    memcpy(copy, big, len);
    memset(big, 0x5a, len); /* the caller's buffer is no longer read */
    assert_int_equal(p.ep[0]->ops->cancel(p.ep[0], &s2), TC_OK);
    assert_int_equal(s2.status, TC_ERR_ABORTED);
    assert_int_equal(p.ep[0]->ops->cancel(p.ep[0], &stranger), TC_ERR_NOT_FOUND);
    assert_int_equal(tc_tp_recv(p.ep[0], 9, big, 10, &r), TC_OK);
    assert_int_equal(p.ep[0]->ops->cancel(p.ep[0], &r), TC_OK);
    assert_int_equal(r.status, TC_ERR_ABORTED);
    memcpy(big, copy, len);
    free(copy);

    /* s1 still arrives whole, and nothing of s2 follows it */
    unsigned char *dst = malloc(len);
    tc_tp_req_t r1 = TC_TP_REQ_INIT, r2 = TC_TP_REQ_INIT, r3 = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(p.ep[1], 1, dst, len, &r1), TC_OK);
    assert_int_equal(tp_wait_req(p.ctx, 2, &r1, WAIT_MS), TC_OK);
    assert_int_equal(tp_check(dst, len, 3), len);
    assert_int_equal(tc_tp_recv(p.ep[1], 2, dst, 100, &r2), TC_OK);
    tp_spin(p.ctx, 2, 50);
    assert_int_equal(r2.status, TC_INPROGRESS);
    assert_int_equal(p.ep[1]->ops->cancel(p.ep[1], &r2), TC_OK);
    transfer(&p, 0, 2, 5, 8, 1);
    /* a receive being filled: the rest of its message is dropped, nothing more is
     * written to its buffer, and the next message arrives intact */
    assert_int_equal(tc_tp_recv(p.ep[1], 4, dst, len, &r3), TC_OK);
    tc_tp_req_t s3 = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(p.ep[0], 4, big, len, &s3), TC_OK);
    for (int i = 0; i < 3; i++) { /* a few rounds: far from the 64 MiB */
        tc_tp_progress(p.ctx[0]);
        tc_tp_progress(p.ctx[1]);
    }
    if (r3.status == TC_INPROGRESS) {
        assert_int_equal(p.ep[1]->ops->cancel(p.ep[1], &r3), TC_OK);
        assert_int_equal(r3.status, TC_ERR_ABORTED);
        memset(dst, 0xee, len);
        assert_int_equal(tp_wait_req(p.ctx, 2, &s3, WAIT_MS), TC_OK);
        tp_spin(p.ctx, 2, 50);
        for (size_t i = 0; i < len; i += 4096)
            assert_int_equal(dst[i], 0xee);
    } else {
        assert_int_equal(tp_wait_req(p.ctx, 2, &s3, WAIT_MS), TC_OK);
    }
    transfer(&p, 0, 6, 1000, 9, 1);
    free(dst);
    free(big);
    tp_pair_close(&p);
}

/* Destroying contexts with endpoints, pending requests, unexpected messages and parked
 * connections still there frees everything (ASan checks) and aborts the requests. */
static void test_destroy_busy(void **state)
{
    (void)state;
    tp_pair_t p;
    tp_pair_open(&p, NULL);
    unsigned char buf[100];
    tp_fill(buf, sizeof(buf), 1);
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(p.ep[0], 1, buf, sizeof(buf), &s), TC_OK);
    assert_int_equal(tp_wait_req(p.ctx, 2, &s, WAIT_MS), TC_OK);
    tp_spin(p.ctx, 2, 20); /* now an unexpected message in ctx 1 */
    assert_int_equal(tc_tp_recv(p.ep[1], 2, buf, sizeof(buf), &r), TC_OK);

    tc_tp_ctx_destroy(p.ctx[1]);
    assert_int_equal(r.status, TC_ERR_ABORTED);
    assert_int_equal(tp_wait_failed(&p.ctx[0], 1, p.ep[0], 5000), TC_ERR_PEER_FAILED);

    /* a context holding a parked connection (its endpoint never comes) and one that has not
     * sent its hello yet */
    tc_tp_ctx_t *hub = tp_ctx_new(7, NULL), *late = tp_ctx_new(3, NULL);
    unsigned char addr[64];
    size_t alen = tp_addr(hub, addr);
    tc_tp_ep_t *lep;
    assert_int_equal(tc_tp_ep_connect(late, 7, addr, alen, &lep), TC_OK);
    int raw = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    memcpy(&sa.sin_port, addr + 2, 2);
    memcpy(&sa.sin_addr.s_addr, addr + 4, 4);
    assert_int_equal(connect(raw, (struct sockaddr *)&sa, sizeof(sa)), 0);
    tc_tp_ctx_t *two[2] = {hub, late};
    tp_spin(two, 2, 50);
    assert_int_equal(lep->failed, TC_OK);
    tc_tp_ctx_destroy(hub);
    assert_int_equal(tp_wait_failed(&late, 1, lep, 5000), TC_ERR_PEER_FAILED);
    tc_tp_ctx_destroy(late);
    close(raw);
    tc_tp_ctx_destroy(p.ctx[0]);
}

/* ---- two threads, one context each ---- */

typedef struct shared {
    unsigned char addr[2][64];
    size_t alen[2];
    pthread_barrier_t barrier;
} shared_t;

typedef struct thread_arg {
    uint64_t id;
    shared_t *sh;
    int errors; /* counted here, asserted by the main thread */
} thread_arg_t;

static tc_status_t thread_wait(tc_tp_ctx_t *ctx, tc_tp_req_t *req)
{
    uint64_t deadline = tc_deadline_after_ms(WAIT_MS);
    while (req->status == TC_INPROGRESS && !tc_deadline_passed(deadline))
        if (tc_tp_progress(ctx) == 0)
            tc_tp_wait(ctx, 10);
    return req->status;
}

static void *thread_main(void *p)
{
    thread_arg_t *a = p;
    tc_tp_ctx_params_t params = TC_TP_CTX_PARAMS_INIT;
    params.self_id = a->id;
    params.secret = "threads";
    params.secret_len = 7;
    tc_tp_ctx_t *ctx = NULL;
    if (tc_tp_ctx_create(&tc_tp_tcp_ops, &params, &ctx) != TC_OK) {
        a->errors++;
        pthread_barrier_wait(&a->sh->barrier);
        pthread_barrier_wait(&a->sh->barrier);
        return NULL;
    }
    tc_tp_addr_pack(ctx, a->sh->addr[a->id], 64, &a->sh->alen[a->id]);
    pthread_barrier_wait(&a->sh->barrier); /* both addresses published */
    uint64_t peer = 1 - a->id;
    tc_tp_ep_t *ep = NULL;
    if (tc_tp_ep_connect(ctx, peer, a->sh->addr[peer], a->sh->alen[peer], &ep) != TC_OK)
        a->errors++;
    for (size_t i = 0; ep != NULL && i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t len = sizes[i];
        unsigned char *buf = malloc(len + 1);
        for (int turn = 0; turn < 2; turn++) {
            tc_tp_req_t req = TC_TP_REQ_INIT;
            uint64_t seed = 1000 + 2 * i + (uint64_t)turn;
            if ((uint64_t)turn == a->id) { /* my turn to send */
                tp_fill(buf, len, seed);
                tc_tp_send(ep, i, buf, len, &req);
                a->errors += thread_wait(ctx, &req) != TC_OK;
            } else {
                memset(buf, 0, len + 1);
                tc_tp_recv(ep, i, buf, len, &req);
                a->errors += thread_wait(ctx, &req) != TC_OK;
                a->errors += req.bytes != len;
                a->errors += tp_check(buf, len, seed) != len;
                a->errors += buf[len] != 0;
            }
        }
        free(buf);
    }
    pthread_barrier_wait(&a->sh->barrier); /* nobody closes while the other still receives */
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);
    return NULL;
}

static void test_two_threads(void **state)
{
    (void)state;
    static shared_t sh;
    memset(&sh, 0, sizeof(sh));
    pthread_barrier_init(&sh.barrier, NULL, 2);
    thread_arg_t args[2] = {{0, &sh, 0}, {1, &sh, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, thread_main, &args[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&sh.barrier);
    assert_int_equal(args[0].errors, 0);
    assert_int_equal(args[1].errors, 0);
}

int main(void)
{
    setenv("TC_SOCKET_IFNAME", "lo", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pingpong_sizes),
        cmocka_unit_test(test_unexpected),
        cmocka_unit_test(test_unexpected_partial),
        cmocka_unit_test(test_ordering),
        cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_parked),
        cmocka_unit_test(test_wrong_secret),
        cmocka_unit_test(test_peer_close),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_destroy_busy),
        cmocka_unit_test(test_two_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
