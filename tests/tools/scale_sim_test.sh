#!/bin/sh
# tc-scale-sim runs the watch graph and the schedules at job sizes no test can
# launch: at 131072 and 100000 ranks the graph is symmetric, every live rank
# hears of the failures, a verdict crosses the job within the diameter that
# runtime/include/tcomms/runtime/watch.h states (ceil(log2 n) + 1 hops, one
# more with ranks failed), a rank's endpoints stay far below the job size,
# and the shrink agreement (every rank's state machine run) agrees with at
# most 2 log2 n neighbours per rank where the all-to-all one sends n - 1
# messages a round. Bad arguments are usage errors. Size "large": about 15 s
# here, too long to repeat under the sanitizers (agree_protocol_test and the
# fuzzer cover the state machine there).
set -u
sim=tools/tc-sim/tc-scale-sim
fails=0
fail() {
    echo "FAIL: $*" >&2
    fails=$((fails + 1))
}

check() { # ranks local failures max_hops max_neighbours
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
    echo "$out" | grep -q "VIOLATION" && fail "$1 ranks: $(echo "$out" | grep VIOLATION)"
    nb=$(echo "$out" | sed -n 's/^graph: r +- 2^k, \([0-9]*\) neighbours.*/\1/p')
    [ -n "$nb" ] && [ "$nb" -le "$5" ] || fail "$1 ranks: $nb agreement neighbours (at most $5)"
    agreed=$(echo "$out" | sed -n 's/.* survivors agreed on \([0-9]*\) failed.*/\1/p')
    [ -n "$agreed" ] && [ "$agreed" -le "$3" ] || # a rank crashing late stays in: the next shrink
        fail "$1 ranks: the agreement ended with '$agreed' failed ranks (at most $3)"
    echo "$out" | grep -q "per rank per round $(($1 - 1)) messages of $((24 + 4 * $3)) B" ||
        fail "$1 ranks: the all-to-all agreement's message count or size"
}

check 131072 8 1 18 34
check 100000 8 16 19 34
check 4096 1 3 14 24

"$sim" --ranks 1 >/dev/null 2>&1 && fail "--ranks 1 accepted"
"$sim" --ranks 64 --coll nosuch >/dev/null 2>&1 && fail "an unknown collective accepted"
"$sim" --ranks 64 --bogus 1 >/dev/null 2>&1 && fail "an unknown option accepted"
[ "$fails" -eq 0 ] && echo "scale_sim_test: ok"
exit "$fails"
