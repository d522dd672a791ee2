#!/usr/bin/env bash
# The small-message path under tcrun (tests/integration/small_test.c): correctness of every
# collective it serves at 2, 3 and 4 ranks, with the ranks calling in different styles, off on
# every rank when one pair is over tcp, off with TC_SMALL_MAX=0 and with TC_CHECK=1, a timeout
# (and its flight-recorder dump), a revoke and a dead peer while in it (blocking, with a work
# object, asynchronous), and a shrink after that death. Every run is bounded by `timeout` and tcrun's --timeout.
#   small_path_test.sh TCRUN SMALL_TEST
set -uo pipefail
tcrun=$1
prog=$2
fail=0
# run NAME RANKS CLEAN_RANKS [ENV=V...] -- ARGS...: passes when CLEAN_RANKS ranks print
# ", 0 failures" and none prints FAIL.
run() {
    local name=$1 n=$2 want=$3
    shift 3
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    local out
    out=$(env "${envs[@]}" timeout -k 5 120 "$tcrun" --keep-going --timeout 100 -n "$n" \
        "$prog" "$@" 2>&1)
    local ok
    ok=$(grep -c ', 0 failures' <<<"$out")
    if [ "$ok" -ne "$want" ] || grep -q 'FAIL' <<<"$out"; then
        echo "FAIL  $name ($ok of $want ranks clean):"
        tail -n 30 <<<"$out" | sed 's/^/      /'
        fail=1
    else
        echo "ok    $name"
    fi
}
for n in 2 3 4; do
    run "check, $n ranks" "$n" "$n" TC_LOG=warn -- check
done
# Ranks calling one collective in different styles meet on the lanes (before, a blocking call
# with a work object or an asynchronous one took the general path and the others waited for it
# until the timeout); eight asynchronous small operations in flight at once.
for n in 2 3 4; do
    run "mixed styles, $n ranks" "$n" "$n" TC_LOG=warn TC_TIMEOUT_S=30 -- mixed
done
# An asynchronous first call returns at once while the set-up's vote waits for a late rank; with
# a pair over tcp the vote turns the path off and that call's work runs on the general path.
run "an asynchronous first call, 3 ranks" 3 3 TC_LOG=warn -- first
run "an asynchronous first call, the path voted off, 3 ranks" 3 3 TC_LOG=error \
    TC_SHM_FULL_PAIRS=0-1 -- first --off
# ... and the next call, blocking, waits for the set-up that first call began
for n in 2 3; do
    run "an asynchronous first call, then a blocking one, $n ranks" "$n" "$n" TC_LOG=warn \
        -- first-blocking
done
# Asynchronous operations post in issue order: many in flight at once do not wait for each other
for n in 2 3 4; do
    run "40 asynchronous all-reduces in flight, $n ranks" "$n" "$n" TC_LOG=warn TC_TIMEOUT_S=30 \
        -- order
done
# One rank's asynchronous operations fill the others' slots before they issue them; a blocking
# one on another communicator still gets through (the readers move them out of the slots)
for n in 2 3; do
    run "messages of operations not issued yet, $n ranks" "$n" "$n" TC_LOG=warn -- unissued
done
run "messages of blocking calls not issued yet, 8 threads, 2 ranks" 2 2 TC_LOG=warn \
    -- unissued-threads
run "messages of operations not issued yet, a communicator per pair, 3 ranks" 3 3 TC_LOG=warn \
    -- unissued-pairs
run "the same while tiny messages flow on the pair, 3 ranks" 3 3 TC_LOG=warn -- unissued-pairs --busy
# ... and a rank 400 gathers ahead of its waiting root: moved out up to the bound, said once
out=$(TC_LOG=warn timeout -k 5 120 "$tcrun" --timeout 100 -n 3 "$prog" unissued-cap 2>&1)
if [ "$(grep -c ', 0 failures' <<<"$out")" -eq 3 ] && ! grep -q FAIL <<<"$out" &&
    [ "$(grep -c "WARN: world rank 1's small messages .* reach the bound (1024 KiB or 256 messages)" <<<"$out")" -eq 1 ]; then
    echo "ok    a rank 400 gathers ahead, 3 ranks: moved out up to the bound, one warning"
else
    echo "FAIL  a rank 400 gathers ahead, 3 ranks:"
    tail -n 30 <<<"$out" | sed 's/^/      /'
    fail=1
fi
# Mixed backends (issue 21): the pair (0,1) finds no room in /dev/shm (TC_SHM_FULL_PAIRS plays
# the full /dev/shm) and talks over tcp, every other pair over shm. Ranks 0 and 1 vote against the
# path, so no rank takes it (before the vote, ranks 2 and 3 took it alone and waited for ever);
# every collective is checked element by element; ranks 0 and 1 say once which peer fell back.
for n in 4 3; do
    run "mixed: pair (0,1) over tcp, $n ranks, the path off on every rank" "$n" "$n" \
        TC_SHM_FULL_PAIRS=0-1 -- check --off
done
out=$(TC_SHM_FULL_PAIRS=0-1 timeout -k 5 120 "$tcrun" --timeout 100 -n 4 "$prog" loop 50 2>&1)
warned=$(grep -c 'WARN.*is reached over tcp, not shm' <<<"$out")
w0=$(grep -c '^\[0\].*WARN.*rank 1 (same node) is reached over tcp, not shm: shm: .*no room in /dev/shm.*bytes' <<<"$out")
w1=$(grep -c '^\[1\].*WARN.*rank 0 (same node) is reached over tcp, not shm: shm: .*no room in /dev/shm.*bytes' <<<"$out")
if [ "$warned" -eq 2 ] && [ "$w0" -eq 1 ] && [ "$w1" -eq 1 ] &&
    [ "$(grep -c 'small ops: 0$' <<<"$out")" -eq 4 ]; then
    echo "ok    mixed: one warning on each of ranks 0 and 1 naming the other, no lanes anywhere"
else
    echo "FAIL  mixed: warnings $warned (rank 0: $w0, rank 1: $w1), or lanes used:"
    sed 's/^/      /' <<<"$out" | tail -n 20
    fail=1
fi
# TC_SHM=1: no fallback; both ranks of the pair fail, naming why, and nothing waits. The rank
# that made the pair's name decides and names the space; the other reads that decision, or, when
# the decider failed and destroyed its context first (which removes its unread decision: tests/
# transport/shm/shm_fall_test.c), finds the name gone and says that the peer removed it.
out=$(TC_SHM=1 TC_SHM_FULL_PAIRS=0-1 timeout -k 5 60 "$tcrun" --keep-going --timeout 50 -n 2 \
    "$prog" loop 5 2>&1)
strict_re='TC_SHM=1 allows no other transport: shm: '
room=$(grep -c "TC_ERR_UNSUPPORTED.*${strict_re}.*no room in /dev/shm" <<<"$out")
gone=$(grep -c 'TC_ERR_PEER_FAILED: .*shm: peer [01] (pid [0-9]*) removed segment .* before this process opened it' \
    <<<"$out")
if [ "$room" -ge 1 ] && [ $((room + gone)) -eq 2 ] && ! grep -q ', 0 failures' <<<"$out"; then
    echo "ok    TC_SHM=1: a pair without room fails on both ranks, naming TC_SHM=1 and the space"
else
    echo "FAIL  TC_SHM=1 ($room ranks named the space, $gone the removed name):"
    sed 's/^/      /' <<<"$out" | tail -n 10
    fail=1
fi
run "TC_SMALL_MAX=0: the general path" 2 2 TC_SMALL_MAX=0 -- check --off
run "TC_CHECK=1: the path is skipped, the check runs" 2 2 TC_CHECK=1 -- check --off
# TC_ALGO_ALL_REDUCE names the algorithm of every all-reduce: the path leaves them alone
out=$(TC_ALGO_ALL_REDUCE=ring timeout -k 5 60 "$tcrun" -n 2 "$prog" loop 100 2>&1)
if [ "$(grep -c 'small ops: 0$' <<<"$out")" -eq 2 ]; then
    echo "ok    TC_ALGO_ALL_REDUCE=ring: no all-reduce on the small-message path"
else
    echo "FAIL  TC_ALGO_ALL_REDUCE=ring:"
    sed 's/^/      /' <<<"$out"
    fail=1
fi
run "timeout, 2 ranks" 2 2 TC_LOG=none -- timeout
run "timeout, 3 ranks" 3 3 TC_LOG=none -- timeout
for how in --work --async; do
    run "timeout ($how), 3 ranks" 3 3 TC_LOG=none -- timeout "$how"
    run "kill ($how), 3 ranks" 3 2 TC_LOG=none -- kill "$how"
done
run "revoke, 3 ranks" 3 3 TC_LOG=none -- revoke
run "abort during the set-up, 2 ranks" 2 2 TC_LOG=none -- abort
# the flight recorder's dump of a timeout names the path and the rank awaited
fr=$(mktemp -d /tmp/tc-small-fr.XXXXXX)
run "timeout, 2 ranks, flight recorder" 2 2 TC_LOG=none TC_FR_DIR="$fr" -- timeout
if grep -qs '"shm_lanes"' "$fr"/* && grep -qs 'timed_out' "$fr"/*; then
    echo "ok    the flight recorder shows the timed-out shm_lanes operation"
else
    echo "FAIL  no shm_lanes operation timed out in the flight recorder's dump:"
    ls -l "$fr"
    head -c 2000 "$fr"/* 2>/dev/null
    fail=1
fi
rm -rf "$fr"
# a dump while the first small operation waits in the set-up for a late rank shows the vote
fr=$(mktemp -d /tmp/tc-small-fr.XXXXXX)
run "flight recorder during the set-up, 2 ranks" 2 2 TC_LOG=none TC_FR_DIR="$fr" -- fr-setup
rm -rf "$fr"
# The recorder's ring shared by both paths: with TC_FR_SIZE=5, after 13 all-reduces (every third
# on the general path) a dump holds the last 5, consecutive, each on its path, done, and ending
# no earlier than it began, and none beginning before the one before it ended (the small path's
# coarse clock lags the general path's by up to a tick: it went back 4 ms in time).
fr=$(mktemp -d /tmp/tc-small-fr.XXXXXX)
run "flight recorder ring, 2 ranks" 2 2 TC_LOG=none TC_FR_SIZE=5 TC_FR_DIR="$fr" -- fr
if python3 - "$fr" <<'PY'; then
import glob, json, sys
files = sorted(glob.glob(sys.argv[1] + "/*"))
assert len(files) == 2, files
for f in files:
    d = json.load(open(f))
    ops = d["ops"]
    seqs = [o["seq"] for o in ops]
    assert seqs == list(range(d["last_seq"] - 4, d["last_seq"] + 1)), (f, seqs, d["last_seq"])
    for o, prev in zip(ops, [None] + ops[:-1]):
        assert prev is None or o["start_ns"] >= prev["end_ns"], (f, prev, o)
        small = (o["seq"] - seqs[0] + 13 - 5) % 3 != 2
        assert (o["algo"] == "shm_lanes") == small, (f, o)
        assert o["state"] == "completed" and o["status"] == "TC_OK", (f, o)
        assert 0 < o["start_ns"] <= o["end_ns"], (f, o)
PY
    echo "ok    the flight recorder keeps the last 5 operations of both paths, in order"
else
    echo "FAIL  flight recorder ring:"
    head -c 3000 "$fr"/* 2>/dev/null
    fail=1
fi
rm -rf "$fr"
# an endpoint holding lanes closes under a blocking call that runs without the world's lock: an
# error naming it, no read of the closed segment (ASan in CI's integration step)
run "an endpoint closed under the lanes, 2 ranks" 2 2 TC_LOG=none TC_TIMEOUT_S=20 \
    TC_FAULT_INJECT=close:rank=0:op=10 -- close
# ... and under another communicator's asynchronous operation, which a progress pass goes on with
run "an endpoint closed under another communicator's asynchronous work, 2 ranks" 2 2 TC_LOG=none \
    TC_TIMEOUT_S=20 TC_FAULT_INJECT=close:rank=0:op=10 -- close-other
# ... and under another thread's blocking call, waiting on the path without the world's lock
run "an endpoint closed under another thread's blocking call, 2 ranks" 2 2 TC_LOG=none \
    TC_TIMEOUT_S=20 TC_FAULT_INJECT=close:rank=0:op=10 -- close-thread
# ... and before a call made after the endpoint was connected again, at the closed one's address
run "an endpoint closed, then made again, 2 ranks" 2 2 TC_LOG=none TC_TIMEOUT_S=20 \
    TC_FAULT_INJECT=close:rank=0:op=10 -- close-reopen
# the victim dies: only the survivors report
run "kill, 2 ranks" 2 1 TC_LOG=none -- kill
run "kill, 4 ranks" 4 3 TC_LOG=none -- kill
run "kill, then shrink and go on, 3 ranks" 3 2 TC_LOG=none -- shrink
run "kill, then shrink and go on, 4 ranks" 4 3 TC_LOG=none -- shrink
exit $fail
