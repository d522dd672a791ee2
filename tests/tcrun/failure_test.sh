#!/bin/bash
# Exit status propagation, a rank killed by a signal, and stopping the other ranks within a
# bounded time (SIGTERM, then SIGKILL after --kill-grace).
# Args: tcrun pmix_client
. tests/tcrun/testlib.sh "$@"

# Rank 2 of 4 exits with status 3 after every rank printed its line.
run "$TCRUN" -n 4 "$CLIENT" 4 exit 2 3
expect_rc 3
expect_all_ok 4
expect_match "$ERR" '^tcrun: rank 2 \(pid [0-9]+\) exited with status 3$'
expect_count "$ERR" '^tcrun: rank [0-9]+ \(pid' 1

# Every rank exits 5: the job's status is 5.
run "$TCRUN" -n 3 sh -c 'exit 5'
expect_rc 5
expect_match "$ERR" '^tcrun: rank [0-2] \(pid [0-9]+\) exited with status 5$'

# Zero everywhere: zero.
run "$TCRUN" -n 3 sh -c 'exit 0'
expect_rc 0
expect_no_match "$ERR" "^tcrun:"

# Rank 1 of 4 kills itself; the others (which sleep) are stopped with SIGTERM at once.
run "$TCRUN" -n 4 --kill-grace 5 "$CLIENT" 4 crash 1
expect_rc 137
expect_all_ok 4
expect_match "$ERR" '^tcrun: rank 1 \(pid [0-9]+\) was killed by signal 9 \(Killed\)$'
expect_count "$ERR" '^tcrun: rank [0-9]+ \(pid' 1
expect_line "$ERR" "tcrun: stopping 3 remaining ranks: 0, 2, 3 (SIGTERM, then SIGKILL after 5 s)"
expect_no_match "$ERR" 'sending SIGKILL'
expect_elapsed_below 8  # grace 5 s: no SIGKILL was needed

# Same, but the survivors ignore SIGTERM: SIGKILL after the 2 s grace period.
run "$TCRUN" -n 7 --kill-grace 2 "$CLIENT" 7 stubborn 1
expect_rc 137
expect_all_ok 7
expect_match "$ERR" '^tcrun: rank 1 \(pid [0-9]+\) was killed by signal 9 \(Killed\)$'
expect_line "$ERR" "tcrun: 6 ranks still running 2 s after SIGTERM; sending SIGKILL"
expect_elapsed_at_least 2
expect_elapsed_below 7

# A rank killed by SIGSEGV counts as 128+11.
run "$TCRUN" -n 2 sh -c 'if [ "$PMIX_RANK" = 1 ]; then kill -SEGV $$; fi; sleep 30'
expect_rc 139
expect_match "$ERR" '^tcrun: rank 1 \(pid [0-9]+\) was killed by signal 11 \(Segmentation fault\)$'
expect_elapsed_below 8  # grace 5 s: no SIGKILL was needed
# A rank that exits 1 leaves a child behind in its process group: stopping the job ends the
# child too (only the groups of ranks still running were signalled: it lived on after the job).
run "$TCRUN" -n 2 --kill-grace 2 sh -c 'if [ "$PMIX_RANK" = 1 ]; then sleep 60 & echo $! >"'"$WORK"'/child"; exit 1; fi; sleep 30'
expect_rc 1
child=$(cat "$WORK/child")
sleep 0.5
if kill -0 "$child" 2>/dev/null; then kill -KILL "$child"; fail "rank 1's child $child outlived the job"; fi

# tcrun itself killed with SIGKILL: its ranks die with it (they were left running, orphans).
"$TCRUN" -n 2 sh -c 'echo $$ >"'"$WORK"'/rank.$PMIX_RANK"; exec sleep 60' >/dev/null 2>&1 &
tcrun_pid=$!
for _ in $(seq 100); do [ -s "$WORK/rank.0" ] && [ -s "$WORK/rank.1" ] && break; sleep 0.1; done
[ -s "$WORK/rank.1" ] || fail "the ranks did not start"
kill -KILL "$tcrun_pid"
wait "$tcrun_pid" 2>/dev/null
sleep 0.5
for r in 0 1; do
    p=$(cat "$WORK/rank.$r")
    if kill -0 "$p" 2>/dev/null; then kill -KILL "$p"; fail "rank $r (pid $p) outlived tcrun"; fi
done
echo PASS
