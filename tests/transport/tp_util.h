/* Helpers for the transport tests: pairs of TCP contexts, bounded waits, patterns. */
#ifndef TCOMMS_TESTS_TRANSPORT_TP_UTIL_H
#define TCOMMS_TESTS_TRANSPORT_TP_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "tcomms/transport/tcp.h"
#include "tcomms/transport/transport.h"

/* Two TCP contexts in this process, ids 0 and 1, each with an endpoint to the other. */
typedef struct tp_pair {
    tc_tp_ctx_t *ctx[2];
    tc_tp_ep_t *ep[2]; /* ep[i] belongs to ctx[i] and leads to the other */
} tp_pair_t;

/* A context with id @p id and @p secret (NULL: none); asserts success. */
tc_tp_ctx_t *tp_ctx_new(uint64_t id, const char *secret);

/* Pack @p ctx's address into @p addr (TC_TP_TCP addr fits 64 bytes); returns its length. */
size_t tp_addr(tc_tp_ctx_t *ctx, unsigned char addr[64]);

void tp_pair_open(tp_pair_t *pair, const char *secret);
void tp_pair_close(tp_pair_t *pair);

/* Progress @p n contexts until @p req completes or @p timeout_ms passes; returns req->status. */
tc_status_t tp_wait_req(tc_tp_ctx_t *const *ctxs, int n, tc_tp_req_t *req, int timeout_ms);
/* The same for an endpoint failure: until ep->failed != TC_OK. */
tc_status_t tp_wait_failed(tc_tp_ctx_t *const *ctxs, int n, tc_tp_ep_t *ep, int timeout_ms);
/* Progress for @p ms milliseconds. */
void tp_spin(tc_tp_ctx_t *const *ctxs, int n, int ms);

/* The byte at @p i of the pattern @p seed: an independent reference for contents. */
static inline unsigned char tp_pattern(uint64_t seed, size_t i)
{
    uint64_t x = (seed + 1) * 0x9e3779b97f4a7c15ULL + i * 0xbf58476d1ce4e5b9ULL;
    return (unsigned char)((x >> 29) ^ (x >> 47) ^ i);
}
void tp_fill(unsigned char *buf, size_t len, uint64_t seed);
/* Index of the first byte not matching the pattern, or len. */
size_t tp_check(const unsigned char *buf, size_t len, uint64_t seed);

#endif
