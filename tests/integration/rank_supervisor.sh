# shellcheck shell=bash
# Sourced by the scripts that start a job's ranks themselves, the way torchrun
# does (run_torchrun_env.sh on one machine, tests/cluster/launch_env.sh across
# the virtual cluster's nodes):
#   rs_init NAME             a temporary folder; NAME prefixes the messages
#   rs_start RANK CMD...     start CMD in the background (stdin /dev/null), each
#                            line it writes printed with "[RANK] " in front; CMD
#                            must end up as the process started (exec), so that
#                            signals reach it
#   rs_supervise TIMEOUT     wait for every rank; when one fails, stop the
#                            others (SIGTERM, SIGKILL 5 s later); returns 0 when
#                            every rank exited 0, else the largest status among
#                            the ranks that ended on their own (ranks stopped
#                            because another failed do not count), 124 when
#                            TIMEOUT seconds ran out first (naming the ranks
#                            still running)
#   rs_cleanup               stop whatever still runs, remove the folder
# The caller traps INT and TERM to rs_cleanup.
rs_pids=()
rs_seds=()
rs_status=()
rs_alive=()
rs_dir=
rs_name=

rs_init() {
    rs_name=$1
    rs_dir=$(mktemp -d "${TMPDIR:-/tmp}/tc-ranks.XXXXXX")
}

rs_start() {
    local r=$1
    shift
    mkfifo "$rs_dir/out.$r"
    sed -u "s/^/[$r] /" <"$rs_dir/out.$r" &
    rs_seds[r]=$!
    "$@" </dev/null >"$rs_dir/out.$r" 2>&1 &
    rs_pids[r]=$!
    rs_alive+=("$!")
}

# Bash reaps finished children on its own: `kill -0` fails once a rank has
# ended, and `wait PID` then gives its status.
rs_stop() { # rs_stop PID...: SIGTERM, then SIGKILL whatever is left after 5 s
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

rs_supervise() {
    local timeout_s=$1 n=${#rs_pids[@]} deadline=$((SECONDS + $1)) worst=0 r p failed
    local -a next still
    while [ ${#rs_alive[@]} -gt 0 ]; do
        if [ $SECONDS -ge $deadline ]; then
            still=()
            for ((r = 0; r < n; r++)); do [ -z "${rs_status[r]:-}" ] && still+=("$r"); done
            echo "$rs_name: timeout after $timeout_s s; ranks still running: ${still[*]}" >&2
            rs_stop "${rs_alive[@]}"
            rs_alive=()
            return 124
        fi
        next=()
        failed=
        for ((r = 0; r < n; r++)); do
            p=${rs_pids[r]}
            [ -z "${rs_status[r]:-}" ] || continue
            if kill -0 "$p" 2>/dev/null; then
                next+=("$p")
                continue
            fi
            wait "$p"
            rs_status[r]=$?
            if [ "${rs_status[r]}" -ne 0 ]; then
                echo "$rs_name: rank $r exited with status ${rs_status[r]}" >&2
                ((rs_status[r] > worst)) && worst=${rs_status[r]}
                failed=1
            fi
        done
        rs_alive=("${next[@]+"${next[@]}"}")
        if [ -n "$failed" ] && [ ${#rs_alive[@]} -gt 0 ]; then
            echo "$rs_name: stopping the ${#rs_alive[@]} other ranks" >&2
            rs_stop "${rs_alive[@]}"
            rs_alive=()
        fi
        [ ${#rs_alive[@]} -eq 0 ] || sleep 0.1
    done
    return "$worst"
}

rs_cleanup() {
    local s
    [ ${#rs_alive[@]} -gt 0 ] && rs_stop "${rs_alive[@]}"
    rs_alive=()
    # the output relays end with their rank; do not wait for them forever
    for s in "${rs_seds[@]}"; do
        for _ in $(seq 50); do kill -0 "$s" 2>/dev/null || break; sleep 0.1; done
        kill "$s" 2>/dev/null
    done
    rs_seds=()
    [ -z "$rs_dir" ] || rm -rf "$rs_dir"
    rs_dir=
}
