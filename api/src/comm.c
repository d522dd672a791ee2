/* Public communicator calls: argument checks, then the runtime. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_impl.h"
#include "tcomms/base/config.h"
#include "tcomms/runtime/bootstrap.h"
#include "tcomms/runtime/bootstrap_kv.h"

tc_status_t tc_api_comm_get_not_batching(const tc_comm_t *comm, const char *fn, tc_api_comm_t **c_p)
{
    tc_status_t st = tc_api_comm_get(comm, fn, c_p);
    void *owner = st == TC_OK ? tc_api_batch_owner(*c_p) : NULL;
    if (owner && owner == tc_api_thread_mark())
        st = tc_error_set(TC_ERR_INVALID_STATE,
                          "%s: comm '%s' is recording a batch (only "
                          "tc_send and tc_recv until tc_batch_end)",
                          fn, tc_rt_comm_name((*c_p)->rt));
    else if (owner)
        st = tc_api_batch_other(fn, *c_p);
    return st;
}

/* Options shared by create, split and dup: size, name, hints, timeout. */
static tc_status_t comm_opts(const tc_comm_opts_t *opts, const char *fn, tc_hints_t *hints)
{
    if (opts->size < sizeof(tc_comm_opts_t))
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "%s: opts->size is %u, expected %zu "
                            "(initialise with TC_COMM_OPTS_INIT)",
                            fn, opts->size, sizeof(tc_comm_opts_t));
    if (opts->device < TC_DEVICE_CPU)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "%s: opts->device is %d: TC_DEVICE_CPU (-1) or a CUDA device number",
                            fn, opts->device);
    if (opts->name && !opts->name[0]) /* logs, errors and dump files would name "" */
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "%s: opts->name is empty (NULL gives the default name)", fn);
    if (opts->name && strlen(opts->name) >= 64)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: opts->name is %zu characters (at most 63)", fn,
                            strlen(opts->name));
    tc_status_t st = opts->hints ? tc_hints_parse(hints, opts->hints) : TC_OK;
    if (st != TC_OK)
        tc_error_prefix("%s: opts->hints: ", fn);
    return st;
}

static tc_status_t comm_wrap(tc_rt_comm_t *rt, const char *fn, tc_comm_t **comm_p)
{
    tc_api_comm_t *c;
    tc_status_t st = tc_api_comm_new(fn, &c);
    if (st != TC_OK) {
        tc_rt_comm_destroy(rt);
        return st;
    }
    c->rt = rt;
    *comm_p = c->handle;
    return TC_OK;
}

tc_status_t tc_comm_create(const tc_comm_opts_t *opts, tc_comm_t **comm_p)
{
    static const char fn[] = "tc_comm_create";
    tc_comm_opts_t defaults = TC_COMM_OPTS_INIT;
    if (!comm_p)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: comm_p is NULL", fn);
    if (!opts)
        opts = &defaults;
    tc_boot_kind_t boot;
    switch (opts->size >= sizeof(tc_comm_opts_t) ? opts->bootstrap : TC_BOOTSTRAP_AUTO) {
    case TC_BOOTSTRAP_AUTO:
        boot = TC_BOOT_AUTO;
        break;
    case TC_BOOTSTRAP_PMIX:
        boot = TC_BOOT_PMIX;
        break;
    case TC_BOOTSTRAP_SELF:
        boot = TC_BOOT_SELF;
        break;
    case TC_BOOTSTRAP_ENV:
        boot = TC_BOOT_ENV;
        break;
    default:
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "%s: opts->bootstrap is %d (accepted: "
                            "TC_BOOTSTRAP_AUTO, TC_BOOTSTRAP_PMIX, TC_BOOTSTRAP_SELF, "
                            "TC_BOOTSTRAP_ENV)",
                            fn, (int)opts->bootstrap);
    }
    tc_hints_t hints;
    tc_hints_init(&hints);
    tc_status_t st = comm_opts(opts, fn, &hints);
    tc_rt_comm_t *rt = NULL;
    if (st == TC_OK) {
        tc_rt_comm_params_t params = {
            boot, opts->name, &hints, opts->timeout_ms, opts->device >= 0, opts->device, NULL};
        st = tc_rt_comm_create(&params, &rt);
    }
    tc_hints_free(&hints);
    return st == TC_OK ? comm_wrap(rt, fn, comm_p) : st;
}

_Static_assert((int)TC_STORE_OK == TC_BOOT_KV_OK && (int)TC_STORE_ABSENT == TC_BOOT_KV_ABSENT &&
                   (int)TC_STORE_TIMEOUT == TC_BOOT_KV_TIMEOUT &&
                   (int)TC_STORE_FAILED == TC_BOOT_KV_FAILED &&
                   TC_STORE_PREFIX_MAX == TC_BOOT_KV_PREFIX_MAX,
               "the public store results are the runtime's");

tc_status_t tc_comm_create_from_store(const tc_store_t *store, int rank, int size,
                                      const char *prefix, const tc_comm_opts_t *opts,
                                      tc_comm_t **comm_p)
{
    static const char fn[] = "tc_comm_create_from_store";
    tc_comm_opts_t defaults = TC_COMM_OPTS_INIT;
    if (!comm_p)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: comm_p is NULL", fn);
    if (!store)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: store is NULL", fn);
    if (store->size < sizeof(tc_store_t))
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "%s: store->size is %u, expected %zu (initialise with TC_STORE_INIT)",
                            fn, store->size, sizeof(tc_store_t));
    tc_boot_kv_params_t kv = {store->set, store->get, store->wait, store->add,
                              store->ctx, rank,       size,        prefix};
    tc_hints_t hints;
    tc_hints_init(&hints);
    tc_status_t st = comm_opts(opts ? opts : &defaults, fn, &hints);
    tc_rt_comm_t *rt = NULL;
    if (st == TC_OK) {
        opts = opts ? opts : &defaults;
        /* unnamed: after its prefix, so that two worlds of one process (one per process
         * group) are told apart in logs and flight-recorder dumps (both were "world") */
        const char *name = opts->name ? opts->name : prefix && strlen(prefix) < 64 ? prefix : NULL;
        tc_rt_comm_params_t params = {TC_BOOT_AUTO,      name,         &hints, opts->timeout_ms,
                                      opts->device >= 0, opts->device, &kv};
        if ((st = tc_rt_comm_create(&params, &rt)) != TC_OK)
            tc_error_prefix("%s: ", fn);
    }
    tc_hints_free(&hints);
    return st == TC_OK ? comm_wrap(rt, fn, comm_p) : st;
}

void tc_comm_create_abort(void)
{
    tc_boot_abort_creations();
}

tc_status_t tc_comm_destroy(tc_comm_t *comm)
{
    if (!comm)
        return TC_OK;
    tc_api_comm_t *c;
    tc_status_t st = tc_api_comm_get(comm, "tc_comm_destroy", &c);
    if (st != TC_OK)
        return st;
    tc_rt_comm_destroy(c->rt);
    tc_api_comm_retire(c);
    return TC_OK;
}

tc_status_t tc_comm_rank(const tc_comm_t *comm, int *rank_p)
{
    tc_api_comm_t *c;
    tc_status_t st = tc_api_comm_get(comm, "tc_comm_rank", &c);
    if (st != TC_OK)
        return st;
    if (!rank_p)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_comm_rank: rank_p is NULL");
    *rank_p = tc_rt_comm_rank(c->rt);
    return TC_OK;
}

tc_status_t tc_comm_size(const tc_comm_t *comm, int *size_p)
{
    tc_api_comm_t *c;
    tc_status_t st = tc_api_comm_get(comm, "tc_comm_size", &c);
    if (st != TC_OK)
        return st;
    if (!size_p)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_comm_size: size_p is NULL");
    *size_p = tc_rt_comm_size(c->rt);
    return TC_OK;
}

tc_status_t tc_comm_name(const tc_comm_t *comm, const char **name_p)
{
    tc_api_comm_t *c;
    tc_status_t st = tc_api_comm_get(comm, "tc_comm_name", &c);
    if (st != TC_OK)
        return st;
    if (!name_p)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_comm_name: name_p is NULL");
    *name_p = tc_rt_comm_name(c->rt);
    return TC_OK;
}

tc_status_t tc_comm_info(const tc_comm_t *comm, tc_comm_info_t *info)
{
    tc_api_comm_t *c;
    tc_status_t st = tc_api_comm_get(comm, "tc_comm_info", &c);
    if (st != TC_OK)
        return st;
    if (!info)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_comm_info: info is NULL");
    tc_rt_comm_info_t rt;
    tc_rt_comm_info(c->rt, &rt);
    memset(info, 0, sizeof(*info));
    info->rank = tc_rt_comm_rank(c->rt);
    info->size = tc_rt_comm_size(c->rt);
    info->local_size = rt.local_size;
    info->device = tc_rt_comm_device(c->rt);
    snprintf(info->name, sizeof(info->name), "%s", tc_rt_comm_name(c->rt));
    snprintf(info->launcher, sizeof(info->launcher), "%s", rt.launcher);
    snprintf(info->host, sizeof(info->host), "%s", rt.host);
    info->peers_shm = rt.peers_shm;
    info->peers_tcp = rt.peers_tcp;
    info->peers_self = rt.peers_self;
    return TC_OK;
}

/* How a new communicator is drawn from its parent: a split by colour and
 * key, a list of the parent's ranks (with its hash, checked equal on every
 * rank), or a dup. */
typedef struct {
    int color, key;
    const int *list;
    int nlist;
    uint64_t list_hash;
    int dup;
} comm_how_t;

/* Split with checked options. */
static tc_status_t comm_split(tc_comm_t *comm, const char *fn, const comm_how_t *how,
                              const tc_comm_opts_t *opts, tc_comm_t **newcomm_p)
{
    tc_api_comm_t *c;
    tc_status_t st = tc_api_comm_get_not_batching(comm, fn, &c);
    if (st != TC_OK)
        return st;
    if (!newcomm_p)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: newcomm_p is NULL", fn);
    tc_comm_opts_t defaults = TC_COMM_OPTS_INIT;
    tc_hints_t hints;
    tc_hints_init(&hints);
    st = comm_opts(opts ? opts : &defaults, fn, &hints);
    tc_rt_comm_t *rt = NULL;
    if (st == TC_OK) {
        tc_rt_comm_params_t params = {TC_BOOT_AUTO,
                                      opts ? opts->name : NULL,
                                      opts && opts->hints ? &hints : NULL,
                                      opts ? opts->timeout_ms : 0,
                                      0,
                                      -1,
                                      NULL}; /* device: inherited */
        st = how->dup ? tc_rt_comm_dup(c->rt, &params, &rt)
             : how->list
                 ? tc_rt_comm_split_list(c->rt, how->list, how->nlist, how->list_hash, &params, &rt)
                 : tc_rt_comm_split(c->rt, how->color, how->key, &params, &rt);
    }
    tc_hints_free(&hints);
    if (st != TC_OK)
        return st;
    if (!rt) {
        *newcomm_p = NULL;
        return TC_OK;
    }
    return comm_wrap(rt, fn, newcomm_p);
}

tc_status_t tc_comm_split(tc_comm_t *comm, int color, int key, const tc_comm_opts_t *opts,
                          tc_comm_t **newcomm_p)
{
    if (color < TC_SPLIT_NONE)
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "tc_comm_split: color %d is negative (use a "
                            "colour >= 0, or TC_SPLIT_NONE to join no communicator)",
                            color);
    comm_how_t how = {.color = color, .key = key};
    return comm_split(comm, "tc_comm_split", &how, opts, newcomm_p);
}

tc_status_t tc_comm_split_ranks(tc_comm_t *comm, const int *ranks, int nranks,
                                const tc_comm_opts_t *opts, tc_comm_t **newcomm_p)
{
    static const char fn[] = "tc_comm_split_ranks";
    tc_api_comm_t *c;
    tc_status_t st = tc_api_comm_get_not_batching(comm, fn, &c);
    if (st != TC_OK)
        return st;
    int size = tc_rt_comm_size(c->rt);
    if (!ranks || nranks <= 0 || nranks > size)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: %s (%d ranks; the communicator has %d)", fn,
                            !ranks ? "ranks is NULL" : "the list must hold 1 to size ranks", nranks,
                            size);
    unsigned char *seen = calloc((size_t)size, 1);
    if (!seen)
        return tc_error_set(TC_ERR_NO_MEMORY, "%s: %d flags", fn, size);
    uint64_t hash = 0xcbf29ce484222325ull;
    for (int i = 0; i < nranks; i++) {
        if (ranks[i] < 0 || ranks[i] >= size || seen[ranks[i]]) {
            int r = ranks[i];
            free(seen);
            return tc_error_set(TC_ERR_INVALID_ARG, "%s: ranks[%d] = %d is %s", fn, i, r,
                                r < 0 || r >= size ? "out of range" : "repeated");
        }
        seen[ranks[i]] = 1;
        hash = (hash ^ (uint64_t)ranks[i]) * 0x100000001b3ull;
    }
    free(seen);
    hash = (hash ^ (uint64_t)nranks) * 0x100000001b3ull;
    comm_how_t how = {.list = ranks, .nlist = nranks, .list_hash = hash | 1};
    return comm_split(comm, fn, &how, opts, newcomm_p);
}

tc_status_t tc_comm_dup(tc_comm_t *comm, const tc_comm_opts_t *opts, tc_comm_t **newcomm_p)
{
    comm_how_t how = {.dup = 1};
    return comm_split(comm, "tc_comm_dup", &how, opts, newcomm_p);
}

tc_status_t tc_comm_abort(tc_comm_t *comm)
{
    tc_api_comm_t *c;
    tc_status_t st = tc_api_comm_get(comm, "tc_comm_abort", &c);
    if (st != TC_OK)
        return st;
    tc_api_batch_close(c);
    tc_rt_comm_abort(c->rt);
    return TC_OK;
}

tc_status_t tc_comm_revoke(tc_comm_t *comm)
{
    tc_api_comm_t *c;
    tc_status_t st = tc_api_comm_get(comm, "tc_comm_revoke", &c);
    return st != TC_OK ? st : tc_rt_comm_revoke(c->rt);
}

tc_status_t tc_comm_shrink(tc_comm_t *comm, const tc_comm_opts_t *opts, tc_comm_t **newcomm_p)
{
    static const char fn[] = "tc_comm_shrink";
    tc_api_comm_t *c;
    tc_status_t st = tc_api_comm_get(comm, fn, &c);
    if (st != TC_OK)
        return st;
    if (!newcomm_p)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: newcomm_p is NULL", fn);
    tc_api_batch_close(c);
    tc_comm_opts_t defaults = TC_COMM_OPTS_INIT;
    tc_hints_t hints;
    tc_hints_init(&hints);
    st = comm_opts(opts ? opts : &defaults, fn, &hints);
    tc_rt_comm_t *rt = NULL;
    if (st == TC_OK) {
        tc_rt_comm_params_t params = {TC_BOOT_AUTO,
                                      opts ? opts->name : NULL,
                                      opts && opts->hints ? &hints : NULL,
                                      opts ? opts->timeout_ms : 0,
                                      0,
                                      -1,
                                      NULL}; /* device: inherited */
        st = tc_rt_comm_shrink(c->rt, &params, &rt);
    }
    tc_hints_free(&hints);
    return st == TC_OK ? comm_wrap(rt, fn, newcomm_p) : st;
}

tc_status_t tc_comm_failed_ranks(tc_comm_t *comm, int *ranks, int cap, int *n_p)
{
    static const char fn[] = "tc_comm_failed_ranks";
    tc_api_comm_t *c;
    tc_status_t st = tc_api_comm_get(comm, fn, &c);
    if (st != TC_OK)
        return st;
    if (!n_p || cap < 0 || (cap > 0 && !ranks))
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: %s", fn,
                            !n_p      ? "n_p is NULL"
                            : cap < 0 ? "cap is negative"
                                      : "ranks is NULL");
    *n_p = tc_rt_comm_failed_ranks(c->rt, ranks, cap);
    return TC_OK;
}

tc_status_t tc_comm_dump_fr(tc_comm_t *comm)
{
    tc_api_comm_t *c;
    tc_status_t st = tc_api_comm_get(comm, "tc_comm_dump_fr", &c);
    return st != TC_OK ? st : tc_rt_comm_dump_fr(c->rt);
}

static const char *coll_name(int coll)
{
    return coll == TC_COLL_COUNT ? "send_recv" : tc_coll_name((tc_coll_t)coll);
}

tc_status_t tc_comm_stats(tc_comm_t *comm, tc_comm_stat_t *stats, int cap, int *n_p)
{
    static const char fn[] = "tc_comm_stats";
    tc_api_comm_t *c;
    tc_status_t st = tc_api_comm_get(comm, fn, &c);
    if (st != TC_OK)
        return st;
    if (!n_p || cap < 0 || (cap > 0 && !stats))
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: %s", fn,
                            !n_p      ? "n_p is NULL"
                            : cap < 0 ? "cap is negative"
                                      : "stats is NULL");
    tc_rt_stat_t *rt = cap > 0 ? malloc((size_t)cap * sizeof(*rt)) : NULL;
    if (cap > 0 && !rt)
        return tc_error_set(TC_ERR_NO_MEMORY, "%s: %d entries", fn, cap);
    int n = tc_rt_comm_stats(c->rt, rt, cap);
    for (int i = 0; i < n && i < cap; i++)
        stats[i] =
            (tc_comm_stat_t){coll_name(rt[i].coll), rt[i].algo,  rt[i].ops,
                             rt[i].failed,          rt[i].bytes, (double)rt[i].time_ns / 1e9};
    free(rt);
    *n_p = n;
    return TC_OK;
}

static void hook_trampoline(const tc_rt_op_info_t *in, int after, void *arg)
{
    const tc_api_hook_t *h = arg;
    tc_op_info_t info = {coll_name(in->coll),
                         in->seq,
                         in->count,
                         in->dtype,
                         in->root,
                         in->algo ? in->algo : "?",
                         in->status,
                         (double)in->time_ns / 1e9};
    h->fn(h->comm, &info, after, h->arg);
}

tc_status_t tc_comm_add_hook(tc_comm_t *comm, tc_hook_fn fn, void *arg)
{
    static const char fnname[] = "tc_comm_add_hook";
    tc_api_comm_t *c;
    tc_status_t st = tc_api_comm_get(comm, fnname, &c);
    if (st != TC_OK)
        return st;
    if (!fn)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: fn is NULL", fnname);
    if (c->nhooks == TC_RT_HOOKS)
        return tc_error_set(TC_ERR_NO_RESOURCE, "%s: comm '%s' already has %d hooks", fnname,
                            tc_rt_comm_name(c->rt), TC_RT_HOOKS);
    tc_api_hook_t *h = &c->hooks[c->nhooks];
    *h = (tc_api_hook_t){c->handle, fn, arg};
    if ((st = tc_rt_comm_add_hook(c->rt, hook_trampoline, h)) == TC_OK)
        c->nhooks++;
    return st;
}
