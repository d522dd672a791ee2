#!/usr/bin/env bash
# exec_keep_prog under tcrun with 2 ranks, over shm and over TCP only.
set -uo pipefail
tcrun=$1
prog=$2
fail=0
for env in "TC_SHM=1" "TC_SHM=0"; do
    out=$(env $env timeout -k 5 120 "$tcrun" -n 2 "$prog" 2>&1)
    rc=$?
    if [ $rc -ne 0 ] || [ "$(grep -c ' 0 wrong' <<<"$out")" -ne 2 ]; then
        echo "FAIL with $env (exit $rc):"
        fail=1
    else
        echo "ok with $env:"
    fi
    echo "$out"
done
exit $fail
