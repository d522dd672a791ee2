#!/usr/bin/env bash
# The thread model under tcrun (docs/runtime.md, "Threads"): thread_test with 2 to 8 threads
# on their own communicators at 2, 3 and 4 ranks, over shared memory and over TCP only, then
# two threads on one communicator, then 4 threads creating communicators at once.
#   tests/integration/run_threads.sh BINDIR [--quick]
# BINDIR holds tools/tcrun/tcrun and tests/integration/thread_test (tools/ci/test.sh stashes
# them per build: opt, asan, tsan). --quick: fewer rounds (for the sanitizer builds).
set -uo pipefail
bin=${1:?usage: run_threads.sh BINDIR [--quick]}
iters=12
[ "${2:-}" = --quick ] && iters=3
tcrun=$bin/tools/tcrun/tcrun
prog=$bin/tests/integration/thread_test
fail=0

run() {
    local what=$1
    shift
    echo "--- $what"
    if ! timeout -k 10 600 "$@"; then
        echo "run_threads: FAILED: $what" >&2
        fail=1
    fi
}

# the flight recorders dumped meanwhile by the observer thread at 2 ranks (thread_test.c)
frdir=$(mktemp -d /tmp/tc-threads-fr.XXXXXX)
trap 'rm -rf "$frdir"' EXIT
for n in 2 3 4; do
    threads=$((n == 2 ? 8 : n == 3 ? 4 : 2))
    fr=$([ "$n" = 2 ] && echo "TC_FR_DIR=$frdir" || echo "TC_FR_DIR=")
    run "$n ranks, $threads threads" env "$fr" "$tcrun" -n "$n" "$prog" --threads "$threads" \
        --iters "$iters"
done
run "2 ranks, 3 threads, TCP only" env TC_SHM=0 "$tcrun" -n 2 "$prog" --threads 3 --iters "$iters"
run "3 ranks, two threads on one communicator" "$tcrun" -n 3 "$prog" --same-comm
# asynchronous collectives of several communicators in flight at once on the lanes
for n in 2 3 4; do
    run "$n ranks, $((n == 2 ? 3 : 4)) threads, bursts of asynchronous small collectives" \
        "$tcrun" -n "$n" "$prog" --threads $((n == 2 ? 3 : 4)) --iters $((iters * 2)) --burst
done
# communicators created at the same time by several threads must get distinct ids
for n in 2 3; do
    run "$n ranks, 4 threads creating communicators" "$tcrun" -n "$n" "$prog" --threads 4 \
        --iters $((iters * 10)) --create
    run "$n ranks, 4 threads shrinking" "$tcrun" -n "$n" "$prog" --threads 4 \
        --iters $((iters * 5)) --shrinks
done
exit $fail
