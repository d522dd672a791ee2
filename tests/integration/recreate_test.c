/* Create, use and destroy the world communicator again and again, as elastic training and
 * test harnesses do:
 *
 *   recreate_test [CYCLES]        (default 20)
 *
 * Every cycle all-reduces the cycle number and the rank and checks the sums. Prints
 * "rank R: C cycles, 0 failures" and exits 0 only when every cycle succeeded. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tcomms/tcomms.h"

int main(int argc, char **argv)
{
    int cycles = argc > 1 ? atoi(argv[1]) : 20;
    if (cycles < 1) {
        fprintf(stderr, "usage: recreate_test [CYCLES >= 1]\n");
        return 2;
    }
    int rank = -1;
    for (int c = 0; c < cycles; c++) {
        tc_comm_t *comm;
        if (tc_comm_create(NULL, &comm) != TC_OK) {
            fprintf(stderr, "rank %d: cycle %d: create: %s\n", rank, c, tc_last_error());
            return 1;
        }
        int size;
        tc_comm_rank(comm, &rank);
        tc_comm_size(comm, &size);
        int64_t in[2] = {c, rank}, out[2] = {0, 0};
        tc_status_t st = tc_all_reduce(comm, in, out, 2, TC_INT64, TC_SUM, NULL, NULL);
        if (st != TC_OK || out[0] != (int64_t)c * size ||
            out[1] != (int64_t)size * (size - 1) / 2) {
            fprintf(stderr, "rank %d: cycle %d: all_reduce: %s (got %lld %lld)\n", rank, c,
                    st != TC_OK ? tc_last_error() : "wrong sums", (long long)out[0],
                    (long long)out[1]);
            return 1;
        }
        if (tc_comm_destroy(comm) != TC_OK) {
            fprintf(stderr, "rank %d: cycle %d: destroy: %s\n", rank, c, tc_last_error());
            return 1;
        }
    }
    printf("rank %d: %d cycles, 0 failures\n", rank, cycles);
    return 0;
}
