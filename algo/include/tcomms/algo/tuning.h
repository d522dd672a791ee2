/**
 * @file tuning.h
 * @brief The cost model fitted to a machine: the tuning file, where each
 *        parameter in effect comes from, and the least-squares fit.
 *
 * A tuning file (written by tools/tc-tune, read when TC_TUNING_FILE names it)
 * is text, version 2 (docs/tuning.md; version 1 files, without
 * overhead_us, are still read):
 *
 *     # comment
 *     tcomms_tuning = 2
 *     host = node0
 *     alpha_intra_us = 0.8
 *     beta_intra_us = 1.2e-4
 *
 * The first line that is neither blank nor a comment is `tcomms_tuning = 3`
 * (or 2, 1). Then `key = value` lines: the model parameters (alpha_intra_us,
 * alpha_inter_us, beta_intra_us, beta_inter_us, gamma_us, and from version 2
 * overhead_us; numbers in [0, 1e9], each optional), the descriptive keys host, date, ranks,
 * nodes, ranks_per_node, tool (text without control characters), and from
 * version 3 measured rules, one key per collective:
 *
 *     rule_all_reduce = 0:recursive_doubling 23170:rabenseifner
 *
 * (from 0 bytes recursive doubling, from 23170 bytes Rabenseifner; bytes as
 * tc_algo_args_bytes() counts them), which apply to communicators of the
 * shape that ranks, nodes and ranks_per_node give (required with rules) and
 * come before the model in tc_algo_select(). A key may appear once. Anything
 * else is refused with TC_ERR_CONFIG naming the file, the line and the key.
 */
#ifndef TCOMMS_ALGO_TUNING_H
#define TCOMMS_ALGO_TUNING_H

#include <stddef.h>
#include <stdint.h>

#include "tcomms/algo/schedule.h"
#include "tcomms/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief The version of the tuning file format this library reads and writes. */
#define TC_ALGO_TUNING_VERSION 3

/** @brief The oldest version this library still reads. */
#define TC_ALGO_TUNING_VERSION_MIN 1

/** @brief The model parameters, in the order of ::tc_algo_tuning_t's arrays. */
typedef enum tc_algo_param {
    TC_ALGO_PARAM_ALPHA_INTRA = 0, /**< alpha_us[0] */
    TC_ALGO_PARAM_ALPHA_INTER,     /**< alpha_us[1] */
    TC_ALGO_PARAM_BETA_INTRA,      /**< beta_us[0] */
    TC_ALGO_PARAM_BETA_INTER,      /**< beta_us[1] */
    TC_ALGO_PARAM_GAMMA,           /**< gamma_us */
    TC_ALGO_PARAM_OVERHEAD,        /**< o_us (file key overhead_us; version 2) */
    TC_ALGO_PARAM_COUNT
} tc_algo_param_t;

/** @brief Where a parameter in effect comes from. */
typedef enum tc_algo_param_src {
    TC_ALGO_SRC_DEFAULT = 0, /**< the built-in default */
    TC_ALGO_SRC_FILE,        /**< the tuning file (TC_TUNING_FILE) */
    TC_ALGO_SRC_ENV,         /**< its own variable (TC_ALGO_ALPHA_INTRA_US, ...) */
} tc_algo_param_src_t;

/** @brief Longest descriptive value kept (longer ones are refused). */
#define TC_ALGO_TUNING_TEXT_MAX 128

/** @brief Most rules a tuning file holds (over every collective). */
#define TC_ALGO_TUNING_RULES_MAX 128

/** @brief Longest algorithm name a rule holds, with its NUL. */
#define TC_ALGO_RULE_NAME_MAX 32

/**
 * @brief One measured rule: from @p from_bytes on (up to the next rule of the
 *        collective), @p algo was the fastest on the shape the file describes.
 */
typedef struct tc_algo_rule {
    tc_coll_t coll;                   /**< the collective */
    uint64_t from_bytes;              /**< first size it covers (tc_algo_args_bytes()) */
    char algo[TC_ALGO_RULE_NAME_MAX]; /**< an algorithm of @p coll (the registry's name) */
} tc_algo_rule_t;

/** @brief The contents of a tuning file. */
typedef struct tc_algo_tuning {
    int version;                        /**< the file's version (1 or 2) */
    double value[TC_ALGO_PARAM_COUNT];  /**< parameters, indexed by ::tc_algo_param_t */
    int has[TC_ALGO_PARAM_COUNT];       /**< whether the file sets each */
    char host[TC_ALGO_TUNING_TEXT_MAX]; /**< where it was measured, or "" */
    char date[TC_ALGO_TUNING_TEXT_MAX]; /**< when (UTC, ISO 8601), or "" */
    char tool[TC_ALGO_TUNING_TEXT_MAX]; /**< what wrote it, or "" */
    int ranks;                          /**< ranks of the job measured on, or 0 */
    int nodes;                          /**< its nodes, or 0 */
    int ranks_per_node;                 /**< its ranks per node (largest), or 0 */
    int nrules;                         /**< rules in @p rule (version 3) */
    /** the rules, by collective (tc_coll_t order) then size, ascending */
    tc_algo_rule_t rule[TC_ALGO_TUNING_RULES_MAX];
} tc_algo_tuning_t;

/** @brief The parameters in effect and the source of each. */
typedef struct tc_algo_model_info {
    tc_algo_model_t model;                           /**< the values */
    tc_algo_param_src_t source[TC_ALGO_PARAM_COUNT]; /**< where each comes from */
    char file[256];                                  /**< TC_TUNING_FILE, or "" when not set */
    tc_algo_tuning_t tuning;                         /**< the file's contents (zero when no file) */
} tc_algo_model_info_t;

/**
 * @brief The key of @p param in a tuning file ("alpha_intra_us", ...).
 * @param param the parameter.
 * @return NULL for a value out of range.
 */
const char *tc_algo_param_key(tc_algo_param_t param);

/**
 * @brief The environment variable of @p param ("TC_ALGO_ALPHA_INTRA_US", ...).
 * @param param the parameter.
 * @return NULL for a value out of range.
 */
const char *tc_algo_param_env(tc_algo_param_t param);

/**
 * @brief The built-in default of @p param.
 * @param param the parameter.
 * @return 0 for a value out of range.
 */
double tc_algo_param_default(tc_algo_param_t param);

/**
 * @brief The value of @p param in @p model.
 * @param model the parameters.
 * @param param the parameter.
 * @return 0 for a value out of range.
 */
double tc_algo_model_param(const tc_algo_model_t *model, tc_algo_param_t param);

/**
 * @brief The name of a source.
 * @param src the source.
 * @return "default", "file" or "env".
 */
const char *tc_algo_param_src_name(tc_algo_param_src_t src);

/**
 * @brief Parse the bytes of a tuning file.
 * @param text the bytes (need not end with NUL; a NUL byte inside is refused).
 * @param len their number.
 * @param name names the source in error messages (a path).
 * @param tuning receives the contents on success.
 * @return TC_OK; TC_ERR_CONFIG with "NAME:LINE: ..." naming the key for a
 *         missing or wrong header, a malformed line, an unknown or repeated
 *         key, a value that is not a number or out of range, a line longer
 *         than 1023 bytes, a NUL byte; TC_ERR_INVALID_ARG for NULL pointers.
 */
tc_status_t tc_algo_tuning_parse(const char *text, size_t len, const char *name,
                                 tc_algo_tuning_t *tuning);

/**
 * @brief Read and parse the tuning file @p path.
 * @param path the file.
 * @param tuning receives the contents on success.
 * @return TC_OK; TC_ERR_CONFIG for a file that cannot be read (with the
 *         errno text), one larger than 64 KiB, or bad contents (see
 *         tc_algo_tuning_parse()).
 */
tc_status_t tc_algo_tuning_load(const char *path, tc_algo_tuning_t *tuning);

/**
 * @brief Write @p tuning as the text of a tuning file (what parse reads back
 *        to the same values: numbers with 17 significant digits).
 * @param tuning the contents.
 * @param buf receives the text, NUL-terminated.
 * @param len bytes of @p buf.
 * @param len_p receives the length of the text (may be NULL).
 * @return TC_OK; TC_ERR_INVALID_ARG for a value parse would refuse (out of
 *         range, text with control characters or too long) or NULL pointers;
 *         TC_ERR_NO_RESOURCE when @p len is too small.
 */
tc_status_t tc_algo_tuning_format(const tc_algo_tuning_t *tuning, char *buf, size_t len,
                                  size_t *len_p);

/**
 * @brief The cost-model parameters in effect: the default, replaced by the
 *        tuning file's value (TC_TUNING_FILE) when it sets one, replaced by
 *        the parameter's own variable when set. tc_algo_model_get() is this
 *        without the sources.
 * @param info receives the parameters and their sources on success.
 * @return TC_OK; TC_ERR_CONFIG for a malformed variable, or a tuning file
 *         that cannot be read or is malformed (the detail names the file,
 *         the line and the key); TC_ERR_INVALID_ARG for a NULL @p info.
 */
tc_status_t tc_algo_model_info(tc_algo_model_info_t *info);

/**
 * @brief The size of a call as the rules and tcperf count it, in bytes: the
 *        vector (all_reduce, reduce, broadcast), the gathered buffer
 *        (all_gather, gather), the input (reduce_scatter, scatter), all that a
 *        rank sends (all_to_all); the sum of the blocks for the v-variants;
 *        0 for barrier.
 * @param args the call (not checked: a valid collective and rank count).
 * @param elem_size bytes per element.
 * @return the bytes.
 */
uint64_t tc_algo_args_bytes(const tc_algo_args_t *args, size_t elem_size);

/**
 * @brief The rule of @p tuning that covers a call, if any: the file's shape
 *        (ranks, nodes, ranks_per_node) is the communicator's, and a rule of
 *        the collective starts at or below the call's size.
 * @param tuning the file's contents.
 * @param args the call.
 * @param elem_size bytes per element.
 * @return the rule (its last one starting at or below the size), or NULL.
 */
const tc_algo_rule_t *tc_algo_rule_find(const tc_algo_tuning_t *tuning, const tc_algo_args_t *args,
                                        size_t elem_size);

/**
 * @brief Fit t = alpha + beta x to measurements, in two least-squares steps.
 *
 * beta is the ordinary least-squares slope over every point (absolute error:
 * the largest sizes decide it); alpha is the intercept with that slope in
 * relative error (weights 1 / t^2) over the points the latency dominates
 * (beta x <= t / 2), or the smallest size's t - beta x when there is none.
 * Both are clamped at 0. Exact on affine data; on a link that is not affine
 * (a burst allowance, a protocol switch) beta is the large messages' rate and
 * alpha the small messages' latency, which is what selection needs.
 * @param x the sizes (bytes), at least two distinct.
 * @param t the times (> 0), as many.
 * @param n the number of points.
 * @param alpha_p receives the intercept.
 * @param beta_p receives the slope.
 * @return TC_OK; TC_ERR_INVALID_ARG for n < 2, fewer than two distinct
 *         sizes, a time that is not positive and finite, or NULL pointers.
 */
tc_status_t tc_algo_fit_line(const double *x, const double *t, size_t n, double *alpha_p,
                             double *beta_p);

#ifdef __cplusplus
}
#endif

#endif /* TCOMMS_ALGO_TUNING_H */
