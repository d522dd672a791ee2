/* Halo exchange with windows: a 1-D Jacobi stencil split over the ranks, each
 * iteration sending the edge cells straight into the neighbours' halo cells
 * with tc_win_put_signal; a rank waits for its two halos by their signal
 * slots, not by a message or a barrier.
 *
 *   tcrun -n 4 win_halo [iterations]
 *
 * Each rank owns N cells; its window holds them and, for each iteration's
 * parity, a left and a right halo cell (a neighbour is at most one iteration
 * ahead: it needs this rank's next edge to go on). Slot 0 counts the halos
 * from the left, slot 1 those from the right. At the end every rank checks
 * its cells against the same stencil run on the whole domain here, element by
 * element (the arithmetic is the same, in the same order: equal bit for bit).
 * Prints "win_halo: rank R ok" and exits 0, or says what differs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/tcomms.h"

#define N 1000
#define TIMEOUT_MS 30000

/* window layout, in doubles: [0, N) the cells, then halo[parity][side] */
#define HALO(parity, side) (N + 2 * (parity) + (side))

static double init(int g)
{
    return (double)((g * 7919) % 1000) / 10.0;
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 200, rank, size;
    tc_comm_t *comm;
    if (tc_comm_create(NULL, &comm) != TC_OK) {
        fprintf(stderr, "win_halo: %s\n", tc_last_error());
        return 1;
    }
    tc_comm_rank(comm, &rank);
    tc_comm_size(comm, &size);
    double *u;
    tc_win_t *win;
    if (tc_win_allocate(comm, (N + 4) * sizeof(double), NULL, (void **)&u, &win) != TC_OK) {
        fprintf(stderr, "win_halo: %s\n", tc_last_error());
        return 1;
    }
    for (int i = 0; i < N; i++)
        u[i] = init(rank * N + i);
    double *next = malloc(N * sizeof(double));
    int left = rank - 1, right = rank + 1; /* the domain's ends keep fixed boundary values */
    tc_status_t st = TC_OK;
    for (int it = 0; it < iters && st == TC_OK; it++) {
        int par = it % 2;
        /* my edges into the neighbours' halos of this iteration, then their signal */
        if (left >= 0)
            st = tc_win_put_signal(win, &u[0], sizeof(double), left, HALO(par, 1) * sizeof(double),
                                   1, 1, TC_WIN_SIGNAL_ADD, NULL, NULL);
        if (st == TC_OK && right < size)
            st = tc_win_put_signal(win, &u[N - 1], sizeof(double), right,
                                   HALO(par, 0) * sizeof(double), 0, 1, TC_WIN_SIGNAL_ADD, NULL,
                                   NULL);
        uint64_t seen;
        if (st == TC_OK && left >= 0)
            st = tc_win_wait_signal(win, 0, TC_WIN_CMP_GE, (uint64_t)it + 1, TIMEOUT_MS, &seen);
        if (st == TC_OK && right < size)
            st = tc_win_wait_signal(win, 1, TC_WIN_CMP_GE, (uint64_t)it + 1, TIMEOUT_MS, &seen);
        double lh = left >= 0 ? u[HALO(par, 0)] : u[0];
        double rh = right < size ? u[HALO(par, 1)] : u[N - 1];
        for (int i = 0; i < N; i++) {
            double a = i ? u[i - 1] : lh, c = i < N - 1 ? u[i + 1] : rh;
            int g = rank * N + i;
            next[i] = g == 0 || g == size * N - 1 ? u[i] : (a + u[i] + c) / 3.0;
        }
        memcpy(u, next, N * sizeof(double)); /* my cells: nobody else writes them */
    }
    if (st != TC_OK) {
        fprintf(stderr, "win_halo: rank %d: %s\n", rank, tc_last_error());
        return 1;
    }
    /* the whole domain, here */
    int total = size * N, bad = 0;
    double *ref = malloc((size_t)total * sizeof(double)),
           *tmp = malloc((size_t)total * sizeof(double));
    for (int g = 0; g < total; g++)
        ref[g] = init(g);
    for (int it = 0; it < iters; it++) {
        for (int g = 0; g < total; g++)
            tmp[g] = g == 0 || g == total - 1 ? ref[g] : (ref[g - 1] + ref[g] + ref[g + 1]) / 3.0;
        memcpy(ref, tmp, (size_t)total * sizeof(double));
    }
    for (int i = 0; i < N; i++)
        if (u[i] != ref[rank * N + i] && bad++ < 5)
            fprintf(stderr, "win_halo: rank %d cell %d: %.17g, want %.17g\n", rank, i, u[i],
                    ref[rank * N + i]);
    tc_barrier(comm, NULL, NULL); /* every neighbour is done reading my halos */
    if (tc_win_destroy(win) != TC_OK || tc_comm_destroy(comm) != TC_OK) {
        fprintf(stderr, "win_halo: %s\n", tc_last_error());
        return 1;
    }
    free(ref);
    free(tmp);
    free(next);
    if (bad)
        return 1;
    printf("win_halo: rank %d ok\n", rank);
    return 0;
}
