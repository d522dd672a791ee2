/* Parsing of tcrun's command line and resolution of the program to run. */
#include "tools/tcrun/args.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: tcrun -n N [--timeout SECONDS] [--kill-grace SECONDS] [--keep-going] "
        "[--bind core|none] [-v] [--] prog [args...]\n"
        "  -n N                 number of ranks to start (1..%d)\n"
        "  --timeout SECONDS    kill the whole job after SECONDS (exit status 124);\n"
        "                       default: env TCRUN_TIMEOUT, else no timeout\n"
        "  --kill-grace SECONDS delay between SIGTERM and SIGKILL when stopping ranks "
        "(default %g)\n"
        "  --keep-going         when a rank fails, tell the others (PMIx event) and let them\n"
        "                       go on instead of stopping them; the exit status is the worst\n"
        "  --bind core|none     core: rank r runs on one CPU, the (r mod n)-th of the n CPUs\n"
        "                       tcrun may run on; none (default): wherever the kernel puts it\n"
        "  -v, --verbose        report PMIx server events on stderr\n"
        "Each rank's stdout and stderr lines go to tcrun's, prefixed \"[rank] \"; its stdin is\n"
        "/dev/null. The exit status is the first failing rank's (128+N when signal N ended it),\n"
        "124 on --timeout, 128+N when tcrun got signal N, and 141 (SIGPIPE's) when the reader\n"
        "of tcrun's stdout or stderr closed it (`tcrun ... | head`): the job is then stopped.\n",
        TC_RUN_MAX_RANKS, TC_RUN_DEFAULT_GRACE_S);
}

static int parse_seconds(const char *opt, const char *text, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (errno != 0 || end == text || *end != '\0' || !isfinite(v) || v <= 0.0 || v > 1e7) {
        fprintf(stderr, "tcrun: %s needs a positive number of seconds (at most 1e7), got '%s'\n",
                opt, text);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_nranks(const char *text, int *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0') {
        fprintf(stderr, "tcrun: -n needs a number of ranks, got '%s'\n", text);
        return -1;
    }
    if (v < 1) {
        fprintf(stderr, "tcrun: -n %ld: the number of ranks must be at least 1\n", v);
        return -1;
    }
    if (v > TC_RUN_MAX_RANKS) {
        fprintf(stderr, "tcrun: -n %ld: too many ranks (at most %d on one machine)\n", v,
                TC_RUN_MAX_RANKS);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* Checks that path names an executable regular file; prints why not. */
static int check_executable(const char *prog, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "tcrun: cannot run '%s': %s\n", prog, strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        fprintf(stderr, "tcrun: cannot run '%s': not a regular file\n", prog);
        return -1;
    }
    if (access(path, X_OK) != 0) {
        fprintf(stderr, "tcrun: cannot run '%s': %s\n", prog, strerror(errno));
        return -1;
    }
    return 0;
}

/* Finds prog the way execvp would: as a path if it has a '/', else in $PATH. */
static char *resolve_program(const char *prog)
{
    if (prog[0] == '\0') {
        fprintf(stderr, "tcrun: the program name is empty\n");
        return NULL;
    }
    if (strchr(prog, '/') != NULL) {
        if (check_executable(prog, prog) != 0) {
            return NULL;
        }
        return strdup(prog);
    }
    const char *path = getenv("PATH");
    if (path == NULL || path[0] == '\0') {
        path = "/usr/local/bin:/usr/bin:/bin";
    }
    const char *p = path;
    while (1) {
        const char *colon = strchr(p, ':');
        size_t dlen = colon != NULL ? (size_t)(colon - p) : strlen(p);
        char cand[PATH_MAX];
        int n = snprintf(cand, sizeof(cand), "%.*s%s%s", (int)dlen, p, dlen > 0 ? "/" : "", prog);
        struct stat st;
        if (n > 0 && (size_t)n < sizeof(cand) && stat(cand, &st) == 0 && S_ISREG(st.st_mode) &&
            access(cand, X_OK) == 0) {
            return strdup(cand);
        }
        if (colon == NULL) {
            break;
        }
        p = colon + 1;
    }
    fprintf(stderr, "tcrun: cannot run '%s': not found in PATH\n", prog);
    return NULL;
}

/* Returns the option's value: "--opt=V", "-nV" or the next argument. */
static const char *option_value(int argc, char **argv, int *i, const char *opt, size_t optlen)
{
    const char *a = argv[*i];
    if (a[optlen] == '=') {
        return a + optlen + 1;
    }
    if (a[optlen] != '\0') {
        return a + optlen; /* -n4 */
    }
    if (*i + 1 >= argc) {
        fprintf(stderr, "tcrun: %s needs a value\n", opt);
        return NULL;
    }
    (*i)++;
    return argv[*i];
}

int tc_run_args_parse(int argc, char **argv, tc_run_args_t *out)
{
    tc_run_args_t a = {.nranks = 0, .timeout_s = 0.0, .grace_s = TC_RUN_DEFAULT_GRACE_S};
    int have_timeout = 0;
    int i = 1;
    for (; i < argc; i++) {
        const char *arg = argv[i];
        const char *v;
        if (strcmp(arg, "--") == 0) {
            i++;
            break;
        }
        if (arg[0] != '-') {
            break;
        }
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            usage(stdout);
            return 1;
        } else if (strcmp(arg, "-v") == 0 || strcmp(arg, "--verbose") == 0) {
            a.verbose = 1;
        } else if (strcmp(arg, "--keep-going") == 0) {
            a.keep_going = 1;
        } else if (strncmp(arg, "--bind", 6) == 0 && (arg[6] == '\0' || arg[6] == '=')) {
            if ((v = option_value(argc, argv, &i, "--bind", 6)) == NULL) {
                return 2;
            }
            if (strcmp(v, "core") != 0 && strcmp(v, "none") != 0) {
                fprintf(stderr, "tcrun: --bind takes 'core' or 'none', got '%s'\n", v);
                return 2;
            }
            a.bind_core = strcmp(v, "core") == 0;
        } else if (strncmp(arg, "-n", 2) == 0 &&
                   (arg[2] == '\0' || arg[2] == '=' || (arg[2] >= '0' && arg[2] <= '9'))) {
            if ((v = option_value(argc, argv, &i, "-n", 2)) == NULL ||
                parse_nranks(v, &a.nranks) != 0) {
                return 2;
            }
        } else if (strncmp(arg, "--np", 4) == 0 && (arg[4] == '\0' || arg[4] == '=')) {
            if ((v = option_value(argc, argv, &i, "--np", 4)) == NULL ||
                parse_nranks(v, &a.nranks) != 0) {
                return 2;
            }
        } else if (strncmp(arg, "--timeout", 9) == 0 && (arg[9] == '\0' || arg[9] == '=')) {
            if ((v = option_value(argc, argv, &i, "--timeout", 9)) == NULL ||
                parse_seconds("--timeout", v, &a.timeout_s) != 0) {
                return 2;
            }
            have_timeout = 1;
        } else if (strncmp(arg, "--kill-grace", 12) == 0 && (arg[12] == '\0' || arg[12] == '=')) {
            if ((v = option_value(argc, argv, &i, "--kill-grace", 12)) == NULL ||
                parse_seconds("--kill-grace", v, &a.grace_s) != 0) {
                return 2;
            }
        } else {
            fprintf(stderr, "tcrun: unknown option '%s'\n", arg);
            usage(stderr);
            return 2;
        }
    }
    if (a.nranks == 0) {
        fprintf(stderr, "tcrun: missing -n N (the number of ranks)\n");
        usage(stderr);
        return 2;
    }
    if (i >= argc) {
        fprintf(stderr, "tcrun: missing the program to run\n");
        usage(stderr);
        return 2;
    }
    if (!have_timeout) {
        const char *env = getenv("TCRUN_TIMEOUT");
        if (env != NULL && env[0] != '\0' &&
            parse_seconds("TCRUN_TIMEOUT", env, &a.timeout_s) != 0) {
            return 2;
        }
    }
    a.exe_path = resolve_program(argv[i]);
    if (a.exe_path == NULL) {
        return 2;
    }
    a.argv = &argv[i];
    *out = a;
    return 0;
}

void tc_run_args_free(tc_run_args_t *args)
{
    free(args->exe_path);
    args->exe_path = NULL;
}
