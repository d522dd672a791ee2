#!/usr/bin/env bash
# Whole-node failures found with the default settings (issue 18, item 3): a
# job of 6 ranks on a 3-node virtual cluster (tests/cluster/vcluster.sh; 2
# ranks per node, the torchrun environment, rank 0's store on tcn0), no
# TC_HEARTBEAT_MS or other detector setting. Cases, each run --trials times:
#   cut2   node tcn2's link taken down mid-job (silent, like a crashed machine)
#   kill2  every process of tcn2 killed mid-job
#   cut0   tcn0's link taken down: rank 0 and its store vanish
#   stop3  rank 3 (on tcn1, which lives on) SIGSTOPped: only it is named
# In each, every survivor must name every lost rank (tc_comm_failed_ranks)
# within 5 s of the event, log each with its host ("world rank X (host tcnK,
# pid P) failed"), accuse nobody else, shrink, and check an all-reduce over
# the survivors element by element (tests/cluster/node_fail_test.c). Prints
# each survivor's detection time and, per case, the distribution.
#
#   run_node_failure.sh BIN_DIR [--trials N] [--only REGEX]
# BIN_DIR holds tests/cluster/node_fail_test (a bazel-bin or a stash of it).
# Needs root. Leaves nothing behind (the cluster is torn down on exit, also
# on failure or interruption); exits non-zero on any failed trial.
set -uo pipefail
bin=${1:?usage: run_node_failure.sh BIN_DIR [--trials N] [--only REGEX]}
shift
trials=3
only=.
while [[ $# -gt 0 ]]; do
    case $1 in
    --trials) trials=$2 && shift 2 ;;
    --only) only=$2 && shift 2 ;;
    *) echo "run_node_failure: unknown option '$1'" >&2 && exit 2 ;;
    esac
done
here=$(cd "$(dirname "$0")" && pwd)
vc=$here/vcluster.sh
prog=$(cd "$bin" && pwd)/tests/cluster/node_fail_test
[[ -x $prog ]] || { echo "run_node_failure: $prog is missing (build it first)" >&2 && exit 2; }
bound_ms=5000
nranks=6
per_node=2

work=$(mktemp -d /tmp/tc-nodefail.XXXXXX)
cluster=$work/cluster
cleanup() {
    local rc=$?
    "$vc" down "$cluster" >/dev/null 2>&1
    if ! "$vc" check-clean "$cluster"; then
        echo "run_node_failure: FAIL: the cluster left something behind" >&2
        rc=1
    fi
    rm -rf "$work"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
"$vc" up "$cluster" --nodes 3 || exit 1

now_ms() {
    local ns
    ns=$(date +%s%N)
    echo "$((ns / 1000000)).$(((ns / 1000) % 1000))"
}

# Wait up to $2 s for every file named in $1 (a glob pattern's expansions listed).
wait_files() {
    local n=$1 pattern=$2 limit=$3 t=0
    while (($(compgen -G "$pattern" | wc -l) < n)); do
        ((t++ < limit * 10)) || return 1
        sleep 0.1
    done
}

passed=0 failed=0
declare -A detect # case -> the detection times of every survivor, every trial

# One trial: case $1 (cut2 kill2 cut0 stop3), trial $2.
trial() {
    local name=$1 t=$2 lost node=-1 sync port r k pids=() rc=0 start=$SECONDS strike_ms=-
    case $name in
    cut2 | kill2) lost=4,5 node=2 ;;
    cut0) lost=0,1 node=0 ;;
    stop3) lost=3 ;;
    esac
    sync=$work/$name.$t
    mkdir -p "$sync"
    port=$((29500 + RANDOM % 1000))
    for ((r = 0; r < nranks; r++)); do
        k=$((r / per_node))
        "$vc" run "$cluster" "$k" env MASTER_ADDR=tcn0 MASTER_PORT=$port RANK=$r \
            WORLD_SIZE=$nranks LOCAL_RANK=$((r % per_node)) LOCAL_WORLD_SIZE=$per_node \
            timeout -k 5 120 "$prog" "$lost" "$sync" >"$sync/out.$r" 2>"$sync/err.$r" &
        pids[r]=$!
    done
    if ! wait_files $nranks "$sync/ready.*" 60; then
        echo "  $name #$t: FAIL: not every rank started within 60 s"
        rc=1
    else
        sleep "0.$((2 + RANDOM % 8))" # a moment inside the loop of all-reduces
        local t0
        t0=$(now_ms)
        case $name in
        cut*) "$vc" cut "$cluster" "$node" ;;
        kill2) "$vc" kill "$cluster" "$node" ;;
        stop3) kill -STOP "$(cat "$sync/ready.3")" ;;
        esac
        # A cut is timed when `vcluster.sh cut` has returned (taking the link down is its
        # last act; on a loaded machine starting it took up to 4 s, the link still up); a
        # kill or a stop when it began (the processes die in its first pass; it then checks
        # that none is left): never later than the event.
        local t1
        t1=$(now_ms)
        strike_ms=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%d", b - a }')
        if [[ $name == cut* ]]; then echo "$t1"; else echo "$t0"; fi >"$sync/event_at.tmp"
        mv "$sync/event_at.tmp" "$sync/event_at"
    fi
    # the survivors end by themselves (each of their waits is bounded)
    local dead=",$lost,"
    for ((r = 0; r < nranks; r++)); do
        [[ $dead == *",$r,"* ]] && continue
        wait "${pids[r]}" || rc=1
    done
    # then what is left of the lost ranks goes, before any link comes back
    case $name in
    cut*)
        "$vc" kill "$cluster" "$node"
        "$vc" restore "$cluster" "$node"
        ;;
    stop3)
        kill -KILL "$(cat "$sync/ready.3")" 2>/dev/null
        kill -CONT "$(cat "$sync/ready.3")" 2>/dev/null
        ;;
    esac
    for ((r = 0; r < nranks; r++)); do
        [[ $dead == *",$r,"* ]] && wait "${pids[r]}" 2>/dev/null
    done
    # every survivor: no failure, every lost rank named with its host, in time
    local times="" d x
    for ((r = 0; r < nranks; r++)); do
        [[ $dead == *",$r,"* ]] && continue
        grep -q "^rank $r: 0 failures" "$sync/out.$r" || rc=1
        d=$(sed -n "s/^rank $r: every lost rank known detect_ms \([0-9-]*\)$/\1/p" "$sync/out.$r")
        if [[ -z $d ]] || ((d > bound_ms)); then
            rc=1
            echo "  $name #$t: rank $r: every lost rank known after ${d:-never} ms (bound $bound_ms)"
        fi
        times+=" ${d:-never}"
        for x in ${lost//,/ }; do
            if ! grep -q "world rank $x (host tcn$((x / per_node)), pid [0-9]*) failed" "$sync/err.$r"; then
                rc=1
                echo "  $name #$t: rank $r did not log rank $x failed with its host tcn$((x / per_node))"
            fi
        done
    done
    detect[$name]+="$times"
    if ((rc == 0)); then
        passed=$((passed + 1))
        echo "  $name #$t: ok ($((SECONDS - start)) s, the strike took $strike_ms ms), lost $lost; detection (ms) per survivor:$times"
    else
        failed=$((failed + 1))
        echo "  $name #$t: FAILED (lost $lost; the strike took $strike_ms ms); every rank's output:"
        for ((r = 0; r < nranks; r++)); do
            echo "  --- rank $r: stdout, then stderr"
            tail -n 15 "$sync/out.$r" "$sync/err.$r" | sed 's/^/    /'
        done
    fi
    # nothing of this trial may reach the next: every node's processes go
    for ((k = 0; k < nranks / per_node; k++)); do
        "$vc" kill "$cluster" "$k"
    done
    return $rc
}

for name in cut2 kill2 cut0 stop3; do
    [[ $name =~ $only ]] || continue
    echo "=== $name"
    for ((t = 1; t <= trials; t++)); do
        trial "$name" "$t"
    done
    # shellcheck disable=SC2086 # the list of times, split on purpose
    printf '%s\n' ${detect[$name]} | sort -n | awk -v name="$name" '
        /^[0-9-]+$/ { v[n++] = $1 } !/^[0-9-]+$/ { bad++ }
        END { if (n) printf "%s: %d reports: min %d, median %d, p90 %d, max %d ms%s\n", name, n, v[0],
              v[int(n / 2)], v[int(n * 0.9)], v[n - 1], bad ? sprintf("; %d never", bad) : "" }'
done
echo "node failures: $passed trials passed, $failed failed"
((failed == 0))
