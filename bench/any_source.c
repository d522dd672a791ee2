/* Receives from any source against receives from given ranks, with tcomms' public API: rounds of
 * "every other rank sends 8 bytes to rank 0, which takes them all, then answers each with 8
 * bytes". Rank 0 takes them with receives from any source (tc_recv with TC_ANY_SOURCE, the rank
 * read back with tc_work_source) or from each rank in turn. Every message is checked (its
 * source's rank and the round). Prints "mode us_per_round" from rank 0; bench/run_any_source.sh
 * runs it beside Open MPI's MPI_ANY_SOURCE (bench/peers/mpi_any_source.c).
 *   any_source [-n rounds] [-w warmup] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "tcomms/tcomms.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int fail(const char *what, tc_status_t st)
{
    fprintf(stderr, "any_source: %s: %s: %s\n", what, tc_status_string(st), tc_last_error());
    return 1;
}

/* One round; rank 0 checks what arrives. */
static int round_once(tc_comm_t *comm, int rank, int size, int any, int64_t round)
{
    tc_status_t st;
    if (rank != 0) {
        int64_t mine = round * 1000 + rank, back = -1;
        if ((st = tc_send(comm, &mine, 1, TC_INT64, 0, NULL, NULL)) != TC_OK ||
            (st = tc_recv(comm, &back, 1, TC_INT64, 0, NULL, NULL)) != TC_OK)
            return fail("send or answer", st);
        return back == round ? 0 : (fprintf(stderr, "any_source: answer %lld\n", (long long)back), 1);
    }
    uint64_t seen = 0;
    for (int k = 1; k < size; k++) {
        int64_t got = -1;
        int src = k;
        if (any) {
            tc_work_t *w = NULL;
            if ((st = tc_recv(comm, &got, 1, TC_INT64, TC_ANY_SOURCE, NULL, &w)) != TC_OK ||
                (st = tc_work_source(w, &src)) != TC_OK)
                return fail("recv from any source", st);
            tc_work_free(w);
        } else if ((st = tc_recv(comm, &got, 1, TC_INT64, k, NULL, NULL)) != TC_OK) {
            return fail("recv", st);
        }
        if (got != round * 1000 + src || src < 1 || src >= size || (seen >> src & 1)) {
            fprintf(stderr, "any_source: round %lld: %lld from rank %d\n", (long long)round,
                    (long long)got, src);
            return 1;
        }
        seen |= UINT64_C(1) << src;
    }
    for (int q = 1; q < size; q++)
        if ((st = tc_send(comm, &round, 1, TC_INT64, q, NULL, NULL)) != TC_OK)
            return fail("answer", st);
    return 0;
}

int main(int argc, char **argv)
{
    int rounds = 20000, warmup = 1000, c;
    while ((c = getopt(argc, argv, "n:w:")) != -1) {
        if (c == 'n')
            rounds = atoi(optarg);
        else if (c == 'w')
            warmup = atoi(optarg);
        else
            return 2;
    }
    tc_comm_t *comm;
    tc_status_t st = tc_comm_create(NULL, &comm);
    if (st != TC_OK)
        return fail("tc_comm_create", st);
    int rank, size;
    tc_comm_rank(comm, &rank);
    tc_comm_size(comm, &size);
    if (size < 2 || size > 64) {
        fprintf(stderr, "any_source: 2 to 64 ranks\n");
        return 2;
    }
    int bad = 0;
    for (int any = 0; any < 2 && !bad; any++) {
        int64_t r = 0;
        for (int i = 0; i < warmup && !bad; i++)
            bad = round_once(comm, rank, size, any, r++);
        if ((st = tc_barrier(comm, NULL, NULL)) != TC_OK)
            return fail("barrier", st);
        double t0 = now_s();
        for (int i = 0; i < rounds && !bad; i++)
            bad = round_once(comm, rank, size, any, r++);
        double us = (now_s() - t0) * 1e6 / rounds;
        if (rank == 0 && !bad)
            printf("%s %.2f\n", any ? "any" : "given", us);
    }
    tc_comm_destroy(comm);
    return bad;
}
