#include "tcp_util.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcomms/base/status.h"
#include "tcomms/base/time.h"
#include "tcomms/transport/auth.h"

tc_tp_ctx_t *tc_tcpt_ctx_new(uint64_t id, const char *secret)
{
    return tc_tpt_ctx_new(&tc_tp_tcp_ops, id, secret, NULL);
}

void tc_tcpt_pair_open(tp_pair_t *pair, const char *secret)
{
    tc_tpt_pair_open(pair, &tc_tp_tcp_ops, secret, NULL);
}

tc_tp_ep_t *tc_tcpt_loop_ep(tc_tp_ctx_t *ctx, uint64_t peer)
{
    unsigned char self[TP_ADDR_MAX];
    size_t alen = tc_tpt_addr(ctx, self);
    tc_tp_ep_t *ep = NULL;
    assert_int_equal(tc_tp_ep_connect(ctx, peer, self, alen, &ep), TC_OK);
    return ep;
}

void tc_tcpt_le(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

size_t tc_tcpt_make_hello(unsigned char h[64], uint32_t magic, uint16_t flags, uint64_t sender,
                          uint64_t receiver, uint64_t token)
{
    memset(h, 0, 64);
    tc_tcpt_le(h, magic, 4);
    tc_tcpt_le(h + 4, TCP_VERSION, 2);
    tc_tcpt_le(h + 6, flags, 2);
    tc_tcpt_le(h + 8, sender, 8);
    tc_tcpt_le(h + 16, receiver, 8);
    tc_auth_nonce(h + 24);
    tc_tcpt_le(h + 56, token, 8);
    return TCP_HELLO_LEN;
}

static uint64_t tc_tcpt_get(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

void tc_tcpt_mac(const char *secret, int role, const char *purpose, uint64_t acceptor,
                 const unsigned char hello[64], const unsigned char chal[88],
                 unsigned char mac[32])
{
    tc_auth_key_t key;
    assert_int_equal(tc_auth_key_init(&key, secret, secret ? strlen(secret) : 0), TC_OK);
    tc_auth_transcript_t t;
    unsigned char extra[12];
    memcpy(extra, hello + 4, 4); /* version, flags */
    memcpy(extra + 4, hello + 56, 8); /* token */
    t.purpose = purpose ? purpose : (tc_tcpt_get(hello + 6, 2) & 0x8000) ? "tcp/data"
                                                                          : "tcp/primary";
    t.initiator_id = tc_tcpt_get(hello + 8, 8);
    t.acceptor_id = acceptor;
    memcpy(t.nonce_i, hello + 24, 32);
    memcpy(t.nonce_a, chal + 24, 32);
    t.extra = extra;
    t.extra_len = sizeof(extra);
    tc_auth_mac(&key, role == 1 ? TC_AUTH_INITIATOR : TC_AUTH_ACCEPTOR, &t, mac);
}

unsigned tc_tcpt_read_challenge(tc_tp_ctx_t *ctx, int fd, unsigned char chal[88],
                                uint64_t acceptor, uint64_t initiator)
{
    unsigned char expect[24];
    assert_int_equal(tc_tcpt_raw_read(ctx, fd, chal, 24, NULL), 24);
    unsigned result = (unsigned)tc_tcpt_get(chal + 6, 2);
    tc_tcpt_le(expect, TCP_MAGIC, 4);
    tc_tcpt_le(expect + 4, TCP_VERSION, 2);
    tc_tcpt_le(expect + 6, result, 2);
    tc_tcpt_le(expect + 8, acceptor, 8);
    tc_tcpt_le(expect + 16, initiator, 8);
    assert_memory_equal(chal, expect, 24);
    if (result == 0)
        assert_int_equal(tc_tcpt_raw_read(ctx, fd, chal + 24, 64, NULL), 64);
    return result;
}

void tc_tcpt_make_hdr32(unsigned char h[32], uint64_t w0, int kind, uint64_t len, uint64_t w2,
                        uint64_t w3)
{
    tc_tcpt_le(h, w0, 8);
    tc_tcpt_le(h + 8, (uint64_t)kind << 56 | len, 8);
    tc_tcpt_le(h + 16, w2, 8);
    tc_tcpt_le(h + 24, w3, 8);
}

struct sockaddr_in tc_tcpt_listen_addr(tc_tp_ctx_t *ctx)
{
    unsigned char addr[TP_ADDR_MAX];
    tc_tpt_addr(ctx, addr);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    memcpy(&sa.sin_port, addr + 2, 2);
    memcpy(&sa.sin_addr.s_addr, addr + 4, 4);
    return sa;
}

int tc_tcpt_raw_connect(tc_tp_ctx_t *ctx)
{
    struct sockaddr_in sa = tc_tcpt_listen_addr(ctx);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

void tc_tcpt_raw_send(int fd, const void *buf, size_t len)
{
    assert_int_equal(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
}

size_t tc_tcpt_raw_read(tc_tp_ctx_t *ctx, int fd, unsigned char *buf, size_t want, int *eof_p)
{
    size_t got = 0;
    int eof = 0;
    uint64_t deadline = tc_deadline_after_ms(5000);
    while (got < want && !tc_deadline_passed(deadline)) {
        tc_tp_progress(ctx);
        ssize_t n = recv(fd, buf + got, want - got, MSG_DONTWAIT);
        if (n > 0) {
            got += (size_t)n;
        } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            eof = 1;
            break;
        } else {
            tc_tp_wait(ctx, 5);
        }
    }
    if (eof_p != NULL)
        *eof_p = eof;
    return got;
}

void tc_tcpt_expect_ack(tc_tp_ctx_t *ctx, int fd, unsigned result, uint64_t sender,
                        uint64_t receiver)
{
    unsigned char ack[24], expect[24];
    assert_int_equal(tc_tcpt_raw_read(ctx, fd, ack, sizeof(ack), NULL), sizeof(ack));
    tc_tcpt_le(expect, TCP_MAGIC, 4);
    tc_tcpt_le(expect + 4, TCP_VERSION, 2);
    tc_tcpt_le(expect + 6, result, 2);
    tc_tcpt_le(expect + 8, sender, 8);
    tc_tcpt_le(expect + 16, receiver, 8);
    if (memcmp(ack, expect, sizeof(ack)) != 0)
        print_error("ack result %u, expected %u\n", ack[6] | ack[7] << 8, result);
    assert_memory_equal(ack, expect, sizeof(ack));
}

void tc_tcpt_expect_msg(tc_tp_ctx_t *ctx, int fd, uint64_t tag, const void *data, size_t len)
{
    unsigned char out[16 + 64], expect[16 + 64];
    assert_true(len <= 64);
    assert_int_equal(tc_tcpt_raw_read(ctx, fd, out, 16 + len, NULL), 16 + len);
    tc_tcpt_le(expect, tag, 8);
    tc_tcpt_le(expect + 8, len, 8);
    memcpy(expect + 16, data, len);
    assert_memory_equal(out, expect, 16 + len);
}

void tc_tcpt_expect_eof(tc_tp_ctx_t *ctx, int fd)
{
    unsigned char b[1];
    int eof;
    assert_int_equal(tc_tcpt_raw_read(ctx, fd, b, 1, &eof), 0);
    assert_true(eof);
}

int tc_tcpt_raw_hello(tc_tp_ctx_t *ctx, uint16_t flags, uint64_t sender, uint64_t receiver,
                      uint64_t token, unsigned result)
{
    return tc_tcpt_raw_hello_secret(ctx, NULL, flags, sender, receiver, token, result);
}

int tc_tcpt_raw_hello_secret(tc_tp_ctx_t *ctx, const char *secret, uint16_t flags,
                             uint64_t sender, uint64_t receiver, uint64_t token, unsigned result)
{
    int fd = tc_tcpt_raw_connect(ctx);
    unsigned char h[64], chal[88], mac[32];
    if (secret != NULL)
        flags |= TCP_F_KEYED;
    tc_tcpt_raw_send(fd, h, tc_tcpt_make_hello(h, TCP_MAGIC, flags, sender, receiver, token));
    unsigned got = tc_tcpt_read_challenge(ctx, fd, chal, receiver, sender);
    if (got == 0) {
        /* the acceptor proves the key, then we do */
        tc_tcpt_mac(secret, 2, NULL, receiver, h, chal, mac);
        assert_memory_equal(chal + 56, mac, 32);
        tc_tcpt_mac(secret, 1, NULL, receiver, h, chal, mac);
        tc_tcpt_raw_send(fd, mac, sizeof(mac));
        tc_tcpt_expect_ack(ctx, fd, result, receiver, sender);
    } else if (got != result) {
        print_error("hello refused with %u, expected %u\n", got, result);
        fail();
    }
    if (result != 0) {
        tc_tcpt_expect_eof(ctx, fd);
        close(fd);
        return -1;
    }
    return fd;
}
