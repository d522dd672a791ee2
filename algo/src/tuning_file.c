/*
 * The tuning file (tcomms/algo/tuning.h, docs/tuning.md): parse, load and
 * format. The parser reads bytes a user or a tool wrote: every line is
 * checked, and every refusal names the file, the line and the key.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tcomms/algo/tuning.h"
#include "tcomms/base/config.h"
#include "tuning_internal.h"

#define TUNING_LINE_MAX TC_ALGO_TUNING_LINE_MAX
#define TUNING_FILE_MAX 65536L
#define TUNING_VALUE_MAX 1e9

static const struct {
    const char *key;
    const char *env;
    double def;
} tuning_params[TC_ALGO_PARAM_COUNT] = {
    {"alpha_intra_us", "TC_ALGO_ALPHA_INTRA_US", 0.5},
    {"alpha_inter_us", "TC_ALGO_ALPHA_INTER_US", 3.0},
    {"beta_intra_us", "TC_ALGO_BETA_INTRA_US", 5e-5}, /* 20 GB/s */
    {"beta_inter_us", "TC_ALGO_BETA_INTER_US", 8e-5}, /* 12.5 GB/s */
    {"gamma_us", "TC_ALGO_GAMMA_US", 1e-4},           /* 10 GB/s */
    /* = the default alpha_inter_us: unmeasured, a burst's messages cost a
     * latency each (min(o, alpha) in cost.c), as before o existed */
    {"overhead_us", "TC_ALGO_OVERHEAD_US", 3.0},
};

/* The descriptive keys, after the parameters in the "seen" numbering. */
enum { KEY_HOST = TC_ALGO_PARAM_COUNT, KEY_DATE, KEY_TOOL, KEY_RANKS, KEY_NODES, KEY_RPN, NKEYS };
static const char *const tuning_desc_keys[NKEYS - TC_ALGO_PARAM_COUNT] = {
    "host", "date", "tool", "ranks", "nodes", "ranks_per_node"};

const char *tc_algo_param_key(tc_algo_param_t param)
{
    return (unsigned)param < TC_ALGO_PARAM_COUNT ? tuning_params[param].key : NULL;
}

const char *tc_algo_param_env(tc_algo_param_t param)
{
    return (unsigned)param < TC_ALGO_PARAM_COUNT ? tuning_params[param].env : NULL;
}

double tc_algo_param_default(tc_algo_param_t param)
{
    return (unsigned)param < TC_ALGO_PARAM_COUNT ? tuning_params[param].def : 0.0;
}

const char *tc_algo_param_src_name(tc_algo_param_src_t src)
{
    switch (src) {
    case TC_ALGO_SRC_FILE:
        return "file";
    case TC_ALGO_SRC_ENV:
        return "env";
    default:
        return "default";
    }
}

static int tuning_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* Text values: printable, no control characters, shorter than the field. */
static tc_status_t tuning_text(const char *name, unsigned line, const char *key, const char *v,
                               char *dst)
{
    size_t n = strlen(v);
    if (n >= TC_ALGO_TUNING_TEXT_MAX)
        return tc_error_set(TC_ERR_CONFIG, "%s:%u: %s: a value of %zu bytes (at most %d)", name,
                            line, key, n, TC_ALGO_TUNING_TEXT_MAX - 1);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)v[i] < 0x20 || (unsigned char)v[i] == 0x7f)
            return tc_error_set(TC_ERR_CONFIG,
                                "%s:%u: %s: control character 0x%02x at byte %zu of the value",
                                name, line, key, (unsigned char)v[i], i);
    memcpy(dst, v, n + 1);
    return TC_OK;
}

/* One "key = value" line (key and value trimmed, NUL-terminated). */
static tc_status_t tuning_pair(const char *name, unsigned line, const char *key, const char *val,
                               unsigned *seen, tc_algo_tuning_t *t)
{
    char what[TUNING_LINE_MAX + 64];
    int k;
    tc_status_t st;
    int64_t iv;

    if (strncmp(key, TC_ALGO_RULE_PREFIX, strlen(TC_ALGO_RULE_PREFIX)) == 0)
        return tc_algo_rules_parse(name, line, key, val, t);
    for (k = 0; k < NKEYS; k++) {
        const char *kk = k < TC_ALGO_PARAM_COUNT ? tuning_params[k].key
                                                 : tuning_desc_keys[k - TC_ALGO_PARAM_COUNT];
        if (strcmp(kk, key) == 0)
            break;
    }
    if (k == NKEYS)
        return tc_error_set(TC_ERR_CONFIG,
                            "%s:%u: unknown key \"%s\" (accepted: alpha_intra_us, "
                            "alpha_inter_us, beta_intra_us, beta_inter_us, gamma_us, "
                            "overhead_us, host, date, tool, ranks, nodes, ranks_per_node, "
                            "rule_COLLECTIVE)",
                            name, line, key);
    if (k == TC_ALGO_PARAM_OVERHEAD && t->version < 2)
        return tc_error_set(TC_ERR_CONFIG,
                            "%s:%u: key \"%s\" needs \"tcomms_tuning = 2\" (the file says %d)",
                            name, line, key, t->version);
    if (*seen & (1u << k))
        return tc_error_set(TC_ERR_CONFIG, "%s:%u: key \"%s\" given a second time", name, line,
                            key);
    *seen |= 1u << k;
    snprintf(what, sizeof(what), "%s:%u: %s", name, line, key);
    if (k < TC_ALGO_PARAM_COUNT) {
        st = tc_parse_double(what, val, 0.0, TUNING_VALUE_MAX, &t->value[k]);
        t->has[k] = st == TC_OK;
        return st;
    }
    switch (k) {
    case KEY_HOST:
        return tuning_text(name, line, key, val, t->host);
    case KEY_DATE:
        return tuning_text(name, line, key, val, t->date);
    case KEY_TOOL:
        return tuning_text(name, line, key, val, t->tool);
    default:
        break;
    }
    if ((st = tc_parse_int(what, val, 1, 1 << 24, &iv)) != TC_OK)
        return st;
    if (k == KEY_RANKS)
        t->ranks = (int)iv;
    else if (k == KEY_NODES)
        t->nodes = (int)iv;
    else
        t->ranks_per_node = (int)iv;
    return TC_OK;
}

/* One line (without its '\n'); *header_p: the version line was seen. */
static tc_status_t tuning_line(const char *name, unsigned line, char *s, int *header_p,
                               unsigned *seen, tc_algo_tuning_t *t)
{
    char *end = s + strlen(s), *eq, *key, *val, *k_end;
    int64_t version;

    while (tuning_blank(*s))
        s++;
    while (end > s && tuning_blank(end[-1]))
        *--end = '\0';
    if (*s == '\0' || *s == '#')
        return TC_OK;
    eq = strchr(s, '=');
    if (eq == NULL)
        return tc_error_set(TC_ERR_CONFIG, "%s:%u: \"%.64s\" is not \"key = value\"", name, line,
                            s);
    key = s;
    k_end = eq;
    while (k_end > key && tuning_blank(k_end[-1]))
        k_end--;
    *k_end = '\0';
    val = eq + 1;
    while (tuning_blank(*val))
        val++;
    if (*key == '\0')
        return tc_error_set(TC_ERR_CONFIG, "%s:%u: no key before \"=\"", name, line);
    for (const char *c = key; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_'))
            return tc_error_set(TC_ERR_CONFIG,
                                "%s:%u: key \"%.64s\": only a-z, 0-9 and _ are allowed", name, line,
                                key);
    if (*val == '\0')
        return tc_error_set(TC_ERR_CONFIG, "%s:%u: %s: no value after \"=\"", name, line, key);
    if (!*header_p) {
        char what[TUNING_LINE_MAX + 64];
        if (strcmp(key, "tcomms_tuning") != 0)
            return tc_error_set(TC_ERR_CONFIG,
                                "%s:%u: key \"%s\" before the header: the first line must be "
                                "\"tcomms_tuning = %d\"",
                                name, line, key, TC_ALGO_TUNING_VERSION);
        snprintf(what, sizeof(what), "%s:%u: tcomms_tuning", name, line);
        if (tc_parse_int(what, val, 1, 1000000, &version) != TC_OK)
            return TC_ERR_CONFIG;
        if (version < TC_ALGO_TUNING_VERSION_MIN || version > TC_ALGO_TUNING_VERSION)
            return tc_error_set(TC_ERR_CONFIG,
                                "%s:%u: tcomms_tuning = %lld: version not supported (this "
                                "library reads versions %d to %d)",
                                name, line, (long long)version, TC_ALGO_TUNING_VERSION_MIN,
                                TC_ALGO_TUNING_VERSION);
        t->version = (int)version;
        *header_p = 1;
        return TC_OK;
    }
    if (strcmp(key, "tcomms_tuning") == 0)
        return tc_error_set(TC_ERR_CONFIG, "%s:%u: key \"tcomms_tuning\" given a second time", name,
                            line);
    return tuning_pair(name, line, key, val, seen, t);
}

tc_status_t tc_algo_tuning_parse(const char *text, size_t len, const char *name,
                                 tc_algo_tuning_t *tuning)
{
    char buf[TUNING_LINE_MAX + 2];
    tc_algo_tuning_t t;
    unsigned line = 0, seen = 0;
    int header = 0;
    size_t pos = 0;
    tc_status_t st;

    if (text == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_algo_tuning_parse: NULL text");
    if (tuning == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_algo_tuning_parse: NULL tuning");
    if (name == NULL)
        name = "(tuning file)";
    memset(&t, 0, sizeof(t));
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
        line++;
        if (n > TUNING_LINE_MAX)
            return tc_error_set(TC_ERR_CONFIG, "%s:%u: a line of %zu bytes (at most %d)", name,
                                line, n, TUNING_LINE_MAX);
        if (memchr(text + pos, '\0', n) != NULL)
            return tc_error_set(TC_ERR_CONFIG, "%s:%u: a NUL byte (not a text file?)", name, line);
        memcpy(buf, text + pos, n);
        buf[n] = '\0';
        if ((st = tuning_line(name, line, buf, &header, &seen, &t)) != TC_OK)
            return st;
        pos += n + (nl ? 1 : 0);
    }
    if (!header)
        return tc_error_set(TC_ERR_CONFIG,
                            "%s: no \"tcomms_tuning = %d\" line (empty, or not a tuning file)",
                            name, TC_ALGO_TUNING_VERSION);
    if ((st = tc_algo_rules_check(name, &t)) != TC_OK)
        return st;
    *tuning = t;
    return TC_OK;
}

tc_status_t tc_algo_tuning_load(const char *path, tc_algo_tuning_t *tuning)
{
    char *text = NULL;
    struct stat sb;
    size_t got = 0;
    tc_status_t st;
    int fd;

    if (path == NULL || tuning == NULL)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_algo_tuning_load: NULL %s",
                            path == NULL ? "path" : "tuning");
    /* O_NONBLOCK: a FIFO opens at once and is refused below (opening it waited for a writer) */
    if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0)
        return tc_error_set(TC_ERR_CONFIG, "tuning file %s: cannot open: %s", path,
                            strerror(errno));
    if (fstat(fd, &sb) != 0) {
        st = tc_error_set(TC_ERR_CONFIG, "tuning file %s: fstat: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(sb.st_mode) || sb.st_size > TUNING_FILE_MAX) {
        st = tc_error_set(TC_ERR_CONFIG, "tuning file %s: %s", path,
                          S_ISREG(sb.st_mode) ? "larger than 64 KiB" : "not a regular file");
        goto out;
    }
    if ((text = malloc((size_t)sb.st_size + 1)) == NULL) {
        st = tc_error_set(TC_ERR_NO_MEMORY, "tuning file %s: %lld bytes", path,
                          (long long)sb.st_size);
        goto out;
    }
    while (got <= (size_t)sb.st_size) { /* one byte more: a file that grew is refused */
        ssize_t r = read(fd, text + got, (size_t)sb.st_size + 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            st = tc_error_set(TC_ERR_CONFIG, "tuning file %s: read: %s", path, strerror(errno));
            goto out;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    if (got > (size_t)sb.st_size) {
        st = tc_error_set(TC_ERR_CONFIG, "tuning file %s: changed while read", path);
        goto out;
    }
    st = tc_algo_tuning_parse(text, got, path, tuning);
out:
    free(text);
    close(fd);
    return st;
}

static int tuning_text_ok(const char *s)
{
    size_t n = strnlen(s, TC_ALGO_TUNING_TEXT_MAX);
    if (n == TC_ALGO_TUNING_TEXT_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] == 0x7f)
            return 0;
    /* blanks around the value would not survive the trim */
    return n == 0 || (!tuning_blank(s[0]) && !tuning_blank(s[n - 1]));
}

tc_status_t tc_algo_tuning_format(const tc_algo_tuning_t *tuning, char *buf, size_t len,
                                  size_t *len_p)
{
    const char *texts[3][2];
    size_t pos = 0;
    int n, k;

    if (tuning == NULL || buf == NULL || len == 0)
        return tc_error_set(TC_ERR_INVALID_ARG, "tc_algo_tuning_format: NULL or empty argument");
    texts[0][0] = "host", texts[0][1] = tuning->host;
    texts[1][0] = "date", texts[1][1] = tuning->date;
    texts[2][0] = "tool", texts[2][1] = tuning->tool;
    for (k = 0; k < 3; k++)
        if (!tuning_text_ok(texts[k][1]))
            return tc_error_set(TC_ERR_INVALID_ARG,
                                "tc_algo_tuning_format: %s: control characters, blanks at an "
                                "end, or longer than %d bytes",
                                texts[k][0], TC_ALGO_TUNING_TEXT_MAX - 1);
    for (k = 0; k < TC_ALGO_PARAM_COUNT; k++)
        if (tuning->has[k] && !(tuning->value[k] >= 0.0 && tuning->value[k] <= TUNING_VALUE_MAX))
            return tc_error_set(TC_ERR_INVALID_ARG,
                                "tc_algo_tuning_format: %s = %g: not in [0, %g]",
                                tuning_params[k].key, tuning->value[k], TUNING_VALUE_MAX);
    if (tuning->ranks < 0 || tuning->nodes < 0 || tuning->ranks_per_node < 0 ||
        tuning->ranks > (1 << 24) || tuning->nodes > (1 << 24) ||
        tuning->ranks_per_node > (1 << 24))
        return tc_error_set(TC_ERR_INVALID_ARG,
                            "tc_algo_tuning_format: ranks, nodes, ranks_per_node in [0, 2^24]");
#define TUNING_OUT(...)                                                                            \
    do {                                                                                           \
        n = snprintf(buf + pos, len - pos, __VA_ARGS__);                                           \
        if (n < 0 || (size_t)n >= len - pos)                                                       \
            return tc_error_set(TC_ERR_NO_RESOURCE,                                                \
                                "tc_algo_tuning_format: %zu bytes are too few", len);              \
        pos += (size_t)n;                                                                          \
    } while (0)
    /* the oldest version that holds the contents, for older readers */
    TUNING_OUT("# tcomms cost-model tuning file (docs/tuning.md); times in microseconds,\n"
               "# alpha per message, beta per byte on the wire, gamma per byte reduced,\n"
               "# overhead per message of a burst%s\n"
               "tcomms_tuning = %d\n",
               tuning->nrules > 0 ? ";\n# rule_COLL = BYTES:ALGORITHM ...: the fastest measured "
                                    "from each size on"
                                  : "",
               tuning->nrules > 0 ? 3 : 2);
    for (k = 0; k < 3; k++)
        if (texts[k][1][0] != '\0')
            TUNING_OUT("%s = %s\n", texts[k][0], texts[k][1]);
    if (tuning->ranks > 0)
        TUNING_OUT("ranks = %d\n", tuning->ranks);
    if (tuning->nodes > 0)
        TUNING_OUT("nodes = %d\n", tuning->nodes);
    if (tuning->ranks_per_node > 0)
        TUNING_OUT("ranks_per_node = %d\n", tuning->ranks_per_node);
    for (k = 0; k < TC_ALGO_PARAM_COUNT; k++)
        if (tuning->has[k])
            TUNING_OUT("%s = %.17g\n", tuning_params[k].key, tuning->value[k]);
#undef TUNING_OUT
    tc_status_t st = tc_algo_rules_format(tuning, buf, len, &pos);
    if (st != TC_OK)
        return st;
    if (len_p != NULL)
        *len_p = pos;
    return TC_OK;
}
