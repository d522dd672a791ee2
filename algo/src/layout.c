/* The buffer conventions of every collective (see tc_algo_args_t in schedule.h). */
#include <stdlib.h>

#include "algo_internal.h"

uint64_t tc_algo_block_len(const tc_algo_args_t *args, int q)
{
    if (args == NULL || q < 0 || q >= args->nranks) {
        return 0;
    }
    return args->counts != NULL ? args->counts[q] : args->count;
}

uint64_t tc_algo_block_off(const tc_algo_args_t *args, int q)
{
    uint64_t off = 0;
    int i;

    if (args == NULL || q < 0 || q >= args->nranks) {
        return 0;
    }
    if (args->counts == NULL) {
        return (uint64_t)q * args->count;
    }
    if (args->displs != NULL) {
        return args->displs[q];
    }
    /* Packed: a prefix sum. O(q); generators that walk every block keep
     * their own running sum instead. */
    for (i = 0; i < q; i++) {
        off += args->counts[i];
    }
    return off;
}

/* Elements spanned by all blocks: the largest block end. */
static tc_status_t tc_algo_blocks_span(const tc_algo_args_t *args, uint64_t *span_p)
{
    uint64_t span = 0, off = 0, end;
    int q;

    if (args->counts == NULL) {
        if (args->count != 0 && (uint64_t)args->nranks > UINT64_MAX / args->count) {
            return tc_error_set(TC_ERR_INVALID_ARG, "%s: %d blocks of %llu elements overflow",
                                tc_coll_name(args->coll), args->nranks,
                                (unsigned long long)args->count);
        }
        *span_p = (uint64_t)args->nranks * args->count;
        return TC_OK;
    }
    for (q = 0; q < args->nranks; q++) {
        uint64_t o = args->displs != NULL ? args->displs[q] : off;
        if (args->counts[q] > UINT64_MAX - o) {
            return tc_error_set(TC_ERR_INVALID_ARG,
                                "%s: block %d (%llu elements at %llu) overflows",
                                tc_coll_name(args->coll), q, (unsigned long long)args->counts[q],
                                (unsigned long long)o);
        }
        end = o + args->counts[q];
        off = end;
        if (end > span) {
            span = end;
        }
    }
    *span_p = span;
    return TC_OK;
}

typedef struct {
    uint64_t off;
    int q;
} tc_block_at_t;

static int tc_block_at_cmp(const void *x, const void *y)
{
    const tc_block_at_t *a = x, *b = y;

    return a->off < b->off ? -1 : a->off > b->off ? 1 : a->q - b->q;
}

tc_status_t tc_algo_blocks_check(const tc_algo_args_t *args)
{
    tc_block_at_t *at;
    tc_status_t status = TC_OK;
    uint64_t span;
    int q, n = 0, i;

    if (args->counts == NULL || args->displs == NULL ||
        (args->coll != TC_COLL_ALL_GATHER && args->coll != TC_COLL_REDUCE_SCATTER)) {
        return TC_OK; /* packed blocks are disjoint; others have no v-variant */
    }
    TC_ALGO_TRY(tc_algo_blocks_span(args, &span));
    if ((at = malloc((size_t)args->nranks * sizeof(*at))) == NULL) {
        return tc_error_set(TC_ERR_NO_MEMORY, "%s_v: no memory to sort %d blocks",
                            tc_coll_name(args->coll), args->nranks);
    }
    for (q = 0; q < args->nranks; q++) {
        if (args->counts[q] > 0) {
            at[n++] = (tc_block_at_t){args->displs[q], q};
        }
    }
    qsort(at, (size_t)n, sizeof(*at), tc_block_at_cmp);
    for (i = 1; i < n; i++) {
        const uint64_t end = at[i - 1].off + args->counts[at[i - 1].q];
        if (end > at[i].off) {
            status = tc_error_set(TC_ERR_INVALID_ARG,
                                  "%s_v: the blocks of rank %d [%llu, %llu) and of rank %d (at "
                                  "%llu) overlap",
                                  tc_coll_name(args->coll), at[i - 1].q,
                                  (unsigned long long)at[i - 1].off, (unsigned long long)end,
                                  at[i].q, (unsigned long long)at[i].off);
            break;
        }
    }
    free(at);
    return status;
}

/* One side (send: row r, recv: column r) of all_to_all_v for rank r. */
static tc_status_t tc_algo_a2av_side(const tc_algo_args_t *args, int r, int recv, uint64_t *off_a,
                                     uint64_t *span_p)
{
    const int p = args->nranks;
    const uint64_t *displs = recv ? args->a2a_rdispls : args->a2a_sdispls;
    const char *what = recv ? "receive block from" : "send block to";
    uint64_t packed = 0, span = 0, c, o;
    int q;

    for (q = 0; q < p; q++) {
        c = recv ? tc_algo_a2av_count(args, q, r) : tc_algo_a2av_count(args, r, q);
        o = displs != NULL ? displs[(size_t)r * (size_t)p + (size_t)q] : packed;
        if (c > UINT64_MAX - o) {
            return tc_error_set(TC_ERR_INVALID_ARG,
                                "all_to_all_v: rank %d's %s rank %d (%llu elements at %llu) "
                                "overflows",
                                r, what, q, (unsigned long long)c, (unsigned long long)o);
        }
        if (off_a != NULL) {
            off_a[q] = o;
        }
        packed = o + c;
        if (o + c > span) {
            span = o + c;
        }
    }
    if (span_p != NULL) {
        *span_p = span;
    }
    return TC_OK;
}

tc_status_t tc_algo_a2av_offsets(const tc_algo_args_t *args, int r, uint64_t *soff, uint64_t *roff,
                                 uint64_t *sspan, uint64_t *rspan)
{
    tc_status_t status = tc_algo_a2av_side(args, r, 0, soff, sspan);

    return status != TC_OK ? status : tc_algo_a2av_side(args, r, 1, roff, rspan);
}

tc_status_t tc_algo_layout(const tc_algo_args_t *args, tc_algo_layout_t *layout)
{
    tc_algo_layout_t l = {{0, 0}, TC_BUF_SEND, 0, 0, 0, 0};
    uint64_t span = 0;
    tc_status_t status;
    int r, root;

    if (layout == NULL) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_algo_layout: layout is NULL");
    }
    status = tc_algo_args_check(args, "tc_algo_layout");
    if (status != TC_OK) {
        return status;
    }
    r = args->rank;
    root = args->root;
    if (args->counts != NULL && args->coll != TC_COLL_ALL_GATHER &&
        args->coll != TC_COLL_REDUCE_SCATTER) {
        return tc_error_set(TC_ERR_UNSUPPORTED, "%s has no v-variant here (counts is set)",
                            tc_coll_name(args->coll));
    }
    switch (args->coll) {
    case TC_COLL_ALL_REDUCE:
    case TC_COLL_REDUCE:
        l.buf_count[0] = l.buf_count[1] = args->count;
        l.in_count = args->count;
        l.out_count = (args->coll == TC_COLL_ALL_REDUCE || r == root) ? args->count : 0;
        break;
    case TC_COLL_BROADCAST:
        l.buf_count[0] = r == root ? args->count : 0;
        l.buf_count[1] = args->count;
        l.in_count = r == root ? args->count : 0;
        l.out_count = args->count;
        break;
    case TC_COLL_ALL_GATHER:
        if ((status = tc_algo_blocks_span(args, &span)) != TC_OK) {
            return status;
        }
        l.buf_count[0] = l.in_count = tc_algo_block_len(args, r);
        l.buf_count[1] = l.out_count = span;
        if (args->in_place) {
            l.in_off = tc_algo_block_off(args, r);
        }
        break;
    case TC_COLL_REDUCE_SCATTER:
        if ((status = tc_algo_blocks_span(args, &span)) != TC_OK) {
            return status;
        }
        l.buf_count[0] = l.in_count = span;
        l.buf_count[1] = l.out_count = tc_algo_block_len(args, r);
        if (args->in_place) {
            l.buf_count[1] = span;
            l.out_off = tc_algo_block_off(args, r);
        }
        break;
    case TC_COLL_ALL_TO_ALL:
        if (args->a2a_counts != NULL) {
            status = tc_algo_a2av_offsets(args, r, NULL, NULL, &l.buf_count[0], &l.buf_count[1]);
            if (status != TC_OK) {
                return status;
            }
            l.in_count = l.buf_count[0];
            l.out_count = l.buf_count[1];
            break;
        }
        if ((status = tc_algo_blocks_span(args, &span)) != TC_OK) {
            return status;
        }
        l.buf_count[0] = l.buf_count[1] = l.in_count = l.out_count = span;
        break;
    case TC_COLL_GATHER:
        if ((status = tc_algo_blocks_span(args, &span)) != TC_OK) {
            return status;
        }
        l.buf_count[0] = l.in_count = args->count;
        l.buf_count[1] = l.out_count = r == root ? span : 0;
        if (args->in_place && r == root) {
            l.in_off = tc_algo_block_off(args, r);
        }
        break;
    case TC_COLL_SCATTER:
        if ((status = tc_algo_blocks_span(args, &span)) != TC_OK) {
            return status;
        }
        l.buf_count[0] = l.in_count = r == root ? span : 0;
        l.buf_count[1] = l.out_count = args->count;
        if (args->in_place && r == root) {
            l.buf_count[1] = span;
            l.out_off = tc_algo_block_off(args, r);
        }
        break;
    case TC_COLL_BARRIER:
    default:
        break;
    }
    if (args->in_place) {
        /* One buffer: the input already sits in it. */
        if (l.buf_count[0] > l.buf_count[1]) {
            l.buf_count[1] = l.buf_count[0];
        }
        l.buf_count[0] = 0;
        l.in_buf = TC_BUF_RECV;
    }
    *layout = l;
    return TC_OK;
}
