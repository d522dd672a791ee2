/* The node descriptor: round trips, the size bound, and the strict decoder refusing
 * truncated, oversized, corrupted and out-of-range input with TC_ERR_PROTOCOL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/base/crc32c.h"
#include "tcomms/base/status.h"
#include "tcomms/topo/topo.h"
#include "topo_test_util.h"

static uint8_t buf[TC_TOPO_DESC_MAX + 64];

static void roundtrip(const tc_topo_node_t *node)
{
    tc_topo_node_t *out = calloc(1, sizeof(*out));
    size_t len = 0;
    const char *diff;

    assert_non_null(out);
    if (tc_topo_desc_encode(node, buf, sizeof(buf), &len) != TC_OK) {
        fail_msg("encode: %s", tc_last_error());
    }
    assert_true(len <= TC_TOPO_DESC_MAX);
    if (tc_topo_desc_decode(buf, len, out) != TC_OK) {
        fail_msg("decode: %s", tc_last_error());
    }
    diff = tc_test_node_diff(node, out);
    if (diff[0] != '\0') {
        fail_msg("round trip differs: %s", diff);
    }
    free(out);
}

static void test_roundtrip_machines(void **state)
{
    const char *files[] = {TC_FAKE_DGX8, TC_FAKE_PCIE4, TC_FAKE_CPU2S};
    tc_topo_node_t *node = calloc(1, sizeof(*node));
    size_t i;

    (void)state;
    for (i = 0; i < 3; i++) {
        assert_int_equal(tc_topo_node_from_xml(files[i], node), TC_OK);
        roundtrip(node);
    }
    assert_int_equal(tc_topo_node_probe(node), TC_OK);
    roundtrip(node);
    assert_int_equal(tc_topo_node_from_synthetic("pack:4 numa:2 core:3 pu:2", node), TC_OK);
    roundtrip(node);
    free(node);
}

/* The largest node fits the bound, and -1 fields survive. */
static void test_roundtrip_largest(void **state)
{
    tc_topo_node_t *node = calloc(1, sizeof(*node));
    int g, n;

    (void)state;
    memset(node->hostname, 'h', TC_TOPO_HOSTNAME_MAX - 1);
    node->node_id = UINT64_MAX;
    node->has_boot_id = node->hwloc_ok = node->io_ok = 1;
    node->source = TC_TOPO_SRC_SYNTHETIC;
    node->npackages = node->nnuma = 4;
    node->ncores = 1 << 20;
    node->npus = 1 << 22;
    node->cache_size[0] = UINT64_MAX;
    node->cache_size[2] = 1ull << 40;
    node->nl3 = 8;
    node->ngpus = TC_TOPO_MAX_GPUS;
    node->nnics = TC_TOPO_MAX_NICS;
    for (g = 0; g < TC_TOPO_MAX_GPUS; g++) {
        memset(node->gpus[g].name, 'g', TC_TOPO_DEVNAME_MAX - 1);
        node->gpus[g].dev_index = 1000000 - g;
        node->gpus[g].pci = 0xffffffffu - (unsigned)g;
        node->gpus[g].numa = g % 5 - 1;
        node->gpus[g].package = 3 - g % 5;
        node->gpus[g].pci_switch = g == 0 ? 1023 : -1;
        node->gpus[g].nic = g - 1;
        for (n = 0; n < TC_TOPO_MAX_NICS; n++) {
            node->link[g][n] = (uint8_t)((g + n) % 4);
            node->hops[g][n] = (uint8_t)(255 - g - n);
        }
    }
    for (n = 0; n < TC_TOPO_MAX_NICS; n++) {
        memset(node->nics[n].name, 'n', TC_TOPO_DEVNAME_MAX - 1);
        memset(node->nics[n].ifname, 'i', (size_t)n % TC_TOPO_IFNAME_MAX);
        node->nics[n].kind = n % 2;
        node->nics[n].numa = n % 5 - 1;
        node->nics[n].package = -1;
        node->nics[n].pci_switch = n;
    }
    roundtrip(node);
    free(node);
}

static size_t encode_small(const char *host, int ngpus, int nnics)
{
    tc_topo_node_t *node = calloc(1, sizeof(*node));
    size_t len;
    int g;

    snprintf(node->hostname, sizeof(node->hostname), "%s", host);
    node->node_id = 77;
    node->npackages = node->nnuma = 2;
    node->ncores = 4;
    node->npus = 8;
    node->ngpus = ngpus;
    node->nnics = nnics;
    for (g = 0; g < ngpus; g++) {
        snprintf(node->gpus[g].name, sizeof(node->gpus[g].name), "cuda%d", g);
        node->gpus[g].dev_index = g;
        node->gpus[g].nic = nnics > 0 ? 0 : -1;
        node->gpus[g].numa = node->gpus[g].package = node->gpus[g].pci_switch = 0;
    }
    for (g = 0; g < nnics; g++) {
        snprintf(node->nics[g].name, sizeof(node->nics[g].name), "mlx5_%d", g);
        node->nics[g].numa = node->nics[g].package = node->nics[g].pci_switch = -1;
    }
    assert_int_equal(tc_topo_desc_encode(node, buf, sizeof(buf), &len), TC_OK);
    free(node);
    return len;
}

/* Decode must fail with TC_ERR_PROTOCOL, a detail containing @p want, and no output. */
static void refused(size_t len, const char *want)
{
    tc_topo_node_t *out = malloc(sizeof(*out)), *before = malloc(sizeof(*out));

    memset(out, 0x5a, sizeof(*out));
    memcpy(before, out, sizeof(*out));
    if (tc_topo_desc_decode(buf, len, out) != TC_ERR_PROTOCOL) {
        fail_msg("%zu bytes accepted or wrong status; expected \"%s\"", len, want);
    }
    if (strstr(tc_last_error(), want) == NULL) {
        fail_msg("detail \"%s\" lacks \"%s\"", tc_last_error(), want);
    }
    assert_memory_equal(out, before, sizeof(*out));
    free(before);
    free(out);
}

static void reseal(size_t len)
{
    uint32_t crc = tc_crc32c(buf, len - 4);
    buf[len - 4] = (uint8_t)crc;
    buf[len - 3] = (uint8_t)(crc >> 8);
    buf[len - 2] = (uint8_t)(crc >> 16);
    buf[len - 1] = (uint8_t)(crc >> 24);
}

static void test_truncated_oversized_trailing(void **state)
{
    size_t len = encode_small("node-a", 2, 1), i;

    (void)state;
    for (i = 0; i < len; i++) {
        refused(i, "truncated");
    }
    refused(len - 1, "its header says");
    buf[len] = 0;
    refused(len + 1, "trailing bytes");
    memset(buf, 0, sizeof(buf));
    refused(TC_TOPO_DESC_MAX + 1, "oversized: 4097 bytes");
}

static void test_corrupted(void **state)
{
    size_t len = encode_small("node-b", 3, 2), i;
    int bit;

    (void)state;
    for (i = 0; i < len; i++) {
        for (bit = 0; bit < 8; bit += 3) {
            buf[i] ^= (uint8_t)(1u << bit);
            refused(len, i < 4   ? "bad magic"
                         : i < 6 ? "version"
                         : i < 8 ? "its header says"
                                 : "corrupted: CRC-32C");
            buf[i] ^= (uint8_t)(1u << bit);
        }
    }
    /* a future version, correctly sealed, is still refused by this build */
    buf[4] = 2;
    reseal(len);
    refused(len, "version 2, this build reads version 1");
}

/* Fields out of range behind a valid checksum. Layout of a node with host "h1":
 * 0 magic, 4 version, 6 length, 8 id, 16 flags, 17 source, 18 host length, 19 host,
 * 21 counts, 37 caches, 61 nl3, 65 ngpus, 66 nnics, 67 first GPU (name length). */
static void test_fields_out_of_range(void **state)
{
    size_t len;

    (void)state;
    len = encode_small("h1", 1, 1);
    buf[16] = 0x80;
    reseal(len);
    refused(len, "unknown flags 0x80 at offset 16");

    len = encode_small("h1", 1, 1);
    buf[17] = 9;
    reseal(len);
    refused(len, "source = 9, not in [0, 3]");

    len = encode_small("h1", 1, 1);
    buf[18] = 0;
    reseal(len);
    refused(len, "at offset"); /* the body shifts: the reader runs out of bytes */

    len = encode_small("h1", 1, 1);
    buf[19] = '\n';
    reseal(len);
    refused(len, "hostname is empty, too long or has a non-printable byte");

    len = encode_small("h1", 1, 1);
    buf[33] = 0; /* npus = 0 */
    reseal(len);
    refused(len, "npus = 0, not in [1,");

    len = encode_small("h1", 1, 1);
    buf[65] = TC_TOPO_MAX_GPUS + 1;
    reseal(len);
    refused(len, "17 GPUs and 1 NICs, at most 16 and 16");

    len = encode_small("h1", 1, 1);
    buf[67] = 200; /* GPU name length */
    reseal(len);
    refused(len, "the length 200 of a GPU name at offset 67 is too long");

    /* GPU 0: name "cuda0" at 68, index 73, pci 77, numa 81, package 83, switch 85, nic 87 */
    len = encode_small("h1", 1, 1);
    buf[81] = 2;
    reseal(len);
    refused(len, "gpus[0].numa = 2, not in [-1, 1]");

    len = encode_small("h1", 1, 1);
    buf[87] = 1;
    reseal(len);
    refused(len, "gpus[0].nic = 1, not in [-1, 0]");

    len = encode_small("h1", 1, 1);
    buf[len - 6] = 4; /* link[0][0] */
    reseal(len);
    refused(len, "link[0][0] = 4, not in [0, 3]");
}

static void test_encode_errors(void **state)
{
    tc_topo_node_t *node = calloc(1, sizeof(*node));
    size_t len, full;

    (void)state;
    assert_int_equal(tc_topo_node_from_xml(TC_FAKE_DGX8, node), TC_OK);
    assert_int_equal(tc_topo_desc_encode(node, buf, sizeof(buf), &full), TC_OK);
    len = 12345;
    assert_int_equal(tc_topo_desc_encode(node, buf, full - 1, &len), TC_ERR_TRUNCATED);
    assert_non_null(strstr(tc_last_error(), "too small"));
    assert_int_equal(len, 12345);
    assert_int_equal(tc_topo_desc_encode(node, buf, 0, &len), TC_ERR_TRUNCATED);
    assert_int_equal(tc_topo_desc_encode(NULL, buf, sizeof(buf), &len), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_topo_desc_encode(node, NULL, sizeof(buf), &len), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_topo_desc_decode(NULL, 10, node), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_topo_desc_decode(buf, full, NULL), TC_ERR_INVALID_ARG);
    node->gpus[3].numa = 7;
    assert_int_equal(tc_topo_desc_encode(node, buf, sizeof(buf), &len), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "gpus[3].numa = 7, not in [-1, 1]"));
    node->gpus[3].numa = 0;
    node->ngpus = TC_TOPO_MAX_GPUS + 1;
    assert_int_equal(tc_topo_desc_encode(node, buf, sizeof(buf), &len), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "ngpus = 17"));
    free(node);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_machines),
        cmocka_unit_test(test_roundtrip_largest),
        cmocka_unit_test(test_truncated_oversized_trailing),
        cmocka_unit_test(test_corrupted),
        cmocka_unit_test(test_fields_out_of_range),
        cmocka_unit_test(test_encode_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
