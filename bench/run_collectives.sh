#!/usr/bin/env bash
# tcomms collectives beside Open MPI's, Gloo's (C++) and PyTorch's gloo backend, in one run.
#   bench/run_collectives.sh [--ranks "2 4"] [--colls "all_reduce reduce ..."] [--min 8]
#                            [--max 64M] [--factor 2] [--quick]
# Builds tcperf and tcrun with Bazel (-c opt), bench/peers/mpi_coll.c with mpicc and
# bench/peers/gloo_coll.cc with g++; runs bench/peers/torch_coll.py with /usr/bin/python3.
# For each (collective, ranks) prints, per size, time and bus bandwidth (nccl-tests
# definitions) of: tcomms with its defaults (shared memory between local ranks), tcomms over
# TCP only (TC_SHM=0), Open MPI with its defaults (shared memory) and with TCP only
# (--mca btl tcp,self), Gloo over TCP and PyTorch's gloo backend (TCP); then the ratios
# tcomms busbw / peer busbw (> 1 favours tcomms), shared memory against shared memory and TCP
# against TCP. A peer that is missing or fails shows "n/a" with the reason. Machines here are
# shared and small: quote medians of several runs, never one absolute number.
# Environment: ITERS/WARMUP (default 20/5) for sizes up to LARGE (1M), LARGE_ITERS/
# LARGE_WARMUP (5/2) above it; RUN_TIMEOUT (s, per launch, default 600); BAZEL_STARTUP (e.g.
# "--output_base=/tmp/ob"); TCPERF and TCRUN (prebuilt binaries: skip the Bazel build).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

all_colls="all_reduce reduce broadcast all_gather reduce_scatter all_to_all gather scatter barrier"
ranks="2 4"
colls=$all_colls
min=8
max=64M
factor=2
iters=${ITERS:-20}
warmup=${WARMUP:-5}
large=${LARGE:-1M}
large_iters=${LARGE_ITERS:-5}
large_warmup=${LARGE_WARMUP:-2}
run_timeout=${RUN_TIMEOUT:-600}

usage() {
    sed -n '2,4p' "$0" | sed 's/^# \{0,1\}//'
    echo "collectives: $all_colls; --quick: 8 B to 64 KiB by 8, 5 iterations (smoke test)"
}
while [ $# -gt 0 ]; do
    case $1 in
    --ranks) ranks=$2; shift 2 ;;
    --colls) colls=$2; shift 2 ;;
    --min) min=$2; shift 2 ;;
    --max) max=$2; shift 2 ;;
    --factor) factor=$2; shift 2 ;;
    --quick) max=64K; factor=8; iters=5; warmup=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
    esac
done
for c in $colls; do
    case " $all_colls " in
    *" $c "*) ;;
    *) echo "run_collectives: unknown collective $c" >&2; exit 2 ;;
    esac
done
for n in $ranks; do
    [[ $n =~ ^[0-9]+$ && $n -ge 2 ]] || { echo "run_collectives: bad rank count $n" >&2; exit 2; }
done
min_b=$(to_bytes "$min")
max_b=$(to_bytes "$max")
large_b=$(to_bytes "$large")
[[ $factor =~ ^[0-9]+$ && $factor -ge 2 && $min_b -ge 1 && $min_b -le $max_b ]] ||
    { echo "run_collectives: bad --min/--max/--factor" >&2; exit 2; }

out=$(mktemp -d /tmp/tc-coll.XXXXXX)
: >"$out/results" # tool nranks coll bytes time_us
: >"$out/notes"   # tool nranks coll why (for n/a)
declare -A why     # tool -> why it cannot run at all
tools="tc tctcp ompi ompitcp gloo torch"
note_all() { # tool why: the tool is n/a for every (collective, ranks)
    why[$1]=$2
    echo "# n/a $1: $2" >&2
}

# ---- peers' packages -------------------------------------------------------------------------
missing=()
for p in libgloo-dev python3-torch; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ]; then
        tools/setup/install-deps.sh --bench ||
            echo "# install-deps.sh --bench failed; the peers it would install show n/a" >&2
    else
        echo "# missing ${missing[*]}: install with 'sudo tools/setup/install-deps.sh --bench'" >&2
    fi
fi

# ---- builds ----------------------------------------------------------------------------------
if ! build_tc "$out/bazel.log"; then
    note_all tc "$build_why"
    why[tctcp]=${why[tc]}
fi
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
    note_all ompi "no mpicc/mpirun (package openmpi-bin libopenmpi-dev)"
elif ! mpicc -O2 -o "$out/mpi_coll" bench/peers/mpi_coll.c >"$out/mpicc.log" 2>&1; then
    note_all ompi "mpicc failed: $out/mpicc.log"
fi
[ -z "${why[ompi]:-}" ] || why[ompitcp]=${why[ompi]}
if [ ! -e /usr/include/gloo/allreduce.h ]; then
    note_all gloo "no Gloo headers (package libgloo-dev)"
elif ! g++ -O2 -std=c++17 -o "$out/gloo_coll" bench/peers/gloo_coll.cc -lgloo \
    >"$out/g++.log" 2>&1; then
    note_all gloo "g++ -lgloo failed: $out/g++.log"
fi
if ! /usr/bin/python3 -c 'import torch.distributed as d; assert d.is_gloo_available()' \
    >"$out/torch.log" 2>&1; then
    note_all torch "no torch.distributed with gloo in /usr/bin/python3 (package python3-torch)"
fi

# ---- runs ------------------------------------------------------------------------------------
peer_sweep=(-b "$min_b" -e "$max_b" -f "$factor" -n "$iters" -w "$warmup" -L "$large_b"
    -N "$large_iters" -W "$large_warmup")
colls_csv=$(echo $colls | tr ' ' ',')

collect() { # tool nranks file rc [colls]: rows and "n/a" lines of one launch; n/a for what
    # of colls (default: all asked for) has no row
    local t=$1 n=$2 f=$3 rc=$4 c reason
    awk -v t="$t" -v n="$n" -v cs=" $all_colls " \
        'index(cs, " " $1 " ") && NF == 5 && $2 ~ /^[0-9]+$/ { print t, n, $1, $2, $3 }' \
        "$f" >>"$out/results"
    sed -n "s|^# \([a-z_]*\) n/a: \(.*\)$|$t $n \1 \2|p" "$f" >>"$out/notes"
    for c in ${5:-$colls}; do
        grep -q "^$t $n $c " "$out/results" "$out/notes" 2>/dev/null && continue
        reason="exit status $rc: $(awk 'NF { l = $0 } END { print substr(l, 1, 120) }' \
            "$f.err" 2>/dev/null || true)"
        [ "$rc" -ne 124 ] || reason="timed out after ${run_timeout}s"
        echo "$t $n $c $reason" >>"$out/notes"
    done
}

launch_n() { # nranks outfile cmd... (@RANK@ replaced by the rank): one process per rank
    local n=$1 o=$2 r rc=0 st pid
    shift 2
    local -A alive=()
    for ((r = 0; r < n; r++)); do
        timeout "$run_timeout" "${@//@RANK@/$r}" >"$o.$r" 2>"$o.err.$r" &
        alive[$!]=1
    done
    while [ ${#alive[@]} -gt 0 ]; do # the first failure stops the others
        st=0 pid=""
        wait -n -p pid "${!alive[@]}" || st=$?
        [ -n "$pid" ] || break
        unset "alive[$pid]"
        if [ "$st" -ne 0 ] && [ "$rc" -eq 0 ]; then
            rc=$st
            [ ${#alive[@]} -eq 0 ] || kill "${!alive[@]}" 2>/dev/null || true
        fi
    done
    cp "$o.0" "$o"
    cat "$o".err.* >"$o.err"
    return "$rc"
}

tc_sweep() { # outfile tcperf-args...: the sweep in two runs, fewer iterations above LARGE
    local f=$1
    shift
    (
        if [ -n "$s1" ]; then
            "${cmd[@]}" "$@" -b "$s1" -e "$e1" -f "$factor" -n "$iters" -w "$warmup" -c 0 ||
                exit $?
        fi
        if [ -n "$s2" ]; then
            "${cmd[@]}" "$@" -b "$s2" -e "$e2" -f "$factor" -n "$large_iters" \
                -w "$large_warmup" -c 0 || exit $?
        fi
    ) >"$f.raw" 2>"$f.err"
}

run_tcperf() { # tool nranks coll [env...]: tcperf --coll coll, rows into results
    local t=$1 n=$2 c=$3 f=$out/$1.$2.$3 rc=0 s
    shift 3
    local cmd=(env "$@" "$tcrun" -n "$n" --timeout "$run_timeout" "$tcperf")
    local s1 e1 s2 e2
    split_sweep "$min_b" "$max_b" "$factor" "$large_b"
    if [ "$c" = barrier ]; then # moves no bytes: one size is enough
        s1=$min_b e1=$min_b s2="" e2=""
    fi
    tc_sweep "$f" --coll "$c" || rc=$?
    if [ "$rc" -ne 0 ] && grep -qE "invalid option|unrecognized option" "$f.err"; then
        if [ "$c" != all_reduce ]; then
            echo "$t $n $c tcperf has no --coll $c yet" >>"$out/notes"
            return
        fi
        rc=0 # a tcperf from before --coll: all_reduce is its only collective
        tc_sweep "$f" || rc=$?
    fi
    # nccl-tests rows: size count type redop root time(us) ...: the out-of-place time
    sed 's/^\[[0-9]*\] //' "$f.raw" | awk -v c="$c" '
        $1 !~ /^#/ && $1 ~ /^[0-9]+$/ && NF >= 6 && $6 ~ /^[0-9.]+$/ {
            if (c != "barrier") { if ($1 > 0) print c, $1, $6, 0, 0 }
            else if (!done++) print c, 0, $6, 0, 0
        }' >"$f"
    collect "$t" "$n" "$f" "$rc" "$c"
}

machine_line
echo "# sweep: $min_b to $max_b B by $factor; $iters iterations ($warmup warm-up) up to" \
    "$large_b B, $large_iters ($large_warmup) above; raw outputs in $out"
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
for n in $ranks; do
    for c in $colls; do
        [ -n "${why[tc]:-}" ] || run_tcperf tc "$n" "$c"
        [ -n "${why[tctcp]:-}" ] || run_tcperf tctcp "$n" "$c" TC_SHM=0
    done
    if [ -z "${why[ompi]:-}" ]; then
        rc=0
        timeout "$run_timeout" "${mpirun[@]}" -np "$n" "$out/mpi_coll" -c "$colls_csv" \
            "${peer_sweep[@]}" >"$out/ompi.$n" 2>"$out/ompi.$n.err" || rc=$?
        collect ompi "$n" "$out/ompi.$n" "$rc"
        rc=0
        timeout "$run_timeout" "${mpirun[@]}" --mca btl tcp,self -np "$n" "$out/mpi_coll" \
            -c "$colls_csv" "${peer_sweep[@]}" >"$out/ompitcp.$n" 2>"$out/ompitcp.$n.err" || rc=$?
        collect ompitcp "$n" "$out/ompitcp.$n" "$rc"
    fi
    if [ -z "${why[gloo]:-}" ]; then
        store=$(mktemp -d "$out/gloo-store.XXXXXX")
        rc=0
        launch_n "$n" "$out/gloo.$n" "$out/gloo_coll" -r @RANK@ -s "$n" -p "$store" \
            -c "$colls_csv" "${peer_sweep[@]}" || rc=$?
        collect gloo "$n" "$out/gloo.$n" "$rc"
    fi
    if [ -z "${why[torch]:-}" ]; then
        rc=0
        launch_n "$n" "$out/torch.$n" env OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=lo \
            /usr/bin/python3 bench/peers/torch_coll.py -r @RANK@ -s "$n" \
            -p "$out/torch-init.$n" -c "$colls_csv" "${peer_sweep[@]}" || rc=$?
        collect torch "$n" "$out/torch.$n" "$rc"
    fi
done

# ---- tables ----------------------------------------------------------------------------------
report() { # mode [coll nranks]: "table" for one (collective, ranks), "summary" for all
    awk -v mode="$1" -v coll="${2:-}" -v n="${3:-0}" -v tools="$tools" -v colls="$colls" \
        -v ranks="$ranks" -f bench/collectives_report.awk "$out/results" "$out/notes" "$out/why"
}
: >"$out/why"
for t in $tools; do
    [ -z "${why[$t]:-}" ] || echo "$t ${why[$t]}" >>"$out/why"
done
for c in $colls; do
    for n in $ranks; do
        echo
        report table "$c" "$n"
    done
done
echo
report summary
echo
echo "# raw outputs in $out"
