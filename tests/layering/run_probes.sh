#!/usr/bin/env bash
# Proves the layering is enforced by the build: writes a deliberately wrong
# target into a layer's own package, checks that Bazel refuses it with the
# expected message, and removes it again (the tree never holds a violation).
#   tests/layering/run_probes.sh            (from anywhere; uses bazel)
set -uo pipefail
cd "$(dirname "$0")/../.."
fail=0
probe_dirs=()
cleanup() { for d in "${probe_dirs[@]}"; do rm -rf "$d"; done; }
trap cleanup EXIT

# probe NAME DIR DEP HEADER EXPECT [BAZEL FLAGS...]
probe() {
    local name=$1 dir=$2 dep=$3 header=$4 expect=$5
    shift 5
    probe_dirs+=("$dir")
    mkdir -p "$dir"
    cat >"$dir/BUILD.bazel" <<BUILD
cc_library(
    name = "probe",
    srcs = ["probe.c"],
    deps = ["$dep"],
)
BUILD
    printf '#include "%s"\nint tc_layering_probe(void)\n{\n    return 0;\n}\n' "$header" >"$dir/probe.c"
    local out
    out=$(bazel build "$@" "//$dir:probe" 2>&1)
    if [ $? -eq 0 ]; then
        echo "FAIL  $name: the build succeeded"
        fail=1
    elif grep -q "$expect" <<<"$out"; then
        echo "PASS  $name: $(grep -m1 -o "[^:]*$expect[^.]*" <<<"$out" | cut -c1-160)"
    else
        echo "FAIL  $name: refused, but not with '$expect':"
        tail -n 15 <<<"$out"
        fail=1
    fi
    rm -rf "$dir"
}

probe "base may not use runtime (upward)" base/zz_layering_probe //runtime:tc_runtime \
    tcomms/runtime/comm.h "is not visible from target"
probe "algo may not use transport (sideways)" algo/zz_layering_probe //transport:tc_transport \
    tcomms/transport/transport.h "is not visible from target"
probe "runtime may not include a transitive header (layering_check)" \
    runtime/zz_layering_probe //algo:tc_algo tcomms/base/log.h \
    "does not depend on a module exporting" --config=layering
exit $fail
