/* win_ib_test's data parts: random puts and gets against a model of every window, put_signal
 * ordering, flush, out-of-range arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/tcomms.h"
#include "tcomms/win.h"
#include "win_ib_parts.h"

void wib_fill(void *buf, size_t len, uint64_t seed)
{
    unsigned char *p = buf;
    for (size_t i = 0; i < len; i++)
        p[i] = wib_pat(seed, i);
}

long long wib_diff(const void *got, const void *want, size_t len)
{
    if (memcmp(got, want, len) == 0)
        return -1;
    const unsigned char *g = got, *w = want;
    for (size_t i = 0; i < len; i++)
        if (g[i] != w[i])
            return (long long)i;
    return -1;
}

long long wib_diff_pat(const void *got, size_t len, uint64_t seed)
{
    const unsigned char *g = got;
    for (size_t i = 0; i < len; i++)
        if (g[i] != wib_pat(seed, i))
            return (long long)i;
    return -1;
}

/* One issued operation: blocking, with a work object waited for, or fire-and-forget and a
 * flush of its peer (how = 0, 1, 2). */
static int wib_rma(ibr_rank_t *r, tc_win_t *win, int get, void *buf, size_t len, int peer,
                   uint64_t off, int how)
{
    tc_op_opts_t async = TC_OP_OPTS_INIT;
    async.async = 1;
    tc_work_t *work = NULL;
    const tc_op_opts_t *o = how ? &async : NULL;
    tc_work_t **wp = how == 1 ? &work : NULL;
    if (get)
        IBR_OK(r, tc_win_get(win, buf, len, peer, off, o, wp));
    else
        IBR_OK(r, tc_win_put(win, buf, len, peer, off, o, wp));
    if (how == 1) {
        IBR_OK(r, tc_work_wait(work, WIB_WAIT_MS));
        IBR_OK(r, tc_work_free(work));
    } else if (how == 2) {
        IBR_OK(r, tc_win_flush(win, peer, WIB_WAIT_MS));
    }
    return 0;
}

/* ---- random puts and gets ---- */

#define RND_OPS 10
#define RND_MAX_LEN ((size_t)5 << 20)

/* Rank @p p's window: 6 MiB and a few odd bytes, different on every rank. */
static size_t rnd_win_bytes(int p)
{
    return ((size_t)6 << 20) + (size_t)p * 4097 + 3;
}

/* Lengths from 0 to 5 MiB, small ones more often. */
static size_t rnd_len(uint64_t *rs, size_t cap)
{
    uint64_t x = ibr_rand(rs);
    size_t len;
    switch (x % 8) {
    case 0:
        len = 0;
        break;
    case 1:
        len = 1 + (size_t)(x >> 8) % 64;
        break;
    case 2:
    case 3:
        len = 1 + (size_t)(x >> 8) % 8192;
        break;
    case 4:
    case 5:
        len = 8000 + (size_t)(x >> 8) % 300000;
        break;
    default:
        len = (size_t)(x >> 8) % (RND_MAX_LEN + 1);
        break;
    }
    return len < cap ? len : cap;
}

typedef struct rnd_shared {
    unsigned char *model[IBR_MAX_RANKS]; /* what every window holds; each rank owns its own */
} rnd_shared_t;

static rnd_shared_t rnd_models[IBR_MAX_RANKS + 1]; /* by run size: runs are sequential */

int part_random_rma(ibr_rank_t *r)
{
    rnd_shared_t *sh = &rnd_models[r->size];
    size_t mine = rnd_win_bytes(r->rank);
    uint64_t rs = 0x5eed0000ull + (uint64_t)r->size * 16 + (uint64_t)r->rank;
    ibr_expect_t want = {0};
    unsigned char *buf = malloc(RND_MAX_LEN), *model = calloc(1, mine);
    void *base;
    tc_win_t *win;
    IBR_CHECK(r, buf && model, "out of memory");
    sh->model[r->rank] = model;
    IBR_OK(r, tc_win_allocate(r->comm, mine, NULL, &base, &win));
    for (int round = 0; round < 2 * r->size; round++) {
        if (round % r->size == r->rank) { /* the writer of this round */
            for (int i = 0; i < RND_OPS; i++) {
                int t = (int)(ibr_rand(&rs) % (uint64_t)r->size);
                size_t size = rnd_win_bytes(t), len = rnd_len(&rs, size);
                uint64_t off = ibr_rand(&rs) % (size - len + 1);
                wib_fill(buf, len, ibr_rand(&rs));
                if (wib_rma(r, win, 0, buf, len, t, off, i % 3) != 0)
                    return -1;
                memcpy(sh->model[t] + off, buf, len);
                if (t != r->rank && len > 0)
                    want.writes++, want.write_bytes += (int64_t)len;
            }
        }
        if (ibr_barrier(r) != 0)
            return -1;
        long long d = wib_diff(base, model, mine);
        IBR_CHECK(r, d < 0, "round %d: own window byte %lld is %u, the model says %u", round, d,
                  d < 0 ? 0 : ((unsigned char *)base)[d], d < 0 ? 0 : model[d]);
        for (int i = 0; i < RND_OPS; i++) {
            int t = (int)(ibr_rand(&rs) % (uint64_t)r->size);
            size_t size = rnd_win_bytes(t), len = rnd_len(&rs, size);
            uint64_t off = ibr_rand(&rs) % (size - len + 1);
            memset(buf, 0xa5, len);
            if (wib_rma(r, win, 1, buf, len, t, off, i % 3) != 0)
                return -1;
            d = wib_diff(buf, sh->model[t] + off, len);
            IBR_CHECK(r, d < 0,
                      "round %d: get of %zu bytes at offset %llu of rank %d: byte %lld is %u, "
                      "the model says %u",
                      round, len, (unsigned long long)off, t, d, d < 0 ? 0 : buf[d],
                      d < 0 ? 0 : sh->model[t][off + (size_t)d]);
            if (t != r->rank && len > 0)
                want.reads++, want.read_bytes += (int64_t)len;
        }
        if (ibr_barrier(r) != 0)
            return -1;
    }
    IBR_OK(r, tc_win_destroy(win));
    if (ibr_barrier(r) != 0) /* nobody reads the models any more */
        return -1;
    ibr_expect_add(r, &want);
    sh->model[r->rank] = NULL;
    free(model);
    free(buf);
    return 0;
}

/* ---- put_signal: the target never sees the signal before the data ---- */

#define ORD_STRIPE (((size_t)2 << 20) + 64) /* one origin's part of a window */
#define ORD_ACK 32                          /* slot ORD_ACK + t: acks from rank t */

static const size_t ord_lens[] = {
    1, 7, 4096, 8191, 8193, 65537, ((size_t)1 << 20) + 3, (size_t)2 << 20};
#define ORD_ITERS ((int)(sizeof(ord_lens) / sizeof(ord_lens[0])))

static uint64_t ord_seed(int origin, int target, int k)
{
    return ((uint64_t)origin << 40) ^ ((uint64_t)target << 20) ^ (uint64_t)k ^ 0x0d0eull;
}

/* Iteration @p k: a put_signal into stripe r of every other rank (ADD 1 on even iterations, SET
 * k + 1 on odd ones: slot r then reads k + 1 either way), with a work object on every third;
 * then for every other rank, wait for its signal and compare its stripe at once, ack it, and
 * wait for every ack. */
static int ord_iter(ibr_rank_t *r, tc_win_t *win, unsigned char *base, unsigned char **src, int k,
                    ibr_expect_t *want)
{
    size_t len = ord_lens[k];
    int n = r->size, me = r->rank;
    tc_work_t *works[IBR_MAX_RANKS] = {NULL};
    tc_op_opts_t async = TC_OP_OPTS_INIT;
    async.async = 1;
    for (int t = 0; t < n; t++) {
        if (t == me)
            continue;
        wib_fill(src[t], len, ord_seed(me, t, k));
        int set = k % 2;
        IBR_OK(r, tc_win_put_signal(
                      win, src[t], len, t, (uint64_t)me * ORD_STRIPE, me, set ? (uint64_t)k + 1 : 1,
                      set ? TC_WIN_SIGNAL_SET : TC_WIN_SIGNAL_ADD, (k + t) % 3 == 0 ? &async : NULL,
                      (k + t) % 3 == 0 ? &works[t] : NULL));
        want->writes++, want->write_bytes += (int64_t)len;
        if (set)
            want->cmp_swaps++;
        else
            want->fetch_adds++;
    }
    for (int o = 0; o < n; o++) {
        if (o == me)
            continue;
        uint64_t seen;
        IBR_OK(r, tc_win_wait_signal(win, o, TC_WIN_CMP_GE, (uint64_t)k + 1, WIB_WAIT_MS, &seen));
        IBR_CHECK(r, seen == (uint64_t)k + 1, "iteration %d: slot %d is %llu, not %d", k, o,
                  (unsigned long long)seen, k + 1);
        long long d = wib_diff_pat(base + (size_t)o * ORD_STRIPE, len, ord_seed(o, me, k));
        IBR_CHECK(r, d < 0,
                  "iteration %d: the signal of rank %d came before its data: byte %lld of %zu "
                  "is wrong",
                  k, o, d, len);
        IBR_OK(r, tc_win_signal(win, o, ORD_ACK + me, 1, TC_WIN_SIGNAL_ADD, NULL, NULL));
        want->fetch_adds++;
    }
    for (int t = 0; t < n; t++) {
        if (t == me)
            continue;
        uint64_t seen;
        IBR_OK(r, tc_win_wait_signal(win, ORD_ACK + t, TC_WIN_CMP_GE, (uint64_t)k + 1, WIB_WAIT_MS,
                                     &seen));
        if (works[t]) {
            IBR_OK(r, tc_work_wait(works[t], WIB_WAIT_MS));
            IBR_OK(r, tc_work_free(works[t]));
        }
    }
    return 0;
}

int part_put_signal_order(ibr_rank_t *r)
{
    unsigned char *src[IBR_MAX_RANKS] = {NULL};
    ibr_expect_t want = {0};
    void *base;
    tc_win_t *win;
    IBR_OK(r, tc_win_allocate(r->comm, (size_t)r->size * ORD_STRIPE, NULL, &base, &win));
    for (int t = 0; t < r->size; t++)
        IBR_CHECK(r, (src[t] = malloc(ORD_STRIPE)) != NULL, "out of memory");
    for (int k = 0; k < ORD_ITERS; k++)
        if (ord_iter(r, win, base, src, k, &want) != 0)
            return -1;
    IBR_OK(r, tc_win_destroy(win));
    for (int t = 0; t < r->size; t++)
        free(src[t]);
    ibr_expect_add(r, &want);
    return 0;
}

/* ---- flush ---- */

#define FL_CHUNK ((size_t)16 * 1024 + 5)
#define FL_OPS 24 /* puts to each peer, and as many gets */

/* Window layout: [origin o's puts: FL_OPS chunks] for every o, then FL_OPS chunks of the
 * owner's own data that the others get. */
static uint64_t fl_seed(int origin, int target, int i)
{
    return 0xf1u ^ ((uint64_t)origin << 32) ^ ((uint64_t)target << 16) ^ (uint64_t)i;
}

/* Fire-and-forget puts and gets to every other rank, some with work objects; a flush of one
 * peer completes everything to it (every work object done at once, every get's data there),
 * the flush of all the rest; after a test barrier every target holds every put's data. */
int part_flush(ibr_rank_t *r)
{
    int n = r->size, me = r->rank;
    size_t own = (size_t)n * FL_OPS * FL_CHUNK, bytes = own + FL_OPS * FL_CHUNK;
    size_t per_peer = (size_t)2 * FL_OPS * FL_CHUNK;
    unsigned char *bufs = malloc((size_t)n * per_peer);
    tc_work_t *works[IBR_MAX_RANKS][FL_OPS] = {{NULL}};
    ibr_expect_t want = {0};
    void *vbase;
    tc_win_t *win;
    tc_op_opts_t async = TC_OP_OPTS_INIT;
    async.async = 1;
    IBR_CHECK(r, bufs != NULL, "out of memory");
    IBR_OK(r, tc_win_allocate(r->comm, bytes, NULL, &vbase, &win));
    unsigned char *base = vbase;
    for (int i = 0; i < FL_OPS; i++)
        wib_fill(base + own + (size_t)i * FL_CHUNK, FL_CHUNK, fl_seed(me, me, i));
    if (ibr_barrier(r) != 0) /* every owner's data is in place */
        return -1;
    for (int t = 0; t < n; t++) {
        if (t == me)
            continue;
        unsigned char *put = bufs + (size_t)t * per_peer, *got = put + FL_OPS * FL_CHUNK;
        memset(got, 0x5a, FL_OPS * FL_CHUNK);
        for (int i = 0; i < FL_OPS; i++) {
            unsigned char *p = put + (size_t)i * FL_CHUNK, *g = got + (size_t)i * FL_CHUNK;
            tc_work_t **wp = i % 4 == 0 ? &works[t][i] : NULL;
            wib_fill(p, FL_CHUNK, fl_seed(me, t, i));
            IBR_OK(r, tc_win_put(win, p, FL_CHUNK, t, ((size_t)me * FL_OPS + i) * FL_CHUNK, &async,
                                 wp));
            IBR_OK(r, tc_win_get(win, g, FL_CHUNK, t, own + (size_t)i * FL_CHUNK, &async, NULL));
        }
        want.writes += FL_OPS, want.write_bytes += (int64_t)(FL_OPS * FL_CHUNK);
        want.reads += FL_OPS, want.read_bytes += (int64_t)(FL_OPS * FL_CHUNK);
    }
    int first = (me + 1) % n; /* flushed alone, before the others */
    IBR_OK(r, tc_win_flush(win, first, WIB_WAIT_MS));
    IBR_OK(r, tc_win_flush(win, TC_WIN_ALL_PEERS, WIB_WAIT_MS));
    for (int t = 0; t < n; t++) {
        if (t == me)
            continue;
        const unsigned char *got = bufs + (size_t)t * per_peer + FL_OPS * FL_CHUNK;
        for (int i = 0; i < FL_OPS; i++) {
            long long d = wib_diff_pat(got + (size_t)i * FL_CHUNK, FL_CHUNK, fl_seed(t, t, i));
            IBR_CHECK(r, d < 0, "get %d from rank %d not complete after the flush: byte %lld", i, t,
                      d);
            if (!works[t][i])
                continue;
            int done = 0;
            IBR_OK(r, tc_work_test(works[t][i], &done));
            IBR_CHECK(r, done, "put %d to rank %d: its work is not done after the flush", i, t);
            IBR_OK(r, tc_work_free(works[t][i]));
        }
    }
    if (ibr_barrier(r) != 0) /* every rank flushed: every put is in its target */
        return -1;
    for (int o = 0; o < n; o++)
        for (int i = 0; o != me && i < FL_OPS; i++) {
            long long d = wib_diff_pat(base + ((size_t)o * FL_OPS + i) * FL_CHUNK, FL_CHUNK,
                                       fl_seed(o, me, i));
            IBR_CHECK(r, d < 0, "put %d of rank %d not in the window after its flush: byte %lld", i,
                      o, d);
        }
    IBR_OK(r, tc_win_destroy(win));
    free(bufs);
    ibr_expect_add(r, &want);
    return 0;
}

/* ---- out-of-range arguments: refused at the origin, nothing moves ---- */

static size_t oor_bytes(int p)
{
    return 4096 * (size_t)(p + 1) + (size_t)p;
}

/* Every call must fail with TC_ERR_INVALID_ARG and a message naming @p what. */
#define OOR_REFUSED(r, call, what)                                                                 \
    do {                                                                                           \
        tc_status_t st_ = (call);                                                                  \
        IBR_CHECK(r, st_ == TC_ERR_INVALID_ARG && strstr(tc_last_error(), (what)),                 \
                  "%s returned %s (%s), expected TC_ERR_INVALID_ARG naming '%s'", #call,           \
                  tc_status_string(st_), tc_last_error(), (what));                                 \
    } while (0)

int part_out_of_range(ibr_rank_t *r)
{
    int n = r->size;
    ibr_expect_t want = {0};
    unsigned char *buf = calloc(1, oor_bytes(n) + 2), zero[1] = {0};
    void *base;
    tc_win_t *win;
    IBR_CHECK(r, buf != NULL, "out of memory");
    IBR_OK(r, tc_win_allocate(r->comm, oor_bytes(r->rank), NULL, &base, &win));
    for (int p = 0; p < n; p++) {
        size_t size = oor_bytes(p);
        char what[96];
        snprintf(what, sizeof(what), "beyond rank %d's window of %zu bytes", p, size);
        memset(buf, 0xee, size + 2);
        OOR_REFUSED(r, tc_win_put(win, buf, 1, p, size, NULL, NULL), what);
        OOR_REFUSED(r, tc_win_put(win, buf, size + 1, p, 0, NULL, NULL), what);
        OOR_REFUSED(r, tc_win_put(win, buf, 2, p, size - 1, NULL, NULL), what);
        OOR_REFUSED(r, tc_win_put(win, buf, 1, p, UINT64_MAX, NULL, NULL), what);
        OOR_REFUSED(r, tc_win_put(win, buf, SIZE_MAX, p, 1, NULL, NULL), what);
        OOR_REFUSED(r, tc_win_get(win, buf, 1, p, size, NULL, NULL), what);
        OOR_REFUSED(r, tc_win_get(win, buf, size + 1, p, 0, NULL, NULL), what);
        OOR_REFUSED(r, tc_win_get(win, buf, 8, p, UINT64_MAX - 3, NULL, NULL), what);
        OOR_REFUSED(
            r, tc_win_put_signal(win, buf, 9, p, size - 8, 0, 1, TC_WIN_SIGNAL_ADD, NULL, NULL),
            what);
        OOR_REFUSED(r, tc_win_signal(win, p, TC_WIN_SIGNAL_SLOTS, 1, TC_WIN_SIGNAL_ADD, NULL, NULL),
                    "signal slot 64");
        OOR_REFUSED(r, tc_win_signal(win, p, -1, 1, TC_WIN_SIGNAL_SET, NULL, NULL),
                    "signal slot -1");
        /* zero bytes at the very end, and the whole window, are allowed */
        IBR_OK(r, tc_win_put(win, zero, 0, p, size, NULL, NULL));
        IBR_OK(r, tc_win_get(win, buf, 0, p, size, NULL, NULL));
        IBR_OK(r, tc_win_get(win, buf, size, p, 0, NULL, NULL));
        long long d = -1;
        for (size_t i = 0; i < size && d < 0; i++)
            if (buf[i] != 0)
                d = (long long)i;
        IBR_CHECK(r, d < 0, "rank %d's window byte %lld is %u after refused puts, not 0", p, d,
                  d < 0 ? 0 : buf[d]);
        IBR_CHECK(r, buf[size] == 0xee, "a get of %zu bytes wrote past them", size);
        if (p != r->rank)
            want.reads++, want.read_bytes += (int64_t)size;
    }
    char what[64];
    snprintf(what, sizeof(what), "peer %d is not a rank", n);
    OOR_REFUSED(r, tc_win_put(win, buf, 1, n, 0, NULL, NULL), what);
    OOR_REFUSED(r, tc_win_get(win, buf, 1, -2, 0, NULL, NULL), "peer -2 is not a rank");
    /* the refusals left the communicator usable */
    IBR_OK(r, tc_barrier(r->comm, NULL, NULL));
    IBR_OK(r, tc_win_destroy(win));
    free(buf);
    ibr_expect_add(r, &want);
    return 0;
}
