#!/usr/bin/env bash
# The all-reduce integration test under every launcher tcomms supports.
#   run_launchers.sh BIN [--quick]
# BIN is a bazel-bin directory holding tools/tcrun/tcrun,
# tests/integration/allreduce_test and tools/tcperf/tcperf.
# Every run is bounded by `timeout`; prints one line per case and exits
# non-zero if any failed.
set -uo pipefail
bin=${1:?bazel-bin directory}
mode=${2:-full}
here=$(cd "$(dirname "$0")" && pwd)
tcrun=$bin/tools/tcrun/tcrun
test=$bin/tests/integration/allreduce_test
tcperf=$bin/tools/tcperf/tcperf
quick=()
[ "$mode" = --quick ] && quick=(--quick)
pass=0 fail=0
log=$(mktemp -d /tmp/tc-integration.XXXXXX)

# run NAME EXPECTED_LINES COMMAND...: passes when the command exits 0 and
# prints EXPECTED_LINES lines that say ", 0 failures" (one per rank).
run() {
    local name=$1 want=$2
    shift 2
    local start=$SECONDS out=$log/$(echo "$name" | tr ' /' '__').out
    timeout -k 10 300 "$@" >"$out" 2>&1
    local rc=$?
    local ok=$(grep -c ', 0 failures' "$out")
    if [ $rc -eq 0 ] && [ "$ok" -eq "$want" ]; then
        echo "PASS  $name ($((SECONDS - start)) s)"
        pass=$((pass + 1))
    else
        echo "FAIL  $name (exit $rc, $ok of $want ranks clean, $((SECONDS - start)) s); last lines:"
        tail -n 15 "$out" | sed 's/^/      /'
        fail=$((fail + 1))
    fi
}

# 1. tcrun, odd and non-power-of-two rank counts
for n in 1 2 3 4 5 7 8; do
    run "tcrun -n $n allreduce_test" "$n" "$tcrun" -n "$n" "$test" "${quick[@]}"
done

# 2. Open MPI's mpirun as the PMIx server
run "mpirun -np 4 allreduce_test" 4 \
    mpirun --allow-run-as-root --oversubscribe -np 4 "$test" "${quick[@]}"

# 3. Slurm: a one-node cluster on loopback, started and stopped here
slurm_dir=$log/slurm
if "$here/slurm_cluster.sh" start "$slurm_dir" >"$log/slurm-start.out" 2>&1; then
    SLURM_CONF=$slurm_dir/slurm.conf run "srun --mpi=pmix -n 4 allreduce_test" 4 \
        srun -O -n 4 --mpi=pmix "$test" "${quick[@]}"
    "$here/slurm_cluster.sh" stop "$slurm_dir"
else
    echo "FAIL  slurm one-node cluster did not start:"
    sed 's/^/      /' "$log/slurm-start.out" | tail -n 20
    fail=$((fail + 1))
fi

# 4. Without any PMIx server: a world of one by default, a clear error when PMIx is required.
run "no launcher: world of one" 1 env -u PMIX_NAMESPACE "$test" "${quick[@]}"
start=$SECONDS
out=$(TC_BOOTSTRAP=pmix timeout 30 "$test" 2>&1)
rc=$?
if [ $rc -eq 2 ] && echo "$out" | grep -q 'TC_ERR_BOOTSTRAP.*no PMIx server'; then
    echo "PASS  TC_BOOTSTRAP=pmix without a server: clear error in $((SECONDS - start)) s"
    pass=$((pass + 1))
else
    echo "FAIL  TC_BOOTSTRAP=pmix without a server: exit $rc: $out"
    fail=$((fail + 1))
fi

# 5. tcperf with checking on, 4 ranks: #wrong must be 0 everywhere.
out=$log/tcperf.out
timeout -k 10 300 "$tcrun" -n 4 "$tcperf" -b 8 -e 4M -f 4 -n 3 -w 1 -c 1 >"$out" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q 'Out of bounds values : 0 OK' "$out"; then
    echo "PASS  tcperf -c 1 over 4 ranks under tcrun"
    pass=$((pass + 1))
else
    echo "FAIL  tcperf -c 1 over 4 ranks under tcrun (exit $rc):"
    tail -n 20 "$out" | sed 's/^/      /'
    fail=$((fail + 1))
fi

echo "integration: $pass passed, $fail failed (logs in $log)"
[ $fail -eq 0 ]
