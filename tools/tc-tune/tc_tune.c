/* tc-tune: fit the cost model to the job it runs in, and check the selection.
 *
 *   tcrun -n 4 tc-tune -o FILE [--max-bytes N] [--reps N] [--quick] [-q]
 *                      [--rules [-b MIN] [-e MAX] [-f FACTOR] ...]
 *   tcrun -n 4 tc-tune --validate [--quick] [--csv] [-b MIN] [-e MAX] [-f FACTOR]
 *                      [-n ITERS] [-w WARMUP] [--rounds R] [--target-ms T]
 *                      [--coll NAME] [--max-seconds S]
 *
 * The first measures latency and time per byte of each link class present
 * (same node, other node), the per-message overhead of a burst and the
 * reduction's time per byte, with --rules also every algorithm of every
 * collective and size (rules.c), and rank 0 writes the tuning file
 * (docs/tuning.md); TC_TUNING_FILE=FILE makes the selection use it. --validate times every
 * algorithm of every collective at every size with the model in effect and prints the chosen one
 * beside the fastest (validate.c). Exit status: 0, or 2 on errors (the detail on stderr). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tcomms/base/config.h"
#include "tune.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tc-tune -o FILE [--max-bytes N] [--reps N] [--quick] [-q] [--rules]\n"
            "       tc-tune --validate [--quick] [--csv] [-b MIN] [-e MAX] [-f FACTOR]\n"
            "               [-n ITERS] [-w WARMUP] [--rounds R] [--target-ms T]\n"
            "               [--coll NAME] [--max-seconds S]\n"
            "Run under a launcher (tcrun -n 4 tc-tune -o tcomms.tune).\n"
            "  -o FILE         measure alpha and beta of each link class present (same node,\n"
            "                  other node; ping-pong of 8 B to --max-bytes, default 16M), the\n"
            "                  overhead o of a message in a burst (8 against 1) and gamma\n"
            "                  (reduction), fit them, and write the tuning file (rank 0;\n"
            "                  \"-\": standard output). Use it with TC_TUNING_FILE=FILE.\n"
            "  --reps N        round trips per size (default 50; fewer for large sizes)\n"
            "  --rules         with -o: also time every algorithm of every collective and\n"
            "                  size (the sweep of --validate and its options) and write the\n"
            "                  fastest as rules, which selection follows on this job's shape\n"
            "  --validate      for every collective and size (-b 8 to -e 64M, x -f 8), time\n"
            "                  every algorithm that applies and the selection's choice with the\n"
            "                  model in effect; print the choice beside the fastest and how many\n"
            "                  cells are within 10%% of it. --csv: comma-separated.\n"
            "  --rounds R      measurements per algorithm, interleaved with the others';\n"
            "                  the median is its time (default 5, at most 15)\n"
            "  --target-ms T   a measurement runs the iterations that take about T ms\n"
            "                  (default 10), at most -n ITERS (default 100000); -w WARMUP\n"
            "                  untimed ones first (default 1)\n"
            "  --coll NAME     one collective only (all_reduce, reduce, broadcast, ...)\n"
            "  --max-seconds S stop after the cell that passes S seconds (default 900)\n"
            "  --quick         small sizes and few repetitions (tests): -o: up to 64K;\n"
            "                  --validate: 8 B to 4K, -n 3, --rounds 3\n");
}

typedef struct {
    const char *out;
    int validate;
    int rules;
    tune_opts_t m;
    tune_vopts_t v;
} args_t;

static int parse_coll(const char *name, int *coll_p)
{
    for (int c = 0; c < TC_COLL_COUNT; c++)
        if (strcmp(name, tc_coll_name((tc_coll_t)c)) == 0) {
            *coll_p = c;
            return 0;
        }
    fprintf(stderr, "tc-tune: --coll %s: not a collective\n", name);
    return 2;
}

static int parse_args(int argc, char **argv, args_t *a)
{
    static const struct option longopts[] = {{"validate", no_argument, NULL, 'V'},
                                             {"quick", no_argument, NULL, 'Q'},
                                             {"rules", no_argument, NULL, 'U'},
                                             {"csv", no_argument, NULL, 'C'},
                                             {"coll", required_argument, NULL, 'L'},
                                             {"max-seconds", required_argument, NULL, 'S'},
                                             {"max-bytes", required_argument, NULL, 'M'},
                                             {"reps", required_argument, NULL, 'R'},
                                             {"rounds", required_argument, NULL, 'r'},
                                             {"target-ms", required_argument, NULL, 'T'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    int c, quick = 0, have_b = 0, have_e = 0, have_n = 0, have_r = 0;
    int64_t v;
    tc_status_t st = TC_OK;

    memset(a, 0, sizeof(*a));
    a->m = (tune_opts_t){16u << 20, 50, 0};
    a->v = (tune_vopts_t){.min_bytes = 8,
                          .max_bytes = 64u << 20,
                          .factor = 8,
                          .iters = 100000,
                          .warmup = 1,
                          .target_ms = 10,
                          .rounds = 5,
                          .max_seconds = 900,
                          .coll = -1};
    while ((c = getopt_long(argc, argv, "o:b:e:f:n:w:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            a->out = optarg;
            break;
        case 'V':
            a->validate = 1;
            break;
        case 'Q':
            quick = 1;
            break;
        case 'U':
            a->rules = 1;
            break;
        case 'C':
            a->v.csv = 1;
            break;
        case 'q':
            a->m.quiet = 1;
            break;
        case 'L':
            if (parse_coll(optarg, &a->v.coll))
                return 2;
            break;
        case 'S':
            st = tc_parse_double("--max-seconds", optarg, 0, 1e7, &a->v.max_seconds);
            break;
        case 'M':
            st = tc_parse_size("--max-bytes", optarg, &a->m.max_bytes);
            if (st == TC_OK && (a->m.max_bytes < 64 || a->m.max_bytes > (1u << 30)))
                st = tc_error_set(TC_ERR_CONFIG, "--max-bytes %s: between 64 and 1G", optarg);
            break;
        case 'R':
            st = tc_parse_int("--reps", optarg, 5, 100000, &v);
            a->m.reps = (int)v;
            break;
        case 'r':
            st = tc_parse_int("--rounds", optarg, 1, TUNE_MAX_ROUNDS, &v);
            a->v.rounds = (int)v;
            have_r = 1;
            break;
        case 'T':
            st = tc_parse_double("--target-ms", optarg, 0.01, 10000, &a->v.target_ms);
            break;
        case 'b':
            st = tc_parse_size("-b", optarg, &a->v.min_bytes);
            have_b = 1;
            break;
        case 'e':
            st = tc_parse_size("-e", optarg, &a->v.max_bytes);
            have_e = 1;
            break;
        case 'f':
            st = tc_parse_int("-f", optarg, 2, 1024, &v);
            a->v.factor = (int)v;
            break;
        case 'n':
            st = tc_parse_int("-n", optarg, 1, 100000, &v);
            a->v.iters = (int)v;
            have_n = 1;
            break;
        case 'w':
            st = tc_parse_int("-w", optarg, 0, 1000, &v);
            a->v.warmup = (int)v;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            return 2;
        }
        if (st != TC_OK) {
            fprintf(stderr, "tc-tune: %s\n", tc_last_error());
            return 2;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "tc-tune: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    if ((a->out == NULL) == (a->validate == 0)) {
        fprintf(stderr, "tc-tune: give one of -o FILE and --validate\n");
        usage(stderr);
        return 2;
    }
    if (a->rules && a->out == NULL) {
        fprintf(stderr, "tc-tune: --rules goes with -o FILE (the rules are written there)\n");
        return 2;
    }
    if (quick) {
        if (a->m.max_bytes > 65536)
            a->m.max_bytes = 65536;
        if (a->m.reps > 10)
            a->m.reps = 10;
        if (!have_b)
            a->v.min_bytes = 8;
        if (!have_e)
            a->v.max_bytes = 4096;
        if (!have_n)
            a->v.iters = 3;
        if (!have_r)
            a->v.rounds = 3;
    }
    if (a->v.min_bytes < 1 || a->v.min_bytes > a->v.max_bytes || a->v.max_bytes > (1ull << 32)) {
        fprintf(stderr, "tc-tune: -b %llu -e %llu: need 1 <= MIN <= MAX <= 4G\n",
                (unsigned long long)a->v.min_bytes, (unsigned long long)a->v.max_bytes);
        return 2;
    }
    return 0;
}

/* Rank 0: the file, written aside and renamed into place. */
/* -o -: the file alone on standard output, the measurement's lines on standard
 * error (so that `tc-tune -o - > FILE` works); returns the file's descriptor. */
static int file_to_stdout(void)
{
    int fd;
    fflush(stdout);
    if ((fd = dup(STDOUT_FILENO)) < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
        fprintf(stderr, "tc-tune: -o -: dup: %s\n", strerror(errno));
        return -1;
    }
    return fd;
}

static int write_tuning(const char *path, int out_fd, tc_algo_tuning_t *t, const tune_job_t *job)
{
    char text[16384], tmp[4096];
    time_t now = time(NULL);
    struct tm tm;
    FILE *f;
    size_t len;
    int v = tc_version();

    snprintf(t->host, sizeof(t->host), "%.60s", job->host);
    if (gmtime_r(&now, &tm) != NULL)
        strftime(t->date, sizeof(t->date), "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(t->tool, sizeof(t->tool), "tc-tune (tcomms %d.%d.%d)", v / 10000, v / 100 % 100,
             v % 100);
    if (tc_algo_tuning_format(t, text, sizeof(text), &len) != TC_OK) {
        fprintf(stderr, "tc-tune: %s\n", tc_last_error());
        return 2;
    }
    if (out_fd >= 0) {
        fflush(stdout);
        int ok = write(out_fd, text, len) == (ssize_t)len;
        close(out_fd);
        return ok ? 0 : 2;
    }
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    if ((f = fopen(tmp, "w")) == NULL) {
        fprintf(stderr, "tc-tune: cannot create %s: %s\n", tmp, strerror(errno));
        return 2;
    }
    if (fwrite(text, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "tc-tune: writing %s: %s\n", tmp, strerror(errno));
        remove(tmp);
        return 2;
    }
    if (rename(tmp, path) != 0) {
        fprintf(stderr, "tc-tune: renaming %s to %s: %s\n", tmp, path, strerror(errno));
        remove(tmp);
        return 2;
    }
    printf("# wrote %s (use it with TC_TUNING_FILE=%s)\n", path, path);
    return 0;
}

/* Rank 0 can write @p path's temporary file (0), else says why (2): known before measuring, which
 * takes minutes, and agreed by every rank. */
static int out_writable(const tune_job_t *job, const char *path)
{
    double bad = 0;
    if (job->rank == 0 && strcmp(path, "-") != 0) {
        char tmp[4096];
        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        FILE *f = fopen(tmp, "w");
        if (f == NULL)
            fprintf(stderr, "tc-tune: -o %s: cannot create %s: %s\n", path, tmp, strerror(errno));
        else if (fclose(f) == 0)
            remove(tmp);
        bad = f == NULL;
    }
    if (tc_all_reduce(job->comm, &bad, &bad, 1, TC_FLOAT64, TC_MAX, NULL, NULL) != TC_OK) {
        fprintf(stderr, "tc-tune: rank %d: agreeing on -o %s: %s\n", job->rank, path,
                tc_last_error());
        return 2;
    }
    return bad ? 2 : 0;
}

int main(int argc, char **argv)
{
    tc_comm_t *comm = NULL;
    tune_job_t job;
    args_t a;
    tc_status_t st;
    int rc = parse_args(argc, argv, &a);

    if (rc)
        return rc;
    if ((st = tc_comm_create(NULL, &comm)) != TC_OK) {
        fprintf(stderr, "tc-tune: tc_comm_create: %s: %s\n", tc_status_string(st), tc_last_error());
        return 2;
    }
    if ((st = tune_job_init(comm, &job)) != TC_OK)
        goto fail;
    if (a.validate) {
        int within, cells;
        st = tune_validate(&job, &a.v, &within, &cells);
    } else {
        tc_algo_tuning_t t;
        int out_fd = -1;
        if (job.rank == 0 && strcmp(a.out, "-") == 0 && (out_fd = file_to_stdout()) < 0)
            rc = 2; /* measured all the same: the other ranks wait for this one */
        if (out_writable(&job, a.out) != 0) {
            tune_job_free(&job);
            tc_comm_destroy(comm);
            return 2;
        }
        if (job.rank == 0)
            printf("# tc-tune: %d ranks on %d node(s), at most %d per node\n", job.size, job.nnodes,
                   job.ranks_per_node);
        st = tune_measure(&job, &a.m, &t);
        if (st == TC_OK && a.rules)
            st = tune_rules(&job, &a.v, &t);
        if (st == TC_OK && job.rank == 0)
            rc = rc ? rc : write_tuning(a.out, out_fd, &t, &job);
    }
    if (st != TC_OK)
        goto fail;
    fflush(stdout);
    tc_barrier(comm, NULL, NULL); /* a launcher stops every rank when one fails: print first */
    tune_job_free(&job);
    tc_comm_destroy(comm);
    return rc;
fail:
    fprintf(stderr, "tc-tune: rank %d: %s: %s\n", job.rank, tc_status_string(st), tc_last_error());
    tune_job_free(&job);
    tc_comm_destroy(comm);
    return 2;
}
