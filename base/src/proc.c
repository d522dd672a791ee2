/* A process's state from /proc/PID/stat; what ended processes left in /dev/shm. */
#include "tcomms/base/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int tc_proc_state(int pid)
{
    char path[32], buf[256];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    /* the state follows the command name in parentheses, which may hold any character (hence the
     * last ')'); the fields after it hold none */
    const char *end = strrchr(buf, ')');
    if (!end || end[1] != ' ' || end[2] == '\0')
        return -1;
    return (unsigned char)end[2];
}

int tc_proc_ended(int pid)
{
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        return 1;
    int state = tc_proc_state(pid);
    return state == 0 || state == 'Z' || state == 'X';
}

unsigned long long tc_proc_pidns(void)
{
    struct stat st;
    return stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

unsigned tc_proc_sweep_shm(const char *prefix, int (*stale)(int dir, const char *name, void *arg),
                           void (*removed)(const char *path, void *arg), void *arg)
{
    DIR *d = opendir("/dev/shm");
    if (d == NULL)
        return 0;
    size_t plen = strlen(prefix);
    unsigned n = 0;
    struct dirent *e;
    char path[300];
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, plen) != 0 || !stale(dirfd(d), e->d_name, arg) ||
            snprintf(path, sizeof(path), "/%s", e->d_name) >= (int)sizeof(path))
            continue;
        if (shm_unlink(path) == 0) { /* ENOENT: another process was first */
            n++;
            if (removed)
                removed(path, arg);
        }
    }
    closedir(d);
    return n;
}
