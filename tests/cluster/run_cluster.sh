#!/usr/bin/env bash
# The integration tests across the nodes of a virtual cluster (vcluster.sh),
# under every launcher: the torchrun environment (launch_env.sh), Open MPI's
# mpirun (rsh_agent.sh) and Slurm (slurm_nodes.sh, srun --mpi=pmix).
#   run_cluster.sh BIN [--quick]
# BIN holds tests/integration/{coll_test,allreduce_test} and tools/tc-info/tc-info
# (tools/ci/test.sh's build/bin-opt). Needs root.
#
# The matrix: each launcher runs coll_test (every collective x type x op x size
# class x algorithm forced by hint, split communicators) at 2 ranks per node
# (the full matrix under the torchrun environment, 57 s on a loaded 2-core
# machine; the reduced one, --quick, under mpirun and srun), and allreduce_test
# at nodes of 3, 2 and 1 ranks (--quick passed on); the torchrun environment and
# Slurm add coll_test --quick at 1 rank per node, the torchrun environment
# coll_test --quick at 3,2,1. The coll_test runs at 2,2,2 and 3,2,1 log at info level and check_log.py
# holds the log against the layout: shm inside a node, tcp between, one node
# geometry on every rank, hierarchical algorithms chosen by the cost model and
# forced by hint at 2,2,2, off at 3,2,1. The torchrun run at 2,2,2 logs to
# TC_LOG_FILE=...%r: one file per rank, named by it. tc-info prints the
# placement across nodes under the torchrun environment.
# Then the cluster goes down and check-clean must pass. Every run is bounded;
# prints one line per case and exits non-zero if any failed or anything is left.
set -uo pipefail
bin=${1:?usage: run_cluster.sh BIN [--quick]}
mode=${2:-full}
here=$(cd "$(dirname "$0")" && pwd)
vc=$here/vcluster.sh
coll=$bin/tests/integration/coll_test
ared=$bin/tests/integration/allreduce_test
info=$bin/tools/tc-info/tc-info
for f in "$coll" "$ared" "$info"; do
    [ -x "$f" ] || { echo "run_cluster: $f is missing (build it, then stash it in BIN)" >&2; exit 2; }
done
quick=()
[ "$mode" = --quick ] && quick=(--quick)
# Each node's ranks count the machine's cores as their own, and all six share them: spinning
# before sleeping (50 us by default there) only takes the core a peer needs. Heartbeats are off:
# while six ranks poll (coll_test's tc_work_test loop) on the 2 cores, a live rank can go 2 s
# without a CPU and its watchers fail it (docs/cluster.md, CPU); this script checks launchers,
# placement and results, and run_node_failure.sh checks failure detection with the defaults.
export TC_SPIN_US=0 TC_HEARTBEAT_MS=0
log=$(mktemp -d /tmp/tc-cluster.XXXXXX)
cluster=$log/cluster
slurm=$log/slurm
pass=0 fail=0

teardown() {
    [ -d "$slurm" ] && "$here/slurm_nodes.sh" stop "$slurm"
    "$vc" down "$cluster"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

result() { # result NAME START OK [DETAIL FILE]
    if [ "$3" -eq 0 ]; then
        echo "PASS  $1 ($((SECONDS - $2)) s)"
        pass=$((pass + 1))
    else
        echo "FAIL  $1 ($((SECONDS - $2)) s): $4; last lines:"
        tail -n 15 "$5" | sed 's/^/      /'
        fail=$((fail + 1))
    fi
}

# run NAME RANKS COMMAND...: passes when COMMAND exits 0 and RANKS lines say ", 0 failures".
run() {
    local name=$1 want=$2 start=$SECONDS
    shift 2
    local out
    out=$log/$(echo "$name" | tr -c 'A-Za-z0-9,.\n-' '_').out
    # in the background: a signal to this script is handled (teardown) without waiting for it;
    # appending, so that writers on several nodes never write over each other's lines
    : >"$out"
    timeout -k 10 300 "$@" >>"$out" 2>&1 &
    wait $!
    local rc=$? clean
    clean=$(grep -c ', 0 failures' "$out")
    result "$name" "$start" $((rc != 0 || clean != want)) "exit $rc, $clean of $want ranks clean" "$out"
    last_out=$out
}

# logcheck NAME LAYOUT FILE ARGS...: check_log.py on a run's log.
logcheck() {
    local name=$1 layout=$2 file=$3 start=$SECONDS
    shift 3
    python3 "$here/check_log.py" "$layout" "$file" "$@" >"$file.check" 2>&1
    local rc=$?
    sed 's/^/      /' "$file.check" | head -n 4
    result "$name" "$start" "$rc" "check_log.py $layout $*" "$file.check"
}

"$vc" up "$cluster" --nodes 3 >"$log/up.out" 2>&1 || {
    echo "FAIL  the virtual cluster did not come up:"
    sed 's/^/      /' "$log/up.out"
    exit 1
}
info_log=(env "TC_LOG=runtime=info,algo=info")

# 1. The torchrun environment (MASTER_ADDR=tcn0)
env_run=("$here/launch_env.sh" --timeout 280 "$cluster")
# launch_env.sh itself: a failing rank stops the others at once, the timeout is kept, each
# line carries its rank, and the variables are torchrun's for 3,2,1 (rank 3 fails after 5 s,
# once every rank printed its line: a rank stopped before it printed failed the check)
mark=$((RANDOM + 100000))
start=$SECONDS
# shellcheck disable=SC2016 # expanded by each rank's shell
"${env_run[@]}" 3,2,1 bash -c 'echo "node $(hostname) group $GROUP_RANK/$GROUP_WORLD_SIZE local \
$LOCAL_RANK/$LOCAL_WORLD_SIZE world $WORLD_SIZE master $MASTER_ADDR"; [ "$RANK" = 3 ] && { sleep 5; exit 3; }; exec sleep "$1"' \
    rank "$mark" >"$log/launch-fail.out" 2>&1
rc=$?
ok=1
[ $rc -eq 3 ] && [ $((SECONDS - start)) -lt 20 ] && ! pgrep -f "sleep $mark" >/dev/null &&
    grep -q '^\[3\] node tcn1 group 1/3 local 0/2 world 6 master tcn0$' "$log/launch-fail.out" &&
    grep -q '^\[5\] node tcn2 group 2/3 local 0/1 world 6 master tcn0$' "$log/launch-fail.out" && ok=0
result "launch_env.sh: rank 3 exits 3, the others are stopped (exit $rc), torchrun's variables" \
    "$start" "$ok" "exit $rc, or a rank left, or wrong variables" "$log/launch-fail.out"
start=$SECONDS
"$here/launch_env.sh" --timeout 2 "$cluster" 1,1 sleep "$mark" >"$log/launch-timeout.out" 2>&1
rc=$?
ok=1
[ $rc -eq 124 ] && ! pgrep -f "sleep $mark" >/dev/null &&
    grep -q 'timeout after 2 s; ranks still running: 0 1' "$log/launch-timeout.out" && ok=0
result "launch_env.sh --timeout 2: exit 124, the ranks named and stopped" "$start" "$ok" \
    "exit $rc" "$log/launch-timeout.out"

files=$log/tcfile
mkdir -p "$files"
run "torchrun env 2,2,2 coll_test (the full matrix), TC_LOG_FILE=...%r" 6 "${info_log[@]}" \
    TC_LOG_FILE="$files/tc.%r.log" "${env_run[@]}" 2,2,2 "$coll"
start=$SECONDS
names=$(cd "$files" && for f in *; do printf '%s ' "$f"; done)
foreign=$(for r in 0 1 2 3 4 5; do
    grep -v " rank $r " "$files/tc.$r.log" 2>/dev/null | head -n 1
done)
ok=1
[ "$names" = "tc.0.log tc.1.log tc.2.log tc.3.log tc.4.log tc.5.log " ] && [ -z "$foreign" ] && ok=0
result "TC_LOG_FILE=tc.%r.log across nodes: one file per rank, each rank's own lines (files: $names)" \
    "$start" "$ok" "a file named for no rank, or another rank's lines: $foreign" "$last_out"
cat "$files"/tc.*.log >"$log/env-222.log"
logcheck "torchrun env 2,2,2: shm inside, tcp between, hierarchical by model and by hint" 2,2,2 \
    "$log/env-222.log" --hier auto --hier forced
run "torchrun env 3,2,1 coll_test --quick" 6 "${info_log[@]}" "${env_run[@]}" 3,2,1 "$coll" --quick
logcheck "torchrun env 3,2,1: shm inside, tcp between, hierarchical off on every rank" 3,2,1 \
    "$last_out" --hier off
run "torchrun env 1,1,1 coll_test --quick" 3 "${env_run[@]}" 1,1,1 "$coll" --quick
run "torchrun env 3,2,1 allreduce_test" 6 "${env_run[@]}" 3,2,1 "$ared" "${quick[@]}"
start=$SECONDS
"${env_run[@]}" 3,2,1 "$info" >"$log/tc-info.out" 2>&1
rc=$?
ok=1
[ $rc -eq 0 ] && grep -q "Job (env): 6 ranks on 3 nodes" "$log/tc-info.out" &&
    grep -q "rank 4: node 1 (tcn1) local 1/2" "$log/tc-info.out" &&
    grep -q "rank 5: node 2 (tcn2) local 0/1" "$log/tc-info.out" && ok=0
result "tc-info under the torchrun environment, 3,2,1: the placement across nodes" "$start" "$ok" \
    "exit $rc" "$log/tc-info.out"

# 2. Open MPI: mpirun on node 0, its daemons started on the others by rsh_agent.sh
mpi_run=("$vc" run "$cluster" 0 env TC_VCLUSTER_DIR="$cluster" mpirun --allow-run-as-root
    --oversubscribe --mca plm_rsh_agent "$here/rsh_agent.sh" --mca plm_rsh_no_tree_spawn 1
    --mca routed direct --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0)
# The placement checks read one log file per rank: the launchers' forwarding of the ranks'
# output can splice one rank's line into another's (mpirun did, 2 runs in 7)
mkdir -p "$log/mpi-222" "$log/srun-222"
run "mpirun --host tcn0:2,tcn1:2,tcn2:2 coll_test --quick" 6 "${info_log[@]}" \
    TC_LOG_FILE="$log/mpi-222/tc.%r.log" "${mpi_run[@]}" --host tcn0:2,tcn1:2,tcn2:2 -np 6 \
    "$coll" --quick
cat "$log"/mpi-222/tc.*.log >"$log/mpi-222.log"
logcheck "mpirun 2,2,2: shm inside, tcp between, hierarchical by model and by hint" 2,2,2 \
    "$log/mpi-222.log" --hier auto --hier forced
run "mpirun --host tcn0:3,tcn1:2,tcn2:1 allreduce_test" 6 \
    "${mpi_run[@]}" --host tcn0:3,tcn1:2,tcn2:1 -np 6 "$ared" "${quick[@]}"

# 3. Slurm: slurmctld on node 0, a slurmd in every node
start=$SECONDS
if "$here/slurm_nodes.sh" start "$slurm" "$cluster" >"$log/slurm-start.out" 2>&1; then
    srun_run=("$vc" run "$cluster" 0 env SLURM_CONF="$slurm/slurm.conf" srun --mpi=pmix)
    run "srun -N 3 -n 6 --mpi=pmix coll_test --quick" 6 "${info_log[@]}" \
        TC_LOG_FILE="$log/srun-222/tc.%r.log" "${srun_run[@]}" -N 3 -n 6 "$coll" --quick
    cat "$log"/srun-222/tc.*.log >"$log/srun-222.log"
    logcheck "srun 2,2,2: shm inside, tcp between, hierarchical by model and by hint" 2,2,2 \
        "$log/srun-222.log" --hier auto --hier forced
    run "srun -N 3 -n 3 --mpi=pmix coll_test --quick" 3 "${srun_run[@]}" -N 3 -n 3 "$coll" --quick
    run "srun -n 6 --distribution=arbitrary -w tcn0,tcn0,tcn0,tcn1,tcn1,tcn2 allreduce_test" 6 \
        "${srun_run[@]}" -n 6 --distribution=arbitrary -w tcn0,tcn0,tcn0,tcn1,tcn1,tcn2 "$ared" \
        "${quick[@]}"
    "$here/slurm_nodes.sh" stop "$slurm"
else
    result "Slurm on the cluster's nodes" "$start" 1 "the daemons did not start" \
        "$log/slurm-start.out"
fi

# 4. Nothing left
start=$SECONDS
teardown >"$log/down.out" 2>&1
"$vc" check-clean "$cluster" >>"$log/down.out" 2>&1
result "down: no namespace, interface or process left (check-clean)" "$start" $? "left behind" \
    "$log/down.out"
trap - EXIT

echo "cluster: $pass passed, $fail failed (logs in $log)"
[ $fail -eq 0 ]
