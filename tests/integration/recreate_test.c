/* Create, use and destroy the world communicator again and again, as elastic training and
 * test harnesses do:
 *
 *   recreate_test [CYCLES] [--max-growth-kib K] [--max-heap-growth B] [--dups D] [--pmix-checks]
 *
 * Every cycle all-reduces the cycle number and the rank and checks the sums, then makes D
 * duplicates of the world one after the other (each all-reduces and is destroyed). After the
 * first tenth of the cycles (the warm-up: glibc's arenas and the transports' pools settle) it
 * reads the resident set (/proc/self/status VmRSS) and the heap in use (mallinfo2); at the end
 * it prints their growth over the remaining cycles. With --max-growth-kib the resident set may
 * grow by at most K KiB (a leak check with a generous bound, not a speed measure; meaningless
 * under ASan, whose quarantine keeps freed memory). With --max-heap-growth the heap in use may grow
 * by at most B bytes: a strict check, to be run with glibc's per-thread caches off
 * (GLIBC_TUNABLES=glibc.malloc.tcache_count=0), for mallinfo2 counts the chunks those caches
 * hold as in use (they made the heap seem to grow 140-290 B per cycle, bounded: 46 KiB after
 * 1600 cycles, 0 with the caches off). Prints "rank R: C cycles, 0 failures, ..."
 * and exits 0 only when every cycle succeeded and the bound held.
 *
 * --pmix-checks (under a PMIx launcher): in cycle 1 a second world made while the first is alive
 * must be refused (TC_ERR_INVALID_STATE: one rank per process), and after the destroy a forked
 * child's tc_comm_create must be refused (TC_ERR_BOOTSTRAP, "forked"); the child then exits
 * through exit(), whose handlers must leave the parent's PMIx connection to the next cycles. */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tcomms/tcomms.h"

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) {
            v = strtol(line + 6, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

static long heap_bytes(void)
{
    struct mallinfo2 m = mallinfo2();
    return (long)(m.uordblks + m.hblkhd);
}

/* One all-reduce of (c, rank) over @p comm, checked. */
static int use(tc_comm_t *comm, int c, const char *what)
{
    int rank, size;
    tc_comm_rank(comm, &rank);
    tc_comm_size(comm, &size);
    int64_t in[2] = {c, rank}, out[2] = {0, 0};
    tc_status_t st = tc_all_reduce(comm, in, out, 2, TC_INT64, TC_SUM, NULL, NULL);
    if (st == TC_OK && out[0] == (int64_t)c * size && out[1] == (int64_t)size * (size - 1) / 2)
        return 0;
    fprintf(stderr, "rank %d: cycle %d: all_reduce on %s: %s (got %lld %lld)\n", rank, c, what,
            st != TC_OK ? tc_last_error() : "wrong sums", (long long)out[0], (long long)out[1]);
    return 1;
}

/* A second world while @p rank's is alive: refused, nothing made. */
static int second_world(int rank)
{
    tc_comm_t *again = NULL;
    tc_status_t st = tc_comm_create(NULL, &again);
    if (st == TC_ERR_INVALID_STATE && !again && strstr(tc_last_error(), "alive in this process"))
        return 0;
    fprintf(stderr,
            "rank %d: a second PMIx world while one is alive: %s, %s (expected "
            "TC_ERR_INVALID_STATE)\n",
            rank, tc_status_string(st), st ? tc_last_error() : "made");
    return 1;
}

/* A child forked after the world's destroy: its creation refused; its exit runs the library's
 * exit handler, which must not finalise the parent's PMIx client. */
static int forked_child(int rank)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        alarm(30); /* bounded, whatever happens */
        tc_comm_t *c = NULL;
        tc_status_t st = tc_comm_create(NULL, &c);
        int ok = st == TC_ERR_BOOTSTRAP && strstr(tc_last_error(), "forked");
        if (!ok)
            fprintf(stderr,
                    "rank %d: a forked child's create: %s, %s (expected "
                    "TC_ERR_BOOTSTRAP naming the fork)\n",
                    rank, tc_status_string(st), st ? tc_last_error() : "made");
        exit(ok ? 0 : 1);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "rank %d: the forked child failed (status 0x%x)\n", rank, status);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int cycles = 20, dups = 0, pmix_checks = 0;
    long max_kib = -1, max_heap = -1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--max-growth-kib") == 0 && i + 1 < argc)
            max_kib = atol(argv[++i]);
        else if (strcmp(argv[i], "--max-heap-growth") == 0 && i + 1 < argc)
            max_heap = atol(argv[++i]);
        else if (strcmp(argv[i], "--pmix-checks") == 0)
            pmix_checks = 1;
        else if (strcmp(argv[i], "--dups") == 0 && i + 1 < argc)
            dups = atoi(argv[++i]);
        else
            cycles = atoi(argv[i]);
    }
    if (cycles < 1 || dups < 0) {
        fprintf(stderr, "usage: recreate_test [CYCLES >= 1] [--max-growth-kib K] "
                        "[--max-heap-growth B] [--dups D] [--pmix-checks]\n");
        return 2;
    }
    int rank = -1, warm = cycles / 10;
    long rss0 = rss_kib(), heap0 = heap_bytes();
    for (int c = 0; c < cycles; c++) {
        if (c == warm) {
            rss0 = rss_kib();
            heap0 = heap_bytes();
        }
        tc_comm_t *comm;
        if (tc_comm_create(NULL, &comm) != TC_OK) {
            fprintf(stderr, "rank %d: cycle %d: create: %s\n", rank, c, tc_last_error());
            return 1;
        }
        tc_comm_rank(comm, &rank);
        if (use(comm, c, "the world"))
            return 1;
        for (int d = 0; d < dups; d++) {
            tc_comm_t *dup;
            if (tc_comm_dup(comm, NULL, &dup) != TC_OK) {
                fprintf(stderr, "rank %d: cycle %d: dup %d: %s\n", rank, c, d, tc_last_error());
                return 1;
            }
            int bad = use(dup, c + d, "a dup");
            if (tc_comm_destroy(dup) != TC_OK || bad) {
                fprintf(stderr, "rank %d: cycle %d: dup %d destroyed: %s\n", rank, c, d,
                        tc_last_error());
                return 1;
            }
        }
        if (pmix_checks && c == 1 && second_world(rank))
            return 1;
        if (tc_comm_destroy(comm) != TC_OK) {
            fprintf(stderr, "rank %d: cycle %d: destroy: %s\n", rank, c, tc_last_error());
            return 1;
        }
        if (pmix_checks && c == 1 && forked_child(rank))
            return 1;
    }
    long rss = rss_kib() - rss0, heap = heap_bytes() - heap0;
    int n = cycles - warm;
    if (max_kib >= 0 && rss > max_kib) {
        fprintf(stderr,
                "rank %d: the resident set grew by %ld KiB over cycles %d to %d (%.1f KiB per "
                "cycle; heap %+ld B), more than the %ld KiB allowed: a leak\n",
                rank, rss, warm, cycles, (double)rss / n, heap, max_kib);
        return 1;
    }
    if (max_heap >= 0 && heap > max_heap) {
        fprintf(stderr,
                "rank %d: the heap in use grew by %ld B over cycles %d to %d (%.0f B per cycle), "
                "more than the %ld B allowed: a leak\n",
                rank, heap, warm, cycles, (double)heap / n, max_heap);
        return 1;
    }
    printf("rank %d: %d cycles, 0 failures; over cycles %d to %d: rss %+ld KiB (%.2f KiB per "
           "cycle), heap %+ld B (%.0f B per cycle)\n",
           rank, cycles, warm, cycles, rss, (double)rss / n, heap, (double)heap / n);
    return 0;
}
