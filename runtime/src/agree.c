/* The shrink agreement as a state machine (see agree.h; the argument for its
 * correctness is in docs/fault_tolerance.md).
 *
 * A message: u32 kind, u32 round, u32 next free communicator id, u32 size,
 * u32 count; count ranks (u32, ascending, each below size); u32 end mark
 * (kind ^ count ^ END). A receive takes it into room for the largest, and
 * its length must be the one its count says. */
#include <stdlib.h>
#include <string.h>

#include "tcomms/base/status.h"
#include "tcomms/runtime/agree.h"

enum { MSG_SET = 0x53455432u, MSG_DECIDE = 0x44454332u, MSG_END = 0x454e4421u };

#define MSG_HDR 20
#define MSG_LEN(count) (MSG_HDR + 4 * (size_t)(count) + 4)

/* ---- sets of ranks ---- */

/* The index of the first of @p n ascending ranks at @p v that is >= r. */
static int lower_bound(const int32_t *v, int n, int32_t r)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (v[mid] < r)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int rs_lower(const tc_rt_rankset_t *s, int32_t r)
{
    return lower_bound(s->r, s->n, r);
}

static int rs_has(const tc_rt_rankset_t *s, int32_t r)
{
    int i = rs_lower(s, r);
    return i < s->n && s->r[i] == r;
}

static int rs_reserve(tc_rt_rankset_t *s, int n)
{
    if (n <= s->cap)
        return 1;
    int cap = s->cap ? s->cap : 8;
    while (cap < n)
        cap *= 2;
    int32_t *r = realloc(s->r, (size_t)cap * sizeof(*r));
    if (!r)
        return 0;
    s->r = r;
    s->cap = cap;
    return 1;
}

/* Add @p r: 1 when it is new, 0 when it was there, -1 out of memory. */
static int rs_add(tc_rt_rankset_t *s, int32_t r)
{
    int i = rs_lower(s, r);
    if (i < s->n && s->r[i] == r)
        return 0;
    if (!rs_reserve(s, s->n + 1))
        return -1;
    memmove(s->r + i + 1, s->r + i, (size_t)(s->n - i) * sizeof(*s->r));
    s->r[i] = r;
    s->n++;
    return 1;
}

static uint32_t get32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Merge a message's checked list (@p n ranks at @p list) into @p s, from the
 * back so no scratch is needed: 1 when something was added, -1 no memory. */
static int rs_merge(tc_rt_rankset_t *s, const uint8_t *list, int n)
{
    int i = s->n - 1, j = n - 1, k = s->n + n - 1, added = 0;
    if (!rs_reserve(s, s->n + n))
        return -1;
    while (j >= 0) {
        int32_t v = (int32_t)get32(list + 4 * (size_t)j);
        if (i >= 0 && s->r[i] > v) {
            s->r[k--] = s->r[i--];
        } else if (i >= 0 && s->r[i] == v) {
            s->r[k--] = s->r[i--];
            j--;
        } else {
            s->r[k--] = v;
            j--;
            added = 1;
        }
    }
    while (i >= 0)
        s->r[k--] = s->r[i--];
    /* duplicates left a gap at the front */
    int gap = k + 1;
    if (gap > 0)
        memmove(s->r, s->r + gap, (size_t)(s->n + n - gap) * sizeof(*s->r));
    s->n += n - gap;
    return added;
}

static int rs_copy(tc_rt_rankset_t *dst, const int32_t *r, int n)
{
    if (!rs_reserve(dst, n))
        return 0;
    if (n)
        memcpy(dst->r, r, (size_t)n * sizeof(*r));
    dst->n = n;
    return 1;
}

/* ---- the graph ---- */

/* Rank @p r's neighbours into @p out (room for 2 log2 size + 2); their count. */
static int graph_peers(const tc_rt_agree_graph_t *g, int r, int32_t *out)
{
    int n = 0;
    for (int64_t d = 1; d < g->size; d *= 2) {
        out[n++] = (int32_t)((r + d) % g->size);
        out[n++] = (int32_t)((r - d % g->size + g->size) % g->size);
    }
    for (int i = 1; i < n; i++) /* insertion sort: a few dozen */
        for (int j = i; j > 0 && out[j - 1] > out[j]; j--) {
            int32_t t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    int m = 0;
    for (int i = 0; i < n; i++)
        if (out[i] != r && (m == 0 || out[m - 1] != out[i]))
            out[m++] = out[i];
    return m;
}

#define GRAPH_MAX_PEERS 66 /* 2 per power of two below 2^31, and room */

tc_status_t tc_rt_agree_graph(int size, int dense_max, tc_rt_agree_graph_t *g)
{
    memset(g, 0, sizeof(*g));
    if (size < 1)
        return tc_error_set(TC_ERR_INVALID_ARG, "agreement graph of %d ranks", size);
    g->size = size;
    g->diameter = g->window = 1;
    if (size <= dense_max || size <= 2)
        return TC_OK;
    g->sparse = 1;
    /* the graph looks the same from every rank: one search from rank 0 */
    int *dist = malloc((size_t)size * sizeof(int)), *queue = malloc((size_t)size * sizeof(int));
    if (!dist || !queue) {
        free(dist);
        free(queue);
        return tc_error_set(TC_ERR_NO_MEMORY, "agreement graph of %d ranks", size);
    }
    for (int i = 0; i < size; i++)
        dist[i] = -1;
    int head = 0, tail = 0, far = 0;
    int32_t nb[GRAPH_MAX_PEERS];
    dist[0] = 0;
    queue[tail++] = 0;
    while (head < tail) {
        int v = queue[head++], m = graph_peers(g, v, nb);
        for (int i = 0; i < m; i++)
            if (dist[nb[i]] < 0) {
                dist[nb[i]] = dist[v] + 1;
                far = dist[nb[i]];
                queue[tail++] = nb[i];
            }
    }
    free(dist);
    free(queue);
    g->diameter = far;
    g->window = 2 * (far + 2) - 1; /* the surviving ranks within diameter + 2 hops */
    return TC_OK;
}

/* ---- one rank ---- */

tc_status_t tc_rt_agree_init(tc_rt_agree_t *a, const tc_rt_agree_graph_t *g, int rank,
                             uint32_t next_id)
{
    memset(a, 0, sizeof(*a));
    if (g->size < 1 || rank < 0 || rank >= g->size)
        return tc_error_set(TC_ERR_INVALID_ARG, "agreement: rank %d of %d", rank, g->size);
    a->g = *g;
    a->rank = rank;
    a->next_id = next_id;
    a->adopted_from = -1;
    a->msg_cap = MSG_LEN(g->size);
    int32_t nb[GRAPH_MAX_PEERS];
    a->npeers = g->sparse ? graph_peers(g, rank, nb) : g->size - 1;
    a->peers = malloc((size_t)a->npeers * sizeof(*a->peers) + 1);
    a->to = calloc((size_t)a->npeers + 1, 2);
    if (!a->peers || !a->to) {
        tc_rt_agree_free(a);
        return tc_error_set(TC_ERR_NO_MEMORY, "agreement state for %d ranks", g->size);
    }
    a->got_decide = a->to + a->npeers + 1;
    for (int i = 0; i < a->npeers; i++)
        a->peers[i] = g->sparse ? nb[i] : i + (i >= rank);
    return TC_OK;
}

void tc_rt_agree_free(tc_rt_agree_t *a)
{
    free(a->peers);
    free(a->to);
    free(a->dead.r);
    free(a->decided.r);
    free(a->msg);
    memset(a, 0, sizeof(*a));
}

int tc_rt_agree_learn(tc_rt_agree_t *a, int r)
{
    if (r < 0 || r >= a->g.size || r == a->rank)
        return 0;
    int news = rs_add(&a->dead, r);
    if (news < 0)
        a->oom = 1;
    if (news <= 0)
        return 0;
    a->learnt++;
    return 1;
}

int tc_rt_agree_failed(const tc_rt_agree_t *a, int r)
{
    return rs_has(&a->decided, r);
}

int tc_rt_agree_peer_index(const tc_rt_agree_t *a, int r)
{
    int i = lower_bound(a->peers, a->npeers, r);
    return i < a->npeers && a->peers[i] == r ? i : -1;
}

tc_status_t tc_rt_agree_begin(tc_rt_agree_t *a)
{
    if (a->round++ == 0)
        a->learnt = 0; /* what was known before the start is no change */
    int last = a->phase == TC_RT_AGREE_LAST;
    for (int i = 0; i < a->npeers; i++) {
        int q = a->peers[i];
        a->to[i] =
            !rs_has(&a->dead, q) && (!last || (!a->got_decide[i] && !rs_has(&a->decided, q)));
    }
    const tc_rt_rankset_t *set = last ? &a->decided : &a->dead;
    size_t len = MSG_LEN(set->n);
    if (len > a->msg_room) {
        uint8_t *m = realloc(a->msg, len);
        if (!m)
            return tc_error_set(TC_ERR_NO_MEMORY, "agreement message of %zu bytes", len);
        a->msg = m;
        a->msg_room = len;
    }
    uint32_t kind = last ? MSG_DECIDE : MSG_SET, count = (uint32_t)set->n;
    uint32_t hdr[5] = {kind, a->round, a->next_id, (uint32_t)a->g.size, count};
    uint32_t end = kind ^ count ^ MSG_END;
    memcpy(a->msg, hdr, MSG_HDR);
    if (count)
        memcpy(a->msg + MSG_HDR, set->r, 4 * (size_t)count);
    memcpy(a->msg + MSG_HDR + 4 * (size_t)count, &end, 4);
    a->msg_len = len;
    return TC_OK;
}

/* Whether a message's list equals this round's own message's. */
static int same_list(const tc_rt_agree_t *a, const uint8_t *m, int count)
{
    return (size_t)count == (a->msg_len - MSG_LEN(0)) / 4 &&
           memcmp(m + MSG_HDR, a->msg + MSG_HDR, 4 * (size_t)count) == 0;
}

/* Neighbour @p q's message @p m of @p len bytes: its kind, id and list, or an
 * error naming the neighbour when it is malformed. */
static tc_status_t msg_check(const tc_rt_agree_t *a, const uint8_t *m, size_t len, int q,
                             uint32_t *kind_p, uint32_t *id_p, int *count_p, int *same_p)
{
    uint32_t hdr[5], end = 0;
    const char *what = NULL;
    memset(hdr, 0, sizeof(hdr));
    if (len < MSG_LEN(0)) {
        what = "too short";
    } else {
        memcpy(hdr, m, MSG_HDR);
        if (hdr[0] != MSG_SET && hdr[0] != MSG_DECIDE)
            what = "kind";
        else if (hdr[1] != a->round)
            what = "round";
        else if (hdr[3] != (uint32_t)a->g.size)
            what = "size";
        else if (hdr[4] > (uint32_t)a->g.size || MSG_LEN(hdr[4]) > len)
            what = "count";
        else if (MSG_LEN(hdr[4]) != len)
            what = "length";
        else if (memcpy(&end, m + MSG_HDR + 4 * (size_t)hdr[4], 4),
                 end != (hdr[0] ^ hdr[4] ^ MSG_END))
            what = "end mark";
    }
    /* a list equal to this rank's own message's (the usual case) is valid */
    int same = !what && same_list(a, m, (int)hdr[4]);
    for (uint32_t i = 0; !what && !same && i < hdr[4]; i++) {
        uint32_t r = get32(m + MSG_HDR + 4 * (size_t)i);
        if (r >= (uint32_t)a->g.size || (i > 0 && r <= get32(m + MSG_HDR + 4 * (size_t)(i - 1))))
            what = "ranks (not ascending, or out of range)";
    }
    if (what)
        return tc_error_set(
            TC_ERR_PROTOCOL,
            "rank %d sent a malformed agreement message in round %u (%s; kind "
            "0x%08x, round %u, size %u, count %u, %zu bytes; want round %u, size %d)",
            q, a->round, what, hdr[0], hdr[1], hdr[3], hdr[4], len, a->round, a->g.size);
    *kind_p = hdr[0];
    *id_p = hdr[2];
    *count_p = (int)hdr[4];
    *same_p = same;
    return TC_OK;
}

/* The last round: only DECIDE messages are compared (SETs come from ranks
 * still deciding, which adopt this rank's DECIDE). */
static tc_status_t end_last(tc_rt_agree_t *a, const uint8_t *const *theirs, const size_t *lens)
{
    for (int i = 0; i < a->npeers; i++) {
        uint32_t kind, id;
        int count, same;
        tc_status_t st;
        if (!a->to[i] || !theirs[i])
            continue;
        if ((st = msg_check(a, theirs[i], lens[i], a->peers[i], &kind, &id, &count, &same)) !=
            TC_OK)
            return st;
        if (kind == MSG_DECIDE && (id != a->next_id || !same))
            return tc_error_set(TC_ERR_INTERNAL,
                                "rank %d decided a different set from this rank's in round %u",
                                a->peers[i], a->round);
    }
    a->phase = TC_RT_AGREE_DONE;
    return TC_OK;
}

/* A DECIDE from neighbour @p i: the first is adopted, any other must equal it. */
static tc_status_t take_decide(tc_rt_agree_t *a, int i, const uint8_t *m, uint32_t id, int count)
{
    a->got_decide[i] = 1;
    if (a->adopted_from < 0) {
        a->adopted_from = a->peers[i];
        a->next_id = id;
        a->decided.n = 0;
        if (rs_merge(&a->decided, m + MSG_HDR, count) < 0)
            return tc_error_set(TC_ERR_NO_MEMORY, "agreement: a set of %d ranks", count);
        return TC_OK;
    }
    int same = id == a->next_id && count == a->decided.n;
    for (int k = 0; same && k < count; k++)
        same = (int32_t)get32(m + MSG_HDR + 4 * (size_t)k) == a->decided.r[k];
    if (!same)
        return tc_error_set(TC_ERR_INTERNAL, "ranks %d and %d sent different decisions in round %u",
                            a->adopted_from, a->peers[i], a->round);
    return TC_OK;
}

tc_status_t tc_rt_agree_end(tc_rt_agree_t *a, const uint8_t *const *theirs, const size_t *lens)
{
    if (a->oom)
        return tc_error_set(TC_ERR_NO_MEMORY, "agreement: the failed set could not grow");
    if (a->phase == TC_RT_AGREE_LAST)
        return end_last(a, theirs, lens);
    /* differs: a set or the id proposal not equal to this rank's (the
     * id counts only on a sparse graph: all-to-all, every rank deciding in a
     * round saw every id of the round) */
    int differs = a->learnt > 0, alive = 0;
    uint32_t round_id = a->next_id;
    for (int i = 0; i < a->npeers; i++) {
        uint32_t kind, id;
        int count, same, q = a->peers[i];
        tc_status_t st;
        if (!a->to[i])
            continue;
        if (!theirs[i]) { /* lost in the round */
            if (rs_add(&a->dead, q) < 0)
                return tc_error_set(TC_ERR_NO_MEMORY, "agreement: the failed set could not grow");
            differs = 1;
            continue;
        }
        alive++;
        if ((st = msg_check(a, theirs[i], lens[i], q, &kind, &id, &count, &same)) != TC_OK)
            return st;
        if (kind == MSG_DECIDE) {
            if ((st = take_decide(a, i, theirs[i], id, count)) != TC_OK)
                return st;
            continue;
        }
        if (id > round_id)
            round_id = id;
        if (!same || (a->g.sparse && id != a->next_id))
            differs = 1;
        /* merged (this rank too, when another counts it as failed: the caller
         * finds itself outside) */
        if (!same && rs_merge(&a->dead, theirs[i] + MSG_HDR, count) < 0)
            return tc_error_set(TC_ERR_NO_MEMORY, "agreement: the failed set could not grow");
    }
    a->learnt = 0;
    if (a->adopted_from >= 0) {
        a->phase = TC_RT_AGREE_LAST;
        return TC_OK;
    }
    a->next_id = round_id;
    a->quiet = differs ? 0 : a->quiet + 1;
    if (a->quiet >= a->g.window) {
        if (!rs_copy(&a->decided, a->dead.r, a->dead.n))
            return tc_error_set(TC_ERR_NO_MEMORY, "agreement: a set of %d ranks", a->dead.n);
        a->phase = TC_RT_AGREE_LAST;
        return TC_OK;
    }
    if (!alive && a->npeers > 0 && a->dead.n + 1 < a->g.size) {
        int gone = 0;
        for (int i = 0; i < a->npeers; i++)
            gone += rs_has(&a->dead, a->peers[i]);
        if (gone == a->npeers)
            return tc_error_set(TC_ERR_PEER_FAILED,
                                "every one of this rank's %d neighbours in the agreement failed "
                                "(rank %d of %d is cut off from the %d others not known to have "
                                "failed)",
                                a->npeers, a->rank, a->g.size, a->g.size - 1 - a->dead.n);
    }
    return TC_OK;
}
