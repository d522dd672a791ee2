/*
 * A pair without room in /dev/shm (docs/transport_shm.md, "Connection"): the side that connects
 * first decides, and both sides of the pair learn the same answer from their own connect.
 * - a pair whose segment does not fit (shm_full_pairs, as a full /dev/shm): both connects refuse
 *   the peer with TC_ERR_UNSUPPORTED, whichever side comes first, each naming the space; the name
 *   is gone once both have connected;
 * - only one side finds no room: if it comes first the pair falls back on both sides, if the
 *   other comes first the pair gets its segment and works (the first side's answer holds);
 * - the second side waits for the first's decision while the file is still empty, and reads a
 *   failed creation (both fail) and a name removed before any decision;
 * - a decision no one read is removed with the context that made it;
 * - what a pair's file says, from its size, owner and mode (tc_shm_seg_classify).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "transport/shm/src/shm_internal.h"
#include "shm_util.h"
#include "tcomms/base/status.h"

/* A file of the pair of @p ep exists under its name. */
static int name_exists(const char *name)
{
    int fd = shm_open(name, O_RDONLY, 0);
    if (fd >= 0)
        close(fd);
    return fd >= 0;
}

/* Connect both sides of a pair of contexts with hints @p h0 / @p h1, side @p first first;
 * returns each side's status in st[] (an endpoint that came up in ep[]). */
static void connect_pair(tp_pair_t *p, const char *h0, const char *h1, int first, tc_status_t st[2],
                         char err[2][512])
{
    unsigned char addr[2][TC_TP_SHM_ADDR_LEN];
    p->ctx[0] = tc_shmt_ctx_new(0, "s", h0);
    p->ctx[1] = tc_shmt_ctx_new(1, "s", h1);
    for (int i = 0; i < 2; i++)
        tc_shmt_addr(p->ctx[i], addr[i]);
    for (int k = 0; k < 2; k++) {
        int i = k == 0 ? first : 1 - first;
        p->ep[i] = NULL;
        st[i] = tc_tp_ep_connect(p->ctx[i], (uint64_t)(1 - i), addr[1 - i], TC_TP_SHM_ADDR_LEN,
                                 &p->ep[i]);
        snprintf(err[i], 512, "%s", st[i] == TC_OK ? "" : tc_last_error());
    }
}

static void close_pair(tp_pair_t *p)
{
    for (int i = 0; i < 2; i++) {
        if (p->ep[i])
            tc_tp_ep_close(p->ep[i]);
        tc_tp_ctx_destroy(p->ctx[i]);
    }
}

static void test_no_room_both_orders(void **state)
{
    (void)state;
    for (int first = 0; first < 2; first++) {
        tp_pair_t p;
        tc_status_t st[2];
        char err[2][512];
        connect_pair(&p, "shm_full_pairs=0-1", "shm_full_pairs=1-0", first, st, err);
        for (int i = 0; i < 2; i++) {
            assert_int_equal(st[i], TC_ERR_UNSUPPORTED);
            assert_null(p.ep[i]);
            assert_non_null(strstr(err[i], "no room in /dev/shm"));
            assert_non_null(strstr(err[i], "bytes"));
            assert_non_null(strstr(err[i], "free"));
        }
        /* the first names the decision as its own, the second as the peer's */
        assert_non_null(strstr(err[first], "shm: no room in /dev/shm for a segment with peer"));
        assert_non_null(strstr(err[1 - first], "found no room"));
        /* the decision was read: its name is gone */
        const tc_shm_ctx_t *x = (const tc_shm_ctx_t *)p.ctx[first];
        assert_int_equal(x->nmarks, 1);
        assert_false(name_exists(x->marks[0]));
        close_pair(&p);
    }
}

/* Only ctx 0 finds no room: its decision holds when it comes first; the other way the pair has
 * its segment and works. */
static void test_first_decides(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_status_t st[2];
    char err[2][512];
    connect_pair(&p, "shm_full_pairs=0-1", NULL, 0, st, err);
    assert_int_equal(st[0], TC_ERR_UNSUPPORTED);
    assert_int_equal(st[1], TC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err[1], "peer 0"));
    close_pair(&p);

    connect_pair(&p, "shm_full_pairs=0-1", NULL, 1, st, err);
    assert_int_equal(st[0], TC_OK);
    assert_int_equal(st[1], TC_OK);
    assert_int_equal(((tc_shm_ep_t *)p.ep[1])->side, 0); /* ctx 1 made it */
    assert_int_equal(((tc_shm_ep_t *)p.ep[0])->side, 1);
    tc_tpt_pair_up(&p, SU_WAIT_MS);
    unsigned char msg[3000];
    tc_tpt_fill(msg, sizeof(msg), 3);
    tc_tpt_transfer(&p, 0, 7, msg, sizeof(msg), 3, 1);
    tc_tpt_transfer(&p, 1, 8, msg, 100, 3, 0);
    tc_tpt_pair_close(&p);
}

/* A decision that the peer never read goes with the context that made it. */
static void test_unread_decision_removed(void **state)
{
    (void)state;
    tc_tp_ctx_t *c0 = tc_shmt_ctx_new(0, NULL, "shm_full_pairs=0-1");
    tc_tp_ctx_t *c1 = tc_shmt_ctx_new(1, NULL, NULL);
    unsigned char addr[TC_TP_SHM_ADDR_LEN];
    tc_shmt_addr(c1, addr);
    tc_tp_ep_t *ep = NULL;
    assert_int_equal(tc_tp_ep_connect(c0, 1, addr, sizeof(addr), &ep), TC_ERR_UNSUPPORTED);
    tc_shm_ctx_t *x = (tc_shm_ctx_t *)c0;
    assert_int_equal(x->nmarks, 1);
    char name[96];
    snprintf(name, sizeof(name), "%s", x->marks[0]);
    assert_true(name_exists(name));
    tc_tp_ctx_destroy(c0);
    assert_false(name_exists(name));
    tc_tp_ctx_destroy(c1);
}

/* The second side, by hand: a file of the pair made here plays the first side. */
typedef struct {
    int fd;
    char name[96];
    int action; /* 0: size NOFIT, 1: size FAILED, 2: unlink */
} late_t;

static void *late_decide(void *arg)
{
    late_t *l = arg;
    struct timespec d = {0, 30 * 1000000L};
    nanosleep(&d, NULL);
    if (l->action == 2)
        shm_unlink(l->name);
    else
        assert_int_equal(ftruncate(l->fd, l->action == 0 ? TC_SHM_SEG_NOFIT : TC_SHM_SEG_FAILED),
                         0);
    return NULL;
}

static void test_second_side_waits(void **state)
{
    (void)state;
    static const tc_status_t want[3] = {TC_ERR_UNSUPPORTED, TC_ERR_PEER_FAILED, TC_ERR_PEER_FAILED};
    static const char *const says[3] = {"found no room", "could not make the pair's segment",
                                        "removed the pair's segment"};
    for (int action = 0; action < 3; action++) {
        /* ctx 1 and a peer with id 0 that is this process (the smaller id comes first) */
        tc_tp_ctx_t *c1 = tc_shmt_ctx_new(1, NULL, NULL), *c0 = tc_shmt_ctx_new(0, NULL, NULL);
        unsigned char a0[TC_TP_SHM_ADDR_LEN], a1[TC_TP_SHM_ADDR_LEN];
        tc_shmt_addr(c0, a0);
        tc_shmt_addr(c1, a1);
        uint64_t n0, n1;
        memcpy(&n0, a0 + 24, 8);
        memcpy(&n1, a1 + 24, 8);
        late_t l = {.action = action};
        snprintf(l.name, sizeof(l.name), "/tcomms-%d-%016llx-%016llx", (int)getpid(),
                 (unsigned long long)n0, (unsigned long long)n1);
        l.fd = shm_open(l.name, O_RDWR | O_CREAT | O_EXCL, 0600);
        assert_true(l.fd >= 0);
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, late_decide, &l), 0);
        tc_tp_ep_t *ep = NULL;
        assert_int_equal(tc_tp_ep_connect(c1, 0, a0, sizeof(a0), &ep), want[action]);
        assert_non_null(strstr(tc_last_error(), says[action]));
        assert_null(ep);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_false(name_exists(l.name)); /* read and removed by the second side */
        close(l.fd);
        tc_tp_ctx_destroy(c0);
        tc_tp_ctx_destroy(c1);
    }
}

static void test_classify(void **state)
{
    (void)state;
    const uint32_t me = 1000;
    assert_int_equal(tc_shm_seg_classify(0, 1, me, 0100600, me), TC_SHM_SEG_PENDING);
    assert_int_equal(tc_shm_seg_classify(0, 0, me, 0100600, me), TC_SHM_SEG_GONE);
    assert_int_equal(tc_shm_seg_classify(1, 1, me, 0100600, me), TC_SHM_SEG_NOFIT);
    assert_int_equal(tc_shm_seg_classify(2, 0, me, 0100600, me), TC_SHM_SEG_FAILED);
    assert_int_equal(tc_shm_seg_classify(3, 1, me, 0100600, me), TC_SHM_SEG_BAD);
    assert_int_equal(tc_shm_seg_classify(TC_SHM_HDR_SIZE - 1, 1, me, 0100600, me), TC_SHM_SEG_BAD);
    assert_int_equal(tc_shm_seg_classify(TC_SHM_HDR_SIZE, 1, me, 0100600, me), TC_SHM_SEG_READY);
    assert_int_equal(tc_shm_seg_classify(UINT64_MAX, 1, me, 0100600, me), TC_SHM_SEG_READY);
    /* another user's file, or one others may open, is no decision of the peer's */
    assert_int_equal(tc_shm_seg_classify(1, 1, me + 1, 0100600, me), TC_SHM_SEG_BAD);
    assert_int_equal(tc_shm_seg_classify(1, 1, me, 0100640, me), TC_SHM_SEG_BAD);
    assert_int_equal(tc_shm_seg_classify(TC_SHM_HDR_SIZE, 1, me, 0100606, me), TC_SHM_SEG_BAD);
}

static void test_bad_pairs(void **state)
{
    (void)state;
    static const char *const bad[] = {"shm_full_pairs=1",   "shm_full_pairs=1-1",
                                      "shm_full_pairs=a-b", "shm_full_pairs=0-1;2-3",
                                      "shm_full_pairs=-1",  "shm_full_pairs=0-"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        tc_tp_ctx_t *ctx = NULL;
        assert_int_equal(tc_shmt_ctx_try(0, NULL, bad[i], &ctx), TC_ERR_CONFIG);
        assert_non_null(strstr(tc_last_error(), "shm_full_pairs"));
    }
    tc_tp_ctx_t *ctx = tc_shmt_ctx_new(3, NULL, "shm_full_pairs=0-1 3-9 12-3");
    tc_shm_ctx_t *x = (tc_shm_ctx_t *)ctx;
    assert_int_equal(x->nfull, 2);
    assert_true(tc_shm_pair_full(x, 9) && tc_shm_pair_full(x, 12));
    assert_false(tc_shm_pair_full(x, 0) || tc_shm_pair_full(x, 1));
    tc_tp_ctx_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_room_both_orders),
        cmocka_unit_test(test_first_decides),
        cmocka_unit_test(test_unread_decision_removed),
        cmocka_unit_test(test_second_side_waits),
        cmocka_unit_test(test_classify),
        cmocka_unit_test(test_bad_pairs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
