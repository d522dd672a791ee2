#!/usr/bin/env bash
# The scale benchmark (issue #21): jobs of 2 to 256 local ranks under tcrun, and the same under
# Open MPI's mpirun with bench/peers/mpi_scale.c, each rank printing one line (scale_probe.c):
# time to the end of creation, RSS and its peak, heap, threads, descriptors, sockets,
# shared-memory segments and bytes, endpoints connected, barrier and 8-byte all-reduce times,
# and what 1, 10, 100 and 1000 communicators (dup and split) cost and leave after destroy.
# scale_report.awk turns the lines into markdown tables (min / median / max over ranks).
#   bench/run_scale.sh [--ranks "2 8 32 64 128 256"] [--launchers "tcrun mpirun"]
#                      [--comms "1 10 100 1000"] [--iters N] [--shm-size SIZE] [--out DIR] [--quick]
# --quick: 2 and 8 ranks, tcrun only, 100 communicators, and the checks of CI (correctness only,
#   never timing): every rank printed its line, every all-reduce was right, a communicator costs
#   at most 16 KiB of heap (15.3 KiB measured, 2 to 256 ranks), and after destroying 100
#   communicators each rank holds the same descriptors, at most 8192 bytes more heap and 1024 KiB
#   more RSS than before (without --quick: heap and descriptors only, RSS reported).
# --shm-size SIZE (e.g. 64M; needs root): the jobs run in a private mount namespace with a tmpfs
#   of SIZE on /dev/shm. Descriptors: the soft limit is raised to the hard one here.
# Binaries: TCRUN and SCALE_PROBE when both are set (CI's prebuilt ones), else built with
# Bazel -c opt (BAZEL_STARTUP: its startup options); mpi_scale with mpicc.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh

ranks="2 8 32 64 128 256" launchers="tcrun mpirun" comms="1 10 100 1000" iters=20
shm_size="" out="" quick=0 args=("$@")
while [ $# -gt 0 ]; do
    case $1 in
    --ranks) ranks=$2; shift ;;
    --launchers) launchers=$2; shift ;;
    --comms) comms=$2; shift ;;
    --iters) iters=$2; shift ;;
    --shm-size) shm_size=$2; shift ;;
    --out) out=$2; shift ;;
    --quick) quick=1 ranks="2 8" launchers=tcrun comms=100 iters=5 ;;
    -h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_scale.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done

# A private /dev/shm of the size asked: re-run this script inside a new mount namespace.
if [ -n "$shm_size" ] && [ -z "${SCALE_IN_NS:-}" ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "run_scale.sh: --shm-size needs root (a tmpfs mount in a private namespace)" >&2
        exit 2
    fi
    exec env SCALE_IN_NS=1 unshare --mount --propagation private "$0" "${args[@]}"
fi
if [ -n "$shm_size" ]; then
    mount -t tmpfs -o "size=$(to_bytes "$shm_size")" tmpfs /dev/shm
fi
ulimit -n "$(ulimit -Hn)"

out=${out:-$(mktemp -d /tmp/tc-scale.XXXXXX)}
mkdir -p "$out"
if [ -n "${TCRUN:-}" ] && [ -n "${SCALE_PROBE:-}" ]; then
    tcrun=$TCRUN probe=$SCALE_PROBE
else
    # shellcheck disable=SC2206  # startup options, split on purpose
    bazel=(bazel ${BAZEL_STARTUP:-})
    "${bazel[@]}" build -c opt //bench:scale_probe //tools/tcrun >"$out/build.log" 2>&1 ||
        { echo "run_scale.sh: bazel build failed: $out/build.log" >&2; exit 1; }
    bin=$("${bazel[@]}" info -c opt bazel-bin 2>/dev/null)
    tcrun=$bin/tools/tcrun/tcrun probe=$bin/bench/scale_probe
fi
case " $launchers " in *" mpirun "*)
    mpicc -O2 -o "$out/mpi_scale" bench/peers/mpi_scale.c ;;
esac

machine_line
echo "# /dev/shm: $(df -h /dev/shm | awk 'NR == 2 { print $2 " (" $4 " free)" }')," \
    "descriptors: $(ulimit -n), command: bench/run_scale.sh --ranks \"$ranks\"" \
    "--launchers \"$launchers\" --comms \"$comms\" --iters $iters${shm_size:+ --shm-size $shm_size}"
rc=0
for launcher in $launchers; do
    for n in $ranks; do
        limit=$((300 + 6 * n))
        export SCALE_T0_NS
        SCALE_T0_NS=$(date +%s%N)
        set +e
        if [ "$launcher" = tcrun ]; then
            timeout -k 10 "$limit" "$tcrun" -n "$n" "$probe" -c "$comms" -n "$iters" \
                >"$out/$launcher.$n.out" 2>"$out/$launcher.$n.err"
        else
            timeout -k 10 "$limit" mpirun --allow-run-as-root --oversubscribe --bind-to none \
                -x SCALE_T0_NS -np "$n" "$out/mpi_scale" -c "$comms" -n "$iters" \
                >"$out/$launcher.$n.out" 2>"$out/$launcher.$n.err"
        fi
        status=$?
        set -e
        sed -n 's/^\(\[[0-9]*\] \)\{0,1\}\(scale rank=\)/\2/p' "$out/$launcher.$n.out" |
            sed "s/^scale /scale launcher=$launcher ranks=$n status=$status /" >>"$out/lines"
        if [ "$status" != 0 ]; then
            rc=1
            echo "# $launcher $n ranks: exit status $status; last error lines:"
            tail -n 3 "$out/$launcher.$n.err" | sed 's/^/#   /'
        fi
    done
done
awk -v quick="$quick" -v want="$launchers:$ranks" -f bench/scale_report.awk "$out/lines" || rc=1
echo "# raw lines in $out/lines"
exit $rc
