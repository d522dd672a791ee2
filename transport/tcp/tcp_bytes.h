/* Little-endian fields of the TCP backend's wire formats (tcp_internal.h
 * draws them). Inline, one load or store each: every message's header is
 * written and read with them, so on a burst of small one-sided operations
 * out-of-line byte loops were a fifth of the initiator's instructions. */
#ifndef TC_TCP_BYTES_H
#define TC_TCP_BYTES_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline void tc_tcp_put_u16(unsigned char *p, uint16_t v)
{
    v = htole16(v);
    memcpy(p, &v, sizeof(v));
}

static inline void tc_tcp_put_u32(unsigned char *p, uint32_t v)
{
    v = htole32(v);
    memcpy(p, &v, sizeof(v));
}

static inline void tc_tcp_put_u64(unsigned char *p, uint64_t v)
{
    v = htole64(v);
    memcpy(p, &v, sizeof(v));
}

static inline uint16_t tc_tcp_get_u16(const unsigned char *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof(v));
    return le16toh(v);
}

static inline uint32_t tc_tcp_get_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return le32toh(v);
}

static inline uint64_t tc_tcp_get_u64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return le64toh(v);
}

#endif
