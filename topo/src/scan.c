/* Read a loaded hwloc topology into a tc_topo_node_t: counts, caches, GPUs, NICs
 * and how far each GPU is from each NIC on the PCI tree. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/base/log.h"
#include "topo_internal.h"

#define TC_TOPO_VENDOR_NVIDIA 0x10de
#define TC_TOPO_VENDOR_AMD 0x1002
#define TC_TOPO_MAX_SWITCHES 64

typedef struct tc_topo_scan_gpu {
    tc_topo_gpu_t gpu;
    hwloc_obj_t obj;
} tc_topo_scan_gpu_t;

typedef struct tc_topo_scan_nic {
    tc_topo_nic_t nic;
    hwloc_obj_t obj;
} tc_topo_scan_nic_t;

typedef struct tc_topo_scan {
    hwloc_topology_t topo;
    tc_topo_scan_gpu_t gpus[TC_TOPO_MAX_GPUS];
    tc_topo_scan_nic_t nics[TC_TOPO_MAX_NICS];
    int ngpus, nnics, dropped_gpus, dropped_nics;
    hwloc_obj_t switches[TC_TOPO_MAX_SWITCHES];
    int nswitches;
} tc_topo_scan_t;

static int tc_topo_count(hwloc_topology_t topo, hwloc_obj_type_t type)
{
    int n = hwloc_get_nbobjs_by_type(topo, type);
    return n > 0 ? n : 0; /* -1: objects at several depths; not for these types */
}

static uint64_t tc_topo_cache(hwloc_topology_t topo, hwloc_obj_type_t type)
{
    hwloc_obj_t obj = hwloc_get_next_obj_by_type(topo, type, NULL);
    return obj != NULL && obj->attr != NULL ? obj->attr->cache.size : 0;
}

static tc_topo_pci_t tc_topo_pci_of(hwloc_obj_t pci)
{
    const struct hwloc_pcidev_attr_s *a = &pci->attr->pcidev;
    return (tc_topo_pci_t)((a->domain & 0xffffu) << 16 | (uint32_t)a->bus << 8 |
                           (uint32_t)(a->dev & 0x1f) << 3 | (a->func & 0x7));
}

/* NUMA node and package of the CPU side an I/O object hangs from; -1 when none or several. */
static void tc_topo_locality(hwloc_topology_t topo, hwloc_obj_t obj, int *numa_p, int *package_p)
{
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, obj), p;

    *numa_p = -1;
    *package_p = -1;
    if (anc == NULL) {
        return;
    }
    if (anc->nodeset != NULL && hwloc_bitmap_weight(anc->nodeset) == 1) {
        hwloc_obj_t numa =
            hwloc_get_numanode_obj_by_os_index(topo, (unsigned)hwloc_bitmap_first(anc->nodeset));
        if (numa != NULL) {
            *numa_p = (int)numa->logical_index;
        }
    }
    if (anc->cpuset == NULL || hwloc_bitmap_iszero(anc->cpuset)) {
        return;
    }
    /* the deepest object covering the ancestor's CPUs, then up to a package */
    for (p = hwloc_get_obj_covering_cpuset(topo, anc->cpuset); p != NULL; p = p->parent) {
        if (p->type == HWLOC_OBJ_PACKAGE) {
            *package_p = (int)p->logical_index;
            return;
        }
    }
}

/* The top PCI-to-PCI bridge above a PCI device (right below the host bridge), as an id. */
static int tc_topo_switch_of(tc_topo_scan_t *s, hwloc_obj_t pci)
{
    hwloc_obj_t p, top = NULL;
    int i;

    for (p = pci->parent; p != NULL && p->type == HWLOC_OBJ_BRIDGE; p = p->parent) {
        if (p->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI) {
            top = p;
        }
    }
    if (top == NULL) {
        return -1;
    }
    for (i = 0; i < s->nswitches; i++) {
        if (s->switches[i] == top) {
            return i;
        }
    }
    if (s->nswitches == TC_TOPO_MAX_SWITCHES) {
        return -1;
    }
    s->switches[s->nswitches] = top;
    return s->nswitches++;
}

/* The number after a name's prefix ("cuda12" -> 12), or -1. */
static int tc_topo_name_index(const char *name, const char *prefix)
{
    size_t n = strlen(prefix);
    char *end;
    long v;

    if (strncmp(name, prefix, n) != 0 || name[n] < '0' || name[n] > '9') {
        return -1;
    }
    v = strtol(name + n, &end, 10);
    return *end == '\0' && v < 1000000 ? (int)v : -1;
}

static void tc_topo_copy_name(char *dst, size_t len, const char *src)
{
    size_t n = strnlen(src, len - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* Look at one PCI device: a GPU, a NIC, or neither. */
static void tc_topo_scan_pcidev(tc_topo_scan_t *s, hwloc_obj_t pci)
{
    const char *cuda = NULL, *nvml = NULL, *coproc = NULL, *ofed = NULL, *net = NULL;
    unsigned vendor = pci->attr->pcidev.vendor_id, cls = pci->attr->pcidev.class_id;
    hwloc_obj_t c;
    int is_gpu, numa, package;

    for (c = pci->io_first_child; c != NULL; c = c->next_sibling) {
        if (c->type != HWLOC_OBJ_OS_DEVICE || c->name == NULL) {
            continue;
        }
        switch (c->attr->osdev.type) {
        case HWLOC_OBJ_OSDEV_COPROC:
            if (c->subtype != NULL && strcmp(c->subtype, "CUDA") == 0) {
                cuda = c->name;
            } else {
                coproc = c->name;
            }
            break;
        case HWLOC_OBJ_OSDEV_GPU:
            /* NVML/RSMI name compute GPUs; a DRM "card0" alone may be a display */
            if (strncmp(c->name, "nvml", 4) == 0 || strncmp(c->name, "rsmi", 4) == 0) {
                nvml = c->name;
            }
            break;
        case HWLOC_OBJ_OSDEV_OPENFABRICS:
            ofed = c->name;
            break;
        case HWLOC_OBJ_OSDEV_NETWORK:
            net = c->name;
            break;
        default:
            break;
        }
    }
    /* without OS devices (no CUDA/NVML in this hwloc build), NVIDIA/AMD display-class devices */
    is_gpu =
        cuda != NULL || nvml != NULL || coproc != NULL ||
        ((vendor == TC_TOPO_VENDOR_NVIDIA || vendor == TC_TOPO_VENDOR_AMD) && (cls >> 8) == 0x03);
    if (!is_gpu && ofed == NULL && net == NULL) {
        return;
    }
    tc_topo_locality(s->topo, pci, &numa, &package);
    if (is_gpu) {
        tc_topo_scan_gpu_t *g;
        const char *name = cuda != NULL ? cuda : nvml != NULL ? nvml : coproc;

        if (s->ngpus == TC_TOPO_MAX_GPUS) {
            s->dropped_gpus++;
            return;
        }
        g = &s->gpus[s->ngpus++];
        memset(g, 0, sizeof(*g));
        g->obj = pci;
        g->gpu.pci = tc_topo_pci_of(pci);
        g->gpu.numa = numa;
        g->gpu.package = package;
        g->gpu.pci_switch = tc_topo_switch_of(s, pci);
        g->gpu.nic = -1;
        g->gpu.dev_index = -1;
        if (name != NULL) {
            tc_topo_copy_name(g->gpu.name, sizeof(g->gpu.name), name);
            g->gpu.dev_index = cuda != NULL ? tc_topo_name_index(cuda, "cuda")
                               : nvml != NULL
                                   ? tc_topo_name_index(nvml, nvml[0] == 'n' ? "nvml" : "rsmi")
                                   : -1;
        }
    } else {
        tc_topo_scan_nic_t *n;

        if (s->nnics == TC_TOPO_MAX_NICS) {
            s->dropped_nics++;
            return;
        }
        n = &s->nics[s->nnics++];
        memset(n, 0, sizeof(*n));
        n->obj = pci;
        n->nic.kind = ofed != NULL ? TC_TOPO_NIC_RDMA : TC_TOPO_NIC_ETH;
        tc_topo_copy_name(n->nic.name, sizeof(n->nic.name), ofed != NULL ? ofed : net);
        if (net != NULL) {
            tc_topo_copy_name(n->nic.ifname, sizeof(n->nic.ifname), net);
        }
        n->nic.pci = tc_topo_pci_of(pci);
        n->nic.numa = numa;
        n->nic.package = package;
        n->nic.pci_switch = tc_topo_switch_of(s, pci);
    }
}

static int tc_topo_gpu_cmp(const void *pa, const void *pb)
{
    const tc_topo_scan_gpu_t *a = pa, *b = pb;
    if (a->gpu.dev_index != b->gpu.dev_index) {
        return a->gpu.dev_index < b->gpu.dev_index ? -1 : 1;
    }
    return a->gpu.pci < b->gpu.pci ? -1 : (a->gpu.pci > b->gpu.pci);
}

static int tc_topo_gpu_pci_cmp(const void *pa, const void *pb)
{
    const tc_topo_scan_gpu_t *a = pa, *b = pb;
    return a->gpu.pci < b->gpu.pci ? -1 : (a->gpu.pci > b->gpu.pci);
}

static int tc_topo_nic_cmp(const void *pa, const void *pb)
{
    const tc_topo_scan_nic_t *a = pa, *b = pb;
    if (a->nic.kind != b->nic.kind) {
        return a->nic.kind < b->nic.kind ? -1 : 1; /* RDMA first */
    }
    return a->nic.pci < b->nic.pci ? -1 : (a->nic.pci > b->nic.pci);
}

static int tc_topo_obj_depth(hwloc_obj_t obj)
{
    int d = 0;
    for (; obj->parent != NULL; obj = obj->parent) {
        d++;
    }
    return d;
}

/* Link class and hop count between two PCI devices. hwloc's common-ancestor helper
 * compares depths, which are negative for I/O objects, so walk by hand. */
static void tc_topo_distance(hwloc_obj_t a, hwloc_obj_t b, int numa_a, int numa_b, uint8_t *link_p,
                             uint8_t *hops_p)
{
    int da = tc_topo_obj_depth(a), db = tc_topo_obj_depth(b), hops = 0;

    while (da > db) {
        a = a->parent, da--, hops++;
    }
    while (db > da) {
        b = b->parent, db--, hops++;
    }
    while (a != b) {
        a = a->parent, b = b->parent, hops += 2;
    }
    if (a->type == HWLOC_OBJ_BRIDGE) {
        *link_p = a->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI ? TC_TOPO_LINK_PIX
                                                                        : TC_TOPO_LINK_PHB;
    } else {
        *link_p = numa_a >= 0 && numa_a == numa_b ? TC_TOPO_LINK_NODE : TC_TOPO_LINK_SYS;
    }
    *hops_p = (uint8_t)(hops > 255 ? 255 : hops);
}

void tc_topo_pair_gpus(tc_topo_node_t *node)
{
    int uses[TC_TOPO_MAX_NICS] = {0};
    int g, n;

    for (g = 0; g < node->ngpus; g++) {
        int best = -1;
        for (n = 0; n < node->nnics; n++) {
            /* closest link, fewest hops, RDMA first, least used, lowest index */
            if (best < 0 || node->link[g][n] < node->link[g][best] ||
                (node->link[g][n] == node->link[g][best] &&
                 (node->hops[g][n] < node->hops[g][best] ||
                  (node->hops[g][n] == node->hops[g][best] &&
                   (node->nics[n].kind < node->nics[best].kind ||
                    (node->nics[n].kind == node->nics[best].kind && uses[n] < uses[best])))))) {
                best = n;
            }
        }
        node->gpus[g].nic = best;
        if (best >= 0) {
            uses[best]++;
        }
    }
}

void tc_topo_scan(hwloc_topology_t topo, tc_topo_node_t *node)
{
    tc_topo_scan_t *s = calloc(1, sizeof(*s));
    hwloc_obj_t pci = NULL;
    int g, n, next_index = 0;

    node->npackages = tc_topo_count(topo, HWLOC_OBJ_PACKAGE);
    node->nnuma = tc_topo_count(topo, HWLOC_OBJ_NUMANODE);
    node->ncores = tc_topo_count(topo, HWLOC_OBJ_CORE);
    node->npus = tc_topo_count(topo, HWLOC_OBJ_PU);
    node->cache_size[0] = tc_topo_cache(topo, HWLOC_OBJ_L1CACHE);
    node->cache_size[1] = tc_topo_cache(topo, HWLOC_OBJ_L2CACHE);
    node->cache_size[2] = tc_topo_cache(topo, HWLOC_OBJ_L3CACHE);
    node->nl3 = tc_topo_count(topo, HWLOC_OBJ_L3CACHE);
    node->io_ok = hwloc_get_next_pcidev(topo, NULL) != NULL;
    node->ngpus = node->nnics = 0;
    if (!node->io_ok) {
        tc_log_info(TC_SUBSYS_TOPO, "hwloc reports no PCI device (container, VM or hwloc without "
                                    "I/O support): no GPU or NIC locality");
    }
    if (s == NULL) {
        tc_log_warn(TC_SUBSYS_TOPO, "no memory to scan the PCI devices; no GPU or NIC known");
        return;
    }
    s->topo = topo;
    while ((pci = hwloc_get_next_pcidev(topo, pci)) != NULL) {
        tc_topo_scan_pcidev(s, pci);
    }
    if (s->dropped_gpus > 0 || s->dropped_nics > 0) {
        tc_log_warn(TC_SUBSYS_TOPO, "%d GPUs and %d NICs beyond the first %d and %d left out",
                    s->dropped_gpus, s->dropped_nics, TC_TOPO_MAX_GPUS, TC_TOPO_MAX_NICS);
    }
    /* GPUs without a CUDA/NVML index are numbered after the others, in PCI order */
    qsort(s->gpus, (size_t)s->ngpus, sizeof(s->gpus[0]), tc_topo_gpu_pci_cmp);
    for (g = 0; g < s->ngpus; g++) {
        if (s->gpus[g].gpu.dev_index >= next_index) {
            next_index = s->gpus[g].gpu.dev_index + 1;
        }
    }
    for (g = 0; g < s->ngpus; g++) {
        if (s->gpus[g].gpu.dev_index < 0) {
            s->gpus[g].gpu.dev_index = next_index++;
        }
        if (s->gpus[g].gpu.name[0] == '\0') {
            snprintf(s->gpus[g].gpu.name, sizeof(s->gpus[g].gpu.name), "gpu%d",
                     s->gpus[g].gpu.dev_index);
        }
    }
    qsort(s->gpus, (size_t)s->ngpus, sizeof(s->gpus[0]), tc_topo_gpu_cmp);
    qsort(s->nics, (size_t)s->nnics, sizeof(s->nics[0]), tc_topo_nic_cmp);
    for (g = 0; g < s->ngpus; g++) {
        node->gpus[g] = s->gpus[g].gpu;
        for (n = 0; n < s->nnics; n++) {
            tc_topo_distance(s->gpus[g].obj, s->nics[n].obj, s->gpus[g].gpu.numa,
                             s->nics[n].nic.numa, &node->link[g][n], &node->hops[g][n]);
        }
    }
    for (n = 0; n < s->nnics; n++) {
        node->nics[n] = s->nics[n].nic;
    }
    node->ngpus = s->ngpus;
    node->nnics = s->nnics;
    tc_topo_pair_gpus(node);
    free(s);
}
