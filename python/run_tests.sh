#!/usr/bin/env bash
# Builds the tcomms Python package, its wheel (python/build_wheel.py), installs that with pip
# into build/python, and runs the tests on it as users launch them:
# torchrun with 2 and 4 processes (the torch.distributed backend against
# gloo), then the single-process tests (the torchcomms-shaped API, a killed
# rank, bad input). Needs `tools/setup/install-deps.sh --python` first.
#   python/run_tests.sh [--quick]     (--quick: 2 processes only)
# The last line is the summary: "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
venv=$root/build/py-venv
py=$venv/bin/python
[ -x "$py" ] || { echo "run_tests: no $venv (run tools/setup/install-deps.sh --python)" >&2; exit 2; }
sizes="2 4"
[ "${1:-}" = --quick ] && sizes=2

bazel=${BAZEL:-bazel}
$bazel build //python:_ext.so || exit 1
# the tests run on the package as users install it: the wheel, installed by pip
wheel=$("$py" python/build_wheel.py --ext "$($bazel info bazel-bin)/python/_ext.so" \
    --out "$root/build/wheel") || exit 1
stage=$root/build/python
rm -rf "$stage"
"$py" -m pip install -q --disable-pip-version-check --no-deps --no-index --target "$stage" \
    "$wheel" || exit 1
export PYTHONPATH=$stage
export TCOMMS_TEST_WHEEL=$wheel # python/tests/local/test_wheel.py checks what pip installed
export PYTHONFAULTHANDLER=1 # a run killed by its timeout (SIGABRT) prints every thread's stack

passed=0 failed=0
count() { # the pytest summary line of a log: add its numbers
    local line p f
    line=$(grep -E '[0-9]+ (passed|failed)' "$1" | tail -1)
    p=$(sed -n 's/.* \([0-9]\+\) passed.*/\1/p; s/^\([0-9]\+\) passed.*/\1/p' <<<"$line" | head -1)
    f=$(grep -oE '[0-9]+ (failed|error)' <<<"$line" | awk '{s += $1} END {print s + 0}')
    passed=$((passed + ${p:-0})) failed=$((failed + f))
    [ -n "$line" ] || failed=$((failed + 1))
}

failures() { # pytest's failure reports in a log, if any: what failed and where
    sed -n '/^=\+ \(FAILURES\|ERRORS\) =\+$/,$p' "$1" | head -80 | sed "s/^/$2/"
}

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
for n in $sizes; do
    echo "=== torchrun --nproc_per_node $n: python/tests/dist"
    port=$((29400 + n * 10 + RANDOM % 10))
    # --redirects/--tee: each rank's output in its own file under --log_dir (counted below)
    timeout -s ABRT -k 10 600 "$py" -m torch.distributed.run --nproc_per_node "$n" --master_port "$port" \
        --redirects 1 --tee 1 --log_dir "$logs/tr$n" \
        -m pytest -q -p no:cacheprovider python/tests/dist >"$logs/run$n.log" 2>&1
    rc=$?
    for r in $(seq 0 $((n - 1))); do
        f=$(find "$logs/tr$n" -path "*/$r/stdout.log" | head -1)
        [ -n "$f" ] && { tail -3 "$f" | sed "s/^/rank $r: /"; count "$f"; failures "$f" "rank $r: "; } ||
            failed=$((failed + 1))
    done
    if [ $rc -ne 0 ]; then # a crashed rank's stacks (faulthandler), then torchrun's summary
        grep -A 60 "Fatal Python error" "$logs/run$n.log" | head -150
        tail -30 "$logs/run$n.log"
        echo "torchrun exited $rc"
    fi
done

echo "=== pytest python/tests/local"
timeout -s ABRT -k 10 300 "$py" -m pytest -q -p no:cacheprovider python/tests/local 2>&1 | tee "$logs/local.log" | tail -15
count "$logs/local.log"
failures "$logs/local.log" ""
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
