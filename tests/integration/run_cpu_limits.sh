#!/usr/bin/env bash
# Jobs in a container's CPU limits: 2 ranks in a cgroup allowed 1 CPU, by a CPU quota (a
# container's --cpus, a Kubernetes limit) and by a cpuset (--cpuset-cpus, Slurm's
# ConstrainCores). The runtime must see that its ranks outnumber the CPUs and sleep at once
# instead of polling (polling 50 us there made an 8-byte all-reduce 7 us instead of 1.2);
# without a limit, on a machine of 2 CPUs or more, it polls; TC_SPIN_US still decides when set.
# The case without a limit runs in groups of its own at the hierarchy's root, so that limits of
# the group this test was started in (a CI runner's container) do not count.
# Each job is an all-reduce test whose results are checked.
#   run_cpu_limits.sh BIN
# BIN is a bazel-bin directory with tools/tcrun/tcrun and tests/integration/allreduce_test.
# Needs root and a writable cgroup hierarchy (v1 cpu and cpuset, or v2): skipped otherwise.
set -uo pipefail
bin=${1:?bazel-bin directory}
tcrun=$bin/tools/tcrun/tcrun
prog=$bin/tests/integration/allreduce_test
fs=/sys/fs/cgroup
name=tc-cpu-limits.$$
groups=()
cleanup() {
    local g
    for g in "${groups[@]}"; do rmdir "$g" 2>/dev/null; done
}
trap cleanup EXIT

# Makes a group allowing one CPU by KIND (quota|cpuset), or, for KIND free, groups under the
# root without a limit; sets procs to their cgroup.procs paths (space-separated).
make_group() {
    local kind=$1 g cpu
    cpu=$(cut -d, -f1 <"/sys/devices/system/cpu/online" | cut -d- -f1)
    if [ -d $fs/cpu ] && [ -d $fs/cpuset ]; then # v1
        if [ "$kind" = free ]; then
            g=$fs/cpuset/$name.free
            mkdir "$g" && groups+=("$g") || return 1
            cat $fs/cpuset/cpuset.mems >"$g/cpuset.mems" &&
                cat $fs/cpuset/cpuset.cpus >"$g/cpuset.cpus" || return 1
            mkdir $fs/cpu/$name.free && groups+=("$fs/cpu/$name.free") || return 1
            procs="$g/cgroup.procs $fs/cpu/$name.free/cgroup.procs"
            return 0
        elif [ "$kind" = quota ]; then
            g=$fs/cpu/$name.quota
            mkdir "$g" && groups+=("$g") || return 1
            echo 100000 >"$g/cpu.cfs_period_us" && echo 100000 >"$g/cpu.cfs_quota_us" || return 1
        else
            g=$fs/cpuset/$name.cpuset
            mkdir "$g" && groups+=("$g") || return 1
            cat $fs/cpuset/cpuset.mems >"$g/cpuset.mems" && echo "$cpu" >"$g/cpuset.cpus" ||
                return 1
        fi
    elif [ -f $fs/cgroup.controllers ]; then # v2: a group beside this shell's
        grep -qw cpu $fs/cgroup.subtree_control || echo +cpu >$fs/cgroup.subtree_control
        grep -qw cpuset $fs/cgroup.subtree_control || echo +cpuset >$fs/cgroup.subtree_control
        g=$fs/$name.$kind
        mkdir "$g" && groups+=("$g") || return 1
        if [ "$kind" = quota ]; then
            echo "100000 100000" >"$g/cpu.max" || return 1
        elif [ "$kind" = cpuset ]; then
            echo "$cpu" >"$g/cpuset.cpus" || return 1
        fi
    else
        return 1
    fi
    procs=$g/cgroup.procs
}

if [ "$(id -u)" != 0 ]; then
    echo "SKIP  run_cpu_limits.sh: needs root (cgroups)"
    exit 0
fi
if ! { make_group quota 2>/dev/null && procs_quota=$procs && make_group cpuset 2>/dev/null &&
    procs_cpuset=$procs; }; then
    echo "SKIP  run_cpu_limits.sh: cannot make a cgroup with a CPU limit under $fs"
    exit 0
fi

fail=0
# run LABEL PROCS WANT [ENV=V ...]: the job (in the groups whose cgroup.procs files PROCS lists),
# then every rank's line of the waiting policy must end with WANT.
run() {
    local label=$1 procs=$2 want=$3 out
    shift 3
    out=$(bash -c 'for p in $1; do echo $$ >"$p" || exit 97; done; shift
        exec env TC_LOG=runtime=info "$@"' _ "$procs" "$@" \
        timeout -k 5 60 "$tcrun" --timeout 50 -n 2 "$prog" 2>&1)
    local rc=$? lines
    lines=$(grep -o '[0-9]* local ranks, .*' <<<"$out")
    if [ $rc -ne 0 ] || [ "$(grep -c . <<<"$lines")" != 2 ] || grep -qv -- "$want\$" <<<"$lines"; then
        echo "FAIL  $label: rc=$rc, wanted 2 ranks saying '... $want'; got:"
        tail -n 20 <<<"$out" | sed 's/^/      /'
        fail=1
    else
        echo "ok    $label: $(head -n 1 <<<"$lines")"
    fi
}

run "CPU quota of 1" "$procs_quota" "1 usable cores: poll 0 us before sleeping"
run "cpuset of 1 CPU" "$procs_cpuset" "1 usable cores: poll 0 us before sleeping"
run "cpuset of 1 CPU, TC_SPIN_US=7" "$procs_cpuset" "poll 7 us before sleeping" TC_SPIN_US=7
if [ "$(getconf _NPROCESSORS_ONLN)" -ge 2 ]; then
    if make_group free 2>/dev/null; then
        run "no limit" "$procs" "usable cores: poll 50 us before sleeping"
    else
        echo "FAIL  no limit: cannot make groups under $fs's root"
        fail=1
    fi
fi
exit $fail
