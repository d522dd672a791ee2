/* The world's transports and endpoints: the backends this process opened,
 * an endpoint per world rank (connected on first use), progress of the
 * backends that have endpoints, and the wait when nothing moves. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/base/log.h"
#include "tcomms/transport/ib.h"
#include "tcomms/transport/self.h"
#include "tcomms/transport/shm.h"
#include "tcomms/transport/tcp.h"
#include "world.h"

#define WORLD_ADDR_MAX 256
#define WORLD_YIELD_NS 5000000ull /* idle time spent yielding before napping */
/* A backend without endpoints only has connections to accept, which wait
 * until this process connects back (both sides of a pair connect): poll it
 * one pass in this many only (its progress may be a system call). */
#define WORLD_IDLE_POLL_PASSES 1024

/* Open @p ops as the next backend and publish its address under "tc.<name>.addr". */
static tc_status_t world_open(tc_rt_world_t *world, const tc_tp_ops_t *ops,
                              const tc_tp_ctx_params_t *params, int publish,
                              tc_rt_backend_t **be_p)
{
    if (world->nbackends == TC_RT_BACKENDS_MAX)
        return tc_error_set(TC_ERR_NO_RESOURCE, "more than %d transport backends",
                            TC_RT_BACKENDS_MAX);
    tc_rt_backend_t *be = &world->backends[world->nbackends];
    memset(be, 0, sizeof(*be));
    be->ops = ops;
    be->caps.size = sizeof(be->caps);
    tc_status_t st = ops->query ? ops->query(&be->caps) : TC_OK;
    if (st == TC_OK)
        st = tc_tp_ctx_create(ops, params, &be->ctx);
    if (st != TC_OK)
        return st;
    world->nbackends++;
    if (be_p)
        *be_p = be;
    if (!publish)
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

static tc_rt_backend_t *world_backend(tc_rt_world_t *world, const tc_tp_ops_t *ops)
{
    for (int i = 0; i < world->nbackends; i++)
        if (world->backends[i].ops == ops)
            return &world->backends[i];
    return NULL;
}

tc_status_t tc_rt_world_open_backends(tc_rt_world_t *world, const tc_hints_t *hints)
{
    /* The job secret comes from the bootstrap (docs/security.md): TC_JOB_SECRET, or PMIx
     * rank 0's; none under the torchrun environment without TC_JOB_SECRET, which the
     * bootstrap has warned about: the transports then authenticate with the public key. */
    tc_tp_ctx_params_t params = TC_TP_CTX_PARAMS_INIT;
    params.self_id = (uint64_t)world->boot->rank;
    params.secret = world->boot->secret;
    params.secret_len = world->boot->secret_len;
    params.hints = hints;
    /* Same-node peers are reached over shared memory unless TC_SHM=0. The shm
     * context is created even when no peer shares the node: it costs no segment
     * until a peer connects. */
    bool use_shm;
    tc_status_t st = tc_config_bool("TC_SHM", true, &use_shm);
    if (st != TC_OK || (use_shm && (st = world_open(world, &tc_tp_shm_ops, &params, 1, NULL)) !=
                                       TC_OK))
        return st;
    /* Peers on other nodes are reached over InfiniBand/RoCE when this node has a
     * device (TC_IB=auto, the default; 1: an error without one; 0: never). With
     * no device the context is refused at once and tcp carries everything. */
    static const char *const modes[] = {"0", "1", "auto", NULL};
    int mode;
    if ((st = tc_config_enum("TC_IB", modes, 2, &mode)) != TC_OK)
        return st;
    if (mode != 0 && (st = world_open(world, &tc_tp_ib_ops, &params, 1, NULL)) != TC_OK) {
        if (mode == 1)
            return st;
        tc_log_info(TC_SUBSYS_RUNTIME, "no ib: %s; other nodes over tcp", tc_last_error());
    }
    /* tcp: every peer */
    return world_open(world, &tc_tp_tcp_ops, &params, 1, NULL);
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
}

/* Connect to world rank @p peer over @p be, from its published address. */
static tc_status_t world_connect(tc_rt_world_t *world, tc_rt_backend_t *be, int peer,
                                 uint64_t deadline_ns, tc_tp_ep_t **ep_p)
{
    unsigned char addr[WORLD_ADDR_MAX];
    size_t len;
    char key[64];
    snprintf(key, sizeof(key), "tc.%s.addr", be->ops->name);
    tc_status_t st =
        tc_boot_get(world->boot, peer, key, addr, sizeof(addr), &len, deadline_ns);
    if (st == TC_OK)
        st = tc_tp_ep_connect(be->ctx, (uint64_t)peer, addr, len, ep_p);
    return st;
}

/* This process to itself: the self backend, opened on first use. */
static tc_status_t world_self_ep(tc_rt_world_t *world, tc_rt_backend_t **be_p, tc_tp_ep_t **ep_p)
{
    if (!world->self) {
        tc_tp_ctx_params_t params = TC_TP_CTX_PARAMS_INIT;
        params.self_id = (uint64_t)world->boot->rank;
        tc_status_t st = world_open(world, &tc_tp_self_ops, &params, 0, &world->self);
        if (st != TC_OK)
            return st;
    }
    unsigned char addr[WORLD_ADDR_MAX];
    size_t len;
    tc_status_t st;
    if ((st = tc_tp_addr_pack(world->self->ctx, addr, sizeof(addr), &len)) != TC_OK ||
        (st = tc_tp_ep_connect(world->self->ctx, (uint64_t)world->boot->rank, addr, len, ep_p)) !=
            TC_OK)
        return st;
    *be_p = world->self;
    return TC_OK;
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
    tc_tp_ep_t *ep = NULL;
    tc_rt_backend_t *be = NULL;
    int same_node = 1;
    tc_status_t st;
    if (peer == world->boot->rank) {
        if ((st = world_self_ep(world, &be, &ep)) != TC_OK)
            return st;
    } else {
        if ((st = tc_rt_world_same_node(world, peer, deadline_ns, &same_node)) != TC_OK)
            return st;
        /* same node: shm; another node: ib when both have a device; otherwise,
         * or when the peer cannot be reached so (another pid namespace, no
         * device there), tcp. Both sides of a pair connect. */
        tc_rt_backend_t *fast = world_backend(world, same_node ? &tc_tp_shm_ops : &tc_tp_ib_ops);
        if (fast) {
            st = world_connect(world, fast, peer, deadline_ns, &ep);
            if (st == TC_ERR_UNSUPPORTED || st == TC_ERR_NOT_FOUND)
                tc_log_info(TC_SUBSYS_RUNTIME, "rank %d over tcp: %s", peer, tc_last_error());
            else if (st != TC_OK)
                return st;
            else
                be = fast;
        }
        if (!ep) {
            be = world_backend(world, &tc_tp_tcp_ops);
            if ((st = world_connect(world, be, peer, deadline_ns, &ep)) != TC_OK)
                return st;
        }
    }
    world->eps[peer] = ep;
    world->ep_backend[peer] = be;
    be->neps++;
    if (peer != world->boot->rank) {
        tc_log_debug(TC_SUBSYS_RUNTIME, "connected to rank %d (%s node) over %s", peer,
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
    tc_tp_ep_close(ep);
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
    int n = 0;
    for (int i = 0; i < world->nbackends && n >= 0; i++) {
        tc_rt_backend_t *be = &world->backends[i];
        if (be->neps == 0 && ++be->idle_polls < WORLD_IDLE_POLL_PASSES)
            continue;
        be->idle_polls = 0;
        int m = tc_tp_progress(be->ctx);
        n = m < 0 ? m : n + m;
    }
    return n;
}

void tc_rt_world_wait(tc_rt_world_t *world, int max_ms, uint64_t idle_ns)
{
    /* shm has no descriptor to sleep on. For the first milliseconds without
     * progress, yield the core (a peer that shares it gets to run, and we come
     * back at once); after that, nap in shm's wait, which backs off from 10 us
     * to 1 ms, so a long wait does not burn a core. With the progress thread
     * running, stay short: it needs the lock we hold. */
    tc_rt_backend_t *shm = world_backend(world, &tc_tp_shm_ops);
    if (shm && shm->neps > 0) {
        if (idle_ns < WORLD_YIELD_NS)
            sched_yield();
        else
            tc_tp_wait(shm->ctx, max_ms < 1 ? max_ms : 1);
        return;
    }
    int cap = world->threaded ? 1 : 100;
    tc_tp_wait(world_backend(world, &tc_tp_tcp_ops)->ctx, max_ms < cap ? max_ms : cap);
}
