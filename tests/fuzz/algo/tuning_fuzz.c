/* Fuzz the tuning file parser (algo/src/tuning_file.c): the bytes of a file named by
 * TC_TUNING_FILE, which a user or tc-tune wrote, possibly on another machine.
 *
 * Input: the whole file, any bytes (NUL included), as tc_algo_tuning_parse() reads them.
 * Properties: a refusal is TC_ERR_CONFIG with a detail naming the file and leaves the output
 * untouched; an accepted file has version 1 to 3 (overhead_us from 2, rules from 3),
 * parameters set only with a value in [0, 1e9], text values without control characters, rules
 * of known collectives in order with ascending sizes and the shape they apply to; it formats
 * (tc_algo_tuning_format) to text that parses back to the same contents, bit for bit (a round
 * trip); nothing read past the input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/algo/tuning.h"
#include "tcomms/base/status.h"

static int text_ok(const char *s)
{
    size_t n = strnlen(s, TC_ALGO_TUNING_TEXT_MAX);
    if (n == TC_ALGO_TUNING_TEXT_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] == 0x7f)
            return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* an exact-size copy: ASan catches a read past the end */
    char *text = malloc(size ? size : 1);
    tc_algo_tuning_t t, back;
    char buf[16384];
    size_t len;

    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    memset(&t, 0xa5, sizeof(t));
    tc_status_t st = tc_algo_tuning_parse(text, size, "fuzz.tune", &t);
    if (st != TC_OK) {
        const unsigned char *p = (const unsigned char *)&t;
        if (st != TC_ERR_CONFIG || strstr(tc_last_error(), "fuzz.tune") == NULL)
            abort();
        for (size_t i = 0; i < sizeof(t); i++)
            if (p[i] != 0xa5)
                abort(); /* touched on failure */
        free(text);
        return 0;
    }
    if (t.version < TC_ALGO_TUNING_VERSION_MIN || t.version > TC_ALGO_TUNING_VERSION ||
        (t.version < 2 && t.has[TC_ALGO_PARAM_OVERHEAD]) || !text_ok(t.host) || !text_ok(t.date) ||
        !text_ok(t.tool) || t.ranks < 0 || t.nodes < 0 || t.ranks_per_node < 0)
        abort();
    if (t.nrules < 0 || t.nrules > TC_ALGO_TUNING_RULES_MAX ||
        (t.nrules > 0 && (t.version < 3 || t.ranks < 1 || t.nodes < 1 || t.ranks_per_node < 1)))
        abort();
    for (int i = 0; i < t.nrules; i++) {
        const tc_algo_rule_t *r = &t.rule[i];
        if ((unsigned)r->coll >= TC_COLL_COUNT || memchr(r->algo, '\0', sizeof(r->algo)) == NULL ||
            r->algo[0] == '\0' ||
            (i > 0 && (r->coll < r[-1].coll ||
                       (r->coll == r[-1].coll && r->from_bytes <= r[-1].from_bytes))))
            abort();
    }
    for (int k = 0; k < TC_ALGO_PARAM_COUNT; k++)
        if (t.has[k] != 0 && t.has[k] != 1)
            abort();
        else if (t.has[k] && !(t.value[k] >= 0 && t.value[k] <= 1e9))
            abort();
    if (tc_algo_tuning_format(&t, buf, sizeof(buf), &len) != TC_OK)
        abort();
    if (tc_algo_tuning_parse(buf, len, "round trip", &back) != TC_OK)
        abort();
    if (strcmp(back.host, t.host) != 0 || strcmp(back.date, t.date) != 0 ||
        strcmp(back.tool, t.tool) != 0 || back.ranks != t.ranks || back.nodes != t.nodes ||
        back.ranks_per_node != t.ranks_per_node || back.nrules != t.nrules ||
        memcmp(back.rule, t.rule, sizeof(t.rule[0]) * (size_t)t.nrules) != 0)
        abort();
    for (int k = 0; k < TC_ALGO_PARAM_COUNT; k++)
        if (back.has[k] != t.has[k] ||
            (t.has[k] && memcmp(&back.value[k], &t.value[k], sizeof(double)) != 0))
            abort();
    free(text);
    return 0;
}
