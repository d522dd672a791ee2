/* Another process of this machine, as the kernel sees it. */
#ifndef TCOMMS_BASE_PROC_H
#define TCOMMS_BASE_PROC_H

/* The state letter of process @p pid from /proc/PID/stat ('R', 'S', 'D', 'T' stopped, 't' traced,
 * 'Z' zombie, 'X' dead, ...); 0 when no such process exists; -1 when its state could not be read.
 * A system call or three: not for hot paths. */
int tc_proc_state(int pid);

/* Whether process @p pid (above 0) has ended: kill() finds no such process, or it is a zombie not
 * yet reaped (which still answers kill()). An unreadable state counts as alive. Not for hot
 * paths either. */
int tc_proc_ended(int pid);

/* This process's pid namespace (the inode of /proc/self/ns/pid), or 0 when it cannot be read:
 * pids mean something only within one, so a name that carries a pid carries this too. */
unsigned long long tc_proc_pidns(void);

/* What ended processes left in /dev/shm: shm_unlink() every entry whose name starts with
 * @p prefix and that @p stale (given the directory's descriptor and the name without its slash)
 * judges left by ended processes of this namespace and user; @p removed (may be NULL) is told
 * each path ("/name") it unlinked, with @p arg as both were given. An entry another process
 * unlinked first is not counted. Returns how many were unlinked. A directory scan: not for hot
 * paths. */
unsigned tc_proc_sweep_shm(const char *prefix, int (*stale)(int dir, const char *name, void *arg),
                           void (*removed)(const char *path, void *arg), void *arg);

#endif
