/* Which IPv4 interfaces (rails) the context listens on and connects from: TC_SOCKET_IFNAME, a
 * comma-separated list of interface names matched exactly (as getifaddrs() names them, so an
 * address label such as "eth0:1" is a name of its own). Rail i of one process pairs with rail
 * i of its peer, by the order of the list. */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>

#include "tcomms/base/config.h"
#include "tcomms/base/log.h"
#include "tcp_internal.h"

/* "lo 127.0.0.1, eth0 10.0.0.2 (down)" */
static void tc_tcp_iface_list(const struct ifaddrs *list, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (const struct ifaddrs *ifa = list; ifa != NULL && used < cap; ifa = ifa->ifa_next) {
        if (ifa->ifa_addr == NULL || ifa->ifa_addr->sa_family != AF_INET)
            continue;
        char ip[INET_ADDRSTRLEN] = "?";
        inet_ntop(AF_INET, &((const struct sockaddr_in *)ifa->ifa_addr)->sin_addr, ip, sizeof(ip));
        int n = snprintf(buf + used, cap - used, "%s%s %s%s", used ? ", " : "", ifa->ifa_name, ip,
                         (ifa->ifa_flags & IFF_UP) ? "" : " (down)");
        if (n < 0)
            break;
        used += (size_t)n;
    }
    if (used == 0)
        snprintf(buf, cap, "none");
}

/* Entry @p k (1-based) of TC_SOCKET_IFNAME='@p want', named @p name: its IPv4 address. */
static tc_status_t tc_tcp_iface_find(const struct ifaddrs *list, const char *want, int k,
                                     const char *name, struct in_addr *ip_p)
{
    int exists = 0, has_ipv4 = 0;
    for (const struct ifaddrs *ifa = list; ifa != NULL; ifa = ifa->ifa_next) {
        if (strcmp(ifa->ifa_name, name) != 0)
            continue;
        exists = 1;
        if (ifa->ifa_addr == NULL || ifa->ifa_addr->sa_family != AF_INET)
            continue;
        has_ipv4 = 1;
        if (ifa->ifa_flags & IFF_UP) {
            *ip_p = ((const struct sockaddr_in *)ifa->ifa_addr)->sin_addr;
            return TC_OK;
        }
    }
    char known[512];
    tc_tcp_iface_list(list, known, sizeof(known));
    return tc_error_set(TC_ERR_CONFIG,
                        "TC_SOCKET_IFNAME='%s': entry %d '%s': %s (IPv4 interfaces: %s)", want, k,
                        name,
                        !exists     ? "no interface of that name"
                        : !has_ipv4 ? "the interface has no IPv4 address"
                                    : "the interface is down",
                        known);
}

/* Split TC_SOCKET_IFNAME='@p want' and look every entry up. */
static tc_status_t tc_tcp_iface_parse(const struct ifaddrs *list, const char *want,
                                      tc_tcp_rail_t rails[TC_TCP_RAILS_MAX], int *nrails_p)
{
    int n = 0;
    const char *p = want;
    for (int k = 1;; k++) {
        const char *end = strchr(p, ',');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        if (len == 0)
            return tc_error_set(TC_ERR_CONFIG,
                                "TC_SOCKET_IFNAME='%s': entry %d is empty (accepted: a "
                                "comma-separated list of 1 to %d interface names)",
                                want, k, TC_TCP_RAILS_MAX);
        if (len >= IF_NAMESIZE)
            return tc_error_set(TC_ERR_CONFIG,
                                "TC_SOCKET_IFNAME='%s': entry %d '%.*s' is longer than an "
                                "interface name (%d characters)",
                                want, k, (int)len, p, IF_NAMESIZE - 1);
        if (n == TC_TCP_RAILS_MAX)
            return tc_error_set(TC_ERR_CONFIG,
                                "TC_SOCKET_IFNAME='%s': entry %d '%.*s': more than %d interfaces",
                                want, k, (int)len, p, TC_TCP_RAILS_MAX);
        char name[IF_NAMESIZE];
        memcpy(name, p, len);
        name[len] = '\0';
        for (int i = 0; i < n; i++)
            if (strcmp(rails[i].name, name) == 0)
                return tc_error_set(TC_ERR_CONFIG,
                                    "TC_SOCKET_IFNAME='%s': entry %d '%s' repeats entry %d", want,
                                    k, name, i + 1);
        tc_status_t st = tc_tcp_iface_find(list, want, k, name, &rails[n].ip);
        if (st != TC_OK)
            return st;
        memcpy(rails[n].name, name, len + 1);
        for (int i = 0; i < n; i++)
            if (rails[i].ip.s_addr == rails[n].ip.s_addr)
                return tc_error_set(TC_ERR_CONFIG,
                                    "TC_SOCKET_IFNAME='%s': entry %d '%s' has the address of "
                                    "entry %d '%s'",
                                    want, k, name, i + 1, rails[i].name);
        n++;
        if (end == NULL)
            break;
        p = end + 1;
    }
    *nrails_p = n;
    return TC_OK;
}

tc_status_t tc_tcp_iface_select(tc_tcp_rail_t rails[TC_TCP_RAILS_MAX], int *nrails_p)
{
    const char *want = tc_config_string("TC_SOCKET_IFNAME", NULL);
    struct ifaddrs *list = NULL;
    if (getifaddrs(&list) != 0)
        return tc_error_set(TC_ERR_SYSTEM, "tcp: getifaddrs failed: %s", strerror(errno));

    tc_status_t status = TC_OK;
    if (want != NULL) {
        status = tc_tcp_iface_parse(list, want, rails, nrails_p);
        if (status == TC_OK)
            tc_log_info(TC_SUBSYS_TRANSPORT, "tcp: using interface%s %s (TC_SOCKET_IFNAME)",
                        *nrails_p > 1 ? "s" : "", want);
        freeifaddrs(list);
        return status;
    }
    const struct ifaddrs *chosen = NULL;
    for (const struct ifaddrs *ifa = list; ifa != NULL && chosen == NULL; ifa = ifa->ifa_next)
        if (ifa->ifa_addr != NULL && ifa->ifa_addr->sa_family == AF_INET &&
            (ifa->ifa_flags & IFF_UP) && !(ifa->ifa_flags & IFF_LOOPBACK))
            chosen = ifa;
    *nrails_p = 1;
    if (chosen != NULL) {
        rails[0].ip = ((const struct sockaddr_in *)chosen->ifa_addr)->sin_addr;
        snprintf(rails[0].name, sizeof(rails[0].name), "%s", chosen->ifa_name);
        tc_log_info(TC_SUBSYS_TRANSPORT,
                    "tcp: using interface %s (first non-loopback IPv4 interface up)",
                    chosen->ifa_name);
    } else {
        rails[0].ip.s_addr = htonl(INADDR_LOOPBACK);
        snprintf(rails[0].name, sizeof(rails[0].name), "lo");
        tc_log_info(TC_SUBSYS_TRANSPORT,
                    "tcp: no non-loopback IPv4 interface is up, using 127.0.0.1");
    }
    freeifaddrs(list);
    return status;
}
