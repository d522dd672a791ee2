#!/bin/bash
# Output forwarding: line by line with the rank prefix, stdout to stdout and stderr to stderr,
# a line written in pieces stays one line, a last line without newline is flushed at exit.
# Args: tcrun pmix_client
. tests/tcrun/testlib.sh "$@"

run "$TCRUN" -n 2 "$CLIENT" 2 partial
expect_rc 0
for r in 0 1; do
    expect_line "$OUT" "[$r] first-$r-second-$r"
    expect_line "$OUT" "[$r] out-tail-$r"
    expect_line "$ERR" "[$r] err-line-$r"
    expect_line "$ERR" "[$r] err-tail-$r"
done
expect_count "$OUT" '^\[' 4
expect_count "$ERR" '^\[' 4

# Many lines from many ranks are neither lost nor mixed.
run "$TCRUN" -n 7 sh -c 'i=0; while [ $i -lt 500 ]; do echo "line $PMIX_RANK $i"; i=$((i+1)); done'
expect_rc 0
expect_count "$OUT" '' 3500
for r in 0 1 2 3 4 5 6; do
    expect_count "$OUT" "^\[$r\] line $r [0-9]+$" 500
done

# A line longer than tcrun's buffer is forwarded in prefixed pieces, none lost.
run "$TCRUN" -n 1 sh -c 'head -c 20000 /dev/zero | tr "\0" x; echo'
expect_rc 0
total=$(sed 's/^\[0\] //' "$OUT" | tr -d '\n' | wc -c)
[ "$total" -eq 20000 ] || fail "expected 20000 x, got $total"
expect_count "$OUT" '^\[0\] x+$' 3

# The reader of tcrun's stdout goes away (`tcrun ... | head -1`): the job stops with SIGPIPE's
# status, as a command of a pipeline would, instead of forwarding into the closed pipe for ever.
t0=$(now)
timeout -k 5 30 bash -c 'set -o pipefail; "$1" -n 2 yes | head -1 >/dev/null; echo "status ${PIPESTATUS[0]}"' \
    _ "$TCRUN" >"$OUT" 2>"$ERR"
RC=$?
ELAPSED=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
echo "ran: tcrun -n 2 yes | head -1 -> $(cat "$OUT") in ${ELAPSED}s"
[ "$RC" -ne 124 ] || fail "tcrun -n 2 yes | head -1 did not end within 30 s"
expect_line "$OUT" "status 141"
expect_line "$ERR" "tcrun: the reader of tcrun's stdout closed it; the job stops"
expect_elapsed_below 10
# ... also when the ranks end on their own before the loss is seen: output was lost
timeout -k 5 30 bash -c '"$1" -n 1 seq 200000 | head -1 >/dev/null; echo "status ${PIPESTATUS[0]}"' \
    _ "$TCRUN" >"$OUT" 2>"$ERR"
expect_line "$OUT" "status 141"
echo PASS
