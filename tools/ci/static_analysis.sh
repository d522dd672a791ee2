#!/usr/bin/env bash
# Static analysis of the library code: clang-tidy 14 (the checks in .clang-tidy:
# bugprone-*, cert-*, clang-analyzer-*) and cppcheck 2.10 (warning,
# portability, performance) over base topo transport algo kernels runtime api;
# tests and tools are not analysed. Run from anywhere:
#   tools/ci/static_analysis.sh [-j N]
# Prints every finding and exits non-zero if there is any. A false positive is
# silenced where it stands, with the reason beside it:
#   // NOLINT(check): why, /* NOLINTNEXTLINE(check): why */, // cppcheck-suppress id ; why
# -j N: parallel clang-tidy processes (default: the number of CPUs).
set -uo pipefail
cd "$(dirname "$0")/../.."
start=$SECONDS
jobs=$(nproc)
while [ $# -gt 0 ]; do
    case $1 in
    -j) jobs=$2; shift 2 ;;
    -j*) jobs=${1#-j}; shift ;;
    -h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "static_analysis: unknown option $1 (try --help)" >&2; exit 2 ;;
    esac
done

tidy=$(command -v clang-tidy-14 || command -v clang-tidy) || {
    echo "static_analysis: clang-tidy not found (apt-get install clang-tidy)" >&2
    exit 2
}
command -v cppcheck >/dev/null || {
    echo "static_analysis: cppcheck not found (apt-get install cppcheck)" >&2
    exit 2
}

# algo/src/registry.c includes the generated "algo/src/registry_table.inc".
bazel build //algo:registry_table >/dev/null 2>&1 || {
    echo "static_analysis: bazel build //algo:registry_table failed" >&2
    exit 2
}
bazel_bin=$(bazel info bazel-bin 2>/dev/null)

shopt -s nullglob
files=(base/src/*.c topo/src/*.c transport/src/*.c transport/{self,shm,ib,builtin}/src/*.c
    transport/tcp/*.c algo/src/*.c kernels/src/*.c kernels/cuda/src/*.c runtime/src/*.c
    api/src/*.c)
# As the build compiles them (.bazelrc); TC_KERN_CUDA_PLUGIN_BUILT=1 analyses the
# plugin loader that a CUDA build compiles (it needs no CUDA header).
flags=(-std=c11 -D_GNU_SOURCE -DTC_KERN_CUDA_PLUGIN_BUILT=1)
for d in base topo transport transport/self transport/shm transport/ib transport/builtin algo \
    kernels kernels/cuda runtime api; do
    flags+=("-I$d/include")
done
flags+=(-I/usr/lib/x86_64-linux-gnu/pmix2/include "-I$bazel_bin")

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# clang-tidy, one process per file (xargs puts the file last); each file's
# output is kept apart, and a file whose run fails is listed in tidy_failed.
echo "static_analysis: clang-tidy on ${#files[@]} files, $jobs at a time"
t=$SECONDS
printf '%s\0' "${files[@]}" | xargs -0 -n1 -P "$jobs" bash -c '
    out=$1 tidy=$2 f=${!#}
    log=$out/tidy.$(echo "$f" | tr / _)
    "$tidy" --quiet "$f" -- "${@:3:$#-3}" >"$log" 2>&1 || echo "$f" >>"$out/tidy_failed"
' tidy_one "$out" "$tidy" "${flags[@]}"
tidy_s=$((SECONDS - t))

# cppcheck over the same files, with the same defines and include directories.
echo "static_analysis: cppcheck"
t=$SECONDS
cppcheck -j "$jobs" --std=c11 --enable=warning,portability,performance --error-exitcode=1 \
    --inline-suppr --quiet --template='{file}:{line}:{column}: {severity}: {message} [{id}]' \
    "${flags[@]:1}" "${files[@]}" >"$out/cppcheck" 2>&1
cppcheck_rc=$?
cppcheck_s=$((SECONDS - t))

# The findings: one line each ("file:line:col: warning|error: text [check]"),
# then the full clang-tidy output (notes: the path the analyzer followed).
status=0
tidy_findings=$(cat "$out"/tidy.* | grep -E '^[^ ].*:[0-9]+:[0-9]+: (warning|error): ' | sort -u)
cppcheck_findings=$(grep -E '^[^ ].*:[0-9]+:[0-9]*: ' "$out/cppcheck" | sort -u)
ntidy=$(printf '%s' "$tidy_findings" | grep -c .)
ncppcheck=$(printf '%s' "$cppcheck_findings" | grep -c .)
if [ -s "$out/tidy_failed" ] || [ "$ntidy" -gt 0 ]; then
    status=1
    echo
    echo "=== clang-tidy: details"
    for f in $(sort "$out/tidy_failed" 2>/dev/null); do
        cat "$out/tidy.$(echo "$f" | tr / _)"
    done
    echo
    echo "=== clang-tidy: $ntidy finding(s)"
    printf '%s\n' "$tidy_findings"
    [ -s "$out/tidy_failed" ] && echo "clang-tidy failed on: $(sort "$out/tidy_failed" | tr '\n' ' ')"
fi
if [ "$cppcheck_rc" -ne 0 ] || [ "$ncppcheck" -gt 0 ]; then
    status=1
    echo
    echo "=== cppcheck: $ncppcheck finding(s) (exit status $cppcheck_rc)"
    cat "$out/cppcheck"
fi
echo
echo "static_analysis: ${#files[@]} files; clang-tidy $ntidy finding(s) in ${tidy_s} s," \
    "cppcheck $ncppcheck in ${cppcheck_s} s; $((SECONDS - start)) s in all"
exit $status
