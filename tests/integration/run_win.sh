#!/usr/bin/env bash
# Windows (tc_win_*) under tcrun (and once under mpirun): win_test at 2, 3 and 4 ranks over the default transports (self,
# shared memory), at 2 and 3 ranks over TCP only (TC_SHM=0), and a target killed (--kill) over
# each; windows over 1 GiB (--large) over each; a stopped TCP target with an abort (--abort) and
# with a fire-and-forget put's timeout (--timeout). Each run is bounded; a run passes when every
# rank prints "0 failures" (and, where no rank is killed, tcrun exits 0).
#   tests/integration/run_win.sh BINDIR [--quick]
# BINDIR holds tools/tcrun/tcrun and tests/integration/win_test, win_halo and win_pipeline (the
# examples of docs/examples; tools/ci/test.sh stashes them
# per build: opt, asan). --quick: fewer rounds and 1 MiB messages (for the sanitizer builds).
set -uo pipefail
bin=${1:?usage: run_win.sh BINDIR [--quick]}
quick=
[ "${2:-}" = --quick ] && quick=--quick
tcrun=$bin/tools/tcrun/tcrun
prog=$bin/tests/integration/win_test
fail=0

# run WHAT RANKS WANT [ENV...] -- ARGS: WANT ranks must end with "0 failures"
run() {
    local what=$1 n=$2 want=$3
    shift 3
    local envs=()
    while [ "$1" != -- ]; do
        envs+=("$1")
        shift
    done
    shift
    echo "--- $what"
    local out rc=0
    out=$(env "${envs[@]}" timeout -k 10 300 "$tcrun" --keep-going --timeout 240 -n "$n" \
        "$prog" "$@" 2>&1) || rc=$?
    local clean
    clean=$(grep -c ' 0 failures' <<<"$out")
    # every rank alive must also exit 0 (a sanitizer's report at exit comes after the count)
    if [ "$clean" -lt "$want" ] || grep -qE ': FAIL:|Sanitizer' <<<"$out" ||
        { [ "$want" -eq "$n" ] && [ "$rc" -ne 0 ]; }; then
        echo "$out" | tail -n 40
        echo "run_win: FAILED: $what ($clean of $want ranks clean, tcrun exit $rc)" >&2
        fail=1
    else
        grep -E 'failures|peers over|killed rank' <<<"$out" | head -n 8
    fi
}

for n in 2 3 4; do
    run "$n ranks" "$n" "$n" TC_LOG=warn -- $quick --seed $((RANDOM + n))
done
run "2 ranks, TCP only" 2 2 TC_SHM=0 -- $quick --seed $RANDOM
run "3 ranks, TCP only" 3 3 TC_SHM=0 -- $quick --seed $RANDOM
run "2 ranks, windows over 1 GiB" 2 2 -- --large
run "2 ranks, TCP only, windows over 1 GiB" 2 2 TC_SHM=0 -- --large
# abort ends a put pending on a stopped TCP target (its progress thread cannot take the data)
run "2 ranks, TCP only, abort of a pending put" 2 2 TC_SHM=0 TC_LOG=none -- --abort
# a fire-and-forget put to a stopped TCP target ends by its own timeout (set without a clock read)
run "2 ranks, TCP only, a fire-and-forget put's timeout" 2 2 TC_SHM=0 TC_LOG=none -- --timeout
# the victim (the last rank) dies: the others report TC_ERR_PEER_FAILED naming it
run "3 ranks, a target killed" 3 2 TC_LOG=none -- --kill
run "2 ranks, TCP only, a target killed" 2 1 TC_SHM=0 TC_LOG=none -- --kill
# Open MPI's mpirun as the PMIx server, without the revoke part: after a rank's PMIx notice (the
# revoke's) mpirun itself deadlocks once the ranks have exited (docs/fault_tolerance.md)
if command -v mpirun >/dev/null; then
    echo "--- mpirun -np 3"
    rc=0
    out=$(timeout -k 10 300 mpirun --allow-run-as-root --oversubscribe -np 3 "$prog" $quick --skip revoke 2>&1) ||
        rc=$?
    if [ "$(grep -c ' 0 failures' <<<"$out")" -ne 3 ] || [ "$rc" -ne 0 ] ||
        grep -qE ': FAIL:|Sanitizer' <<<"$out"; then
        echo "$out" | tail -n 40
        echo "run_win: FAILED: mpirun -np 3 (exit $rc)" >&2
        fail=1
    fi
fi
# docs/examples: a halo exchange and a pipeline, each element checked by the program
for ex in win_halo win_pipeline; do
    echo "--- $ex, 4 ranks"
    if ! out=$(timeout -k 10 120 "$tcrun" -n 4 "$bin/tests/integration/$ex" 2>&1) ||
        [ "$(grep -c ' ok$' <<<"$out")" -ne 4 ]; then
        echo "$out" | tail -n 20
        echo "run_win: FAILED: $ex" >&2
        fail=1
    fi
done
exit $fail
