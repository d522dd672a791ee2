/*
 * Measured rules of a tuning file (version 3, docs/tuning.md): one key per
 * collective, "rule_all_reduce = 0:recursive_doubling 23170:rabenseifner",
 * the algorithm tc-tune measured fastest from each size on, for communicators
 * of the shape the file describes. Parsed and formatted here; selection
 * (cost.c) asks tc_algo_rule_find() before it prices the algorithms.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "algo_internal.h"
#include "tuning_internal.h"

uint64_t tc_algo_args_bytes(const tc_algo_args_t *args, size_t elem_size)
{
    uint64_t elems = args->count;

    if (args->coll == TC_COLL_BARRIER) {
        return 0;
    }
    if (args->counts != NULL) {
        elems = 0;
        for (int q = 0; q < args->nranks; q++) {
            elems += args->counts[q];
        }
        return elems * elem_size;
    }
    switch (args->coll) {
    case TC_COLL_ALL_GATHER:
    case TC_COLL_REDUCE_SCATTER:
    case TC_COLL_ALL_TO_ALL:
    case TC_COLL_GATHER:
    case TC_COLL_SCATTER:
        elems *= (uint64_t)args->nranks;
        break;
    default:
        break;
    }
    return elems * elem_size;
}

/* Nodes of a communicator: ranks_per_node consecutive ranks each (0, or as
 * many as there are ranks: one node). */
static int tuning_nodes(const tc_algo_args_t *args)
{
    const int n = args->nranks, k = args->ranks_per_node;
    return (k <= 0 || k >= n) ? 1 : (n + k - 1) / k;
}

const tc_algo_rule_t *tc_algo_rule_find(const tc_algo_tuning_t *tuning, const tc_algo_args_t *args,
                                        size_t elem_size)
{
    const tc_algo_rule_t *hit = NULL;
    uint64_t bytes;
    int nodes;

    if (tuning == NULL || args == NULL || tuning->nrules <= 0 || args->nranks != tuning->ranks) {
        return NULL;
    }
    nodes = tuning_nodes(args);
    if (nodes != tuning->nodes || (nodes > 1 && args->ranks_per_node != tuning->ranks_per_node)) {
        return NULL;
    }
    bytes = tc_algo_args_bytes(args, elem_size);
    for (int i = 0; i < tuning->nrules && i < TC_ALGO_TUNING_RULES_MAX; i++) {
        const tc_algo_rule_t *r = &tuning->rule[i];
        if (r->coll == args->coll && r->from_bytes <= bytes) {
            hit = r;
        }
    }
    return hit;
}

static tc_coll_t tuning_rule_coll(const char *key)
{
    for (int c = 0; c < TC_COLL_COUNT; c++) {
        if (strcmp(key, tc_coll_name((tc_coll_t)c)) == 0) {
            return (tc_coll_t)c;
        }
    }
    return TC_COLL_COUNT;
}

/* One "BYTES:ALGO" item of a rule line. */
static tc_status_t tuning_rule_item(const char *where, tc_coll_t coll, const char *item, size_t n,
                                    tc_algo_rule_t *r)
{
    const char *colon = memchr(item, ':', n);
    const tc_algo_desc_t *desc;
    char num[24];
    size_t nlen, alen;

    if (colon == NULL || colon == item || colon + 1 == item + n) {
        return tc_error_set(TC_ERR_CONFIG, "%s: \"%.*s\" is not BYTES:ALGORITHM", where,
                            (int)(n > 64 ? 64 : n), item);
    }
    nlen = (size_t)(colon - item);
    alen = n - nlen - 1;
    if (nlen >= sizeof(num) || strspn(item, "0123456789") != nlen) {
        return tc_error_set(TC_ERR_CONFIG, "%s: \"%.*s\": the bytes are not a decimal integer",
                            where, (int)(nlen > 32 ? 32 : nlen), item);
    }
    memcpy(num, item, nlen);
    num[nlen] = '\0';
    if (nlen > 19) {
        return tc_error_set(TC_ERR_CONFIG, "%s: %s bytes: out of range", where, num);
    }
    r->coll = coll;
    r->from_bytes = strtoull(num, NULL, 10);
    if (alen >= TC_ALGO_RULE_NAME_MAX) {
        return tc_error_set(TC_ERR_CONFIG, "%s: an algorithm name of %zu bytes (at most %d)", where,
                            alen, TC_ALGO_RULE_NAME_MAX - 1);
    }
    memcpy(r->algo, colon + 1, alen);
    r->algo[alen] = '\0';
    if (tc_algo_find(coll, r->algo, &desc) != TC_OK) {
        tc_error_prefix("%s: ", where);
        return TC_ERR_CONFIG;
    }
    return TC_OK;
}

tc_status_t tc_algo_rules_parse(const char *name, unsigned line, const char *key, const char *val,
                                tc_algo_tuning_t *t)
{
    char where[128];
    const tc_coll_t coll = tuning_rule_coll(key + strlen(TC_ALGO_RULE_PREFIX));
    const int first = t->nrules;

    snprintf(where, sizeof(where), "%.60s:%u: %s", name, line, key);
    if (coll == TC_COLL_COUNT) {
        return tc_error_set(TC_ERR_CONFIG, "%s: no collective \"%s\" (rule_all_reduce, ...)", where,
                            key + strlen(TC_ALGO_RULE_PREFIX));
    }
    if (t->version < 3) {
        return tc_error_set(TC_ERR_CONFIG,
                            "%s: rules need \"tcomms_tuning = 3\" (the file says %d)", where,
                            t->version);
    }
    for (int i = 0; i < t->nrules; i++) {
        if (t->rule[i].coll == coll) {
            return tc_error_set(TC_ERR_CONFIG, "%s: key given a second time", where);
        }
        if (t->rule[i].coll > coll) {
            return tc_error_set(TC_ERR_CONFIG,
                                "%s: after rule_%s (the collectives in the order "
                                "tc-tune writes them)",
                                where, tc_coll_name(t->rule[t->nrules - 1].coll));
        }
    }
    while (*val != '\0') {
        size_t n = strcspn(val, " \t");
        tc_algo_rule_t *r = &t->rule[t->nrules];
        tc_status_t st;

        if (t->nrules == TC_ALGO_TUNING_RULES_MAX) {
            return tc_error_set(TC_ERR_CONFIG, "%s: more than %d rules in the file", where,
                                TC_ALGO_TUNING_RULES_MAX);
        }
        if ((st = tuning_rule_item(where, coll, val, n, r)) != TC_OK) {
            return st;
        }
        if (t->nrules > first && r->from_bytes <= r[-1].from_bytes) {
            return tc_error_set(TC_ERR_CONFIG,
                                "%s: %" PRIu64 " bytes after %" PRIu64 ": sizes must ascend", where,
                                r->from_bytes, r[-1].from_bytes);
        }
        t->nrules++;
        val += n;
        val += strspn(val, " \t");
    }
    return TC_OK;
}

tc_status_t tc_algo_rules_check(const char *name, const tc_algo_tuning_t *t)
{
    if (t->nrules > 0 && (t->ranks <= 0 || t->nodes <= 0 || t->ranks_per_node <= 0)) {
        return tc_error_set(TC_ERR_CONFIG,
                            "%s: rules without ranks, nodes and ranks_per_node (the shape they "
                            "were measured on, which they apply to)",
                            name);
    }
    return TC_OK;
}

tc_status_t tc_algo_rules_format(const tc_algo_tuning_t *t, char *buf, size_t len, size_t *pos_p)
{
    size_t pos = *pos_p;
    int i = 0;

    if (t->nrules < 0 || t->nrules > TC_ALGO_TUNING_RULES_MAX) {
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_algo_tuning_format: %d rules (at most %d)",
                            t->nrules, TC_ALGO_TUNING_RULES_MAX);
    }
    if (tc_algo_rules_check("tc_algo_tuning_format", t) != TC_OK) {
        return TC_ERR_INVALID_ARG;
    }
    while (i < t->nrules) {
        const tc_coll_t coll = t->rule[i].coll;
        const size_t line = pos;
        const tc_algo_desc_t *desc;
        int n;

        if ((unsigned)coll >= TC_COLL_COUNT || (i > 0 && coll < t->rule[i - 1].coll)) {
            return tc_error_set(TC_ERR_INVALID_ARG,
                                "tc_algo_tuning_format: rule %d: collectives out of order", i);
        }
        n = snprintf(buf + pos, len - pos, "%s%s =", TC_ALGO_RULE_PREFIX, tc_coll_name(coll));
        for (int first = i;
             n >= 0 && (size_t)n < len - pos && i < t->nrules && t->rule[i].coll == coll; i++) {
            const tc_algo_rule_t *r = &t->rule[i];
            if (memchr(r->algo, '\0', sizeof(r->algo)) == NULL ||
                tc_algo_find(coll, r->algo, &desc) != TC_OK ||
                (i > first && r->from_bytes <= r[-1].from_bytes)) {
                return tc_error_set(TC_ERR_INVALID_ARG,
                                    "tc_algo_tuning_format: rule %d: an unknown algorithm or "
                                    "sizes that do not ascend",
                                    i);
            }
            pos += (size_t)n;
            n = snprintf(buf + pos, len - pos, " %" PRIu64 ":%s", r->from_bytes, r->algo);
        }
        if (n < 0 || (size_t)n >= len - pos || len - pos - (size_t)n < 2) {
            return tc_error_set(TC_ERR_NO_RESOURCE, "tc_algo_tuning_format: %zu bytes are too few",
                                len);
        }
        pos += (size_t)n;
        buf[pos++] = '\n';
        buf[pos] = '\0';
        if (pos - line - 1 > TC_ALGO_TUNING_LINE_MAX) {
            return tc_error_set(TC_ERR_INVALID_ARG,
                                "tc_algo_tuning_format: the rules of %s need a line of %zu "
                                "bytes (at most %d)",
                                tc_coll_name(coll), pos - line - 1, TC_ALGO_TUNING_LINE_MAX);
        }
    }
    *pos_p = pos;
    return TC_OK;
}
