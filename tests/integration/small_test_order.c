/* The small-message path's operations that are works post in issue order (small.h): many
 * asynchronous all-reduces in flight at once, of 4 KiB (on the lanes, which hold 4 such
 * messages per direction) between ones of 16 KiB (the general path), then each waited for and
 * checked element by element; again with a blocking small one every fifth issue. (Posted in any
 * order, later ones filled a peer's slots while an earlier one waited for one: every rank
 * waited for another's earlier message until the timeout, 2 of 3 runs at 3 ranks.) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "small_test.h"

#define ORDER_OPS 40

/* One round; @p blocking: with the blocking ones. */
static void order_round(tc_comm_t *comm, int blocking)
{
    static float buf[ORDER_OPS][4001];
    tc_work_t *w[ORDER_OPS] = {NULL};
    tc_op_opts_t o = TC_OP_OPTS_INIT;
    o.async = 1;
    for (int k = 0; k < ORDER_OPS; k++) {
        size_t m = k % 2 ? 4001 : 1001; /* 16 KiB on the general path, 4 KiB on the lanes */
        for (size_t i = 0; i < m; i++)
            buf[k][i] = (float)(rank + k + (int)(i % 7));
        if (blocking && k % 5 == 0) {
            float x = (float)rank, y = -1;
            ok(tc_all_reduce(comm, &x, &y, 1, TC_FLOAT32, TC_SUM, NULL, NULL), "order: blocking");
            EXPECT(y == (float)(nranks * (nranks - 1) / 2), "order: blocking %d got %g", k, y);
        }
        ok(tc_all_reduce(comm, buf[k], buf[k], m, TC_FLOAT32, TC_SUM, &o, &w[k]), "order: issue");
    }
    for (int k = 0; k < ORDER_OPS; k++) {
        if (!w[k])
            continue;
        ok(tc_work_wait(w[k], 60000), "order: wait");
        ok(tc_work_free(w[k]), "order: free");
        size_t m = k % 2 ? 4001 : 1001, wrong = 0;
        for (size_t i = 0; i < m; i++) {
            float want = (float)(nranks * (k + (int)(i % 7)) + nranks * (nranks - 1) / 2);
            wrong += buf[k][i] != want;
        }
        EXPECT(wrong == 0, "order: all-reduce %d: %zu of %zu elements wrong", k, wrong, m);
    }
}

void order_mode(tc_comm_t *comm)
{
    order_round(comm, 0);
    order_round(comm, 1);
}
