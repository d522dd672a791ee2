/* Fuzz what an InfiniBand peer writes on an established connection: the immediate words of its
 * writes with immediate data and the message headers in the ring slots they name
 * (tc_ib_imm_parse and tc_ib_msg_parse, transport/ib/src/ib_parse.h, which ib_data.c acts on).
 *
 * The input is a sequence of records: u32 immediate word (host order), u16 bytes written, then
 * that many bytes (at most a slot) of the slot they were written to. The harness keeps the
 * receiver's state as ib_data.c does (send credits, next slot) and stops at the first word the
 * endpoint would fail on.
 *
 * Properties: a message names the expected slot and a length within the slot, equal to the
 * bytes written (so its bytes lie inside the ring); credits never exceed the ring; an accepted
 * eager message's payload is exactly the rest of what was written and at most the eager limit,
 * an accepted rendezvous is a bare header with a length above it and an id within the mask; the
 * fields decode to what TC_IB_IMM encodes (decode(encode(x)) == x). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/ib/src/ib_internal.h"
#include "transport/ib/src/ib_parse.h"

static void check_roundtrip(uint32_t imm)
{
    tc_ib_imm_info_t f, g;
    (void)tc_ib_imm_parse(imm, 0, TC_IB_NRECV, 0, &f);
    if (TC_IB_IMM(f.kind, f.credits, f.low) != imm || (f.slot << 14 | f.len) != f.low)
        abort();
    (void)tc_ib_imm_parse(TC_IB_IMM(f.kind, f.credits, TC_IB_IMM_SLOT_LEN(f.slot, f.len)), 0,
                          TC_IB_NRECV, 0, &g);
    if (memcmp(&f, &g, sizeof(f)) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static unsigned char slot[TC_IB_SLOT]; /* exactly a slot: ASan sees a read past it */
    uint32_t tx_credits = TC_IB_NRECV / 2, rx_seq = 0;
    size_t pos = 0;
    while (size - pos >= 6) {
        uint32_t imm, want = rx_seq % TC_IB_NRECV;
        uint16_t n;
        memcpy(&imm, data + pos, 4);
        memcpy(&n, data + pos + 4, 2);
        pos += 6;
        size_t have = size - pos < n ? size - pos : n;
        have = have < sizeof(slot) ? have : sizeof(slot);
        check_roundtrip(imm);

        tc_ib_imm_info_t f;
        tc_ib_imm_verdict_t v = tc_ib_imm_parse(imm, n, TC_IB_NRECV - tx_credits, want, &f);
        if (v == TC_IB_IMM_BAD_CREDITS) {
            if (f.credits <= TC_IB_NRECV - tx_credits)
                abort();
            return 0;
        }
        tx_credits += f.credits;
        if (tx_credits > TC_IB_NRECV)
            abort();
        if (v == TC_IB_IMM_IS_CREDIT || v == TC_IB_IMM_IS_FIN) {
            if (n != 0 || (v == TC_IB_IMM_IS_CREDIT && f.low != 0))
                abort();
            rx_seq += v == TC_IB_IMM_IS_FIN;
            continue;
        }
        if (v != TC_IB_IMM_IS_MSG)
            return 0; /* the endpoint fails here */
        if (f.slot != want || f.len != n || f.len < TC_IB_MSG_HDR || f.len > TC_IB_SLOT ||
            (size_t)f.slot * TC_IB_SLOT + f.len > (size_t)TC_IB_NRECV * TC_IB_SLOT)
            abort();
        if (have < n)
            return 0; /* the input ran out */
        unsigned char *b = slot + sizeof(slot) - n; /* the bytes end where the slot ends */
        memcpy(b, data + pos, n);
        pos += n;
        tc_ib_msg_info_t m;
        if (!tc_ib_msg_parse(b, n, &m)) {
            if (m.rts != -1)
                abort();
            return 0;
        }
        if (m.rts == 0 && (b[0] != TC_IB_MSG_EAGER || m.len != n - (uint64_t)TC_IB_MSG_HDR ||
                           m.len > TC_TP_IB_EAGER_MAX))
            abort();
        if (m.rts == 1 && (b[0] != TC_IB_MSG_RTS || n != TC_IB_MSG_HDR ||
                           m.len <= TC_TP_IB_EAGER_MAX || m.len > UINT32_MAX ||
                           m.cookie > TC_IB_RNDV_ID_MASK))
            abort();
        rx_seq++;
    }
    return 0;
}
