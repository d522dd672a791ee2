/* Prints the linked registry, one "COLLECTIVE name" line per entry in table
 * order, for registry_test.sh to compare with the TC_ALGO_DEFINE lines; exits
 * 1 (with the reason on stderr) if an entry lacks a generator or a cost
 * formula, or a collective's entries are not contiguous. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "tcomms/algo/schedule.h"

int main(void)
{
    size_t n, i, k;
    const tc_algo_desc_t *t = tc_algo_table(&n);
    int seen[TC_COLL_COUNT] = {0};
    char up[64];

    for (i = 0; i < n; i++) {
        if (t[i].gen == NULL || t[i].cost == NULL || t[i].name == NULL) {
            fprintf(stderr, "entry %zu: missing generator, cost or name\n", i);
            return 1;
        }
        if ((int)t[i].coll < 0 || t[i].coll >= TC_COLL_COUNT) {
            fprintf(stderr, "entry %zu (%s): collective %d\n", i, t[i].name, (int)t[i].coll);
            return 1;
        }
        if (seen[t[i].coll] && t[i - 1].coll != t[i].coll) {
            fprintf(stderr, "entry %zu (%s): %s entries are not contiguous\n", i, t[i].name,
                    tc_coll_name(t[i].coll));
            return 1;
        }
        seen[t[i].coll] = 1;
        snprintf(up, sizeof(up), "%s", tc_coll_name(t[i].coll));
        for (k = 0; up[k] != '\0'; k++) {
            up[k] = (char)toupper((unsigned char)up[k]);
        }
        printf("%s %s\n", up, t[i].name);
    }
    return 0;
}
