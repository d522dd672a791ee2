/*
 * Logging: per-subsystem levels from TC_LOG, lines to stderr or TC_LOG_FILE.
 *
 * Levels live in relaxed atomics so tc_log_enabled() is one load after the
 * one-time initialisation. Each line is formatted into a stack buffer and
 * written with a single write(), so lines of threads and processes sharing
 * the destination do not interleave.
 */
#include "tcomms/base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define TC_LOG_LINE_MAX 4096
#define TC_LOG_PATH_MAX 4096

static const char *const tc_log_level_names[] = {"none", "error", "warn", "info", "debug", "trace"};
static const char *const tc_log_level_tags[] = {"NONE", "ERROR", "WARN", "INFO", "DEBUG", "TRACE"};
static const char *const tc_log_subsys_names[TC_SUBSYS_COUNT] = {
    "base", "topo", "transport", "algo", "kernels", "runtime", "api", "tools"};

#define TC_LOG_ACCEPTED                                                                            \
    "accepted: levels none, error, warn, info, debug, trace; items LEVEL or SUBSYSTEM=LEVEL "      \
    "with subsystems base, topo, transport, algo, kernels, runtime, api, tools"

/* Accessed only through __atomic builtins (relaxed): a level change need not
 * be seen at once, only without a data race. */
static int tc_log_levels[TC_SUBSYS_COUNT] = {
    TC_LOG_LEVEL_WARN, TC_LOG_LEVEL_WARN, TC_LOG_LEVEL_WARN, TC_LOG_LEVEL_WARN,
    TC_LOG_LEVEL_WARN, TC_LOG_LEVEL_WARN, TC_LOG_LEVEL_WARN, TC_LOG_LEVEL_WARN};
static int tc_log_rank = -1;
static int tc_log_fd = STDERR_FILENO;

/* Written once inside pthread_once, read-only afterwards. */
static pthread_once_t tc_log_once = PTHREAD_ONCE_INIT;
static tc_status_t tc_log_init_status = TC_OK;
static char tc_log_init_detail[1024];
static char tc_log_host[256] = "unknown";

/* A TC_LOG_FILE containing %r is opened on the first write after the rank is
 * known, so that it is in the name; lines before that go to stderr (otherwise
 * every rank would share one file named for no rank). */
static pthread_mutex_t tc_log_open_lock = PTHREAD_MUTEX_INITIALIZER;
static int tc_log_open_pending;
static char tc_log_path_template[TC_LOG_PATH_MAX];

static void tc_log_emit(tc_log_level_t level, tc_log_subsys_t subsys, const char *fmt, va_list ap);

static void tc_log_emit_f(tc_log_level_t level, tc_log_subsys_t subsys, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void tc_log_emit_f(tc_log_level_t level, tc_log_subsys_t subsys, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    tc_log_emit(level, subsys, fmt, ap);
    va_end(ap);
}

static int tc_log_level_lookup(const char *s, size_t len)
{
    for (int i = 0; i <= TC_LOG_LEVEL_TRACE; i++)
        if (strlen(tc_log_level_names[i]) == len && strncasecmp(s, tc_log_level_names[i], len) == 0)
            return i;
    return -1;
}

static int tc_log_subsys_lookup(const char *s, size_t len)
{
    for (int i = 0; i < TC_SUBSYS_COUNT; i++)
        if (strlen(tc_log_subsys_names[i]) == len &&
            strncasecmp(s, tc_log_subsys_names[i], len) == 0)
            return i;
    return -1;
}

static int tc_log_is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Parse @p spec into @p levels (which holds the current levels on entry). */
static tc_status_t tc_log_parse_spec(const char *spec, int *levels)
{
    const char *p = spec;

    for (;;) {
        const char *end = strchr(p, ',');
        const char *s = p, *e = end != NULL ? end : p + strlen(p);
        const char *eq;

        while (s < e && tc_log_is_space(*s))
            s++;
        while (e > s && tc_log_is_space(e[-1]))
            e--;
        if (s < e) {
            eq = memchr(s, '=', (size_t)(e - s));
            if (eq == NULL) {
                int lv = tc_log_level_lookup(s, (size_t)(e - s));
                if (lv < 0)
                    return tc_error_set(TC_ERR_CONFIG,
                                        "TC_LOG=\"%s\": unknown level \"%.*s\" (" TC_LOG_ACCEPTED
                                        ")",
                                        spec, (int)(e - s), s);
                for (int i = 0; i < TC_SUBSYS_COUNT; i++)
                    levels[i] = lv;
            } else {
                const char *ks = s, *ke = eq, *vs = eq + 1, *ve = e;
                int sub, lv;

                while (ke > ks && tc_log_is_space(ke[-1]))
                    ke--;
                while (vs < ve && tc_log_is_space(*vs))
                    vs++;
                sub = tc_log_subsys_lookup(ks, (size_t)(ke - ks));
                if (sub < 0)
                    return tc_error_set(TC_ERR_CONFIG,
                                        "TC_LOG=\"%s\": unknown subsystem \"%.*s\" in item "
                                        "\"%.*s\" (" TC_LOG_ACCEPTED ")",
                                        spec, (int)(ke - ks), ks, (int)(e - s), s);
                lv = tc_log_level_lookup(vs, (size_t)(ve - vs));
                if (lv < 0)
                    return tc_error_set(TC_ERR_CONFIG,
                                        "TC_LOG=\"%s\": unknown level \"%.*s\" in item \"%.*s\" "
                                        "(" TC_LOG_ACCEPTED ")",
                                        spec, (int)(ve - vs), vs, (int)(e - s), s);
                levels[sub] = lv;
            }
        }
        if (end == NULL)
            return TC_OK;
        p = end + 1;
    }
}

static void tc_log_store_levels(const int *levels)
{
    for (int i = 0; i < TC_SUBSYS_COUNT; i++)
        __atomic_store_n(&tc_log_levels[i], levels[i], __ATOMIC_RELAXED);
}

/* TC_LOG_FILE with %r (rank), %p (pid) and %% expanded; false if too long. */
static int tc_log_expand_path(const char *tmpl, char *out, size_t len)
{
    size_t o = 0;
    int rank = __atomic_load_n(&tc_log_rank, __ATOMIC_RELAXED);

    for (const char *t = tmpl; *t != '\0'; t++) {
        char piece[32];
        const char *add = piece;
        size_t n;

        if (t[0] == '%' && t[1] == 'r') {
            if (rank >= 0)
                snprintf(piece, sizeof(piece), "%d", rank);
            else
                snprintf(piece, sizeof(piece), "-");
            t++;
        } else if (t[0] == '%' && t[1] == 'p') {
            snprintf(piece, sizeof(piece), "%ld", (long)getpid());
            t++;
        } else if (t[0] == '%' && t[1] == '%') {
            snprintf(piece, sizeof(piece), "%%");
            t++;
        } else {
            piece[0] = *t;
            piece[1] = '\0';
        }
        n = strlen(add);
        if (o + n >= len)
            return 0;
        memcpy(out + o, add, n);
        o += n;
    }
    out[o] = '\0';
    return 1;
}

/* Open the log file; on failure the detail names the path and errno text. */
static tc_status_t tc_log_open(const char *tmpl)
{
    char path[TC_LOG_PATH_MAX];
    int fd;

    if (!tc_log_expand_path(tmpl, path, sizeof(path)))
        return tc_error_set(TC_ERR_CONFIG, "TC_LOG_FILE=\"%s\": the path is too long", tmpl);
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return tc_error_set(TC_ERR_SYSTEM, "TC_LOG_FILE=\"%s\": open(\"%s\") failed: %s", tmpl,
                            path, strerror(errno));
    __atomic_store_n(&tc_log_fd, fd, __ATOMIC_RELEASE);
    return TC_OK;
}

static void tc_log_do_init(void)
{
    int levels[TC_SUBSYS_COUNT];
    const char *spec = getenv("TC_LOG");
    const char *file = getenv("TC_LOG_FILE");
    tc_status_t spec_st = TC_OK, file_st = TC_OK;
    char spec_detail[sizeof(tc_log_init_detail)] = "";
    char caller_detail[1024];

    /* Lazy initialisation must not clobber the error detail of the caller. */
    snprintf(caller_detail, sizeof(caller_detail), "%s", tc_last_error());
    if (gethostname(tc_log_host, sizeof(tc_log_host)) != 0)
        snprintf(tc_log_host, sizeof(tc_log_host), "unknown");
    tc_log_host[sizeof(tc_log_host) - 1] = '\0';

    if (spec != NULL) {
        for (int i = 0; i < TC_SUBSYS_COUNT; i++)
            levels[i] = TC_LOG_LEVEL_WARN;
        spec_st = tc_log_parse_spec(spec, levels);
        if (spec_st == TC_OK)
            tc_log_store_levels(levels);
        else
            snprintf(spec_detail, sizeof(spec_detail), "%s", tc_last_error());
    }

    if (file != NULL && file[0] != '\0') {
        if (strlen(file) >= sizeof(tc_log_path_template)) {
            file_st =
                tc_error_set(TC_ERR_CONFIG, "TC_LOG_FILE=\"%.64s...\": the path is too long", file);
        } else if (strstr(file, "%r") != NULL) {
            snprintf(tc_log_path_template, sizeof(tc_log_path_template), "%s", file);
            __atomic_store_n(&tc_log_open_pending, 1, __ATOMIC_RELEASE);
        } else {
            file_st = tc_log_open(file);
        }
        if (file_st != TC_OK)
            tc_log_emit_f(TC_LOG_LEVEL_ERROR, TC_SUBSYS_BASE, "%s; logging to stderr",
                          tc_last_error());
    }

    if (spec_st != TC_OK) {
        tc_log_emit_f(TC_LOG_LEVEL_ERROR, TC_SUBSYS_BASE, "%s; keeping the default level (warn)",
                      spec_detail);
        tc_log_init_status = spec_st;
        snprintf(tc_log_init_detail, sizeof(tc_log_init_detail), "%s", spec_detail);
    } else if (file_st != TC_OK) {
        tc_log_init_status = file_st;
        snprintf(tc_log_init_detail, sizeof(tc_log_init_detail), "%s", tc_last_error());
    }
    tc_error_set(TC_OK, "%s", caller_detail);
}

static void tc_log_ensure_init(void)
{
    pthread_once(&tc_log_once, tc_log_do_init);
}

tc_status_t tc_log_init(void)
{
    tc_log_ensure_init();
    if (tc_log_init_status != TC_OK)
        return tc_error_set(tc_log_init_status, "%s", tc_log_init_detail);
    return TC_OK;
}

tc_status_t tc_log_check_env(void)
{
    int levels[TC_SUBSYS_COUNT];
    const char *spec = getenv("TC_LOG"), *file = getenv("TC_LOG_FILE");
    if (spec != NULL) {
        tc_status_t st = tc_log_parse_spec(spec, levels);
        if (st != TC_OK)
            return st;
    }
    if (file != NULL && strlen(file) >= sizeof(tc_log_path_template))
        return tc_error_set(TC_ERR_CONFIG, "TC_LOG_FILE=\"%.64s...\": the path is too long (at "
                            "most %zu characters)", file, sizeof(tc_log_path_template) - 1);
    return TC_OK;
}

tc_status_t tc_log_configure(const char *spec)
{
    int levels[TC_SUBSYS_COUNT];
    tc_status_t st;

    if (spec == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_log_configure: NULL spec");
    /* Initialise first, so that a later lazy init cannot override this. */
    tc_log_ensure_init();
    for (int i = 0; i < TC_SUBSYS_COUNT; i++)
        levels[i] = __atomic_load_n(&tc_log_levels[i], __ATOMIC_RELAXED);
    st = tc_log_parse_spec(spec, levels);
    if (st != TC_OK)
        return st;
    tc_log_store_levels(levels);
    return TC_OK;
}

void tc_log_set_rank(int rank)
{
    tc_log_ensure_init();
    __atomic_store_n(&tc_log_rank, rank < 0 ? -1 : rank, __ATOMIC_RELAXED);
}

bool tc_log_enabled(tc_log_level_t level, tc_log_subsys_t subsys)
{
    if ((unsigned)subsys >= TC_SUBSYS_COUNT || level <= TC_LOG_LEVEL_NONE ||
        level > TC_LOG_LEVEL_TRACE)
        return false;
    tc_log_ensure_init();
    return (int)level <= __atomic_load_n(&tc_log_levels[subsys], __ATOMIC_RELAXED);
}

/* The destination, opening a deferred TC_LOG_FILE on first use. */
static int tc_log_dest_fd(void)
{
    if (__atomic_load_n(&tc_log_open_pending, __ATOMIC_ACQUIRE)) {
        if (__atomic_load_n(&tc_log_rank, __ATOMIC_RELAXED) < 0)
            return STDERR_FILENO;
        pthread_mutex_lock(&tc_log_open_lock);
        if (__atomic_load_n(&tc_log_open_pending, __ATOMIC_RELAXED)) {
            char saved[1024];
            tc_status_t st;

            /* Opening must not clobber the error detail of the thread that logs. */
            snprintf(saved, sizeof(saved), "%s", tc_last_error());
            st = tc_log_open(tc_log_path_template);
            __atomic_store_n(&tc_log_open_pending, 0, __ATOMIC_RELEASE);
            if (st != TC_OK) {
                char line[1200];
                int n = snprintf(line, sizeof(line), "tcomms: %s; logging to stderr\n",
                                 tc_last_error());
                if (n > 0 && write(STDERR_FILENO, line, (size_t)n) < 0) {
                    /* nowhere left to report it */
                }
            }
            tc_error_set(TC_OK, "%s", saved);
        }
        pthread_mutex_unlock(&tc_log_open_lock);
    }
    return __atomic_load_n(&tc_log_fd, __ATOMIC_ACQUIRE);
}

static void tc_log_emit(tc_log_level_t level, tc_log_subsys_t subsys, const char *fmt, va_list ap)
{
    char line[TC_LOG_LINE_MAX];
    struct timespec ts;
    struct tm tm;
    char rank[16];
    size_t len, off = 0;
    int n, fd, r;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    r = __atomic_load_n(&tc_log_rank, __ATOMIC_RELAXED);
    if (r >= 0)
        snprintf(rank, sizeof(rank), "%d", r);
    else
        snprintf(rank, sizeof(rank), "-");
    n = snprintf(line, sizeof(line),
                 "[%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ] %s:%ld rank %s %s %s: ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
                 tc_log_host, (long)getpid(), rank, tc_log_subsys_names[subsys],
                 tc_log_level_tags[level]);
    if (n < 0)
        return;
    len = (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
    n = vsnprintf(line + len, sizeof(line) - len, fmt, ap);
    if (n > 0)
        len += (size_t)n < sizeof(line) - len ? (size_t)n : sizeof(line) - len - 1;
    /* One line per message: embedded newlines would break the format. */
    while (len > 0 && line[len - 1] == '\n')
        len--;
    for (size_t i = 0; i < len; i++)
        if (line[i] == '\n' || line[i] == '\r')
            line[i] = ' ';
    if (len >= sizeof(line) - 1)
        len = sizeof(line) - 2;
    line[len++] = '\n';

    fd = tc_log_dest_fd();
    while (off < len) {
        ssize_t w = write(fd, line + off, len - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        off += (size_t)w;
    }
}

void tc_log_write(tc_log_level_t level, tc_log_subsys_t subsys, const char *file, int line,
                  const char *fmt, ...)
{
    va_list ap;
    int saved_errno = errno;

    if (!tc_log_enabled(level, subsys))
        return;
    va_start(ap, fmt);
    tc_log_emit(level, subsys, fmt, ap);
    va_end(ap);
    errno = saved_errno;
}
