// A C++17 consumer of the installed tcomms: the C header from C++, an all-gather and a
// broadcast checked element by element against values computed here.
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <vector>

#include "tcomms/tcomms.h"

static int fail(const char *what)
{
    std::fprintf(stderr, "install consumer (C++): %s: %s\n", what, tc_last_error());
    return 1;
}

int main()
{
    tc_comm_t *comm = nullptr;
    if (tc_comm_create(nullptr, &comm) != TC_OK)
        return fail("tc_comm_create");
    int rank = 0, size = 0;
    if (tc_comm_rank(comm, &rank) != TC_OK || tc_comm_size(comm, &size) != TC_OK)
        return fail("rank/size");

    const size_t n = 4099;
    std::vector<int32_t> mine(n), all(n * size);
    std::iota(mine.begin(), mine.end(), rank * 1000000);
    if (tc_all_gather(comm, mine.data(), all.data(), n, TC_INT32, nullptr, nullptr) != TC_OK)
        return fail("tc_all_gather");
    std::vector<double> b(n);
    for (size_t i = 0; i < n; i++)
        b[i] = rank == size - 1 ? 0.5 * static_cast<double>(i) : -1.0;
    if (tc_broadcast(comm, b.data(), n, TC_FLOAT64, size - 1, nullptr, nullptr) != TC_OK)
        return fail("tc_broadcast");

    int bad = 0;
    for (int r = 0; r < size; r++)
        for (size_t i = 0; i < n; i++)
            if (all[r * n + i] != static_cast<int32_t>(r * 1000000 + i))
                bad++;
    for (size_t i = 0; i < n; i++)
        if (b[i] != 0.5 * static_cast<double>(i))
            bad++;
    if (tc_comm_destroy(comm) != TC_OK)
        return fail("tc_comm_destroy");
    if (bad != 0) {
        std::fprintf(stderr, "rank %d: %d wrong elements\n", rank, bad);
        return 1;
    }
    std::printf("rank %d of %d: all-gather and broadcast right\n", rank, size);
    return 0;
}
