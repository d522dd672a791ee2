/* TC_CHECK=1: before each collective, every rank gathers every other rank's
 * description of the call (collective, type, op, count, root, a hash of the
 * v-counts; all_to_all_v: sums of its counts weighed by pair) and compares. A mismatch becomes
 * TC_ERR_MISMATCH on every rank, naming the ranks that disagree and how, instead of a hang or
 * garbage. The exchange has its own tags and a fixed shape, so it cannot itself mismatch. It runs
 * as the first phase of the operation's work, so an asynchronous call stays asynchronous. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_desc.h"
#include "comms.h"
#include "tcomms/base/log.h"

typedef struct {
    int32_t coll, dtype, op, root;
    uint64_t count;
    uint64_t vhash;
} check_desc_t;
_Static_assert(sizeof(check_desc_t) == TC_RT_CHECK_DESC_LEN, "a description is 32 bytes");

static uint64_t hash_sizes(uint64_t h, const size_t *v, int n)
{
    for (int i = 0; v && i < n; i++) {
        h ^= (uint64_t)v[i];
        h *= 0x100000001b3ull; /* FNV-1a over the values */
    }
    return h;
}

/* The weight of the counts from rank @p i to rank @p j (odd: a difference never vanishes). */
static uint64_t pair_weight(int i, int j)
{
    uint64_t x = ((uint64_t)(uint32_t)i << 32 | (uint32_t)j) + 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return (x ^ (x >> 31)) | 1;
}

/* all_to_all_v: every rank's counts differ, but its sendcounts[q] must be rank q's
 * recvcounts[me]. Each rank weighs what it sends and what it receives by the pair; summed over
 * the ranks, the two agree when every pair does (and a pair that disagrees shows, but for a
 * 2^-64 chance of differences cancelling). */
static void check_a2av(int me, int n, const tc_rt_coll_t *call, check_desc_t *d)
{
    uint64_t sent = 0, received = 0;
    for (int q = 0; q < n; q++) {
        sent += (uint64_t)call->sendcounts[q] * pair_weight(me, q);
        received += (uint64_t)call->recvcounts[q] * pair_weight(q, me);
    }
    d->op = TC_RT_CHECK_OP_PAIRS;
    d->count = sent;
    d->vhash = received;
}

/* Fields that do not apply to a collective are normalised, so that ranks
 * are not told apart by arguments the collective ignores. */
static void check_describe(const tc_rt_comm_t *comm, const tc_rt_coll_t *call, check_desc_t *d)
{
    int reduces = call->coll == TC_COLL_ALL_REDUCE || call->coll == TC_COLL_REDUCE ||
                  call->coll == TC_COLL_REDUCE_SCATTER;
    int rooted = call->coll == TC_COLL_REDUCE || call->coll == TC_COLL_BROADCAST ||
                 call->coll == TC_COLL_GATHER || call->coll == TC_COLL_SCATTER;
    int barrier = call->coll == TC_COLL_BARRIER;
    memset(d, 0, sizeof(*d));
    d->coll = (int32_t)call->coll;
    d->dtype = barrier ? -1 : (int32_t)call->dtype;
    d->op = reduces ? (int32_t)call->op : -1;
    d->root = rooted ? call->root : -1;
    /* v-variants: each rank's own count differs; the hash of the counts is compared */
    d->count = barrier || call->sendcounts || call->counts ? 0 : call->count;
    /* v-variants: the block lengths are the same on every rank */
    d->vhash = call->counts ? hash_sizes(0xcbf29ce484222325ull, call->counts, comm->size) : 0;
    if (call->coll == TC_COLL_ALL_TO_ALL && call->sendcounts && call->recvcounts)
        check_a2av(comm->rank, comm->size, call, d);
}

static int check_print(const check_desc_t *d, char *buf, size_t cap)
{
    const char *type = d->dtype < 0 ? "-" : tc_dtype_name((tc_dtype_t)d->dtype);
    if (d->op == TC_RT_CHECK_OP_PAIRS) /* its sums say nothing to a reader */
        return snprintf(buf, cap, "%s_v(%s)", tc_coll_name((tc_coll_t)d->coll), type);
    if (d->vhash) /* the v-form, its counts told apart by their hash */
        return snprintf(buf, cap, "%s_v(%s, %s, counts #%08llx, root %d)",
                        tc_coll_name((tc_coll_t)d->coll), type,
                        d->op < 0 ? "-" : tc_redop_name((tc_redop_t)d->op),
                        (unsigned long long)(d->vhash >> 32), d->root);
    return snprintf(buf, cap, "%s(%s, %s, count %llu, root %d)", tc_coll_name((tc_coll_t)d->coll),
                    type, d->op < 0 ? "-" : tc_redop_name((tc_redop_t)d->op),
                    (unsigned long long)d->count, d->root);
}

/* Every rank called all_to_all_v (the rest compared already): its pairs' counts agree when
 * the sums of what the ranks send and receive, weighed by pair, do. */
static tc_status_t check_pairs(const check_desc_t *all, int size, const char *comm_name,
                               uint64_t seq)
{
    uint64_t sent = 0, received = 0;
    for (int q = 0; q < size; q++) {
        sent += all[q].count;
        received += all[q].vhash;
    }
    if (sent == received)
        return TC_OK;
    return tc_error_set(TC_ERR_MISMATCH,
                        "TC_CHECK: collective #%llu on comm '%s': all_to_all_v's counts "
                        "disagree: some rank's sendcounts[q] is not rank q's recvcounts[] entry "
                        "for it (the element counts each pair of ranks exchanges must agree)",
                        (unsigned long long)seq, comm_name);
}

/* Compare against rank 0 and describe up to a few disagreeing ranks. */
tc_status_t tc_rt_check_compare(const void *descs, int size, const char *comm_name, uint64_t seq)
{
    const check_desc_t *all = descs;
    int bad = 0;
    char msg[768], desc[160];
    size_t used = 0;
    int pairs = all[0].op == TC_RT_CHECK_OP_PAIRS;
    for (int q = 1; q < size; q++) {
        check_desc_t d = all[q];
        if (pairs && d.op == TC_RT_CHECK_OP_PAIRS) /* compared summed, below */
            d.count = all[0].count, d.vhash = all[0].vhash;
        if (memcmp(&d, &all[0], sizeof(all[0])) == 0)
            continue;
        if (bad++ < 4) {
            check_print(&all[q], desc, sizeof(desc));
            int n = snprintf(msg + used, sizeof(msg) - used, "; rank %d called %s", q, desc);
            if (n > 0 && (size_t)n < sizeof(msg) - used)
                used += (size_t)n;
        }
    }
    if (!bad)
        return pairs ? check_pairs(all, size, comm_name, seq) : TC_OK;
    check_print(&all[0], desc, sizeof(desc));
    return tc_error_set(TC_ERR_MISMATCH,
                        "TC_CHECK: collective #%llu on comm '%s': %d rank(s) "
                        "disagree with rank 0, which called %s%s%s",
                        (unsigned long long)seq, comm_name, bad, desc, msg, bad > 4 ? "; ..." : "");
}

void tc_rt_check_free(tc_rt_work_t *w)
{
    tc_sched_free(&w->check_sched);
    free(w->check_buf);
    w->check_buf = NULL;
}

tc_status_t tc_rt_check_prepare(tc_rt_work_t *w)
{
    tc_rt_comm_t *comm = w->comm;
    size_t one = sizeof(check_desc_t);
    tc_rt_check_free(w);
    if (!(w->check_buf = malloc(one * (1 + (size_t)comm->size))))
        return tc_error_set(TC_ERR_NO_MEMORY, "TC_CHECK: %d descriptions", comm->size);
    check_desc_t mine;
    check_describe(comm, &w->call, &mine);
    memcpy(w->check_buf, &mine, one);
    tc_algo_args_t args = {.coll = TC_COLL_ALL_GATHER,
                           .nranks = comm->size,
                           .rank = comm->rank,
                           .root = -1,
                           .count = one};
    tc_status_t st = tc_algo_build(&args, "bruck", &w->check_sched);
    if (st != TC_OK)
        return st;
    w->sched = &w->check_sched;
    w->tag = tc_rt_tag(comm->comm_id, TC_RT_TAG_CHECK, w->op.seq);
    return tc_rt_exec_begin_raw(w, w->check_buf, (char *)w->check_buf + one, 1);
}

tc_status_t tc_rt_check_finish(tc_rt_work_t *w)
{
    const check_desc_t *all =
        (const check_desc_t *)(const void *)((char *)w->check_buf + sizeof(check_desc_t));
    return tc_rt_check_compare(all, w->comm->size, w->comm->name, w->op.seq);
}
