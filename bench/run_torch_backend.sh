#!/usr/bin/env bash
# torch.distributed with the "tcomms" backend beside "gloo" (bench/torch_backend.py) at
# 2 and 4 ranks under torchrun, with the Python package built -c opt.
#   bench/run_torch_backend.sh [--ranks "2 4"] [--max-bytes BYTES] [--iters N]
# Needs tools/setup/install-deps.sh --python. BAZEL_STARTUP: e.g. "--output_base=/tmp/ob";
# or BAZEL: the command to run instead of bazel.
set -euo pipefail
cd "$(dirname "$0")/.."
ranks="2 4" args=()
while [ $# -gt 0 ]; do
    case $1 in
    --ranks) ranks=$2; shift 2 ;;
    *) args+=("$1"); shift ;;
    esac
done
py=build/py-venv/bin/python
bazel=${BAZEL:-bazel ${BAZEL_STARTUP:-}}
[ -x "$py" ] || { echo "run_torch_backend: run tools/setup/install-deps.sh --python" >&2; exit 2; }
$bazel build -c opt //python:_ext.so
stage=build/python-opt
rm -rf "$stage" && mkdir -p "$stage/tcomms"
cp python/tcomms/*.py "$stage/tcomms/"
cp "$($bazel info -c opt bazel-bin)/python/_ext.so" "$stage/tcomms/"
for n in $ranks; do
    logs=$(mktemp -d)
    PYTHONPATH=$stage timeout -k 10 1200 "$py" -m torch.distributed.run --nproc_per_node "$n" \
        --master_port $((29300 + n)) --redirects 1 --tee 1 --log_dir "$logs" \
        bench/torch_backend.py "${args[@]}" >"$logs/torchrun.log" 2>&1 ||
        { rc=$?; grep -A 30 -m 1 "Fatal Python error\|Traceback" "$logs/torchrun.log" || true
          echo "torchrun exited $rc at $n ranks"; }
    cat "$(find "$logs" -path '*/0/stdout.log' | head -1)"
    rm -rf "$logs"
done
