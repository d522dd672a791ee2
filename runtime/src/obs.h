/* Internal, the observability module: the flight recorder (the last
 * operations of each communicator, dumped on failure, on request or on
 * SIGUSR1), the statistics and the hooks. Work calls it as an operation
 * begins and ends; it reads the work it is handed and calls only base. */
#ifndef TC_RUNTIME_OBS_H
#define TC_RUNTIME_OBS_H

#include "world.h"

/* One operation in the flight recorder. */
enum { TC_RT_FR_RUNNING = 0, TC_RT_FR_DONE, TC_RT_FR_TIMED_OUT, TC_RT_FR_FAILED };
typedef struct tc_rt_fr_entry {
    uint64_t id;  /* 1 + position in the communicator's history (0: empty) */
    uint64_t seq; /* the operation's sequence number */
    int coll;     /* tc_coll_t; TC_COLL_COUNT: send/recv */
    int dtype, op, root;
    uint64_t count;
    const char *algo; /* static */
    const char *name; /* static: an operation that is no collective ("win_put"), or NULL */
    int state;        /* TC_RT_FR_* */
    tc_status_t status;
    uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC; dumps convert to the real time */
    char awaited[64];          /* ranks still awaited when it ended or was dumped */
} tc_rt_fr_entry_t;

/* stats.c: statistics and hooks */
/* The statistics entry of (@p coll, @p algo) on @p comm: its index, found by name or added
 * (the array grows: one entry per collective and algorithm that ran), or -1 when memory ran
 * out (said once per communicator). An operation of a cached plan, or of the small-message
 * path, keeps the index and finds its entry without a search. */
int tc_rt_stats_index(tc_rt_comm_t *comm, int coll, const char *algo); /* records held */
void tc_rt_stats_hook_before(tc_rt_work_t *work);
/* @p now_ns: the clock as the operation ended (read once for both ends). */
void tc_rt_stats_end(tc_rt_work_t *work, tc_status_t st, uint64_t now_ns);

/* fr.c: the flight recorder */
TC_MUST_USE tc_status_t tc_rt_fr_init(tc_rt_comm_t *comm);
/* TC_FR_DIR, when set, names a directory this process can write dumps into; else
 * TC_ERR_CONFIG (tc_rt_config_check: a dump due later would be lost). */
TC_MUST_USE tc_status_t tc_rt_fr_config(void);
void tc_rt_fr_free(tc_rt_comm_t *comm);
void tc_rt_fr_begin(tc_rt_work_t *work, uint64_t now_ns);
void tc_rt_fr_end(tc_rt_work_t *work, tc_status_t st, uint64_t now_ns);
/* The running @p work's entry names @p algo (static) from now on: a call issued on the
 * small-message path that went to the general path (small_work.c). */
void tc_rt_fr_algo(tc_rt_work_t *work, const char *algo);
TC_MUST_USE tc_status_t tc_rt_fr_dump(tc_rt_comm_t *comm, const char *reason);
/* Dump if TC_FR_DIR is set, keeping the caller's error (@p keep) as it was. */
void tc_rt_fr_dump_auto(tc_rt_comm_t *comm, const char *reason, tc_status_t keep);
/* Dump every communicator if SIGUSR1 arrived. */
void tc_rt_fr_poll_signal(tc_rt_world_t *world);

#endif
