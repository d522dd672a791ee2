/* The shrink agreement (runtime/include/tcomms/runtime/agree.h) over a
 * simulated network, with failures placed everywhere they can be.
 *
 * Each scenario: n ranks, each with its own lowest unused communicator id;
 * at most one rank dead before the start, known to a chosen subset of the
 * others; and crashes during the agreement, each at a round, reaching a
 * chosen subset of the peers it sends to in that round, and learnt by each
 * other rank either at the end of that round (before it ends the round: a
 * failed send, a notice) or only at the start of the next (its message came,
 * the news came late). The simulation runs the real state machine of every
 * rank round by round and checks, for every scenario:
 *   - every rank that does not crash finishes, within n + 3 rounds, with no
 *     error;
 *   - they all finish with the same set and the same communicator id;
 *   - the set holds only ranks that died, and the id is at least every
 *     finishing rank's own lowest unused id;
 *   - no live rank ever waits for a round's message from a live rank that
 *     does not send it (in the real system: a wait until the timeout).
 * Exhaustive for 3 ranks (two crashes) and 4 ranks (one crash with every
 * rank dead before and every subset knowing it; two crashes with none dead
 * before); random scenarios for 5 to 12 ranks. Then malformed messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/runtime/agree.h"

#define MAXN 12
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

static long scenarios, decided_with_dead, violations;

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

static void run_scenario(const scenario_t *s)
{
    int n = s->n;
    tc_rt_agree_t a[MAXN];
    uint8_t *theirs[MAXN] = {0};
    int began[MAXN], dead_by[MAXN]; /* dead_by: crash round, -1 predead, 0 never */
    unsigned died = 0;
    scenarios++;
    for (int p = 0; p < n; p++) {
        assert_int_equal(tc_rt_agree_init(&a[p], n, p, 10u + (unsigned)((p * 7) % n)), TC_OK);
        theirs[p] = malloc(a[p].msg_len * (size_t)n);
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
                       a[p].phase != TC_RT_AGREE_DONE;
            if (!began[p])
                continue;
            /* crashes of the last round learnt late, of this one early */
            for (int c = 0; c < s->ncrash; c++)
                if ((s->crash[c].round == round - 1 && (s->crash[c].late >> p & 1)) ||
                    (s->crash[c].round == round && (s->crash[c].early >> p & 1)))
                    tc_rt_agree_learn(&a[p], s->crash[c].proc);
            tc_rt_agree_begin(&a[p]);
            active++;
        }
        if (!active)
            break;
        if (round > n + 3)
            VIOLATION(s, "still running in round %d", round);
        for (int p = 0; p < n; p++) {
            if (!began[p] || dead_by[p] == round)
                continue;
            memset(theirs[p], 0, a[p].msg_len * (size_t)n);
            for (int q = 0; q < n; q++) {
                if (!a[p].to[q])
                    continue;
                const crash_t *c = NULL;
                int qr = crash_round(s, q, &c);
                int sends = began[q] && a[q].to[p] && (qr != round || (c->reach >> p & 1));
                if (sends)
                    memcpy(theirs[p] + (size_t)q * a[p].msg_len, a[q].msg, a[p].msg_len);
                else if (qr == 0)
                    VIOLATION(s, "round %d: rank %d waits for live rank %d, which %s", round, p, q,
                              began[q] ? "does not send to it" : "has finished");
            }
        }
        for (int p = 0; p < n; p++) {
            if (!began[p] || dead_by[p] == round)
                continue;
            for (int c = 0; c < s->ncrash; c++)
                if (s->crash[c].round == round &&
                    !((s->crash[c].late | s->crash[c].early) >> p & 1))
                    tc_rt_agree_learn(&a[p], s->crash[c].proc);
            tc_status_t st = tc_rt_agree_end(&a[p], theirs[p]);
            if (st != TC_OK)
                VIOLATION(s, "rank %d, round %d: %s", p, round, tc_last_error());
        }
    }
    /* every survivor finished with the same, valid result */
    int first = -1;
    for (int p = 0; p < n; p++) {
        if (dead_by[p])
            continue;
        if (a[p].phase != TC_RT_AGREE_DONE)
            VIOLATION(s, "rank %d did not finish", p);
        for (int r = 0; r < n; r++)
            if (a[p].decided[r] && !(died >> r & 1))
                VIOLATION(s, "rank %d decided that live rank %d failed", p, r);
        if (a[p].next_id < 10u + (unsigned)((p * 7) % n))
            VIOLATION(s, "rank %d: id %u below its own %u", p, a[p].next_id,
                      10u + (unsigned)((p * 7) % n));
        if (first < 0) {
            first = p;
            continue;
        }
        if (memcmp(a[p].decided, a[first].decided, (size_t)n) != 0 ||
            a[p].next_id != a[first].next_id)
            VIOLATION(s, "ranks %d and %d decided differently", first, p);
    }
    for (int r = 0; first >= 0 && r < n; r++)
        if ((died >> r & 1) && !a[first].decided[r]) {
            decided_with_dead++; /* allowed: a rank dying after the decision stays in */
            break;
        }
out:
    for (int p = 0; p < n; p++) {
        tc_rt_agree_free(&a[p]);
        free(theirs[p]);
    }
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
    printf("%s: %ld scenarios, %ld left a rank that died in the new communicator, %ld violations\n",
           what, scenarios, decided_with_dead, violations);
    assert_int_equal(violations, 0);
    scenarios = decided_with_dead = 0;
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

static void test_random_larger(void **state)
{
    (void)state;
    srand(12345);
    for (int t = 0; t < 20000; t++) {
        int n = 5 + rand() % (MAXN - 4);
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
            s.crash[c].round = 1 + rand() % 4;
            s.crash[c].reach = (unsigned)rand() & all & ~(1u << p);
            s.crash[c].late = (unsigned)rand() & all & ~(1u << p);
            s.crash[c].early = (unsigned)rand() & all & ~(1u << p) & ~s.crash[c].late;
        }
        run_scenario(&s);
    }
    report("5 to 12 ranks, random");
}

/* Malformed messages are errors naming the sender; none is read past. */
static void test_malformed(void **state)
{
    (void)state;
    tc_rt_agree_t a, b;
    assert_int_equal(tc_rt_agree_init(&a, 3, 0, 5), TC_OK);
    assert_int_equal(tc_rt_agree_init(&b, 3, 1, 5), TC_OK);
    uint8_t *theirs = calloc(3, a.msg_len);
    tc_rt_agree_begin(&a);
    tc_rt_agree_begin(&b);
    struct {
        size_t off;
        uint8_t val;
        const char *what;
    } cases[] = {{0, 0x77, "kind"},
                 {4, 9, "round"},
                 {12, 4, "size"},
                 {16, 0x80, "padding"},
                 {5, 1, "round"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        memset(theirs, 0, 3 * a.msg_len);
        memcpy(theirs + a.msg_len, b.msg, a.msg_len);
        theirs[a.msg_len + cases[i].off] ^= cases[i].val;
        tc_rt_agree_t c;
        assert_int_equal(tc_rt_agree_init(&c, 3, 0, 5), TC_OK);
        tc_rt_agree_begin(&c);
        assert_int_equal(tc_rt_agree_end(&c, theirs), TC_ERR_PROTOCOL);
        assert_non_null(strstr(tc_last_error(), "rank 1 sent a malformed"));
        tc_rt_agree_free(&c);
    }
    /* a zero kind with other bytes set is not "nothing came" */
    memset(theirs, 0, 3 * a.msg_len);
    theirs[a.msg_len + 8] = 1;
    assert_int_equal(tc_rt_agree_end(&a, theirs), TC_ERR_PROTOCOL);
    tc_rt_agree_free(&a);
    assert_int_equal(tc_rt_agree_init(&a, 0, 0, 0), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_rt_agree_init(&a, 2, 2, 0), TC_ERR_INVALID_ARG);
    tc_rt_agree_free(&b);
    free(theirs);
}

/* Two different DECIDEs in one round are reported, not merged. */
static void test_conflicting_decisions(void **state)
{
    (void)state;
    tc_rt_agree_t a, d1, d2;
    assert_int_equal(tc_rt_agree_init(&a, 3, 0, 5), TC_OK);
    assert_int_equal(tc_rt_agree_init(&d1, 3, 1, 5), TC_OK);
    assert_int_equal(tc_rt_agree_init(&d2, 3, 2, 5), TC_OK);
    d1.phase = d2.phase = TC_RT_AGREE_LAST;
    d2.decided[0] = 1; /* a different set */
    tc_rt_agree_begin(&a);
    tc_rt_agree_begin(&d1);
    tc_rt_agree_begin(&d2);
    uint8_t *theirs = calloc(3, a.msg_len);
    memcpy(theirs + a.msg_len, d1.msg, a.msg_len);
    memcpy(theirs + 2 * a.msg_len, d2.msg, a.msg_len);
    assert_int_equal(tc_rt_agree_end(&a, theirs), TC_ERR_INTERNAL);
    assert_non_null(strstr(tc_last_error(), "ranks 1 and 2 sent different decisions"));
    tc_rt_agree_free(&a);
    tc_rt_agree_free(&d1);
    tc_rt_agree_free(&d2);
    free(theirs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_three_ranks_two_crashes),
        cmocka_unit_test(test_four_ranks_one_crash),
        cmocka_unit_test(test_four_ranks_two_crashes),
        cmocka_unit_test(test_random_larger),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_conflicting_decisions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
