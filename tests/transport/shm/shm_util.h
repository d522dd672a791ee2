/* Helpers for the shm tests: contexts with options, connected pairs, bounded waits, patterns. */
#ifndef TCOMMS_TESTS_TRANSPORT_SHM_UTIL_H
#define TCOMMS_TESTS_TRANSPORT_SHM_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "tcomms/transport/shm.h"
#include "tcomms/transport/transport.h"

/* Bound of every wait in these tests. */
#define SU_WAIT_MS 20000

/* Create an shm context with id @p id, @p secret (NULL: none) and hints "k=v,..." (NULL: none);
 * returns the status (and *ctx_p on success). No cmocka: usable in forked children. */
tc_status_t su_ctx_try(uint64_t id, const char *secret, const char *hints, tc_tp_ctx_t **ctx_p);
/* The same, asserting success. */
tc_tp_ctx_t *su_ctx_new(uint64_t id, const char *secret, const char *hints);
size_t su_addr(tc_tp_ctx_t *ctx, unsigned char addr[TC_TP_SHM_ADDR_LEN]);

typedef struct su_pair {
    tc_tp_ctx_t *ctx[2];
    tc_tp_ep_t *ep[2]; /* ep[i] belongs to ctx[i] and leads to the other */
} su_pair_t;

/* Two contexts in this process, ids 0 and 1, connected both ways and up. */
void su_pair_open(su_pair_t *pair, const char *hints);
void su_pair_close(su_pair_t *pair);

/* Progress @p n contexts until @p req completes or @p timeout_ms passes; returns req->status. */
tc_status_t su_wait_req(tc_tp_ctx_t *const *ctxs, int n, tc_tp_req_t *req, int timeout_ms);
tc_status_t su_wait_failed(tc_tp_ctx_t *const *ctxs, int n, tc_tp_ep_t *ep, int timeout_ms);
void su_spin(tc_tp_ctx_t *const *ctxs, int n, int ms);

static inline unsigned char su_pattern(uint64_t seed, size_t i)
{
    uint64_t x = (seed + 1) * 0x9e3779b97f4a7c15ULL + i * 0xbf58476d1ce4e5b9ULL;
    return (unsigned char)((x >> 29) ^ (x >> 47) ^ i);
}
void su_fill(unsigned char *buf, size_t len, uint64_t seed);
/* Index of the first byte not matching the pattern, or len. */
size_t su_check(const unsigned char *buf, size_t len, uint64_t seed);

#endif
