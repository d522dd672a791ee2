/* tcrun: starts N ranks of a program on this machine as clients of an embedded PMIx server,
 * forwards their output with a rank prefix, and ends the job as a whole: when one rank fails,
 * calls PMIx_Abort, the timeout expires or tcrun is signalled, the others are stopped (SIGTERM,
 * then SIGKILL after the grace period) and tcrun exits with the job's status.
 *
 * Exit status: 0 if every rank exited 0; else the status of the rank(s) that failed first
 * (128+signo for a signal; the ranks tcrun then stopped do not count); the PMIx_Abort status;
 * 124 on timeout; 128+signo when tcrun itself was interrupted; 2 for bad usage. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tools/tcrun/args.h"
#include "tools/tcrun/output.h"
#include "tools/tcrun/pmix_host.h"

extern char **environ;

/* How long tcrun still waits for ranks that survive SIGKILL (uninterruptible sleep). */
#define TC_RUN_GIVE_UP_S 5.0

typedef struct rank {
    pid_t pid;
    int alive;
    tc_run_stream_t out;
    tc_run_stream_t err;
} rank_t;

static struct job {
    tc_run_args_t args;
    rank_t *ranks;
    int nstarted;
    int nalive;
    int stopping;      /* the job is being ended; later exits do not count */
    int killed;        /* SIGKILL sent */
    int stop_sig;      /* the signal that started the stop (SIGTERM or a forwarded one) */
    int exit_code;     /* the job's status so far */
    double deadline;   /* job timeout; 0: none */
    double kill_at;    /* when SIGKILL follows SIGTERM */
    double give_up_at; /* when to stop waiting after SIGKILL */
    int sigfd;
    int evfd;
    sigset_t orig_mask;
    int *cpus; /* --bind core: the CPUs tcrun may run on, in order */
    int ncpus;
    pid_t self; /* tcrun's pid, for the ranks' check that it still lives */
} J;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Signals every rank's process group (each rank leads its own, so its children get it too):
 * the live ranks', and the groups of ranks that ended, whose children may live on (a rank that
 * exited left its children behind after the job). */
static void signal_ranks(int sig)
{
    for (int r = 0; r < J.nstarted; r++) {
        if (kill(-J.ranks[r].pid, sig) != 0 && J.ranks[r].alive) {
            kill(J.ranks[r].pid, sig);
        }
    }
}

/* Starts ending the job with the given status, sending sig (SIGTERM or a forwarded signal). */
static void begin_stop(int code, int sig)
{
    if (J.stopping) {
        return;
    }
    J.stopping = 1;
    J.exit_code = code;
    J.stop_sig = sig;
    if (J.nalive > 0) {
        char which[96] = "";
        size_t len = 0;
        for (int r = 0, shown = 0; r < J.nstarted && len < sizeof(which); r++) {
            if (!J.ranks[r].alive)
                continue;
            len +=
                (size_t)snprintf(which + len, sizeof(which) - len, "%s%d", shown ? ", " : ": ", r);
            if (++shown == 8 && J.nalive > 8) {
                len += (size_t)snprintf(which + len, sizeof(which) - len, ", ...");
                break;
            }
        }
        fprintf(stderr, "tcrun: stopping %d remaining rank%s%s (SIG%s, then SIGKILL after %g s)\n",
                J.nalive, J.nalive == 1 ? "" : "s", which, sigabbrev_np(sig), J.args.grace_s);
    }
    signal_ranks(sig);
    J.kill_at = now_s() + J.args.grace_s;
}

static int code_of(int wstatus)
{
    if (WIFEXITED(wstatus)) {
        return WEXITSTATUS(wstatus);
    }
    if (WIFSIGNALED(wstatus)) {
        return 128 + WTERMSIG(wstatus);
    }
    return 1;
}

static void report_exit(int r, int wstatus)
{
    if (WIFSIGNALED(wstatus)) {
        int sig = WTERMSIG(wstatus);
        fprintf(stderr, "tcrun: rank %d (pid %ld) was killed by signal %d (%s)\n", r,
                (long)J.ranks[r].pid, sig, strsignal(sig));
    } else {
        fprintf(stderr, "tcrun: rank %d (pid %ld) exited with status %d\n", r, (long)J.ranks[r].pid,
                code_of(wstatus));
    }
}

/* Reaps every rank that ended. The ranks that fail in one batch before the job is being
 * stopped all count: the job's status is the worst of them. */
static void reap(void)
{
    int was_stopping = J.stopping;
    int worst = 0;
    for (int r = 0; r < J.nstarted; r++) {
        if (!J.ranks[r].alive) {
            continue;
        }
        int ws;
        pid_t p = waitpid(J.ranks[r].pid, &ws, WNOHANG);
        if (p == 0 || (p < 0 && errno == EINTR)) {
            continue;
        }
        J.ranks[r].alive = 0;
        J.nalive--;
        if (p < 0) {
            fprintf(stderr, "tcrun: waitpid(rank %d, pid %ld) failed: %s\n", r,
                    (long)J.ranks[r].pid, strerror(errno));
            ws = 1 << 8; /* counts as exit status 1 */
        }
        /* Forward what the rank wrote before it ended, ahead of any message about it. */
        tc_run_stream_pump(&J.ranks[r].out, 1);
        tc_run_stream_pump(&J.ranks[r].err, 1);
        int code = code_of(ws);
        if (!was_stopping && code != 0) {
            report_exit(r, ws);
            tc_run_pmix_notify_terminated(r, code);
            if (code > worst) {
                worst = code;
            }
        }
    }
    if (worst != 0 && J.args.keep_going) {
        /* the others go on (fault-tolerant jobs); the job's status stays the worst */
        if (worst > J.exit_code)
            J.exit_code = worst;
    } else if (worst != 0) {
        begin_stop(worst, SIGTERM);
    }
}

static void handle_abort(void)
{
    tc_run_abort_t ab;
    if (!tc_run_pmix_take_abort(&ab)) {
        return;
    }
    long pid = ab.rank >= 0 && ab.rank < J.nstarted ? (long)J.ranks[ab.rank].pid : -1;
    int code = ab.status > 0 && ab.status < 256 ? ab.status : 1;
    fprintf(stderr, "tcrun: rank %d (pid %ld) called PMIx_Abort with status %d: %s\n", ab.rank, pid,
            ab.status, ab.msg);
    if (J.stopping) {
        return;
    }
    begin_stop(code, SIGTERM);
}

static void handle_signals(int *sigchld)
{
    struct signalfd_siginfo si;
    while (read(J.sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD) {
            *sigchld = 1;
            continue;
        }
        if (!J.stopping) {
            fprintf(stderr, "tcrun: received SIG%s; forwarding it to the ranks\n",
                    sigabbrev_np(sig));
            begin_stop(128 + sig, sig);
        } else if (!J.killed) {
            fprintf(stderr, "tcrun: received SIG%s again; killing the ranks\n", sigabbrev_np(sig));
            signal_ranks(SIGKILL);
            J.killed = 1;
            J.give_up_at = now_s() + TC_RUN_GIVE_UP_S;
        }
    }
}

/* Sends SIGKILL when the grace period is over; returns 0 when tcrun should stop waiting. */
static int handle_timers(void)
{
    double now = now_s();
    if (!J.stopping && J.deadline > 0 && now >= J.deadline) {
        fprintf(stderr, "tcrun: job timed out after %g seconds\n", J.args.timeout_s);
        begin_stop(124, SIGTERM);
        return 1;
    }
    if (J.stopping && !J.killed && now >= J.kill_at && J.nalive > 0) {
        fprintf(stderr, "tcrun: %d rank%s still running %g s after SIG%s; sending SIGKILL\n",
                J.nalive, J.nalive == 1 ? "" : "s", J.args.grace_s, sigabbrev_np(J.stop_sig));
        signal_ranks(SIGKILL);
        J.killed = 1;
        J.give_up_at = now + TC_RUN_GIVE_UP_S;
    }
    if (J.killed && now >= J.give_up_at && J.nalive > 0) {
        fprintf(stderr, "tcrun: giving up on %d rank%s that did not end after SIGKILL\n", J.nalive,
                J.nalive == 1 ? "" : "s");
        return 0;
    }
    return 1;
}

/* Milliseconds until the next timer, at most 1000 (a periodic reap guards against a lost
 * SIGCHLD). */
static int poll_timeout_ms(void)
{
    double next = 0;
    if (!J.stopping && J.deadline > 0) {
        next = J.deadline;
    } else if (J.stopping && !J.killed) {
        next = J.kill_at;
    } else if (J.killed) {
        next = J.give_up_at;
    }
    if (next == 0) {
        return 1000;
    }
    double ms = (next - now_s()) * 1000.0 + 1.0;
    if (ms < 0) {
        return 0;
    }
    return ms > 1000 ? 1000 : (int)ms;
}

static void event_loop(void)
{
    size_t cap = 2 + 2 * (size_t)J.nstarted;
    struct pollfd *pfd = calloc(cap, sizeof(*pfd));
    tc_run_stream_t **owner = calloc(cap, sizeof(*owner));
    if (pfd == NULL || owner == NULL) {
        fprintf(stderr, "tcrun: out of memory\n");
        begin_stop(1, SIGTERM);
        signal_ranks(SIGKILL);
        free(pfd);
        free(owner);
        return;
    }
    while (J.nalive > 0) {
        size_t n = 0;
        pfd[n++] = (struct pollfd){.fd = J.sigfd, .events = POLLIN};
        pfd[n++] = (struct pollfd){.fd = J.evfd, .events = POLLIN};
        for (int r = 0; r < J.nstarted; r++) {
            tc_run_stream_t *s[2] = {&J.ranks[r].out, &J.ranks[r].err};
            for (int k = 0; k < 2; k++) {
                if (s[k]->fd >= 0) {
                    owner[n] = s[k];
                    pfd[n++] = (struct pollfd){.fd = s[k]->fd, .events = POLLIN};
                }
            }
        }
        int np = poll(pfd, n, poll_timeout_ms());
        if (np < 0 && errno != EINTR) {
            fprintf(stderr, "tcrun: poll failed: %s\n", strerror(errno));
            break;
        }
        /* Output first, so that a rank's last lines come before messages about its end. */
        for (size_t i = 2; np > 0 && i < n; i++) {
            if (pfd[i].revents != 0) {
                tc_run_stream_pump(owner[i], 0);
            }
        }
        if (!J.stopping && tc_run_output_gone()) {
            fprintf(stderr, "tcrun: the reader of tcrun's %s closed it; the job stops\n",
                    tc_run_output_gone() == 1 ? "stdout" : "stderr");
            begin_stop(128 + SIGPIPE, SIGTERM);
        }
        if (np > 0 && pfd[1].revents != 0) {
            handle_abort();
        }
        int sigchld = (np == 0); /* on a timeout, reap anyway */
        if (np > 0 && pfd[0].revents != 0) {
            handle_signals(&sigchld);
        }
        if (sigchld) {
            reap();
        }
        if (!handle_timers()) {
            break;
        }
    }
    free(pfd);
    free(owner);
}

/* "TC_JOB_SECRET=<32 hex digits>", drawn once per job: it authenticates the
 * connections between this job's ranks. A secret already in the environment wins.
 * NULL (said on stderr) when no random source works: a secret derived from the time
 * and pid could be guessed, so there is none rather than a weak one. */
static const char *job_secret_env(void)
{
    static char buf[64];
    if (buf[0] == '\0') {
        unsigned char r[16];
        ssize_t n;
        do {
            n = getrandom(r, sizeof(r), 0);
        } while (n < 0 && errno == EINTR);
        if (n != (ssize_t)sizeof(r)) {
            int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
            n = fd >= 0 ? read(fd, r, sizeof(r)) : -1;
            if (fd >= 0) {
                close(fd);
            }
            if (n != (ssize_t)sizeof(r)) {
                fprintf(stderr, "tcrun: no random source for the job secret (getrandom and "
                                "/dev/urandom failed); set TC_JOB_SECRET yourself\n");
                return NULL;
            }
        }
        int len = snprintf(buf, sizeof(buf), "TC_JOB_SECRET=");
        for (size_t i = 0; i < sizeof(r); i++) {
            len += snprintf(buf + len, sizeof(buf) - (size_t)len, "%02x", r[i]);
        }
    }
    return buf;
}

/* A copy of tcrun's environment for a rank, as malloc'd strings (PMIx adds to it). */
static char **make_env(void)
{
    size_t n = 0;
    int have_secret = 0;
    while (environ[n] != NULL) {
        have_secret |= strncmp(environ[n], "TC_JOB_SECRET=", 14) == 0;
        n++;
    }
    char **env = calloc(n + 3, sizeof(*env));
    if (env == NULL) {
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(environ[i], "TC_LAUNCHER=", 12) == 0) {
            continue;
        }
        if ((env[k] = strdup(environ[i])) == NULL) {
            goto fail;
        }
        k++;
    }
    if ((env[k++] = strdup("TC_LAUNCHER=tcrun")) == NULL) {
        goto fail;
    }
    const char *secret = have_secret ? NULL : job_secret_env();
    if (!have_secret && (secret == NULL || (env[k++] = strdup(secret)) == NULL)) {
        goto fail;
    }
    return env;
fail:
    for (size_t i = 0; env[i] != NULL; i++) {
        free(env[i]);
    }
    free(env);
    return NULL;
}

static void free_env(char **env)
{
    if (env == NULL) {
        return;
    }
    for (size_t i = 0; env[i] != NULL; i++) {
        free(env[i]);
    }
    free(env);
}

static void write_str(int fd, const char *s)
{
    ssize_t w = write(fd, s, strlen(s));
    (void)w;
}

/* The CPUs tcrun may run on (its own affinity, which a batch system or taskset may have narrowed):
 * --bind core places rank r on the (r mod n)-th, so that ranks fill the CPUs in turn. */
static int bind_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) != 0) {
        fprintf(stderr, "tcrun: --bind core: sched_getaffinity failed: %s\n", strerror(errno));
        return -1;
    }
    J.cpus = malloc((size_t)CPU_COUNT(&set) * sizeof(int));
    if (J.cpus == NULL) {
        fprintf(stderr, "tcrun: out of memory\n");
        return -1;
    }
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (CPU_ISSET(c, &set)) {
            J.cpus[J.ncpus++] = c;
        }
    }
    if (J.args.verbose) {
        fprintf(stderr, "tcrun: --bind core: %d rank%s on %d CPU%s\n", J.args.nranks,
                J.args.nranks == 1 ? "" : "s", J.ncpus, J.ncpus == 1 ? "" : "s");
    }
    return 0;
}

/* In the child between fork and exec: only async-signal-safe calls. */
static void exec_rank(int r, int devnull, int out_w, int err_w, char **env)
{
    setpgid(0, 0);
    /* tcrun killed (SIGKILL, out of memory): the rank goes too, not on as an orphan; and if it
     * died before this call, at once */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != J.self)
        _exit(127);
    dup2(devnull, 0);
    dup2(out_w, 1);
    dup2(err_w, 2);
    /* Nothing else: descriptors tcrun inherited, and its own that are not
     * close-on-exec (the PMIx server's sockets to the ranks started so far), would
     * otherwise pile up in every rank as the job grows. */
    close_range(3, ~0u, 0);
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_SETMASK, &J.orig_mask, NULL);
    if (J.ncpus > 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(J.cpus[r % J.ncpus], &one);
        if (sched_setaffinity(0, sizeof(one), &one) != 0) {
            write_str(2, "tcrun: --bind core: sched_setaffinity failed\n");
            _exit(127);
        }
    }
    execve(J.args.exe_path, J.args.argv, env);
    int e = errno;
    write_str(2, "tcrun: execve(");
    write_str(2, J.args.exe_path);
    write_str(2, ") failed: ");
    const char *name = strerrorname_np(e);
    write_str(2, name != NULL ? name : "unknown error");
    write_str(2, "\n");
    _exit(127);
}

static int start_rank(int r, int devnull)
{
    int outp[2] = {-1, -1};
    int errp[2] = {-1, -1};
    char **env = make_env();
    if (env == NULL) {
        fprintf(stderr,
                "tcrun: cannot build the ranks' environment (out of memory, or no job secret)\n");
        return -1;
    }
    if (tc_run_pmix_prepare_rank(r, &env) != 0) {
        goto fail;
    }
    if (pipe2(outp, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0) {
        fprintf(stderr, "tcrun: pipe2 for rank %d failed: %s\n", r, strerror(errno));
        goto fail;
    }
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "tcrun: fork of rank %d failed: %s\n", r, strerror(errno));
        goto fail;
    }
    if (pid == 0) {
        exec_rank(r, devnull, outp[1], errp[1], env);
    }
    setpgid(pid, pid); /* also here, so that signals to the group cannot race the child */
    close(outp[1]);
    close(errp[1]);
    fcntl(outp[0], F_SETFL, O_NONBLOCK);
    fcntl(errp[0], F_SETFL, O_NONBLOCK);
    rank_t *rk = &J.ranks[r];
    rk->pid = pid;
    rk->alive = 1;
    tc_run_pmix_rank_started(r, pid);
    tc_run_stream_init(&rk->out, outp[0], 1, r);
    tc_run_stream_init(&rk->err, errp[0], 2, r);
    J.nstarted++;
    J.nalive++;
    free_env(env);
    return 0;
fail:
    for (int i = 0; i < 2; i++) {
        if (outp[i] >= 0) {
            close(outp[i]);
        }
        if (errp[i] >= 0) {
            close(errp[i]);
        }
    }
    free_env(env);
    return -1;
}

/* 2 pipes per rank: raise the soft limit on open files as far as allowed. */
static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

int main(int argc, char **argv)
{
    int rc = tc_run_args_parse(argc, argv, &J.args);
    if (rc != 0) {
        return rc == 1 ? 0 : rc;
    }
    J.sigfd = -1;
    J.evfd = -1;
    J.self = getpid();
    int devnull = -1;
    raise_fd_limit();
    signal(SIGPIPE, SIG_IGN);

    /* Block the signals tcrun handles before PMIx starts its threads, so that they inherit the
     * mask and every such signal is read from the signalfd by the main thread. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, &J.orig_mask);
    J.sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (J.sigfd < 0) {
        fprintf(stderr, "tcrun: signalfd failed: %s\n", strerror(errno));
        J.exit_code = 1;
        goto out;
    }
    devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull < 0) {
        fprintf(stderr, "tcrun: cannot open /dev/null: %s\n", strerror(errno));
        J.exit_code = 1;
        goto out;
    }
    if (J.args.bind_core && bind_cpus() != 0) {
        J.exit_code = 1;
        goto out;
    }
    J.ranks = calloc((size_t)J.args.nranks, sizeof(*J.ranks));
    if (J.ranks == NULL) {
        fprintf(stderr, "tcrun: out of memory\n");
        J.exit_code = 1;
        goto out;
    }
    if (tc_run_pmix_start(J.args.nranks, J.args.verbose, &J.evfd) != 0) {
        J.exit_code = 1;
        goto out;
    }
    if (J.args.timeout_s > 0) {
        J.deadline = now_s() + J.args.timeout_s;
    }
    for (int r = 0; r < J.args.nranks; r++) {
        if (start_rank(r, devnull) != 0) {
            begin_stop(1, SIGTERM);
            break;
        }
    }
    event_loop();
    for (int r = 0; r < J.nstarted; r++) {
        tc_run_stream_pump(&J.ranks[r].out, 1);
        tc_run_stream_pump(&J.ranks[r].err, 1);
        tc_run_stream_close(&J.ranks[r].out);
        tc_run_stream_close(&J.ranks[r].err);
    }
    if (J.exit_code == 0 && tc_run_output_gone())
        J.exit_code = 128 + SIGPIPE; /* the ranks ended first, but output was lost */
out:
    if (tc_run_pmix_stop()) {
        fflush(NULL);
        _exit(J.exit_code); /* the server library's stuck thread must not run exit's handlers */
    }
    if (devnull >= 0) {
        close(devnull);
    }
    if (J.sigfd >= 0) {
        close(J.sigfd);
    }
    free(J.ranks);
    free(J.cpus);
    tc_run_args_free(&J.args);
    return J.exit_code;
}
