#!/usr/bin/env bash
# The runtime's same-node detection under tcrun, with 1, 3 and 4 ranks.
set -uo pipefail
tcrun=$1
prog=$2
fail=0
for n in 1 3 4; do
    out=$(timeout -k 5 60 "$tcrun" -n "$n" "$prog" 2>&1)
    rc=$?
    ok=$(grep -c ', 0 wrong' <<<"$out")
    if [ $rc -ne 0 ] || [ "$ok" -ne "$n" ]; then
        echo "FAIL with $n ranks (exit $rc):"
        echo "$out"
        fail=1
    else
        echo "ok with $n ranks"
    fi
done
exit $fail
