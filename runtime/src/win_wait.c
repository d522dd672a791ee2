/* Waiting on a window: for a signal slot to compare true, and flush (every
 * operation issued to a peer, or to all, complete). Both bounded by the
 * operation's timeout, else the communicator's; both progress everything
 * while they wait. */
#include <stdio.h>
#include <time.h>

#include "progress.h"
#include "tcomms/base/time.h"
#include "win.h"

static const char *const win_cmp_names[] = {"==", "!=", ">=", ">", "<=", "<"};

static int win_cmp(int cmp, uint64_t v, uint64_t value)
{
    switch (cmp) {
    case TC_RT_WIN_EQ:
        return v == value;
    case TC_RT_WIN_NE:
        return v != value;
    case TC_RT_WIN_GE:
        return v >= value;
    case TC_RT_WIN_GT:
        return v > value;
    case TC_RT_WIN_LE:
        return v <= value;
    default:
        return v < value;
    }
}

/* Without progress for this long, waits sleep between passes. */
#define WIN_IDLE_SLEEP_NS 20000ull

/* tc_rt_win_wait_signal's loop: one pass of progress (lock taken per pass,
 * so other threads' window calls get in) between looks at the slot. */
static tc_status_t win_wait_loop(tc_rt_win_t *win, int slot, int cmp, uint64_t value, int64_t ms,
                                 uint64_t deadline, uint64_t *seen_p)
{
    static const char fn[] = "win_wait_signal";
    tc_rt_comm_t *comm = win->comm;
    tc_rt_world_t *world = comm->world;
    uint64_t idle_since = 0;
    unsigned idle = 0;
    for (;;) {
        uint64_t v = __atomic_load_n(&win->slots[slot], __ATOMIC_ACQUIRE);
        if (win_cmp(cmp, v, value)) {
            *seen_p = v;
            return TC_OK;
        }
        tc_rt_world_lock(world);
        tc_status_t st = tc_rt_win_usable(win, fn);
        int n = st == TC_OK ? tc_rt_world_progress(world) : 0;
        tc_rt_world_unlock(world);
        if (st != TC_OK) {
            *seen_p = v;
            return st;
        }
        if (n > 0) {
            idle = 0, idle_since = 0;
            continue;
        }
        if (++idle % 16 != 0)
            continue;
        uint64_t now = tc_time_ns();
        if (now >= deadline) {
            *seen_p = __atomic_load_n(&win->slots[slot], __ATOMIC_ACQUIRE);
            if (win_cmp(cmp, *seen_p, value))
                return TC_OK;
            return tc_error_set(TC_ERR_TIMEOUT,
                                "%s on comm '%s' (rank %d of %d): slot %d is %llu after %lld ms, "
                                "waiting for it to be %s %llu",
                                fn, comm->name, comm->rank, comm->size, slot,
                                (unsigned long long)*seen_p, (long long)ms, win_cmp_names[cmp],
                                (unsigned long long)value);
        }
        if (!idle_since)
            idle_since = now;
        if (now - idle_since >= world->spin_ns) {
            struct timespec ts = {0, (long)WIN_IDLE_SLEEP_NS};
            nanosleep(&ts, NULL);
        }
    }
}

tc_status_t tc_rt_win_wait_signal(tc_rt_win_t *win, int slot, int cmp, uint64_t value,
                                  int64_t timeout_ms, uint64_t *seen_p)
{
    static const char fn[] = "win_wait_signal";
    if (slot < 0 || slot >= TC_RT_WIN_SLOTS)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: signal slot %d is not in [0, %d)", fn, slot,
                            TC_RT_WIN_SLOTS);
    if (cmp < 0 || cmp >= TC_RT_WIN_CMP_COUNT)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: comparison %d is not a tc_win_cmp_t", fn, cmp);
    tc_rt_comm_t *comm = win->comm;
    if (!comm || __atomic_load_n(&win->released, __ATOMIC_ACQUIRE))
        return tc_rt_win_usable(win, fn);
    tc_rt_world_t *world = comm->world;
    int64_t ms = timeout_ms > 0 ? timeout_ms : comm->timeout_ms;
    uint64_t deadline = tc_deadline_after_ms((uint64_t)ms);
    tc_rt_progress_driving(world, 1); /* the progress thread stays off the lock meanwhile */
    tc_status_t st = win_wait_loop(win, slot, cmp, value, ms, deadline, seen_p);
    tc_rt_progress_driving(world, -1);
    return st;
}

tc_status_t tc_rt_win_read_signal(tc_rt_win_t *win, int slot, uint64_t *value_p)
{
    if (slot < 0 || slot >= TC_RT_WIN_SLOTS)
        return tc_error_set(TC_ERR_INVALID_ARG, "win_read_signal: signal slot %d is not in [0, %d)",
                            slot, TC_RT_WIN_SLOTS);
    if (!win->comm || __atomic_load_n(&win->released, __ATOMIC_ACQUIRE))
        return tc_rt_win_usable(win, "win_read_signal");
    *value_p = __atomic_load_n(&win->slots[slot], __ATOMIC_ACQUIRE);
    return TC_OK;
}

/* tc_rt_win_flush with something pending or to release: progress under the
 * lock until @p pending drops to 0, bounded; then release the kept records. */
__attribute__((noinline)) static tc_status_t win_flush_wait(tc_rt_win_t *win, int peer,
                                                            int64_t timeout_ms, const int *pending)
{
    static const char fn[] = "win_flush";
    tc_rt_comm_t *comm = win->comm;
    tc_rt_world_t *world = comm->world;
    int64_t ms = timeout_ms > 0 ? timeout_ms : comm->timeout_ms;
    uint64_t now = tc_time_ns();
    uint64_t deadline = tc_deadline_add_ms(now, (uint64_t)ms);
    tc_rt_world_lock(world);
    win->burst_ns = now; /* for the records of the operations issued next */
    tc_rt_progress_driving(world, 1);
    tc_status_t st = TC_OK;
    unsigned idle = 0;
    while (__atomic_load_n(pending, __ATOMIC_ACQUIRE) > 0) {
        tc_rt_world_handoff(world);
        if (tc_rt_world_progress(world) > 0) {
            idle = 0;
            continue;
        }
        if (++idle % 16 != 0)
            continue;
        if (tc_time_ns() >= deadline) {
            char to[32] = "every rank";
            if (peer >= 0)
                snprintf(to, sizeof(to), "rank %d", peer);
            st = tc_error_set(TC_ERR_TIMEOUT,
                              "%s on comm '%s' (rank %d of %d): %d operation(s) to %s still "
                              "running after %lld ms",
                              fn, comm->name, comm->rank, comm->size,
                              __atomic_load_n(pending, __ATOMIC_ACQUIRE), to, (long long)ms);
            break;
        }
        tc_rt_world_nap(world, idle < 4096 ? 0 : TC_RT_NAP_NS);
    }
    tc_rt_progress_driving(world, -1);
    if (st == TC_OK && (st = tc_rt_win_ff_sweep(win, peer)) != TC_OK)
        tc_error_prefix("%s on comm '%s': an operation issued without a work object: ", fn,
                        comm->name);
    if (st == TC_OK && comm->broken != TC_OK)
        st = tc_error_set(comm->broken, "%s on comm '%s': %s", fn, comm->name, comm->broken_why);
    tc_rt_world_unlock(world);
    return st;
}

tc_status_t tc_rt_win_flush(tc_rt_win_t *win, int peer, int64_t timeout_ms)
{
    static const char fn[] = "win_flush";
    tc_rt_comm_t *comm = win->comm;
    if (!comm || __atomic_load_n(&win->released, __ATOMIC_ACQUIRE))
        return tc_rt_win_usable(win, fn);
    if (peer < -1 || peer >= comm->size)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "%s: peer %d is neither -1 (every rank) nor a rank of the window's "
                            "communicator '%s' (size %d)",
                            fn, peer, comm->name, comm->size);
    const int *pending = peer < 0 ? &win->pending : &win->peers[peer].pending;
    /* nothing pending (every direct operation completed on return): no lock */
    if (__atomic_load_n(pending, __ATOMIC_ACQUIRE) == 0 &&
        __atomic_load_n(&win->nff, __ATOMIC_ACQUIRE) == 0 &&
        __atomic_load_n(&comm->broken, __ATOMIC_ACQUIRE) == TC_OK)
        return TC_OK;
    return win_flush_wait(win, peer, timeout_ms, pending);
}
