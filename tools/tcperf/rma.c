/* tcperf --coll put|get|put_signal: one-sided window operations (tc_win_*).
 *
 * Rank 0 (the origin) reaches into rank 1's window (the target); the target
 * calls nothing during the timed loops (passive target). Other ranks only take
 * part in the collectives. Per size:
 *   latency:   one operation, then tc_win_flush() to the target, per iteration;
 *   bandwidth: -B operations back to back (asynchronous, each to its own
 *              offset while they fit in the window), then one flush; bytes
 *              moved / time. Fire-and-forget (no work objects, as MPI_Put in
 *              a passive epoch); with -z 1 each has a work object, waited for
 *              after the flush.
 * put_signal adds 1 to the target's slot 0 with every put. Check (-c 1): the
 * data of the timed loops carries a pattern (tcperf_fill_block) and is
 * checked element by element after them: every region of the target's window
 * the puts wrote (set to a filler before), the origin's buffer after the gets
 * (a filler before), and the target's slot 0 against the number of
 * put_signals. #wrong sums both ranks. Times are the origin's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rma.h"
#include "tcomms/base/time.h"

enum { ORIGIN = 0, TARGET = 1, SLOT = 0 };

typedef struct {
    tc_comm_t *comm;
    int rank;
    const tcperf_rma_opts_t *o;
    tc_win_t *win;
    unsigned char *wbuf;   /* this rank's window memory */
    unsigned char *lbuf;   /* the origin's source/destination */
    tc_work_t **works;     /* -B works of a bandwidth burst */
    uint64_t seq, signals; /* checks so far; put_signals sent to the target so far */
} rma_t;

static const char *names[] = {"put", "get", "put_signal"};

static int fail(const char *what, tc_status_t st)
{
    fprintf(stderr, "tcperf: %s: %s: %s\n", what, tc_status_string(st), tc_last_error());
    return 2;
}

/* Offset of the k-th operation of a burst of @p bytes: its own region while
 * they fit in the window, else 0 (overlapping puts all carry the same data). */
static uint64_t offset_of(const rma_t *r, uint64_t bytes, int k)
{
    uint64_t off = (uint64_t)k * bytes;
    return off + bytes <= r->o->max_bytes ? off : 0;
}

/* Distinct regions a burst of @p bytes touches. */
static int regions_of(const rma_t *r, uint64_t bytes)
{
    int n = 1;
    while (n < r->o->burst && offset_of(r, bytes, n) != 0)
        n++;
    return n;
}

/* Issue one operation; with @p work_p NULL it is blocking. */
static tc_status_t issue(rma_t *r, uint64_t bytes, uint64_t off, const tc_op_opts_t *opts,
                         tc_work_t **work_p)
{
    switch (r->o->op) {
    case TCPERF_PUT:
        return tc_win_put(r->win, r->lbuf, bytes, TARGET, off, opts, work_p);
    case TCPERF_GET:
        return tc_win_get(r->win, r->lbuf, bytes, TARGET, off, opts, work_p);
    default:
        r->signals++;
        return tc_win_put_signal(r->win, r->lbuf, bytes, TARGET, off, SLOT, 1, TC_WIN_SIGNAL_ADD,
                                 opts, work_p);
    }
}

/* One latency iteration: the operation (blocking, or async and waited for
 * with -z 1), then a flush. */
static tc_status_t lat_once(rma_t *r, uint64_t bytes)
{
    tc_op_opts_t opts = TC_OP_OPTS_INIT;
    tc_work_t *w = NULL;
    opts.async = r->o->async;
    tc_status_t st = issue(r, bytes, 0, &opts, r->o->async ? &w : NULL);
    if (w) {
        if (st == TC_OK)
            st = tc_work_wait(w, -1);
        tc_status_t fst = tc_work_free(w);
        if (st == TC_OK)
            st = fst;
    }
    return st == TC_OK ? tc_win_flush(r->win, TARGET, -1) : st;
}

/* One bandwidth iteration: -B asynchronous operations, one flush. */
static tc_status_t bw_once(rma_t *r, uint64_t bytes)
{
    tc_op_opts_t opts = TC_OP_OPTS_INIT;
    opts.async = 1;
    tc_status_t st = TC_OK;
    int n = 0;
    for (; n < r->o->burst && st == TC_OK; n++) {
        r->works[n] = NULL;
        st = issue(r, bytes, offset_of(r, bytes, n), &opts, r->o->async ? &r->works[n] : NULL);
        if (st != TC_OK)
            r->works[n] = NULL;
    }
    if (st == TC_OK)
        st = tc_win_flush(r->win, TARGET, -1);
    for (int k = 0; k < n; k++) {
        if (!r->works[k])
            continue;
        tc_status_t wst = tc_work_wait(r->works[k], -1); /* done after the flush */
        tc_status_t fst = tc_work_free(r->works[k]);
        r->works[k] = NULL;
        if (st == TC_OK)
            st = wst != TC_OK ? wst : fst;
    }
    return st;
}

static tc_status_t max_over_ranks(rma_t *r, double *v)
{
    return tc_all_reduce(r->comm, v, v, 1, TC_FLOAT64, TC_MAX, NULL, NULL);
}

static size_t esize_of(uint64_t bytes)
{
    return bytes % 8 == 0 ? 8 : 1;
}

/* Before the timed loops: the pattern where the data comes from, a filler
 * where it lands. */
static void prepare(rma_t *r, uint64_t bytes)
{
    const size_t es = esize_of(bytes), n = (size_t)bytes / es;
    const int regions = regions_of(r, bytes);
    if (r->o->op == TCPERF_GET) {
        if (r->rank == TARGET)
            for (int k = 0; k < regions; k++)
                tcperf_fill_block(r->wbuf + offset_of(r, bytes, k), n, es, TARGET, ORIGIN, r->seq);
        if (r->rank == ORIGIN)
            memset(r->lbuf, 0xa5, bytes);
    } else {
        if (r->rank == ORIGIN)
            tcperf_fill_block(r->lbuf, n, es, ORIGIN, TARGET, r->seq);
        if (r->rank == TARGET)
            memset(r->wbuf, 0xa5, offset_of(r, bytes, regions - 1) + bytes);
    }
}

/* After the timed loops (and a barrier): wrong elements on this rank. */
static size_t check(rma_t *r, uint64_t bytes)
{
    const size_t es = esize_of(bytes), n = (size_t)bytes / es;
    size_t wrong = 0;
    if (r->o->op == TCPERF_GET)
        return r->rank == ORIGIN ? tcperf_check_block(r->lbuf, n, es, TARGET, ORIGIN, r->seq) : 0;
    if (r->rank != TARGET)
        return 0;
    const int regions = regions_of(r, bytes);
    for (int k = 0; k < regions; k++)
        wrong +=
            tcperf_check_block(r->wbuf + offset_of(r, bytes, k), n, es, ORIGIN, TARGET, r->seq);
    return wrong;
}

/* The target's slot 0 against the put_signals the origin counted (sent to
 * the target in a broadcast): 1 when they differ. */
static tc_status_t check_signals(rma_t *r, double *wrong)
{
    uint64_t sent = r->signals, seen = 0;
    tc_status_t st = tc_broadcast(r->comm, &sent, 1, TC_UINT64, ORIGIN, NULL, NULL);
    if (st != TC_OK || r->rank != TARGET)
        return st;
    /* signals follow their data; the flush made the origin's complete */
    st = tc_win_wait_signal(r->win, SLOT, TC_WIN_CMP_GE, sent, -1, &seen);
    if (st == TC_ERR_TIMEOUT || (st == TC_OK && seen != sent)) {
        fprintf(stderr, "tcperf: put_signal: slot %d holds %llu, %llu signals were sent\n", SLOT,
                (unsigned long long)seen, (unsigned long long)sent);
        *wrong += 1;
        return TC_OK;
    }
    return st;
}

static void print_header(const rma_t *r, int nranks)
{
    const tcperf_rma_opts_t *o = r->o;
    printf("# tcperf %s: %d ranks (rank 0 -> rank 1), minBytes %llu maxBytes %llu step: "
           "%llu(%s) warmup iters: %d iters: %d burst: %d window: %s validation: %d "
           "blocking: %d\n",
           names[o->op], nranks, (unsigned long long)o->min_bytes, (unsigned long long)o->max_bytes,
           (unsigned long long)(o->factor ? (uint64_t)o->factor : o->step_bytes),
           o->factor ? "factor" : "bytes", o->warmup, o->iters, o->burst,
           o->create ? "create" : "allocate", o->check, !o->async);
    printf("#\n# %10s  %12s  %8s  %6s  %6s  %34s  %34s\n", "", "", "", "", "",
           "latency (op + flush)", "bandwidth (burst + flush)");
    printf("# %10s  %12s  %8s  %6s  %6s  %8s  %6s  %6s  %6s  %8s  %6s  %6s  %6s\n", "size", "count",
           "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
           "#wrong");
    printf("# %10s  %12s  %8s  %6s  %6s  %8s  %6s  %6s  %6s  %8s  %6s  %6s  %6s\n", "(B)",
           "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us/op)", "(GB/s)", "(GB/s)",
           "");
    fflush(stdout);
}

/* One size: latency and bandwidth (us per operation), wrong elements. */
static tc_status_t measure(rma_t *r, uint64_t bytes, double us[2], double wrong[2])
{
    const tcperf_rma_opts_t *o = r->o;
    tc_status_t st;
    r->seq++;
    prepare(r, bytes);
    if ((st = tc_barrier(r->comm, NULL, NULL)) != TC_OK)
        return st;
    for (int half = 0; half < 2; half++) {
        double t = 0;
        if (r->rank == ORIGIN) {
            for (int i = 0; i < o->warmup; i++)
                if ((st = half ? bw_once(r, bytes) : lat_once(r, bytes)) != TC_OK)
                    return st;
            double t0 = tc_time_s();
            for (int i = 0; i < o->iters; i++)
                if ((st = half ? bw_once(r, bytes) : lat_once(r, bytes)) != TC_OK)
                    return st;
            t = (tc_time_s() - t0) * 1e6 / o->iters / (half ? o->burst : 1);
        }
        if ((st = max_over_ranks(r, &t)) != TC_OK)
            return st;
        us[half] = t;
    }
    /* the origin flushed: every put is in the target's window */
    if ((st = tc_barrier(r->comm, NULL, NULL)) != TC_OK)
        return st;
    double w = o->check ? (double)check(r, bytes) : 0;
    if (o->check && o->op == TCPERF_PUT_SIGNAL && (st = check_signals(r, &w)) != TC_OK)
        return st;
    if ((st = tc_all_reduce(r->comm, &w, &w, 1, TC_FLOAT64, TC_SUM, NULL, NULL)) != TC_OK)
        return st;
    wrong[0] = wrong[1] = w; /* one check covers both loops */
    return TC_OK;
}

int tcperf_rma(tc_comm_t *comm, const tcperf_rma_opts_t *o, double *wrong_total_p)
{
    rma_t r = {comm, 0, o, NULL, NULL, NULL, NULL, 0, 0};
    int nranks = 0, rc = 0;
    tc_comm_rank(comm, &r.rank);
    tc_comm_size(comm, &nranks);
    if (nranks < 2) {
        fprintf(stderr, "tcperf: --coll %s needs 2 ranks or more (rank 0 -> rank 1)\n",
                names[o->op]);
        return 2;
    }
    const size_t wbytes = r.rank <= TARGET ? (size_t)o->max_bytes : 0;
    tc_status_t st;
    void *own = NULL;
    if (o->create) {
        own = wbytes ? calloc(1, wbytes) : NULL;
        if (wbytes && !own) {
            fprintf(stderr, "tcperf: cannot allocate a window of %zu bytes\n", wbytes);
            return 2; /* the other ranks time out in the create: its timeout bounds them */
        }
        st = tc_win_create(comm, own, wbytes, NULL, &r.win);
        r.wbuf = own;
    } else {
        void *base = NULL;
        st = tc_win_allocate(comm, wbytes, NULL, &base, &r.win);
        r.wbuf = base;
    }
    if (st != TC_OK) {
        free(own);
        return fail(o->create ? "tc_win_create" : "tc_win_allocate", st);
    }
    if (r.rank == ORIGIN) {
        r.lbuf = malloc(o->max_bytes ? o->max_bytes : 1);
        r.works = calloc((size_t)o->burst, sizeof(*r.works));
        if (!r.lbuf || !r.works) {
            fprintf(stderr, "tcperf: cannot allocate %llu bytes\n",
                    (unsigned long long)o->max_bytes);
            rc = 2;
            tc_comm_abort(comm); /* the target is in a barrier: end it */
            goto out;
        }
    }
    if (r.rank == 0)
        print_header(&r, nranks);
    for (uint64_t bytes = o->min_bytes; bytes <= o->max_bytes;) {
        double us[2], wrong[2];
        if ((st = measure(&r, bytes, us, wrong)) != TC_OK) {
            rc = fail(names[o->op], st);
            break;
        }
        *wrong_total_p += wrong[0];
        if (r.rank == 0) {
            printf("  %10llu  %12llu  %8s  %6s  %6d", (unsigned long long)bytes,
                   (unsigned long long)bytes, "uint8", "none", TARGET);
            for (int h = 0; h < 2; h++) {
                double bw = us[h] > 0 ? (double)bytes / us[h] / 1e3 : 0;
                printf("  %8.3f  %6.2f  %6.2f", us[h], bw, bw);
                if (o->check)
                    printf("  %6.0f", wrong[h]);
                else
                    printf("  %6s", "N/A");
            }
            printf("\n");
            fflush(stdout);
        }
        uint64_t next = o->factor ? bytes * (uint64_t)o->factor : bytes + o->step_bytes;
        if (next <= bytes)
            break;
        bytes = next;
    }
out:
    st = tc_win_destroy(r.win);
    if (st != TC_OK && rc == 0)
        rc = fail("tc_win_destroy", st);
    free(own);
    free(r.lbuf);
    free(r.works);
    return rc;
}
