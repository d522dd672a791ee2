/**
 * @file ib.h
 * @brief The InfiniBand/RoCE verbs backend (name "ib") and its verbs seam.
 *
 * Every libibverbs call of the backend goes through a ::tc_ib_verbs_t: the
 * production table (tc_ib_verbs_real()) calls libibverbs; tests pass an
 * emulated HCA to tc_tp_ib_ctx_create_verbs(). See docs/transport_ib.md for
 * the design and for exactly what has and has not run on real hardware.
 *
 * Addresses carry the port's LID and GID and the IPv4 address and port of a
 * small TCP listener used only for the queue-pair handshake (QP number and
 * PSN exchange before the RTR/RTS transitions); the smaller id connects.
 *
 * A context is not thread-safe: one thread at a time may call into it.
 */
#ifndef TCOMMS_TRANSPORT_IB_H
#define TCOMMS_TRANSPORT_IB_H

#include <infiniband/verbs.h>

#include "tcomms/transport/transport.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief The verbs calls the backend makes (same signatures as libibverbs). */
typedef struct tc_ib_verbs {
    struct ibv_device **(*get_device_list)(int *num_devices);
    void (*free_device_list)(struct ibv_device **list);
    const char *(*get_device_name)(struct ibv_device *device);
    struct ibv_context *(*open_device)(struct ibv_device *device);
    int (*close_device)(struct ibv_context *context);
    int (*query_port)(struct ibv_context *context, uint8_t port, struct ibv_port_attr *attr);
    int (*query_gid)(struct ibv_context *context, uint8_t port, int index, union ibv_gid *gid);
    struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
    int (*dealloc_pd)(struct ibv_pd *pd);
    struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access);
    int (*dereg_mr)(struct ibv_mr *mr);
    struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe, void *cq_context,
                                struct ibv_comp_channel *channel, int comp_vector);
    int (*destroy_cq)(struct ibv_cq *cq);
    struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
    int (*destroy_qp)(struct ibv_qp *qp);
    int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
    int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
    int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
    int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
} tc_ib_verbs_t;

/** @brief The ops table of the verbs backend (name "ib"), on the real libibverbs. */
extern const tc_tp_ops_t tc_tp_ib_ops;

/** @brief The table that calls libibverbs. */
const tc_ib_verbs_t *tc_ib_verbs_real(void);

/**
 * @brief What @p verbs offers: caps->available is 0 when no device can be
 *        opened, and tc_last_error() then says why. Returns TC_OK either way.
 */
tc_status_t tc_tp_ib_query_verbs(const tc_ib_verbs_t *verbs, tc_tp_caps_t *caps_p);

/**
 * @brief Create an "ib" context on @p verbs (tests: an emulated HCA). The
 *        context behaves as one from tc_tp_ctx_create(&tc_tp_ib_ops, ...).
 *        Hints: "ib.device" (name; default the first), "ib.port" (default 1),
 *        "ib.gid_index" (default 0); TC_IB_DEVICE / TC_IB_PORT override.
 * @return TC_ERR_UNSUPPORTED "no InfiniBand/RoCE device: ..." when there is none.
 */
tc_status_t tc_tp_ib_ctx_create_verbs(const tc_ib_verbs_t *verbs, const tc_tp_ctx_params_t *params,
                                      tc_tp_ctx_t **ctx_p);

/** @brief Largest message sent eagerly (through bounce buffers); larger ones use RDMA read. */
#define TC_TP_IB_EAGER_MAX 8192

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_TRANSPORT_IB_H */
