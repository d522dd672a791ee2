/* Point-to-point between 2 ranks into a receive buffer placed a given number of bytes past a
 * page boundary (the send buffer is page-aligned): the shm single-copy path at every distance
 * of the kernel's copy (docs/kernels.md, "Copies").
 *
 *   tcrun -n 2 bazel-bin/bench/p2p_offset [BYTES [OFFSET [ITERS]]]   (1 MiB, 16, 200)
 *
 * Rank 0 sends BYTES, rank 1 answers with 8 bytes, ITERS times after 10 warm-up rounds; rank 1
 * prints the time per message and checks every byte of the last one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/tcomms.h"
#include "tcomms/base/time.h"

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 0) : (size_t)1 << 20;
    size_t off = argc > 2 ? strtoul(argv[2], NULL, 0) : 16;
    int iters = argc > 3 ? atoi(argv[3]) : 200, rank, wrong = 0;
    tc_comm_t *comm;
    if (n == 0 || off >= 4096 || iters < 1 || tc_comm_create(NULL, &comm) != TC_OK) {
        fprintf(stderr, "p2p_offset: bad arguments or no communicator: %s\n", tc_last_error());
        return 1;
    }
    tc_comm_rank(comm, &rank);
    size_t area = (n + 8192 + 4095) / 4096 * 4096;
    unsigned char *buf = aligned_alloc(4096, area);
    if (!buf)
        return 1;
    for (size_t i = 0; i < area; i++)
        buf[i] = (unsigned char)(i * 7 + (size_t)rank);
    unsigned char *p = buf + (rank == 1 ? off : 0);
    double t0 = 0;
    tc_status_t st = TC_OK;
    for (int i = -10; i < iters && st == TC_OK; i++) {
        if (i == 0 && (st = tc_barrier(comm, NULL, NULL)) == TC_OK)
            t0 = tc_time_s();
        if (rank == 0) {
            if ((st = tc_send(comm, p, n, TC_UINT8, 1, NULL, NULL)) == TC_OK)
                st = tc_recv(comm, p, 8, TC_UINT8, 1, NULL, NULL);
        } else if (rank == 1) {
            memset(p, 0, 64);
            if ((st = tc_recv(comm, p, n, TC_UINT8, 0, NULL, NULL)) == TC_OK && i == iters - 1)
                for (size_t k = 0; k < n; k++)
                    wrong += p[k] != (unsigned char)(k * 7);
            if (st == TC_OK)
                st = tc_send(comm, p, 8, TC_UINT8, 0, NULL, NULL);
        }
    }
    double t = (tc_time_s() - t0) / iters;
    if (st != TC_OK)
        fprintf(stderr, "rank %d: %s: %s\n", rank, tc_status_string(st), tc_last_error());
    else if (rank == 1)
        printf("%zu B into a buffer %zu bytes past a page: %.1f us per message, %.2f GB/s, %d "
               "wrong bytes\n",
               n, off, t * 1e6, (double)n / t / 1e9, wrong);
    tc_comm_destroy(comm);
    free(buf);
    return st != TC_OK || wrong != 0;
}
