/* The shrink agreement (runtime/include/tcomms/runtime/agree.h) over a
 * simulated network, with failures placed everywhere they can be, on the
 * all-to-all graph and on the sparse one (r ± 2^k; tests/runtime/
 * agree_scale_test.c runs it at up to 131072 ranks).
 *
 * Each scenario: n ranks, each with its own communicator id proposal;
 * at most one rank dead before the start, known to a chosen subset of the
 * others; and crashes during the agreement, each at a round, reaching a
 * chosen subset of the peers it sends to in that round, and learnt by each
 * other rank either at the end of that round (before it ends the round: a
 * failed send, a notice) or only at the start of the next (its message came,
 * the news came late). The simulation runs the real state machine of every
 * rank round by round and checks, for every scenario:
 *   - every rank that does not crash finishes, within n + 3 rounds on the
 *     all-to-all graph (on the sparse one, within (window + diameter + 2)
 *     rounds per failure, plus one), with no error; on the sparse graph a
 *     rank whose every neighbour died may instead say it is cut off;
 *   - they all finish with the same set and the same communicator id;
 *   - the set holds only ranks that died, and the id is at least every
 *     finishing rank's own proposal (the largest is kept);
 *   - no live rank ever waits for a round's message from a live rank that
 *     does not send it (in the real system: a wait until the timeout).
 * Exhaustive for 3 ranks (two crashes) and 4 ranks (one crash with every
 * rank dead before and every subset knowing it; two crashes with none dead
 * before); random scenarios for 5 to 12 ranks, and on the sparse graph for
 * 6 to 24 ranks. Then malformed messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/runtime/agree.h"

#define MAXN 24
#define MAXCRASH 3

typedef struct {
    int proc;       /* crashes ... */
    int round;      /* ... during its sends of this round (from 1) */
    unsigned reach; /* the peers its message of that round reaches */
    unsigned late;  /* the ranks that learn of it only at the next round's start */
    unsigned early; /* the ranks that learn of it before they begin that round (a notice that
                       overtook its messages); the others at the end of that round */
} crash_t;

typedef struct {
    int n;
    int predead;    /* dead before the start, or -1 */
    unsigned knows; /* the ranks that know of it at the start */
    crash_t crash[MAXCRASH];
    int ncrash;
} scenario_t;

static long scenarios, decided_with_dead, cut_off, violations;
static int sparse_graph; /* run the scenarios on the r +- 2^k graph */

static void describe(const scenario_t *s, char *buf, size_t cap)
{
    int used = snprintf(buf, cap, "n=%d predead=%d knows=0x%x", s->n, s->predead, s->knows);
    for (int c = 0; c < s->ncrash && used > 0 && (size_t)used < cap; c++)
        used += snprintf(buf + used, cap - (size_t)used,
                         " crash{rank %d, round %d, reach 0x%x, late 0x%x, early 0x%x}",
                         s->crash[c].proc, s->crash[c].round, s->crash[c].reach, s->crash[c].late,
                         s->crash[c].early);
}

#define VIOLATION(s, ...)                                                                          \
    do {                                                                                           \
        char desc_[512];                                                                           \
        describe(s, desc_, sizeof(desc_));                                                         \
        print_error("%s: ", desc_);                                                                \
        print_error(__VA_ARGS__);                                                                  \
        print_error("\n");                                                                         \
        violations++;                                                                              \
        goto out;                                                                                  \
    } while (0)

/* The round in which rank p crashes, or 0 (never); predead: round 0. */
static int crash_round(const scenario_t *s, int p, const crash_t **c_p)
{
    if (p == s->predead)
        return -1;
    for (int c = 0; c < s->ncrash; c++)
        if (s->crash[c].proc == p) {
            if (c_p)
                *c_p = &s->crash[c];
            return s->crash[c].round;
        }
    return 0;
}

/* Whether rank @p q sends to rank @p p in this round. */
static int sends_to(const tc_rt_agree_t *q, int p)
{
    int i = tc_rt_agree_peer_index(q, p);
    return i >= 0 && q->to[i];
}

static void run_scenario(const scenario_t *s)
{
    int n = s->n;
    tc_rt_agree_graph_t g;
    tc_rt_agree_t a[MAXN];
    const uint8_t *theirs[MAXN][MAXN];
    size_t lens[MAXN][MAXN];
    int began[MAXN], dead_by[MAXN], cut[MAXN] = {0}; /* dead_by: crash round, -1 predead */
    unsigned died = 0;
    scenarios++;
    assert_int_equal(tc_rt_agree_graph(n, sparse_graph ? 1 : n, &g), TC_OK);
    int max_rounds = g.sparse ? (s->ncrash + 2) * (g.window + g.diameter + 2) + 1 : n + 3;
    for (int p = 0; p < n; p++) {
        assert_int_equal(tc_rt_agree_init(&a[p], &g, p, 10u + (unsigned)((p * 7) % n)), TC_OK);
        dead_by[p] = crash_round(s, p, NULL);
        if (dead_by[p])
            died |= 1u << p;
    }
    for (int p = 0; p < n; p++)
        if (s->predead >= 0 && p != s->predead && (s->knows >> p & 1))
            tc_rt_agree_learn(&a[p], s->predead);
    for (int round = 1;; round++) {
        int active = 0;
        /* who takes part in this round: alive (or crashing in it) and not done */
        for (int p = 0; p < n; p++) {
            began[p] = dead_by[p] >= 0 && (dead_by[p] == 0 || dead_by[p] >= round) &&
                       a[p].phase != TC_RT_AGREE_DONE && !cut[p];
            if (!began[p])
                continue;
            /* crashes of the last round learnt late, of this one early */
            for (int c = 0; c < s->ncrash; c++)
                if ((s->crash[c].round == round - 1 && (s->crash[c].late >> p & 1)) ||
                    (s->crash[c].round == round && (s->crash[c].early >> p & 1)))
                    tc_rt_agree_learn(&a[p], s->crash[c].proc);
            assert_int_equal(tc_rt_agree_begin(&a[p]), TC_OK);
            active++;
        }
        if (!active)
            break;
        if (round > max_rounds)
            VIOLATION(s, "still running in round %d", round);
        for (int p = 0; p < n; p++) {
            if (!began[p] || dead_by[p] == round)
                continue;
            for (int i = 0; i < a[p].npeers; i++) {
                int q = a[p].peers[i];
                theirs[p][i] = NULL;
                lens[p][i] = 0;
                if (!a[p].to[i])
                    continue;
                const crash_t *c = NULL;
                int qr = crash_round(s, q, &c);
                int sends = began[q] && sends_to(&a[q], p) && (qr != round || (c->reach >> p & 1));
                if (sends) {
                    theirs[p][i] = a[q].msg;
                    lens[p][i] = a[q].msg_len;
                } else if (qr == 0) {
                    VIOLATION(s, "round %d: rank %d waits for live rank %d, which %s", round, p, q,
                              began[q] ? "does not send to it" : "has finished");
                }
            }
        }
        for (int p = 0; p < n; p++) {
            if (!began[p] || dead_by[p] == round)
                continue;
            for (int c = 0; c < s->ncrash; c++)
                if (s->crash[c].round == round &&
                    !((s->crash[c].late | s->crash[c].early) >> p & 1))
                    tc_rt_agree_learn(&a[p], s->crash[c].proc);
            tc_status_t st = tc_rt_agree_end(&a[p], theirs[p], lens[p]);
            if (st == TC_ERR_PEER_FAILED && g.sparse) {
                int gone = 1;
                for (int i = 0; i < a[p].npeers; i++)
                    gone &= (int)(died >> a[p].peers[i] & 1);
                if (!gone)
                    VIOLATION(s, "rank %d, round %d: cut off with a live neighbour: %s", p, round,
                              tc_last_error());
                cut[p] = 1;
                cut_off++;
            } else if (st != TC_OK) {
                VIOLATION(s, "rank %d, round %d: %s", p, round, tc_last_error());
            }
        }
    }
    /* every survivor finished with the same, valid result */
    int first = -1;
    for (int p = 0; p < n; p++) {
        if (dead_by[p] || cut[p])
            continue;
        if (a[p].phase != TC_RT_AGREE_DONE)
            VIOLATION(s, "rank %d did not finish", p);
        for (int k = 0; k < a[p].decided.n; k++)
            if (!(died >> a[p].decided.r[k] & 1))
                VIOLATION(s, "rank %d decided that live rank %d failed", p, a[p].decided.r[k]);
        if (a[p].next_id < 10u + (unsigned)((p * 7) % n))
            VIOLATION(s, "rank %d: id %u below its own %u", p, a[p].next_id,
                      10u + (unsigned)((p * 7) % n));
        if (first < 0) {
            first = p;
            continue;
        }
        size_t nb = (size_t)a[p].decided.n * sizeof(int32_t);
        if (a[p].decided.n != a[first].decided.n ||
            (nb && memcmp(a[p].decided.r, a[first].decided.r, nb) != 0) ||
            a[p].next_id != a[first].next_id)
            VIOLATION(s, "ranks %d and %d decided differently", first, p);
    }
    for (int r = 0; first >= 0 && r < n; r++)
        if ((died >> r & 1) && !tc_rt_agree_failed(&a[first], r)) {
            decided_with_dead++; /* allowed: a rank dying after the decision stays in */
            break;
        }
out:
    for (int p = 0; p < n; p++)
        tc_rt_agree_free(&a[p]);
}

/* Every crash (rank, round 1..3, reach, late) after those already placed. */
static void enumerate_crashes(scenario_t *s, int more, int from_proc)
{
    run_scenario(s);
    if (!more)
        return;
    int n = s->n;
    unsigned all = (1u << n) - 1;
    for (int p = from_proc; p < n; p++) {
        if (crash_round(s, p, NULL))
            continue;
        unsigned others = all & ~(1u << p);
        crash_t *c = &s->crash[s->ncrash++];
        c->proc = p;
        for (c->round = 1; c->round <= 3; c->round++)
            for (c->reach = 0; c->reach <= all; c->reach++) {
                if (c->reach & ~others)
                    continue;
                for (c->late = 0; c->late <= all; c->late++)
                    for (c->early = 0; c->early <= all && !(c->late & ~others); c->early++)
                        if (!(c->early & (~others | c->late)))
                            enumerate_crashes(s, more - 1, p + 1);
            }
        s->ncrash--;
    }
}

static void report(const char *what)
{
    printf("%s: %ld scenarios, %ld left a rank that died in the new communicator, %ld ranks cut "
           "off, %ld violations\n",
           what, scenarios, decided_with_dead, cut_off, violations);
    assert_int_equal(violations, 0);
    scenarios = decided_with_dead = cut_off = 0;
}

/* Every rank dead before the start (or none), known to every subset of the
 * others, then @p crashes crashes during the agreement (@p crashes_none when
 * nobody is dead before). */
static void enumerate(int n, int crashes, int crashes_none)
{
    for (int pre = -1; pre < n; pre++)
        for (unsigned knows = 0; knows < (1u << n); knows++) {
            if (pre < 0 && knows)
                break;
            if (pre >= 0 && (knows >> pre & 1))
                continue;
            scenario_t s = {.n = n, .predead = pre, .knows = knows};
            enumerate_crashes(&s, pre < 0 ? crashes_none : crashes, 0);
        }
}

static void test_three_ranks_two_crashes(void **state)
{
    (void)state;
    enumerate(3, 1, 2);
    report("3 ranks");
}

static void test_four_ranks_one_crash(void **state)
{
    (void)state;
    enumerate(4, 1, 1);
    report("4 ranks, one crash");
}

static void test_four_ranks_two_crashes(void **state)
{
    (void)state;
    scenario_t s = {.n = 4, .predead = -1};
    enumerate_crashes(&s, 2, 0);
    report("4 ranks, two crashes");
}

/* @p count random scenarios of @p nmin to @p nmax ranks, crashes in rounds
 * 1 to @p rounds. */
static void random_scenarios(int nmin, int nmax, int count, int rounds)
{
    srand(12345);
    for (int t = 0; t < count; t++) {
        int n = nmin + rand() % (nmax - nmin + 1);
        unsigned all = (1u << n) - 1;
        scenario_t s = {.n = n, .predead = rand() % 3 ? -1 : rand() % n};
        if (s.predead >= 0)
            s.knows = (unsigned)rand() & all & ~(1u << s.predead);
        s.ncrash = rand() % (MAXCRASH + 1);
        for (int c = 0; c < s.ncrash; c++) {
            int p;
            do
                p = rand() % n;
            while (p == s.predead || crash_round(&s, p, NULL) > 0 ||
                   (c > 0 && s.crash[c - 1].proc == p));
            s.crash[c] = (crash_t){p, 0, 0, 0, 0};
            s.crash[c].round = 1 + rand() % rounds;
            s.crash[c].reach = (unsigned)rand() & all & ~(1u << p);
            s.crash[c].late = (unsigned)rand() & all & ~(1u << p);
            s.crash[c].early = (unsigned)rand() & all & ~(1u << p) & ~s.crash[c].late;
        }
        run_scenario(&s);
    }
}

static void test_random_larger(void **state)
{
    (void)state;
    random_scenarios(5, 12, 20000, 4);
    report("5 to 12 ranks, random");
}

/* The sparse graph at small sizes: crashes in any round up to the end of a
 * decision without failures (window + diameter + 2: 9 to 13 rounds here). */
static void test_sparse_random(void **state)
{
    (void)state;
    sparse_graph = 1;
    random_scenarios(6, 24, 20000, 13);
    sparse_graph = 0;
    report("sparse graph, 6 to 24 ranks, random");
}

/* Malformed messages are errors naming the sender; none is read past. */
static void test_malformed(void **state)
{
    (void)state;
    tc_rt_agree_graph_t g;
    tc_rt_agree_t a, b;
    assert_int_equal(tc_rt_agree_graph(4, 4, &g), TC_OK);
    assert_int_equal(tc_rt_agree_init(&a, &g, 0, 5), TC_OK);
    assert_int_equal(tc_rt_agree_init(&b, &g, 1, 5), TC_OK);
    tc_rt_agree_learn(&b, 2);
    tc_rt_agree_learn(&b, 3);
    assert_int_equal(tc_rt_agree_begin(&b), TC_OK);
    assert_int_equal(b.msg_len, 32); /* header, ranks 2 and 3, end mark */
    struct {
        size_t off;
        uint8_t val;
        size_t len;
        const char *what;
    } cases[] = {{0, 0x77, 32, "(kind"},   {4, 9, 32, "(round"},  {5, 1, 32, "(round"},
                 {12, 4, 32, "(size"},     {16, 4, 32, "(count"}, {16, 1, 32, "(count"},
                 {20, 1, 32, "(ranks"},    {24, 4, 32, "(ranks"}, {28, 1, 32, "(end mark"},
                 {0, 0, 12, "(too short"}, {0, 0, 31, "(count"},  {0, 0, 40, "(length"}};
    uint8_t m[64] = {0};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        memcpy(m, b.msg, b.msg_len);
        m[cases[i].off] ^= cases[i].val;
        const uint8_t *theirs[3] = {m, NULL, NULL};
        size_t lens[3] = {cases[i].len, 0, 0};
        tc_rt_agree_t c;
        assert_int_equal(tc_rt_agree_init(&c, &g, 0, 5), TC_OK);
        tc_rt_agree_learn(&c, 2); /* nothing from ranks 2 and 3 is a failure, not an error */
        tc_rt_agree_learn(&c, 3);
        assert_int_equal(tc_rt_agree_begin(&c), TC_OK);
        assert_int_equal(tc_rt_agree_end(&c, theirs, lens), TC_ERR_PROTOCOL);
        assert_non_null(strstr(tc_last_error(), "rank 1 sent a malformed"));
        if (!strstr(tc_last_error(), cases[i].what))
            fail_msg("case %zu: %s", i, tc_last_error());
        tc_rt_agree_free(&c);
    }
    /* the message itself is taken */
    const uint8_t *theirs[3] = {b.msg, NULL, NULL};
    size_t lens[3] = {b.msg_len, 0, 0};
    memcpy(m, b.msg, b.msg_len);
    theirs[0] = m;
    assert_int_equal(tc_rt_agree_begin(&a), TC_OK);
    assert_int_equal(tc_rt_agree_end(&a, theirs, lens), TC_OK);
    assert_int_equal(a.dead.n, 2); /* 2 and 3: from rank 1, and missing */
    tc_rt_agree_free(&a);
    assert_int_equal(tc_rt_agree_graph(0, 1, &g), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_rt_agree_graph(2, 1, &g), TC_OK);
    assert_int_equal(tc_rt_agree_init(&a, &g, 2, 0), TC_ERR_INVALID_ARG);
    tc_rt_agree_free(&b);
}

/* Two different DECIDEs in one round are reported, not merged. */
static void test_conflicting_decisions(void **state)
{
    (void)state;
    tc_rt_agree_graph_t g;
    tc_rt_agree_t a, d1, d2;
    assert_int_equal(tc_rt_agree_graph(3, 3, &g), TC_OK);
    assert_int_equal(tc_rt_agree_init(&a, &g, 0, 5), TC_OK);
    assert_int_equal(tc_rt_agree_init(&d1, &g, 1, 5), TC_OK);
    assert_int_equal(tc_rt_agree_init(&d2, &g, 2, 5), TC_OK);
    d1.phase = d2.phase = TC_RT_AGREE_LAST;
    d2.decided.r = malloc(sizeof(int32_t)); /* a different set: {0} */
    d2.decided.r[0] = 0;
    d2.decided.n = d2.decided.cap = 1;
    assert_int_equal(tc_rt_agree_begin(&a), TC_OK);
    assert_int_equal(tc_rt_agree_begin(&d1), TC_OK);
    assert_int_equal(tc_rt_agree_begin(&d2), TC_OK);
    const uint8_t *theirs[2] = {d1.msg, d2.msg};
    size_t lens[2] = {d1.msg_len, d2.msg_len};
    assert_int_equal(tc_rt_agree_end(&a, theirs, lens), TC_ERR_INTERNAL);
    assert_non_null(strstr(tc_last_error(), "ranks 1 and 2 sent different decisions"));
    tc_rt_agree_free(&a);
    tc_rt_agree_free(&d1);
    tc_rt_agree_free(&d2);
}

/* The sparse graph: neighbours r +- 2^k, its diameter, the window. */
static void test_graph(void **state)
{
    (void)state;
    tc_rt_agree_graph_t g;
    tc_rt_agree_t a;
    assert_int_equal(tc_rt_agree_graph(300, 256, &g), TC_OK);
    assert_int_equal(g.sparse, 1);
    assert_int_equal(tc_rt_agree_init(&a, &g, 0, 1), TC_OK);
    /* 1 2 4 8 16 32 64 128 256 and 300 minus each: 18 ranks */
    assert_int_equal(a.npeers, 18);
    for (int i = 0; i < a.npeers; i++) {
        int p = a.peers[i], q = 300 - p;
        assert_true(((p & (p - 1)) == 0 || (q & (q - 1)) == 0) &&
                    (i == 0 || a.peers[i] > a.peers[i - 1]));
    }
    tc_rt_agree_free(&a);
    /* the diameter by brute force: the fewest signed powers of two reaching each rank */
    int far = 0;
    for (int r = 1; r < 300; r++) {
        int best = 99;
        for (int k = 1; k <= 4 && best == 99; k++) { /* k terms */
            int idx[4] = {0}, sgn[4] = {0};
            long combos = 1;
            for (int j = 0; j < k; j++)
                combos *= 18;
            for (long c = 0; c < combos && best == 99; c++) {
                long x = c, sum = 0;
                for (int j = 0; j < k; j++, x /= 18) {
                    idx[j] = (int)(x % 18) / 2;
                    sgn[j] = (int)(x % 18) % 2 ? -1 : 1;
                    sum += sgn[j] * (1L << idx[j]);
                }
                if (((sum % 300) + 300) % 300 == r)
                    best = k;
            }
        }
        far = best > far ? best : far;
    }
    assert_int_equal(g.diameter, far);
    assert_int_equal(g.window, 2 * (far + 2) - 1);
    assert_int_equal(tc_rt_agree_graph(256, 256, &g), TC_OK);
    assert_int_equal(g.sparse, 0);
    assert_int_equal(g.window, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_three_ranks_two_crashes),
        cmocka_unit_test(test_four_ranks_one_crash),
        cmocka_unit_test(test_four_ranks_two_crashes),
        cmocka_unit_test(test_random_larger),
        cmocka_unit_test(test_sparse_random),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_graph),
        cmocka_unit_test(test_conflicting_decisions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
