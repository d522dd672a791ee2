/* PMIx events: the launcher's "process terminated" and tcomms' own failure
 * and revoke notices, queued by PMIx's thread and dequeued by whoever
 * progresses the runtime.
 *
 * The queue is a ring with one consumer (under the runtime's world lock) and
 * producers serialised by a mutex: PMIx's progress thread, and a thread that
 * notifies (PMIx may run this process's own handler in the notifying thread:
 * a revoke's, found by TSan racing with the progress thread's push). A full
 * ring drops the event and counts it, which only delays detection to the
 * timeout. */
#include <pmix.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bootstrap_impl.h"
#include "tcomms/base/log.h"

/* tcomms' own codes, in the range PMIx leaves to its users */
#define TC_PMIX_EV_PEER_FAILED (PMIX_EXTERNAL_ERR_BASE - 101)
#define TC_PMIX_EV_REVOKE (PMIX_EXTERNAL_ERR_BASE - 102)
#define TC_PMIX_KEY_COMM "tc.comm"
#define TC_PMIX_KEY_RANK "tc.rank"
#define EV_RING 256
#define EV_DEAD 64

static struct {
    tc_boot_event_t ring[EV_RING];
    unsigned head; /* written by a producer (release), under ev_push_mu */
    unsigned tail; /* written by the consumer */
    unsigned dropped;
    size_t handler;
    int registered;
    char nspace[PMIX_MAX_NSLEN + 1];
    /* ranks the launcher reported terminated, kept (not consumed) for the
     * creation's fence to name them: the first EV_DEAD of them */
    int dead[EV_DEAD];
    unsigned ndead; /* written by a producer (release), under ev_push_mu */
} ev;
static pthread_mutex_t ev_push_mu = PTHREAD_MUTEX_INITIALIZER; /* producers: ev_handler */

static void dead_push(int rank)
{
    unsigned n = __atomic_load_n(&ev.ndead, __ATOMIC_RELAXED);
    for (unsigned i = 0; i < n && i < EV_DEAD; i++)
        if (ev.dead[i] == rank)
            return;
    if (n < EV_DEAD)
        ev.dead[n] = rank;
    __atomic_store_n(&ev.ndead, n + 1, __ATOMIC_RELEASE);
}

int tc_boot_pmix_terminated(int *ranks, int cap)
{
    unsigned n = __atomic_load_n(&ev.ndead, __ATOMIC_ACQUIRE);
    for (unsigned i = 0; i < n && i < EV_DEAD && (int)i < cap; i++)
        ranks[i] = ev.dead[i];
    return (int)n;
}

static void ev_push(const tc_boot_event_t *e)
{
    unsigned head = __atomic_load_n(&ev.head, __ATOMIC_RELAXED);
    unsigned tail = __atomic_load_n(&ev.tail, __ATOMIC_ACQUIRE);
    if (head - tail >= EV_RING) {
        __atomic_fetch_add(&ev.dropped, 1, __ATOMIC_RELAXED);
        return;
    }
    ev.ring[head % EV_RING] = *e;
    __atomic_store_n(&ev.head, head + 1, __ATOMIC_RELEASE);
}

static void ev_handler(size_t id, pmix_status_t status, const pmix_proc_t *source,
                       pmix_info_t info[], size_t ninfo, pmix_info_t *results, size_t nresults,
                       pmix_event_notification_cbfunc_fn_t cbfunc, void *cbdata)
{
    (void)id;
    (void)results;
    (void)nresults;
    tc_boot_event_t e = {0};
    e.rank = -1;
    for (size_t i = 0; i < ninfo; i++) {
        if (PMIX_CHECK_KEY(&info[i], PMIX_EVENT_AFFECTED_PROC) && info[i].value.type == PMIX_PROC &&
            info[i].value.data.proc)
            e.rank = (int)info[i].value.data.proc->rank;
        else if (PMIX_CHECK_KEY(&info[i], TC_PMIX_KEY_COMM) && info[i].value.type == PMIX_UINT32)
            e.comm_id = info[i].value.data.uint32;
        else if (PMIX_CHECK_KEY(&info[i], TC_PMIX_KEY_RANK) && info[i].value.type == PMIX_INT)
            e.rank = info[i].value.data.integer;
    }
    if (status == PMIX_EVENT_PROC_TERMINATED || status == TC_PMIX_EV_PEER_FAILED) {
        e.kind = TC_BOOT_EV_PROC_FAILED;
        e.from_launcher = status == PMIX_EVENT_PROC_TERMINATED;
        if (!e.from_launcher && source && source->rank < (pmix_rank_t)INT32_MAX)
            e.reporter = (int)source->rank + 1; /* a peer's notice: who sent it */
        e.silent = !e.from_launcher && e.comm_id == 1;
        e.comm_id = 0;
    } else if (status == TC_PMIX_EV_REVOKE) {
        e.kind = TC_BOOT_EV_REVOKE;
        if (e.rank < 0 && source)
            e.rank = (int)source->rank;
    }
    if (e.kind && e.rank >= 0 &&
        (!source || strcmp(source->nspace, ev.nspace) == 0 ||
         status == PMIX_EVENT_PROC_TERMINATED)) {
        pthread_mutex_lock(&ev_push_mu);
        ev_push(&e);
        if (e.from_launcher)
            dead_push(e.rank);
        pthread_mutex_unlock(&ev_push_mu);
    }
    if (cbfunc)
        cbfunc(PMIX_EVENT_ACTION_COMPLETE, NULL, 0, NULL, NULL, cbdata);
}

void tc_boot_pmix_events_start(const char *nspace)
{
    pmix_status_t codes[] = {PMIX_EVENT_PROC_TERMINATED, TC_PMIX_EV_PEER_FAILED, TC_PMIX_EV_REVOKE};
    snprintf(ev.nspace, sizeof(ev.nspace), "%s", nspace);
    __atomic_store_n(&ev.ndead, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&ev.tail, __atomic_load_n(&ev.head, __ATOMIC_ACQUIRE), __ATOMIC_RELEASE);
    pmix_status_t rc = PMIx_Register_event_handler(codes, 3, NULL, 0, ev_handler, NULL, NULL);
    if (rc < 0) {
        tc_log_warn(TC_SUBSYS_RUNTIME,
                    "bootstrap(pmix): cannot register for failure events "
                    "(%s): failures are seen by the transports and timeouts only",
                    PMIx_Error_string(rc));
        return;
    }
    ev.handler = (size_t)rc;
    ev.registered = 1;
}

void tc_boot_pmix_events_stop(void)
{
    if (ev.registered)
        PMIx_Deregister_event_handler(ev.handler, NULL, NULL);
    ev.registered = 0;
}

int tc_boot_pmix_poll_event(tc_boot_t *boot, tc_boot_event_t *e)
{
    (void)boot;
    unsigned tail = __atomic_load_n(&ev.tail, __ATOMIC_RELAXED);
    if (tail == __atomic_load_n(&ev.head, __ATOMIC_ACQUIRE))
        return 0;
    *e = ev.ring[tail % EV_RING];
    __atomic_store_n(&ev.tail, tail + 1, __ATOMIC_RELEASE);
    return 1;
}

static void notify_done(pmix_status_t status, void *cbdata)
{
    (void)status;
    pmix_info_t *info = cbdata;
    PMIX_INFO_FREE(info, 3);
}

tc_status_t tc_boot_pmix_notify(tc_boot_t *boot, const tc_boot_event_t *e)
{
    (void)boot;
    /* PMIx reads the info until its callback: keep it on the heap until then */
    pmix_info_t *info;
    PMIX_INFO_CREATE(info, 3);
    if (!info)
        return tc_error_set(TC_ERR_NO_MEMORY, "bootstrap(pmix): event info");
    pmix_status_t code = e->kind == TC_BOOT_EV_REVOKE ? TC_PMIX_EV_REVOKE : TC_PMIX_EV_PEER_FAILED;
    int rank = e->rank;
    /* a failure's comm word: 1 when found silent */
    uint32_t comm = e->kind == TC_BOOT_EV_REVOKE ? e->comm_id : (uint32_t)(e->silent != 0);
    PMIX_INFO_LOAD(&info[0], TC_PMIX_KEY_RANK, &rank, PMIX_INT);
    PMIX_INFO_LOAD(&info[1], TC_PMIX_KEY_COMM, &comm, PMIX_UINT32);
    /* Only for handlers registered for these codes: a launcher's default
     * handler (Slurm's kills the whole step on any error event) never sees it. */
    bool non_default = true;
    PMIX_INFO_LOAD(&info[2], PMIX_EVENT_NON_DEFAULT, &non_default, PMIX_BOOL);
    pmix_status_t rc =
        PMIx_Notify_event(code, NULL, PMIX_RANGE_NAMESPACE, info, 3, notify_done, info);
    if (rc == PMIX_SUCCESS)
        return TC_OK;
    PMIX_INFO_FREE(info, 3);
    if (rc == PMIX_OPERATION_SUCCEEDED)
        return TC_OK;
    return tc_error_set(TC_ERR_BOOTSTRAP, "bootstrap(pmix): PMIx_Notify_event failed: %s",
                        PMIx_Error_string(rc));
}
