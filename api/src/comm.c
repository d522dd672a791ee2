/* Public communicator calls: argument checks, then the runtime. */
#include <stdlib.h>

#include "api_impl.h"
#include "tcomms/base/config.h"

tc_status_t tc_api_check_comm(const tc_comm_t *comm, const char *fn)
{
    if (!comm)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: comm is NULL", fn);
    if (comm->magic != TC_COMM_MAGIC || !comm->rt)
        return tc_error_set(TC_ERR_INVALID_STATE, "%s: comm %p is not a live communicator",
                            fn, (const void *)comm);
    return TC_OK;
}

tc_status_t tc_comm_create(const tc_comm_opts_t *opts, tc_comm_t **comm_p)
{
    tc_comm_opts_t defaults = TC_COMM_OPTS_INIT;
    if (!comm_p)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_comm_create: comm_p is NULL");
    if (!opts)
        opts = &defaults;
    if (opts->size < sizeof(tc_comm_opts_t))
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_comm_create: opts->size is %u, expected %zu "
                            "(initialise with TC_COMM_OPTS_INIT)", opts->size,
                            sizeof(tc_comm_opts_t));
    tc_boot_kind_t boot;
    switch (opts->bootstrap) {
    case TC_BOOTSTRAP_AUTO: boot = TC_BOOT_AUTO; break;
    case TC_BOOTSTRAP_PMIX: boot = TC_BOOT_PMIX; break;
    case TC_BOOTSTRAP_SELF: boot = TC_BOOT_SELF; break;
    default:
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_comm_create: opts->bootstrap is %d (accepted: "
                            "TC_BOOTSTRAP_AUTO, TC_BOOTSTRAP_PMIX, TC_BOOTSTRAP_SELF)",
                            (int)opts->bootstrap);
    }

    tc_hints_t hints;
    tc_hints_init(&hints);
    tc_status_t st = opts->hints ? tc_hints_parse(&hints, opts->hints) : TC_OK;
    if (st != TC_OK) {
        tc_error_prefix("tc_comm_create: opts->hints: ");
        return st;
    }
    tc_comm_t *comm = calloc(1, sizeof(*comm));
    if (!comm) {
        tc_hints_free(&hints);
        return tc_error_set(TC_ERR_NO_MEMORY, "tc_comm_create: allocating the handle");
    }
    tc_rt_comm_params_t params = {boot, opts->name, &hints, opts->timeout_ms};
    st = tc_rt_comm_create(&params, &comm->rt);
    tc_hints_free(&hints);
    if (st != TC_OK) {
        free(comm);
        return st;
    }
    comm->magic = TC_COMM_MAGIC;
    *comm_p = comm;
    return TC_OK;
}

tc_status_t tc_comm_destroy(tc_comm_t *comm)
{
    if (!comm)
        return TC_OK;
    tc_status_t st = tc_api_check_comm(comm, "tc_comm_destroy");
    if (st != TC_OK)
        return st;
    tc_rt_comm_destroy(comm->rt);
    comm->magic = 0;
    comm->rt = NULL;
    free(comm);
    return TC_OK;
}

tc_status_t tc_comm_rank(const tc_comm_t *comm, int *rank_p)
{
    tc_status_t st = tc_api_check_comm(comm, "tc_comm_rank");
    if (st != TC_OK)
        return st;
    if (!rank_p)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_comm_rank: rank_p is NULL");
    *rank_p = tc_rt_comm_rank(comm->rt);
    return TC_OK;
}

tc_status_t tc_comm_size(const tc_comm_t *comm, int *size_p)
{
    tc_status_t st = tc_api_check_comm(comm, "tc_comm_size");
    if (st != TC_OK)
        return st;
    if (!size_p)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_comm_size: size_p is NULL");
    *size_p = tc_rt_comm_size(comm->rt);
    return TC_OK;
}
