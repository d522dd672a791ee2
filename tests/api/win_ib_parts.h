/* The parts of win_ib_test, each run by every rank's thread (ib_ranks.h), and their helpers. */
#ifndef TCOMMS_TESTS_API_WIN_IB_PARTS_H
#define TCOMMS_TESTS_API_WIN_IB_PARTS_H

#include <stddef.h>
#include <stdint.h>

#include "ib_ranks.h"

struct ibv_send_wr;

/* Timeout of a wait for a signal in the parts, ms. */
#define WIB_WAIT_MS 30000

/* win_ib_data.c */
int part_random_rma(ibr_rank_t *r);
int part_put_signal_order(ibr_rank_t *r);
int part_flush(ibr_rank_t *r);
int part_out_of_range(ibr_rank_t *r);

/* win_ib_signal.c */
int part_signal_counts(ibr_rank_t *r);
int part_wait_signal(ibr_rank_t *r);
int part_split(ibr_rank_t *r);

/* win_ib_fail.c */
int part_dead_target(ibr_rank_t *r);

/* part_bad_key's argument: while armed, wib_forge_rkey (the emulation's tamper function, see
 * tc_ibemu_set_tamper) forges the key of every RDMA write or read into [lo, hi) and of every
 * atomic. */
typedef struct wib_bad_key {
    uint64_t lo, hi;
    int armed;
} wib_bad_key_t;
void wib_forge_rkey(struct ibv_send_wr *wr, void *arg);
int part_bad_key(ibr_rank_t *r);

/* Byte @p i of the pattern @p seed. */
static inline unsigned char wib_pat(uint64_t seed, size_t i)
{
    uint64_t x = (seed + 1) * 0x9e3779b97f4a7c15ull ^ ((uint64_t)i * 0xbf58476d1ce4e5b9ull);
    return (unsigned char)(x >> 56 ^ x >> 23);
}

/* Fill @p buf with pattern @p seed. */
void wib_fill(void *buf, size_t len, uint64_t seed);

/* The first index where @p got differs from @p want, or -1. */
long long wib_diff(const void *got, const void *want, size_t len);

/* The first index where @p got differs from pattern @p seed, or -1. */
long long wib_diff_pat(const void *got, size_t len, uint64_t seed);

#endif
