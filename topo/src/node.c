/* This node: hostname, node id, and counts from hwloc. */
#include <errno.h>
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tcomms/base/log.h"
#include "tcomms/topo/topo.h"

#define TC_TOPO_BOOT_ID_PATH "/proc/sys/kernel/random/boot_id"

uint64_t tc_topo_node_id(const char *hostname, const char *boot_id)
{
    /* FNV-1a over hostname, a separator that cannot be in either, boot id */
    uint64_t h = 0xcbf29ce484222325ull;
    const char *parts[2] = {hostname, boot_id != NULL ? boot_id : ""};
    const unsigned char *p;
    int i;

    for (i = 0; i < 2; i++) {
        for (p = (const unsigned char *)parts[i]; *p != '\0'; p++) {
            h = (h ^ *p) * 0x100000001b3ull;
        }
        h = (h ^ 0xffu) * 0x100000001b3ull;
    }
    return h != 0 ? h : 1;
}

/* The boot id without its newline; 0 when unreadable (not an error). */
static int tc_topo_read_boot_id(char *buf, size_t len)
{
    FILE *f = fopen(TC_TOPO_BOOT_ID_PATH, "r");
    size_t n;

    if (f == NULL) {
        tc_log_debug(TC_SUBSYS_TOPO, "cannot open %s: %s; node id from the hostname only",
                     TC_TOPO_BOOT_ID_PATH, strerror(errno));
        return 0;
    }
    n = fread(buf, 1, len - 1, f);
    fclose(f);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) {
        n--;
    }
    buf[n] = '\0';
    return n > 0;
}

static int tc_topo_count(hwloc_topology_t topo, hwloc_obj_type_t type)
{
    int n = hwloc_get_nbobjs_by_type(topo, type);
    return n > 0 ? n : 0; /* -1: objects at several depths; not for these types */
}

/* Counts from hwloc; 0 on failure, with the reason logged as a warning. */
static int tc_topo_hwloc_counts(tc_topo_node_t *node)
{
    hwloc_topology_t topo;

    errno = 0;
    if (hwloc_topology_init(&topo) != 0) {
        tc_log_warn(TC_SUBSYS_TOPO, "hwloc_topology_init failed: %s; topology unknown",
                    errno ? strerror(errno) : "no reason given");
        return 0;
    }
    if (hwloc_topology_load(topo) != 0) {
        tc_log_warn(TC_SUBSYS_TOPO,
                    "hwloc_topology_load failed (%s; HWLOC_COMPONENTS=%s); only the number of "
                    "online CPUs is known",
                    errno ? strerror(errno) : "no reason given",
                    getenv("HWLOC_COMPONENTS") ? getenv("HWLOC_COMPONENTS") : "unset");
        hwloc_topology_destroy(topo);
        return 0;
    }
    node->npackages = tc_topo_count(topo, HWLOC_OBJ_PACKAGE);
    node->nnuma = tc_topo_count(topo, HWLOC_OBJ_NUMANODE);
    node->ncores = tc_topo_count(topo, HWLOC_OBJ_CORE);
    node->npus = tc_topo_count(topo, HWLOC_OBJ_PU);
    hwloc_topology_destroy(topo);
    return node->npus > 0;
}

tc_status_t tc_topo_node_probe(tc_topo_node_t *node_p)
{
    tc_topo_node_t node;
    char boot_id[128];
    long n;

    if (node_p == NULL) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_topo_node_probe: node_p is NULL");
    }
    memset(&node, 0, sizeof(node));
    if (gethostname(node.hostname, sizeof(node.hostname)) != 0) {
        return tc_error_set(TC_ERR_SYSTEM, "tc_topo_node_probe: gethostname failed: %s",
                            strerror(errno));
    }
    node.hostname[sizeof(node.hostname) - 1] = '\0';
    node.has_boot_id = tc_topo_read_boot_id(boot_id, sizeof(boot_id));
    node.node_id = tc_topo_node_id(node.hostname, node.has_boot_id ? boot_id : NULL);

    node.hwloc_ok = tc_topo_hwloc_counts(&node);
    if (!node.hwloc_ok) {
        node.npackages = node.nnuma = node.ncores = 0;
        n = sysconf(_SC_NPROCESSORS_ONLN);
        node.npus = n > 0 ? (int)n : 1;
    }
    tc_log_debug(TC_SUBSYS_TOPO,
                 "node %s id %016llx: %d packages, %d NUMA nodes, %d cores, %d PUs%s",
                 node.hostname, (unsigned long long)node.node_id, node.npackages, node.nnuma,
                 node.ncores, node.npus, node.hwloc_ok ? "" : " (without hwloc)");
    *node_p = node;
    return TC_OK;
}
