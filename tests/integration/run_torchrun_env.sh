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

. "$(dirname "$0")/free_port.sh"

port=$(free_port) || { echo "$0: found no free port" >&2; exit 2; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/tc-torchrun-env.XXXXXX")
declare -a pids seds status
alive=()

# Bash reaps finished children on its own: `kill -0` fails once a rank has
# ended, and `wait PID` then gives its status.
stop_ranks() { # stop_ranks PID...: SIGTERM, then SIGKILL whatever is left after 5 s
    [ $# -gt 0 ] || return 0
    kill -TERM "$@" 2>/dev/null
    local p end=$((SECONDS + 5)) any=1
    while [ $any -eq 1 ] && [ $SECONDS -lt $end ]; do
        any=0
        for p in "$@"; do kill -0 "$p" 2>/dev/null && any=1; done
        [ $any -eq 0 ] || sleep 0.1
    done
    kill -KILL "$@" 2>/dev/null
    for p in "$@"; do wait "$p" 2>/dev/null; done
}

cleanup() {
    [ ${#alive[@]} -gt 0 ] && stop_ranks "${alive[@]}"
    # the output relays end with their rank; do not wait for them forever
    for s in "${seds[@]}"; do
        for _ in $(seq 50); do kill -0 "$s" 2>/dev/null || break; sleep 0.1; done
        kill "$s" 2>/dev/null
    done
    rm -rf "$dir"
}
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM

for ((r = 0; r < n; r++)); do
    mkfifo "$dir/out.$r"
    sed -u "s/^/[$r] /" <"$dir/out.$r" &
    seds[r]=$!
    MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=$r WORLD_SIZE=$n \
        LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n GROUP_RANK=0 ROLE_RANK=$r \
        GROUP_WORLD_SIZE=1 ROLE_WORLD_SIZE=$n ROLE_NAME=default \
        TORCHELASTIC_RESTART_COUNT=0 TORCHELASTIC_MAX_RESTARTS=0 \
        TORCHELASTIC_RUN_ID=tc-$$ \
        "$prog" "$@" <"/dev/null" >"$dir/out.$r" 2>&1 &
    pids[r]=$!
    alive+=("$!")
done

deadline=$((SECONDS + timeout_s))
worst=0
timed_out=0
while [ ${#alive[@]} -gt 0 ]; do
    if [ $SECONDS -ge $deadline ]; then
        timed_out=1
        break
    fi
    next=()
    failed=
    for ((r = 0; r < n; r++)); do
        p=${pids[r]}
        [ -z "${status[r]:-}" ] || continue
        if kill -0 "$p" 2>/dev/null; then
            next+=("$p")
            continue
        fi
        wait "$p"
        status[r]=$?
        if [ "${status[r]}" -ne 0 ]; then
            echo "run_torchrun_env: rank $r exited with status ${status[r]}" >&2
            ((status[r] > worst)) && worst=${status[r]}
            failed=1
        fi
    done
    alive=("${next[@]+"${next[@]}"}")
    if [ -n "$failed" ] && [ ${#alive[@]} -gt 0 ]; then
        echo "run_torchrun_env: stopping the ${#alive[@]} other ranks" >&2
        stop_ranks "${alive[@]}"
        alive=()
    fi
    [ ${#alive[@]} -eq 0 ] || sleep 0.1
done

if [ $timed_out -eq 1 ]; then
    still=()
    for ((r = 0; r < n; r++)); do [ -z "${status[r]:-}" ] && still+=("$r"); done
    echo "run_torchrun_env: timeout after $timeout_s s; ranks still running: ${still[*]}" >&2
    stop_ranks "${alive[@]}"
    alive=()
    worst=124
fi
cleanup
exit $worst
