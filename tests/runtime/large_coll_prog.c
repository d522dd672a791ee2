/* Large collectives, element by element: all-reduce, reduce-scatter and
 * all-gather of several MiB (blocks above the ring's 2 MiB pieces, messages
 * above the shm staging area), out of place and in place, in integer and
 * floating types, against a reference computed here from the inputs' formula.
 * Prints "N checks, M wrong" per rank. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/tcomms.h"

static int rank, nranks;
static long checks, wrong;

/* Rank r's input element i: small integers, exact in every type used here. */
static int64_t input(int r, size_t i)
{
    return (int64_t)((i * 7 + (size_t)r * 13) % 101) - 50;
}

static void check(const char *what, size_t i, double got, double want)
{
    checks++;
    if (got != want && wrong++ < 5)
        fprintf(stderr, "rank %d: %s: element %zu is %g, expected %g\n", rank, what, i, got, want);
}

static double get(const void *b, size_t i, tc_dtype_t t)
{
    return t == TC_INT32 ? ((const int32_t *)b)[i] : ((const double *)b)[i];
}

static void put(void *b, size_t i, tc_dtype_t t, int64_t v)
{
    if (t == TC_INT32)
        ((int32_t *)b)[i] = (int32_t)v;
    else
        ((double *)b)[i] = (double)v;
}

static double sum_at(size_t i)
{
    double s = 0;
    for (int r = 0; r < nranks; r++)
        s += (double)input(r, i);
    return s;
}

static int run(tc_comm_t *comm, tc_dtype_t t, size_t block, int in_place)
{
    const size_t es = t == TC_INT32 ? 4 : 8, total = block * (size_t)nranks;
    char *send = malloc(total * es), *recv = malloc(total * es);
    char what[96];
    if (!send || !recv)
        return -1;
    /* all-reduce of the whole vector */
    for (size_t i = 0; i < total; i++)
        put(send, i, t, input(rank, i));
    memcpy(recv, send, total * es);
    snprintf(what, sizeof(what), "all_reduce %zu %s%s", total, t == TC_INT32 ? "int32" : "float64",
             in_place ? " in place" : "");
    if (tc_all_reduce(comm, in_place ? recv : send, recv, total, t, TC_SUM, NULL, NULL) != TC_OK)
        return -1;
    for (size_t i = 0; i < total; i++)
        check(what, i, get(recv, i, t), sum_at(i));
    /* reduce-scatter: block rank of the sum */
    memcpy(recv, send, total * es);
    snprintf(what, sizeof(what), "reduce_scatter %zu%s", block, in_place ? " in place" : "");
    if (tc_reduce_scatter(comm, in_place ? recv : send, recv, block, t, TC_SUM, NULL, NULL) !=
        TC_OK)
        return -1;
    const size_t at = in_place ? block * (size_t)rank : 0;
    for (size_t i = 0; i < block; i++)
        check(what, i, get(recv, at + i, t), sum_at(block * (size_t)rank + i));
    /* all-gather: block q of the output is rank q's input block */
    for (size_t i = 0; i < block; i++)
        put(in_place ? recv + block * (size_t)rank * es : send, i, t, input(rank, i));
    snprintf(what, sizeof(what), "all_gather %zu%s", block, in_place ? " in place" : "");
    if (tc_all_gather(comm, in_place ? recv + block * (size_t)rank * es : send, recv, block, t,
                      NULL, NULL) != TC_OK)
        return -1;
    for (size_t i = 0; i < total; i++)
        check(what, i, get(recv, i, t), (double)input((int)(i / block), i % block));
    free(send);
    free(recv);
    return 0;
}

int main(void)
{
    tc_comm_t *comm;
    if (tc_comm_create(NULL, &comm) != TC_OK) {
        fprintf(stderr, "tc_comm_create: %s\n", tc_last_error());
        return 2;
    }
    tc_comm_rank(comm, &rank);
    tc_comm_size(comm, &nranks);
    /* blocks: odd element counts, above and below the 2 MiB pieces */
    static const size_t blocks[] = {(3u << 20) / 4 + 3, (1u << 17) + 1};
    for (int b = 0; b < 2; b++)
        for (int ip = 0; ip < 2; ip++)
            if (run(comm, b ? TC_FLOAT64 : TC_INT32, blocks[b], ip) != 0) {
                fprintf(stderr, "rank %d: %s\n", rank, tc_last_error());
                return 3;
            }
    printf("rank %d of %d: %ld checks, %ld wrong\n", rank, nranks, checks, wrong);
    tc_comm_destroy(comm);
    return wrong ? 1 : 0;
}
