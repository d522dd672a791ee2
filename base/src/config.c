/* Typed configuration: parsing values, TC_* environment variables and hints. */
#include "tcomms/base/config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define TC_SIZE_ACCEPTED "digits with optional K, M, G, T suffix"
#define TC_BOOL_ACCEPTED "1, 0, true, false, yes, no, on, off"

static const char *tc_what(const char *what)
{
    return what != NULL ? what : "value";
}

tc_status_t tc_parse_int(const char *what, const char *text, int64_t min, int64_t max,
                         int64_t *value_p)
{
    const char *p;
    char *end;
    long long v;

    if (text == NULL || value_p == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_parse_int(%s): NULL %s", tc_what(what),
                            text == NULL ? "text" : "value_p");
    /* Only an optional sign and decimal digits: strtoll alone would accept
     * leading blanks, and "" or "-" as zero. */
    p = text;
    if (*p == '+' || *p == '-')
        p++;
    if (*p == '\0')
        goto malformed;
    for (const char *q = p; *q != '\0'; q++)
        if (!isdigit((unsigned char)*q))
            goto malformed;
    errno = 0;
    v = strtoll(text, &end, 10);
    if (errno == ERANGE || v < min || v > max)
        return tc_error_set(TC_ERR_CONFIG,
                            "%s=\"" TC_ECHO_FMT "\": out of range (accepted: integers in [%" PRId64
                            ", %" PRId64 "])",
                            tc_what(what), TC_ECHO(text), min, max);
    if (*end != '\0')
        goto malformed;
    *value_p = (int64_t)v;
    return TC_OK;

malformed:
    return tc_error_set(TC_ERR_CONFIG,
                        "%s=\"" TC_ECHO_FMT "\": not an integer (accepted: integers in [%" PRId64
                        ", %" PRId64 "])",
                        tc_what(what), TC_ECHO(text), min, max);
}

/* The power-of-1024 shift of a size suffix ("", "B", "K", "KB", "KiB" in any case), or -1. */
static int tc_size_suffix_shift(const char *s)
{
    static const char units[] = "KMGT";
    const char *u;
    int shift = 0;

    if (*s == '\0')
        return 0;
    u = strchr(units, toupper((unsigned char)*s));
    if (u != NULL) {
        shift = 10 * (int)(u - units + 1);
        s++;
        if (*s == 'i' || *s == 'I') {
            s++;
            if (*s != 'B' && *s != 'b')
                return -1;
        }
    }
    if (*s == 'B' || *s == 'b')
        s++;
    return *s == '\0' ? shift : -1;
}

tc_status_t tc_parse_size(const char *what, const char *text, uint64_t *value_p)
{
    const char *p;
    uint64_t v = 0;
    int shift;

    if (text == NULL || value_p == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_parse_size(%s): NULL %s", tc_what(what),
                            text == NULL ? "text" : "value_p");
    p = text;
    if (!isdigit((unsigned char)*p))
        goto malformed;
    for (; isdigit((unsigned char)*p); p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            goto overflow;
        v = v * 10 + d;
    }
    shift = tc_size_suffix_shift(p);
    if (shift < 0)
        goto malformed;
    if (shift > 0 && v > (UINT64_MAX >> shift))
        goto overflow;
    *value_p = v << shift;
    return TC_OK;

malformed:
    return tc_error_set(TC_ERR_CONFIG,
                        "%s=\"" TC_ECHO_FMT "\": not a size (accepted: " TC_SIZE_ACCEPTED ")",
                        tc_what(what), TC_ECHO(text));
overflow:
    return tc_error_set(TC_ERR_CONFIG,
                        "%s=\"" TC_ECHO_FMT "\": too large (accepted: " TC_SIZE_ACCEPTED
                        ", at most %" PRIu64 " bytes)",
                        tc_what(what), TC_ECHO(text), UINT64_MAX);
}

tc_status_t tc_parse_bool(const char *what, const char *text, bool *value_p)
{
    static const char *const yes[] = {"1", "true", "yes", "on"};
    static const char *const no[] = {"0", "false", "no", "off"};

    if (text == NULL || value_p == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_parse_bool(%s): NULL %s", tc_what(what),
                            text == NULL ? "text" : "value_p");
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcasecmp(text, yes[i]) == 0) {
            *value_p = true;
            return TC_OK;
        }
        if (strcasecmp(text, no[i]) == 0) {
            *value_p = false;
            return TC_OK;
        }
    }
    return tc_error_set(TC_ERR_CONFIG,
                        "%s=\"" TC_ECHO_FMT "\": not a boolean (accepted: " TC_BOOL_ACCEPTED ")",
                        tc_what(what), TC_ECHO(text));
}

tc_status_t tc_parse_double(const char *what, const char *text, double min, double max,
                            double *value_p)
{
    char *end;
    double v;

    if (text == NULL || value_p == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_parse_double(%s): NULL %s", tc_what(what),
                            text == NULL ? "text" : "value_p");
    errno = 0;
    v = strtod(text, &end);
    /* decimal only: strtod alone takes "0x10" as 16, and leading blanks */
    if (end == text || *end != '\0' || text[strspn(text, "+-0123456789.eE")] != '\0' ||
        !isfinite(v))
        return tc_error_set(TC_ERR_CONFIG,
                            "%s=\"" TC_ECHO_FMT
                            "\": not a finite number (accepted: numbers in [%g, %g])",
                            tc_what(what), TC_ECHO(text), min, max);
    if (errno == ERANGE || v < min || v > max)
        return tc_error_set(TC_ERR_CONFIG,
                            "%s=\"" TC_ECHO_FMT "\": out of range (accepted: numbers in [%g, %g])",
                            tc_what(what), TC_ECHO(text), min, max);
    *value_p = v;
    return TC_OK;
}

tc_status_t tc_parse_enum(const char *what, const char *text, const char *const *choices,
                          int *value_p)
{
    char list[512];
    size_t used = 0;

    if (text == NULL || choices == NULL || value_p == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_parse_enum(%s): NULL %s", tc_what(what),
                            text == NULL      ? "text"
                            : choices == NULL ? "choices"
                                              : "value_p");
    for (int i = 0; choices[i] != NULL; i++) {
        if (strcasecmp(text, choices[i]) == 0) {
            *value_p = i;
            return TC_OK;
        }
    }
    list[0] = '\0';
    for (int i = 0; choices[i] != NULL && used < sizeof(list); i++) {
        int n = snprintf(list + used, sizeof(list) - used, "%s%s", i > 0 ? ", " : "", choices[i]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    return tc_error_set(TC_ERR_CONFIG, "%s=\"" TC_ECHO_FMT "\": unknown value (accepted: %s)",
                        tc_what(what), TC_ECHO(text), list);
}

/* ---- environment ---- */

tc_status_t tc_config_int(const char *name, int64_t def, int64_t min, int64_t max, int64_t *value_p)
{
    const char *text;

    if (name == NULL || value_p == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: NULL %s", __func__,
                            name == NULL ? "name" : "value_p");
    text = getenv(name);
    if (text == NULL) {
        *value_p = def;
        return TC_OK;
    }
    return tc_parse_int(name, text, min, max, value_p);
}

tc_status_t tc_config_size(const char *name, uint64_t def, uint64_t *value_p)
{
    const char *text;

    if (name == NULL || value_p == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: NULL %s", __func__,
                            name == NULL ? "name" : "value_p");
    text = getenv(name);
    if (text == NULL) {
        *value_p = def;
        return TC_OK;
    }
    return tc_parse_size(name, text, value_p);
}

tc_status_t tc_config_bool(const char *name, bool def, bool *value_p)
{
    const char *text;

    if (name == NULL || value_p == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: NULL %s", __func__,
                            name == NULL ? "name" : "value_p");
    text = getenv(name);
    if (text == NULL) {
        *value_p = def;
        return TC_OK;
    }
    return tc_parse_bool(name, text, value_p);
}

tc_status_t tc_config_double(const char *name, double def, double min, double max, double *value_p)
{
    const char *text;

    if (name == NULL || value_p == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: NULL %s", __func__,
                            name == NULL ? "name" : "value_p");
    text = getenv(name);
    if (text == NULL) {
        *value_p = def;
        return TC_OK;
    }
    return tc_parse_double(name, text, min, max, value_p);
}

tc_status_t tc_config_enum(const char *name, const char *const *choices, int def, int *value_p)
{
    const char *text;

    if (name == NULL || value_p == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: NULL %s", __func__,
                            name == NULL ? "name" : "value_p");
    text = getenv(name);
    if (text == NULL) {
        *value_p = def;
        return TC_OK;
    }
    return tc_parse_enum(name, text, choices, value_p);
}

const char *tc_config_string(const char *name, const char *def)
{
    const char *text = name != NULL ? getenv(name) : NULL;

    return text != NULL ? text : def;
}

/* ---- hints ---- */

void tc_hints_init(tc_hints_t *hints)
{
    memset(hints, 0, sizeof(*hints));
} // NOLINT(clang-analyzer-unix.Malloc): none leaks, the analyzer misses that i < count

static bool tc_hint_key_valid(const char *key, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)key[i];
        if (!isalnum(c) && c != '_' && c != '.' && c != '-')
            return false;
    }
    return true;
}

static int tc_hints_find(const tc_hints_t *hints, const char *key)
{
    for (int i = 0; i < hints->count; i++)
        if (strcmp(hints->keys[i], key) == 0)
            return i;
    return -1;
}

tc_status_t tc_hints_set(tc_hints_t *hints, const char *key, const char *value)
{
    char *k = NULL, *v = NULL;
    int i;

    if (hints == NULL || key == NULL || value == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_hints_set: NULL %s",
                            hints == NULL ? "hints"
                            : key == NULL ? "key"
                                          : "value");
    if (!tc_hint_key_valid(key, strlen(key)))
        return tc_error_set(TC_ERR_CONFIG,
                            "hint key \"" TC_ECHO_FMT "\" is malformed (accepted: [A-Za-z0-9_.-]+)",
                            TC_ECHO(key));
    i = tc_hints_find(hints, key);
    if (i < 0 && hints->count >= TC_HINTS_MAX)
        return tc_error_set(TC_ERR_NO_RESOURCE, "hint '%s': the set is full (%d hints at most)",
                            key, TC_HINTS_MAX);
    v = strdup(value);
    if (v == NULL)
        return tc_error_set(TC_ERR_NO_MEMORY, "hint '%s': strdup of its value failed", key);
    if (i >= 0) {
        free(hints->values[i]);
        hints->values[i] = v;
        return TC_OK;
    }
    k = strdup(key);
    if (k == NULL) {
        free(v);
        return tc_error_set(TC_ERR_NO_MEMORY, "hint '%s': strdup of its key failed", key);
    }
    hints->keys[hints->count] = k;
    hints->values[hints->count] = v;
    hints->count++;
    return TC_OK;
}

/* TC_ECHO of the span [s, e). */
#define ECHO_SPAN(s, e)                                                                            \
    (int)((e) - (s) > TC_ECHO_MAX ? TC_ECHO_MAX : (e) - (s)), (s),                                 \
        ((e) - (s) > TC_ECHO_MAX ? "..." : "")

/* [*s, *e) without surrounding whitespace. */
static void tc_trim(const char **s, const char **e)
{
    while (*s < *e && isspace((unsigned char)**s))
        (*s)++;
    while (*e > *s && isspace((unsigned char)(*e)[-1]))
        (*e)--;
}

tc_status_t tc_hints_parse(tc_hints_t *hints, const char *text)
{
    tc_hints_t tmp;
    char *item = NULL;
    const char *p;
    tc_status_t st;

    if (hints == NULL || text == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_hints_parse: NULL %s",
                            hints == NULL ? "hints" : "text");
    /* Work on a copy so that the set is unchanged when an item is malformed. */
    tc_hints_t seen; /* the keys of this text so far */
    tc_hints_init(&seen);
    st = tc_hints_copy(&tmp, hints);
    if (st != TC_OK)
        return st;
    item = malloc(strlen(text) + 1);
    if (item == NULL) {
        st = tc_error_set(TC_ERR_NO_MEMORY, "tc_hints_parse: malloc of %zu bytes failed",
                          strlen(text) + 1);
        goto out_tmp;
    }
    p = text;
    for (;;) {
        const char *end = strchr(p, ',');
        const char *s = p, *e = end != NULL ? end : p + strlen(p);
        const char *eq, *ks, *ke, *vs, *ve;

        tc_trim(&s, &e);
        if (s < e) {
            eq = memchr(s, '=', (size_t)(e - s));
            if (eq == NULL) {
                st = tc_error_set(TC_ERR_CONFIG,
                                  "hints \"" TC_ECHO_FMT "\": item \"" TC_ECHO_FMT
                                  "\" is not key=value",
                                  TC_ECHO(text), ECHO_SPAN(s, e));
                goto out_item;
            }
            ks = s;
            ke = eq;
            vs = eq + 1;
            ve = e;
            tc_trim(&ks, &ke);
            tc_trim(&vs, &ve);
            if (!tc_hint_key_valid(ks, (size_t)(ke - ks))) {
                st = tc_error_set(TC_ERR_CONFIG,
                                  "hints \"" TC_ECHO_FMT "\": item \"" TC_ECHO_FMT
                                  "\" has a malformed key (accepted: [A-Za-z0-9_.-]+)",
                                  TC_ECHO(text), ECHO_SPAN(s, e));
                goto out_item;
            }
            /* key and value into one scratch buffer: "key\0value\0" */
            memcpy(item, ks, (size_t)(ke - ks));
            item[ke - ks] = '\0';
            memcpy(item + (ke - ks) + 1, vs, (size_t)(ve - vs));
            item[(ke - ks) + 1 + (ve - vs)] = '\0';
            /* a key twice in one text: which one was meant is not known (a set given before,
             * e.g. the communicator's, is replaced on purpose) */
            if (tc_hints_get(&seen, item) != NULL) {
                st = tc_error_set(TC_ERR_CONFIG,
                                  "hints \"" TC_ECHO_FMT "\": key \"" TC_ECHO_FMT
                                  "\" is given twice",
                                  TC_ECHO(text), TC_ECHO(item));
                goto out_item;
            }
            st = tc_hints_set(&seen, item, "");
            if (st == TC_OK)
                st = tc_hints_set(&tmp, item, item + (ke - ks) + 1);
            if (st != TC_OK) {
                tc_error_prefix("hints \"%s\": ", text);
                goto out_item;
            }
        }
        if (end == NULL)
            break;
        p = end + 1;
    }
    free(item);
    tc_hints_free(&seen);
    tc_hints_free(hints);
    *hints = tmp;
    return TC_OK;

out_item:
    free(item);
    tc_hints_free(&seen);
out_tmp:
    tc_hints_free(&tmp);
    return st;
}

const char *tc_hints_get(const tc_hints_t *hints, const char *key)
{
    int i;

    if (hints == NULL || key == NULL)
        return NULL;
    i = tc_hints_find(hints, key);
    return i >= 0 ? hints->values[i] : NULL;
}

tc_status_t tc_hints_copy(tc_hints_t *dst, const tc_hints_t *src)
{
    if (dst == NULL || src == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_hints_copy: NULL %s",
                            dst == NULL ? "dst" : "src");
    tc_hints_init(dst);
    for (int i = 0; i < src->count; i++) {
        tc_status_t st = tc_hints_set(dst, src->keys[i], src->values[i]);
        if (st != TC_OK) {
            tc_hints_free(dst);
            return st;
        }
    }
    return TC_OK;
}

void tc_hints_free(tc_hints_t *hints)
{
    if (hints == NULL)
        return;
    for (int i = 0; i < hints->count; i++) {
        free(hints->keys[i]);
        free(hints->values[i]);
    }
    tc_hints_init(hints);
}

/* "hint 'key'" names the source of a hint in error messages. */
static void tc_hint_what(char *buf, size_t len, const char *key)
{
    snprintf(buf, len, "hint '%s'", key);
}

tc_status_t tc_hints_int(const tc_hints_t *hints, const char *key, int64_t def, int64_t min,
                         int64_t max, int64_t *value_p)
{
    const char *text = tc_hints_get(hints, key);
    char what[160];

    if (value_p == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: NULL value_p", __func__);
    if (text == NULL) {
        *value_p = def;
        return TC_OK;
    }
    tc_hint_what(what, sizeof(what), key);
    return tc_parse_int(what, text, min, max, value_p);
}

tc_status_t tc_hints_size(const tc_hints_t *hints, const char *key, uint64_t def, uint64_t *value_p)
{
    const char *text = tc_hints_get(hints, key);
    char what[160];

    if (value_p == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: NULL value_p", __func__);
    if (text == NULL) {
        *value_p = def;
        return TC_OK;
    }
    tc_hint_what(what, sizeof(what), key);
    return tc_parse_size(what, text, value_p);
}

tc_status_t tc_hints_bool(const tc_hints_t *hints, const char *key, bool def, bool *value_p)
{
    const char *text = tc_hints_get(hints, key);
    char what[160];

    if (value_p == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "%s: NULL value_p", __func__);
    if (text == NULL) {
        *value_p = def;
        return TC_OK;
    }
    tc_hint_what(what, sizeof(what), key);
    return tc_parse_bool(what, text, value_p);
}
