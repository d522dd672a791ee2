/* Internal: the bootstrap backends. */
#ifndef TC_RUNTIME_BOOTSTRAP_IMPL_H
#define TC_RUNTIME_BOOTSTRAP_IMPL_H

#include "tcomms/runtime/bootstrap.h"

TC_MUST_USE tc_status_t tc_boot_pmix_create(uint64_t deadline_ns, tc_boot_t **boot_p);
TC_MUST_USE tc_status_t tc_boot_self_create(tc_boot_t **boot_p);
TC_MUST_USE tc_status_t tc_boot_env_create(uint64_t deadline_ns, tc_boot_t **boot_p);
/* MASTER_ADDR is set: the torchrun environment describes the job. */
int tc_boot_env_announced(void);
int tc_boot_pmix_announced(void);
void tc_boot_fill_common(tc_boot_t *boot);
/* boot->secret := TC_JOB_SECRET (none when unset or empty); TC_ERR_CONFIG naming @p who
 * when it is longer than TC_BOOT_SECRET_MAX; a warning, once per process, when it is shorter
 * than TC_BOOT_SECRET_MIN. */
TC_MUST_USE tc_status_t tc_boot_secret_from_env(tc_boot_t *boot, const char *who);
/* A secret shorter than this can be guessed offline: anyone who reaches a rank's port or the
 * store gets a MAC over a nonce of its choosing before proving anything. */
#define TC_BOOT_SECRET_MIN 16
/* Once per process: the warning that TC_JOB_SECRET is not set; @p what: what runs without
 * authentication ("... are"). */
void tc_boot_warn_no_secret(const char *who, const char *what);

/* The process's PMIx client (bootstrap_pmix_client.c): PMIx_Init on first use, kept for the
 * next world (finalised at exit); *world_p := how many PMIx bootstraps this process has begun,
 * this one included. TC_ERR_INVALID_STATE while another PMIx world is alive, TC_ERR_BOOTSTRAP in
 * a child forked after the first. Each success is paired with tc_boot_pmix_release. */
struct pmix_proc;
TC_MUST_USE tc_status_t tc_boot_pmix_acquire(struct pmix_proc *self_p, uint32_t *world_p);
void tc_boot_pmix_release(void);

/* PMIx events (bootstrap_pmix_events.c) */
void tc_boot_pmix_events_start(const char *nspace);
void tc_boot_pmix_events_stop(void);
int tc_boot_pmix_poll_event(tc_boot_t *boot, tc_boot_event_t *ev);
/* Ranks the launcher has reported terminated since events_start (the first
 * @p cap of them into @p ranks); returns how many, without consuming events. */
int tc_boot_pmix_terminated(int *ranks, int cap);
TC_MUST_USE tc_status_t tc_boot_pmix_notify(tc_boot_t *boot, const tc_boot_event_t *ev);
/* TC_FAULT_INJECT's fence point: each fence of @p boot (a PMIx bootstrap) that completes
 * waits @p ms before it looks for ranks missing from it (a slow rank, made reliably). */
void tc_boot_pmix_fence_pause(tc_boot_t *boot, uint32_t ms);

#endif
