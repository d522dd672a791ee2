/* Tests: the threads of this process by name (/proc/self/task/<tid>/comm). */
#ifndef TC_TESTS_PROC_THREADS_H
#define TC_TESTS_PROC_THREADS_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>

/* How many threads of this process are named @p name (-1: /proc cannot be read). */
static inline int tc_test_threads_named(const char *name)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], comm[64] = "";
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue; /* the thread ended meanwhile */
        if (fgets(comm, sizeof(comm), f))
            comm[strcspn(comm, "\n")] = '\0';
        fclose(f);
        n += strcmp(comm, name) == 0;
    }
    closedir(d);
    return n;
}

#endif
