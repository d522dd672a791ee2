#!/usr/bin/env bash
# tcomms one-sided windows (tcperf --coll put|get|put_signal) beside Open MPI's passive-target
# RMA (bench/peers/mpi_rma.c: MPI_Win_allocate, MPI_Win_lock_all, MPI_Put/MPI_Get,
# MPI_Win_flush, MPI_Win_unlock_all) at 2 ranks, over shared memory and over TCP, in one run.
#   bench/run_rma.sh [--ops "put get put_signal"] [--min 8] [--max 64M] [--factor 2]
#                    [--burst 16] [--win allocate|create] [--quick]
# Builds tcperf and tcrun with Bazel (-c opt) and mpi_rma with mpicc. Four runs per operation:
# tcomms with its defaults (shared memory between local ranks), tcomms over TCP only
# (TC_SHM=0), Open MPI with its defaults (osc sm: shared memory) and Open MPI over TCP only
# (--mca btl self,tcp --mca osc pt2pt: osc sm would bypass the BTLs and osc rdma cannot run on
# the tcp BTL). Per size: latency (one operation + flush, us) and bandwidth (a burst of
# --burst operations + one flush, GB/s), and the ratios tcomms / Open MPI (latency: < 1
# favours tcomms; bandwidth: > 1 favours tcomms), shared memory against shared memory and TCP
# against TCP. Both programs check the data of their timed loops afterwards; a row with wrong
# data says WRONG and the exit status is 1. Machines here are shared and small: quote medians
# of several runs, never one absolute number.
# Environment: ITERS/WARMUP (default 100/10) for sizes up to LARGE (1M), LARGE_ITERS/
# LARGE_WARMUP (5/1) above it; RUN_TIMEOUT (s, per launch, default 600); BAZEL_STARTUP (e.g.
# "--output_base=/tmp/ob"); TCPERF and TCRUN (prebuilt binaries: skip the Bazel build).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

all_ops="put get put_signal"
ops=$all_ops
min=8
max=64M
factor=2
burst=16
win=allocate
iters=${ITERS:-100}
warmup=${WARMUP:-10}
large=${LARGE:-1M}
large_iters=${LARGE_ITERS:-5}
large_warmup=${LARGE_WARMUP:-1}
run_timeout=${RUN_TIMEOUT:-600}

usage() {
    sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'
    echo "--quick: 8 B to 64 KiB by 8, 5 iterations, burst 4 (smoke test)"
}
while [ $# -gt 0 ]; do
    case $1 in
    --ops) ops=$2; shift 2 ;;
    --min) min=$2; shift 2 ;;
    --max) max=$2; shift 2 ;;
    --factor) factor=$2; shift 2 ;;
    --burst) burst=$2; shift 2 ;;
    --win) win=$2; shift 2 ;;
    --quick) max=64K; factor=8; iters=5; warmup=1; burst=4; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
    esac
done
for o in $ops; do
    case " $all_ops " in
    *" $o "*) ;;
    *) echo "run_rma: unknown operation $o ($all_ops)" >&2; exit 2 ;;
    esac
done
[ "$win" = allocate ] || [ "$win" = create ] ||
    { echo "run_rma: --win allocate|create" >&2; exit 2; }
min_b=$(to_bytes "$min")
max_b=$(to_bytes "$max")
large_b=$(to_bytes "$large")
[[ $factor =~ ^[0-9]+$ && $factor -ge 2 && $burst =~ ^[0-9]+$ && $burst -ge 1 &&
    $min_b -ge 1 && $min_b -le $max_b ]] ||
    { echo "run_rma: bad --min/--max/--factor/--burst" >&2; exit 2; }

out=$(mktemp -d /tmp/tc-rma.XXXXXX)
: >"$out/results" # tool op bytes lat_us bw_us_per_op wrong
: >"$out/notes"   # tool why (n/a)

# ---- builds ----------------------------------------------------------------------------------
tc_ok=1 ompi_ok=1
if ! build_tc "$out/bazel.log"; then
    tc_ok=0
    echo "tc $build_why" >>"$out/notes"
fi
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
    ompi_ok=0
    echo "ompi no mpicc/mpirun (package openmpi-bin libopenmpi-dev)" >>"$out/notes"
elif ! mpicc -O2 -o "$out/mpi_rma" bench/peers/mpi_rma.c >"$out/mpicc.log" 2>&1; then
    ompi_ok=0
    echo "ompi mpicc failed: $out/mpicc.log" >>"$out/notes"
fi

# ---- runs ------------------------------------------------------------------------------------
split_sweep "$min_b" "$max_b" "$factor" "$large_b"

run_tcperf() { # tool op [env...]: tcperf --coll op, two launches (fewer iterations above LARGE)
    local t=$1 o=$2 f=$out/$1.$2 rc=0
    shift 2
    local cmd=(env "$@" "$tcrun" -n 2 --timeout "$run_timeout" "$tcperf" --coll "$o" -B "$burst"
        --win "$win" -c 1)
    (
        [ -z "$s1" ] || "${cmd[@]}" -b "$s1" -e "$e1" -f "$factor" -n "$iters" -w "$warmup" ||
            exit $?
        [ -z "$s2" ] || "${cmd[@]}" -b "$s2" -e "$e2" -f "$factor" -n "$large_iters" \
            -w "$large_warmup" || exit $?
    ) >"$f.raw" 2>"$f.err" || rc=$?
    # rows: size count type redop root | lat time algbw busbw #wrong | bw time algbw busbw #wrong
    sed 's/^\[[0-9]*\] //' "$f.raw" | awk -v t="$t" -v o="$o" '
        $1 ~ /^[0-9]+$/ && NF == 13 { print t, o, $1, $6, $10, $9 }' >>"$out/results"
    [ "$rc" -eq 0 ] || echo "$t $o: exit status $rc: $(tail -1 "$f.err" 2>/dev/null)" >>"$out/notes"
}

run_mpi() { # tool [mpirun options...]
    local t=$1 rc=0
    shift
    local peer=(-o "$(echo $ops | tr ' ' ,)" -b "$min_b" -e "$max_b" -f "$factor" -n "$iters"
        -w "$warmup" -B "$burst" -L "$large_b" -N "$large_iters" -W "$large_warmup")
    [ "$win" = allocate ] || peer+=(-C)
    timeout "$run_timeout" mpirun --allow-run-as-root --oversubscribe --bind-to none "$@" -np 2 \
        "$out/mpi_rma" "${peer[@]}" >"$out/$t" 2>"$out/$t.err" || rc=$?
    awk -v t="$t" 'NF == 5 && $2 ~ /^[0-9]+$/ { print t, $1, $2, $3, $4, $5 }' "$out/$t" \
        >>"$out/results"
    [ "$rc" -eq 0 ] ||
        echo "$t: exit status $rc: $(tail -1 "$out/$t.err" 2>/dev/null)" >>"$out/notes"
}

machine_line
echo "# 2 ranks, $min_b to $max_b B by $factor, window: $win, burst $burst; $iters iterations" \
    "($warmup warm-up) up to $large_b B, $large_iters ($large_warmup) above; raw outputs in $out"
for o in $ops; do
    if [ "$tc_ok" -eq 1 ]; then
        run_tcperf tc "$o"
        run_tcperf tctcp "$o" TC_SHM=0
    fi
done
if [ "$ompi_ok" -eq 1 ]; then
    run_mpi ompi
    run_mpi ompitcp --mca btl self,tcp --mca osc pt2pt
fi

# ---- tables ----------------------------------------------------------------------------------
status=0
for o in $ops; do
    echo
    awk -v op="$o" -v min="$min_b" -v max="$max_b" -v f="$factor" -f bench/rma_report.awk \
        "$out/results"
done
echo
if awk '$6 > 0 { bad = 1 } END { exit !bad }' "$out/results"; then
    echo "# WRONG data in a timed loop: see the rows marked WRONG"
    status=1
fi
if [ -s "$out/notes" ]; then
    echo "# n/a or failed:"
    sed 's/^/#   /' "$out/notes"
    grep -q '^tc' "$out/notes" && status=1
fi
echo "# put_signal in Open MPI: MPI_Put, MPI_Win_flush, MPI_Accumulate(+1) (no fused call)"
echo "# raw outputs in $out"
exit $status
