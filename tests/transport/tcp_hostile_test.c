/* Bytes written by a raw socket to a TCP context: foreign, stale and hostile connections.
 * The wire format is spelled out here independently of the backend's sources. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcomms/base/status.h"
#include "tcomms/base/time.h"
#include "tcomms/transport/tcp.h"
#include "tcomms/transport/transport.h"
#include "tp_util.h"

static void le(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* hello: u32 magic "TCTP", u16 version 1, u16 flags, u64 sender, u64 receiver, 32-byte digest */
static void make_hello(unsigned char h[56], uint32_t magic, uint64_t sender, uint64_t receiver)
{
    memset(h, 0, 56);
    le(h, magic, 4);
    le(h + 4, 1, 2);
    le(h + 8, sender, 8);
    le(h + 16, receiver, 8);
}

static int raw_connect(tc_tp_ctx_t *ctx)
{
    unsigned char addr[64];
    tp_addr(ctx, addr);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    memcpy(&sa.sin_port, addr + 2, 2);
    memcpy(&sa.sin_addr.s_addr, addr + 4, 4);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

static void raw_send(int fd, const void *buf, size_t len)
{
    assert_int_equal(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* Read up to @p cap bytes from the raw socket while progressing @p ctx, until @p want bytes
 * arrived, EOF or the deadline; returns the bytes read, and *eof_p says if EOF was seen. */
static size_t raw_read(tc_tp_ctx_t *ctx, int fd, unsigned char *buf, size_t want, int *eof_p)
{
    size_t got = 0;
    *eof_p = 0;
    uint64_t deadline = tc_deadline_after_ms(5000);
    while (got < want && !tc_deadline_passed(deadline)) {
        tc_tp_progress(ctx);
        ssize_t n = recv(fd, buf + got, want - got, MSG_DONTWAIT);
        if (n > 0) {
            got += (size_t)n;
        } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            *eof_p = 1;
            break;
        } else {
            tc_tp_wait(ctx, 5);
        }
    }
    return got;
}

static void expect_ack(tc_tp_ctx_t *ctx, int fd, unsigned result, uint64_t sender,
                       uint64_t receiver)
{
    unsigned char ack[24], expect[24];
    int eof;
    assert_int_equal(raw_read(ctx, fd, ack, sizeof(ack), &eof), sizeof(ack));
    le(expect, 0x50544354u, 4);
    le(expect + 4, 1, 2);
    le(expect + 6, result, 2);
    le(expect + 8, sender, 8);
    le(expect + 16, receiver, 8);
    assert_memory_equal(ack, expect, sizeof(ack));
}

static void expect_eof(tc_tp_ctx_t *ctx, int fd)
{
    unsigned char b[1];
    int eof;
    assert_int_equal(raw_read(ctx, fd, b, 1, &eof), 0);
    assert_true(eof);
}

/* After a correct hello, a header claiming 2^62 bytes: TC_ERR_PROTOCOL, nothing allocated. */
static void test_huge_length(void **state)
{
    (void)state;
    tc_tp_ctx_t *ctx = tp_ctx_new(1, NULL);
    unsigned char self[64];
    size_t alen = tp_addr(ctx, self);
    tc_tp_ep_t *ep;
    assert_int_equal(tc_tp_ep_connect(ctx, 0, self, alen, &ep), TC_OK);
    unsigned char in[16];
    tc_tp_req_t r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(ep, 4, in, sizeof(in), &r), TC_OK);

    int fd = raw_connect(ctx);
    unsigned char hello[56], hdr[16];
    make_hello(hello, 0x50544354u, 0, 1);
    raw_send(fd, hello, sizeof(hello));
    expect_ack(ctx, fd, 0, 1, 0);
    le(hdr, 9, 8);
    le(hdr + 8, 1ULL << 62, 8);
    raw_send(fd, hdr, sizeof(hdr));

    assert_int_equal(tp_wait_req(&ctx, 1, &r, 5000), TC_ERR_PROTOCOL);
    assert_int_equal(ep->failed, TC_ERR_PROTOCOL);
    assert_non_null(strstr(tc_tp_ep_error(ep), "peer 0 ("));
    assert_non_null(strstr(tc_tp_ep_error(ep), "length 4611686018427387904"));
    expect_eof(ctx, fd); /* and the socket is closed */
    close(fd);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);
}

/* A valid stream that stops in the middle of a message. */
static void test_cut_mid_message(void **state)
{
    (void)state;
    tc_tp_ctx_t *ctx = tp_ctx_new(1, NULL);
    unsigned char self[64];
    size_t alen = tp_addr(ctx, self);
    tc_tp_ep_t *ep;
    assert_int_equal(tc_tp_ep_connect(ctx, 0, self, alen, &ep), TC_OK);

    int fd = raw_connect(ctx);
    unsigned char hello[56], msg[16 + 5 + 16 + 3];
    make_hello(hello, 0x50544354u, 0, 1);
    raw_send(fd, hello, sizeof(hello));
    expect_ack(ctx, fd, 0, 1, 0);
    le(msg, 2, 8); /* a whole 5-byte message, tag 2 */
    le(msg + 8, 5, 8);
    memcpy(msg + 16, "hello", 5);
    le(msg + 21, 2, 8); /* then 3 of 100 bytes */
    le(msg + 29, 100, 8);
    memcpy(msg + 37, "abc", 3);
    raw_send(fd, msg, sizeof(msg));
    close(fd);

    /* The whole message arrived before the failure: it can still be received after it. */
    assert_int_equal(tp_wait_failed(&ctx, 1, ep, 5000), TC_ERR_PEER_FAILED);
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
    tc_tp_ctx_t *ctx = tp_ctx_new(5, NULL);
    unsigned char self[64];
    size_t alen = tp_addr(ctx, self);
    tc_tp_ep_t *ep;
    assert_int_equal(tc_tp_ep_connect(ctx, 2, self, alen, &ep), TC_OK);
    unsigned char hello[56];

    /* not a tcomms hello: dropped without an answer */
    int fd = raw_connect(ctx);
    make_hello(hello, 0x48545450u, 2, 5);
    raw_send(fd, hello, sizeof(hello));
    expect_eof(ctx, fd);
    close(fd);

    /* addressed to another id (a stale address): result 2 */
    fd = raw_connect(ctx);
    make_hello(hello, 0x50544354u, 2, 6);
    raw_send(fd, hello, sizeof(hello));
    expect_ack(ctx, fd, 2, 5, 2);
    expect_eof(ctx, fd);
    close(fd);

    /* from a larger id, which must accept rather than connect: result 4 */
    fd = raw_connect(ctx);
    make_hello(hello, 0x50544354u, 9, 5);
    raw_send(fd, hello, sizeof(hello));
    expect_ack(ctx, fd, 4, 5, 9);
    close(fd);

    /* another wire version: result 1 */
    fd = raw_connect(ctx);
    make_hello(hello, 0x50544354u, 2, 5);
    le(hello + 4, 7, 2);
    raw_send(fd, hello, sizeof(hello));
    expect_ack(ctx, fd, 1, 5, 2);
    close(fd);

    /* half a hello, then gone; and silence */
    fd = raw_connect(ctx);
    raw_send(fd, hello, 20);
    close(fd);
    tp_spin(&ctx, 1, 50);

    assert_int_equal(ep->failed, TC_OK);

    /* the real one is accepted, a second one from the same id is a duplicate: result 5 */
    int good = raw_connect(ctx);
    make_hello(hello, 0x50544354u, 2, 5);
    raw_send(good, hello, sizeof(hello));
    expect_ack(ctx, good, 0, 5, 2);
    fd = raw_connect(ctx);
    raw_send(fd, hello, sizeof(hello));
    expect_ack(ctx, fd, 5, 5, 2);
    close(fd);

    /* the good connection carries data to the endpoint, and from it */
    unsigned char msg[16 + 4];
    le(msg, 77, 8);
    le(msg + 8, 4, 8);
    memcpy(msg + 16, "data", 4);
    raw_send(good, msg, sizeof(msg));
    unsigned char in[4];
    tc_tp_req_t r = TC_TP_REQ_INIT, s = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(ep, 77, in, sizeof(in), &r), TC_OK);
    assert_int_equal(tp_wait_req(&ctx, 1, &r, 5000), TC_OK);
    assert_memory_equal(in, "data", 4);
    assert_int_equal(tc_tp_send(ep, 78, "back", 4, &s), TC_OK);
    assert_int_equal(tp_wait_req(&ctx, 1, &s, 5000), TC_OK);
    unsigned char out[20], expect[20];
    int eof;
    assert_int_equal(raw_read(ctx, good, out, sizeof(out), &eof), sizeof(out));
    le(expect, 78, 8);
    le(expect + 8, 4, 8);
    memcpy(expect + 16, "back", 4);
    assert_memory_equal(out, expect, sizeof(out));
    close(good);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);
}

/* With a secret, a hello carrying another digest is refused with result 3. */
static void test_wrong_digest(void **state)
{
    (void)state;
    tc_tp_ctx_t *ctx = tp_ctx_new(1, "job-42");
    int fd = raw_connect(ctx);
    unsigned char hello[56];
    make_hello(hello, 0x50544354u, 0, 1);
    raw_send(fd, hello, sizeof(hello));
    expect_ack(ctx, fd, 3, 1, 0);
    expect_eof(ctx, fd);
    close(fd);
    tc_tp_ctx_destroy(ctx);
}

/* Pseudo-random garbage after a correct hello never crashes; the endpoint may fail. */
static void test_garbage_stream(void **state)
{
    (void)state;
    for (uint64_t seed = 0; seed < 20; seed++) {
        tc_tp_ctx_t *ctx = tp_ctx_new(1, NULL);
        unsigned char self[64];
        size_t alen = tp_addr(ctx, self);
        tc_tp_ep_t *ep;
        assert_int_equal(tc_tp_ep_connect(ctx, 0, self, alen, &ep), TC_OK);
        unsigned char buf[64];
        tc_tp_req_t r = TC_TP_REQ_INIT;
        assert_int_equal(tc_tp_recv(ep, seed, buf, sizeof(buf), &r), TC_OK);
        int fd = raw_connect(ctx);
        unsigned char hello[56], junk[4096];
        make_hello(hello, 0x50544354u, 0, 1);
        raw_send(fd, hello, sizeof(hello));
        expect_ack(ctx, fd, 0, 1, 0);
        tp_fill(junk, sizeof(junk), seed);
        if (seed % 2) /* small lengths so some messages parse */
            for (size_t i = 0; i + 16 <= sizeof(junk); i += 16 + (seed % 7))
                le(junk + i + 8, junk[i] % 40, 8);
        raw_send(fd, junk, sizeof(junk));
        tp_spin(&ctx, 1, 30);
        close(fd);
        tc_status_t st = tp_wait_failed(&ctx, 1, ep, 5000);
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
