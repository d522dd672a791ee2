/* Overlapping receive blocks of the v-variants are refused, naming the two
 * ranks and their ranges, in O(n log n) for 100,000 ranks (the check is the
 * library's internal tc_api_v_disjoint; a world of one has no two blocks to
 * overlap, so the public calls are exercised by tests/integration). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tcomms/tcomms.h"

tc_status_t tc_api_v_disjoint(const char *fn, int size, const size_t *counts, const char *dname,
                              const size_t *displs, const char *bufname);

static void expect(tc_status_t got, tc_status_t want, const char *needle)
{
    const char *detail = tc_last_error();
    if (got != want)
        fail_msg("status %s, expected %s (detail '%s')", tc_status_string(got),
                 tc_status_string(want), detail);
    if (needle && strstr(detail, needle) == NULL)
        fail_msg("detail '%s' does not mention '%s'", detail, needle);
}

#define CHECK(n, c, d) tc_api_v_disjoint("tc_all_gather_v", (n), (c), "displs", (d), "recvbuf")

static void test_small(void **state)
{
    (void)state;
    size_t c[4] = {4, 4, 4, 4}, d[4] = {0, 4, 8, 12};
    expect(CHECK(4, c, d), TC_OK, NULL);
    d[2] = 7; /* rank 1 [4,8) and rank 2 [7,11) */
    expect(CHECK(4, c, d), TC_ERR_INVALID_ARG,
           "tc_all_gather_v: displs: the blocks of rank 1 (elements [4, 8)) and rank 2 ([7, 11)) "
           "overlap in recvbuf");
    /* reversed order, disjoint */
    size_t r[4] = {12, 8, 4, 0};
    expect(CHECK(4, c, r), TC_OK, NULL);
    /* a block inside a far-reaching one that comes later in rank order */
    size_t c2[3] = {10, 100, 5}, d2[3] = {50, 0, 200};
    expect(CHECK(3, c2, d2), TC_ERR_INVALID_ARG,
           "rank 0 (elements [50, 60)) and rank 1 ([0, 100))");
    /* the same offset twice */
    size_t c3[3] = {1, 0, 1}, d3[3] = {9, 9, 9};
    expect(CHECK(3, c3, d3), TC_ERR_INVALID_ARG, "rank 0 (elements [9, 10)) and rank 2");
    /* empty blocks overlap nothing */
    c3[2] = 0;
    expect(CHECK(3, c3, d3), TC_OK, NULL);
    /* gaps are allowed */
    size_t c4[3] = {1, 1, 1}, d4[3] = {100, 0, 50};
    expect(CHECK(3, c4, d4), TC_OK, NULL);
    /* touching, not overlapping, out of order */
    size_t c5[3] = {5, 5, 5}, d5[3] = {5, 10, 0};
    expect(CHECK(3, c5, d5), TC_OK, NULL);
}

/* 100,000 ranks shuffled: an O(n^2) check would take minutes. */
static void test_many_ranks(void **state)
{
    (void)state;
    enum { N = 100000 };
    size_t *c = malloc(N * sizeof(*c)), *d = malloc(N * sizeof(*d));
    int *perm = malloc(N * sizeof(*perm));
    assert_non_null(c);
    assert_non_null(d);
    assert_non_null(perm);
    for (int i = 0; i < N; i++)
        perm[i] = i;
    srand(7);
    for (int i = N - 1; i > 0; i--) {
        int j = rand() % (i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int q = 0; q < N; q++) { /* rank q gets slot perm[q] of 3 elements, 1 apart */
        c[q] = 3;
        d[q] = (size_t)perm[q] * 4;
    }
    for (int rep = 0; rep < 5; rep++)
        expect(CHECK(N, c, d), TC_OK, NULL);
    /* rank 99997 now writes over part of rank 3's block */
    d[99997] = d[3] + 2;
    char want[160];
    snprintf(want, sizeof(want), "rank 3 (elements [%zu, %zu)) and rank 99997 ([%zu, %zu))", d[3],
             d[3] + 3, d[3] + 2, d[3] + 5);
    expect(CHECK(N, c, d), TC_ERR_INVALID_ARG, want);
    /* in rank order (the one-pass path), an overlap at the very end */
    for (int q = 0; q < N; q++)
        d[q] = (size_t)q * 3;
    expect(CHECK(N, c, d), TC_OK, NULL);
    d[N - 1] -= 1;
    expect(CHECK(N, c, d), TC_ERR_INVALID_ARG,
           "rank 99998 (elements [299994, 299997)) and rank 99999 ([299996, 299999))");
    free(c);
    free(d);
    free(perm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small),
        cmocka_unit_test(test_many_ranks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
