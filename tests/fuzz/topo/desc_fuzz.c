/* Fuzz the node descriptor decoder with hostile bytes.
 *
 * Properties: decoding never crashes or reads out of bounds (ASan); a descriptor
 * that decodes re-encodes to the very same bytes (the encoding is canonical) and
 * builds a job. Half the inputs get a correct length and checksum patched in, so
 * the fuzzer reaches the field checks behind the CRC. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/base/crc32c.h"
#include "tcomms/topo/topo.h"

static void check_one(const uint8_t *data, size_t size)
{
    static tc_topo_node_t node;
    static uint8_t again[TC_TOPO_DESC_MAX];
    tc_topo_job_t job;
    size_t len;

    if (tc_topo_desc_decode(data, size, &node) != TC_OK) {
        return;
    }
    if (tc_topo_desc_encode(&node, again, sizeof(again), &len) != TC_OK || len != size ||
        memcmp(again, data, size) != 0) {
        abort(); /* accepted bytes that do not re-encode to themselves */
    }
    if (tc_topo_job_build_nodes(&node, 1, &job) != TC_OK) {
        abort();
    }
    tc_topo_job_free(&job);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t buf[TC_TOPO_DESC_MAX];
    uint32_t crc;

    check_one(data, size);
    if (size >= 12 && size <= sizeof(buf)) {
        memcpy(buf, data, size);
        buf[6] = (uint8_t)size;
        buf[7] = (uint8_t)(size >> 8);
        crc = tc_crc32c(buf, size - 4);
        buf[size - 4] = (uint8_t)crc;
        buf[size - 3] = (uint8_t)(crc >> 8);
        buf[size - 2] = (uint8_t)(crc >> 16);
        buf[size - 1] = (uint8_t)(crc >> 24);
        check_one(buf, size);
    }
    return 0;
}
