/* Internal, the progress module: the progress loop, blocking waits, the
 * progress thread and the idle policy (when to read the clock, when to yield,
 * when to sleep). It drives the world's transports and, through the world's
 * hooks, whatever the modules above have running; it calls only the world. */
#ifndef TC_RUNTIME_PROGRESS_H
#define TC_RUNTIME_PROGRESS_H

#include "world.h"

/* Read the time only after this many passes in a row moved nothing. */
#define TC_RT_IDLE_CLOCK_PASSES 16

/* The world's lock, taken by every entry point from any thread. */
void tc_rt_world_lock(tc_rt_world_t *world);
void tc_rt_world_unlock(tc_rt_world_t *world);
/* Lock held: if another thread waits for the lock, let it have it and queue
 * again behind it. Called by loops that hold the lock (waits, the progress
 * thread) between passes. */
void tc_rt_world_handoff(tc_rt_world_t *world);
/* Lock held: leave the lock to the threads that wait for it while this one
 * only watches shared memory through atomic loads (the words of an shm
 * pair's lane: tc_shm_lane_watch), and take it back. Out, the thread touches
 * nothing the lock guards. */
void tc_rt_world_step_out(tc_rt_world_t *world);
void tc_rt_world_step_in(tc_rt_world_t *world);
/* Lock held: yield the core (@p ns 0) or sleep @p ns, without the lock once
 * other threads have used the world (they work meanwhile), else with it. */
void tc_rt_world_nap(tc_rt_world_t *world, uint64_t ns);
/* The same nap for a thread that does not hold the lock. */
void tc_rt_world_nap_out(tc_rt_world_t *world, uint64_t ns);
/* With other threads about, waits nap without the lock: yielding at first,
 * then TC_RT_NAP_NS at a time once idle for TC_RT_NAP_AFTER_NS. */
#define TC_RT_NAP_AFTER_NS 5000000ull
#define TC_RT_NAP_NS 100000ull
/* Set the spin time (TC_SPIN_US, or by the ranks per core). */
TC_MUST_USE tc_status_t tc_rt_progress_init(tc_rt_world_t *world);
/* The progress thread's name, as top -H, perf and gdb show it (at most 15 characters). */
#define TC_RT_PROGRESS_THREAD_NAME "tc-progress"
/* Start the progress thread (first asynchronous operation); lock held. */
TC_MUST_USE tc_status_t tc_rt_world_go_threaded(tc_rt_world_t *world);
/* Stop and join the progress thread if there is one; called with the lock
 * held, which it releases. */
void tc_rt_progress_stop(tc_rt_world_t *world);
/* One pass: the hooks' polls, the running operations, the transports, and
 * after a while without progress the deadlines; returns the changes. */
int tc_rt_world_progress(tc_rt_world_t *world);
/* Progress (lock held) while *@p state equals @p running, at most until
 * @p wait_deadline (0: none), sleeping no later than @p op_deadline: TC_OK
 * once it changed, TC_ERR_TIMEOUT when @p wait_deadline passed first. */
TC_MUST_USE tc_status_t tc_rt_progress_wait(tc_rt_world_t *world, const int *state, int running,
                                            uint64_t wait_deadline, uint64_t op_deadline);
/* A blocking wait that progresses the world itself begins (+1) or ends (-1):
 * while one runs, the progress thread sleeps instead of contending for the
 * lock (the waiter moves everything, asynchronous work included). */
static inline void tc_rt_progress_driving(tc_rt_world_t *world, int delta)
{
    __atomic_add_fetch(&world->drivers, delta, __ATOMIC_RELEASE);
}

#endif
