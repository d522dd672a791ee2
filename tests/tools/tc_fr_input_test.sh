#!/usr/bin/env bash
# tc-fr on bad input: every file that is not a dump is named with why, the status is 2, and
# nothing grows without bound (a 200-byte dump claiming 2e9 ranks took 23 GB; a deeply nested
# one ended in a Python traceback; unreadable dumps were counted as "wrote no dump", status 0).
set -uo pipefail
tcfr=$1
tmp=${TEST_TMPDIR:-$(mktemp -d)}
fail() { echo "FAIL: $*" >&2; exit 1; }

dump() { # dump DIR RANK [SIZE] [STATE]: a dump of a 3-rank all_reduce stuck on rank 2
    local size=${3:-3} state=${4:-completed}
    mkdir -p "$1"
    printf '{"version": 1, "comm": "world", "comm_id": 0, "rank": %s, "size": %s, "ops": [
  {"seq": 1, "coll": "all_reduce", "dtype": "float32", "count": 4, "op": "sum", "root": -1,
   "algo": "ring", "state": "%s", "awaited": [%s]}]}\n' "$2" "$size" "$state" \
        "$([ "$state" = completed ] && echo "" || echo 2)" >"$1/tc_fr.world.$2.json"
}
check() { # check DIR WANT_STATUS WORDS...: tc-fr DIR, bounded in memory and time
    local dir=$1 want=$2 out rc
    shift 2
    out=$( (ulimit -v 1000000; timeout 30 python3 "$tcfr" "$dir") 2>&1)
    rc=$?
    [ "$rc" = "$want" ] || fail "$dir: status $rc, want $want: $out"
    for w in "$@"; do
        grep -qF -- "$w" <<<"$out" || fail "$dir: output lacks '$w': $out"
    done
    if grep -q Traceback <<<"$out"; then fail "$dir: a traceback: $out"; fi
}

# a good job: ranks 0 and 1 wait for rank 2, which wrote nothing
dump "$tmp/good" 0 3 running && dump "$tmp/good" 1 3 running
check "$tmp/good" 0 "rank 2 wrote no dump" "VERDICT comm 'world': rank 2"

cp -r "$tmp/good" "$tmp/huge" && dump "$tmp/huge" 1 2000000000
check "$tmp/huge" 2 "tc_fr.world.1.json: not a readable dump: size 2000000000 is not a communicator size"

cp -r "$tmp/good" "$tmp/deep"
python3 -c "print('[' * 200000 + ']' * 200000)" >"$tmp/deep/tc_fr.world.2.json"
check "$tmp/deep" 2 "tc_fr.world.2.json: not a readable dump: nested too deeply" \
    "rank 2's dump could not be read"

cp -r "$tmp/good" "$tmp/empty" && : >"$tmp/empty/tc_fr.world.2.json"
check "$tmp/empty" 2 "tc_fr.world.2.json: not a readable dump" "rank 2's dump could not be read"

cp -r "$tmp/good" "$tmp/rank" && dump "$tmp/rank" 7 && rm "$tmp/rank/tc_fr.world.7.json"
dump "$tmp/rank" 5 && sed -i 's/"rank": 5/"rank": -5/' "$tmp/rank/tc_fr.world.5.json"
check "$tmp/rank" 2 "rank -5 is not a rank of a communicator of 3"

cp -r "$tmp/good" "$tmp/dup" && cp "$tmp/dup/tc_fr.world.0.json" "$tmp/dup/tc_fr.world.9.json"
check "$tmp/dup" 2 "both hold rank 0 of comm 'world'"

# dumps of two runs in one directory (a stale one left from an earlier job): before the run id,
# rank 0 of an old run and rank 1 of a new one were taken for one job, and rank 2 was named
cp -r "$tmp/good" "$tmp/runs" && sed -i 's/"size": 3,/"size": 3, "run": "00aa11bb22cc33dd",/' \
    "$tmp/runs/tc_fr.world.0.json"
sed -i 's/"size": 3,/"size": 3, "run": "ffee0011ffee0011",/' "$tmp/runs/tc_fr.world.1.json"
check "$tmp/runs" 2 "dumps of 2 runs: 00aa11bb22cc33dd (1 dump), ffee0011ffee0011 (1 dump)" \
    "comm 'world' (run 00aa11bb22cc33dd, id 0, 3 ranks, 1 dumps)" "rank 1 wrote no dump" \
    "rank 0 wrote no dump"
sed -i 's/"run": "ffee0011ffee0011"/"run": "not hex!"/' "$tmp/runs/tc_fr.world.1.json"
check "$tmp/runs" 2 "run not hex! is not a run id"

# the library's own exchange (the small path's set-up vote) shares its operation's sequence
# number: shown, never taken for a collective that differs between ranks
dump "$tmp/vote" 0 3 running && dump "$tmp/vote" 1 3 running
sed -i 's/"all_reduce"/"small-message path vote"/' "$tmp/vote/tc_fr.world.1.json"
check "$tmp/vote" 0 "rank 1 is running in small-message path vote" "VERDICT comm 'world': rank 2"
if python3 "$tcfr" "$tmp/vote" | grep -q "where the others called"; then
    fail "the vote taken for a mismatched collective"
fi

# fields no dump would hold, each in rank 0's dump of the good job: they were read as they came
# (a sequence number beyond last_seq blamed the healthy ranks, status 0; an unknown state was
# shown as one; a dump of another size was taken for another communicator)
bad() { # bad NAME SED WORDS...: the good job with rank 0's dump edited by SED: status 2
    local name=$1 expr=$2
    shift 2
    cp -r "$tmp/good" "$tmp/$name" && sed -i "$expr" "$tmp/$name/tc_fr.world.0.json"
    check "$tmp/$name" 2 "$@"
}
bad last 's/"size": 3,/"size": 3, "last_seq": 0,/' \
    "ops[0] is #1, after the last operation begun (last_seq 0)"
bad lastneg 's/"size": 3,/"size": 3, "last_seq": -5,/' "last_seq -5 is not a sequence number"
bad state 's/"state": "running"/"state": "bogus"/' "ops[0] is in state bogus (not one of running,"
bad dtype 's/"dtype": "float32"/"dtype": 5/' "ops[0]: dtype 5 is not a name"
bad count 's/"count": 4/"count": -4/' "ops[0]: count -4 is not a count"
bad root 's/"root": -1/"root": 3/' "ops[0]: root 3 is not -1 or a rank of 3"
bad twice 's/"ops": \[/"ops": [{"seq": 1, "coll": "barrier", "state": "completed"},/' \
    "ops[1] and ops[0] are both collective #1"
bad size 's/"size": 3/"size": 4/' "the dumps of comm 'world' (id 0) disagree on its size (3, 4)"
# what a real dump holds passes: last_seq (at the end, as the library writes it), window
# operations numbered apart, and the set-up vote of the next operation (numbered after last_seq:
# a dump of a hang in the first small collective was refused)
cp -r "$tmp/good" "$tmp/real"
sed -i 's/"ops": \[/"ops": [{"seq": 7, "coll": "win_put", "state": "completed", "root": 1},/; s/}]}$/}, {"seq": 2, "coll": "small-message path vote", "state": "running"}], "last_seq": 1}/' \
    "$tmp/real/tc_fr.world.0.json"
check "$tmp/real" 0 "VERDICT comm 'world': rank 2"

if python3 "$tcfr" --bogus "$tmp/good" >/dev/null 2>"$tmp/err"; then fail "--bogus accepted"; fi
grep -q "unknown option --bogus" "$tmp/err" || fail "--bogus: $(cat "$tmp/err")"
echo PASS
