#!/bin/sh
# tc-scale-sim runs the watch graph and the schedules at job sizes no test can
# launch: at 131072 and 100000 ranks the graph is symmetric, every live rank
# hears of the failures, a verdict crosses the job within the diameter that
# runtime/include/tcomms/runtime/watch.h states (ceil(log2 n) + 1 hops, one
# more with ranks failed), and a rank's endpoints stay far below the job size.
# Bad arguments are usage errors.
set -u
sim=tools/tc-sim/tc-scale-sim
fails=0
fail() {
    echo "FAIL: $*" >&2
    fails=$((fails + 1))
}

check() { # ranks local failures max_hops
    out=$("$sim" --ranks "$1" --local "$2" --failures "$3") || {
        fail "tc-scale-sim --ranks $1 --local $2 --failures $3 exited $?"
        return
    }
    echo "$out"
    echo "$out" | grep -q "edges without their reverse: 0$" || fail "$1 ranks: an edge without its reverse"
    echo "$out" | grep -q "live ranks no verdict reaches: 0$" || fail "$1 ranks: a live rank not reached"
    hops=$(echo "$out" | sed -n 's/.*hears of each within \([0-9]*\) hops.*/\1/p')
    [ -n "$hops" ] && [ "$hops" -le "$4" ] || fail "$1 ranks, $3 failed: $hops hops (at most $4)"
    eps=$(echo "$out" | sed -n 's/.*first all_reduce .*: at most \([0-9]*\) .*/\1/p')
    [ -n "$eps" ] && [ "$eps" -le 64 ] || fail "$1 ranks: $eps endpoints per rank"
    echo "$out" | grep -q "per rank per round: $(($1 - 1)) messages of $((16 + ($1 + 7) / 8)) B" ||
        fail "$1 ranks: the agreement's message count or size"
}

check 131072 8 1 18
check 100000 8 16 19
check 4096 1 3 14

"$sim" --ranks 1 >/dev/null 2>&1 && fail "--ranks 1 accepted"
"$sim" --ranks 64 --coll nosuch >/dev/null 2>&1 && fail "an unknown collective accepted"
"$sim" --ranks 64 --bogus 1 >/dev/null 2>&1 && fail "an unknown option accepted"
[ "$fails" -eq 0 ] && echo "scale_sim_test: ok"
exit "$fails"
