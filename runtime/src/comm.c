/* The runtime communicator: join the job, publish the transport address,
 * connect endpoints on first use, and run collectives. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <unistd.h>

#include "comm_impl.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"
#include "tcomms/topo/topo.h"
#include "tcomms/transport/shm.h"
#include "tcomms/transport/tcp.h"

#define TC_RT_ADDR_KEY "tc.tcp.addr"
#define TC_RT_SHM_ADDR_KEY "tc.shm.addr"
#define TC_RT_YIELD_NS 5000000ull /* idle time spent yielding before napping */
#define TC_RT_NODE_KEY "tc.node.id"   /* 8 bytes: which node a rank runs on */
#define TC_RT_DESC_KEY "tc.topo.desc" /* the node descriptor, for tools and topology-aware algorithms */
#define TC_RT_LOCAL ((void *)2)
#define TC_RT_REMOTE ((void *)1)
#define TC_RT_ADDR_MAX 256
#define TC_RT_DEFAULT_TIMEOUT_S 600

static tc_status_t comm_timeout(const tc_rt_comm_params_t *params, int64_t *timeout_ms_p)
{
    if (params->timeout_ms > 0) {
        *timeout_ms_p = params->timeout_ms;
        return TC_OK;
    }
    int64_t s;
    tc_status_t st = tc_config_int("TC_TIMEOUT_S", TC_RT_DEFAULT_TIMEOUT_S, 1, 86400 * 365, &s);
    if (st == TC_OK)
        *timeout_ms_p = s * 1000;
    return st;
}

/* Polling before sleeping cuts latency when every rank has a core of its own;
 * when ranks outnumber cores it steals the core the peer needs, so sleep at
 * once. TC_SPIN_US overrides the choice. */
static tc_status_t comm_spin(tc_rt_comm_t *comm)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int oversubscribed = cores > 0 && comm->boot->local_size > cores;
    int64_t us;
    tc_status_t st = tc_config_int("TC_SPIN_US", oversubscribed ? 0 : 50, 0, 1000000, &us);
    if (st != TC_OK)
        return st;
    comm->spin_ns = (uint64_t)us * 1000;
    tc_log_info(TC_SUBSYS_RUNTIME, "comm '%s': %d local ranks on %ld cores: poll %lld us before "
                "sleeping", comm->name, comm->boot->local_size, cores, (long long)us);
    return TC_OK;
}

/* Describe this node and publish it: its id (what locality is decided on)
 * and its full descriptor. Topology discovery degrades, never fails, but a
 * broken override (TC_TOPO_XML, TC_TOPO_SYNTHETIC) is an error. */
static tc_status_t comm_publish_node(tc_rt_comm_t *comm)
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
        (st = tc_boot_put(comm->boot, TC_RT_DESC_KEY, desc, len)) != TC_OK ||
        (st = tc_boot_put(comm->boot, TC_RT_NODE_KEY, &node->node_id, sizeof(node->node_id))) !=
            TC_OK)
        goto out;
    comm->node_id = node->node_id;
    tc_log_info(TC_SUBSYS_RUNTIME, "comm '%s': node %s (id %016llx): %d cores, %d GPUs, %d NICs",
                comm->name, node->hostname, (unsigned long long)node->node_id, node->ncores,
                node->ngpus, node->nnics);
out:
    free(node);
    free(desc);
    return st;
}

tc_status_t tc_rt_comm_same_node(tc_rt_comm_t *comm, int peer, uint64_t deadline_ns, int *same_p)
{
    void *known = tc_hmap_get(&comm->locality, (uint64_t)peer);
    if (!known) {
        uint64_t id;
        size_t len;
        tc_status_t st = tc_boot_get(comm->boot, peer, TC_RT_NODE_KEY, &id, sizeof(id), &len,
                                     deadline_ns);
        if (st == TC_OK && len != sizeof(id))
            st = tc_error_set(TC_ERR_PROTOCOL, "rank %d published a node id of %zu bytes", peer,
                              len);
        if (st != TC_OK)
            return st;
        known = id == comm->node_id ? TC_RT_LOCAL : TC_RT_REMOTE;
        if ((st = tc_hmap_put(&comm->locality, (uint64_t)peer, known)) != TC_OK)
            return st;
        comm->local_peers_seen += known == TC_RT_LOCAL;
    }
    *same_p = known == TC_RT_LOCAL;
    return TC_OK;
}

/* Same-node peers are reached over shared memory unless TC_SHM=0. The shm
 * context is created even when no peer shares the node: it costs no segment
 * until a peer connects. Its address is published beside the tcp one. */
static tc_status_t comm_open_shm(tc_rt_comm_t *comm, const tc_tp_ctx_params_t *params)
{
    bool use;
    tc_status_t st = tc_config_bool("TC_SHM", true, &use);
    if (st != TC_OK || !use)
        return st;
    unsigned char addr[TC_RT_ADDR_MAX];
    size_t len;
    if ((st = tc_tp_ctx_create(&tc_tp_shm_ops, params, &comm->shm)) != TC_OK ||
        (st = tc_tp_addr_pack(comm->shm, addr, sizeof(addr), &len)) != TC_OK ||
        (st = tc_boot_put(comm->boot, TC_RT_SHM_ADDR_KEY, addr, len)) != TC_OK)
        return st;
    return TC_OK;
}

/* The secret that authenticates this job's connections: TC_JOB_SECRET when the
 * launcher provides one (tcrun does), else the bootstrap's job identity, which
 * at least keeps other jobs' and stale connections out. */
static void comm_secret(const tc_rt_comm_t *comm, char *buf, size_t cap)
{
    const char *s = tc_config_string("TC_JOB_SECRET", NULL);
    if (s && *s)
        snprintf(buf, cap, "%s", s);
    else
        snprintf(buf, cap, "tcomms:%s:%s:%d", comm->boot->launcher,
                 tc_config_string("PMIX_NAMESPACE", "self"), comm->size);
}

tc_status_t tc_rt_comm_create(const tc_rt_comm_params_t *params, tc_rt_comm_t **comm_p)
{
    tc_status_t st = tc_log_init();
    if (st != TC_OK)
        return st;
    tc_rt_comm_t *comm = calloc(1, sizeof(*comm));
    if (!comm)
        return tc_error_set(TC_ERR_NO_MEMORY, "comm create: allocating the communicator");
    snprintf(comm->name, sizeof(comm->name), "%s", params->name ? params->name : "world");
    tc_hints_init(&comm->hints);
    tc_hmap_init(&comm->eps);
    tc_hmap_init(&comm->locality);
    if (params->hints && (st = tc_hints_copy(&comm->hints, params->hints)) != TC_OK)
        goto err;
    if ((st = comm_timeout(params, &comm->timeout_ms)) != TC_OK)
        goto err;
    uint64_t deadline = tc_deadline_after_ms((uint64_t)comm->timeout_ms);

    tc_boot_kind_t boot = params->boot;
    if (boot == TC_BOOT_AUTO) {
        static const char *const kinds[] = {"auto", "pmix", "self", NULL};
        int kind;
        if ((st = tc_config_enum("TC_BOOTSTRAP", kinds, TC_BOOT_AUTO, &kind)) != TC_OK)
            goto err;
        boot = (tc_boot_kind_t)kind;
    }
    if ((st = tc_boot_create(boot, deadline, &comm->boot)) != TC_OK)
        goto err;
    comm->rank = comm->boot->rank;
    comm->size = comm->boot->size;
    tc_log_set_rank(comm->rank);

    if ((st = comm_spin(comm)) != TC_OK)
        goto err;

    char secret[256];
    comm_secret(comm, secret, sizeof(secret));
    tc_tp_ctx_params_t tp_params = TC_TP_CTX_PARAMS_INIT;
    tp_params.self_id = (uint64_t)comm->rank;
    tp_params.secret = secret;
    tp_params.secret_len = strlen(secret);
    tp_params.hints = &comm->hints;
    if ((st = tc_tp_ctx_create(&tc_tp_tcp_ops, &tp_params, &comm->tp)) != TC_OK ||
        (st = comm_open_shm(comm, &tp_params)) != TC_OK)
        goto err;

    unsigned char addr[TC_RT_ADDR_MAX];
    size_t addr_len;
    if ((st = tc_tp_addr_pack(comm->tp, addr, sizeof(addr), &addr_len)) != TC_OK ||
        (st = tc_boot_put(comm->boot, TC_RT_ADDR_KEY, addr, addr_len)) != TC_OK ||
        (st = comm_publish_node(comm)) != TC_OK ||
        (st = tc_boot_fence(comm->boot, deadline)) != TC_OK)
        goto err;

    tc_log_info(TC_SUBSYS_RUNTIME, "comm '%s': rank %d of %d on %s via %s, timeout %lld ms",
                comm->name, comm->rank, comm->size, comm->boot->host, comm->boot->launcher,
                (long long)comm->timeout_ms);
    *comm_p = comm;
    return TC_OK;

err:
    tc_error_prefix("comm '%s' create: ", comm->name);
    tc_rt_comm_destroy(comm);
    return st;
}

void tc_rt_comm_destroy(tc_rt_comm_t *comm)
{
    if (!comm)
        return;
    size_t iter = 0;
    uint64_t peer;
    void *ep;
    while (tc_hmap_next(&comm->eps, &iter, &peer, &ep))
        tc_tp_ep_close(ep);
    tc_hmap_free(&comm->eps);
    tc_hmap_free(&comm->locality);
    if (comm->tp)
        tc_tp_ctx_destroy(comm->tp);
    if (comm->shm)
        tc_tp_ctx_destroy(comm->shm);
    tc_boot_destroy(comm->boot);
    tc_rt_exec_free(&comm->exec);
    for (int i = 0; i < TC_RT_SCHED_CACHE; i++)
        if (comm->sched_cache[i].last_use)
            tc_sched_free(&comm->sched_cache[i].sched);
    tc_hints_free(&comm->hints);
    free(comm);
}

int tc_rt_comm_rank(const tc_rt_comm_t *comm)
{
    return comm->rank;
}

int tc_rt_comm_size(const tc_rt_comm_t *comm)
{
    return comm->size;
}

const char *tc_rt_comm_name(const tc_rt_comm_t *comm)
{
    return comm->name;
}

tc_status_t tc_rt_comm_ep(tc_rt_comm_t *comm, int peer, uint64_t deadline_ns, tc_tp_ep_t **ep_p)
{
    tc_tp_ep_t *ep = tc_hmap_get(&comm->eps, (uint64_t)peer);
    if (ep) {
        *ep_p = ep;
        return TC_OK;
    }
    if (peer == comm->rank || peer < 0 || peer >= comm->size)
        return tc_error_set(TC_ERR_INTERNAL, "comm '%s': schedule names peer %d (self %d, size %d)",
                            comm->name, peer, comm->rank, comm->size);
    unsigned char addr[TC_RT_ADDR_MAX];
    size_t len;
    int same_node;
    tc_status_t st = tc_rt_comm_same_node(comm, peer, deadline_ns, &same_node);
    if (st != TC_OK)
        return st;
    ep = NULL;
    if (same_node && comm->shm) {
        /* Both sides of a pair connect (every message has a sender and a
         * receiver); a peer shm cannot reach (another pid namespace) takes tcp. */
        st = tc_boot_get(comm->boot, peer, TC_RT_SHM_ADDR_KEY, addr, sizeof(addr), &len,
                         deadline_ns);
        if (st == TC_OK)
            st = tc_tp_ep_connect(comm->shm, (uint64_t)peer, addr, len, &ep);
        if (st == TC_ERR_UNSUPPORTED || st == TC_ERR_NOT_FOUND)
            tc_log_info(TC_SUBSYS_RUNTIME, "comm '%s': rank %d over tcp: %s", comm->name, peer,
                        tc_last_error());
        else if (st != TC_OK)
            return st;
    }
    if (!ep) {
        if ((st = tc_boot_get(comm->boot, peer, TC_RT_ADDR_KEY, addr, sizeof(addr), &len,
                              deadline_ns)) != TC_OK ||
            (st = tc_tp_ep_connect(comm->tp, (uint64_t)peer, addr, len, &ep)) != TC_OK)
            return st;
    }
    if ((st = tc_hmap_put(&comm->eps, (uint64_t)peer, ep)) != TC_OK) {
        tc_tp_ep_close(ep);
        return st;
    }
    comm->shm_eps += ep->ops == &tc_tp_shm_ops;
    tc_log_debug(TC_SUBSYS_RUNTIME, "comm '%s': connected to rank %d (%s node) over %s",
                 comm->name, peer, same_node ? "same" : "another", ep->ops->name);
    *ep_p = ep;
    return TC_OK;
}

int tc_rt_comm_progress(tc_rt_comm_t *comm)
{
    int n = tc_tp_progress(comm->tp);
    if (n >= 0 && comm->shm) {
        int m = tc_tp_progress(comm->shm);
        n = m < 0 ? m : n + m;
    }
    return n;
}

void tc_rt_comm_wait(tc_rt_comm_t *comm, int max_ms, uint64_t idle_ns)
{
    /* shm has no descriptor to sleep on. For the first milliseconds without
     * progress, yield the core (a peer that shares it gets to run, and we come
     * back at once); after that, nap in shm's wait, which backs off from 10 us
     * to 1 ms, so a long wait does not burn a core. */
    if (comm->shm_eps > 0) {
        if (idle_ns < TC_RT_YIELD_NS)
            sched_yield();
        else
            tc_tp_wait(comm->shm, max_ms < 1 ? max_ms : 1);
        return;
    }
    tc_tp_wait(comm->tp, max_ms < 100 ? max_ms : 100);
}

const char *tc_rt_op_what(const tc_rt_op_t *op, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s #%llu on comm '%s'", tc_coll_name(op->coll),
             (unsigned long long)op->seq, op->comm_name);
    return buf;
}

/* The schedule for (call, hint), from the cache, or chosen by the cost model
 * (which honours the hint and TC_ALGO_<COLLECTIVE>), built and cached. */
static tc_status_t comm_sched(tc_rt_comm_t *comm, const tc_rt_coll_t *call, const char *hint,
                              const tc_sched_t **sched_p)
{
    int in_place = call->sendbuf == call->recvbuf;
    size_t elem_size = tc_dtype_size(call->dtype);
    const char *key = hint ? hint : "";
    tc_rt_sched_entry_t *victim = &comm->sched_cache[0];
    for (int i = 0; i < TC_RT_SCHED_CACHE; i++) {
        tc_rt_sched_entry_t *e = &comm->sched_cache[i];
        if (e->last_use && e->coll == call->coll && e->count == call->count &&
            e->elem_size == elem_size && e->root == call->root && e->in_place == in_place &&
            strcmp(e->algo, key) == 0) {
            e->last_use = ++comm->sched_uses;
            *sched_p = &e->sched;
            return TC_OK;
        }
        if (e->last_use < victim->last_use)
            victim = e;
    }
    if (strlen(key) >= sizeof(victim->algo))
        return tc_error_set(TC_ERR_NOT_FOUND, "algorithm name '%.40s...' is too long", key);
    tc_algo_args_t args = {.coll = call->coll,
                           .nranks = comm->size,
                           .rank = comm->rank,
                           .root = call->root,
                           .count = call->count,
                           .in_place = in_place,
                           .ranks_per_node = comm->boot->local_size};
    const char *name;
    tc_sched_t sched = {0};
    tc_status_t st = tc_algo_select(&args, elem_size, hint, &name);
    if (st != TC_OK || (st = tc_algo_build(&args, name, &sched)) != TC_OK)
        return st;
    if (victim->last_use)
        tc_sched_free(&victim->sched);
    *victim = (tc_rt_sched_entry_t){.last_use = ++comm->sched_uses,
                                    .coll = call->coll,
                                    .count = call->count,
                                    .elem_size = elem_size,
                                    .root = call->root,
                                    .in_place = in_place,
                                    .sched = sched};
    strcpy(victim->algo, key);
    tc_log_debug(TC_SUBSYS_RUNTIME, "comm '%s': %s schedule %s for %llu elements, %u steps",
                 comm->name, tc_coll_name(call->coll), sched.algo,
                 (unsigned long long)call->count, sched.nsteps);
    *sched_p = &victim->sched;
    return TC_OK;
}

tc_status_t tc_rt_coll_run(tc_rt_comm_t *comm, const tc_rt_coll_t *call)
{
    tc_rt_op_t op = {call->coll, ++comm->seq, comm->name};
    char what[128];
    if (comm->broken != TC_OK)
        return tc_error_set(comm->broken, "%s: the communicator is unusable since an earlier "
                            "failure: %s", tc_rt_op_what(&op, what, sizeof(what)),
                            comm->broken_why);

    const char *algo = call->hints ? tc_hints_get(call->hints, "algo") : NULL;
    if (!algo)
        algo = tc_hints_get(&comm->hints, "algo");

    const tc_sched_t *sched = NULL;
    tc_status_t st = comm_sched(comm, call, algo, &sched);
    if (st != TC_OK) {
        tc_error_prefix("%s: ", tc_rt_op_what(&op, what, sizeof(what)));
        return st;
    }
    int64_t timeout = call->timeout_ms > 0 ? call->timeout_ms : comm->timeout_ms;
    uint64_t tag = (comm->comm_id << 48) | (op.seq & ((1ull << 48) - 1));
    return tc_rt_exec_run(comm, sched, call, tag, tc_deadline_after_ms((uint64_t)timeout), &op);
}
