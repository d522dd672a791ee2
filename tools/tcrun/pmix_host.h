/* The embedded PMIx server of tcrun: one namespace whose ranks all run on this machine. */
#ifndef TCRUN_PMIX_HOST_H
#define TCRUN_PMIX_HOST_H

#include <stddef.h>
#include <sys/types.h>

/* A PMIx_Abort call reported by a rank. */
typedef struct tc_run_abort {
    int rank;
    int status;
    char msg[512];
} tc_run_abort_t;

/* Creates the private temp dir, starts the PMIx server and registers the namespace of nranks
 * local ranks. *event_fd becomes readable when a rank called PMIx_Abort. Returns 0, or -1 after
 * printing why on stderr. */
int tc_run_pmix_start(int nranks, int verbose, int *event_fd);

/* Registers rank as a client and adds what it needs to find the server to *env (a malloc'd,
 * NULL-terminated array of malloc'd strings, which PMIx may grow). Returns 0 or -1. */
int tc_run_pmix_prepare_rank(int rank, char ***env);

/* Takes the first PMIx_Abort report not yet taken; returns 1 if there was one. Also clears the
 * event fd. */
int tc_run_pmix_take_abort(tc_run_abort_t *out);

/* Tells the job's ranks (through the PMIx event system) that rank ended abnormally with the
 * given exit code (128+signo for a signal). */
void tc_run_pmix_notify_terminated(int rank, int code);

/* Records rank's pid: a fence that completes after that process is gone fails. */
void tc_run_pmix_rank_started(int rank, pid_t pid);

/* Deregisters the namespace, finalizes the server and removes the temp dir. Returns 1 when the
 * server did not shut down within its bound (said on stderr): its thread is stuck in the library,
 * so tcrun must leave with _exit, not through exit's handlers. */
int tc_run_pmix_stop(void);

#endif
