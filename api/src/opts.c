/* Per-operation hints: parsed, and every key checked against what the call
 * takes (collectives: algo=NAME; point-to-point and windows: none), so that a
 * misspelt key is an error rather than a hint silently ignored. */
#include <string.h>

#include "api_impl.h"
#include "tcomms/base/config.h"

tc_status_t tc_api_op_hints(const char *text, const char *fn, tc_hints_t *hints, const char *accept)
{
    tc_hints_t none;
    tc_hints_init(&none);
    tc_hints_t *h = hints ? hints : &none;
    tc_status_t st = tc_hints_parse(h, text);
    if (st != TC_OK)
        tc_error_prefix("%s: opts->hints: ", fn);
    for (int i = 0; st == TC_OK && i < h->count; i++)
        if (!accept || strcmp(h->keys[i], accept) != 0)
            st = tc_error_set(
                TC_ERR_INVALID_ARG, "%s: opts->hints: unknown key '" TC_ECHO_FMT "' (%s%s%s)", fn,
                TC_ECHO(h->keys[i]), accept ? "this call takes only " : "this call takes no hints",
                accept ? accept : "", accept ? "=..." : "");
    tc_hints_free(&none);
    return st;
}
