#!/usr/bin/env bash
# tcomms all-reduce beside Open MPI's on this machine, in one run.
#   bench/run_allreduce.sh [RANKS...]        (default: 2 4)
# Builds tcperf and tcrun with Bazel and bench/mpi_allreduce.c with mpicc,
# runs both over the same sizes (8 B to 64 MiB), and prints, per size, the
# time and bus bandwidth of each and the ratio tcomms/Open MPI (time ratio
# < 1 and busbw ratio > 1 favour tcomms). Open MPI runs twice: with its
# default transports (shared memory between local ranks) and with TCP only,
# the transport tcomms uses today. Machines here are shared: quote medians
# of several runs, never one absolute number.
set -euo pipefail
cd "$(dirname "$0")/.."
ranks=("$@")
[ ${#ranks[@]} -gt 0 ] || ranks=(2 4)
iters=${ITERS:-20}
warmup=${WARMUP:-5}
out=$(mktemp -d /tmp/tc-bench.XXXXXX)

bazel build //tools/tcperf //tools/tcrun >/dev/null 2>&1
mpicc -O2 -o "$out/mpi_allreduce" bench/mpi_allreduce.c
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to none)

echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs)"
for n in "${ranks[@]}"; do
    bazel-bin/tools/tcrun/tcrun -n "$n" bazel-bin/tools/tcperf/tcperf -b 8 -e 64M -f 4 \
        -n "$iters" -w "$warmup" -c 0 | sed 's/^\[0\] //' | grep -v '^#' >"$out/tc.$n"
    "${mpirun[@]}" -np "$n" "$out/mpi_allreduce" -b 8 -e 64M -f 4 -n "$iters" -w "$warmup" |
        grep -v '^#' >"$out/ompi.$n"
    "${mpirun[@]}" --mca btl tcp,self -np "$n" "$out/mpi_allreduce" -b 8 -e 64M -f 4 \
        -n "$iters" -w "$warmup" | grep -v '^#' >"$out/ompitcp.$n"
    echo
    echo "# all_reduce float32 sum, $n ranks: time (us) and busbw (GB/s); ratio = tcomms / Open MPI"
    printf "# %10s | %9s %7s | %9s %7s %6s %6s | %9s %7s %6s %6s\n" size tc_us tc_bw \
        ompi_us ompi_bw t_ratio bw_ratio ompitcp_us tcp_bw t_ratio bw_ratio
    paste <(awk '{print $1, $6, $8}' "$out/tc.$n") <(awk '{print $3, $5}' "$out/ompi.$n") \
        <(awk '{print $3, $5}' "$out/ompitcp.$n") |
        awk '{ r1 = $4 > 0 ? $2 / $4 : 0; b1 = $5 > 0 ? $3 / $5 : 0;
               r2 = $6 > 0 ? $2 / $6 : 0; b2 = $7 > 0 ? $3 / $7 : 0;
               printf "  %10d | %9.1f %7.3f | %9.1f %7.3f %6.2f %6.2f | %9.1f %7.3f %6.2f %6.2f\n",
                      $1, $2, $3, $4, $5, r1, b1, $6, $7, r2, b2 }'
done
echo
echo "# raw outputs in $out"
