/* How the TCP backend reads a connection (tcp_rx.c, tc_tcp_ep_read): a read that comes back
 * short of what it asked for has emptied the socket, so the backend stops there instead of
 * reading again only to be told EAGAIN (epoll, level-triggered, reports what arrives later).
 * This program's recv() counts the reads that found nothing: before, every small message cost
 * one such read more; messages are still delivered whole and in order. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcomms/base/status.h"
#include "tcomms/transport/tcp.h"
#include "tcomms/transport/transport.h"
#include "tcp_util.h"
#include "tp_util.h"

static long empty_reads; /* recv() calls that said EAGAIN */

/* Every recv() of this program, the backend's included (it is linked in statically). */
ssize_t recv(int fd, void *buf, size_t len, int flags)
{
    ssize_t n = syscall(SYS_recvfrom, fd, buf, len, flags, NULL, NULL);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        __atomic_add_fetch(&empty_reads, 1, __ATOMIC_RELAXED);
    return n;
}

#define MESSAGES 200

static void test_small_messages_one_read_each(void **state)
{
    (void)state;
    tp_pair_t p;
    tc_tcpt_pair_open(&p, NULL);
    unsigned char src[64];
    /* a first transfer each way: the connections are up and idle */
    tc_tpt_fill(src, sizeof(src), 1);
    tc_tpt_transfer(&p, 0, 1, src, sizeof(src), 1, 1);
    tc_tpt_transfer(&p, 1, 1, src, sizeof(src), 1, 1);
    long before = __atomic_load_n(&empty_reads, __ATOMIC_RELAXED);
    for (int i = 0; i < MESSAGES; i++) {
        tc_tpt_fill(src, sizeof(src), (uint64_t)i + 10);
        tc_tpt_transfer(&p, i % 2, 2, src, sizeof(src), (uint64_t)i + 10, 1); /* checks it */
    }
    long empty = __atomic_load_n(&empty_reads, __ATOMIC_RELAXED) - before;
    print_message("%ld reads found nothing in %d messages\n", empty, MESSAGES);
    assert_true(empty < MESSAGES / 10);
    tc_tpt_pair_close(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_messages_one_read_each),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
