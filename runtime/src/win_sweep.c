/* Allocated windows' segments that ended processes left in /dev/shm. A segment's name lives from
 * its creation in tc_win_allocate until every rank has set up (win.c unlinks it then); a rank
 * killed in between leaves it, with its pages. Its name carries the creator's pid namespace and
 * pid ("/tcw.NS.PID.COMM.N"), so the next allocation on this machine removes those whose creator,
 * of this namespace and this user, has ended (as docs/transport_shm.md's "Leftovers" for pair
 * segments). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tcomms/base/log.h"
#include "tcomms/base/proc.h"
#include "win_seg.h"

int tc_rt_win_seg_name(char *buf, size_t cap, int pid, uint32_t comm_id, unsigned seq)
{
    int n = snprintf(buf, cap, "/tcw.%llu.%d.%u.%u", tc_proc_pidns(), pid, comm_id, seq);
    return n > 0 && (size_t)n < cap;
}

/* The decimal number at *@p p followed by @p end, in *@p v; advances *@p p past both. */
static int win_seg_field(const char **p, char end, unsigned long long *v)
{
    char *e;
    if (**p < '0' || **p > '9')
        return 0;
    errno = 0;
    *v = strtoull(*p, &e, 10);
    if (errno != 0 || *e != end)
        return 0;
    *p = end ? e + 1 : e;
    return 1;
}

/* What the sweep's judge learnt of the entry it last judged, for the log line. */
typedef struct {
    unsigned long long ns;
    int pid;
    long long bytes;
} win_seg_t;

int tc_rt_win_seg_pid(const char *name, unsigned long long ns)
{
    unsigned long long got, pid, comm, seq;
    if (strncmp(name, "tcw.", 4) != 0)
        return 0;
    const char *p = name + 4;
    if (!win_seg_field(&p, '.', &got) || !win_seg_field(&p, '.', &pid) ||
        !win_seg_field(&p, '.', &comm) || !win_seg_field(&p, '\0', &seq) || got != ns || pid == 0 ||
        pid > INT_MAX)
        return 0;
    return (int)pid;
}

/* The sweep's judge: a window segment of this namespace whose creator, of this user, ended. */
static int win_seg_stale(int dir, const char *name, void *arg)
{
    win_seg_t *seg = arg;
    struct stat st;
    seg->pid = tc_rt_win_seg_pid(name, seg->ns);
    if (seg->pid == 0 || fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(st.st_mode) || st.st_uid != geteuid() || !tc_proc_ended(seg->pid))
        return 0;
    seg->bytes = (long long)st.st_size;
    return 1;
}

static void win_seg_removed(const char *path, void *arg)
{
    const win_seg_t *seg = arg;
    tc_log_info(TC_SUBSYS_RUNTIME,
                "removed window segment %s (%lld bytes) left by ended process %d", path, seg->bytes,
                seg->pid);
}

void tc_rt_win_sweep(void)
{
    win_seg_t seg = {.ns = tc_proc_pidns()};
    if (seg.ns) /* without a namespace no pid can be judged */
        (void)tc_proc_sweep_shm("tcw.", win_seg_stale, win_seg_removed, &seg);
}
