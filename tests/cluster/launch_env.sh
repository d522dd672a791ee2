#!/usr/bin/env bash
# Start PROG on the virtual cluster's nodes the way torchrun starts its workers
# on several machines, with no PMIx server, so that tcomms bootstraps from the
# environment:
#   launch_env.sh [--timeout S] [--port P] CLUSTER_DIR LAYOUT PROG [ARGS...]
# CLUSTER_DIR is a cluster brought up by vcluster.sh; LAYOUT gives the ranks
# of each node in order, e.g. 2,2,2 or 3,2,1 (node 0 takes ranks 0-2, node 1
# ranks 3-4, ...; a node may be given 0 ranks). Every rank gets MASTER_ADDR=tcn0,
# MASTER_PORT (P, else a free port of node 0), RANK, WORLD_SIZE, LOCAL_RANK and
# LOCAL_WORLD_SIZE of its node, GROUP_RANK (its node's index among the nodes
# given ranks), GROUP_WORLD_SIZE, ROLE_RANK, ROLE_WORLD_SIZE, TORCHELASTIC_*.
# Variables set for this script (TC_*, ...) reach every rank.
# Each line a rank writes is printed with "[RANK] " in front; when a rank
# fails, the others are stopped. Exit status as run_torchrun_env.sh's: 0 when
# every rank exited 0, else the largest status of the ranks that failed on
# their own; 124 when the timeout (default 120 s) ran out; 2 for bad usage.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
integration=$here/../integration

usage() {
    echo "usage: $0 [--timeout SECONDS] [--port PORT] CLUSTER_DIR LAYOUT PROG [ARGS...]" >&2
    exit 2
}

timeout_s=120
port=
while [ $# -gt 0 ]; do
    case $1 in
    --timeout)
        [ $# -ge 2 ] || usage
        timeout_s=$2
        shift 2
        ;;
    --port)
        [ $# -ge 2 ] || usage
        port=$2
        shift 2
        ;;
    --help | -h) usage ;;
    *) break ;;
    esac
done
[ $# -ge 3 ] || usage
cluster=$1
layout=$2
prog=$3
shift 3
[[ $timeout_s =~ ^[1-9][0-9]*$ ]] || {
    echo "$0: --timeout must be whole seconds > 0, not '$timeout_s'" >&2
    exit 2
}
[[ -z $port || $port =~ ^[1-9][0-9]*$ ]] || { echo "$0: --port must be a number, not '$port'" >&2; exit 2; }
[[ $layout =~ ^[0-9]+(,[0-9]+)*$ ]] || {
    echo "$0: LAYOUT must be ranks per node separated by commas (2,2,2 or 3,2,1), not '$layout'" >&2
    exit 2
}
command -v "$prog" >/dev/null 2>&1 || { echo "$0: cannot run '$prog'" >&2; exit 2; }
vc=$here/vcluster.sh
nodes=$("$vc" hosts "$cluster" | wc -l) || exit 2
IFS=, read -r -a per_node <<<"$layout"
((${#per_node[@]} <= nodes)) || {
    echo "$0: layout '$layout' names ${#per_node[@]} nodes; the cluster in $cluster has $nodes" >&2
    exit 2
}
world=0 groups=0
for c in "${per_node[@]}"; do
    world=$((world + c))
    ((c == 0)) || groups=$((groups + 1))
done
((world > 0)) || { echo "$0: layout '$layout' has no rank" >&2; exit 2; }

if [ -z "$port" ]; then
    # shellcheck disable=SC2016 # expanded by the shell on node 0
    port=$("$vc" run "$cluster" 0 bash -c '. "$1"; free_port' free_port "$integration/free_port.sh") || {
        echo "$0: found no free port on node 0" >&2
        exit 2
    }
fi

# shellcheck source=tests/integration/rank_supervisor.sh
. "$integration/rank_supervisor.sh"
rs_init launch_env
trap 'rs_cleanup; exit 130' INT
trap 'rs_cleanup; exit 143' TERM

r=0 group=0
for ((k = 0; k < ${#per_node[@]}; k++)); do
    local_n=${per_node[k]}
    ((local_n > 0)) || continue
    for ((l = 0; l < local_n; l++)); do
        rs_start "$r" "$vc" run "$cluster" "$k" env MASTER_ADDR=tcn0 MASTER_PORT="$port" \
            RANK="$r" WORLD_SIZE="$world" LOCAL_RANK="$l" LOCAL_WORLD_SIZE="$local_n" \
            GROUP_RANK="$group" GROUP_WORLD_SIZE="$groups" ROLE_RANK="$r" \
            ROLE_WORLD_SIZE="$world" ROLE_NAME=default TORCHELASTIC_RESTART_COUNT=0 \
            TORCHELASTIC_MAX_RESTARTS=0 TORCHELASTIC_RUN_ID="tc-$$" "$prog" "$@"
        r=$((r + 1))
    done
    group=$((group + 1))
done
rs_supervise "$timeout_s"
rc=$?
rs_cleanup
exit $rc
