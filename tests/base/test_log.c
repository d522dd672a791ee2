/*
 * Logging: TC_LOG parsing, filtering, the line format, TC_LOG_FILE, lazy init.
 *
 * The log state is process-wide and initialised once, so every case runs in a
 * freshly forked child of this (never logging) parent: the child sets the
 * environment, logs, and exits with 0 or the line of the failed CHECK; the
 * parent then reads the files the child wrote and checks them with cmocka.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <regex.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcomms/base/log.h"

/* ---- running a case in a child ---- */

static int report_fd = -1;

/* In a child: report the failed condition on the saved stderr and exit with its line. */
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            dprintf(report_fd, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__, __LINE__,   \
                    #cond, tc_last_error());                                                       \
            _exit(__LINE__ % 250 + 1);                                                             \
        }                                                                                          \
    } while (0)

static char dir[512];

static void path_in_dir(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", dir, name);
}

static void redirect(int fd, const char *path)
{
    int f = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

    if (f < 0 || dup2(f, fd) < 0)
        _exit(250);
    close(f);
}

/* Fork a child that redirects stdout/stderr to @p name.out / @p name.err and runs @p fn. */
static pid_t start_child(int (*fn)(void), const char *name)
{
    pid_t pid;

    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char out[600], err[600];

        report_fd = dup(STDERR_FILENO);
        alarm(40); /* bounded even if something hangs */
        snprintf(out, sizeof(out), "%s/%s.out", dir, name);
        snprintf(err, sizeof(err), "%s/%s.err", dir, name);
        redirect(STDOUT_FILENO, out);
        redirect(STDERR_FILENO, err);
        unsetenv("TC_LOG");
        unsetenv("TC_LOG_FILE");
        _exit(fn());
    }
    return pid;
}

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Wait at most 45 s for @p pid and assert that it exited with 0. */
static void wait_child_ok(pid_t pid)
{
    uint64_t deadline = now_ms() + 45000;
    int status = 0;

    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        assert_true(r == 0);
        if (now_ms() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            fail_msg("child %d timed out", (int)pid);
        }
        usleep(2000);
    }
    if (!WIFEXITED(status))
        fail_msg("child %d killed by signal %d", (int)pid, WTERMSIG(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static pid_t run_child(int (*fn)(void), const char *name)
{
    pid_t pid = start_child(fn, name);

    wait_child_ok(pid);
    return pid;
}

/* ---- reading what a child wrote ---- */

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    if (f == NULL)
        fail_msg("cannot open %s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static char *read_named(const char *name)
{
    char path[600];

    path_in_dir(path, sizeof(path), name);
    return read_all(path);
}

/* Split @p text into lines in place; every line must end with '\n'. */
static int split_lines(char *text, char **lines, int max)
{
    int n = 0;
    char *p = text;

    while (*p != '\0') {
        char *nl = strchr(p, '\n');
        assert_non_null(nl);
        *nl = '\0';
        assert_true(n < max);
        lines[n++] = p;
        p = nl + 1;
    }
    return n;
}

/*
 * Check one line: "[YYYY-MM-DDTHH:MM:SS.mmmZ] host:pid rank R subsys LEVEL: message",
 * with the time within a few minutes of now; returns the message.
 */
static const char *check_line(const char *line, pid_t pid, const char *rank, const char *subsys,
                              const char *level)
{
    static regex_t re;
    static int compiled;
    char host[256], want[512];
    struct tm tm;
    int ms;
    time_t t;
    size_t wlen;

    if (!compiled) {
        assert_int_equal(regcomp(&re,
                                 "^\\[[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\."
                                 "[0-9]{3}Z\\] ",
                                 REG_EXTENDED | REG_NOSUB),
                         0);
        compiled = 1;
    }
    if (regexec(&re, line, 0, NULL, 0) != 0)
        fail_msg("bad line prefix: %s", line);
    memset(&tm, 0, sizeof(tm));
    assert_int_equal(sscanf(line, "[%4d-%2d-%2dT%2d:%2d:%2d.%3dZ]", &tm.tm_year, &tm.tm_mon,
                            &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms),
                     7);
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    t = timegm(&tm);
    assert_true(llabs((long long)(t - time(NULL))) < 300);
    assert_true(ms >= 0 && ms <= 999);

    assert_int_equal(gethostname(host, sizeof(host)), 0);
    host[sizeof(host) - 1] = '\0';
    snprintf(want, sizeof(want), "%s:%d rank %s %s %s: ", host, (int)pid, rank, subsys, level);
    wlen = strlen(want);
    if (strncmp(line + 27, want, wlen) != 0)
        fail_msg("line \"%s\" does not continue with \"%s\"", line, want);
    return line + 27 + wlen;
}

/* ---- configuration and filtering ---- */

static const tc_log_level_t all_levels[] = {TC_LOG_LEVEL_ERROR, TC_LOG_LEVEL_WARN,
                                            TC_LOG_LEVEL_INFO, TC_LOG_LEVEL_DEBUG,
                                            TC_LOG_LEVEL_TRACE};

/* Whether exactly the levels up to @p max are enabled for @p subsys. */
static int levels_are(tc_log_subsys_t subsys, tc_log_level_t max)
{
    for (int i = 0; i < 5; i++)
        if (tc_log_enabled(all_levels[i], subsys) != (all_levels[i] <= max))
            return 0;
    return 1;
}

static int child_configure(void)
{
    static const struct {
        const char *spec;
        const char *bad;
    } bad[] = {
        {"verbose", "\"verbose\""},
        {"foo=debug", "\"foo\""},
        {"transport=loud", "\"loud\""},
        {"transport=", "\"transport=\""},
        {"=debug", "\"=debug\""},
        {"warn,,api=bogus", "\"bogus\""},
        {"debug;algo=info", "\"debug;algo=info\""},
        {"none,foo=debug", "\"foo\""},
        {"info,transport=debug=1", "\"debug=1\""},
    };

    CHECK(tc_log_init() == TC_OK);
    CHECK(tc_log_init() == TC_OK);
    for (int s = 0; s < TC_SUBSYS_COUNT; s++)
        CHECK(levels_are((tc_log_subsys_t)s, TC_LOG_LEVEL_WARN));

    CHECK(tc_log_configure("info") == TC_OK);
    for (int s = 0; s < TC_SUBSYS_COUNT; s++)
        CHECK(levels_are((tc_log_subsys_t)s, TC_LOG_LEVEL_INFO));

    CHECK(tc_log_configure("warn,transport=debug") == TC_OK);
    CHECK(levels_are(TC_SUBSYS_TRANSPORT, TC_LOG_LEVEL_DEBUG));
    CHECK(levels_are(TC_SUBSYS_ALGO, TC_LOG_LEVEL_WARN));
    CHECK(levels_are(TC_SUBSYS_TOOLS, TC_LOG_LEVEL_WARN));

    CHECK(tc_log_configure(" Error , TOPO = trace ,kernels=none") == TC_OK);
    CHECK(levels_are(TC_SUBSYS_BASE, TC_LOG_LEVEL_ERROR));
    CHECK(levels_are(TC_SUBSYS_TOPO, TC_LOG_LEVEL_TRACE));
    CHECK(levels_are(TC_SUBSYS_KERNELS, TC_LOG_LEVEL_NONE));
    CHECK(levels_are(TC_SUBSYS_TRANSPORT, TC_LOG_LEVEL_ERROR));

    /* subsystem items override what a bare level set before them, in order */
    CHECK(tc_log_configure("base=info,runtime=debug,api=trace,tools=info,algo=error") == TC_OK);
    CHECK(levels_are(TC_SUBSYS_BASE, TC_LOG_LEVEL_INFO));
    CHECK(levels_are(TC_SUBSYS_RUNTIME, TC_LOG_LEVEL_DEBUG));
    CHECK(levels_are(TC_SUBSYS_API, TC_LOG_LEVEL_TRACE));
    CHECK(levels_are(TC_SUBSYS_TOOLS, TC_LOG_LEVEL_INFO));
    CHECK(levels_are(TC_SUBSYS_ALGO, TC_LOG_LEVEL_ERROR));
    CHECK(levels_are(TC_SUBSYS_TOPO, TC_LOG_LEVEL_TRACE));
    CHECK(tc_log_configure("none") == TC_OK);
    for (int s = 0; s < TC_SUBSYS_COUNT; s++)
        CHECK(levels_are((tc_log_subsys_t)s, TC_LOG_LEVEL_NONE));
    CHECK(tc_log_configure("trace") == TC_OK);
    CHECK(tc_log_configure("") == TC_OK);
    for (int s = 0; s < TC_SUBSYS_COUNT; s++)
        CHECK(levels_are((tc_log_subsys_t)s, TC_LOG_LEVEL_TRACE));

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char want[128];
        CHECK(tc_log_configure(bad[i].spec) == TC_ERR_CONFIG);
        snprintf(want, sizeof(want), "TC_LOG=\"%s\"", bad[i].spec);
        CHECK(strstr(tc_last_error(), want) != NULL);
        CHECK(strstr(tc_last_error(), bad[i].bad) != NULL);
        CHECK(strstr(tc_last_error(), "none, error, warn, info, debug, trace") != NULL);
        CHECK(strstr(tc_last_error(),
                     "base, topo, transport, algo, kernels, runtime, api, tools") != NULL);
        /* nothing changed */
        for (int s = 0; s < TC_SUBSYS_COUNT; s++)
            CHECK(levels_are((tc_log_subsys_t)s, TC_LOG_LEVEL_TRACE));
    }
    CHECK(tc_log_configure(NULL) == TC_ERR_INVALID_ARG);

    CHECK(!tc_log_enabled(TC_LOG_LEVEL_NONE, TC_SUBSYS_BASE));
    CHECK(!tc_log_enabled(TC_LOG_LEVEL_ERROR, TC_SUBSYS_COUNT));
    CHECK(!tc_log_enabled(TC_LOG_LEVEL_ERROR, (tc_log_subsys_t)-1));
    CHECK(!tc_log_enabled((tc_log_level_t)99, TC_SUBSYS_BASE));
    CHECK(!tc_log_enabled((tc_log_level_t)-1, TC_SUBSYS_BASE));
    return 0;
}

static void test_configure(void **state)
{
    char *out, *err;

    run_child(child_configure, "configure");
    /* configuring writes nothing, and never to stdout */
    out = read_named("configure.out");
    err = read_named("configure.err");
    assert_string_equal(out, "");
    assert_string_equal(err, "");
    free(out);
    free(err);
}

/* ---- output to a file, with %r and %p ---- */

static int child_file_output(void)
{
    char path[600], big[10000];

    path_in_dir(path, sizeof(path), "out.%r.%p.log");
    setenv("TC_LOG", "warn,transport=debug", 1);
    setenv("TC_LOG_FILE", path, 1);
    /* the rank is set after init and before the first line: the name has it */
    CHECK(tc_log_init() == TC_OK);
    tc_log_set_rank(3);
    tc_log_error(TC_SUBSYS_BASE, "e1 %d", 1);
    tc_log_warn(TC_SUBSYS_ALGO, "w1");
    tc_log_info(TC_SUBSYS_ALGO, "i1 filtered");
    tc_log_debug(TC_SUBSYS_TRANSPORT, "d1 %s", "x");
    tc_log_trace(TC_SUBSYS_TRANSPORT, "t1 filtered");
    tc_log_warn(TC_SUBSYS_TOOLS, "multi\nline\n");
    tc_log_write(TC_LOG_LEVEL_INFO, TC_SUBSYS_API, __FILE__, __LINE__, "direct filtered");
    tc_log_write(TC_LOG_LEVEL_NONE, TC_SUBSYS_API, __FILE__, __LINE__, "none filtered");
    memset(big, 'y', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    tc_log_warn(TC_SUBSYS_RUNTIME, "%s", big);
    errno = ENOENT;
    tc_log_warn(TC_SUBSYS_KERNELS, "errno kept");
    CHECK(errno == ENOENT);
    return 0;
}

/* A line logged before the rank is known must not open a file named for no rank
 * ("r-.log", shared by every rank of the job): it goes to stderr, and the file
 * opens with the rank in its name. */
static int child_file_rank_late(void)
{
    char path[600];

    path_in_dir(path, sizeof(path), "late.%r.log");
    setenv("TC_LOG", "warn", 1);
    setenv("TC_LOG_FILE", path, 1);
    tc_log_warn(TC_SUBSYS_RUNTIME, "before the rank");
    tc_log_set_rank(5);
    tc_log_warn(TC_SUBSYS_RUNTIME, "after the rank");
    return 0;
}

static void test_file_rank_late(void **state)
{
    char path[600], *text, *err;

    run_child(child_file_rank_late, "late");
    path_in_dir(path, sizeof(path), "late.-.log");
    assert_int_equal(access(path, F_OK), -1);
    text = read_named("late.5.log");
    assert_non_null(strstr(text, "after the rank"));
    assert_null(strstr(text, "before the rank"));
    err = read_named("late.err");
    assert_non_null(strstr(err, "before the rank"));
    free(text);
    free(err);
}

static void test_file_output(void **state)
{
    char name[64], *text, *lines[16], *err;
    const char *msg;
    pid_t pid;
    int n;

    pid = run_child(child_file_output, "file");
    snprintf(name, sizeof(name), "out.3.%d.log", (int)pid);
    text = read_named(name);
    n = split_lines(text, lines, 16);
    assert_int_equal(n, 6);
    assert_string_equal(check_line(lines[0], pid, "3", "base", "ERROR"), "e1 1");
    assert_string_equal(check_line(lines[1], pid, "3", "algo", "WARN"), "w1");
    assert_string_equal(check_line(lines[2], pid, "3", "transport", "DEBUG"), "d1 x");
    assert_string_equal(check_line(lines[3], pid, "3", "tools", "WARN"), "multi line");
    msg = check_line(lines[4], pid, "3", "runtime", "WARN");
    assert_true(strlen(lines[4]) < 4096 && strlen(msg) > 3000);
    for (const char *p = msg; *p != '\0'; p++)
        assert_int_equal(*p, 'y');
    assert_string_equal(check_line(lines[5], pid, "3", "kernels", "WARN"), "errno kept");
    free(text);
    err = read_named("file.err");
    assert_string_equal(err, "");
    free(err);
    err = read_named("file.out");
    assert_string_equal(err, "");
    free(err);
}

/* ---- default destination: stderr, rank "-" ---- */

static int child_stderr(void)
{
    setenv("TC_LOG", "info", 1);
    tc_log_info(TC_SUBSYS_API, "to stderr");
    tc_log_debug(TC_SUBSYS_API, "hidden");
    tc_log_set_rank(-5);
    tc_log_warn(TC_SUBSYS_TOPO, "negative rank");
    tc_log_set_rank(12);
    tc_log_error(TC_SUBSYS_TOPO, "rank 12");
    return 0;
}

static void test_stderr_default(void **state)
{
    char *text, *lines[8];
    pid_t pid = run_child(child_stderr, "stderr");
    int n;

    text = read_named("stderr.err");
    n = split_lines(text, lines, 8);
    assert_int_equal(n, 3);
    assert_string_equal(check_line(lines[0], pid, "-", "api", "INFO"), "to stderr");
    assert_string_equal(check_line(lines[1], pid, "-", "topo", "WARN"), "negative rank");
    assert_string_equal(check_line(lines[2], pid, "12", "topo", "ERROR"), "rank 12");
    free(text);
    text = read_named("stderr.out");
    assert_string_equal(text, "");
    free(text);
}

/* ---- malformed TC_LOG ---- */

static int child_lazy_malformed(void)
{
    char path[600];

    path_in_dir(path, sizeof(path), "lazy.log");
    setenv("TC_LOG", "warn,transport=loud", 1);
    setenv("TC_LOG_FILE", path, 1);
    tc_error_set(TC_ERR_TIMEOUT, "keep me");
    tc_log_warn(TC_SUBSYS_BASE, "after"); /* initialises lazily */
    CHECK(strcmp(tc_last_error(), "keep me") == 0);
    CHECK(levels_are(TC_SUBSYS_TRANSPORT, TC_LOG_LEVEL_WARN));
    CHECK(levels_are(TC_SUBSYS_BASE, TC_LOG_LEVEL_WARN));
    for (int i = 0; i < 2; i++) {
        CHECK(tc_log_init() == TC_ERR_CONFIG);
        CHECK(strstr(tc_last_error(), "TC_LOG=\"warn,transport=loud\"") != NULL);
        CHECK(strstr(tc_last_error(), "\"loud\"") != NULL);
    }
    return 0;
}

static void test_lazy_malformed(void **state)
{
    char *text, *lines[8];
    pid_t pid = run_child(child_lazy_malformed, "lazy");
    const char *msg;
    int n;

    text = read_named("lazy.log");
    n = split_lines(text, lines, 8);
    assert_int_equal(n, 2);
    msg = check_line(lines[0], pid, "-", "base", "ERROR");
    assert_non_null(strstr(msg, "TC_LOG=\"warn,transport=loud\""));
    assert_non_null(strstr(msg, "\"loud\""));
    assert_non_null(strstr(msg, "keeping the default level (warn)"));
    assert_string_equal(check_line(lines[1], pid, "-", "base", "WARN"), "after");
    free(text);
    text = read_named("lazy.err");
    assert_string_equal(text, "");
    free(text);
}

static int child_init_malformed(void)
{
    char first[1024];

    setenv("TC_LOG", "bogus", 1);
    CHECK(tc_log_init() == TC_ERR_CONFIG);
    snprintf(first, sizeof(first), "%s", tc_last_error());
    CHECK(strstr(first, "TC_LOG=\"bogus\": unknown level \"bogus\"") != NULL);
    tc_error_clear();
    CHECK(tc_log_init() == TC_ERR_CONFIG);
    CHECK(strcmp(tc_last_error(), first) == 0);
    /* configuring explicitly still works afterwards */
    CHECK(tc_log_configure("info") == TC_OK);
    CHECK(levels_are(TC_SUBSYS_API, TC_LOG_LEVEL_INFO));
    return 0;
}

static void test_init_malformed(void **state)
{
    char *text, *lines[8];
    pid_t pid = run_child(child_init_malformed, "initbad");

    text = read_named("initbad.err");
    assert_int_equal(split_lines(text, lines, 8), 1);
    assert_non_null(strstr(check_line(lines[0], pid, "-", "base", "ERROR"),
                           "keeping the default level (warn)"));
    free(text);
}

/* ---- TC_LOG_FILE that cannot be opened ---- */

static int child_open_fails(void)
{
    char path[600];

    path_in_dir(path, sizeof(path), "no/such/dir/x.log");
    setenv("TC_LOG_FILE", path, 1);
    CHECK(tc_log_init() == TC_ERR_SYSTEM);
    CHECK(strstr(tc_last_error(), "No such file or directory") != NULL);
    CHECK(strstr(tc_last_error(), "no/such/dir/x.log") != NULL);
    tc_log_warn(TC_SUBSYS_BASE, "still logged");
    return 0;
}

static void test_open_fails(void **state)
{
    char *text, *lines[8];
    pid_t pid = run_child(child_open_fails, "openfail");
    const char *msg;

    text = read_named("openfail.err");
    assert_int_equal(split_lines(text, lines, 8), 2);
    msg = check_line(lines[0], pid, "-", "base", "ERROR");
    assert_non_null(strstr(msg, "No such file or directory"));
    assert_non_null(strstr(msg, "logging to stderr"));
    assert_string_equal(check_line(lines[1], pid, "-", "base", "WARN"), "still logged");
    free(text);
}

static int child_deferred_open_fails(void)
{
    char path[600];

    path_in_dir(path, sizeof(path), "no/such/dir/%r.log");
    setenv("TC_LOG_FILE", path, 1);
    CHECK(tc_log_init() == TC_OK); /* opened on the first line, for the rank */
    tc_log_set_rank(1);
    tc_error_set(TC_ERR_ABORTED, "mine");
    tc_log_warn(TC_SUBSYS_BASE, "still logged");
    CHECK(strcmp(tc_last_error(), "mine") == 0);
    return 0;
}

static void test_deferred_open_fails(void **state)
{
    char *text, *lines[8];
    pid_t pid = run_child(child_deferred_open_fails, "deferfail");

    text = read_named("deferfail.err");
    assert_int_equal(split_lines(text, lines, 8), 2);
    assert_non_null(strstr(lines[0], "no/such/dir/1.log"));
    assert_non_null(strstr(lines[0], "No such file or directory"));
    assert_string_equal(check_line(lines[1], pid, "1", "base", "WARN"), "still logged");
    free(text);
}

/* ---- threads and processes writing at once ---- */

#define THREADS 4
#define LINES_PER_THREAD 500

static void *log_thread(void *arg)
{
    int id = (int)(intptr_t)arg;

    for (int i = 0; i < LINES_PER_THREAD; i++) {
        tc_log_info(TC_SUBSYS_RUNTIME, "thread %d line %d", id, i);
        /* a concurrent reconfiguration that keeps runtime at info */
        if (id == 0 && i % 50 == 0)
            tc_log_configure(i % 100 == 0 ? "info,base=debug" : "info");
    }
    return NULL;
}

static int child_threads(void)
{
    char path[600];
    pthread_t t[THREADS];
    struct timespec deadline;

    path_in_dir(path, sizeof(path), "threads.log");
    setenv("TC_LOG", "info", 1);
    setenv("TC_LOG_FILE", path, 1);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, log_thread, (void *)(intptr_t)i) == 0);
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 35;
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_timedjoin_np(t[i], NULL, &deadline) == 0);
    return 0;
}

static void test_threads_and_processes(void **state)
{
    enum { NPROC = 2, TOTAL = NPROC * THREADS * LINES_PER_THREAD };
    static char *lines[TOTAL + 1];
    static unsigned char seen[NPROC][THREADS][LINES_PER_THREAD];
    pid_t pids[NPROC];
    char *text;
    int n;

    for (int p = 0; p < NPROC; p++)
        pids[p] = start_child(child_threads, p == 0 ? "threads0" : "threads1");
    for (int p = 0; p < NPROC; p++)
        wait_child_ok(pids[p]);
    text = read_named("threads.log");
    n = split_lines(text, lines, TOTAL + 1);
    assert_int_equal(n, TOTAL);
    memset(seen, 0, sizeof(seen));
    for (int i = 0; i < n; i++) {
        int pid = 0, p, id = -1, line = -1, end = 0;
        const char *msg;

        /* the pid follows the host and a colon */
        const char *colon = strchr(lines[i] + 27, ':');
        assert_non_null(colon);
        pid = atoi(colon + 1);
        p = pid == (int)pids[0] ? 0 : pid == (int)pids[1] ? 1 : -1;
        assert_true(p >= 0);
        msg = check_line(lines[i], pid, "-", "runtime", "INFO");
        assert_int_equal(sscanf(msg, "thread %d line %d%n", &id, &line, &end), 2);
        assert_int_equal(msg[end], '\0');
        assert_true(id >= 0 && id < THREADS && line >= 0 && line < LINES_PER_THREAD);
        assert_int_equal(seen[p][id][line], 0);
        seen[p][id][line] = 1;
    }
    free(text);
}

static int setup_dir(void **state)
{
    const char *base = getenv("TEST_TMPDIR");

    snprintf(dir, sizeof(dir), "%s/tc_log_test.XXXXXX", base != NULL ? base : "/tmp");
    return mkdtemp(dir) != NULL ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_configure),           cmocka_unit_test(test_file_output),
        cmocka_unit_test(test_file_rank_late),
        cmocka_unit_test(test_stderr_default),      cmocka_unit_test(test_lazy_malformed),
        cmocka_unit_test(test_init_malformed),      cmocka_unit_test(test_open_fails),
        cmocka_unit_test(test_deferred_open_fails), cmocka_unit_test(test_threads_and_processes),
    };
    return cmocka_run_group_tests(tests, setup_dir, NULL);
}
