#!/usr/bin/env bash
# Jobs in a small /dev/shm (issue 21): each in a private mount namespace (unshare -m) with its
# own tmpfs on /dev/shm, as a container's default 64 MiB one. Every job does barriers and
# checked all-reduces (shm_fit_test); each process says at most once that its segments shrank.
#   run_shm_small.sh BIN [--quick] [SIZE:RANKS[:ENV=V,...] ...]
# BIN is a bazel-bin directory with tools/tcrun/tcrun and tests/integration/shm_fit_test.
# Without cases: 256, 64 and 32 ranks in 64 MiB (shrunk segments; at 64 ranks the lanes would
# need 130 MiB, so the ranks vote the small-message path off before reserving any), 4 ranks in
# 1 MiB without single copy (the smaller geometry carries every message, pipelined), and 8 ranks
# in 64 KiB, where only some pairs find room for even the smallest segment: the others talk over
# tcp, and each process that has such a peer says so once. A SIZE in KiB asks for at least one
# such warning, a SIZE in MiB for none (every pair has room). --quick: without 256 and 64 ranks.
# Prints each job's peak of /dev/shm used (what df shows, sampled every 10 ms by
# one python3 process; the job waits 300 ms before leaving). Heartbeats tolerate 200 misses
# (50 s): 256 ranks on two shared cores can miss 2 s of them. Needs root (unshare, mount):
# skipped otherwise.
set -uo pipefail
bin=${1:?bazel-bin directory}
shift
tcrun=$bin/tools/tcrun/tcrun
prog=$bin/tests/integration/shm_fit_test
if [ "$(id -u)" != 0 ] || ! unshare -m true 2>/dev/null; then
    echo "SKIP  run_shm_small.sh: needs root and unshare -m"
    exit 0
fi
cases=() quick=0
for a in "$@"; do
    if [ "$a" = --quick ]; then quick=1; else cases+=("$a"); fi
done
if [ ${#cases[@]} -eq 0 ]; then
    cases=(64m:256 64m:64 64m:32 1m:4:TC_SHM_CMA=0 64k:8)
    [ $quick = 1 ] && cases=(64m:32 1m:4:TC_SHM_CMA=0 64k:8) # (ASan: 256 processes are too many)
fi
ulimit -n 65536 2>/dev/null
log=$(mktemp -d /tmp/tc-shm-small.XXXXXX)
fail=0
for c in "${cases[@]}"; do
    IFS=: read -r size n envs <<<"$c"
    out=$log/$size-$n.out
    start=$SECONDS
    # in the namespace: mount, sample df in the background, run the job, print the peak
    unshare -m bash -c '
        mount --make-rprivate / && mount -t tmpfs -o size="$1" tmpfs /dev/shm || exit 97
        python3 -c "
import os, sys, time
peak = 0
while True:
    v = os.statvfs(\"/dev/shm\")
    peak = max(peak, (v.f_blocks - v.f_bfree) * v.f_frsize)
    print(peak, flush=True)
    time.sleep(0.01)
" >"$5.df" 2>/dev/null &
        sampler=$!
        until [ -s "$5.df" ]; do sleep 0.01; done # sampling before the job starts
        env TC_HEARTBEAT_MISSES=200 $(tr , " " <<<"$4") timeout -k 10 240 "$2" --timeout 200 -n "$3" "$6" 300 >"$5" 2>&1
        rc=$?
        kill $sampler
        wait $sampler 2>/dev/null
        echo "rc=$rc peak=$(sort -n "$5.df" | tail -n 1)" >>"$5"
    ' _ "$size" "$tcrun" "$n" "$envs" "$out" "$prog"
    rc=$(sed -n 's/^rc=\([0-9]*\) .*/\1/p' "$out")
    peak=$(sed -n 's/^rc=.* peak=\([0-9]*\)/\1/p' "$out")
    clean=$(grep -c ', 0 failures' "$out")
    # the shrink and the fallback warnings, each at most once per process (tcrun's "[rank]"
    # prefix); no error at all
    shrink='WARN: shm: /dev/shm has' fallback='WARN: rank [0-9]* (same node) is reached over tcp'
    most=$(grep -e "$shrink" -e "$fallback" "$out" | sed 's/ .*\(shm: \/dev\|tcp, not\).*/ \1/' |
        sort | uniq -c | sort -n | tail -n 1 | awk '{print $1}')
    warned=$(grep -c "$shrink" "$out")
    fell=$(grep -c "$fallback" "$out")
    others=$(grep -c -E ' ERROR|FAIL' "$out")
    name="$n ranks in a $size /dev/shm${envs:+ ($envs)}"
    if [ "${rc:-x}" = 0 ] && [ "$clean" -eq "$n" ] && [ "${most:-0}" -le 1 ] &&
        [ "$others" -eq 0 ] && { [ "$size" != 1m ] || [ "$warned" -ge 1 ]; } &&
        { [ "${size%k}" = "$size" ] || [ "$fell" -ge 1 ]; } &&
        { [ "${size%m}" = "$size" ] || [ "$fell" -eq 0 ]; }; then
        echo "PASS  $name: peak $((peak / 1024)) KiB used, $warned processes warned once of" \
            "smaller segments, $fell of pairs over tcp ($((SECONDS - start)) s)"
    else
        echo "FAIL  $name: exit ${rc:-?}, $clean of $n clean, at most ${most:-0} of one" \
            "warning per process, $fell fallback warnings, $others errors; last lines:"
        grep -v ', 0 failures' "$out" | tail -n 15 | sed 's/^/      /'
        fail=1
    fi
done
[ $fail -eq 0 ] && rm -rf "$log"
exit $fail
