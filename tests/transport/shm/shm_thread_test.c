/* Two threads, each with its own shm context, stream messages both ways at once and do
 * put + signal into each other's memory (the test that matters under --config=tsan). Worker
 * threads do not call cmocka: they return a line describing the first failure. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shm_util.h"
#include "tcomms/base/status.h"
#include "tcomms/base/time.h"
#include "tcomms/transport/shm.h"
#include "tcomms/transport/transport.h"
#include "tests/transport/tp_util.h"

#define NMSG 400
#define WIN 16 /* receives and sends in flight per direction */
#define REG (256 * 1024)

typedef struct shared {
    const char *hints;
    pthread_barrier_t bar;
    unsigned char addr[2][TC_TP_SHM_ADDR_LEN];
    unsigned char key[2][TC_TP_SHM_RKEY_LEN];
    char err[2][512];
} shared_t;

static size_t msg_len(int i)
{
    static const size_t big[] = {8192, 8193, 70000, 1u << 20};
    return i % 10 == 9 ? big[(i / 10) % 4] : (size_t)(i * 131) % 9000;
}

typedef struct worker {
    shared_t *sh;
    int me;
} worker_t;

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(sh->err[me], sizeof(sh->err[me]), __VA_ARGS__);                                   \
        goto out;                                                                                  \
    } while (0)

/* A worker's bounded wait (no cmocka in the workers). */
static tc_status_t wait1(tc_tp_ctx_t *ctx, tc_tp_req_t *req)
{
    return tc_tpt_wait_bare(ctx, req, SU_WAIT_MS, 1);
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    shared_t *sh = w->sh;
    int me = w->me;
    tc_tp_ctx_t *ctx = NULL;
    tc_tp_ep_t *ep = NULL;
    tc_tp_mem_t *mem = NULL;
    tc_tp_rkey_t *rk = NULL;
    unsigned char *reg = calloc(1, REG), *src = malloc(1u << 20);
    unsigned char *dst[WIN];
    tc_tp_req_t s[WIN], r[WIN];
    for (int k = 0; k < WIN; k++)
        dst[k] = malloc(1u << 20);
    size_t len;

    if (tc_shmt_ctx_try((uint64_t)me, "k", sh->hints, &ctx) != TC_OK)
        FAIL("ctx: %s", tc_last_error());
    tc_tp_addr_pack(ctx, sh->addr[me], TC_TP_SHM_ADDR_LEN, &len);
    if (tc_tp_mem_reg(ctx, reg, REG, &mem) != TC_OK ||
        tc_tp_rkey_pack(mem, sh->key[me], TC_TP_SHM_RKEY_LEN, &len) != TC_OK)
        FAIL("mem: %s", tc_last_error());
    pthread_barrier_wait(&sh->bar);
    if (tc_tp_ep_connect(ctx, (uint64_t)(1 - me), sh->addr[1 - me], TC_TP_SHM_ADDR_LEN, &ep) !=
        TC_OK)
        FAIL("connect: %s", tc_last_error());
    if (tc_tp_rkey_unpack(ep, sh->key[1 - me], TC_TP_SHM_RKEY_LEN, &rk) != TC_OK)
        FAIL("rkey: %s", tc_last_error());

    /* stream NMSG messages each way, WIN in flight, contents depend on the sender */
    tc_tpt_fill(src, 1u << 20, (uint64_t)me);
    for (int k = 0; k < WIN; k++)
        s[k] = r[k] = (tc_tp_req_t)TC_TP_REQ_INIT;
    for (int i = 0; i < NMSG + WIN; i++) {
        int k = i % WIN;
        if (i >= WIN) {
            int j = i - WIN;
            if (wait1(ctx, &r[k]) != TC_OK || r[k].bytes != msg_len(j))
                FAIL("recv %d: %s, %zu bytes: %s", j, tc_status_string(r[k].status), r[k].bytes,
                     tc_tp_ep_error(ep));
            if (tc_tpt_check(dst[k], msg_len(j), (uint64_t)(1 - me)) != msg_len(j))
                FAIL("recv %d: wrong contents", j);
            if (wait1(ctx, &s[k]) != TC_OK)
                FAIL("send %d: %s", j, tc_status_string(s[k].status));
        }
        if (i < NMSG) {
            s[k] = r[k] = (tc_tp_req_t)TC_TP_REQ_INIT;
            tc_tp_recv(ep, (uint64_t)i, dst[k], 1u << 20, &r[k]);
            tc_tp_send(ep, (uint64_t)i, src, msg_len(i), &s[k]);
        }
    }

    /* put 200 KiB into the peer, then signal; the peer waits for the signal, checks */
    tc_tp_req_t put = TC_TP_REQ_INIT, sig = TC_TP_REQ_INIT;
    if (tc_tp_put(ep, src, 200000, rk, 64, &put) != TC_OK ||
        tc_tp_signal(ep, rk, 8, TC_TP_SIGNAL_ADD, 7, &sig) != TC_OK)
        FAIL("put/signal: %s", tc_last_error());
    uint64_t deadline = tc_deadline_after_ms(SU_WAIT_MS);
    while ((tc_tp_signal_read(mem, 8) != 7 || put.status == TC_INPROGRESS ||
            sig.status == TC_INPROGRESS) &&
           !tc_deadline_passed(deadline))
        if (tc_tp_progress(ctx) == 0)
            tc_tp_wait(ctx, 1);
    if (tc_tp_signal_read(mem, 8) != 7 || put.status != TC_OK || sig.status != TC_OK)
        FAIL("signal %llu, put %s, signal %s", (unsigned long long)tc_tp_signal_read(mem, 8),
             tc_status_string(put.status), tc_status_string(sig.status));
    if (tc_tpt_check(reg + 64, 200000, (uint64_t)(1 - me)) != 200000)
        FAIL("put contents");
    /* nobody frees memory the other may still touch: a last exchange */
    tc_tp_req_t a = TC_TP_REQ_INIT, b = TC_TP_REQ_INIT;
    tc_tp_recv(ep, 9999, NULL, 0, &b);
    tc_tp_send(ep, 9999, NULL, 0, &a);
    if (wait1(ctx, &a) != TC_OK || wait1(ctx, &b) != TC_OK)
        FAIL("last exchange: %s", tc_tp_ep_error(ep));
out:
    pthread_barrier_wait(&sh->bar);
    tc_tp_rkey_release(rk);
    tc_tp_ep_close(ep);
    tc_tp_mem_dereg(mem);
    tc_tp_ctx_destroy(ctx);
    for (int k = 0; k < WIN; k++)
        free(dst[k]);
    free(reg);
    free(src);
    return NULL;
}

static void test_threads(void **state)
{
    shared_t sh;
    memset(&sh, 0, sizeof(sh));
    sh.hints = *state;
    pthread_barrier_init(&sh.bar, NULL, 2);
    pthread_t t[2];
    worker_t w[2] = {{&sh, 0}, {&sh, 1}};
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&sh.bar);
    for (int i = 0; i < 2; i++)
        if (sh.err[i][0] != '\0')
            fail_msg("thread %d: %s", i, sh.err[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(test_threads, ""),
        cmocka_unit_test_prestate(test_threads, "shm_cma=0"),
        cmocka_unit_test_prestate(test_threads, "shm_cma=0,shm_cells=4,shm_cell_size=256"),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
