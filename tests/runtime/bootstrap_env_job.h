/* What the torchrun-environment bootstrap tests share: the job's environment, forked ranks
 * (spawn, reap: every wait bounded) and in-process creations expected to fail. */
#ifndef TC_TESTS_RUNTIME_BOOTSTRAP_ENV_JOB_H
#define TC_TESTS_RUNTIME_BOOTSTRAP_ENV_JOB_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "tcomms/base/status.h"

#define CHILD_TIMEOUT_S 60.0

typedef struct {
    int world;
    int port;
    const char *addr;
    const char *secret; /* NULL: none */
    const char *linger_s;
} job_t;

typedef int (*child_fn)(const job_t *, int);

/* A failed check in a child: say which, with the library's last error, and exit with @p code. */
#define CHILD_CHECK(cond, code, ...)                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "rank %d: check %d failed: ", rank, (code));                           \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, " [last error: %s]\n", tc_last_error());                               \
            return (code);                                                                         \
        }                                                                                          \
    } while (0)

void env_clear(void);
/* The torchrun environment of rank @p rank of job @p j (after env_clear). */
void env_set_job(const job_t *j, int rank);
double since_s(uint64_t t0);
void spawn(const job_t *j, const int *ranks, int n, child_fn fn, int delay_rank0, pid_t *pids);
void reap(pid_t *pids, int n, int *codes, double timeout_s);
/* An in-process tc_boot_create(TC_BOOT_ENV) that must fail with @p want, its message holding
 * @p text1 and @p text2 (NULL: anything). */
void expect_create_fails_ms(uint64_t ms, tc_status_t want, const char *text1, const char *text2);
void expect_create_fails(tc_status_t want, const char *text1, const char *text2);

#endif
