/* Bootstrap selection and the backend-independent entry points. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap_impl.h"
#include "tcomms/base/config.h"
#include "tcomms/base/log.h"

extern char **environ;

/* Bumped by every abort; a creation is aborted once it differs from the value
 * its thread saw at the beginning. */
static _Atomic uint64_t tc_boot_abort_gen;
static _Thread_local int tc_boot_creating;
static _Thread_local uint64_t tc_boot_creation_gen;

void tc_boot_abort_creations(void)
{
    atomic_fetch_add(&tc_boot_abort_gen, 1);
}

void tc_boot_creation_begin(void)
{
    tc_boot_creation_gen = atomic_load(&tc_boot_abort_gen);
    tc_boot_creating = 1;
}

void tc_boot_creation_end(void)
{
    tc_boot_creating = 0;
}

int tc_boot_creation_is_active(void)
{
    return tc_boot_creating;
}

int tc_boot_creation_is_aborted(void)
{
    return tc_boot_creating && atomic_load(&tc_boot_abort_gen) != tc_boot_creation_gen;
}

tc_status_t tc_boot_creation_aborted(const char *what)
{
    if (!tc_boot_creation_is_aborted())
        return TC_OK;
    return tc_error_set(TC_ERR_ABORTED, "bootstrap: creation aborted by tc_comm_create_abort() "
                        "while waiting for %s", what);
}

int tc_boot_pmix_announced(void)
{
    /* A PMIx server announces itself to its clients through the environment.
     * Without it PMIx_Init has no singleton mode and fails, so look first. */
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "PMIX_NAMESPACE=", 15) == 0 || strncmp(*e, "PMIX_SERVER_URI", 15) == 0)
            return 1;
    }
    return 0;
}

void tc_boot_fill_common(tc_boot_t *boot)
{
    if (gethostname(boot->host, sizeof(boot->host)) != 0)
        strcpy(boot->host, "unknown");
    boot->host[sizeof(boot->host) - 1] = '\0';
}

tc_status_t tc_boot_secret_from_env(tc_boot_t *boot, const char *who)
{
    const char *s = getenv("TC_JOB_SECRET");
    size_t len = s ? strlen(s) : 0;
    if (len > TC_BOOT_SECRET_MAX)
        return tc_error_set(TC_ERR_CONFIG,
                            "bootstrap(%s): TC_JOB_SECRET has %zu bytes, more than the %d "
                            "accepted",
                            who, len, TC_BOOT_SECRET_MAX);
    memcpy(boot->secret, s ? s : "", len);
    boot->secret_len = len;
    static atomic_int warned_short;
    if (len > 0 && len < TC_BOOT_SECRET_MIN && !atomic_exchange(&warned_short, 1))
        tc_log_warn(TC_SUBSYS_RUNTIME,
                    "bootstrap(%s): TC_JOB_SECRET has only %zu bytes: anyone who can reach a "
                    "rank's port or the store gets a proof over a nonce of its choosing and can "
                    "try guesses offline. Use at least %d random bytes, e.g. export "
                    "TC_JOB_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n'); "
                    "see docs/security.md",
                    who, len, TC_BOOT_SECRET_MIN);
    return TC_OK;
}

void tc_boot_warn_no_secret(const char *who, const char *what)
{
    static atomic_int warned;
    if (atomic_exchange(&warned, 1))
        return;
    tc_log_warn(TC_SUBSYS_RUNTIME,
                "bootstrap(%s): TC_JOB_SECRET is not set: %s NOT authenticated (they run with a "
                "public key), so any process that can reach them can join as a rank, read and "
                "inject data. Set TC_JOB_SECRET to the same random value for every rank, e.g. "
                "export TC_JOB_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n'); "
                "see docs/security.md",
                who, what);
}

const char *const tc_boot_kind_names[] = {"auto", "pmix", "self", "env", NULL};

tc_status_t tc_boot_kind_from_env(tc_boot_kind_t *kind_p)
{
    int kind;
    tc_status_t st = tc_config_enum("TC_BOOTSTRAP", tc_boot_kind_names, TC_BOOT_AUTO, &kind);
    if (st == TC_OK)
        *kind_p = (tc_boot_kind_t)kind;
    return st;
}

int tc_boot_job_announced(void)
{
    return tc_boot_pmix_announced() || tc_boot_env_announced();
}

tc_status_t tc_boot_create(tc_boot_kind_t kind, uint64_t deadline_ns, tc_boot_t **boot_p)
{
    switch (kind) {
    case TC_BOOT_AUTO:
        if (tc_boot_pmix_announced())
            return tc_boot_pmix_create(deadline_ns, boot_p);
        if (tc_boot_env_announced())
            return tc_boot_env_create(deadline_ns, boot_p);
        tc_log_info(TC_SUBSYS_RUNTIME, "no PMIx server and no MASTER_ADDR in the environment: "
                    "world of one");
        return tc_boot_self_create(boot_p);
    case TC_BOOT_PMIX:
        if (!tc_boot_pmix_announced())
            return tc_error_set(TC_ERR_BOOTSTRAP,
                                "bootstrap: PMIx requested but no PMIx server is announced "
                                "(neither PMIX_NAMESPACE nor PMIX_SERVER_URI* is set); run under "
                                "tcrun, mpirun or srun --mpi=pmix");
        return tc_boot_pmix_create(deadline_ns, boot_p);
    case TC_BOOT_SELF:
        return tc_boot_self_create(boot_p);
    case TC_BOOT_ENV:
        return tc_boot_env_create(deadline_ns, boot_p);
    }
    return tc_error_set(TC_ERR_INVALID_ARG, "bootstrap: unknown kind %d", (int)kind);
}

tc_status_t tc_boot_put(tc_boot_t *boot, const char *key, const void *val, size_t len)
{
    return boot->ops->put(boot, key, val, len);
}

tc_status_t tc_boot_fence(tc_boot_t *boot, uint64_t deadline_ns)
{
    return boot->ops->fence(boot, deadline_ns);
}

tc_status_t tc_boot_get(tc_boot_t *boot, int peer, const char *key, void *buf, size_t cap,
                        size_t *len_p, uint64_t deadline_ns)
{
    if (peer < 0 || peer >= boot->size)
        return tc_error_set(TC_ERR_INVALID_ARG, "bootstrap: get of key '%s' from rank %d of %d",
                            key, peer, boot->size);
    return boot->ops->get(boot, peer, key, buf, cap, len_p, deadline_ns);
}

void tc_boot_destroy(tc_boot_t *boot)
{
    if (boot)
        boot->ops->destroy(boot);
}

int tc_boot_poll_event(tc_boot_t *boot, tc_boot_event_t *ev)
{
    return boot->ops->poll_event ? boot->ops->poll_event(boot, ev) : 0;
}

tc_status_t tc_boot_notify(tc_boot_t *boot, const tc_boot_event_t *ev)
{
    if (!boot->ops->notify)
        return tc_error_set(TC_ERR_UNSUPPORTED, "bootstrap(%s): no event channel to tell the "
                            "other ranks", boot->ops->name);
    return boot->ops->notify(boot, ev);
}
