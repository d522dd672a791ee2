#!/usr/bin/env bash
# Communicator ids under tcrun (tests/integration/comm_ids_test.c): 1.1 million creations at 2
# ranks, more than the ids a process has (they pass only when ids are reused; 30000 under ASan,
# too slow for more), and a late message of a communicator whose receive timed out, at 2 and 3
# ranks (the next communicator must not take that id), and dups aborted by one rank in turn at 2
# and 3 ranks (ids spoilt on one rank only), the same with shrinks, and shrinks one after the
# other (each reuses the id of the one before). Every run is bounded by `timeout` and
# tcrun's --timeout.
#   comm_ids_test.sh TCRUN COMM_IDS_TEST
set -uo pipefail
tcrun=$1
prog=$2
fail=0
# run NAME RANKS ARGS...: passes when every rank prints ", 0 failures" and none prints FAIL.
run() {
    local name=$1 n=$2
    shift 2
    local out ok
    out=$(TC_LOG=error timeout -k 5 200 "$tcrun" --timeout 180 -n "$n" "$prog" "$@" 2>&1)
    ok=$(grep -c ', 0 failures' <<<"$out")
    if [ "$ok" -ne "$n" ] || grep -q 'FAIL' <<<"$out"; then
        echo "FAIL  $name ($ok of $n ranks clean):"
        tail -n 30 <<<"$out" | sed 's/^/      /'
        fail=1
    else
        echo "ok    $name"
    fi
}
if [ -n "${ASAN_OPTIONS:-}" ]; then # under ASan 1.1 million did not finish in 180 s: reuse only
    run "30000 creations, 2 ranks" 2 cycles 30000
else
    run "1.1 million creations, 2 ranks" 2 cycles 1100000
fi
run "3000 creations, 3 ranks" 3 cycles 3000
run "1500 dups, each aborted by one rank in turn, 2 ranks" 2 aborts 1500
run "1000 dups, each aborted by one rank in turn, 3 ranks" 3 aborts 1000
run "2 x 1100 dups aborted by one rank then the other (the agreement's fallback), 2 ranks" 2 \
    aborts 2200 1100
run "600 shrinks, each aborted by one rank in turn, 2 ranks" 2 shrink-aborts 600
run "600 shrinks, each aborted by one rank in turn, 3 ranks" 3 shrink-aborts 600
run "2 x 300 shrinks aborted by one rank then the other, 2 ranks" 2 shrink-aborts 600 300
for n in 2 3; do
    run "a late message of a destroyed communicator, $n ranks" "$n" stale
done
# shrinks one after the other reuse the id of the one destroyed before: one id in the whole log
for n in 2 3; do
    out=$(TC_LOG=runtime=info timeout -k 5 200 "$tcrun" --timeout 180 -n "$n" "$prog" shrinks 200 2>&1)
    ids=$(grep -o "new comm 'world.shrunk' id [0-9]*" <<<"$out" | sort -u)
    if [ "$(grep -c ', 0 failures' <<<"$out")" -ne "$n" ] || [ "$(wc -l <<<"$ids")" -ne 1 ] ||
        [ -z "$ids" ]; then
        echo "FAIL  200 shrinks, $n ranks: want one id, got $(wc -l <<<"$ids"):"
        grep -E 'FAIL|ERROR' <<<"$out" | head -n 10 | sed 's/^/      /'
        head -n 5 <<<"$ids" | sed 's/^/      /'
        fail=1
    else
        echo "ok    200 shrinks, $n ranks, one id"
    fi
done
exit $fail
