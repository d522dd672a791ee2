/* Small formatting helpers of the TCP backend and its session tokens. */
#include <arpa/inet.h>
#include <stdio.h>
#include <sys/random.h>
#include <unistd.h>

#include "tcomms/base/time.h"

#include "tcp_internal.h"

static uint64_t tc_tcp_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
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
        return "wrong secret (one side has a job secret, the other none: another job?)";
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
    case TC_TCP_ACK_BAD_PROOF:
        return "bad proof (wrong secret, or a replayed hello)";
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
