/* The world: what every communicator of a job shares in this process — the
 * bootstrap, the transport contexts, the endpoints (by world rank, connected
 * on first use), the running works and the progress thread. */
#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "comm_impl.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"
#include "tcomms/topo/topo.h"
#include "tcomms/transport/ib.h"
#include "tcomms/transport/self.h"
#include "tcomms/transport/shm.h"
#include "tcomms/transport/tcp.h"

#define TC_RT_ADDR_KEY "tc.tcp.addr"
#define TC_RT_SHM_ADDR_KEY "tc.shm.addr"
#define TC_RT_IB_ADDR_KEY "tc.ib.addr"
#define TC_RT_NODE_KEY "tc.node.id" /* 8 bytes: which node a rank runs on */
#define TC_RT_DESC_KEY                                                                             \
    "tc.topo.desc"                /* the node descriptor, for tools and topology-aware algorithms */
#define TC_RT_YIELD_NS 5000000ull /* idle time spent yielding before napping */
#define TC_RT_LOCAL ((void *)2)
#define TC_RT_REMOTE ((void *)1)
#define TC_RT_ADDR_MAX 256

void tc_rt_world_lock(tc_rt_world_t *world)
{
    if (world->threaded)
        pthread_mutex_lock(&world->mu);
}

void tc_rt_world_unlock(tc_rt_world_t *world)
{
    if (world->threaded)
        pthread_mutex_unlock(&world->mu);
}

/* Polling before sleeping cuts latency when every rank has a core of its own;
 * when ranks outnumber cores it steals the core the peer needs, so sleep at
 * once. TC_SPIN_US overrides the choice. */
static tc_status_t world_spin(tc_rt_world_t *world)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int oversubscribed = cores > 0 && world->boot->local_size > cores;
    int64_t us;
    tc_status_t st = tc_config_int("TC_SPIN_US", oversubscribed ? 0 : 50, 0, 1000000, &us);
    if (st != TC_OK)
        return st;
    world->spin_ns = (uint64_t)us * 1000;
    tc_log_info(TC_SUBSYS_RUNTIME, "%d local ranks on %ld cores: poll %lld us before sleeping",
                world->boot->local_size, cores, (long long)us);
    return TC_OK;
}

/* Describe this node and publish it: its id (what locality is decided on)
 * and its full descriptor. Topology discovery degrades, never fails, but a
 * broken override (TC_TOPO_XML, TC_TOPO_SYNTHETIC) is an error. */
static tc_status_t world_publish_node(tc_rt_world_t *world)
{
    tc_topo_node_t *node = calloc(1, sizeof(*node));
    unsigned char *desc = malloc(TC_TOPO_DESC_MAX);
    size_t len;
    tc_status_t st = TC_ERR_NO_MEMORY;
    if (!node || !desc) {
        tc_error_set(st, "allocating the node descriptor");
        goto out;
    }
    if ((st = tc_topo_node_probe(node)) != TC_OK ||
        (st = tc_topo_desc_encode(node, desc, TC_TOPO_DESC_MAX, &len)) != TC_OK ||
        (st = tc_boot_put(world->boot, TC_RT_DESC_KEY, desc, len)) != TC_OK ||
        (st = tc_boot_put(world->boot, TC_RT_NODE_KEY, &node->node_id, sizeof(node->node_id))) !=
            TC_OK)
        goto out;
    world->node_id = node->node_id;
    tc_log_info(TC_SUBSYS_RUNTIME, "node %s (id %016llx): %d cores, %d GPUs, %d NICs",
                node->hostname, (unsigned long long)node->node_id, node->ncores, node->ngpus,
                node->nnics);
out:
    free(node);
    free(desc);
    return st;
}

/* Host and pid, so that a failure report can name them. */
static tc_status_t world_publish_proc(tc_rt_world_t *world)
{
    struct {
        int32_t pid;
        char host[64];
    } proc;
    memset(&proc, 0, sizeof(proc));
    proc.pid = (int32_t)getpid();
    snprintf(proc.host, sizeof(proc.host), "%s", world->boot->host);
    return tc_boot_put(world->boot, "tc.proc", &proc, sizeof(proc));
}

tc_status_t tc_rt_world_same_node(tc_rt_world_t *world, int peer, uint64_t deadline_ns, int *same_p)
{
    void *known = tc_hmap_get(&world->locality, (uint64_t)peer);
    if (!known) {
        uint64_t id;
        size_t len;
        tc_status_t st =
            tc_boot_get(world->boot, peer, TC_RT_NODE_KEY, &id, sizeof(id), &len, deadline_ns);
        if (st == TC_OK && len != sizeof(id))
            st = tc_error_set(TC_ERR_PROTOCOL, "rank %d published a node id of %zu bytes", peer,
                              len);
        if (st != TC_OK)
            return st;
        known = id == world->node_id ? TC_RT_LOCAL : TC_RT_REMOTE;
        if ((st = tc_hmap_put(&world->locality, (uint64_t)peer, known)) != TC_OK)
            return st;
    }
    *same_p = known == TC_RT_LOCAL;
    return TC_OK;
}

/* Same-node peers are reached over shared memory unless TC_SHM=0. The shm
 * context is created even when no peer shares the node: it costs no segment
 * until a peer connects. Its address is published beside the tcp one. */
static tc_status_t world_open_shm(tc_rt_world_t *world, const tc_tp_ctx_params_t *params)
{
    bool use;
    tc_status_t st = tc_config_bool("TC_SHM", true, &use);
    if (st != TC_OK || !use)
        return st;
    unsigned char addr[TC_RT_ADDR_MAX];
    size_t len;
    if ((st = tc_tp_ctx_create(&tc_tp_shm_ops, params, &world->shm)) != TC_OK ||
        (st = tc_tp_addr_pack(world->shm, addr, sizeof(addr), &len)) != TC_OK ||
        (st = tc_boot_put(world->boot, TC_RT_SHM_ADDR_KEY, addr, len)) != TC_OK)
        return st;
    return TC_OK;
}

/* Peers on other nodes are reached over InfiniBand/RoCE when this node has a
 * device (TC_IB=auto, the default; 1: an error without one; 0: never). With
 * no device the context is refused at once and tcp carries everything. */
static tc_status_t world_open_ib(tc_rt_world_t *world, const tc_tp_ctx_params_t *params)
{
    static const char *const modes[] = {"0", "1", "auto", NULL};
    int mode;
    tc_status_t st = tc_config_enum("TC_IB", modes, 2, &mode);
    if (st != TC_OK || mode == 0)
        return st;
    unsigned char addr[TC_RT_ADDR_MAX];
    size_t len;
    st = tc_tp_ctx_create(&tc_tp_ib_ops, params, &world->ib);
    if (st != TC_OK) {
        if (mode == 1)
            return st;
        tc_log_info(TC_SUBSYS_RUNTIME, "no ib: %s; other nodes over tcp", tc_last_error());
        world->ib = NULL;
        return TC_OK;
    }
    if ((st = tc_tp_addr_pack(world->ib, addr, sizeof(addr), &len)) != TC_OK ||
        (st = tc_boot_put(world->boot, TC_RT_IB_ADDR_KEY, addr, len)) != TC_OK)
        return st;
    return TC_OK;
}

static tc_status_t world_create(tc_boot_kind_t boot, const tc_boot_kv_params_t *kv,
                                const tc_hints_t *hints, uint64_t deadline,
                                tc_rt_world_t **world_p);

/* Creation runs with this thread marked as creating, so tc_comm_create_abort()
 * from another thread or a signal handler ends its bootstrap waits. */
tc_status_t tc_rt_world_create(tc_boot_kind_t boot, const tc_boot_kv_params_t *kv,
                               const tc_hints_t *hints, uint64_t deadline, tc_rt_world_t **world_p)
{
    tc_boot_creation_begin();
    tc_status_t st = world_create(boot, kv, hints, deadline, world_p);
    tc_boot_creation_end();
    return st;
}

/* TC_ALGO_ALPHA_* ... (the cost model) and TC_ALGO_<COLL>: each name must be
 * an algorithm of that collective (whether it applies to the rank count is
 * the operation's to say). */
static tc_status_t world_check_algo_env(void)
{
    tc_algo_model_t model;
    tc_status_t st = tc_algo_model_get(&model);
    size_t n;
    const tc_algo_desc_t *t = tc_algo_table(&n);
    for (int c = 0; c < TC_COLL_COUNT && st == TC_OK; c++) {
        char var[64], names[512] = "";
        snprintf(var, sizeof(var), "TC_ALGO_%s", tc_coll_name((tc_coll_t)c));
        for (char *v = var; *v; v++)
            *v = (char)toupper((unsigned char)*v);
        const char *want = tc_config_string(var, NULL);
        if (!want || !*want)
            continue;
        int found = 0;
        size_t len = 0;
        for (size_t i = 0; i < n && !found; i++) {
            if (t[i].coll != (tc_coll_t)c)
                continue;
            found = strcmp(t[i].name, want) == 0;
            if (len < sizeof(names))
                len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s", len ? ", " : "",
                                        t[i].name);
        }
        if (!found)
            st = tc_error_set(TC_ERR_CONFIG,
                              "%s=\"%s\": unknown algorithm (accepted: %s)", var, want,
                              names[0] ? names : "none yet");
    }
    return st;
}

static tc_status_t world_create(tc_boot_kind_t boot, const tc_boot_kv_params_t *kv,
                                const tc_hints_t *hints, uint64_t deadline,
                                tc_rt_world_t **world_p)
{
    tc_rt_world_t *world = calloc(1, sizeof(*world));
    if (!world)
        return tc_error_set(TC_ERR_NO_MEMORY, "allocating the world");
    world->refs = 1;
    world->next_comm_id = 1; /* 0 is the world communicator */
    tc_hmap_init(&world->eps);
    tc_hmap_init(&world->locality);
    pthread_mutex_init(&world->mu, NULL);
    pthread_cond_init(&world->cv, NULL);
    /* variables read later (by a device's context, the first log or the
     * first operation) are checked before joining the job: every TC_IB_*
     * whatever the hardware and TC_IB, TC_LOG, the cost model's and the
     * TC_ALGO_<COLL> names */
    tc_status_t st = tc_tp_ib_config_check();
    if (st != TC_OK || (st = tc_log_check_env()) != TC_OK ||
        (st = world_check_algo_env()) != TC_OK)
        goto err;
    if (!kv && boot == TC_BOOT_AUTO) {
        static const char *const kinds[] = {"auto", "pmix", "self", "env", NULL};
        int kind;
        if ((st = tc_config_enum("TC_BOOTSTRAP", kinds, TC_BOOT_AUTO, &kind)) != TC_OK)
            goto err;
        boot = (tc_boot_kind_t)kind;
    }
    if ((st = kv ? tc_boot_kv_create(kv, deadline, &world->boot)
                 : tc_boot_create(boot, deadline, &world->boot)) != TC_OK)
        goto err;
    tc_log_set_rank(world->boot->rank);
    if ((st = world_spin(world)) != TC_OK || (st = tc_rt_hb_init(world)) != TC_OK ||
        (st = tc_rt_fault_init(world)) != TC_OK)
        goto err;

    /* The job secret comes from the bootstrap (docs/security.md): TC_JOB_SECRET, or PMIx
     * rank 0's; none under the torchrun environment without TC_JOB_SECRET, which the
     * bootstrap has warned about: the transports then authenticate with the public key. */
    tc_tp_ctx_params_t tp_params = TC_TP_CTX_PARAMS_INIT;
    tp_params.self_id = (uint64_t)world->boot->rank;
    tp_params.secret = world->boot->secret;
    tp_params.secret_len = world->boot->secret_len;
    tp_params.hints = hints;
    if ((st = tc_tp_ctx_create(&tc_tp_tcp_ops, &tp_params, &world->tp)) != TC_OK ||
        (st = world_open_shm(world, &tp_params)) != TC_OK ||
        (st = world_open_ib(world, &tp_params)) != TC_OK)
        goto err;

    unsigned char addr[TC_RT_ADDR_MAX];
    size_t addr_len;
    if ((st = tc_tp_addr_pack(world->tp, addr, sizeof(addr), &addr_len)) != TC_OK ||
        (st = tc_boot_put(world->boot, TC_RT_ADDR_KEY, addr, addr_len)) != TC_OK ||
        (st = world_publish_node(world)) != TC_OK || (st = world_publish_proc(world)) != TC_OK ||
        (st = tc_boot_fence(world->boot, deadline)) != TC_OK)
        goto err;
    if (world->hb_ns) {
        /* heartbeats are sent by the progress thread, whatever the caller does */
        if ((st = tc_rt_world_go_threaded(world)) != TC_OK)
            goto err;
        pthread_mutex_unlock(&world->mu);
    }
    *world_p = world;
    return TC_OK;

err:
    tc_rt_world_release(world);
    return st;
}

static void world_close_eps(tc_rt_world_t *world)
{
    size_t iter = 0;
    uint64_t peer;
    void *ep;
    while (tc_hmap_next(&world->eps, &iter, &peer, &ep))
        tc_tp_ep_close(ep);
    tc_hmap_free(&world->eps);
    if (world->self_ep)
        tc_tp_ep_close(world->self_ep);
}

/* Drop one reference; the last one frees. Called with the lock held (when
 * threaded), which it releases. */
void tc_rt_world_release(tc_rt_world_t *world)
{
    if (!world)
        return;
    int threaded = world->threaded;
    if (--world->refs > 0) {
        if (threaded)
            pthread_mutex_unlock(&world->mu);
        return;
    }
    if (threaded) {
        world->stop = 1;
        pthread_cond_signal(&world->cv);
        pthread_mutex_unlock(&world->mu);
        pthread_join(world->thread, NULL);
    }
    world_close_eps(world);
    tc_rt_hb_free(world);
    tc_hmap_free(&world->locality);
    free(world->failed);
    if (world->tp)
        tc_tp_ctx_destroy(world->tp);
    if (world->shm)
        tc_tp_ctx_destroy(world->shm);
    if (world->self)
        tc_tp_ctx_destroy(world->self);
    if (world->ib)
        tc_tp_ctx_destroy(world->ib);
    tc_boot_destroy(world->boot);
    pthread_cond_destroy(&world->cv);
    pthread_mutex_destroy(&world->mu);
    free(world);
}

/* Drive the running asynchronous works while no caller does. Polls while
 * there is progress, naps (growing from 10 us to 1 ms, without the lock) when
 * there is none, and sleeps on the condition while nothing is asynchronous. */
static void *world_progress_main(void *arg)
{
    tc_rt_world_t *world = arg;
    unsigned nap_us = 0, passes = 0;
    pthread_mutex_lock(&world->mu);
    while (!world->stop) {
        if (world->nasync == 0 && world->hb_ns) {
            /* nothing asynchronous, but heartbeats are due every period */
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            uint64_t ns = (uint64_t)until.tv_nsec + world->hb_ns / 4;
            until.tv_sec += (time_t)(ns / 1000000000ull);
            until.tv_nsec = (long)(ns % 1000000000ull);
            pthread_cond_timedwait(&world->cv, &world->mu, &until);
            tc_rt_world_progress(world);
            tc_rt_hb_tick(world, tc_time_ns());
            nap_us = 0;
            continue;
        }
        if (world->nasync == 0) {
            pthread_cond_wait(&world->cv, &world->mu);
            nap_us = 0;
            continue;
        }
        if (tc_rt_world_progress(world) > 0) {
            nap_us = 0;
            if (++passes % 64 == 0) { /* let callers in */
                pthread_mutex_unlock(&world->mu);
                sched_yield();
                pthread_mutex_lock(&world->mu);
            }
            continue;
        }
        nap_us = nap_us ? (nap_us * 2 > 1000 ? 1000 : nap_us * 2) : 10;
        pthread_mutex_unlock(&world->mu);
        struct timespec ts = {0, (long)nap_us * 1000};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&world->mu);
    }
    pthread_mutex_unlock(&world->mu);
    return NULL;
}

tc_status_t tc_rt_world_go_threaded(tc_rt_world_t *world)
{
    if (world->threaded)
        return TC_OK;
    /* The caller holds no lock yet (none is taken before this point); from now
     * on every entry point locks, so take it for the caller. */
    world->threaded = 1;
    pthread_mutex_lock(&world->mu);
    int rc = pthread_create(&world->thread, NULL, world_progress_main, world);
    if (rc != 0) {
        world->threaded = 0;
        pthread_mutex_unlock(&world->mu);
        return tc_error_set(TC_ERR_SYSTEM, "starting the progress thread: %s", strerror(rc));
    }
    tc_log_debug(TC_SUBSYS_RUNTIME, "progress thread started");
    return TC_OK;
}

static tc_status_t world_self_ep(tc_rt_world_t *world, tc_tp_ep_t **ep_p)
{
    if (!world->self_ep) {
        unsigned char addr[TC_RT_ADDR_MAX];
        size_t len;
        tc_tp_ctx_params_t params = TC_TP_CTX_PARAMS_INIT;
        params.self_id = (uint64_t)world->boot->rank;
        tc_status_t st;
        if (!world->self &&
            (st = tc_tp_ctx_create(&tc_tp_self_ops, &params, &world->self)) != TC_OK)
            return st;
        if ((st = tc_tp_addr_pack(world->self, addr, sizeof(addr), &len)) != TC_OK ||
            (st = tc_tp_ep_connect(world->self, params.self_id, addr, len, &world->self_ep)) !=
                TC_OK)
            return st;
    }
    *ep_p = world->self_ep;
    return TC_OK;
}

tc_status_t tc_rt_world_ep(tc_rt_world_t *world, int peer, uint64_t deadline_ns, tc_tp_ep_t **ep_p)
{
    tc_tp_ep_t *ep = tc_hmap_get(&world->eps, (uint64_t)peer);
    if (ep) {
        *ep_p = ep;
        return TC_OK;
    }
    if (peer == world->boot->rank)
        return world_self_ep(world, ep_p);
    if (peer < 0 || peer >= world->boot->size)
        return tc_error_set(TC_ERR_INTERNAL, "world rank %d does not exist (size %d)", peer,
                            world->boot->size);
    unsigned char addr[TC_RT_ADDR_MAX];
    size_t len;
    int same_node;
    tc_status_t st = tc_rt_world_same_node(world, peer, deadline_ns, &same_node);
    if (st != TC_OK)
        return st;
    ep = NULL;
    if (same_node && world->shm) {
        /* Both sides of a pair connect (every message has a sender and a
         * receiver); a peer shm cannot reach (another pid namespace) takes tcp. */
        st = tc_boot_get(world->boot, peer, TC_RT_SHM_ADDR_KEY, addr, sizeof(addr), &len,
                         deadline_ns);
        if (st == TC_OK)
            st = tc_tp_ep_connect(world->shm, (uint64_t)peer, addr, len, &ep);
        if (st == TC_ERR_UNSUPPORTED || st == TC_ERR_NOT_FOUND)
            tc_log_info(TC_SUBSYS_RUNTIME, "rank %d over tcp: %s", peer, tc_last_error());
        else if (st != TC_OK)
            return st;
    }
    if (!same_node && world->ib) {
        /* another node, and both have a device: verbs; a peer without one: tcp */
        st = tc_boot_get(world->boot, peer, TC_RT_IB_ADDR_KEY, addr, sizeof(addr), &len,
                         deadline_ns);
        if (st == TC_OK)
            st = tc_tp_ep_connect(world->ib, (uint64_t)peer, addr, len, &ep);
        if (st == TC_ERR_NOT_FOUND || st == TC_ERR_UNSUPPORTED)
            tc_log_info(TC_SUBSYS_RUNTIME, "rank %d over tcp: %s", peer, tc_last_error());
        else if (st != TC_OK)
            return st;
    }
    if (!ep) {
        if ((st = tc_boot_get(world->boot, peer, TC_RT_ADDR_KEY, addr, sizeof(addr), &len,
                              deadline_ns)) != TC_OK ||
            (st = tc_tp_ep_connect(world->tp, (uint64_t)peer, addr, len, &ep)) != TC_OK)
            return st;
    }
    if ((st = tc_hmap_put(&world->eps, (uint64_t)peer, ep)) != TC_OK) {
        tc_tp_ep_close(ep);
        return st;
    }
    if (ep->ops == &tc_tp_shm_ops)
        world->shm_eps++;
    else if (ep->ops == &tc_tp_tcp_ops)
        world->tcp_eps++;
    else
        world->ib_eps++;
    tc_log_debug(TC_SUBSYS_RUNTIME, "connected to rank %d (%s node) over %s", peer,
                 same_node ? "same" : "another", ep->ops->name);
    tc_rt_hb_peer(world, peer, ep);
    *ep_p = ep;
    return TC_OK;
}

/* Without a tcp endpoint, tcp only has connections to accept: look at it
 * one pass in TC_RT_TCP_IDLE_PASSES (its progress is a system call). */
#define TC_RT_TCP_IDLE_PASSES 64

int tc_rt_world_progress_tp(tc_rt_world_t *world)
{
    int n = 0;
    if (world->tcp_eps > 0 || ++world->tcp_idle_passes >= TC_RT_TCP_IDLE_PASSES) {
        world->tcp_idle_passes = 0;
        n = tc_tp_progress(world->tp);
    }
    if (n >= 0 && world->shm) {
        int m = tc_tp_progress(world->shm);
        n = m < 0 ? m : n + m;
    }
    if (n >= 0 && world->self) {
        int m = tc_tp_progress(world->self);
        n = m < 0 ? m : n + m;
    }
    if (n >= 0 && world->ib) {
        int m = tc_tp_progress(world->ib);
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
    if (world->shm_eps > 0) {
        if (idle_ns < TC_RT_YIELD_NS)
            sched_yield();
        else
            tc_tp_wait(world->shm, max_ms < 1 ? max_ms : 1);
        return;
    }
    int cap = world->threaded ? 1 : 100;
    tc_tp_wait(world->tp, max_ms < cap ? max_ms : cap);
}
