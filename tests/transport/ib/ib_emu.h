/* An emulated HCA behind the verbs seam: queue pairs of contexts in one process (any threads)
 * execute work requests by memcpy into the peer's registered memory and generate completions,
 * including remote access errors for bad keys and retry-exceeded errors once the peer QP is
 * destroyed. One global instance, protected by a mutex. */
#ifndef TCOMMS_TESTS_TRANSPORT_IB_EMU_H
#define TCOMMS_TESTS_TRANSPORT_IB_EMU_H

#include "tcomms/transport/ib.h"

/* The seam filled with the emulation. */
const tc_ib_verbs_t *ib_emu_verbs(void);

/* Knobs and counters (reset by ib_emu_reset). */
typedef struct ib_emu_stats {
    int reg_mr;      /* ibv_reg_mr calls */
    int dereg_mr;    /* ibv_dereg_mr calls */
    int live_qps;    /* QPs not destroyed */
    int live_mrs;
    int cq_overflow; /* completions dropped for a full CQ (a bug in the backend) */
} ib_emu_stats_t;

void ib_emu_reset(void);
ib_emu_stats_t ib_emu_stats(void);
/* 1: get_device_list fails with ENOSYS, like on a kernel without RDMA. */
void ib_emu_set_no_device(int on);
/* 1: the port reports DOWN. */
void ib_emu_set_port_down(int on);

#endif
