/*
 * Pipelined binary trees: the topology, the chunking and the step engine
 * shared by binary_tree.c and double_binary_tree.c.
 *
 * Topology (labels 1..m, an in-order tree): label x with lowest set bit b
 * has children x - b/2 and x + b/2 (the right one moved to x + b/4, x + b/8
 * ... while it is past m); the root is the largest power of two <= m; depth
 * floor(lg m). Odd labels are exactly the leaves, even labels are interior,
 * which is what the double binary tree uses: its second tree numbers the
 * ranks so that odd and even swap (mirror x -> m + 1 - x for even m, shift
 * by one for odd m, where one rank is then a leaf in both trees).
 *
 * Engine: a rank takes part in one or two trees; tree h carries the element
 * range [off_h, off_h + len_h) in chunks of `chunk` elements. Steps are
 * emitted in (chunk j, tree h) order on every rank, so between two ranks
 * the k-th message in one direction is the same (j, h) on both sides, even
 * when the two trees connect the same pair.
 */
#include <math.h>
#include <string.h>

#include "algo_internal.h"

/* The tree over labels 1..m: parent label (0 for the root) and children. */
void tc_algo_btree(int x, int m, int *parent, int kids[2], int *nkids)
{
    const int b = x & -x;
    int off;

    *nkids = 0;
    if (b > 1) {
        kids[(*nkids)++] = x - b / 2;
        for (off = b / 2; off >= 1 && x + off > m; off /= 2) {
        }
        if (off >= 1) {
            kids[(*nkids)++] = x + off;
        }
    }
    if (x == tc_algo_pow2_floor(m, NULL)) {
        *parent = 0;
    } else if ((x & (2 * b)) == 0 && x + b <= m) {
        *parent = x + b; /* x is the left child of x + b */
    } else {
        *parent = x - b; /* the right child of x - b (see the header comment) */
    }
}

int tc_algo_btree_depth(int m)
{
    int lg = 0;

    if (m >= 1) {
        tc_algo_pow2_floor(m, &lg);
    }
    return lg;
}

uint64_t tc_algo_tree_chunk(const tc_algo_args_t *args, uint64_t len, int depth)
{
    double c;

    if (args->chunk_count > 0) {
        /* a chunk longer than the part is the whole part (the cost model
         * multiplies by it) */
        return args->chunk_count < len ? args->chunk_count : (len > 0 ? len : 1);
    }
    if (len == 0) {
        return 1;
    }
    /* Chunks minimising (C + depth)(alpha + len/C beta): C = sqrt(len depth /
     * (alpha/beta)), alpha/beta taken as TC_ALGO_PIPE_ALPHA_ELEMS elements. */
    c = ceil(sqrt((double)len * (double)(depth > 1 ? depth : 1) / TC_ALGO_PIPE_ALPHA_ELEMS));
    if (c > TC_ALGO_PIPE_MAX_CHUNKS) {
        c = TC_ALGO_PIPE_MAX_CHUNKS;
    }
    if (c < 1) {
        c = 1;
    }
    return (len + (uint64_t)c - 1) / (uint64_t)c;
}

static uint64_t tc_tree_nchunks(const tc_algo_tree_part_t *pt)
{
    return tc_algo_pieces(pt->len, pt->chunk);
}

tc_status_t tc_algo_tree_steps(tc_sched_t *sched, const tc_algo_args_t *args, int mode,
                               const tc_algo_tree_part_t *parts, int nparts)
{
    const uint64_t n = args->count;
    const int rooted_src = mode == TC_ALGO_TREE_BCAST && !args->in_place;
    uint32_t last, up, got;
    uint64_t j, maxc = 0, o, len;
    int h, k;
    tc_buf_t src;

    if (n == 0) {
        return TC_OK;
    }
    if (mode == TC_ALGO_TREE_BCAST) {
        /* only the rank without a parent (the root) has an input */
        if (rooted_src && parts[0].parent < 0) {
            TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SEND, 0, TC_BUF_RECV, 0, n,
                                     TC_STEP_NO_DEP, TC_STEP_NO_DEP, NULL));
        }
    }
    for (h = 0; h < nparts; h++) {
        uint64_t c = tc_tree_nchunks(&parts[h]);
        maxc = c > maxc ? c : maxc;
    }
    for (j = 0; j < maxc; j++) {
        for (h = 0; h < nparts; h++) {
            const tc_algo_tree_part_t *pt = &parts[h];
            if (j >= tc_tree_nchunks(pt)) {
                continue;
            }
            o = pt->off + j * pt->chunk;
            len = pt->len - j * pt->chunk < pt->chunk ? pt->len - j * pt->chunk : pt->chunk;
            last = TC_STEP_NO_DEP;
            got = TC_STEP_NO_DEP;
            if (mode != TC_ALGO_TREE_BCAST) {
                /* reduce the children's partial sums into recv, then pass it up; out of place
                 * the first child's is reduced with the input (recv = input op message) and a
                 * leaf sends its input as it is, so the input is never copied first */
                const tc_buf_t acc = args->in_place || pt->nkids > 0 ? TC_BUF_RECV : TC_BUF_SEND;
                if (acc == TC_BUF_SEND && pt->parent < 0) {
                    TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_COPY, -1, TC_BUF_SEND, o, TC_BUF_RECV,
                                             o, len, TC_STEP_NO_DEP, TC_STEP_NO_DEP, &last));
                }
                for (k = 0; k < pt->nkids; k++) {
                    const tc_step_kind_t kind =
                        k == 0 && !args->in_place ? TC_STEP_RECV_REDUCE_SRC : TC_STEP_RECV_REDUCE;
                    TC_ALGO_TRY(
                        tc_algo_step(sched, kind, pt->kids[k],
                                     kind == TC_STEP_RECV_REDUCE ? TC_BUF_RECV : TC_BUF_SEND, o,
                                     TC_BUF_RECV, o, len, last, TC_STEP_NO_DEP, &last));
                }
                got = last;
                if (pt->parent >= 0) {
                    TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, pt->parent, acc, o, TC_BUF_RECV,
                                             0, len, last, TC_STEP_NO_DEP, &up));
                    /* the result comes down into recv: after the send up read it there */
                    got = acc == TC_BUF_RECV ? up : TC_STEP_NO_DEP;
                }
                if (mode == TC_ALGO_TREE_REDUCE) {
                    continue;
                }
            }
            /* broadcast down: the result arrives from the parent (after this
             * rank's send up read the same elements) */
            src = TC_BUF_RECV;
            if (pt->parent >= 0) {
                TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_RECV, pt->parent, TC_BUF_RECV, 0,
                                         TC_BUF_RECV, o, len, got, TC_STEP_NO_DEP, &got));
            } else if (rooted_src) {
                src = TC_BUF_SEND; /* the root's children read the input; the copy runs alongside */
            }
            for (k = 0; k < pt->nkids; k++) {
                TC_ALGO_TRY(tc_algo_step(sched, TC_STEP_SEND, pt->kids[k], src, o, TC_BUF_RECV, 0,
                                         len, got, TC_STEP_NO_DEP, NULL));
            }
        }
    }
    return TC_OK;
}

void tc_algo_ptree_cost(const tc_algo_args_t *args, int mode, int ntrees, int depth,
                        tc_algo_tree_role_fn role, tc_algo_cost_t *cost)
{
    tc_algo_tree_part_t parts[2];
    tc_algo_args_t a = *args;
    uint64_t msgs, elems, nch = 0;
    double per, red;
    int r, h;

    memset(cost, 0, sizeof(*cost));
    memset(parts, 0, sizeof(parts)); /* set by role() for every rank; nranks >= 2 here */
    if (args->count == 0 || args->nranks == 1) {
        return;
    }
    /* The busiest rank, exactly: every rank's role (O(p log p)). */
    for (r = 0; r < args->nranks; r++) {
        a.rank = r;
        role(&a, parts);
        msgs = elems = 0;
        for (h = 0; h < ntrees; h++) {
            const uint64_t c = tc_tree_nchunks(&parts[h]);
            const int nk = mode == TC_ALGO_TREE_REDUCE ? 0 : parts[h].nkids;
            const int up = mode != TC_ALGO_TREE_BCAST && parts[h].parent >= 0;
            msgs += (uint64_t)(nk + up) * c;
            elems += (uint64_t)(nk + up) * parts[h].len;
            if (c > nch) {
                nch = c;
            }
        }
        if (msgs > cost->max_send_msgs) {
            cost->max_send_msgs = msgs;
        }
        if (elems > cost->max_send_elems) {
            cost->max_send_elems = elems;
        }
    }
    /* Critical path: a rank forwarding to two children spends two message
     * times per chunk per tree; the first chunk crosses depth levels of two
     * messages (twice for all_reduce: up and down); all_reduce moves three
     * messages per chunk on an interior rank, four with two trees. */
    per = mode == TC_ALGO_TREE_ALL ? (ntrees == 2 ? 4.0 : 3.0) : 2.0;
    red = 2.0;
    cost->rounds = per * (double)(nch - 1) + (mode == TC_ALGO_TREE_ALL ? 4.0 : 2.0) * depth;
    if (cost->rounds < 1) {
        cost->rounds = 1;
    }
    cost->elems = cost->rounds * (double)parts[0].chunk;
    if (mode != TC_ALGO_TREE_BCAST) {
        cost->red_elems = (red * (double)(nch - 1) + 2.0 * depth) * (double)parts[0].chunk;
    }
}
