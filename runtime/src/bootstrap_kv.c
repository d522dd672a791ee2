/* The bootstrap through a caller's key-value store (bootstrap_kv.h): puts are
 * set at once under "<prefix>/<rank>/", a fence is a counter plus a done key
 * set by the last rank to arrive, waited for in slices so that an abort and
 * the deadline are seen. A creation first claims its rank (a counter per rank)
 * and compares its size with rank 0's. Events (a failed rank, a revoke) are
 * numbered keys every rank reads in order. */
#include "tcomms/runtime/bootstrap_kv.h"

#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap_impl.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"

#define KV_KEY_MAX (TC_BOOT_KV_PREFIX_MAX + 192)
#define KV_MISSING_MAX 8     /* ranks named on a timeout */
#define KV_MISSING_PROBES 64 /* arrival keys read to find them, at most */
#define KV_SIZE_LEN 16       /* an arrival key's value: the size its rank was given, in decimal */
/* An event counted but not written this long while later ones exist is skipped: its sender
 * failed between the count and the write (or its write failed), and every later notice
 * waited behind it for the communicator's life. */
#define KV_HOLE_SKIP_NS 1000000000ull

typedef struct {
    tc_boot_t head;
    tc_boot_kv_params_t p;
    uint64_t deadline_ns; /* the creation's, checked before each of its callbacks */
    char prefix[TC_BOOT_KV_PREFIX_MAX + 1];
    int fences; /* fences done: names the next one's keys */
    /* events: "<prefix>/event/count" numbers them, "<prefix>/event/<i>" holds
     * the i-th (i from 1); read at most every TC_BOOT_KV_POLL_MS */
    pthread_mutex_t ev_mu;
    int64_t ev_seen;     /* events read (or skipped as this rank's own) */
    uint64_t ev_next_ns; /* no store call before */
    int ev_failing;      /* the last look failed in the store: said once, until one works */
    uint64_t ev_hole_ns; /* when event ev_seen + 1 was first found counted but absent, or 0 */
} tc_boot_kv_t;

/* One event as stored: who sent it, then the event. */
typedef struct {
    int32_t sender, kind, rank, from_launcher;
    uint32_t comm_id;
} kv_event_t;

static tc_status_t kv_key(const tc_boot_kv_t *kv, char *out, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static tc_status_t kv_key(const tc_boot_kv_t *kv, char *out, const char *fmt, ...)
{
    int n = snprintf(out, KV_KEY_MAX, "%s/", kv->prefix);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(out + n, KV_KEY_MAX - (size_t)n, fmt, ap);
    va_end(ap);
    if (m < 0 || (size_t)n + (size_t)m >= KV_KEY_MAX)
        return tc_error_set(TC_ERR_INVALID_ARG, "bootstrap(store '%s'): key longer than %d bytes",
                            kv->prefix, KV_KEY_MAX - 1);
    return TC_OK;
}

#define KV_FAILED_FMT "bootstrap(store '%s', rank %d): the %s callback %s on key '%s'"
#define KV_FAILED_ARGS(kv, cb, key, rc)                                                            \
    (kv)->prefix, (kv)->head.rank, (cb),                                                           \
        (rc) == TC_BOOT_KV_FAILED ? "failed" : "returned an unexpected value", (key)

static tc_status_t kv_failed(const tc_boot_kv_t *kv, const char *cb, const char *key, int rc)
{
    return tc_error_set(TC_ERR_BOOTSTRAP, KV_FAILED_FMT, KV_FAILED_ARGS(kv, cb, key, rc));
}

/* Before each callback of a creation (its thread only): an abort or the deadline ends it here,
 * at most one callback late, not at the next fence (a slow store spends its time per call). */
static tc_status_t kv_may_call(const tc_boot_kv_t *kv, const char *cb, const char *key)
{
    if (!tc_boot_creation_is_active())
        return TC_OK;
    char what[KV_KEY_MAX + 48];
    snprintf(what, sizeof(what), "the store's %s callback on key '%s'", cb, key);
    tc_status_t st = tc_boot_creation_aborted(what);
    if (st == TC_OK && tc_deadline_passed(kv->deadline_ns))
        st = tc_error_set(TC_ERR_TIMEOUT,
                          "bootstrap(store '%s', rank %d): the creation's deadline passed before "
                          "%s",
                          kv->prefix, kv->head.rank, what);
    return st;
}

static tc_status_t kv_set_now(tc_boot_kv_t *kv, const char *k, const void *val, size_t len)
{
    int rc = kv->p.set(kv->p.ctx, k, val, len);
    return rc == TC_BOOT_KV_OK ? TC_OK : kv_failed(kv, "set", k, rc);
}

static tc_status_t kv_set(tc_boot_kv_t *kv, const char *k, const void *val, size_t len)
{
    tc_status_t st = kv_may_call(kv, "set", k);
    return st == TC_OK ? kv_set_now(kv, k, val, len) : st;
}

static tc_status_t kv_put(tc_boot_t *boot, const char *key, const void *val, size_t len)
{
    tc_boot_kv_t *kv = (tc_boot_kv_t *)boot;
    char k[KV_KEY_MAX];
    tc_status_t st = kv_key(kv, k, "%d/%s", boot->rank, key);
    return st == TC_OK ? kv_set(kv, k, val, len) : st;
}

static tc_status_t kv_add_now(tc_boot_kv_t *kv, const char *k, int64_t delta, int64_t *value_p)
{
    int rc = kv->p.add(kv->p.ctx, k, delta, value_p);
    return rc == TC_BOOT_KV_OK ? TC_OK : kv_failed(kv, "add", k, rc);
}

static tc_status_t kv_add(tc_boot_kv_t *kv, const char *k, int64_t delta, int64_t *value_p)
{
    tc_status_t st = kv_may_call(kv, "add", k);
    return st == TC_OK ? kv_add_now(kv, k, delta, value_p) : st;
}

/* The size in an arrival key's value of @p len bytes, or -1 when it holds none. */
static int kv_size_of(const char *v, size_t len)
{
    char text[KV_SIZE_LEN], *end;
    if (len == 0 || len >= sizeof(text))
        return -1;
    memcpy(text, v, len);
    text[len] = '\0';
    long n = strtol(text, &end, 10);
    return *end || n < 1 || n > INT_MAX ? -1 : (int)n;
}

/* The timeout's detail: which ranks have not arrived at fence @p g (no arrival key, or one with
 * another size: such a rank failed at once), and at the first fence whether more than one
 * process was given this rank (a duplicate fails at once, and the rank it left out is missing). */
static tc_status_t kv_fence_timeout(tc_boot_kv_t *kv, int g, int64_t arrived, const char *done)
{
    if (arrived >= kv->head.size) /* all arrived: the key that says so never appeared */
        return tc_error_set(TC_ERR_TIMEOUT,
                            "bootstrap(store '%s', rank %d): every rank reached fence %d (%" PRId64
                            " of %d counted) but its key '%s' never appeared before the deadline "
                            "(the rank that set it failed, or the store's wait does not see it)",
                            kv->prefix, kv->head.rank, g, arrived, kv->head.size, done);
    char missing[KV_MISSING_MAX * 12] = "", sizes[KV_MISSING_MAX * 40 + 96] = "", twice[128] = "";
    char k[KV_KEY_MAX];
    size_t len = 0, slen = 0;
    int named = 0;
    for (int r = 0; r < kv->head.size && r < KV_MISSING_PROBES && named < KV_MISSING_MAX; r++) {
        char v[KV_SIZE_LEN];
        size_t vlen = 0;
        if (kv_key(kv, k, "fence%d/arrived/%d", g, r) != TC_OK)
            continue;
        int rc = kv->p.get(kv->p.ctx, k, v, sizeof(v), &vlen);
        int size = rc == TC_BOOT_KV_OK ? kv_size_of(v, vlen) : 0;
        if (rc != TC_BOOT_KV_ABSENT && (size < 1 || size == kv->head.size))
            continue;
        len += (size_t)snprintf(missing + len, sizeof(missing) - len, "%s%d", named ? ", " : "", r);
        if (rc == TC_BOOT_KV_OK)
            slen += (size_t)snprintf(sizes + slen, sizeof(sizes) - slen,
                                     "%s rank %d was given size %d", slen ? "," : ";", r, size);
        named++;
    }
    if (slen)
        snprintf(sizes + slen, sizeof(sizes) - slen,
                 ", this rank size %d (every rank must pass the same size)", kv->head.size);
    int64_t claims = 0;
    if (g == 0 && kv_key(kv, k, "claim/%d", kv->head.rank) == TC_OK &&
        kv->p.add(kv->p.ctx, k, 0, &claims) == TC_BOOT_KV_OK && claims > 1)
        snprintf(twice, sizeof(twice),
                 "; %" PRId64 " processes were given rank %d (the later ones failed at once)",
                 claims, kv->head.rank);
    return tc_error_set(TC_ERR_TIMEOUT,
                        "bootstrap(store '%s', rank %d): %" PRId64 " of %d ranks reached the "
                        "fence before the deadline; missing: %s%s%s",
                        kv->prefix, kv->head.rank, arrived, kv->head.size,
                        named ? missing : "unknown (the store does not tell)", sizes, twice);
}

/* Waits for @p key until @p deadline_ns in slices, so that an abort is seen: *there_p := whether
 * it appeared. */
static tc_status_t kv_wait(tc_boot_kv_t *kv, const char *key, uint64_t deadline_ns, int *there_p)
{
    for (;;) {
        int left = tc_deadline_left_ms(deadline_ns);
        int slice = left < TC_BOOT_ABORT_POLL_MS ? left : TC_BOOT_ABORT_POLL_MS;
        int rc = kv->p.wait(kv->p.ctx, key, slice);
        if (rc == TC_BOOT_KV_OK) {
            *there_p = 1;
            return TC_OK;
        }
        if (rc != TC_BOOT_KV_TIMEOUT)
            return kv_failed(kv, "wait", key, rc);
        char what[KV_KEY_MAX + 32];
        snprintf(what, sizeof(what), "the store's key '%s'", key);
        tc_status_t st = tc_boot_creation_aborted(what);
        if (st != TC_OK)
            return st;
        if (tc_deadline_passed(deadline_ns)) {
            *there_p = 0;
            return TC_OK;
        }
    }
}

static tc_status_t kv_fence(tc_boot_t *boot, uint64_t deadline_ns)
{
    tc_boot_kv_t *kv = (tc_boot_kv_t *)boot;
    int g = kv->fences++, there;
    char k[KV_KEY_MAX], done[KV_KEY_MAX], size[KV_SIZE_LEN];
    int64_t arrived;
    tc_status_t st;
    snprintf(size, sizeof(size), "%d", boot->size);
    /* arrival key, count and (the last to arrive) done key go together, checked once before:
     * an abort between them left the others a rank counted and never named, or a fence no one
     * ends */
    if ((st = kv_key(kv, k, "fence%d/arrived/%d", g, boot->rank)) != TC_OK ||
        (st = kv_may_call(kv, "set", k)) != TC_OK ||
        (st = kv_set_now(kv, k, size, strlen(size))) != TC_OK ||
        (st = kv_key(kv, k, "fence%d/count", g)) != TC_OK ||
        (st = kv_key(kv, done, "fence%d/done", g)) != TC_OK ||
        (st = kv_add_now(kv, k, 1, &arrived)) != TC_OK)
        return st;
    if (arrived < 1 || arrived > boot->size) /* the fence would pass early, or never */
        return tc_error_set(TC_ERR_BOOTSTRAP,
                            "bootstrap(store '%s', rank %d): the store's add on '%s' returned "
                            "%" PRId64 ", not a count of 1 to %d ranks (another creation uses "
                            "this prefix, or the store's add is broken)",
                            kv->prefix, boot->rank, k, arrived, boot->size);
    if (arrived == boot->size && (st = kv_set_now(kv, done, "1", 1)) != TC_OK)
        return st;
    if ((st = kv_wait(kv, done, deadline_ns, &there)) != TC_OK || there)
        return st;
    /* the count read past the deadline, to say it */
    if ((st = kv_add_now(kv, k, 0, &arrived)) != TC_OK)
        return st;
    return kv_fence_timeout(kv, g, arrived, done);
}

static tc_status_t kv_get(tc_boot_t *boot, int peer, const char *key, void *buf, size_t cap,
                          size_t *len_p, uint64_t deadline_ns)
{
    tc_boot_kv_t *kv = (tc_boot_kv_t *)boot;
    char k[KV_KEY_MAX];
    tc_status_t st = kv_key(kv, k, "%d/%s", peer, key);
    if (st != TC_OK)
        return st;
    if ((st = kv_may_call(kv, "get", k)) != TC_OK)
        return st;
    size_t len = 0;
    int rc = kv->p.get(kv->p.ctx, k, buf, cap, &len);
    if (rc == TC_BOOT_KV_ABSENT)
        return tc_error_set(TC_ERR_NOT_FOUND, "bootstrap(store '%s'): no key '%s'", kv->prefix, k);
    if (rc != TC_BOOT_KV_OK)
        return kv_failed(kv, "get", k, rc);
    if (len > cap)
        return tc_error_set(TC_ERR_TRUNCATED,
                            "bootstrap(store '%s'): key '%s' has %zu bytes, "
                            "buffer %zu",
                            kv->prefix, k, len, cap);
    *len_p = len;
    return TC_OK;
}

static void kv_destroy(tc_boot_t *boot)
{
    pthread_mutex_destroy(&((tc_boot_kv_t *)boot)->ev_mu);
    free(boot);
}

static tc_status_t kv_notify(tc_boot_t *boot, const tc_boot_event_t *ev)
{
    tc_boot_kv_t *kv = (tc_boot_kv_t *)boot;
    char k[KV_KEY_MAX];
    int64_t i;
    kv_event_t e = {boot->rank, ev->kind, ev->rank, ev->from_launcher,
                    ev->kind == TC_BOOT_EV_REVOKE ? ev->comm_id : (uint32_t)(ev->silent != 0)};
    tc_status_t st = kv_key(kv, k, "event/count");
    if (st != TC_OK || (st = kv_add(kv, k, 1, &i)) != TC_OK ||
        (st = kv_key(kv, k, "event/%" PRId64, i)) != TC_OK)
        return st;
    return kv_set(kv, k, &e, sizeof(e));
}

/* The next event of another rank, or 0. Called while progressing: one store
 * call at most every TC_BOOT_KV_POLL_MS, none while another thread polls. */
static int kv_poll_event(tc_boot_t *boot, tc_boot_event_t *ev)
{
    tc_boot_kv_t *kv = (tc_boot_kv_t *)boot;
    uint64_t now = tc_time_ns();
    if (now < kv->ev_next_ns || pthread_mutex_trylock(&kv->ev_mu) != 0)
        return 0;
    char k[KV_KEY_MAX];
    int64_t n = 0;
    int got = 0;
    kv->ev_next_ns = now + TC_BOOT_KV_POLL_MS * 1000000ull;
    const char *cb = "add";
    int rc = TC_BOOT_KV_FAILED;
    if (kv_key(kv, k, "event/count") == TC_OK &&
        (rc = kv->p.add(kv->p.ctx, k, 0, &n)) == TC_BOOT_KV_OK) {
        while (!got && kv->ev_seen < n) {
            kv_event_t e;
            size_t len = 0;
            cb = "get";
            if (kv_key(kv, k, "event/%" PRId64, kv->ev_seen + 1) != TC_OK)
                break;
            rc = kv->p.get(kv->p.ctx, k, &e, sizeof(e), &len);
            if (rc == TC_BOOT_KV_ABSENT && kv->ev_seen + 1 < n) {
                /* counted, not written, later ones are: a hole, skipped after a while */
                if (!kv->ev_hole_ns)
                    kv->ev_hole_ns = now;
                if (now - kv->ev_hole_ns < KV_HOLE_SKIP_NS)
                    break;
                tc_log_warn(TC_SUBSYS_RUNTIME,
                            "bootstrap(store '%s', rank %d): key '%s' was counted but not "
                            "written for %llu ms while later notices were (its sender failed "
                            "or its write did): skipped",
                            kv->prefix, kv->head.rank, k,
                            (unsigned long long)(KV_HOLE_SKIP_NS / 1000000));
                kv->ev_seen++;
                kv->ev_hole_ns = 0;
                rc = TC_BOOT_KV_OK;
                continue;
            }
            if (rc != TC_BOOT_KV_OK)
                break; /* counted but not yet set (absent): next time */
            kv->ev_seen++;
            kv->ev_hole_ns = 0;
            if (len != sizeof(e) || e.sender == boot->rank)
                continue;
            {
                int failed = e.kind == TC_BOOT_EV_PROC_FAILED; /* comm_id: found silent */
                *ev = (tc_boot_event_t){e.kind,          e.rank,       failed ? 0 : e.comm_id,
                                        e.from_launcher, e.sender + 1, failed && e.comm_id == 1};
            }
            got = 1;
        }
        if (got && kv->ev_seen < n)
            kv->ev_next_ns = now; /* more to read: no pause (but a pause before an absent one:
                                     one look per period, not a loop of gets) */
    }
    /* Nothing fails here (no call is the caller's): a store that fails is said, once until a
     * look works again, since other ranks' notices do not arrive meanwhile. */
    int failing = rc != TC_BOOT_KV_OK && rc != TC_BOOT_KV_ABSENT;
    if (failing && !kv->ev_failing)
        tc_log_warn(TC_SUBSYS_RUNTIME,
                    KV_FAILED_FMT "; other ranks' notices (failures, revocations) do not arrive "
                                  "while it fails (looked for again every %d ms)",
                    KV_FAILED_ARGS(kv, cb, k, rc), TC_BOOT_KV_POLL_MS);
    else if (!failing && kv->ev_failing)
        tc_log_warn(TC_SUBSYS_RUNTIME,
                    "bootstrap(store '%s', rank %d): the store answers again: other ranks' "
                    "notices arrive",
                    kv->prefix, kv->head.rank);
    kv->ev_failing = failing;
    pthread_mutex_unlock(&kv->ev_mu);
    return got;
}

static const tc_boot_ops_t kv_ops = {"store",    kv_put,        kv_fence, kv_get,
                                     kv_destroy, kv_poll_event, kv_notify};

/* The counters of this host's ranks into @p v: how many, the sum of their ranks and of their
 * squares (the count alone above TC_BOOT_KV_LOCAL_SIZE_MAX ranks: -1 for the others). Before
 * the fence this rank adds itself; after it (@p read), it reads them back. */
static tc_status_t kv_host_counters(tc_boot_kv_t *kv, int read, int64_t v[3])
{
    static const char *const suffix[3] = {"", "/sum", "/sumsq"};
    int64_t r = kv->head.rank, add[3] = {1, r, r * r};
    int counters = kv->head.size <= TC_BOOT_KV_LOCAL_SIZE_MAX ? 3 : 1;
    v[1] = v[2] = -1;
    for (int i = 0; i < counters; i++) {
        char key[KV_KEY_MAX];
        tc_status_t st = kv_key(kv, key, "host/%s%s", kv->head.host, suffix[i]);
        if (st == TC_OK)
            st = kv_add(kv, key, read ? 0 : add[i], &v[i]);
        if (st != TC_OK)
            return st;
    }
    return TC_OK;
}

int tc_boot_kv_local_rank(int rank, int64_t n, int64_t sum, int64_t sumsq)
{
    if (n < 1 || n > TC_BOOT_KV_LOCAL_SIZE_MAX || sum < 0 || sumsq < 0)
        return -1;
    int64_t base = sum - n * (n - 1) / 2; /* n s when the ranks are s, s + 1, ..., s + n - 1 */
    if (base < 0 || base % n != 0)
        return -1;
    int64_t s = base / n;
    if (s > TC_BOOT_KV_LOCAL_SIZE_MAX || rank < s || rank >= s + n)
        return -1;
    /* the sum of (s + i)^2 over i < n */
    int64_t want = n * s * s + s * n * (n - 1) + (n - 1) * n * (2 * n - 1) / 6;
    return sumsq == want ? (int)(rank - s) : -1;
}

/* Claims this rank with an add on its claim key: a second process given the same rank counts 2
 * and fails here, before it adds to any other key, so the first one's world is not disturbed. */
static tc_status_t kv_claim(tc_boot_kv_t *kv)
{
    char k[KV_KEY_MAX];
    int64_t n;
    tc_status_t st = kv_key(kv, k, "claim/%d", kv->head.rank);
    if (st != TC_OK || (st = kv_add(kv, k, 1, &n)) != TC_OK || n == 1)
        return st;
    if (n < 1)
        return tc_error_set(TC_ERR_BOOTSTRAP,
                            "bootstrap(store '%s', rank %d): the store's add on '%s' returned "
                            "%" PRId64 ", not a count of 1 or more (the store's add is broken)",
                            kv->prefix, kv->head.rank, k, n);
    return tc_error_set(TC_ERR_BOOTSTRAP,
                        "bootstrap(store '%s', rank %d): rank %d is taken: the store's add on '%s' "
                        "counted %" PRId64 " processes given it (each rank must be given to one "
                        "process; or an earlier creation used this prefix)",
                        kv->prefix, kv->head.rank, kv->head.rank, k, n);
}

/* Every rank but 0 compares its size with rank 0's (in rank 0's arrival key at the first fence)
 * before it adds to any counter: one given another size fails at once naming both, and sets its
 * own arrival key, never counted, so that the ranks left waiting name its size at their
 * timeout. */
static tc_status_t kv_size_check(tc_boot_kv_t *kv)
{
    char k0[KV_KEY_MAX], k[KV_KEY_MAX], v[KV_SIZE_LEN];
    size_t len = 0;
    int there;
    tc_status_t st;
    if (kv->head.rank == 0)
        return TC_OK;
    if ((st = kv_key(kv, k0, "fence%d/arrived/0", kv->fences)) != TC_OK ||
        (st = kv_wait(kv, k0, kv->deadline_ns, &there)) != TC_OK)
        return st;
    if (!there)
        return tc_error_set(TC_ERR_TIMEOUT,
                            "bootstrap(store '%s', rank %d): rank 0 did not reach the fence "
                            "before the deadline (key '%s', its size that the others compare "
                            "theirs with, is absent): it was not started, or was given another "
                            "prefix or store",
                            kv->prefix, kv->head.rank, k0);
    if ((st = kv_may_call(kv, "get", k0)) != TC_OK)
        return st;
    int rc = kv->p.get(kv->p.ctx, k0, v, sizeof(v), &len);
    if (rc != TC_BOOT_KV_OK)
        return kv_failed(kv, "get", k0, rc);
    int size0 = kv_size_of(v, len);
    if (size0 < 1)
        return tc_error_set(TC_ERR_PROTOCOL,
                            "bootstrap(store '%s', rank %d): key '%s' holds %zu bytes that are "
                            "not a size in decimal (rank 0's; another program wrote it?)",
                            kv->prefix, kv->head.rank, k0, len);
    if (size0 == kv->head.size)
        return TC_OK;
    snprintf(v, sizeof(v), "%d", kv->head.size);
    if ((st = kv_key(kv, k, "fence%d/arrived/%d", kv->fences, kv->head.rank)) != TC_OK ||
        (st = kv_set(kv, k, v, strlen(v))) != TC_OK)
        return st;
    return tc_error_set(TC_ERR_BOOTSTRAP,
                        "bootstrap(store '%s', rank %d): rank %d was given size %d but rank 0 "
                        "size %d (key '%s'): every rank must pass the same size",
                        kv->prefix, kv->head.rank, kv->head.rank, kv->head.size, size0, k0);
}

static tc_status_t kv_check(const tc_boot_kv_params_t *p)
{
    if (!p->set || !p->get || !p->wait || !p->add)
        return tc_error_set(TC_ERR_INVALID_ARG, "bootstrap(store): the %s callback is NULL",
                            !p->set    ? "set"
                            : !p->get  ? "get"
                            : !p->wait ? "wait"
                                       : "add");
    if (p->size < 1 || p->rank < 0 || p->rank >= p->size)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "bootstrap(store): rank %d of size %d (need 0 "
                            "<= rank < size)",
                            p->rank, p->size);
    size_t len = p->prefix ? strlen(p->prefix) : 0;
    if (len == 0 || len > TC_BOOT_KV_PREFIX_MAX)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "bootstrap(store): the prefix %s (1 to %d "
                            "characters)",
                            !p->prefix ? "is NULL"
                            : len      ? "is too long"
                                       : "is empty",
                            TC_BOOT_KV_PREFIX_MAX);
    return TC_OK;
}

tc_status_t tc_boot_kv_create(const tc_boot_kv_params_t *params, uint64_t deadline_ns,
                              tc_boot_t **boot_p)
{
    tc_status_t st = kv_check(params);
    if (st != TC_OK)
        return st;
    tc_boot_kv_t *kv = calloc(1, sizeof(*kv));
    if (!kv)
        return tc_error_set(TC_ERR_NO_MEMORY, "bootstrap(store): allocating the bootstrap");
    kv->head.ops = &kv_ops;
    kv->head.rank = params->rank;
    kv->head.size = params->size;
    snprintf(kv->head.launcher, sizeof(kv->head.launcher), "store");
    tc_boot_fill_common(&kv->head);
    kv->p = *params;
    kv->deadline_ns = deadline_ns;
    pthread_mutex_init(&kv->ev_mu, NULL);
    snprintf(kv->prefix, sizeof(kv->prefix), "%s", params->prefix); /* length checked */
    kv->p.prefix = kv->prefix;
    int64_t host[3];
    if ((st = tc_boot_secret_from_env(&kv->head, "store")) != TC_OK ||
        (st = kv_claim(kv)) != TC_OK || (st = kv_size_check(kv)) != TC_OK ||
        (st = kv_host_counters(kv, 0, host)) != TC_OK ||
        (st = kv_fence(&kv->head, deadline_ns)) != TC_OK ||
        (st = kv_host_counters(kv, 1, host)) != TC_OK) {
        kv_destroy(&kv->head);
        return st;
    }
    if (kv->head.secret_len == 0 && params->size > 1)
        tc_boot_warn_no_secret("store", "the connections between this job's ranks are");
    kv->head.local_size = host[0] > 0 && host[0] <= params->size ? (int)host[0] : 1;
    kv->head.local_rank = tc_boot_kv_local_rank(kv->head.rank, host[0], host[1], host[2]);
    tc_log_debug(TC_SUBSYS_RUNTIME,
                 "bootstrap(store '%s'): rank %d of %d, local rank %d of %d on %s", kv->prefix,
                 kv->head.rank, kv->head.size, kv->head.local_rank, kv->head.local_size,
                 kv->head.host);
    *boot_p = &kv->head;
    return TC_OK;
}
