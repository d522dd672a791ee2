/* Progress: one pass over everything that can move (the hooks of the modules
 * above, then the transports), blocking waits built on it, the progress
 * thread that drives asynchronous operations while no caller does (and sleeps
 * while a caller's blocking wait drives them), and the
 * idle policy: the clock is read only after TC_RT_IDLE_CLOCK_PASSES passes
 * without progress, a waiter polls for spin_ns before it yields or sleeps. */
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "progress.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"
#include "tcomms/topo/topo.h"

/* Uncontended: one trylock, no system call. Contended: announce the wait, so
 * that a holder looping in a wait or in the progress thread hands the lock over
 * (tc_rt_world_handoff) instead of keeping it for its whole wait. */
void tc_rt_world_lock(tc_rt_world_t *world)
{
    if (pthread_mutex_trylock(&world->mu) == 0)
        return;
    __atomic_store_n(&world->contended, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&world->want, 1, __ATOMIC_ACQ_REL);
    pthread_mutex_lock(&world->mu);
    __atomic_sub_fetch(&world->want, 1, __ATOMIC_ACQ_REL);
    __atomic_add_fetch(&world->handoffs, 1, __ATOMIC_RELEASE);
}

void tc_rt_world_unlock(tc_rt_world_t *world)
{
    pthread_mutex_unlock(&world->mu);
}

void tc_rt_world_step_out(tc_rt_world_t *world)
{
    __atomic_add_fetch(&world->outside, 1, __ATOMIC_ACQ_REL);
    pthread_mutex_unlock(&world->mu);
}

void tc_rt_world_step_in(tc_rt_world_t *world)
{
    __atomic_sub_fetch(&world->outside, 1, __ATOMIC_ACQ_REL);
    tc_rt_world_lock(world);
}

/* Sleep up to @p ns, less once a backend's wait descriptor is readable: a
 * peer's put waiting to be served, or an answer, must not wait for the nap's
 * end. The set is copied: two threads may nap at once. */
static void world_sleep(tc_rt_world_t *world, uint64_t ns)
{
    struct pollfd fds[TC_RT_BACKENDS_MAX];
    int n = world->nwait_fds;
    memcpy(fds, world->wait_fds, (size_t)n * sizeof(fds[0]));
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    if (ppoll(fds, (nfds_t)n, &ts, NULL) > 0)
        __atomic_add_fetch(&world->fd_wakes, 1, __ATOMIC_RELAXED);
}

void tc_rt_world_nap(tc_rt_world_t *world, uint64_t ns)
{
    int unlock = __atomic_load_n(&world->contended, __ATOMIC_RELAXED);
    if (unlock)
        pthread_mutex_unlock(&world->mu);
    tc_rt_world_nap_out(world, ns);
    if (unlock)
        tc_rt_world_lock(world);
}

void tc_rt_world_nap_out(tc_rt_world_t *world, uint64_t ns)
{
    if (ns == 0)
        sched_yield();
    else
        world_sleep(world, ns);
}

/* Mutexes are not fair: unlocking and locking again at once mostly keeps the
 * lock. So wait until a waiter got it (or a few yields passed), then queue. */
void tc_rt_world_handoff(tc_rt_world_t *world)
{
    if (__atomic_load_n(&world->want, __ATOMIC_ACQUIRE) == 0)
        return;
    uint64_t seen = __atomic_load_n(&world->handoffs, __ATOMIC_ACQUIRE);
    pthread_mutex_unlock(&world->mu);
    for (int i = 0; i < 64 && __atomic_load_n(&world->handoffs, __ATOMIC_ACQUIRE) == seen; i++)
        sched_yield();
    tc_rt_world_lock(world);
}

/* Polling before sleeping cuts latency when every rank has a core of its own;
 * when ranks outnumber cores it steals the core the peer needs, so sleep at
 * once. The cores are those the node's ranks may use together (the cgroup's
 * quota and cpuset: tc_topo_cpus_usable), not the machine's; a rank's own
 * affinity mask says nothing of its peers'. TC_SPIN_US overrides the choice. */
tc_status_t tc_rt_progress_init(tc_rt_world_t *world)
{
    int cores = tc_topo_cpus_usable();
    int oversubscribed = cores > 0 && world->boot->local_size > cores;
    int64_t us;
    tc_status_t st = tc_config_int("TC_SPIN_US", oversubscribed ? 0 : 50, 0, 1000000, &us);
    if (st != TC_OK)
        return st;
    world->spin_ns = (uint64_t)us * 1000;
    tc_log_info(TC_SUBSYS_RUNTIME, "%d local ranks, %d usable cores: poll %lld us before sleeping",
                world->boot->local_size, cores, (long long)us);
    return TC_OK;
}

int tc_rt_world_progress(tc_rt_world_t *world)
{
    world->hooks.poll(world);
    int total = world->hooks.advance(world);
    int n = tc_rt_world_progress_tp(world);
    if (n < 0) {
        tc_error_prefix("transport progress: ");
        world->hooks.fail_all(world, (tc_status_t)n);
        return 1;
    }
    if (total + n > 0) {
        world->idle_passes = 0;
    } else if (world->active && ++world->idle_passes % TC_RT_IDLE_CLOCK_PASSES == 0) {
        /* nothing moved for a while: the time to look at the clock (once,
         * for every waiter of this pass: see world->now_ns) */
        world->now_ns = tc_time_ns();
        world->hooks.expire(world, world->now_ns);
    }
    return total + n;
}

static tc_status_t progress_wait(tc_rt_world_t *world, const int *state, int running,
                                 uint64_t wait_deadline, uint64_t op_deadline)
{
    uint64_t idle_since = 0; /* when the current stretch without progress began */
    while (__atomic_load_n(state, __ATOMIC_ACQUIRE) == running) {
        tc_rt_world_handoff(world); /* another thread's call gets in between passes */
        int n = tc_rt_world_progress(world);
        if (__atomic_load_n(state, __ATOMIC_ACQUIRE) != running)
            break;
        if (n > 0) {
            idle_since = 0;
            continue;
        }
        if (world->idle_passes % TC_RT_IDLE_CLOCK_PASSES != 0)
            continue;                 /* poll a while before looking at the clock */
        uint64_t now = world->now_ns; /* read by this idle pass */
        if (wait_deadline && now >= wait_deadline)
            return TC_ERR_TIMEOUT;
        if (idle_since == 0)
            idle_since = now;
        if (now - idle_since >= world->spin_ns) {
            uint64_t until =
                wait_deadline && wait_deadline < op_deadline ? wait_deadline : op_deadline;
            if (__atomic_load_n(&world->contended, __ATOMIC_RELAXED))
                tc_rt_world_nap(world, now - idle_since < TC_RT_NAP_AFTER_NS ? 0 : TC_RT_NAP_NS);
            else
                tc_rt_world_wait(world, tc_deadline_left_ms(until), now - idle_since);
        }
    }
    return TC_OK;
}

tc_status_t tc_rt_progress_wait(tc_rt_world_t *world, const int *state, int running,
                                uint64_t wait_deadline, uint64_t op_deadline)
{
    tc_rt_progress_driving(world, 1);
    tc_status_t st = progress_wait(world, state, running, wait_deadline, op_deadline);
    tc_rt_progress_driving(world, -1);
    return st;
}

/* The progress thread's nap of @p us, without the lock, ended early by a
 * socket with something to progress (a window target needs no call of its
 * own to serve a put, so it must not serve it only when the nap ends); while
 * a caller's blocking wait drives progress, it sleeps on, a millisecond at a
 * time, so that the lock stays the caller's (contending for it at every nap
 * made each step of a blocking TCP window operation wait for a hand-over). */
static void progress_nap(tc_rt_world_t *world, unsigned us)
{
    world_sleep(world, (uint64_t)us * 1000);
    struct timespec ts = {0, 1000000};
    while (__atomic_load_n(&world->drivers, __ATOMIC_ACQUIRE) > 0 &&
           !__atomic_load_n(&world->stop, __ATOMIC_ACQUIRE))
        nanosleep(&ts, NULL);
}

/* Lock held: nap without it (10 us doubling to 1 ms while nothing moves) and take it back. A
 * caller holding it is busy in the library, where its waits progress everything: the thread
 * naps on rather than queue for the lock, which would cost that caller a futex wake-up when it
 * lets go. */
static void progress_idle(tc_rt_world_t *world, unsigned *nap_us)
{
    pthread_mutex_unlock(&world->mu);
    for (;;) {
        *nap_us = *nap_us ? (*nap_us * 2 > 1000 ? 1000 : *nap_us * 2) : 10;
        progress_nap(world, *nap_us);
        if (pthread_mutex_trylock(&world->mu) == 0)
            return;
        if (__atomic_load_n(&world->stop, __ATOMIC_ACQUIRE)) {
            tc_rt_world_lock(world);
            return;
        }
    }
}

/* Naps after the last asynchronous work ended before sleeping on the condition: 10 us
 * doubling to 1 ms, about 2.3 ms in all. */
#define PROGRESS_LINGER_NAPS 8

/* Drive the running asynchronous works while no caller does. Polls while
 * there is progress, naps (growing from 10 us to 1 ms, without the lock, ended
 * early by a readable socket) when there is none, and sleeps on the condition
 * while nothing is asynchronous. */
static void *progress_main(void *arg)
{
    tc_rt_world_t *world = arg;
    unsigned nap_us = 0, linger = 0;
    tc_rt_world_lock(world);
    while (!__atomic_load_n(&world->stop, __ATOMIC_ACQUIRE)) {
        if (world->nasync == 0 && linger < PROGRESS_LINGER_NAPS) {
            /* The last asynchronous work just ended; another may follow at once (a caller
             * that issues and waits in a loop, and drives it itself). Napping a while before
             * sleeping on the condition spares each such issue this thread's wake-up: a futex
             * call and, on a loaded node, a core taken from the peers (8 B asynchronous
             * all-reduce, 2 ranks on 2 cores: docs/runtime.md, "Threads"). */
            linger++;
            progress_idle(world, &nap_us);
            if (world->hb_ns)
                world->hooks.tick(world); /* heartbeats stay due every period */
            continue;
        }
        if (world->nasync > 0)
            linger = 0;
        if (world->nasync == 0 && world->hb_ns) {
            /* nothing asynchronous, but heartbeats are due every period */
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            uint64_t ns = (uint64_t)until.tv_nsec + world->hb_ns / 4;
            until.tv_sec += (time_t)(ns / 1000000000ull);
            until.tv_nsec = (long)(ns % 1000000000ull);
            pthread_cond_timedwait(&world->cv, &world->mu, &until);
            tc_rt_world_progress(world);
            world->hooks.tick(world);
            nap_us = 0;
            continue;
        }
        if (world->nasync == 0) {
            pthread_cond_wait(&world->cv, &world->mu);
            nap_us = 0;
            continue;
        }
        if (tc_rt_world_progress(world) > 0) {
            nap_us = 0;
            tc_rt_world_handoff(world); /* let callers in */
            continue;
        }
        progress_idle(world, &nap_us);
    }
    pthread_mutex_unlock(&world->mu);
    return NULL;
}

tc_status_t tc_rt_world_go_threaded(tc_rt_world_t *world)
{
    if (world->threaded)
        return TC_OK;
    int rc = pthread_create(&world->thread, NULL, progress_main, world);
    if (rc != 0)
        return tc_error_set(TC_ERR_SYSTEM, "starting the progress thread: %s", strerror(rc));
    /* named here, so that it has its name once this returns (top -H, perf, gdb) */
    (void)pthread_setname_np(world->thread, TC_RT_PROGRESS_THREAD_NAME);
    world->threaded = 1;
    tc_log_debug(TC_SUBSYS_RUNTIME, "progress thread started");
    return TC_OK;
}

void tc_rt_progress_stop(tc_rt_world_t *world)
{
    if (!world->threaded) {
        pthread_mutex_unlock(&world->mu);
        return;
    }
    __atomic_store_n(&world->stop, 1, __ATOMIC_RELEASE);
    pthread_cond_signal(&world->cv);
    pthread_mutex_unlock(&world->mu);
    pthread_join(world->thread, NULL);
    tc_log_debug(TC_SUBSYS_RUNTIME, "progress thread stopped; %llu naps ended by a socket",
                 (unsigned long long)__atomic_load_n(&world->fd_wakes, __ATOMIC_RELAXED));
}
