/* PMIx bootstrap: works under any PMIx server (tcrun, mpirun, srun --mpi=pmix). */
#include <pmix.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bootstrap_impl.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"
#include "tcomms/transport/auth.h"

/* Rank 0's job secret, put before the secret's fence and read by the others after it. */
#define PMIX_SECRET_KEY "tc.job.secret"
#define PMIX_SECRET_LEN TC_AUTH_NONCE_LEN

/* Every value put goes out behind its world's number (4 bytes, little-endian): PMIx_Init runs
 * once per process (bootstrap_pmix_client.c), so the keys of a new world replace those of the
 * last under the same names, and a copy of a peer's earlier value may still sit in this
 * process's PMIx cache. */
#define PMIX_WORLD_LEN 4

typedef struct {
    tc_boot_t head;
    pmix_proc_t self;
    uint32_t world; /* this process's PMIx bootstraps, this one included */
    int numbered;   /* keys named with the world: the client's store keeps old values */
    char probe_key[PMIX_MAX_KEYLEN + 1]; /* the first key every rank puts (not the secret) */
    uint32_t fence_pause_ms; /* TC_FAULT_INJECT's fence point (tc_boot_pmix_fence_pause) */
} tc_boot_pmix_t;

static void world_put(unsigned char *b, uint32_t w)
{
    for (int i = 0; i < PMIX_WORLD_LEN; i++)
        b[i] = (unsigned char)(w >> (8 * i));
}

static uint32_t world_get(const unsigned char *b)
{
    uint32_t w = 0;
    for (int i = 0; i < PMIX_WORLD_LEN; i++)
        w |= (uint32_t)b[i] << (8 * i);
    return w;
}

/* PMIx_Get calls made by this process (local and server lookups alike), logged after each
 * fence: tests/runtime/boot_requests_test.sh holds creation's count flat in the job size. */
static _Atomic unsigned long pmix_gets;

static pmix_status_t pmix_get_counted(const pmix_proc_t *proc, const char *key,
                                      const pmix_info_t *info, size_t ninfo, pmix_value_t **v)
{
    atomic_fetch_add(&pmix_gets, 1);
    return PMIx_Get(proc, key, info, ninfo, v);
}

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

/* @p key as this world names it at the PMIx server. */
static void pmix_key_copy(const tc_boot_pmix_t *p, pmix_key_t dst, const char *key)
{
    memset(dst, 0, PMIX_MAX_KEYLEN + 1);
    if (p->numbered)
        snprintf(dst, PMIX_MAX_KEYLEN + 1, "%s.w%u", key, p->world);
    else
        strncpy(dst, key, PMIX_MAX_KEYLEN);
}

static tc_status_t pmix_put(tc_boot_t *boot, const char *key, const void *val, size_t len)
{
    tc_boot_pmix_t *p = (tc_boot_pmix_t *)boot;
    pmix_key_t k;
    pmix_value_t v;
    pmix_key_copy(p, k, key);
    unsigned char *framed = malloc(PMIX_WORLD_LEN + len);
    if (!framed)
        return tc_error_set(TC_ERR_NO_MEMORY, "bootstrap(pmix): key '%s' of %zu bytes", key, len);
    world_put(framed, p->world);
    if (len)
        memcpy(framed + PMIX_WORLD_LEN, val, len);
    memset(&v, 0, sizeof(v));
    v.type = PMIX_BYTE_OBJECT;
    v.data.bo.bytes = (char *)framed;
    v.data.bo.size = PMIX_WORLD_LEN + len;
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, k, &v); /* copies the value */
    free(framed);
    /* the secret is put by rank 0 alone: it cannot tell a missing rank */
    if (rc == PMIX_SUCCESS && !p->probe_key[0] && strcmp(key, PMIX_SECRET_KEY) != 0)
        snprintf(p->probe_key, sizeof(p->probe_key), "%s", key);
    if (rc != PMIX_SUCCESS)
        return tc_error_set(TC_ERR_BOOTSTRAP,
                            "bootstrap(pmix): PMIx_Put of key '%s' (%zu bytes) "
                            "failed: %s",
                            key, len, PMIx_Error_string(rc));
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

/* PMIx_Get of @p rank's @p key with a timeout of @p timeout_s (0: none); @p immediate does not
 * wait for a key that is absent (PMIX_IMMEDIATE). */
static pmix_status_t pmix_fetch(tc_boot_pmix_t *p, int rank, const char *key, int timeout_s,
                                bool immediate, pmix_value_t **v_p)
{
    pmix_proc_t proc;
    pmix_key_t k;
    pmix_info_t info[2];
    size_t n = 0;
    PMIX_LOAD_PROCID(&proc, p->self.nspace, (pmix_rank_t)rank);
    pmix_key_copy(p, k, key);
    if (timeout_s > 0)
        PMIX_INFO_LOAD(&info[n++], PMIX_TIMEOUT, &timeout_s, PMIX_INT);
    if (immediate)
        PMIX_INFO_LOAD(&info[n++], PMIX_IMMEDIATE, &immediate, PMIX_BOOL);
    *v_p = NULL;
    pmix_status_t rc = pmix_get_counted(&proc, k, n ? info : NULL, n, v_p);
    for (size_t i = 0; i < n; i++)
        PMIX_INFO_DESTRUCT(&info[i]);
    if (rc != PMIX_SUCCESS && *v_p) {
        PMIX_VALUE_RELEASE(*v_p);
        *v_p = NULL;
    }
    return rc;
}

/* The world a value fetched was put in (0: not a framed byte object). */
static uint32_t pmix_value_world(const pmix_value_t *v)
{
    if (v->type != PMIX_BYTE_OBJECT || v->data.bo.size < PMIX_WORLD_LEN)
        return 0;
    return world_get((const unsigned char *)v->data.bo.bytes);
}

/* Whether @p rank's probe key of this world is at the server, without waiting
 * for it to appear (PMIX_IMMEDIATE): 1 yes, 0 absent, -1 cannot tell. */
static int pmix_has_key(tc_boot_pmix_t *p, int rank)
{
    pmix_value_t *v = NULL;
    pmix_status_t rc = pmix_fetch(p, rank, p->probe_key, 1, true, &v);
    int fresh = v && pmix_value_world(v) == p->world;
    if (v)
        PMIX_VALUE_RELEASE(v);
    tc_log_debug(TC_SUBSYS_RUNTIME, "bootstrap(pmix): key '%s' of rank %d: %s%s", p->probe_key,
                 rank, PMIx_Error_string(rc),
                 rc == PMIX_SUCCESS && !fresh ? " (an earlier world's)" : "");
    return rc == PMIX_SUCCESS ? fresh : rc == PMIX_ERR_NOT_FOUND ? 0 : -1;
}

#define MISSING_MAX 8     /* ranks named */
#define MISSING_PROBES 64 /* server round trips, at most */

/* The ranks missing from a fence: those the launcher reports terminated and,
 * when @p probe (the fence failed: only the error's wording is at stake),
 * ranks whose probe key is absent at the server (never joined, or died
 * before committing), asking about at most MISSING_PROBES ranks from rank 0
 * up. A fence that succeeds is not probed: creation stays O(1) requests per
 * rank; a launcher completing a fence without a rank it lost fails it
 * (tcrun does), and a key absent later is named by pmix_get. After a fence
 * that succeeded, a rank reported terminated counts only when its probe key
 * of this world is absent: with the key it took part, and may have died after
 * the fence (while this rank was slow to look), which the first operation
 * with it reports. Writes "rank 1", "ranks 1 and 4", ... into @p out; returns
 * how many ranks were found (0: none, out ""). Bounded: at most
 * MISSING_PROBES round trips of 1 s each. */
static int pmix_missing(tc_boot_pmix_t *p, int probe, char *out, size_t cap)
{
    int n = 0, ranks[MISSING_MAX], dead[MISSING_MAX];
    int ndead = tc_boot_pmix_terminated(dead, MISSING_MAX);
    for (int i = 0; i < ndead && i < MISSING_MAX; i++)
        if (dead[i] >= 0 && dead[i] < p->head.size && dead[i] != p->head.rank &&
            (probe || !p->probe_key[0] || pmix_has_key(p, dead[i]) != 1))
            ranks[n++] = dead[i];
    int total = n;
    for (int r = 0; probe && p->probe_key[0] && r < p->head.size && r < MISSING_PROBES; r++) {
        int known = r == p->head.rank;
        for (int i = 0; i < n; i++)
            known |= ranks[i] == r;
        if (known || pmix_has_key(p, r) != 0)
            continue;
        if (n < MISSING_MAX)
            ranks[n++] = r;
        total++;
    }
    /* in rank order */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && ranks[j - 1] > ranks[j]; j--) {
            int t = ranks[j];
            ranks[j] = ranks[j - 1];
            ranks[j - 1] = t;
        }
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < n && len < cap; i++)
        len += (size_t)snprintf(out + len, cap - len, "%s%d",
                                i == 0           ? (total > 1 ? "ranks " : "rank ")
                                : i == total - 1 ? " and "
                                                 : ", ",
                                ranks[i]);
    if (total > n && len < cap)
        snprintf(out + len, cap - len, " and %d more", total - n);
    return total;
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
        return tc_error_set(TC_ERR_BOOTSTRAP,
                            "bootstrap(pmix): PMIx_Fence_nb over %d ranks "
                            "failed: %s",
                            boot->size, PMIx_Error_string(rc));
    }
    tc_status_t aborted = TC_OK;
    rc = pmix_fence_wait(op, boot->size, deadline_ns, &aborted);
    pmix_fence_op_release(op);
    if (aborted != TC_OK)
        return aborted;
    if (p->fence_pause_ms) {
        tc_log_warn(TC_SUBSYS_RUNTIME, "TC_FAULT_INJECT: pausing %u ms after the fence",
                    p->fence_pause_ms);
        tc_sleep_ns((uint64_t)p->fence_pause_ms * 1000000u);
    }
    /* Name the ranks missing. The server library completes a fence without a
     * participant whose connection it lost (a rank killed inside its
     * creation): tcrun then fails the fence (PMIX_ERR_PROC_ABORTED); under
     * other launchers only the launcher's report of it, when it has come. */
    char missing[160];
    int nmissing = pmix_missing(p, rc != PMIX_SUCCESS, missing, sizeof(missing));
    tc_log_debug(TC_SUBSYS_RUNTIME,
                 "bootstrap(pmix): fence of %d ranks: %s; %lu PMIx_Get calls so far", boot->size,
                 PMIx_Error_string(rc), atomic_load(&pmix_gets));
    if (rc == PMIX_ERR_TIMEOUT)
        return tc_error_set(TC_ERR_TIMEOUT,
                            "bootstrap(pmix): fence of %d ranks did not complete within %d s; "
                            "%s%s",
                            boot->size, timeout, nmissing ? missing : "some rank has not joined",
                            nmissing ? " never joined (no key at the PMIx server) or terminated"
                                     : "");
    if (rc == PMIX_ERR_PROC_ABORTED)
        return tc_error_set(
            TC_ERR_PEER_FAILED, "bootstrap(pmix): the launcher failed the fence of %d ranks: %s%s",
            boot->size, nmissing ? missing : "a rank", " terminated during the creation");
    if (rc != PMIX_SUCCESS)
        return tc_error_set(
            TC_ERR_BOOTSTRAP, "bootstrap(pmix): PMIx_Fence over %d ranks failed (%s); %s%s",
            boot->size, PMIx_Error_string(rc), nmissing ? missing : "no rank is known missing",
            nmissing ? " missing: terminated or never joined" : "");
    if (nmissing)
        return tc_error_set(
            TC_ERR_PEER_FAILED,
            "bootstrap(pmix): the fence of %d ranks completed without %s (terminated "
            "during the creation: the launcher reports it, or its keys are absent)",
            boot->size, missing);
    return TC_OK;
}

static tc_status_t pmix_get(tc_boot_t *boot, int peer, const char *key, void *buf, size_t cap,
                            size_t *len_p, uint64_t deadline_ns)
{
    tc_boot_pmix_t *p = (tc_boot_pmix_t *)boot;
    pmix_value_t *v = NULL;
    int timeout = pmix_timeout_s(deadline_ns);
    pmix_status_t rc = pmix_fetch(p, peer, key, timeout, false, &v);
    if (rc == PMIX_ERR_NOT_FOUND)
        return tc_error_set(TC_ERR_NOT_FOUND,
                            "bootstrap(pmix): rank %d has no key '%s' (it "
                            "left the job, or did not take part in its creation)",
                            peer, key);
    if (rc == PMIX_ERR_TIMEOUT)
        return tc_error_set(TC_ERR_TIMEOUT,
                            "bootstrap(pmix): get of key '%s' of rank %d timed "
                            "out after %d s",
                            key, peer, timeout);
    if (rc != PMIX_SUCCESS)
        return tc_error_set(TC_ERR_BOOTSTRAP,
                            "bootstrap(pmix): PMIx_Get of key '%s' of rank %d "
                            "failed: %s",
                            key, peer, PMIx_Error_string(rc));
    tc_status_t st = TC_OK;
    uint32_t world = pmix_value_world(v);
    if (v->type != PMIX_BYTE_OBJECT || v->data.bo.size < PMIX_WORLD_LEN) {
        st =
            tc_error_set(TC_ERR_PROTOCOL,
                         "bootstrap(pmix): key '%s' of rank %d has PMIx type "
                         "%d and %zu bytes, expected a byte object of at least %d",
                         key, peer, (int)v->type,
                         v->type == PMIX_BYTE_OBJECT ? v->data.bo.size : (size_t)0, PMIX_WORLD_LEN);
    } else if (world < p->world) {
        st = tc_error_set(TC_ERR_NOT_FOUND,
                          "bootstrap(pmix): rank %d has key '%s' only from an earlier world "
                          "(its world #%u; this rank's #%u): it did not put it in this one",
                          peer, key, world, p->world);
    } else if (world > p->world) {
        st = tc_error_set(TC_ERR_MISMATCH,
                          "bootstrap(pmix): rank %d's key '%s' is of its world #%u, this rank "
                          "is in #%u: that rank destroyed this world and created another "
                          "(or some creation failed on one rank only)",
                          peer, key, world, p->world);
    } else if (v->data.bo.size - PMIX_WORLD_LEN > cap) {
        st = tc_error_set(TC_ERR_TRUNCATED,
                          "bootstrap(pmix): key '%s' of rank %d has %zu bytes, "
                          "more than the %zu expected",
                          key, peer, v->data.bo.size - PMIX_WORLD_LEN, cap);
    } else {
        *len_p = v->data.bo.size - PMIX_WORLD_LEN;
        memcpy(buf, v->data.bo.bytes + PMIX_WORLD_LEN, *len_p);
    }
    PMIX_VALUE_RELEASE(v);
    return st;
}

void tc_boot_pmix_fence_pause(tc_boot_t *boot, uint32_t ms)
{
    ((tc_boot_pmix_t *)boot)->fence_pause_ms = ms;
}

static void pmix_destroy(tc_boot_t *boot)
{
    tc_boot_pmix_events_stop();
    tc_boot_pmix_release(); /* PMIx stays initialised for the next world */
    free(boot);
}

static const tc_boot_ops_t pmix_ops = {"pmix",
                                       pmix_put,
                                       pmix_fence,
                                       pmix_get,
                                       pmix_destroy,
                                       tc_boot_pmix_poll_event,
                                       tc_boot_pmix_notify};

/* Rank 0 draws the secret once per process: a later bootstrap of the same job (a new world
 * after a destroy) puts the same value, so no rank can read a stale one. */
static unsigned char pmix_drawn_secret[PMIX_SECRET_LEN];
static pthread_once_t pmix_drawn_once = PTHREAD_ONCE_INIT;

static void pmix_draw_secret(void)
{
    tc_auth_nonce(pmix_drawn_secret); /* 32 bytes of libsodium's randombytes */
}

/*
 * The job secret: TC_JOB_SECRET when set (tcrun sets it; every rank has its own copy), else
 * rank 0 draws one, puts it under a job-scope key, every rank fences, and the others get it.
 * Only processes of this job reach this job's PMIx data. The value is never logged.
 */
static tc_status_t pmix_share_secret(tc_boot_pmix_t *p, uint64_t deadline_ns)
{
    tc_boot_t *b = &p->head;
    size_t len = 0;
    tc_status_t rc = tc_boot_secret_from_env(b, "pmix");
    if (rc != TC_OK || b->secret_len > 0)
        return rc;
    if (b->rank == 0) {
        pthread_once(&pmix_drawn_once, pmix_draw_secret);
        memcpy(b->secret, pmix_drawn_secret, PMIX_SECRET_LEN);
        if ((rc = pmix_put(b, PMIX_SECRET_KEY, b->secret, PMIX_SECRET_LEN)) != TC_OK)
            goto fail;
    }
    if ((rc = pmix_fence(b, deadline_ns)) != TC_OK) {
        tc_error_prefix("bootstrap(pmix): rank %d: sharing rank 0's job secret (TC_JOB_SECRET "
                        "is not set here; set on some ranks only?): ",
                        b->rank);
        goto fail;
    }
    if (b->rank == 0) {
        len = PMIX_SECRET_LEN;
    } else if ((rc = pmix_get(b, 0, PMIX_SECRET_KEY, b->secret, sizeof(b->secret), &len,
                              deadline_ns)) != TC_OK) {
        tc_error_prefix("bootstrap(pmix): rank %d: reading rank 0's job secret: ", b->rank);
        goto fail;
    } else if (len != PMIX_SECRET_LEN) {
        rc = tc_error_set(TC_ERR_PROTOCOL,
                          "bootstrap(pmix): rank %d: rank 0's job secret has %zu bytes, "
                          "expected %d",
                          b->rank, len, PMIX_SECRET_LEN);
        goto fail;
    }
    b->secret_len = len;
    tc_log_debug(TC_SUBSYS_RUNTIME, "bootstrap(pmix): job secret of %zu bytes %s rank 0", len,
                 b->rank == 0 ? "drawn by" : "received from");
    return TC_OK;
fail:
    memset(b->secret, 0, sizeof(b->secret));
    b->secret_len = 0;
    return rc;
}

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
    tc_status_t st = tc_boot_pmix_acquire(&p->self, &p->world);
    if (st != TC_OK) {
        free(p);
        return st;
    }
    /* libpmix's hash store alone appends a value put again under the same name, and a client
     * keeps the first copy of a peer's value it fetched, even when asked to refresh it (measured
     * with 4.2.2): there each world's keys have names of their own. The shared-memory stores
     * (ds21, ds12: tcrun's, mpirun's, srun's) replace them in place. */
    const char *gds = getenv("PMIX_GDS_MODULE");
    p->numbered = !gds || strncmp(gds, "ds", 2) != 0;
    pmix_proc_t job;
    pmix_value_t *v = NULL;
    PMIX_LOAD_PROCID(&job, p->self.nspace, PMIX_RANK_WILDCARD);
    pmix_status_t rc = pmix_get_counted(&job, PMIX_JOB_SIZE, NULL, 0, &v);
    if (rc != PMIX_SUCCESS || v->type != PMIX_UINT32) {
        if (v)
            PMIX_VALUE_RELEASE(v);
        tc_boot_pmix_release();
        free(p);
        return tc_error_set(TC_ERR_BOOTSTRAP,
                            "bootstrap(pmix): cannot read the job size "
                            "(PMIX_JOB_SIZE): %s",
                            PMIx_Error_string(rc));
    }
    p->head.ops = &pmix_ops;
    p->head.size = (int)v->data.uint32;
    p->head.rank = (int)p->self.rank;
    PMIX_VALUE_RELEASE(v);
    v = NULL;
    p->head.local_size = 1;
    if (pmix_get_counted(&job, PMIX_LOCAL_SIZE, NULL, 0, &v) == PMIX_SUCCESS &&
        v->type == PMIX_UINT32)
        p->head.local_size = (int)v->data.uint32;
    if (v)
        PMIX_VALUE_RELEASE(v);
    v = NULL;
    p->head.local_rank = -1;
    if (pmix_get_counted(&p->self, PMIX_LOCAL_RANK, NULL, 0, &v) == PMIX_SUCCESS &&
        v->type == PMIX_UINT16)
        p->head.local_rank = (int)v->data.uint16;
    if (v)
        PMIX_VALUE_RELEASE(v);
    v = NULL;
    detect_launcher(p->head.launcher, sizeof(p->head.launcher));
    tc_boot_pmix_events_start(p->self.nspace);
    tc_boot_fill_common(&p->head);
    st = pmix_share_secret(p, deadline_ns);
    if (st != TC_OK) {
        tc_boot_pmix_events_stop();
        tc_boot_pmix_release();
        free(p);
        return st;
    }
    tc_log_info(TC_SUBSYS_RUNTIME, "bootstrap: pmix (%s) namespace %s rank %d of %d, world #%u",
                p->head.launcher, p->self.nspace, p->head.rank, p->head.size, p->world);
    *boot_p = &p->head;
    return TC_OK;
}
