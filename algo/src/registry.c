/* The table of algorithms, lookup by name, and tc_algo_build.
 * The table is generated at build time from the TC_ALGO_DEFINE lines of the
 * generator files (algo/registry_gen.sh, algo/BUILD.bazel): a new algorithm
 * is one file (docs/algorithms/README.md). */
#include <stdio.h>
#include <string.h>

#include "algo_internal.h"
#include "tcomms/base/config.h"

/* The generated file, included twice: declarations, then the table. */
#define TC_ALGO_APPLIES(fn) tc_status_t fn(const tc_algo_args_t *args);
#define TC_ALGO_ENTRY(coll, name, fn, applies) TC_ALGO_DECLARE(fn);
#include "algo/src/registry_table.inc"
#undef TC_ALGO_APPLIES
#undef TC_ALGO_ENTRY

#define TC_ALGO_APPLIES(fn)
#define TC_ALGO_ENTRY(coll, name, fn, applies)                                                     \
    {#name, TC_COLL_##coll, tc_algo_##fn, tc_algo_##fn##_cost, applies},

/* Ordered by collective, then priority: the first entry of a collective is
 * its default for tc_algo_build(NULL). */
static const tc_algo_desc_t tc_algo_registry[] = {
#include "algo/src/registry_table.inc"
};
#undef TC_ALGO_APPLIES
#undef TC_ALGO_ENTRY

#define TC_ALGO_NREG (sizeof(tc_algo_registry) / sizeof(tc_algo_registry[0]))

const tc_algo_desc_t *tc_algo_table(size_t *count_p)
{
    if (count_p != NULL) {
        *count_p = TC_ALGO_NREG;
    }
    return tc_algo_registry;
}

tc_status_t tc_algo_applies_pow2(const tc_algo_args_t *args)
{
    if ((args->nranks & (args->nranks - 1)) != 0) {
        return tc_error_set(TC_ERR_UNSUPPORTED, "needs a power-of-two number of ranks");
    }
    return tc_algo_applies_uniform(args);
}

tc_status_t tc_algo_applies_uniform(const tc_algo_args_t *args)
{
    if (args->counts != NULL) {
        return tc_error_set(TC_ERR_UNSUPPORTED, "has no v-variant (per-rank counts)");
    }
    return TC_OK;
}

tc_status_t tc_algo_applies_not_in_place(const tc_algo_args_t *args)
{
    if (args->in_place) {
        /* Every block of recv is written while other ranks may still need
         * the input that sat there: that needs staging, which the caller
         * (the runtime) does. */
        return tc_error_set(TC_ERR_UNSUPPORTED, "%s%s in place is not supported",
                            tc_coll_name(args->coll), args->a2a_counts != NULL ? "_v" : "");
    }
    return TC_OK;
}

tc_status_t tc_algo_applies(const tc_algo_desc_t *desc, const tc_algo_args_t *args)
{
    if (args->counts != NULL && args->coll != TC_COLL_ALL_GATHER &&
        args->coll != TC_COLL_REDUCE_SCATTER) {
        return tc_error_set(TC_ERR_UNSUPPORTED, "%s has no v-variant here (counts is set)",
                            tc_coll_name(args->coll));
    }
    return desc->applies != NULL ? desc->applies(args) : TC_OK;
}

static int tc_algo_is_rooted(tc_coll_t coll)
{
    return coll == TC_COLL_REDUCE || coll == TC_COLL_BROADCAST || coll == TC_COLL_GATHER ||
           coll == TC_COLL_SCATTER;
}

tc_status_t tc_algo_args_check(const tc_algo_args_t *args, const char *who)
{
    if (args == NULL) {
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: args is NULL", who);
    }
    if ((int)args->coll < 0 || args->coll >= TC_COLL_COUNT) {
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: unknown collective %d", who, (int)args->coll);
    }
    if (args->nranks < 1) {
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: nranks %d (must be >= 1)", who, args->nranks);
    }
    if (args->rank < 0 || args->rank >= args->nranks) {
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: rank %d outside [0, %d)", who, args->rank,
                            args->nranks);
    }
    if (tc_algo_is_rooted(args->coll) && (args->root < 0 || args->root >= args->nranks)) {
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: %s root %d outside [0, %d)", who,
                            tc_coll_name(args->coll), args->root, args->nranks);
    }
    if (!tc_algo_is_rooted(args->coll) && args->root != -1) {
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "%s: root %d for %s, which is not rooted (must be -1)", who, args->root,
                            tc_coll_name(args->coll));
    }
    if (args->in_place != 0 && args->in_place != 1) {
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: in_place %d (must be 0 or 1)", who,
                            args->in_place);
    }
    if (!(args->oversub >= 0 && args->oversub <= 1e6)) {
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: oversub %g (ranks per core: 0 to 1e6)", who,
                            args->oversub);
    }
    if (args->ranks_per_node < 0) {
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: ranks_per_node %d is negative", who,
                            args->ranks_per_node);
    }
    if (args->displs != NULL && args->counts == NULL) {
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: displs without counts", who);
    }
    if ((args->a2a_sdispls != NULL || args->a2a_rdispls != NULL) && args->a2a_counts == NULL) {
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: a2a_%sdispls without a2a_counts", who,
                            args->a2a_sdispls != NULL ? "s" : "r");
    }
    if (args->a2a_counts != NULL) {
        if (args->coll != TC_COLL_ALL_TO_ALL) {
            return tc_error_set(TC_ERR_INVALID_ARG,
                                "%s: a2a_counts set for %s (only all_to_all has per-pair counts)",
                                who, tc_coll_name(args->coll));
        }
        if (args->counts != NULL) {
            return tc_error_set(TC_ERR_INVALID_ARG,
                                "%s: all_to_all with both counts and a2a_counts (use one)", who);
        }
        if (args->count != 0) {
            return tc_error_set(TC_ERR_INVALID_ARG,
                                "%s: all_to_all_v: count must be 0 with a2a_counts (the matrix "
                                "gives every block), got %llu",
                                who, (unsigned long long)args->count);
        }
    }
    return TC_OK;
}

tc_status_t tc_algo_find(tc_coll_t coll, const char *algo, const tc_algo_desc_t **desc_p)
{
    char names[512];
    size_t i, len = 0;
    int any = 0;

    for (i = 0; i < TC_ALGO_NREG; i++) {
        if (tc_algo_registry[i].coll != coll) {
            continue;
        }
        if (algo == NULL || strcmp(algo, tc_algo_registry[i].name) == 0) {
            *desc_p = &tc_algo_registry[i];
            return TC_OK;
        }
        if (len < sizeof(names)) {
            len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s", any ? ", " : "",
                                    tc_algo_registry[i].name);
        }
        any = 1;
    }
    if (!any) {
        return tc_error_set(TC_ERR_UNSUPPORTED, "no algorithm implements %s yet",
                            tc_coll_name(coll));
    }
    return tc_error_set(TC_ERR_NOT_FOUND,
                        "no %s algorithm named '" TC_ECHO_FMT "'; valid names: %s",
                        tc_coll_name(coll), TC_ECHO(algo), names);
}

tc_status_t tc_algo_build(const tc_algo_args_t *args, const char *algo, tc_sched_t *sched)
{
    const tc_algo_desc_t *desc;
    tc_algo_layout_t lay;
    tc_sched_t local;
    tc_status_t status;

    if (sched == NULL) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_algo_build: sched is NULL");
    }
    status = tc_algo_args_check(args, "tc_algo_build");
    if (status != TC_OK) {
        return status;
    }
    status = tc_algo_find(args->coll, algo, &desc);
    if (status != TC_OK) {
        return status;
    }
    if ((status = tc_algo_applies(desc, args)) != TC_OK) {
        tc_error_prefix("%s %s: ", tc_coll_name(args->coll), desc->name);
        return status;
    }
    if ((status = tc_algo_layout(args, &lay)) != TC_OK ||
        (status = tc_algo_blocks_check(args)) != TC_OK) {
        return status;
    }
    tc_sched_init(&local, args, desc->name);
    status = desc->gen(args, &local);
    if (status != TC_OK) {
        tc_error_prefix("%s %s for rank %d of %d: ", tc_coll_name(args->coll), desc->name,
                        args->rank, args->nranks);
        tc_sched_free(&local);
        return status;
    }
    local.buf_count[TC_BUF_SEND] = lay.buf_count[0];
    local.buf_count[TC_BUF_RECV] = lay.buf_count[1];
    local.buf_count[TC_BUF_SCRATCH] = local.scratch_count;
    *sched = local;
    return TC_OK;
}
