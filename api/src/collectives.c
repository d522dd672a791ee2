/* Public collectives: argument checks, then the runtime. Each checker names
 * the function and the argument at fault. */
#include <stdint.h>

#include "api_impl.h"
#include "tcomms/base/config.h"

#define MAX_ELEMS (UINT64_C(1) << 48)

static tc_status_t check_dtype(const char *fn, tc_dtype_t dtype)
{
    if ((unsigned)dtype >= TC_DTYPE_COUNT)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: dtype %d is not a tc_dtype_t", fn, (int)dtype);
    return TC_OK;
}

static tc_status_t check_op(const char *fn, tc_dtype_t dtype, tc_redop_t op)
{
    if ((unsigned)op >= TC_REDOP_COUNT)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: op %d is not a tc_redop_t", fn, (int)op);
    if (!tc_redop_valid_for(op, dtype))
        return tc_error_set(TC_ERR_UNSUPPORTED, "%s: op %s does not apply to dtype %s", fn,
                            tc_redop_name(op), tc_dtype_name(dtype));
    return TC_OK;
}

/* @p count elements times @p mult (ranks) fit in memory and in the schedule's range. */
static tc_status_t check_count(const char *fn, const char *what, size_t count, size_t mult,
                               tc_dtype_t dtype)
{
    size_t esize = tc_dtype_size(dtype);
    if (count > MAX_ELEMS / mult || count * mult > SIZE_MAX / esize)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: %s %zu of %s is too large%s", fn, what, count,
                            tc_dtype_name(dtype), mult > 1 ? " for this many ranks" : "");
    return TC_OK;
}

static tc_status_t check_buf(const char *fn, const char *name, const void *buf, size_t elems)
{
    if (elems && !buf)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: %s is NULL with %zu elements to %s", fn, name,
                            elems, name[0] == 's' ? "send" : "receive");
    return TC_OK;
}

/* Two buffers of the call that must be distinct unless @p same_ok. */
static tc_status_t check_overlap_named(const char *fn, const char *aname, const void *a,
                                       size_t abytes, const char *bname, const void *b,
                                       size_t bbytes, const char *how)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    if (!a || !b || !abytes || !bbytes)
        return TC_OK;
    if (x < y + bbytes && y < x + abytes)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: %s %p (%zu bytes) and %s %p (%zu bytes) "
                            "overlap; %s",
                            fn, aname, a, abytes, bname, b, bbytes, how);
    return TC_OK;
}

/* sendbuf @p a and recvbuf @p b. */
static tc_status_t check_overlap(const char *fn, const void *a, size_t abytes, const void *b,
                                 size_t bbytes, const char *how)
{
    return check_overlap_named(fn, "sendbuf", a, abytes, "recvbuf", b, bbytes, how);
}

typedef struct {
    const char *fn;
    tc_api_comm_t *comm;
    int rank, size;
} api_call_t;

static tc_status_t begin(api_call_t *c, const char *fn, tc_comm_t *comm)
{
    c->fn = fn;
    tc_status_t st = tc_api_comm_get_not_batching(comm, fn, &c->comm);
    if (st == TC_OK) {
        c->rank = tc_rt_comm_rank(c->comm->rt);
        c->size = tc_rt_comm_size(c->comm->rt);
    }
    return st;
}

static tc_status_t check_root(const api_call_t *c, int root)
{
    if (root < 0 || root >= c->size)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "%s: root %d is not a rank of the communicator "
                            "(size %d)",
                            c->fn, root, c->size);
    return TC_OK;
}

/* Options, work handle and the runtime call; @p extra_flags adds
 * TC_RT_PERSISTENT for prepared operations. */
static tc_status_t issue(const api_call_t *c, tc_rt_coll_t *call, const tc_op_opts_t *opts,
                         tc_work_t **work_p, int extra_flags)
{
    /* hints are parsed only when given: the common call allocates nothing */
    tc_hints_t hints;
    int have_hints = tc_api_opts_have_hints(opts);
    if (have_hints)
        tc_hints_init(&hints);
    int flags;
    tc_api_work_t *work = NULL;
    tc_status_t st = tc_api_op_opts(opts, c->fn, have_hints ? &hints : NULL, "algo",
                                    &call->timeout_ms, &flags, work_p);
    if (st == TC_OK && work_p)
        st = tc_api_work_new(c->fn, &work);
    if (st == TC_OK) {
        call->hints = have_hints ? &hints : NULL;
        tc_rt_work_t *rt = NULL;
        st = tc_rt_coll_issue(c->comm->rt, call, flags | extra_flags, work_p ? &rt : NULL);
        if (rt) {
            work->rt = rt;
            *work_p = work->handle;
            work = NULL;
        }
    }
    if (work)
        tc_api_work_drop(work);
    if (have_hints) {
        tc_hints_free(&hints);
        call->hints = NULL; /* pointed at this frame's hints */
    }
    if (st == TC_OK)
        tc_error_clear(); /* no stale detail from alternatives tried on the way */
    return st;
}

tc_status_t tc_all_reduce(tc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                          tc_dtype_t dtype, tc_redop_t op, const tc_op_opts_t *opts,
                          tc_work_t **work_p)
{
    api_call_t c;
    size_t es = tc_dtype_size(dtype);
    tc_status_t st;
    if ((st = begin(&c, "tc_all_reduce", comm)) != TC_OK ||
        (st = check_dtype(c.fn, dtype)) != TC_OK || (st = check_op(c.fn, dtype, op)) != TC_OK ||
        (st = check_count(c.fn, "count", count, 1, dtype)) != TC_OK ||
        (st = check_buf(c.fn, "sendbuf", sendbuf, count)) != TC_OK ||
        (st = check_buf(c.fn, "recvbuf", recvbuf, count)) != TC_OK)
        return st;
    if (sendbuf != recvbuf && (st = check_overlap(c.fn, sendbuf, count * es, recvbuf, count * es,
                                                  "in place needs sendbuf == recvbuf")) != TC_OK)
        return st;
    tc_rt_coll_t call = {.coll = TC_COLL_ALL_REDUCE,
                         .sendbuf = sendbuf,
                         .recvbuf = recvbuf,
                         .count = count,
                         .dtype = dtype,
                         .op = op,
                         .root = -1};
    return issue(&c, &call, opts, work_p, 0);
}

tc_status_t tc_reduce(tc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                      tc_dtype_t dtype, tc_redop_t op, int root, const tc_op_opts_t *opts,
                      tc_work_t **work_p)
{
    api_call_t c;
    size_t es = tc_dtype_size(dtype);
    tc_status_t st;
    if ((st = begin(&c, "tc_reduce", comm)) != TC_OK || (st = check_root(&c, root)) != TC_OK ||
        (st = check_dtype(c.fn, dtype)) != TC_OK || (st = check_op(c.fn, dtype, op)) != TC_OK ||
        (st = check_count(c.fn, "count", count, 1, dtype)) != TC_OK ||
        (st = check_buf(c.fn, "sendbuf", sendbuf, count)) != TC_OK)
        return st;
    if (c.rank == root) {
        if ((st = check_buf(c.fn, "recvbuf", recvbuf, count)) != TC_OK)
            return st;
        if (sendbuf != recvbuf &&
            (st = check_overlap(c.fn, sendbuf, count * es, recvbuf, count * es,
                                "in place needs sendbuf == recvbuf")) != TC_OK)
            return st;
    } else {
        recvbuf = NULL; /* never written off the root: the runtime stands in */
    }
    tc_rt_coll_t call = {.coll = TC_COLL_REDUCE,
                         .sendbuf = sendbuf,
                         .recvbuf = recvbuf,
                         .count = count,
                         .dtype = dtype,
                         .op = op,
                         .root = root};
    return issue(&c, &call, opts, work_p, 0);
}

tc_status_t tc_broadcast(tc_comm_t *comm, void *buf, size_t count, tc_dtype_t dtype, int root,
                         const tc_op_opts_t *opts, tc_work_t **work_p)
{
    api_call_t c;
    tc_status_t st;
    if ((st = begin(&c, "tc_broadcast", comm)) != TC_OK || (st = check_root(&c, root)) != TC_OK ||
        (st = check_dtype(c.fn, dtype)) != TC_OK ||
        (st = check_count(c.fn, "count", count, 1, dtype)) != TC_OK ||
        (st = check_buf(c.fn, "buf", buf, count)) != TC_OK)
        return st;
    tc_rt_coll_t call = {.coll = TC_COLL_BROADCAST,
                         .sendbuf = buf,
                         .recvbuf = buf,
                         .count = count,
                         .dtype = dtype,
                         .op = TC_SUM,
                         .root = root};
    return issue(&c, &call, opts, work_p, 0);
}

/* A gathered buffer of @p size blocks where block @p at may hold the input:
 * returns the runtime's send buffer (== recvbuf for in place). @p scatter:
 * the small buffer is recvbuf and the big one sendbuf. */
static tc_status_t gathered(const api_call_t *c, const void *small, size_t small_count,
                            const void *big, size_t big_count, size_t in_place_off,
                            tc_dtype_t dtype, const void **small_p, int scatter)
{
    size_t es = tc_dtype_size(dtype);
    if (small && small == (const char *)big + in_place_off * es) {
        *small_p = big; /* in place */
        return TC_OK;
    }
    *small_p = small;
    return check_overlap_named(
        c->fn, scatter ? "recvbuf" : "sendbuf", small, small_count * es,
        scatter ? "sendbuf" : "recvbuf", big, big_count * es,
        "in place puts this rank's block at its place in the gathered buffer");
}

/* all_gather, issued now or prepared (@p extra_flags TC_RT_PERSISTENT). */
static tc_status_t all_gather(const char *fn, tc_comm_t *comm, const void *sendbuf, void *recvbuf,
                              size_t count, tc_dtype_t dtype, const tc_op_opts_t *opts,
                              tc_work_t **work_p, int extra_flags)
{
    api_call_t c;
    tc_status_t st;
    if ((st = begin(&c, fn, comm)) != TC_OK)
        return st;
    if (extra_flags && !work_p)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: work_p is NULL", fn);
    if ((st = check_dtype(c.fn, dtype)) != TC_OK ||
        (st = check_count(c.fn, "count", count, (size_t)c.size, dtype)) != TC_OK ||
        (st = check_buf(c.fn, "sendbuf", sendbuf, count)) != TC_OK ||
        (st = check_buf(c.fn, "recvbuf", recvbuf, count * (size_t)c.size)) != TC_OK ||
        (st = gathered(&c, sendbuf, count, recvbuf, count * (size_t)c.size, (size_t)c.rank * count,
                       dtype, &sendbuf, 0)) != TC_OK)
        return st;
    tc_rt_coll_t call = {.coll = TC_COLL_ALL_GATHER,
                         .sendbuf = sendbuf,
                         .recvbuf = recvbuf,
                         .count = count,
                         .dtype = dtype,
                         .op = TC_SUM,
                         .root = -1};
    return issue(&c, &call, opts, work_p, extra_flags);
}

tc_status_t tc_all_gather(tc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                          tc_dtype_t dtype, const tc_op_opts_t *opts, tc_work_t **work_p)
{
    return all_gather("tc_all_gather", comm, sendbuf, recvbuf, count, dtype, opts, work_p, 0);
}

/* Per-rank counts and optional displacements; returns the extent in elements.
 * With @p bufname (a receive buffer), blocks must not overlap. */
static tc_status_t check_v(const api_call_t *c, const char *cname, const size_t *counts,
                           const char *dname, const size_t *displs, tc_dtype_t dtype,
                           size_t *extent_p, size_t *my_off_p, const char *bufname)
{
    if (!counts)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: %s is NULL", c->fn, cname);
    size_t extent = 0, packed = 0;
    for (int q = 0; q < c->size; q++) {
        size_t off = displs ? displs[q] : packed;
        if (counts[q] > MAX_ELEMS)
            return tc_error_set(TC_ERR_INVALID_ARG,
                                "%s: %s[%d] = %zu is too large (at most %llu elements)", c->fn,
                                cname, q, counts[q], (unsigned long long)MAX_ELEMS);
        if (off > MAX_ELEMS - counts[q])
            return tc_error_set(TC_ERR_INVALID_ARG,
                                "%s: %s[%d] = %zu%s is too large (block %d ends past %llu "
                                "elements)",
                                c->fn, displs ? dname : "the offset of block", q, off,
                                displs ? "" : " (packed)", q, (unsigned long long)MAX_ELEMS);
        packed += counts[q];
        if (packed > MAX_ELEMS)
            return tc_error_set(TC_ERR_INVALID_ARG, "%s: the %s add up past %llu elements", c->fn,
                                cname, (unsigned long long)MAX_ELEMS);
        if (off + counts[q] > extent)
            extent = off + counts[q];
        if (q == c->rank)
            *my_off_p = off;
    }
    tc_status_t st = check_count(c->fn, cname, extent, 1, dtype);
    if (st == TC_OK && displs && bufname)
        st = tc_api_v_disjoint(c->fn, c->size, counts, dname, displs, bufname);
    if (st == TC_OK)
        *extent_p = extent;
    return st;
}

tc_status_t tc_all_gather_v(tc_comm_t *comm, const void *sendbuf, size_t sendcount, void *recvbuf,
                            const size_t *recvcounts, const size_t *displs, tc_dtype_t dtype,
                            const tc_op_opts_t *opts, tc_work_t **work_p)
{
    api_call_t c;
    size_t extent = 0, my_off = 0;
    tc_status_t st;
    if ((st = begin(&c, "tc_all_gather_v", comm)) != TC_OK ||
        (st = check_dtype(c.fn, dtype)) != TC_OK ||
        (st = check_v(&c, "recvcounts", recvcounts, "displs", displs, dtype, &extent, &my_off,
                      "recvbuf")) != TC_OK)
        return st;
    if (sendcount != recvcounts[c.rank])
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "%s: sendcount %zu differs from recvcounts[%d] "
                            "= %zu",
                            c.fn, sendcount, c.rank, recvcounts[c.rank]);
    if ((st = check_buf(c.fn, "sendbuf", sendbuf, sendcount)) != TC_OK ||
        (st = check_buf(c.fn, "recvbuf", recvbuf, extent)) != TC_OK ||
        (st = gathered(&c, sendbuf, sendcount, recvbuf, extent, my_off, dtype, &sendbuf, 0)) != TC_OK)
        return st;
    tc_rt_coll_t call = {.coll = TC_COLL_ALL_GATHER,
                         .sendbuf = sendbuf,
                         .recvbuf = recvbuf,
                         .count = sendcount,
                         .dtype = dtype,
                         .op = TC_SUM,
                         .root = -1,
                         .counts = recvcounts,
                         .displs = displs};
    return issue(&c, &call, opts, work_p, 0);
}

tc_status_t tc_reduce_scatter(tc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t recvcount,
                              tc_dtype_t dtype, tc_redop_t op, const tc_op_opts_t *opts,
                              tc_work_t **work_p)
{
    api_call_t c;
    tc_status_t st;
    size_t es = tc_dtype_size(dtype);
    if ((st = begin(&c, "tc_reduce_scatter", comm)) != TC_OK ||
        (st = check_dtype(c.fn, dtype)) != TC_OK || (st = check_op(c.fn, dtype, op)) != TC_OK ||
        (st = check_count(c.fn, "recvcount", recvcount, (size_t)c.size, dtype)) != TC_OK ||
        (st = check_buf(c.fn, "sendbuf", sendbuf, recvcount * (size_t)c.size)) != TC_OK ||
        (st = check_buf(c.fn, "recvbuf", recvbuf, recvcount)) != TC_OK)
        return st;
    /* NCCL's in-place form, recvbuf at this rank's block of sendbuf, is tcomms' own */
    if (recvcount &&
        (const char *)recvbuf == (const char *)sendbuf + (size_t)c.rank * recvcount * es)
        recvbuf = (void *)(uintptr_t)sendbuf;
    if (sendbuf != recvbuf &&
        (st = check_overlap(c.fn, sendbuf, recvcount * (size_t)c.size * es, recvbuf, recvcount * es,
                            "in place needs sendbuf == recvbuf, or recvbuf at block rank of "
                            "sendbuf")) != TC_OK)
        return st;
    tc_rt_coll_t call = {.coll = TC_COLL_REDUCE_SCATTER,
                         .sendbuf = sendbuf,
                         .recvbuf = recvbuf,
                         .count = recvcount,
                         .dtype = dtype,
                         .op = op,
                         .root = -1};
    return issue(&c, &call, opts, work_p, 0);
}

tc_status_t tc_reduce_scatter_v(tc_comm_t *comm, const void *sendbuf, void *recvbuf,
                                const size_t *recvcounts, const size_t *displs, tc_dtype_t dtype,
                                tc_redop_t op, const tc_op_opts_t *opts, tc_work_t **work_p)
{
    api_call_t c;
    size_t extent = 0, my_off = 0, es = tc_dtype_size(dtype);
    tc_status_t st;
    if ((st = begin(&c, "tc_reduce_scatter_v", comm)) != TC_OK ||
        (st = check_dtype(c.fn, dtype)) != TC_OK || (st = check_op(c.fn, dtype, op)) != TC_OK ||
        (st = check_v(&c, "recvcounts", recvcounts, "displs", displs, dtype, &extent, &my_off,
                      NULL)) != TC_OK ||
        (st = check_buf(c.fn, "sendbuf", sendbuf, extent)) != TC_OK ||
        (st = check_buf(c.fn, "recvbuf", recvbuf, recvcounts[c.rank])) != TC_OK)
        return st;
    if (recvcounts[c.rank] && (const char *)recvbuf == (const char *)sendbuf + my_off * es)
        recvbuf = (void *)(uintptr_t)sendbuf; /* NCCL's in-place form, as tc_reduce_scatter */
    if (sendbuf != recvbuf &&
        (st = check_overlap(c.fn, sendbuf, extent * es, recvbuf, recvcounts[c.rank] * es,
                            "in place needs sendbuf == recvbuf, or recvbuf at block rank of "
                            "sendbuf")) != TC_OK)
        return st;
    tc_rt_coll_t call = {.coll = TC_COLL_REDUCE_SCATTER,
                         .sendbuf = sendbuf,
                         .recvbuf = recvbuf,
                         .count = recvcounts[c.rank],
                         .dtype = dtype,
                         .op = op,
                         .root = -1,
                         .counts = recvcounts,
                         .displs = displs};
    return issue(&c, &call, opts, work_p, 0);
}

tc_status_t tc_all_to_all(tc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                          tc_dtype_t dtype, const tc_op_opts_t *opts, tc_work_t **work_p)
{
    api_call_t c;
    tc_status_t st;
    size_t es = tc_dtype_size(dtype);
    if ((st = begin(&c, "tc_all_to_all", comm)) != TC_OK ||
        (st = check_dtype(c.fn, dtype)) != TC_OK ||
        (st = check_count(c.fn, "count", count, (size_t)c.size, dtype)) != TC_OK ||
        (st = check_buf(c.fn, "sendbuf", sendbuf, count * (size_t)c.size)) != TC_OK ||
        (st = check_buf(c.fn, "recvbuf", recvbuf, count * (size_t)c.size)) != TC_OK)
        return st;
    size_t bytes = count * (size_t)c.size * es;
    if (sendbuf != recvbuf && (st = check_overlap(c.fn, sendbuf, bytes, recvbuf, bytes,
                                                  "in place needs sendbuf == recvbuf")) != TC_OK)
        return st;
    tc_rt_coll_t call = {.coll = TC_COLL_ALL_TO_ALL,
                         .sendbuf = sendbuf,
                         .recvbuf = recvbuf,
                         .count = count,
                         .dtype = dtype,
                         .op = TC_SUM,
                         .root = -1};
    return issue(&c, &call, opts, work_p, 0);
}

tc_status_t tc_all_to_all_v(tc_comm_t *comm, const void *sendbuf, const size_t *sendcounts,
                            const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
                            const size_t *rdispls, tc_dtype_t dtype, const tc_op_opts_t *opts,
                            tc_work_t **work_p)
{
    api_call_t c;
    size_t sext = 0, rext = 0, soff, roff, es = tc_dtype_size(dtype);
    tc_status_t st;
    if ((st = begin(&c, "tc_all_to_all_v", comm)) != TC_OK ||
        (st = check_dtype(c.fn, dtype)) != TC_OK ||
        (st = check_v(&c, "sendcounts", sendcounts, "sdispls", sdispls, dtype, &sext, &soff,
                      NULL)) != TC_OK ||
        (st = check_v(&c, "recvcounts", recvcounts, "rdispls", rdispls, dtype, &rext, &roff,
                      "recvbuf")) != TC_OK ||
        (st = check_buf(c.fn, "sendbuf", sendbuf, sext)) != TC_OK ||
        (st = check_buf(c.fn, "recvbuf", recvbuf, rext)) != TC_OK)
        return st;
    if (sendcounts[c.rank] != recvcounts[c.rank])
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "%s: sendcounts[%d] = %zu but recvcounts[%d] = "
                            "%zu (this rank's block to itself)",
                            c.fn, c.rank, sendcounts[c.rank], c.rank, recvcounts[c.rank]);
    if ((sext && sendbuf == recvbuf) ||
        (st = check_overlap(c.fn, sendbuf, sext * es, recvbuf, rext * es,
                            "all_to_all_v is never in place")) != TC_OK)
        return st != TC_OK ? st
                           : tc_error_set(TC_ERR_INVALID_ARG,
                                          "%s: sendbuf == recvbuf: "
                                          "all_to_all_v is never in place",
                                          c.fn);
    tc_rt_coll_t call = {.coll = TC_COLL_ALL_TO_ALL,
                         .sendbuf = sendbuf,
                         .recvbuf = recvbuf,
                         .count = 0,
                         .dtype = dtype,
                         .op = TC_SUM,
                         .root = -1,
                         .sendcounts = sendcounts,
                         .sdispls = sdispls,
                         .recvcounts = recvcounts,
                         .rdispls = rdispls};
    return issue(&c, &call, opts, work_p, 0);
}

tc_status_t tc_gather(tc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                      tc_dtype_t dtype, int root, const tc_op_opts_t *opts, tc_work_t **work_p)
{
    api_call_t c;
    tc_status_t st;
    if ((st = begin(&c, "tc_gather", comm)) != TC_OK || (st = check_root(&c, root)) != TC_OK ||
        (st = check_dtype(c.fn, dtype)) != TC_OK ||
        (st = check_count(c.fn, "count", count, (size_t)c.size, dtype)) != TC_OK ||
        (st = check_buf(c.fn, "sendbuf", sendbuf, count)) != TC_OK)
        return st;
    if (c.rank == root) {
        if ((st = check_buf(c.fn, "recvbuf", recvbuf, count * (size_t)c.size)) != TC_OK ||
            (st = gathered(&c, sendbuf, count, recvbuf, count * (size_t)c.size,
                           (size_t)root * count, dtype, &sendbuf, 0)) != TC_OK)
            return st;
    } else {
        recvbuf = NULL;
    }
    tc_rt_coll_t call = {.coll = TC_COLL_GATHER,
                         .sendbuf = sendbuf,
                         .recvbuf = recvbuf,
                         .count = count,
                         .dtype = dtype,
                         .op = TC_SUM,
                         .root = root};
    return issue(&c, &call, opts, work_p, 0);
}

tc_status_t tc_scatter(tc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                       tc_dtype_t dtype, int root, const tc_op_opts_t *opts, tc_work_t **work_p)
{
    api_call_t c;
    tc_status_t st;
    if ((st = begin(&c, "tc_scatter", comm)) != TC_OK || (st = check_root(&c, root)) != TC_OK ||
        (st = check_dtype(c.fn, dtype)) != TC_OK ||
        (st = check_count(c.fn, "count", count, (size_t)c.size, dtype)) != TC_OK ||
        (st = check_buf(c.fn, "recvbuf", recvbuf, count)) != TC_OK)
        return st;
    if (c.rank == root) {
        const void *r = recvbuf;
        if ((st = check_buf(c.fn, "sendbuf", sendbuf, count * (size_t)c.size)) != TC_OK ||
            (st = gathered(&c, recvbuf, count, sendbuf, count * (size_t)c.size,
                           (size_t)root * count, dtype, &r, 1)) != TC_OK)
            return st;
        recvbuf = (void *)r; /* == sendbuf when in place */
    } else {
        sendbuf = NULL;
    }
    tc_rt_coll_t call = {.coll = TC_COLL_SCATTER,
                         .sendbuf = sendbuf,
                         .recvbuf = recvbuf,
                         .count = count,
                         .dtype = dtype,
                         .op = TC_SUM,
                         .root = root};
    return issue(&c, &call, opts, work_p, 0);
}

tc_status_t tc_barrier(tc_comm_t *comm, const tc_op_opts_t *opts, tc_work_t **work_p)
{
    api_call_t c;
    tc_status_t st = begin(&c, "tc_barrier", comm);
    if (st != TC_OK)
        return st;
    tc_rt_coll_t call = {.coll = TC_COLL_BARRIER, .dtype = TC_UINT8, .op = TC_SUM, .root = -1};
    return issue(&c, &call, opts, work_p, 0);
}

tc_status_t tc_all_gather_init(tc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                               tc_dtype_t dtype, const tc_op_opts_t *opts, tc_work_t **work_p)
{
    return all_gather("tc_all_gather_init", comm, sendbuf, recvbuf, count, dtype, opts, work_p,
                      TC_RT_PERSISTENT);
}
