#!/usr/bin/env bash
# A Slurm cluster on the virtual cluster's nodes: slurmctld on node 0, one
# slurmd per node inside that node (its own hostname, address and /tmp).
#   slurm_nodes.sh start DIR CLUSTER_DIR   writes DIR/slurm.conf, starts the daemons
#   slurm_nodes.sh stop DIR                stops the daemons it started (by PID)
# Then, on node 0: SLURM_CONF=DIR/slurm.conf srun -N 3 -n 6 --mpi=pmix prog
# (vcluster.sh run CLUSTER_DIR 0 env SLURM_CONF=... srun ...).
set -euo pipefail
cmd=${1:?start|stop}
dir=${2:?state directory}
vc=$(cd "$(dirname "$0")" && pwd)/vcluster.sh

stop() {
    local f pid
    for f in "$dir"/pids/*; do
        [ -e "$f" ] || continue
        pid=$(cat "$f")
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
        rm -f "$f"
    done
}

if [ "$cmd" = stop ]; then
    stop
    exit 0
fi
[ "$cmd" = start ] || { echo "slurm_nodes.sh: unknown command '$cmd' (start|stop)" >&2; exit 2; }
cluster=${3:?cluster directory}
mkdir -p "$dir"/{state,log,pids}
dir=$(cd "$dir" && pwd)
mapfile -t hosts < <("$vc" hosts "$cluster")
cpus=$(nproc)
{
    cat <<CONF
ClusterName=tcomms-vcluster
SlurmctldHost=tcn0($("$vc" addr "$cluster" 0))
SlurmUser=$(id -un)
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
SlurmdTimeout=30
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
TmpFS=$dir/tmp/%n
SlurmctldPidFile=$dir/slurmctld.pidfile
SlurmdPidFile=$dir/slurmd.%n.pidfile
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.%n.log
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
CONF
    for h in "${hosts[@]}"; do
        echo "NodeName=$h NodeAddr=$("$vc" addr "$cluster" "$h") CPUs=$cpus State=UNKNOWN"
    done
    echo "PartitionName=test Nodes=$(IFS=,; echo "${hosts[*]}") Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8"
} >"$dir/slurm.conf"
export SLURM_CONF=$dir/slurm.conf
"$vc" run "$cluster" 0 slurmctld -D -f "$SLURM_CONF" >"$dir/log/slurmctld.out" 2>&1 &
echo $! >"$dir/pids/slurmctld"
for h in "${hosts[@]}"; do
    mkdir -p "$dir/spool/$h" "$dir/tmp/$h"
    "$vc" run "$cluster" "$h" slurmd -D -N "$h" -f "$SLURM_CONF" >"$dir/log/slurmd.$h.out" 2>&1 &
    echo $! >"$dir/pids/slurmd.$h"
done

# Ready when every node is idle, within 30 s: each sinfo bounded (with no controller to answer
# it retries for minutes), and no waiting on a controller that has exited.
deadline=$((SECONDS + 30))
while [ $SECONDS -lt $deadline ]; do
    idle=$(timeout 5 "$vc" run "$cluster" 0 sinfo -h -N -o '%N %t' 2>/dev/null |
        grep -cE ' (idle|mix)$' || true)
    [ "$idle" -eq "${#hosts[@]}" ] && exit 0
    kill -0 "$(cat "$dir/pids/slurmctld")" 2>/dev/null || break
    sleep 0.2
done
echo "slurm_nodes: not every node became idle within 30 s" >&2
timeout 5 "$vc" run "$cluster" 0 sinfo -N -l >&2 || true
tail -n 20 "$dir"/log/*.log "$dir"/log/*.out >&2 || true
stop
exit 1
