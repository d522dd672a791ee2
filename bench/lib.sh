# shellcheck shell=bash disable=SC2034  # sets variables for the sourcing script
# What the bench/run_*.sh sweeps share; sourced, not run.

# 64M -> 67108864 (suffixes K, M, G: powers of 1024)
to_bytes() {
    awk -v s="$1" 'BEGIN { m = 1; u = toupper(substr(s, length(s)));
        if (u == "K") m = 1024; else if (u == "M") m = 1048576; else if (u == "G") m = 1073741824;
        if (m > 1) s = substr(s, 1, length(s) - 1); printf "%d\n", s * m }'
}

# split_sweep MIN MAX FACTOR LARGE: the sweep's sizes up to LARGE in s1..e1 and those above it in
# s2..e2 (each pair empty when the part has no size), for two tcperf launches with their own
# iteration counts.
split_sweep() {
    local s
    s1="" e1="" s2="" e2=""
    for ((s = $1; s <= $2; s *= $3)); do
        if [ "$s" -le "$4" ]; then
            [ -n "$s1" ] || s1=$s
            e1=$s
        else
            [ -n "$s2" ] || s2=$s
            e2=$s
        fi
    done
}

# build_tc LOGFILE: tcperf and tcrun in $tcperf and $tcrun: the prebuilt TCPERF and TCRUN when
# both are set, else built with Bazel -c opt (BAZEL_STARTUP: its startup options). Returns 1,
# with the reason in $build_why, when there is none to run.
build_tc() {
    local bin
    build_why=""
    if [ -n "${TCPERF:-}" ] && [ -n "${TCRUN:-}" ]; then
        tcperf=$TCPERF tcrun=$TCRUN
    else
        local bazel=(bazel ${BAZEL_STARTUP:-})
        tcperf="" tcrun=""
        if ! "${bazel[@]}" build -c opt //tools/tcperf //tools/tcrun >"$1" 2>&1; then
            build_why="bazel build -c opt //tools/tcperf //tools/tcrun failed: $1"
            return 1
        fi
        bin=$("${bazel[@]}" info -c opt bazel-bin 2>/dev/null)
        tcperf=$bin/tools/tcperf/tcperf tcrun=$bin/tools/tcrun/tcrun
    fi
    if [ ! -x "$tcperf" ] || [ ! -x "$tcrun" ]; then
        build_why="no executable tcperf/tcrun at $tcperf, $tcrun"
        return 1
    fi
}

# The machine line every report starts with.
machine_line() {
    echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs)," \
        "load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
}
