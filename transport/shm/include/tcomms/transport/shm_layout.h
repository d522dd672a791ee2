/**
 * @file shm_layout.h
 * @brief The layout of an shm segment: the "wire format" of the shm backend.
 *
 * Host byte order (both sides are on one node). Offsets in bytes:
 *   0    tc_shm_seg_hdr_t  identity, geometry, the handshake, per-side state,
 *        the single-copy sends each side withdrew
 *   2304  ring 0 (creator -> opener)
 *   2304 + ring_bytes  ring 1 (opener -> creator)
 *   2304 + 2 ring_bytes  lane 0 (creator -> opener), then lane 1 (opener -> creator),
 *                       TC_SHM_LANE_BYTES each (shm_lane.h: the small-message slots)
 * A ring is a head line (64 bytes, u64 cells consumed, written by the
 * consumer), a tail line (64 bytes, u64 cells produced, written by the
 * producer) and ncells cells of TC_SHM_CELL_HDR + cell_size bytes; cell i of
 * the stream lives at index i % ncells. ring_bytes = 128 + ncells *
 * (TC_SHM_CELL_HDR + cell_size). Counters only grow; tail - head <= ncells.
 */
#ifndef TCOMMS_TRANSPORT_SHM_LAYOUT_H
#define TCOMMS_TRANSPORT_SHM_LAYOUT_H

#include <stdint.h>

#define TC_SHM_MAGIC 0x314d485354435431ULL /* written last by the creator */
/* 2: challenge-response; 3: lanes after the rings; 4: slots by tag; 5: small and big slots;
 * 6: tiny slots before them; 7: tiny slots of two lines; 8: withdrawn single-copy sends */
#define TC_SHM_VERSION 8
#define TC_SHM_LINE 64
#define TC_SHM_HDR_SIZE 2304
/* Single-copy sends (RTS) one side may have announced and not yet seen acknowledged: at most
 * this many at a time per direction, so that each can be withdrawn into a slot of its own. */
#define TC_SHM_WITHDRAW_SLOTS 128
#define TC_SHM_CELL_HDR 64
#define TC_SHM_NONCE_LEN 32 /* TC_AUTH_NONCE_LEN */
#define TC_SHM_MAC_LEN 32   /* TC_AUTH_MAC_LEN */

/** @brief Per-side state word (state[0]: creator, state[1]: opener). */
enum { TC_SHM_SIDE_NONE = 0, TC_SHM_SIDE_UP = 1, TC_SHM_SIDE_CLOSED = 2 };

/** @brief A side's verdict on the other's proof (verdict[i]: side i's). */
enum { TC_SHM_VERDICT_NONE = 0, TC_SHM_VERDICT_OK = 1, TC_SHM_VERDICT_REFUSED = 2 };

/*
 * The handshake (tcomms/transport/auth.h, purpose "shm"; the creator is the
 * initiator, the opener the acceptor), through the header:
 *   creator  nonce[0] = Ni, then magic                       (it made the segment)
 *   opener   nonce[1] = Na, mac[1] = MAC(acceptor), proved[1] = 1, state[1] = UP
 *   creator  checks mac[1]; verdict[0]; if OK: mac[0] = MAC(initiator), proved[0] = 1
 *   opener   checks mac[0]; verdict[1]
 * The transcript binds both ids, both nonces and, as extra bytes, the segment's
 * name, version, geometry and both pids. Each side keeps its own copy of the
 * transcript and never re-reads a nonce from the segment after writing or
 * copying it; neither reads a ring before the other's MAC checked out.
 */

typedef struct tc_shm_seg_hdr {
    /* line 0: written by the creator before magic */
    uint64_t magic;
    uint32_t version;
    uint32_t cell_size; /* payload bytes per cell */
    uint32_t ncells;    /* cells per ring */
    uint32_t reserved;
    uint64_t seg_size;  /* bytes of the whole segment */
    uint64_t id[2];     /* ids of creator and opener */
    int32_t pid[2];     /* pids of creator and opener */
    uint64_t pidns;     /* the creator's pid namespace (inode): who may judge its pids */
    /* line 1: the handshake's nonces, each written by its side */
    unsigned char nonce[2][TC_SHM_NONCE_LEN];
    /* line 2: written by each side for itself */
    uint32_t state[2];   /* TC_SHM_SIDE_* (atomic) */
    uint32_t cma[2];     /* side i can process_vm_readv/writev the other side's memory */
    uint32_t proved[2];  /* side i has written mac[i] (atomic, release) */
    uint32_t verdict[2]; /* side i's TC_SHM_VERDICT_* on the other's MAC (atomic) */
    uint64_t withdraws[2]; /* side i's withdrawals so far (atomic; see withdrawn) */
    unsigned char pad1[16];
    /* line 3: the handshake's MACs, each written by its side */
    unsigned char mac[2][TC_SHM_MAC_LEN];
    /* lines 4-35: withdrawn[i] holds the cookies of single-copy sends (RTS) that side i
     * withdrew (its owner cancelled them) and the other side has not acknowledged yet, 0 in
     * a free slot. Side i writes the cookie, increments withdraws[i], then returns the
     * sender's memory to its owner; the reader checks the row after every piece it copies
     * (a piece read before the cookie appeared is the sender's data) and acknowledges a
     * withdrawn send without reading further, which frees the slot. */
    uint64_t withdrawn[2][TC_SHM_WITHDRAW_SLOTS];
} tc_shm_seg_hdr_t;

/** @brief Cell types. */
enum {
    TC_SHM_T_EAGER = 1,    /* tag, len: a whole message in the cell */
    TC_SHM_T_FIRST = 2,    /* tag, total, len: first cell of a message pipelined in cells */
    TC_SHM_T_MORE = 3,     /* off, len: a later cell of that message */
    TC_SHM_T_RTS = 4,      /* tag, total, addr, cookie: read it with process_vm_readv */
    TC_SHM_T_ACK = 5,      /* cookie: a rendezvous, put or signal is done */
    TC_SHM_T_PUT = 6,      /* aux=key, off, len, cookie, flags LAST: data for registered memory */
    TC_SHM_T_SIGNAL = 7,   /* aux=key, off, addr=value, flags=op, cookie */
    TC_SHM_T_GET_REQ = 8,  /* aux=key, off, total, cookie */
    TC_SHM_T_GET_DATA = 9, /* cookie, off (into the get), len, flags LAST */
};
#define TC_SHM_F_LAST 1u

typedef struct tc_shm_cell_hdr {
    uint32_t type;
    uint32_t flags;
    uint64_t len; /* payload bytes in this cell, <= cell_size */
    uint64_t tag;
    uint64_t total;
    uint64_t off;
    uint64_t cookie;
    uint64_t addr;
    uint64_t aux;
} tc_shm_cell_hdr_t;

_Static_assert(sizeof(tc_shm_seg_hdr_t) == TC_SHM_HDR_SIZE, "segment header is 2304 bytes");
_Static_assert(sizeof(tc_shm_cell_hdr_t) == TC_SHM_CELL_HDR, "cell header is 64 bytes");

#endif /* TCOMMS_TRANSPORT_SHM_LAYOUT_H */
