/* Byte order helpers, the secret digest and small formatting helpers of the TCP backend. */
#include <arpa/inet.h>
#include <stdio.h>
#include <sys/random.h>
#include <unistd.h>

#include "tcomms/base/time.h"

#include "tcp_internal.h"

void tc_tcp_put_u16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

void tc_tcp_put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

void tc_tcp_put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

uint16_t tc_tcp_get_u16(const unsigned char *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

uint32_t tc_tcp_get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

uint64_t tc_tcp_get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint64_t tc_tcp_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/* Four differently seeded FNV-1a lanes, each finalised. This is not a
 * cryptographic MAC: it keeps processes of other jobs (and stale ranks of
 * this one) out, it does not stop an attacker who can read the network. */
void tc_tcp_digest(const void *secret, size_t len, unsigned char out[TC_TCP_DIGEST_LEN])
{
    const unsigned char *s = secret;
    for (int lane = 0; lane < 4; lane++) {
        uint64_t h = 0xcbf29ce484222325ULL ^ tc_tcp_mix64((uint64_t)lane + 1) ^ (uint64_t)len;
        for (size_t i = 0; i < len; i++) {
            h ^= s[i];
            h *= 0x100000001b3ULL;
        }
        tc_tcp_put_u64(out + 8 * (size_t)lane, tc_tcp_mix64(h + (uint64_t)lane));
    }
}

int tc_tcp_digest_equal(const unsigned char *a, const unsigned char *b)
{
    unsigned char diff = 0; /* no early exit: the time does not tell how many bytes matched */
    for (int i = 0; i < TC_TCP_DIGEST_LEN; i++)
        diff |= (unsigned char)(a[i] ^ b[i]);
    return diff == 0;
}

const char *tc_tcp_ack_string(unsigned result)
{
    switch (result) {
    case TC_TCP_ACK_OK:
        return "accepted";
    case TC_TCP_ACK_BAD_VERSION:
        return "wire version mismatch";
    case TC_TCP_ACK_WRONG_RECEIVER:
        return "wrong receiver id (stale address?)";
    case TC_TCP_ACK_WRONG_SECRET:
        return "wrong secret (another job?)";
    case TC_TCP_ACK_WRONG_DIRECTION:
        return "the connecting id must be the smaller one";
    case TC_TCP_ACK_DUPLICATE:
        return "duplicate connection from the same id";
    case TC_TCP_ACK_BAD_FLAGS:
        return "socket count or data socket index out of bounds";
    case TC_TCP_ACK_NO_PRIMARY:
        return "data socket without a primary connection from that id";
    case TC_TCP_ACK_WRONG_SESSION:
        return "data socket of another connection (stale or foreign token)";
    case TC_TCP_ACK_LANE_RANGE:
        return "data socket index beyond the primary's socket count";
    default:
        return "unknown reason";
    }
}

void tc_tcp_sockaddr_string(const struct sockaddr_in *sa, char *buf, size_t cap)
{
    char ip[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &sa->sin_addr, ip, sizeof(ip));
    snprintf(buf, cap, "%s:%u", ip, (unsigned)ntohs(sa->sin_port));
}

uint64_t tc_tcp_token_new(void)
{
    static uint64_t counter; /* only makes fallback tokens of one process differ */
    uint64_t t = 0;
    if (getrandom(&t, sizeof(t), GRND_NONBLOCK) != (ssize_t)sizeof(t))
        t = tc_tcp_mix64(tc_time_ns() ^ ((uint64_t)getpid() << 32) ^
                         __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
    return t != 0 ? t : 1;
}
