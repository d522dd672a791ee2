#!/bin/bash
# Bad usage: a clear message and exit status 2, before anything is started.
# Args: tcrun pmix_client
. tests/tcrun/testlib.sh "$@"

# usage_case EXPECTED_MESSAGE_REGEX ARGS...
usage_case() {
    local re=$1
    shift
    run "$TCRUN" "$@"
    expect_rc 2
    expect_match "$ERR" "$re"
    expect_no_match "$OUT" '^\['
    expect_elapsed_below 3
}

MARK=$WORK/started
usage_case '^tcrun: missing -n N' "$CLIENT" 1 ok
usage_case '^tcrun: missing -n N' 
usage_case 'must be at least 1' -n 0 "$CLIENT" 1 ok
usage_case 'must be at least 1' -n -3 "$CLIENT" 1 ok
usage_case 'too many ranks \(at most 1024' -n 1025 "$CLIENT" 1 ok
usage_case 'too many ranks \(at most 1024' -n 100000 "$CLIENT" 1 ok
usage_case "needs a number of ranks, got 'abc'" -n abc "$CLIENT" 1 ok
usage_case '^tcrun: -n needs a value' -n
usage_case '^tcrun: missing the program to run' -n 2
usage_case "^tcrun: unknown option '--bogus'" -n 2 --bogus "$CLIENT" 1 ok
usage_case "needs a positive number of seconds \\(at most 1e7\\), got '0'" -n 2 --timeout 0 "$CLIENT" 2 ok
usage_case "needs a positive number of seconds \\(at most 1e7\\), got 'x'" -n 2 --kill-grace x "$CLIENT" 2 ok
usage_case "needs a positive number of seconds \\(at most 1e7\\), got '99999999999'" -n 2 --timeout 99999999999 \
    "$CLIENT" 2 ok
usage_case "^tcrun: --bind takes 'core' or 'none', got 'socket'" -n 2 --bind socket "$CLIENT" 2 ok
usage_case '^tcrun: --bind needs a value' -n 2 --bind
TCRUN_TIMEOUT=soon usage_case "TCRUN_TIMEOUT needs a positive number of seconds \\(at most 1e7\\), got 'soon'" \
    -n 2 "$CLIENT" 2 ok
usage_case "^tcrun: cannot run 'no-such-program-xyz': not found in PATH" \
    -n 2 no-such-program-xyz
usage_case "^tcrun: cannot run '/no/such/dir/prog': No such file or directory" \
    -n 2 /no/such/dir/prog
# Not executable: nothing may start (the script would leave a mark).
printf '#!/bin/sh\ntouch %s\n' "$MARK" >"$WORK/noexec.sh"
chmod 644 "$WORK/noexec.sh"
usage_case "^tcrun: cannot run '$WORK/noexec.sh': Permission denied" -n 2 "$WORK/noexec.sh"
usage_case "^tcrun: cannot run '$WORK': not a regular file" -n 2 "$WORK"
[ ! -e "$MARK" ] || fail "a rank was started"

# The options may be given as -nN and --opt=value; --help is not an error.
run "$TCRUN" -n2 --timeout=30 --kill-grace=1 -- sh -c 'echo hi'
expect_rc 0
expect_count "$OUT" '^\[[01]\] hi$' 2
run "$TCRUN" --help
expect_rc 0
expect_match "$OUT" '^usage: tcrun -n N'
echo PASS
