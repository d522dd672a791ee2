/* This node: hostname, node id, and its hardware from hwloc or an override. */
#include <errno.h>
#include <stddef.h>
#include <hwloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tcomms/base/config.h"
#include "tcomms/base/log.h"
#include "tcomms/topo/topo.h"
#include "topo_internal.h"

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
    (void)fclose(f); /* read only: nothing to lose */
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) {
        n--;
    }
    buf[n] = '\0';
    return n > 0;
}

/* Load a topology (from @p xml or @p synthetic when not NULL, else this machine)
 * with the important I/O devices kept. On failure *why_p is an errno text. */
/* hwloc's discovery on Linux goes through libudev, whose internal state is not safe to use from
 * two threads at once (TSan: a race inside libudev when threads of one process each create a
 * communicator with its own world, tests/api:win_ib_test): one load or destroy at a time. */
static pthread_mutex_t tc_topo_hwloc_lock = PTHREAD_MUTEX_INITIALIZER;

static void tc_topo_unload(hwloc_topology_t topo)
{
    pthread_mutex_lock(&tc_topo_hwloc_lock);
    hwloc_topology_destroy(topo);
    pthread_mutex_unlock(&tc_topo_hwloc_lock);
}

static int tc_topo_load_locked(const char *xml, const char *synthetic, hwloc_topology_t *topo_p,
                               const char **why_p)
{
    hwloc_topology_t topo;

    errno = 0;
    if (hwloc_topology_init(&topo) != 0) {
        *why_p = errno ? strerror(errno) : "hwloc_topology_init failed";
        return 0;
    }
    /* without this filter hwloc drops every PCI and OS device */
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
#ifdef __linux__
    /* On Linux the "linux" component reads the PCI tree from sysfs; the "pci" plugin
     * (libpciaccess) finds the same devices and leaks ~1 KiB per load. */
    if (xml == NULL && synthetic == NULL) {
        (void)hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "pci");
    }
#endif
    errno = 0;
    if ((xml != NULL && hwloc_topology_set_xml(topo, xml) != 0) ||
        (synthetic != NULL && hwloc_topology_set_synthetic(topo, synthetic) != 0) ||
        hwloc_topology_load(topo) != 0) {
        *why_p = errno ? strerror(errno) : "no reason given";
        hwloc_topology_destroy(topo);
        return 0;
    }
    *topo_p = topo;
    return 1;
}

static int tc_topo_load(const char *xml, const char *synthetic, hwloc_topology_t *topo_p,
                        const char **why_p)
{
    pthread_mutex_lock(&tc_topo_hwloc_lock);
    int ok = tc_topo_load_locked(xml, synthetic, topo_p, why_p);
    pthread_mutex_unlock(&tc_topo_hwloc_lock);
    return ok;
}

/* Hostname and node id of this machine. */
static tc_status_t tc_topo_identity(tc_topo_node_t *node, const char *fn)
{
    char boot_id[128];

    if (gethostname(node->hostname, sizeof(node->hostname)) != 0) {
        return tc_error_set(TC_ERR_SYSTEM, "%s: gethostname failed: %s", fn, strerror(errno));
    }
    node->hostname[sizeof(node->hostname) - 1] = '\0';
    node->has_boot_id = tc_topo_read_boot_id(boot_id, sizeof(boot_id));
    node->node_id = tc_topo_node_id(node->hostname, node->has_boot_id ? boot_id : NULL);
    return TC_OK;
}

static void tc_topo_log_node(const tc_topo_node_t *node)
{
    tc_log_debug(TC_SUBSYS_TOPO,
                 "node %s id %016llx (%s): %d packages, %d NUMA nodes, %d cores, %d PUs, "
                 "%d GPUs, %d NICs%s",
                 node->hostname, (unsigned long long)node->node_id,
                 tc_topo_source_name(node->source), node->npackages, node->nnuma, node->ncores,
                 node->npus, node->ngpus, node->nnics, node->hwloc_ok ? "" : " (without hwloc)");
}

tc_status_t tc_topo_node_from_xml(const char *path, tc_topo_node_t *node_p)
{
    tc_topo_node_t *node;
    hwloc_topology_t topo;
    const char *why;
    char where[384];
    tc_status_t st;

    if (path == NULL || node_p == NULL) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_topo_node_from_xml: %s is NULL",
                            path == NULL ? "path" : "node_p");
    }
    if (access(path, R_OK) != 0) {
        return tc_error_set(TC_ERR_CONFIG, "topology XML file \"%s\": cannot read it: %s", path,
                            strerror(errno));
    }
    if (!tc_topo_load(path, NULL, &topo, &why)) {
        tc_topo_xml_check(path, where, sizeof(where));
        return tc_error_set(TC_ERR_CONFIG,
                            "topology XML file \"%s\": hwloc cannot load it "
                            "(%s): %s",
                            path, why, where);
    }
    if ((node = calloc(1, sizeof(*node))) == NULL) {
        tc_topo_unload(topo);
        return tc_error_set(TC_ERR_NO_MEMORY, "tc_topo_node_from_xml: no memory");
    }
    tc_topo_scan(topo, node);
    tc_topo_unload(topo);
    node->hwloc_ok = 1;
    node->source = TC_TOPO_SRC_XML;
    if ((st = tc_topo_identity(node, "tc_topo_node_from_xml")) == TC_OK) {
        tc_topo_log_node(node);
        *node_p = *node;
    }
    free(node);
    return st;
}

tc_status_t tc_topo_node_from_synthetic(const char *desc, tc_topo_node_t *node_p)
{
    tc_topo_node_t *node;
    hwloc_topology_t topo;
    const char *why;
    char where[256];
    tc_status_t st;

    if (desc == NULL || node_p == NULL) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_topo_node_from_synthetic: %s is NULL",
                            desc == NULL ? "desc" : "node_p");
    }
    if (!tc_topo_load(NULL, desc, &topo, &why)) {
        tc_topo_synthetic_blame(desc, where, sizeof(where));
        return tc_error_set(TC_ERR_CONFIG, "synthetic topology \"%s\": hwloc refused it (%s): %s",
                            desc, why, where);
    }
    if ((node = calloc(1, sizeof(*node))) == NULL) {
        tc_topo_unload(topo);
        return tc_error_set(TC_ERR_NO_MEMORY, "tc_topo_node_from_synthetic: no memory");
    }
    tc_topo_scan(topo, node);
    tc_topo_unload(topo);
    node->hwloc_ok = 1;
    node->source = TC_TOPO_SRC_SYNTHETIC;
    if ((st = tc_topo_identity(node, "tc_topo_node_from_synthetic")) == TC_OK) {
        tc_topo_log_node(node);
        *node_p = *node;
    }
    free(node);
    return st;
}

tc_status_t tc_topo_node_probe(tc_topo_node_t *node_p)
{
    const char *xml = tc_config_string("TC_TOPO_XML", NULL);
    const char *syn = tc_config_string("TC_TOPO_SYNTHETIC", NULL);
    tc_topo_node_t *node;
    hwloc_topology_t topo;
    const char *why = "hwloc found no processing unit";
    tc_status_t st;
    long n;

    if (node_p == NULL) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_topo_node_probe: node_p is NULL");
    }
    if (xml != NULL && syn != NULL) {
        return tc_error_set(TC_ERR_CONFIG,
                            "TC_TOPO_XML=\"%s\" and TC_TOPO_SYNTHETIC=\"%s\" are "
                            "both set: set one of them",
                            xml, syn);
    }
    if (xml != NULL) {
        if ((st = tc_topo_node_from_xml(xml, node_p)) != TC_OK) {
            tc_error_prefix("TC_TOPO_XML: ");
        }
        return st;
    }
    if (syn != NULL) {
        if ((st = tc_topo_node_from_synthetic(syn, node_p)) != TC_OK) {
            tc_error_prefix("TC_TOPO_SYNTHETIC: ");
        }
        return st;
    }
    if ((node = calloc(1, sizeof(*node))) == NULL) {
        return tc_error_set(TC_ERR_NO_MEMORY, "tc_topo_node_probe: no memory");
    }
    if ((st = tc_topo_identity(node, "tc_topo_node_probe")) != TC_OK) {
        free(node);
        return st;
    }
    if (tc_topo_load(NULL, NULL, &topo, &why)) {
        tc_topo_scan(topo, node);
        tc_topo_unload(topo);
        node->hwloc_ok = node->npus > 0;
    }
    if (node->hwloc_ok) {
        node->source = TC_TOPO_SRC_HOST;
    } else {
        tc_log_warn(TC_SUBSYS_TOPO,
                    "hwloc cannot describe this machine (%s; HWLOC_COMPONENTS=%s); only the "
                    "number of online CPUs is known",
                    why, getenv("HWLOC_COMPONENTS") ? getenv("HWLOC_COMPONENTS") : "unset");
        /* keep the identity, forget any partial hardware picture */
        memset((char *)node + offsetof(tc_topo_node_t, hwloc_ok), 0,
               sizeof(*node) - offsetof(tc_topo_node_t, hwloc_ok));
        node->source = TC_TOPO_SRC_NONE;
        n = sysconf(_SC_NPROCESSORS_ONLN);
        node->npus = n > 0 ? (int)n : 1;
    }
    tc_topo_log_node(node);
    *node_p = *node;
    free(node);
    return TC_OK;
}

const char *tc_topo_link_name(int link)
{
    static const char *const names[] = {"PIX", "PHB", "NODE", "SYS"};
    return link >= 0 && link <= TC_TOPO_LINK_SYS ? names[link] : "?";
}

const char *tc_topo_source_name(int source)
{
    static const char *const names[] = {"none", "host", "xml", "synthetic"};
    return source >= 0 && source <= TC_TOPO_SRC_SYNTHETIC ? names[source] : "?";
}

void tc_topo_pci_format(tc_topo_pci_t pci, char *buf, size_t len)
{
    snprintf(buf, len, "%04x:%02x:%02x.%x", (unsigned)(pci >> 16), (unsigned)(pci >> 8) & 0xffu,
             (unsigned)(pci >> 3) & 0x1fu, (unsigned)pci & 7u);
}
