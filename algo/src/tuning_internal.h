/* The tuning file's rules (tuning_rules.c), for its parser and formatter
 * (tuning_file.c). Not public. */
#ifndef TCOMMS_ALGO_SRC_TUNING_INTERNAL_H
#define TCOMMS_ALGO_SRC_TUNING_INTERNAL_H

#include <stddef.h>

#include "tcomms/algo/tuning.h"

/* Longest line of a tuning file, without its newline. */
#define TC_ALGO_TUNING_LINE_MAX 1023

/* Keys of rules: the prefix, then the collective's name. */
#define TC_ALGO_RULE_PREFIX "rule_"

/* Parse the value of key "rule_COLL" (trimmed) of line @p line into @p t. */
tc_status_t tc_algo_rules_parse(const char *name, unsigned line, const char *key, const char *val,
                                tc_algo_tuning_t *t);

/* After the last line: rules need the shape keys. */
tc_status_t tc_algo_rules_check(const char *name, const tc_algo_tuning_t *t);

/* Append the rule lines at buf + *pos_p (len bytes in all); *pos_p advances. */
tc_status_t tc_algo_rules_format(const tc_algo_tuning_t *t, char *buf, size_t len, size_t *pos_p);

#endif /* TCOMMS_ALGO_SRC_TUNING_INTERNAL_H */
