#!/usr/bin/env bash
# Aggregate all-reduce throughput of 1, 2 and 4 threads per rank, each thread on its own
# communicator (the thread model of tcomms.h), beside Open MPI's MPI_Allreduce from as many
# threads on as many MPI_Comm_dup's (MPI_THREAD_MULTIPLE; bench/peers/mpi_threads.c), in one run.
#   bench/run_threads.sh [--ranks N] [--threads "1 2 4"] [--iters N]
# Builds tcperf and tcrun with Bazel -c opt (or takes TCPERF and TCRUN), mpi_threads with mpicc.
# Per thread count, at 8 B and 1 MiB: one thread's mean latency and the aggregate rate (all the
# threads' operations over the slowest thread's time; 8 B in operations per second, 1 MiB in
# GB/s of all-reduced data), every result checked. A ratio > 1 favours tcomms.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
ranks=2 threads="1 2 4" iters=${ITERS:-2000}
while [ $# -gt 0 ]; do
    case $1 in
    --ranks) ranks=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    -h | --help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_threads: unknown option $1 (try --help)" >&2; exit 2 ;;
    esac
done
out=$(mktemp -d /tmp/tc-threads.XXXXXX)
build_tc "$out/build.log" || { echo "run_threads: $build_why" >&2; exit 1; }
mpicc -O2 -o "$out/mpi_threads" bench/peers/mpi_threads.c -lpthread
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$ranks")
big_iters=$((iters / 10 > 20 ? iters / 10 : 20))

machine_line
echo "# $ranks ranks; $iters operations per thread at 8 B, $big_iters at 1 MiB"
printf "# %7s | %10s %10s %10s | %10s %10s %10s | %9s %9s %9s | %9s %9s %9s\n" threads \
    "tc 8B us" "ompi us" "ratio" "tc ops/s" "ompi" "ratio" "tc GB/s" "ompi" "ratio" \
    "tc 1M us" "ompi us" "ratio"
wrong=0
for t in $threads; do
    # tcperf rows: size count threads lat ops/s GB/s #wrong (rank 0's, prefixed "[0] ")
    tc() {
        "$tcrun" -n "$ranks" "$tcperf" --threads "$t" -b "$1" -e "$1" -n "$2" -w $(($2 / 10)) -c 1 |
            sed 's/^\[0\] //' | awk -v b="$(to_bytes "$1")" '$1 == b {print $4, $5, $6, $7}'
    }
    om() {
        "${mpirun[@]}" "$out/mpi_threads" -t "$t" -b "$1" -e "$1" -n "$2" -w $(($2 / 10)) |
            awk -v b="$(to_bytes "$1")" '$1 == b {print $2, $3, $4, $5}'
    }
    read -r tl8 to8 _ tw8 <<<"$(tc 8 "$iters")"
    read -r ol8 oo8 _ ow8 <<<"$(om 8 "$iters")"
    read -r tl1 _ tg1 tw1 <<<"$(tc 1M "$big_iters")"
    read -r ol1 _ og1 ow1 <<<"$(om 1M "$big_iters")"
    for v in "$tw8" "$ow8" "$tw1" "$ow1"; do
        [ "$v" = 0 ] || wrong=1
    done
    awk -v t="$t" -v tl8="$tl8" -v ol8="$ol8" -v to8="$to8" -v oo8="$oo8" -v tg1="$tg1" \
        -v og1="$og1" -v tl1="$tl1" -v ol1="$ol1" 'BEGIN {
        printf "  %7d | %10.2f %10.2f %10.2f | %10.0f %10.0f %10.2f | %9.3f %9.3f %9.2f | %9.1f %9.1f %9.2f\n",
            t, tl8, ol8, ol8 / tl8, to8, oo8, to8 / oo8, tg1, og1, tg1 / og1, tl1, ol1, ol1 / tl1 }'
done
if [ "$wrong" != 0 ]; then
    echo "run_threads: WRONG results (or a run that printed none): see the rows above" >&2
    exit 1
fi
rm -rf "$out"
