/* The world: what every communicator of a job shares in this process. This
 * file joins the job (the bootstrap), describes this node and publishes what
 * peers need; the transports and endpoints are world_ep.c's. */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "world.h"
#include "tcomms/base/log.h"
#include "tcomms/algo/tuning.h"
#include "tcomms/base/time.h"
#include "tcomms/topo/topo.h"
#include "tcomms/transport/auth.h"
#include "tcomms/transport/ib.h"

#define TC_RT_NODE_KEY "tc.node.id" /* 8 bytes: which node a rank runs on */
#define TC_RT_DESC_KEY                                                                             \
    "tc.topo.desc"                /* the node descriptor, for tools and topology-aware algorithms */
#define TC_RT_PROC_KEY "tc.proc"  /* a world_proc_t: for failure reports and heartbeats */
enum { WORLD_UNKNOWN = 0, WORLD_REMOTE = 1, WORLD_LOCAL = 2 }; /* world->locality */

typedef struct {
    int32_t pid;
    char host[TC_RT_HOST_MAX];
} world_proc_t;

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
    world_proc_t proc;
    memset(&proc, 0, sizeof(proc));
    proc.pid = (int32_t)getpid();
    snprintf(proc.host, sizeof(proc.host), "%s", world->boot->host);
    return tc_boot_put(world->boot, TC_RT_PROC_KEY, &proc, sizeof(proc));
}

tc_status_t tc_rt_world_proc(tc_rt_world_t *world, int rank, uint64_t deadline_ns, int *pid_p,
                             char host[TC_RT_HOST_MAX])
{
    world_proc_t proc;
    size_t len, n = 0;
    tc_status_t st =
        tc_boot_get(world->boot, rank, TC_RT_PROC_KEY, &proc, sizeof(proc), &len, deadline_ns);
    if (st != TC_OK)
        return st;
    /* a host name of printable characters, ended within the record, and a pid: a store
     * that another program wrote into (tc_comm_create_from_store) is not trusted further */
    while (len == sizeof(proc) && n < sizeof(proc.host) && isgraph((unsigned char)proc.host[n]))
        n++;
    if (len != sizeof(proc) || n == 0 || n == sizeof(proc.host) || proc.host[n] != '\0' ||
        proc.pid <= 0)
        return tc_error_set(TC_ERR_PROTOCOL,
                            "rank %d's '%s' is not a process record (%zu bytes; a pid and a "
                            "host name of printable characters)",
                            rank, TC_RT_PROC_KEY, len);
    *pid_p = proc.pid;
    memcpy(host, proc.host, n + 1);
    return TC_OK;
}

tc_status_t tc_rt_world_same_node(tc_rt_world_t *world, int peer, uint64_t deadline_ns, int *same_p)
{
    if (peer < 0 || peer >= world->boot->size)
        return tc_error_set(TC_ERR_INTERNAL, "world rank %d does not exist (size %d)", peer,
                            world->boot->size);
    if (world->locality[peer] == WORLD_UNKNOWN) {
        uint64_t id;
        size_t len;
        tc_status_t st =
            tc_boot_get(world->boot, peer, TC_RT_NODE_KEY, &id, sizeof(id), &len, deadline_ns);
        if (st == TC_OK && len != sizeof(id))
            st = tc_error_set(TC_ERR_PROTOCOL, "rank %d published a node id of %zu bytes", peer,
                              len);
        if (st != TC_OK)
            return st;
        world->locality[peer] = id == world->node_id ? WORLD_LOCAL : WORLD_REMOTE;
    }
    *same_p = world->locality[peer] == WORLD_LOCAL;
    return TC_OK;
}

/* TC_ALGO_ALPHA_* ... (the cost model), TC_TUNING_FILE, TC_ALGO_RULES and
 * TC_ALGO_<COLL>: each name must be an algorithm of that collective (whether
 * it applies to the rank count is the operation's to say). */
static tc_status_t world_check_algo_env(void)
{
    tc_algo_model_t model;
    bool rules;
    tc_status_t st = tc_algo_model_get(&model);
    if (st == TC_OK)
        st = tc_config_bool("TC_ALGO_RULES", true, &rules);
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

/* Whether @p name (up to @p len bytes) is a TC_ALGO_* variable tcomms reads: TC_ALGO_RULES, the
 * cost model's, or TC_ALGO_<COLLECTIVE> (upper case, as algo/src/cost.c reads it). */
static bool world_algo_var_known(const char *name, size_t len)
{
    if (len == strlen("TC_ALGO_RULES") && strncmp(name, "TC_ALGO_RULES", len) == 0)
        return true;
    for (int p = 0; p < TC_ALGO_PARAM_COUNT; p++) {
        const char *v = tc_algo_param_env((tc_algo_param_t)p);
        if (v && strlen(v) == len && strncmp(name, v, len) == 0)
            return true;
    }
    for (int c = 0; c < TC_COLL_COUNT; c++) {
        const char *coll = tc_coll_name((tc_coll_t)c);
        size_t k = 0;
        while (coll[k] && 8 + k < len && name[8 + k] == (char)toupper((unsigned char)coll[k]))
            k++;
        if (coll[k] == '\0' && 8 + k == len)
            return true;
    }
    return false;
}

extern char **environ;

/* A TC_ALGO_* variable that tcomms does not read is a typo whose choice would be silently lost
 * (TC_ALGO_ALLREDUCE=ring for TC_ALGO_ALL_REDUCE): TC_ERR_CONFIG naming it. */
static tc_status_t world_check_algo_names(void)
{
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
        if (strncmp(*e, "TC_ALGO_", 8) != 0 || world_algo_var_known(*e, len))
            continue;
        char names[256] = "";
        size_t used = 0;
        for (int c = 0; c < TC_COLL_COUNT && used < sizeof(names); c++) {
            char up[32];
            snprintf(up, sizeof(up), "%s", tc_coll_name((tc_coll_t)c));
            for (char *v = up; *v; v++)
                *v = (char)toupper((unsigned char)*v);
            used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s", c ? ", " : "", up);
        }
        return tc_error_set(TC_ERR_CONFIG,
                            "%.*s is set, but tcomms reads no variable of that name: an "
                            "algorithm is chosen by TC_ALGO_<COLLECTIVE> with one of %s (tc-info "
                            "lists every variable it reads)",
                            (int)(len > 64 ? 64 : len), *e, names);
    }
    return TC_OK;
}

/* The run's id (world->run_id): a MAC under the job secret of a fixed transcript, which tells
 * nothing of the secret, is the same on every rank, and changes with the secret (tcrun and PMIx
 * draw one per job). */
static tc_status_t world_run_id(tc_rt_world_t *world)
{
    const tc_boot_t *boot = world->boot;
    world->run_id[0] = '\0';
    if (boot->secret_len == 0)
        return TC_OK;
    tc_auth_key_t key;
    tc_status_t st = tc_auth_key_init(&key, boot->secret, boot->secret_len);
    if (st != TC_OK)
        return st;
    tc_auth_transcript_t t = {.purpose = "fr/run"};
    unsigned char mac[TC_AUTH_MAC_LEN];
    tc_auth_mac(&key, TC_AUTH_INITIATOR, &t, mac);
    tc_auth_key_wipe(&key);
    for (size_t i = 0; i < 8; i++)
        snprintf(world->run_id + 2 * i, 3, "%02x", mac[i]);
    return TC_OK;
}

tc_status_t tc_rt_world_config_check(void)
{
    tc_status_t st = tc_tp_ib_config_check();
    if (st == TC_OK)
        st = tc_log_check_env();
    if (st == TC_OK)
        st = world_check_algo_env();
    if (st == TC_OK)
        st = world_check_algo_names();
    return st;
}

tc_status_t tc_rt_world_create(tc_boot_kind_t boot, const tc_boot_kv_params_t *kv,
                               const tc_hints_t *hints, uint64_t deadline, tc_rt_world_t **world_p)
{
    tc_rt_world_t *world = calloc(1, sizeof(*world));
    if (!world)
        return tc_error_set(TC_ERR_NO_MEMORY, "allocating the world");
    world->refs = 1;
    pthread_mutex_init(&world->mu, NULL);
    pthread_cond_init(&world->cv, NULL);
    tc_status_t st = TC_OK;
    if (!kv && boot == TC_BOOT_AUTO) {
        if ((st = tc_boot_kind_from_env(&boot)) != TC_OK)
            goto err;
    }
    if ((st = kv ? tc_boot_kv_create(kv, deadline, &world->boot)
                 : tc_boot_create(boot, deadline, &world->boot)) != TC_OK)
        goto err;
    tc_log_set_rank(world->boot->rank);
    if ((st = world_run_id(world)) != TC_OK)
        goto err;
    size_t n = (size_t)world->boot->size;
    world->eps = calloc(n, sizeof(tc_tp_ep_t *));
    world->ep_backend = calloc(n, sizeof(tc_rt_backend_t *));
    world->locality = calloc(n, 1);
    world->ep_gen = calloc(n, sizeof(uint32_t));
    if (!world->eps || !world->ep_backend || !world->locality || !world->ep_gen) {
        st = tc_error_set(TC_ERR_NO_MEMORY, "endpoint tables of %zu ranks", n);
        goto err;
    }
    if ((st = tc_rt_world_open_backends(world, hints)) != TC_OK)
        goto err;
    *world_p = world;
    return TC_OK;

err:
    tc_rt_world_free(world);
    return st;
}

tc_status_t tc_rt_world_fence(tc_rt_world_t *world, uint64_t deadline)
{
    tc_status_t st;
    if ((st = world_publish_node(world)) != TC_OK || (st = world_publish_proc(world)) != TC_OK ||
        (st = tc_boot_fence(world->boot, deadline)) != TC_OK)
        return st;
    return TC_OK;
}

void tc_rt_world_free(tc_rt_world_t *world)
{
    if (!world)
        return;
    tc_rt_world_close_backends(world);
    free(world->eps);
    free(world->ep_backend);
    free(world->locality);
    free(world->ep_gen);
    tc_boot_destroy(world->boot);
    pthread_cond_destroy(&world->cv);
    pthread_mutex_destroy(&world->mu);
    free(world);
}
