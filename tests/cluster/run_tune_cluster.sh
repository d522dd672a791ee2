#!/usr/bin/env bash
# tc-tune across emulated nodes (tests/cluster/vcluster.sh; needs root): 2 nodes of 2 ranks
# (torchrun-style environment bootstrap), node 1's link shaped to RATE (default 1gbit).
#  - tc-tune -o writes both link classes and overhead_us (in [0, 2 alpha_inter_us]);
#    beta_inter_us is within [0.8, 2] x the shaped rate's
#    time per byte (a token bucket passes small bursts at line rate: the fit must still give
#    the large messages' rate), alpha_inter_us > 0;
#    with --rules (8 B to 4 KiB), every cell measured is covered by a rule naming its fastest
#    algorithm (or one within 3%);
#  - with TC_TUNING_FILE, tc-tune --validate --quick across the nodes prints a well-formed
#    table (tests/integration/tune_check.py), the model line naming the file, and the
#    selection is the file's rule in every row.
#   tests/cluster/run_tune_cluster.sh BINDIR [RATE_MBIT]
# BINDIR holds tools/tc-tune/tc-tune (bazel-bin). About 20 s. Not in tools/ci/test.sh (root).
set -uo pipefail
bin=${1:?usage: run_tune_cluster.sh BINDIR [RATE_MBIT]}
mbit=${2:-1000}
bin=$(cd "$bin" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
vc=$here/vcluster.sh
tune=$bin/tools/tc-tune/tc-tune
dir=$(mktemp -d /tmp/tc_tune_cluster.XXXXXX)
trap '"$vc" down "$dir" >/dev/null 2>&1; rm -rf "$dir"' EXIT
fail=0
bad() {
    echo "run_tune_cluster: FAILED: $*" >&2
    fail=1
}

"$vc" up "$dir" --nodes 2 >/dev/null || { echo "run_tune_cluster: no cluster" >&2; exit 1; }
"$vc" shape "$dir" 1 "${mbit}mbit" || bad "shaping node 1"
master=$("$vc" addr "$dir" 0)
port=$((29700 + RANDOM % 200))

# job NAME ENV... -- ARGS: 4 ranks, 2 per node; rank 0's standard output in $dir/NAME.out
job() {
    local name=$1
    shift
    local envs=()
    while [ "$1" != -- ]; do
        envs+=("$1")
        shift
    done
    shift
    port=$((port + 1))
    local pids=() rc=0
    for r in 0 1 2 3; do
        "$vc" run "$dir" $((r / 2)) env "${envs[@]}" TC_BOOTSTRAP=env MASTER_ADDR="$master" \
            MASTER_PORT=$port RANK=$r WORLD_SIZE=4 LOCAL_RANK=$((r % 2)) LOCAL_WORLD_SIZE=2 \
            TC_LOG=error timeout -k 5 120 "$tune" "$@" >"$dir/$name.$r.out" 2>"$dir/$name.$r.err" &
        pids+=($!)
    done
    for p in "${pids[@]}"; do
        wait "$p" || rc=1
    done
    cp "$dir/$name.0.out" "$dir/$name.out"
    [ $rc -eq 0 ] || { tail -n 5 "$dir/$name".*.err; return 1; }
}

echo "--- tc-tune -o across 2 nodes, node 1 at $mbit Mbit/s"
f=$dir/cluster.tune
if job tune -- -o "$f" -q --rules -b 8 -e 4096 -n 3 --rounds 3; then
    cat "$dir/tune.out"
    python3 "$here/../integration/tune_check.py" rules "$f" "$dir/tune.out" ||
        bad "the rules do not name each cell's fastest algorithm"
    python3 - "$f" "$mbit" <<'PY' || bad "the fitted parameters"
import sys
kv = {}
for line in open(sys.argv[1]):
    if "=" in line and not line.startswith("#"):
        k, v = line.split("=", 1)
        kv[k.strip()] = v.strip()
want = 8.0 / (float(sys.argv[2]) * 1e6) * 1e6  # us per byte at RATE Mbit/s
errs = []
for k in ["alpha_intra_us", "beta_intra_us", "alpha_inter_us", "beta_inter_us", "gamma_us",
          "overhead_us"]:
    if k not in kv:
        errs.append("%s missing" % k)
# o is measured on the inter-node pair: a share of a message's time, not more than a latency
if not 0 <= float(kv.get("overhead_us", "-1")) <= 2 * float(kv.get("alpha_inter_us", "0")):
    errs.append("overhead_us %s not in [0, 2 alpha_inter_us]" % kv.get("overhead_us"))
if kv.get("nodes") != "2" or kv.get("ranks") != "4":
    errs.append("job shape %s nodes %s ranks" % (kv.get("nodes"), kv.get("ranks")))
b = float(kv.get("beta_inter_us", "0"))
if not 0.8 * want <= b <= 2 * want:
    errs.append("beta_inter_us %g, not within [0.8, 2] x %g" % (b, want))
if not float(kv.get("alpha_inter_us", "0")) > 0:
    errs.append("alpha_inter_us not > 0")
for e in errs:
    print("run_tune_cluster: %s" % e, file=sys.stderr)
sys.exit(1 if errs else 0)
PY
else
    bad "tc-tune -o across the nodes"
fi

echo "--- tc-tune --validate --quick across 2 nodes with the file"
if [ -f "$f" ] && job validate TC_TUNING_FILE="$f" -- --validate --quick; then
    tail -n 3 "$dir/validate.out"
    python3 "$here/../integration/tune_check.py" table "$dir/validate.out" text file ||
        bad "the --validate table"
    python3 "$here/../integration/tune_check.py" picks "$dir/validate.out" "$f" ||
        bad "the selection does not follow the rules"
else
    bad "tc-tune --validate --quick across the nodes"
fi
[ $fail -eq 0 ] && echo "run_tune_cluster: all passed"
exit $fail
