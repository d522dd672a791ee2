#!/usr/bin/env bash
# Multi-rail tcp on a 2-node virtual cluster with two rails (eth0 on 198.18.x,
# eth1 on 198.19.x), one rank per node, TC_SOCKET_IFNAME=eth0,eth1:
#   run_multirail.sh BIN_DIR
# BIN_DIR holds tools/tcperf/tcperf (as tools/ci/test.sh stashes it).
# 1. share: a checked 32 MiB all-reduce over both rails shaped to RATE; each
#    interface's tx_bytes (read inside each node before and after) must carry at
#    least 30% of the bytes; prints the bandwidth.
# 2. ratio: the same over eth0 alone; prints the two-rail / one-rail bandwidth
#    ratio (asserted only > 1.2: the machine is shared).
# 3. cut: a longer checked all-reduce; rail 1 of node 1 goes down silently
#    (vcluster.sh cut) during it; the run must end with every result right,
#    exit 0, and a warning naming eth1 (the rank on node 0 sees its unacknowledged
#    data time out; the one on node 1 hears it on the primary).
# The cluster is torn down on every exit; on failure the ranks' output is printed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
[[ $# -eq 1 ]] || { echo "usage: $0 BIN_DIR" >&2; exit 2; }
bin=$(cd "$1" && pwd)
tcperf=$bin/tools/tcperf/tcperf
[[ -x $tcperf ]] || { echo "$0: no $tcperf" >&2; exit 2; }
rate=${MULTIRAIL_RATE:-400mbit}

vc=$here/vcluster.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/tc-multirail.XXXXXX")
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
    "$vc" down "$work/vc" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$vc" up "$work/vc" --nodes 2 --rails 2 >/dev/null
"$vc" shape "$work/vc" 0 "$rate"
"$vc" shape "$work/vc" 1 "$rate"

tx_bytes() { # tx_bytes NODE IF
    "$vc" run "$work/vc" "$1" cat "/sys/class/net/$2/statistics/tx_bytes"
}

# run_job NAME IFNAME TCPERF_ARGS...: 2 ranks, torchrun environment, output in
# $work/NAME.K; returns non-zero if a rank failed (after printing its output).
port=29517
run_job() {
    local name=$1 ifname=$2 k rc=0
    shift 2
    port=$((port + 1))
    local pids=()
    for k in 0 1; do
        MASTER_ADDR=tcn0 MASTER_PORT=$port RANK=$k WORLD_SIZE=2 LOCAL_RANK=0 \
            LOCAL_WORLD_SIZE=1 TC_SOCKET_IFNAME=$ifname TC_SOCKET_STRIPE_MIN=64K \
            timeout -k 5 90 "$vc" run "$work/vc" "$k" "$tcperf" "$@" \
            >"$work/$name.$k" 2>&1 &
        pids+=($!)
    done
    for k in 0 1; do
        wait "${pids[$k]}" || rc=$?
    done
    if ((rc != 0)); then
        for k in 0 1; do
            echo "--- $name, rank $k:"
            cat "$work/$name.$k"
        done
        echo "multirail: $name: a rank failed (status $rc)"
    fi
    return $rc
}

# algorithm bandwidth in MB/s (1e6 B/s) from the out-of-place time (us) of the last size row of
# rank 0's table (tcperf's algbw column has two decimals in GB/s only)
mbps() {
    awk '$1 ~ /^[0-9]+$/ && NF >= 12 {b = $1; t = $6} END {printf "%.1f", (t > 0) ? b / t : 0}' \
        "$work/$1.0"
}
wrong_total() {
    awk '$1 ~ /^[0-9]+$/ && NF >= 12 {w += $9 + $13} END {print w + 0}' "$work/$1.0"
}

fail=0
args=(-b 32M -e 32M -n 4 -w 1 -c 1)

# ---- 1. byte shares ----
declare -A before
for k in 0 1; do for i in eth0 eth1; do before[$k$i]=$(tx_bytes $k $i); done; done
run_job share eth0,eth1 "${args[@]}" || fail=1
declare -A moved
for i in eth0 eth1; do
    moved[$i]=0
    for k in 0 1; do moved[$i]=$((moved[$i] + $(tx_bytes $k $i) - before[$k$i])); done
done
total=$((moved[eth0] + moved[eth1]))
echo "multirail: share: eth0 ${moved[eth0]} bytes, eth1 ${moved[eth1]} bytes sent" \
    "($((100 * moved[eth1] / (total > 0 ? total : 1)))% on eth1); all_reduce 32 MiB" \
    "$(mbps share) MB/s at $rate per rail; #wrong $(wrong_total share)"
if ((moved[eth0] * 10 < total * 3 || moved[eth1] * 10 < total * 3)); then
    echo "multirail: share: an interface carried less than 30% of the bytes"
    fail=1
fi
[[ $(wrong_total share) == 0 ]] || { echo "multirail: share: wrong results"; fail=1; }

# ---- 2. bandwidth against one rail ----
run_job single eth0 "${args[@]}" || fail=1
two=$(mbps share)
one=$(mbps single)
ratio=$(awk -v a="$two" -v b="$one" 'BEGIN {printf "%.2f", (b > 0) ? a / b : 0}')
echo "multirail: ratio: all_reduce 32 MiB, two rails $two MB/s, one rail $one MB/s: ${ratio}x"
awk -v r="$ratio" 'BEGIN {exit !(r > 1.2)}' || { echo "multirail: ratio below 1.2"; fail=1; }

# ---- 3. rail 1 of node 1 cut during a run ----
run_job cut eth0,eth1 -b 32M -e 32M -n 16 -w 1 -c 1 &
job=$!
sleep 4
"$vc" cut "$work/vc" 1 1
if ! wait $job; then
    fail=1
else
    warn=$(grep -h "lost data socket" "$work/cut.0" "$work/cut.1" || true)
    echo "multirail: cut: #wrong $(wrong_total cut); warnings:"
    echo "$warn"
    if ! grep -q "interface eth1" <<<"$warn"; then
        echo "multirail: cut: no warning names eth1"
        cat "$work/cut.0" "$work/cut.1"
        fail=1
    fi
    [[ $(wrong_total cut) == 0 ]] || { echo "multirail: cut: wrong results"; fail=1; }
fi
"$vc" restore "$work/vc" 1 1 || true

"$vc" down "$work/vc"
"$vc" check-clean "$work/vc" || fail=1
((fail == 0)) && echo "multirail: ok"
exit $fail
