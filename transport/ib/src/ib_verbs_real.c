/* The production verbs table: libibverbs (post and poll are inline there, hence wrappers). */
#include <infiniband/verbs.h>

#include "ib_internal.h"

static struct ibv_cq *tc_ib_real_create_cq(struct ibv_context *context, int cqe, void *cq_context,
                                           struct ibv_comp_channel *channel, int comp_vector)
{
    return ibv_create_cq(context, cqe, cq_context, channel, comp_vector);
}

static int tc_ib_real_query_port(struct ibv_context *context, uint8_t port,
                                 struct ibv_port_attr *attr)
{
    return ibv_query_port(context, port, attr);
}

static int tc_ib_real_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
                                struct ibv_send_wr **bad_wr)
{
    return ibv_post_send(qp, wr, bad_wr);
}

static int tc_ib_real_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
                                struct ibv_recv_wr **bad_wr)
{
    return ibv_post_recv(qp, wr, bad_wr);
}

static int tc_ib_real_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
    return ibv_poll_cq(cq, num_entries, wc);
}

static struct ibv_mr *tc_ib_real_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
    return ibv_reg_mr(pd, addr, length, access);
}

static const tc_ib_verbs_t tc_ib_verbs_libibverbs = {
    .get_device_list = ibv_get_device_list,
    .free_device_list = ibv_free_device_list,
    .get_device_name = ibv_get_device_name,
    .open_device = ibv_open_device,
    .close_device = ibv_close_device,
    .query_port = tc_ib_real_query_port,
    .query_gid = ibv_query_gid,
    .alloc_pd = ibv_alloc_pd,
    .dealloc_pd = ibv_dealloc_pd,
    .reg_mr = tc_ib_real_reg_mr,
    .dereg_mr = ibv_dereg_mr,
    .create_cq = tc_ib_real_create_cq,
    .destroy_cq = ibv_destroy_cq,
    .create_qp = ibv_create_qp,
    .destroy_qp = ibv_destroy_qp,
    .modify_qp = ibv_modify_qp,
    .post_send = tc_ib_real_post_send,
    .post_recv = tc_ib_real_post_recv,
    .poll_cq = tc_ib_real_poll_cq,
};

const tc_ib_verbs_t *tc_ib_verbs_real(void)
{
    return &tc_ib_verbs_libibverbs;
}
