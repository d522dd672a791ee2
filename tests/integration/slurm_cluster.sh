#!/usr/bin/env bash
# A one-node Slurm cluster on loopback, for the integration tests.
#   slurm_cluster.sh start DIR   # writes DIR/slurm.conf, starts slurmctld and slurmd
#   slurm_cluster.sh stop DIR    # stops the daemons it started (by their PIDs) and the step
#                                # daemons of its jobs that outlived them
# Then: SLURM_CONF=DIR/slurm.conf srun -O -n 4 --mpi=pmix prog
# The daemons' ports are free ones the kernel picks (TC_SLURMCTLD_PORT, TC_SLURMD_PORT
# override) and the steps' PMIx directories are under DIR (TmpFS; by default
# /tmp/spmix_appdir_<uid>_<job>.<step>, where a step daemon killed by stop leaves its own and
# the next cluster's job of that number fails to start), so two clusters (two test scripts at
# once, or one after another) do not take each other's.
set -euo pipefail
cmd=${1:?start|stop}
dir=${2:?state directory}

stop() {
    for d in slurmd slurmctld; do
        if [ -f "$dir/$d.pid" ]; then
            pid=$(cat "$dir/$d.pid")
            kill "$pid" 2>/dev/null || true
            for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -9 "$pid" 2>/dev/null || true
            rm -f "$dir/$d.pid"
        fi
    done
    # a job step whose ranks were killed can leave its slurmstepd behind, holding the
    # daemon's socket: find this cluster's by the configuration in their environment
    local p
    for p in $(pgrep -x slurmstepd 2>/dev/null); do
        if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qxF "SLURM_CONF=$dir/slurm.conf"; then
            kill -9 "$p" 2>/dev/null || true
        fi
    done
}

if [ "$cmd" = stop ]; then
    stop
    exit 0
fi

mkdir -p "$dir"/{state,spool,log,tmp}
# shellcheck source=tests/integration/free_port.sh
. "$(dirname "$0")/free_port.sh"
cpus=$(nproc)
user=$(id -un)
export SLURM_CONF=$dir/slurm.conf

# Writes the configuration with free ports and starts both daemons.
launch() {
    local ctld_port slurmd_port
    ctld_port=${TC_SLURMCTLD_PORT:-$(free_port)}
    slurmd_port=${TC_SLURMD_PORT:-$(free_port)}
    while [ "$slurmd_port" = "$ctld_port" ]; do slurmd_port=$(free_port); done
    cat > "$dir/slurm.conf" <<CONF
ClusterName=tcomms-test
SlurmctldHost=localhost
SlurmUser=$user
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=pmix
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
TmpFS=$dir/tmp
SlurmctldPidFile=$dir/slurmctld.pidfile
SlurmdPidFile=$dir/slurmd.pidfile
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
CONF
    slurmctld -D -f "$SLURM_CONF" >"$dir/log/slurmctld.out" 2>&1 &
    echo $! > "$dir/slurmctld.pid"
    slurmd -D -N localhost -f "$SLURM_CONF" >"$dir/log/slurmd.out" 2>&1 &
    echo $! > "$dir/slurmd.pid"
}

# Ready when the node is idle, within 30 s (each sinfo bounded: with no controller to answer it
# retries for minutes). A port free when picked can be taken before a daemon binds it (an
# outgoing connection's ephemeral port comes from the same range): the daemon exits, and the
# cluster starts again on other ports, up to 3 times.
for attempt in 1 2 3; do
    launch
    deadline=$((SECONDS + 30))
    while [ $SECONDS -lt $deadline ]; do
        sleep 0.2
        for d in slurmctld slurmd; do
            kill -0 "$(cat "$dir/$d.pid")" 2>/dev/null || break 2
        done
        if timeout 5 sinfo -h -N -o '%t' 2>/dev/null | grep -qE '^(idle|mix)'; then
            exit 0
        fi
    done
    if [ "$attempt" -lt 3 ] &&
        grep -qs 'Address already in use' "$dir/log/slurmctld.out" "$dir/log/slurmd.out"; then
        echo "slurm_cluster: a port was taken before a daemon bound it (attempt $attempt)" >&2
        stop
        rm -f "$dir/log/"*
        continue
    fi
    break
done
echo "slurm_cluster: the node did not become idle within 30 s (attempt $attempt of 3)" >&2
timeout 5 sinfo -N -l >&2 || true
tail -n 20 "$dir/log/"*.out >&2 || true
stop
exit 1
