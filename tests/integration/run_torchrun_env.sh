#!/usr/bin/env bash
# Start N copies of PROG the way torchrun starts its workers on one node, with
# no PMIx server, so that tcomms bootstraps from the environment:
#   run_torchrun_env.sh [--timeout S] N PROG [ARGS...]
# Every rank gets MASTER_ADDR=127.0.0.1, a free MASTER_PORT, RANK, WORLD_SIZE=N,
# LOCAL_RANK=RANK, LOCAL_WORLD_SIZE=N (plus torchrun's GROUP_RANK, ROLE_RANK,
# GROUP_WORLD_SIZE, ROLE_WORLD_SIZE and TORCHELASTIC_* values for one node).
# Each line a rank writes (stdout and stderr) is printed with "[RANK] " in front.
# When a rank fails, the others are stopped (SIGTERM, SIGKILL 5 s later).
# Exit status: 0 when every rank exited 0; otherwise the largest status among
# the ranks that ended on their own (ranks stopped because another failed do
# not count); 124 when the timeout (default 120 s) ran out first; 2 for bad usage.
set -uo pipefail

usage() {
    echo "usage: $0 [--timeout SECONDS] N PROG [ARGS...]" >&2
    exit 2
}

timeout_s=120
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
        LOCAL_RANK="$r" LOCAL_WORLD_SIZE="$n" GROUP_RANK=0 ROLE_RANK="$r" \
        GROUP_WORLD_SIZE=1 ROLE_WORLD_SIZE="$n" ROLE_NAME=default \
        TORCHELASTIC_RESTART_COUNT=0 TORCHELASTIC_MAX_RESTARTS=0 \
        TORCHELASTIC_RUN_ID=tc-$$ "$prog" "$@"
done
rs_supervise "$timeout_s"
rc=$?
rs_cleanup
exit $rc
