/* A raw client of the torchrun-environment store for tests (store_client.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tcomms/transport/auth.h"
#include "tests/runtime/store_client.h"

void tc_sct_le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

void tc_sct_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

uint32_t tc_sct_get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

size_t tc_sct_frame(uint8_t *out, uint8_t type, const void *body, uint32_t len)
{
    tc_sct_le32(out, len);
    out[4] = type;
    out[5] = out[6] = out[7] = 0;
    if (len)
        memcpy(out + 8, body, len);
    return 8 + len;
}

size_t tc_sct_hello(uint8_t *out, uint32_t magic, uint16_t version, uint32_t rank, uint32_t world,
                    uint8_t keyed, const uint8_t nonce_i[SCT_NONCE_LEN])
{
    uint8_t b[SCT_HELLO_LEN];
    tc_sct_le32(b, magic);
    tc_sct_le16(b + 4, version);
    tc_sct_le32(b + 6, rank);
    tc_sct_le32(b + 10, world);
    b[14] = keyed;
    memcpy(b + 15, nonce_i, SCT_NONCE_LEN);
    return tc_sct_frame(out, SCT_T_HELLO, b, SCT_HELLO_LEN);
}

static int read_all(int fd, uint8_t *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = recv(fd, buf + got, len - got, 0);
        if (n <= 0)
            return 0;
        got += (size_t)n;
    }
    return 1;
}

long tc_sct_read_frame(int fd, uint8_t *type_p, uint8_t *body, size_t cap)
{
    uint8_t hdr[8], sink[256];
    if (!read_all(fd, hdr, 8))
        return -1;
    uint32_t len = tc_sct_get_le32(hdr);
    *type_p = hdr[4];
    size_t keep = len < cap ? len : cap;
    if (!read_all(fd, body, keep))
        return -1;
    for (size_t left = len - keep; left > 0;) {
        size_t n = left < sizeof(sink) ? left : sizeof(sink);
        if (!read_all(fd, sink, n))
            return -1;
        left -= n;
    }
    return (long)len;
}

/* The transcript as boot_store.h lays it out, written independently of the library. */
static void transcript(tc_auth_transcript_t *t, uint8_t extra[8], uint32_t rank, uint32_t world,
                       uint8_t keyed, uint8_t store_keyed, const uint8_t *ni, const uint8_t *na)
{
    tc_sct_le32(extra, world);
    extra[4] = keyed;
    extra[5] = store_keyed;
    tc_sct_le16(extra + 6, SCT_VERSION);
    memset(t, 0, sizeof(*t));
    t->purpose = "store";
    t->initiator_id = rank;
    t->acceptor_id = UINT64_MAX;
    memcpy(t->nonce_i, ni, SCT_NONCE_LEN);
    memcpy(t->nonce_a, na, SCT_NONCE_LEN);
    t->extra = extra;
    t->extra_len = 8;
}

int tc_sct_proof(const char *secret, uint32_t rank, uint32_t world, uint8_t keyed,
                 const uint8_t nonce_i[SCT_NONCE_LEN], const uint8_t *challenge, uint8_t *proof)
{
    tc_auth_key_t key;
    tc_auth_transcript_t t;
    uint8_t extra[8], mac[SCT_MAC_LEN];
    assert_int_equal(tc_auth_key_init(&key, secret, secret ? strlen(secret) : 0), TC_OK);
    transcript(&t, extra, rank, world, keyed, challenge[0], nonce_i, challenge + 1);
    int ok = tc_auth_check(&key, TC_AUTH_ACCEPTOR, &t, challenge + 1 + SCT_NONCE_LEN);
    tc_auth_mac(&key, TC_AUTH_INITIATOR, &t, mac);
    tc_sct_frame(proof, SCT_T_PROOF, mac, SCT_MAC_LEN);
    tc_auth_key_wipe(&key);
    return ok;
}

static void reply_parse(const uint8_t *body, long len, int32_t *status_p, char *text, size_t cap)
{
    assert_true(len >= 16);
    uint32_t tlen = tc_sct_get_le32(body + 12);
    assert_int_equal(tlen, (uint32_t)len - 16);
    *status_p = (int32_t)tc_sct_get_le32(body + 8);
    snprintf(text, cap, "%.*s", (int)tlen, (const char *)body + 16);
}

int tc_sct_join(int fd, const char *secret, uint32_t rank, uint32_t world, int32_t *status_p,
                char *text, size_t cap)
{
    uint8_t f[8 + SCT_HELLO_LEN], ni[SCT_NONCE_LEN], body[1100], type, proof[8 + SCT_MAC_LEN];
    uint8_t keyed = secret != NULL && *secret != '\0';
    tc_auth_nonce(ni);
    size_t n = tc_sct_hello(f, SCT_MAGIC, SCT_VERSION, rank, world, keyed, ni);
    assert_int_equal(send(fd, f, n, MSG_NOSIGNAL), (ssize_t)n);
    long len = tc_sct_read_frame(fd, &type, body, sizeof(body));
    assert_true(len >= 0);
    if (type == SCT_T_REPLY) {
        reply_parse(body, len, status_p, text, cap);
        return -1000;
    }
    assert_int_equal(type, SCT_T_CHALLENGE);
    assert_int_equal(len, SCT_CHALLENGE_LEN);
    if (!tc_sct_proof(secret, rank, world, keyed, ni, body, proof))
        return -1001;
    assert_int_equal(send(fd, proof, sizeof(proof), MSG_NOSIGNAL), (ssize_t)sizeof(proof));
    len = tc_sct_read_frame(fd, &type, body, sizeof(body));
    assert_true(len >= 0);
    assert_int_equal(type, SCT_T_REPLY);
    reply_parse(body, len, status_p, text, cap);
    return 0;
}

int tc_sct_port_free(int port)
{
    int one = 1, zero = 0, ok = 0;
    int fd = socket(AF_INET6, SOCK_STREAM, 0);
    if (fd >= 0 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) == 0 &&
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0) {
        struct sockaddr_in6 a6 = {.sin6_family = AF_INET6,
                                  .sin6_port = htons((uint16_t)port),
                                  .sin6_addr = IN6ADDR_ANY_INIT};
        ok = bind(fd, (struct sockaddr *)&a6, sizeof(a6)) == 0;
        if (!ok && errno != EADDRINUSE) { /* no IPv6 here */
            close(fd);
            fd = -1;
        }
    } else if (fd >= 0) {
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        struct sockaddr_in a4 = {.sin_family = AF_INET,
                                 .sin_port = htons((uint16_t)port),
                                 .sin_addr = {htonl(INADDR_ANY)}};
        fd = socket(AF_INET, SOCK_STREAM, 0);
        assert_true(fd >= 0);
        ok = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
             bind(fd, (struct sockaddr *)&a4, sizeof(a4)) == 0;
    }
    close(fd);
    return ok;
}

int tc_sct_free_port(void)
{
    static unsigned seed; /* one sequence per process: two calls give two ports */
    int lo = 32768, hi = 60999;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f) {
        if (fscanf(f, "%d %d", &lo, &hi) != 2)
            lo = 32768, hi = 60999;
        fclose(f);
    }
    if (seed == 0) { /* not the pid alone: sandboxed tests run at the same pid */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = ((unsigned)ts.tv_nsec ^ ((unsigned)getpid() << 16) ^ (unsigned)ts.tv_sec) | 1u;
    }
    /* below the range where it leaves room, else anywhere above 1024 */
    int from = lo > 11000 ? 10000 : 1025, to = lo > 11000 ? lo : 65535;
    for (int tries = 0; tries < 1000; tries++) {
        int port = from + (int)(rand_r(&seed) % (unsigned)(to - from));
        if (tc_sct_port_free(port))
            return port;
    }
    fail_msg("no free port in [%d, %d) after 1000 tries", from, to);
    return -1;
}

int tc_sct_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr = {htonl(INADDR_LOOPBACK)}};
    struct timeval tv = {.tv_sec = 5};
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
    return fd;
}
