/* The watch graph and the judgement of verdicts (tcomms/runtime/watch.h),
 * without processes.
 *
 * The graph, for every job of 1 to 160 ranks with every number of ranks per
 * node, and for jobs of up to 100,000 ranks in several node shapes (ranks in
 * blocks of L per node, the last node possibly smaller), checked by brute
 * force: every rank's neighbours are valid,
 * distinct, ascending, never itself, at most TC_RT_WATCH_MAX (whatever the
 * size); the graph is symmetric (a neighbour watches back); every rank is
 * watched by at least two ranks of other nodes, or by every one there is
 * when fewer, where every node has L ranks; on one node, or with a smaller
 * last node, by two ranks at least (by every one, when fewer); and every
 * rank reaches all others in ceil(log2 size) hops (breadth first from three
 * ranks), which bounds how long a verdict takes to spread.
 * The judgement: each rule, and the cut (the cut side's verdicts are
 * refused once its ranks are failed here, and refused about a neighbour
 * still heard). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "tcomms/runtime/watch.h"

/* Is @p p among the @p n neighbours @p peers? */
static int has(const int *peers, int n, int p)
{
    for (int i = 0; i < n; i++)
        if (peers[i] == p)
            return 1;
    return 0;
}

/* Hops from @p src to the farthest rank (breadth first), or -1 when one is not reached. */
static int eccentricity(int size, int l, int src)
{
    int *dist = malloc((size_t)size * sizeof(*dist)),
        *queue = malloc((size_t)size * sizeof(*queue));
    assert_non_null(dist);
    assert_non_null(queue);
    for (int r = 0; r < size; r++)
        dist[r] = -1;
    int head = 0, tail = 0, far = 0;
    dist[src] = 0;
    queue[tail++] = src;
    while (head < tail) {
        int r = queue[head++], peers[TC_RT_WATCH_MAX];
        int n = tc_rt_watch_peers(size, l, r, peers);
        for (int i = 0; i < n; i++)
            if (dist[peers[i]] < 0) {
                dist[peers[i]] = dist[r] + 1;
                far = dist[peers[i]];
                queue[tail++] = peers[i];
            }
    }
    free(dist);
    free(queue);
    return tail == size ? far : -1;
}

/* A verdict crosses the job in ceil(log2 size) hops at most, from any rank (checked from
 * three); 0 when so, else prints why. */
static int check_diameter(int size, int l)
{
    int bound = 0;
    while ((1ll << bound) < size)
        bound++;
    const int srcs[] = {0, size / 3, size - 1};
    for (int i = 0; i < 3; i++) {
        int e = eccentricity(size, l, srcs[i]);
        if (e < 0 || e > bound) {
            printf("size %d, %d per node: from rank %d, %d hops (bound %d; -1: not connected)\n",
                   size, l, srcs[i], e, bound);
            return 1;
        }
    }
    return 0;
}

/* Check the graph of @p size ranks placed @p l to a node; 0 when right, else prints why. */
static int check_graph(int size, int l)
{
    int nodes = (size + l - 1) / l;
    for (int r = 0; r < size; r++) {
        int peers[TC_RT_WATCH_MAX + 1];
        int n = tc_rt_watch_peers(size, l, r, peers);
        if (n < 0 || n > TC_RT_WATCH_MAX) {
            printf("size %d, %d per node: rank %d has %d neighbours\n", size, l, r, n);
            return 1;
        }
        int other = 0;
        for (int i = 0; i < n; i++) {
            int p = peers[i];
            if (p < 0 || p >= size || p == r || (i > 0 && peers[i - 1] >= p)) {
                printf("size %d, %d per node: rank %d: neighbour %d (#%d) invalid\n", size, l, r, p,
                       i);
                return 1;
            }
            int back[TC_RT_WATCH_MAX + 1];
            int nb = tc_rt_watch_peers(size, l, p, back);
            if (!has(back, nb, r)) {
                printf("size %d, %d per node: %d watches %d, not back\n", size, l, r, p);
                return 1;
            }
            other += p / l != r / l;
        }
        /* how many ranks live on other nodes and on this one */
        int node = r / l, mine_lo = node * l, mine_hi = mine_lo + l > size ? size : mine_lo + l;
        int elsewhere = size - (mine_hi - mine_lo);
        int want_other = elsewhere < 2 ? elsewhere : 2;
        /* the guarantee holds where every node has l ranks; with a smaller last node,
         * ranks are still watched, by two at least (by every one, when fewer) */
        if (size % l == 0 && nodes >= 2 && other < want_other) {
            printf("size %d, %d per node: rank %d watched by %d ranks of other nodes, want %d\n",
                   size, l, r, other, want_other);
            return 1;
        }
        if ((nodes == 1 || size % l != 0) && n < (size - 1 < 2 ? size - 1 : 2)) {
            printf("size %d, %d per node: rank %d watched by %d\n", size, l, r, n);
            return 1;
        }
    }
    return 0;
}

static void test_graph_small_exhaustive(void **state)
{
    (void)state;
    for (int size = 1; size <= 160; size++)
        for (int l = 1; l <= size; l++) {
            assert_int_equal(check_graph(size, l), 0);
            assert_int_equal(check_diameter(size, l), 0);
        }
}

static void test_graph_large(void **state)
{
    (void)state;
    static const int sizes[] = {1000, 4096, 65536, 99999, 100000};
    static const int shapes[] = {1, 2, 3, 4, 7, 8, 16, 72, 512};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        for (size_t j = 0; j < sizeof(shapes) / sizeof(shapes[0]); j++) {
            assert_int_equal(check_graph(sizes[i], shapes[j]), 0);
            assert_int_equal(check_diameter(sizes[i], shapes[j]), 0);
        }
}

/* A known example, written out: 6 ranks, 2 per node (rank 0 watches all). */
static void test_graph_example(void **state)
{
    (void)state;
    int peers[TC_RT_WATCH_MAX];
    assert_int_equal(tc_rt_watch_peers(6, 2, 0, peers), 5);
    for (int i = 0; i < 5; i++)
        assert_int_equal(peers[i], i + 1);
    /* 64 ranks, 8 per node: rank 20 (node 2) watches 19, 21 (+-1), 12, 28 (+-8), 11, 29
     * (+-9), and by the chords 40, 41 (2r, 2r + 1), 10 and 42 (2p = 20 mod 64) */
    static const int want[] = {10, 11, 12, 19, 21, 28, 29, 40, 41, 42};
    assert_int_equal(tc_rt_watch_peers(64, 8, 20, peers), 10);
    for (int i = 0; i < 10; i++)
        assert_int_equal(peers[i], want[i]);
    /* 7 ranks (odd), 1 per node: rank 3 watches 2, 4, 1, 5 (+-1, +-2) and by the chords
     * 6, 0 (2r, 2r + 1 mod 7), 5 (2p = 3), 1 (2p + 1 = 3): {0, 1, 2, 4, 5, 6} */
    static const int want7[] = {0, 1, 2, 4, 5, 6};
    assert_int_equal(tc_rt_watch_peers(7, 1, 3, peers), 6);
    for (int i = 0; i < 6; i++)
        assert_int_equal(peers[i], want7[i]);
}

static void test_graph_bad_args(void **state)
{
    (void)state;
    int peers[TC_RT_WATCH_MAX];
    assert_int_equal(tc_rt_watch_peers(0, 1, 0, peers), 0);
    assert_int_equal(tc_rt_watch_peers(4, 1, 4, peers), 0);
    assert_int_equal(tc_rt_watch_peers(4, 1, -1, peers), 0);
    assert_int_equal(tc_rt_watch_peers(4, 0, 0, peers), 0);
    assert_int_equal(tc_rt_watch_peers(1, 1, 0, peers), 0); /* alone: nobody to watch */
}

static const uint64_t period = 200000000ull;

static tc_rt_watch_case_t base_case(void)
{
    return (tc_rt_watch_case_t){.size = 6,
                                .self = 2,
                                .accused = 4,
                                .accuser = 5,
                                .silent = 1,
                                .heard_ago_ns = 0,
                                .period_ns = period};
}

static void test_judge_rules(void **state)
{
    (void)state;
    tc_rt_watch_case_t c = base_case();
    assert_int_equal(tc_rt_watch_judge(&c), TC_RT_WATCH_ACCEPT); /* not watched: believed */
    c.accused_watched = 1;
    c.heard_ago_ns = 2 * period - 1;
    assert_int_equal(tc_rt_watch_judge(&c), TC_RT_WATCH_ACCUSED_HEARD);
    c.silent = 0; /* seen dead (its process gone): believed however lately heard */
    assert_int_equal(tc_rt_watch_judge(&c), TC_RT_WATCH_ACCEPT);
    c.silent = 1;
    c.heard_ago_ns = 2 * period;
    assert_int_equal(tc_rt_watch_judge(&c), TC_RT_WATCH_ACCEPT);
    c.accused_known = 1;
    assert_int_equal(tc_rt_watch_judge(&c), TC_RT_WATCH_KNOWN);
    c = base_case();
    c.accuser_failed = 1;
    assert_int_equal(tc_rt_watch_judge(&c), TC_RT_WATCH_ACCUSER_FAILED);
    c.accuser = -1; /* unknown accuser (the launcher, PMIx): its flag means nothing */
    assert_int_equal(tc_rt_watch_judge(&c), TC_RT_WATCH_ACCEPT);
    c = base_case();
    c.accused = 2;
    assert_int_equal(tc_rt_watch_judge(&c), TC_RT_WATCH_ABOUT_SELF);
    c = base_case();
    c.accused = 6;
    assert_int_equal(tc_rt_watch_judge(&c), TC_RT_WATCH_BAD);
    c = base_case();
    c.accused = -1;
    assert_int_equal(tc_rt_watch_judge(&c), TC_RT_WATCH_BAD);
    c = base_case();
    c.accuser = 6;
    assert_int_equal(tc_rt_watch_judge(&c), TC_RT_WATCH_BAD);
}

/* Node 2 (ranks 4, 5 of 6) is cut off. Its ranks find everyone silent and
 * accuse them; on the majority side, each rank has failed 4 and 5 itself
 * by then (they are its neighbours, silent as long), so what they send
 * after a restore is refused; and a verdict about a rank this one still hears
 * is refused whoever sends it. */
static void test_judge_cut(void **state)
{
    (void)state;
    for (int self = 0; self < 4; self++)
        for (int accused = 0; accused < 4; accused++)
            for (int accuser = 4; accuser < 6; accuser++) {
                if (accused == self)
                    continue;
                tc_rt_watch_case_t c = {.size = 6,
                                        .self = self,
                                        .accused = accused,
                                        .accuser = accuser,
                                        .silent = 1,
                                        .accuser_failed = 1,
                                        .accused_watched = 1,
                                        .heard_ago_ns = period / 2,
                                        .period_ns = period};
                assert_int_not_equal(tc_rt_watch_judge(&c), TC_RT_WATCH_ACCEPT);
                c.accuser_failed = 0; /* the verdict came first: the accused is still heard */
                assert_int_equal(tc_rt_watch_judge(&c), TC_RT_WATCH_ACCUSED_HEARD);
            }
}

/* A verdict's bytes come from another process: only the exact size, the magic, a rank of
 * the job and a NUL-terminated host pass. */
static void test_verdict_valid(void **state)
{
    (void)state;
    tc_rt_verdict_msg_t m;
    memset(&m, 0, sizeof(m));
    m.magic = TC_RT_VERDICT_MAGIC;
    m.rank = 3;
    m.pid = 1234;
    snprintf(m.host, sizeof(m.host), "tcn1");
    assert_true(tc_rt_verdict_valid(&m, sizeof(m), 4));
    assert_false(tc_rt_verdict_valid(&m, sizeof(m) - 1, 4)); /* short */
    assert_false(tc_rt_verdict_valid(&m, 0, 4));
    assert_false(tc_rt_verdict_valid(&m, sizeof(m), 3)); /* rank beyond the job */
    tc_rt_verdict_msg_t bad = m;
    bad.rank = -1;
    assert_false(tc_rt_verdict_valid(&bad, sizeof(bad), 4));
    bad = m;
    bad.magic ^= 1;
    assert_false(tc_rt_verdict_valid(&bad, sizeof(bad), 4));
    bad = m;
    memset(bad.host, 'x', sizeof(bad.host)); /* no terminator */
    assert_false(tc_rt_verdict_valid(&bad, sizeof(bad), 4));
    bad.host[sizeof(bad.host) - 1] = '\0';
    assert_true(tc_rt_verdict_valid(&bad, sizeof(bad), 4));
    /* every byte flipped one at a time: never a crash, and a flip of the magic or the
     * host's terminator region is refused */
    for (size_t i = 0; i < sizeof(m); i++) {
        tc_rt_verdict_msg_t f = m;
        ((unsigned char *)&f)[i] ^= 0xff;
        int ok = tc_rt_verdict_valid(&f, sizeof(f), 4);
        if (i < sizeof(uint32_t))
            assert_false(ok);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_graph_small_exhaustive),
        cmocka_unit_test(test_graph_large),
        cmocka_unit_test(test_graph_example),
        cmocka_unit_test(test_graph_bad_args),
        cmocka_unit_test(test_judge_rules),
        cmocka_unit_test(test_judge_cut),
        cmocka_unit_test(test_verdict_valid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
