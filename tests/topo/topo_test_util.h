/* Helpers shared by the topo tests. */
#ifndef TC_TOPO_TEST_UTIL_H
#define TC_TOPO_TEST_UTIL_H

#include <stdio.h>
#include <string.h>

#include "tcomms/topo/topo.h"

/* The fake machines, relative to the runfiles root (the test's working directory). */
#define TC_FAKE_DGX8 "tests/topo/machines/dgx8.xml"
#define TC_FAKE_PCIE4 "tests/topo/machines/pcie4.xml"
#define TC_FAKE_CPU2S "tests/topo/machines/cpu2s.xml"

/* Every field of two nodes that a descriptor carries; "" when equal, else the first difference. */
static inline const char *tc_test_node_diff(const tc_topo_node_t *a, const tc_topo_node_t *b)
{
    static char what[128];
    int g, n;

#define TC_DIFF(f)                                                                                 \
    if (a->f != b->f) {                                                                            \
        snprintf(what, sizeof(what), "%s: %lld vs %lld", #f, (long long)a->f, (long long)b->f);    \
        return what;                                                                               \
    }
    if (strcmp(a->hostname, b->hostname) != 0) {
        return "hostname";
    }
    TC_DIFF(node_id)
    TC_DIFF(has_boot_id) TC_DIFF(hwloc_ok) TC_DIFF(npackages) TC_DIFF(nnuma) TC_DIFF(ncores)
        TC_DIFF(npus) TC_DIFF(source) TC_DIFF(io_ok) TC_DIFF(cache_size[0]) TC_DIFF(cache_size[1])
            TC_DIFF(cache_size[2]) TC_DIFF(nl3) TC_DIFF(ngpus)
                TC_DIFF(nnics) for (g = 0; g < a->ngpus; g++)
    {
        if (strcmp(a->gpus[g].name, b->gpus[g].name) != 0) {
            return "gpu name";
        }
        TC_DIFF(gpus[g].dev_index)
        TC_DIFF(gpus[g].pci) TC_DIFF(gpus[g].numa) TC_DIFF(gpus[g].package)
            TC_DIFF(gpus[g].pci_switch) TC_DIFF(gpus[g].nic) for (n = 0; n < a->nnics; n++)
        {
            TC_DIFF(link[g][n]) TC_DIFF(hops[g][n])
        }
    }
    for (n = 0; n < a->nnics; n++) {
        if (strcmp(a->nics[n].name, b->nics[n].name) != 0 ||
            strcmp(a->nics[n].ifname, b->nics[n].ifname) != 0) {
            return "nic name";
        }
        TC_DIFF(nics[n].kind)
        TC_DIFF(nics[n].pci) TC_DIFF(nics[n].numa) TC_DIFF(nics[n].package)
            TC_DIFF(nics[n].pci_switch)
    }
#undef TC_DIFF
    return "";
}

#endif /* TC_TOPO_TEST_UTIL_H */
