#!/usr/bin/env bash
# Large collectives element by element under tcrun, with 2 and 3 ranks, over shm with single
# copy (receive-reduces into sinks through the staging area), over shm cells (TC_SHM_CMA=0) and
# over TCP only (TC_SHM=0: receive-reduces into the TCP sink, from its staging area), and over
# TCP with four sockets per pair (striped messages, which reach the sink whole).
set -uo pipefail
tcrun=$1
prog=$2
fail=0
for env in "TC_SHM_CMA=1" "TC_SHM_CMA=0" "TC_SHM=0" "TC_SHM=0 TC_SOCKET_NSOCKS=4"; do
    for n in 2 3; do
        # shellcheck disable=SC2086 # $env: one or two assignments
        out=$(env $env timeout -k 5 120 "$tcrun" -n "$n" "$prog" 2>&1)
        rc=$?
        ok=$(grep -c ' 0 wrong' <<<"$out")
        if [ $rc -ne 0 ] || [ "$ok" -ne "$n" ]; then
            echo "FAIL with $n ranks, $env (exit $rc):"
            echo "$out"
            fail=1
        else
            echo "ok with $n ranks, $env"
        fi
    done
done
exit $fail
