#!/usr/bin/env bash
# The world created, used and destroyed CYCLES times in one job, under each launcher: whether
# every cycle succeeds, and each rank's resident set and heap growth per cycle after the
# warm-up (tests/integration/recreate_test prints them).
#   bench/run_recreate.sh BIN [--ranks N] [--cycles C] [--dups D] [--launchers "tcrun mpirun srun env"]
# BIN holds tools/tcrun/tcrun and tests/integration/recreate_test (a bazel-bin directory, or
# CI's build/bin-opt). Prints one line per rank ("[launcher] rank R: ...") and a summary line per
# launcher; exits non-zero when a job failed.
set -uo pipefail
bin=${1:?bazel-bin directory}
shift
ranks=3 cycles=200 dups=0 launchers="tcrun mpirun srun env"
while [ $# -gt 0 ]; do
    case $1 in
    --ranks) ranks=$2; shift 2 ;;
    --cycles) cycles=$2; shift 2 ;;
    --dups) dups=$2; shift 2 ;;
    --launchers) launchers=$2; shift 2 ;;
    *) echo "usage: $0 BIN [--ranks N] [--cycles C] [--dups D] [--launchers L]" >&2; exit 2 ;;
    esac
done
here=$(cd "$(dirname "$0")" && pwd)
it=$here/../tests/integration
tcrun=$bin/tools/tcrun/tcrun
prog=$bin/tests/integration/recreate_test
log=$(mktemp -d /tmp/tc-recreate.XXXXXX)
rc=0

one() {
    local name=$1
    shift
    local start=$SECONDS
    timeout -k 10 600 "$@" >"$log/$name.out" 2>&1
    local st=$?
    sed "s/^/[$name] /" "$log/$name.out" | grep -E 'cycles|cycle [0-9]+|error|rror' | head -n 20
    echo "[$name] exit $st, $((SECONDS - start)) s, $(grep -c ', 0 failures' "$log/$name.out") of $ranks ranks clean"
    [ $st -eq 0 ] || rc=1
}

for l in $launchers; do
    case $l in
    tcrun) one tcrun "$tcrun" -n "$ranks" "$prog" "$cycles" --dups "$dups" ;;
    mpirun) one mpirun mpirun --allow-run-as-root --oversubscribe -np "$ranks" "$prog" "$cycles" \
        --dups "$dups" ;;
    env) one env env TC_JOB_SECRET=recreate-bench-8e4b27c1d0a6 "$it/run_torchrun_env.sh" --timeout 600 "$ranks" \
        "$prog" "$cycles" --dups "$dups" ;;
    srun)
        if "$it/slurm_cluster.sh" start "$log/slurm" >"$log/slurm-start.out" 2>&1; then
            SLURM_CONF=$log/slurm/slurm.conf one srun srun -O -n "$ranks" --mpi=pmix "$prog" \
                "$cycles" --dups "$dups"
            "$it/slurm_cluster.sh" stop "$log/slurm"
        else
            echo "[srun] the one-node Slurm cluster did not start:"
            tail -n 5 "$log/slurm-start.out"
            rc=1
        fi
        ;;
    esac
done
echo "logs in $log"
exit $rc
