#!/usr/bin/env bash
# Heartbeats against data (tests/cluster/hb_mute_test.c): 2 ranks on a 2-node virtual cluster
# (one per node, the torchrun environment, the default heartbeat settings), rank 1 sending no
# heartbeats (TC_FAULT_INJECT=mute:rank=1, as when they wait behind bulk data on a slow link):
#   stream  4 s of checked 1 MiB all-reduces, rank 1's data flowing all along: nobody is
#           failed (before the transport's received bytes counted as a heartbeat, rank 0
#           failed rank 1 after 2 s);
#   quiet   nothing sent: rank 0 fails rank 1 for its heartbeats within 5 s (the mute works).
#   run_hb_mute.sh BIN_DIR [--trials N]
# BIN_DIR holds tests/cluster/hb_mute_test (as tools/ci/test.sh stashes it). Needs root; tears
# the cluster down on every exit and checks that nothing is left.
set -uo pipefail
bin=${1:?usage: run_hb_mute.sh BIN_DIR [--trials N]}
trials=1
[[ ${2:-} == --trials ]] && trials=${3:?--trials N}
here=$(cd "$(dirname "$0")" && pwd)
prog=$(cd "$bin" && pwd)/tests/cluster/hb_mute_test
[[ -x $prog ]] || { echo "run_hb_mute: $prog is missing (build it first)" >&2 && exit 2; }
vc=$here/vcluster.sh
work=$(mktemp -d /tmp/tc-hbmute.XXXXXX)
cleanup() {
    local rc=$?
    "$vc" down "$work/vc" >/dev/null 2>&1
    if ! "$vc" check-clean "$work/vc"; then
        echo "run_hb_mute: FAIL: the cluster left something behind" >&2
        rc=1
    fi
    rm -rf "$work"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
"$vc" up "$work/vc" --nodes 2 >/dev/null || exit 1

port=$((29300 + RANDOM % 100))
failed=0
# job NAME ARGS...: both ranks; their output in $work/NAME.R
job() {
    local name=$1 k rc=0 pids=()
    shift
    port=$((port + 1))
    for k in 0 1; do
        "$vc" run "$work/vc" "$k" env MASTER_ADDR=tcn0 MASTER_PORT=$port RANK=$k WORLD_SIZE=2 \
            LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 TC_FAULT_INJECT=mute:rank=1 \
            timeout -k 5 60 "$prog" "$@" >"$work/$name.$k" 2>&1 &
        pids+=($!)
    done
    for k in 0 1; do
        wait "${pids[$k]}" || rc=1
    done
    for k in 0 1; do
        grep -q "^rank $k: 0 failures" "$work/$name.$k" || rc=1
    done
    if ((rc == 0)); then
        echo "  $name: ok: $(grep -h "^rank 0: \(stream\|quiet\)" "$work/$name.0")"
    else
        failed=$((failed + 1))
        echo "  $name: FAILED; each rank's output:"
        for k in 0 1; do
            echo "  --- rank $k"
            tail -n 12 "$work/$name.$k" | sed 's/^/    /'
        done
    fi
}
for ((t = 1; t <= trials; t++)); do
    job "stream.$t" stream 4
    job "quiet.$t" quiet
done
echo "heartbeats against data: $((2 * trials - failed)) runs passed, $failed failed"
((failed == 0))
