/* Shared between the files of the topo layer; not part of its interface. */
#ifndef TCOMMS_TOPO_INTERNAL_H
#define TCOMMS_TOPO_INTERNAL_H

#include <hwloc.h>
#include <stddef.h>

#include "tcomms/topo/topo.h"

/* Fill the hardware fields of @p node (counts, caches, GPUs, NICs, links) from a
 * loaded topology. Never fails: what hwloc does not know stays 0 / empty. */
void tc_topo_scan(hwloc_topology_t topo, tc_topo_node_t *node);

/* Pair each GPU with its best NIC from node->link and node->hops. */
void tc_topo_pair_gpus(tc_topo_node_t *node);

/* Find where an XML file is malformed: returns 1 and writes "line N: what" into
 * @p what, or 0 when it looks well-formed (then @p what describes the root
 * element, or says the file could not be read). */
int tc_topo_xml_check(const char *path, char *what, size_t len);

/* The first token of a synthetic description that hwloc refuses, described in
 * @p what (the token and its position). */
void tc_topo_synthetic_blame(const char *desc, char *what, size_t len);

#endif /* TCOMMS_TOPO_INTERNAL_H */
