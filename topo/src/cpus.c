/* How many CPUs the ranks of a node may run on together: the online CPUs,
 * narrowed by the cgroup's cpuset (a container's --cpuset-cpus, Slurm's
 * ConstrainCores) and its CPU quota (a container's --cpus, a Kubernetes CPU
 * limit). The online count alone is what a process sees of the machine, not
 * what its job may use. A process's own affinity mask is left out: launchers
 * bind each rank to cores of its own (mpirun does by default), so one rank's
 * mask says nothing of how many cores its node's ranks share. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tcomms/topo/topo.h"

/* Reads the first line of root/dir/name into buf; 0 when there is none. */
static int read_line(const char *root, const char *dir, const char *name, char *buf, size_t cap)
{
    char path[PATH_MAX];
    int n = snprintf(path, sizeof(path), "%s%s/%s", root, dir, name);
    if (n < 0 || (size_t)n >= sizeof(path))
        return 0;
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    int ok = fgets(buf, (int)cap, f) != NULL;
    (void)fclose(f);
    return ok;
}

/* CPUs a quota per period allows, rounded up; 0 for no limit. */
static int quota_cpus(long long quota, long long period)
{
    if (quota <= 0 || period <= 0)
        return 0;
    long long n = quota / period + (quota % period != 0); /* no overflow near LLONG_MAX */
    return n > INT_MAX ? INT_MAX : (int)n;
}

enum { LIMIT_QUOTA, LIMIT_CPUSET };

/* The CPUs of a cpuset list ("0-3,8,10-11"); 0 when it is empty or malformed. */
static int cpuset_count(const char *list)
{
    long long n = 0;
    const char *p = list;
    while (*p && *p != '\n') {
        char *end;
        long a = strtol(p, &end, 10), b = a;
        if (end == p || a < 0)
            return 0;
        if (*end == '-') {
            p = end + 1;
            b = strtol(p, &end, 10);
            if (end == p || b < a)
                return 0;
        }
        n += b - a + 1;
        p = *end == ',' ? end + 1 : end;
        if (*end != ',' && *end != '\n' && *end != '\0')
            return 0;
    }
    return n > INT_MAX ? INT_MAX : (int)n;
}

/* A decimal number at s, followed by a space, a newline or the end; *end_p
 * points after it. */
static int number(const char *s, long long *v_p, const char **end_p)
{
    char *end;
    errno = 0;
    *v_p = strtoll(s, &end, 10);
    *end_p = end;
    return end != s && errno == 0 && (*end == ' ' || *end == '\n' || *end == '\0');
}

/* The limit set on one cgroup directory. Quota: cgroup v2's cpu.max ("max
 * 100000" or "150000 100000"), v1's cpu.cfs_quota_us / cpu.cfs_period_us (-1:
 * none). Cpuset: v2's cpuset.cpus.effective, v1's cpuset.effective_cpus or
 * cpuset.cpus. 0 when none is set. */
static int dir_limit(const char *root, const char *dir, int v2, int kind)
{
    char a[4096], b[64];
    long long quota, period;
    if (kind == LIMIT_CPUSET) {
        if (read_line(root, dir, v2 ? "cpuset.cpus.effective" : "cpuset.effective_cpus", a,
                      sizeof(a)) ||
            (!v2 && read_line(root, dir, "cpuset.cpus", a, sizeof(a))))
            return cpuset_count(a);
        return 0;
    }
    const char *rest;
    if (v2) {
        /* "max 100000" (no limit) fails the first number */
        if (!read_line(root, dir, "cpu.max", a, sizeof(a)) || !number(a, &quota, &rest) ||
            *rest != ' ' || !number(rest + 1, &period, &rest))
            return 0;
        return quota_cpus(quota, period);
    }
    if (!read_line(root, dir, "cpu.cfs_quota_us", a, sizeof(a)) ||
        !read_line(root, dir, "cpu.cfs_period_us", b, sizeof(b)) || !number(a, &quota, &rest) ||
        !number(b, &period, &rest))
        return 0;
    return quota_cpus(quota, period);
}

static void keep_min(int *best, int q)
{
    if (q > 0 && (*best == 0 || q < *best))
        *best = q;
}

/* The smallest limit on the way from the cgroup dir up to root's top: a
 * parent's limit binds its children. */
static int path_limit(const char *root, const char *group, int v2, int kind)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", group);
    int best = 0;
    for (;;) {
        keep_min(&best, dir_limit(root, dir, v2, kind));
        char *slash = strrchr(dir, '/');
        if (!slash)
            break;
        *slash = '\0'; /* "/a/b" -> "/a" -> "" (the top itself) */
    }
    return best;
}

/* One line of /proc/self/cgroup: "0::/path" (v2) or "4:cpu,cpuacct:/path" (v1). */
static int cgroup_line(const char *root, const char *line, size_t len)
{
    const char *c1 = memchr(line, ':', len);
    const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
    if (!c2)
        return 0;
    char group[PATH_MAX], ctrl[256], sub[PATH_MAX];
    size_t glen = (size_t)(line + len - (c2 + 1)), clen = (size_t)(c2 - (c1 + 1));
    if (glen >= sizeof(group) || clen >= sizeof(ctrl))
        return 0;
    memcpy(group, c2 + 1, glen);
    group[glen] = '\0';
    if (strcmp(group, "/") == 0)
        group[0] = '\0';
    int best = 0;
    if (clen == 0) {
        keep_min(&best, path_limit(root, group, 1, LIMIT_QUOTA));
        keep_min(&best, path_limit(root, group, 1, LIMIT_CPUSET));
        return best;
    }
    memcpy(ctrl, c1 + 1, clen);
    ctrl[clen] = '\0';
    /* a v1 hierarchy is mounted under its list of controllers */
    int n = snprintf(sub, sizeof(sub), "%s/%s", root, ctrl);
    if (n < 0 || (size_t)n >= sizeof(sub))
        return 0;
    for (char *save, *t = strtok_r(ctrl, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (strcmp(t, "cpu") == 0)
            keep_min(&best, path_limit(sub, group, 0, LIMIT_QUOTA));
        else if (strcmp(t, "cpuset") == 0)
            keep_min(&best, path_limit(sub, group, 0, LIMIT_CPUSET));
    }
    return best;
}

int tc_topo_cgroup_cpus(const char *root, const char *proc_cgroup)
{
    int best = 0;
    for (const char *line = proc_cgroup; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        keep_min(&best, cgroup_line(root, line, len));
        line = end ? end + 1 : NULL;
    }
    return best;
}

int tc_topo_cpus_usable(void)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int n = online > 0 ? (online > INT_MAX ? INT_MAX : (int)online) : 0;
    char cg[4096];
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (f) {
        size_t len = fread(cg, 1, sizeof(cg) - 1, f);
        (void)fclose(f);
        cg[len] = '\0';
        keep_min(&n, tc_topo_cgroup_cpus("/sys/fs/cgroup", cg));
    }
    return n;
}
