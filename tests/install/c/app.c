/* A C program built from the installed prefix with pkg-config, outside Bazel:
 *   cc app.c $(pkg-config --cflags --libs --static tcomms)
 * All-reduces (sum of float32, max of int64, in place and out of place) and checks every element
 * against values computed here from the ranks' inputs. Exit 0 only when all are right. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tcomms/tcomms.h"

#define N 100003 /* odd, not a multiple of any chunk */

static int fail(const char *what)
{
    fprintf(stderr, "install consumer (C): %s: %s\n", what, tc_last_error());
    return 1;
}

int main(void)
{
    tc_comm_t *comm;
    int rank, size, bad = 0;
    float *in = malloc(N * sizeof(float)), *out = malloc(N * sizeof(float));
    int64_t *v = malloc(N * sizeof(int64_t));

    if (in == NULL || out == NULL || v == NULL)
        return 1;
    if (tc_version() != TC_VERSION) {
        fprintf(stderr, "library version %d, header %d\n", tc_version(), TC_VERSION);
        return 1;
    }
    if (tc_comm_create(NULL, &comm) != TC_OK)
        return fail("tc_comm_create");
    if (tc_comm_rank(comm, &rank) != TC_OK || tc_comm_size(comm, &size) != TC_OK)
        return fail("rank/size");
    for (size_t i = 0; i < N; i++) {
        in[i] = (float)((rank + 1) * (int)(i % 1000));
        v[i] = (int64_t)((i * 7919u + (size_t)rank * 104729u) % 1000003u) - 500000;
    }
    if (tc_all_reduce(comm, in, out, N, TC_FLOAT32, TC_SUM, NULL, NULL) != TC_OK)
        return fail("tc_all_reduce float32 sum");
    if (tc_all_reduce(comm, v, v, N, TC_INT64, TC_MAX, NULL, NULL) != TC_OK)
        return fail("tc_all_reduce int64 max in place");
    for (size_t i = 0; i < N; i++) {
        float want = (float)(size * (size + 1) / 2 * (int)(i % 1000)); /* exact in float32 */
        int64_t vmax = INT64_MIN;
        for (int r = 0; r < size; r++) {
            int64_t x = (int64_t)((i * 7919u + (size_t)r * 104729u) % 1000003u) - 500000;
            vmax = x > vmax ? x : vmax;
        }
        if (out[i] != want || v[i] != vmax) {
            if (bad++ < 5)
                fprintf(stderr, "rank %d: element %zu: %g (want %g), %lld (want %lld)\n", rank, i,
                        out[i], want, (long long)v[i], (long long)vmax);
        }
    }
    if (tc_comm_destroy(comm) != TC_OK)
        return fail("tc_comm_destroy");
    if (bad == 0)
        printf("rank %d of %d: %d elements right (tcomms %d)\n", rank, size, 2 * N, tc_version());
    free(in);
    free(out);
    free(v);
    return bad != 0;
}
