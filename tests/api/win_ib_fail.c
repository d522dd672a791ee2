/* win_ib_test's failure parts: a target whose QP is destroyed (retries exceeded), and a target
 * whose remote key the HCA refuses (remote access error), over a window of the caller's memory
 * (tc_win_create) that first carries good puts, gets and signals. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/transport/ib/ib_emu.h"
#include "tcomms/tcomms.h"
#include "tcomms/win.h"
#include "win_ib_parts.h"

/* ---- a target whose QP is gone ---- */

#define DT_BYTES 65536

/* Every rank puts into every other (counted), then the last rank destroys its communicator
 * (its world closes: its QPs are destroyed, as when its process dies) and the others' next put
 * to it fails on the HCA with retries exceeded: TC_ERR_PEER_FAILED naming that rank, promptly,
 * and the communicator is unusable afterwards. */
int part_dead_target(ibr_rank_t *r)
{
    int n = r->size, me = r->rank, victim = n - 1;
    ibr_expect_t want = {0};
    unsigned char *src = calloc(1, DT_BYTES);
    void *base;
    tc_win_t *win;
    IBR_CHECK(r, src != NULL, "out of memory");
    IBR_OK(r, tc_win_allocate(r->comm, DT_BYTES, NULL, &base, &win));
    for (int t = 0; t < n; t++)
        if (t != me) {
            IBR_OK(r, tc_win_put(win, src, DT_BYTES, t, 0, NULL, NULL));
            want.writes++;
        }
    IBR_OK(r, tc_win_flush(win, TC_WIN_ALL_PEERS, WIB_WAIT_MS));
    ibr_expect_add(r, &want);
    if (ibr_barrier(r) != 0)
        return -1;
    if (me == victim) {
        IBR_OK(r, tc_comm_destroy(r->comm));
        r->comm = NULL;
        tc_status_t st = tc_win_put(win, src, 1, 0, 0, NULL, NULL);
        IBR_CHECK(r, st == TC_ERR_INVALID_STATE, "a put after tc_comm_destroy returned %s",
                  tc_status_string(st));
        IBR_OK(r, tc_win_destroy(win));
        free(src);
        return ibr_barrier(r);
    }
    if (ibr_barrier(r) != 0) /* the victim is gone */
        return -1;
    tc_op_opts_t opts = TC_OP_OPTS_INIT;
    opts.timeout_ms = 20000;
    char name[32];
    snprintf(name, sizeof(name), "rank %d", victim);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tc_status_t st = tc_win_put(win, src, DT_BYTES, victim, 0, &opts, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    IBR_CHECK(r, st == TC_ERR_PEER_FAILED && strstr(tc_last_error(), name),
              "a put to the dead rank %d returned %s (%s), expected TC_ERR_PEER_FAILED naming it",
              victim, tc_status_string(st), tc_last_error());
    IBR_CHECK(r, s < 10, "the failure took %.1f s to show (timeout 20 s)", s);
    /* the communicator is broken: the error comes back from later calls, naming the rank */
    st = tc_win_flush(win, TC_WIN_ALL_PEERS, WIB_WAIT_MS);
    IBR_CHECK(r, st == TC_ERR_PEER_FAILED && strstr(tc_last_error(), name),
              "a flush after the failure returned %s (%s)", tc_status_string(st), tc_last_error());
    (void)tc_win_destroy(win); /* frees locally on the broken communicator */
    free(src);
    return 0;
}

/* ---- a key the target's HCA refuses ---- */

#define BK_BYTES ((size_t)256 * 1024 + 13) /* every rank's window (odd) */
#define BK_SPAN 50000                      /* origin o puts at o * BK_SPAN */
#define BK_GOFF ((size_t)4 * BK_SPAN)      /* gets read from here to the end */
#define BK_SLOT 3
#define BK_FORGE 0x40000000u /* xored into a key: one the emulation never gave out */

static size_t bk_put_len(int origin)
{
    return 40000 + (size_t)origin * 7;
}

void wib_forge_rkey(struct ibv_send_wr *wr, void *arg)
{
    wib_bad_key_t *bk = arg;
    if (!__atomic_load_n(&bk->armed, __ATOMIC_ACQUIRE))
        return;
    switch (wr->opcode) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_READ:
        /* the window's range only: ring writes and keepalives keep their keys */
        if (wr->wr.rdma.remote_addr >= bk->lo && wr->wr.rdma.remote_addr < bk->hi)
            wr->wr.rdma.rkey ^= BK_FORGE;
        break;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
    case IBV_WR_ATOMIC_CMP_AND_SWP:
        /* while armed, only the part's one signal uses atomics */
        wr->wr.atomic.rkey ^= BK_FORGE;
        break;
    default:
        break;
    }
}

/* Phase 1: every rank put_signals its own pattern into every other's window, gets the tail of
 * every other's window, and checks its own window against the model @p model once all signals
 * arrived. */
static int bk_good(ibr_rank_t *r, tc_win_t *win, unsigned char *buf, unsigned char *model)
{
    int n = r->size, me = r->rank;
    ibr_expect_t want = {0};
    size_t glen = BK_BYTES - BK_GOFF;
    unsigned char *src = malloc(bk_put_len(me)), *dst = malloc(glen);
    IBR_CHECK(r, src && dst, "out of memory");
    wib_fill(src, bk_put_len(me), 2000 + (uint64_t)me);
    for (int t = 0; t < n; t++) {
        if (t == me)
            continue;
        IBR_OK(r, tc_win_put_signal(win, src, bk_put_len(me), t, (uint64_t)me * BK_SPAN, BK_SLOT, 1,
                                    TC_WIN_SIGNAL_ADD, NULL, NULL));
        memset(dst, 0xee, glen);
        IBR_OK(r, tc_win_get(win, dst, glen, t, BK_GOFF, NULL, NULL));
        for (size_t i = 0; i < glen; i++)
            IBR_CHECK(r, dst[i] == wib_pat(1000 + (uint64_t)t, BK_GOFF + i),
                      "get from rank %d: byte %zu of its window is %u, expected %u", t, BK_GOFF + i,
                      dst[i], wib_pat(1000 + (uint64_t)t, BK_GOFF + i));
        want.writes++;
        want.write_bytes += (int64_t)bk_put_len(me);
        want.reads++;
        want.read_bytes += (int64_t)glen;
        want.fetch_adds++;
    }
    IBR_OK(r, tc_win_flush(win, TC_WIN_ALL_PEERS, WIB_WAIT_MS));
    uint64_t seen;
    IBR_OK(r,
           tc_win_wait_signal(win, BK_SLOT, TC_WIN_CMP_EQ, (uint64_t)(n - 1), WIB_WAIT_MS, &seen));
    wib_fill(model, BK_BYTES, 1000 + (uint64_t)me);
    for (int o = 0; o < n; o++)
        if (o != me)
            wib_fill(model + (size_t)o * BK_SPAN, bk_put_len(o), 2000 + (uint64_t)o);
    long long d = wib_diff(buf, model, BK_BYTES);
    IBR_CHECK(r, d < 0, "own window byte %lld is %u after the puts, the model says %u", d,
              d < 0 ? 0 : buf[d], d < 0 ? 0 : model[d]);
    free(src);
    free(dst);
    ibr_expect_add(r, &want);
    return 0;
}

/* The status and message of a call refused by the target's HCA: TC_ERR_PROTOCOL naming the
 * target rank and the refused key. */
static int bk_refused(ibr_rank_t *r, const char *what, tc_status_t st, int victim)
{
    char name[32];
    snprintf(name, sizeof(name), "to rank %d", victim);
    IBR_CHECK(r,
              st == TC_ERR_PROTOCOL && strstr(tc_last_error(), name) &&
                  strstr(tc_last_error(), "refused the remote key"),
              "%s with a forged key returned %s (%s), expected TC_ERR_PROTOCOL naming rank %d "
              "and the key",
              what, tc_status_string(st), tc_last_error(), victim);
    return 0;
}

/* Phase 2: the last rank's keys are forged on the wire (the run's argument, a wib_bad_key_t the
 * emulation's tamper function reads). Rank 0 puts, rank 1 gets, rank 2 signals to it (those
 * that exist below it): each call ends with TC_ERR_PROTOCOL naming the target, its
 * communicator is broken with that error, and nothing moved (the target's window and slot, the
 * get's buffer). */
int part_bad_key(ibr_rank_t *r)
{
    wib_bad_key_t *bk = r->arg;
    int n = r->size, me = r->rank, victim = n - 1;
    unsigned char *buf = malloc(BK_BYTES), *model = malloc(BK_BYTES);
    tc_win_t *win;
    IBR_CHECK(r, buf && model, "out of memory");
    wib_fill(buf, BK_BYTES, 1000 + (uint64_t)me);
    IBR_OK(r, tc_win_create(r->comm, buf, BK_BYTES, NULL, &win));
    if (bk_good(r, win, buf, model) != 0 || ibr_barrier(r) != 0)
        return -1;
    if (me == victim) {
        bk->lo = (uint64_t)(uintptr_t)buf;
        bk->hi = bk->lo + BK_BYTES;
        __atomic_store_n(&bk->armed, 1, __ATOMIC_RELEASE);
    }
    if (ibr_barrier(r) != 0)
        return -1;
    tc_status_t st;
    unsigned char *src = malloc(bk_put_len(me));
    IBR_CHECK(r, src != NULL, "out of memory");
    wib_fill(src, bk_put_len(me), 3000);
    if (me == 0) {
        st = tc_win_put(win, src, bk_put_len(me), victim, 0, NULL, NULL);
        if (bk_refused(r, "a put", st, victim) != 0)
            return -1;
    } else if (me == 1 && me < victim) {
        memset(src, 0xee, bk_put_len(me));
        st = tc_win_get(win, src, bk_put_len(me), victim, 0, NULL, NULL);
        if (bk_refused(r, "a get", st, victim) != 0)
            return -1;
        for (size_t i = 0; i < bk_put_len(me); i++)
            IBR_CHECK(r, src[i] == 0xee, "a refused get wrote byte %zu of its buffer", i);
    } else if (me == 2 && me < victim) {
        st = tc_win_signal(win, victim, BK_SLOT, 1, TC_WIN_SIGNAL_ADD, NULL, NULL);
        if (bk_refused(r, "a signal", st, victim) != 0)
            return -1;
    }
    if (me < victim && me <= 2) {
        /* the communicator is broken: a later call says why, naming the rank again */
        st = tc_win_flush(win, TC_WIN_ALL_PEERS, WIB_WAIT_MS);
        if (bk_refused(r, "a flush after the refusal", st, victim) != 0)
            return -1;
    }
    if (ibr_barrier(r) != 0)
        return -1;
    if (me == victim) {
        __atomic_store_n(&bk->armed, 0, __ATOMIC_RELEASE);
        long long d = wib_diff(buf, model, BK_BYTES);
        IBR_CHECK(r, d < 0, "refused puts changed byte %lld of the window (%u, was %u)", d,
                  d < 0 ? 0 : buf[d], d < 0 ? 0 : model[d]);
        uint64_t v = 0;
        IBR_OK(r, tc_win_read_signal(win, BK_SLOT, &v));
        IBR_CHECK(r, v == (uint64_t)(n - 1), "slot %d is %llu after a refused signal, not %d",
                  BK_SLOT, (unsigned long long)v, n - 1);
    }
    /* the target's QPs to the refused origins are in the error state too: end locally */
    IBR_OK(r, tc_comm_destroy(r->comm));
    r->comm = NULL;
    IBR_OK(r, tc_win_destroy(win));
    free(src);
    free(buf);
    free(model);
    return 0;
}
