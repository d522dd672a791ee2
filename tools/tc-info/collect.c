/* Gather the configuration in effect, the transports and the job's placement. */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "info.h"
#include "tcomms/base/config.h"
#include "tcomms/base/time.h"
#include "tcomms/kernels/cuda_reduce.h"
#include "tcomms/runtime/comm.h"
#include "tcomms/algo/schedule.h"
#include "tcomms/runtime/bootstrap.h"
#include "tcomms/tcomms.h"
#include "tcomms/transport/builtin.h"
#include "tcomms/transport/ib.h"
#include "tcomms/transport/tcp.h"
#include "tcomms/transport/transport.h"

extern char **environ;

#define TCI_KEY "tc.topo.desc"

/* The TC_* variables tcomms reads, and how tc-info shows them: parsed here (int, double, enum),
 * hidden (secret), or as the text the library checks when a communicator is made (text, path).
 * Besides these, TC_ALGO_<COLLECTIVE> and TC_<TRANSPORT> (tci_family). tc_info_test sets every
 * documented one: a variable missing here was reported as a typo. */
static const struct {
    const char *name;
    const char *type;
} tci_known[] = {
    {"TC_LOG", "string"},
    {"TC_LOG_FILE", "path"},
    {"TC_TIMEOUT_S", "int"},
    {"TC_BOOTSTRAP", "enum"},
    {"TC_SOCKET_IFNAME", "string"},
    {"TC_TOPO_XML", "path"},
    {"TC_TOPO_SYNTHETIC", "string"},
    {"TC_ALGO_ALL_REDUCE", "string"},
    {"TC_TUNING_FILE", "path"},
    {"TC_ALGO_ALPHA_INTRA_US", "double"},
    {"TC_ALGO_ALPHA_INTER_US", "double"},
    {"TC_ALGO_BETA_INTRA_US", "double"},
    {"TC_ALGO_BETA_INTER_US", "double"},
    {"TC_ALGO_GAMMA_US", "double"},
    {"TC_ALGO_OVERHEAD_US", "double"},
    {"TC_JOB_SECRET", "secret"},
    {"TC_LAUNCHER", "string"},
    {"TC_ALGO_RULES", "text"},
    {"TC_BOOT_LINGER_S", "text"},
    {"TC_CHECK", "text"},
    {"TC_COPY", "text"},
    {"TC_CUDA_PLUGIN", "path"},
    {"TC_FAULT_INJECT", "text"},
    {"TC_FR_DIR", "path"},
    {"TC_FR_SIZE", "text"},
    {"TC_HEARTBEAT_MISSES", "text"},
    {"TC_HEARTBEAT_MS", "text"},
    {"TC_IB_DEVICE", "text"},
    {"TC_IB_KEEPALIVE_MS", "text"},
    {"TC_IB_PORT", "text"},
    {"TC_IB_REG_CACHE", "text"},
    {"TC_IB_REG_CACHE_MAX", "text"},
    {"TC_SHM_CELLS", "text"},
    {"TC_SHM_CELL_SIZE", "text"},
    {"TC_SHM_CMA", "text"},
    {"TC_SHM_FULL_PAIRS", "text"},
    {"TC_SHM_LIVENESS_MS", "text"},
    {"TC_SHRINK_DENSE_MAX", "text"},
    {"TC_SMALL_MAX", "text"},
    {"TC_SOCKET_HANDSHAKE_TIMEOUT_MS", "text"},
    {"TC_SOCKET_NSOCKS", "text"},
    {"TC_SOCKET_RAIL_TIMEOUT_MS", "text"},
    {"TC_SOCKET_STRIPE_MIN", "text"},
    {"TC_SPIN_US", "text"},
    {"TC_STORE_PORT", "text"},
    {"TC_WIN_POOL", "text"},
};

/* TC_ALGO_<COLLECTIVE> (upper case, as the library reads it) or TC_<TRANSPORT> of a registered
 * backend (TC_SHM, TC_TCP, TC_IB, ...). */
static bool tci_family(const char *name)
{
    if (strncmp(name, "TC_ALGO_", 8) == 0)
        for (int c = 0; c < TC_COLL_COUNT; c++) {
            const char *coll = tc_coll_name((tc_coll_t)c);
            size_t k = 0;
            while (coll[k] && name[8 + k] == (char)toupper((unsigned char)coll[k]))
                k++;
            if (coll[k] == '\0' && name[8 + k] == '\0')
                return true;
        }
    const tc_tp_ops_t *ops[16];
    int n = tc_tp_register_builtin() == TC_OK ? tc_tp_registered(ops, NULL, 16) : 0;
    for (int i = 0; i < n && i < 16; i++)
        if (strcasecmp(name + 3, ops[i]->name) == 0)
            return true;
    return false;
}

static void tci_parse_var(tci_var_t *v, const char *value)
{
    size_t i;

    v->type = NULL;
    for (i = 0; i < sizeof(tci_known) / sizeof(tci_known[0]); i++) {
        if (strcmp(v->name, tci_known[i].name) == 0) {
            v->type = tci_known[i].type;
        }
    }
    if (v->type == NULL && tci_family(v->name))
        v->type = "text";
    if (v->type != NULL && strcmp(v->type, "secret") == 0) {
        snprintf(v->value, sizeof(v->value), "(hidden, %zu bytes)", strlen(value));
        snprintf(v->parsed, sizeof(v->parsed), "(hidden, %zu bytes)", strlen(value));
        return;
    }
    snprintf(v->value, sizeof(v->value), "%s", value);
    if (v->type == NULL) {
        snprintf(v->error, sizeof(v->error), "not a variable tcomms reads (a typo?)");
    } else if (strcmp(v->type, "int") == 0) {
        int64_t x;
        if (tc_config_int(v->name, 0, 1, 86400 * 365, &x) == TC_OK) {
            snprintf(v->parsed, sizeof(v->parsed), "%lld", (long long)x);
        } else {
            snprintf(v->error, sizeof(v->error), "%s", tc_last_error());
        }
    } else if (strcmp(v->type, "double") == 0) {
        double x;
        if (tc_config_double(v->name, 0, 0, 1e9, &x) == TC_OK) {
            snprintf(v->parsed, sizeof(v->parsed), "%g", x);
        } else {
            snprintf(v->error, sizeof(v->error), "%s", tc_last_error());
        }
    } else if (strcmp(v->type, "enum") == 0) {
        tc_boot_kind_t k;
        if (tc_boot_kind_from_env(&k) == TC_OK) {
            snprintf(v->parsed, sizeof(v->parsed), "%s", tc_boot_kind_names[k]);
        } else {
            snprintf(v->error, sizeof(v->error), "%s", tc_last_error());
        }
    } else {
        snprintf(v->parsed, sizeof(v->parsed), "%s", value);
    }
}

static int tci_var_cmp(const void *a, const void *b)
{
    return strcmp(((const tci_var_t *)a)->name, ((const tci_var_t *)b)->name);
}

void tci_collect_config(tci_info_t *info)
{
    char **e;

    info->nvars = 0;
    for (e = environ; *e != NULL && info->nvars < TCI_MAX_VARS; e++) {
        const char *eq = strchr(*e, '=');
        tci_var_t *v;

        if (strncmp(*e, "TC_", 3) != 0 || eq == NULL) {
            continue;
        }
        v = &info->vars[info->nvars++];
        memset(v, 0, sizeof(*v));
        snprintf(v->name, sizeof(v->name), "%.*s", (int)(eq - *e), *e);
        tci_parse_var(v, eq + 1);
    }
    qsort(info->vars, (size_t)info->nvars, sizeof(info->vars[0]), tci_var_cmp);
    /* what the library checks when a communicator is made: its first finding on its variable
     * (the others shown above as text are read only later, at their first use) */
    if (tc_rt_config_check() == TC_OK)
        return;
    const char *msg = tc_last_error();
    for (int i = 0; i < info->nvars; i++) {
        tci_var_t *v = &info->vars[i];
        const char *at = strstr(msg, v->name);
        size_t n = strlen(v->name);
        if (v->error[0] == '\0' && at && !isalnum((unsigned char)at[n]) && at[n] != '_') {
            snprintf(v->error, sizeof(v->error), "%s", msg);
            return;
        }
    }
}

void tci_collect_transports(tci_info_t *info)
{
    const tc_tp_ops_t *ops[] = {&tc_tp_tcp_ops, &tc_tp_ib_ops};

    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        tc_tp_caps_t caps;
        tci_transport_t *t = &info->transports[info->ntransports++];

        memset(&caps, 0, sizeof(caps));
        caps.size = sizeof(caps);
        t->name = ops[i]->name;
        if (ops[i]->query(&caps) == TC_OK) {
            t->available = caps.available;
            t->same_node_only = caps.same_node_only;
            t->one_sided = caps.one_sided;
        }
    }
}

void tci_collect_libraries(tci_info_t *info)
{
    tci_library_t *l = info->libs;
    const char *where = NULL;
    int count = 0;

    info->version = tc_version();
    l[0].name = "libibverbs";
    l[0].found = tc_tp_ib_verbs_library(&where);
    snprintf(l[0].where, sizeof(l[0].where), "%s", where);
    l[1].name = "cuda_plugin";
    l[1].found = tc_kern_cuda_plugin(&where);
    snprintf(l[1].where, sizeof(l[1].where), "%s", where);
    info->nlibs = 2;
    if (l[1].found) {
        l[2].name = "cuda_devices";
        l[2].found = tc_kern_cuda_available(&count) == TC_OK;
        if (l[2].found)
            snprintf(l[2].where, sizeof(l[2].where), "%d", count);
        else
            snprintf(l[2].where, sizeof(l[2].where), "%s", tc_last_error());
        info->nlibs = 3;
    }
}

void tci_collect_model(tci_info_t *info)
{
    bool on = true;
    info->model_ok = tc_algo_model_info(&info->model) == TC_OK &&
                     tc_config_bool("TC_ALGO_RULES", true, &on) == TC_OK;
    info->rules_on = on;
    if (!info->model_ok) {
        snprintf(info->model_error, sizeof(info->model_error), "%s", tc_last_error());
    }
}

/* Put our descriptor, fence, get and decode everyone's, build the job. */
static tc_status_t tci_exchange(tci_info_t *info, tc_boot_t *boot, uint64_t deadline)
{
    uint8_t buf[TC_TOPO_DESC_MAX];
    size_t len;
    tc_status_t st;
    int r;

    if ((st = tc_topo_desc_encode(&info->node, buf, sizeof(buf), &len)) != TC_OK ||
        (st = tc_boot_put(boot, TCI_KEY, buf, len)) != TC_OK ||
        (st = tc_boot_fence(boot, deadline)) != TC_OK) {
        return st;
    }
    info->rank_nodes = calloc((size_t)boot->size, sizeof(tc_topo_node_t));
    if (info->rank_nodes == NULL) {
        return tc_error_set(TC_ERR_NO_MEMORY, "no memory for %d descriptors", boot->size);
    }
    for (r = 0; r < boot->size; r++) {
        if ((st = tc_boot_get(boot, r, TCI_KEY, buf, sizeof(buf), &len, deadline)) != TC_OK ||
            (st = tc_topo_desc_decode(buf, len, &info->rank_nodes[r])) != TC_OK) {
            tc_error_prefix("the descriptor of rank %d: ", r);
            return st;
        }
    }
    return tc_topo_job_build_nodes(info->rank_nodes, boot->size, &info->job);
}

int tci_collect_job(tci_info_t *info)
{
    int64_t timeout_s = 30;
    uint64_t deadline;
    tc_boot_t *boot = NULL;
    tc_boot_kind_t kind;
    tc_status_t st;

    /* the bootstrap a tcomms job would use here (TC_BOOTSTRAP; auto: PMIx, else the torchrun
     * environment); none when it would be a world of one */
    if (tc_boot_kind_from_env(&kind) != TC_OK || kind == TC_BOOT_SELF ||
        (kind == TC_BOOT_AUTO && !tc_boot_job_announced())) {
        return 1;
    }
    (void)tc_config_int("TC_TIMEOUT_S", 30, 1, 86400 * 365, &timeout_s);
    deadline = tc_deadline_after_ms((uint64_t)timeout_s * 1000);
    if ((st = tc_boot_create(kind, deadline, &boot)) != TC_OK) {
        snprintf(info->job_error, sizeof(info->job_error), "%s", tc_last_error());
        return 1;
    }
    info->rank = boot->rank;
    snprintf(info->launcher, sizeof(info->launcher), "%s", boot->launcher);
    if ((st = tci_exchange(info, boot, deadline)) != TC_OK) {
        snprintf(info->job_error, sizeof(info->job_error), "%s", tc_last_error());
    } else {
        info->has_job = 1;
    }
    tc_boot_destroy(boot);
    return info->rank == 0;
}
