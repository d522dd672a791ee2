/* Removing the pair segments that ended processes left in /dev/shm (docs/transport_shm.md,
 * "Leftovers"). A name exists from the creator's connect until the opener attaches; when both
 * processes end in between (killed, or exited without destroying their context), nothing
 * removes it. Each new context removes those whose header says: ours, from this pid namespace,
 * and neither of its two processes alive. */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm_internal.h"
#include "tcomms/base/log.h"
#include "tcomms/base/proc.h"

int tc_shm_sweep_stale(const void *hdr, size_t len, uint64_t pidns, int (*alive)(int32_t pid))
{
    tc_shm_seg_hdr_t h;
    if (len < sizeof(h) || pidns == 0)
        return 0;
    memcpy(&h, hdr, sizeof(h));
    /* a creator still writing it, an older layout (no pid namespace) or another namespace's
     * processes, whose pids mean nothing here: kept */
    if (h.magic != TC_SHM_MAGIC || h.version != TC_SHM_VERSION || h.pidns != pidns)
        return 0;
    for (int i = 0; i < 2; i++)
        if (h.pid[i] <= 0 || alive(h.pid[i]))
            return 0;
    return 1;
}

static int tc_shm_pid_alive(int32_t pid)
{
    return !tc_proc_ended((int)pid); /* a zombie has ended; EPERM: alive, someone else's */
}

/* The header of the file @p name in @p dir when it is a segment private to us (else 0). */
static int tc_shm_sweep_read(int dir, const char *name, tc_shm_seg_hdr_t *h, uint64_t *bytes)
{
    int fd = openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return 0;
    struct stat st;
    int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
             tc_shm_seg_classify((uint64_t)st.st_size, (uint64_t)st.st_nlink, (uint32_t)st.st_uid,
                                 (uint32_t)st.st_mode, (uint32_t)geteuid()) == TC_SHM_SEG_READY &&
             pread(fd, h, sizeof(*h), 0) == (ssize_t)sizeof(*h);
    *bytes = ok ? (uint64_t)st.st_blocks * 512u : 0;
    close(fd);
    return ok;
}

/* What the sweep's judge read of the entry it last judged, and the running totals. */
typedef struct {
    uint64_t pidns;
    tc_shm_seg_hdr_t h;
    uint64_t bytes, freed;
} tc_shm_sweep_t;

static int tc_shm_sweep_judge(int dir, const char *name, void *arg)
{
    tc_shm_sweep_t *sw = arg;
    return tc_shm_sweep_read(dir, name, &sw->h, &sw->bytes) &&
           tc_shm_sweep_stale(&sw->h, sizeof(sw->h), sw->pidns, tc_shm_pid_alive);
}

static void tc_shm_sweep_removed(const char *path, void *arg)
{
    tc_shm_sweep_t *sw = arg;
    sw->freed += sw->bytes;
    tc_log_debug(TC_SUBSYS_TRANSPORT, "shm: removed %s (pids %d and %d ended)", path,
                 (int)sw->h.pid[0], (int)sw->h.pid[1]);
}

void tc_shm_sweep(const tc_shm_ctx_t *ctx)
{
    if (ctx->pidns == 0)
        return; /* no way to tell this namespace's processes from another's */
    tc_shm_sweep_t sw = {.pidns = ctx->pidns};
    unsigned removed = tc_proc_sweep_shm("tcomms-", tc_shm_sweep_judge, tc_shm_sweep_removed, &sw);
    if (removed > 0)
        tc_log_info(TC_SUBSYS_TRANSPORT,
                    "shm: removed %u pair segments of ended processes from %s (%llu bytes)",
                    removed, TC_SHM_DEV, (unsigned long long)sw.freed);
}
