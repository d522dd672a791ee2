/* What a communicator keeps of its executor's memory between operations (executor.c,
 * exec_trim): back-to-back large all-reduces by recursive doubling, whose scratch is the whole
 * message (32 MiB here, which glibc maps afresh on every malloc), reuse it instead of faulting
 * every page in again; a smaller operation through the same path gives it back. Every result is
 * checked element by element; and a communicator that runs nothing for a second gives it back
 * too (the progress thread's look, tc_rt_exec_idle), as the transports give back what they kept
 * of a large message that arrived before its receive (tc_tp_trim). Prints "N checks, M wrong" per
 * rank; fails on a wrong element, when even the warm large operation with the fewest page faults
 * has more than 4096 (a fresh 32 MiB scratch is 8192), when they have more than argv[3] on
 * average (default 2048: a scratch kept every other operation fails; -1: not checked, as over
 * TCP, where on a loaded machine a part of a message that arrived before its receive while the
 * kept record held another faults in anew: 2457 on average once in CI), when the
 * smaller operation leaves the resident set more than argv[1] MiB (default 16) above what it was
 * before the large ones began, or when 5 s without an operation after a large one do not bring it
 * within argv[2] MiB (default argv[1]) of it: the transports' kept records go too then
 * (tc_tp_trim). Not under a sanitizer, whose allocator has its own rules. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "tcomms/tcomms.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MEMORY_CHECKED 0 /* the sanitizers' allocators keep freed memory in quarantine */
#else
#define MEMORY_CHECKED 1
#endif

#define LARGE ((size_t)8 << 20) /* int32 elements: 32 MiB */
#define MEDIUM ((size_t)16 << 10)
#define ROUNDS 6

static int rank, nranks;
static long checks, wrong;

static long minflt(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

/* Resident bytes, from /proc/self/statm. */
static long resident(void)
{
    long pages = 0, res = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL)
        return -1;
    if (fscanf(f, "%ld %ld", &pages, &res) != 2)
        res = -1;
    fclose(f);
    return res < 0 ? -1 : res * sysconf(_SC_PAGESIZE);
}

/* Rank r's element i in round k. */
static int32_t input(int r, size_t i, int k)
{
    return (int32_t)((i * 7 + (size_t)r * 13 + (size_t)k * 5) % 1001) - 500;
}

/* An in-place all-reduce by recursive doubling of n elements, checked element by element. */
static int reduce_checked(tc_comm_t *comm, int32_t *buf, size_t n, int k)
{
    tc_op_opts_t o = TC_OP_OPTS_INIT;
    o.hints = "algo=recursive_doubling";
    for (size_t i = 0; i < n; i++)
        buf[i] = input(rank, i, k);
    if (tc_all_reduce(comm, buf, buf, n, TC_INT32, TC_SUM, &o, NULL) != TC_OK) {
        fprintf(stderr, "rank %d: all_reduce of %zu: %s\n", rank, n, tc_last_error());
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        int64_t want = 0;
        for (int r = 0; r < nranks; r++)
            want += input(r, i, k);
        checks++;
        if (buf[i] != want && wrong++ < 5)
            fprintf(stderr, "rank %d: round %d: element %zu is %d, expected %lld\n", rank, k, i,
                    buf[i], (long long)want);
    }
    return 0;
}

/* Rank 0 sends n elements to rank 1, which posts its receive only 300 ms later: over TCP the
 * message waits in a record of the transport, which keeps it for the next large one. */
static int late_recv_checked(tc_comm_t *comm, int32_t *buf, size_t n, int k)
{
    tc_status_t st = TC_OK;
    if (rank == 0) {
        for (size_t i = 0; i < n; i++)
            buf[i] = input(0, i, k);
        st = tc_send(comm, buf, n, TC_INT32, 1, NULL, NULL);
    } else if (rank == 1) {
        struct timespec late = {0, 300 * 1000000L};
        nanosleep(&late, NULL);
        memset(buf, 0, n * sizeof(int32_t));
        st = tc_recv(comm, buf, n, TC_INT32, 0, NULL, NULL);
        for (size_t i = 0; st == TC_OK && i < n; i++) {
            checks++;
            if (buf[i] != input(0, i, k) && wrong++ < 5)
                fprintf(stderr, "rank 1: late receive: element %zu is %d, expected %d\n", i, buf[i],
                        input(0, i, k));
        }
    }
    if (st != TC_OK) {
        fprintf(stderr, "rank %d: late send/recv of %zu: %s\n", rank, n, tc_last_error());
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    /* resident growth allowed after the smaller operation (MiB): over TCP the transport keeps
     * one record of a large message that arrived before its receive (tcp_internal.h) */
    const long allowed = (argc > 1 ? atol(argv[1]) : 16) << 20;
    const long idle_allowed = argc > 2 ? atol(argv[2]) << 20 : allowed;
    const long faults_allowed = argc > 3 ? atol(argv[3]) : 2048; /* on average; -1: any */
    tc_comm_t *comm;
    int32_t *buf = malloc(LARGE * sizeof(int32_t));
    int bad = 0;
    if (buf == NULL || tc_comm_create(NULL, &comm) != TC_OK) {
        fprintf(stderr, "setup: %s\n", buf ? tc_last_error() : "no memory");
        return 2;
    }
    tc_comm_rank(comm, &rank);
    tc_comm_size(comm, &nranks);
    memset(buf, 0, LARGE * sizeof(int32_t)); /* the caller's pages are in */
    if (reduce_checked(comm, buf, MEDIUM, 0) != 0)
        return 3;
    const long before = resident();
    if (reduce_checked(comm, buf, LARGE, 1) != 0) /* the first maps its scratch */
        return 3;
    long fewest = -1, total = 0;
    for (int k = 2; k <= ROUNDS; k++) {
        const long f0 = minflt();
        if (reduce_checked(comm, buf, LARGE, k) != 0)
            return 3;
        const long f = minflt() - f0;
        fewest = fewest < 0 || f < fewest ? f : fewest;
        total += f;
    }
    if (reduce_checked(comm, buf, MEDIUM, ROUNDS + 1) != 0)
        return 3;
    const long after = resident();
    printf("rank %d of %d: page faults per 32 MiB all-reduce once warm: %ld at fewest, %ld on "
           "average; resident %ld KiB before, %ld KiB after a smaller one\n",
           rank, nranks, fewest, total / (ROUNDS - 1), before >> 10, after >> 10);
    if (MEMORY_CHECKED && fewest > 4096) {
        fprintf(stderr,
                "rank %d: %ld page faults in each large all-reduce at least: its scratch was "
                "not kept\n",
                rank, fewest);
        bad = 1;
    }
    if (MEMORY_CHECKED && faults_allowed >= 0 && total / (ROUNDS - 1) > faults_allowed) {
        fprintf(stderr,
                "rank %d: %ld page faults per large all-reduce on average: its scratch was not "
                "always kept\n",
                rank, total / (ROUNDS - 1));
        bad = 1;
    }
    if (MEMORY_CHECKED && (before < 0 || after < 0 || after - before > allowed)) {
        fprintf(stderr,
                "rank %d: resident %ld KiB after the smaller all-reduce, %ld before the "
                "large ones: the scratch was not given back\n",
                rank, after >> 10, before >> 10);
        bad = 1;
    }
    /* idle: one more large operation and a large message that arrives before its receive,
     * then none; the resident set is looked at every 50 ms */
    if (reduce_checked(comm, buf, LARGE, ROUNDS + 2) != 0 ||
        late_recv_checked(comm, buf, LARGE, ROUNDS + 3) != 0)
        return 3;
    const long busy = resident();
    long idle = busy;
    int waited_ms = 0;
    for (; MEMORY_CHECKED && waited_ms < 5000 && idle - before > idle_allowed; waited_ms += 50) {
        struct timespec nap = {0, 50 * 1000000L};
        nanosleep(&nap, NULL);
        idle = resident();
    }
    printf("rank %d of %d: resident %ld KiB after a large all-reduce, %ld KiB %d ms later\n", rank,
           nranks, busy >> 10, idle >> 10, waited_ms);
    if (MEMORY_CHECKED && (idle < 0 || idle - before > idle_allowed)) {
        fprintf(stderr,
                "rank %d: resident %ld KiB 5 s after the last all-reduce, %ld before the large "
                "ones: an idle communicator kept its scratch or a transport its records\n",
                rank, idle >> 10, before >> 10);
        bad = 1;
    }
    printf("rank %d of %d: %ld checks, %ld wrong\n", rank, nranks, checks, wrong);
    tc_comm_destroy(comm);
    free(buf);
    return wrong || bad ? 1 : 0;
}
