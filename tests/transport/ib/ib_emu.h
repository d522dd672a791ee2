/* An emulated HCA behind the verbs seam: queue pairs of contexts in one process (any threads)
 * execute work requests by memcpy into the peer's registered memory and generate completions,
 * including remote access errors for bad keys and retry-exceeded errors once the peer QP is
 * destroyed. RDMA write with immediate data consumes the oldest posted receive of the target
 * and completes it as IBV_WC_RECV_RDMA_WITH_IMM; with no receive posted the write fails with
 * IBV_WC_RNR_RETRY_EXC_ERR (strict: real rnr_retry 7 would retry forever, the emulation makes a
 * flow-control bug visible). Zero-length RDMA writes are not checked against the rkey (as in the
 * InfiniBand specification) but need a live peer QP. One global instance, protected by a
 * mutex. */
#ifndef TCOMMS_TESTS_TRANSPORT_IB_EMU_H
#define TCOMMS_TESTS_TRANSPORT_IB_EMU_H

#include "tcomms/transport/ib.h"

/* The seam filled with the emulation. */
const tc_ib_verbs_t *tc_ibemu_verbs(void);

/* Knobs and counters (reset by tc_ibemu_reset). */
typedef struct tc_ibemu_stats {
    int reg_mr;   /* ibv_reg_mr calls */
    int dereg_mr; /* ibv_dereg_mr calls */
    int live_qps; /* QPs not destroyed */
    int rts_qps;  /* QPs moved to RTS (connected), ever */
    int live_mrs;
    int cq_overflow; /* completions dropped for a full CQ (a bug in the backend) */
    int writes_imm;  /* RDMA writes with immediate data executed */
    int zero_writes; /* zero-length RDMA writes (without immediate) executed */
    int rnr_errors;  /* writes with immediate data that found no posted receive */
    /* one-sided work requests executed successfully (not those that failed) */
    int writes;           /* RDMA writes of at least one byte, without immediate data */
    int reads;            /* RDMA reads */
    int fetch_adds;       /* atomic fetch-and-add */
    int cmp_swaps;        /* atomic compare-and-swap (whether it swapped or not) */
    uint64_t write_bytes; /* bytes of those writes */
    uint64_t read_bytes;  /* bytes of those reads */
    /* reads and atomics whose local buffer overlapped that of an earlier read or atomic of the
     * same QP whose completion was not yet polled: on a real HCA the two land in any order (a
     * bug in the backend) */
    int local_overlaps;
} ib_emu_stats_t;

void tc_ibemu_reset(void);
ib_emu_stats_t tc_ibemu_stats(void);
/* 1: get_device_list fails with ENOSYS, like on a kernel without RDMA. */
void tc_ibemu_set_no_device(int on);
/* 1: the port reports DOWN. */
void tc_ibemu_set_port_down(int on);
/* Called (emulation lock held) with every send work request before it executes: a test plays a
 * corrupt or hostile peer by changing it (immediate data, the bytes it sends, their length).
 * NULL: none. tc_ibemu_reset() removes it. */
typedef void (*ib_emu_tamper_fn)(struct ibv_send_wr *wr, void *arg);
void tc_ibemu_set_tamper(ib_emu_tamper_fn fn, void *arg);

#endif
