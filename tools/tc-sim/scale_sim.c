/*
 * tc-scale-sim: what start-up, failure detection and the shrink agreement of
 * tcomms cost per rank at a given job size, by simulation where the code can
 * be run (the watch graph of runtime/src/watch.c, the schedules of the
 * algorithm layer) and by a stated model where it cannot (latencies of the
 * network and of the launcher). Every assumption is printed with the result.
 * Exit status: 0 done, 2 usage error.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/algo/schedule.h"
#include "tcomms/base/config.h"
#include "tcomms/base/status.h"
#include "tcomms/runtime/watch.h"
#include "tools/tc-sim/agree_sim.h"

/* Constants of the implementation the model uses (docs/fault_tolerance.md,
 * docs/transport_tcp.md, bench/results/2026-12-02-scale.txt). */
#define CREATE_PUTS 5        /* bootstrap puts of one rank's creation */
#define CREATE_PUT_BYTES 224 /* their bytes */
#define HB_BYTES 8           /* one heartbeat */
#define TCP_CONNECT_RTTS 3   /* connect, then hello/challenge and proof/ack */
#define AGREE_HDR 24         /* an agreement message's header and end mark */

typedef struct sim {
    int n, local, nodes, failures;
    uint64_t seed;
    int64_t period_ms, misses;
    tc_algo_model_t m;
    int *adj; /* [n][TC_RT_WATCH_MAX] */
    int *deg; /* [n] */
} sim_t;

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int same_node(const sim_t *s, int a, int b)
{
    return a / s->local == b / s->local;
}

/* The RTT-bound cost of connecting to @p peer from @p self (us): a key read
 * from the launcher, then over tcp a connect and the authenticated handshake,
 * over shm a segment mapped and announced. */
static double connect_us(const sim_t *s, int self, int peer)
{
    if (same_node(s, self, peer))
        return 2 * 2 * s->m.alpha_us[0];
    return 2 * s->m.alpha_us[1] * (1 + TCP_CONNECT_RTTS);
}

static void detection(const sim_t *s)
{
    int n = s->n, maxdeg = 0, asym = 0;
    double sumdeg = 0;
    for (int r = 0; r < n; r++) {
        maxdeg = s->deg[r] > maxdeg ? s->deg[r] : maxdeg;
        sumdeg += s->deg[r];
        for (int k = 0; k < s->deg[r]; k++) {
            int q = s->adj[(size_t)r * TC_RT_WATCH_MAX + k], back = 0;
            for (int j = 0; j < s->deg[q]; j++)
                back |= s->adj[(size_t)q * TC_RT_WATCH_MAX + j] == r;
            asym += !back;
        }
    }
    double hz = 1000.0 / (double)s->period_ms;
    printf("## failure detection (the watch graph of runtime/src/watch.c, built for every rank)\n");
    printf("watch neighbours per rank: at most %d, mean %.2f; edges without their reverse: %d\n",
           maxdeg, sumdeg / n, asym);
    printf("heartbeats per rank: %.0f messages/s, %.0f B/s sent (all-to-all watching: %.0f "
           "messages/s)\n",
           maxdeg * hz, maxdeg * hz * HB_BYTES, (n - 1) * hz);

    /* F ranks fail at once; the verdicts spread from their live neighbours
     * (breadth first over the live ranks), one hop per forward. */
    uint64_t seed = s->seed;
    unsigned char *dead = calloc((size_t)n, 1);
    int *dist = malloc((size_t)n * sizeof(int)), *queue = malloc((size_t)n * sizeof(int));
    if (!dead || !dist || !queue) {
        fprintf(stderr, "tc-scale-sim: no memory for %d ranks\n", n);
        exit(2);
    }
    int f = s->failures < n - 1 ? s->failures : n - 1;
    for (int i = 0; i < f;) {
        int r = (int)(rnd(&seed) % (uint64_t)n);
        if (!dead[r]) {
            dead[r] = 1;
            i++;
        }
    }
    int worst = 0, unreached = 0;
    for (int v = 0; v < n && f > 0; v++) {
        if (!dead[v])
            continue;
        int head = 0, tail = 0;
        for (int r = 0; r < n; r++)
            dist[r] = -1;
        for (int k = 0; k < s->deg[v]; k++) {
            int q = s->adj[(size_t)v * TC_RT_WATCH_MAX + k];
            if (!dead[q] && dist[q] < 0) {
                dist[q] = 0;
                queue[tail++] = q;
            }
        }
        while (head < tail) {
            int r = queue[head++];
            for (int k = 0; k < s->deg[r]; k++) {
                int q = s->adj[(size_t)r * TC_RT_WATCH_MAX + k];
                if (!dead[q] && dist[q] < 0) {
                    dist[q] = dist[r] + 1;
                    queue[tail++] = q;
                }
            }
        }
        for (int r = 0; r < n; r++) {
            if (!dead[r] && dist[r] > worst)
                worst = dist[r];
            unreached += !dead[r] && dist[r] < 0;
        }
    }
    double detect_ms = (double)(s->misses * s->period_ms) + (double)s->period_ms / 4;
    double hop_best = s->m.alpha_us[1] / 1000, hop_worst = hop_best + (double)s->period_ms / 4;
    printf("%d rank(s) failed at once (seed %llu): the last live rank hears of each within %d "
           "hops; live ranks no verdict reaches: %d\n",
           f, (unsigned long long)s->seed, worst, unreached);
    printf("verdict messages per rank per failure: at most %d (one to each neighbour)\n", maxdeg);
    printf("time to the last survivor's knowledge: %.1f ms to find the silence (%lld misses of "
           "%lld ms, checked every quarter period) + %d hops x %.3f..%.1f ms = %.1f..%.1f ms\n",
           detect_ms, (long long)s->misses, (long long)s->period_ms, worst, hop_best, hop_worst,
           detect_ms + worst * hop_best, detect_ms + worst * hop_worst);
    printf("  assumes: a hop is one inter-node latency when the receiver is in a call or its "
           "progress thread is busy, up to a quarter period when its progress thread waits "
           "idle between heartbeats\n");
    free(dead);
    free(dist);
    free(queue);
}

/* The all-to-all agreement's cost (the graph up to TC_SHRINK_DENSE_MAX ranks),
 * by its rule: 2 rounds, one more per failure learnt in a round. */
static void agreement_dense(const sim_t *s)
{
    double n = s->n, msg = AGREE_HDR + 4.0 * s->failures;
    int rounds = 2 + s->failures;
    double per_round_us = s->m.alpha_us[1] + (n - 1) * s->m.o_us + (n - 1) * msg * s->m.beta_us[1];
    printf("all-to-all (the graph up to TC_SHRINK_DENSE_MAX ranks), by its rule: per rank per "
           "round %.0f messages of %.0f B = %.4g B sent; 2 rounds without failures during the "
           "agreement, up to %d with %d; %.4g s per round, %.4g s for 2, %.4g s for %d\n",
           n - 1, msg, (n - 1) * msg, rounds, s->failures, per_round_us * 1e-6,
           2 * per_round_us * 1e-6, rounds * per_round_us * 1e-6, rounds);
}

static void agreement(const sim_t *s)
{
    int64_t dense_max;
    if (tc_config_int("TC_SHRINK_DENSE_MAX", 256, 1, INT32_MAX, &dense_max) != TC_OK)
        dense_max = 256;
    agree_sim_params_t p = {.ranks = s->n,
                            .dense_max = s->n > 4096 ? 1 : (int)dense_max,
                            .predead = s->failures / 2,
                            .crashes = s->failures - s->failures / 2,
                            .seed = s->seed};
    printf("## shrink agreement (runtime/src/agree.c, every rank's state machine run)\n");
    if (p.predead + p.crashes >= s->n) {
        printf("no survivor with %d failures\n", s->failures);
        return;
    }
    agree_sim_result_t r;
    if (agree_sim_run(&p, &r) != 0) {
        printf("not simulated: %s\n", r.violation);
        return;
    }
    int sparse = s->n > p.dense_max;
    printf("graph: %s, %d neighbours, diameter %d, %d quiet round(s) decide%s\n",
           sparse ? "r +- 2^k" : "all-to-all", r.peers_max, r.diameter, r.window,
           sparse && s->n <= dense_max ? " (forced: above 4096 ranks the all-to-all one is not "
                                         "simulated)"
                                       : "");
    printf("%d failure(s): %d dead before the agreement (each known to half the others), %d "
           "during it (each message of its round reaching half its neighbours; learnt from "
           "outside by half the ranks within 4 rounds), seed %llu\n",
           s->failures, p.predead, p.crashes, (unsigned long long)s->seed);
    if (r.violation[0]) {
        printf("VIOLATION: %s\n", r.violation);
        return;
    }
    printf("rounds: %d; per rank: %.1f messages (at most %llu, %llu in one round), %.0f B sent "
           "(at most %llu); receive room %d x %d B; %d survivors agreed on %d failed rank(s)\n",
           r.rounds, r.msgs_mean, (unsigned long long)r.msgs_max,
           (unsigned long long)r.rounds_msgs_max, r.bytes_mean, (unsigned long long)r.bytes_max,
           r.peers_max, AGREE_HDR + 4 * s->n, r.survivors, r.decided);
    double bytes_round = r.bytes_mean / (r.rounds ? r.rounds : 1);
    double per_round_us =
        s->m.alpha_us[1] + (double)r.rounds_msgs_max * s->m.o_us + bytes_round * s->m.beta_us[1];
    printf("time: %.4g ms per round, %.4g ms for %d rounds\n", per_round_us * 1e-3,
           r.rounds * per_round_us * 1e-3, r.rounds);
    printf("  assumes: a rank's sends of a round leave one after another (o %.3g us each, beta "
           "%.3g us/B), one inter-node latency (%.3g us) per round\n",
           s->m.o_us, s->m.beta_us[1], s->m.alpha_us[1]);
    agreement_dense(s);
}

static void startup(const sim_t *s, const tc_algo_args_t *a0, size_t esize, const char *algo)
{
    int n = s->n;
    printf("## start-up (rank 0 and 7 random ranks)\n");
    printf("creation: %d puts (%d B) and 1 launcher fence per rank; keys are read on demand, so "
           "the fence hands no rank the others' keys (its time is the launcher's, not modelled)\n",
           CREATE_PUTS, CREATE_PUT_BYTES);
    uint64_t seed = s->seed * 2654435761u + 1;
    int worst_peers = 0;
    double worst_create = 0, worst_first = 0;
    unsigned char *known = calloc((size_t)n, 1);
    if (!known) {
        fprintf(stderr, "tc-scale-sim: no memory for %d ranks\n", n);
        exit(2);
    }
    for (int i = 0; i < 8; i++) {
        int r = i == 0 ? 0 : (int)(rnd(&seed) % (uint64_t)n);
        const int *nb = &s->adj[(size_t)r * TC_RT_WATCH_MAX];
        double create = 0;
        for (int k = 0; k < s->deg[r]; k++) { /* in parallel: the slowest counts */
            double c = connect_us(s, r, nb[k]);
            create = c > create ? c : create;
            known[nb[k]] = 1;
        }
        tc_algo_args_t a = *a0;
        a.rank = r;
        tc_sched_t sched;
        if (tc_algo_build(&a, algo, &sched) != TC_OK) {
            fprintf(stderr, "tc-scale-sim: %s\n", tc_last_error());
            exit(2);
        }
        /* lazily connected in step order; a step waits for the one before */
        int peers = s->deg[r];
        double first = 0;
        for (uint32_t k = 0; k < sched.nsteps; k++) {
            const tc_step_t *st = &sched.steps[k];
            if (st->kind == TC_STEP_COPY || st->kind == TC_STEP_REDUCE)
                continue;
            int link = !same_node(s, r, st->peer);
            first += st->kind == TC_STEP_SEND ? 0 : s->m.alpha_us[link];
            if (!known[st->peer]) {
                known[st->peer] = 1;
                peers++;
                first += connect_us(s, r, st->peer);
            }
        }
        for (int k = 0; k < s->deg[r]; k++)
            known[nb[k]] = 0;
        for (uint32_t k = 0; k < sched.nsteps; k++)
            if (sched.steps[k].kind != TC_STEP_COPY && sched.steps[k].kind != TC_STEP_REDUCE)
                known[sched.steps[k].peer] = 0;
        tc_sched_free(&sched);
        worst_peers = peers > worst_peers ? peers : worst_peers;
        worst_create = create > worst_create ? create : worst_create;
        worst_first = first > worst_first ? first : worst_first;
    }
    free(known);
    printf("endpoints per rank after creation and the first %s of %zu B (%s): at most %d "
           "(watch neighbours and the schedule's peers; world size %d)\n",
           tc_coll_name(a0->coll), (size_t)a0->count * esize, algo, worst_peers, n);
    printf("time: creation the fence + %.4g ms (the watch neighbours connected at once), first "
           "operation %.4g ms (its new peers connected in step order)\n",
           worst_create / 1000, worst_first / 1000);
    printf("  assumes: a tcp connection costs a key read and %d round trips (connect, "
           "hello/challenge, proof/ack), an shm one a key read and a round trip on the node; "
           "latencies alpha %.3g us on a node, %.3g us across\n",
           TCP_CONNECT_RTTS, s->m.alpha_us[0], s->m.alpha_us[1]);
}

static int usage(FILE *f, int rc)
{
    fprintf(f,
            "usage: tc-scale-sim --ranks P [--local L] [--failures F] [--seed S]\n"
            "                    [--coll COLL] [--bytes SIZE] [--algo NAME]\n"
            "  --local L: ranks per node, placed in blocks (default 8)\n"
            "  --failures F: ranks failing at once (default 1)\n"
            "  --coll/--bytes/--algo: the first operation (default all_reduce, 8, auto)\n"
            "  TC_HEARTBEAT_MS, TC_HEARTBEAT_MISSES: as the library reads them;\n"
            "  latencies: TC_ALGO_ALPHA_INTRA_US, TC_ALGO_ALPHA_INTER_US, ... (docs/tuning.md)\n");
    return rc;
}

int main(int argc, char **argv)
{
    sim_t s = {.local = 8, .failures = 1, .seed = 1};
    int64_t ranks = 0, local = 8, failures = 1;
    uint64_t bytes = 8;
    const char *coll_s = "all_reduce", *algo = NULL;
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        tc_status_t st = TC_OK;
        if (strcmp(k, "-h") == 0 || strcmp(k, "--help") == 0)
            return usage(stdout, 0);
        if (!v)
            return usage(stderr, 2);
        i++;
        if (strcmp(k, "--ranks") == 0)
            st = tc_parse_int("--ranks", v, 2, 1 << 24, &ranks);
        else if (strcmp(k, "--local") == 0)
            st = tc_parse_int("--local", v, 1, 1 << 16, &local);
        else if (strcmp(k, "--failures") == 0)
            st = tc_parse_int("--failures", v, 0, 1 << 20, &failures);
        else if (strcmp(k, "--seed") == 0)
            st = tc_parse_size("--seed", v, &s.seed);
        else if (strcmp(k, "--bytes") == 0)
            st = tc_parse_size("--bytes", v, &bytes);
        else if (strcmp(k, "--coll") == 0)
            coll_s = v;
        else if (strcmp(k, "--algo") == 0)
            algo = v;
        else
            return usage(stderr, 2);
        if (st != TC_OK) {
            fprintf(stderr, "tc-scale-sim: %s\n", tc_last_error());
            return 2;
        }
    }
    if (ranks == 0)
        return usage(stderr, 2);
    s.n = (int)ranks;
    s.local = (int)(local < ranks ? local : ranks);
    s.nodes = (s.n + s.local - 1) / s.local;
    s.failures = (int)failures;
    s.seed = s.seed ? s.seed : 1;
    tc_status_t st = tc_config_int("TC_HEARTBEAT_MS", 250, 1, 3600000, &s.period_ms);
    if (st == TC_OK)
        st = tc_config_int("TC_HEARTBEAT_MISSES", 8, 2, 1000, &s.misses);
    if (st == TC_OK)
        st = tc_algo_model_get(&s.m);
    if (st != TC_OK) {
        fprintf(stderr, "tc-scale-sim: %s\n", tc_last_error());
        return 2;
    }
    tc_algo_args_t a;
    memset(&a, 0, sizeof(a));
    int c = 0;
    while (c < TC_COLL_COUNT && strcmp(tc_coll_name((tc_coll_t)c), coll_s) != 0)
        c++;
    if (c == TC_COLL_COUNT) {
        fprintf(stderr, "tc-scale-sim: unknown collective '%s'\n", coll_s);
        return 2;
    }
    a.coll = (tc_coll_t)c;
    a.nranks = s.n;
    a.root = a.coll == TC_COLL_REDUCE || a.coll == TC_COLL_BROADCAST || a.coll == TC_COLL_GATHER ||
                     a.coll == TC_COLL_SCATTER
                 ? 0
                 : -1;
    a.count = bytes / 4 ? bytes / 4 : 1;
    a.ranks_per_node = s.local;
    if ((!algo || strcmp(algo, "auto") == 0) && tc_algo_select(&a, 4, NULL, &algo) != TC_OK) {
        fprintf(stderr, "tc-scale-sim: %s\n", tc_last_error());
        return 2;
    }
    s.adj = malloc((size_t)s.n * TC_RT_WATCH_MAX * sizeof(int));
    s.deg = malloc((size_t)s.n * sizeof(int));
    if (!s.adj || !s.deg) {
        fprintf(stderr, "tc-scale-sim: no memory for %d ranks\n", s.n);
        return 2;
    }
    for (int r = 0; r < s.n; r++)
        s.deg[r] = tc_rt_watch_peers(s.n, s.local, r, &s.adj[(size_t)r * TC_RT_WATCH_MAX]);
    printf("# tc-scale-sim: %d ranks, %d per node (%d nodes)\n", s.n, s.local, s.nodes);
    startup(&s, &a, 4, algo);
    detection(&s);
    agreement(&s);
    free(s.adj);
    free(s.deg);
    return 0;
}
