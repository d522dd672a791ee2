#!/usr/bin/env bash
# exec_keep_prog under tcrun with 2 ranks, over shm and over TCP only, with the resident growth
# allowed after the smaller operation, then 5 s after the last operation (MiB): over TCP the
# transport keeps one record of a 32 MiB message that arrived before its receive
# (transport/tcp/tcp_internal.h) until the world has been idle for a second (tc_tp_trim). Both
# idle checks need the progress thread (the default heartbeats): with TC_HEARTBEAT_MS=0 both
# fail. The page faults of the warm large operations are counted on average over shm only: over
# TCP a message that arrives before its receive may fault in a record of its own.
set -uo pipefail
tcrun=$1
prog=$2
fail=0
for cfg in "1 16 16 2048" "0 48 16 -1"; do
    read -r shm allowed idle faults <<<"$cfg"
    out=$(TC_SHM=$shm timeout -k 5 120 "$tcrun" -n 2 "$prog" "$allowed" "$idle" "$faults" 2>&1)
    rc=$?
    if [ $rc -ne 0 ] || [ "$(grep -c ' 0 wrong' <<<"$out")" -ne 2 ]; then
        echo "FAIL with TC_SHM=$shm (exit $rc):"
        fail=1
    else
        echo "ok with TC_SHM=$shm:"
    fi
    echo "$out"
done
exit $fail
