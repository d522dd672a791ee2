/* The emulated HCA (see ib_emu.h). Work requests execute synchronously inside post_send. */
#include "ib_emu.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct emu_mr {
    struct ibv_mr mr;
    int access;
    struct emu_mr *next;
} emu_mr_t;

typedef struct emu_cq {
    struct ibv_cq cq;
    struct ibv_wc *ring;
    int cap, head, n;
} emu_cq_t;

typedef struct emu_recv {
    uint64_t wr_id;
    uint64_t addr;
    uint32_t len, lkey;
} emu_recv_t;

typedef struct emu_msg {
    struct emu_msg *next;
    uint32_t len;
    unsigned char data[];
} emu_msg_t;

/* The local memory an executed RDMA read or atomic wrote, until its completion is polled. */
typedef struct emu_lw {
    uint64_t wr_id, addr;
    uint32_t len;
} emu_lw_t;

typedef struct emu_qp {
    struct ibv_qp qp;
    emu_lw_t *lw; /* oldest first; max_send_wr entries */
    int lw_cap, lw_n;
    uint32_t dest;
    int access;
    emu_recv_t *rq;
    int rq_cap, rq_head, rq_n;
    emu_msg_t *in_head, *in_tail; /* sends that found no receive (RNR: retried forever) */
    struct emu_qp *next;
} emu_qp_t;

static pthread_mutex_t emu_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ibv_device emu_dev;
static struct ibv_device *emu_list[2];
static emu_mr_t *emu_mrs;
static emu_qp_t *emu_qps;
static uint32_t emu_next_key = 0x100, emu_next_qpn = 0x40, emu_next_lid = 1;
static int emu_no_device, emu_port_down;
static ib_emu_stats_t emu_stats;
static ib_emu_tamper_fn emu_tamper;
static void *emu_tamper_arg;

void tc_ibemu_reset(void)
{
    pthread_mutex_lock(&emu_lock);
    memset(&emu_stats, 0, sizeof(emu_stats));
    __atomic_store_n(&emu_no_device, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&emu_port_down, 0, __ATOMIC_RELAXED);
    emu_tamper = NULL;
    emu_tamper_arg = NULL;
    pthread_mutex_unlock(&emu_lock);
}

void tc_ibemu_set_tamper(ib_emu_tamper_fn fn, void *arg)
{
    pthread_mutex_lock(&emu_lock);
    emu_tamper = fn;
    emu_tamper_arg = arg;
    pthread_mutex_unlock(&emu_lock);
}

ib_emu_stats_t tc_ibemu_stats(void)
{
    pthread_mutex_lock(&emu_lock);
    ib_emu_stats_t s = emu_stats;
    pthread_mutex_unlock(&emu_lock);
    return s;
}

void tc_ibemu_set_no_device(int on)
{
    __atomic_store_n(&emu_no_device, on, __ATOMIC_RELAXED);
}

void tc_ibemu_set_port_down(int on)
{
    __atomic_store_n(&emu_port_down, on, __ATOMIC_RELAXED);
}

/* Contexts are opened from any thread (several worlds in one process): the list is filled once,
 * under the lock. */
static struct ibv_device **e_get_device_list(int *num)
{
    if (__atomic_load_n(&emu_no_device, __ATOMIC_RELAXED)) {
        errno = ENOSYS;
        if (num)
            *num = 0;
        return NULL;
    }
    pthread_mutex_lock(&emu_lock);
    if (emu_list[0] == NULL) {
        strcpy(emu_dev.name, "emu0");
        emu_list[0] = &emu_dev;
    }
    pthread_mutex_unlock(&emu_lock);
    if (num)
        *num = 1;
    return emu_list;
}

static void e_free_device_list(struct ibv_device **list)
{
    (void)list;
}

static const char *e_get_device_name(struct ibv_device *d)
{
    return d->name;
}

typedef struct emu_ctx {
    struct ibv_context ctx;
    uint16_t lid;
} emu_ctx_t;

static struct ibv_context *e_open_device(struct ibv_device *d)
{
    emu_ctx_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->ctx.device = d;
    pthread_mutex_lock(&emu_lock);
    c->lid = (uint16_t)emu_next_lid++;
    pthread_mutex_unlock(&emu_lock);
    return &c->ctx;
}

static int e_close_device(struct ibv_context *c)
{
    free(c);
    return 0;
}

static int e_query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *a)
{
    if (port != 1) {
        errno = EINVAL;
        return EINVAL;
    }
    memset(a, 0, sizeof(*a));
    a->state = __atomic_load_n(&emu_port_down, __ATOMIC_RELAXED) ? IBV_PORT_DOWN : IBV_PORT_ACTIVE;
    a->active_mtu = IBV_MTU_4096;
    a->lid = ((emu_ctx_t *)c)->lid;
    return 0;
}

static int e_query_gid(struct ibv_context *c, uint8_t port, int index, union ibv_gid *gid)
{
    (void)c;
    (void)port;
    (void)index;
    memset(gid, 0, sizeof(*gid)); /* InfiniBand: LID routed */
    return 0;
}

static struct ibv_pd *e_alloc_pd(struct ibv_context *c)
{
    struct ibv_pd *pd = calloc(1, sizeof(*pd));
    if (pd)
        pd->context = c;
    return pd;
}

static int e_dealloc_pd(struct ibv_pd *pd)
{
    free(pd);
    return 0;
}

static struct ibv_mr *e_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
    emu_mr_t *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return NULL;
    pthread_mutex_lock(&emu_lock);
    m->mr.context = pd->context;
    m->mr.pd = pd;
    m->mr.addr = addr;
    m->mr.length = len;
    m->mr.lkey = emu_next_key++;
    m->mr.rkey = emu_next_key++;
    m->access = access;
    m->next = emu_mrs;
    emu_mrs = m;
    emu_stats.reg_mr++;
    emu_stats.live_mrs++;
    pthread_mutex_unlock(&emu_lock);
    return &m->mr;
}

static int e_dereg_mr(struct ibv_mr *mr)
{
    pthread_mutex_lock(&emu_lock);
    for (emu_mr_t **pp = &emu_mrs; *pp; pp = &(*pp)->next)
        if (&(*pp)->mr == mr) {
            *pp = (*pp)->next;
            break;
        }
    emu_stats.dereg_mr++;
    emu_stats.live_mrs--;
    pthread_mutex_unlock(&emu_lock);
    free(mr);
    return 0;
}

static struct ibv_cq *e_create_cq(struct ibv_context *c, int cqe, void *cq_context,
                                  struct ibv_comp_channel *ch, int vec)
{
    (void)ch;
    (void)vec;
    emu_cq_t *q = calloc(1, sizeof(*q));
    if (q == NULL)
        return NULL;
    q->ring = calloc((size_t)cqe, sizeof(struct ibv_wc));
    q->cap = cqe;
    q->cq.context = c;
    q->cq.cq_context = cq_context;
    q->cq.cqe = cqe;
    return &q->cq;
}

static int e_destroy_cq(struct ibv_cq *cq)
{
    emu_cq_t *q = (emu_cq_t *)cq;
    free(q->ring);
    free(q);
    return 0;
}

/* Lock held. */
static struct ibv_wc *cq_push(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_status st,
                              enum ibv_wc_opcode op, uint32_t qpn, uint32_t len)
{
    static struct ibv_wc dropped;
    emu_cq_t *q = (emu_cq_t *)cq;
    if (q->n == q->cap) {
        emu_stats.cq_overflow++;
        return &dropped;
    }
    struct ibv_wc *wc = &q->ring[(q->head + q->n++) % q->cap];
    memset(wc, 0, sizeof(*wc));
    wc->wr_id = wr_id;
    wc->status = st;
    wc->opcode = op;
    wc->qp_num = qpn;
    wc->byte_len = len;
    return wc;
}

static void lw_done(const struct ibv_wc *wc);

static int e_poll_cq(struct ibv_cq *cq, int num, struct ibv_wc *wc)
{
    emu_cq_t *q = (emu_cq_t *)cq;
    pthread_mutex_lock(&emu_lock);
    int k = 0;
    while (k < num && q->n > 0) {
        if (q->ring[q->head].status == IBV_WC_SUCCESS)
            lw_done(&q->ring[q->head]);
        wc[k++] = q->ring[q->head];
        q->head = (q->head + 1) % q->cap;
        q->n--;
    }
    pthread_mutex_unlock(&emu_lock);
    return k;
}

static struct ibv_qp *e_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *ia)
{
    if (ia->qp_type != IBV_QPT_RC) {
        errno = EINVAL;
        return NULL;
    }
    emu_qp_t *q = calloc(1, sizeof(*q));
    if (q == NULL)
        return NULL;
    q->rq_cap = (int)ia->cap.max_recv_wr;
    q->rq = calloc((size_t)q->rq_cap, sizeof(emu_recv_t));
    q->lw_cap = (int)ia->cap.max_send_wr;
    q->lw = calloc((size_t)q->lw_cap + 1, sizeof(emu_lw_t));
    if (q->rq == NULL || q->lw == NULL) {
        free(q->rq);
        free(q->lw);
        free(q);
        errno = ENOMEM;
        return NULL;
    }
    q->qp.context = pd->context;
    q->qp.pd = pd;
    q->qp.send_cq = ia->send_cq;
    q->qp.recv_cq = ia->recv_cq;
    q->qp.qp_type = IBV_QPT_RC;
    q->qp.state = IBV_QPS_RESET;
    pthread_mutex_lock(&emu_lock);
    q->qp.qp_num = emu_next_qpn++;
    q->next = emu_qps;
    emu_qps = q;
    emu_stats.live_qps++;
    pthread_mutex_unlock(&emu_lock);
    return &q->qp;
}

/* Lock held: the QP enters the error state; its posted receives are flushed. */
static void qp_error(emu_qp_t *q)
{
    q->qp.state = IBV_QPS_ERR;
    while (q->rq_n > 0) {
        emu_recv_t *r = &q->rq[q->rq_head];
        cq_push(q->qp.recv_cq, r->wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, q->qp.qp_num, 0);
        q->rq_head = (q->rq_head + 1) % q->rq_cap;
        q->rq_n--;
    }
}

static int e_destroy_qp(struct ibv_qp *qp)
{
    emu_qp_t *q = (emu_qp_t *)qp;
    pthread_mutex_lock(&emu_lock);
    for (emu_qp_t **pp = &emu_qps; *pp; pp = &(*pp)->next)
        if (*pp == q) {
            *pp = q->next;
            break;
        }
    emu_stats.live_qps--;
    pthread_mutex_unlock(&emu_lock);
    while (q->in_head) {
        emu_msg_t *m = q->in_head;
        q->in_head = m->next;
        free(m);
    }
    free(q->rq);
    free(q->lw);
    free(q);
    return 0;
}

static int e_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
    emu_qp_t *q = (emu_qp_t *)qp;
    int rc = 0;
    pthread_mutex_lock(&emu_lock);
    if (!(mask & IBV_QP_STATE)) {
        rc = EINVAL;
    } else if (a->qp_state == IBV_QPS_ERR) {
        qp_error(q);
    } else if (a->qp_state == IBV_QPS_INIT && q->qp.state == IBV_QPS_RESET &&
               (mask & IBV_QP_PORT) && (mask & IBV_QP_ACCESS_FLAGS)) {
        q->access = a->qp_access_flags;
        q->qp.state = IBV_QPS_INIT;
    } else if (a->qp_state == IBV_QPS_RTR && q->qp.state == IBV_QPS_INIT &&
               (mask & IBV_QP_DEST_QPN) && (mask & IBV_QP_AV) && (mask & IBV_QP_RQ_PSN)) {
        q->dest = a->dest_qp_num;
        q->qp.state = IBV_QPS_RTR;
    } else if (a->qp_state == IBV_QPS_RTS && q->qp.state == IBV_QPS_RTR && (mask & IBV_QP_SQ_PSN)) {
        q->qp.state = IBV_QPS_RTS;
        emu_stats.rts_qps++;
    } else {
        rc = EINVAL;
    }
    pthread_mutex_unlock(&emu_lock);
    if (rc)
        errno = rc;
    return rc;
}

/* Lock held. */
static emu_mr_t *mr_find(uint32_t key, int by_rkey, uint64_t addr, uint64_t len, int access)
{
    for (emu_mr_t *m = emu_mrs; m; m = m->next) {
        if ((by_rkey ? m->mr.rkey : m->mr.lkey) != key)
            continue;
        uint64_t s = (uintptr_t)m->mr.addr;
        if (addr < s || addr + len > s + m->mr.length || addr + len < addr)
            return NULL;
        return (m->access & access) == access ? m : NULL;
    }
    return NULL;
}

static emu_qp_t *qp_find(uint32_t qpn)
{
    for (emu_qp_t *q = emu_qps; q; q = q->next)
        if (q->qp.qp_num == qpn)
            return q;
    return NULL;
}

/* Lock held: @p q's HCA wrote [addr, addr + len) of local memory for work request @p wr_id;
 * it counts as a bug of the backend when an earlier read or atomic of @p q whose completion was
 * not yet polled wrote overlapping memory (on a real HCA both may land in any order). */
static void lw_add(emu_qp_t *q, uint64_t wr_id, uint64_t addr, uint32_t len)
{
    for (int i = 0; i < q->lw_n; i++)
        if (addr < q->lw[i].addr + q->lw[i].len && q->lw[i].addr < addr + len)
            emu_stats.local_overlaps++;
    if (q->lw_n == q->lw_cap) { /* more than the queue holds: forget the oldest */
        memmove(q->lw, q->lw + 1, (size_t)(q->lw_n - 1) * sizeof(*q->lw));
        q->lw_n--;
    }
    q->lw[q->lw_n++] = (emu_lw_t){wr_id, addr, len};
}

/* Lock held: the completion of @p wc was polled: its local write is over. */
static void lw_done(const struct ibv_wc *wc)
{
    if (wc->opcode != IBV_WC_RDMA_READ && wc->opcode != IBV_WC_FETCH_ADD &&
        wc->opcode != IBV_WC_COMP_SWAP)
        return;
    emu_qp_t *q = qp_find(wc->qp_num);
    for (int i = 0; q != NULL && i < q->lw_n; i++)
        if (q->lw[i].wr_id == wc->wr_id) {
            memmove(q->lw + i, q->lw + i + 1, (size_t)(q->lw_n - i - 1) * sizeof(*q->lw));
            q->lw_n--;
            return;
        }
}

/* Lock held: deliver a message into the oldest posted receive of @p d. */
static void deliver(emu_qp_t *d, const unsigned char *data, uint32_t len)
{
    emu_recv_t *r = &d->rq[d->rq_head];
    d->rq_head = (d->rq_head + 1) % d->rq_cap;
    d->rq_n--;
    if (len > r->len || (len > 0 && !mr_find(r->lkey, 0, r->addr, len, IBV_ACCESS_LOCAL_WRITE))) {
        cq_push(d->qp.recv_cq, r->wr_id, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, d->qp.qp_num, 0);
        qp_error(d);
        return;
    }
    if (len)
        memcpy((void *)(uintptr_t)r->addr, data, len);
    cq_push(d->qp.recv_cq, r->wr_id, IBV_WC_SUCCESS, IBV_WC_RECV, d->qp.qp_num, len);
}

static enum ibv_wc_status exec(emu_qp_t *q, emu_qp_t *d, struct ibv_send_wr *wr, uint32_t *len)
{
    uint64_t laddr = wr->num_sge ? wr->sg_list[0].addr : 0;
    uint32_t llen = wr->num_sge ? wr->sg_list[0].length : 0;
    *len = llen;
    int inl = (wr->send_flags & IBV_SEND_INLINE) && wr->opcode == IBV_WR_SEND;
    if (llen && !inl &&
        !mr_find(wr->sg_list[0].lkey, 0, laddr, llen,
                 wr->opcode == IBV_WR_RDMA_READ || wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
                         wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP
                     ? IBV_ACCESS_LOCAL_WRITE
                     : 0))
        return IBV_WC_LOC_PROT_ERR;
    emu_mr_t *m;
    switch (wr->opcode) {
    case IBV_WR_SEND: {
        if (d->rq_n > 0) {
            deliver(d, (const unsigned char *)(uintptr_t)laddr, llen);
            return IBV_WC_SUCCESS;
        }
        emu_msg_t *msg = malloc(sizeof(*msg) + llen);
        if (msg == NULL)
            return IBV_WC_GENERAL_ERR;
        msg->next = NULL;
        msg->len = llen;
        memcpy(msg->data, (const void *)(uintptr_t)laddr, llen);
        if (d->in_tail)
            d->in_tail->next = msg;
        else
            d->in_head = msg;
        d->in_tail = msg;
        return IBV_WC_SUCCESS;
    }
    case IBV_WR_RDMA_WRITE_WITH_IMM: {
        if (d->rq_n == 0) { /* receiver not ready, and we do not retry */
            emu_stats.rnr_errors++;
            return IBV_WC_RNR_RETRY_EXC_ERR;
        }
        if (llen > 0) {
            m = mr_find(wr->wr.rdma.rkey, 1, wr->wr.rdma.remote_addr, llen,
                        IBV_ACCESS_REMOTE_WRITE);
            if (m == NULL || !(d->access & IBV_ACCESS_REMOTE_WRITE))
                return IBV_WC_REM_ACCESS_ERR;
            memmove((void *)(uintptr_t)wr->wr.rdma.remote_addr, (void *)(uintptr_t)laddr, llen);
        }
        emu_recv_t *r = &d->rq[d->rq_head];
        d->rq_head = (d->rq_head + 1) % d->rq_cap;
        d->rq_n--;
        struct ibv_wc *wc = cq_push(d->qp.recv_cq, r->wr_id, IBV_WC_SUCCESS,
                                    IBV_WC_RECV_RDMA_WITH_IMM, d->qp.qp_num, llen);
        wc->wc_flags = IBV_WC_WITH_IMM;
        wc->imm_data = wr->imm_data;
        emu_stats.writes_imm++;
        return IBV_WC_SUCCESS;
    }
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_READ: {
        int w = wr->opcode == IBV_WR_RDMA_WRITE;
        if (w && llen == 0) { /* no R_Key / VA check for a zero-length write (IB spec) */
            emu_stats.zero_writes++;
            return IBV_WC_SUCCESS;
        }
        m = mr_find(wr->wr.rdma.rkey, 1, wr->wr.rdma.remote_addr, llen,
                    w ? IBV_ACCESS_REMOTE_WRITE : IBV_ACCESS_REMOTE_READ);
        if (m == NULL || !(d->access & (w ? IBV_ACCESS_REMOTE_WRITE : IBV_ACCESS_REMOTE_READ)))
            return IBV_WC_REM_ACCESS_ERR;
        if (llen)
            memmove(w ? (void *)(uintptr_t)wr->wr.rdma.remote_addr : (void *)(uintptr_t)laddr,
                    w ? (void *)(uintptr_t)laddr : (void *)(uintptr_t)wr->wr.rdma.remote_addr,
                    llen);
        if (w) {
            emu_stats.writes++;
            emu_stats.write_bytes += llen;
        } else {
            emu_stats.reads++;
            emu_stats.read_bytes += llen;
            if (llen)
                lw_add(q, wr->wr_id, laddr, llen);
        }
        return IBV_WC_SUCCESS;
    }
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
    case IBV_WR_ATOMIC_CMP_AND_SWP: {
        uint64_t ra = wr->wr.atomic.remote_addr;
        m = mr_find(wr->wr.atomic.rkey, 1, ra, 8, IBV_ACCESS_REMOTE_ATOMIC);
        if (m == NULL || ra % 8 != 0 || llen != 8 || !(d->access & IBV_ACCESS_REMOTE_ATOMIC))
            return IBV_WC_REM_ACCESS_ERR;
        uint64_t *p = (uint64_t *)(uintptr_t)ra, old;
        if (wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
            old = __atomic_fetch_add(p, wr->wr.atomic.compare_add, __ATOMIC_SEQ_CST);
            emu_stats.fetch_adds++;
        } else {
            emu_stats.cmp_swaps++;
            old = wr->wr.atomic.compare_add;
            if (!__atomic_compare_exchange_n(p, &old, wr->wr.atomic.swap, 0, __ATOMIC_SEQ_CST,
                                             __ATOMIC_SEQ_CST)) {
                /* old now holds the current value */
            }
        }
        memcpy((void *)(uintptr_t)laddr, &old, 8);
        lw_add(q, wr->wr_id, laddr, 8);
        return IBV_WC_SUCCESS;
    }
    default:
        return IBV_WC_REM_INV_REQ_ERR;
    }
}

static enum ibv_wc_opcode wc_op(enum ibv_wr_opcode op)
{
    switch (op) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ:
        return IBV_WC_RDMA_READ;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        return IBV_WC_FETCH_ADD;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
        return IBV_WC_COMP_SWAP;
    default:
        return IBV_WC_SEND;
    }
}

static int e_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    emu_qp_t *q = (emu_qp_t *)qp;
    pthread_mutex_lock(&emu_lock);
    if (q->qp.state != IBV_QPS_RTS && q->qp.state != IBV_QPS_ERR) {
        pthread_mutex_unlock(&emu_lock);
        *bad = wr;
        errno = EINVAL;
        return EINVAL;
    }
    for (; wr; wr = wr->next) {
        enum ibv_wc_status st;
        uint32_t len = 0;
        emu_qp_t *d = qp_find(q->dest);
        if (emu_tamper != NULL)
            emu_tamper(wr, emu_tamper_arg);
        if (q->qp.state == IBV_QPS_ERR)
            st = IBV_WC_WR_FLUSH_ERR;
        else if (d == NULL || (d->qp.state != IBV_QPS_RTR && d->qp.state != IBV_QPS_RTS))
            st = IBV_WC_RETRY_EXC_ERR; /* nobody answers: the peer is gone or its port down */
        else
            st = exec(q, d, wr, &len);
        if (st == IBV_WC_REM_ACCESS_ERR && d != NULL)
            qp_error(d); /* the responder's QP goes to the error state too */
        cq_push(q->qp.send_cq, wr->wr_id, st, wc_op(wr->opcode), q->qp.qp_num, len);
        if (st != IBV_WC_SUCCESS)
            q->qp.state = IBV_QPS_ERR;
    }
    pthread_mutex_unlock(&emu_lock);
    return 0;
}

static int e_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    emu_qp_t *q = (emu_qp_t *)qp;
    pthread_mutex_lock(&emu_lock);
    for (; wr; wr = wr->next) {
        if (q->rq_n == q->rq_cap || wr->num_sge > 1) {
            pthread_mutex_unlock(&emu_lock);
            *bad = wr;
            errno = ENOMEM;
            return ENOMEM;
        }
        if (q->qp.state == IBV_QPS_ERR) {
            cq_push(q->qp.recv_cq, wr->wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, q->qp.qp_num, 0);
            continue;
        }
        emu_recv_t *r = &q->rq[(q->rq_head + q->rq_n++) % q->rq_cap];
        r->wr_id = wr->wr_id;
        r->addr = wr->num_sge ? wr->sg_list[0].addr : 0;
        r->len = wr->num_sge ? wr->sg_list[0].length : 0;
        r->lkey = wr->num_sge ? wr->sg_list[0].lkey : 0;
        if (q->in_head != NULL) { /* a sender was waiting (RNR retry) */
            emu_msg_t *m = q->in_head;
            q->in_head = m->next;
            if (q->in_head == NULL)
                q->in_tail = NULL;
            deliver(q, m->data, m->len);
            free(m);
        }
    }
    pthread_mutex_unlock(&emu_lock);
    return 0;
}

static const tc_ib_verbs_t emu_verbs = {
    .get_device_list = e_get_device_list,
    .free_device_list = e_free_device_list,
    .get_device_name = e_get_device_name,
    .open_device = e_open_device,
    .close_device = e_close_device,
    .query_port = e_query_port,
    .query_gid = e_query_gid,
    .alloc_pd = e_alloc_pd,
    .dealloc_pd = e_dealloc_pd,
    .reg_mr = e_reg_mr,
    .dereg_mr = e_dereg_mr,
    .create_cq = e_create_cq,
    .destroy_cq = e_destroy_cq,
    .create_qp = e_create_qp,
    .destroy_qp = e_destroy_qp,
    .modify_qp = e_modify_qp,
    .post_send = e_post_send,
    .post_recv = e_post_recv,
    .poll_cq = e_poll_cq,
};

const tc_ib_verbs_t *tc_ibemu_verbs(void)
{
    return &emu_verbs;
}
