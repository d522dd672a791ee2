/* The pair of verbs contexts the ib tests run on (the emulated HCA, ib_emu.h), and what the
 * tests share: patterned buffers, progress loops, registered regions, registration counts. */
#ifndef TC_TESTS_IB_PAIR_H
#define TC_TESTS_IB_PAIR_H

#include <stddef.h>
#include <stdint.h>

#include "ib_emu.h"
#include "tcomms/base/status.h"
#include "tcomms/transport/transport.h"

#define WAIT_MS 20000

typedef struct pair {
    tc_tp_ctx_t *ctx[2];
    tc_tp_ep_t *ep[2];
} pair_t;

typedef struct region {
    unsigned char *buf;
    size_t len;
    tc_tp_mem_t *mem;
    tc_tp_rkey_t *rkey;
} region_t;

typedef struct mrcount {
    int reg, dereg;
} mrcount_t;

/* The pattern byte @p i of the buffer filled for @p seed. */
unsigned char pat(uint64_t seed, size_t i);
void fill(unsigned char *b, size_t n, uint64_t seed);
/* The index of the first byte of @p b that is not fill()'s pattern for @p seed, or @p n. */
size_t check(const unsigned char *b, size_t n, uint64_t seed);
tc_tp_ctx_t *ctx_new(uint64_t id, const char *secret);
void spin_until(pair_t *p, volatile tc_status_t *st, int ms);
/* Two contexts with the given secrets, connected; with equal secrets, up (handshake done). */
void pair_open(pair_t *p, const char *s0, const char *s1);
void pair_open_cached(pair_t *p);
/* Closes both and checks that the emulator holds no QP, MR or CQ overflow. */
void pair_close(pair_t *p);
/* One send of @p len bytes into a receive of @p cap, checked byte by byte and past the end. */
void xfer(pair_t *p, int from, uint64_t tag, size_t len, size_t cap, int recv_first,
          tc_status_t want);
void region_open(pair_t *p, int owner, size_t len, region_t *r);
void region_close(region_t *r);
void progress_for(pair_t *p, int ms);
void put_from(pair_t *p, region_t *r, const unsigned char *buf, size_t len, uint64_t seed);
mrcount_t mr_delta(const ib_emu_stats_t *base);

#define ASSERT_MR(base, r, d)                                                                      \
    do {                                                                                           \
        mrcount_t m_ = mr_delta(base);                                                             \
        assert_int_equal(m_.reg, r);                                                               \
        assert_int_equal(m_.dereg, d);                                                             \
    } while (0)

#endif
