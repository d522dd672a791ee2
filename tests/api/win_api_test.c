/* Windows in a world of one (TC_BOOTSTRAP_SELF): every bad argument of every tc_win_* call
 * gets its status and a detail naming it; puts, gets and signals to oneself land (checked
 * element by element); abort and revoke of the communicator end the window's use; a window
 * outlives tc_comm_destroy only as far as tc_win_destroy; an allocation removes the segments
 * that ended processes left in /dev/shm, and without a segment it is a shared mapping still.
 * Multi-rank behaviour is in
 * tests/integration/win_test.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcomms/win.h" /* alone: it brings tcomms.h with it */

static tc_comm_t *self_comm(void)
{
    tc_comm_opts_t o = TC_COMM_OPTS_INIT;
    o.bootstrap = TC_BOOTSTRAP_SELF;
    tc_comm_t *c = NULL;
    assert_int_equal(tc_comm_create(&o, &c), TC_OK);
    return c;
}

/* The status, and the words of the detail. */
static void expect(tc_status_t got, tc_status_t want, const char *words)
{
    if (got != want)
        fail_msg("got %s (%s), want %s", tc_status_string(got), tc_last_error(),
                 tc_status_string(want));
    if (words && !strstr(tc_last_error(), words))
        fail_msg("detail \"%s\" does not say \"%s\"", tc_last_error(), words);
}

static void test_data_to_self(void **state)
{
    (void)state;
    tc_comm_t *c = self_comm();
    uint32_t mem[256], src[100], dst[256];
    for (int i = 0; i < 256; i++)
        mem[i] = (uint32_t)i;
    tc_win_t *win = NULL;
    assert_int_equal(tc_win_create(c, mem, sizeof(mem), NULL, &win), TC_OK);
    size_t bytes = 0;
    assert_int_equal(tc_win_size(win, 0, &bytes), TC_OK);
    assert_int_equal(bytes, sizeof(mem));
    for (int i = 0; i < 100; i++)
        src[i] = 0xA0000000u + (uint32_t)i;
    assert_int_equal(tc_win_put(win, src, sizeof(src), 0, 40, NULL, NULL), TC_OK);
    tc_op_opts_t a = TC_OP_OPTS_INIT;
    a.async = 1;
    tc_work_t *w = NULL;
    assert_int_equal(tc_win_get(win, dst, sizeof(dst), 0, 0, &a, &w), TC_OK);
    assert_int_equal(tc_work_wait(w, 10000), TC_OK);
    assert_int_equal(tc_work_free(w), TC_OK);
    for (int i = 0; i < 256; i++) {
        uint32_t want = i >= 10 && i < 110 ? 0xA0000000u + (uint32_t)(i - 10) : (uint32_t)i;
        assert_int_equal(dst[i], want);
        assert_int_equal(mem[i], want);
    }
    /* signals: ADD, SET, put_signal, and the waits */
    uint64_t v = 9;
    assert_int_equal(tc_win_read_signal(win, 5, &v), TC_OK);
    assert_int_equal(v, 0);
    for (int i = 0; i < 10; i++)
        assert_int_equal(tc_win_signal(win, 0, 5, 3, TC_WIN_SIGNAL_ADD, NULL, NULL), TC_OK);
    assert_int_equal(tc_win_wait_signal(win, 5, TC_WIN_CMP_EQ, 30, 1000, &v), TC_OK);
    assert_int_equal(v, 30);
    assert_int_equal(tc_win_put_signal(win, src, 4, 0, 0, 6, 7, TC_WIN_SIGNAL_SET, NULL, NULL),
                     TC_OK);
    assert_int_equal(tc_win_wait_signal(win, 6, TC_WIN_CMP_GE, 7, 1000, &v), TC_OK);
    assert_int_equal(mem[0], src[0]);
    assert_int_equal(tc_win_wait_signal(win, 6, TC_WIN_CMP_LT, 8, 1000, &v), TC_OK);
    assert_int_equal(tc_win_wait_signal(win, 6, TC_WIN_CMP_NE, 0, 1000, &v), TC_OK);
    expect(tc_win_wait_signal(win, 6, TC_WIN_CMP_GT, 7, 30, &v), TC_ERR_TIMEOUT,
           "slot 6 is 7 after 30 ms, waiting for it to be > 7");
    assert_int_equal(v, 7);
    /* a wait's timeout leaves the communicator usable (documented) */
    assert_int_equal(tc_win_put(win, src, 4, 0, 8, NULL, NULL), TC_OK);
    assert_int_equal(tc_barrier(c, NULL, NULL), TC_OK);
    assert_int_equal(tc_win_flush(win, TC_WIN_ALL_PEERS, 1000), TC_OK);
    assert_int_equal(tc_win_flush(win, 0, 1000), TC_OK);
    void *p = NULL;
    assert_int_equal(tc_win_shared_query(win, 0, &p), TC_OK);
    assert_ptr_equal(p, mem);
    assert_int_equal(tc_win_destroy(win), TC_OK);

    /* allocated: zeroed, and its own pointer */
    void *base = NULL;
    assert_int_equal(tc_win_allocate(c, 4096, NULL, &base, &win), TC_OK);
    assert_non_null(base);
    for (int i = 0; i < 4096; i++)
        assert_int_equal(((unsigned char *)base)[i], 0);
    assert_int_equal(tc_win_put(win, src, 16, 0, 4080, NULL, NULL), TC_OK);
    assert_memory_equal((char *)base + 4080, src, 16);
    assert_int_equal(tc_win_destroy(win), TC_OK);
    assert_int_equal(tc_comm_destroy(c), TC_OK);
}

/* Without a shared-memory segment (here a file-size limit fails its ftruncate) an allocated
 * window is an anonymous shared mapping: zeroed, usable, and, like a segment, mappable again
 * (mremap with old size 0), which the Python package's views of it rely on. It was private
 * heap memory, which cannot be. */
static void test_allocated_without_segment(void **state)
{
    (void)state;
    tc_comm_t *c = self_comm();
    struct rlimit old, tiny = {.rlim_cur = 1, .rlim_max = RLIM_INFINITY};
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    tiny.rlim_max = old.rlim_max;
    void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &tiny), 0);
    const size_t n = 3 * 4096 + 5;
    void *base = NULL;
    tc_win_t *win = NULL;
    tc_status_t st = tc_win_allocate(c, n, NULL, &base, &win);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, was);
    assert_int_equal(st, TC_OK);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(((unsigned char *)base)[i], 0);
    const char src[] = "through the window";
    assert_int_equal(tc_win_put(win, src, sizeof(src), 0, n - sizeof(src), NULL, NULL), TC_OK);
    assert_memory_equal((char *)base + n - sizeof(src), src, sizeof(src));
    assert_int_equal(tc_win_signal(win, 0, 3, 5, TC_WIN_SIGNAL_ADD, NULL, NULL), TC_OK);
    uint64_t v = 0;
    assert_int_equal(tc_win_wait_signal(win, 3, TC_WIN_CMP_EQ, 5, 1000, &v), TC_OK);
    size_t len = 4 * 4096;
    char *again = mremap(base, 0, len, MREMAP_MAYMOVE);
    assert_true(again != MAP_FAILED);
    again[7] = 42;
    assert_int_equal(((char *)base)[7], 42);
    assert_int_equal(tc_win_destroy(win), TC_OK);
    assert_memory_equal(again + n - sizeof(src), src, sizeof(src)); /* still mapped here */
    assert_int_equal(munmap(again, len), 0);
    assert_int_equal(tc_comm_destroy(c), TC_OK);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    tc_comm_t *c = self_comm();
    char buf[64];
    tc_win_t *win = NULL;
    void *base = NULL;
    tc_op_opts_t a = TC_OP_OPTS_INIT;
    a.async = 1;
    expect(tc_win_create(NULL, buf, 64, NULL, &win), TC_ERR_INVALID_ARG, "comm is NULL");
    expect(tc_win_create(c, buf, 64, NULL, NULL), TC_ERR_INVALID_ARG, "win_p is NULL");
    expect(tc_win_create(c, NULL, 64, NULL, &win), TC_ERR_INVALID_ARG, "buf is NULL with 64");
    /* it said "async is set but work_p is NULL": these calls have no work_p */
    expect(tc_win_create(c, buf, 64, &a, &win), TC_ERR_INVALID_ARG,
           "tc_win_create: cannot be asynchronous");
    expect(tc_win_allocate(c, 64, &a, &base, &win), TC_ERR_INVALID_ARG,
           "tc_win_allocate: cannot be asynchronous");
    expect(tc_win_allocate(c, 64, NULL, NULL, &win), TC_ERR_INVALID_ARG, "base_p is NULL");
    expect(tc_win_allocate(c, (size_t)1 << 50, NULL, &base, &win), TC_ERR_INVALID_ARG, "too large");
    assert_int_equal(tc_win_create(c, buf, 64, NULL, &win), TC_OK);
    expect(tc_win_put(win, buf, 8, 0, 57, NULL, NULL), TC_ERR_INVALID_ARG,
           "8 bytes at offset 57 are beyond rank 0's window of 64 bytes");
    expect(tc_win_get(win, buf, 65, 0, 0, NULL, NULL), TC_ERR_INVALID_ARG, "beyond");
    expect(tc_win_put(win, buf, 1, 1, 0, NULL, NULL), TC_ERR_INVALID_ARG, "peer 1 is not a rank");
    expect(tc_win_signal(win, -2, 0, 1, TC_WIN_SIGNAL_ADD, NULL, NULL), TC_ERR_INVALID_ARG,
           "peer -2");
    expect(tc_win_get(win, NULL, 1, 0, 0, NULL, NULL), TC_ERR_INVALID_ARG, "buffer is NULL");
    expect(tc_win_put_signal(win, buf, 1, 0, 0, 64, 1, TC_WIN_SIGNAL_SET, NULL, NULL),
           TC_ERR_INVALID_ARG, "slot 64");
    expect(tc_win_wait_signal(win, -1, TC_WIN_CMP_EQ, 0, 10, NULL), TC_ERR_INVALID_ARG, "slot -1");
    expect(tc_win_read_signal(win, 64, NULL), TC_ERR_INVALID_ARG, "value_p is NULL");
    uint64_t v;
    expect(tc_win_read_signal(win, 64, &v), TC_ERR_INVALID_ARG, "slot 64");
    expect(tc_win_flush(win, 3, 10), TC_ERR_INVALID_ARG, "peer 3");
    expect(tc_win_shared_query(win, 0, NULL), TC_ERR_INVALID_ARG, "ptr_p is NULL");
    expect(tc_win_size(win, 0, NULL), TC_ERR_INVALID_ARG, "bytes_p is NULL");
    size_t sz = 0;
    expect(tc_win_size(win, -2, &sz), TC_ERR_INVALID_ARG, "peer -2 is neither a rank nor -1");
    expect(tc_win_size(win, INT_MIN, &sz), TC_ERR_INVALID_ARG, "peer -2147483648");
    expect(tc_win_size(win, 1, &sz), TC_ERR_INVALID_ARG, "peer 1 is not a rank");
    assert_int_equal(tc_win_size(win, -1, &sz), TC_OK);
    assert_int_equal(sz, 64);
    /* async without work_p: fire-and-forget, complete by the flush */
    char x = 0x5a, y = 0;
    buf[5] = 0;
    assert_int_equal(tc_win_put(win, &x, 1, 0, 5, &a, NULL), TC_OK);
    assert_int_equal(tc_win_get(win, &y, 1, 0, 5, &a, NULL), TC_OK);
    assert_int_equal(tc_win_flush(win, TC_WIN_ALL_PEERS, 1000), TC_OK);
    assert_int_equal(y, 0x5a);
    /* zero bytes: allowed anywhere in range, even with NULL buffers */
    assert_int_equal(tc_win_put(win, NULL, 0, 0, 64, NULL, NULL), TC_OK);
    tc_work_t *w = NULL;
    assert_int_equal(tc_win_get(win, NULL, 0, 0, 0, &a, &w), TC_OK);
    assert_int_equal(tc_work_wait(w, 0), TC_OK);
    assert_int_equal(tc_work_free(w), TC_OK);
    /* handles of the wrong kind, garbage, stale */
    expect(tc_win_put((tc_win_t *)c, buf, 1, 0, 0, NULL, NULL), TC_ERR_INVALID_STATE,
           "not a window");
    int garbage = 0;
    expect(tc_win_put((tc_win_t *)&garbage, buf, 1, 0, 0, NULL, NULL), TC_ERR_INVALID_STATE,
           "not a window handle");
    expect(tc_comm_rank((tc_comm_t *)win, &garbage), TC_ERR_INVALID_STATE, "comm");
    assert_int_equal(tc_win_destroy(win), TC_OK);
    expect(tc_win_destroy(win), TC_ERR_INVALID_STATE, "was destroyed");
    expect(tc_win_flush(NULL, 0, 10), TC_ERR_INVALID_ARG, "win is NULL");
    assert_int_equal(tc_comm_destroy(c), TC_OK);
}

static void test_comm_states(void **state)
{
    (void)state;
    char buf[64];
    tc_win_t *win = NULL, *win2 = NULL;
    /* aborted: the window's calls fail with the abort, destroy still frees */
    tc_comm_t *c = self_comm();
    assert_int_equal(tc_win_create(c, buf, 64, NULL, &win), TC_OK);
    assert_int_equal(tc_comm_abort(c), TC_OK);
    expect(tc_win_put(win, buf, 8, 0, 0, NULL, NULL), TC_ERR_ABORTED, "aborted");
    expect(tc_win_wait_signal(win, 0, TC_WIN_CMP_EQ, 1, 1000, NULL), TC_ERR_ABORTED, "aborted");
    expect(tc_win_create(c, buf, 64, NULL, &win2), TC_ERR_ABORTED, "aborted");
    tc_win_destroy(win); /* frees whatever the status */
    expect(tc_win_put(win, buf, 8, 0, 0, NULL, NULL), TC_ERR_INVALID_STATE, "was destroyed");
    tc_comm_destroy(c);
    /* revoked */
    c = self_comm();
    assert_int_equal(tc_win_create(c, buf, 64, NULL, &win), TC_OK);
    tc_comm_revoke(c);
    expect(tc_win_signal(win, 0, 0, 1, TC_WIN_SIGNAL_ADD, NULL, NULL), TC_ERR_REVOKED, "revoked");
    expect(tc_win_flush(win, 0, 10), TC_ERR_REVOKED, "revoked");
    tc_win_destroy(win);
    tc_comm_destroy(c);
    /* the communicator destroyed first */
    c = self_comm();
    assert_int_equal(tc_win_create(c, buf, 64, NULL, &win), TC_OK);
    assert_int_equal(tc_comm_destroy(c), TC_OK);
    expect(tc_win_get(win, buf, 8, 0, 0, NULL, NULL), TC_ERR_INVALID_STATE,
           "communicator was destroyed");
    void *p;
    expect(tc_win_shared_query(win, 0, &p), TC_ERR_INVALID_STATE, "communicator was destroyed");
    uint64_t v = 42; /* read the old slot, TC_OK, before */
    expect(tc_win_read_signal(win, 0, &v), TC_ERR_INVALID_STATE, "communicator was destroyed");
    assert_int_equal(v, 42);
    assert_int_equal(tc_win_destroy(win), TC_OK);
}

/* A /dev/shm name "tcw.NS.PID.COMM.N" made here (empty, mode 0600); 1 if made. */
static int make_seg(char *path, size_t cap, unsigned long long ns, int pid, const char *tail)
{
    snprintf(path, cap, "/dev/shm/tcw.%llu.%d.%s", ns, pid, tail);
    int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
    if (fd < 0)
        return 0;
    close(fd);
    return 1;
}

static char gone[96], live[96], other_ns[96], odd[96];

/* The names test_leftover_segments made, whatever became of the test. */
static int unlink_segs(void **state)
{
    (void)state;
    unlink(gone);
    unlink(live);
    unlink(other_ns);
    unlink(odd);
    return 0;
}

/* What a rank killed inside tc_win_allocate leaves (its segment, named with its pid namespace
 * and pid) is removed by the next allocation on the machine; a live creator's, another pid
 * namespace's and a name not of that form stay. */
static void test_leftover_segments(void **state)
{
    (void)state;
    struct stat st;
    if (stat("/proc/self/ns/pid", &st) != 0)
        skip(); /* no namespace to tell this machine's pids by: nothing is removed */
    const unsigned long long ns = (unsigned long long)st.st_ino;
    pid_t dead = fork(); /* a pid that has ended */
    if (dead == 0)
        _exit(0);
    assert_true(dead > 0);
    assert_int_equal(waitpid(dead, NULL, 0), dead);
    assert_true(make_seg(gone, sizeof(gone), ns, (int)dead, "7.1"));
    assert_true(make_seg(live, sizeof(live), ns, (int)getpid(), "7.2"));
    assert_true(make_seg(other_ns, sizeof(other_ns), ns + 1, (int)dead, "7.3"));
    assert_true(make_seg(odd, sizeof(odd), ns, (int)dead, "7.4x"));
    tc_comm_t *c = self_comm();
    tc_win_t *win = NULL;
    void *base = NULL, *p = NULL;
    assert_int_equal(tc_win_allocate(c, 4096, NULL, &base, &win), TC_OK);
    assert_int_equal(tc_win_shared_query(win, 0, &p), TC_OK);
    assert_ptr_equal(p, base);
    assert_int_not_equal(access(gone, F_OK), 0);
    assert_int_equal(access(live, F_OK), 0);
    assert_int_equal(access(other_ns, F_OK), 0);
    assert_int_equal(access(odd, F_OK), 0);
    assert_int_equal(tc_win_destroy(win), TC_OK);
    assert_int_equal(tc_comm_destroy(c), TC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_data_to_self),
        cmocka_unit_test(test_allocated_without_segment),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_comm_states),
        cmocka_unit_test_teardown(test_leftover_segments, unlink_segs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
