/* The world's transports and endpoints: every registered backend this
 * process can open (the transport registry, with the peers each reaches), an
 * endpoint per world rank over the best fitting one (connected on first use),
 * progress of the backends that have endpoints, the wait when nothing
 * moves, and the backends' trim once idle. No backend is named here. */
#include <ctype.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/base/config.h"
#include "tcomms/base/log.h"
#include "tcomms/transport/builtin.h"
#include "tcomms/transport/ib.h"
#include "world.h"

#define WORLD_ADDR_MAX 256
#define WORLD_YIELD_NS 5000000ull /* idle time spent yielding before napping */
/* A backend without endpoints only has connections to accept, which wait
 * until this process connects back (both sides of a pair connect): poll it
 * one pass in this many only (its progress may be a system call). */
#define WORLD_IDLE_POLL_PASSES 1024

/* Open @p ops as the next backend with reach @p reach and publish its
 * address under "tc.<name>.addr" (not the self backend's: no peer uses it). */
static tc_status_t world_open(tc_rt_world_t *world, const tc_tp_ops_t *ops, tc_tp_reach_t reach,
                              int required, const tc_tp_ctx_params_t *params)
{
    if (world->nbackends == TC_RT_BACKENDS_MAX)
        return tc_error_set(TC_ERR_NO_RESOURCE, "more than %d transport backends",
                            TC_RT_BACKENDS_MAX);
    tc_rt_backend_t *be = &world->backends[world->nbackends];
    memset(be, 0, sizeof(*be));
    be->ops = ops;
    be->reach = reach;
    be->required = required;
    tc_status_t st = tc_tp_ctx_create(ops, params, &be->ctx);
    if (st != TC_OK)
        return st;
    world->nbackends++;
    int fd = tc_tp_wait_fd(be->ctx);
    if (fd >= 0)
        world->wait_fds[world->nwait_fds++] = (struct pollfd){.fd = fd, .events = POLLIN};
    if (reach == TC_TP_REACH_SELF)
        return TC_OK;
    unsigned char addr[WORLD_ADDR_MAX];
    char key[64];
    size_t len;
    snprintf(key, sizeof(key), "tc.%s.addr", ops->name);
    if ((st = tc_tp_addr_pack(be->ctx, addr, sizeof(addr), &len)) != TC_OK ||
        (st = tc_boot_put(world->boot, key, addr, len)) != TC_OK)
        return st;
    return TC_OK;
}

/* The variable of backend @p ops: TC_ and its name in capitals. */
static const char *world_backend_var(const tc_tp_ops_t *ops, char *var, size_t cap)
{
    snprintf(var, cap, "TC_%s", ops->name);
    for (char *v = var; *v; v++)
        *v = (char)toupper((unsigned char)*v);
    return var;
}

/* TC_<NAME> (TC_SHM, TC_TCP, TC_IB, ...): 0 never, 1 required, auto (the
 * default) when this machine has it; 0 and 1 in any of the boolean spellings. */
enum { MODE_NEVER = 0, MODE_REQUIRED = 1, MODE_AUTO = 2 };
static tc_status_t world_backend_mode(const tc_tp_ops_t *ops, int *mode_p)
{
    static const char *const modes[] = {"0",  "1",   "auto", "false", "true",
                                        "no", "yes", "off",  "on",    NULL};
    char var[64];
    world_backend_var(ops, var, sizeof(var));
    int i;
    tc_status_t st = tc_config_enum(var, modes, MODE_AUTO, &i);
    *mode_p = i <= MODE_AUTO ? i : (i - 3) % 2; /* false, no, off: 0; true, yes, on: 1 */
    return st;
}

/* The registered backend that reads hint @p key (tc_tp_ops_t.hint_keys), or NULL. */
static const tc_tp_ops_t *world_hint_owner(const tc_tp_ops_t *const *ops, int n, const char *key)
{
    for (int b = 0; b < n; b++)
        for (const char *const *k = ops[b]->hint_keys; k && *k; k++)
            if (strcmp(*k, key) == 0)
                return ops[b];
    return NULL;
}

tc_status_t tc_rt_world_hints_check(const tc_hints_t *hints, const tc_hints_t *shared)
{
    tc_status_t st = tc_tp_register_builtin();
    const tc_tp_ops_t *ops[TC_RT_BACKENDS_MAX];
    int n = st == TC_OK ? tc_tp_registered(ops, NULL, TC_RT_BACKENDS_MAX) : 0;
    if (st != TC_OK)
        return st;
    n = n < TC_RT_BACKENDS_MAX ? n : TC_RT_BACKENDS_MAX;
    /* at creation, on every machine: the ib context that reads them is made only where RDMA is
     * (a malformed ib.port was accepted elsewhere) */
    if (!shared && (st = tc_tp_ib_hints_check(hints)) != TC_OK)
        return st;
    for (int i = 0; i < hints->count; i++) {
        const char *key = hints->keys[i];
        const tc_tp_ops_t *owner = strcmp(key, "algo") ? world_hint_owner(ops, n, key) : NULL;
        const char *had = owner && shared ? tc_hints_get(shared, key) : NULL;
        if (!strcmp(key, "algo") || (owner && !shared) || (had && !strcmp(had, hints->values[i])))
            continue;
        if (owner)
            return tc_error_set(TC_ERR_INVALID_ARG,
                                "hint %s=" TC_ECHO_FMT " configures the %s transport, which a "
                                "communicator shares with the one it is made from (%s" TC_ECHO_FMT
                                "): it applies only to tc_comm_create",
                                key, TC_ECHO(hints->values[i]), owner->name,
                                had ? "there " : "unset there", TC_ECHO(had ? had : ""));
        char known[512] = "";
        size_t len = 0;
        for (int b = 0; b < n; b++)
            for (const char *const *k = ops[b]->hint_keys; k && *k && len < sizeof(known); k++)
                len += (size_t)snprintf(known + len, sizeof(known) - len, ", %s", *k);
        return tc_error_set(TC_ERR_INVALID_ARG, "unknown hint " TC_ECHO_FMT " (known: algo%s)",
                            TC_ECHO(key), known);
    }
    return TC_OK;
}

tc_status_t tc_rt_world_open_backends(tc_rt_world_t *world, const tc_hints_t *hints)
{
    /* every backend registered, each with the peers it reaches: a new one
     * needs no change here (transport/builtin registers those of the build) */
    tc_status_t st = tc_tp_register_builtin();
    const tc_tp_ops_t *ops[TC_RT_BACKENDS_MAX];
    tc_tp_reach_t reach[TC_RT_BACKENDS_MAX];
    int n = st == TC_OK ? tc_tp_registered(ops, reach, TC_RT_BACKENDS_MAX) : 0;
    if (n > TC_RT_BACKENDS_MAX)
        return tc_error_set(TC_ERR_NO_RESOURCE, "%d transport backends registered, at most %d", n,
                            TC_RT_BACKENDS_MAX);
    /* The job secret comes from the bootstrap (docs/security.md): TC_JOB_SECRET, or PMIx
     * rank 0's; none under the torchrun environment without TC_JOB_SECRET, which the
     * bootstrap has warned about: the transports then authenticate with the public key. */
    tc_tp_ctx_params_t params = TC_TP_CTX_PARAMS_INIT;
    params.self_id = (uint64_t)world->boot->rank;
    params.secret = world->boot->secret;
    params.secret_len = world->boot->secret_len;
    /* shm shares /dev/shm out among the ranks of the node: tell it how many there are */
    tc_hints_t own;
    tc_hints_init(&own);
    char local[16];
    snprintf(local, sizeof(local), "%d", world->boot->local_size > 0 ? world->boot->local_size : 1);
    if (st == TC_OK && hints)
        st = tc_hints_copy(&own, hints);
    if (st == TC_OK && !tc_hints_get(&own, "shm_local_ranks"))
        st = tc_hints_set(&own, "shm_local_ranks", local);
    params.hints = &own;
    for (int i = 0; i < n && st == TC_OK; i++) {
        int mode;
        if ((st = world_backend_mode(ops[i], &mode)) != TC_OK || mode == MODE_NEVER)
            continue;
        /* A backend this machine lacks (ib without a device) is skipped unless
         * required: the peers it would serve take the next. One it has must
         * open (a bad setting of it is an error); a context costs nothing
         * until a peer connects (shm maps no segment before). */
        tc_tp_caps_t caps = {.size = sizeof(caps)};
        if (mode == MODE_AUTO && ops[i]->query && ops[i]->query(&caps) != TC_OK) {
            tc_log_info(TC_SUBSYS_RUNTIME, "no %s: %s", ops[i]->name, tc_last_error());
            continue;
        }
        if (mode == MODE_AUTO && ops[i]->query && !caps.available) {
            tc_log_info(TC_SUBSYS_RUNTIME, "no %s on this machine", ops[i]->name);
            continue;
        }
        st = world_open(world, ops[i], reach[i], mode == MODE_REQUIRED, &params);
    }
    tc_hints_free(&own);
    return st;
}

void tc_rt_world_close_backends(tc_rt_world_t *world)
{
    for (int r = 0; world->eps && r < world->boot->size; r++)
        if (world->eps[r]) {
            tc_tp_ep_close(world->eps[r]);
            world->eps[r] = NULL;
        }
    for (int i = 0; i < world->nbackends; i++)
        tc_tp_ctx_destroy(world->backends[i].ctx);
    world->nbackends = 0;
    world->nwait_fds = 0;
}

/* How well backend @p be suits a peer: 0 not at all, else the higher the better. */
static int world_fit(const tc_rt_backend_t *be, int self, int same_node)
{
    switch (be->reach) {
    case TC_TP_REACH_SELF:
        return self ? 4 : 0;
    case TC_TP_REACH_NODE:
        return same_node && !self ? 3 : 0;
    case TC_TP_REACH_REMOTE:
        return !same_node ? 2 : 0;
    default:
        return 1;
    }
}

/* Connect to world rank @p peer over @p be (itself: from the context's own address). */
static tc_status_t world_connect(tc_rt_world_t *world, tc_rt_backend_t *be, int peer,
                                 uint64_t deadline_ns, tc_tp_ep_t **ep_p)
{
    unsigned char addr[WORLD_ADDR_MAX];
    size_t len;
    tc_status_t st;
    if (peer == world->boot->rank) {
        st = tc_tp_addr_pack(be->ctx, addr, sizeof(addr), &len);
    } else {
        char key[64];
        snprintf(key, sizeof(key), "tc.%s.addr", be->ops->name);
        st = tc_boot_get(world->boot, peer, key, addr, sizeof(addr), &len, deadline_ns);
    }
    if (st == TC_OK)
        st = tc_tp_ep_connect(be->ctx, (uint64_t)peer, addr, len, ep_p);
    return st;
}

tc_status_t tc_rt_world_ep(tc_rt_world_t *world, int peer, uint64_t deadline_ns, tc_tp_ep_t **ep_p)
{
    if (peer < 0 || peer >= world->boot->size)
        return tc_error_set(TC_ERR_INTERNAL, "world rank %d does not exist (size %d)", peer,
                            world->boot->size);
    if (world->eps[peer]) {
        *ep_p = world->eps[peer];
        return TC_OK;
    }
    int self = peer == world->boot->rank, same_node = 1;
    tc_status_t st;
    if (!self && (st = tc_rt_world_same_node(world, peer, deadline_ns, &same_node)) != TC_OK)
        return st;
    /* The best fitting backend first, registration order among equals; one
     * that cannot reach this peer after all says so (TC_ERR_UNSUPPORTED or
     * NOT_FOUND), and the next is tried. Both sides of a pair connect and
     * learn the same refusal (shm: other pid namespaces, or no room in
     * /dev/shm, which the side that connects first decides and the other reads
     * from the pair's file), so they choose alike. A required backend
     * (TC_<NAME>=1) that refuses a peer is an error instead. */
    tc_tp_ep_t *ep = NULL;
    tc_rt_backend_t *be = NULL, *refused = NULL;
    char why[384] = "";
    st = TC_ERR_NOT_FOUND;
    for (int fit = 4; fit > 0 && !ep; fit--) {
        for (int i = 0; i < world->nbackends && !ep; i++) {
            if (world_fit(&world->backends[i], self, same_node) != fit)
                continue;
            be = &world->backends[i];
            st = world_connect(world, be, peer, deadline_ns, &ep);
            if (st == TC_OK)
                break;
            if (st != TC_ERR_UNSUPPORTED && st != TC_ERR_NOT_FOUND)
                return st;
            char var[32];
            if (be->required)
                return tc_error_set(st, "rank %d (%s node): %s=1 allows no other transport: %s",
                                    peer, same_node ? "same" : "another",
                                    world_backend_var(be->ops, var, sizeof(var)), tc_last_error());
            if (!refused) {
                refused = be;
                snprintf(why, sizeof(why), "%s", tc_last_error());
            }
        }
    }
    if (!ep)
        return be ? st
                  : tc_error_set(TC_ERR_NOT_FOUND, "no transport backend reaches rank %d (%s node)",
                                 peer, same_node ? "same" : "another");
    if (refused) {
        /* slower, not broken: said once per world (a process has one at a time), info after */
        int first = world->nfallbacks++ == 0;
        char var[32];
        world_backend_var(refused->ops, var, sizeof(var));
        tc_log(first ? TC_LOG_LEVEL_WARN : TC_LOG_LEVEL_INFO, TC_SUBSYS_RUNTIME,
               "rank %d (%s node) is reached over %s, not %s: %s%s%s%s", peer,
               same_node ? "same" : "another", be->ops->name, refused->ops->name, why,
               first ? " (said once, later peers at info level; " : "", first ? var : "",
               first ? "=1 makes this an error)" : "");
    }
    world->eps[peer] = ep;
    world->ep_backend[peer] = be;
    be->neps++;
    if (!self) {
        tc_log_info(TC_SUBSYS_RUNTIME, "connected to rank %d (%s node) over %s", peer,
                    same_node ? "same" : "another", ep->ops->name);
        if (world->hooks.connected)
            world->hooks.connected(world, peer, ep);
    }
    *ep_p = ep;
    return TC_OK;
}

void tc_rt_world_ep_drop(tc_rt_world_t *world, int peer)
{
    tc_tp_ep_t *ep = tc_rt_world_ep_get(world, peer);
    if (!ep)
        return;
    world->eps[peer] = NULL;
    world->ep_backend[peer]->neps--;
    world->ep_backend[peer] = NULL;
    __atomic_add_fetch(&world->ep_gen[peer], 1, __ATOMIC_RELEASE);
    /* a thread out of the lock may be watching a lane in this endpoint's
     * segment: it comes back within its spin time (tc_rt_world_step_out); one that
     * runs without the lock sees the count changed before it starts (seq_cst, as its flag) */
    __atomic_add_fetch(&world->ep_drops, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&world->outside, __ATOMIC_ACQUIRE) > 0)
        sched_yield();
    if (world->hooks.closing)
        world->hooks.closing(world);
    tc_tp_ep_close(ep);
}
const char *tc_rt_world_req_why(const tc_rt_world_t *world, int wpeer, int peer, int recv,
                                size_t bytes, tc_status_t st, char *buf, size_t cap)
{
    const tc_tp_ep_t *ep = tc_rt_world_ep_get(world, wpeer);
    if (ep && tc_tp_ep_error(ep)[0])
        snprintf(buf, cap, "%s", tc_tp_ep_error(ep));
    else if (ep && recv && st == TC_ERR_ABORTED)
        snprintf(buf, cap,
                 "rank %d withdrew the message of %zu bytes it had begun to send (its operation "
                 "ended in error there: an abort, a revoke, a timeout or a failure it saw, of "
                 "which this rank learnt nothing within %d ms)",
                 peer, bytes, TC_RT_WITHDRAWN_WAIT_MS);
    else
        snprintf(buf, cap, "the transport ended the %s of %zu bytes with %s",
                 recv ? "receive" : "send", bytes, tc_status_string(st));
    return buf;
}

int tc_rt_world_peers_over(const tc_rt_world_t *world, const char *name)
{
    for (int i = 0; i < world->nbackends; i++)
        if (strcmp(world->backends[i].ops->name, name) == 0)
            return world->backends[i].neps;
    return 0;
}
int tc_rt_world_progress_tp(tc_rt_world_t *world)
{
    int n = 0, idle_turn = ++world->tp_passes >= WORLD_IDLE_POLL_PASSES;
    if (idle_turn)
        world->tp_passes = 0;
    for (int i = 0; i < world->nbackends && n >= 0; i++) {
        tc_rt_backend_t *be = &world->backends[i];
        if (be->neps == 0 && !idle_turn)
            continue;
        int m = tc_tp_progress(be->ctx);
        n = m < 0 ? m : n + m;
    }
    return n;
}

void tc_rt_world_wait(tc_rt_world_t *world, int max_ms, uint64_t idle_ns)
{
    /* A same-node backend (shm) has no descriptor to sleep on. For the first
     * milliseconds without progress, yield the core (a peer that shares it
     * gets to run, and we come back at once); after that, nap in its wait,
     * which backs off from 10 us to 1 ms, so a long wait does not burn a core.
     * Otherwise sleep in the wait of the backend that reaches every peer. With
     * the progress thread running, stay short: it needs the lock we hold. */
    tc_rt_backend_t *any = NULL;
    for (int i = 0; i < world->nbackends; i++) {
        tc_rt_backend_t *be = &world->backends[i];
        if (be->reach == TC_TP_REACH_NODE && be->neps > 0) {
            if (idle_ns < WORLD_YIELD_NS)
                sched_yield();
            else
                tc_tp_wait(be->ctx, max_ms < 1 ? max_ms : 1);
            return;
        }
        if (be->reach == TC_TP_REACH_ANY && !any)
            any = be;
    }
    /* with other threads about, stay short: they need the lock we hold */
    int cap = world->threaded || __atomic_load_n(&world->contended, __ATOMIC_RELAXED) ? 1 : 100;
    if (any)
        tc_tp_wait(any->ctx, max_ms < cap ? max_ms : cap);
    else
        sched_yield();
}

void tc_rt_world_trim_idle(tc_rt_world_t *world, uint64_t now)
{
    if (world->links != world->trim_links || world->trim_ns == 0 || world->active) {
        world->trim_links = world->links;
        world->trim_ns = now;
        world->trimmed = 0;
        return;
    }
    if (world->trimmed || now - world->trim_ns < TC_RT_WORLD_TRIM_NS)
        return;
    world->trimmed = 1;
    for (int b = 0; b < world->nbackends; b++)
        tc_tp_trim(world->backends[b].ctx);
}
