/* The torchrun-environment bootstrap tests' shared job, children and failure checks
 * (bootstrap_env_job.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tcomms/base/log.h"
#include "tcomms/base/status.h"
#include "tcomms/base/time.h"
#include "tcomms/runtime/bootstrap.h"
#include "tests/runtime/bootstrap_env_job.h"

void env_clear(void)
{
    static const char *const names[] = {"MASTER_ADDR",   "MASTER_PORT",
                                        "RANK",          "WORLD_SIZE",
                                        "LOCAL_RANK",    "LOCAL_WORLD_SIZE",
                                        "TC_JOB_SECRET", "TC_BOOT_LINGER_S",
                                        "TC_STORE_PORT", NULL};
    for (int i = 0; names[i]; i++)
        unsetenv(names[i]);
}

static void env_set_int(const char *name, int v)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%d", v);
    setenv(name, buf, 1);
}

void env_set_job(const job_t *j, int rank)
{
    env_clear();
    setenv("MASTER_ADDR", j->addr ? j->addr : "127.0.0.1", 1);
    env_set_int("MASTER_PORT", j->port);
    env_set_int("RANK", rank);
    env_set_int("WORLD_SIZE", j->world);
    env_set_int("LOCAL_RANK", rank);
    env_set_int("LOCAL_WORLD_SIZE", j->world);
    if (j->secret)
        setenv("TC_JOB_SECRET", j->secret, 1);
    setenv("TC_BOOT_LINGER_S", j->linger_s ? j->linger_s : "10", 1);
}

double since_s(uint64_t t0)
{
    return (double)(tc_time_ns() - t0) * 1e-9;
}

/* Start @p ranks[0..n) (in that order, rank 0 after a pause if @p delay_rank0) with the job's
 * environment; return their pids. */
void spawn(const job_t *j, const int *ranks, int n, child_fn fn, int delay_rank0, pid_t *pids)
{
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            if (ranks[i] == 0 && delay_rank0)
                tc_sleep_ns(200 * 1000000ull); /* the others must retry their connects */
            env_set_job(j, ranks[i]);
            exit(fn(j, ranks[i]));
        }
        pids[i] = pid;
    }
}

/* Wait for every child, at most @p timeout_s; kill what is left. Codes: exit status,
 * 128 + signal, or -1 when it had to be killed. */
void reap(pid_t *pids, int n, int *codes, double timeout_s)
{
    uint64_t deadline = tc_time_ns() + (uint64_t)(timeout_s * 1e9);
    int left = n;
    for (int i = 0; i < n; i++)
        codes[i] = -2;
    while (left > 0 && tc_time_ns() < deadline) {
        for (int i = 0; i < n; i++) {
            int status;
            if (codes[i] != -2 || waitpid(pids[i], &status, WNOHANG) != pids[i])
                continue;
            codes[i] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            left--;
        }
        if (left > 0)
            tc_sleep_ns(10 * 1000000ull);
    }
    for (int i = 0; i < n; i++) {
        if (codes[i] != -2)
            continue;
        kill(pids[i], SIGKILL);
        waitpid(pids[i], NULL, 0);
        codes[i] = -1;
    }
}

void expect_create_fails_ms(uint64_t ms, tc_status_t want, const char *text1, const char *text2)
{
    tc_boot_t *boot = NULL;
    tc_status_t st = tc_boot_create(TC_BOOT_ENV, tc_deadline_after_ms(ms), &boot);
    if (st != want || (text1 && !strstr(tc_last_error(), text1)) ||
        (text2 && !strstr(tc_last_error(), text2)))
        print_error("create gave %s: %s (expected %s with '%s' '%s')\n", tc_status_string(st),
                    tc_last_error(), tc_status_string(want), text1 ? text1 : "",
                    text2 ? text2 : "");
    assert_int_equal(st, want);
    assert_null(boot);
    if (text1)
        assert_non_null(strstr(tc_last_error(), text1));
    if (text2)
        assert_non_null(strstr(tc_last_error(), text2));
}

void expect_create_fails(tc_status_t want, const char *text1, const char *text2)
{
    expect_create_fails_ms(5000, want, text1, text2);
}
