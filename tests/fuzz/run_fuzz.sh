#!/usr/bin/env bash
# Build the libFuzzer targets with clang, replay their seed corpora and regression inputs, and
# fuzz each for SECONDS (default 20).
#   tests/fuzz/run_fuzz.sh [SECONDS] [TARGET...]
# SECONDS 0: build and replay the seeds and regression inputs only.
# TARGET: a name such as tcp_stream_fuzz (default: every target below). Seeds are in
# tests/fuzz/corpus/<name>/ (written by tests/fuzz/corpus/gen_seeds.py), inputs of past findings
# in tests/fuzz/regressions/<name>/; both are only read: new inputs go to $TC_FUZZ_OUT.
# Exits non-zero when a target finds a crash, leak, timeout or failed property (its input is
# kept under $TC_FUZZ_OUT, default /tmp/tc-fuzz) or when the build fails.
# TC_FUZZ_OUTPUT_BASE picks the bazel output base (default /tmp/bazel-ob-fuzz).
set -uo pipefail
seconds=${1:-20}
shift || true
cd "$(dirname "$0")/../.."
ob=${TC_FUZZ_OUTPUT_BASE:-/tmp/bazel-ob-fuzz}
out=${TC_FUZZ_OUT:-/tmp/tc-fuzz}
bz() { bazel --output_base="$ob" "$@"; }

# Every target: what it parses, see the comment at the top of its source.
all_targets=(
    //tests/fuzz/topo:desc_fuzz             # topology descriptor
    //tests/fuzz/tcp:tcp_stream_fuzz        # tcp data path: messages, striped, chunks, one-sided
    //tests/fuzz/tcp:tcp_blob_fuzz          # tcp address and rkey blobs
    //tests/fuzz/shm:shm_ring_fuzz          # shm ring cells and tail
    //tests/fuzz/shm:shm_blob_fuzz          # shm address and rkey blobs
    //tests/fuzz/shm:shm_lane_fuzz          # shm lane slots: found by tag, moved out
    //tests/fuzz/ib:ib_imm_fuzz             # ib immediate words and ring-slot headers
    //tests/fuzz/ib:ib_blob_fuzz            # ib address and rkey blobs (emulated HCA)
    //tests/fuzz/runtime:agree_fuzz         # shrink agreement messages
    //tests/fuzz/runtime:check_fuzz         # TC_CHECK descriptions
    //tests/fuzz/runtime:small_vote_fuzz    # the small-message path's vote records
    //tests/fuzz/runtime:store_frame_fuzz   # bootstrap store frame headers
    //tests/fuzz/base:config_fuzz           # tc_config_* and hints
    //tests/fuzz/algo:tuning_fuzz           # the tuning file (TC_TUNING_FILE)
    # connection handshakes (challenge-response, auth.h) and the store's bodies
    //tests/fuzz/tcp:tcp_handshake_fuzz     # tcp hello, proof, challenge
    //tests/fuzz/ib:ib_handshake_fuzz       # ib hello, proof, challenge
    //tests/fuzz/shm:shm_handshake_fuzz     # shm handshake through the segment header
    //tests/fuzz/runtime:store_auth_fuzz    # joining the store: both sides
    //tests/fuzz/runtime:store_body_fuzz    # store request and reply bodies
    //tests/fuzz/runtime:verdict_fuzz       # heartbeat verdicts
    //tests/fuzz/runtime:win_seg_fuzz       # window segments' names in /dev/shm
)

targets=()
if [ $# -gt 0 ]; then
    for want in "$@"; do
        found=
        for t in "${all_targets[@]}"; do
            [ "${t##*:}" = "$want" ] && { targets+=("$t"); found=1; }
        done
        [ -n "$found" ] || { echo "run_fuzz: no target $want"; exit 2; }
    done
else
    targets=("${all_targets[@]}")
fi
extra=()
for t in "${targets[@]}"; do
    [ "${t##*:}" = desc_fuzz ] && extra+=(//tests/fuzz/topo:desc_seeds)
done
bz build --symlink_prefix=/ --config=fuzz "${targets[@]}" "${extra[@]}" ||
    { echo "run_fuzz: the build failed"; exit 1; }
bin=$(bz info --symlink_prefix=/ --config=fuzz bazel-bin 2>/dev/null) || exit 1

mkdir -p "$out"
status=0
for t in "${targets[@]}"; do
    name=${t##*:}
    pkg=${t#//}
    pkg=${pkg%%:*}
    corpus=$out/$name.corpus
    rm -rf "$corpus" "$out/$name.findings" && mkdir -p "$corpus" "$out/$name.findings"
    dirs=()
    for d in tests/fuzz/corpus/$name tests/fuzz/regressions/$name; do
        [ -d "$d" ] && dirs+=("$d")
    done
    asan=detect_leaks=1
    case $name in
    desc_fuzz)
        # hwloc's dlopen'ed plugins leak a little at exit: not what is fuzzed here
        ASAN_OPTIONS=detect_leaks=0 "$bin/$pkg/desc_seeds" "$corpus" tests/topo/machines/*.xml ||
            { echo "run_fuzz: no seeds for $name"; status=1; continue; }
        ;;
    tcp_stream_fuzz | shm_ring_fuzz)
        # A peer may announce a message of up to 1 TiB, which is allocated when it is not
        # expected: allocations above 32 MiB fail here (the endpoint fails cleanly, the path of
        # a failed allocation is fuzzed too) instead of counting as findings; larger ones would
        # also cost ASan a shadow memset each, a third of the speed.
        asan=$asan:allocator_may_return_null=1:max_allocation_size_mb=32
        ;;
    esac
    echo "=== $name: $seconds s, $(find "$corpus" "${dirs[@]}" -type f | wc -l) seed and regression inputs"
    limit=(-max_total_time="$seconds")
    [ "$seconds" = 0 ] && limit=(-runs=0)
    if ! ASAN_OPTIONS=$asan "$bin/$pkg/$name" "${limit[@]}" \
        -max_len=4200 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$out/$name.findings/" "$corpus" "${dirs[@]}" >"$out/$name.log" 2>&1; then
        tail -n 40 "$out/$name.log"
        echo "=== $name: FINDING, inputs in $out/$name.findings/"
        status=1
    else
        grep -E "stat::number_of_executed_units|stat::average_exec_per_sec|cov:" "$out/$name.log" |
            tail -n 3
        echo "=== $name: no finding"
    fi
done
exit $status
