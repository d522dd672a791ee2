/* The node descriptor: a versioned, bounded, checksummed binary encoding of a
 * tc_topo_node_t, and its strict decoder (the bytes come from peers).
 *
 * Version 1, little-endian:
 *   u32 magic "TCTD", u16 version, u16 total length (with the checksum)
 *   u64 node id, u8 flags (1 boot id, 2 hwloc ok, 4 I/O ok), u8 source
 *   u8 hostname length (1..255), the hostname
 *   u32 packages, NUMA nodes, cores, PUs; u64 L1d, L2, L3 sizes; u32 L3 count
 *   u8 GPUs (<= 16), u8 NICs (<= 16)
 *   per GPU: u8 name length, name, u32 dev index, u32 PCI id,
 *            i16 NUMA, i16 package, i16 switch, i8 NIC
 *   per NIC: u8 name length, name, u8 ifname length, ifname, u8 kind, u32 PCI id,
 *            i16 NUMA, i16 package, i16 switch
 *   per GPU, per NIC: u8 link, u8 hops
 *   u32 CRC-32C of everything before it
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/base/crc32c.h"
#include "tcomms/base/wire.h"
#include "tcomms/topo/topo.h"

#define TC_TOPO_DESC_MAGIC 0x44544354u /* "TCTD" in little-endian */
#define TC_TOPO_DESC_HEAD 8            /* magic, version, length */
#define TC_TOPO_DESC_MIN (TC_TOPO_DESC_HEAD + 4)
#define TC_TOPO_DESC_COUNT_MAX (1 << 22) /* bound on packages, NUMA nodes, cores, PUs */
#define TC_TOPO_DESC_SWITCH_MAX 1023
#define TC_TOPO_DESC_DEVINDEX_MAX 1000000
#define TC_TOPO_FLAG_BOOT_ID 1u
#define TC_TOPO_FLAG_HWLOC 2u
#define TC_TOPO_FLAG_IO 4u

/* ---- checks shared by the encoder (bad arguments) and decoder (bad bytes) ---- */

static int tc_topo_text_ok(const char *s, size_t max, int allow_empty)
{
    size_t n = strnlen(s, max);
    size_t i;

    if (n == max || (n == 0 && !allow_empty)) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e) {
            return 0;
        }
    }
    return 1;
}

#define TC_TOPO_RANGE(val, lo, hi, ...)                                                            \
    do {                                                                                           \
        if ((long long)(val) < (long long)(lo) || (long long)(val) > (long long)(hi)) {            \
            int off_ = snprintf(what, len, __VA_ARGS__);                                           \
            if (off_ >= 0 && (size_t)off_ < len) {                                                 \
                snprintf(what + off_, len - (size_t)off_, " = %lld, not in [%lld, %lld]",          \
                         (long long)(val), (long long)(lo), (long long)(hi));                      \
            }                                                                                      \
            return 0;                                                                              \
        }                                                                                          \
    } while (0)

/* 1 when every field is in range, else 0 with @p what naming the field. */
static int tc_topo_node_check(const tc_topo_node_t *node, char *what, size_t len)
{
    int g, n;

    if (!tc_topo_text_ok(node->hostname, sizeof(node->hostname), 0)) {
        snprintf(what, len, "hostname is empty, too long or has a non-printable byte");
        return 0;
    }
    TC_TOPO_RANGE(node->source, 0, TC_TOPO_SRC_SYNTHETIC, "source");
    TC_TOPO_RANGE(node->npackages, 0, TC_TOPO_DESC_COUNT_MAX, "npackages");
    TC_TOPO_RANGE(node->nnuma, 0, TC_TOPO_DESC_COUNT_MAX, "nnuma");
    TC_TOPO_RANGE(node->ncores, 0, TC_TOPO_DESC_COUNT_MAX, "ncores");
    TC_TOPO_RANGE(node->npus, 1, TC_TOPO_DESC_COUNT_MAX, "npus");
    TC_TOPO_RANGE(node->nl3, 0, TC_TOPO_DESC_COUNT_MAX, "nl3");
    TC_TOPO_RANGE(node->ngpus, 0, TC_TOPO_MAX_GPUS, "ngpus");
    TC_TOPO_RANGE(node->nnics, 0, TC_TOPO_MAX_NICS, "nnics");
    for (g = 0; g < node->ngpus; g++) {
        const tc_topo_gpu_t *gpu = &node->gpus[g];
        if (!tc_topo_text_ok(gpu->name, sizeof(gpu->name), 0)) {
            snprintf(what, len, "gpus[%d].name is empty, too long or has a non-printable byte", g);
            return 0;
        }
        TC_TOPO_RANGE(gpu->dev_index, 0, TC_TOPO_DESC_DEVINDEX_MAX, "gpus[%d].dev_index", g);
        TC_TOPO_RANGE(gpu->numa, -1, node->nnuma - 1, "gpus[%d].numa", g);
        TC_TOPO_RANGE(gpu->package, -1, node->npackages - 1, "gpus[%d].package", g);
        TC_TOPO_RANGE(gpu->pci_switch, -1, TC_TOPO_DESC_SWITCH_MAX, "gpus[%d].pci_switch", g);
        TC_TOPO_RANGE(gpu->nic, -1, node->nnics - 1, "gpus[%d].nic", g);
        for (n = 0; n < node->nnics; n++) {
            TC_TOPO_RANGE(node->link[g][n], 0, TC_TOPO_LINK_SYS, "link[%d][%d]", g, n);
        }
    }
    for (n = 0; n < node->nnics; n++) {
        const tc_topo_nic_t *nic = &node->nics[n];
        if (!tc_topo_text_ok(nic->name, sizeof(nic->name), 0) ||
            !tc_topo_text_ok(nic->ifname, sizeof(nic->ifname), 1)) {
            snprintf(what, len,
                     "nics[%d] name or ifname is empty, too long or has a "
                     "non-printable byte",
                     n);
            return 0;
        }
        TC_TOPO_RANGE(nic->kind, TC_TOPO_NIC_RDMA, TC_TOPO_NIC_ETH, "nics[%d].kind", n);
        TC_TOPO_RANGE(nic->numa, -1, node->nnuma - 1, "nics[%d].numa", n);
        TC_TOPO_RANGE(nic->package, -1, node->npackages - 1, "nics[%d].package", n);
        TC_TOPO_RANGE(nic->pci_switch, -1, TC_TOPO_DESC_SWITCH_MAX, "nics[%d].pci_switch", n);
    }
    return 1;
}

/* ---- encoder ---- */

static tc_status_t tc_topo_put_text(tc_wire_writer_t *w, const char *s)
{
    size_t n = strlen(s);
    tc_status_t st = tc_wire_put_u8(w, (uint8_t)n);
    return st != TC_OK ? st : tc_wire_put_bytes(w, s, n);
}

#define TC_TOPO_PUT(call)                                                                          \
    do {                                                                                           \
        if ((st = (call)) != TC_OK) {                                                              \
            goto short_buf;                                                                        \
        }                                                                                          \
    } while (0)

tc_status_t tc_topo_desc_encode(const tc_topo_node_t *node, void *buf, size_t cap, size_t *len_p)
{
    tc_wire_writer_t w;
    tc_status_t st;
    char what[160];
    uint8_t flags;
    int g, n;

    if (node == NULL || buf == NULL || len_p == NULL) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_topo_desc_encode: %s is NULL",
                            node == NULL  ? "node"
                            : buf == NULL ? "buf"
                                          : "len_p");
    }
    if (!tc_topo_node_check(node, what, sizeof(what))) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_topo_desc_encode: %s", what);
    }
    flags =
        (uint8_t)((node->has_boot_id ? TC_TOPO_FLAG_BOOT_ID : 0) |
                  (node->hwloc_ok ? TC_TOPO_FLAG_HWLOC : 0) | (node->io_ok ? TC_TOPO_FLAG_IO : 0));
    tc_wire_writer_init(&w, buf, cap);
    TC_TOPO_PUT(tc_wire_put_u32(&w, TC_TOPO_DESC_MAGIC));
    TC_TOPO_PUT(tc_wire_put_u16(&w, TC_TOPO_DESC_VERSION));
    TC_TOPO_PUT(tc_wire_put_u16(&w, 0)); /* length, patched below */
    TC_TOPO_PUT(tc_wire_put_u64(&w, node->node_id));
    TC_TOPO_PUT(tc_wire_put_u8(&w, flags));
    TC_TOPO_PUT(tc_wire_put_u8(&w, (uint8_t)node->source));
    TC_TOPO_PUT(tc_topo_put_text(&w, node->hostname));
    TC_TOPO_PUT(tc_wire_put_u32(&w, (uint32_t)node->npackages));
    TC_TOPO_PUT(tc_wire_put_u32(&w, (uint32_t)node->nnuma));
    TC_TOPO_PUT(tc_wire_put_u32(&w, (uint32_t)node->ncores));
    TC_TOPO_PUT(tc_wire_put_u32(&w, (uint32_t)node->npus));
    for (g = 0; g < 3; g++) {
        TC_TOPO_PUT(tc_wire_put_u64(&w, node->cache_size[g]));
    }
    TC_TOPO_PUT(tc_wire_put_u32(&w, (uint32_t)node->nl3));
    TC_TOPO_PUT(tc_wire_put_u8(&w, (uint8_t)node->ngpus));
    TC_TOPO_PUT(tc_wire_put_u8(&w, (uint8_t)node->nnics));
    for (g = 0; g < node->ngpus; g++) {
        const tc_topo_gpu_t *gpu = &node->gpus[g];
        TC_TOPO_PUT(tc_topo_put_text(&w, gpu->name));
        TC_TOPO_PUT(tc_wire_put_u32(&w, (uint32_t)gpu->dev_index));
        TC_TOPO_PUT(tc_wire_put_u32(&w, gpu->pci));
        TC_TOPO_PUT(tc_wire_put_u16(&w, (uint16_t)gpu->numa));
        TC_TOPO_PUT(tc_wire_put_u16(&w, (uint16_t)gpu->package));
        TC_TOPO_PUT(tc_wire_put_u16(&w, (uint16_t)gpu->pci_switch));
        TC_TOPO_PUT(tc_wire_put_u8(&w, (uint8_t)gpu->nic));
    }
    for (n = 0; n < node->nnics; n++) {
        const tc_topo_nic_t *nic = &node->nics[n];
        TC_TOPO_PUT(tc_topo_put_text(&w, nic->name));
        TC_TOPO_PUT(tc_topo_put_text(&w, nic->ifname));
        TC_TOPO_PUT(tc_wire_put_u8(&w, (uint8_t)nic->kind));
        TC_TOPO_PUT(tc_wire_put_u32(&w, nic->pci));
        TC_TOPO_PUT(tc_wire_put_u16(&w, (uint16_t)nic->numa));
        TC_TOPO_PUT(tc_wire_put_u16(&w, (uint16_t)nic->package));
        TC_TOPO_PUT(tc_wire_put_u16(&w, (uint16_t)nic->pci_switch));
    }
    for (g = 0; g < node->ngpus; g++) {
        for (n = 0; n < node->nnics; n++) {
            TC_TOPO_PUT(tc_wire_put_u8(&w, node->link[g][n]));
            TC_TOPO_PUT(tc_wire_put_u8(&w, node->hops[g][n]));
        }
    }
    if (w.pos + 4 > TC_TOPO_DESC_MAX) {
        return tc_error_set(TC_ERR_INTERNAL,
                            "tc_topo_desc_encode: %zu bytes exceed the "
                            "%d-byte bound",
                            w.pos + 4, TC_TOPO_DESC_MAX);
    }
    ((uint8_t *)buf)[6] = (uint8_t)((w.pos + 4) & 0xff);
    ((uint8_t *)buf)[7] = (uint8_t)((w.pos + 4) >> 8);
    TC_TOPO_PUT(tc_wire_put_u32(&w, tc_crc32c(buf, w.pos)));
    *len_p = w.pos;
    return TC_OK;

short_buf:
    return tc_error_set(st,
                        "tc_topo_desc_encode: a buffer of %zu bytes is too small (at least "
                        "%zu needed so far)",
                        cap, w.pos + 8);
}

/* ---- decoder ---- */

typedef struct tc_topo_rd {
    tc_wire_reader_t r;
    const char *field; /* what is being read, for the error */
} tc_topo_rd_t;

#define TC_TOPO_GET(call, name)                                                                    \
    do {                                                                                           \
        rd.field = (name);                                                                         \
        if ((rst = (call)) != TC_OK) {                                                             \
            goto truncated;                                                                        \
        }                                                                                          \
    } while (0)

static tc_status_t tc_topo_get_text(tc_wire_reader_t *r, char *dst, size_t cap)
{
    uint8_t n;
    tc_status_t st;

    if ((st = tc_wire_get_u8(r, &n)) != TC_OK) {
        return st;
    }
    if ((size_t)n >= cap) {
        r->pos--; /* report the length byte itself */
        return TC_ERR_INVALID_ARG;
    }
    if ((st = tc_wire_get_bytes(r, dst, n)) != TC_OK) {
        r->pos--;
        return st;
    }
    dst[n] = '\0';
    if (strlen(dst) != n) {
        r->pos -= (size_t)n + 1;
        return TC_ERR_UNSUPPORTED; /* a NUL inside: would not re-encode the same */
    }
    return TC_OK;
}

/* Out-of-range counts stay out of range (and are refused by the check). */
static int tc_topo_int(uint32_t v)
{
    return v > 0x7fffffffu ? 0x7fffffff : (int)v;
}

static int16_t tc_topo_s16(uint16_t v)
{
    return (int16_t)(v >= 0x8000u ? (int)v - 0x10000 : (int)v);
}

tc_status_t tc_topo_desc_decode(const void *buf, size_t len, tc_topo_node_t *node_p)
{
    const uint8_t *p = buf;
    tc_topo_node_t *node = NULL;
    tc_topo_rd_t rd;
    uint32_t magic, crc, stored_crc, u32;
    uint16_t version, total, u16;
    uint8_t flags, u8, ng, nn;
    char what[160];
    int g, n;
    tc_status_t st, rst;

    if (buf == NULL || node_p == NULL) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_topo_desc_decode: %s is NULL",
                            buf == NULL ? "buf" : "node_p");
    }
    if (len < TC_TOPO_DESC_MIN) {
        return tc_error_set(TC_ERR_PROTOCOL,
                            "topology descriptor truncated: %zu bytes, fewer "
                            "than the %d of an empty one",
                            len, TC_TOPO_DESC_MIN);
    }
    if (len > TC_TOPO_DESC_MAX) {
        return tc_error_set(TC_ERR_PROTOCOL,
                            "topology descriptor oversized: %zu bytes, more "
                            "than the %d allowed",
                            len, TC_TOPO_DESC_MAX);
    }
    tc_wire_reader_init(&rd.r, buf, len);
    (void)tc_wire_get_u32(&rd.r, &magic);
    (void)tc_wire_get_u16(&rd.r, &version);
    (void)tc_wire_get_u16(&rd.r, &total);
    if (magic != TC_TOPO_DESC_MAGIC) {
        return tc_error_set(TC_ERR_PROTOCOL,
                            "topology descriptor: bad magic 0x%08x (expected "
                            "0x%08x, \"TCTD\")",
                            magic, TC_TOPO_DESC_MAGIC);
    }
    if (version != TC_TOPO_DESC_VERSION) {
        return tc_error_set(TC_ERR_PROTOCOL,
                            "topology descriptor: version %u, this build reads "
                            "version %d (are all ranks running the same tcomms?)",
                            version, TC_TOPO_DESC_VERSION);
    }
    if (total != len) {
        return tc_error_set(TC_ERR_PROTOCOL,
                            "topology descriptor %s: its header says %u bytes, "
                            "%zu received",
                            total > len ? "truncated" : "with trailing bytes", total, len);
    }
    stored_crc = (uint32_t)p[len - 4] | (uint32_t)p[len - 3] << 8 | (uint32_t)p[len - 2] << 16 |
                 (uint32_t)p[len - 1] << 24;
    crc = tc_crc32c(buf, len - 4);
    if (crc != stored_crc) {
        return tc_error_set(TC_ERR_PROTOCOL,
                            "topology descriptor corrupted: CRC-32C 0x%08x, the "
                            "descriptor says 0x%08x",
                            crc, stored_crc);
    }
    if ((node = calloc(1, sizeof(*node))) == NULL) {
        return tc_error_set(TC_ERR_NO_MEMORY, "tc_topo_desc_decode: no memory");
    }
    rd.r.len = len - 4; /* the body, without the checksum */
    TC_TOPO_GET(tc_wire_get_u64(&rd.r, &node->node_id), "node id");
    TC_TOPO_GET(tc_wire_get_u8(&rd.r, &flags), "flags");
    if (flags & ~(TC_TOPO_FLAG_BOOT_ID | TC_TOPO_FLAG_HWLOC | TC_TOPO_FLAG_IO)) {
        st = tc_error_set(TC_ERR_PROTOCOL,
                          "topology descriptor: unknown flags 0x%02x at offset "
                          "%zu",
                          flags, rd.r.pos - 1);
        goto out;
    }
    node->has_boot_id = !!(flags & TC_TOPO_FLAG_BOOT_ID);
    node->hwloc_ok = !!(flags & TC_TOPO_FLAG_HWLOC);
    node->io_ok = !!(flags & TC_TOPO_FLAG_IO);
    TC_TOPO_GET(tc_wire_get_u8(&rd.r, &u8), "source");
    node->source = u8;
    TC_TOPO_GET(tc_topo_get_text(&rd.r, node->hostname, sizeof(node->hostname)), "hostname");
    TC_TOPO_GET(tc_wire_get_u32(&rd.r, &u32), "npackages");
    node->npackages = tc_topo_int(u32);
    TC_TOPO_GET(tc_wire_get_u32(&rd.r, &u32), "nnuma");
    node->nnuma = tc_topo_int(u32);
    TC_TOPO_GET(tc_wire_get_u32(&rd.r, &u32), "ncores");
    node->ncores = tc_topo_int(u32);
    TC_TOPO_GET(tc_wire_get_u32(&rd.r, &u32), "npus");
    node->npus = tc_topo_int(u32);
    for (g = 0; g < 3; g++) {
        TC_TOPO_GET(tc_wire_get_u64(&rd.r, &node->cache_size[g]), "cache sizes");
    }
    TC_TOPO_GET(tc_wire_get_u32(&rd.r, &u32), "nl3");
    node->nl3 = tc_topo_int(u32);
    TC_TOPO_GET(tc_wire_get_u8(&rd.r, &ng), "ngpus");
    TC_TOPO_GET(tc_wire_get_u8(&rd.r, &nn), "nnics");
    /* bound the counts before they index the arrays */
    if (ng > TC_TOPO_MAX_GPUS || nn > TC_TOPO_MAX_NICS) {
        st = tc_error_set(TC_ERR_PROTOCOL,
                          "topology descriptor: %u GPUs and %u NICs, at most "
                          "%d and %d allowed",
                          ng, nn, TC_TOPO_MAX_GPUS, TC_TOPO_MAX_NICS);
        goto out;
    }
    node->ngpus = ng;
    node->nnics = nn;
    for (g = 0; g < ng; g++) {
        tc_topo_gpu_t *gpu = &node->gpus[g];
        TC_TOPO_GET(tc_topo_get_text(&rd.r, gpu->name, sizeof(gpu->name)), "a GPU name");
        TC_TOPO_GET(tc_wire_get_u32(&rd.r, &u32), "a GPU index");
        gpu->dev_index = tc_topo_int(u32);
        TC_TOPO_GET(tc_wire_get_u32(&rd.r, &gpu->pci), "a GPU PCI id");
        TC_TOPO_GET(tc_wire_get_u16(&rd.r, &u16), "a GPU NUMA node");
        gpu->numa = tc_topo_s16(u16);
        TC_TOPO_GET(tc_wire_get_u16(&rd.r, &u16), "a GPU package");
        gpu->package = tc_topo_s16(u16);
        TC_TOPO_GET(tc_wire_get_u16(&rd.r, &u16), "a GPU switch");
        gpu->pci_switch = tc_topo_s16(u16);
        TC_TOPO_GET(tc_wire_get_u8(&rd.r, &u8), "a GPU NIC");
        /* NOLINTNEXTLINE(bugprone-signed-char-misuse,cert-str34-c): a signed byte, 0xff: -1 */
        gpu->nic = (int8_t)u8;
    }
    for (n = 0; n < nn; n++) {
        tc_topo_nic_t *nic = &node->nics[n];
        TC_TOPO_GET(tc_topo_get_text(&rd.r, nic->name, sizeof(nic->name)), "a NIC name");
        TC_TOPO_GET(tc_topo_get_text(&rd.r, nic->ifname, sizeof(nic->ifname)), "a NIC ifname");
        TC_TOPO_GET(tc_wire_get_u8(&rd.r, &u8), "a NIC kind");
        nic->kind = u8;
        TC_TOPO_GET(tc_wire_get_u32(&rd.r, &nic->pci), "a NIC PCI id");
        TC_TOPO_GET(tc_wire_get_u16(&rd.r, &u16), "a NIC NUMA node");
        nic->numa = tc_topo_s16(u16);
        TC_TOPO_GET(tc_wire_get_u16(&rd.r, &u16), "a NIC package");
        nic->package = tc_topo_s16(u16);
        TC_TOPO_GET(tc_wire_get_u16(&rd.r, &u16), "a NIC switch");
        nic->pci_switch = tc_topo_s16(u16);
    }
    for (g = 0; g < ng; g++) {
        for (n = 0; n < nn; n++) {
            TC_TOPO_GET(tc_wire_get_u8(&rd.r, &node->link[g][n]), "the GPU-NIC links");
            TC_TOPO_GET(tc_wire_get_u8(&rd.r, &node->hops[g][n]), "the GPU-NIC links");
        }
    }
    if (tc_wire_reader_left(&rd.r) != 0) {
        st = tc_error_set(TC_ERR_PROTOCOL,
                          "topology descriptor: %zu unexpected bytes at offset "
                          "%zu, before the checksum",
                          tc_wire_reader_left(&rd.r), rd.r.pos);
        goto out;
    }
    if (!tc_topo_node_check(node, what, sizeof(what))) {
        st = tc_error_set(TC_ERR_PROTOCOL, "topology descriptor: %s", what);
        goto out;
    }
    *node_p = *node;
    st = TC_OK;
    goto out;

truncated:
    if (rst == TC_ERR_UNSUPPORTED) {
        st = tc_error_set(TC_ERR_PROTOCOL,
                          "topology descriptor: %s at offset %zu contains a NUL "
                          "byte",
                          rd.field, rd.r.pos);
    } else if (rst == TC_ERR_INVALID_ARG) {
        st = tc_error_set(TC_ERR_PROTOCOL,
                          "topology descriptor: the length %u of %s at offset "
                          "%zu is too long",
                          rd.r.buf[rd.r.pos], rd.field, rd.r.pos);
    } else {
        st = tc_error_set(TC_ERR_PROTOCOL,
                          "topology descriptor: %s at offset %zu runs past the "
                          "end of the %zu-byte body",
                          rd.field, rd.r.pos, rd.r.len);
    }
out:
    free(node);
    return st;
}
