/*
 * The alpha-beta-gamma cost model and algorithm selection.
 *
 * A message of b bytes between two ranks costs alpha + b beta (alpha and
 * beta of the link class: same node, or across nodes); reducing b bytes
 * costs b gamma. An algorithm's formula (tc_algo_cost_t) gives the messages,
 * elements and reduced elements on its critical path; the model time is
 * rounds alpha + elems size beta + red_elems size gamma, with two
 * corrections: messages a rank posts back to back (overlap of the rounds)
 * cost the per-message overhead o instead of alpha, as their latencies
 * overlap (LogP); and across nodes the beta term is multiplied by how many
 * of a node's ranks use the node's link at once (link_share: a flat
 * algorithm's steps that cross nodes move ranks-per-node times the bytes over
 * it, see tc_algo_node_share()). Both with the across-node
 * class as soon as the job spans nodes (a conservative choice: the
 * hierarchical algorithm's formula accounts for its two classes itself by
 * weighting; see hierarchical.c). Defaults are a commodity 100 Gb/s cluster;
 * a tuning file (TC_TUNING_FILE, written by tc-tune on the machine) replaces
 * them, and each parameter's own variable replaces both (docs/tuning.md).
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "algo_internal.h"
#include "tcomms/algo/tuning.h"
#include "tcomms/base/config.h"
#include "tcomms/base/log.h"

/* The last tuning file read, kept while the file is unchanged (same path,
 * inode, size and modification time): selection asks for the model on every
 * schedule it builds, and reads the file again only when it changed. */
static pthread_mutex_t tc_algo_tuning_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    int valid;
    char path[256];
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    tc_algo_tuning_t tuning;
} tc_algo_tuning_cache;

static tc_status_t tc_algo_tuning_cached(const char *path, tc_algo_tuning_t *tuning)
{
    struct stat sb;
    tc_status_t st = TC_OK;

    if (strlen(path) >= sizeof(tc_algo_tuning_cache.path)) {
        return tc_error_set(TC_ERR_CONFIG,
                            "TC_TUNING_FILE=%.64s...: a path of %zu bytes (at most %zu)", path,
                            strlen(path), sizeof(tc_algo_tuning_cache.path) - 1);
    }
    if (stat(path, &sb) != 0) {
        return tc_error_set(TC_ERR_CONFIG, "TC_TUNING_FILE=%s: cannot open: %s", path,
                            strerror(errno));
    }
    pthread_mutex_lock(&tc_algo_tuning_mu);
    if (!tc_algo_tuning_cache.valid || strcmp(tc_algo_tuning_cache.path, path) != 0 ||
        tc_algo_tuning_cache.dev != sb.st_dev || tc_algo_tuning_cache.ino != sb.st_ino ||
        tc_algo_tuning_cache.size != sb.st_size ||
        tc_algo_tuning_cache.mtime.tv_sec != sb.st_mtim.tv_sec ||
        tc_algo_tuning_cache.mtime.tv_nsec != sb.st_mtim.tv_nsec) {
        tc_algo_tuning_cache.valid = 0;
        st = tc_algo_tuning_load(path, &tc_algo_tuning_cache.tuning);
        if (st == TC_OK) {
            snprintf(tc_algo_tuning_cache.path, sizeof(tc_algo_tuning_cache.path), "%s", path);
            tc_algo_tuning_cache.dev = sb.st_dev;
            tc_algo_tuning_cache.ino = sb.st_ino;
            tc_algo_tuning_cache.size = sb.st_size;
            tc_algo_tuning_cache.mtime = sb.st_mtim;
            tc_algo_tuning_cache.valid = 1;
        } else {
            tc_error_prefix("TC_TUNING_FILE: ");
        }
    }
    if (st == TC_OK) {
        *tuning = tc_algo_tuning_cache.tuning;
    }
    pthread_mutex_unlock(&tc_algo_tuning_mu);
    return st;
}

tc_status_t tc_algo_model_info(tc_algo_model_info_t *info)
{
    tc_algo_model_info_t in;
    double val[TC_ALGO_PARAM_COUNT];
    const char *path;
    tc_status_t status;
    int i;

    if (info == NULL) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_algo_model_info: NULL info");
    }
    memset(&in, 0, sizeof(in));
    path = tc_config_string("TC_TUNING_FILE", NULL);
    if (path != NULL && path[0] != '\0') {
        snprintf(in.file, sizeof(in.file), "%s", path);
        if ((status = tc_algo_tuning_cached(path, &in.tuning)) != TC_OK) {
            return status;
        }
    }
    for (i = 0; i < TC_ALGO_PARAM_COUNT; i++) {
        const tc_algo_param_t p = (tc_algo_param_t)i;
        const char *env = tc_config_string(tc_algo_param_env(p), NULL);
        double def = tc_algo_param_default(p);

        in.source[i] = TC_ALGO_SRC_DEFAULT;
        if (in.tuning.has[i]) {
            def = in.tuning.value[i];
            in.source[i] = TC_ALGO_SRC_FILE;
        }
        if (env != NULL) {
            in.source[i] = TC_ALGO_SRC_ENV;
        }
        status = tc_config_double(tc_algo_param_env(p), def, 0.0, 1e9, &val[i]);
        if (status != TC_OK) {
            return status;
        }
    }
    in.model.alpha_us[0] = val[TC_ALGO_PARAM_ALPHA_INTRA];
    in.model.alpha_us[1] = val[TC_ALGO_PARAM_ALPHA_INTER];
    in.model.beta_us[0] = val[TC_ALGO_PARAM_BETA_INTRA];
    in.model.beta_us[1] = val[TC_ALGO_PARAM_BETA_INTER];
    in.model.gamma_us = val[TC_ALGO_PARAM_GAMMA];
    in.model.o_us = val[TC_ALGO_PARAM_OVERHEAD];
    *info = in;
    return TC_OK;
}

double tc_algo_model_param(const tc_algo_model_t *model, tc_algo_param_t param)
{
    switch (param) {
    case TC_ALGO_PARAM_ALPHA_INTRA:
        return model->alpha_us[0];
    case TC_ALGO_PARAM_ALPHA_INTER:
        return model->alpha_us[1];
    case TC_ALGO_PARAM_BETA_INTRA:
        return model->beta_us[0];
    case TC_ALGO_PARAM_BETA_INTER:
        return model->beta_us[1];
    case TC_ALGO_PARAM_GAMMA:
        return model->gamma_us;
    case TC_ALGO_PARAM_OVERHEAD:
        return model->o_us;
    default:
        return 0.0;
    }
}

tc_status_t tc_algo_model_get(tc_algo_model_t *model)
{
    tc_algo_model_info_t info;
    tc_status_t status;

    if (model == NULL) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_algo_model_get: model is NULL");
    }
    status = tc_algo_model_info(&info);
    if (status == TC_OK) {
        *model = info.model;
    }
    return status;
}

int tc_algo_link_class(const tc_algo_args_t *args)
{
    return (args->ranks_per_node > 0 && args->ranks_per_node < args->nranks) ? 1 : 0;
}

double tc_algo_model_time(const tc_algo_model_t *model, const tc_algo_args_t *args,
                          const tc_algo_cost_t *cost, size_t elem_size)
{
    int c, oversub;
    double sz, alpha, o, share, cores;

    if (model == NULL || args == NULL || cost == NULL) {
        return HUGE_VAL; /* never the cheapest */
    }
    c = tc_algo_link_class(args);
    oversub = c == 0 && args->oversub > 1;
    sz = (double)elem_size;
    alpha = model->alpha_us[c] + (oversub ? TC_ALGO_SCHED_HOP_US : 0.0);
    o = model->o_us < alpha ? model->o_us : alpha;
    share = c == 1 && cost->link_share > 1 ? cost->link_share : 1.0;
    cores = oversub ? args->oversub : 1.0;
    return ((cost->rounds - cost->overlap) * alpha + cost->overlap * o +
            (cost->elems * sz * model->beta_us[c] * share +
             cost->red_elems * sz * model->gamma_us) *
                cores) *
           1e-6;
}

/* Node of rank r: ranks_per_node consecutive ranks per node. */
static int tc_algo_node_of(const tc_algo_args_t *args, int r)
{
    return r / args->ranks_per_node;
}

double tc_algo_node_share(const tc_algo_args_t *args, int dist, int xor_partner)
{
    int i, q, cross = 0;

    if (args == NULL || tc_algo_link_class(args) == 0) {
        return 1.0;
    }
    /* node 0 is a full node (only the last may hold fewer) */
    for (i = 0; i < args->ranks_per_node; i++) {
        q = xor_partner ? (i ^ dist) : (int)(((long long)i + dist) % args->nranks);
        cross += q < args->nranks && tc_algo_node_of(args, q) != 0;
    }
    return cross > 1 ? (double)cross : 1.0;
}

double tc_algo_node_share_all(const tc_algo_args_t *args)
{
    double k, n;

    if (args == NULL || tc_algo_link_class(args) == 0) {
        return 1.0;
    }
    k = args->ranks_per_node;
    n = args->nranks;
    return k * (n - k) / (n - 1) > 1 ? k * (n - k) / (n - 1) : 1.0;
}

/* "algo names of coll that apply to args", for error details. */
static void tc_algo_names(const tc_algo_args_t *args, int only_applicable, char *out, size_t len)
{
    size_t n, i, pos = 0;
    const tc_algo_desc_t *t = tc_algo_table(&n);

    out[0] = '\0';
    for (i = 0; i < n && pos < len; i++) {
        if (t[i].coll != args->coll) {
            continue;
        }
        if (only_applicable && tc_algo_applies(&t[i], args) != TC_OK) {
            continue;
        }
        pos += (size_t)snprintf(out + pos, len - pos, "%s%s", pos ? ", " : "", t[i].name);
    }
}

static tc_status_t tc_algo_named(const tc_algo_args_t *args, const char *name, const char *from,
                                 const char **name_p)
{
    const tc_algo_desc_t *desc;
    tc_status_t status = tc_algo_find(args->coll, name, &desc);
    char names[512], why[300];

    if (status != TC_OK) {
        tc_error_prefix("%s: ", from);
        return status;
    }
    if (tc_algo_applies(desc, args) != TC_OK) {
        snprintf(why, sizeof(why), "%s", tc_last_error());
        tc_algo_names(args, 1, names, sizeof(names));
        return tc_error_set(TC_ERR_UNSUPPORTED,
                            "%s: %s %s does not apply to this call (%d ranks): %s; valid here: %s",
                            from, tc_coll_name(args->coll), name, args->nranks, why, names);
    }
    *name_p = desc->name;
    return TC_OK;
}

/* The tuning file's rule for the call, when one covers it and its algorithm
 * applies (*name_p set; NULL: price the algorithms). TC_ALGO_RULES=0 turns
 * the rules off (to study the model alone). A rule
 * whose algorithm does not apply to this call (an in-place or v-variant case
 * the measured one was not) falls through to the model, logged. */
static tc_status_t tc_algo_by_rule(const tc_algo_tuning_t *tuning, const tc_algo_args_t *args,
                                   size_t elem_size, const char **name_p)
{
    const tc_algo_rule_t *rule = tc_algo_rule_find(tuning, args, elem_size);
    const tc_algo_desc_t *desc;
    bool on = true;
    tc_status_t st;

    *name_p = NULL;
    if (rule == NULL) {
        return TC_OK;
    }
    if ((st = tc_config_bool("TC_ALGO_RULES", true, &on)) != TC_OK || !on) {
        return st;
    }
    if (tc_algo_find(args->coll, rule->algo, &desc) != TC_OK ||
        tc_algo_applies(desc, args) != TC_OK) {
        tc_log_info(TC_SUBSYS_ALGO,
                    "%s on %d ranks: the tuning file's rule %s does not apply "
                    "here (%s); the model chooses",
                    tc_coll_name(args->coll), args->nranks, rule->algo, tc_last_error());
        return TC_OK;
    }
    tc_log_info(TC_SUBSYS_ALGO, "%s on %d ranks, %llu bytes: %s (tuning file rule from %llu bytes)",
                tc_coll_name(args->coll), args->nranks,
                (unsigned long long)tc_algo_args_bytes(args, elem_size), desc->name,
                (unsigned long long)rule->from_bytes);
    *name_p = desc->name;
    return TC_OK;
}

tc_status_t tc_algo_select(const tc_algo_args_t *args, size_t elem_size, const char *hint,
                           const char **name_p)
{
    const tc_algo_desc_t *t, *best = NULL;
    tc_algo_model_info_t info;
    tc_algo_model_t model;
    tc_status_t status;
    char var[64], names[512], why[300] = "no algorithm is modelled";
    double best_t = 0, tm;
    const char *env;
    size_t n, i;

    if (name_p == NULL) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_algo_select: name_p is NULL");
    }
    if ((status = tc_algo_args_check(args, "tc_algo_select")) != TC_OK) {
        return status;
    }
    if (hint != NULL) {
        status = tc_algo_named(args, hint, "hint algo", name_p);
        if (status == TC_OK) {
            tc_log_info(TC_SUBSYS_ALGO, "%s on %d ranks: %s (hint)", tc_coll_name(args->coll),
                        args->nranks, *name_p);
        }
        return status;
    }
    snprintf(var, sizeof(var), "TC_ALGO_%s", tc_coll_name(args->coll));
    for (i = 0; var[i] != '\0'; i++) {
        var[i] = (char)toupper((unsigned char)var[i]);
    }
    env = tc_config_string(var, NULL);
    if (env != NULL && env[0] != '\0') {
        status = tc_algo_named(args, env, var, name_p);
        if (status == TC_OK) {
            tc_log_info(TC_SUBSYS_ALGO, "%s on %d ranks: %s (%s)", tc_coll_name(args->coll),
                        args->nranks, *name_p, var);
        }
        return status;
    }
    if ((status = tc_algo_model_info(&info)) != TC_OK) {
        return status;
    }
    if ((status = tc_algo_by_rule(&info.tuning, args, elem_size, name_p)) != TC_OK ||
        *name_p != NULL) {
        return status;
    }
    model = info.model;
    t = tc_algo_table(&n);
    for (i = 0; i < n; i++) {
        tc_algo_cost_t c;
        if (t[i].coll != args->coll || t[i].cost == NULL) {
            continue;
        }
        if (tc_algo_applies(&t[i], args) != TC_OK) {
            snprintf(why, sizeof(why), "%s", tc_last_error());
            continue;
        }
        memset(&c, 0, sizeof(c));
        t[i].cost(args, &c);
        tm = tc_algo_model_time(&model, args, &c, elem_size ? elem_size : 1);
        if (best == NULL || tm < best_t) {
            best = &t[i];
            best_t = tm;
        }
    }
    if (best == NULL) {
        /* the last refusal's reason: in the usual cases (in place, a
         * v-variant) every algorithm's */
        tc_algo_names(args, 0, names, sizeof(names));
        return tc_error_set(TC_ERR_UNSUPPORTED,
                            "no %s algorithm applies to this call (%d ranks): %s (known: %s)",
                            tc_coll_name(args->coll), args->nranks, why, names[0] ? names : "none");
    }
    tc_log_info(TC_SUBSYS_ALGO, "%s on %d ranks, %llu x %zu bytes: %s (model %.3g us)",
                tc_coll_name(args->coll), args->nranks, (unsigned long long)args->count, elem_size,
                best->name, best_t * 1e6);
    *name_p = best->name;
    return TC_OK;
}
