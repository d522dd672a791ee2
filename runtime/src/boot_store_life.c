/* The store's life (see boot_store.c): the listening socket, creation, the
 * start of its thread and its stop. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "boot_store_impl.h"
#include "tcomms/base/hmap.h"
#include "tcomms/runtime/bootstrap.h"
#include "tcomms/base/log.h"
#include "tcomms/base/time.h"
#include "tcomms/base/vec.h"
#include "tcomms/base/wire.h"

static tc_status_t bs_listen(tc_boot_store_t *st, int port)
{
    int one = 1, zero = 0;
    /* IPv6 with IPv4-mapped addresses serves both families; fall back to IPv4 alone. */
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd >= 0 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) != 0) {
        close(fd);
        fd = -1;
    }
    if (fd >= 0) {
        struct sockaddr_in6 a6 = {.sin6_family = AF_INET6,
                                  .sin6_port = htons((uint16_t)port),
                                  .sin6_addr = IN6ADDR_ANY_INIT};
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
            bind(fd, (struct sockaddr *)&a6, sizeof(a6)) != 0) {
            if (errno == EADDRINUSE)
                goto in_use;
            close(fd); /* e.g. IPv6 disabled: try IPv4 */
            fd = -1;
        }
    }
    if (fd < 0) {
        fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return tc_error_set(TC_ERR_BOOTSTRAP,
                                "bootstrap(env): rank 0 cannot create the "
                                "store's socket: %s",
                                strerror(errno));
        struct sockaddr_in a4 = {.sin_family = AF_INET,
                                 .sin_port = htons((uint16_t)port),
                                 .sin_addr = {htonl(INADDR_ANY)}};
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
            bind(fd, (struct sockaddr *)&a4, sizeof(a4)) != 0) {
            if (errno == EADDRINUSE)
                goto in_use;
            int err = errno;
            close(fd);
            return tc_error_set(TC_ERR_BOOTSTRAP,
                                "bootstrap(env): rank 0 cannot bind the store "
                                "to port %d: %s",
                                port, strerror(err));
        }
    }
    if (listen(fd, 4096) != 0) {
        int err = errno;
        close(fd);
        return tc_error_set(TC_ERR_BOOTSTRAP,
                            "bootstrap(env): rank 0 cannot listen on port %d: "
                            "%s",
                            port, strerror(err));
    }
    st->listen_fd = fd;
    return TC_OK;

in_use:
    close(fd);
    return tc_error_set(TC_ERR_BOOTSTRAP,
                        "bootstrap(env): rank 0 cannot serve the store on port "
                        "%d: %s (another process holds it; under torchrun's agent store, set "
                        "TC_STORE_PORT to a free port for every rank)",
                        port, strerror(EADDRINUSE));
}

void tc_bs_free(tc_boot_store_t *st)
{
    if (st->listen_fd >= 0)
        close(st->listen_fd);
    if (st->wake_fd >= 0)
        close(st->wake_fd);
    tc_bs_table_free(st);
    tc_vec_free(&st->fence_count);
    free(st->conns);
    free(st->pfds);
    free(st->rank_state);
    free(st->arrived);
    tc_auth_key_wipe(&st->key);
    free(st);
}

tc_status_t tc_bs_create(int world, const void *secret, size_t slen, tc_boot_store_t **store_p)
{
    tc_status_t rc;
    tc_boot_store_t *st = calloc(1, sizeof(*st));
    if (!st)
        return tc_error_set(TC_ERR_NO_MEMORY, "bootstrap(env): allocating the store");
    st->listen_fd = st->wake_fd = -1;
    st->world = world;
    st->left_min_arrived = UINT64_MAX;
    st->left_min_rank = -1;
    atomic_init(&st->stop, false);
    atomic_init(&st->linger_deadline_ns, 0);
    tc_hmap_init(&st->table);
    tc_vec_init(&st->fence_count, sizeof(uint32_t));
    st->rank_state = calloc((size_t)world, sizeof(*st->rank_state));
    st->arrived = calloc((size_t)world, sizeof(*st->arrived));
    if (!st->rank_state || !st->arrived) {
        rc = tc_error_set(TC_ERR_NO_MEMORY, "bootstrap(env): the store's table of %d ranks", world);
        goto fail;
    }
    if ((rc = tc_auth_key_init(&st->key, secret, slen)) != TC_OK)
        goto fail;
    *store_p = st;
    return TC_OK;

fail:
    tc_bs_free(st);
    return rc;
}

tc_status_t tc_boot_store_start(int port, int world, const void *secret, size_t slen,
                                tc_boot_store_t **store_p)
{
    tc_status_t rc;
    if (world < 1 || port < 1 || port > 65535 || (slen > 0 && !secret))
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "bootstrap store: world %d, port %d, secret of "
                            "%zu bytes",
                            world, port, slen);
    tc_boot_store_t *st;
    if ((rc = tc_bs_create(world, secret, slen, &st)) != TC_OK)
        return rc;
    st->port = port;
    if ((rc = bs_listen(st, port)) != TC_OK)
        goto fail;
    st->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (st->wake_fd < 0) {
        rc = tc_error_set(TC_ERR_SYSTEM, "bootstrap(env): eventfd for the store: %s",
                          strerror(errno));
        goto fail;
    }
    /* Signals go to the application's threads, never to the store's. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = pthread_create(&st->thread, NULL, tc_bs_main, st);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err != 0) {
        rc = tc_error_set(TC_ERR_SYSTEM, "bootstrap(env): starting the store's thread: %s",
                          strerror(err));
        goto fail;
    }
    /* named here, so that it has its name once this returns (top -H, perf, gdb) */
    (void)pthread_setname_np(st->thread, TC_BS_THREAD_NAME);
    tc_log_info(TC_SUBSYS_RUNTIME,
                "bootstrap(env): rank 0 serves the store on port %d for %d "
                "ranks",
                port, world);
    *store_p = st;
    return TC_OK;

fail:
    tc_bs_free(st);
    return rc;
}

void tc_boot_store_stop(tc_boot_store_t *store, uint64_t linger_ns)
{
    if (!store)
        return;
    uint64_t now = tc_time_ns();
    atomic_store(&store->linger_deadline_ns,
                 linger_ns > UINT64_MAX - now ? UINT64_MAX : now + linger_ns);
    atomic_store(&store->stop, true);
    uint64_t one = 1;
    (void)!write(store->wake_fd, &one, sizeof(one));
    pthread_join(store->thread, NULL);
    tc_log_debug(TC_SUBSYS_RUNTIME,
                 "bootstrap(env): the store stopped after %.3f s of lingering "
                 "(%zu keys)",
                 (double)(tc_time_ns() - now) * 1e-9, store->nkeys);
    tc_bs_free(store);
}
