#!/usr/bin/env bash
# The main job: set up, build (optimised), and run the tcperf sweep of every
# collective from 8 B to 64 MiB over 4 local ranks under tcrun, checking every
# element (-c 1). Extra arguments go to tcperf (e.g. --coll all_reduce -d bf16
# -o max -a recursive_doubling).
set -euo pipefail
cd "$(dirname "$0")/../.."
tools/setup/install-deps.sh
bazel build -c opt //tools/tcrun //tools/tcperf
exec bazel-bin/tools/tcrun/tcrun -n 4 bazel-bin/tools/tcperf/tcperf --coll all -b 8 -e 64M -f 2 -c 1 "$@"
