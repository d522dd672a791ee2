/* Fuzz the configuration parsers with the strings another process hands this one: environment
 * variables read by tc_config_* (set here with setenv) and hint strings (tc_hints_parse; hints
 * travel in TC_HINTS and from launchers).
 *
 * Input: byte 0 picks the bounds; the rest, up to its first NUL, is the text.
 * Properties: a value accepted by tc_config_int / _double lies within the bounds asked for,
 * an enum value indexes the choices; a failed parse leaves the output untouched and says why;
 * hints that parse print back ("k=v,...") to text that parses to the same set (a round trip);
 * a malformed hint string leaves the set as it was; no leak, nothing read past the text. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tcomms/base/config.h"
#include "tcomms/base/status.h"

#define VAR "TC_FUZZ_CONFIG_VALUE"

static void check_config(const char *text, uint8_t sel)
{
    static const int64_t bounds[][2] = {{0, 1}, {-5, 5}, {1, 1 << 20}, {INT64_MIN, INT64_MAX}};
    static const char *const choices[] = {"ring", "tree", "auto", NULL};
    const int64_t *b = bounds[sel & 3];
    int64_t i = 12345;
    uint64_t u = 777;
    bool flag = false;
    double d = 0.5;
    int e = 9;

    if (setenv(VAR, text, 1) != 0)
        return;
    if (tc_config_int(VAR, b[0], b[0], b[1], &i) == TC_OK) {
        if (i < b[0] || i > b[1])
            abort();
    } else if (i != 12345 || tc_last_error()[0] == '\0') {
        abort();
    }
    if (tc_config_size(VAR, 1, &u) != TC_OK && u != 777)
        abort();
    if (tc_config_bool(VAR, true, &flag) != TC_OK && flag != false)
        abort();
    if (tc_config_double(VAR, 0.5, -1.0, 1e6, &d) == TC_OK) {
        if (!(d >= -1.0 && d <= 1e6))
            abort(); /* NaN fails this too */
    } else if (d != 0.5) {
        abort();
    }
    if (tc_config_enum(VAR, choices, 2, &e) == TC_OK) {
        if (e < 0 || e > 2)
            abort();
    } else if (e != 9) {
        abort();
    }
    const char *s = tc_config_string(VAR, "default");
    if (s == NULL || (text[0] != '\0' && strcmp(s, text) != 0))
        abort();
    unsetenv(VAR);
}

/* Print @p h as "k=v,..." (NULL when it does not fit). */
static char *hints_print(const tc_hints_t *h)
{
    size_t len = 1;
    for (int i = 0; i < h->count; i++)
        len += strlen(h->keys[i]) + strlen(h->values[i]) + 2;
    char *out = malloc(len), *p = out;
    if (out == NULL)
        abort();
    for (int i = 0; i < h->count; i++) {
        size_t k = strlen(h->keys[i]), v = strlen(h->values[i]);
        if (i > 0)
            *p++ = ',';
        memcpy(p, h->keys[i], k);
        p += k;
        *p++ = '=';
        memcpy(p, h->values[i], v);
        p += v;
    }
    *p = '\0';
    return out;
}

static void check_hints(const char *text)
{
    tc_hints_t h, again;
    tc_hints_init(&h);
    if (tc_hints_set(&h, "keep", "1") != TC_OK)
        abort();
    tc_status_t st = tc_hints_parse(&h, text);
    if (st != TC_OK) {
        if (h.count != 1 || strcmp(tc_hints_get(&h, "keep"), "1") != 0)
            abort(); /* unchanged on error */
        tc_hints_free(&h);
        return;
    }
    if (h.count < 1 || h.count > TC_HINTS_MAX)
        abort();
    for (int i = 0; i < h.count; i++)
        if (h.keys[i] == NULL || h.values[i] == NULL || h.keys[i][0] == '\0' ||
            tc_hints_get(&h, h.keys[i]) != h.values[i])
            abort();
    char *printed = hints_print(&h);
    tc_hints_init(&again);
    if (tc_hints_parse(&again, printed) != TC_OK || again.count != h.count)
        abort();
    for (int i = 0; i < h.count; i++) {
        const char *v = tc_hints_get(&again, h.keys[i]);
        if (v == NULL || strcmp(v, h.values[i]) != 0)
            abort();
    }
    int64_t n;
    uint64_t sz;
    bool b;
    for (int i = 0; i < h.count; i++) {
        if (tc_hints_int(&h, h.keys[i], 0, -100, 100, &n) == TC_OK && (n < -100 || n > 100))
            abort();
        (void)tc_hints_size(&h, h.keys[i], 0, &sz);
        (void)tc_hints_bool(&h, h.keys[i], false, &b);
    }
    free(printed);
    tc_hints_free(&again);
    tc_hints_free(&h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    char *text = malloc(size); /* exactly the text and its NUL: ASan guards the end */
    if (text == NULL)
        abort();
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    check_config(text, data[0]);
    check_hints(text);
    free(text);
    return 0;
}
