/* Measure the job's links and reductions, and fit the cost model.
 *
 * Link classes: same node (two ranks with one node id: hostname and boot id,
 * as the runtime computes it) and other node. For each class present, one
 * pair of ranks (rank 0 and the first rank of the class, else the first
 * pair of the class) does ping-pongs of 8 bytes to max_bytes through
 * tc_send/tc_recv, the path every collective's messages take; half the
 * median round trip is the time of one message. alpha and beta of the class
 * are the least-squares line through those times (tc_algo_fit_line). gamma
 * is the slope of the time of tc_kern_reduce (float32 sum, as the executor
 * calls it) over sizes on rank 0. The per-message overhead o is what one
 * more 8-byte message adds to a burst: the pair of the widest class sends
 * TUNE_BURST messages in one batch (issued together, as a linear root posts
 * its messages) and one back; o = (t(burst) - t(1)) / (TUNE_BURST - 1) with
 * t the median of such exchanges, and the same with every rank sending its
 * burst at once (the larger is o). The other ranks wait meanwhile, so a
 * measurement is one link alone, not a link among many busy ones; beta comes
 * from that. A collective's rounds run every rank at once, so alpha is the
 * larger of the fit's and the time of an 8-byte exchange of that class in
 * which every rank takes part (tune_loaded): the same on a cluster with a core
 * per rank, the scheduler's turns on an oversubscribed node. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tcomms/base/time.h"
#include "tcomms/kernels/reduce.h"
#include "tcomms/topo/topo.h"
#include "tune.h"

#define TUNE_MAX_SIZES 32
#define TUNE_BURST 8

static void tune_boot_id(char *buf, size_t len)
{
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    buf[0] = '\0';
    if (f == NULL)
        return;
    if (fgets(buf, (int)len, f) == NULL)
        buf[0] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
    fclose(f);
}

tc_status_t tune_job_init(tc_comm_t *comm, tune_job_t *job)
{
    char boot[128];
    uint64_t id, *ids;
    tc_status_t st;

    memset(job, 0, sizeof(*job));
    job->comm = comm;
    if ((st = tc_comm_rank(comm, &job->rank)) != TC_OK ||
        (st = tc_comm_size(comm, &job->size)) != TC_OK)
        return st;
    if (gethostname(job->host, sizeof(job->host) - 1) != 0)
        snprintf(job->host, sizeof(job->host), "unknown");
    tune_boot_id(boot, sizeof(boot));
    id = tc_topo_node_id(job->host, boot[0] ? boot : NULL);
    ids = calloc((size_t)job->size, sizeof(*ids));
    job->node = calloc((size_t)job->size, sizeof(int));
    if (ids == NULL || job->node == NULL) {
        free(ids);
        return tc_error_set(TC_ERR_NO_MEMORY, "node ids of %d ranks", job->size);
    }
    st = tc_all_gather(comm, &id, ids, 1, TC_UINT64, NULL, NULL);
    for (int r = 0; st == TC_OK && r < job->size; r++) {
        int q = 0;
        while (ids[q] != ids[r])
            q++;
        job->node[r] = q == r ? job->nnodes++ : job->node[q];
    }
    for (int n = 0; st == TC_OK && n < job->nnodes; n++) {
        int count = 0;
        for (int r = 0; r < job->size; r++)
            count += job->node[r] == n;
        if (count > job->ranks_per_node)
            job->ranks_per_node = count;
    }
    free(ids);
    return st;
}

void tune_job_free(tune_job_t *job)
{
    free(job->node);
    job->node = NULL;
}

/* The pair measuring class @p cls (0 same node, 1 other node): 0 when none. */
static int tune_pair(const tune_job_t *job, int cls, int *a_p, int *b_p)
{
    for (int a = 0; a < job->size; a++)
        for (int b = a + 1; b < job->size; b++)
            if ((job->node[a] == job->node[b]) == (cls == 0)) {
                *a_p = a;
                *b_p = b;
                return 1;
            }
    return 0;
}

static int tune_cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

double tune_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), tune_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Round trips of @p bytes between a and b; on a, half the median (us). */
static tc_status_t tune_pingpong(const tune_job_t *job, int a, int b, void *buf, size_t bytes,
                                 int reps, double *half_us_p)
{
    double *t = calloc((size_t)reps, sizeof(*t));
    tc_status_t st = TC_OK;

    if (t == NULL)
        return tc_error_set(TC_ERR_NO_MEMORY, "%d times", reps);
    for (int i = -2; i < reps && st == TC_OK; i++) { /* 2 warm-up round trips */
        if (job->rank == a) {
            double t0 = tc_time_s();
            st = tc_send(job->comm, buf, bytes, TC_UINT8, b, NULL, NULL);
            if (st == TC_OK)
                st = tc_recv(job->comm, buf, bytes, TC_UINT8, b, NULL, NULL);
            if (i >= 0)
                t[i] = (tc_time_s() - t0) * 1e6;
        } else if (job->rank == b) {
            st = tc_recv(job->comm, buf, bytes, TC_UINT8, a, NULL, NULL);
            if (st == TC_OK)
                st = tc_send(job->comm, buf, bytes, TC_UINT8, a, NULL, NULL);
        }
    }
    if (st == TC_OK && job->rank == a)
        *half_us_p = tune_median(t, reps) / 2;
    free(t);
    return st;
}

/* Where rank r sends in the loaded exchange of class @p cls (0 same node, 1
 * other node), or -1 when it sends nothing: the next rank of its node (in
 * rank order, cyclically), or the rank of the same place in the next node
 * that has one (cyclically, the place taken modulo that node's ranks). */
static int tune_loaded_to(const tune_job_t *job, int cls, int r)
{
    const int n = job->size, nn = job->nnodes, nd = job->node[r];
    int place = 0;
    if (cls == 0) {
        for (int k = 1; k < n; k++)
            if (job->node[(r + k) % n] == nd)
                return (r + k) % n;
        return -1;
    }
    for (int q = 0; q < r; q++)
        place += job->node[q] == nd;
    for (int k = 1; k < nn; k++) {
        const int next = (nd + k) % nn;
        int cnt = 0;
        for (int q = 0; q < n; q++)
            cnt += job->node[q] == next;
        for (int q = 0, i = 0; q < n; q++)
            if (job->node[q] == next && i++ == place % cnt)
                return q;
    }
    return -1;
}

/* Every rank at once: each sends @p k messages of 8 bytes as tune_loaded_to()
 * says and receives what is sent to it, in one batch, @p reps times after 2
 * warm-up ones; *us_p (on every rank) the largest over the ranks of each one's
 * median. That is the latency a collective's round sees when every rank runs
 * (on an oversubscribed node: the scheduler's turns), which a pair alone does
 * not show. */
static tc_status_t tune_loaded(const tune_job_t *job, int cls, int k, int reps, double *us_p)
{
    const int me = job->rank;
    double *t = calloc((size_t)reps, sizeof(*t)), us = 0;
    uint64_t *in = calloc((size_t)job->size * TUNE_BURST, sizeof(*in)), out[TUNE_BURST] = {0};
    int *to = calloc((size_t)job->size, sizeof(*to));
    tc_status_t st = TC_OK;

    if (t == NULL || in == NULL || to == NULL) {
        st = tc_error_set(TC_ERR_NO_MEMORY, "%d times, %d ranks", reps, job->size);
        goto out;
    }
    for (int q = 0; q < job->size; q++)
        to[q] = tune_loaded_to(job, cls, q);
    for (int i = -2; i < reps && st == TC_OK; i++) {
        double t0 = tc_time_s();
        st = tc_batch_begin(job->comm);
        for (int j = 0; j < k && st == TC_OK && to[me] >= 0; j++)
            st = tc_send(job->comm, &out[j], 1, TC_UINT64, to[me], NULL, NULL);
        for (int q = 0; q < job->size && st == TC_OK; q++)
            for (int j = 0; j < k && st == TC_OK && q != me && to[q] == me; j++)
                st = tc_recv(job->comm, &in[q * TUNE_BURST + j], 1, TC_UINT64, q, NULL, NULL);
        if (st == TC_OK)
            st = tc_batch_end(job->comm, NULL, NULL);
        if (i >= 0)
            t[i] = (tc_time_s() - t0) * 1e6;
    }
    if (st == TC_OK) {
        us = tune_median(t, reps);
        st = tc_all_reduce(job->comm, &us, us_p, 1, TC_FLOAT64, TC_MAX, NULL, NULL);
    }
out:
    free(t);
    free(in);
    free(to);
    return st;
}

/* k 8-byte messages a -> b in one batch, one back; on a, the median (us). */
static tc_status_t tune_burst(const tune_job_t *job, int a, int b, int k, int reps, double *us_p)
{
    double *t = calloc((size_t)reps, sizeof(*t));
    uint64_t buf[TUNE_BURST];
    tc_status_t st = TC_OK;
    const int me = job->rank, peer = me == a ? b : a;

    if (t == NULL)
        return tc_error_set(TC_ERR_NO_MEMORY, "%d times", reps);
    memset(buf, 0, sizeof(buf));
    for (int i = -2; i < reps && st == TC_OK && (me == a || me == b); i++) { /* 2 warm-up */
        double t0 = tc_time_s();
        st = tc_batch_begin(job->comm);
        for (int j = 0; j < k && st == TC_OK; j++)
            st = me == a ? tc_send(job->comm, &buf[j], 1, TC_UINT64, peer, NULL, NULL)
                         : tc_recv(job->comm, &buf[j], 1, TC_UINT64, peer, NULL, NULL);
        if (st == TC_OK)
            st = tc_batch_end(job->comm, NULL, NULL);
        if (st == TC_OK)
            st = me == a ? tc_recv(job->comm, buf, 1, TC_UINT64, peer, NULL, NULL)
                         : tc_send(job->comm, buf, 1, TC_UINT64, peer, NULL, NULL);
        if (i >= 0)
            t[i] = (tc_time_s() - t0) * 1e6;
    }
    if (st == TC_OK && me == a)
        *us_p = tune_median(t, reps);
    free(t);
    return st;
}

/* o on the pair a-b of class @p cls, and with every rank at once: the larger
 * (every rank returns with *o_p set alike). @p one: that class's exchange of
 * one message with every rank at once, measured for alpha. */
static tc_status_t tune_overhead(const tune_job_t *job, const tune_opts_t *o, int cls, int a, int b,
                                 double one, double *o_p)
{
    double t[2] = {0, 0}, l[2] = {one, 0};
    tc_status_t st = tune_burst(job, a, b, 1, o->reps, &t[0]);

    if (st == TC_OK)
        st = tune_burst(job, a, b, TUNE_BURST, o->reps, &t[1]);
    if (st == TC_OK) /* rank a's times to everyone */
        st = tc_all_reduce(job->comm, t, t, 2, TC_FLOAT64, TC_MAX, NULL, NULL);
    if (st == TC_OK)
        st = tune_loaded(job, cls, TUNE_BURST, o->reps, &l[1]);
    if (st == TC_OK && job->rank == 0 && !o->quiet)
        printf("%-6s %d-%d %10d msgs  %12.3f us\n%-6s %d-%d %10d msgs  %12.3f us\n"
               "%-6s %-3s %10d msgs  %12.3f us (every rank at once)\n"
               "%-6s %-3s %10d msgs  %12.3f us (every rank at once)\n",
               "burst", a, b, 1, t[0], "burst", a, b, TUNE_BURST, t[1], "burst", "all", 1, l[0],
               "burst", "all", TUNE_BURST, l[1]);
    double alone = t[1] > t[0] ? (t[1] - t[0]) / (TUNE_BURST - 1) : 0.0;
    double loaded = l[1] > l[0] ? (l[1] - l[0]) / (TUNE_BURST - 1) : 0.0;
    *o_p = loaded > alone ? loaded : alone;
    return st;
}

/* The sizes: 8 bytes, x4, up to max (max itself last). */
static int tune_sizes(uint64_t lo, uint64_t max, double *x)
{
    int n = 0;
    for (uint64_t s = lo; s <= max && n < TUNE_MAX_SIZES - 1; s *= 4)
        x[n++] = (double)s;
    if (n == 0 || x[n - 1] < (double)max)
        x[n++] = (double)max;
    return n;
}

static int tune_reps(const tune_opts_t *o, double bytes)
{
    double r = bytes <= 65536 ? o->reps : o->reps * 65536.0 / bytes;
    return r < 5 ? 5 : (int)r;
}

/* One class: every rank returns with x, t (us) and *n filled alike. */
static tc_status_t tune_class(const tune_job_t *job, const tune_opts_t *o, int a, int b, double *x,
                              double *t, int *n_p)
{
    int n = tune_sizes(8, o->max_bytes, x);
    void *buf = calloc(1, o->max_bytes);
    tc_status_t st = TC_OK;

    if (buf == NULL)
        return tc_error_set(TC_ERR_NO_MEMORY, "a buffer of %llu bytes",
                            (unsigned long long)o->max_bytes);
    for (int i = 0; i < n; i++)
        t[i] = 0;
    for (int i = 0; i < n && st == TC_OK; i++)
        st = tune_pingpong(job, a, b, buf, (size_t)x[i], tune_reps(o, x[i]), &t[i]);
    free(buf);
    if (st == TC_OK) /* rank a's times to everyone */
        st = tc_all_reduce(job->comm, t, t, (size_t)n, TC_FLOAT64, TC_MAX, NULL, NULL);
    *n_p = n;
    return st;
}

/* gamma on this rank: the slope of tc_kern_reduce's time over sizes. */
static tc_status_t tune_gamma(const tune_opts_t *o, double *gamma_p, double *x, double *t, int *n_p)
{
    const size_t maxb = 4u << 20;
    int n = tune_sizes(16384, maxb, x);
    float *a = malloc(maxb), *b = malloc(maxb);
    tc_status_t st = TC_OK;
    double r[16];

    if (a == NULL || b == NULL) {
        st = tc_error_set(TC_ERR_NO_MEMORY, "2 x %zu bytes", maxb);
        goto out;
    }
    for (size_t i = 0; i < maxb / sizeof(float); i++)
        a[i] = b[i] = (float)(i % 1024);
    for (int i = 0; i < n && st == TC_OK; i++) {
        size_t cnt = (size_t)x[i] / sizeof(float);
        int inner = (int)(4 * 1048576.0 / x[i]) + 1, reps = o->reps < 16 ? o->reps : 16;
        if (reps < 5)
            reps = 5;
        for (int k = 0; k < reps && st == TC_OK; k++) {
            double t0 = tc_time_s();
            for (int j = 0; j < inner && st == TC_OK; j++)
                st = tc_kern_reduce(TC_FLOAT32, TC_SUM, a, a, b, cnt);
            /* a grows by at most 1023 per call: far from float's range */
            r[k] = (tc_time_s() - t0) * 1e6 / inner;
        }
        t[i] = tune_median(r, reps);
    }
    if (st == TC_OK) {
        double alpha;
        st = tc_algo_fit_line(x, t, (size_t)n, &alpha, gamma_p);
    }
    *n_p = n;
out:
    free(a);
    free(b);
    return st;
}

tc_status_t tune_measure(const tune_job_t *job, const tune_opts_t *o, tc_algo_tuning_t *tuning)
{
    static const char *const cname[2] = {"intra", "inter"};
    double x[TUNE_MAX_SIZES], t[TUNE_MAX_SIZES];
    tc_algo_tuning_t tu;
    tc_status_t st = TC_OK, fst = TC_OK;
    int n = 0, a = 0, b = 0;
    double loaded[2] = {0, 0}; /* per class: one message with every rank at once */

    memset(&tu, 0, sizeof(tu));
    tu.version = TC_ALGO_TUNING_VERSION;
    for (int cls = 0; cls < 2 && st == TC_OK; cls++) {
        if (!tune_pair(job, cls, &a, &b)) {
            if (job->rank == 0)
                printf("# %s: no pair of ranks %s: not measured (the default or the "
                       "variable applies)\n",
                       cname[cls], cls ? "on different nodes" : "on one node");
            continue;
        }
        if ((st = tune_class(job, o, a, b, x, t, &n)) != TC_OK ||
            (st = tune_loaded(job, cls, 1, o->reps, &loaded[cls])) != TC_OK)
            break;
        if (job->rank == 0) {
            double alpha, beta;
            if (!o->quiet) {
                for (int i = 0; i < n; i++)
                    printf("%-6s %d-%d %10.0f bytes %12.3f us\n", cname[cls], a, b, x[i], t[i]);
                printf("%-6s %-3s %10d bytes %12.3f us (every rank at once)\n", cname[cls], "all",
                       8, loaded[cls]);
            }
            /* a failed fit on rank 0 does not stop the others' loop: it is
             * reported after the last collective step */
            if (fst != TC_OK || (fst = tc_algo_fit_line(x, t, (size_t)n, &alpha, &beta)) != TC_OK)
                continue;
            if (loaded[cls] > alpha) { /* a round of a collective waits for that */
                printf("# %s: alpha_us %.4g of the pair alone, %.4g with every rank at once: the "
                       "latter taken\n",
                       cname[cls], alpha, loaded[cls]);
                alpha = loaded[cls];
            }
            tu.value[cls ? TC_ALGO_PARAM_ALPHA_INTER : TC_ALGO_PARAM_ALPHA_INTRA] = alpha;
            tu.value[cls ? TC_ALGO_PARAM_BETA_INTER : TC_ALGO_PARAM_BETA_INTRA] = beta;
            tu.has[cls ? TC_ALGO_PARAM_ALPHA_INTER : TC_ALGO_PARAM_ALPHA_INTRA] = 1;
            tu.has[cls ? TC_ALGO_PARAM_BETA_INTER : TC_ALGO_PARAM_BETA_INTRA] = 1;
            printf("# %s (ranks %d-%d): alpha_us = %.4g, beta_us = %.4g (%.3g GB/s)\n", cname[cls],
                   a, b, alpha, beta, beta > 0 ? 1e-3 / beta : INFINITY);
        }
    }
    /* o on the widest class's pair (the last one measured) */
    if (st == TC_OK && job->size > 1) {
        double ov = 0;
        int cls = 1;
        if (!tune_pair(job, 1, &a, &b)) {
            cls = 0;
            tune_pair(job, 0, &a, &b);
        }
        if ((st = tune_overhead(job, o, cls, a, b, loaded[cls], &ov)) == TC_OK && job->rank == 0) {
            tu.value[TC_ALGO_PARAM_OVERHEAD] = ov;
            tu.has[TC_ALGO_PARAM_OVERHEAD] = 1;
            printf("# burst of %d (ranks %d-%d, and every rank at once): overhead_us = %.4g per "
                   "message (the larger)\n",
                   TUNE_BURST, a, b, ov);
        }
    }
    if (st == TC_OK && fst == TC_OK && job->rank == 0) {
        fst = tune_gamma(o, &tu.value[TC_ALGO_PARAM_GAMMA], x, t, &n);
        if (fst == TC_OK) {
            tu.has[TC_ALGO_PARAM_GAMMA] = 1;
            if (!o->quiet)
                for (int i = 0; i < n; i++)
                    printf("%-6s %3s %10.0f bytes %12.3f us\n", "reduce", "0", x[i], t[i]);
            printf("# reduce (rank 0, float32 sum): gamma_us = %.4g (%.3g GB/s)\n",
                   tu.value[TC_ALGO_PARAM_GAMMA],
                   tu.value[TC_ALGO_PARAM_GAMMA] > 0 ? 1e-3 / tu.value[TC_ALGO_PARAM_GAMMA]
                                                     : INFINITY);
        }
    }
    if (st != TC_OK) /* a communication error: every rank has one */
        return st;
    /* rank 0's fit to everyone: a failed fit there fails every rank */
    double bad = fst != TC_OK, any = bad;
    char why[256];
    snprintf(why, sizeof(why), "%s", fst != TC_OK ? tc_last_error() : "");
    st = tc_all_reduce(job->comm, &bad, &any, 1, TC_FLOAT64, TC_MAX, NULL, NULL);
    if (st == TC_OK && fst != TC_OK)
        st = tc_error_set(fst, "%s", why);
    else if (st == TC_OK && any != 0)
        st = tc_error_set(TC_ERR_INTERNAL, "the fit failed on rank 0");
    if (st == TC_OK) {
        tu.ranks = job->size;
        tu.nodes = job->nnodes;
        tu.ranks_per_node = job->ranks_per_node;
        *tuning = tu;
    }
    return st;
}
