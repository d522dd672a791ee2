#!/usr/bin/env bash
# Start N copies of PROG the way torchrun starts its workers on one node, with
# no PMIx server, so that tcomms bootstraps from the environment:
#   run_torchrun_env.sh [--timeout S] [--layout L] N PROG [ARGS...]
# Every rank gets MASTER_ADDR=127.0.0.1, a free MASTER_PORT, RANK, WORLD_SIZE=N,
# LOCAL_RANK=RANK, LOCAL_WORLD_SIZE=N (plus torchrun's GROUP_RANK, ROLE_RANK,
# GROUP_WORLD_SIZE, ROLE_WORLD_SIZE and TORCHELASTIC_* values for one node).
# --layout 3,2,1 tells the ranks they sit on several nodes (LOCAL_RANK,
# LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE as torchrun would on three
# machines; the ranks still share this one): the launcher's word against the
# hostnames, for the node geometry the ranks must agree on. The layout's ranks
# must add up to N. tests/cluster/launch_env.sh runs ranks on real (virtual) nodes.
# Each line a rank writes (stdout and stderr) is printed with "[RANK] " in front.
# When a rank fails, the others are stopped (SIGTERM, SIGKILL 5 s later).
# Exit status: 0 when every rank exited 0; otherwise the largest status among
# the ranks that ended on their own (ranks stopped because another failed do
# not count); 124 when the timeout (default 120 s) ran out first; 2 for bad usage.
set -uo pipefail

usage() {
    echo "usage: $0 [--timeout SECONDS] [--layout L] N PROG [ARGS...]" >&2
    exit 2
}

timeout_s=120
layout=
while [ $# -gt 0 ]; do
    case $1 in
    --timeout)
        [ $# -ge 2 ] || usage
        timeout_s=$2
        shift 2
        ;;
    --timeout=*)
        timeout_s=${1#--timeout=}
        shift
        ;;
    --layout)
        [ $# -ge 2 ] || usage
        layout=$2
        shift 2
        ;;
    --help | -h) usage ;;
    *) break ;;
    esac
done
[ $# -ge 2 ] || usage
n=$1
prog=$2
shift 2
[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "$0: N must be a positive integer, not '$n'" >&2; exit 2; }
[[ $timeout_s =~ ^[1-9][0-9]*$ ]] || { echo "$0: --timeout must be whole seconds > 0, not '$timeout_s'" >&2; exit 2; }
command -v "$prog" >/dev/null 2>&1 || { echo "$0: cannot run '$prog'" >&2; exit 2; }
# per rank: its local rank, its node's size and the node's index
declare -a lrank lsize group
groups=1
if [ -n "$layout" ]; then
    [[ $layout =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] ||
        { echo "$0: --layout must be ranks per node > 0 separated by commas, not '$layout'" >&2; exit 2; }
    IFS=, read -r -a per_node <<<"$layout"
    r=0
    for ((k = 0; k < ${#per_node[@]}; k++)); do
        for ((l = 0; l < per_node[k]; l++)); do
            lrank[r]=$l lsize[r]=${per_node[k]} group[r]=$k
            r=$((r + 1))
        done
    done
    [ "$r" -eq "$n" ] || { echo "$0: --layout $layout has $r ranks, not N=$n" >&2; exit 2; }
    groups=${#per_node[@]}
else
    for ((r = 0; r < n; r++)); do lrank[r]=$r lsize[r]=$n group[r]=0; done
fi

# shellcheck source=tests/integration/free_port.sh
. "$(dirname "$0")/free_port.sh"
# shellcheck source=tests/integration/rank_supervisor.sh
. "$(dirname "$0")/rank_supervisor.sh"

port=$(free_port) || { echo "$0: found no free port" >&2; exit 2; }
rs_init run_torchrun_env
trap 'rs_cleanup; exit 130' INT
trap 'rs_cleanup; exit 143' TERM

for ((r = 0; r < n; r++)); do
    rs_start "$r" env MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" RANK="$r" WORLD_SIZE="$n" \
        LOCAL_RANK="${lrank[r]}" LOCAL_WORLD_SIZE="${lsize[r]}" GROUP_RANK="${group[r]}" \
        ROLE_RANK="$r" GROUP_WORLD_SIZE="$groups" ROLE_WORLD_SIZE="$n" ROLE_NAME=default \
        TORCHELASTIC_RESTART_COUNT=0 TORCHELASTIC_MAX_RESTARTS=0 \
        TORCHELASTIC_RUN_ID=tc-$$ "$prog" "$@"
done
rs_supervise "$timeout_s"
rc=$?
rs_cleanup
exit $rc
