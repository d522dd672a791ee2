/**
 * @file config.h
 * @brief Typed configuration from TC_* environment variables and string hints.
 *
 * A value that is set but malformed is always an error (TC_ERR_CONFIG) whose
 * detail names the variable or hint, the value given and the accepted values.
 * An unset variable gives the default. Parsing is separate from lookup, so the
 * same rules apply to the environment and to hints.
 */
#ifndef TCOMMS_BASE_CONFIG_H
#define TCOMMS_BASE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tcomms/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief A value given by the caller, echoed in an error detail: "..." TC_ECHO_FMT "..." with
 * TC_ECHO(s) prints at most TC_ECHO_MAX bytes of @p s, then "..." when it is longer, so that a
 * long value (a 10 KB hint) does not push what the detail says after it (the accepted values)
 * out of the detail's 2 KB.
 */
#define TC_ECHO_MAX 64
#define TC_ECHO_FMT "%.*s%s"
#define TC_ECHO(s)                                                                                 \
    (int)strnlen((s), TC_ECHO_MAX), (s), ((s)[strnlen((s), TC_ECHO_MAX)] ? "..." : "")

/* ---- parsing one value; @p what names its source in error messages ---- */

/** @brief A decimal integer in [min, max]. */
tc_status_t tc_parse_int(const char *what, const char *text, int64_t min, int64_t max,
                         int64_t *value_p);

/** @brief A byte size: digits with an optional K, M, G, T (powers of 1024; "KiB", "k" too). */
tc_status_t tc_parse_size(const char *what, const char *text, uint64_t *value_p);

/** @brief A boolean: 1/0, true/false, yes/no, on/off (any case). */
tc_status_t tc_parse_bool(const char *what, const char *text, bool *value_p);

/** @brief A finite floating-point number in [min, max]. */
tc_status_t tc_parse_double(const char *what, const char *text, double min, double max,
                            double *value_p);

/**
 * @brief One of a NULL-terminated list of names (case-insensitive).
 * @param value_p index of the match; on error the detail lists every choice.
 */
tc_status_t tc_parse_enum(const char *what, const char *text, const char *const *choices,
                          int *value_p);

/* ---- the environment: @p name is the full variable name, e.g. "TC_TIMEOUT_S" ---- */

tc_status_t tc_config_int(const char *name, int64_t def, int64_t min, int64_t max,
                          int64_t *value_p);
tc_status_t tc_config_size(const char *name, uint64_t def, uint64_t *value_p);
tc_status_t tc_config_bool(const char *name, bool def, bool *value_p);
tc_status_t tc_config_double(const char *name, double def, double min, double max,
                             double *value_p);
tc_status_t tc_config_enum(const char *name, const char *const *choices, int def, int *value_p);
/** @brief The raw string, or @p def when unset (an empty value counts as set). */
const char *tc_config_string(const char *name, const char *def);

/* ---- hints: "key=value" pairs ---- */

/** @brief Most hints one set holds. */
#define TC_HINTS_MAX 32

/** @brief A small set of string key/value hints (copied, owned by the set). */
typedef struct tc_hints {
    int count;                  /**< number of pairs */
    char *keys[TC_HINTS_MAX];   /**< keys */
    char *values[TC_HINTS_MAX]; /**< values */
} tc_hints_t;

/** @brief An empty set. */
void tc_hints_init(tc_hints_t *hints);

/** @brief Set (or replace) one hint. Keys are [A-Za-z0-9_.-]+. */
tc_status_t tc_hints_set(tc_hints_t *hints, const char *key, const char *value);

/**
 * @brief Add the pairs of "k1=v1,k2=v2" (whitespace around items ignored); a key already in
 *        the set is replaced.
 * @return TC_ERR_CONFIG naming the malformed item, or a key given twice in @p text; the set is
 *         unchanged then.
 */
tc_status_t tc_hints_parse(tc_hints_t *hints, const char *text);

/** @brief The value of @p key, or NULL. */
const char *tc_hints_get(const tc_hints_t *hints, const char *key);

/** @brief Copy @p src into an empty @p dst. */
tc_status_t tc_hints_copy(tc_hints_t *dst, const tc_hints_t *src);

/** @brief Free the strings of the set and empty it. */
void tc_hints_free(tc_hints_t *hints);

/* Typed hint lookups: @p def when the key is absent, TC_ERR_CONFIG when malformed. */
tc_status_t tc_hints_int(const tc_hints_t *hints, const char *key, int64_t def, int64_t min,
                         int64_t max, int64_t *value_p);
tc_status_t tc_hints_size(const tc_hints_t *hints, const char *key, uint64_t def,
                          uint64_t *value_p);
tc_status_t tc_hints_bool(const tc_hints_t *hints, const char *key, bool def, bool *value_p);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_BASE_CONFIG_H */
