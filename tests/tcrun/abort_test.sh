#!/bin/bash
# A rank calling PMIx_Abort ends the job with the abort status and its message.
# Args: tcrun pmix_client
. tests/tcrun/testlib.sh "$@"

run "$TCRUN" -n 4 "$CLIENT" 4 abort 3 7
expect_rc 7
expect_all_ok 4
expect_match "$ERR" '^tcrun: rank 3 \(pid [0-9]+\) called PMIx_Abort with status 7: test abort from rank 3$'
expect_line "$ERR" "tcrun: stopping 4 remaining ranks: 0, 1, 2, 3 (SIGTERM, then SIGKILL after 5 s)"
expect_elapsed_below 8  # grace 5 s: no SIGKILL was needed

# Rank 0 of 1, another status.
run "$TCRUN" -n 1 "$CLIENT" 1 abort 0 42
expect_rc 42
expect_match "$ERR" '^tcrun: rank 0 \(pid [0-9]+\) called PMIx_Abort with status 42: test abort from rank 0$'
expect_elapsed_below 8  # grace 5 s: no SIGKILL was needed
echo PASS
