/* Who makes a pair's segment, and whether the pair has one at all (docs/transport_shm.md,
 * "Connection"): the side that connects first creates the name (O_CREAT|O_EXCL decides) and
 * decides; its file's final size tells the other side what it decided, so both sides of a pair
 * know the same answer when their connect returns: a segment (its size, then its header), no
 * room in /dev/shm (a size of TC_SHM_SEG_NOFIT: both sides refuse the peer with
 * TC_ERR_UNSUPPORTED and the caller takes another transport), or the creator failed
 * (TC_SHM_SEG_FAILED: both sides fail). Also the reservations of a segment's pages. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shm_internal.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"

/* How long the second side waits for the first to give the file its final size: the first is
 * inside its connect (a statvfs, a few fallocate calls, one ftruncate), so only a descheduled
 * process takes long; one that died is noticed by its pid. */
#define TC_SHM_DECIDE_NS (10ull * 1000000000ull)

int tc_shm_seg_classify(uint64_t size, uint64_t nlink, uint32_t uid, uint32_t mode, uint32_t euid)
{
    if (uid != euid || (mode & 077) != 0)
        return TC_SHM_SEG_BAD;
    if (size == 0)
        return nlink == 0 ? TC_SHM_SEG_GONE : TC_SHM_SEG_PENDING;
    if (size == TC_SHM_SEG_NOFIT || size == TC_SHM_SEG_FAILED)
        return (int)size;
    return size >= TC_SHM_HDR_SIZE ? TC_SHM_SEG_READY : TC_SHM_SEG_BAD;
}

/* Reserve [off, off+len) of the file without changing its size; 0 or an errno value. */
static int tc_shm_reserve(int fd, off_t off, off_t len)
{
    int rc;
    do {
        rc = fallocate(fd, FALLOC_FL_KEEP_SIZE, off, len) == 0 ? 0 : errno;
    } while (rc == EINTR);
    return rc;
}

void tc_shm_log_held(const tc_shm_ctx_t *ctx)
{
    tc_log_debug(TC_SUBSYS_TRANSPORT,
                 "shm: id %llu holds %zu bytes of /dev/shm in %u segments it created",
                 (unsigned long long)ctx->self_id, ctx->shm_bytes, ctx->nsegs);
}

int tc_shm_pair_full(const tc_shm_ctx_t *ctx, uint64_t peer_id)
{
    for (unsigned i = 0; i < ctx->nfull; i++)
        if (ctx->full[i] == peer_id)
            return 1;
    return 0;
}

/* The smallest segment's header and rings: what a pair needs at least. */
static size_t tc_shm_floor_reserve(const tc_shm_ctx_t *ctx)
{
    tc_shm_geom_t plan[TC_SHM_LEVELS];
    int n = tc_shm_geom_plan(ctx->cell_size, ctx->ncells, 0, plan);
    return plan[n - 1].reserve;
}

/* Creator: give the file @p fd the final size @p what (a decision without a segment) and
 * remember its name, which the other side unlinks when it reads it (else our context does, when
 * destroyed). Returns 0, or -1 when even that failed (the name is then removed: the other side
 * sees a file that vanished). */
static int tc_shm_mark(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep, int fd, int what)
{
    int rc = ftruncate(fd, (off_t)what);
    close(fd);
    if (rc == 0 && ctx->nmarks == ctx->marks_cap) {
        unsigned cap = ctx->marks_cap ? 2 * ctx->marks_cap : 8;
        char(*m)[96] = realloc(ctx->marks, cap * sizeof(*m));
        if (m != NULL) {
            ctx->marks = m;
            ctx->marks_cap = cap;
        }
    }
    if (rc != 0) {
        shm_unlink(ep->name);
        return -1;
    }
    if (ctx->nmarks < ctx->marks_cap)
        snprintf(ctx->marks[ctx->nmarks++], sizeof(ctx->marks[0]), "%s", ep->name);
    return 0; /* (no memory to remember it: the other side still unlinks it) */
}

/* Creator of @p fd (just made, empty): the header and rings are reserved (fallocate), so no page
 * the transport touches can SIGBUS on a full /dev/shm; the lanes are reserved on their first use
 * (tc_shm_ep_reserve_lanes): tmpfs charges only reserved or touched pages. The geometry is the
 * largest that fits this pair's share of the free space @p avail; a reservation finding no space
 * (other ranks took it meanwhile) tries the next smaller one down to the floor; none: the file
 * says so (TC_SHM_SEG_NOFIT) and the peer is refused. */
static tc_status_t tc_shm_ep_create_segment(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep, int fd,
                                            uint64_t avail)
{
    tc_shm_geom_t plan[TC_SHM_LEVELS];
    int n = tc_shm_geom_plan(ctx->cell_size, ctx->ncells,
                             tc_shm_pair_budget(avail, ctx->local_ranks), plan);
    tc_status_t status;
    ep->linked = 1;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), size = 0;
    void *p = MAP_FAILED;
    int rc = ENOSPC, i, full = tc_shm_pair_full(ctx, ep->super.peer_id);
    /* Reserve while the file is still empty, then give it its size at once: the opener waits
     * for the final size, so it never faults on a page not yet reserved (a SIGBUS on a full
     * /dev/shm) nor maps a size that is not the final one. */
    for (i = 0; i < n && rc == ENOSPC && !full; i++)
        rc = tc_shm_reserve(fd, 0, (off_t)plan[i].reserve);
    i = i > 0 ? i - 1 : n - 1;
    if (rc == ENOSPC) {
        ep->linked = 0;
        (void)tc_shm_mark(ctx, ep, fd, TC_SHM_SEG_NOFIT);
        return tc_error_set(TC_ERR_UNSUPPORTED,
                            "shm: no room in /dev/shm for a segment with peer %llu: the smallest "
                            "needs %zu bytes, %llu bytes (%.1f MiB) were free%s; enlarge "
                            "/dev/shm (docker run --shm-size=1g) for shm",
                            (unsigned long long)ep->super.peer_id, plan[n - 1].reserve,
                            (unsigned long long)avail, (double)avail / 1048576.0,
                            full ? " (shm_full_pairs)" : "");
    }
    size = tc_shm_geom_seg_size(plan[i].cell_size, plan[i].ncells, page);
    if (rc != 0) {
        status = tc_error_set(TC_ERR_SYSTEM,
                              "shm: reserving %zu bytes of /dev/shm for peer %llu failed: %s",
                              plan[i].reserve, (unsigned long long)ep->super.peer_id, strerror(rc));
        goto err;
    }
    if (ftruncate(fd, (off_t)size) != 0) {
        status = tc_error_set(TC_ERR_SYSTEM, "shm: ftruncate(%s, %zu) failed: %s", ep->name, size,
                              strerror(errno));
        goto err;
    }
    p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        status = tc_error_set(TC_ERR_SYSTEM, "shm: mmap of %zu bytes of %s failed: %s", size,
                              ep->name, strerror(errno));
        goto err; /* an opener that mapped the final size meanwhile sees it shrink: it fails */
    }
    ep->fd = fd;
    ep->lanes_pending = 1;
    ep->cell_size = plan[i].cell_size;
    ep->ncells = plan[i].ncells;
    if ((ep->cell_size != ctx->cell_size || ep->ncells != ctx->ncells) && !ctx->warned) {
        ctx->warned = 1;
        tc_log_warn(TC_SUBSYS_TRANSPORT,
                    "shm: /dev/shm has %.1f MiB free for %u local ranks: pair segments shrink to "
                    "%u cells of %u bytes (configured %u of %u); messages above %u bytes take "
                    "the single-copy or a slower pipelined path; give the node more /dev/shm "
                    "(docker run --shm-size=1g) for full speed (said once per process)",
                    (double)avail / 1048576.0, ctx->local_ranks, ep->ncells, ep->cell_size,
                    ctx->ncells, ctx->cell_size, ep->cell_size);
    }
    tc_shm_ep_seg_init(ctx, ep, p, size);
    ep->reserved = (plan[i].reserve + page - 1) / page * page;
    ctx->shm_bytes += ep->reserved;
    ctx->nsegs++;
    tc_shm_log_held(ctx);
    return TC_OK;

err:
    ep->linked = 0;
    (void)tc_shm_mark(ctx, ep, fd, TC_SHM_SEG_FAILED); /* the peer fails too, at once */
    return status;
}

/* The second side: wait (bounded) for the creator's decision in the size of @p fd. */
static tc_status_t tc_shm_ep_learn(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep, int fd)
{
    uint64_t start = tc_time_ns();
    const char *what;
    tc_status_t status;
    for (unsigned looks = 0;; looks++) {
        struct stat st;
        if (fstat(fd, &st) != 0) {
            status = tc_error_set(TC_ERR_SYSTEM, "shm: fstat of %s (peer %llu) failed: %s",
                                  ep->name, (unsigned long long)ep->super.peer_id, strerror(errno));
            break;
        }
        int k = tc_shm_seg_classify((uint64_t)st.st_size, (uint64_t)st.st_nlink,
                                    (uint32_t)st.st_uid, (uint32_t)st.st_mode, (uint32_t)geteuid());
        if (k == TC_SHM_SEG_READY) {
            ep->fd = fd;
            ep->state = TC_SHM_EP_OPENING;
            return TC_OK;
        }
        if (k == TC_SHM_SEG_NOFIT) {
            uint64_t avail = 0;
            if (tc_shm_free_bytes(&avail) != TC_OK)
                avail = 0; /* (the message says 0 free) */
            close(fd);
            shm_unlink(ep->name); /* read: no one needs the name any more */
            return tc_error_set(TC_ERR_UNSUPPORTED,
                                "shm: peer %llu (pid %d) found no room in /dev/shm for a segment "
                                "with this process: the smallest needs %zu bytes, %llu bytes "
                                "(%.1f MiB) are free here now; enlarge /dev/shm (docker run "
                                "--shm-size=1g) for shm",
                                (unsigned long long)ep->super.peer_id, (int)ep->peer_pid,
                                tc_shm_floor_reserve(ctx), (unsigned long long)avail,
                                (double)avail / 1048576.0);
        }
        if (k == TC_SHM_SEG_FAILED || k == TC_SHM_SEG_GONE) {
            what = k == TC_SHM_SEG_FAILED ? "could not make the pair's segment (its log says why)"
                                          : "removed the pair's segment before making it";
            status = TC_ERR_PEER_FAILED;
            goto fail;
        }
        if (k == TC_SHM_SEG_BAD) {
            close(fd);
            return tc_error_set(TC_ERR_PROTOCOL,
                                "shm: segment %s for peer %llu is not one (size %lld, uid %d, mode "
                                "%03o)",
                                ep->name, (unsigned long long)ep->super.peer_id,
                                (long long)st.st_size, (int)st.st_uid,
                                (unsigned)(st.st_mode & 0777));
        }
        /* pending: the creator is inside its connect */
        if (looks % 64 == 63 && tc_shm_peer_exited(ep)) {
            what = "exited while making the pair's segment";
            status = TC_ERR_PEER_FAILED;
            goto fail;
        }
        if (tc_time_ns() - start > TC_SHM_DECIDE_NS) {
            close(fd);
            return tc_error_set(TC_ERR_TIMEOUT,
                                "shm: peer %llu (pid %d) did not finish making segment %s in %llu "
                                "s",
                                (unsigned long long)ep->super.peer_id, (int)ep->peer_pid, ep->name,
                                TC_SHM_DECIDE_NS / 1000000000ull);
        }
        if (looks < 1000) {
            sched_yield();
        } else {
            struct timespec nap = {0, 50000};
            nanosleep(&nap, NULL);
        }
    }
    close(fd);
    return status;
fail:
    close(fd);
    shm_unlink(ep->name);
    return tc_error_set(status, "shm: peer %llu (pid %d) %s", (unsigned long long)ep->super.peer_id,
                        (int)ep->peer_pid, what);
}

tc_status_t tc_shm_ep_claim(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep)
{
    uint64_t avail = 0;
    tc_status_t status = tc_shm_free_bytes(&avail);
    if (status != TC_OK)
        return status;
    int fd = shm_open(ep->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
        ep->side = 0;
        return tc_shm_ep_create_segment(ctx, ep, fd, avail);
    }
    int err = errno;
    if (err == EEXIST) {
        ep->side = 1;
        if ((fd = shm_open(ep->name, O_RDWR | O_CLOEXEC, 0)) >= 0)
            return tc_shm_ep_learn(ctx, ep, fd);
        err = errno;
        if (err == ENOENT)
            return tc_error_set(TC_ERR_PEER_FAILED,
                                "shm: peer %llu (pid %d) removed segment %s before this process "
                                "opened it",
                                (unsigned long long)ep->super.peer_id, (int)ep->peer_pid, ep->name);
    }
    return tc_error_set(err == EMFILE || err == ENFILE ? TC_ERR_NO_RESOURCE : TC_ERR_SYSTEM,
                        "shm: shm_open(%s) for peer %llu failed: %s", ep->name,
                        (unsigned long long)ep->super.peer_id, strerror(err));
}

void tc_shm_unlink_marks(tc_shm_ctx_t *ctx)
{
    for (unsigned i = 0; i < ctx->nmarks; i++)
        shm_unlink(ctx->marks[i]); /* ENOENT when the peer read it: fine */
    free(ctx->marks);
    ctx->marks = NULL;
    ctx->nmarks = ctx->marks_cap = 0;
}

tc_status_t tc_shm_ep_reserve_lanes(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep)
{
    if (!ep->lanes_pending)
        return TC_OK;
    size_t off = tc_shm_geom_reserve(ep->cell_size, ep->ncells), len = 2 * TC_SHM_LANE_BYTES;
    int rc = tc_shm_reserve(ep->fd, (off_t)off, (off_t)len);
    if (rc != 0)
        return tc_error_set(rc == ENOSPC ? TC_ERR_NO_RESOURCE : TC_ERR_SYSTEM,
                            "shm: reserving the small-message lanes with peer %llu (%zu KiB of "
                            "/dev/shm) failed: %s",
                            (unsigned long long)ep->super.peer_id, len >> 10, strerror(rc));
    close(ep->fd);
    ep->fd = -1;
    ep->lanes_pending = 0;
    if (ep->side == 0) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        size_t grown = (off + len + page - 1) / page * page - ep->reserved;
        ep->reserved += grown;
        ctx->shm_bytes += grown;
        tc_shm_log_held(ctx);
    }
    return TC_OK;
}

/* Opener: map the creator's segment (its file, ep->fd, has its final size) and attach once its
 * magic is there; the name is unlinked by the attach. */
void tc_shm_ep_try_open(tc_shm_ctx_t *ctx, tc_shm_ep_t *ep)
{
    uint64_t now = tc_time_ns();
    if (now < ep->next_open_ns)
        return;
    ep->next_open_ns = now + TC_SHM_OPEN_RETRY_NS;
    struct stat st = {0};
    if (fstat(ep->fd, &st) != 0 || st.st_size < (off_t)TC_SHM_HDR_SIZE) {
        if (st.st_size == TC_SHM_SEG_FAILED)
            tc_shm_ep_fail(ctx, ep, TC_ERR_PEER_FAILED, "could not map the pair's segment");
        else
            tc_shm_ep_fail(ctx, ep, TC_ERR_PROTOCOL, "shrank segment %s below a header", ep->name);
        return;
    }
    size_t size = (size_t)st.st_size;
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, ep->fd, 0);
    if (p == MAP_FAILED) {
        tc_shm_ep_fail(ctx, ep, TC_ERR_SYSTEM, "segment %s could not be mapped: %s", ep->name,
                       strerror(errno));
        return;
    }
    tc_shm_ep_attach(ctx, ep, p, size);
    if (ep->seg != NULL && ep->state != TC_SHM_EP_FAILED)
        ep->lanes_pending = 1; /* fd kept: the lanes are reserved on their first use */
}
