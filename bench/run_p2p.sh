#!/usr/bin/env bash
# tcomms point-to-point (tc-tpbench, per backend) beside Open MPI's (bench/mpi_pingpong.c, with
# its default transports -- shared memory between local ranks -- and with TCP only) and beside
# single-core memcpy bandwidth, in one run.
#   bench/run_p2p.sh
# Prints latency (half round trip) at 8 B and streaming bandwidth at 4 MiB and 64 MiB, with
# ratios to Open MPI (latency ratio < 1 and bandwidth ratio > 1 favour tcomms) and to memcpy.
# Machines here are shared: quote medians of several runs, never one absolute number.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d /tmp/tc-p2p.XXXXXX)
bazel=(bazel ${BAZEL_STARTUP:-})

"${bazel[@]}" build //tools/tc-tpbench >/dev/null 2>&1
bin=$("${bazel[@]}" info bazel-bin 2>/dev/null)/tools/tc-tpbench/tc-tpbench
mpicc -O2 -o "$out/mpi_pingpong" bench/mpi_pingpong.c
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2)
sizes=(-b 8 -e 64M -f 8)   # 8 B, 64 B, ..., 4 MiB, 32 MiB; 64 MiB measured separately
backends=${BACKENDS:-shm tcp}

run_sizes() { # command... : prints "size lat bw" for 8 B, 4 MiB and 64 MiB
    # 8 B: 100000 round trips (the default 1000 last half a millisecond: mostly warm-up)
    { "$@" -b 8 -e 8 -f 2 -n 100000; "$@" -b 4M -e 4M -f 2; "$@" -b 64M -e 64M -f 2; } | grep -v '^#'
}

echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs)"
"$bin" --memcpy -e 64M | grep -v '^#' >"$out/memcpy"
run_sizes "${mpirun[@]}" "$out/mpi_pingpong" >"$out/ompi"
run_sizes "${mpirun[@]}" --mca btl tcp,self "$out/mpi_pingpong" >"$out/ompitcp"
for b in $backends; do
    run_sizes "$bin" -t "$b" >"$out/tc.$b"
done

mc4=$(awk '$1 == 4194304 {print $2}' "$out/memcpy")
mc64=$(awk '$1 == 67108864 {print $2}' "$out/memcpy")
val() { awk -v s="$2" -v c="$3" '$1 == s {print $c}' "$1"; }
printf "\n# %-16s %10s %12s %12s\n" "" "lat 8B us" "bw 4MiB MB/s" "bw 64MiB MB/s"
printf "  %-16s %10s %12.0f %12.0f\n" "memcpy (1 core)" "-" "$mc4" "$mc64"
for f in ompi ompitcp $(for b in $backends; do echo "tc.$b"; done); do
    name=$f
    [ "$f" = ompi ] && name="Open MPI (vader)"
    [ "$f" = ompitcp ] && name="Open MPI (tcp)"
    printf "  %-16s %10.2f %12.0f %12.0f\n" "$name" "$(val "$out/$f" 8 2)" \
        "$(val "$out/$f" 4194304 3)" "$(val "$out/$f" 67108864 3)"
done
echo
echo "# ratios: tcomms / Open MPI (latency: < 1 is better; bandwidth: > 1 is better), bw / memcpy"
for b in $backends; do
    for ref in ompi ompitcp; do
        awk -v b="$b" -v ref="$ref" -v l1="$(val "$out/tc.$b" 8 2)" -v l2="$(val "$out/$ref" 8 2)" \
            -v a1="$(val "$out/tc.$b" 4194304 3)" -v a2="$(val "$out/$ref" 4194304 3)" \
            -v c1="$(val "$out/tc.$b" 67108864 3)" -v c2="$(val "$out/$ref" 67108864 3)" \
            'BEGIN { printf "  %-4s vs %-8s lat %5.2f  bw4M %5.2f  bw64M %5.2f\n", b, ref,
                     l1 / l2, a1 / a2, c1 / c2 }'
    done
    awk -v b="$b" -v a="$(val "$out/tc.$b" 4194304 3)" -v c="$(val "$out/tc.$b" 67108864 3)" \
        -v m4="$mc4" -v m64="$mc64" \
        'BEGIN { printf "  %-4s vs memcpy   bw4M %5.2f  bw64M %5.2f\n", b, a / m4, c / m64 }'
done
echo
echo "# raw outputs in $out"
