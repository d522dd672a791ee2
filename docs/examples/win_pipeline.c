/* A pipeline that hands tensors from stage to stage by tc_win_put_signal:
 * stage 0 makes micro-batches, every stage applies its layer (x -> x * 2 + s)
 * and puts the result straight into the next stage's window; the last stage
 * checks every element. No message, no barrier between stages: the data and
 * its signal travel together, and credits come back as signals.
 *
 *   tcrun -n 4 win_pipeline [micro-batches]
 *
 * Each stage's window holds two receive buffers (micro-batch m lands in
 * buffer m % 2). Slot 0 counts micro-batches arrived from the previous stage;
 * slot 1 counts the buffers the next stage has consumed (credits): a stage
 * sends micro-batch m only once the next one consumed m - 2. Prints
 * "win_pipeline: stage S ok" and exits 0, or says what differs. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tcomms/tcomms.h"

#define M 65536 /* floats per micro-batch: 256 KiB */
#define TIMEOUT_MS 30000

static float input(int m, int i)
{
    return (float)((m * 31 + i) % 1024);
}

int main(int argc, char **argv)
{
    int nmb = argc > 1 ? atoi(argv[1]) : 16, stage, nstages;
    tc_comm_t *comm;
    if (tc_comm_create(NULL, &comm) != TC_OK) {
        fprintf(stderr, "win_pipeline: %s\n", tc_last_error());
        return 1;
    }
    tc_comm_rank(comm, &stage);
    tc_comm_size(comm, &nstages);
    float *bufs, *out = malloc(M * sizeof(float));
    tc_win_t *win;
    if (tc_win_allocate(comm, 2 * M * sizeof(float), NULL, (void **)&bufs, &win) != TC_OK) {
        fprintf(stderr, "win_pipeline: %s\n", tc_last_error());
        return 1;
    }
    int prev = stage - 1, next = stage + 1 < nstages ? stage + 1 : -1, bad = 0;
    tc_status_t st = TC_OK;
    uint64_t seen;
    for (int m = 0; m < nmb && st == TC_OK; m++) {
        const float *in = &bufs[(size_t)(m % 2) * M];
        if (prev >= 0) /* micro-batch m is in buffer m % 2 */
            st = tc_win_wait_signal(win, 0, TC_WIN_CMP_GE, (uint64_t)m + 1, TIMEOUT_MS, &seen);
        for (int i = 0; i < M && st == TC_OK; i++)
            out[i] = (prev >= 0 ? in[i] : input(m, i)) * 2.0f + (float)stage;
        if (st == TC_OK && prev >= 0) /* buffer m % 2 is free again: a credit */
            st = tc_win_signal(win, prev, 1, 1, TC_WIN_SIGNAL_ADD, NULL, NULL);
        if (st == TC_OK && next >= 0) {
            if (m >= 2) /* the next stage consumed micro-batch m - 2 */
                st = tc_win_wait_signal(win, 1, TC_WIN_CMP_GE, (uint64_t)m - 1, TIMEOUT_MS, &seen);
            if (st == TC_OK)
                st = tc_win_put_signal(win, out, M * sizeof(float), next,
                                       (uint64_t)(m % 2) * M * sizeof(float), 0, 1,
                                       TC_WIN_SIGNAL_ADD, NULL, NULL);
        }
        if (st == TC_OK && next < 0) { /* the last stage: every element */
            for (int i = 0; i < M; i++) {
                float want = input(m, i);
                for (int s = 0; s < nstages; s++)
                    want = want * 2.0f + (float)s;
                if (out[i] != want && bad++ < 5)
                    fprintf(stderr, "win_pipeline: micro-batch %d [%d] = %g, want %g\n", m, i,
                            out[i], want);
            }
        }
    }
    if (st != TC_OK) {
        fprintf(stderr, "win_pipeline: stage %d: %s\n", stage, tc_last_error());
        return 1;
    }
    if (tc_win_destroy(win) != TC_OK || tc_comm_destroy(comm) != TC_OK) {
        fprintf(stderr, "win_pipeline: %s\n", tc_last_error());
        return 1;
    }
    free(out);
    if (bad)
        return 1;
    printf("win_pipeline: stage %d ok\n", stage);
    return 0;
}
