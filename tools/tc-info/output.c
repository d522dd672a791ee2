/* The report of tc-info, as readable text and as JSON. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "info.h"

/* A sbuf with a sticky error, so that printing reads straight. */
typedef struct tci_out {
    tc_sbuf_t *sb;
    tc_status_t st;
} tci_out_t;

static void __attribute__((format(printf, 2, 3))) o_f(tci_out_t *o, const char *fmt, ...)
{
    va_list ap;

    if (o->st != TC_OK) {
        return;
    }
    va_start(ap, fmt);
    o->st = tc_sbuf_vappendf(o->sb, fmt, ap);
    va_end(ap);
}

static void o_str(tci_out_t *o, const char *s)
{
    if (o->st == TC_OK) {
        o->st = tc_sbuf_append_json_string(o->sb, s);
    }
}

/* An index that may be -1 (unknown): a number or null. */
static void o_idx(tci_out_t *o, int v)
{
    if (v < 0) {
        o_f(o, "null");
    } else {
        o_f(o, "%d", v);
    }
}

static const char *tci_kind(int kind)
{
    return kind == TC_TOPO_NIC_RDMA ? "rdma" : "eth";
}

static const char *tci_or(int v, char *buf, size_t len)
{
    if (v < 0) {
        return "-";
    }
    snprintf(buf, len, "%d", v);
    return buf;
}

/* ---- text ---- */

static void tci_text_node(tci_out_t *o, const tc_topo_node_t *n)
{
    char pci[16], a[16], b[16], c[16];
    int g, k;

    o_f(o, "Node %s (id %016llx, from %s%s)\n", n->hostname, (unsigned long long)n->node_id,
        tc_topo_source_name(n->source), n->io_ok ? "" : ", no PCI information");
    o_f(o, "  CPU: %d packages, %d NUMA nodes, %d cores, %d PUs\n", n->npackages, n->nnuma,
        n->ncores, n->npus);
    o_f(o, "  caches: L1d %llu KiB, L2 %llu KiB, L3 %llu KiB x %d\n",
        (unsigned long long)(n->cache_size[0] >> 10), (unsigned long long)(n->cache_size[1] >> 10),
        (unsigned long long)(n->cache_size[2] >> 10), n->nl3);
    o_f(o, "  GPUs: %d\n", n->ngpus);
    for (g = 0; g < n->ngpus; g++) {
        const tc_topo_gpu_t *gpu = &n->gpus[g];
        tc_topo_pci_format(gpu->pci, pci, sizeof(pci));
        o_f(o, "    %-8s pci %s  numa %s  package %s  switch %s", gpu->name, pci,
            tci_or(gpu->numa, a, sizeof(a)), tci_or(gpu->package, b, sizeof(b)),
            tci_or(gpu->pci_switch, c, sizeof(c)));
        if (gpu->nic >= 0) {
            o_f(o, "  -> NIC %s (%s, %u hops)\n", n->nics[gpu->nic].name,
                tc_topo_link_name(n->link[g][gpu->nic]), n->hops[g][gpu->nic]);
        } else {
            o_f(o, "  -> no NIC\n");
        }
    }
    o_f(o, "  NICs: %d\n", n->nnics);
    for (k = 0; k < n->nnics; k++) {
        const tc_topo_nic_t *nic = &n->nics[k];
        tc_topo_pci_format(nic->pci, pci, sizeof(pci));
        o_f(o, "    %-8s %-4s %-10s pci %s  numa %s  package %s  switch %s\n", nic->name,
            tci_kind(nic->kind), nic->ifname[0] ? nic->ifname : "-", pci,
            tci_or(nic->numa, a, sizeof(a)), tci_or(nic->package, b, sizeof(b)),
            tci_or(nic->pci_switch, c, sizeof(c)));
    }
    if (n->ngpus > 0 && n->nnics > 0) {
        o_f(o, "  GPU/NIC links (class/hops):\n    %-8s", "");
        for (k = 0; k < n->nnics; k++) {
            o_f(o, " %-7s", n->nics[k].name);
        }
        o_f(o, "\n");
        for (g = 0; g < n->ngpus; g++) {
            o_f(o, "    %-8s", n->gpus[g].name);
            for (k = 0; k < n->nnics; k++) {
                char cell[16];
                snprintf(cell, sizeof(cell), "%s/%u", tc_topo_link_name(n->link[g][k]),
                         n->hops[g][k]);
                o_f(o, " %-7s", cell);
            }
            o_f(o, "\n");
        }
    }
}

/* The parameter @p k of the model in effect. */
static double tci_param(const tc_algo_model_t *m, int k)
{
    return tc_algo_model_param(m, (tc_algo_param_t)k);
}

static void tci_text_model(tci_out_t *o, const tci_info_t *info)
{
    const tc_algo_model_info_t *m = &info->model;
    const tc_algo_tuning_t *t = &m->tuning;
    int k;

    if (!info->model_ok) {
        o_f(o, "Cost model: ERROR: %s\n", info->model_error);
        return;
    }
    o_f(o, "Cost model (algorithm selection; us, us per byte):\n");
    if (m->file[0]) {
        o_f(o, "  tuning file %s: version %d, measured on %s, %d ranks on %d node(s), %s, by %s\n",
            m->file, t->version, t->host[0] ? t->host : "?", t->ranks, t->nodes,
            t->date[0] ? t->date : "?", t->tool[0] ? t->tool : "?");
    } else {
        o_f(o, "  tuning file: none (TC_TUNING_FILE not set)\n");
    }
    for (k = 0; k < TC_ALGO_PARAM_COUNT; k++) {
        const tc_algo_param_t p = (tc_algo_param_t)k;
        o_f(o, "  %-15s %-12.6g %s", tc_algo_param_key(p), tci_param(&m->model, k),
            tc_algo_param_src_name(m->source[k]));
        if (m->source[k] == TC_ALGO_SRC_ENV) {
            o_f(o, " (%s", tc_algo_param_env(p));
            if (t->has[k]) {
                o_f(o, "; the file's %.6g replaced", t->value[k]);
            }
            o_f(o, ")");
        }
        o_f(o, "\n");
    }
    if (t->nrules > 0) {
        o_f(o, "  rules: %d, for %d ranks on %d node(s) of %d, before the model%s\n", t->nrules,
            t->ranks, t->nodes, t->ranks_per_node, info->rules_on ? "" : " (off: TC_ALGO_RULES)");
        for (k = 0; k < t->nrules; k++) {
            const tc_algo_rule_t *r = &t->rule[k];
            if (k == 0 || r->coll != r[-1].coll) {
                o_f(o, "%s    %-15s", k ? "\n" : "", tc_coll_name(r->coll));
            }
            o_f(o, " %llu:%s", (unsigned long long)r->from_bytes, r->algo);
        }
        o_f(o, "\n");
    }
}

static void tci_json_model(tci_out_t *o, const tci_info_t *info)
{
    const tc_algo_model_info_t *m = &info->model;
    int k;

    if (!info->model_ok) {
        o_f(o, "{\"error\": ");
        o_str(o, info->model_error);
        o_f(o, "}");
        return;
    }
    o_f(o, "{\"tuning_file\": ");
    if (m->file[0]) {
        o_str(o, m->file);
    } else {
        o_f(o, "null");
    }
    o_f(o, ", \"params\": [");
    for (k = 0; k < TC_ALGO_PARAM_COUNT; k++) {
        const tc_algo_param_t p = (tc_algo_param_t)k;
        o_f(o, "%s\n   {\"key\": \"%s\", \"env\": \"%s\", \"value\": %.17g, \"source\": \"%s\"}",
            k ? "," : "", tc_algo_param_key(p), tc_algo_param_env(p), tci_param(&m->model, k),
            tc_algo_param_src_name(m->source[k]));
    }
    o_f(o, "], \"rules_on\": %s, \"rules\": [", info->rules_on ? "true" : "false");
    for (k = 0; k < m->tuning.nrules; k++) {
        const tc_algo_rule_t *r = &m->tuning.rule[k];
        o_f(o, "%s\n   {\"coll\": \"%s\", \"from_bytes\": %llu, \"algo\": ", k ? "," : "",
            tc_coll_name(r->coll), (unsigned long long)r->from_bytes);
        o_str(o, r->algo);
        o_f(o, "}");
    }
    o_f(o, "]}");
}

tc_status_t tci_print_text(const tci_info_t *info, tc_sbuf_t *sb)
{
    tci_out_t o = {sb, TC_OK};
    int i;

    o_f(&o, "tcomms %d.%d.%d\n", info->version / 10000, info->version / 100 % 100,
        info->version % 100);
    tci_text_node(&o, &info->node);
    o_f(&o, "Libraries opened at run time:\n");
    for (i = 0; i < info->nlibs; i++) {
        o_f(&o, "  %-12s %s: %s\n", info->libs[i].name, info->libs[i].found ? "found" : "not found",
            info->libs[i].where);
    }
    o_f(&o, "Transports:\n");
    for (i = 0; i < info->ntransports; i++) {
        o_f(&o, "  %-6s %s%s\n", info->transports[i].name,
            info->transports[i].available ? "available" : "unavailable",
            info->transports[i].same_node_only ? " (same node only)" : "");
    }
    o_f(&o, "Configuration (TC_* variables set): %s\n", info->nvars ? "" : "none");
    for (i = 0; i < info->nvars; i++) {
        const tci_var_t *v = &info->vars[i];
        if (v->error[0]) {
            o_f(&o, "  %s=%s  ERROR: %s\n", v->name, v->value, v->error);
        } else {
            o_f(&o, "  %s=%s  (%s: %s)\n", v->name, v->value, v->type, v->parsed);
        }
    }
    tci_text_model(&o, info);
    if (info->has_job) {
        const tc_topo_job_t *j = &info->job;
        o_f(&o, "Job (%s): %d ranks on %d nodes\n", info->launcher, j->nranks, j->nnodes);
        for (i = 0; i < j->nranks; i++) {
            const tc_topo_node_t *n = &info->rank_nodes[j->node_leader[j->rank_node[i]]];
            o_f(&o, "  rank %d: node %d (%s) local %d/%d gpu %s nic %s parent %d\n", i,
                j->rank_node[i], n->hostname, j->local_rank[i], j->local_size[i],
                j->rank_gpu[i] >= 0 ? n->gpus[j->rank_gpu[i]].name : "-",
                j->rank_nic[i] >= 0 ? n->nics[j->rank_nic[i]].name : "-", j->tree_parent[i]);
        }
        o_f(&o, "  ring:");
        for (i = 0; i < j->nranks; i++) {
            o_f(&o, " %d", j->ring[i]);
        }
        o_f(&o, "\n");
    } else if (info->job_error[0]) {
        o_f(&o, "Job: launcher detected, but no placement: %s\n", info->job_error);
    } else {
        o_f(&o, "Job: not run under a launcher\n");
    }
    return o.st;
}

/* ---- JSON ---- */

static void tci_json_node(tci_out_t *o, const tc_topo_node_t *n)
{
    char pci[16];
    int g, k;

    o_f(o, "{\"hostname\": ");
    o_str(o, n->hostname);
    o_f(o, ", \"node_id\": \"%016llx\", \"source\": \"%s\", \"hwloc_ok\": %s, \"io_ok\": %s,\n",
        (unsigned long long)n->node_id, tc_topo_source_name(n->source),
        n->hwloc_ok ? "true" : "false", n->io_ok ? "true" : "false");
    o_f(o, "   \"packages\": %d, \"numa_nodes\": %d, \"cores\": %d, \"pus\": %d,\n", n->npackages,
        n->nnuma, n->ncores, n->npus);
    o_f(o, "   \"caches\": {\"l1d\": %llu, \"l2\": %llu, \"l3\": %llu, \"l3_count\": %d},\n",
        (unsigned long long)n->cache_size[0], (unsigned long long)n->cache_size[1],
        (unsigned long long)n->cache_size[2], n->nl3);
    o_f(o, "   \"gpus\": [");
    for (g = 0; g < n->ngpus; g++) {
        const tc_topo_gpu_t *gpu = &n->gpus[g];
        tc_topo_pci_format(gpu->pci, pci, sizeof(pci));
        o_f(o, "%s\n    {\"name\": ", g ? "," : "");
        o_str(o, gpu->name);
        o_f(o, ", \"dev_index\": %d, \"pci\": \"%s\", \"numa\": ", gpu->dev_index, pci);
        o_idx(o, gpu->numa);
        o_f(o, ", \"package\": ");
        o_idx(o, gpu->package);
        o_f(o, ", \"switch\": ");
        o_idx(o, gpu->pci_switch);
        o_f(o, ", \"nic\": ");
        o_idx(o, gpu->nic);
        if (gpu->nic >= 0) {
            o_f(o, ", \"nic_name\": ");
            o_str(o, n->nics[gpu->nic].name);
            o_f(o, ", \"nic_link\": \"%s\", \"nic_hops\": %u",
                tc_topo_link_name(n->link[g][gpu->nic]), n->hops[g][gpu->nic]);
        }
        o_f(o, "}");
    }
    o_f(o, "],\n   \"nics\": [");
    for (k = 0; k < n->nnics; k++) {
        const tc_topo_nic_t *nic = &n->nics[k];
        tc_topo_pci_format(nic->pci, pci, sizeof(pci));
        o_f(o, "%s\n    {\"name\": ", k ? "," : "");
        o_str(o, nic->name);
        o_f(o, ", \"ifname\": ");
        o_str(o, nic->ifname);
        o_f(o, ", \"kind\": \"%s\", \"pci\": \"%s\", \"numa\": ", tci_kind(nic->kind), pci);
        o_idx(o, nic->numa);
        o_f(o, ", \"package\": ");
        o_idx(o, nic->package);
        o_f(o, ", \"switch\": ");
        o_idx(o, nic->pci_switch);
        o_f(o, "}");
    }
    o_f(o, "],\n   \"gpu_nic_link\": [");
    for (g = 0; g < n->ngpus; g++) {
        o_f(o, "%s[", g ? ", " : "");
        for (k = 0; k < n->nnics; k++) {
            o_f(o, "%s\"%s\"", k ? ", " : "", tc_topo_link_name(n->link[g][k]));
        }
        o_f(o, "]");
    }
    o_f(o, "],\n   \"gpu_nic_hops\": [");
    for (g = 0; g < n->ngpus; g++) {
        o_f(o, "%s[", g ? ", " : "");
        for (k = 0; k < n->nnics; k++) {
            o_f(o, "%s%u", k ? ", " : "", n->hops[g][k]);
        }
        o_f(o, "]");
    }
    o_f(o, "]}");
}

static void tci_json_ints(tci_out_t *o, const int *v, int n)
{
    int i;

    o_f(o, "[");
    for (i = 0; i < n; i++) {
        o_f(o, "%s%d", i ? ", " : "", v[i]);
    }
    o_f(o, "]");
}

tc_status_t tci_print_json(const tci_info_t *info, tc_sbuf_t *sb)
{
    tci_out_t o = {sb, TC_OK};
    int i;

    o_f(&o,
        "{\"tc_info_version\": 1,\n \"version\": \"%d.%d.%d\",\n \"node\": ", info->version / 10000,
        info->version / 100 % 100, info->version % 100);
    tci_json_node(&o, &info->node);
    o_f(&o, ",\n \"libraries\": [");
    for (i = 0; i < info->nlibs; i++) {
        o_f(&o, "%s{\"name\": \"%s\", \"found\": %s, \"where\": ", i ? ", " : "",
            info->libs[i].name, info->libs[i].found ? "true" : "false");
        o_str(&o, info->libs[i].where);
        o_f(&o, "}");
    }
    o_f(&o, "]");
    o_f(&o, ",\n \"transports\": [");
    for (i = 0; i < info->ntransports; i++) {
        const tci_transport_t *t = &info->transports[i];
        o_f(&o,
            "%s{\"name\": \"%s\", \"available\": %s, \"same_node_only\": %s, "
            "\"one_sided\": %s}",
            i ? ", " : "", t->name, t->available ? "true" : "false",
            t->same_node_only ? "true" : "false", t->one_sided ? "true" : "false");
    }
    o_f(&o, "],\n \"config\": [");
    for (i = 0; i < info->nvars; i++) {
        const tci_var_t *v = &info->vars[i];
        o_f(&o, "%s\n  {\"name\": ", i ? "," : "");
        o_str(&o, v->name);
        o_f(&o, ", \"value\": ");
        o_str(&o, v->value);
        o_f(&o, ", \"type\": ");
        if (v->type != NULL) {
            o_str(&o, v->type);
        } else {
            o_f(&o, "null");
        }
        if (v->error[0]) {
            o_f(&o, ", \"error\": ");
            o_str(&o, v->error);
        } else {
            o_f(&o, ", \"parsed\": ");
            o_str(&o, v->parsed);
        }
        o_f(&o, "}");
    }
    o_f(&o, "],\n \"cost_model\": ");
    tci_json_model(&o, info);
    o_f(&o, ",\n \"job\": ");
    if (info->has_job) {
        const tc_topo_job_t *j = &info->job;
        o_f(&o, "{\"launcher\": ");
        o_str(&o, info->launcher);
        o_f(&o, ", \"nranks\": %d, \"nnodes\": %d,\n  \"ranks\": [", j->nranks, j->nnodes);
        for (i = 0; i < j->nranks; i++) {
            const tc_topo_node_t *n = &info->rank_nodes[j->node_leader[j->rank_node[i]]];
            o_f(&o, "%s\n   {\"rank\": %d, \"node\": %d, \"host\": ", i ? "," : "", i,
                j->rank_node[i]);
            o_str(&o, n->hostname);
            o_f(&o, ", \"local_rank\": %d, \"local_size\": %d, \"gpu\": ", j->local_rank[i],
                j->local_size[i]);
            if (j->rank_gpu[i] >= 0) {
                o_str(&o, n->gpus[j->rank_gpu[i]].name);
            } else {
                o_f(&o, "null");
            }
            o_f(&o, ", \"nic\": ");
            if (j->rank_nic[i] >= 0) {
                o_str(&o, n->nics[j->rank_nic[i]].name);
            } else {
                o_f(&o, "null");
            }
            o_f(&o, ", \"tree_parent\": %d}", j->tree_parent[i]);
        }
        o_f(&o, "],\n  \"node_leaders\": ");
        tci_json_ints(&o, j->node_leader, j->nnodes);
        o_f(&o, ", \"ring\": ");
        tci_json_ints(&o, j->ring, j->nranks);
        o_f(&o, "}");
    } else if (info->job_error[0]) {
        o_f(&o, "{\"error\": ");
        o_str(&o, info->job_error);
        o_f(&o, "}");
    } else {
        o_f(&o, "null");
    }
    o_f(&o, "}\n");
    return o.st;
}
