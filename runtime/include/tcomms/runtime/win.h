/**
 * @file win.h
 * @brief The runtime's windows: one-sided put, get and signals into memory
 *        every rank of a communicator exposed (see tc_win_create() in
 *        tcomms.h for the semantics, docs/windows.md for the design).
 *
 * The public API (api/) checks handles and maps onto these calls; every
 * argument a window needs to know (peer, offset, length, slot) is checked here.
 */
#ifndef TCOMMS_RUNTIME_WIN_H
#define TCOMMS_RUNTIME_WIN_H

#include <stddef.h>
#include <stdint.h>

#include "tcomms/base/status.h"
#include "tcomms/runtime/comm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tc_rt_win tc_rt_win_t;

/** @brief Signal slots of every window (64-bit words in library memory). */
#define TC_RT_WIN_SLOTS 64

/** @brief Bytes of a window's signal slots. */
#define TC_RT_WIN_SLOT_BYTES ((size_t)TC_RT_WIN_SLOTS * 8)

/** @brief How a signal updates its slot (the transport's TC_TP_SIGNAL_*). */
enum { TC_RT_WIN_ADD = 0, TC_RT_WIN_SET = 1 };

/** @brief Comparisons of tc_rt_win_wait_signal(). */
enum {
    TC_RT_WIN_EQ = 0,
    TC_RT_WIN_NE,
    TC_RT_WIN_GE,
    TC_RT_WIN_GT,
    TC_RT_WIN_LE,
    TC_RT_WIN_LT,
    TC_RT_WIN_CMP_COUNT
};

/**
 * @brief Collective over @p comm: expose @p bytes at @p buf (may be NULL when
 *        @p bytes is 0) to every rank; @p allocate: the library allocates the
 *        memory (in shared memory when it can) and *base_p receives it.
 */
tc_status_t tc_rt_win_create(tc_rt_comm_t *comm, void *buf, size_t bytes, int allocate,
                             int64_t timeout_ms, void **base_p, tc_rt_win_t **win_p);

/** @brief Collective: complete this rank's operations, wait for every rank, free. */
tc_status_t tc_rt_win_destroy(tc_rt_win_t *win);

/** @brief A pointer through which rank @p peer's window can be read and written. */
tc_status_t tc_rt_win_shared_query(tc_rt_win_t *win, int peer, void **ptr_p);

/** @brief Size of rank @p peer's window (-1: this rank's); the slot count. */
tc_status_t tc_rt_win_size(tc_rt_win_t *win, int peer, size_t *bytes_p);

/** @brief One one-sided operation. */
typedef struct tc_rt_win_op {
    int kind;           /**< TC_RT_WIN_PUT, GET, PUT_SIGNAL or SIGNAL */
    void *buf;          /**< local data (put: source, get: destination) */
    size_t bytes;       /**< length (0 allowed) */
    int peer;           /**< rank of the window's communicator */
    uint64_t offset;    /**< bytes into the peer's window */
    int slot;           /**< signal slot (PUT_SIGNAL, SIGNAL) */
    uint64_t value;     /**< signal value */
    int sig_op;         /**< TC_RT_WIN_ADD or TC_RT_WIN_SET */
    int64_t timeout_ms; /**< <= 0: the communicator's */
} tc_rt_win_op_t;

enum { TC_RT_WIN_PUT = 0, TC_RT_WIN_GET, TC_RT_WIN_PUT_SIGNAL, TC_RT_WIN_SIGNAL };

/**
 * @brief Issue @p op: with TC_RT_ASYNC in @p flags *work_p receives the
 *        running work; else the call waits (bounded) and *work_p (if not
 *        NULL) receives the completed work.
 */
tc_status_t tc_rt_win_issue(tc_rt_win_t *win, const tc_rt_win_op_t *op, int flags,
                            tc_rt_work_t **work_p);

/**
 * @brief Wait until this rank's slot @p slot compares (@p cmp) true with
 *        @p value, progressing meanwhile; *seen_p: the value that satisfied it
 *        (or the last one seen on a timeout).
 */
tc_status_t tc_rt_win_wait_signal(tc_rt_win_t *win, int slot, int cmp, uint64_t value,
                                  int64_t timeout_ms, uint64_t *seen_p);

/** @brief This rank's slot @p slot, read now (no progress). */
tc_status_t tc_rt_win_read_signal(tc_rt_win_t *win, int slot, uint64_t *value_p);

/** @brief Wait until every operation issued on @p win to @p peer (-1: to all) completed. */
tc_status_t tc_rt_win_flush(tc_rt_win_t *win, int peer, int64_t timeout_ms);

/** @brief A window's records of fire-and-forget operations off the direct path. */
typedef struct tc_rt_win_pool_info {
    int cap;            /**< records in the pool (TC_WIN_POOL, default 64) */
    int used;           /**< pool records taken now (not yet released by a flush) */
    int used_max;       /**< most pool records taken at once */
    uint64_t allocated; /**< records allocated because the pool was empty */
} tc_rt_win_pool_info_t;

/** @brief What @p win's pool holds now (for tests and tools). */
tc_status_t tc_rt_win_pool_query(tc_rt_win_t *win, tc_rt_win_pool_info_t *info_p);

/** @brief The window's communicator, or NULL once it was destroyed. */
tc_rt_comm_t *tc_rt_win_comm(const tc_rt_win_t *win);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_RUNTIME_WIN_H */
