/* The production verbs table: libibverbs, opened with dlopen on first use so that a binary
 * linking tcomms starts on a machine without it. post and poll are inline in verbs.h (they call
 * through the context's ops), so they need no symbol from the library. */
#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "ib_internal.h"

/* The soname of rdma-core's libibverbs (ABI 1 since 2016). */
#define TC_IB_VERBS_SONAME "libibverbs.so.1"

static struct {
    pthread_once_t once;
    void *handle;
    char where[512]; /* the path it was loaded from, or why it was not */
    struct ibv_cq *(*create_cq)(struct ibv_context *, int, void *, struct ibv_comp_channel *, int);
    int (*query_port)(struct ibv_context *, uint8_t, struct ibv_port_attr *);
    struct ibv_mr *(*reg_mr)(struct ibv_pd *, void *, size_t, int);
    tc_ib_verbs_t table;
} tc_ib_lib = {.once = PTHREAD_ONCE_INIT};

static struct ibv_cq *tc_ib_real_create_cq(struct ibv_context *context, int cqe, void *cq_context,
                                           struct ibv_comp_channel *channel, int comp_vector)
{
    return tc_ib_lib.create_cq(context, cqe, cq_context, channel, comp_vector);
}

/* The library's exported ibv_query_port fills the original prefix of the attributes (state, lid,
 * mtu, link layer); verbs.h's inline wrapper would also try an extended query first. */
static int tc_ib_real_query_port(struct ibv_context *context, uint8_t port,
                                 struct ibv_port_attr *attr)
{
    memset(attr, 0, sizeof(*attr));
    return tc_ib_lib.query_port(context, port, attr);
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
    return tc_ib_lib.reg_mr(pd, addr, length, access);
}

/* Resolve @p name into @p *slot; 0 on success. */
static int tc_ib_sym(const char *name, void *slot)
{
    void *p = dlsym(tc_ib_lib.handle, name);

    if (p == NULL) {
        snprintf(tc_ib_lib.where, sizeof(tc_ib_lib.where), "%s has no symbol %s",
                 TC_IB_VERBS_SONAME, name);
        return -1;
    }
    memcpy(slot, &p, sizeof(p)); /* data to function pointer: POSIX guarantees this works */
    return 0;
}

static void tc_ib_load(void)
{
    tc_ib_verbs_t *t = &tc_ib_lib.table;
    const char *err;

    tc_ib_lib.handle = dlopen(TC_IB_VERBS_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (tc_ib_lib.handle == NULL) {
        err = dlerror();
        snprintf(tc_ib_lib.where, sizeof(tc_ib_lib.where), "not loaded: %s",
                 err != NULL ? err : TC_IB_VERBS_SONAME " not found");
        return;
    }
    if (tc_ib_sym("ibv_get_device_list", &t->get_device_list) ||
        tc_ib_sym("ibv_free_device_list", &t->free_device_list) ||
        tc_ib_sym("ibv_get_device_name", &t->get_device_name) ||
        tc_ib_sym("ibv_open_device", &t->open_device) ||
        tc_ib_sym("ibv_close_device", &t->close_device) ||
        tc_ib_sym("ibv_query_gid", &t->query_gid) || tc_ib_sym("ibv_alloc_pd", &t->alloc_pd) ||
        tc_ib_sym("ibv_dealloc_pd", &t->dealloc_pd) || tc_ib_sym("ibv_dereg_mr", &t->dereg_mr) ||
        tc_ib_sym("ibv_destroy_cq", &t->destroy_cq) || tc_ib_sym("ibv_create_qp", &t->create_qp) ||
        tc_ib_sym("ibv_destroy_qp", &t->destroy_qp) || tc_ib_sym("ibv_modify_qp", &t->modify_qp) ||
        tc_ib_sym("ibv_create_cq", &tc_ib_lib.create_cq) ||
        tc_ib_sym("ibv_query_port", &tc_ib_lib.query_port) ||
        tc_ib_sym("ibv_reg_mr", &tc_ib_lib.reg_mr)) {
        dlclose(tc_ib_lib.handle);
        tc_ib_lib.handle = NULL;
        return;
    }
    t->query_port = tc_ib_real_query_port;
    t->reg_mr = tc_ib_real_reg_mr;
    t->create_cq = tc_ib_real_create_cq;
    t->post_send = tc_ib_real_post_send;
    t->post_recv = tc_ib_real_post_recv;
    t->poll_cq = tc_ib_real_poll_cq;

    Dl_info info;
    void *fn;
    memcpy(&fn, &t->get_device_list, sizeof(fn));
    if (dladdr(fn, &info) != 0 && info.dli_fname != NULL)
        snprintf(tc_ib_lib.where, sizeof(tc_ib_lib.where), "%s", info.dli_fname);
    else
        snprintf(tc_ib_lib.where, sizeof(tc_ib_lib.where), "%s", TC_IB_VERBS_SONAME);
}

const tc_ib_verbs_t *tc_ib_verbs_real(void)
{
    pthread_once(&tc_ib_lib.once, tc_ib_load);
    if (tc_ib_lib.handle == NULL) {
        tc_error_set(TC_ERR_UNSUPPORTED, "no InfiniBand/RoCE support: libibverbs %s",
                     tc_ib_lib.where);
        return NULL;
    }
    return &tc_ib_lib.table;
}

int tc_tp_ib_verbs_library(const char **where_p)
{
    pthread_once(&tc_ib_lib.once, tc_ib_load);
    if (where_p != NULL)
        *where_p = tc_ib_lib.where;
    return tc_ib_lib.handle != NULL;
}
