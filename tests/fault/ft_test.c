/* Fault injection under a real launcher: one rank (the victim) fails on
 * purpose and every survivor checks what it sees.
 *
 *   ft_test MODE VICTIM [SEED]
 *   MODE: kill-before | kill-during | kill-after   SIGKILL itself before the
 *             loop of all-reduces, at a random moment inside it, or after it
 *             (while the others wait in a barrier); survivors must get
 *             TC_ERR_PEER_FAILED naming the victim, then shrink and check an
 *             all-reduce on the survivors.
 *         kill-shrink: like kill-during, and rank VICTIM+1 also dies as the
 *             shrink starts (a second failure during the agreement).
 *         stop: SIGSTOP itself in the loop; the others must time out at the
 *             configured bound (TC_TIMEOUT_S) naming it among the awaited,
 *             and leave flight-recorder dumps (TC_FR_DIR) for tc-fr.
 *         mismatch: the victim calls a broadcast where the others call an
 *             all-reduce; with TC_CHECK=1 everyone gets TC_ERR_MISMATCH naming it.
 *         abort: the victim dies; each survivor has an asynchronous all-reduce
 *             pending on it and aborts the communicator: the abort must return
 *             within 100 ms.
 *         stop-hb: like stop, with heartbeats (TC_HEARTBEAT_MS): the others get
 *             TC_ERR_PEER_FAILED naming it long before the timeout, then
 *             shrink and check an all-reduce without it.
 *         revoke: the victim revokes the communicator instead of joining an
 *             all-reduce; every other rank leaves it with TC_ERR_REVOKED, then
 *             all shrink (nobody failed: same size) and check an all-reduce.
 *         slow: the victim sleeps 3 s in the loop; nobody fails (TC_TIMEOUT_S
 *             larger) and every result is right.
 *         slow-mute: like slow, and the victim sends no heartbeats (it turns
 *             them off for itself, knowing its rank from tcrun's PMIX_RANK), as a
 *             process that gets no core for seconds on an overloaded node: its
 *             neighbours, on the same node, see it alive and fail nobody.
 *         any-source: rank VICTIM+1 waits in a receive from any source that
 *             nobody sends to, the others in a barrier, when the victim dies:
 *             every survivor gets TC_ERR_PEER_FAILED naming it (no hang until
 *             the timeout), then they shrink and check an all-reduce.
 *         sent-then-left: the victim sends rank VICTIM+1 a message and leaves
 *             cleanly; that rank's receive from any source, posted after, gets it.
 *         cut: the victim shuts down its TCP connections (run with TC_SHM=0);
 *             every rank ends with TC_ERR_PEER_FAILED or TC_ERR_TIMEOUT, none
 *             hangs, and the ranks that used a cut connection name the victim.
 * Each survivor prints "rank R: ... detect_ms D ... 0 failures" (or the
 * failures); the victim's death time is shared through TC_FT_DIR/killed_at. */
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ft_fail.h"
#include "tcomms/tcomms.h"

static int fails;
static int rank = -1;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static const char *ft_dir(void)
{
    const char *d = getenv("TC_FT_DIR");
    return d && *d ? d : "/tmp";
}

/* Record when this process dies, then die. */
static void die(int sig)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/killed_at.%d", ft_dir(), rank);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "%.3f\n", now_ms());
        fclose(f);
    }
    fflush(stdout);
    raise(sig);
}

/* Cut every established TCP connection of this process (not the listening
 * socket, not PMIx's local socket). */
static int cut_tcp(void)
{
    int cut = 0;
    for (int fd = 3; fd < 1024; fd++) {
        struct sockaddr_storage sa;
        socklen_t len = sizeof(sa);
        int type = 0, listening = 0;
        socklen_t ilen = sizeof(int);
        if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0 ||
            (sa.ss_family != AF_INET && sa.ss_family != AF_INET6) ||
            getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &ilen) != 0 || type != SOCK_STREAM ||
            getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ilen) != 0 || listening)
            continue;
        cut += shutdown(fd, SHUT_RDWR) == 0;
    }
    return cut;
}

/* When the victim died (ms since the epoch), waiting briefly for its note. */
static double killed_at(int victim)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/killed_at.%d", ft_dir(), victim);
    for (int i = 0; i < 200; i++) {
        FILE *f = fopen(path, "r");
        double t;
        if (f && fscanf(f, "%lf", &t) == 1) {
            fclose(f);
            return t;
        }
        if (f)
            fclose(f);
        usleep(10000);
    }
    return -1;
}

/* The failure the survivors see must name the victim. */
static void check_failure(tc_status_t st, tc_status_t want, int victim, const char *what)
{
    char needle[32];
    snprintf(needle, sizeof(needle), "rank %d", victim);
    if (st != want)
        FAIL("%s: got %s, want %s (%s)", what, tc_status_string(st), tc_status_string(want),
             tc_last_error());
    else if (!strstr(tc_last_error(), needle))
        FAIL("%s: the error does not name %s: %s", what, needle, tc_last_error());
}

/* Shrink and check an all-reduce over the survivors (sum of their old ranks). */
static void shrink_and_check(tc_comm_t *comm, int size, const int *dead, int ndead)
{
    tc_comm_t *small = NULL;
    double t0 = now_ms();
    tc_status_t st = tc_comm_shrink(comm, NULL, &small);
    double t1 = now_ms();
    if (st != TC_OK) {
        FAIL("shrink: %s: %s", tc_status_string(st), tc_last_error());
        return;
    }
    int nsize = -1, nrank = -1;
    tc_comm_size(small, &nsize);
    tc_comm_rank(small, &nrank);
    if (nsize != size - ndead)
        FAIL("shrunk size %d, want %d", nsize, size - ndead);
    int n = 1000;
    int64_t *v = malloc((size_t)n * sizeof(*v)), *out = malloc((size_t)n * sizeof(*out));
    for (int i = 0; i < n; i++)
        v[i] = rank * 1000 + i;
    st = tc_all_reduce(small, v, out, (size_t)n, TC_INT64, TC_SUM, NULL, NULL);
    if (st != TC_OK) {
        FAIL("all_reduce after shrink: %s: %s", tc_status_string(st), tc_last_error());
    } else {
        int64_t ranks = 0, nsurv = 0;
        for (int q = 0; q < size; q++) {
            int gone = 0;
            for (int k = 0; k < ndead; k++)
                gone |= dead[k] == q;
            if (!gone)
                ranks += q, nsurv++;
        }
        for (int i = 0; i < n; i++)
            if (out[i] != ranks * 1000 + nsurv * i) {
                FAIL("all_reduce after shrink: [%d] = %lld, want %lld", i, (long long)out[i],
                     (long long)(ranks * 1000 + nsurv * i));
                break;
            }
    }
    printf("rank %d: shrunk to %d ranks (new rank %d) in %.1f ms\n", rank, nsize, nrank, t1 - t0);
    free(v);
    free(out);
    tc_comm_destroy(small);
}

/* How long after the victim's death (@p t_err: when this rank's call failed) it was seen, then
 * the shrink without it. */
static void detected_then_shrink(tc_comm_t *comm, tc_status_t st, double t_err, int size,
                                 int victim)
{
    double k = killed_at(victim);
    printf("rank %d: detect_ms %.1f (%s)\n", rank, k > 0 ? t_err - k : -1.0, tc_status_string(st));
    int dead[1] = {victim};
    shrink_and_check(comm, size, dead, 1);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: ft_test MODE VICTIM [SEED]\n");
        return 2;
    }
    /* line by line: a rank that hangs keeps the lines it printed before (the launcher's pipe
     * would otherwise hold them in a buffer lost when the job is killed) */
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *mode = argv[1];
    int victim = atoi(argv[2]);
    unsigned seed = argc > 3 ? (unsigned)atoi(argv[3]) : (unsigned)time(NULL);
    const char *launcher_rank = getenv("PMIX_RANK");
    if (strcmp(mode, "slow-mute") == 0 && launcher_rank && atoi(launcher_rank) == victim)
        setenv("TC_HEARTBEAT_MS", "0", 1);
    tc_comm_t *comm;
    if (tc_comm_create(NULL, &comm) != TC_OK) {
        fprintf(stderr, "create: %s\n", tc_last_error());
        return 1;
    }
    int size;
    tc_comm_rank(comm, &rank);
    tc_comm_size(comm, &size);
    srand(seed);
    int iters = 200, kill_iter = rand() % iters;
    if (strcmp(mode, "cut") == 0 && kill_iter == 0)
        kill_iter = 1; /* connections come with first use: a cut before any all-reduce cuts none */
    int delay_us = rand() % 2000;
    int n = 4096;
    float *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4);
    for (int i = 0; i < n; i++)
        a[i] = (float)(rank + i % 5);
    tc_status_t st = TC_OK;
    double t_err = 0, t_start = 0;
    int it;

    if (strcmp(mode, "kill-before") == 0 && rank == victim)
        die(SIGKILL);
    if (strcmp(mode, "unreceived") == 0) {
        /* the others send the victim 8 MiB it never receives: their timeout names it as the
         * rank that has not taken the sends (it used to say "rank(s) none") */
        size_t big = 8u << 20;
        char *buf = calloc(1, big), want[96];
        tc_op_opts_t o = TC_OP_OPTS_INIT;
        o.timeout_ms = 1000;
        if (rank == victim) {
            usleep(2500000);
        } else {
            st = tc_send(comm, buf, big, TC_UINT8, victim, &o, NULL);
            snprintf(want, sizeof(want), "waiting for rank(s) %d (to accept our sends)", victim);
            if (st != TC_ERR_TIMEOUT || strstr(tc_last_error(), want) == NULL)
                FAIL("a send never received: %s (%s), want TC_ERR_TIMEOUT and '%s'",
                     tc_status_string(st), tc_last_error(), want);
            usleep(2000000); /* the victim leaves first */
        }
        free(buf);
        tc_comm_destroy(comm);
        printf("rank %d: %s victim %d: %d failures\n", rank, mode, victim, fails);
        return fails != 0;
    }
    if (strcmp(mode, "any-source") == 0) {
        if ((st = tc_barrier(comm, NULL, NULL)) != TC_OK)
            FAIL("any-source: the barrier before: %s", tc_last_error());
        if (rank == victim) {
            usleep(100000);
            die(SIGKILL);
        }
        int32_t x = 0;
        st = rank == (victim + 1) % size ? tc_recv(comm, &x, 1, TC_INT32, TC_ANY_SOURCE, NULL, NULL)
                                         : tc_barrier(comm, NULL, NULL);
        t_err = now_ms();
        check_failure(st, TC_ERR_PEER_FAILED, victim, "waiting while the victim died");
        detected_then_shrink(comm, st, t_err, size, victim);
        tc_comm_destroy(comm);
        printf("rank %d: %s victim %d: %d failures\n", rank, mode, victim, fails);
        return fails != 0;
    }
    if (strcmp(mode, "sent-then-left") == 0) {
        /* The victim sends rank VICTIM+1 one message and leaves cleanly; that rank's receive
         * from any source, posted once the victim is gone, gets the message (it skipped a rank
         * whose endpoint had closed, and waited until its timeout). */
        int to = (victim + 1) % size, src = -1;
        int32_t x = 4242 + victim, got = 0;
        if ((st = tc_barrier(comm, NULL, NULL)) != TC_OK)
            FAIL("sent-then-left: the barrier before: %s", tc_last_error());
        if (rank == victim && (st = tc_send(comm, &x, 1, TC_INT32, to, NULL, NULL)) != TC_OK)
            FAIL("sent-then-left: the send: %s", tc_last_error());
        if (rank == to) {
            usleep(500000); /* the victim is gone */
            tc_op_opts_t o = TC_OP_OPTS_INIT;
            o.timeout_ms = 10000;
            o.async = 1;
            tc_work_t *w = NULL;
            st = tc_recv(comm, &got, 1, TC_INT32, TC_ANY_SOURCE, &o, &w);
            if (st == TC_OK)
                st = tc_work_wait(w, -1);
            if (st == TC_OK)
                st = tc_work_source(w, &src);
            if (st != TC_OK || got != x || src != victim)
                FAIL("sent-then-left: the receive from any source: %s (%s), %d from rank %d, "
                     "want %d from rank %d",
                     tc_status_string(st), st != TC_OK ? tc_last_error() : "", got, src, x, victim);
            tc_work_free(w);
        }
        tc_comm_destroy(comm);
        printf("rank %d: %s victim %d: %d failures\n", rank, mode, victim, fails);
        return fails != 0;
    }
    if (strcmp(mode, "abort") == 0) {
        /* Everyone is in, then the others issue while the victim still lives (it dies 100 ms
         * later), so the all-reduce is pending on it when they abort just after it died. A victim
         * that died at once could be known dead before the issue, which then fails instead (seen
         * under load). */
        st = tc_barrier(comm, NULL, NULL);
        if (st != TC_OK)
            FAIL("abort: the barrier before: %s", tc_last_error());
        if (rank == victim) {
            usleep(100000);
            die(SIGKILL);
        }
        tc_op_opts_t o = TC_OP_OPTS_INIT;
        o.async = 1;
        tc_work_t *w = NULL;
        st = tc_all_reduce(comm, a, b, (size_t)n, TC_FLOAT32, TC_SUM, &o, &w);
        usleep(105000);
        double t0 = now_ms();
        tc_status_t ast = tc_comm_abort(comm);
        double dt = now_ms() - t0;
        tc_work_state_t ws;
        tc_status_t res = TC_OK;
        if (st != TC_OK || ast != TC_OK)
            FAIL("abort: issue %s, abort %s: %s", tc_status_string(st), tc_status_string(ast),
                 tc_last_error());
        else if (tc_work_status(w, &ws, &res) != TC_OK || ws == TC_WORK_IN_PROGRESS ||
                 (res != TC_ERR_ABORTED && res != TC_ERR_PEER_FAILED))
            FAIL("abort: the pending work is %d with %s", (int)ws, tc_status_string(res));
        if (dt > 100)
            FAIL("abort took %.1f ms", dt);
        printf("rank %d: abort returned in %.3f ms\n", rank, dt);
        tc_work_free(w);
        tc_comm_destroy(comm);
        printf("rank %d: %s victim %d: %d failures\n", rank, mode, victim, fails);
        return fails != 0;
    }
    for (it = 0; it < iters; it++) {
        if (rank == victim && it == kill_iter) {
            if (strncmp(mode, "kill-during", 11) == 0 || strcmp(mode, "kill-shrink") == 0) {
                /* die in the middle of an all-reduce the others are running */
                tc_op_opts_t o = TC_OP_OPTS_INIT;
                o.async = 1;
                tc_work_t *w;
                tc_all_reduce(comm, a, b, (size_t)n, TC_FLOAT32, TC_SUM, &o, &w);
                usleep((useconds_t)delay_us);
                die(SIGKILL);
            }
            if (strcmp(mode, "stop") == 0 || strcmp(mode, "stop-hb") == 0)
                die(SIGSTOP);
            if (strncmp(mode, "slow", 4) == 0)
                sleep(3);
            if (strcmp(mode, "revoke") == 0) {
                usleep((useconds_t)delay_us);
                st = tc_comm_revoke(comm);
                if (st != TC_OK)
                    FAIL("revoke: %s (%s)", tc_status_string(st), tc_last_error());
                st = tc_all_reduce(comm, a, b, (size_t)n, TC_FLOAT32, TC_SUM, NULL, NULL);
                t_err = now_ms();
                break;
            }
            if (strcmp(mode, "cut") == 0)
                printf("rank %d: cut %d connections\n", rank, cut_tcp());
            if (strcmp(mode, "mismatch") == 0) {
                st = tc_broadcast(comm, a, (size_t)n, TC_FLOAT32, 0, NULL, NULL);
                t_err = now_ms();
                break;
            }
        }
        t_start = now_ms();
        st = tc_all_reduce(comm, a, b, (size_t)n, TC_FLOAT32, TC_SUM, NULL, NULL);
        if (st != TC_OK) {
            t_err = now_ms();
            break;
        }
    }
    if (strncmp(mode, "kill", 4) == 0 && st == TC_OK) {
        /* kill-after dies here; after kill-during the last all-reduce may have
         * completed everywhere before the victim died: the barrier sees it */
        if (rank == victim)
            die(SIGKILL);
        st = tc_barrier(comm, NULL, NULL);
        t_err = now_ms();
    }

    int second = (victim + 1) % size; /* kill-shrink's second victim, which may be seen first */
    if (strcmp(mode, "kill-shrink") == 0) {
        char n1[32], n2[32];
        if (st != TC_ERR_PEER_FAILED)
            FAIL("after the victims died: got %s (%s)", tc_status_string(st), tc_last_error());
        snprintf(n1, sizeof(n1), "rank %d ", victim);
        snprintf(n2, sizeof(n2), "rank %d ", second);
        if (!strstr(tc_last_error(), n1) && !strstr(tc_last_error(), n2))
            FAIL("after the victims died: the error names neither %d nor %d: %s", victim, second,
                 tc_last_error());
    } else if (strncmp(mode, "kill", 4) == 0) {
        check_failure(st, TC_ERR_PEER_FAILED, victim, "after the victim died");
    }
    if (strncmp(mode, "kill", 4) == 0) {
        double k = killed_at(victim);
        printf("rank %d: detect_ms %.1f (%s)\n", rank, k > 0 ? t_err - k : -1.0,
               tc_status_string(st));
        int failed[8], nf = 0;
        tc_comm_failed_ranks(comm, failed, 8, &nf);
        int named = 0;
        for (int i = 0; i < nf && i < 8; i++)
            named |=
                failed[i] == victim || (strcmp(mode, "kill-shrink") == 0 && failed[i] == second);
        if (!named)
            FAIL("tc_comm_failed_ranks (%d ranks) does not hold %d", nf, victim);
        int dead[2] = {victim, second}, ndead = 1;
        if (strcmp(mode, "kill-shrink") == 0) {
            ndead = 2;
            if (rank == dead[1]) {
                usleep((useconds_t)(rand() % 3000));
                die(SIGKILL); /* during the others' agreement */
            }
        }
        shrink_and_check(comm, size, dead, ndead);
    } else if (strcmp(mode, "stop") == 0) {
        /* only the ranks that wait on it directly can name it: tc-fr names it for all */
        const char *bound_s = getenv("TC_TIMEOUT_S");
        double bound = bound_s ? atof(bound_s) * 1e3 : 600e3, took = t_err - t_start;
        if (st != TC_ERR_TIMEOUT)
            FAIL("with the victim stopped: got %s, want TC_ERR_TIMEOUT (%s)", tc_status_string(st),
                 tc_last_error());
        else if (took < bound - 1 || took > bound + 1500)
            FAIL("timed out after %.0f ms, the bound is %.0f ms", took, bound);
        printf("rank %d: timed out after %.0f ms (bound %.0f ms): %s\n", rank, took, bound,
               tc_last_error());
        /* stay a moment: a rank leaving closes its connections, and the others,
         * whose clocks started a little later, would see that before their bound */
        usleep(1500000);
    } else if (strcmp(mode, "stop-hb") == 0) {
        check_failure(st, TC_ERR_PEER_FAILED, victim, "with the victim stopped (heartbeats)");
        detected_then_shrink(comm, st, t_err, size, victim);
    } else if (strcmp(mode, "revoke") == 0) {
        if (st != TC_ERR_REVOKED)
            FAIL("after the revoke: got %s, want TC_ERR_REVOKED (%s)", tc_status_string(st),
                 tc_last_error());
        char needle[48];
        snprintf(needle, sizeof(needle), "revoked by rank %d", victim);
        if (st == TC_ERR_REVOKED && rank != victim && !strstr(tc_last_error(), needle))
            FAIL("the revoke does not name rank %d: %s", victim, tc_last_error());
        shrink_and_check(comm, size, NULL, 0);
    } else if (strncmp(mode, "slow", 4) == 0) {
        if (st != TC_OK)
            FAIL("with a slow rank: %s (%s)", tc_status_string(st), tc_last_error());
        for (int i = 0; i < n && st == TC_OK; i++) {
            float want = (float)(size * (size - 1) / 2 + size * (i % 5));
            if (b[i] != want) {
                FAIL("with a slow rank: [%d] = %g, want %g", i, b[i], want);
                break;
            }
        }
    } else if (strcmp(mode, "cut") == 0) {
        char needle[32];
        snprintf(needle, sizeof(needle), "rank %d", victim);
        if (st != TC_ERR_PEER_FAILED && st != TC_ERR_TIMEOUT)
            FAIL("with connections cut: %s (%s)", tc_status_string(st), tc_last_error());
        printf("rank %d: cut: %s names_victim=%d\n", rank, tc_status_string(st),
               rank != victim && strstr(tc_last_error(), needle) != NULL);
    } else if (strcmp(mode, "mismatch") == 0 && getenv("TC_CHECK")) {
        check_failure(st, TC_ERR_MISMATCH, victim, "with the victim calling broadcast");
        /* the check leaves the communicator usable */
        st = tc_all_reduce(comm, a, b, (size_t)n, TC_FLOAT32, TC_SUM, NULL, NULL);
        if (st != TC_OK)
            FAIL("all_reduce after the mismatch: %s", tc_last_error());
    } else if (strcmp(mode, "mismatch") == 0) {
        /* without TC_CHECK the mismatch shows as an error or a timeout; tc-fr names it. The
         * victim too: its broadcast's tags carry the collective, so it cannot take an
         * all-reduce's message of its size and return TC_OK (it did, with linear broadcast) */
        if (st == TC_OK)
            FAIL("the mismatch went unnoticed");
        printf("rank %d: mismatch without TC_CHECK: %s\n", rank, tc_status_string(st));
    }
    tc_comm_destroy(comm);
    printf("rank %d: %s victim %d: %d failures\n", rank, mode, victim, fails);
    free(a);
    free(b);
    return fails != 0;
}
