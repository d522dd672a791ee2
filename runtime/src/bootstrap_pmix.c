/* PMIx bootstrap: works under any PMIx server (tcrun, mpirun, srun --mpi=pmix). */
#include <pmix.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bootstrap_impl.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"

typedef struct {
    tc_boot_t head;
    pmix_proc_t self;
} tc_boot_pmix_t;

/* PMIx timeouts are whole seconds; round up and never pass 0 (= infinite). */
static int pmix_timeout_s(uint64_t deadline_ns)
{
    if (deadline_ns == UINT64_MAX)
        return 0;
    uint64_t now = tc_time_ns();
    if (deadline_ns <= now)
        return 1;
    uint64_t s = (deadline_ns - now + 999999999ull) / 1000000000ull;
    return s > 86400ull * 30 ? 86400 * 30 : (int)s;
}

static void pmix_key_copy(pmix_key_t dst, const char *key)
{
    memset(dst, 0, PMIX_MAX_KEYLEN + 1);
    strncpy(dst, key, PMIX_MAX_KEYLEN);
}

static tc_status_t pmix_put(tc_boot_t *boot, const char *key, const void *val, size_t len)
{
    pmix_key_t k;
    pmix_value_t v;
    pmix_key_copy(k, key);
    memset(&v, 0, sizeof(v));
    v.type = PMIX_BYTE_OBJECT;
    v.data.bo.bytes = (char *)val;
    v.data.bo.size = len;
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, k, &v);
    if (rc != PMIX_SUCCESS)
        return tc_error_set(TC_ERR_BOOTSTRAP, "bootstrap(pmix): PMIx_Put of key '%s' (%zu bytes) "
                            "failed: %s", key, len, PMIx_Error_string(rc));
    return TC_OK;
}

/* A non-blocking fence's state. The callback may come after an aborted waiter
 * has left, so the state is on the heap and freed by whichever of the two
 * lets go last. PMIx wants the info array alive until the callback. */
typedef struct {
    _Atomic int refs;
    _Atomic int done;
    _Atomic int rc;
    pmix_info_t info[2];
} pmix_fence_op_t;

static void pmix_fence_op_release(pmix_fence_op_t *op)
{
    if (atomic_fetch_sub(&op->refs, 1) == 1) {
        PMIX_INFO_DESTRUCT(&op->info[0]);
        PMIX_INFO_DESTRUCT(&op->info[1]);
        free(op);
    }
}

static void pmix_fence_done(pmix_status_t status, void *cbdata)
{
    pmix_fence_op_t *op = cbdata;
    atomic_store(&op->rc, status);
    atomic_store(&op->done, 1);
    pmix_fence_op_release(op);
}

/* Waits for @p op in slices of TC_BOOT_ABORT_POLL_MS, so that an abort is seen.
 * PMIx's own timeout ends it at the deadline (whole seconds, rounded up); one
 * more second and the wait ends regardless, should the server not answer. */
static pmix_status_t pmix_fence_wait(pmix_fence_op_t *op, int nranks, uint64_t deadline_ns,
                                     tc_status_t *abort_p)
{
    struct timespec slice = {0, TC_BOOT_ABORT_POLL_MS * 1000000L};
    while (!atomic_load(&op->done)) {
        if (deadline_ns != UINT64_MAX && tc_time_ns() > deadline_ns + 2000000000ull)
            return PMIX_ERR_TIMEOUT;
        char what[64];
        snprintf(what, sizeof(what), "the PMIx fence of %d ranks", nranks);
        if ((*abort_p = tc_boot_creation_aborted(what)) != TC_OK)
            return PMIX_ERROR;
        nanosleep(&slice, NULL);
    }
    return atomic_load(&op->rc);
}

static tc_status_t pmix_fence(tc_boot_t *boot, uint64_t deadline_ns)
{
    tc_boot_pmix_t *p = (tc_boot_pmix_t *)boot;
    pmix_status_t rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS)
        return tc_error_set(TC_ERR_BOOTSTRAP, "bootstrap(pmix): PMIx_Commit failed: %s",
                            PMIx_Error_string(rc));
    pmix_proc_t all;
    PMIX_LOAD_PROCID(&all, p->self.nspace, PMIX_RANK_WILDCARD);
    pmix_fence_op_t *op = calloc(1, sizeof(*op));
    if (!op)
        return tc_error_set(TC_ERR_NO_MEMORY, "bootstrap(pmix): allocating the fence");
    bool collect = true;
    int timeout = pmix_timeout_s(deadline_ns);
    PMIX_INFO_LOAD(&op->info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    PMIX_INFO_LOAD(&op->info[1], PMIX_TIMEOUT, &timeout, PMIX_INT);
    atomic_init(&op->refs, 2);
    rc = PMIx_Fence_nb(&all, 1, op->info, timeout > 0 ? 2 : 1, pmix_fence_done, op);
    if (rc != PMIX_SUCCESS) {
        atomic_store(&op->refs, 1); /* the callback will not come */
        pmix_fence_op_release(op);
        return tc_error_set(TC_ERR_BOOTSTRAP, "bootstrap(pmix): PMIx_Fence_nb over %d ranks "
                            "failed: %s", boot->size, PMIx_Error_string(rc));
    }
    tc_status_t aborted = TC_OK;
    rc = pmix_fence_wait(op, boot->size, deadline_ns, &aborted);
    pmix_fence_op_release(op);
    if (aborted != TC_OK)
        return aborted;
    if (rc == PMIX_ERR_TIMEOUT)
        return tc_error_set(TC_ERR_TIMEOUT, "bootstrap(pmix): fence of %d ranks did not complete "
                            "within %d s (some rank has not joined)", boot->size, timeout);
    if (rc != PMIX_SUCCESS)
        return tc_error_set(TC_ERR_BOOTSTRAP, "bootstrap(pmix): PMIx_Fence over %d ranks failed: %s",
                            boot->size, PMIx_Error_string(rc));
    return TC_OK;
}

static tc_status_t pmix_get(tc_boot_t *boot, int peer, const char *key, void *buf, size_t cap,
                            size_t *len_p, uint64_t deadline_ns)
{
    tc_boot_pmix_t *p = (tc_boot_pmix_t *)boot;
    pmix_proc_t proc;
    pmix_key_t k;
    pmix_value_t *v = NULL;
    pmix_info_t info;
    int timeout = pmix_timeout_s(deadline_ns);
    PMIX_LOAD_PROCID(&proc, p->self.nspace, (pmix_rank_t)peer);
    pmix_key_copy(k, key);
    PMIX_INFO_LOAD(&info, PMIX_TIMEOUT, &timeout, PMIX_INT);
    pmix_status_t rc = PMIx_Get(&proc, k, &info, timeout > 0 ? 1 : 0, &v);
    PMIX_INFO_DESTRUCT(&info);
    if (rc == PMIX_ERR_NOT_FOUND)
        return tc_error_set(TC_ERR_NOT_FOUND, "bootstrap(pmix): rank %d has no key '%s'", peer,
                            key);
    if (rc == PMIX_ERR_TIMEOUT)
        return tc_error_set(TC_ERR_TIMEOUT, "bootstrap(pmix): get of key '%s' of rank %d timed "
                            "out after %d s", key, peer, timeout);
    if (rc != PMIX_SUCCESS)
        return tc_error_set(TC_ERR_BOOTSTRAP, "bootstrap(pmix): PMIx_Get of key '%s' of rank %d "
                            "failed: %s", key, peer, PMIx_Error_string(rc));
    tc_status_t st = TC_OK;
    if (v->type != PMIX_BYTE_OBJECT) {
        st = tc_error_set(TC_ERR_PROTOCOL, "bootstrap(pmix): key '%s' of rank %d has PMIx type "
                          "%d, expected a byte object", key, peer, (int)v->type);
    } else if (v->data.bo.size > cap) {
        st = tc_error_set(TC_ERR_TRUNCATED, "bootstrap(pmix): key '%s' of rank %d has %zu bytes, "
                          "more than the %zu expected", key, peer, v->data.bo.size, cap);
    } else {
        memcpy(buf, v->data.bo.bytes, v->data.bo.size);
        *len_p = v->data.bo.size;
    }
    PMIX_VALUE_RELEASE(v);
    return st;
}

static void pmix_destroy(tc_boot_t *boot)
{
    tc_boot_pmix_events_stop();
    PMIx_Finalize(NULL, 0);
    free(boot);
}

static const tc_boot_ops_t pmix_ops = {"pmix",      pmix_put, pmix_fence, pmix_get, pmix_destroy,
                                       tc_boot_pmix_poll_event, tc_boot_pmix_notify};

static void detect_launcher(char *out, size_t cap)
{
    const char *name = "pmix";
    const char *tc = getenv("TC_LAUNCHER");
    if (tc && *tc)
        name = tc;
    else if (getenv("OMPI_COMM_WORLD_SIZE"))
        name = "mpirun";
    else if (getenv("SLURM_STEP_ID") || getenv("SLURM_JOB_ID"))
        name = "srun";
    snprintf(out, cap, "%s", name);
}

tc_status_t tc_boot_pmix_create(uint64_t deadline_ns, tc_boot_t **boot_p)
{
    tc_boot_pmix_t *p = calloc(1, sizeof(*p));
    if (!p)
        return tc_error_set(TC_ERR_NO_MEMORY, "bootstrap(pmix): allocating the bootstrap");
    pmix_status_t rc = PMIx_Init(&p->self, NULL, 0);
    if (rc != PMIX_SUCCESS) {
        free(p);
        return tc_error_set(TC_ERR_BOOTSTRAP, "bootstrap(pmix): PMIx_Init failed: %s (is the "
                            "launcher's PMIx server still running?)", PMIx_Error_string(rc));
    }
    pmix_proc_t job;
    pmix_value_t *v = NULL;
    PMIX_LOAD_PROCID(&job, p->self.nspace, PMIX_RANK_WILDCARD);
    rc = PMIx_Get(&job, PMIX_JOB_SIZE, NULL, 0, &v);
    if (rc != PMIX_SUCCESS || v->type != PMIX_UINT32) {
        if (v)
            PMIX_VALUE_RELEASE(v);
        PMIx_Finalize(NULL, 0);
        free(p);
        return tc_error_set(TC_ERR_BOOTSTRAP, "bootstrap(pmix): cannot read the job size "
                            "(PMIX_JOB_SIZE): %s", PMIx_Error_string(rc));
    }
    p->head.ops = &pmix_ops;
    p->head.size = (int)v->data.uint32;
    p->head.rank = (int)p->self.rank;
    PMIX_VALUE_RELEASE(v);
    v = NULL;
    p->head.local_size = 1;
    if (PMIx_Get(&job, PMIX_LOCAL_SIZE, NULL, 0, &v) == PMIX_SUCCESS && v->type == PMIX_UINT32)
        p->head.local_size = (int)v->data.uint32;
    if (v)
        PMIX_VALUE_RELEASE(v);
    detect_launcher(p->head.launcher, sizeof(p->head.launcher));
    tc_boot_pmix_events_start(p->self.nspace);
    tc_boot_fill_common(&p->head);
    tc_log_info(TC_SUBSYS_RUNTIME, "bootstrap: pmix (%s) namespace %s rank %d of %d",
                p->head.launcher, p->self.nspace, p->head.rank, p->head.size);
    (void)deadline_ns;
    *boot_p = &p->head;
    return TC_OK;
}
