/* Pure checks of what an InfiniBand peer writes on an established connection: the immediate
 * word of a write with immediate data and the message header at the start of a ring slot.
 * Bytes in, a decision out, no endpoint state touched (ib_data.c acts on the decision; the fuzz
 * target tests/fuzz/ib drives these with hostile words and bytes). Formats: ib_internal.h. */
#ifndef TCOMMS_TRANSPORT_IB_PARSE_H
#define TCOMMS_TRANSPORT_IB_PARSE_H

#include <stdint.h>

/* What an immediate word is. */
typedef enum tc_ib_imm_verdict {
    TC_IB_IMM_IS_CREDIT = 0, /* credits only */
    TC_IB_IMM_IS_FIN,        /* a FIN for rendezvous id @c low (takes a credit) */
    TC_IB_IMM_IS_MSG,        /* a message of @c len bytes in ring slot @c slot */
    TC_IB_IMM_BAD_CREDITS,   /* returns more credits than ring slots are outstanding */
    TC_IB_IMM_BAD_KIND,      /* an unknown kind, or bytes with a FIN or CREDIT */
    TC_IB_IMM_BAD_SLOT,      /* a message in another slot than the next one */
    TC_IB_IMM_BAD_LEN,       /* a length outside the slot or other than the bytes written */
} tc_ib_imm_verdict_t;

/* The fields of an immediate word (all set, whatever the verdict). */
typedef struct tc_ib_imm_info {
    uint32_t kind, credits, low; /* bits 31-30, 29-22, 21-0 */
    uint32_t slot, len;          /* of a message: bits 21-14, 13-0 */
} tc_ib_imm_info_t;

/* Decide what immediate word @p imm (host order) with @p n bytes written means, for a receiver
 * with @p outstanding ring slots of its own not yet given back by the peer (TC_IB_NRECV minus
 * its send credits) that expects its next message in slot @p want_slot. */
tc_ib_imm_verdict_t tc_ib_imm_parse(uint32_t imm, uint32_t n, uint32_t outstanding,
                                    uint32_t want_slot, tc_ib_imm_info_t *info);

/* A message header at the start of a ring slot. */
typedef struct tc_ib_msg_info {
    int rts;          /* 1: a rendezvous (addr, rkey, cookie), 0: eager (payload follows) */
    uint64_t tag;
    uint64_t len;     /* eager: payload bytes (n - TC_IB_MSG_HDR); rts: bytes to read */
    uint64_t addr;    /* rts */
    uint32_t rkey;    /* rts */
    uint64_t cookie;  /* rts: the rendezvous id (at most TC_IB_RNDV_ID_MASK) */
} tc_ib_msg_info_t;

/* Check the @p n bytes at @p b that a message wrote into a ring slot (n is at least
 * TC_IB_MSG_HDR and at most TC_IB_SLOT, as tc_ib_imm_parse checked): 1 and @p info when it is
 * a well-formed eager message or rendezvous, 0 when it is malformed (info holds its type in
 * @c rts as -1 and its tag and length, for the error text). */
int tc_ib_msg_parse(const unsigned char *b, uint32_t n, tc_ib_msg_info_t *info);

#endif /* TCOMMS_TRANSPORT_IB_PARSE_H */
