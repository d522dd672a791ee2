#!/bin/bash
# --timeout and TCRUN_TIMEOUT end a hanging job with status 124; signals to tcrun are forwarded.
# Args: tcrun pmix_client
. tests/tcrun/testlib.sh "$@"

run "$TCRUN" -n 4 --timeout 2 --kill-grace 1 "$CLIENT" 4 hang
expect_rc 124
expect_all_ok 4
expect_line "$ERR" "tcrun: job timed out after 2 seconds"
expect_elapsed_at_least 2
expect_elapsed_below 7

# From the environment, and ranks that ignore SIGTERM need the SIGKILL.
TCRUN_TIMEOUT=1.5 run "$TCRUN" -n 2 --kill-grace 1 sh -c 'trap "" TERM; sleep 60'
expect_rc 124
expect_line "$ERR" "tcrun: job timed out after 1.5 seconds"
expect_line "$ERR" "tcrun: 2 ranks still running 1 s after SIGTERM; sending SIGKILL"
expect_elapsed_at_least 2.5
expect_elapsed_below 7

# --timeout beats TCRUN_TIMEOUT; a job that ends in time is not affected.
TCRUN_TIMEOUT=0.5 run "$TCRUN" -n 2 --timeout 30 sh -c 'sleep 1; echo done'
expect_rc 0
expect_line "$OUT" "[0] done"
expect_line "$OUT" "[1] done"

# SIGTERM (SIGINT) to tcrun goes to the ranks; tcrun exits 128+15 (128+2). A background job of
# a script starts with SIGINT ignored and the ranks inherit that, so they need the SIGKILL.
for sig in TERM INT; do
    : >"$OUT" # empty now: the background job may open (and truncate) it only later
    : >"$ERR"
    "$TCRUN" -n 3 --kill-grace 1 "$CLIENT" 3 hang >"$OUT" 2>"$ERR" &
    pid=$!
    for ((i = 0; i < 200; i++)); do
        [ "$(grep -c ' ok$' "$OUT")" -eq 3 ] && break
        sleep 0.1
    done
    expect_all_ok 3
    t0=$(now)
    kill -"$sig" "$pid"
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid"
        fail "tcrun still running 10 s after SIG$sig"
    fi
    wait "$pid"
    RC=$?
    ELAPSED=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
    echo "SIG$sig -> status $RC in ${ELAPSED}s"
    [ "$sig" = TERM ] && expect_rc 143 || expect_rc 130
    expect_line "$ERR" "tcrun: received SIG$sig; forwarding it to the ranks"
    expect_line "$ERR" "tcrun: stopping 3 remaining ranks: 0, 1, 2 (SIG$sig, then SIGKILL after 1 s)"
    if [ "$sig" = TERM ]; then
        expect_no_match "$ERR" 'sending SIGKILL'
    fi
    expect_elapsed_below 4
done
echo PASS
