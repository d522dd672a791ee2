#!/usr/bin/env bash
# tc-info --json on this machine and on every fake machine: valid JSON (json.tool) with
# the devices and affinities expected; text mode; errors naming the file and line or token.
set -euo pipefail
info=tools/tc-info/tc-info
check=tests/topo/tc_info_check.py
machines=tests/topo/machines
tmp=${TEST_TMPDIR:-$(mktemp -d)}
fail() { echo "FAIL: $*" >&2; exit 1; }

unset TC_TOPO_XML TC_TOPO_SYNTHETIC PMIX_NAMESPACE
"$info" --json >"$tmp/host.json"
python3 -m json.tool "$tmp/host.json" >/dev/null || fail "host: invalid JSON"
python3 "$check" host <"$tmp/host.json" || fail "host: unexpected content"

for m in dgx8 pcie4 cpu2s; do
    TC_TOPO_XML=$machines/$m.xml "$info" --json >"$tmp/$m.json"
    python3 -m json.tool "$tmp/$m.json" >/dev/null || fail "$m: invalid JSON"
    python3 "$check" "$m" <"$tmp/$m.json" || fail "$m: unexpected content"
    TC_TOPO_XML=$machines/$m.xml "$info" >"$tmp/$m.txt"
done
grep -q "cuda7 .*-> NIC mlx5_7 (PIX, 4 hops)" "$tmp/dgx8.txt" || fail "dgx8 text pairing"

# configuration: a malformed value is reported, a secret is not shown
TC_TIMEOUT_S=abc TC_JOB_SECRET=hunter2 "$info" --json >"$tmp/cfg.json"
python3 -m json.tool "$tmp/cfg.json" >/dev/null || fail "config: invalid JSON"
grep -q '"name": "TC_TIMEOUT_S".*"error": ".*TC_TIMEOUT_S' "$tmp/cfg.json" || fail "bad int"
if grep -q hunter2 "$tmp/cfg.json"; then fail "the job secret is printed"; fi
# values the library reads only later (the first collective, a shrink, a dump) are checked as a
# communicator's creation checks them: shown as errors (they were plain text before 2026-12-07)
for kv in TC_SMALL_MAX=huge TC_SHRINK_DENSE_MAX=-1 TC_LOG=bogus TC_FR_DIR=/nonexistent/fr; do
    v=${kv%%=*}
    env "$kv" "$info" --json >"$tmp/late.json" 2>/dev/null
    grep -q "\"name\": \"$v\".*\"error\": \".*$v" "$tmp/late.json" ||
        fail "$kv not flagged: $(grep "\"$v\"" "$tmp/late.json")"
done
# every bootstrap the runtime accepts is accepted (TC_BOOTSTRAP=env was "unknown value
# (accepted: auto, pmix, self)" before 2026-12); an unknown one names them all
TC_BOOTSTRAP=env "$info" --json >"$tmp/boot.json"
grep -q '"name": "TC_BOOTSTRAP", "value": "env", "type": "enum", "parsed": "env"}' "$tmp/boot.json" ||
    fail "TC_BOOTSTRAP=env: $(grep TC_BOOTSTRAP "$tmp/boot.json")"
TC_BOOTSTRAP=envv "$info" --json >"$tmp/boot.json"
grep -q '"error": "TC_BOOTSTRAP=\\"envv\\": unknown value (accepted: auto, pmix, self, env)"' \
    "$tmp/boot.json" || fail "TC_BOOTSTRAP=envv: $(grep TC_BOOTSTRAP "$tmp/boot.json")"

# every variable the library reads is known (these were reported as typos before 2026-12-06);
# a misspelt one is still flagged
vars="TC_SHM TC_TCP TC_IB TC_CHECK TC_FR_DIR TC_FR_SIZE TC_HEARTBEAT_MS TC_HEARTBEAT_MISSES
    TC_SMALL_MAX TC_SPIN_US TC_SOCKET_NSOCKS TC_SOCKET_RAIL_TIMEOUT_MS TC_IB_DEVICE TC_IB_PORT
    TC_ALGO_RULES TC_STORE_PORT TC_COPY TC_SHRINK_DENSE_MAX TC_WIN_POOL TC_FAULT_INJECT
    TC_CUDA_PLUGIN TC_SHM_LIVENESS_MS TC_SHM_CMA TC_ALGO_BROADCAST TC_ALGO_ALL_GATHER"
for v in $vars; do
    env "$v=1" "$info" --json >"$tmp/var.json"
    if grep -q "typo" "$tmp/var.json"; then fail "$v reported as a typo"; fi
    grep -q "\"name\": \"$v\"" "$tmp/var.json" || fail "$v not shown"
done
# the library reads TC_ALGO_<COLLECTIVE> in upper case only: a lower-case one was shown as read
for v in TC_ALGO_ALLREDUCE TC_ALGO_all_gather; do
    env "$v=ring" "$info" --json >"$tmp/var.json"
    grep -q "\"name\": \"$v\".*typo" "$tmp/var.json" || fail "$v not flagged"
done

# a broken XML file: exit 1, the file and the line named
printf '<topology version="2.0">\n  <object type="Machine">\n</topology>\n' >"$tmp/broken.xml"
if TC_TOPO_XML=$tmp/broken.xml "$info" --json >"$tmp/out" 2>"$tmp/err"; then
    fail "broken XML accepted"
fi
grep -q "broken.xml.*line 3: </topology> does not match <object> opened at line 2" "$tmp/err" ||
    fail "broken XML message: $(cat "$tmp/err")"
if TC_TOPO_SYNTHETIC="pack:2 cores:4 pu:1" "$info" 2>"$tmp/err"; then
    fail "bad synthetic accepted"
fi
grep -q 'token 2 "cores:4"' "$tmp/err" || fail "synthetic message: $(cat "$tmp/err")"
if "$info" --bogus 2>/dev/null; then fail "unknown argument accepted"; fi
# under a launcher: descriptors exchanged over PMIx, rank 0 prints the placement
TC_TOPO_XML=$machines/pcie4.xml \
    LSAN_OPTIONS="suppressions=$PWD/tests/lsan_pmix.supp:fast_unwind_on_malloc=0" \
    timeout 60 tools/tcrun/tcrun --timeout 50 -n 3 "$info" \
    >"$tmp/job.txt" 2>&1 || fail "tcrun -n 3 tc-info: $(tail -n 5 "$tmp/job.txt")"
for want in "Job (tcrun): 3 ranks on 1 nodes" "rank 2: node 0 (.*) local 2/3 gpu cuda2 nic mlx5_0 parent 1" \
    "ring: 0 1 2"; do
    grep -q "$want" "$tmp/job.txt" || fail "job placement lacks '$want': $(cat "$tmp/job.txt")"
done
# the libraries opened at run time: libibverbs is installed here (libibverbs-dev); a plugin path
# that does not exist is reported, not fatal
TC_CUDA_PLUGIN=/nonexistent/libtcomms_cuda.so "$info" --json >"$tmp/libs.json"
python3 - "$tmp/libs.json" <<'PY' || fail "libraries: $(cat "$tmp/libs.json")"
import json, re, sys
d = json.load(open(sys.argv[1]))
assert re.fullmatch(r"\d+\.\d+\.\d+", d["version"]), d["version"]
libs = {l["name"]: l for l in d["libraries"]}
assert libs["libibverbs"]["found"] and "libibverbs" in libs["libibverbs"]["where"], libs
cuda = libs["cuda_plugin"]
assert not cuda["found"], cuda
assert "/nonexistent/libtcomms_cuda.so" in cuda["where"] or "built without CUDA" in cuda["where"], cuda
assert "cuda_devices" not in libs, libs
assert any(t["name"] == "ib" for t in d["transports"]), d["transports"]
PY
TC_CUDA_PLUGIN=/nonexistent/libtcomms_cuda.so "$info" >"$tmp/libs.txt"
grep -q "^  libibverbs   found: " "$tmp/libs.txt" || fail "libraries text: $(cat "$tmp/libs.txt")"
echo "tc-info: all checks passed"
