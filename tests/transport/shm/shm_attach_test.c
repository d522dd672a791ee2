/* The two halves of the shm handshake that follow the system calls (shm_ep.c), on harness
 * memory: the creator's header (tc_shm_ep_seg_init) and the opener's checks of it
 * (tc_shm_ep_attach): a creator's header is attached to and answered, a malformed one fails the
 * endpoint with the reason, one without its magic is left for later (and unmapped). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tcomms/base/log.h"
#include "tcomms/transport/shm.h"
#include "tcomms/transport/shm_layout.h"
#include "tcomms/transport/transport.h"
#include "transport/shm/src/shm_internal.h"

#define SIZE \
    (TC_SHM_HDR_SIZE + 2 * (2 * TC_SHM_LINE + 4 * (TC_SHM_CELL_HDR + 64)) + 2 * TC_SHM_LANE_BYTES)

static tc_shm_ep_t *ep_new(tc_tp_ctx_t *ctx, uint64_t peer, int side)
{
    tc_shm_ep_t *ep = calloc(1, sizeof(*ep));
    assert_non_null(ep);
    ep->super.ops = &tc_tp_shm_ops;
    ep->super.ctx = ctx;
    ep->super.peer_id = peer;
    ep->super.failed = TC_OK;
    ep->peer_pid = getpid();
    ep->side = side;
    ep->pidfd = -1;
    snprintf(ep->name, sizeof(ep->name), "/tcomms-attach-test-%d", (int)getpid());
    return ep;
}

static void *map(void)
{
    void *p = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(p != MAP_FAILED);
    return p;
}

static void test_attach(void **state)
{
    (void)state;
    tc_tp_ctx_t *a, *b;
    tc_tp_ctx_params_t p = TC_TP_CTX_PARAMS_INIT;
    p.self_id = 5;
    assert_int_equal(tc_tp_ctx_create(&tc_tp_shm_ops, &p, &a), TC_OK);
    p.self_id = 9;
    assert_int_equal(tc_tp_ctx_create(&tc_tp_shm_ops, &p, &b), TC_OK);
    tc_shm_ctx_t *ca = (tc_shm_ctx_t *)a, *cb = (tc_shm_ctx_t *)b;
    ca->cell_size = 64;
    ca->ncells = 4;

    /* the creator's header */
    tc_shm_ep_t *cr = ep_new(a, 9, 0);
    unsigned char *seg = map();
    tc_shm_ep_seg_init(ca, cr, seg, SIZE);
    tc_shm_seg_hdr_t *h = (tc_shm_seg_hdr_t *)(void *)seg;
    assert_int_equal(cr->state, TC_SHM_EP_CONNECTING);
    assert_true(h->magic == TC_SHM_MAGIC && h->version == TC_SHM_VERSION && h->cell_size == 64 &&
                h->ncells == 4 && h->seg_size == SIZE && h->id[0] == 5 && h->id[1] == 9);
    assert_memory_equal(h->nonce[0], cr->nonce_i, TC_SHM_NONCE_LEN);

    /* the opener attaches to a copy of it and answers */
    tc_shm_ep_t *op = ep_new(b, 5, 1);
    strcpy(op->name, cr->name);
    op->state = TC_SHM_EP_OPENING;
    unsigned char *seg2 = map();
    memcpy(seg2, seg, TC_SHM_HDR_SIZE);
    tc_shm_ep_attach(cb, op, seg2, SIZE);
    assert_int_equal(op->state, TC_SHM_EP_PROVING);
    tc_shm_seg_hdr_t *h2 = (tc_shm_seg_hdr_t *)(void *)seg2;
    assert_int_equal(h2->proved[1], 1);
    assert_int_equal(h2->state[1], TC_SHM_SIDE_UP);
    /* the creator takes the answer (written into its segment), proves itself */
    memcpy(h->nonce[1], h2->nonce[1], TC_SHM_NONCE_LEN);
    memcpy(h->mac[1], h2->mac[1], TC_SHM_MAC_LEN);
    h->proved[1] = 1;
    h->state[1] = TC_SHM_SIDE_UP;
    tc_shm_ep_connecting(ca, cr);
    assert_int_equal(cr->state, TC_SHM_EP_UP);
    memcpy(h2->mac[0], h->mac[0], TC_SHM_MAC_LEN);
    h2->proved[0] = 1;
    tc_shm_ep_connecting(cb, op);
    assert_int_equal(op->state, TC_SHM_EP_UP);
    assert_int_equal(h2->verdict[1], TC_SHM_VERDICT_OK);
    tc_tp_ep_close(&op->super);

    /* a geometry beyond the segment */
    op = ep_new(b, 5, 1);
    op->state = TC_SHM_EP_OPENING;
    seg2 = map();
    memcpy(seg2, seg, TC_SHM_HDR_SIZE);
    ((tc_shm_seg_hdr_t *)(void *)seg2)->ncells = 5;
    tc_shm_ep_attach(cb, op, seg2, SIZE);
    assert_int_equal(op->state, TC_SHM_EP_FAILED);
    assert_non_null(strstr(op->super.error, "made a malformed segment: 5 cells of 64 bytes"));
    tc_tp_ep_close(&op->super);

    /* no magic yet: unmapped, still opening */
    op = ep_new(b, 5, 1);
    op->state = TC_SHM_EP_OPENING;
    seg2 = map();
    tc_shm_ep_attach(cb, op, seg2, SIZE);
    assert_int_equal(op->state, TC_SHM_EP_OPENING);
    assert_null(op->seg);
    tc_tp_ep_close(&op->super);

    tc_tp_ep_close(&cr->super);
    tc_tp_ctx_destroy(a);
    tc_tp_ctx_destroy(b);
}

int main(void)
{
    tc_log_configure("none");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attach),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
