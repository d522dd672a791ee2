/* The lane protocol (tcomms/transport/shm_lane.h): messages found by tag in any order, small
 * slots for messages that fit and big ones for the others, slot reuse only after the reader's
 * acknowledgement of that slot, payloads in and beyond the first
 * line, a writer and a reader on two threads, and the lanes of a real pair segment (what one
 * side writes, the other reads). */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>

#include "shm_util.h"
#include "tcomms/base/status.h"
#include "tcomms/transport/shm.h"
#include "tcomms/transport/shm_lane.h"
#include "tcomms/transport/transport.h"
#include "tests/transport/tp_util.h"

/* Two lane areas and the two sides' views of them (a: writes area 0, b: writes area 1). */
typedef struct {
    unsigned char *area[2];
    tc_tp_shm_lane_t a, b;
} lanes_t;

static void lanes_open(lanes_t *l)
{
    for (int i = 0; i < 2; i++) {
        assert_int_equal(posix_memalign((void **)&l->area[i], 64, TC_SHM_LANE_BYTES), 0);
        memset(l->area[i], 0, TC_SHM_LANE_BYTES);
    }
    tc_shm_lane_init(&l->a, l->area[0], l->area[1]);
    tc_shm_lane_init(&l->b, l->area[1], l->area[0]);
}

static void lanes_close(lanes_t *l)
{
    free(l->area[0]);
    free(l->area[1]);
}

static void put(tc_tp_shm_lane_t *lane, uint64_t tag, size_t len, uint64_t seed)
{
    tc_shm_lane_slot_t *slot = tc_shm_lane_tx_slot(lane, len);
    assert_non_null(slot);
    for (size_t i = 0; i < len; i++)
        slot->data[i] = tc_tpt_pattern(seed, i);
    tc_shm_lane_post(lane, slot, tag, len);
}

static void get(tc_tp_shm_lane_t *lane, uint64_t tag, size_t len, uint64_t seed)
{
    const tc_shm_lane_slot_t *slot = tc_shm_lane_find(lane, tag);
    assert_non_null(slot);
    assert_int_equal(slot->tag, tag);
    assert_int_equal(slot->len, len);
    for (size_t i = 0; i < len; i++)
        assert_int_equal(slot->data[i], tc_tpt_pattern(seed, i));
    tc_shm_lane_release(lane, slot);
}

/* Messages the reader has not consumed yet. */
static int pending(const tc_tp_shm_lane_t *lane)
{
    int n = 0;
    for (unsigned i = 0; i < TC_SHM_LANE_SLOTS; i++)
        n += tc_shm_lane_pending(lane, i) != NULL;
    return n;
}

static void test_layout(void **state)
{
    (void)state;
    assert_int_equal(offsetof(tc_shm_lane_slot_t, data), TC_SHM_LANE_HDR);
    assert_int_equal(TC_SHM_LANE_SLOT % 64, 0);
    assert_int_equal(TC_SHM_LANE_SMALL_SLOT % 64, 0);
    assert_int_equal(TC_SHM_LANE_TINY_SLOT, 128);
    assert_int_equal(TC_SHM_LANE_TINY_PAYLOAD, 104); /* a 64 B message is tiny */
    assert_true(TC_SHM_LANE_SLOT >= sizeof(tc_shm_lane_slot_t));
    assert_int_equal(TC_SHM_LANE_INLINE, 40);
    assert_true(TC_SHM_LANE_SMALL_PAYLOAD >= 512 &&
                TC_SHM_LANE_SMALL_PAYLOAD < TC_SHM_LANE_PAYLOAD);
    assert_true(TC_SHM_LANE_ACK_BYTES >= TC_SHM_LANE_SLOTS * 8 && TC_SHM_LANE_ACK_BYTES % 64 == 0);
    /* the slots tile the lane after the ack lines: each starts where the one before ends, the
     * kinds in order, each kind's slots a cycle of their own */
    static const size_t bytes[TC_SHM_LANE_KINDS] = {TC_SHM_LANE_TINY_SLOT, TC_SHM_LANE_SMALL_SLOT,
                                                    TC_SHM_LANE_SLOT};
    size_t end = 0;
    unsigned first = 0;
    for (unsigned k = 0; k < TC_SHM_LANE_KINDS; k++) {
        assert_int_equal(tc_shm_lane_first(k), first);
        unsigned n = tc_shm_lane_count(k);
        for (unsigned i = first; i < first + n; i++) {
            assert_int_equal(tc_shm_lane_kind(i), k);
            assert_int_equal(tc_shm_lane_off(i), end);
            end += bytes[k];
            assert_int_equal(tc_shm_lane_index(tc_shm_lane_off(i)), i);
            assert_int_equal(tc_shm_lane_index(end - 1), i); /* any byte of the slot names it */
            assert_int_equal(tc_shm_lane_after(i), i + 1 < first + n ? i + 1 : first);
        }
        first += n;
    }
    assert_int_equal(first, TC_SHM_LANE_SLOTS);
    assert_int_equal(TC_SHM_LANE_ACK_BYTES + end, TC_SHM_LANE_BYTES);
}

/* The kind of the slot at @p slot of lane side @p lane's writer. */
static unsigned kind_of(const tc_tp_shm_lane_t *lane, const void *slot)
{
    return tc_shm_lane_kind(tc_shm_lane_index((size_t)((const unsigned char *)slot - lane->tx)));
}

/* A message takes a slot of the smallest kind it fits while one is free, then of the next larger
 * kind; a larger message never a smaller kind. Every message is read whole from whichever slot
 * it took. */
static void test_kinds(void **state)
{
    (void)state;
    lanes_t l;
    lanes_open(&l);
    const size_t big = TC_SHM_LANE_SMALL_PAYLOAD + 1, small = TC_SHM_LANE_SMALL_PAYLOAD,
                 tiny = TC_SHM_LANE_TINY_PAYLOAD;
    /* the bounds of the kinds (asking takes no slot) */
    assert_int_equal(kind_of(&l.a, tc_shm_lane_tx_slot(&l.a, tiny)), 0);
    assert_int_equal(kind_of(&l.a, tc_shm_lane_tx_slot(&l.a, tiny + 1)), 1);
    assert_int_equal(kind_of(&l.a, tc_shm_lane_tx_slot(&l.a, small + 1)), 2);
    for (int round = 0; round < 3; round++) {
        uint64_t t = (uint64_t)round * 1000;
        for (int i = 0; i < TC_SHM_LANE_BIG; i++) {
            assert_int_equal(kind_of(&l.a, tc_shm_lane_tx_slot(&l.a, big)), 2);
            put(&l.a, t + (uint64_t)i, big, t + (uint64_t)i);
        }
        assert_null(tc_shm_lane_tx_slot(&l.a, big)); /* the big slots are held */
        for (int i = 0; i < TC_SHM_LANE_SMALL; i++) {
            assert_int_equal(kind_of(&l.a, tc_shm_lane_tx_slot(&l.a, small)), 1);
            put(&l.a, t + 100 + (uint64_t)i, small, t + 100 + (uint64_t)i);
        }
        assert_null(tc_shm_lane_tx_slot(&l.a, small));
        for (int i = 0; i < TC_SHM_LANE_TINY; i++) {
            assert_int_equal(kind_of(&l.a, tc_shm_lane_tx_slot(&l.a, tiny)), 0);
            put(&l.a, t + 200 + (uint64_t)i, tiny, t + 200 + (uint64_t)i);
        }
        assert_null(tc_shm_lane_tx_slot(&l.a, 1));
        assert_int_equal(pending(&l.b), TC_SHM_LANE_SLOTS);
        /* one big message read: a tiny one may now take its slot, a big one too */
        const tc_shm_lane_slot_t *m = tc_shm_lane_find(&l.b, t + 2);
        assert_non_null(m);
        size_t at = (size_t)((const unsigned char *)m - l.b.rx);
        get(&l.b, t + 2, big, t + 2);
        assert_ptr_equal(tc_shm_lane_tx_slot(&l.a, 8), l.a.tx + at);
        put(&l.a, t + 500, 8, t + 500);
        /* one small message read: a tiny one takes its slot, a big one cannot */
        m = tc_shm_lane_find(&l.b, t + 105);
        assert_non_null(m);
        at = (size_t)((const unsigned char *)m - l.b.rx);
        get(&l.b, t + 105, small, t + 105);
        assert_null(tc_shm_lane_tx_slot(&l.a, big));
        assert_ptr_equal(tc_shm_lane_tx_slot(&l.a, tiny), l.a.tx + at);
        put(&l.a, t + 501, tiny, t + 501);
        for (int i = TC_SHM_LANE_TINY - 1; i >= 0; i--)
            get(&l.b, t + 200 + (uint64_t)i, tiny, t + 200 + (uint64_t)i);
        for (int i = TC_SHM_LANE_SMALL - 1; i >= 0; i--)
            if (i != 5)
                get(&l.b, t + 100 + (uint64_t)i, small, t + 100 + (uint64_t)i);
        for (int i = 0; i < TC_SHM_LANE_BIG; i++)
            if (i != 2)
                get(&l.b, t + (uint64_t)i, big, t + (uint64_t)i);
        get(&l.b, t + 500, 8, t + 500);
        get(&l.b, t + 501, tiny, t + 501);
        assert_int_equal(pending(&l.b), 0);
    }
    lanes_close(&l);
}

/* In one stream the next message is always where tc_shm_lane_find_next() looks (three loads); a
 * message of another stream, left behind in an earlier slot, only tc_shm_lane_find() sees. */
static void test_find_next(void **state)
{
    (void)state;
    lanes_t l;
    lanes_open(&l);
    const size_t lens[] = {8, TC_SHM_LANE_SMALL_PAYLOAD + 1, 0, 41}; /* every kind of slot */
    for (uint64_t k = 1; k <= 100; k++) {
        put(&l.a, k, lens[k % 4], k);
        if (k % 3 == 0) /* the reader falls behind by up to 3 messages, then catches up */
            for (uint64_t r = k - 2; r <= k; r++) {
                assert_non_null(tc_shm_lane_find_next(&l.b, r));
                get(&l.b, r, lens[r % 4], r);
            }
    }
    get(&l.b, 100, lens[0], 100);
    /* two streams: B's message read first, A's waits in the slot before */
    put(&l.a, 1000, 8, 1000);
    put(&l.a, 2000, 8, 2000);
    get(&l.b, 2000, 8, 2000);
    assert_null(tc_shm_lane_find_next(&l.b, 1000));
    assert_non_null(tc_shm_lane_find(&l.b, 1000));
    get(&l.b, 1000, 8, 1000);
    assert_int_equal(pending(&l.b), 0);
    lanes_close(&l);
}

static void test_order_and_sizes(void **state)
{
    (void)state;
    lanes_t l;
    lanes_open(&l);
    assert_int_equal(pending(&l.b), 0); /* a fresh (zero) lane holds nothing */
    static const size_t lens[] = {0,
                                  1,
                                  8,
                                  TC_SHM_LANE_INLINE,
                                  TC_SHM_LANE_INLINE + 1,
                                  TC_SHM_LANE_TINY_PAYLOAD,
                                  TC_SHM_LANE_TINY_PAYLOAD + 1,
                                  4096,
                                  TC_SHM_LANE_PAYLOAD};
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        put(&l.a, 100 + i, lens[i], i);
        put(&l.b, 200 + i, lens[i], 50 + i); /* the other direction is independent */
        get(&l.b, 100 + i, lens[i], i);
        get(&l.a, 200 + i, lens[i], 50 + i);
        assert_int_equal(pending(&l.b), 0);
        assert_int_equal(pending(&l.a), 0);
    }
    lanes_close(&l);
}

static void test_full_until_acked(void **state)
{
    (void)state;
    lanes_t l;
    lanes_open(&l);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < TC_SHM_LANE_SLOTS; i++)
            put(&l.a, (uint64_t)(round * 100 + i), 16, (uint64_t)(round * 100 + i));
        /* every slot holds an unread message: the writer must not get one */
        assert_null(tc_shm_lane_tx_slot(&l.a, 16));
        /* finding is not reading: still full */
        const tc_shm_lane_slot_t *second = tc_shm_lane_find(&l.b, (uint64_t)(round * 100 + 1));
        assert_non_null(second);
        assert_null(tc_shm_lane_tx_slot(&l.a, 16));
        /* read one out of order: exactly its slot is free again */
        size_t at = (size_t)((const unsigned char *)second - l.b.rx);
        get(&l.b, (uint64_t)(round * 100 + 1), 16, (uint64_t)(round * 100 + 1));
        tc_shm_lane_slot_t *slot = tc_shm_lane_tx_slot(&l.a, 16);
        assert_non_null(slot);
        assert_ptr_equal(slot, l.a.tx + at);
        assert_int_equal(pending(&l.b), TC_SHM_LANE_SLOTS - 1);
        /* the others are still there, untouched, whatever order they are read in */
        for (int i = TC_SHM_LANE_SLOTS - 1; i >= 0; i--)
            if (i != 1)
                get(&l.b, (uint64_t)(round * 100 + i), 16, (uint64_t)(round * 100 + i));
        assert_int_equal(pending(&l.b), 0);
    }
    lanes_close(&l);
}

/* Two streams (two communicators' operations) share a lane: the reader takes one stream's
 * messages while the other's wait in their slots, and neither blocks the other. */
static void test_streams_interleaved(void **state)
{
    (void)state;
    lanes_t l;
    lanes_open(&l);
    uint64_t a = 1000, b = 2000; /* next tag of each stream */
    uint64_t ra = 1000, rb = 2000;
    for (int step = 0; step < 40; step++) {
        /* the writer alternates the streams while slots are free */
        while (tc_shm_lane_tx_slot(&l.a, 24)) {
            uint64_t tag = (step + a + b) % 2 ? a++ : b++;
            put(&l.a, tag, 24, tag);
        }
        /* the reader drains stream b first, then at most one of stream a */
        while (tc_shm_lane_find(&l.b, rb)) {
            get(&l.b, rb, 24, rb);
            rb++;
        }
        if (tc_shm_lane_find(&l.b, ra)) {
            get(&l.b, ra, 24, ra);
            ra++;
        }
    }
    while (ra < a) {
        get(&l.b, ra, 24, ra);
        ra++;
    }
    while (rb < b) {
        get(&l.b, rb, 24, rb);
        rb++;
    }
    assert_true(a > 1020 && b > 2020);
    assert_int_equal(pending(&l.b), 0);
    lanes_close(&l);
}

enum { THREAD_MSGS = 200000 };

static void *writer(void *arg)
{
    tc_tp_shm_lane_t *lane = arg;
    for (uint64_t k = 0; k < THREAD_MSGS; k++) {
        tc_shm_lane_slot_t *slot;
        size_t len = (size_t)(k % 97) * 8; /* small and big slots both */
        while (!(slot = tc_shm_lane_tx_slot(lane, len)))
            ;
        for (size_t i = 0; i < len / 8; i++) {
            uint64_t v = k * 1000003u + i;
            memcpy(slot->data + i * 8, &v, 8);
        }
        tc_shm_lane_post(lane, slot, k, len);
    }
    return NULL;
}

/* A failed operation's writer withdraws its messages of one tag the reader has not consumed:
 * the reader sees them withdrawn and consumes them; those consumed, and other tags, stay. */
static void test_withdraw(void **state)
{
    (void)state;
    lanes_t l;
    lanes_open(&l);
    put(&l.a, 7, 8, 1);
    get(&l.b, 7, 8, 1); /* consumed: not withdrawn below, though its tag is */
    put(&l.a, 7, 100, 2);
    put(&l.a, 7, 1000, 3);
    put(&l.a, 9, 8, 4);
    assert_int_equal(tc_shm_lane_withdraw(&l.a, 7), 2);
    assert_int_equal(tc_shm_lane_withdraw(&l.a, 8), 0);
    for (int k = 0; k < 2; k++) {
        const tc_shm_lane_slot_t *slot = tc_shm_lane_find(&l.b, 7);
        assert_non_null(slot);
        assert_int_equal(tc_shm_lane_len(slot), TC_SHM_LANE_WITHDRAWN);
        tc_shm_lane_release(&l.b, slot);
    }
    assert_null(tc_shm_lane_find(&l.b, 7));
    get(&l.b, 9, 8, 4);
    assert_int_equal(pending(&l.b), 0);
    assert_int_equal(tc_shm_lane_withdraw(&l.a, 7), 0); /* all consumed now */
    put(&l.a, 7, 8, 5);                                 /* the slots serve again */
    get(&l.b, 7, 8, 5);
    lanes_close(&l);
}

/* The reader moves what its slots hold into its own memory: the writer posts into every slot
 * again; each message, moved or not, is found by tag with its bytes, once; a withdrawn one stays
 * withdrawn; one whose length exceeds its slot stays there. Run under ASan in CI: the moved
 * copies are as long as their payloads. */
static void test_spill(void **state)
{
    (void)state;
    lanes_t l;
    lanes_open(&l);
    size_t big = TC_SHM_LANE_SMALL_PAYLOAD + 1;
    for (uint64_t t = 0; t < TC_SHM_LANE_BIG; t++)
        put(&l.a, 100 + t, big, t);
    assert_null(tc_shm_lane_tx_slot(&l.a, big));
    assert_true(tc_shm_lane_rx_full(&l.b));
    put(&l.a, 200, 3, 9); /* a tiny one */
    assert_int_equal(tc_shm_lane_withdraw(&l.a, 103), 1);
    int moved = -1;
    /* a bound of 2 big messages' bytes: the big ones go first, and the first two move */
    assert_int_equal(tc_shm_lane_spill(&l.b, 2 * big + 2, UINT_MAX, &moved), TC_ERR_NO_RESOURCE);
    assert_int_equal(moved, 2);
    assert_int_equal(l.b.spill_refusals, 1);
    assert_int_equal(l.b.spilled_bytes, 2 * big);
    assert_int_equal(pending(&l.b), 3);
    assert_false(tc_shm_lane_rx_full(&l.b));
    assert_int_equal(tc_shm_lane_spill(&l.b, SIZE_MAX, UINT_MAX, &moved), TC_OK);
    assert_int_equal(moved, 3); /* the withdrawn one holds no bytes */
    assert_int_equal(l.b.spilled_count, 5);
    assert_int_equal(l.b.spilled_bytes, 3 * big + 3);
    assert_int_equal(pending(&l.b), 0);
    assert_false(tc_shm_lane_rx_full(&l.b));
    for (uint64_t t = 0; t < TC_SHM_LANE_BIG; t++) /* the slots are free again */
        put(&l.a, 300 + t, big, 10 + t);
    for (uint64_t t = 0; t < TC_SHM_LANE_BIG; t++) {
        get(&l.b, 300 + t, big, 10 + t);
        if (t != 3)
            get(&l.b, 100 + t, big, t);
    }
    const tc_shm_lane_slot_t *w = tc_shm_lane_find(&l.b, 103);
    assert_non_null(w);
    assert_true(tc_shm_lane_len(w) == TC_SHM_LANE_WITHDRAWN);
    tc_shm_lane_release(&l.b, w);
    get(&l.b, 200, 3, 9);
    assert_int_equal(l.b.spilled_bytes, 0);
    assert_int_equal(l.b.spilled_count, 0);
    for (uint64_t t = 500; t < 503; t++) /* a bound of one message */
        put(&l.a, t, 8, t);
    assert_int_equal(tc_shm_lane_spill(&l.b, SIZE_MAX, 1, &moved), TC_ERR_NO_RESOURCE);
    assert_int_equal(moved, 1);
    assert_int_equal(l.b.spill_refusals, 2);
    assert_int_equal(pending(&l.b), 2);
    for (uint64_t t = 500; t < 503; t++)
        get(&l.b, t, 8, t);
    assert_int_equal(l.b.spilled_count, 0);
    for (uint64_t t = 100; t < 104; t++)
        assert_null(tc_shm_lane_find(&l.b, t));
    assert_null(tc_shm_lane_spilled_next(&l.b, NULL));
    /* a writer that claims more than its slot holds: left in place, not copied */
    put(&l.a, 400, 3, 1);
    put(&l.a, 401, 3, 2);
    tc_shm_lane_slot_t *bad = (tc_shm_lane_slot_t *)(uintptr_t)tc_shm_lane_find(&l.b, 400);
    assert_non_null(bad);
    bad->len = TC_SHM_LANE_TINY_PAYLOAD + 1;
    assert_int_equal(tc_shm_lane_spill(&l.b, SIZE_MAX, UINT_MAX, &moved), TC_OK);
    assert_int_equal(moved, 1);
    assert_int_equal(pending(&l.b), 1);
    assert_ptr_equal(tc_shm_lane_find(&l.b, 400), bad);
    assert_non_null(tc_shm_lane_spilled_next(&l.b, NULL));
    tc_shm_lane_spilled_free(&l.b); /* what was moved and never read goes with the endpoint */
    assert_null(tc_shm_lane_find(&l.b, 401));
    lanes_close(&l);
}

/* A reader on another thread sees every message whole: the release store of the sequence
 * number orders the payload, the acknowledgement orders slot reuse. */
static void test_two_threads(void **state)
{
    (void)state;
    lanes_t l;
    lanes_open(&l);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, writer, &l.a), 0);
    uint64_t bad = 0;
    for (uint64_t k = 0; k < THREAD_MSGS; k++) {
        const tc_shm_lane_slot_t *slot;
        while (!(slot = tc_shm_lane_find(&l.b, k)))
            ;
        size_t len = (size_t)(k % 97) * 8;
        bad += slot->tag != k || slot->len != len;
        for (size_t i = 0; i < len / 8; i++) {
            uint64_t v;
            memcpy(&v, slot->data + i * 8, 8);
            bad += v != k * 1000003u + i;
        }
        tc_shm_lane_release(&l.b, slot);
    }
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(bad, 0);
    lanes_close(&l);
}

/* The lanes of a connected pair: each side's tx is the other's rx, in the shared segment. */
static void test_pair_segment(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_shmt_pair_open(&p, NULL);
    tc_tp_shm_lane_t *lane[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(tc_tp_shm_ep_lane(p.ep[i], &lane[i]), TC_OK);
    /* each side maps the segment at its own address: only contents can show the sharing */
    for (uint64_t k = 0; k < 3 * TC_SHM_LANE_SLOTS; k++) {
        put(lane[k % 2], k, 8 * k, k);
        get(lane[1 - k % 2], k, 8 * k, k);
    }
    tc_tp_shm_lane_t *none;
    assert_int_equal(tc_tp_shm_ep_lane(NULL, &none), TC_ERR_INVALID_ARG);
    tc_tpt_pair_close(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout),           cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_find_next),        cmocka_unit_test(test_order_and_sizes),
        cmocka_unit_test(test_full_until_acked), cmocka_unit_test(test_streams_interleaved),
        cmocka_unit_test(test_two_threads),      cmocka_unit_test(test_pair_segment),
        cmocka_unit_test(test_withdraw),         cmocka_unit_test(test_spill),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
