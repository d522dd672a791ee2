/* The backend's environment and hints, checked without a device: a malformed TC_IB_*
 * variable or ib.* hint is an error on every machine, not only on one with RDMA (where the
 * context reading it is created). The variables are only validated here (ib_ctx.c and ib_mr.c
 * read them when a context is created); the hints are read here for ib_ctx.c too. */
#include <stdbool.h>
#include <string.h>

#include "ib_internal.h"

/* @p dev is a device name, or TC_ERR_CONFIG naming @p what. */
static tc_status_t ib_device_name_check(const char *what, const char *dev)
{
    size_t n = strlen(dev);
    size_t ok = strspn(dev, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                            "0123456789_-.");
    if (n == 0 || n > 63 || ok != n)
        return tc_error_set(TC_ERR_CONFIG,
                            "%s\"%s\": not a device name (accepted: an RDMA device name such as "
                            "mlx5_0: 1 to 63 letters, digits, '_', '-' or '.')",
                            what, dev);
    return TC_OK;
}

tc_status_t tc_tp_ib_config_check(void)
{
    const char *dev = tc_config_string("TC_IB_DEVICE", NULL);
    tc_status_t st = dev ? ib_device_name_check("TC_IB_DEVICE=", dev) : TC_OK;
    int64_t v;
    bool on;
    if (st == TC_OK)
        st = tc_config_int("TC_IB_PORT", 1, 1, 255, &v);
    if (st == TC_OK)
        st = tc_config_int("TC_IB_KEEPALIVE_MS", TC_IB_KEEPALIVE_MS_DEFAULT, 0, 3600000, &v);
    if (st == TC_OK)
        st = tc_config_bool("TC_IB_REG_CACHE", false, &on);
    if (st == TC_OK)
        st = tc_config_int("TC_IB_REG_CACHE_MAX", TC_IB_REG_CACHE_MAX_DEFAULT, 0, 1 << 20, &v);
    return st;
}

tc_status_t tc_ib_hints_read(const tc_hints_t *hints, const char **device_p, int64_t *port_p,
                             int64_t *gid_index_p)
{
    const char *dev = tc_hints_get(hints, "ib.device");
    tc_status_t st = dev ? ib_device_name_check("hint ib.device=", dev) : TC_OK;
    if (st == TC_OK)
        st = tc_hints_int(hints, "ib.port", 1, 1, 255, port_p);
    if (st == TC_OK)
        st = tc_hints_int(hints, "ib.gid_index", 0, 0, 255, gid_index_p);
    *device_p = dev;
    return st;
}

tc_status_t tc_tp_ib_hints_check(const tc_hints_t *hints)
{
    const char *dev;
    int64_t port, gid_index;
    return tc_ib_hints_read(hints, &dev, &port, &gid_index);
}
