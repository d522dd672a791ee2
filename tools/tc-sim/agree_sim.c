/* Every rank's agreement over a simulated network (see agree_sim.h). */
#include "agree_sim.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/base/status.h"
#include "tcomms/runtime/agree.h"

#define EXT_NEVER (-1)

typedef struct sim {
    agree_sim_params_t p;
    tc_rt_agree_graph_t g;
    tc_rt_agree_t *a;
    int32_t **rev;  /* rev[p][i]: p's index among the neighbours of p's neighbour i */
    int *crash;     /* per rank: 0 never, -1 before the start, else the round */
    int *fail_rank; /* the failures, in order */
    int nfail;
    uint8_t *began, *cut;
    uint64_t *msgs, *bytes;
    const uint8_t **theirs;
    size_t *lens;
    /* outside learning, by round: learn[learn_at[k] .. learn_at[k + 1]) are
     * (rank, failure) pairs learnt in round k (at its end when k is the
     * crash's round, else at its start) */
    int (*learn)[2];
    size_t *learn_at;
    int learn_rounds;
} sim_t;

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t h3(const sim_t *s, uint64_t a, uint64_t b, uint64_t c)
{
    return mix(mix(mix(s->p.seed ^ a) ^ b) ^ c);
}

/* The round at whose start (or, when it is the crash's own, end) rank @p r
 * learns failure @p f from outside, or EXT_NEVER. */
static int ext_round(const sim_t *s, int r, int f)
{
    uint64_t x = h3(s, 1, (uint64_t)r, (uint64_t)f);
    if (x & 1)
        return EXT_NEVER;
    return s->crash[s->fail_rank[f]] + (int)((x >> 1) % 5);
}

static int violation(agree_sim_result_t *res, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->violation, sizeof(res->violation), fmt, ap);
    va_end(ap);
    return 0;
}

static void sim_free(sim_t *s)
{
    for (int r = 0; s->a && r < s->p.ranks; r++) {
        tc_rt_agree_free(&s->a[r]);
        if (s->rev)
            free(s->rev[r]);
    }
    free(s->a);
    free(s->rev);
    free(s->crash);
    free(s->fail_rank);
    free(s->began);
    free(s->cut);
    free(s->msgs);
    free(s->bytes);
    free(s->theirs);
    free(s->lens);
    free(s->learn);
    free(s->learn_at);
}

/* Bucket the outside learning by round (a counting sort). */
static int sim_learning(sim_t *s)
{
    int n = s->p.ranks, maxr = 0;
    for (int f = 0; f < s->nfail; f++)
        if (s->crash[s->fail_rank[f]] > maxr)
            maxr = s->crash[s->fail_rank[f]];
    s->learn_rounds = maxr + 5;
    s->learn_at = calloc((size_t)s->learn_rounds + 1, sizeof(size_t));
    if (!s->learn_at)
        return -1;
    for (int pass = 0; pass < 2; pass++) {
        for (int f = 0; f < s->nfail; f++) {
            if (s->crash[s->fail_rank[f]] <= 0)
                continue;
            for (int r = 0; r < n; r++) {
                int k = ext_round(s, r, f);
                if (k == EXT_NEVER || s->crash[r])
                    continue;
                if (pass == 0) {
                    s->learn_at[k + 1]++;
                } else {
                    size_t at = s->learn_at[k]++;
                    s->learn[at][0] = r;
                    s->learn[at][1] = f;
                }
            }
        }
        if (pass == 0) {
            for (int k = 0; k < s->learn_rounds; k++)
                s->learn_at[k + 1] += s->learn_at[k];
            s->learn = malloc((s->learn_at[s->learn_rounds] + 1) * sizeof(*s->learn));
            if (!s->learn)
                return -1;
        }
    }
    for (int k = s->learn_rounds; k > 0; k--) /* the fill moved each start to the next's */
        s->learn_at[k] = s->learn_at[k - 1];
    s->learn_at[0] = 0;
    return 0;
}

/* The @p k ranks nearest rank 0 on the graph, rank 0 left out (breadth first). */
static int *sim_nearest(const sim_t *s, int k)
{
    int n = s->p.ranks, head = 0, tail = 0, got = 0;
    int *queue = malloc((size_t)n * sizeof(int)), *out = malloc(((size_t)k + 1) * sizeof(int));
    uint8_t *seen = calloc((size_t)n, 1);
    tc_rt_agree_t a;
    if (!queue || !out || !seen) {
        free(queue);
        free(seen);
        free(out);
        return NULL;
    }
    queue[tail++] = 0;
    seen[0] = 1;
    while (head < tail && got < k) {
        if (tc_rt_agree_init(&a, &s->g, queue[head++], 0) != TC_OK)
            break;
        for (int i = 0; i < a.npeers && got < k; i++)
            if (!seen[a.peers[i]]) {
                seen[a.peers[i]] = 1;
                queue[tail++] = a.peers[i];
                out[got++] = a.peers[i];
            }
        tc_rt_agree_free(&a);
    }
    free(queue);
    free(seen);
    if (got < k) {
        free(out);
        return NULL;
    }
    return out;
}

static int sim_setup(sim_t *s, agree_sim_result_t *res)
{
    int n = s->p.ranks, nf = s->p.predead + s->p.crashes;
    if (n < 2 || nf < 0 || nf >= n)
        return snprintf(res->violation, sizeof(res->violation),
                        "%d ranks with %d failures: want at least 2 ranks and a survivor", n, nf),
               -1;
    if (tc_rt_agree_graph(n, s->p.dense_max, &s->g) != TC_OK)
        return snprintf(res->violation, sizeof(res->violation), "%s", tc_last_error()), -1;
    s->a = calloc((size_t)n, sizeof(*s->a));
    s->rev = calloc((size_t)n, sizeof(*s->rev));
    s->crash = calloc((size_t)n, sizeof(int));
    s->fail_rank = malloc(((size_t)nf + 1) * sizeof(int));
    s->began = calloc((size_t)n, 1);
    s->cut = calloc((size_t)n, 1);
    s->msgs = calloc((size_t)n, sizeof(uint64_t));
    s->bytes = calloc((size_t)n, sizeof(uint64_t));
    if (!s->a || !s->rev || !s->crash || !s->fail_rank || !s->began || !s->cut || !s->msgs ||
        !s->bytes)
        return snprintf(res->violation, sizeof(res->violation), "no memory for %d ranks", n), -1;
    int rounds = s->p.crash_rounds > 0 ? s->p.crash_rounds : s->g.window + s->g.diameter + 2;
    int *near = s->p.cluster ? sim_nearest(s, nf) : NULL;
    if (s->p.cluster && !near)
        return snprintf(res->violation, sizeof(res->violation), "no memory"), -1;
    for (int f = 0; f < nf; f++) {
        int r;
        uint64_t k = 0;
        if (near)
            r = near[f];
        else
            do
                r = (int)(h3(s, 2, (uint64_t)f, k++) % (uint64_t)n);
            while (s->crash[r]);
        s->crash[r] =
            f < s->p.predead ? -1 : 1 + (int)(h3(s, 3, (uint64_t)f, 0) % (uint64_t)rounds);
        s->fail_rank[s->nfail++] = r;
    }
    free(near);
    int maxp = 0;
    for (int r = 0; r < n; r++) {
        if (tc_rt_agree_init(&s->a[r], &s->g, r, 100u + (unsigned)(h3(s, 4, (uint64_t)r, 0) % 8)) !=
            TC_OK)
            return snprintf(res->violation, sizeof(res->violation), "%s", tc_last_error()), -1;
        maxp = s->a[r].npeers > maxp ? s->a[r].npeers : maxp;
    }
    for (int r = 0; r < n; r++) {
        const tc_rt_agree_t *a = &s->a[r];
        s->rev[r] = malloc((size_t)a->npeers * sizeof(int32_t) + 1);
        if (!s->rev[r])
            return snprintf(res->violation, sizeof(res->violation), "no memory"), -1;
        for (int i = 0; i < a->npeers; i++)
            s->rev[r][i] = tc_rt_agree_peer_index(&s->a[a->peers[i]], r);
    }
    s->theirs = malloc((size_t)maxp * sizeof(*s->theirs) + 1);
    s->lens = malloc((size_t)maxp * sizeof(*s->lens) + 1);
    if (!s->theirs || !s->lens)
        return snprintf(res->violation, sizeof(res->violation), "no memory"), -1;
    res->peers_max = maxp;
    res->diameter = s->g.diameter;
    res->window = s->g.window;
    if (sim_learning(s) != 0)
        return snprintf(res->violation, sizeof(res->violation), "no memory"), -1;
    /* dead before the start: known to each other rank with probability 1/2 */
    for (int f = 0; f < s->p.predead; f++)
        for (int r = 0; r < n; r++)
            if (!s->crash[r] && (h3(s, 5, (uint64_t)r, (uint64_t)f) & 1))
                tc_rt_agree_learn(&s->a[r], s->fail_rank[f]);
    return 0;
}

/* Rank @p r's end of @p round: the messages that reach it, then the state
 * machine. 0 on a violation. */
static int sim_end(sim_t *s, int r, int round, agree_sim_result_t *res)
{
    tc_rt_agree_t *a = &s->a[r];
    for (int i = 0; i < a->npeers; i++) {
        int q = a->peers[i];
        s->theirs[i] = NULL;
        s->lens[i] = 0;
        if (!a->to[i])
            continue;
        const tc_rt_agree_t *b = &s->a[q];
        int reaches = s->crash[q] != round || (h3(s, 6, (uint64_t)q, (uint64_t)r) & 1);
        if (s->began[q] && b->to[s->rev[r][i]] && reaches) {
            s->theirs[i] = b->msg;
            s->lens[i] = b->msg_len;
        } else if (!s->crash[q]) {
            return violation(res, "round %d: rank %d waits for live rank %d, which %s", round, r, q,
                             s->began[q] ? "does not send to it" : "has finished");
        }
    }
    tc_status_t st = tc_rt_agree_end(a, s->theirs, s->lens);
    if (st == TC_ERR_PEER_FAILED && s->g.sparse) {
        for (int i = 0; i < a->npeers; i++)
            if (!s->crash[a->peers[i]])
                return violation(res, "rank %d, round %d: cut off with live neighbour %d: %s", r,
                                 round, a->peers[i], tc_last_error());
        s->cut[r] = 1;
        res->cut_off++;
    } else if (st != TC_OK) {
        return violation(res, "rank %d, round %d: %s", r, round, tc_last_error());
    }
    return 1;
}

/* The outside learning of @p round: at its start (@p at_end 0: failures of
 * earlier rounds) or its end (those of this round), by ranks taking part. */
static void sim_learn(sim_t *s, int round, int at_end)
{
    for (size_t k = round < s->learn_rounds ? s->learn_at[round] : 0;
         round < s->learn_rounds && k < s->learn_at[round + 1]; k++) {
        int r = s->learn[k][0], f = s->learn[k][1];
        int c = s->crash[s->fail_rank[f]];
        tc_rt_agree_t *a = &s->a[r];
        if ((c == round) != at_end || a->phase == TC_RT_AGREE_DONE || s->cut[r])
            continue;
        if (at_end && !s->began[r])
            continue;
        tc_rt_agree_learn(a, s->fail_rank[f]);
    }
}

static int sim_rounds(sim_t *s, agree_sim_result_t *res)
{
    int n = s->p.ranks;
    int limit = (s->nfail + 2) * (s->g.window + s->g.diameter + 2) + 1;
    for (int round = 1;; round++) {
        int active = 0;
        sim_learn(s, round, 0);
        for (int r = 0; r < n; r++) {
            tc_rt_agree_t *a = &s->a[r];
            int c = s->crash[r];
            s->began[r] =
                c >= 0 && (c == 0 || c >= round) && a->phase != TC_RT_AGREE_DONE && !s->cut[r];
            if (!s->began[r])
                continue;
            if (tc_rt_agree_begin(a) != TC_OK)
                return violation(res, "rank %d: %s", r, tc_last_error());
            uint64_t sent = 0;
            for (int i = 0; i < a->npeers; i++)
                sent +=
                    a->to[i] && (c != round || (h3(s, 6, (uint64_t)r, (uint64_t)a->peers[i]) & 1));
            s->msgs[r] += sent;
            s->bytes[r] += sent * a->msg_len;
            if (sent > res->rounds_msgs_max)
                res->rounds_msgs_max = sent;
            active++;
        }
        if (!active)
            return 1;
        res->rounds = round;
        if (round > limit)
            return violation(res, "still running in round %d (limit %d)", round, limit);
        sim_learn(s, round, 1);
        for (int r = 0; r < n; r++)
            if (s->began[r] && s->crash[r] != round && !sim_end(s, r, round, res))
                return 0;
    }
}

static int sim_check(sim_t *s, agree_sim_result_t *res)
{
    int first = -1;
    double msgs = 0, bytes = 0;
    for (int r = 0; r < s->p.ranks; r++) {
        const tc_rt_agree_t *a = &s->a[r];
        res->msgs_max = s->msgs[r] > res->msgs_max ? s->msgs[r] : res->msgs_max;
        res->bytes_max = s->bytes[r] > res->bytes_max ? s->bytes[r] : res->bytes_max;
        if (s->crash[r] || s->cut[r])
            continue;
        res->survivors++;
        msgs += (double)s->msgs[r];
        bytes += (double)s->bytes[r];
        if (a->phase != TC_RT_AGREE_DONE)
            return violation(res, "rank %d did not finish", r);
        for (int k = 0; k < a->decided.n; k++)
            if (!s->crash[a->decided.r[k]])
                return violation(res, "rank %d decided that live rank %d failed", r,
                                 a->decided.r[k]);
        if (first < 0) {
            first = r;
            continue;
        }
        const tc_rt_agree_t *b = &s->a[first];
        if (a->decided.n != b->decided.n || a->next_id != b->next_id ||
            (a->decided.n &&
             memcmp(a->decided.r, b->decided.r, (size_t)a->decided.n * sizeof(int32_t)) != 0))
            return violation(res,
                             "ranks %d and %d decided differently (%d and %d ranks, ids %u "
                             "and %u)",
                             first, r, b->decided.n, a->decided.n, b->next_id, a->next_id);
    }
    if (first >= 0) {
        res->decided = s->a[first].decided.n;
        res->dead_left_in = s->nfail - res->decided;
    }
    res->msgs_mean = res->survivors ? msgs / res->survivors : 0;
    res->bytes_mean = res->survivors ? bytes / res->survivors : 0;
    return 1;
}

int agree_sim_run(const agree_sim_params_t *p, agree_sim_result_t *res)
{
    sim_t s;
    memset(&s, 0, sizeof(s));
    memset(res, 0, sizeof(*res));
    s.p = *p;
    int rc = sim_setup(&s, res);
    if (rc == 0 && sim_rounds(&s, res))
        sim_check(&s, res);
    sim_free(&s);
    return rc;
}
