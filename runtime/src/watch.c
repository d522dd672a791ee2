/* The watch graph and the judgement of verdicts (tcomms/runtime/watch.h):
 * rank arithmetic only, no I/O. */
#include <string.h>

#include "tcomms/runtime/watch.h"

/* Add (r + d) mod n to the sorted set @p out of @p n_out elements, unless it is @p r. */
static int watch_add(int *out, int n_out, int n, int r, long long d)
{
    int p = (int)((((long long)r + d) % n + n) % n);
    if (p == r)
        return n_out;
    int i = 0;
    while (i < n_out && out[i] < p)
        i++;
    if (i < n_out && out[i] == p)
        return n_out;
    for (int j = n_out; j > i; j--)
        out[j] = out[j - 1];
    out[i] = p;
    return n_out + 1;
}

int tc_rt_watch_peers(int size, int local_size, int rank, int peers_p[TC_RT_WATCH_MAX])
{
    if (size < 1 || rank < 0 || rank >= size || local_size < 1)
        return 0;
    long long l = local_size > size ? size : local_size, r = rank, n = size;
    const long long offsets[] = {1, l, l + 1};
    int k = 0;
    for (int i = 0; i < 3; i++) {
        k = watch_add(peers_p, k, size, rank, offsets[i]);
        k = watch_add(peers_p, k, size, rank, -offsets[i]);
    }
    /* the chords: r -- 2r + b (mod n), both ways: the ranks p with 2p + b = r
     * (mod n), for b = 0, 1 */
    for (long long b = 0; b < 2; b++) {
        k = watch_add(peers_p, k, size, rank, r + b); /* 2r + b = r + (r + b) */
        long long t = ((r - b) % n + n) % n;          /* 2p = t (mod n) */
        if (n % 2) {
            k = watch_add(peers_p, k, size, rank, (t % 2 ? t + n : t) / 2 - r);
        } else if (t % 2 == 0) {
            k = watch_add(peers_p, k, size, rank, t / 2 - r);
            k = watch_add(peers_p, k, size, rank, t / 2 + n / 2 - r);
        }
    }
    return k;
}

tc_rt_watch_judgement_t tc_rt_watch_judge(const tc_rt_watch_case_t *c)
{
    if (c->accused < 0 || c->accused >= c->size || c->accuser < -1 || c->accuser >= c->size)
        return TC_RT_WATCH_BAD;
    if (c->accused == c->self)
        return TC_RT_WATCH_ABOUT_SELF;
    if (c->accused_known)
        return TC_RT_WATCH_KNOWN;
    if (c->accuser >= 0 && c->accuser_failed)
        return TC_RT_WATCH_ACCUSER_FAILED;
    if (c->silent && c->accused_watched && c->heard_ago_ns < 2 * c->period_ns)
        return TC_RT_WATCH_ACCUSED_HEARD;
    return TC_RT_WATCH_ACCEPT;
}

int tc_rt_verdict_valid(const tc_rt_verdict_msg_t *m, size_t bytes, int size)
{
    return bytes == sizeof(*m) && m->magic == TC_RT_VERDICT_MAGIC && m->rank >= 0 &&
           m->rank < size && memchr(m->host, '\0', sizeof(m->host)) != NULL;
}
