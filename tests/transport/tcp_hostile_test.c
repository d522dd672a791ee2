/* Bytes written by a raw socket to a TCP context: foreign, stale and hostile connections.
 * The wire format is spelled out in tcp_util.h, independently of the backend's sources. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcomms/base/status.h"
#include "tcomms/transport/tcp.h"
#include "tcomms/transport/transport.h"
#include "tcp_util.h"
#include "tp_util.h"

/* After a correct hello, a message header whose length word has the top byte @p kind (the
 * frame's kind) and the rest @p len: TC_ERR_PROTOCOL naming @p what, nothing allocated. */
static void bad_header(uint64_t len, unsigned kind, const char *what)
{
    tc_tp_ctx_t *ctx = tc_tcpt_ctx_new(1, NULL);
    tc_tp_ep_t *ep = tc_tcpt_loop_ep(ctx, 0);
    unsigned char in[16];
    tc_tp_req_t r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(ep, 4, in, sizeof(in), &r), TC_OK);

    int fd = tc_tcpt_raw_hello(ctx, 0, 0, 1, 0, 0);
    unsigned char hdr[16];
    tc_tcpt_le(hdr, 9, 8);
    tc_tcpt_le(hdr + 8, len | (uint64_t)kind << 56, 8);
    tc_tcpt_raw_send(fd, hdr, sizeof(hdr));

    assert_int_equal(tc_tpt_wait_req(&ctx, 1, &r, 5000), TC_ERR_PROTOCOL);
    assert_int_equal(ep->failed, TC_ERR_PROTOCOL);
    assert_non_null(strstr(tc_tp_ep_error(ep), "peer 0 ("));
    assert_non_null(strstr(tc_tp_ep_error(ep), what));
    tc_tcpt_expect_eof(ctx, fd); /* and the socket is closed */
    close(fd);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);
}

/* A header claiming 2^56 - 1 bytes, and one of a kind no sender writes (whose length word is
 * huge for it): each is named as what it is. */
static void test_huge_length(void **state)
{
    (void)state;
    bad_header((1ULL << 56) - 1, 0, "length 72057594037927935, more than the maximum");
    bad_header(8, 0x77, "unknown kind 0x77 (tag 9)");
}

/* A valid stream that stops in the middle of a message. */
static void test_cut_mid_message(void **state)
{
    (void)state;
    tc_tp_ctx_t *ctx = tc_tcpt_ctx_new(1, NULL);
    tc_tp_ep_t *ep = tc_tcpt_loop_ep(ctx, 0);

    int fd = tc_tcpt_raw_hello(ctx, 0, 0, 1, 0, 0);
    unsigned char msg[16 + 5 + 16 + 3];
    tc_tcpt_le(msg, 2, 8); /* a whole 5-byte message, tag 2 */
    tc_tcpt_le(msg + 8, 5, 8);
    memcpy(msg + 16, "hello", 5);
    tc_tcpt_le(msg + 21, 2, 8); /* then 3 of 100 bytes */
    tc_tcpt_le(msg + 29, 100, 8);
    memcpy(msg + 37, "abc", 3);
    tc_tcpt_raw_send(fd, msg, sizeof(msg));
    close(fd);

    /* The whole message arrived before the failure: it can still be received after it. */
    assert_int_equal(tc_tpt_wait_failed(&ctx, 1, ep, 5000), TC_ERR_PEER_FAILED);
    assert_non_null(strstr(tc_tp_ep_error(ep), "in the middle of a message (3 of 100 bytes"));
    unsigned char a[5], b[100];
    tc_tp_req_t ra = TC_TP_REQ_INIT, rb = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(ep, 2, a, sizeof(a), &ra), TC_OK);
    assert_int_equal(ra.status, TC_OK);
    assert_int_equal(ra.bytes, 5);
    assert_memory_equal(a, "hello", 5);
    assert_int_equal(tc_tp_recv(ep, 2, b, sizeof(b), &rb), TC_ERR_PEER_FAILED);
    assert_int_equal(rb.status, TC_ERR_PEER_FAILED);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);
}

/* Foreign and stale hellos are refused; the endpoint to id 0 stays healthy and still works. */
static void test_refused_hellos(void **state)
{
    (void)state;
    tc_tp_ctx_t *ctx = tc_tcpt_ctx_new(5, NULL);
    tc_tp_ep_t *ep = tc_tcpt_loop_ep(ctx, 2);
    unsigned char hello[64];

    /* not a tcomms hello: dropped without an answer */
    int fd = tc_tcpt_raw_connect(ctx);
    tc_tcpt_raw_send(fd, hello, tc_tcpt_make_hello(hello, 0x48545450u, 0, 2, 5, 0));
    tc_tcpt_expect_eof(ctx, fd);
    close(fd);

    /* addressed to another id (a stale address): result 2 */
    fd = tc_tcpt_raw_connect(ctx);
    tc_tcpt_raw_send(fd, hello, tc_tcpt_make_hello(hello, TCP_MAGIC, 0, 2, 6, 0));
    tc_tcpt_expect_ack(ctx, fd, 2, 5, 2);
    tc_tcpt_expect_eof(ctx, fd);
    close(fd);

    /* from a larger id, which must accept rather than connect: result 4 */
    fd = tc_tcpt_raw_connect(ctx);
    tc_tcpt_raw_send(fd, hello, tc_tcpt_make_hello(hello, TCP_MAGIC, 0, 9, 5, 0));
    tc_tcpt_expect_ack(ctx, fd, 4, 5, 9);
    close(fd);

    /* another wire version, the previous one (its acks answered one operation each): result 1 */
    fd = tc_tcpt_raw_connect(ctx);
    tc_tcpt_make_hello(hello, TCP_MAGIC, 0, 2, 5, 0);
    tc_tcpt_le(hello + 4, TCP_VERSION - 1, 2);
    tc_tcpt_raw_send(fd, hello, TCP_HELLO_LEN);
    tc_tcpt_expect_ack(ctx, fd, 1, 5, 2);
    close(fd);

    /* half a hello, then gone; and silence */
    fd = tc_tcpt_raw_connect(ctx);
    tc_tcpt_raw_send(fd, hello, 20);
    close(fd);
    tc_tpt_spin(&ctx, 1, 50);

    assert_int_equal(ep->failed, TC_OK);

    /* the real one is accepted, a second one from the same id is a duplicate: result 5 */
    int good = tc_tcpt_raw_hello(ctx, 0, 2, 5, 0, 0);
    assert_int_equal(tc_tcpt_raw_hello(ctx, 0, 2, 5, 0, 5), -1); /* after its proof */

    /* the good connection carries data to the endpoint, and from it */
    unsigned char msg[16 + 4];
    tc_tcpt_le(msg, 77, 8);
    tc_tcpt_le(msg + 8, 4, 8);
    memcpy(msg + 16, "data", 4);
    tc_tcpt_raw_send(good, msg, sizeof(msg));
    unsigned char in[4];
    tc_tp_req_t r = TC_TP_REQ_INIT, s = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(ep, 77, in, sizeof(in), &r), TC_OK);
    assert_int_equal(tc_tpt_wait_req(&ctx, 1, &r, 5000), TC_OK);
    assert_memory_equal(in, "data", 4);
    assert_int_equal(tc_tp_send(ep, 78, "back", 4, &s), TC_OK);
    assert_int_equal(tc_tpt_wait_req(&ctx, 1, &s, 5000), TC_OK);
    tc_tcpt_expect_msg(ctx, good, 78, "back", 4);
    close(good);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);
}

/* With a secret, a hello from a side without one is refused at once with result 3; one that
 * claims a secret but proves another is refused after its proof with result 10. */
static void test_wrong_digest(void **state)
{
    (void)state;
    tc_tp_ctx_t *ctx = tc_tcpt_ctx_new(1, "job-42");
    assert_int_equal(tc_tcpt_raw_hello(ctx, 0, 0, 1, 0, 3), -1); /* and EOF */
    tc_tp_ctx_destroy(ctx);
}

/* Pseudo-random garbage after a correct hello never crashes; the endpoint may fail. */
static void test_garbage_stream(void **state)
{
    (void)state;
    for (uint64_t seed = 0; seed < 20; seed++) {
        tc_tp_ctx_t *ctx = tc_tcpt_ctx_new(1, NULL);
        tc_tp_ep_t *ep = tc_tcpt_loop_ep(ctx, 0);
        unsigned char buf[64];
        tc_tp_req_t r = TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_recv(ep, seed, buf, sizeof(buf), &r), TC_OK);
        int fd = tc_tcpt_raw_hello(ctx, 0, 0, 1, 0, 0);
        unsigned char junk[4096];
        tc_tpt_fill(junk, sizeof(junk), seed);
        if (seed % 2) /* small lengths so some messages parse */
            for (size_t i = 0; i + 16 <= sizeof(junk); i += 16 + (seed % 7))
                tc_tcpt_le(junk + i + 8, junk[i] % 40, 8);
        tc_tcpt_raw_send(fd, junk, sizeof(junk));
        tc_tpt_spin(&ctx, 1, 30);
        close(fd);
        tc_status_t st = tc_tpt_wait_failed(&ctx, 1, ep, 5000);
        assert_true(st == TC_ERR_PROTOCOL || st == TC_ERR_PEER_FAILED);
        assert_true(r.status != TC_INPROGRESS);
        tc_tp_ep_close(ep);
        tc_tp_ctx_destroy(ctx);
    }
}

int main(void)
{
    setenv("TC_SOCKET_IFNAME", "lo", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_huge_length),    cmocka_unit_test(test_cut_mid_message),
        cmocka_unit_test(test_refused_hellos), cmocka_unit_test(test_wrong_digest),
        cmocka_unit_test(test_garbage_stream),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
