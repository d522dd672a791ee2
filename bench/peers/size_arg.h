/* A size argument of the peer benchmarks: "64", "4K", "64M", "1G" (powers of 1024); 0 when it
 * is not a positive number. */
#ifndef BENCH_PEERS_SIZE_ARG_H
#define BENCH_PEERS_SIZE_ARG_H

#include <stddef.h>
#include <stdlib.h>

static inline size_t bench_parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'K':
    case 'k':
        v *= 1024;
        break;
    case 'M':
    case 'm':
        v *= 1024 * 1024;
        break;
    case 'G':
    case 'g':
        v *= 1024.0 * 1024 * 1024;
        break;
    default:
        break;
    }
    return v > 0 ? (size_t)v : 0;
}

#endif
