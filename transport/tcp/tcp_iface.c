/* Which IPv4 interface the listening socket binds to. */
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

tc_status_t tc_tcp_iface_select(struct in_addr *addr_p, char *name, size_t name_cap)
{
    const char *want = tc_config_string("TC_SOCKET_IFNAME", NULL);
    struct ifaddrs *list = NULL;
    if (getifaddrs(&list) != 0)
        return tc_error_set(TC_ERR_SYSTEM, "tcp: getifaddrs failed: %s", strerror(errno));

    tc_status_t status = TC_OK;
    const struct ifaddrs *chosen = NULL;
    for (const struct ifaddrs *ifa = list; ifa != NULL; ifa = ifa->ifa_next) {
        if (ifa->ifa_addr == NULL || ifa->ifa_addr->sa_family != AF_INET)
            continue;
        if (want != NULL) {
            if (strcmp(ifa->ifa_name, want) == 0 && (ifa->ifa_flags & IFF_UP)) {
                chosen = ifa;
                break;
            }
        } else if ((ifa->ifa_flags & IFF_UP) && !(ifa->ifa_flags & IFF_LOOPBACK)) {
            chosen = ifa;
            break;
        }
    }

    if (chosen != NULL) {
        *addr_p = ((const struct sockaddr_in *)chosen->ifa_addr)->sin_addr;
        snprintf(name, name_cap, "%s", chosen->ifa_name);
        tc_log_info(TC_SUBSYS_TRANSPORT, "tcp: using interface %s%s", chosen->ifa_name,
                    want ? " (TC_SOCKET_IFNAME)" : " (first non-loopback IPv4 interface up)");
    } else if (want != NULL) {
        char known[512];
        tc_tcp_iface_list(list, known, sizeof(known));
        status = tc_error_set(TC_ERR_CONFIG,
                              "TC_SOCKET_IFNAME='%s': no IPv4 interface of that name is up "
                              "(IPv4 interfaces: %s)",
                              want, known);
    } else {
        addr_p->s_addr = htonl(INADDR_LOOPBACK);
        snprintf(name, name_cap, "lo");
        tc_log_info(TC_SUBSYS_TRANSPORT,
                    "tcp: no non-loopback IPv4 interface is up, using 127.0.0.1");
    }
    freeifaddrs(list);
    return status;
}
