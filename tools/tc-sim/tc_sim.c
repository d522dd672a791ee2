/*
 * tc-sim: build every rank's schedule of a collective algorithm, verify it
 * (full: execute all ranks symbolically; sample: a random sample of ranks and
 * their peers), count steps and bytes per rank, and compare the modelled time
 * with the alpha-beta lower bound of the collective.
 *
 * --bytes is the collective's size as nccl-tests count it: the vector for
 * all_reduce, reduce and broadcast; the gathered/scattered buffer for
 * all_gather, reduce_scatter, gather and scatter; one rank's send buffer for
 * all_to_all. Exit status: 0 verified, 1 FAILED, 2 usage error.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tcomms/algo/schedule.h"
#include "tcomms/base/config.h"
#include "tcomms/base/status.h"

#define MAX_ESIZE 1024

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tc-sim --coll COLL --ranks P --bytes SIZE [--algo NAME] [--nodes N]\n"
            "              [--verify full|sample] [--dtype-size B] [--samples K] [--seed S]\n"
            "              [--root R] [--in-place] [--flow-elems E] [--flow-budget STEPS]\n"
            "              [--flow-symmetry off|cut|all] [--oversub R]\n"
            "  COLL: all_reduce reduce broadcast all_gather reduce_scatter all_to_all\n"
            "        gather scatter barrier\n"
            "  SIZE: bytes with an optional K, M, G, T suffix (powers of 1024), a whole number\n"
            "        of B-byte elements (0: an empty collective); barrier needs none\n"
            "  --algo NAME: an algorithm of COLL, or 'auto' (the default): the selection\n"
            "  --dtype-size B: bytes per element, 1 to %d (default 4)\n"
            "  --nodes N: node n holds ranks n*ceil(P/N) to (n+1)*ceil(P/N)-1 (the last\n"
            "        node the rest); an N that this layout does not fill (more nodes than\n"
            "        ranks, or 4 ranks on 3 nodes: blocks of 2 fill 2) is refused with\n"
            "        the nearest that it fills (default: one rank per node)\n"
            "  --oversub R: a node's ranks per core when they outnumber its cores (the\n"
            "        runtime's tc_algo_args_t.oversub on one node; default 0: not\n"
            "        oversubscribed); 'auto' selects as the runtime would there\n"
            "  --verify: default full up to 4096 ranks, else sample\n"
            "  --flow-elems E: sample: output elements per sampled rank traced back to\n"
            "        the inputs (default 8; 0: none)\n"
            "  --flow-budget STEPS: sample: schedule steps the trace may generate\n"
            "        (default 2^24; 0: no limit)\n"
            "  --flow-symmetry: sample: elements the budget would cut (cut, the default)\n"
            "        or all elements are traced through rank 0's schedule rotated when\n"
            "        the checked ranks' schedules are rank 0's rotated (ring-type\n"
            "        algorithms); the other ranks are then assumed to be, and the output\n"
            "        says so\n"
            "  model parameters: TC_ALGO_ALPHA_INTRA_US, TC_ALGO_ALPHA_INTER_US,\n"
            "  TC_ALGO_BETA_INTRA_US, TC_ALGO_BETA_INTER_US, TC_ALGO_GAMMA_US,\n"
            "  TC_ALGO_OVERHEAD_US (or a TC_TUNING_FILE)\n",
            MAX_ESIZE);
}

/* 0 if ranks in blocks of ceil(ranks / nodes) consecutive ranks (the layout simulated) fill
 * every node, else says which node counts around it they fill. */
static int check_nodes(int64_t ranks, int64_t nodes)
{
    const int64_t block = (ranks + nodes - 1) / nodes, filled = (ranks + block - 1) / block;

    if (filled == nodes) {
        return 0;
    }
    if (nodes > ranks) {
        fprintf(stderr,
                "tc-sim: --nodes %lld: more nodes than the %lld ranks (at most --nodes %lld)\n",
                (long long)nodes, (long long)ranks, (long long)ranks);
        return -1;
    }
    /* the next count up is the one of the next smaller block (filled, as every such count) */
    fprintf(
        stderr,
        "tc-sim: --nodes %lld: %lld ranks in blocks of ceil(%lld/%lld) = %lld consecutive ranks "
        "per node fill %lld nodes, not %lld; the nearest node counts they fill are %lld and "
        "%lld\n",
        (long long)nodes, (long long)ranks, (long long)ranks, (long long)nodes, (long long)block,
        (long long)filled, (long long)nodes, (long long)filled,
        (long long)((ranks + block - 2) / (block - 1)));
    return -1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The alpha-beta-gamma lower bound of the collective (seconds). */
static double lower_bound(const tc_algo_model_t *m, const tc_algo_args_t *a, size_t esize, int link)
{
    const double p = a->nranks, lg = ceil(log2(p > 1 ? p : 1));
    const double n = (double)a->count * (double)esize, N = n * p;
    const double al = m->alpha_us[link], be = m->beta_us[link], ga = m->gamma_us;
    double t;

    if (a->nranks == 1) {
        return 0;
    }
    switch (a->coll) {
    case TC_COLL_ALL_REDUCE:
        t = lg * al + 2 * (p - 1) / p * n * be + (p - 1) / p * n * ga;
        break;
    case TC_COLL_REDUCE:
        t = lg * al + n * be + (p - 1) / p * n * ga;
        break;
    case TC_COLL_BROADCAST:
        t = lg * al + n * be;
        break;
    case TC_COLL_REDUCE_SCATTER:
        t = lg * al + (p - 1) / p * N * be + (p - 1) / p * N * ga;
        break;
    case TC_COLL_BARRIER:
        t = lg * al;
        break;
    default: /* all_gather, all_to_all, gather, scatter: (p-1) blocks in or out */
        t = lg * al + (p - 1) / p * N * be;
        break;
    }
    return t * 1e-6;
}

/* Whether @p opt is an option followed by its value. */
static int takes_value(const char *opt)
{
    static const char *const opts[] = {
        "--coll",    "--algo",       "--verify",     "--ranks",       "--nodes",
        "--samples", "--root",       "--flow-elems", "--flow-budget", "--flow-symmetry",
        "--bytes",   "--dtype-size", "--oversub",    "--seed",        NULL};
    int i;

    for (i = 0; opts[i] != NULL && strcmp(opts[i], opt) != 0; i++) {
    }
    return opts[i] != NULL;
}

int main(int argc, char **argv)
{
    const char *coll_s = NULL, *algo = NULL, *hint, *mode_s = NULL, *sym_s = "cut";
    uint64_t bytes = 0;
    int64_t ranks = 0, nodes = 0, samples = 8, root = 0, flow_elems = 8, esize = 4, seed = 1;
    uint64_t flow_budget = 1ull << 24;
    int in_place = 0, have_bytes = 0, i, c, link;
    tc_algo_args_t a;
    tc_algo_verify_opts_t o;
    tc_algo_verify_report_t rep;
    tc_algo_model_t model;
    tc_status_t st;
    double t0, dt, model_t, lb, oversub = 0;

    for (i = 1; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        st = TC_OK;
        if (strcmp(k, "--in-place") == 0) {
            in_place = 1;
            continue;
        }
        if (strcmp(k, "-h") == 0 || strcmp(k, "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (k[0] != '-') {
            fprintf(stderr, "tc-sim: unexpected argument '%s'\n", k);
            usage(stderr);
            return 2;
        }
        if (v == NULL) {
            fprintf(stderr,
                    takes_value(k) ? "tc-sim: %s needs a value\n" : "tc-sim: unknown option %s\n",
                    k);
            usage(stderr);
            return 2;
        }
        i++;
        if (strcmp(k, "--coll") == 0) {
            coll_s = v;
        } else if (strcmp(k, "--algo") == 0) {
            algo = v;
        } else if (strcmp(k, "--verify") == 0) {
            mode_s = v;
        } else if (strcmp(k, "--ranks") == 0) {
            st = tc_parse_int("--ranks", v, 1, 1 << 30, &ranks);
        } else if (strcmp(k, "--nodes") == 0) {
            st = tc_parse_int("--nodes", v, 1, 1 << 30, &nodes);
        } else if (strcmp(k, "--samples") == 0) {
            st = tc_parse_int("--samples", v, 1, 1 << 20, &samples);
        } else if (strcmp(k, "--root") == 0) {
            st = tc_parse_int("--root", v, 0, 1 << 30, &root);
        } else if (strcmp(k, "--flow-elems") == 0) {
            st = tc_parse_int("--flow-elems", v, 0, 1 << 20, &flow_elems);
        } else if (strcmp(k, "--flow-budget") == 0) {
            st = tc_parse_size("--flow-budget", v, &flow_budget);
        } else if (strcmp(k, "--flow-symmetry") == 0) {
            sym_s = v;
        } else if (strcmp(k, "--bytes") == 0) {
            st = tc_parse_size("--bytes", v, &bytes);
            have_bytes = 1;
        } else if (strcmp(k, "--dtype-size") == 0) {
            st = tc_parse_int("--dtype-size", v, 1, MAX_ESIZE, &esize);
        } else if (strcmp(k, "--oversub") == 0) {
            st = tc_parse_double("--oversub", v, 0, 1 << 20, &oversub);
        } else if (strcmp(k, "--seed") == 0) {
            st = tc_parse_int("--seed", v, 0, INT64_MAX, &seed);
        } else {
            fprintf(stderr, "tc-sim: unknown option %s\n", k);
            usage(stderr);
            return 2;
        }
        if (st != TC_OK) {
            fprintf(stderr, "tc-sim: %s\n", tc_last_error());
            return 2;
        }
    }
    if (coll_s == NULL || ranks == 0) {
        fprintf(stderr, "tc-sim: %s is missing\n", coll_s == NULL ? "--coll COLL" : "--ranks P");
        usage(stderr);
        return 2;
    }
    memset(&a, 0, sizeof(a));
    for (c = 0; c < TC_COLL_COUNT && strcmp(tc_coll_name((tc_coll_t)c), coll_s) != 0; c++) {
    }
    if (c == TC_COLL_COUNT) {
        fprintf(stderr, "tc-sim: unknown collective '%s'\n", coll_s);
        usage(stderr);
        return 2;
    }
    a.coll = (tc_coll_t)c;
    if (!have_bytes && a.coll != TC_COLL_BARRIER) {
        fprintf(stderr, "tc-sim: --bytes SIZE is missing (0 for an empty %s)\n", coll_s);
        usage(stderr);
        return 2;
    }
    if (bytes % (uint64_t)esize != 0) {
        fprintf(stderr,
                "tc-sim: --bytes %llu: not a whole number of %lld-byte elements (--dtype-size)\n",
                (unsigned long long)bytes, (long long)esize);
        return 2;
    }
    a.nranks = (int)ranks;
    a.root = (a.coll == TC_COLL_REDUCE || a.coll == TC_COLL_BROADCAST || a.coll == TC_COLL_GATHER ||
              a.coll == TC_COLL_SCATTER)
                 ? (int)root
                 : -1;
    a.in_place = in_place;
    a.count = bytes / esize;
    if (a.coll == TC_COLL_ALL_GATHER || a.coll == TC_COLL_REDUCE_SCATTER ||
        a.coll == TC_COLL_ALL_TO_ALL || a.coll == TC_COLL_GATHER || a.coll == TC_COLL_SCATTER) {
        a.count /= (uint64_t)ranks; /* per-rank block */
        if (a.count == 0 && bytes > 0) {
            fprintf(stderr,
                    "tc-sim: --bytes %llu: less than one %lld-byte element per rank's block (%s "
                    "on %lld ranks: 0 or at least %llu bytes)\n",
                    (unsigned long long)bytes, (long long)esize, coll_s, (long long)ranks,
                    (unsigned long long)esize * (unsigned long long)ranks);
            return 2;
        }
    }
    if (nodes == 0) {
        nodes = ranks;
    }
    if (check_nodes(ranks, nodes) != 0) {
        return 2;
    }
    a.ranks_per_node = (int)((ranks + nodes - 1) / nodes);
    a.oversub = oversub;
    /* a name is checked by the selection, so that an unknown or inapplicable one is a usage
     * error naming the valid algorithms, not a failed verification */
    if (algo != NULL && strcmp(algo, "auto") == 0) {
        algo = NULL;
    }
    hint = algo;
    st = tc_algo_select(&a, (size_t)esize, hint, &algo);
    if (st != TC_OK) {
        const char *why = tc_last_error(), *from = "hint algo: "; /* the selection's name for it */
        if (hint == NULL) {
            fprintf(stderr, "tc-sim: %s\n", why);
        } else {
            if (strncmp(why, from, strlen(from)) == 0) {
                why += strlen(from);
            }
            fprintf(stderr, "tc-sim: --algo %s: %s\n", hint, why);
        }
        return 2;
    }
    memset(&o, 0, sizeof(o));
    o.mode = ranks > 4096 ? TC_ALGO_VERIFY_SAMPLE : TC_ALGO_VERIFY_FULL;
    if (mode_s != NULL) {
        if (strcmp(mode_s, "full") == 0) {
            o.mode = TC_ALGO_VERIFY_FULL;
        } else if (strcmp(mode_s, "sample") == 0) {
            o.mode = TC_ALGO_VERIFY_SAMPLE;
        } else {
            fprintf(stderr, "tc-sim: --verify must be full or sample, not '%s'\n", mode_s);
            return 2;
        }
    }
    o.nsample = (int)samples;
    o.seed = (uint64_t)seed;
    o.elem_size = (size_t)esize;
    o.flow_elems = flow_elems > 0 ? (int)flow_elems : -1;
    o.flow_budget = flow_budget > 0 ? flow_budget : UINT64_MAX;
    if (strcmp(sym_s, "off") == 0) {
        o.flow_symmetry = TC_ALGO_FLOW_SYM_OFF;
    } else if (strcmp(sym_s, "cut") == 0) {
        o.flow_symmetry = TC_ALGO_FLOW_SYM_CUT;
    } else if (strcmp(sym_s, "all") == 0) {
        o.flow_symmetry = TC_ALGO_FLOW_SYM_ALL;
    } else {
        fprintf(stderr, "tc-sim: --flow-symmetry must be off, cut or all, not '%s'\n", sym_s);
        return 2;
    }
    if ((st = tc_algo_model_get(&model)) != TC_OK) {
        fprintf(stderr, "tc-sim: %s\n", tc_last_error());
        return 2;
    }
    link = a.ranks_per_node < a.nranks ? 1 : 0;
    printf("%s %s: %d ranks on %lld node(s), %llu bytes (%llu x %llu B per rank%s)%s\n",
           tc_coll_name(a.coll), algo, a.nranks, (long long)nodes, (unsigned long long)bytes,
           (unsigned long long)a.count, (unsigned long long)esize,
           a.count * esize * (uint64_t)ranks == bytes && a.coll != TC_COLL_ALL_REDUCE &&
                   a.coll != TC_COLL_REDUCE && a.coll != TC_COLL_BROADCAST
               ? ", per block"
               : "",
           in_place ? ", in place" : "");
    memset(&rep, 0, sizeof(rep));
    t0 = now_s();
    st = tc_algo_verify_ex(&a, algo, NULL, &o, &rep);
    dt = now_s() - t0;
    if (st != TC_OK) {
        printf("FAILED (%s verification, %.2f s): %s\n",
               o.mode == TC_ALGO_VERIFY_FULL ? "full" : "sampled", dt, tc_last_error());
        return st == TC_ERR_INTERNAL ? 1 : 2;
    }
    printf("verified (%s: %d ranks checked%s) in %.2f s\n",
           o.mode == TC_ALGO_VERIFY_FULL ? "full, every rank executed" : "sampled",
           rep.ranks_checked, o.mode == TC_ALGO_VERIFY_FULL ? "" : " with their peers", dt);
    if (o.mode == TC_ALGO_VERIFY_SAMPLE && o.flow_elems > 0) {
        printf("flow: %llu sampled output elements proven from the inputs, %llu cut by the "
               "budget; %llu schedules (%llu steps) generated, %llu steps traced back\n",
               (unsigned long long)rep.flow_elems_proven, (unsigned long long)rep.flow_elems_cut,
               (unsigned long long)rep.flow_ranks_built, (unsigned long long)rep.flow_steps_built,
               (unsigned long long)rep.flow_hops);
        if (rep.flow_sym_state == 1) {
            printf("flow symmetry: %llu more elements proven through rank 0's schedule rotated, "
                   "ASSUMING every rank's schedule is rank 0's rotated: checked on %d of %d "
                   "ranks, not proven for the other %d\n",
                   (unsigned long long)rep.flow_elems_sym, rep.flow_sym_checked + 1, a.nranks,
                   a.nranks - rep.flow_sym_checked - 1);
        } else if (rep.flow_sym_state == -1) {
            printf("flow symmetry: not applicable (not p equal blocks of all_reduce, all_gather, "
                   "reduce_scatter or all_to_all)\n");
        } else if (rep.flow_sym_state == -2) {
            printf("flow symmetry: not used: rank %d's step %u is not rank 0's rotated (%d "
                   "ranks compared)\n",
                   rep.flow_sym_rank, rep.flow_sym_step, rep.flow_sym_checked);
        }
    }
    printf("per rank (busiest): %u steps, %llu messages sent, %llu bytes sent, %llu bytes "
           "received, %llu bytes reduced\n",
           rep.max_steps, (unsigned long long)rep.max_send_msgs,
           (unsigned long long)(rep.max_send_elems * esize),
           (unsigned long long)(rep.max_recv_elems * esize),
           (unsigned long long)(rep.max_red_elems * esize));
    printf("formula: %.0f rounds, %.4g bytes and %.4g bytes reduced on the critical path; "
           "busiest rank sends %llu messages, %llu bytes (matches)\n",
           rep.formula.rounds, rep.formula.elems * (double)esize,
           rep.formula.red_elems * (double)esize, (unsigned long long)rep.formula.max_send_msgs,
           (unsigned long long)(rep.formula.max_send_elems * esize));
    model_t = tc_algo_model_time(&model, &a, &rep.formula, (size_t)esize);
    lb = lower_bound(&model, &a, (size_t)esize, link);
    printf("model (alpha %.3g us, beta %.3g us/B, gamma %.3g us/B): formula %.6g s",
           model.alpha_us[link], model.beta_us[link], model.gamma_us, model_t);
    if (rep.executed) {
        printf(", simulated %.6g s", rep.model_time_s);
    }
    printf("; lower bound %.6g s; ratio %.4f\n", lb, lb > 0 ? model_t / lb : 1.0);
    return 0;
}
