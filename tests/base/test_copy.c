/* tc_copy and tc_copy_any (base/copy.h) against a byte-by-byte reference: every size around the
 * loop's bounds and every relative offset of destination and source that picks the loop (1 to
 * 63 bytes ahead modulo 4 KiB) or not, with TC_COPY=loop, libc and auto (each decided once per
 * process: a child per value); overlapping ranges both ways for tc_copy_any. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tcomms/base/copy.h"

#define AREA ((1u << 20) + 2 * 4096 + 256)

static const size_t sizes[] = {0,    1,    2,     3,        4,
                               5,    7,    8,     9,        15,
                               16,   17,   63,    64,       65,
                               4095, 4096, 4097,  4160,     8191,
                               8192, 9999, 65536, 1u << 20, (1u << 20) + 1};
static const size_t offsets[] = {0, 1, 8, 16, 31, 32, 63, 64, 65, 100, 4095, 4096 + 16};

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 131u + seed * 7u + (i >> 8));
}

/* Every size and relative offset; returns the number of wrong bytes. */
static size_t check_disjoint(unsigned char *src, unsigned char *dst, unsigned char *want)
{
    size_t wrong = 0;
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        for (size_t so = 0; so < 2; so++) {
            for (size_t oi = 0; oi < sizeof(offsets) / sizeof(offsets[0]); oi++) {
                size_t n = sizes[si], s_off = so * 48, d_off = s_off + offsets[oi];
                if (d_off + n + 64 > AREA)
                    continue;
                fill(src, AREA, (unsigned)(si * 31 + oi));
                fill(dst, AREA, 999);
                memcpy(want, dst, AREA);
                for (size_t i = 0; i < n; i++) /* the reference, byte by byte */
                    want[d_off + i] = src[s_off + i];
                if (oi % 2)
                    tc_copy(dst + d_off, src + s_off, n);
                else
                    tc_copy_any(dst + d_off, src + s_off, n);
                for (size_t i = 0; i < AREA; i++) /* nothing outside the range either */
                    wrong += dst[i] != want[i];
            }
        }
    }
    return wrong;
}

/* tc_copy_any within one buffer, forward and backward by every offset: 70,000 bytes, and the
 * sizes of the inline copy (up to 16 bytes) shifted by 1 to 15 bytes, so that they overlap. */
static size_t check_overlap(unsigned char *buf, unsigned char *want)
{
    static const size_t ns[] = {70000, 16, 13, 8, 6, 3, 1};
    size_t wrong = 0;
    for (size_t ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++) {
        size_t n = ns[ni];
        for (size_t oi = 0; oi < sizeof(offsets) / sizeof(offsets[0]); oi++) {
            for (int dir = 0; dir < 2; dir++) {
                size_t a = 128, b = 128 + (n < 64 ? 1 + oi % 15 : offsets[oi]);
                size_t s_off = dir ? b : a, d_off = dir ? a : b;
                fill(buf, 2 * n + 256, (unsigned)oi);
                memcpy(want, buf, 2 * n + 256);
                memmove(want + d_off, want + s_off, n);
                tc_copy_any(buf + d_off, buf + s_off, n);
                for (size_t i = 0; i < 2 * n + 256; i++)
                    wrong += buf[i] != want[i];
            }
        }
    }
    return wrong;
}

/* In a child with TC_COPY=@p mode: exit status 0 when every copy was right and the mode is the
 * one asked for (auto: whatever the CPU gives, reported in @p loop_p). */
static int run_mode(const char *mode, int *loop_p)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        setenv("TC_COPY", mode, 1);
        unsigned char *src = malloc(AREA), *dst = malloc(AREA), *want = malloc(AREA);
        if (!src || !dst || !want)
            _exit(3);
        size_t wrong = check_disjoint(src, dst, want) + check_overlap(src, want);
        int loop = tc_copy_loop_on();
        if (write(fds[1], &loop, sizeof(loop)) != (ssize_t)sizeof(loop))
            _exit(4);
        if (wrong)
            fprintf(stderr, "TC_COPY=%s: %zu wrong bytes\n", mode, wrong);
        _exit(wrong ? 1 : 0);
    }
    close(fds[1]);
    int loop = -1, status = 0;
    if (read(fds[0], &loop, sizeof(loop)) != (ssize_t)sizeof(loop))
        loop = -1;
    close(fds[0]);
    waitpid(pid, &status, 0);
    *loop_p = loop;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

static void test_loop(void **state)
{
    (void)state;
    int loop;
    assert_int_equal(run_mode("loop", &loop), 0);
    assert_int_equal(loop, 1);
}

static void test_libc(void **state)
{
    (void)state;
    int loop;
    assert_int_equal(run_mode("libc", &loop), 0);
    assert_int_equal(loop, 0);
}

static void test_auto(void **state)
{
    (void)state;
    int loop;
    assert_int_equal(run_mode("auto", &loop), 0);
    assert_true(loop == 0 || loop == 1);
    assert_int_equal(run_mode("nonsense", &loop), 0); /* a warning, then auto */
    assert_true(loop == 0 || loop == 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loop),
        cmocka_unit_test(test_libc),
        cmocka_unit_test(test_auto),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
