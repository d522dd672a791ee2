/* TCP between two contexts of one process: driven by one thread, and by two threads. */
#include <pthread.h>
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
#include "tcp_util.h"
#include "tp_util.h"

static const size_t sizes[] = {0, 1, 7, 4096, 1u << 20, 64u << 20};

/* Send @p len bytes of pattern @p seed from pair side @p from; receive and check them. */
static void transfer(tp_pair_t *p, int from, uint64_t tag, size_t len, uint64_t seed,
                     int recv_first)
{
    unsigned char *src = malloc(len ? len : 1);
    assert_non_null(src);
    tc_tpt_fill(src, len, seed);
    tc_tpt_transfer(p, from, tag, src, len, seed, recv_first);
    free(src);
}

static void test_pingpong_sizes(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_tcpt_pair_open(&p, "s3cret");
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        transfer(&p, 0, 100 + i, sizes[i], 2 * i, 1);
        transfer(&p, 1, 100 + i, sizes[i], 2 * i + 1, 1);
    }
    tc_tpt_pair_close(&p);
}

static void test_unexpected(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_tcpt_pair_open(&p, NULL);
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        transfer(&p, 1, 7, sizes[i], 50 + i, 0);
        transfer(&p, 0, 7, sizes[i], 60 + i, 0);
    }
    tc_tpt_pair_close(&p);
}

/* A request posted again while pending is refused (it looped progress forever before). */
static void test_repost_pending(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_tcpt_pair_open(&p, NULL);
    tc_tpt_repost_check(p.ctx, 2, p.ep[0], p.ep[1]);
    tc_tpt_pair_close(&p);
}

/* A receive posted while its message is only partly buffered as unexpected. */
static void test_unexpected_partial(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_tcpt_pair_open(&p, NULL);
    for (int rounds = 1; rounds <= 64; rounds *= 4) {
        size_t len = 16u << 20;
        unsigned char *src = malloc(len);
        tc_tpt_fill(src, len, (uint64_t)rounds);
        unsigned char *dst = tc_tpt_guarded_alloc(len);
        tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_send(p.ep[0], 3, src, len, &s), TC_OK);
        for (int k = 0; k < rounds; k++) {
            tc_tp_progress(p.ctx[0]);
            tc_tp_progress(p.ctx[1]);
        }
        assert_int_equal(tc_tp_recv(p.ep[1], 3, dst, len, &r), TC_OK);
        assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &r, TP_WAIT_MS), TC_OK);
        assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &s, TP_WAIT_MS), TC_OK);
        assert_int_equal(r.bytes, len);
        assert_int_equal(tc_tpt_check(dst, len, (uint64_t)rounds), len);
        tc_tpt_guarded_check_free(dst, len);
        free(src);
    }
    tc_tpt_pair_close(&p);
}

/* Many messages, three tags, both directions: FIFO per tag, any order across tags. */
#define NMSG 300
static void test_ordering(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_tcpt_pair_open(&p, NULL);
    size_t len[NMSG];
    for (int i = 0; i < NMSG; i++)
        len[i] = (size_t)((i * 131) % 3000) + (i % 17 == 0 ? 70000 : 0);
    tc_tpt_many_in_flight(&p, NMSG, len, 50);
    tc_tpt_pair_close(&p);
}

/* A message longer than the receive: TC_ERR_TRUNCATED, nothing past cap, stream intact. */
static void truncate_case(tp_pair_t *p, size_t len, size_t cap, int recv_first)
{
    unsigned char *src = malloc(len);
    tc_tpt_fill(src, len, len);
    unsigned char *dst = tc_tpt_guarded_alloc(cap);
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
    if (recv_first)
        assert_int_equal(tc_tp_recv(p->ep[1], 11, dst, cap, &r), TC_OK);
    assert_int_equal(tc_tp_send(p->ep[0], 11, src, len, &s), TC_OK);
    if (!recv_first) {
        assert_int_equal(tc_tpt_wait_req(p->ctx, 2, &s, TP_WAIT_MS), TC_OK);
        assert_int_equal(tc_tp_recv(p->ep[1], 11, dst, cap, &r), TC_OK);
    }
    assert_int_equal(tc_tpt_wait_req(p->ctx, 2, &r, TP_WAIT_MS), TC_ERR_TRUNCATED);
    assert_int_equal(tc_tpt_wait_req(p->ctx, 2, &s, TP_WAIT_MS), TC_OK);
    assert_int_equal(r.bytes, cap);
    assert_int_equal(tc_tpt_check(dst, cap, len), cap);
    tc_tpt_guarded_check_free(dst, cap);
    free(src);
    /* the next message on the same tag is whole: the rest was consumed */
    transfer(p, 0, 11, 100, 77, recv_first);
}

static void test_truncation(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_tcpt_pair_open(&p, NULL);
    truncate_case(&p, 100, 40, 1);
    truncate_case(&p, 100, 40, 0);
    truncate_case(&p, 100, 0, 1);
    truncate_case(&p, 4u << 20, 1000, 1);
    truncate_case(&p, 4u << 20, (4u << 20) - 1, 1);
    truncate_case(&p, 4u << 20, 1000, 0);
    assert_int_equal(p.ep[0]->failed, TC_OK);
    assert_int_equal(p.ep[1]->failed, TC_OK);
    tc_tpt_pair_close(&p);
}

/* The accepting side creates its endpoint late: the connection waits, nothing is lost. */
static void test_parked(void **state)
{
    (void)state;
    tc_tp_ctx_t *ctx[2] = {tc_tcpt_ctx_new(0, "k"), tc_tcpt_ctx_new(1, "k")};
    unsigned char addr[2][64];
    size_t alen[2] = {tc_tpt_addr(ctx[0], addr[0]), tc_tpt_addr(ctx[1], addr[1])};
    tc_tp_ep_t *ep0, *ep1;
    assert_int_equal(tc_tp_ep_connect(ctx[0], 1, addr[1], alen[1], &ep0), TC_OK);
    unsigned char msg[3][1000];
    tc_tp_req_t s[3] = {TC_TP_REQ_INIT, TC_TP_REQ_INIT, TC_TP_REQ_INIT};
    for (int i = 0; i < 3; i++) {
        tc_tpt_fill(msg[i], sizeof(msg[i]), 900 + i);
        assert_int_equal(tc_tp_send(ep0, 5, msg[i], sizeof(msg[i]), &s[i]), TC_OK);
    }
    tc_tpt_spin(ctx, 2, 200); /* accepted and parked by ctx[1] */
    assert_int_equal(tc_tp_ep_connect(ctx[1], 0, addr[0], alen[0], &ep1), TC_OK);
    for (int i = 0; i < 3; i++) {
        unsigned char in[1000];
        tc_tp_req_t r = TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_recv(ep1, 5, in, sizeof(in), &r), TC_OK);
        assert_int_equal(tc_tpt_wait_req(ctx, 2, &r, TP_WAIT_MS), TC_OK);
        assert_int_equal(tc_tpt_check(in, sizeof(in), 900 + i), sizeof(in));
        assert_int_equal(tc_tpt_wait_req(ctx, 2, &s[i], TP_WAIT_MS), TC_OK);
    }
    tc_tp_ep_close(ep0);
    tc_tp_ep_close(ep1);
    tc_tp_ctx_destroy(ctx[0]);
    tc_tp_ctx_destroy(ctx[1]);
}

/* Different secrets: the connector finds that the acceptor's challenge does not prove its
 * secret (the acceptor's endpoint never gets data), and its endpoint fails within the bound
 * with a text that names the peer and the reason. */
static void test_wrong_secret(void **state)
{
    (void)state;
    tc_tp_ctx_t *ctx[2] = {tc_tcpt_ctx_new(0, "alpha"), tc_tcpt_ctx_new(1, "beta")};
    unsigned char addr[2][64];
    size_t alen[2] = {tc_tpt_addr(ctx[0], addr[0]), tc_tpt_addr(ctx[1], addr[1])};
    tc_tp_ep_t *ep0, *ep1;
    assert_int_equal(tc_tp_ep_connect(ctx[0], 1, addr[1], alen[1], &ep0), TC_OK);
    assert_int_equal(tc_tp_ep_connect(ctx[1], 0, addr[0], alen[0], &ep1), TC_OK);
    unsigned char in0[8], in1[8];
    tc_tp_req_t r0 = TC_TP_REQ_INIT, r1 = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(ep0, 1, in0, sizeof(in0), &r0), TC_OK);
    assert_int_equal(tc_tp_recv(ep1, 1, in1, sizeof(in1), &r1), TC_OK);

    assert_int_equal(tc_tpt_wait_failed(ctx, 2, ep0, 5000), TC_ERR_PEER_FAILED);
    assert_int_equal(r0.status, TC_ERR_PEER_FAILED);
    assert_non_null(strstr(tc_tp_ep_error(ep0), "peer 1 (127.0.0.1:"));
    assert_non_null(strstr(tc_tp_ep_error(ep0), "failed the challenge: its MAC does not prove "
                                                 "the job secret (wrong secret"));
    assert_non_null(strstr(tc_tp_ep_error(ep0), "1 receive pending"));

    tc_tpt_spin(ctx, 2, 100);
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
        tc_tcpt_pair_open(&p, NULL);
        transfer(&p, 0, 1, 10, 1, 1); /* connection is up */
        int other = 1 - closer;
        unsigned char in[16];
        tc_tp_req_t r = TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_recv(p.ep[other], 2, in, sizeof(in), &r), TC_OK);
        tc_tp_ep_close(p.ep[closer]);
        assert_int_equal(tc_tpt_wait_req(&p.ctx[other], 1, &r, 5000), TC_ERR_PEER_FAILED);
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
    tc_tcpt_pair_open(&p, NULL);
    transfer(&p, 0, 1, 10, 1, 1);
    size_t len = 64u << 20; /* far more than the socket buffers: stays partly written */
    unsigned char *big = malloc(len);
    tc_tpt_fill(big, len, 3);
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
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &r1, TP_WAIT_MS), TC_OK);
    assert_int_equal(tc_tpt_check(dst, len, 3), len);
    assert_int_equal(tc_tp_recv(p.ep[1], 2, dst, 100, &r2), TC_OK);
    tc_tpt_spin(p.ctx, 2, 50);
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
    if (r3.status == TC_INPROGRESS)
        tc_tpt_cancel_filling(&p, &r3, &s3, dst, len, TP_WAIT_MS, 50, 4096);
    else
        assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &s3, TP_WAIT_MS), TC_OK);
    transfer(&p, 0, 6, 1000, 9, 1);
    free(dst);
    free(big);
    tc_tpt_pair_close(&p);
}

/* Destroying contexts with endpoints, pending requests, unexpected messages and parked
 * connections still there frees everything (ASan checks) and aborts the requests. */
static void test_destroy_busy(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_tcpt_pair_open(&p, NULL);
    unsigned char buf[100];
    tc_tpt_fill(buf, sizeof(buf), 1);
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(p.ep[0], 1, buf, sizeof(buf), &s), TC_OK);
    assert_int_equal(tc_tpt_wait_req(p.ctx, 2, &s, TP_WAIT_MS), TC_OK);
    tc_tpt_spin(p.ctx, 2, 20); /* now an unexpected message in ctx 1 */
    assert_int_equal(tc_tp_recv(p.ep[1], 2, buf, sizeof(buf), &r), TC_OK);

    tc_tp_ctx_destroy(p.ctx[1]);
    assert_int_equal(r.status, TC_ERR_ABORTED);
    assert_int_equal(tc_tpt_wait_failed(&p.ctx[0], 1, p.ep[0], 5000), TC_ERR_PEER_FAILED);

    /* a context holding a parked connection (its endpoint never comes) and one that has not
     * sent its hello yet */
    tc_tp_ctx_t *hub = tc_tcpt_ctx_new(7, NULL), *late = tc_tcpt_ctx_new(3, NULL);
    unsigned char addr[64];
    size_t alen = tc_tpt_addr(hub, addr);
    tc_tp_ep_t *lep;
    assert_int_equal(tc_tp_ep_connect(late, 7, addr, alen, &lep), TC_OK);
    int raw = tc_tcpt_raw_connect(hub);
    tc_tp_ctx_t *two[2] = {hub, late};
    tc_tpt_spin(two, 2, 50);
    assert_int_equal(lep->failed, TC_OK);
    tc_tp_ctx_destroy(hub);
    assert_int_equal(tc_tpt_wait_failed(&late, 1, lep, 5000), TC_ERR_PEER_FAILED);
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

static void *thread_main(void *p)
{
    thread_arg_t *a = p;
    tc_tp_ctx_t *ctx = NULL;
    if (tc_tpt_ctx_try(&tc_tp_tcp_ops, a->id, "threads", NULL, &ctx) != TC_OK) {
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
                tc_tpt_fill(buf, len, seed);
                tc_tp_send(ep, i, buf, len, &req);
                a->errors += tc_tpt_wait_bare(ctx, &req, TP_WAIT_MS, 10) != TC_OK;
            } else {
                memset(buf, 0, len + 1);
                tc_tp_recv(ep, i, buf, len, &req);
                a->errors += tc_tpt_wait_bare(ctx, &req, TP_WAIT_MS, 10) != TC_OK;
                a->errors += req.bytes != len;
                a->errors += tc_tpt_check(buf, len, seed) != len;
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
        cmocka_unit_test(test_pingpong_sizes), cmocka_unit_test(test_unexpected),
        cmocka_unit_test(test_repost_pending), cmocka_unit_test(test_unexpected_partial),
        cmocka_unit_test(test_ordering),       cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_parked),         cmocka_unit_test(test_wrong_secret),
        cmocka_unit_test(test_peer_close),     cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_destroy_busy),   cmocka_unit_test(test_two_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
