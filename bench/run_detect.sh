#!/usr/bin/env bash
# Failure detection at scale on one node (issue #21 item 6): N local ranks under tcrun with the
# default heartbeats; rank VICTIM SIGSTOPs itself inside a loop of all-reduces (tests/fault/ft_test
# stop-hb), and every survivor must fail with TC_ERR_PEER_FAILED naming it. Prints how many
# survivors did, the time from the stop to each one's error (min, median, p90, max), the watch
# neighbours per rank, and how many neighbours were seen silent but running (not failed).
#   bench/run_detect.sh BIN [--ranks N] [--victim V] [--seed S]
# BIN: a bazel-bin (or CI's build/bin-opt) with tools/tcrun/tcrun and tests/fault/ft_test.
set -uo pipefail
bin=${1:?usage: run_detect.sh BIN [--ranks N] [--victim V] [--seed S]}
shift
n=256 victim=77 seed=4242
while [ $# -gt 0 ]; do
    case $1 in
    --ranks) n=$2; shift ;;
    --victim) victim=$2; shift ;;
    --seed) seed=$2; shift ;;
    *) echo "run_detect.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
    shift
done
ulimit -n "$(ulimit -Hn)"
ft=$bin/tests/fault/ft_test
d=$(mktemp -d /tmp/tc-detect.XXXXXX)
env TC_FT_DIR="$d" TC_FR_DIR="$d" TC_TIMEOUT_S=120 TC_LOG=info timeout -k 5 300 \
    "$bin/tools/tcrun/tcrun" --keep-going --timeout 280 -n "$n" "$ft" stop-hb "$victim" "$seed" \
    >"$d/out" 2>&1 &
job=$!
# the stopped rank never ends: once the others are done, kill it
for _ in $(seq 1 1000); do
    [ "$(grep -c ' failures' "$d/out")" -ge $((n - 1)) ] && break
    sleep 0.25
done
pkill -KILL -f "^$ft stop-hb $victim $seed" 2>/dev/null
wait $job
echo "$n ranks, rank $victim stopped (logs: $d)"
echo "survivors that named it: $(grep -c ': 0 failures' "$d/out") of $((n - 1)); failures: $(grep -c ': FAIL:' "$d/out")"
grep -ho 'detect_ms [0-9.]*' "$d/out" | awk '{print $2}' | sort -n |
    awk '{a[NR] = $1} END {if (NR) printf "detect_ms n=%d min %.1f median %.1f p90 %.1f max %.1f\n", NR, a[1], a[int((NR + 1) / 2)], a[int(NR * 0.9)], a[NR]}'
grep -h "heartbeats every" "$d/out" | sed 's/.*with ranks //; s/;.*//' | awk '{print NF}' | sort -n | uniq -c |
    awk '{printf "%s%d ranks watch %d neighbours", (NR > 1 ? ", " : ""), $1, $2} END {print ""}'
echo "neighbours seen silent but running: $(grep -c 'runs on this node' "$d/out")"
