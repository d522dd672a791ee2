#!/usr/bin/env bash
# Open MPI's rsh agent for the virtual cluster: mpirun runs
#   rsh_agent.sh [ssh options] HOST COMMAND...
# to start its daemon on HOST; this runs COMMAND (a shell command line, as ssh
# would) on that node of the cluster in TC_VCLUSTER_DIR. Use with
#   mpirun --mca plm_rsh_agent tests/cluster/rsh_agent.sh --mca plm_rsh_no_tree_spawn 1
set -euo pipefail
: "${TC_VCLUSTER_DIR:?rsh_agent.sh: set TC_VCLUSTER_DIR to the cluster directory}"
# ssh options mpirun may pass before the host (-x, -q, -T, -o OPTION)
while [[ $# -gt 0 && $1 == -* ]]; do
    case $1 in
    -o | -p | -l | -i) shift 2 ;;
    *) shift ;;
    esac
done
[[ $# -ge 2 ]] || { echo "rsh_agent.sh: usage: rsh_agent.sh HOST COMMAND..." >&2; exit 2; }
host=$1
shift
exec "$(dirname "$0")/vcluster.sh" run "$TC_VCLUSTER_DIR" "$host" sh -c "$*"
