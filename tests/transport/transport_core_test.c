/* The transport core (registry, argument checks) and TCP context set-up. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcomms/base/status.h"
#include "tcomms/transport/tcp.h"
#include "tcomms/transport/transport.h"
#include "tcp_util.h"
#include "tp_util.h"

static void test_register_lookup(void **state)
{
    (void)state;
    assert_int_equal(tc_tp_register(NULL), TC_ERR_INVALID_ARG);

    tc_tp_ops_t old = tc_tp_tcp_ops;
    old.version = TC_TP_API_VERSION + 1;
    assert_int_equal(tc_tp_register(&old), TC_ERR_UNSUPPORTED);
    assert_non_null(strstr(tc_last_error(), "version"));

    assert_int_equal(tc_tp_register(&tc_tp_tcp_ops), TC_OK);
    assert_int_equal(tc_tp_register(&tc_tp_tcp_ops), TC_OK); /* idempotent */
    tc_tp_ops_t other = tc_tp_tcp_ops;                       /* same name, another table */
    assert_int_equal(tc_tp_register(&other), TC_ERR_INVALID_STATE);

    assert_ptr_equal(tc_tp_lookup("tcp"), &tc_tp_tcp_ops);
    assert_null(tc_tp_lookup("carrier-pigeon"));
    assert_non_null(strstr(tc_last_error(), "carrier-pigeon"));
    assert_non_null(strstr(tc_last_error(), "registered: tcp"));
    assert_null(tc_tp_lookup(NULL));
}

/* The reach a backend is registered with is listed beside it; another reach for the same
 * table is refused, an unknown one too. */
static void test_register_reach(void **state)
{
    (void)state;
    assert_int_equal(tc_tp_register(&tc_tp_tcp_ops), TC_OK); /* TC_TP_REACH_ANY */
    assert_int_equal(tc_tp_register_reach(&tc_tp_tcp_ops, TC_TP_REACH_ANY), TC_OK);
    assert_int_equal(tc_tp_register_reach(&tc_tp_tcp_ops, TC_TP_REACH_NODE), TC_ERR_INVALID_STATE);
    assert_non_null(strstr(tc_last_error(), "another reach"));
    tc_tp_ops_t fake = tc_tp_tcp_ops;
    fake.name = "fake";
    assert_int_equal(tc_tp_register_reach(&fake, (tc_tp_reach_t)7), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_tp_register_reach(&fake, TC_TP_REACH_REMOTE), TC_OK);

    const tc_tp_ops_t *ops[4] = {NULL};
    tc_tp_reach_t reach[4] = {TC_TP_REACH_SELF, TC_TP_REACH_SELF};
    int n = tc_tp_registered(ops, reach, 4);
    assert_int_equal(n, 2);
    assert_ptr_equal(ops[0], &tc_tp_tcp_ops);
    assert_int_equal(reach[0], TC_TP_REACH_ANY);
    assert_ptr_equal(ops[1], &fake);
    assert_int_equal(reach[1], TC_TP_REACH_REMOTE);
    /* fewer slots than backends: those that fit, and the count of all */
    ops[0] = NULL;
    assert_int_equal(tc_tp_registered(ops, NULL, 1), 2);
    assert_ptr_equal(ops[0], &tc_tp_tcp_ops);
}

static void test_ctx_create_args(void **state)
{
    (void)state;
    tc_tp_ctx_params_t params = TC_TP_CTX_PARAMS_INIT;
    tc_tp_ctx_t *ctx = (tc_tp_ctx_t *)0x1;

    assert_int_equal(tc_tp_ctx_create(NULL, &params, &ctx), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_tp_ctx_create(&tc_tp_tcp_ops, NULL, &ctx), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_tp_ctx_create(&tc_tp_tcp_ops, &params, NULL), TC_ERR_INVALID_ARG);

    tc_tp_ops_t old = tc_tp_tcp_ops;
    old.version = 0;
    assert_int_equal(tc_tp_ctx_create(&old, &params, &ctx), TC_ERR_UNSUPPORTED);

    params.size = sizeof(params) - 8;
    assert_int_equal(tc_tp_ctx_create(&tc_tp_tcp_ops, &params, &ctx), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "params->size"));
    params.size = sizeof(params);

    params.secret_len = 4; /* with a NULL secret */
    assert_int_equal(tc_tp_ctx_create(&tc_tp_tcp_ops, &params, &ctx), TC_ERR_INVALID_ARG);
    assert_ptr_equal(ctx, (tc_tp_ctx_t *)0x1); /* outputs untouched on error */

    tc_tp_caps_t caps = {.size = sizeof(caps)};
    assert_int_equal(tc_tp_tcp_ops.query(&caps), TC_OK);
    assert_int_equal(caps.available, 1);
    assert_int_equal(caps.same_node_only, 0);
    assert_int_equal(caps.max_addr_len, 8 + 4 * 3); /* one address per rail, up to 4 rails */
    caps.size = 3;
    assert_int_equal(tc_tp_tcp_ops.query(&caps), TC_ERR_INVALID_ARG);
}

static void test_bad_ifname(void **state)
{
    (void)state;
    setenv("TC_SOCKET_IFNAME", "nosuchif0", 1);
    tc_tp_ctx_params_t params = TC_TP_CTX_PARAMS_INIT;
    tc_tp_ctx_t *ctx = NULL;
    assert_int_equal(tc_tp_ctx_create(&tc_tp_tcp_ops, &params, &ctx), TC_ERR_CONFIG);
    assert_null(ctx);
    assert_non_null(strstr(tc_last_error(), "TC_SOCKET_IFNAME"));
    assert_non_null(strstr(tc_last_error(), "nosuchif0"));
    assert_non_null(strstr(tc_last_error(), "lo 127.0.0.1")); /* lists the interfaces */

    setenv("TC_SOCKET_IFNAME", "", 1); /* set but empty is malformed too */
    assert_int_equal(tc_tp_ctx_create(&tc_tp_tcp_ops, &params, &ctx), TC_ERR_CONFIG);
    setenv("TC_SOCKET_IFNAME", "lo", 1);
}

/* The address is {version 1, family 4, port, IPv4}, and the IPv4 is the chosen interface's. */
static void test_addr_pack(void **state)
{
    (void)state;
    tc_tp_ctx_t *ctx = tc_tcpt_ctx_new(5, NULL);
    unsigned char addr[64];
    size_t len = 0;
    assert_int_equal(tc_tp_addr_pack(ctx, addr, 7, &len), TC_ERR_INVALID_ARG);
    assert_int_equal(len, 0);
    assert_int_equal(tc_tp_addr_pack(ctx, addr, sizeof(addr), &len), TC_OK);
    assert_int_equal(len, 8);
    assert_int_equal(addr[0], 1);
    assert_int_equal(addr[1], 4);
    uint32_t ip;
    memcpy(&ip, addr + 4, 4);
    assert_int_equal(ntohl(ip), INADDR_LOOPBACK); /* TC_SOCKET_IFNAME=lo */
    uint16_t port;
    memcpy(&port, addr + 2, 2);
    assert_true(ntohs(port) != 0);

    /* Someone is really listening there. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = port};
    sa.sin_addr.s_addr = ip;
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    close(fd);
    tc_tp_ctx_destroy(ctx);
}

static void test_default_iface(void **state)
{
    (void)state;
    unsetenv("TC_SOCKET_IFNAME");
    /* Independent reference: the first IPv4 interface that is up and not loopback. */
    struct ifaddrs *list = NULL;
    assert_int_equal(getifaddrs(&list), 0);
    uint32_t expect = htonl(INADDR_LOOPBACK);
    for (struct ifaddrs *ifa = list; ifa != NULL; ifa = ifa->ifa_next) {
        if (ifa->ifa_addr && ifa->ifa_addr->sa_family == AF_INET && (ifa->ifa_flags & IFF_UP) &&
            !(ifa->ifa_flags & IFF_LOOPBACK)) {
            expect = ((struct sockaddr_in *)ifa->ifa_addr)->sin_addr.s_addr;
            break;
        }
    }
    freeifaddrs(list);

    tc_tp_ctx_t *ctx = tc_tcpt_ctx_new(0, NULL);
    unsigned char addr[64];
    tc_tpt_addr(ctx, addr);
    uint32_t ip;
    memcpy(&ip, addr + 4, 4);
    assert_int_equal(ip, expect);
    tc_tp_ctx_destroy(ctx);
    setenv("TC_SOCKET_IFNAME", "lo", 1);
}

static void test_ep_connect_args(void **state)
{
    (void)state;
    tc_tp_ctx_t *ctx = tc_tcpt_ctx_new(2, NULL);
    unsigned char addr[64];
    size_t len = tc_tpt_addr(ctx, addr);
    tc_tp_ep_t *ep = (tc_tp_ep_t *)0x1;

    assert_int_equal(tc_tp_ep_connect(NULL, 3, addr, len, &ep), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_tp_ep_connect(ctx, 3, NULL, len, &ep), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_tp_ep_connect(ctx, 3, addr, len, NULL), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_tp_ep_connect(ctx, 3, addr, 5, &ep), TC_ERR_INVALID_ARG);
    assert_non_null(strstr(tc_last_error(), "peer 3"));
    unsigned char bad[8];
    memcpy(bad, addr, 8);
    bad[0] = 9;
    assert_int_equal(tc_tp_ep_connect(ctx, 3, bad, 8, &ep), TC_ERR_UNSUPPORTED);
    assert_int_equal(tc_tp_ep_connect(ctx, 2, addr, len, &ep), TC_ERR_INVALID_ARG);
    assert_ptr_equal(ep, (tc_tp_ep_t *)0x1);

    /* peer 1 < 2: waits for peer 1 to connect; a second endpoint to it is refused */
    assert_int_equal(tc_tp_ep_connect(ctx, 1, addr, len, &ep), TC_OK);
    assert_int_equal(ep->peer_id, 1);
    assert_int_equal(ep->failed, TC_OK);
    assert_string_equal(tc_tp_ep_error(ep), "");
    tc_tp_ep_t *ep2 = NULL;
    assert_int_equal(tc_tp_ep_connect(ctx, 1, addr, len, &ep2), TC_ERR_INVALID_STATE);
    assert_null(ep2);

    /* Posts with bad arguments. */
    tc_tp_req_t req = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(ep, 1, NULL, 4, &req), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_tp_recv(ep, 1, NULL, 4, &req), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_tp_send(ep, 1, addr, 4, NULL), TC_ERR_INVALID_ARG);
    assert_int_equal(tc_tp_send(ep, 1, addr, (size_t)TC_TP_TCP_MAX_MSG + 1, &req),
                     TC_ERR_INVALID_ARG);

    /* ep_close aborts what is pending (the peer never came). */
    tc_tp_req_t s = TC_TP_REQ_INIT, r = TC_TP_REQ_INIT, c = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(ep, 7, addr, 8, &s), TC_OK);
    assert_int_equal(tc_tp_recv(ep, 7, bad, 8, &r), TC_OK);
    assert_int_equal(tc_tp_recv(ep, 8, bad, 8, &c), TC_OK);
    assert_int_equal(tc_tp_progress(ctx), 0);
    assert_int_equal(s.status, TC_INPROGRESS);
    assert_int_equal(ep->ops->cancel(ep, &c), TC_OK);
    assert_int_equal(c.status, TC_ERR_ABORTED);
    assert_int_equal(ep->ops->cancel(ep, &c), TC_ERR_INVALID_STATE);
    tc_tp_ep_close(ep);
    assert_int_equal(s.status, TC_ERR_ABORTED);
    assert_int_equal(r.status, TC_ERR_ABORTED);
    tc_tp_ctx_destroy(ctx);
}

/* Connecting to a port where nobody listens fails the endpoint, naming the peer. */
static void test_connect_refused(void **state)
{
    (void)state;
    tc_tp_ctx_t *ctx = tc_tcpt_ctx_new(0, NULL);
    unsigned char addr[64];
    size_t len = tc_tpt_addr(ctx, addr);

    int fd = socket(AF_INET, SOCK_STREAM, 0); /* bound, never listening: refused */
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    socklen_t sl = sizeof(sa);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
    memcpy(addr + 2, &sa.sin_port, 2);

    tc_tp_ep_t *ep = NULL;
    assert_int_equal(tc_tp_ep_connect(ctx, 9, addr, len, &ep), TC_OK);
    tc_tp_req_t req = TC_TP_REQ_INIT;
    unsigned char buf[4] = {1, 2, 3, 4};
    tc_status_t st = tc_tp_send(ep, 1, buf, sizeof(buf), &req);
    assert_true(st == TC_OK || st == TC_ERR_PEER_FAILED);
    assert_int_equal(tc_tpt_wait_req(&ctx, 1, &req, 5000), TC_ERR_PEER_FAILED);
    assert_int_equal(ep->failed, TC_ERR_PEER_FAILED);
    assert_non_null(strstr(tc_tp_ep_error(ep), "peer 9 (127.0.0.1:"));
    assert_non_null(strstr(tc_tp_ep_error(ep), "Connection refused"));

    /* later posts fail at once with the same status */
    tc_tp_req_t late = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_send(ep, 1, buf, 4, &late), TC_ERR_PEER_FAILED);
    assert_int_equal(late.status, TC_ERR_PEER_FAILED);
    assert_non_null(strstr(tc_last_error(), "peer 9"));
    tc_tp_req_t late_r = TC_TP_REQ_INIT;
    assert_int_equal(tc_tp_recv(ep, 1, buf, 4, &late_r), TC_ERR_PEER_FAILED);
    close(fd);
    tc_tp_ep_close(ep);
    tc_tp_ctx_destroy(ctx);
}

int main(void)
{
    setenv("TC_SOCKET_IFNAME", "lo", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_register_lookup), cmocka_unit_test(test_register_reach),
        cmocka_unit_test(test_ctx_create_args), cmocka_unit_test(test_bad_ifname),
        cmocka_unit_test(test_addr_pack),       cmocka_unit_test(test_default_iface),
        cmocka_unit_test(test_ep_connect_args), cmocka_unit_test(test_connect_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
