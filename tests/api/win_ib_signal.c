/* win_ib_test's signal parts: concurrent counts (ADD and SET from every rank into one slot),
 * every comparison of wait_signal, windows on a split communicator. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tcomms/tcomms.h"
#include "tcomms/win.h"
#include "win_ib_parts.h"

/* ---- counts ---- */

#define CNT_SLOT 5
#define CNT_SET_SLOT 6
#define CNT_BASE 1000
#define CNT_ADDS 150
#define CNT_SETS 40

#define CNT_ORDER_SLOT 10 /* + origin */

/* One origin's signals to one target apply in the order issued, fire-and-forget ones too: slot
 * 10 + origin of every other rank goes SET 7 (completed), then SET 50, ADD 1, ADD 2 without
 * waiting (a SET over ib is a compare-and-swap loop whose first guess, 0, is wrong here). */
static int cnt_in_order(ibr_rank_t *r, tc_win_t *win, ibr_expect_t *want)
{
    int n = r->size, me = r->rank;
    tc_op_opts_t async = TC_OP_OPTS_INIT;
    async.async = 1;
    for (int t = 0; t < n; t++) {
        if (t == me)
            continue;
        IBR_OK(r, tc_win_signal(win, t, CNT_ORDER_SLOT + me, 7, TC_WIN_SIGNAL_SET, NULL, NULL));
        IBR_OK(r, tc_win_signal(win, t, CNT_ORDER_SLOT + me, 50, TC_WIN_SIGNAL_SET, &async, NULL));
        IBR_OK(r, tc_win_signal(win, t, CNT_ORDER_SLOT + me, 1, TC_WIN_SIGNAL_ADD, &async, NULL));
        IBR_OK(r, tc_win_signal(win, t, CNT_ORDER_SLOT + me, 2, TC_WIN_SIGNAL_ADD, &async, NULL));
        want->cmp_swaps += 2;
        want->fetch_adds += 2;
    }
    IBR_OK(r, tc_win_flush(win, TC_WIN_ALL_PEERS, WIB_WAIT_MS));
    if (ibr_barrier(r) != 0)
        return -1;
    for (int o = 0; o < n; o++) {
        uint64_t seen;
        IBR_OK(r, tc_win_read_signal(win, CNT_ORDER_SLOT + o, &seen));
        IBR_CHECK(r, seen == (o == me ? 0u : 53u),
                  "slot %d (from rank %d: SET 7, SET 50, ADD 1, ADD 2) is %llu, not 53",
                  CNT_ORDER_SLOT + o, o, (unsigned long long)seen);
    }
    return 0;
}

/* Every rank SETs slot 5 of its right neighbour to 1000, then all ranks ADD (rank + 1) to slot
 * 5 of every other rank at once, blocking and fire-and-forget; each slot must end exactly at
 * 1000 + CNT_ADDS * (sum of the others' rank + 1). Then all SET slot 6 of every other rank to
 * their own series of distinct values at once: the survivor is one origin's last value. Then
 * each origin's signals in order (cnt_in_order). */
int part_signal_counts(ibr_rank_t *r)
{
    int n = r->size, me = r->rank;
    ibr_expect_t want = {0};
    tc_win_t *win;
    void *base;
    tc_op_opts_t async = TC_OP_OPTS_INIT;
    async.async = 1;
    IBR_OK(r, tc_win_allocate(r->comm, 64, NULL, &base, &win));
    IBR_OK(r, tc_win_signal(win, (me + 1) % n, CNT_SLOT, CNT_BASE, TC_WIN_SIGNAL_SET, NULL, NULL));
    want.cmp_swaps++;
    uint64_t seen, total = CNT_BASE;
    IBR_OK(r, tc_win_wait_signal(win, CNT_SLOT, TC_WIN_CMP_EQ, CNT_BASE, WIB_WAIT_MS, &seen));
    if (ibr_barrier(r) != 0)
        return -1;
    for (int i = 0; i < CNT_ADDS; i++)
        for (int t = 0; t < n; t++) {
            if (t == me)
                continue;
            IBR_OK(r, tc_win_signal(win, t, CNT_SLOT, (uint64_t)me + 1, TC_WIN_SIGNAL_ADD,
                                    i % 2 ? &async : NULL, NULL));
            want.fetch_adds++;
        }
    IBR_OK(r, tc_win_flush(win, TC_WIN_ALL_PEERS, WIB_WAIT_MS));
    for (int o = 0; o < n; o++)
        total += o == me ? 0 : (uint64_t)CNT_ADDS * (uint64_t)(o + 1);
    IBR_OK(r, tc_win_wait_signal(win, CNT_SLOT, TC_WIN_CMP_GE, total, WIB_WAIT_MS, &seen));
    if (ibr_barrier(r) != 0) /* every rank's adds completed */
        return -1;
    IBR_OK(r, tc_win_read_signal(win, CNT_SLOT, &seen));
    IBR_CHECK(r, seen == total, "slot %d is %llu after every add, expected %llu", CNT_SLOT,
              (unsigned long long)seen, (unsigned long long)total);

    for (int i = 0; i < CNT_SETS; i++)
        for (int t = 0; t < n; t++) {
            if (t == me)
                continue;
            uint64_t v = (uint64_t)(me + 1) * 100000 + (uint64_t)i;
            IBR_OK(r, tc_win_signal(win, t, CNT_SET_SLOT, v, TC_WIN_SIGNAL_SET,
                                    i % 2 ? &async : NULL, NULL));
            want.cmp_swaps++;
        }
    IBR_OK(r, tc_win_flush(win, TC_WIN_ALL_PEERS, WIB_WAIT_MS));
    if (ibr_barrier(r) != 0)
        return -1;
    IBR_OK(r, tc_win_read_signal(win, CNT_SET_SLOT, &seen));
    int ok = 0;
    for (int o = 0; o < n; o++)
        ok |= o != me && seen == (uint64_t)(o + 1) * 100000 + CNT_SETS - 1;
    IBR_CHECK(r, ok, "slot %d is %llu after every SET: no origin's last value", CNT_SET_SLOT,
              (unsigned long long)seen);
    if (cnt_in_order(r, win, &want) != 0)
        return -1;
    IBR_OK(r, tc_win_destroy(win));
    ibr_expect_add(r, &want);
    return 0;
}

/* ---- wait_signal with each comparison ---- */

#define WS_SLOT 7
#define WS_ACK 8

/* One step: the origin (left neighbour) applies @p op @p v to slot 7 here, this rank waits for
 * "slot cmp value" and must see @p expect; then it acks, and waits for its own right
 * neighbour's ack. */
typedef struct ws_step {
    tc_win_signal_op_t op;
    tc_win_cmp_t cmp;
    uint64_t v, value, expect;
} ws_step_t;

static const ws_step_t ws_steps[] = {
    {TC_WIN_SIGNAL_SET, TC_WIN_CMP_EQ, 10, 10, 10}, {TC_WIN_SIGNAL_ADD, TC_WIN_CMP_GT, 5, 14, 15},
    {TC_WIN_SIGNAL_ADD, TC_WIN_CMP_GE, 1, 16, 16},  {TC_WIN_SIGNAL_ADD, TC_WIN_CMP_NE, 2, 16, 18},
    {TC_WIN_SIGNAL_SET, TC_WIN_CMP_LT, 3, 4, 3},    {TC_WIN_SIGNAL_SET, TC_WIN_CMP_LE, 2, 2, 2},
};
#define WS_STEPS ((int)(sizeof(ws_steps) / sizeof(ws_steps[0])))

int part_wait_signal(ibr_rank_t *r)
{
    int n = r->size, me = r->rank, right = (me + 1) % n;
    ibr_expect_t want = {0};
    tc_win_t *win;
    void *base;
    uint64_t seen;
    IBR_OK(r, tc_win_allocate(r->comm, 8, NULL, &base, &win));
    for (int s = 0; s < WS_STEPS; s++) {
        const ws_step_t *st = &ws_steps[s];
        IBR_OK(r, tc_win_signal(win, right, WS_SLOT, st->v, st->op, NULL, NULL));
        if (st->op == TC_WIN_SIGNAL_ADD)
            want.fetch_adds++;
        else
            want.cmp_swaps++;
        IBR_OK(r, tc_win_wait_signal(win, WS_SLOT, st->cmp, st->value, WIB_WAIT_MS, &seen));
        IBR_CHECK(r, seen == st->expect, "step %d: slot %d is %llu, expected %llu", s, WS_SLOT,
                  (unsigned long long)seen, (unsigned long long)st->expect);
        /* satisfied already: returns at once with the same value */
        IBR_OK(r, tc_win_wait_signal(win, WS_SLOT, st->cmp, st->value, 1, &seen));
        IBR_CHECK(r, seen == st->expect, "step %d again: slot is %llu", s,
                  (unsigned long long)seen);
        IBR_OK(r, tc_win_signal(win, (me + n - 1) % n, WS_ACK, 1, TC_WIN_SIGNAL_ADD, NULL, NULL));
        want.fetch_adds++;
        IBR_OK(r,
               tc_win_wait_signal(win, WS_ACK, TC_WIN_CMP_GE, (uint64_t)s + 1, WIB_WAIT_MS, &seen));
    }
    /* unsatisfied: a timeout naming the slot, its value and the condition; the window stays
     * usable. Between test barriers: no signal arrives meanwhile. */
    if (ibr_barrier(r) != 0)
        return -1;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tc_status_t st = tc_win_wait_signal(win, WS_SLOT, TC_WIN_CMP_EQ, 999, 100, &seen);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    IBR_CHECK(r,
              st == TC_ERR_TIMEOUT && seen == 2 && strstr(tc_last_error(), "slot 7 is 2") &&
                  strstr(tc_last_error(), "== 999"),
              "an unsatisfied wait returned %s (%s), seen %llu", tc_status_string(st),
              tc_last_error(), (unsigned long long)seen);
    IBR_CHECK(r, ms >= 90 && ms < 20000, "a wait of 100 ms took %.0f ms", ms);
    IBR_CHECK(r,
              tc_win_wait_signal(win, WS_SLOT, (tc_win_cmp_t)6, 0, 1, &seen) == TC_ERR_INVALID_ARG,
              "comparison 6 accepted");
    if (ibr_barrier(r) != 0)
        return -1;
    IBR_OK(r, tc_win_signal(win, right, WS_SLOT, 42, TC_WIN_SIGNAL_SET, NULL, NULL));
    want.cmp_swaps++;
    IBR_OK(r, tc_win_wait_signal(win, WS_SLOT, TC_WIN_CMP_EQ, 42, WIB_WAIT_MS, &seen));
    IBR_OK(r, tc_win_destroy(win));
    ibr_expect_add(r, &want);
    return 0;
}

/* ---- a split communicator ---- */

#define SP_CHUNK 4099

/* Colour: two halves (everyone in one at 2 ranks); key: the reverse of the world rank, so the
 * split ranks are not the world ranks' order. Every rank puts a chunk named by (its world rank,
 * the target's world rank) into every split peer at its own split rank's place, signals it,
 * and checks what every split peer put into its own window. */
int part_split(ibr_rank_t *r)
{
    int n = r->size, me = r->rank, color = n == 2 ? 0 : me % 2;
    int members[IBR_MAX_RANKS], m = 0, mine = -1;
    for (int w = n - 1; w >= 0; w--) /* by key (-rank) ascending */
        if ((n == 2 ? 0 : w % 2) == color) {
            if (w == me)
                mine = m;
            members[m++] = w;
        }
    ibr_expect_t want = {0};
    tc_comm_t *sub;
    IBR_OK(r, tc_comm_split(r->comm, color, -me, NULL, &sub));
    int srank, ssize;
    IBR_OK(r, tc_comm_rank(sub, &srank));
    IBR_OK(r, tc_comm_size(sub, &ssize));
    IBR_CHECK(r, srank == mine && ssize == m, "split rank %d of %d, expected %d of %d", srank,
              ssize, mine, m);
    unsigned char *src = malloc(SP_CHUNK);
    void *vbase;
    tc_win_t *win;
    IBR_CHECK(r, src != NULL, "out of memory");
    IBR_OK(r, tc_win_allocate(sub, (size_t)m * SP_CHUNK, NULL, &vbase, &win));
    unsigned char *base = vbase;
    for (int p = 0; p < m; p++) {
        wib_fill(src, SP_CHUNK, ((uint64_t)me << 8) | (uint64_t)members[p]);
        IBR_OK(r, tc_win_put_signal(win, src, SP_CHUNK, p, (uint64_t)mine * SP_CHUNK, 3,
                                    (uint64_t)me + 1, TC_WIN_SIGNAL_ADD, NULL, NULL));
        if (members[p] != me)
            want.writes++, want.write_bytes += SP_CHUNK, want.fetch_adds++;
    }
    uint64_t sum = 0, seen;
    for (int p = 0; p < m; p++)
        sum += (uint64_t)members[p] + 1;
    IBR_OK(r, tc_win_wait_signal(win, 3, TC_WIN_CMP_EQ, sum, WIB_WAIT_MS, &seen));
    for (int p = 0; p < m; p++) {
        long long d = wib_diff_pat(base + (size_t)p * SP_CHUNK, SP_CHUNK,
                                   ((uint64_t)members[p] << 8) | (uint64_t)me);
        IBR_CHECK(r, d < 0, "the chunk of split rank %d (world rank %d): byte %lld is wrong", p,
                  members[p], d);
    }
    char what[64];
    snprintf(what, sizeof(what), "peer %d is not a rank", m);
    tc_status_t st = tc_win_put(win, src, 1, m, 0, NULL, NULL);
    IBR_CHECK(r, st == TC_ERR_INVALID_ARG && strstr(tc_last_error(), what),
              "a put to split rank %d returned %s (%s)", m, tc_status_string(st), tc_last_error());
    IBR_OK(r, tc_win_destroy(win));
    IBR_OK(r, tc_comm_destroy(sub));
    free(src);
    ibr_expect_add(r, &want);
    return 0;
}
