/* What a process of the scale benchmark reads about itself (scale_probe.c for tcomms,
 * peers/mpi_scale.c for Open MPI), from /proc/self only, so that both are measured the same way:
 * resident memory and its peak, heap in use (glibc's count of allocated bytes: exact, unlike RSS,
 * which moves by pages), threads, descriptors, sockets, and the shared-memory segments mapped from
 * /dev/shm. Plain C, static functions: included by exactly one file per program. */
#ifndef BENCH_SCALE_STATS_H
#define BENCH_SCALE_STATS_H

#include <dirent.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct scale_stats {
    long rss_kib, hwm_kib, threads; /* /proc/self/status VmRSS, VmHWM, Threads */
    long heap_b;                    /* bytes allocated with malloc, in use */
    long fds, socks;                /* /proc/self/fd entries, those that are sockets */
    long shm_segs, shm_kib;         /* distinct files of /dev/shm mapped, and their mapped KiB */
} scale_stats_t;

static long scale_status_field(const char *name)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t n = strlen(name);
    long v = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, name, n) == 0 && line[n] == ':') {
            v = strtol(line + n + 1, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

static void scale_count_fds(scale_stats_t *s)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    char path[300], target[256];
    s->fds = s->socks = 0;
    if (!d) {
        s->fds = s->socks = -1;
        return;
    }
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d))
            continue;
        s->fds++;
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t k = readlink(path, target, sizeof target - 1);
        if (k > 0 && (target[k] = '\0', strncmp(target, "socket:", 7) == 0))
            s->socks++;
    }
    closedir(d);
}

/* Each /dev/shm file counted once however many mappings it has; KiB of all its mappings. */
static void scale_count_shm(scale_stats_t *s)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[600], seen[512][96];
    int nseen = 0;
    s->shm_segs = s->shm_kib = 0;
    if (!f) {
        s->shm_segs = s->shm_kib = -1;
        return;
    }
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char *p = strstr(line, "/dev/shm/");
        if (!p || sscanf(line, "%lx-%lx", &lo, &hi) != 2)
            continue;
        p[strcspn(p, " \n")] = '\0';
        s->shm_kib += (long)((hi - lo) / 1024);
        int known = 0;
        for (int i = 0; i < nseen && !known; i++)
            known = strncmp(seen[i], p, sizeof seen[i] - 1) == 0;
        if (!known) {
            s->shm_segs++;
            if (nseen < 512)
                snprintf(seen[nseen++], sizeof seen[0], "%s", p);
        }
    }
    fclose(f);
}

static void scale_read(scale_stats_t *s)
{
    s->rss_kib = scale_status_field("VmRSS");
    s->hwm_kib = scale_status_field("VmHWM");
    s->threads = scale_status_field("Threads");
    struct mallinfo2 mi = mallinfo2();
    s->heap_b = (long)mi.uordblks;
    scale_count_fds(s);
    scale_count_shm(s);
}


/* The key=value fields of @p k communicators of @p kind: per communicator while they exist
 * (@p made against @p before), and what is left after they were destroyed (@p after). */
static void scale_comm_fields(char *out, size_t cap, const char *kind, int k,
                              const scale_stats_t *before, const scale_stats_t *made,
                              const scale_stats_t *after)
{
    snprintf(out, cap,
             " %s%d_rss_kib=%.1f %s%d_heap_kib=%.2f %s%d_fds=%ld %s%d_rss_left=%ld"
             " %s%d_heap_left=%ld %s%d_fds_left=%ld",
             kind, k, (double)(made->rss_kib - before->rss_kib) / k, kind, k,
             (double)(made->heap_b - before->heap_b) / 1024.0 / k, kind, k,
             made->fds - before->fds, kind, k, after->rss_kib - before->rss_kib, kind, k,
             after->heap_b - before->heap_b, kind, k, after->fds - before->fds);
}

/* Milliseconds of CLOCK_REALTIME since SCALE_T0_NS (the launch, set by run_scale.sh), or -1. */
static double scale_ms_since_launch(void)
{
    const char *t0 = getenv("SCALE_T0_NS");
    struct timespec ts;
    if (!t0 || !*t0)
        return -1;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ((double)ts.tv_sec * 1e9 + (double)ts.tv_nsec - strtod(t0, NULL)) / 1e6;
}

static double scale_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

#endif
