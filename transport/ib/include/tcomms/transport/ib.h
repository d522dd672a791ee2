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
 *
 * Environment: TC_IB_DEVICE, TC_IB_PORT (see tc_tp_ib_ctx_create_verbs()),
 * TC_IB_KEEPALIVE_MS (default 1000, 0: off): an endpoint that waits for its
 * peer (a pending receive, a rendezvous send waiting for its FIN, ...) and has
 * seen no completion for that long sends a zero-length RDMA write, whose
 * failure fails the endpoint with TC_ERR_PEER_FAILED;
 * TC_IB_REG_CACHE (default 0: a transfer of memory not registered with
 * tc_tp_mem_reg() registers it and deregisters it when it completes; 1: such
 * registrations stay cached, see tc_tp_ib_mem_invalidate()) and
 * TC_IB_REG_CACHE_MAX (default 256): unused cached registrations kept, least
 * recently used released first. All are read when a context is created.
 */
#ifndef TCOMMS_TRANSPORT_IB_H
#define TCOMMS_TRANSPORT_IB_H

#include <infiniband/verbs.h>

#include "tcomms/transport/transport.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Check every TC_IB_* variable (TC_IB_DEVICE, TC_IB_PORT,
 *        TC_IB_KEEPALIVE_MS, TC_IB_REG_CACHE, TC_IB_REG_CACHE_MAX) without a
 *        device: what a context would refuse is refused here on any machine.
 * @return TC_OK, or TC_ERR_CONFIG naming the variable and the accepted values.
 */
tc_status_t tc_tp_ib_config_check(void);

/**
 * @brief Check the backend's hints (ib.device, ib.port, ib.gid_index) without a device, as
 *        tc_tp_ib_config_check() does the variables.
 * @return TC_OK, or TC_ERR_CONFIG naming the hint and the accepted values.
 */
tc_status_t tc_tp_ib_hints_check(const tc_hints_t *hints);

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

/**
 * @brief The table that calls libibverbs, which is opened with dlopen
 *        ("libibverbs.so.1") on the first call: a program linking tcomms does
 *        not need the library to start. NULL when it cannot be loaded
 *        (tc_last_error() says why).
 */
const tc_ib_verbs_t *tc_ib_verbs_real(void);

/**
 * @brief Whether libibverbs could be loaded: 1, with @p *where_p the path it
 *        was loaded from, or 0, with @p *where_p the reason. Thread-safe.
 */
int tc_tp_ib_verbs_library(const char **where_p);

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

/**
 * @brief Largest message sent eagerly (RDMA write with immediate data into a slot of the peer's
 *        receive ring); larger ones use rendezvous with RDMA read.
 */
#define TC_TP_IB_EAGER_MAX 8192

/**
 * @brief Forget cached registrations overlapping [addr, addr + len) of @p ctx, before that
 *        memory is freed or unmapped (or right after, before the range can be reused).
 *
 * With TC_IB_REG_CACHE=1 the registration cache keeps buffers used by rendezvous
 * sends/receives, put and get registered after the transfer; nothing tells it when the
 * application frees them. A range freed and then mapped again at the same address would
 * otherwise be served by the stale registration (pinned pages of the old mapping) on real
 * hardware. Dropped entries that no request in flight uses are deregistered at once, the others
 * when their last request completes. Memory registered with tc_tp_mem_reg() stays valid until
 * tc_tp_mem_dereg() (which also releases its registration once unused). Not needed with
 * TC_IB_REG_CACHE=0 (the default), where only tc_tp_mem_reg() registrations outlive a transfer,
 * and those end at tc_tp_mem_dereg().
 *
 * @return TC_OK (also when nothing overlaps or @p len is 0); TC_ERR_INVALID_ARG when @p ctx is
 *         NULL or not an "ib" context, or the range wraps.
 */
tc_status_t tc_tp_ib_mem_invalidate(tc_tp_ctx_t *ctx, const void *addr, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_TRANSPORT_IB_H */
