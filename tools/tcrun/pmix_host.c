/* The embedded PMIx server: the host side of OpenPMIx's server library for one namespace whose
 * ranks are all local children of tcrun.
 *
 * The library calls the upcalls below from its own progress thread. They only record what the
 * main thread must act on (under a mutex) and wake it through a pipe; they never block. */
#include "tools/tcrun/pmix_host.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/types.h>

#include <pmix.h>
#include <pmix_server.h>

/* How long a registration with the server library may take before tcrun gives up. */
#define TC_RUN_PMIX_OP_TIMEOUT_S 30
/* How long the server library's shutdown may take before tcrun leaves without it: with a
 * deadlocked progress thread (libpmix 4.2 given the ds21 store without the hash store) it never
 * returned, and tcrun, which takes its signals through a descriptor, did not end even on SIGTERM.
 */
#define TC_RUN_PMIX_FINALIZE_S 10

static struct {
    char tmpdir[PATH_MAX];
    int tmpdir_made;
    int server_up;
    int nspace_registered;
    char nspace[PMIX_MAX_NSLEN + 1];
    char hostname[256];
    int nranks;
    int verbose;
    int ev_pipe[2];
    pthread_mutex_t lock;
    int abort_pending; /* an abort is recorded and not yet taken */
    int abort_seen;    /* only the first abort is reported */
    tc_run_abort_t abort;
    pid_t *pids; /* each rank's pid once started, else 0 */
} g = {.ev_pipe = {-1, -1}, .lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- waiting for the library's completion callbacks ---- */

typedef struct op_wait {
    pthread_mutex_t m;
    pthread_cond_t c;
    int done;
    pmix_status_t status;
} op_wait_t;

static op_wait_t *op_wait_new(void)
{
    op_wait_t *w = calloc(1, sizeof(*w));
    if (w != NULL) {
        pthread_mutex_init(&w->m, NULL);
        pthread_cond_init(&w->c, NULL);
    }
    return w;
}

static void op_wait_cb(pmix_status_t status, void *cbdata)
{
    op_wait_t *w = cbdata;
    pthread_mutex_lock(&w->m);
    w->status = status;
    w->done = 1;
    pthread_cond_signal(&w->c);
    pthread_mutex_unlock(&w->m);
}

/* Waits for the callback of an operation that returned rc. Frees w unless the wait timed out
 * (the library may still write to it then). Returns the operation's status. */
static pmix_status_t op_wait_finish(op_wait_t *w, pmix_status_t rc, int timeout_s)
{
    if (rc == PMIX_OPERATION_SUCCEEDED) {
        rc = PMIX_SUCCESS; /* completed at once; no callback will come */
    } else if (rc == PMIX_SUCCESS) {
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += timeout_s;
        pthread_mutex_lock(&w->m);
        int err = 0;
        while (!w->done && err == 0) {
            err = pthread_cond_timedwait(&w->c, &w->m, &deadline);
        }
        int done = w->done;
        rc = done ? w->status : PMIX_ERR_TIMEOUT;
        pthread_mutex_unlock(&w->m);
        if (!done) {
            return rc; /* leak w on purpose */
        }
    }
    pthread_mutex_destroy(&w->m);
    pthread_cond_destroy(&w->c);
    free(w);
    return rc;
}

/* ---- upcalls from the server library ---- */

static int rank_of(const pmix_proc_t *proc)
{
    return proc->rank == PMIX_RANK_WILDCARD ? -1 : (int)proc->rank;
}

static pmix_status_t on_client_connected(const pmix_proc_t *proc, void *server_object,
                                         pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    if (g.verbose) {
        fprintf(stderr, "tcrun: rank %d connected to the PMIx server\n", rank_of(proc));
    }
    if (cbfunc != NULL) {
        cbfunc(PMIX_SUCCESS, cbdata);
    }
    return PMIX_SUCCESS;
}

static pmix_status_t on_client_finalized(const pmix_proc_t *proc, void *server_object,
                                         pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    if (g.verbose) {
        fprintf(stderr, "tcrun: rank %d called PMIx_Finalize\n", rank_of(proc));
    }
    if (cbfunc != NULL) {
        cbfunc(PMIX_SUCCESS, cbdata);
    }
    return PMIX_SUCCESS;
}

static pmix_status_t on_abort(const pmix_proc_t *proc, void *server_object, int status,
                              const char msg[], pmix_proc_t procs[], size_t nprocs,
                              pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    pthread_mutex_lock(&g.lock);
    if (!g.abort_seen) {
        g.abort_seen = 1;
        g.abort_pending = 1;
        g.abort.rank = rank_of(proc);
        g.abort.status = status;
        snprintf(g.abort.msg, sizeof(g.abort.msg), "%s", msg != NULL ? msg : "");
    }
    pthread_mutex_unlock(&g.lock);
    ssize_t w;
    do {
        w = write(g.ev_pipe[1], "a", 1);
    } while (w < 0 && errno == EINTR);
    /* Release the caller: tcrun ends the whole job whatever the caller does next. */
    if (cbfunc != NULL) {
        cbfunc(PMIX_SUCCESS, cbdata);
    }
    return PMIX_SUCCESS;
}

static void release_fence_data(void *cbdata)
{
    free(cbdata);
}

/* Whether the process @p pid is gone or exiting. The kernel marks a process exiting (PF_EXITING in
 * /proc/PID/stat's flags) before it closes its descriptors, so a rank whose lost connection let the
 * library complete a fence without it is seen here whatever the main thread has reaped. */
static int pid_gone(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        return 1;
    }
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
    char state = 0;
    unsigned long flags = 0;
    if (p == NULL || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %lu", &state, &flags) != 2) {
        return 0;
    }
    return state == 'Z' || state == 'X' || (flags & 0x4) != 0; /* 0x4: PF_EXITING */
}

/* The first rank of the job that is gone or exiting, or -1. */
static int first_rank_gone(void)
{
    pthread_mutex_lock(&g.lock);
    int gone = -1;
    for (int r = 0; r < g.nranks && gone < 0 && g.pids != NULL; r++) {
        if (g.pids[r] > 0 && pid_gone(g.pids[r])) {
            gone = r;
        }
    }
    pthread_mutex_unlock(&g.lock);
    return gone;
}

void tc_run_pmix_rank_started(int rank, pid_t pid)
{
    pthread_mutex_lock(&g.lock);
    if (g.pids != NULL && rank >= 0 && rank < g.nranks) {
        g.pids[rank] = pid;
    }
    pthread_mutex_unlock(&g.lock);
}

/* All ranks are local to this one server, so the library calls this once per fence, after every
 * participant arrived, with the contributions of all of them already in data. With no other
 * server to exchange with, the "concatenation of all servers' blobs" is that one blob; the
 * library owns nothing of it after this call, so it is freed when the library releases it. */
static pmix_status_t on_fence_nb(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t info[],
                                 size_t ninfo, char *data, size_t ndata, pmix_modex_cbfunc_t cbfunc,
                                 void *cbdata)
{
    if (g.verbose) {
        fprintf(stderr, "tcrun: fence_nb of %zu proc entries, %zu bytes of data\n", nprocs, ndata);
    }
    if (cbfunc == NULL) {
        free(data);
        return PMIX_SUCCESS;
    }
    /* The library also completes a fence when a participant's connection is lost (it died inside
     * the fence's epoch): fail it, so that every rank learns of the loss from the fence itself
     * rather than by probing each peer's keys. Every fence of tcomms is over the whole job. */
    int gone = first_rank_gone();
    if (gone >= 0) {
        if (g.verbose) {
            fprintf(stderr, "tcrun: fence failed: rank %d is gone\n", gone);
        }
        cbfunc(PMIX_ERR_PROC_ABORTED, NULL, 0, cbdata, NULL, NULL);
        free(data);
        return PMIX_SUCCESS;
    }
    cbfunc(PMIX_SUCCESS, data, ndata, cbdata, release_fence_data, data);
    return PMIX_SUCCESS;
}

static pmix_server_module_t g_module = {
    .client_connected = on_client_connected,
    .client_finalized = on_client_finalized,
    .abort = on_abort,
    .fence_nb = on_fence_nb,
};

/* ---- set-up ---- */

static int make_tmpdir(void)
{
    /* The library puts Unix sockets here, whose paths must fit in 108 bytes: prefer $TMPDIR
     * only when it is short (Bazel's test TMPDIR is not). */
    const char *base = getenv("TMPDIR");
    if (base == NULL || base[0] != '/' || strlen(base) > 40) {
        base = "/tmp";
    }
    snprintf(g.tmpdir, sizeof(g.tmpdir), "%s/tcrun.XXXXXX", base);
    if (mkdtemp(g.tmpdir) == NULL) {
        fprintf(stderr, "tcrun: cannot create a temp dir from '%s': %s\n", g.tmpdir,
                strerror(errno));
        return -1;
    }
    g.tmpdir_made = 1;
    return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    if (remove(path) != 0 && errno != ENOENT) {
        fprintf(stderr, "tcrun: cannot remove '%s': %s\n", path, strerror(errno));
    }
    return 0;
}

static void info_load(pmix_info_t *info, const char *key, const void *val, pmix_data_type_t t)
{
    PMIX_INFO_LOAD(info, key, val, t);
}

/* Info array as a PMIX_DATA_ARRAY value owned by info (freed with it). */
static void info_load_array(pmix_info_t *info, const char *key, pmix_info_t *arr, size_t n)
{
    pmix_data_array_t *da = calloc(1, sizeof(*da));
    PMIX_LOAD_KEY(info->key, key);
    da->type = PMIX_INFO;
    da->size = n;
    da->array = arr;
    info->value.type = PMIX_DATA_ARRAY;
    info->value.data.darray = da;
}

static int register_nspace(void)
{
    int n = g.nranks;
    uint32_t un = (uint32_t)n;
    uint32_t zero = 0;
    uint32_t one = 1;
    pmix_rank_t rank0 = 0;
    char *peers = NULL;
    char *regex = NULL;
    char *ppn = NULL;
    pmix_info_t *info = NULL;
    size_t ninfo = 0;
    size_t ninfo_alloc = 12 + (size_t)n; /* job-level entries, then one per rank */
    int ret = -1;

    /* "0,1,...,n-1" */
    size_t cap = (size_t)n * 6 + 1;
    peers = malloc(cap);
    if (peers == NULL) {
        fprintf(stderr, "tcrun: out of memory\n");
        goto cleanup;
    }
    size_t off = 0;
    for (int r = 0; r < n; r++) {
        off += (size_t)snprintf(peers + off, cap - off, r == 0 ? "%d" : ",%d", r);
    }
    pmix_status_t rc = PMIx_generate_regex(g.hostname, &regex);
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "tcrun: PMIx_generate_regex(%s) failed: %s\n", g.hostname,
                PMIx_Error_string(rc));
        goto cleanup;
    }
    rc = PMIx_generate_ppn(peers, &ppn);
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "tcrun: PMIx_generate_ppn failed: %s\n", PMIx_Error_string(rc));
        goto cleanup;
    }

    PMIX_INFO_CREATE(info, ninfo_alloc);
    size_t i = 0;
    info_load(&info[i++], PMIX_JOBID, g.nspace, PMIX_STRING);
    info_load(&info[i++], PMIX_JOB_SIZE, &un, PMIX_UINT32);
    info_load(&info[i++], PMIX_UNIV_SIZE, &un, PMIX_UINT32);
    info_load(&info[i++], PMIX_MAX_PROCS, &un, PMIX_UINT32);
    info_load(&info[i++], PMIX_NUM_NODES, &one, PMIX_UINT32);
    info_load(&info[i++], PMIX_NODE_MAP, regex, PMIX_STRING);
    info_load(&info[i++], PMIX_PROC_MAP, ppn, PMIX_STRING);
    info_load(&info[i++], PMIX_LOCAL_SIZE, &un, PMIX_UINT32);
    info_load(&info[i++], PMIX_LOCAL_PEERS, peers, PMIX_STRING);
    info_load(&info[i++], PMIX_LOCALLDR, &rank0, PMIX_PROC_RANK);
    info_load(&info[i++], PMIX_APP_SIZE, &un, PMIX_UINT32);

    /* What the one node knows about itself. */
    pmix_info_t *node;
    PMIX_INFO_CREATE(node, 6);
    info_load(&node[0], PMIX_HOSTNAME, g.hostname, PMIX_STRING);
    info_load(&node[1], PMIX_NODEID, &zero, PMIX_UINT32);
    info_load(&node[2], PMIX_LOCAL_SIZE, &un, PMIX_UINT32);
    info_load(&node[3], PMIX_NODE_SIZE, &un, PMIX_UINT32);
    info_load(&node[4], PMIX_LOCAL_PEERS, peers, PMIX_STRING);
    info_load(&node[5], PMIX_LOCALLDR, &rank0, PMIX_PROC_RANK);
    info_load_array(&info[i++], PMIX_NODE_INFO_ARRAY, node, 6);

    /* Per rank: everything is on node 0, so local rank = node rank = rank. */
    for (int r = 0; r < n; r++) {
        pmix_rank_t pr = (pmix_rank_t)r;
        uint16_t lr = (uint16_t)r;
        pmix_info_t *p;
        PMIX_INFO_CREATE(p, 8);
        info_load(&p[0], PMIX_RANK, &pr, PMIX_PROC_RANK);
        info_load(&p[1], PMIX_LOCAL_RANK, &lr, PMIX_UINT16);
        info_load(&p[2], PMIX_NODE_RANK, &lr, PMIX_UINT16);
        info_load(&p[3], PMIX_GLOBAL_RANK, &pr, PMIX_PROC_RANK);
        info_load(&p[4], PMIX_APP_RANK, &pr, PMIX_PROC_RANK);
        info_load(&p[5], PMIX_APPNUM, &zero, PMIX_UINT32);
        info_load(&p[6], PMIX_NODEID, &zero, PMIX_UINT32);
        info_load(&p[7], PMIX_HOSTNAME, g.hostname, PMIX_STRING);
        info_load_array(&info[i++], PMIX_PROC_DATA, p, 8);
    }
    ninfo = i;

    op_wait_t *w = op_wait_new();
    if (w == NULL) {
        fprintf(stderr, "tcrun: out of memory\n");
        goto cleanup;
    }
    rc = PMIx_server_register_nspace(g.nspace, n, info, ninfo, op_wait_cb, w);
    rc = op_wait_finish(w, rc, TC_RUN_PMIX_OP_TIMEOUT_S);
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "tcrun: PMIx_server_register_nspace(%s) failed: %s\n", g.nspace,
                PMIx_Error_string(rc));
        goto cleanup;
    }
    g.nspace_registered = 1;

    w = op_wait_new();
    if (w == NULL) {
        fprintf(stderr, "tcrun: out of memory\n");
        goto cleanup;
    }
    rc = PMIx_server_setup_local_support(g.nspace, NULL, 0, op_wait_cb, w);
    rc = op_wait_finish(w, rc, TC_RUN_PMIX_OP_TIMEOUT_S);
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "tcrun: PMIx_server_setup_local_support(%s) failed: %s\n", g.nspace,
                PMIx_Error_string(rc));
        goto cleanup;
    }
    if (g.verbose) {
        fprintf(stderr, "tcrun: registered namespace %s: %d ranks on %s\n", g.nspace, n,
                g.hostname);
    }
    ret = 0;
cleanup:
    if (info != NULL) {
        PMIX_INFO_FREE(info, ninfo_alloc);
    }
    free(ppn);
    free(regex);
    free(peers);
    return ret;
}

/* Whether the comma-separated list @p list names hash, and nothing but hash and ds21. */
static int gds_usable(const char *list)
{
    int hash = 0;
    for (const char *p = list; *p != '\0';) {
        size_t len = strcspn(p, ",");
        if (len == 4 && strncmp(p, "hash", 4) == 0) {
            hash = 1;
        } else if (len != 4 || strncmp(p, "ds21", 4) != 0) {
            return 0;
        }
        p += len + (p[len] == ',');
    }
    return hash;
}

/* The stores of the job's data (libpmix's gds framework), for the server and, inherited, its
 * clients: the shared-memory store ds21 with the hash store beside it. The job's map and the keys
 * a fence collects then sit once in shared memory instead of in every rank's heap (the hash store
 * alone grew each rank's heap by about 2.1 KiB per rank of the job), and libpmix keeps the
 * server's own keys, which ds21 refuses, in the hash store. A user's list of hash and ds21 that
 * names hash is kept. Any other is replaced, and tcrun says so: without hash every rank's
 * PMIx_Init fails (and with ds21 the server then never shuts down); with ds12 a rank's job data
 * is lost (PMIx_Get of pmix.nodeid fails; libpmix 4.2.2). */
static int choose_gds(void)
{
    const char *user = getenv("PMIX_MCA_gds");
    if (user != NULL && gds_usable(user)) {
        return 0;
    }
    if (user != NULL) {
        fprintf(stderr,
                "tcrun: PMIX_MCA_gds=%s replaced by ds21,hash: under tcrun's PMIx server libpmix "
                "needs the hash store, and ds12 loses the ranks' job data\n",
                user);
    }
    if (setenv("PMIX_MCA_gds", "ds21,hash", 1) != 0) {
        fprintf(stderr, "tcrun: setenv(PMIX_MCA_gds) failed: %s\n", strerror(errno));
        return -1;
    }
    return 0;
}

int tc_run_pmix_start(int nranks, int verbose, int *event_fd)
{
    g.nranks = nranks;
    g.verbose = verbose;
    g.pids = calloc((size_t)nranks, sizeof(*g.pids));
    if (g.pids == NULL) {
        fprintf(stderr, "tcrun: out of memory\n");
        return -1;
    }
    if (gethostname(g.hostname, sizeof(g.hostname) - 1) != 0) {
        snprintf(g.hostname, sizeof(g.hostname), "localhost");
    }
    snprintf(g.nspace, sizeof(g.nspace), "tcrun.%ld", (long)getpid());
    if (pipe2(g.ev_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        fprintf(stderr, "tcrun: pipe2 failed: %s\n", strerror(errno));
        return -1;
    }
    if (make_tmpdir() != 0) {
        return -1;
    }
    if (choose_gds() != 0) {
        return -1;
    }
    pmix_info_t info[2];
    PMIX_INFO_CONSTRUCT(&info[0]);
    PMIX_INFO_CONSTRUCT(&info[1]);
    PMIX_INFO_LOAD(&info[0], PMIX_SERVER_TMPDIR, g.tmpdir, PMIX_STRING);
    PMIX_INFO_LOAD(&info[1], PMIX_SYSTEM_TMPDIR, g.tmpdir, PMIX_STRING);
    pmix_status_t rc = PMIx_server_init(&g_module, info, 2);
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_DESTRUCT(&info[1]);
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "tcrun: PMIx_server_init failed: %s\n", PMIx_Error_string(rc));
        return -1;
    }
    g.server_up = 1;
    if (register_nspace() != 0) {
        return -1;
    }
    *event_fd = g.ev_pipe[0];
    return 0;
}

int tc_run_pmix_prepare_rank(int rank, char ***env)
{
    pmix_proc_t proc;
    PMIX_PROC_LOAD(&proc, g.nspace, (pmix_rank_t)rank);
    op_wait_t *w = op_wait_new();
    if (w == NULL) {
        fprintf(stderr, "tcrun: out of memory\n");
        return -1;
    }
    pmix_status_t rc =
        PMIx_server_register_client(&proc, geteuid(), getegid(), NULL, op_wait_cb, w);
    rc = op_wait_finish(w, rc, TC_RUN_PMIX_OP_TIMEOUT_S);
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "tcrun: PMIx_server_register_client(rank %d) failed: %s\n", rank,
                PMIx_Error_string(rc));
        return -1;
    }
    rc = PMIx_server_setup_fork(&proc, env);
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "tcrun: PMIx_server_setup_fork(rank %d) failed: %s\n", rank,
                PMIx_Error_string(rc));
        return -1;
    }
    return 0;
}

int tc_run_pmix_take_abort(tc_run_abort_t *out)
{
    char buf[64];
    while (read(g.ev_pipe[0], buf, sizeof(buf)) > 0) {
    }
    pthread_mutex_lock(&g.lock);
    int had = g.abort_pending;
    if (had) {
        *out = g.abort;
        g.abort_pending = 0;
    }
    pthread_mutex_unlock(&g.lock);
    return had;
}

static void notify_done(pmix_status_t status, void *cbdata)
{
    pmix_info_t *info = cbdata;
    PMIX_INFO_FREE(info, 2);
}

void tc_run_pmix_notify_terminated(int rank, int code)
{
    if (!g.nspace_registered) {
        return;
    }
    pmix_proc_t proc;
    PMIX_PROC_LOAD(&proc, g.nspace, (pmix_rank_t)rank);
    pmix_info_t *info;
    PMIX_INFO_CREATE(info, 2);
    PMIX_INFO_LOAD(&info[0], PMIX_EVENT_AFFECTED_PROC, &proc, PMIX_PROC);
    PMIX_INFO_LOAD(&info[1], PMIX_EXIT_CODE, &code, PMIX_INT);
    pmix_status_t rc = PMIx_Notify_event(PMIX_EVENT_PROC_TERMINATED, NULL, PMIX_RANGE_LOCAL, info,
                                         2, notify_done, info);
    if (rc != PMIX_SUCCESS) {
        if (rc != PMIX_OPERATION_SUCCEEDED && g.verbose) {
            fprintf(stderr, "tcrun: PMIx_Notify_event(rank %d terminated) failed: %s\n", rank,
                    PMIx_Error_string(rc));
        }
        PMIX_INFO_FREE(info, 2);
    }
}

/* PMIx_server_finalize on a thread of its own, which reports through @p arg (an op_wait_t), so
 * that the wait for it is bounded like the other calls into the server library. */
static void *finalize_main(void *arg)
{
    op_wait_cb(PMIx_server_finalize(), arg);
    return NULL;
}

/* PMIx_server_finalize, given TC_RUN_PMIX_FINALIZE_S: 0, or -1 when it did not return in time
 * (said on stderr; its thread is left behind). Called unbounded when no thread can start. */
static int finalize_bounded(void)
{
    op_wait_t *w = op_wait_new();
    pthread_t t;
    pmix_status_t rc;
    if (w == NULL || pthread_create(&t, NULL, finalize_main, w) != 0) {
        free(w);
        rc = PMIx_server_finalize();
    } else {
        pthread_detach(t);
        rc = op_wait_finish(w, PMIX_SUCCESS, TC_RUN_PMIX_FINALIZE_S);
        if (rc == PMIX_ERR_TIMEOUT) {
            fprintf(stderr,
                    "tcrun: the PMIx server did not shut down within %d s "
                    "(PMIx_server_finalize did not return); leaving without it\n",
                    TC_RUN_PMIX_FINALIZE_S);
            return -1;
        }
    }
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "tcrun: PMIx_server_finalize failed: %s\n", PMIx_Error_string(rc));
    }
    return 0;
}

int tc_run_pmix_stop(void)
{
    int abandoned = 0;
    if (g.nspace_registered) {
        op_wait_t *w = op_wait_new();
        if (w != NULL) {
            PMIx_server_deregister_nspace(g.nspace, op_wait_cb, w);
            (void)op_wait_finish(w, PMIX_SUCCESS, TC_RUN_PMIX_OP_TIMEOUT_S);
        }
        g.nspace_registered = 0;
    }
    if (g.server_up) {
        abandoned = finalize_bounded() != 0;
        g.server_up = 0;
    }
    if (g.tmpdir_made) {
        nftw(g.tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        g.tmpdir_made = 0;
    }
    for (int i = 0; i < 2; i++) {
        if (g.ev_pipe[i] >= 0) {
            close(g.ev_pipe[i]);
            g.ev_pipe[i] = -1;
        }
    }
    pthread_mutex_lock(&g.lock);
    free(g.pids);
    g.pids = NULL;
    pthread_mutex_unlock(&g.lock);
    return abandoned;
}
