/* The process's PMIx client, kept across re-creations of the world.
 *
 * A process is one rank of one PMIx namespace for its whole life: a later world cannot join
 * another job, so every PMIx bootstrap of the process shares one PMIx_Init. Finalising at each
 * world's destroy and initialising again cost a leak inside libpmix (about 150 KiB per cycle)
 * and nothing else. PMIx_Finalize runs once, at the process's exit (an atexit handler
 * registered by the first PMIx_Init, never at load; glibc runs it at dlclose too), and only in
 * the process that initialised, with no world alive: Open MPI's mpirun counts a client that
 * exits without finalising as failed. docs/runtime.md, "Re-creating the world (PMIx)". */
#include <pmix.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "bootstrap_impl.h"

static pthread_mutex_t client_mu = PTHREAD_MUTEX_INITIALIZER;
static int client_inited; /* PMIx_Init succeeded, PMIx_Finalize not yet run */
static pid_t client_pid;  /* the process that initialised */
static pmix_proc_t client_self;
static int client_users;       /* live PMIx bootstraps: 0 or 1 */
static uint32_t client_worlds; /* PMIx bootstraps begun by this process */
static int client_atexit;

static void client_at_exit(void)
{
    /* a thread inside tc_boot_pmix_acquire at exit keeps its world's client */
    if (pthread_mutex_trylock(&client_mu) != 0)
        return;
    if (client_inited && client_users == 0 && getpid() == client_pid) {
        client_inited = 0;
        PMIx_Finalize(NULL, 0);
    }
    pthread_mutex_unlock(&client_mu);
}

tc_status_t tc_boot_pmix_acquire(pmix_proc_t *self_p, uint32_t *world_p)
{
    tc_status_t st = TC_OK;
    pthread_mutex_lock(&client_mu);
    if (client_inited && getpid() != client_pid) {
        st = tc_error_set(TC_ERR_BOOTSTRAP,
                          "bootstrap(pmix): this process (pid %d) was forked from pid %d, "
                          "which joined the job as rank %u: a forked child is not a rank of the "
                          "job (its PMIx connection is the parent's); use TC_BOOTSTRAP=self or "
                          "a store",
                          (int)getpid(), (int)client_pid, client_self.rank);
        goto out;
    }
    if (client_users > 0) {
        st = tc_error_set(TC_ERR_INVALID_STATE,
                          "bootstrap(pmix): a world joined through PMIx (rank %u) is alive in "
                          "this process: PMIx makes one rank per process; make further "
                          "communicators from it (tc_comm_dup, tc_comm_split), or destroy it "
                          "first",
                          client_self.rank);
        goto out;
    }
    if (!client_inited) {
        pmix_status_t rc = PMIx_Init(&client_self, NULL, 0);
        if (rc != PMIX_SUCCESS) {
            st = tc_error_set(TC_ERR_BOOTSTRAP,
                              "bootstrap(pmix): PMIx_Init failed: %s (is the launcher's PMIx "
                              "server still running?)",
                              PMIx_Error_string(rc));
            goto out;
        }
        client_inited = 1;
        client_pid = getpid();
        if (!client_atexit && atexit(client_at_exit) == 0)
            client_atexit = 1;
    }
    client_users++;
    *self_p = client_self;
    *world_p = ++client_worlds;
out:
    pthread_mutex_unlock(&client_mu);
    return st;
}

void tc_boot_pmix_release(void)
{
    pthread_mutex_lock(&client_mu);
    client_users--;
    pthread_mutex_unlock(&client_mu);
}
