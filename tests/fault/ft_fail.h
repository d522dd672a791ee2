/* A failed check of a fault-injection program: "rank R: FAIL: ..." on stdout
 * (what run_fault.sh looks for), counted in the program's `fails`. The
 * including file defines `static int rank, fails;`. */
#ifndef TC_TESTS_FAULT_FT_FAIL_H
#define TC_TESTS_FAULT_FT_FAIL_H

#include <stdio.h>

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        printf("rank %d: FAIL: ", rank);                                                           \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        fails++;                                                                                   \
    } while (0)

#endif
