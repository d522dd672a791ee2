/* Windows: creation (register this rank's memory and signal slots with the
 * backends that reach the communicator's ranks, exchange the remote keys by
 * an all-gather over the communicator, unpack each peer's key for the
 * endpoint that reaches it, agree that every rank succeeded), shared memory
 * for allocated windows, and destruction. The operations are win_ops.c's.
 *
 * While a window exists the world's progress thread runs (it counts as
 * asynchronous work): puts, gets and signals over software transports (tcp,
 * shm's cells) land without any call by the target. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ft.h"
#include "progress.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"
#include "win.h"
#include "win_seg.h"

#define WIN_MAGIC 0x7463776eu /* "tcwn" */
#define WIN_KEY_MAX 112
#define WIN_ENTRIES 6

/* What one rank tells the others at creation: its size, its keys per
 * backend, its shared-memory segment. Fixed size: one all-gather. */
typedef struct win_entry {
    char backend[16];
    uint32_t dlen, slen;
    unsigned char dkey[WIN_KEY_MAX], skey[WIN_KEY_MAX];
} win_entry_t;

typedef struct win_blob {
    uint32_t magic;
    int32_t ok; /* 0: this rank failed to set up its side */
    uint64_t bytes;
    uint64_t node; /* topology node id: same-node peers may map shm */
    uint32_t nent, pad;
    char shm[48]; /* shared-memory segment of an allocated window, or "" */
    win_entry_t ent[WIN_ENTRIES];
} win_blob_t;

/* Why a peer's window cannot be loaded and stored directly (peer->shared_why). */
static const char *win_shared_why(int why)
{
    switch (why) {
    case 2:
        return "it runs on another node";
    case 3:
        return "its shared-memory segment could not be mapped here";
    default:
        return "its window was not allocated in shared memory (tc_win_create, or tc_win_allocate "
               "could not create a segment)";
    }
}

static uint64_t win_deadline(const tc_rt_comm_t *comm, int64_t timeout_ms)
{
    return tc_deadline_after_ms((uint64_t)(timeout_ms > 0 ? timeout_ms : comm->timeout_ms));
}

/* The library's memory of an allocated window: a shared-memory segment
 * same-node peers can map (the signal slots, then the window), else private
 * memory. */
static tc_status_t win_alloc_mem(tc_rt_win_t *win, size_t bytes, char *shm_name, size_t cap)
{
    shm_name[0] = '\0';
    if (bytes == 0)
        return TC_OK;
    static unsigned seq; /* per process: names are unique with the pid */
    tc_rt_win_sweep(); /* what killed ranks left, before this one takes room */
    int fd = -1;
    if (tc_rt_win_seg_name(shm_name, cap, (int)getpid(), win->comm->comm_id,
                           __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED)))
        fd = shm_open(shm_name, O_RDWR | O_CREAT | O_EXCL, 0600);
    else
        errno = ENAMETOOLONG;
    size_t map = TC_RT_WIN_SEG_HDR + bytes;
    if (fd >= 0 && ftruncate(fd, (off_t)map) == 0) {
        void *p = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (p != MAP_FAILED) {
            win->map_base = p;
            win->base = (char *)p + TC_RT_WIN_SEG_HDR;
            win->map_bytes = map;
            win->shm_fd = 1;
            free(win->slots); /* the segment's first page holds them, zeroed */
            win->slots = p;
            return TC_OK;
        }
    } else if (fd >= 0) {
        close(fd);
    }
    tc_log_info(TC_SUBSYS_RUNTIME, "window of %zu bytes: no shared-memory segment %s (%s)", bytes,
                shm_name, strerror(errno));
    if (fd >= 0)
        shm_unlink(shm_name);
    shm_name[0] = '\0';
    /* shared although private to this process: such a mapping can be mapped again
     * (mremap with old size 0), as the segment can, by views that may outlive the window */
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return tc_error_set(TC_ERR_NO_MEMORY, "allocating a window of %zu bytes: %s", bytes,
                            strerror(errno));
    win->map_base = win->base = p;
    win->map_bytes = bytes;
    return TC_OK;
}

/* Connect to every rank and register with the backends those endpoints use;
 * the keys go into @p mine. Lock held. */
static tc_status_t win_register(tc_rt_win_t *win, uint64_t deadline, win_blob_t *mine)
{
    tc_rt_comm_t *comm = win->comm;
    tc_rt_world_t *world = comm->world;
    int used[TC_RT_BACKENDS_MAX] = {0};
    tc_status_t st;
    for (int p = 0; p < comm->size; p++) {
        int wr = tc_rt_world_rank(comm, p);
        tc_tp_ep_t *ep;
        if ((st = tc_rt_world_ep(world, wr, deadline, &ep)) != TC_OK) {
            tc_error_prefix("connecting to rank %d: ", p);
            return st;
        }
        used[world->ep_backend[wr] - world->backends] = 1;
    }
    for (int i = 0; i < world->nbackends; i++) {
        if (!used[i])
            continue;
        tc_rt_backend_t *be = &world->backends[i];
        tc_rt_win_reg_t *reg = &win->regs[i];
        if (mine->nent == WIN_ENTRIES)
            return tc_error_set(TC_ERR_INTERNAL, "more than %d backends", WIN_ENTRIES);
        win_entry_t *e = &mine->ent[mine->nent++];
        snprintf(e->backend, sizeof(e->backend), "%s", be->ops->name);
        size_t len = 0;
        if (win->bytes &&
            ((st = tc_tp_mem_reg(be->ctx, win->base, win->bytes, &reg->data)) != TC_OK ||
             (st = tc_tp_rkey_pack(reg->data, e->dkey, WIN_KEY_MAX, &len)) != TC_OK)) {
            tc_error_prefix("registering %zu bytes with %s: ", win->bytes, be->ops->name);
            return st;
        }
        e->dlen = (uint32_t)len;
        if ((st = tc_tp_mem_reg(be->ctx, win->slots, TC_RT_WIN_SLOT_BYTES, &reg->slots)) != TC_OK ||
            (st = tc_tp_rkey_pack(reg->slots, e->skey, WIN_KEY_MAX, &len)) != TC_OK) {
            tc_error_prefix("registering the signal slots with %s: ", be->ops->name);
            return st;
        }
        e->slen = (uint32_t)len;
    }
    return TC_OK;
}

/* Map same-node rank @p p's shared segment (a failure is no error: the
 * peer is then reached through the transport only). */
static void win_map_peer(tc_rt_win_t *win, int p, const win_blob_t *b, uint64_t node)
{
    tc_rt_win_peer_t *peer = &win->peers[p];
    peer->shared_why = 1;
    if (!b->shm[0] || b->bytes == 0)
        return;
    peer->shared_why = 2;
    if (b->node != node)
        return;
    peer->shared_why = 3;
    char name[sizeof(b->shm) + 1];
    snprintf(name, sizeof(name), "%.*s", (int)sizeof(b->shm), b->shm);
    int fd = shm_open(name, O_RDWR, 0);
    struct stat sb;
    if (fd < 0)
        return;
    size_t map = TC_RT_WIN_SEG_HDR + (size_t)b->bytes;
    if (fstat(fd, &sb) == 0 && (uint64_t)sb.st_size == map) {
        void *ptr = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (ptr != MAP_FAILED) {
            peer->map = ptr;
            peer->shared = (char *)ptr + TC_RT_WIN_SEG_HDR;
            peer->shared_why = 0;
        }
    }
    close(fd);
}

/* Unpack every rank's keys for the endpoint that reaches it. Lock held. */
static tc_status_t win_unpack(tc_rt_win_t *win, const win_blob_t *all, uint64_t deadline)
{
    tc_rt_comm_t *comm = win->comm;
    tc_rt_world_t *world = comm->world;
    tc_status_t st;
    for (int p = 0; p < comm->size; p++) {
        const win_blob_t *b = &all[p];
        tc_rt_win_peer_t *peer = &win->peers[p];
        if (b->magic != WIN_MAGIC || b->nent > WIN_ENTRIES)
            return tc_error_set(TC_ERR_PROTOCOL, "rank %d sent no window description", p);
        if (!b->ok)
            return tc_error_set(TC_ERR_INVALID_STATE,
                                "rank %d could not set up its side of the window (its own "
                                "error says why)",
                                p);
        int wr = tc_rt_world_rank(comm, p);
        tc_tp_ep_t *ep;
        if ((st = tc_rt_world_ep(world, wr, deadline, &ep)) != TC_OK)
            return st;
        const char *name = world->ep_backend[wr]->ops->name;
        const win_entry_t *e = NULL;
        for (uint32_t i = 0; i < b->nent && !e; i++)
            if (strncmp(b->ent[i].backend, name, sizeof(b->ent[i].backend)) == 0)
                e = &b->ent[i];
        if (!e)
            return tc_error_set(TC_ERR_UNSUPPORTED,
                                "rank %d registered its window with no %s, the backend that "
                                "reaches it",
                                p, name);
        peer->bytes = (size_t)b->bytes;
        peer->ep = ep;
        if ((b->bytes && (st = tc_tp_rkey_unpack(ep, e->dkey, e->dlen < WIN_KEY_MAX ? e->dlen : 0,
                                                 &peer->data)) != TC_OK) ||
            (st = tc_tp_rkey_unpack(ep, e->skey, e->slen < WIN_KEY_MAX ? e->slen : 0,
                                    &peer->slots)) != TC_OK) {
            tc_error_prefix("rank %d's keys over %s: ", p, name);
            return st;
        }
        if (win->allocated && p != comm->rank)
            win_map_peer(win, p, b, world->node_id);
        else
            peer->shared_why = 1; /* created: the caller's memory is private */
        /* the direct path: this rank's own window, or a mapped segment of a peer
         * that a same-node backend reaches (none with TC_SHM=0: tcp is measured) */
        if (p == comm->rank) {
            peer->direct = win->base;
            peer->direct_slots = win->slots;
        } else if (peer->shared && world->ep_backend[wr]->reach == TC_TP_REACH_NODE) {
            peer->direct = peer->shared;
            peer->direct_slots = peer->map;
        }
    }
    return TC_OK;
}

void tc_rt_win_release(tc_rt_win_t *win)
{
    if (win->released)
        return;
    __atomic_store_n(&win->released, 1, __ATOMIC_RELEASE);
    tc_rt_world_t *world = win->comm->world;
    for (int p = 0; win->peers && p < win->comm->size; p++) {
        tc_rt_win_peer_t *peer = &win->peers[p];
        tc_tp_rkey_release(peer->data);
        tc_tp_rkey_release(peer->slots);
        peer->data = peer->slots = NULL;
        if (peer->map)
            munmap(peer->map, TC_RT_WIN_SEG_HDR + peer->bytes);
        peer->shared = peer->map = NULL; /* direct stays: released is checked first */
    }
    for (int i = 0; i < TC_RT_BACKENDS_MAX; i++) {
        if (win->regs[i].data)
            tc_tp_mem_dereg(win->regs[i].data);
        if (win->regs[i].slots)
            tc_tp_mem_dereg(win->regs[i].slots);
        win->regs[i].data = win->regs[i].slots = NULL;
    }
    if (win->counted) {
        win->counted = 0;
        world->nasync--; /* the progress thread's duty ends with the last window */
    }
}

static void win_unlink(tc_rt_win_t *win)
{
    tc_rt_comm_t *comm = win->comm;
    if (!win->linked)
        return;
    win->linked = 0;
    if (win->cprev)
        win->cprev->cnext = win->cnext;
    else
        comm->wins = win->cnext;
    if (win->cnext)
        win->cnext->cprev = win->cprev;
    win->cnext = win->cprev = NULL;
}

void tc_rt_comm_release_wins(tc_rt_comm_t *comm)
{
    while (comm->wins) {
        tc_rt_win_t *win = comm->wins;
        tc_rt_win_cancel(win, TC_ERR_ABORTED, "the communicator was destroyed");
        (void)tc_rt_win_ff_sweep(win, -1); /* every one ended */
        tc_rt_win_release(win);
        win_unlink(win);
        win->comm = NULL; /* its inline work was detached with the communicator's works */
    }
}

/* Free what the window owns besides the world's resources (released). */
static void win_free(tc_rt_win_t *win)
{
    if (win->inline_work)
        tc_rt_work_release(win->inline_work);
    if (win->allocated && win->map_base)
        munmap(win->map_base, win->map_bytes); /* the slots too, in a segment */
    if (!win->shm_fd)
        free(win->slots);
    tc_rt_win_pool_free(win);
    free(win->ff);
    free(win->peers);
    free(win);
}

/* Every rank says whether it succeeded: the minimum decides. */
static tc_status_t win_agree(tc_rt_comm_t *comm, int ok, int64_t timeout_ms, int *all_ok_p)
{
    int32_t mine = ok, all = 0;
    tc_rt_coll_t call = {.coll = TC_COLL_ALL_REDUCE,
                         .sendbuf = &mine,
                         .recvbuf = &all,
                         .count = 1,
                         .dtype = TC_INT32,
                         .op = TC_MIN,
                         .root = -1,
                         .timeout_ms = timeout_ms};
    tc_status_t st = tc_rt_coll_run(comm, &call);
    *all_ok_p = all;
    return st;
}

tc_status_t tc_rt_win_create(tc_rt_comm_t *comm, void *buf, size_t bytes, int allocate,
                             int64_t timeout_ms, void **base_p, tc_rt_win_t **win_p)
{
    tc_rt_world_t *world = comm->world;
    tc_rt_win_t *win = calloc(1, sizeof(*win));
    win_blob_t *mine = calloc(1, sizeof(*mine));
    win_blob_t *all = calloc((size_t)comm->size, sizeof(*all));
    tc_status_t st = TC_OK;
    if (!win || !mine || !all) {
        free(win);
        free(mine);
        free(all);
        return tc_error_set(TC_ERR_NO_MEMORY, "window on comm '%s' of %d ranks", comm->name,
                            comm->size);
    }
    uint64_t deadline = win_deadline(comm, timeout_ms);
    win->comm = comm;
    win->bytes = bytes;
    win->base = buf;
    win->allocated = allocate;
    mine->magic = WIN_MAGIC;
    mine->bytes = bytes;
    tc_rt_world_lock(world);
    mine->node = world->node_id;
    if (comm->broken != TC_OK)
        st = tc_error_set(comm->broken, "the communicator is unusable since an earlier failure: %s",
                          comm->broken_why);
    if (st == TC_OK && (!(win->peers = calloc((size_t)comm->size, sizeof(*win->peers))) ||
                        !(win->slots = aligned_alloc(64, TC_RT_WIN_SLOT_BYTES)) ||
                        !(win->inline_work = tc_rt_work_alloc(comm))))
        st = tc_error_set(TC_ERR_NO_MEMORY, "window state for %d ranks", comm->size);
    win->pool.cap = comm->win_pool;
    if (win->slots)
        memset(win->slots, 0, TC_RT_WIN_SLOT_BYTES);
    if (st == TC_OK && allocate)
        st = win_alloc_mem(win, bytes, mine->shm, sizeof(mine->shm));
    if (st == TC_OK)
        st = win_register(win, deadline, mine);
    mine->ok = st == TC_OK;
    tc_rt_world_unlock(world);
    char why[512] = "";
    if (st != TC_OK)
        snprintf(why, sizeof(why), "%s", tc_last_error());

    /* everyone's keys, even from a rank that failed: nobody waits for it */
    tc_rt_coll_t call = {.coll = TC_COLL_ALL_GATHER,
                         .sendbuf = mine,
                         .recvbuf = all,
                         .count = sizeof(*mine),
                         .dtype = TC_UINT8,
                         .op = TC_SUM,
                         .root = -1,
                         .timeout_ms = timeout_ms};
    tc_status_t xst = tc_rt_coll_run(comm, &call);
    if (xst != TC_OK && st == TC_OK) {
        st = xst;
        snprintf(why, sizeof(why), "exchanging the keys: %s", tc_last_error());
    } else if (xst == TC_OK && st == TC_OK) {
        tc_rt_world_lock(world);
        if ((st = win_unpack(win, all, deadline)) != TC_OK)
            snprintf(why, sizeof(why), "%s", tc_last_error());
        tc_rt_world_unlock(world);
    }
    int all_ok = 0;
    tc_status_t ast = xst == TC_OK ? win_agree(comm, st == TC_OK, timeout_ms, &all_ok) : xst;
    if (ast != TC_OK && st == TC_OK) {
        st = ast;
        snprintf(why, sizeof(why), "agreeing that every rank set up: %s", tc_last_error());
    } else if (st == TC_OK && !all_ok) {
        st = TC_ERR_INVALID_STATE;
        snprintf(why, sizeof(why),
                 "another rank could not set up its side (its own error "
                 "says why)");
    }
    if (mine->shm[0])
        shm_unlink(mine->shm); /* mapped by every same-node peer that could, or failed */
    free(mine);
    free(all);

    tc_rt_world_lock(world);
    if (st == TC_OK) {
        win->id = ++comm->nwins;
        win->linked = 1;
        win->cnext = comm->wins;
        if (comm->wins)
            comm->wins->cprev = win;
        comm->wins = win;
        /* the progress thread runs while a window exists */
        if ((st = tc_rt_world_go_threaded(world)) == TC_OK) {
            win->counted = 1;
            if (world->nasync++ == 0)
                pthread_cond_signal(&world->cv);
        } else {
            snprintf(why, sizeof(why), "%s", tc_last_error());
            win_unlink(win);
        }
    }
    if (st != TC_OK) {
        tc_rt_win_release(win);
        if (win->inline_work) { /* on the communicator's list: released under the lock */
            tc_rt_work_release(win->inline_work);
            win->inline_work = NULL;
        }
    }
    tc_rt_world_unlock(world);
    if (st != TC_OK) {
        win_free(win);
        return tc_error_set(st, "window of %zu bytes on comm '%s' (rank %d of %d): %s", bytes,
                            comm->name, comm->rank, comm->size, why);
    }
    tc_log_debug(TC_SUBSYS_RUNTIME, "window %llu of %zu bytes on comm '%s'",
                 (unsigned long long)win->id, bytes, comm->name);
    if (base_p)
        *base_p = win->base;
    *win_p = win;
    return TC_OK;
}

tc_status_t tc_rt_win_destroy(tc_rt_win_t *win)
{
    tc_rt_comm_t *comm = win->comm;
    tc_status_t st = TC_OK;
    if (comm) {
        /* complete this rank's operations, then wait until every rank did:
         * nobody writes into memory that is deregistered */
        st = tc_rt_win_flush(win, -1, 0);
        tc_status_t bst = TC_OK;
        if (comm->broken == TC_OK) {
            tc_rt_coll_t call = {.coll = TC_COLL_BARRIER, .dtype = TC_UINT8, .root = -1};
            bst = tc_rt_coll_run(comm, &call);
        }
        if (st == TC_OK)
            st = bst;
        char why[512] = "";
        if (st != TC_OK)
            snprintf(why, sizeof(why), "%s", tc_last_error());
        tc_rt_world_lock(comm->world);
        tc_rt_win_cancel(win, TC_ERR_ABORTED, "the window was destroyed");
        (void)tc_rt_win_ff_sweep(win, -1); /* every one ended; the flush above reported */
        tc_rt_win_release(win);
        win_unlink(win);
        if (win->inline_work) {
            tc_rt_work_release(win->inline_work);
            win->inline_work = NULL;
        }
        tc_rt_world_unlock(comm->world);
        if (st != TC_OK)
            st = tc_error_set(st, "window %llu on comm '%s' (freed all the same): %s",
                              (unsigned long long)win->id, comm->name, why);
    }
    win_free(win);
    return st;
}

tc_status_t tc_rt_win_shared_query(tc_rt_win_t *win, int peer, void **ptr_p)
{
    tc_rt_comm_t *comm = win->comm;
    if (!comm)
        return tc_error_set(TC_ERR_INVALID_STATE, "the window's communicator was destroyed");
    if (peer < 0 || peer >= comm->size)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "peer %d is not a rank of the window's communicator '%s' (size %d)",
                            peer, comm->name, comm->size);
    if (peer == comm->rank) {
        *ptr_p = win->base;
        return TC_OK;
    }
    const tc_rt_win_peer_t *p = &win->peers[peer];
    if (!p->shared)
        return tc_error_set(TC_ERR_UNSUPPORTED,
                            "rank %d's window (%zu bytes) cannot be reached by load and store "
                            "from rank %d: %s; use put and get",
                            peer, p->bytes, comm->rank, win_shared_why(p->shared_why));
    *ptr_p = p->shared;
    return TC_OK;
}

tc_status_t tc_rt_win_size(tc_rt_win_t *win, int peer, size_t *bytes_p)
{
    tc_rt_comm_t *comm = win->comm;
    if (peer < -1)
        return tc_error_set(TC_ERR_INVALID_ARG, "peer %d is neither a rank nor -1 (this rank)",
                            peer);
    if (peer == -1) {
        *bytes_p = win->bytes;
        return TC_OK;
    }
    if (!comm)
        return tc_error_set(TC_ERR_INVALID_STATE, "the window's communicator was destroyed");
    if (peer >= comm->size)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "peer %d is not a rank of the window's communicator '%s' (size %d)",
                            peer, comm->name, comm->size);
    *bytes_p = win->peers[peer].bytes;
    return TC_OK;
}

tc_rt_comm_t *tc_rt_win_comm(const tc_rt_win_t *win)
{
    return win->comm;
}
