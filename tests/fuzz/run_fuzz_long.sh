#!/usr/bin/env bash
# Long fuzzing runs, one target at a time (-jobs=1, one core), each until RUNS executions
# (default 10^7) or SECONDS (default 3600) have passed, whichever comes first; nohup-friendly:
#   nohup tests/fuzz/run_fuzz_long.sh [RUNS] [SECONDS] [TARGET...] > /tmp/tc-fuzz-long.txt 2>&1 &
# The corpus of each target grows in $TC_FUZZ_OUT/<name>.corpus (default /tmp/tc-fuzz-long),
# kept between runs (seeded from tests/fuzz/corpus and tests/fuzz/regressions); findings go to
# $TC_FUZZ_OUT/<name>.findings/. Prints per target: executions, exec/s, corpus size, findings;
# exits non-zero when any target found something. To keep a finding: copy its input to
# tests/fuzz/regressions/<name>/ and fix the library (with a unit test) - run_fuzz.sh replays it.
set -uo pipefail
runs=${1:-10000000}
seconds=${2:-3600}
shift 2 2>/dev/null || shift $#
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
export TC_FUZZ_OUT=${TC_FUZZ_OUT:-/tmp/tc-fuzz-long}
ob=${TC_FUZZ_OUTPUT_BASE:-/tmp/bazel-ob-fuzz}
mkdir -p "$TC_FUZZ_OUT"

# The target list and how each is built live in run_fuzz.sh: build through it (0 s each).
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
    mapfile -t names < <(sed -n 's|^    //tests/fuzz/[a-z_]*:\([a-z_]*\).*|\1|p' "$here/run_fuzz.sh")
fi
TC_FUZZ_OUT=$TC_FUZZ_OUT/build-check "$here/run_fuzz.sh" 0 "${names[@]}" >"$TC_FUZZ_OUT/build.log" 2>&1 ||
    { tail -n 30 "$TC_FUZZ_OUT/build.log"; echo "run_fuzz_long: build or seed replay failed"; exit 1; }
bin=$(bazel --output_base="$ob" info --symlink_prefix=/ --config=fuzz bazel-bin 2>/dev/null) || exit 1

status=0
printf '%-18s %12s %9s %8s %9s\n' target executions exec/s corpus findings
for name in "${names[@]}"; do
    pkg=$(sed -n "s|^    //\(tests/fuzz/[a-z_]*\):$name\b.*|\1|p" "$here/run_fuzz.sh")
    corpus=$TC_FUZZ_OUT/$name.corpus
    findings=$TC_FUZZ_OUT/$name.findings
    mkdir -p "$corpus" "$findings"
    dirs=()
    for d in tests/fuzz/corpus/$name tests/fuzz/regressions/$name; do
        [ -d "$d" ] && dirs+=("$PWD/$d")
    done
    asan=detect_leaks=1
    case $name in
    desc_fuzz)
        ASAN_OPTIONS=detect_leaks=0 "$bin/$pkg/desc_seeds" "$corpus" tests/topo/machines/*.xml
        ;;
    tcp_stream_fuzz | shm_ring_fuzz) asan=$asan:allocator_may_return_null=1:max_allocation_size_mb=32 ;;
    esac
    # -jobs=1: libFuzzer runs the target in a child and writes fuzz-0.log in the current
    # directory (hence the cd), then copies it into the log
    (cd "$TC_FUZZ_OUT" && ASAN_OPTIONS=$asan "$bin/$pkg/$name" -runs="$runs" \
        -max_total_time="$seconds" -jobs=1 -workers=1 -max_len=4200 -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$findings/" "$corpus" \
        "${dirs[@]}" >"$TC_FUZZ_OUT/$name.log" 2>&1)
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$TC_FUZZ_OUT/$name.log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$TC_FUZZ_OUT/$name.log" | tail -n 1)
    nfind=$(find "$findings" -type f | wc -l)
    printf '%-18s %12s %9s %8s %9s\n' "$name" "${execs:-?}" "${rate:-?}" \
        "$(find "$corpus" -type f | wc -l)" "$nfind"
    if [ $rc -ne 0 ] || [ "$nfind" -gt 0 ]; then
        status=1
        echo "  $name: see $TC_FUZZ_OUT/$name.log and $findings/"
    fi
done
exit $status
