/**
 * @file topo.h
 * @brief What this node is made of, and where every rank of a job sits.
 *
 * A node is identified by a 64-bit id: a hash of its hostname and of its
 * boot id (/proc/sys/kernel/random/boot_id), so two containers with the
 * same hostname on different machines, or one machine before and after a
 * reboot, get different ids. Ranks exchange their ids (the caller moves
 * them: PMIx, a store, ...) and tc_topo_job_build() turns the array into
 * the job's layout.
 */
#ifndef TCOMMS_TOPO_TOPO_H
#define TCOMMS_TOPO_TOPO_H

#include <stddef.h>
#include <stdint.h>

#include "tcomms/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief Longest hostname kept, with its terminating NUL. */
#define TC_TOPO_HOSTNAME_MAX 256
/** @brief Most GPUs described per node (more are left out, with a warning). */
#define TC_TOPO_MAX_GPUS 16
/** @brief Most NICs described per node (more are left out, with a warning). */
#define TC_TOPO_MAX_NICS 16
/** @brief Longest device name kept ("cuda0", "mlx5_3"), with its NUL. */
#define TC_TOPO_DEVNAME_MAX 32
/** @brief Longest network interface name kept ("ens1f0"), with its NUL (IFNAMSIZ). */
#define TC_TOPO_IFNAME_MAX 16

/** @brief Where the description of a node came from. */
typedef enum tc_topo_source {
    TC_TOPO_SRC_NONE = 0,      /**< hwloc failed: only the number of online CPUs */
    TC_TOPO_SRC_HOST = 1,      /**< hwloc discovery of this machine */
    TC_TOPO_SRC_XML = 2,       /**< TC_TOPO_XML (an hwloc XML file) */
    TC_TOPO_SRC_SYNTHETIC = 3, /**< TC_TOPO_SYNTHETIC (an hwloc synthetic string) */
} tc_topo_source_t;

/**
 * @brief How far apart two PCI devices are, best first (NCCL's PIX/PHB/NODE/SYS).
 */
typedef enum tc_topo_link {
    TC_TOPO_LINK_PIX = 0,  /**< same PCI switch: their common ancestor is a PCI bridge */
    TC_TOPO_LINK_PHB = 1,  /**< same PCI host bridge */
    TC_TOPO_LINK_NODE = 2, /**< different host bridges of the same NUMA node */
    TC_TOPO_LINK_SYS = 3,  /**< across NUMA nodes or sockets */
} tc_topo_link_t;

/** @brief The kind of a NIC. */
typedef enum tc_topo_nic_kind {
    TC_TOPO_NIC_RDMA = 0, /**< has an OpenFabrics device (InfiniBand, RoCE): "mlx5_0" */
    TC_TOPO_NIC_ETH = 1,  /**< a plain network interface only: "ens1f0" */
} tc_topo_nic_kind_t;

/**
 * @brief PCI bus id packed as domain << 16 | bus << 8 | device << 3 | function.
 */
typedef uint32_t tc_topo_pci_t;

/** @brief A GPU (a PCI device with a CUDA/NVML/other coprocessor OS device). */
typedef struct tc_topo_gpu {
    char name[TC_TOPO_DEVNAME_MAX]; /**< "cuda0", else "nvml0", else "gpu0" */
    int dev_index;                  /**< the N of cudaN/nvmlN, else rank in PCI bus order */
    tc_topo_pci_t pci;              /**< PCI bus id */
    int numa;                       /**< NUMA node (logical index), -1 unknown or several */
    int package;                    /**< package (logical index), -1 unknown or several */
    int pci_switch;                 /**< switch id on this node (see below), -1 none */
    int nic;                        /**< index in nics[] of the NIC paired with it, -1 none */
} tc_topo_gpu_t;

/** @brief A NIC: one PCI device with an OpenFabrics and/or network OS device. */
typedef struct tc_topo_nic {
    char name[TC_TOPO_DEVNAME_MAX];  /**< "mlx5_0", or the interface name for a plain NIC */
    char ifname[TC_TOPO_IFNAME_MAX]; /**< network interface ("ibp0s0", "eth0"), "" if none */
    int kind;                        /**< ::tc_topo_nic_kind_t */
    tc_topo_pci_t pci;               /**< PCI bus id */
    int numa;                        /**< NUMA node (logical index), -1 unknown or several */
    int package;                     /**< package (logical index), -1 unknown or several */
    int pci_switch;                  /**< switch id on this node, -1 none */
} tc_topo_nic_t;

/**
 * @brief This node.
 *
 * The switch id of a device is the number (0, 1, ... in discovery order) of
 * the top PCI-to-PCI bridge above it, the one right below its host bridge:
 * a PCIe switch or a root port. Devices with equal ids share a switch.
 */
typedef struct tc_topo_node {
    char hostname[TC_TOPO_HOSTNAME_MAX];  /**< gethostname(), NUL-terminated */
    uint64_t node_id;                     /**< tc_topo_node_id(hostname, boot id) */
    int has_boot_id;                      /**< whether the boot id was readable */
    int hwloc_ok;                         /**< whether hwloc described the machine */
    int npackages;                        /**< CPU packages (sockets); 0 when unknown */
    int nnuma;                            /**< NUMA nodes; 0 when unknown */
    int ncores;                           /**< cores; 0 when unknown */
    int npus;                             /**< processing units (hardware threads), >= 1 */
    int source;                           /**< ::tc_topo_source_t */
    int io_ok;                            /**< whether hwloc reported PCI devices */
    uint64_t cache_size[3];               /**< bytes of one L1d, L2, L3 cache; 0 unknown */
    int nl3;                              /**< L3 caches */
    int ngpus;                            /**< GPUs in gpus[] */
    int nnics;                            /**< NICs in nics[] */
    tc_topo_gpu_t gpus[TC_TOPO_MAX_GPUS]; /**< by dev_index */
    tc_topo_nic_t nics[TC_TOPO_MAX_NICS]; /**< RDMA first, each kind by PCI bus id */
    /** ::tc_topo_link_t between GPU g and NIC n: link[g][n] */
    uint8_t link[TC_TOPO_MAX_GPUS][TC_TOPO_MAX_NICS];
    /** edges on the PCI/object tree path between GPU g and NIC n */
    uint8_t hops[TC_TOPO_MAX_GPUS][TC_TOPO_MAX_NICS];
} tc_topo_node_t;

/**
 * @brief The id of a node: a 64-bit hash (FNV-1a) of the hostname and the
 *        boot id.
 * @param hostname the hostname (not NULL).
 * @param boot_id the boot id text, or NULL when unknown.
 * @return the id, never 0.
 */
uint64_t tc_topo_node_id(const char *hostname, const char *boot_id);

/**
 * @brief Describe this node.
 *
 * Sources, first match wins: TC_TOPO_XML (an hwloc XML file), TC_TOPO_SYNTHETIC
 * (an hwloc synthetic string, CPUs only), else hwloc's discovery of this
 * machine (which honours HWLOC_XMLFILE and HWLOC_SYNTHETIC).
 *
 * Discovery degrades, never fails: when hwloc cannot load the topology a
 * warning is logged and only npus is known (hwloc_ok = 0, from sysconf);
 * without PCI information (containers, VMs, no hwloc I/O support) io_ok = 0
 * and there are no GPUs or NICs. The hostname and node id are always this
 * machine's, whatever the source.
 * @param node_p receives the description.
 * @return TC_OK; TC_ERR_INVALID_ARG for NULL; TC_ERR_SYSTEM if the hostname
 *         cannot be read; TC_ERR_CONFIG when both overrides are set, or when an
 *         override cannot be loaded (see tc_topo_node_from_xml() and
 *         tc_topo_node_from_synthetic()).
 */
tc_status_t tc_topo_node_probe(tc_topo_node_t *node_p);

/**
 * @brief Describe this node from an hwloc XML file instead of the hardware.
 * @param path the file.
 * @param node_p receives the description (hostname and node id of this machine).
 * @return TC_OK; TC_ERR_INVALID_ARG for NULL; TC_ERR_CONFIG when the file cannot
 *         be read or hwloc refuses it: the detail names the file and, when the
 *         XML is malformed, the line and what is wrong there.
 */
tc_status_t tc_topo_node_from_xml(const char *path, tc_topo_node_t *node_p);

/**
 * @brief Describe this node from an hwloc synthetic string ("pack:2 core:4 pu:2").
 * @param desc the string.
 * @param node_p receives the description (hostname and node id of this machine).
 * @return TC_OK; TC_ERR_INVALID_ARG for NULL; TC_ERR_CONFIG when hwloc refuses
 *         it: the detail quotes the first token that makes it invalid.
 */
tc_status_t tc_topo_node_from_synthetic(const char *desc, tc_topo_node_t *node_p);

/**
 * @brief How many CPUs the ranks of this node may run on together.
 *
 * The fewest of the online CPUs and the cgroup limits (tc_topo_cgroup_cpus():
 * a container's `--cpus` or `--cpuset-cpus`, Slurm's ConstrainCores). A
 * process's affinity mask is not counted: launchers bind each rank to cores
 * of its own, so it says nothing of what the node's ranks share.
 * @return the count, or 0 when even the online count cannot be read.
 */
int tc_topo_cpus_usable(void);

/**
 * @brief The CPUs the cgroups of a process allow, 0 when they set no limit.
 *
 * For each group of proc_cgroup and each of its parents (a parent's limit binds
 * its children): the CPU quota rounded up (cgroup v2's `cpu.max`, v1's
 * `cpu.cfs_quota_us` / `cpu.cfs_period_us`) and the cpuset's CPUs (v2's
 * `cpuset.cpus.effective`, v1's `cpuset.effective_cpus` or `cpuset.cpus`).
 * v2 files are read under root, a v1 controller's under root/NAMES.
 * @param root the cgroup mount point, normally "/sys/fs/cgroup".
 * @param proc_cgroup the text of /proc/self/cgroup ("0::/a/b\n", "4:cpu,cpuacct:/a\n").
 * @return the smallest limit found, or 0 when none is set or readable.
 */
int tc_topo_cgroup_cpus(const char *root, const char *proc_cgroup);

/** @brief Short name of a ::tc_topo_link_t ("PIX", "PHB", "NODE", "SYS"; "?" otherwise). */
const char *tc_topo_link_name(int link);

/** @brief Short name of a ::tc_topo_source_t ("none", "host", "xml", "synthetic"). */
const char *tc_topo_source_name(int source);

/**
 * @brief Write a PCI bus id as "dddd:bb:dd.f".
 * @param pci the id.
 * @param buf receives the text.
 * @param len size of @p buf (13 bytes are enough).
 */
void tc_topo_pci_format(tc_topo_pci_t pci, char *buf, size_t len);

/* ---- node descriptor: what ranks exchange during bootstrap ---- */

/** @brief Largest encoded descriptor, in bytes. */
#define TC_TOPO_DESC_MAX 4096
/** @brief Version of the descriptor encoding written by this build. */
#define TC_TOPO_DESC_VERSION 1

/**
 * @brief Encode a node into its descriptor (little-endian, versioned, with a
 *        CRC-32C at the end; at most TC_TOPO_DESC_MAX bytes).
 * @param node the node (as filled by a probe or a decode).
 * @param buf receives the bytes.
 * @param cap size of @p buf.
 * @param len_p receives the length written.
 * @return TC_OK; TC_ERR_INVALID_ARG for NULL or a node whose fields are out of
 *         range (the detail names the field); TC_ERR_TRUNCATED when @p cap is too small.
 */
tc_status_t tc_topo_desc_encode(const tc_topo_node_t *node, void *buf, size_t cap, size_t *len_p);

/**
 * @brief Decode a descriptor received from a peer (untrusted bytes).
 *
 * Strict: the magic, version, length, every count and index, every string and
 * the checksum are checked, and nothing may follow the checksum.
 * @param buf the bytes.
 * @param len their number.
 * @param node_p receives the node on success only.
 * @return TC_OK; TC_ERR_INVALID_ARG for NULL; TC_ERR_PROTOCOL with the field and
 *         the offending value for anything malformed, truncated or oversized.
 */
tc_status_t tc_topo_desc_decode(const void *buf, size_t len, tc_topo_node_t *node_p);

/**
 * @brief Where the ranks of a job sit. Arrays are owned by the job.
 *
 * The ring visits the nodes in node order and, inside a node, groups ranks by
 * PCI switch, then GPU, then rank, so that ring neighbours share a node and a
 * switch as much as possible. The tree is a chain inside each node (in ring
 * order, from the node's first rank in the ring) and a binary tree over the
 * nodes' first ranks: node k hangs below node (k - 1) / 2.
 */
typedef struct tc_topo_job {
    int nranks;         /**< ranks in the job */
    int nnodes;         /**< distinct nodes */
    int *rank_node;     /**< [nranks] node index of each rank (0..nnodes-1) */
    int *local_rank;    /**< [nranks] rank among the ranks of its node (by rank order) */
    int *local_size;    /**< [nranks] number of ranks on the node of each rank */
    int *node_leader;   /**< [nnodes] lowest rank of each node */
    int *node_size;     /**< [nnodes] ranks on each node */
    uint64_t *node_ids; /**< [nnodes] the id of each node */
    int *rank_gpu;      /**< [nranks] index in its node's gpus[] of the rank's GPU, -1 none */
    int *rank_nic;      /**< [nranks] index in its node's nics[] of the rank's NIC, -1 none */
    int *ring;          /**< [nranks] the ring: ring[i] is the rank at position i */
    int *ring_pos;      /**< [nranks] position of each rank in the ring */
    int *tree_parent;   /**< [nranks] parent of each rank in the tree, -1 for the root */
    int tree_root;      /**< the root of the tree (ring[0]) */
} tc_topo_job_t;

/**
 * @brief Build the layout of a job from the node id of every rank.
 *
 * Nodes are numbered in the order of their lowest rank: rank 0 is on node 0,
 * and node k's leader is smaller than node k+1's. O(nranks log nranks).
 * @param node_ids the node id of each rank.
 * @param nranks number of ranks (>= 1).
 * @param job_p receives the layout; free it with tc_topo_job_free().
 * @return TC_OK; TC_ERR_INVALID_ARG for NULL or nranks < 1; TC_ERR_NO_MEMORY.
 */
tc_status_t tc_topo_job_build(const uint64_t *node_ids, int nranks, tc_topo_job_t *job_p);

/**
 * @brief Build the layout of a job from the node description of every rank.
 *
 * As tc_topo_job_build() on the node ids, plus each rank's GPU and NIC: with
 * GPUs, GPU local_rank % ngpus and the NIC paired with it; without, NIC
 * local_rank % (RDMA NICs, or all NICs when there is none). The ring and tree
 * follow the PCI switches. Ranks of one node should send equal descriptions;
 * the leader's is used.
 * @param nodes the description of each rank (decoded descriptors).
 * @param nranks number of ranks (>= 1).
 * @param job_p receives the layout; free it with tc_topo_job_free().
 * @return TC_OK; TC_ERR_INVALID_ARG for NULL, nranks < 1 or a node with counts
 *         out of range; TC_ERR_NO_MEMORY.
 */
tc_status_t tc_topo_job_build_nodes(const tc_topo_node_t *nodes, int nranks, tc_topo_job_t *job_p);

/**
 * @brief Whether two ranks of a job are on the same node (0 for ranks out of range).
 * @param job the job.
 * @param a a rank.
 * @param b another.
 * @return 1 or 0.
 */
int tc_topo_job_same_node(const tc_topo_job_t *job, int a, int b);

/**
 * @brief The children of a rank in the job's tree, in ring order.
 * @param job the job.
 * @param rank the rank.
 * @param children receives up to @p max ranks.
 * @param max size of @p children.
 * @return the number of children (may exceed @p max; only @p max are written),
 *         or -1 for a rank out of range.
 */
int tc_topo_job_tree_children(const tc_topo_job_t *job, int rank, int *children, int max);

/**
 * @brief Free the arrays of a job (NULL or an already freed job is fine).
 * @param job the job.
 */
void tc_topo_job_free(tc_topo_job_t *job);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_TOPO_TOPO_H */
