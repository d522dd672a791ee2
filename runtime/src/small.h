/* The small-message path of the plans + executor module (docs/runtime.md):
 * blocking collectives of at most TC_SMALL_MAX bytes per message among ranks
 * that all reach each other over shm run through the lanes of the pair
 * segments (tcomms/transport/shm_lane.h) instead of a schedule: no work
 * object, no schedule lookup, no tag matching, no system call and no clock
 * read while data arrives. Private to small.c and small_wait.c. */
#ifndef TC_RUNTIME_SMALL_H
#define TC_RUNTIME_SMALL_H

#include "comms.h"
#include "ft.h"
#include "obs.h"
#include "progress.h"
#include "tcomms/transport/shm_lane.h"

/* Largest communicator served: every rank keeps a lane to every other. */
#define TC_RT_SMALL_RANKS 64

enum { TC_RT_SMALL_UNKNOWN = 0, TC_RT_SMALL_ON, TC_RT_SMALL_OFF };

/* Per communicator (comm->small), made on its first blocking collective. */
typedef struct tc_rt_small {
    int state;  /* TC_RT_SMALL_*: OFF for good once a condition fails */
    size_t max; /* largest message taken (TC_SMALL_MAX bytes) */
    struct {
        tc_tp_shm_lane_t *lane;        /* the lanes to this rank (NULL: this process) */
        tc_tp_ep_t *ep;                /* their endpoint */
    } * peer;                          /* [size] */
    tc_rt_stat_t *stat[TC_COLL_COUNT]; /* this path's entry of comm->stats, per collective */
    int forced[TC_COLL_COUNT];         /* TC_ALGO_<COLL> set: that collective never comes here */
} tc_rt_small_t;

/* One operation on the path. */
typedef struct tc_rt_small_op {
    tc_rt_comm_t *comm;
    tc_rt_small_t *s;
    const tc_rt_coll_t *call;
    size_t bytes;      /* bytes of each lane message */
    uint64_t seq, tag; /* the communicator's sequence number, and it with the comm id */
    uint64_t fr_id;    /* its flight-recorder entry, or 0 */
    uint64_t deadline; /* 0 until a wait first reads the clock */
    int awaited;       /* the rank waited for when it ended in error, or -1 */
    uint64_t start_ns; /* when it began: only with hooks, which are given its time */
} tc_rt_small_op_t;

/* small.c */
/* Run @p call on the path when it applies (blocking, no work object: @p flags
 * 0): *taken_p = 1 and the operation's result; else *taken_p = 0 and nothing
 * happened. Lock held. */
TC_MUST_USE tc_status_t tc_rt_small_try(tc_rt_comm_t *comm, const tc_rt_coll_t *call, int flags,
                                        int *taken_p);
void tc_rt_small_free(tc_rt_comm_t *comm);

/* small_wait.c */
/* Wait until the next message from rank @p q is there (rx) or a slot towards
 * it is free (!rx): spin, then read the clock, then check failures and
 * yield, then nap. TC_OK with the slot in *slot_p, or an error when the
 * operation cannot go on. */
TC_MUST_USE tc_status_t tc_rt_small_wait(tc_rt_small_op_t *op, int q, int rx, void **slot_p);
/* Flight recorder, hooks: the operation starts (sequence number and a coarse time). */
void tc_rt_small_begin(tc_rt_small_op_t *op);
/* ...and ends: stats, flight recorder, hooks; an error breaks the communicator. */
TC_MUST_USE tc_status_t tc_rt_small_end(tc_rt_small_op_t *op, tc_status_t st);

/* The next message from rank @p q once it is there; on an error NULL and *st_p set. */
static inline const tc_shm_lane_slot_t *tc_rt_small_rx(tc_rt_small_op_t *op, int q,
                                                       tc_status_t *st_p)
{
    const tc_shm_lane_slot_t *slot = tc_shm_lane_peek(op->s->peer[q].lane);
    void *waited = NULL;
    if (slot)
        return slot;
    *st_p = tc_rt_small_wait(op, q, 1, &waited);
    return *st_p == TC_OK ? (const tc_shm_lane_slot_t *)waited : NULL;
}

/* The next free slot towards rank @p q; on an error NULL and *st_p set. */
static inline tc_shm_lane_slot_t *tc_rt_small_tx(tc_rt_small_op_t *op, int q, tc_status_t *st_p)
{
    tc_shm_lane_slot_t *slot = tc_shm_lane_tx_slot(op->s->peer[q].lane);
    void *waited = NULL;
    if (slot)
        return slot;
    *st_p = tc_rt_small_wait(op, q, 0, &waited);
    return *st_p == TC_OK ? (tc_shm_lane_slot_t *)waited : NULL;
}

#endif
