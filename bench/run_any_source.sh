#!/usr/bin/env bash
# Receives from any source (tc_recv with TC_ANY_SOURCE) beside receives from given ranks, and
# Open MPI's MPI_ANY_SOURCE beside its given-rank MPI_Recv, in one run: rounds in which every
# other rank sends 8 bytes to rank 0, which takes them all and answers each (bench/any_source.c,
# bench/peers/mpi_any_source.c; every message checked).
#   bench/run_any_source.sh [--ranks "2 4"] [--rounds N]
# Prints, per rank count, microseconds per round; ratios < 1 favour tcomms.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
ranks="2 4" rounds=20000
while [ $# -gt 0 ]; do
    case $1 in
    --ranks) ranks=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    -h | --help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_any_source: unknown option $1 (try --help)" >&2; exit 2 ;;
    esac
done
out=$(mktemp -d /tmp/tc-any.XXXXXX)
# shellcheck disable=SC2206  # startup options, split on purpose
bazel=(bazel ${BAZEL_STARTUP:-})
"${bazel[@]}" build -c opt //bench:any_source //tools/tcrun >"$out/build.log" 2>&1 ||
    { echo "run_any_source: bazel build failed: $out/build.log" >&2; exit 1; }
bin=$("${bazel[@]}" info -c opt bazel-bin 2>/dev/null)
mpicc -O2 -o "$out/mpi_any_source" bench/peers/mpi_any_source.c
machine_line
echo "# $rounds rounds (8-byte messages to rank 0 and back); us per round"
printf "# %5s | %9s %9s %6s | %9s %9s %6s | %11s %11s\n" ranks "tc given" "tc any" "any/gv" \
    "ompi gvn" "ompi any" "any/gv" "tc/ompi gvn" "tc/ompi any"
for n in $ranks; do
    tc=$("$bin/tools/tcrun/tcrun" -n "$n" "$bin/bench/any_source" -n "$rounds" | sed 's/^\[0\] //')
    om=$(mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$n" \
        "$out/mpi_any_source" -n "$rounds")
    awk -v n="$n" -v tc="$tc" -v om="$om" 'BEGIN {
        split(tc, a, "\n"); split(om, b, "\n")
        for (i in a) { split(a[i], f, " "); t[f[1]] = f[2] }
        for (i in b) { split(b[i], f, " "); o[f[1]] = f[2] }
        if (!t["any"] || !o["any"]) { print "run_any_source: a run printed nothing" > "/dev/stderr"; exit 1 }
        printf "  %5d | %9.2f %9.2f %6.2f | %9.2f %9.2f %6.2f | %11.2f %11.2f\n", n, t["given"],
            t["any"], t["any"] / t["given"], o["given"], o["any"], o["any"] / o["given"],
            t["given"] / o["given"], t["any"] / o["any"] }'
done
