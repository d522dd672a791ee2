/* Fuzz the frame headers of the bootstrap store (runtime/src/boot_store.c,
 * tc_boot_store_hdr_parse), which the store applies to every frame from a client and every
 * client to every frame from the store. The input is a sequence of 8-byte headers.
 *
 * Properties: a header is accepted exactly when its reserved bytes are zero, its type is one of
 * the ten and its length at most TC_BS_MAX_BODY; an accepted header re-encodes to the very
 * same bytes (decode(encode(x)) == x), a refused one leaves the outputs untouched and says why.
 * (The bodies after joining: store_body_fuzz; joining: store_auth_fuzz.) */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/src/boot_store.h"
#include "tcomms/base/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (size_t pos = 0; size - pos >= TC_BS_HDR_LEN; pos += TC_BS_HDR_LEN) {
        const uint8_t *h = data + pos;
        uint8_t type = 0xee, again[TC_BS_HDR_LEN];
        uint32_t len = 0xdeadbeef;
        uint32_t want_len = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 |
                            (uint32_t)h[3] << 24;
        int t = h[4];
        int valid = h[5] == 0 && h[6] == 0 && h[7] == 0 && want_len <= TC_BS_MAX_BODY &&
                    (t == TC_BS_HELLO || t == TC_BS_PUT || t == TC_BS_FENCE || t == TC_BS_GET ||
                     t == TC_BS_BYE || t == TC_BS_NOTIFY || t == TC_BS_PROOF ||
                     t == TC_BS_REPLY || t == TC_BS_EVENT || t == TC_BS_CHALLENGE);
        tc_status_t st = tc_boot_store_hdr_parse(h, &type, &len);
        if ((st == TC_OK) != valid)
            abort();
        if (st != TC_OK) {
            if (st != TC_ERR_PROTOCOL || type != 0xee || len != 0xdeadbeef ||
                tc_last_error()[0] == '\0')
                abort();
            continue;
        }
        if (type != t || len != want_len)
            abort();
        tc_boot_store_hdr_write(again, type, len);
        if (memcmp(again, h, TC_BS_HDR_LEN) != 0)
            abort();
    }
    return 0;
}
