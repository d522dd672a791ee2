/* The backend's environment, checked without a device: a malformed TC_IB_*
 * variable is an error on every machine, not only on one with RDMA (where the
 * context reading it is created). Only validates; ib_ctx.c and ib_mr.c read
 * the values when a context is created. */
#include <stdbool.h>
#include <string.h>

#include "ib_internal.h"

tc_status_t tc_tp_ib_config_check(void)
{
    const char *dev = tc_config_string("TC_IB_DEVICE", NULL);
    if (dev) {
        size_t n = strlen(dev);
        size_t ok = strspn(dev, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                "0123456789_-.");
        if (n == 0 || n > 63 || ok != n)
            return tc_error_set(TC_ERR_CONFIG,
                                "TC_IB_DEVICE=\"%s\": not a device name (accepted: an RDMA "
                                "device name such as mlx5_0: 1 to 63 letters, digits, '_', '-' "
                                "or '.')",
                                dev);
    }
    int64_t v;
    bool on;
    tc_status_t st = tc_config_int("TC_IB_PORT", 1, 1, 255, &v);
    if (st == TC_OK)
        st = tc_config_int("TC_IB_KEEPALIVE_MS", TC_IB_KEEPALIVE_MS_DEFAULT, 0, 3600000, &v);
    if (st == TC_OK)
        st = tc_config_bool("TC_IB_REG_CACHE", false, &on);
    if (st == TC_OK)
        st = tc_config_int("TC_IB_REG_CACHE_MAX", TC_IB_REG_CACHE_MAX_DEFAULT, 0, 1 << 20, &v);
    return st;
}
