/* The device side of the CUDA kernels as the library sees it: libtcomms_cuda.so, opened with
 * dlopen on first use (cuda_plugin.h). Where it is looked for, in order:
 *   1. $TC_CUDA_PLUGIN (a path; nothing else is tried when it is set);
 *   2. beside the object that holds this code (libtcomms.so in PREFIX/lib), and in ../lib from it
 *      (a program in PREFIX/bin linked with the archives);
 *   3. the dynamic loader's search path (LD_LIBRARY_PATH, the cache).
 * Built without the toolkit (TC_KERN_CUDA_PLUGIN_BUILT 0), every call says so. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_dev.h"
#include "cuda_plugin.h"
#include "tcomms/kernels/cuda_reduce.h"

#ifndef TC_KERN_CUDA_PLUGIN_BUILT
#error "TC_KERN_CUDA_PLUGIN_BUILT must be 0 or 1 (kernels/cuda/cuda.bzl sets it)"
#endif

static struct {
    pthread_once_t once;
    int loaded;
    tc_kern_cuda_plugin_t table;
    char where[1024]; /* the plugin's path, or every place tried and why it failed */
} tc_kern_cuda_lib = {.once = PTHREAD_ONCE_INIT};

#if TC_KERN_CUDA_PLUGIN_BUILT
/* Append to the reasons; never overflows. */
static void tc_kern_cuda_why(const char *fmt, const char *a, const char *b)
{
    size_t len = strlen(tc_kern_cuda_lib.where);

    if (len + 1 < sizeof(tc_kern_cuda_lib.where))
        snprintf(tc_kern_cuda_lib.where + len, sizeof(tc_kern_cuda_lib.where) - len, fmt, a, b);
}

/* 1 when the plugin at @p path loads and accepts this library's table. */
static int tc_kern_cuda_try(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    void *sym;
    tc_kern_cuda_plugin_init_fn init;

    if (h == NULL) {
        const char *e = dlerror();
        tc_kern_cuda_why("%s%s; ", e != NULL ? e : path, e != NULL ? "" : ": not loadable");
        return 0;
    }
    sym = dlsym(h, TC_KERN_CUDA_PLUGIN_ENTRY);
    memcpy(&init, &sym, sizeof(init));
    if (sym == NULL || init(TC_KERN_CUDA_PLUGIN_ABI, sizeof(tc_kern_cuda_lib.table),
                            &tc_kern_cuda_lib.table) != 0) {
        tc_kern_cuda_why("%s: %s; ", path,
                         sym == NULL ? "no entry point " TC_KERN_CUDA_PLUGIN_ENTRY
                                     : "a plugin of another tcomms build (ABI mismatch)");
        dlclose(h);
        return 0;
    }
    snprintf(tc_kern_cuda_lib.where, sizeof(tc_kern_cuda_lib.where), "%s", path);
    return 1; /* kept open for the life of the process */
}

/* The folder of the object that holds this code: libtcomms.so, or the program itself (whose
 * dladdr name is argv[0], without a folder when it was found through PATH). */
static int tc_kern_cuda_self_dir(char *dir, size_t cap)
{
    Dl_info info;
    ssize_t n;

    if (dladdr((void *)&tc_kern_cuda_lib, &info) != 0 && info.dli_fname != NULL &&
        strchr(info.dli_fname, '/') != NULL) {
        snprintf(dir, cap, "%s", info.dli_fname);
    } else {
        n = readlink("/proc/self/exe", dir, cap - 1);
        if (n <= 0)
            return 0;
        dir[n] = '\0';
    }
    char *slash = strrchr(dir, '/');
    if (slash == NULL)
        return 0;
    *slash = '\0';
    return 1;
}

static void tc_kern_cuda_search(void)
{
    const char *env = getenv("TC_CUDA_PLUGIN");
    char dir[512], path[640];

    if (env != NULL && env[0] != '\0') {
        tc_kern_cuda_lib.loaded = tc_kern_cuda_try(env);
        return;
    }
    if (tc_kern_cuda_self_dir(dir, sizeof(dir))) {
        snprintf(path, sizeof(path), "%s/%s", dir, TC_KERN_CUDA_PLUGIN_FILE);
        if ((tc_kern_cuda_lib.loaded = tc_kern_cuda_try(path)))
            return;
        snprintf(path, sizeof(path), "%s/../lib/%s", dir, TC_KERN_CUDA_PLUGIN_FILE);
        if ((tc_kern_cuda_lib.loaded = tc_kern_cuda_try(path)))
            return;
    }
    tc_kern_cuda_lib.loaded = tc_kern_cuda_try(TC_KERN_CUDA_PLUGIN_FILE);
}

static void tc_kern_cuda_load(void)
{
    size_t len;

    tc_kern_cuda_search();
    len = strlen(tc_kern_cuda_lib.where);
    if (!tc_kern_cuda_lib.loaded && len >= 2) /* the last reason's "; " */
        tc_kern_cuda_lib.where[len - 2] = '\0';
}
#else
static void tc_kern_cuda_load(void)
{
    snprintf(tc_kern_cuda_lib.where, sizeof(tc_kern_cuda_lib.where),
             "tcomms was built without CUDA (no toolkit at $CUDA_HOME or /usr/local/cuda when it "
             "was configured)");
}
#endif

int tc_kern_cuda_plugin(const char **where_p)
{
    pthread_once(&tc_kern_cuda_lib.once, tc_kern_cuda_load);
    if (where_p != NULL)
        *where_p = tc_kern_cuda_lib.where;
    return tc_kern_cuda_lib.loaded;
}

/* The table, or NULL with the detail set for @p what. */
static const tc_kern_cuda_plugin_t *tc_kern_cuda_table(const char *what)
{
    const char *where;

    if (tc_kern_cuda_plugin(&where))
        return &tc_kern_cuda_lib.table;
#if TC_KERN_CUDA_PLUGIN_BUILT
    tc_error_set(TC_ERR_UNSUPPORTED,
                 "%s: the CUDA kernels plugin %s cannot be loaded (set TC_CUDA_PLUGIN to its "
                 "path): %s",
                 what, TC_KERN_CUDA_PLUGIN_FILE, where);
#else
    tc_error_set(TC_ERR_UNSUPPORTED, "%s: %s", what, where);
#endif
    return NULL;
}

/* The plugin's status, with its detail set again in this library's error state. */
static tc_status_t tc_kern_cuda_ret(const tc_kern_cuda_plugin_t *p, tc_status_t st)
{
    if (st != TC_OK)
        tc_error_set(st, "%s", p->last_error());
    return st;
}

tc_status_t tc_kern_cuda_dev_count(int *count_p)
{
    const tc_kern_cuda_plugin_t *p = tc_kern_cuda_table("tc_kern_cuda_available");
    return p == NULL ? TC_ERR_UNSUPPORTED : tc_kern_cuda_ret(p, p->dev_count(count_p));
}

tc_status_t tc_kern_cuda_dev_set_device(int device)
{
    const tc_kern_cuda_plugin_t *p = tc_kern_cuda_table("tc_kern_cuda_set_device");
    return p == NULL ? TC_ERR_UNSUPPORTED : tc_kern_cuda_ret(p, p->set_device(device));
}

tc_status_t tc_kern_cuda_dev_memcpy(void *dst, const void *src, size_t bytes)
{
    const tc_kern_cuda_plugin_t *p = tc_kern_cuda_table("tc_kern_cuda_memcpy");
    return p == NULL ? TC_ERR_UNSUPPORTED : tc_kern_cuda_ret(p, p->memcpy(dst, src, bytes));
}

tc_status_t tc_kern_cuda_dev_reduce(tc_dtype_t dtype, tc_redop_t op, void *dst, const void *a,
                                    const void *b, size_t n, void *stream)
{
    const tc_kern_cuda_plugin_t *p = tc_kern_cuda_table("tc_kern_cuda_reduce");
    return p == NULL ? TC_ERR_UNSUPPORTED
                     : tc_kern_cuda_ret(p, p->reduce(dtype, op, dst, a, b, n, stream));
}

tc_status_t tc_kern_cuda_dev_scale_div(tc_dtype_t dtype, void *dst, size_t n, int divisor,
                                       void *stream)
{
    const tc_kern_cuda_plugin_t *p = tc_kern_cuda_table("tc_kern_cuda_scale_div");
    return p == NULL ? TC_ERR_UNSUPPORTED
                     : tc_kern_cuda_ret(p, p->scale_div(dtype, dst, n, divisor, stream));
}

tc_status_t tc_kern_cuda_dev_emulate_reduce(tc_dtype_t dtype, tc_redop_t op, void *dst,
                                            const void *a, const void *b, size_t n,
                                            unsigned max_blocks)
{
    const tc_kern_cuda_plugin_t *p = tc_kern_cuda_table("tc_kern_cuda_emulate_reduce");
    return p == NULL ? TC_ERR_UNSUPPORTED
                     : tc_kern_cuda_ret(p, p->emulate_reduce(dtype, op, dst, a, b, n, max_blocks));
}

tc_status_t tc_kern_cuda_dev_emulate_scale_div(tc_dtype_t dtype, void *dst, size_t n, int divisor,
                                               unsigned max_blocks)
{
    const tc_kern_cuda_plugin_t *p = tc_kern_cuda_table("tc_kern_cuda_emulate_scale_div");
    return p == NULL ? TC_ERR_UNSUPPORTED
                     : tc_kern_cuda_ret(p, p->emulate_scale_div(dtype, dst, n, divisor, max_blocks));
}
