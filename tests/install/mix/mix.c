/* One binary with tcomms (static archive), Open MPI's libmpi and NCCL's libnccl, calling into all
 * three: their symbols must neither clash nor interpose. Run under mpirun: MPI's all-reduce and
 * tcomms' (bootstrapped through the same PMIx server) must agree element by element; NCCL's calls
 * must resolve and return (without a GPU they return an error, which is printed). */
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>
#include <nccl.h>

#include "tcomms/tcomms.h"

#define N 4097

int main(int argc, char **argv)
{
    int rank, size, nccl_version = 0, bad = 0;
    static double in[N], by_mpi[N], by_tc[N];
    tc_comm_t *comm;
    ncclUniqueId id;

    if (MPI_Init(&argc, &argv) != MPI_SUCCESS)
        return 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 0; i < N; i++)
        in[i] = (double)((rank + 1) * i) * 0.25;
    MPI_Allreduce(in, by_mpi, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);

    if (tc_comm_create(NULL, &comm) != TC_OK) {
        fprintf(stderr, "mix: tc_comm_create: %s\n", tc_last_error());
        return 1;
    }
    int tc_rank = -1;
    tc_comm_rank(comm, &tc_rank);
    if (tc_rank != rank)
        fprintf(stderr, "mix: tcomms rank %d, MPI rank %d\n", tc_rank, rank), bad++;
    if (tc_all_reduce(comm, in, by_tc, N, TC_FLOAT64, TC_SUM, NULL, NULL) != TC_OK) {
        fprintf(stderr, "mix: tc_all_reduce: %s\n", tc_last_error());
        return 1;
    }
    for (int i = 0; i < N; i++)
        if (by_tc[i] != by_mpi[i] || by_tc[i] != (double)(size * (size + 1) / 2 * i) * 0.25)
            bad++;

    ncclResult_t v = ncclGetVersion(&nccl_version);
    ncclResult_t u = ncclGetUniqueId(&id);
    printf("mix: rank %d of %d: MPI and tcomms agree on %d elements%s; NCCL %d (%s), "
           "ncclGetUniqueId: %s\n",
           rank, size, N - bad, bad ? " (MISMATCH)" : "", nccl_version, ncclGetErrorString(v),
           ncclGetErrorString(u));
    tc_comm_destroy(comm);
    MPI_Finalize();
    return bad != 0 || v != ncclSuccess || nccl_version < 20000;
}
