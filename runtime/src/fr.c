/* The flight recorder: every communicator keeps its last TC_FR_SIZE
 * operations (default 64; 0 turns it off) — sequence number, collective,
 * type, count, op, root, algorithm, state, start and end times, and the
 * peers still awaited — and writes them as JSON into TC_FR_DIR on a timeout
 * or an error, on SIGUSR1, or when asked (tc_comm_dump_fr). tools/tc-fr reads
 * the dumps of every rank and names the culprit.
 *
 * Recording costs one slot write and a clock read per operation; the dump
 * happens on the thread that progresses, never in the signal handler (which
 * only sets a flag). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "comms.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"

static volatile sig_atomic_t fr_signalled;
static int fr_handler_installed;

static void fr_on_signal(int sig)
{
    (void)sig;
    fr_signalled = 1;
}

static uint64_t fr_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* TC_FR_SIZE: the entries each communicator keeps (0: no recorder). */
static tc_status_t fr_size(int64_t *n_p)
{
    return tc_config_int("TC_FR_SIZE", 64, 0, 1 << 20, n_p);
}

tc_status_t tc_rt_fr_init(tc_rt_comm_t *comm)
{
    int64_t n;
    tc_status_t st = fr_size(&n);
    if (st != TC_OK || n == 0)
        return st;
    if (!(comm->fr = calloc((size_t)n, sizeof(*comm->fr))))
        return tc_error_set(TC_ERR_NO_MEMORY, "flight recorder of %lld entries", (long long)n);
    comm->fr_cap = (uint32_t)n;
    const char *dir = tc_config_string("TC_FR_DIR", NULL);
    if (dir && *dir && !fr_handler_installed) {
        /* SIGUSR1 asks for a dump, unless the application handles it itself */
        struct sigaction old;
        if (sigaction(SIGUSR1, NULL, &old) == 0 && old.sa_handler == SIG_DFL) {
            struct sigaction sa;
            memset(&sa, 0, sizeof(sa));
            sa.sa_handler = fr_on_signal;
            sigemptyset(&sa.sa_mask);
            sa.sa_flags = SA_RESTART;
            if (sigaction(SIGUSR1, &sa, NULL) == 0)
                fr_handler_installed = 1;
        }
    }
    return TC_OK;
}

/* The longest TC_FR_DIR whose dump paths fit: "/tc_fr.", a name of up to 63, ".", a rank and
 * ".json.tmp" in 520 bytes. */
#define FR_DIR_MAX 400

tc_status_t tc_rt_fr_config(void)
{
    const char *dir = tc_config_string("TC_FR_DIR", NULL);
    struct stat sb;
    int64_t n;
    tc_status_t st = fr_size(&n);
    if (st != TC_OK || n == 0 || !dir || !*dir)
        return st; /* TC_FR_SIZE=0: no recorder, nothing to dump */
    if (strlen(dir) > FR_DIR_MAX)
        return tc_error_set(TC_ERR_CONFIG,
                            "TC_FR_DIR is %zu bytes, more than %d: the flight recorder's dumps "
                            "would be lost",
                            strlen(dir), FR_DIR_MAX);
    const char *why = stat(dir, &sb) != 0    ? strerror(errno)
                      : !S_ISDIR(sb.st_mode) ? "not a directory"
                                             : NULL;
    if (why)
        return tc_error_set(TC_ERR_CONFIG,
                            "TC_FR_DIR=\"%s\": %s: the flight recorder's dumps would be lost", dir,
                            why);
    if (access(dir, W_OK | X_OK) != 0)
        return tc_error_set(TC_ERR_CONFIG,
                            "TC_FR_DIR=\"%s\": not writable (%s): the flight recorder's dumps "
                            "would be lost",
                            dir, strerror(errno));
    return TC_OK;
}

void tc_rt_fr_free(tc_rt_comm_t *comm)
{
    free(comm->fr);
    comm->fr = NULL;
}

void tc_rt_fr_begin(tc_rt_work_t *w, uint64_t now_ns)
{
    tc_rt_comm_t *comm = w->comm;
    if (!comm->fr)
        return;
    tc_rt_obs_lock(comm);
    tc_rt_fr_entry_t *e = tc_rt_fr_claim(comm, &w->fr_id);
    /* field by field: a whole-struct store would clear all of awaited every operation */
    e->id = w->fr_id;
    e->seq = w->op.seq;
    e->coll = w->op.coll;
    e->dtype = w->call.dtype;
    e->op = w->call.op;
    e->root = w->call.root;
    e->count = w->call.sendcounts ? 0 : w->call.count;
    e->algo = w->main_sched ? w->main_sched->algo : w->ops ? w->ops->algo : "?";
    e->name = w->op.name;
    e->state = TC_RT_FR_RUNNING;
    e->status = TC_OK;
    e->start_ns = tc_rt_fr_time(comm, now_ns);
    e->end_ns = 0;
    e->awaited[0] = '\0';
    tc_rt_obs_unlock(comm);
}

void tc_rt_fr_algo(tc_rt_work_t *w, const char *algo)
{
    tc_rt_comm_t *comm = w->comm;
    if (!comm->fr || !w->fr_id)
        return;
    tc_rt_obs_lock(comm);
    tc_rt_fr_entry_t *e = &comm->fr[(w->fr_id - 1) % comm->fr_cap];
    if (e->id == w->fr_id)
        e->algo = algo;
    tc_rt_obs_unlock(comm);
}

void tc_rt_fr_end(tc_rt_work_t *w, tc_status_t st, uint64_t now_ns)
{
    tc_rt_comm_t *comm = w->comm;
    if (!comm || !comm->fr || !w->fr_id)
        return;
    char awaited[sizeof(((tc_rt_fr_entry_t *)0)->awaited)] = "";
    if (st != TC_OK && w->ops)
        w->ops->awaited(w, awaited, sizeof(awaited));
    else if (st != TC_OK && w->sched)
        tc_rt_exec_awaited(w, awaited, sizeof(awaited));
    tc_rt_obs_lock(comm);
    tc_rt_fr_entry_t *e = &comm->fr[(w->fr_id - 1) % comm->fr_cap];
    if (e->id == w->fr_id) { /* else overwritten by newer operations */
        e->end_ns = tc_rt_fr_time(comm, now_ns);
        e->status = st;
        e->state = st == TC_OK            ? TC_RT_FR_DONE
                   : st == TC_ERR_TIMEOUT ? TC_RT_FR_TIMED_OUT
                                          : TC_RT_FR_FAILED;
        if (st != TC_OK)
            memcpy(e->awaited, awaited, sizeof(awaited));
    }
    tc_rt_obs_unlock(comm);
}

static const char *fr_state_name(int state)
{
    static const char *const names[] = {"running", "completed", "timed_out", "failed"};
    return state >= 0 && state < 4 ? names[state] : "unknown";
}

/* The writes to the dump's FILE below go unchecked one by one: an error sticks
 * to the stream, and tc_rt_fr_dump checks ferror() and fclose() once at the end.
 * NOLINTBEGIN(cert-err33-c) */

/* JSON string: the names here are ours and plain, but the comm name is the
 * user's: escape what JSON requires. */
static void fr_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* "1, 3" (the executor's list) or "none ..." -> [1,3] */
static void fr_json_ranks(FILE *f, const char *list)
{
    fputc('[', f);
    int first = 1;
    for (const char *p = list; *p;) {
        char *end;
        long r = strtol(p, &end, 10);
        if (end == p) {
            p++;
            continue;
        }
        fprintf(f, "%s%ld", first ? "" : ",", r);
        first = 0;
        p = end;
    }
    fputc(']', f);
}

tc_status_t tc_rt_fr_dump(tc_rt_comm_t *comm, const char *reason)
{
    const char *dir = tc_config_string("TC_FR_DIR", NULL);
    if (!comm->fr)
        return tc_error_set(TC_ERR_INVALID_STATE,
                            "flight recorder of comm '%s' is off "
                            "(TC_FR_SIZE=0)",
                            comm->name);
    if (!dir || !*dir)
        return tc_error_set(TC_ERR_CONFIG, "flight recorder of comm '%s': TC_FR_DIR is not set",
                            comm->name);
    /* running works: what they still await, now */
    for (tc_rt_work_t *w = comm->world->active; w; w = w->next) {
        if (w->comm != comm || !w->fr_id || (!w->ops && !w->sched))
            continue;
        char awaited[sizeof(((tc_rt_fr_entry_t *)0)->awaited)];
        if (w->ops)
            w->ops->awaited(w, awaited, sizeof(awaited));
        else
            tc_rt_exec_awaited(w, awaited, sizeof(awaited));
        tc_rt_obs_lock(comm);
        tc_rt_fr_entry_t *e = &comm->fr[(w->fr_id - 1) % comm->fr_cap];
        if (e->id == w->fr_id && e->state == TC_RT_FR_RUNNING)
            memcpy(e->awaited, awaited, sizeof(awaited));
        tc_rt_obs_unlock(comm);
    }
    /* the name in the file's: other characters than letters, digits, '-', '_' and '.' as
     * '_' (a name with '/' named a missing directory and the dump was lost) */
    char fname[sizeof(comm->name)];
    size_t k = 0;
    for (; comm->name[k] && k + 1 < sizeof(fname); k++) {
        char ch = comm->name[k];
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                 ch == '-' || ch == '_' || ch == '.';
        fname[k] = ch;
        if (!ok)
            fname[k] = '_';
    }
    fname[k] = '\0';
    char path[512], tmp[520];
    if (snprintf(path, sizeof(path), "%s/tc_fr.%s.%d.json", dir, fname, comm->rank) >=
        (int)sizeof(path)) /* cut short, it would name another file */
        return tc_error_set(TC_ERR_CONFIG,
                            "flight recorder of comm '%s': TC_FR_DIR is too long (%zu bytes)",
                            comm->name, strlen(dir));
    snprintf(tmp, sizeof(tmp), "%s.tmp", path); /* fits: strlen(path) < 512 */
    FILE *f = fopen(tmp, "w");
    if (!f)
        return tc_error_set(TC_ERR_SYSTEM, "flight recorder: cannot write %s: %s", tmp,
                            strerror(errno));
    tc_boot_t *boot = comm->world->boot;
    fprintf(f, "{\"version\": 1, \"comm\": ");
    fr_json_string(f, comm->name);
    fprintf(f, ", \"comm_id\": %u, \"rank\": %d, \"size\": %d, \"world_rank\": %d, \"host\": ",
            comm->comm_id, comm->rank, comm->size, boot->rank);
    fr_json_string(f, boot->host);
    fprintf(f, ", \"pid\": %d, \"run\": ", (int)getpid());
    if (comm->world->run_id[0])
        fr_json_string(f, comm->world->run_id);
    else
        fprintf(f, "null");
    fprintf(f, ", \"reason\": ");
    fr_json_string(f, reason);
    fprintf(f, ", \"dump_ns\": %llu, \"ops\": [", (unsigned long long)fr_now());
    /* entries hold the monotonic clock; dumps give the real time, comparable
     * across ranks */
    uint64_t offset = fr_now() - tc_time_ns();
    tc_rt_obs_lock(comm);
    tc_rt_obs_settle(comm);
    uint64_t last = comm->fr_next;
    tc_rt_obs_unlock(comm);
    uint64_t first = last > comm->fr_cap ? last - comm->fr_cap : 0;
    for (uint64_t n = first; n < last; n++) {
        /* a copy: operations of the small path record without the world's lock meanwhile */
        tc_rt_fr_entry_t copy;
        tc_rt_obs_lock(comm);
        copy = comm->fr[n % comm->fr_cap];
        tc_rt_obs_unlock(comm);
        const tc_rt_fr_entry_t *e = &copy;
        int p2p = e->coll == TC_COLL_COUNT;
        fprintf(f,
                "%s\n  {\"seq\": %llu, \"coll\": \"%s\", \"dtype\": \"%s\", \"count\": %llu, "
                "\"op\": \"%s\", \"root\": %d, \"algo\": \"%s\", \"state\": \"%s\", "
                "\"start_ns\": %llu, \"end_ns\": %llu, \"status\": \"%s\", \"awaited\": ",
                n == first ? "" : ",", (unsigned long long)e->seq,
                e->name ? e->name
                : p2p   ? "send_recv"
                        : tc_coll_name((tc_coll_t)e->coll),
                p2p ? "bytes" : tc_dtype_name((tc_dtype_t)e->dtype), (unsigned long long)e->count,
                tc_redop_name((tc_redop_t)e->op), e->root, e->algo, fr_state_name(e->state),
                (unsigned long long)e->start_ns + offset,
                (unsigned long long)(e->end_ns ? e->end_ns + offset : 0),
                e->state == TC_RT_FR_RUNNING ? "TC_INPROGRESS" : tc_status_string(e->status));
        fr_json_ranks(f, e->state == TC_RT_FR_DONE ? "" : e->awaited);
        fputc('}', f);
    }
    /* read after the entries were copied: an operation begun meanwhile (on another thread) is
     * then not above it */
    fprintf(f, "\n], \"last_seq\": %llu}\n",
            (unsigned long long)__atomic_load_n(&comm->seq, __ATOMIC_ACQUIRE));
    /* NOLINTEND(cert-err33-c) */
    int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
        unlink(tmp);
        return tc_error_set(TC_ERR_SYSTEM, "flight recorder: writing %s failed: %s", path,
                            strerror(errno));
    }
    tc_log_info(TC_SUBSYS_RUNTIME, "flight recorder of comm '%s' written to %s (%s)", comm->name,
                path, reason);
    return TC_OK;
}

void tc_rt_fr_dump_auto(tc_rt_comm_t *comm, const char *reason, tc_status_t keep)
{
    const char *dir = tc_config_string("TC_FR_DIR", NULL);
    if (!comm->fr || !dir || !*dir)
        return;
    char saved[512];
    snprintf(saved, sizeof(saved), "%s", tc_last_error());
    if (tc_rt_fr_dump(comm, reason) != TC_OK)
        tc_log_warn(TC_SUBSYS_RUNTIME, "%s", tc_last_error());
    if (keep != TC_OK)
        tc_error_set(keep, "%s", saved); /* the caller's error stays the one reported */
}

void tc_rt_fr_poll_signal(tc_rt_world_t *world)
{
    if (!fr_signalled)
        return;
    fr_signalled = 0;
    for (tc_rt_comm_t *c = world->comms; c; c = c->wnext)
        tc_rt_fr_dump_auto(c, "SIGUSR1", TC_OK);
}
