/*
 * Leftover pair segments (docs/transport_shm.md, "Leftovers"): a name made by a creator whose
 * opener never attached stays in /dev/shm when both processes end without closing; the next
 * context created on the node removes it, and nothing else.
 * - a child process makes a pair's segment between two of its contexts and exits without
 *   destroying them: the name is there, and gone once this process creates a context (the
 *   child not yet reaped: a zombie counts as ended);
 * - kept: a pending segment of this (live) process, a copy of the leftover's header marked with
 *   another pid namespace, one owned by another user (run as root), a file that is not a segment;
 * - the rule itself (tc_shm_sweep_stale), over headers that vary one field at a time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "transport/shm/src/shm_internal.h"
#include "shm_util.h"
#include "tcomms/base/status.h"

static int name_exists(const char *name)
{
    int fd = shm_open(name, O_RDONLY, 0);
    if (fd >= 0)
        close(fd);
    return fd >= 0;
}

/* The name of the pair of contexts @p lo (the smaller id) and @p hi. */
static void pair_name(tc_tp_ctx_t *lo, tc_tp_ctx_t *hi, char *out, size_t cap)
{
    unsigned char a[TC_TP_SHM_ADDR_LEN], b[TC_TP_SHM_ADDR_LEN];
    int32_t pid;
    uint64_t na, nb;
    tc_shmt_addr(lo, a);
    tc_shmt_addr(hi, b);
    memcpy(&pid, a + 8, 4);
    memcpy(&na, a + 24, 8);
    memcpy(&nb, b + 24, 8);
    snprintf(out, cap, "/tcomms-%d-%016llx-%016llx", (int)pid, (unsigned long long)na,
             (unsigned long long)nb);
}

/* Context 1 connects to context 0: it makes the segment, which waits for 0 to attach. */
static tc_tp_ep_t *pending(tc_tp_ctx_t *c0, tc_tp_ctx_t *c1)
{
    unsigned char a0[TC_TP_SHM_ADDR_LEN];
    tc_shmt_addr(c0, a0);
    tc_tp_ep_t *ep = NULL;
    if (tc_tp_ep_connect(c1, 0, a0, sizeof(a0), &ep) != TC_OK)
        return NULL;
    return ep;
}

/* A copy of segment @p from named @p to, its header changed by @p edit; returns 0 or -1. */
static int copy_seg(const char *from, const char *to, void (*edit)(tc_shm_seg_hdr_t *))
{
    tc_shm_seg_hdr_t h;
    int fd = shm_open(from, O_RDONLY, 0);
    if (fd < 0 || pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
        return -1;
    struct stat st;
    fstat(fd, &st);
    close(fd);
    edit(&h);
    fd = shm_open(to, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        return -1;
    int rc = ftruncate(fd, st.st_size) == 0 && pwrite(fd, &h, sizeof(h), 0) == sizeof(h) ? 0 : -1;
    close(fd);
    return rc;
}

static void other_ns(tc_shm_seg_hdr_t *h)
{
    h->pidns += 1;
}

static void unchanged(tc_shm_seg_hdr_t *h)
{
    (void)h;
}

static void test_leftover_removed(void **state)
{
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        tc_tp_ctx_t *c0 = NULL, *c1 = NULL;
        char name[96] = "";
        if (tc_shmt_ctx_try(0, NULL, NULL, &c0) == TC_OK &&
            tc_shmt_ctx_try(1, NULL, NULL, &c1) == TC_OK && pending(c0, c1) != NULL)
            pair_name(c0, c1, name, sizeof(name));
        ssize_t n = write(fds[1], name, sizeof(name));
        _exit(n == (ssize_t)sizeof(name) ? 0 : 1); /* no destroy: as a killed job would */
    }
    close(fds[1]);
    char left[96];
    assert_int_equal(read(fds[0], left, sizeof(left)), sizeof(left));
    close(fds[0]);
    /* ended, not yet reaped: a zombie still answers kill(), and counts as ended */
    siginfo_t info;
    assert_int_equal(waitid(P_PID, (id_t)child, &info, WEXITED | WNOWAIT), 0);
    assert_true(left[0] == '/');
    assert_true(name_exists(left));

    /* what must stay: another namespace's, another user's, not a segment, our own pending pair */
    char live[96], ns[128], user[128], junk[96];
    snprintf(ns, sizeof(ns), "%s-ns", left);
    snprintf(user, sizeof(user), "%s-user", left);
    snprintf(junk, sizeof(junk), "/tcomms-%d-junk", (int)getpid() + 1);
    assert_int_equal(copy_seg(left, ns, other_ns), 0);
    /* root can give it away (not in every sandbox: a user namespace may not map that uid) */
    int as_root = 0;
    if (geteuid() == 0) {
        char path[160];
        snprintf(path, sizeof(path), "/dev/shm%s", user);
        assert_int_equal(copy_seg(left, user, unchanged), 0);
        as_root = chown(path, 65534, 65534) == 0;
        if (!as_root)
            shm_unlink(user);
    }
    shm_unlink(junk); /* a failed earlier run's (pids repeat in a test sandbox's namespace) */
    int fd = shm_open(junk, O_RDWR | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 4096), 0);
    close(fd);
    tc_tp_ctx_t *k0 = tc_shmt_ctx_new(0, NULL, NULL); /* the first context made here sweeps */
    assert_false(name_exists(left));
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    tc_tp_ctx_t *k1 = tc_shmt_ctx_new(1, NULL, NULL);
    assert_non_null(pending(k0, k1));
    pair_name(k0, k1, live, sizeof(live));
    assert_true(name_exists(live));
    tc_tp_ctx_t *fresh = tc_shmt_ctx_new(5, NULL, NULL); /* sweeps again */
    assert_true(name_exists(live));
    assert_true(name_exists(ns));
    assert_true(name_exists(junk));
    if (as_root)
        assert_true(name_exists(user));
    tc_tp_ctx_destroy(fresh);
    tc_tp_ctx_destroy(k1); /* the creator removes its pending name */
    tc_tp_ctx_destroy(k0);
    assert_false(name_exists(live));
    shm_unlink(ns);
    shm_unlink(junk);
    if (as_root)
        shm_unlink(user);
}

static int g_alive[2];
static int32_t g_pids[2] = {101, 202};

static int fake_alive(int32_t pid)
{
    return (pid == g_pids[0] && g_alive[0]) || (pid == g_pids[1] && g_alive[1]);
}

static void test_rule(void **state)
{
    (void)state;
    tc_shm_seg_hdr_t h;
    memset(&h, 0, sizeof(h));
    h.magic = TC_SHM_MAGIC;
    h.version = TC_SHM_VERSION;
    h.pidns = 4026531836u;
    h.pid[0] = g_pids[0];
    h.pid[1] = g_pids[1];
    g_alive[0] = g_alive[1] = 0;
    assert_int_equal(tc_shm_sweep_stale(&h, sizeof(h), h.pidns, fake_alive), 1);
    assert_int_equal(tc_shm_sweep_stale(&h, sizeof(h) - 1, h.pidns, fake_alive), 0);
    assert_int_equal(tc_shm_sweep_stale(&h, sizeof(h), 0, fake_alive), 0);
    assert_int_equal(tc_shm_sweep_stale(&h, sizeof(h), h.pidns + 1, fake_alive), 0);
    for (int i = 0; i < 2; i++) { /* either side alive keeps it */
        g_alive[i] = 1;
        assert_int_equal(tc_shm_sweep_stale(&h, sizeof(h), h.pidns, fake_alive), 0);
        g_alive[i] = 0;
    }
    tc_shm_seg_hdr_t b = h;
    b.magic = 0; /* the creator is still writing it */
    assert_int_equal(tc_shm_sweep_stale(&b, sizeof(b), h.pidns, fake_alive), 0);
    b = h;
    b.version = TC_SHM_VERSION + 1;
    assert_int_equal(tc_shm_sweep_stale(&b, sizeof(b), h.pidns, fake_alive), 0);
    b = h;
    b.pidns = 0; /* an older layout, or a creator that could not read its namespace */
    assert_int_equal(tc_shm_sweep_stale(&b, sizeof(b), 0, fake_alive), 0);
    for (int i = 0; i < 2; i++) { /* 0 and -1 are no process: kill() would mean a group */
        b = h;
        b.pid[i] = 0;
        assert_int_equal(tc_shm_sweep_stale(&b, sizeof(b), h.pidns, fake_alive), 0);
        b.pid[i] = -1;
        assert_int_equal(tc_shm_sweep_stale(&b, sizeof(b), h.pidns, fake_alive), 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_leftover_removed),
        cmocka_unit_test(test_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
