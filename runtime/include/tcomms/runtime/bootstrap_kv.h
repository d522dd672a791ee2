/**
 * @file bootstrap_kv.h
 * @brief A bootstrap through a key-value store of the caller's (set, get,
 *        wait, add callbacks), e.g. torch's c10d Store: no environment, no
 *        server, no port of its own. The public tc_store_t has the same
 *        callbacks; the API layer copies them here.
 *
 * Keys: "<prefix>/<rank>/<key>" for what a rank puts; "<prefix>/claim/<rank>"
 * counts the processes given a rank (a second one fails at once);
 * "<prefix>/fence<g>/..." for the g-th fence (a counter, a done key, one
 * arrival key per rank holding its size in decimal: every other rank compares
 * its size with rank 0's at the first fence, and a timeout names the ranks
 * missing and the sizes that differ); "<prefix>/host/<name>" counts
 * the ranks of each host (the local size), "<prefix>/host/<name>/sum" and
 * ".../sumsq" add up their ranks and squares (the local rank, see
 * tc_boot_kv_local_rank()); "<prefix>/event/count" and
 * "<prefix>/event/<i>" carry the events (a failed rank, a revoke), read by
 * every rank at most every TC_BOOT_KV_POLL_MS.
 */
#ifndef TCOMMS_RUNTIME_BOOTSTRAP_KV_H
#define TCOMMS_RUNTIME_BOOTSTRAP_KV_H

#include <stddef.h>
#include <stdint.h>

#include "tcomms/runtime/bootstrap.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief What a callback returns (the values of the public tc_store_result_t). */
enum { TC_BOOT_KV_OK = 0, TC_BOOT_KV_ABSENT = 1, TC_BOOT_KV_TIMEOUT = 2, TC_BOOT_KV_FAILED = 3 };

/** @brief The callbacks, their context, and this rank's place. */
typedef struct tc_boot_kv_params {
    int (*set)(void *ctx, const char *key, const void *val, size_t len);
    int (*get)(void *ctx, const char *key, void *buf, size_t cap, size_t *len_p);
    int (*wait)(void *ctx, const char *key, int64_t timeout_ms);
    int (*add)(void *ctx, const char *key, int64_t delta, int64_t *value_p);
    void *ctx;
    int rank;
    int size;
    const char *prefix; /**< copied; at most TC_BOOT_KV_PREFIX_MAX characters */
} tc_boot_kv_params_t;

/** @brief Shortest interval between two looks at the store for events. */
#define TC_BOOT_KV_POLL_MS 50

/** @brief Longest prefix. */
#define TC_BOOT_KV_PREFIX_MAX 128

/**
 * @brief Join through the store described by @p params (checked: callbacks
 *        present, rank in [0, size), prefix length): one fence counts the
 *        ranks of each host, bounded by @p deadline_ns and abortable.
 * @return TC_ERR_INVALID_ARG for bad parameters; TC_ERR_BOOTSTRAP when a
 *         callback fails (naming the key), at once on a rank given another
 *         size than rank 0 (naming both) and on a second process given the
 *         same rank (naming it); TC_ERR_TIMEOUT naming the ranks missing, the
 *         sizes of those that failed on theirs, and this rank's second claimant.
 */
tc_status_t tc_boot_kv_create(const tc_boot_kv_params_t *params, uint64_t deadline_ns,
                              tc_boot_t **boot_p);

/** @brief Largest job size whose ranks' squares the host counters add up (no overflow). */
#define TC_BOOT_KV_LOCAL_SIZE_MAX (1 << 20)

/**
 * @brief This rank's local rank, from what the ranks of its host added up:
 *        @p n ranks, @p sum of their ranks, @p sumsq of their squares.
 *
 * Among @p n distinct integers with a given sum, the sum of squares is least
 * exactly when they are consecutive; so the counters prove that the host holds
 * the block [s, s + n) of ranks, s = (sum - n(n - 1)/2) / n, or refute it.
 * @return rank - s when the host's ranks are such a block holding @p rank;
 *         -1 otherwise (ranks placed round robin, say: no local rank in rank
 *         order, and the hierarchical algorithms stay off).
 */
int tc_boot_kv_local_rank(int rank, int64_t n, int64_t sum, int64_t sumsq);

#ifdef __cplusplus
}
#endif

#endif
